#!/bin/sh
# Verbs breadth (issue 16): REREG_MR, hardware counters, device rename and
# `rdma monitor`. Runs as its own mode (tools/vm.sh breadth) and inside check.
#  - vm_rereg: tests/userspace/rereg_test.c on both link layers of ours
#    (raw write() and libibverbs' ibv_rereg_mr() through Debian's libmlx5)
#    and on upstream rdma_rxe; the errno and data-path facts compared line
#    by line (rxe 7.3 has no TRANS rereg: that part is checked on ours only,
#    against upstream mlx5_ib_rereg_user_mr()'s behaviour).
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"

BREADTH_SIM=sim=ib,eth
BREADTH_ROCE_GID=1

# The simulator holds only what the bound functions hold.
breadth_baseline() {
	local n
	for n in 0 1; do
		t_check "mlx5_ib_rs.rdma.$n holds only the kernel PD and UAR after $1" \
			fwsim_resources_probed mlx5_ib_rs.rdma.$n
	done
	t_check "rdma res shows no MR after $1" sh -c '! rdma res show mr | grep -q .'
}

rereg_suite() {
	local d
	load_ours $BREADTH_SIM
	t_import "rereg_test mlx5_0 (IB, libibverbs)" /rdma-rs/rereg_test -d mlx5_0 -t -l
	grep '^C ' /tmp/import.out >/tmp/rereg-mlx5_0.c
	t_import "rereg_test mlx5_1 (RoCE, raw write)" /rdma-rs/rereg_test -d mlx5_1 -g $BREADTH_ROCE_GID -t
	grep '^C ' /tmp/import.out >/tmp/rereg-mlx5_1.c
	breadth_baseline "the rereg test"
	unload_ours
	peer_up
	t_import "rereg_test rxe0 (upstream)" /rdma-rs/rereg_test -d rxe0 -g 0
	grep '^C ' /tmp/import.out >/tmp/rereg-rxe0.c
	t_check "rxe0: TRANS rereg is EOPNOTSUPP (rxe_rereg_user_mr() supports PD and ACCESS)" \
		grep -qx "I trans 95" /tmp/import.out
	peer_down
	for d in mlx5_0 mlx5_1; do
		if [ -s /tmp/rereg-$d.c ] && diff /tmp/rereg-rxe0.c /tmp/rereg-$d.c >/tmp/rereg-diff; then
			t_ok "rereg_test: $d's $(wc -l </tmp/rereg-$d.c) facts equal rxe0's"
		else
			sed 's/^/    diff| /' /tmp/rereg-diff | head -n 40
			t_fail "rereg_test: $d's facts equal rxe0's"
		fi
	done
}

[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode breadth
