# SPDX-License-Identifier: GPL-2.0
# `make bench-unplug`: the hot-unplug removal time (a figure, not a test) on the
# benchmark kernel: vm_mlx5_unplug_load's workload (tests/vm/mlx5user.sh) with
# rdmars.n= processes (default 100) holding contexts, PDs, CQs, QPs, MRs and
# mappings on mlx5_1, first without traffic, then with rdmars.t= of them
# (default 4) posting RDMA WRITEs through the unbind; rdmars.runs= times each.
# The suite's own checks (EIO and IB_EVENT_DEVICE_FATAL in every process, none
# hung, the simulator empty, the function bound again) count as tests; the
# removal's wall time and the unbinding task's CPU time are printed. Upstream
# rdma_rxe has no disassociate (its removal waits for every process to close
# its file), so there is no upstream column.
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"

bench_unplug_suite() {
	local n t runs r
	n=$(bench_arg n 100)
	t=$(bench_arg t 4)
	runs=$(bench_arg runs 1)
	: >/tmp/ul-figs
	for r in $(seq 1 "$runs"); do
		mlx5_unplug_load_suite "$n" 0
		mlx5_unplug_load_suite "$n" "$t"
	done
	echo "================ rdma-rs unplug benchmark ================"
	echo "kernel $(uname -r); runs $runs; the unbind of mlx5_ib_rs.rdma.1 ($(vm_accel), two vCPUs)"
	echo "processes traffic removal_ms unbind_task_sys_ms"
	cat /tmp/ul-figs
	echo "==========================================================="
}

[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode bench_unplug
