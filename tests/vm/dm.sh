#!/bin/sh
# Device memory (issue 16): vm_dm. tests/userspace/dm_test.c through Debian's
# libibverbs + libmlx5 on both simulated link layers (DM_ALLOC/FREE and
# DM_MR_REG errnos as upstream's code gives them, memcpy to and from the
# device's memory through libmlx5's mapping, RDMA WRITE/READ, SEND/RECV and
# atomics on a DM MR, the memory coming back), a process that exits holding a
# DM, an MR and the mapping, and ibv_devinfo -v's device memory line. rdma_rxe
# has no device memory: nothing to compare with (Documentation/mlx5.md).
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"

DM_SIM=sim=ib,eth

# The simulator holds only what the bound functions hold (no MEMIC allocation left).
dm_baseline() {
	local n
	for n in 0 1; do
		t_check "mlx5_ib_rs.rdma.$n: no MEMIC allocation, mkey or mapping left after $1" \
			fwsim_resources_probed mlx5_ib_rs.rdma.$n
	done
	t_check "rdma res shows no MR after $1" sh -c '! rdma res show mr | grep -q .'
}

dm_suite() {
	local n
	load_ours $DM_SIM
	# upstream devinfo.c: "maximum available device memory:\t%luBytes" when max_dm_size != 0.
	for n in 0 1; do
		t_check "mlx5_$n: ibv_devinfo -v shows 256 KiB of device memory" sh -c \
			"ibv_devinfo -v -d mlx5_$n | grep -Eq 'maximum available device memory:[[:space:]]*262144Bytes'"
	done
	t_import "dm_test mlx5_0 (IB)" /rdma-rs/dm_test -d mlx5_0
	t_import "dm_test mlx5_1 (RoCE)" /rdma-rs/dm_test -d mlx5_1 -g 1
	dm_baseline "the dm test"
	t_import "dm_test -x mlx5_0: exits holding a DM, its MR and the mapping" \
		/rdma-rs/dm_test -d mlx5_0 -x
	t_import "dm_test -x mlx5_1: the same on RoCE" /rdma-rs/dm_test -d mlx5_1 -g 1 -x
	dm_baseline "processes exited holding DMs"
	t_import "dm_test mlx5_0 again: the memory is all there" /rdma-rs/dm_test -d mlx5_0
	dm_baseline "the second run"
	unload_ours
}
