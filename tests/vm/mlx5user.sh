# SPDX-License-Identifier: GPL-2.0
# mlx5 user objects on the firmware simulator. Sourced by the mode scripts
# (RDMARS_SOURCED=1: the raw suite) or run as the VM mode `mlx5user` (both).
#  - vm_mlx5_user: raw uverbs commands with libmlx5's udata
#    (tests/userspace/mlx5_user_raw.c): the UAR object and its mmap, PD, CQ
#    (write and ioctl), RC QP, MR, the errnos of bad requests, each create
#    command failed by the simulator's fault knob; the simulator's tables.
#  - vm_mlx5_libmlx5: Debian's libmlx5 through the libibverbs workload.
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"
. "${RDMARS_DIR:-/rdma-rs}/ours.sh"

uverbs_of() {
	for d in /sys/class/infiniband_verbs/uverbs*; do
		[ "$(cat $d/ibdev)" = "$1" ] && basename $d
	done
}

mlx5_user_suite() {
	load_ours sim=ib,eth
	for n in 0 1; do
		fn=$FWSIM_DBG/mlx5_ib_rs.rdma.$n
		t_import "raw mlx5_$n" /rdma-rs/mlx5_user_raw /dev/infiniband/$(uverbs_of mlx5_$n) $fn
		t_check "mlx5_$n: the simulator holds only the kernel PD and UAR afterwards" fwsim_resources_probed mlx5_ib_rs.rdma.$n
	done
	unload_ours
}

# res_attr FILE ATTR PID: the number after ATTR on each line of FILE owned by PID ("-" where
# the line has no ATTR).
res_attr() {
	grep " pid $3 " "$1" | sed -n "s/.* $2 \([0-9]*\) .*/\1/p; t; s/.*/-/p"
}

# res_attr_in FILE ATTR PID SET: PID owns lines in FILE, and each has ATTR with a value in SET
# (" a b c ").
res_attr_in() {
	local v n=0
	for v in $(res_attr "$1" "$2" "$3"); do
		case "$4" in *" $v "*) n=$((n + 1)) ;; *) return 1 ;; esac
	done
	[ $n -gt 0 ]
}

# res_shapes DEV PID: the held run's dumps (/tmp/res-{ctx,pd,cq,qp,mr}) with the device name,
# the pid, numbers and keys blanked, one line of each shape: what a user sees of the objects
# whatever their numbers (compared with rxe's by vm_workload_vs_rxe).
res_shapes() {
	local r
	for r in ctx pd cq qp mr; do
		grep " pid $2 " /tmp/res-$r | sed -E "s/^/$r| /; s/$1/DEV/g; s/ pid $2 / pid PID /; s/0x[0-9a-f]+/HEX/g; s/[0-9]+/N/g"
	done | sort -u
}

