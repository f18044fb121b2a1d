# SPDX-License-Identifier: GPL-2.0
# DEVX (mlx5dv_devx_*) on the firmware simulator. Sourced by the mode scripts.
#  - vm_devx: tests/userspace/devx_test.c on mlx5_0 (IB) and mlx5_1 (RoCE v2,
#    GRH to the port's own GID): a CQ and two RC QPs
#    made entirely through DEVX (umems, the DEVX UAR and EQN), moved to RTS by
#    DEVX modify commands, SEND and RDMA WRITE posted and polled by the program
#    (bytes and CQE status checked), the errnos (allow-lists, no DEVX uid,
#    another context's objects, destroy order); async queries through the
#    [devx_async_cmd] fd and event channels (a DEVX CQ's completion events, a
#    DEVX QP's access error event), the fds after the context's close; the simulator's tables after
#    a normal run, after an exit without destroying anything (the close
#    cleanup, with an async cmd fd and an event channel open), and after the
#    function is unbound while a process holds DEVX objects and the fds (the
#    unplug cleanup; the fds then answer EIO); `rdma res` empty.
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"
. "${RDMARS_DIR:-/rdma-rs}/ours.sh"

devx_suite() {
	local f=mlx5_ib_rs.rdma.0 drv pid rc
	load_ours sim=ib,eth
	t_import "devx mlx5_0" /rdma-rs/devx_test -d mlx5_0 -f $FWSIM_DBG/$f
	t_check "$f: only the kernel PD and UAR left after the DEVX run" fwsim_resources_probed $f
	t_import "devx mlx5_1 (RoCE v2)" /rdma-rs/devx_test -d mlx5_1 -g 1 -f $FWSIM_DBG/mlx5_ib_rs.rdma.1
	t_check "mlx5_ib_rs.rdma.1: only the kernel PD and UAR left after the DEVX run" fwsim_resources_probed mlx5_ib_rs.rdma.1
	t_import "devx mlx5_0 exit without destroy" /rdma-rs/devx_test -d mlx5_0 -x
	t_check "$f: the close cleanup freed every DEVX object, umem and the UCTX" fwsim_resources_probed $f
	# Unplug while a process holds DEVX objects, umems and its UCTX.
	rm -f /tmp/devx-go
	/rdma-rs/devx_test -d mlx5_0 -w /tmp/devx-go >/tmp/devx-hold.out 2>&1 &
	pid=$!
	for i in $(seq 1 300); do grep -q '^I holding' /tmp/devx-hold.out && break; nap 0.1; done
	echo "held: $(tr '\n' ' ' <$FWSIM_DBG/$f/resources)"
	drv=$(fwsim_driver_of $f)
	rc=0
	timeout 60 sh -c "echo $f >/sys/bus/auxiliary/drivers/$drv/unbind" || rc=$?
	t_check "unbind $f while DEVX objects are held (exit $rc)" test $rc = 0
	t_check "$f: the simulator holds nothing after the remove" fwsim_resources_zero $f
	# The process still holds an async cmd fd and two event channels: their files pin
	# the driver module (upstream: the fops' owner), so it cannot be unloaded yet.
	echo "mlx5_ib_rs refcnt: $(cat /sys/module/mlx5_ib_rs/refcnt)"
	t_check "rmmod mlx5_ib_rs refused while DEVX fds are open (the fds pin the module)" \
		sh -c '! rmmod mlx5_ib_rs 2>/dev/null'
	touch /tmp/devx-go
	rc=0
	wait $pid || rc=$?
	t_import_file "devx held across unplug" /tmp/devx-hold.out $rc
	echo $f >/sys/bus/auxiliary/drivers/$drv/bind
	t_check "bind $f again" test -n "$(fwsim_driver_of $f)"
	t_check "rdma res: nothing left" sh -c "rdma res | grep -v ' pd 0 cq 0 qp 0 .*mr 0' | grep -q . && exit 1 || exit 0"
	unload_ours
}
