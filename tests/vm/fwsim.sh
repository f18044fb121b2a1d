# SPDX-License-Identifier: GPL-2.0
# The firmware simulator in the kernel: simulated functions as auxiliary
# devices bound by our driver, debugfs resource counts and fault knobs.
# Sourced by check.sh after lib.sh and ours.sh; runs inside a suite.

fwsim_suite() {
	local dev drv d0=mlx5_ib_rs.rdma.0 d1=mlx5_ib_rs.rdma.1

	# Without mlx5_core, mlx5_ib_rs cannot load (symbol dependency, as upstream mlx5_ib).
	modprobe -r mlx5_core 2>/dev/null
	if insmod $RDMARS_MODS/ib_core_rs.ko && ! insmod $RDMARS_MODS/mlx5_ib_rs.ko 2>/dev/null; then
		t_ok "mlx5_ib_rs refuses to load without mlx5_core"
	else
		t_fail "mlx5_ib_rs refuses to load without mlx5_core"
		rmmod mlx5_ib_rs 2>/dev/null
	fi
	rmmod ib_core_rs 2>/dev/null

	# A bad list is refused at load and leaves nothing behind.
	load_mlx5_core
	if insmod $RDMARS_MODS/ib_core_rs.ko && ! insmod $RDMARS_MODS/mlx5_ib_rs.ko sim=ib,bogus 2>/dev/null; then
		t_ok "sim=ib,bogus is refused"
	else
		t_fail "sim=ib,bogus is refused"
	fi
	[ ! -e $FWSIM_DBG ] && [ ! -e $AUX_DEVS/$d0 ] && t_ok "nothing left by a refused sim= list" ||
		t_fail "nothing left by a refused sim= list"
	rmmod ib_core_rs 2>/dev/null
	modprobe -r mlx5_core 2>/dev/null

	load_ours sim=ib,eth
	ls -l $AUX_DEVS/
	for dev in $d0 $d1; do
		t_check "$dev exists" test -e $AUX_DEVS/$dev
		drv=$(fwsim_driver_of $dev)
		echo "$dev -> driver $drv"
		case "$drv" in mlx5_ib_rs*) t_ok "$dev bound to mlx5_ib_rs" ;; *) t_fail "$dev bound to mlx5_ib_rs" "driver '$drv'" ;; esac
		t_check "$dev holds the kernel PD and UAR after probe" fwsim_resources_probed $dev
		cat $FWSIM_DBG/$dev/stats
		t_check "$dev probe ran commands" test "$(awk '/^commands/ { print $2 }' $FWSIM_DBG/$dev/stats)" -ge 4
	done
	t_check "function 0 is an InfiniBand ConnectX-7" \
		sh -c "grep -q 'model ConnectX-7' $FWSIM_DBG/$d0/identity && grep -q 'link_layer InfiniBand' $FWSIM_DBG/$d0/identity && grep -q 'pci 15b3:1021' $FWSIM_DBG/$d0/identity"
	t_check "function 1 is an Ethernet ConnectX-6 Dx" \
		sh -c "grep -q 'model ConnectX-6 Dx' $FWSIM_DBG/$d1/identity && grep -q 'link_layer Ethernet' $FWSIM_DBG/$d1/identity && grep -q 'pci 15b3:101d' $FWSIM_DBG/$d1/identity"
	dmesg | grep 'mlx5_ib_rs' | grep -v 'KTAP\|# \|ok ' | tail -n 8
	t_check "probe ran every stage on both functions" \
		test "$(dmesg | grep -c 'probe stages done')" -ge 2
	# IB_REG: the core lists the devices (nldev GET is not on main yet: the driver's log).
	t_check "mlx5_0 is the InfiniBand function" \
		sh -c "dmesg | grep '$d0' | grep 'InfiniBand' | grep -q 'registered as mlx5_0'"
	t_check "mlx5_1 is the RoCE function" \
		sh -c "dmesg | grep '$d1' | grep 'Ethernet' | grep -q 'registered as mlx5_1'"
	rdma dev
	t_check "rdma dev lists mlx5_0 and mlx5_1" sh -c "rdma dev | grep -q 'mlx5_0' && rdma dev | grep -q 'mlx5_1'"
	t_check "mlx5_0 port 1 is InfiniBand" test "$(cat /sys/class/infiniband/mlx5_0/ports/1/link_layer)" = InfiniBand
	t_check "mlx5_1 port 1 is Ethernet" test "$(cat /sys/class/infiniband/mlx5_1/ports/1/link_layer)" = Ethernet
	t_check "mlx5_0 hca_type MT4129" test "$(cat /sys/class/infiniband/mlx5_0/hca_type)" = MT4129
	t_check "mlx5_1 hca_type MT4125" test "$(cat /sys/class/infiniband/mlx5_1/hca_type)" = MT4125
	t_check "mlx5_0 fw_ver 28.43.1014" test "$(cat /sys/class/infiniband/mlx5_0/fw_ver)" = 28.43.1014
	for f in hw_rev board_id fw_pages reg_pages; do
		t_check "mlx5_0 $f readable" test -n "$(cat /sys/class/infiniband/mlx5_0/$f)"
	done
	cat /sys/class/infiniband/mlx5_1/ports/1/gids/0

	# Fault knobs: set, read back, refuse garbage, clear.
	d=$FWSIM_DBG/$d0
	echo "3 0x8 0x42" >$d/fail_nth
	t_check "fail_nth reads back" test "$(cat $d/fail_nth)" = "0x3 0x8 0x42"
	if echo "bogus" >$d/fail_nth 2>/dev/null; then t_fail "fail_nth refuses garbage"; else t_ok "fail_nth refuses garbage"; fi
	echo 1000 >$d/delay_us
	t_check "delay_us reads back" test "$(cat $d/delay_us)" = 1000
	echo 1 >$d/clear_faults
	t_check "clear_faults disarms" test "$(cat $d/fail_nth) $(cat $d/delay_us)" = "0 0"

	# A firmware failure in probe: unbind, fail every ALLOC_PD, bind again.
	drv=$(fwsim_driver_of $d0)
	echo $d0 >/sys/bus/auxiliary/drivers/$drv/unbind
	t_check "unbind $d0" test -z "$(fwsim_driver_of $d0)"
	echo 0x800 >$d/fail_opcode
	t_check "fail_opcode reads back" test "$(cat $d/fail_opcode)" = "0x800 0x1 0x5f0000ff"
	echo $d0 >/sys/bus/auxiliary/drivers/$drv/bind 2>/dev/null
	t_check "probe fails when ALLOC_PD fails" test -z "$(fwsim_driver_of $d0)"
	dmesg | grep 'ALLOC_PD(0x800)' | tail -n 1
	t_check "the failure was logged with opcode, status and syndrome" \
		sh -c "dmesg | grep -q 'ALLOC_PD(0x800) op_mod(0x0) failed, status INT_ERR(0x1), syndrome (0x5f0000ff), err(-5)'"
	t_check "stats count the injected failure" test "$(awk '/^injected/ { print $2 }' $d/stats)" = 1
	t_check "$d0 resources zero after the failed probe" fwsim_resources_zero $d0
	echo 0 >$d/fail_opcode
	echo $d0 >/sys/bus/auxiliary/drivers/$drv/bind
	t_check "bind again once the fault is cleared" test -n "$(fwsim_driver_of $d0)"
	t_check "$d0 holds the kernel PD and UAR after rebinding" fwsim_resources_probed $d0
	echo $d0 >/sys/bus/auxiliary/drivers/$drv/unbind
	t_check "$d0 resources zero after unbind" fwsim_resources_zero $d0
	echo $d0 >/sys/bus/auxiliary/drivers/$drv/bind

	unload_ours
	t_check "rmmod unregistered mlx5_0 and mlx5_1" \
		sh -c "dmesg | grep -q 'unregistered mlx5_0' && dmesg | grep -q 'unregistered mlx5_1'"
	t_check "sysfs mlx5_0 gone after rmmod" test ! -e /sys/class/infiniband/mlx5_0
	t_check "aux devices gone after rmmod" test ! -e $AUX_DEVS/$d0 -a ! -e $AUX_DEVS/$d1
	t_check "debugfs gone after rmmod" test ! -e $FWSIM_DBG
}