# The workload holding its objects (-w): `rdma res show pd|cq|qp|mr|ctx` lists
# them with the workload's pid and comm (upstream RES_*_GET dumps); PDs and CQs
# name the workload's context (`ctxn`), QPs and MRs one of its PDs (`pdn`).
# The shapes of the lines are kept in /tmp/res-shapes-DEV.
# mlx5_res_while_held DEV [more workload options]
mlx5_res_while_held() {
	local dev=$1 wl i r
	shift
	rm -f /tmp/wl-release
	/rdma-rs/verbs_workload -d $dev -m 1 "$@" -w /tmp/wl-release >/tmp/wl-hold.out 2>&1 &
	wl=$!
	i=0
	while ! grep -q '^I holding' /tmp/wl-hold.out && [ $i -lt 600 ]; do
		nap 0.2
		i=$((i + 1))
	done
	for r in pd cq qp mr; do
		rdma res show $r >/tmp/res-$r 2>&1
		sed "s/^/    rdma-$r| /" /tmp/res-$r | head -n 12
		if grep -q "^\(dev $dev\|link $dev/1\) .*pid $wl comm verbs_workload" /tmp/res-$r; then
			t_ok "rdma res show $r lists $dev objects with the workload's pid and comm"
		else
			t_fail "rdma res show $r lists $dev objects with the workload's pid and comm"
		fi
	done
	# The RC QP as the workload set it up: port 1, RTS, its PSNs (0x1234/0x4321).
	t_check "rdma res show qp shows the RC QP in RTS with its PSNs" sh -c \
		"grep -q \"^link $dev/1 .*type RC state RTS rq-psn 4660 sq-psn 17185\" /tmp/res-qp"
	# What each object names (upstream fill_res_{pd,cq,qp,mr}_entry()): the context of PDs
	# and CQs, the PD of QPs and MRs, each one of the workload's own.
	rdma res show ctx >/tmp/res-ctx 2>&1
	sed "s/^/    rdma-ctx| /" /tmp/res-ctx | head -n 4
	local ctxs pds
	ctxs=" $(sed -n "s/^dev $dev ctxn \([0-9]*\) pid $wl comm verbs_workload.*/\1/p" /tmp/res-ctx | tr '\n' ' ')"
	pds=" $(res_attr /tmp/res-pd pdn $wl | tr '\n' ' ')"
	t_check "rdma res show ctx lists the workload's context on $dev" test "$ctxs" != " "
	t_check "$dev: every PD of the workload names its context (ctxn)" res_attr_in /tmp/res-pd ctxn $wl "$ctxs"
	t_check "$dev: every CQ of the workload names its context (ctxn)" res_attr_in /tmp/res-cq ctxn $wl "$ctxs"
	t_check "$dev: every QP of the workload names one of its PDs (pdn)" res_attr_in /tmp/res-qp pdn $wl "$pds"
	t_check "$dev: every MR of the workload names one of its PDs (pdn)" res_attr_in /tmp/res-mr pdn $wl "$pds"
	res_shapes $dev $wl >/tmp/res-shapes-$dev
	touch /tmp/wl-release
	wait $wl
	t_import_file "libmlx5 $dev held" /tmp/wl-hold.out $?
}

mlx5_libmlx5_suite() {
	load_ours sim=ib,eth
	local m
	for n in 0 1; do
		# MRs from 4 KiB to 256 MiB on mlx5_1 (RoCE), the run compared with rxe0's
		# (vm_workload_vs_rxe); up to 16 MiB on mlx5_0 (the MR path is the same for
		# both link layers, and pinning 256 MiB costs most of a minute under TCG).
		m=256
		[ $n = 0 ] && m=16
		t_import "libmlx5 mlx5_$n, MRs up to $m MiB" /rdma-rs/verbs_workload -d mlx5_$n -m $m -o 0
		cp /tmp/import.out /tmp/wl-mlx5_$n.out
		t_import "libmlx5 mlx5_$n order 1" /rdma-rs/verbs_workload -d mlx5_$n -m 16 -o 1
		t_import "libmlx5 mlx5_$n exit without destroy" /rdma-rs/verbs_workload -d mlx5_$n -m 1 -x
		t_check "mlx5_$n: the simulator holds only the kernel PD and UAR afterwards" fwsim_resources_probed mlx5_ib_rs.rdma.$n
	done
	mlx5_res_while_held mlx5_1
	t_check "mlx5_1: the simulator holds only the kernel PD and UAR after the held run" fwsim_resources_probed mlx5_ib_rs.rdma.1
	t_check "rdma res: no pd, cq, qp or mr left" sh -c "rdma res | grep -v ' pd 0 cq 0 qp 0 .*mr 0' | grep -q . && exit 1 || exit 0"
	unload_ours
}

