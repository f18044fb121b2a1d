#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
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
	dm_unplug
	unload_ours
}

# Hot unplug of mlx5_1 while a process holds a DM, its MR and libmlx5's mapping of it: the
# removal completes, the simulator holds nothing afterwards (the MEMIC allocation went back
# with the zapped mapping and the destroyed DM), the process touches the zapped mapping and
# exits cleanly.
dm_unplug() {
	local f=mlx5_ib_rs.rdma.1 drv pid rc i
	rm -f /tmp/dm-go
	/rdma-rs/dm_test -d mlx5_1 -g 1 -H /tmp/dm-go >/tmp/dm-unplug.out 2>&1 &
	pid=$!
	for i in $(seq 1 300); do grep -q READY /tmp/dm-unplug.out && break; nap 0.1; done
	echo "resources while held: $(tr '\n' ' ' <$FWSIM_DBG/$f/resources)"
	drv=$(fwsim_driver_of $f)
	rc=0
	timeout 60 sh -c "echo $f >/sys/bus/auxiliary/drivers/$drv/unbind" || rc=$?
	if [ $rc = 0 ] && kill -0 $pid 2>/dev/null; then
		t_ok "unbind $f completes while a process holds a mapped DM with an MR"
	else
		t_fail "unbind $f completes while a process holds a mapped DM with an MR" "exit $rc"
	fi
	t_check "$f: the simulator holds nothing after the remove (no MEMIC allocation)" \
		fwsim_resources_zero $f
	touch /tmp/dm-go
	rc=0
	wait $pid || rc=$?
	t_import_file "dm_test -H mlx5_1 (hot unplug)" /tmp/dm-unplug.out $rc
	echo $f >/sys/bus/auxiliary/drivers/$drv/bind
	t_check "bind $f again" test -n "$(fwsim_driver_of $f)"
}
