# SPDX-License-Identifier: GPL-2.0
# Mode pcifn, suite vm_pcifn_badhw: bad device behaviour through upstream mlx5_core and
# mlx5_ib_rs on the emulated ConnectX function (Documentation/pcifn.md, "Bad device
# behaviour"). The function's test window (the last page of BAR 0, written with
# tests/userspace/cxfn_badhw.c through resource0) makes it fail a command with a bad
# status, hang one (mlx5_core's timeout, then a late completion), write corrupted EQEs,
# stall its health counter, take the port down and up (IB_EVENT_PORT_ERR/PORT_ACTIVE),
# and raise a firmware fatal error (mlx5_core's error state,
# IB_EVENT_DEVICE_FATAL from mlx5_ib_rs, health recovery reloading the function, and our
# driver bound again). After each case the stack still works; at the end everything
# unloads, and the kernel log has no warning, oops or lockdep/KASAN report.

BADHW=/rdma-rs/cxfn_badhw

# The PCI function's address.
badhw_bdf() {
	local d
	for d in /sys/bus/pci/devices/*; do
		[ "$(cat "$d/vendor")" = 0x15b3 ] && { echo "${d##*/}"; return; }
	done
}

# badhw_ctl CMD [ARGS...]: one test-window command (regs.rs, `tw_cmd`).
badhw_ctl() { $BADHW ctl "$_bh_bdf" "$@" >/dev/null; }

# badhw_log_has N WHAT REGEX: the kernel log after line N has REGEX.
badhw_log_has() {
	local n=$1 d=$2
	shift 2
	if dmesg | tail -n +"$((n + 1))" | grep -Eq -- "$1"; then
		t_ok "$d"
	else
		t_fail "$d" "no line matching $1"
	fi
}

# badhw_wait_log N SECONDS REGEX: waits for REGEX in the kernel log after line N.
badhw_wait_log() {
	local i
	for i in $(seq "$2"); do
		dmesg | tail -n +"$(($1 + 1))" | grep -Eq -- "$3" && return 0
		sleep 1
	done
	return 1
}

badhw_port_ok() {
	local out
	out=$($BADHW port mlx5_0)
	t_check "$1: ibv_query_port works ($out)" test "$out" = "query_port: ok state 4"
}