# Hot unplug of a simulated function while a libmlx5 process holds a context,
# PDs, a CQ, an RC QP, an MR, the UAR mapping and the async fd: unbinding the
# function (mlx5_ib_rs's remove, as a PCI remove would) unregisters mlx5_1 and
# disassociates the file without waiting for the process; the process sees
# EIO, DEVICE_FATAL, and closes; the simulator is back to nothing.
mlx5_unplug_suite() {
	local f=mlx5_ib_rs.rdma.1 drv pid rc t0 t1
	load_ours sim=ib,eth
	rm -f /tmp/unplug-go
	/rdma-rs/uverbs_unplug -d mlx5_1 -o hold /tmp/unplug-go >/tmp/m-unplug.out 2>&1 &
	pid=$!
	for i in $(seq 1 300); do grep -q READY /tmp/m-unplug.out && break; nap 0.1; done
	echo "restrack while held: $(rdma res | grep mlx5_1)"
	cat $FWSIM_DBG/$f/resources | tr '\n' ' '
	echo
	drv=$(fwsim_driver_of $f)
	t0=$(date +%s)
	rc=0
	timeout 60 sh -c "echo $f >/sys/bus/auxiliary/drivers/$drv/unbind" || rc=$?
	t1=$(date +%s)
	echo "unbind $f: exit $rc after $((t1 - t0)) s"
	if [ $rc = 0 ] && kill -0 $pid 2>/dev/null; then
		t_ok "unbind $f completes while a process holds its objects"
	else
		t_fail "unbind $f completes while a process holds its objects" "exit $rc"
	fi
	t_check "mlx5_1 unregistered" test ! -e /sys/class/infiniband/mlx5_1
	t_check "$f: the simulator holds nothing after the remove" fwsim_resources_zero $f
	touch /tmp/unplug-go
	rc=0
	wait $pid || rc=$?
	t_import_file "mlx5 hot unplug" /tmp/m-unplug.out $rc
	echo $f >/sys/bus/auxiliary/drivers/$drv/bind
	t_check "bind $f again" test -n "$(fwsim_driver_of $f)"
	unload_ours
}

