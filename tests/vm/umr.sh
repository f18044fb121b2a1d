# SPDX-License-Identifier: GPL-2.0
# Memory keys through UMR on the simulated ConnectX (issue 39). Sourced by the mode scripts
# (RDMARS_SOURCED=1) or run as the VM mode `umr`.
#  - vm_umr_mkeys: tests/userspace/umr_test.c through Debian's libmlx5 on an InfiniBand and a
#    RoCE function: mlx5dv_create_mkey() indirect keys given a KLM list
#    (mlx5dv_wr_mr_list()) and a repeated block (mlx5dv_wr_mr_interleaved()) by UMR WQEs,
#    RDMA WRITE and READ through them with every byte checked, a WRITE past the layout, and
#    a SEND with invalidate of such a key (rxe has no mlx5dv: nothing to compare).
#  - vm_limits_probe: see limits_probe_suite.
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"

UMR_SIM=sim=ib,eth
UMR_ROCE_GID=1

umr_mkeys_suite() {
	local n
	load_ours $UMR_SIM
	t_import "umr_test mlx5_0 (IB)" /rdma-rs/umr_test -d mlx5_0
	t_import "umr_test mlx5_1 (RoCE)" /rdma-rs/umr_test -d mlx5_1 -g $UMR_ROCE_GID
	for n in 0 1; do
		t_check "mlx5_ib_rs.rdma.$n holds only the kernel PD and UAR after umr_test" \
			fwsim_resources_probed mlx5_ib_rs.rdma.$n
	done
	unload_ours
}

# vm_limits_probe: tests/userspace/limits_probe.c on both functions: a full RQ of a QP made
# by ibv_create_qp_ex() as libmlx5 stops it (ENOMEM after cap.max_recv_wr), and mlx5dv_dr's
# domain and tables working or failing cleanly (no EREMOTEIO; errnos as I lines).
limits_probe_suite() {
	load_ours $UMR_SIM
	t_import "limits_probe mlx5_0 (IB)" /rdma-rs/limits_probe -d mlx5_0
	t_import "limits_probe mlx5_1 (RoCE)" /rdma-rs/limits_probe -d mlx5_1
	unload_ours
}

[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode umr