pcifn_badhw() {
	local _bh_bdf n0 n out t1 i start
	start=$(date +%s)
	_bh_bdf=$(badhw_bdf)
	n0=$(dmesg | wc -l)
	load_ours
	t_check "mlx5_0 is registered on $_bh_bdf" test -e /sys/class/infiniband/mlx5_0
	t_check "the function's test window answers (CXTW, CLEAR)" badhw_ctl 3
	badhw_port_ok "before any fault"

	# A bad status and syndrome (not executed by the model) on a command of uid 0:
	# QUERY_HCA_VPORT_CONTEXT behind ibv_query_port. BAD_PARAM_ERR is EINVAL upstream.
	n=$(dmesg | wc -l)
	badhw_ctl 1 0x762 0x3 0xbad
	out=$($BADHW port mlx5_0)
	t_check "bad status (BAD_PARAM_ERR) on QUERY_HCA_VPORT_CONTEXT: ibv_query_port EINVAL ($out)" \
		test "$out" = "query_port: errno 22"
	badhw_log_has "$n" "the kernel log names the command, status and syndrome" \
		'QUERY_HCA_VPORT_CONTEXT\(0x762\) op_mod\(0x0\) failed, status .*\(0x3\), syndrome \(0xbad\), err\(-22\)'
	# A user context's command: NO_RES_ERR on ALLOC_PD is EAGAIN.
	badhw_ctl 1 0x800 0xf 0x1
	out=$($BADHW pd mlx5_0)
	t_check "bad status (NO_RES_ERR) on ALLOC_PD: ibv_alloc_pd EAGAIN ($out)" \
		test "$out" = "alloc_pd: errno 11"
	badhw_ctl 3
	badhw_port_ok "after the bad status is cleared"
	out=$($BADHW pd mlx5_0)
	t_check "ibv_alloc_pd works again ($out)" test "$out" = "alloc_pd: ok"

	# A command that never completes: the function reports a 10 s command timeout in its
	# init segment (cmd_exec_to); mlx5_core waits that, tries to recover an EQE for 5 s,
	# and fails the command with -ETIMEDOUT, which ibv_query_port returns.
	# (hangport opens the device first: libmlx5's own port query at open is not held.)
	n=$(dmesg | wc -l)
	out=$($BADHW hangport mlx5_0 "$_bh_bdf" 0x762)
	t1=$(echo "$out" | sed -n 's/.* after \([0-9]*\) s$/\1/p')
	echo "badhw: $out"
	t_check "hung QUERY_HCA_VPORT_CONTEXT: ibv_query_port ETIMEDOUT ($out)" \
		sh -c "echo '$out' | grep -q '^query_port: errno 110 after'"
	t_check "the timeout took the function's 10 s + mlx5_core's 5 s, not 60 s (${t1:-?} s)" \
		test "${t1:-0}" -ge 14 -a "${t1:-99}" -le 30
	badhw_log_has "$n" "mlx5_core: no done completion" 'QUERY_HCA_VPORT_CONTEXT\(0x762\) No done completion'
	badhw_log_has "$n" "mlx5_core: timeout, command resource held" \
		'QUERY_HCA_VPORT_CONTEXT\(0x762\) timeout\. Will cause a leak of a command resource'
	# The late completion frees the slot mlx5_core kept (otherwise modprobe -r would wait
	# for it forever in mlx5_cmd_use_polling()).
	badhw_ctl 3
	badhw_ctl 4
	t_check "the late completion reaches mlx5_core" \
		badhw_wait_log "$n" 10 'Command completion arrived after timeout'
	badhw_port_ok "after the late completion"

	# Corrupted EQEs: a CQ error for a CQ that does not exist (mlx5_core warns and drops
	# it), and a QP catastrophic error for a QP that does not exist (our notifier finds no
	# QP and drops it, as upstream mlx5_ib does).
	n=$(dmesg | wc -l)
	t_check "EQE: CQ error for bogus CQN 0xabcdef" badhw_ctl 6 0x04 0 0xabcdef
	t_check "EQE: WQ catastrophic error for bogus QPN 0xfedcba" badhw_ctl 6 0x05 24 0xfedcba
	t_check "mlx5_core reports the CQ error of a bogus CQ" \
		badhw_wait_log "$n" 5 'Async event for bogus CQ 0xabcdef'
	badhw_port_ok "after the corrupted EQEs"

	# A health-counter stall: mlx5_core's poll (every 2 s) reports it after three misses;
	# that is not fatal, and the device keeps working.
	n=$(dmesg | wc -l)
	badhw_ctl 5 1
	t_check "mlx5_core reports the stalled health counter" \
		badhw_wait_log "$n" 15 "device's health compromised - reached miss count"
	badhw_ctl 5 0
	t_check "no fatal error from the stall" \
		sh -c "! dmesg | tail -n +$((n + 1)) | grep -q 'Fatal error'"
	tr_pair "ibv_rc_pingpong after the bad status, timeout, EQEs and stall" ibv_rc_pingpong \
		"-d mlx5_0 -n 20" "-d mlx5_0 -n 20"

	# Port events: the function takes port 1 down and up (its vport context follows, and a
	# PORT_CHANGE EQE, subtype DOWN then ACTIVE, goes to mlx5_core's async EQ); mlx5_ib_rs
	# queues IB_EVENT_PORT_ERR / IB_EVENT_PORT_ACTIVE (the port cache is refreshed first)
	# and the user context reads them; ibv_query_port shows the state.
	$BADHW portev mlx5_0 "$_bh_bdf" >/tmp/badhw-port.out 2>&1
	sed 's/^/    portev| /' /tmp/badhw-port.out
	t_check "port down: IB_EVENT_PORT_ERR (10) on port 1, then state DOWN (1)" \
		sh -c "grep -A2 '^port down: result 0' /tmp/badhw-port.out | tr '\n' ' ' | grep -q 'event 10 port 1 state 1 '"
	t_check "port up: IB_EVENT_PORT_ACTIVE (9) on port 1, then state ACTIVE (4)" \
		sh -c "grep -A2 '^port up: result 0' /tmp/badhw-port.out | tr '\n' ' ' | grep -q 'event 9 port 1 state 4 '"
	badhw_port_ok "after the port events"

	# A firmware fatal error: the NIC interface reads "disabled"; mlx5_core's health poll
	# enters the error state and notifies SYS_ERROR (atomic context); mlx5_ib_rs delivers
	# IB_EVENT_DEVICE_FATAL from a work item to the user context's async fd; the verb
	# after it fails (ENOLINK: mlx5_core's error-state result, or EIO once the removal has
	# disassociated the context). Then mlx5_core's health recovery unloads the function
	# (our driver unbinds: the removal's own DEVICE_FATAL is the second event) and loads
	# it again (our driver binds the new mlx5_core.rdma.0 and registers mlx5_0).
	n=$(dmesg | wc -l)
	$BADHW fatal mlx5_0 "$_bh_bdf" >/tmp/badhw-fatal.out 2>&1
	sed 's/^/    fatal| /' /tmp/badhw-fatal.out
	t_check "FATAL raised through the test window" grep -q '^fatal raised: result 0' /tmp/badhw-fatal.out
	t_check "the first async event is IB_EVENT_DEVICE_FATAL" \
		sh -c "grep '^event' /tmp/badhw-fatal.out | head -n 1 | grep -q '^event 8 '"
	t_check "a verb after the fatal event fails with ENOLINK or EIO" \
		grep -Eq '^alloc_pd after fatal: errno (67|5)$' /tmp/badhw-fatal.out
	t_check "two IB_EVENT_DEVICE_FATAL: the error's and the removal's" \
		grep -q '^fatal events: 2$' /tmp/badhw-fatal.out
	dmesg | tail -n +"$((n + 1))" | grep -E 'mlx5|ib_core_rs' | sed 's/^/    kmsg| /' | head -n 40
	badhw_log_has "$n" "mlx5_core detects the fatal error" 'Fatal error [0-9]+ detected'
	badhw_log_has "$n" "mlx5_ib_rs reports it from mlx5_core's SYS_ERROR" \
		'mlx5_ib_rs: mlx5_core reports a fatal device error'
	badhw_log_has "$n" "ib_core_rs dispatches IB_EVENT_DEVICE_FATAL (8) from its work item" \
		'ib_core_rs: mlx5_0: event 8 on port 1 dispatched'
	t_check "mlx5_core's health recovery succeeds" \
		badhw_wait_log "$n" 60 'health recovery succeeded'
	for i in $(seq 60); do [ -e /sys/class/infiniband/mlx5_0 ] && break; sleep 1; done
	t_check "mlx5_ib_rs is bound to the new mlx5_core.rdma.0" \
		test "$(fwsim_driver_of mlx5_core.rdma.0)" = mlx5_ib_rs.mlx5_ib_rs
	t_check "mlx5_0 registered again" test -e /sys/class/infiniband/mlx5_0
	badhw_port_ok "after the recovery"
	tr_pair "ibv_rc_pingpong after the fatal error and recovery" ibv_rc_pingpong \
		"-d mlx5_0 -n 20" "-d mlx5_0 -n 20"
	t_check "rdma res: no pd, cq, qp or mr left" \
		sh -c "rdma res | grep -v ' pd 0 cq 0 qp 0 .*mr 0' | grep -q . && exit 1 || exit 0"
	unload_ours
	out=$(dmesg | tail -n +"$((n0 + 1))" |
		grep -E 'WARNING:|BUG:|Oops|Call Trace|KASAN|possible circular locking|lockdep|INFO: task|refcount_t|general protection' | head -n 3)
	t_check "no warning, oops, KASAN or lockdep report through the bad-device cases" test -z "$out"
	echo "badhw: suite took $(($(date +%s) - start)) s"
}