# vm_mlx5_unplug_load [N [T]]: hot unplug under load. N processes (default
# UL_N, else 100) each hold a context, 4 PDs, a CQ, an RC QP, a 64 KiB MR and
# libmlx5's UAR and doorbell mappings on mlx5_1 (uverbs_unplug -o hold); the
# last T of them (default UL_T, else 4) also a second RC QP connected to the
# first and a second MR, and once all hold their objects they post RDMA
# WRITEs and poll their CQ (traffic in flight) until their async fd reports
# IB_EVENT_DEVICE_FATAL. The function is unbound meanwhile. The removal is
# timed (/proc/uptime, 10 ms) and printed as a figure (`unplug figure:`, also
# appended to /tmp/ul-figs), not checked: speed is measured by `make
# bench-unplug` on the benchmark kernel; then every process must see EIO from every call and
# IB_EVENT_DEVICE_FATAL on its async fd and close cleanly within 60 s (none
# hangs), the simulator must hold nothing, and the function, bound again,
# must serve a new process. The holders sleep on FIFOs until told to go
# (polling a file ten times a second, a hundred of them took most of the
# VM's two vCPUs under TCG and slowed the removal).
mlx5_unplug_load_suite() {
	local f=mlx5_ib_rs.rdma.1 drv n=${1:-${UL_N:-100}} t=${2:-${UL_T:-4}} i p ready pids rc t0 t1 ms sys okp failp hung wd targs tr
	load_ours sim=ib,eth
	rm -f /tmp/ul-go /tmp/ul-traffic /tmp/ul-*.out
	# The go signals are FIFOs: the holders sleep on them (uverbs_unplug opens
	# them before READY and polls); a write wakes them all.
	mkfifo /tmp/ul-go /tmp/ul-traffic
	pids=
	for i in $(seq 1 $n); do
		# RoCE v2 is GID index 1 of the simulated RoCE port.
		targs=
		[ $i -gt $((n - t)) ] && targs="-t /tmp/ul-traffic -g 1"
		/rdma-rs/uverbs_unplug -d mlx5_1 -o $targs hold /tmp/ul-go >/tmp/ul-$i.out 2>&1 &
		pids="$pids $!"
	done
	for i in $(seq 1 1800); do
		ready=$(grep -l READY /tmp/ul-*.out 2>/dev/null | wc -l)
		[ "$ready" = "$n" ] && break
		# A process that failed before READY has said so and exited.
		[ $((ready + $(grep -l '^R fail' /tmp/ul-*.out 2>/dev/null | wc -l))) -ge "$n" ] && break
		nap 0.2
	done
	echo "$ready/$n processes hold their objects; restrack: $(rdma res | grep mlx5_1)"
	cat $FWSIM_DBG/$f/resources | tr '
' ' '
	echo
	if [ "$ready" = "$n" ]; then t_ok "$n processes hold contexts, PDs, CQs, QPs, MRs and mappings on mlx5_1"; else t_fail "$n processes hold contexts, PDs, CQs, QPs, MRs and mappings on mlx5_1" "$ready ready"; fi
	if [ "$t" -gt 0 ]; then
		timeout 10 sh -c 'echo go >/tmp/ul-traffic'
		for i in $(seq 1 300); do
			tr=$(grep -l '^TRAFFIC' /tmp/ul-*.out 2>/dev/null | wc -l)
			[ "$tr" -ge "$t" ] && break
			nap 0.2
		done
		if [ "$tr" = "$t" ]; then t_ok "$t processes have RDMA WRITEs in flight on mlx5_1"; else t_fail "$t processes have RDMA WRITEs in flight on mlx5_1" "$tr of $t"; fi
	fi
	drv=$(fwsim_driver_of $f)
	echo "before the unbind: load $(cat /proc/loadavg); simulator: $(tr '\n' ' ' <$FWSIM_DBG/$f/stats)"
	t0=$(cut -d' ' -f1 /proc/uptime)
	rc=0
	# The unbind's wall time, and the CPU time the unbinding task itself spent (sys, 10 ms):
	# the rest is waiting (for the CPUs the VM shares with the traffic, the simulator's
	# worker and the host's other VMs, and for the fabric lock).
	timeout 300 time -f "%e %S" sh -c "echo $f >/sys/bus/auxiliary/drivers/$drv/unbind" 2>/tmp/ul-time || rc=$?
	t1=$(cut -d' ' -f1 /proc/uptime)
	ms=$(echo "$t0 $t1" | awk '{printf "%d", ($2 - $1) * 1000}')
	sys=$(tail -n 1 /tmp/ul-time | awk '{printf "%d", $2 * 1000}')
	echo "unbind $f under $ready processes ($t with traffic): exit $rc after $ms ms (the unbinding task ran $sys ms in the kernel); load $(cat /proc/loadavg)"
	echo "after the unbind: simulator: $(tr '\n' ' ' <$FWSIM_DBG/$f/stats 2>/dev/null)"
	if [ $rc = 0 ]; then t_ok "unbind $f completes while $ready processes hold objects ($ms ms, $sys ms of CPU)"; else t_fail "unbind $f completes while $ready processes hold objects" "exit $rc"; fi
	echo "unplug figure: processes=$ready traffic=$t removal_ms=$ms unbind_sys_ms=$sys"
	echo "$ready $t $ms $sys" >>/tmp/ul-figs
	t_check "mlx5_1 unregistered" test ! -e /sys/class/infiniband/mlx5_1
	t_check "$f: the simulator holds nothing after the remove" fwsim_resources_zero $f
	timeout 10 sh -c 'echo go >/tmp/ul-go'
	# None may hang: each has 60 s to finish its checks and close.
	( sleep 90; for i in $pids; do kill -9 $i 2>/dev/null && echo "killed hung process $i"; done ) >/tmp/ul-watchdog.out 2>&1 &
	wd=$!
	okp=0
	failp=0
	i=0
	for p in $pids; do
		i=$((i + 1))
		rc=0
		wait $p || rc=$?
		if [ $rc = 0 ] && ! grep -q '^R fail' /tmp/ul-$i.out && grep -q 'IB_EVENT_DEVICE_FATAL' /tmp/ul-$i.out; then
			okp=$((okp + 1))
		else
			[ $failp = 0 ] && { echo "process $i (exit $rc):"; sed 's/^/    /' /tmp/ul-$i.out; }
			failp=$((failp + 1))
		fi
	done
	kill $wd 2>/dev/null
	wait $wd 2>/dev/null
	grep -h '^I traffic' /tmp/ul-*.out | sed 's/^/    /'
	hung=$(grep -c killed /tmp/ul-watchdog.out)
	echo "after the remove: $okp/$n processes saw EIO and DEVICE_FATAL and closed cleanly, $failp failed, $hung hung"
	if [ $okp = $n ]; then t_ok "all $n processes got EIO and IB_EVENT_DEVICE_FATAL and closed"; else t_fail "all $n processes got EIO and IB_EVENT_DEVICE_FATAL and closed" "$okp ok, $failp failed, $hung hung"; fi
	if [ "$hung" = 0 ]; then t_ok "no process hung after the remove"; else t_fail "no process hung after the remove" "$hung killed"; fi
	echo $f >/sys/bus/auxiliary/drivers/$drv/bind
	t_check "bind $f again" test -n "$(fwsim_driver_of $f)"
	rc=0
	/rdma-rs/uverbs_unplug -d mlx5_1 exit 2 >/tmp/ul-new.out 2>&1 || rc=$?
	if [ $rc = 0 ] && grep -q READY /tmp/ul-new.out; then t_ok "the new function serves a new process"; else t_fail "the new function serves a new process" "exit $rc: $(cat /tmp/ul-new.out)"; fi
	t_check "$f: the new function back to its kernel PD and UAR" fwsim_resources_probed $f
	unload_ours
}