# fwsim_worker_pids KIND: the pids of the device worker threads of the ib or eth fabrics.
fwsim_worker_pids() {
	local c
	for c in /proc/[0-9]*/comm; do
		[ "$(cat "$c" 2>/dev/null)" = "mlx5_fwsim_$1" ] && basename "$(dirname "$c")"
	done
}

# fwsim_cpu_ticks PID: user + system clock ticks of a thread.
fwsim_cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# Fabrics: functions of one link layer share one fabric and its worker thread.
fwsim_fabric_suite() {
	local ib eth t0 t1 dev
	load_ours sim=ib,ib,eth,eth
	t_check "sim=ib,ib,eth,eth registers four devices" test "$(ls /sys/class/infiniband | wc -l)" = 4
	ib=$(fwsim_worker_pids ib)
	eth=$(fwsim_worker_pids eth)
	echo "workers: ib $ib, eth $eth"
	t_check "one worker thread for the two IB functions" test "$(echo $ib | wc -w)" = 1
	t_check "one worker thread for the two Ethernet functions" test "$(echo $eth | wc -w)" = 1
	for dev in 0 1 2 3; do
		cat $FWSIM_DBG/mlx5_ib_rs.rdma.$dev/iommu | tr '\n' ' '
		echo
		t_check "rdma.$dev: no DMA mapping without queues" \
			grep -qx 'mappings 0' $FWSIM_DBG/mlx5_ib_rs.rdma.$dev/iommu
	done
	# With no QP a worker sleeps until kicked: no CPU time while idle.
	if [ -n "$ib" ] && [ -n "$eth" ]; then
		t0=$(($(fwsim_cpu_ticks $ib) + $(fwsim_cpu_ticks $eth)))
		sleep 2
		t1=$(($(fwsim_cpu_ticks $ib) + $(fwsim_cpu_ticks $eth)))
		echo "idle workers: $((t1 - t0)) clock ticks in 2 s"
		t_check "idle workers use no CPU" test $((t1 - t0)) -le 1
	fi
	unload_ours
	t_check "the workers stop with the module" test -z "$(fwsim_worker_pids ib)$(fwsim_worker_pids eth)"
}