# vm_mlx5_unplug_traffic: the make-check size of vm_mlx5_unplug_load: 10
# processes, 2 of them with RDMA WRITEs in flight.
mlx5_unplug_traffic_suite() {
	mlx5_unplug_load_suite 10 2
}

# The same workload on the upstream stack (rdma_rxe) and on ours (mlx5_1,
# RoCE): every difference in the checks' results and in the facts the
# workload prints (`I` lines: errnos, limits) is listed. Limits are
# device-specific; the errnos and the ok/fail of each check are not.
workload_compare() {
	local a=$1 b=$2 diffs
	if [ ! -s "$a" ] || [ ! -s "$b" ]; then
		t_fail "workload comparison rxe vs mlx5" "missing output"
		return
	fi
	# The checks (ok/fail, without device-specific values in parentheses) and the
	# errno/return facts; not the limits.
	# The device's name is not a difference.
	sed -n 's/ ([^)]*)//g; s/rxe0\|mlx5_1/DEV/g; s/^\(R [a-z]*\) \([^:]*\).*/\1 \2/p; /^I [a-z0-9_]*\(errno\|_ret\|nonzero\) /p' "$a" | sort >/tmp/cmp-a
	sed -n 's/ ([^)]*)//g; s/rxe0\|mlx5_1/DEV/g; s/^\(R [a-z]*\) \([^:]*\).*/\1 \2/p; /^I [a-z0-9_]*\(errno\|_ret\|nonzero\) /p' "$b" | sort >/tmp/cmp-b
	echo "+ workload: rxe0 (upstream) vs mlx5_1 (ours): checks and errnos ($(wc -l </tmp/cmp-a) and $(wc -l </tmp/cmp-b) lines)"
	diff -u /tmp/cmp-a /tmp/cmp-b | sed 's/^/    diff| /'
	echo "+ workload: device facts (informational)"
	grep '^I ' "$a" | sed 's/^/    rxe0| /'
	grep '^I ' "$b" | sed 's/^/    mlx5_1| /'
	diffs=$(diff -u /tmp/cmp-a /tmp/cmp-b | grep -v '^\(---\|+++\)' | grep -c '^[-+]')
	if [ "$diffs" = 0 ]; then
		t_ok "workload comparison rxe0 vs mlx5_1: same checks, same errnos"
	else
		t_fail "workload comparison rxe0 vs mlx5_1: same checks, same errnos" "$diffs lines differ"
	fi
}

# vm_workload_vs_rxe: the outputs kept by vm_peer_rxe and vm_mlx5_libmlx5: the workload's
# checks and errnos, and the shapes of `rdma res show ctx|pd|cq|qp|mr` while it held its
# objects (mlx5_res_while_held on rxe0 and mlx5_1).
workload_vs_rxe_suite() {
	workload_compare /tmp/wl-rxe0.out /tmp/wl-mlx5_1.out
	sed 's/^/    rxe0| /' /tmp/res-shapes-rxe0 2>/dev/null
	if [ -s /tmp/res-shapes-rxe0 ] && diff /tmp/res-shapes-rxe0 /tmp/res-shapes-mlx5_1 >/tmp/res-shapes-diff; then
		t_ok "rdma res while held: mlx5_1's $(wc -l </tmp/res-shapes-mlx5_1) line shapes equal rxe0's"
	else
		sed 's/^/    diff| /' /tmp/res-shapes-diff 2>/dev/null
		t_fail "rdma res while held: mlx5_1's line shapes equal rxe0's"
	fi
}

# Standalone: the VM mode `mlx5user` (its suites are in suites.list).
[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode mlx5user
