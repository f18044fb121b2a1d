# SPDX-License-Identifier: GPL-2.0
# vm_qp_counters: per-QP hardware counters (upstream core/counters.c, nldev.c's STAT_SET /
# STAT_DEL / STAT_GET, mlx5 counters.c), with known traffic from
# tests/userspace/counter_traffic.c (an RC requester and responder on one device; N RDMA
# WRITEs or READs on demand, counted at the responder):
#  - auto mode by QP type binds both new QPs to one counter (a new Q counter set); the
#    counter counts exactly what was sent, the port's sysfs hw_counters and `rdma statistic
#    show link` count it too; the counter goes with its QPs (its values stay in the port's
#    totals), the simulator's Q counter sets back to the baseline;
#  - manual bind (new counter, then a second QP to it), unbind, errnos (unknown LQPN ENOENT,
#    unknown counter ENOENT, a bound QP ENOMEM (upstream alloc_and_bind()), a wrong counter
#    on unbind EINVAL, auto mode while counters exist EBUSY), a QP unbound in RTS counts in
#    the port's set again (RTS2RTS), a QP destroyed while bound frees its counter; the
#    device's 16 Q counter sets (max_qp_cnt) taken by 15 new counters, the 16th ENOMEM;
#  - the same requests on upstream rdma_rxe, which has port hw_counters but no
#    counter_bind_qp: auto mode is accepted and binds nothing, a manual bind is ENOMEM.

QPC_SIM=sim=ib,eth

# qpc_start DEV [GID]: counter_traffic on DEV, its stdin on fd 7; sets QPC_REQ, QPC_RESP.
qpc_start() {
	rm -f /tmp/qpc.in /tmp/qpc.out
	mkfifo /tmp/qpc.in
	/rdma-rs/counter_traffic -d "$1" ${2:+-g $2} ${QPC_EXTRA:+-x $QPC_EXTRA} </tmp/qpc.in >/tmp/qpc.out 2>&1 &
	QPC_PID=$!
	exec 7>/tmp/qpc.in
	QPC_DONE=0
	qpc_wait '^Q ' 1 || return 1
	set -- $(grep '^Q ' /tmp/qpc.out)
	QPC_REQ=$2
	QPC_RESP=$3
	echo "    requester $QPC_REQ responder $QPC_RESP"
}

# qpc_wait RE N: until /tmp/qpc.out has N lines matching RE (20 s).
qpc_wait() {
	local i
	for i in $(seq 100); do
		[ "$(grep -c "$1" /tmp/qpc.out)" -ge "$2" ] && return 0
		grep -q '^E fail' /tmp/qpc.out && break
		nap 0.2
	done
	sed 's/^/    qpc| /' /tmp/qpc.out
	return 1
}

# qpc_do w|r N: N RDMA WRITEs or READs, waited for.
qpc_do() {
	echo "$1 $2" >&7
	QPC_DONE=$((QPC_DONE + 1))
	qpc_wait '^D ' $QPC_DONE
}

qpc_stop() {
	echo q >&7
	exec 7>&-
	wait $QPC_PID
	grep -q '^E ok' /tmp/qpc.out
}

# qpc_show LINK: `rdma statistic qp show link LINK` into /tmp/qs (and the log).
qpc_show() {
	rdma statistic qp show link "$1" >/tmp/qs 2>&1
	sed 's/^/    qs| /' /tmp/qs
}

# qpc_cntn QPN: the counter of QPN in /tmp/qs (empty if none).
qpc_cntn() {
	awk -v q="$1" '$3 == "cntn" { c = $4 }
		/LQPN:/ { s = $0; sub(/.*</, "", s); sub(/>.*/, "", s); n = split(s, a, ",");
			for (i = 1; i <= n; i++) if (a[i] == q) print c }' /tmp/qs
}

# qpc_val CNTN NAME: counter NAME of counter CNTN in /tmp/qs.
qpc_val() {
	awk -v c="$1" -v n="$2" '$3 == "cntn" && $4 == c {
		for (i = 5; i < NF; i++) if ($i == n) print $(i + 1) }' /tmp/qs
}

# qpc_lqpns CNTN: the LQPN list of counter CNTN.
qpc_lqpns() {
	awk -v c="$1" '$3 == "cntn" { cur = $4 } /LQPN:/ && cur == c { s = $0; sub(/.*</, "", s);
		sub(/>.*/, "", s); print s }' /tmp/qs
}

# qpc_sets FN: the Q counter sets the simulated function FN holds.
qpc_sets() {
	awk '$1 == "sets" { print $2 }' "$FWSIM_DBG/$1/qcounters"
}

# qpc_try CMD...: "rc <status> <stderr>" of an rdma command.
qpc_try() {
	local rc=0
	"$@" >/tmp/qpc.err 2>&1 || rc=$?
	echo "rc $rc $(tr '\n' ' ' </tmp/qpc.err | sed 's/ *$//')"
}

# qpc_port DEV NAME: the port counter NAME in sysfs.
qpc_port() {
	cat /sys/class/infiniband/$1/ports/1/hw_counters/$2
}

# The port's statistic line has every sysfs value (rdma statistic show link).
qpc_rstat_matches() {
	local n v
	rdma statistic show link "$1/1" >/tmp/rstat 2>&1
	sed 's/^/    rstat| /' /tmp/rstat
	for n in rx_write_requests rx_read_requests rx_atomic_requests out_of_buffer; do
		v=$(qpc_port "$1" $n)
		grep -Eq " $n $v( |\$)" /tmp/rstat || { echo "    missing: $n $v"; return 1; }
	done
}

qp_counters_suite() {
	local d=mlx5_0 l=mlx5_0/1 fn=mlx5_ib_rs.rdma.0 s0 c w0 r0 out r n q
	load_ours $QPC_SIM
	s0=$(qpc_sets $fn)
	echo "    Q counter sets at load: $s0"
	t_check "$fn: one Q counter set at load (the port's, mlx5_ib_alloc_counters())" test "$s0" = 1
	out=$(rdma statistic qp mode link $l 2>&1)
	echo "    $out"
	t_check "$l: qp mode is 'qp auto off' after load" sh -c "echo '$out' | grep -q 'qp auto off'"

	# Auto mode by type.
	t_check "$l: qp set auto type on" rdma statistic qp set link $l auto type on
	out=$(rdma statistic qp mode link $l 2>&1)
	echo "    $out"
	t_check "$l: qp mode shows auto type on" sh -c "echo '$out' | grep -q 'qp auto type on'"
	w0=$(qpc_port $d rx_write_requests)
	r0=$(qpc_port $d rx_read_requests)
	if qpc_start $d; then
		qpc_show $l
		c=$(qpc_cntn $QPC_RESP)
		t_check "auto: the responder is bound to a counter" test -n "$c"
		t_check "auto: the requester (same type) is bound to the same counter" test "$(qpc_cntn $QPC_REQ)" = "$c"
		t_check "auto: counter $c lists both QPs" test "$(qpc_lqpns $c)" = "$QPC_REQ,$QPC_RESP"
		t_check "auto: counter $c's id is its Q counter set, a new one ($fn holds 2)" test "$(qpc_sets $fn)" = 2
		t_check "auto: counter $c reads 0 before traffic" test "$(qpc_val $c rx_write_requests)" = 0
		qpc_do w 5 && qpc_do r 3
		qpc_show $l
		t_check "auto: counter $c rx_write_requests is exactly 5" test "$(qpc_val $c rx_write_requests)" = 5
		t_check "auto: counter $c rx_read_requests is exactly 3" test "$(qpc_val $c rx_read_requests)" = 3
		t_check "auto: counter $c rx_atomic_requests is 0" test "$(qpc_val $c rx_atomic_requests)" = 0
		t_check "auto: sysfs port rx_write_requests moved by exactly 5" test $(($(qpc_port $d rx_write_requests) - w0)) = 5
		t_check "auto: sysfs port rx_read_requests moved by exactly 3" test $(($(qpc_port $d rx_read_requests) - r0)) = 3
		t_check "auto: rdma statistic show link $l has the sysfs values" qpc_rstat_matches $d
		out=$(qpc_try rdma statistic qp set link $l auto off)
		echo "    auto off with a counter: $out"
		t_check "auto off while a counter exists: 0 (mode manual, rdma_counter_set_auto_mode())" test "$(echo "$out" | cut -d' ' -f2)" = 0
		out=$(qpc_try rdma statistic qp set link $l auto type on)
		echo "    auto on with a counter: $out"
		t_check "auto on while a counter exists: EBUSY (__counter_set_mode())" sh -c "echo '$out' | grep -q 'Device or resource busy'"
		t_check "counter_traffic ends cleanly" qpc_stop
	else
		t_fail "counter_traffic on $d started"
	fi
	qpc_show $l
	t_check "auto: the counter went with its QPs (qp show empty)" test ! -s /tmp/qs
	t_check "auto: $fn is back to one Q counter set" test "$(qpc_sets $fn)" = 1
	t_check "auto: the port keeps the released counter's 5 writes (history)" test $(($(qpc_port $d rx_write_requests) - w0)) = 5
	out=$(rdma statistic qp mode link $l 2>&1)
	echo "    $out"
	t_check "$l: qp mode is 'qp auto off' again (manual without counters is none)" sh -c "echo '$out' | grep -q 'qp auto off'"

	# Manual binding.
	w0=$(qpc_port $d rx_write_requests)
	r0=$(qpc_port $d rx_read_requests)
	if qpc_start $d; then
		qpc_show $l
		t_check "manual: no counter before a bind" test ! -s /tmp/qs
		t_check "manual: bind the responder to a new counter" rdma statistic qp bind link $l lqpn $QPC_RESP
		qpc_show $l
		c=$(qpc_cntn $QPC_RESP)
		t_check "manual: the responder has counter $c" test -n "$c"
		t_check "manual: a new Q counter set for it" test "$(qpc_sets $fn)" = 2
		t_check "manual: bind the requester to counter $c" rdma statistic qp bind link $l lqpn $QPC_REQ cntn $c
		qpc_show $l
		t_check "manual: counter $c lists both QPs" test "$(qpc_lqpns $c)" = "$QPC_REQ,$QPC_RESP"
		qpc_do w 4
		qpc_show $l
		t_check "manual: counter $c rx_write_requests is exactly 4" test "$(qpc_val $c rx_write_requests)" = 4
		for out in \
			"unknown LQPN:ENOENT:No such file or directory:bind link $l lqpn 999999" \
			"bound QP, new counter:ENOMEM:Cannot allocate memory:bind link $l lqpn $QPC_RESP" \
			"bound QP to its counter:EINVAL:Invalid argument:bind link $l lqpn $QPC_RESP cntn $c" \
			"unbind from another counter:EINVAL:Invalid argument:unbind link $l cntn $((c + 100)) lqpn $QPC_RESP" \
			"unbind an unknown LQPN:ENOENT:No such file or directory:unbind link $l cntn $c lqpn 999999"; do
			set -- $(echo "$out" | cut -d: -f4)
			r=$(qpc_try rdma statistic qp "$@")
			echo "    $(echo "$out" | cut -d: -f1): $r"
			t_check "manual: $(echo "$out" | cut -d: -f1) is $(echo "$out" | cut -d: -f2)" \
				sh -c "echo '$r' | grep -q '$(echo "$out" | cut -d: -f3)'"
		done
		out=$(qpc_try rdma statistic qp set link $l auto type on)
		echo "    auto on with a manual counter: $out"
		t_check "manual: auto mode while a counter exists is EBUSY" sh -c "echo '$out' | grep -q 'Device or resource busy'"
		t_check "manual: unbind the requester" rdma statistic qp unbind link $l cntn $c lqpn $QPC_REQ
		r=$(qpc_try rdma statistic qp bind link $l lqpn $QPC_REQ cntn $((c + 100)))
		echo "    unknown counter: $r"
		t_check "manual: bind to an unknown counter is ENOENT" sh -c "echo '$r' | grep -q 'No such file or directory'"
		qpc_do r 2
		qpc_show $l
		t_check "manual: counter $c lists the responder only" test "$(qpc_lqpns $c)" = "$QPC_RESP"
		t_check "manual: counter $c rx_read_requests is exactly 2" test "$(qpc_val $c rx_read_requests)" = 2
		t_check "manual: unbind the responder (the last QP)" rdma statistic qp unbind link $l cntn $c lqpn $QPC_RESP
		qpc_show $l
		t_check "manual: the counter is gone with its last QP" test ! -s /tmp/qs
		t_check "manual: $fn is back to one Q counter set" test "$(qpc_sets $fn)" = 1
		qpc_do w 1
		t_check "manual: the unbound responder counts in the port's set again: port writes +5 (4 bound, 1 after)" \
			test $(($(qpc_port $d rx_write_requests) - w0)) = 5
		t_check "manual: port reads +2" test $(($(qpc_port $d rx_read_requests) - r0)) = 2
		t_check "manual: rdma statistic show link $l has the sysfs values" qpc_rstat_matches $d
		# Destroyed while bound.
		t_check "destroy: bind the responder again" rdma statistic qp bind link $l lqpn $QPC_RESP
		t_check "destroy: a Q counter set for it" test "$(qpc_sets $fn)" = 2
		t_check "counter_traffic ends cleanly" qpc_stop
		qpc_show $l
		t_check "destroy: the counter went with its QP" test ! -s /tmp/qs
	else
		t_fail "counter_traffic on $d started"
	fi
	# The device's Q counter sets are limited (max_qp_cnt, 16 in the simulator): QPs bound to
	# new counters take them until ALLOC_Q_COUNTER fails (NO_RES_ERR), which upstream's
	# alloc_and_bind() answers ENOMEM.
	QPC_EXTRA=16
	if qpc_start $d; then
		QPC_EXTRA=
		n=0
		for q in $(grep '^X ' /tmp/qpc.out | cut -d' ' -f2-); do
			r=$(qpc_try rdma statistic qp bind link $l lqpn $q)
			case "$r" in "rc 0"*) n=$((n + 1)) ;; *) break ;; esac
		done
		echo "    bound to new counters: $n, then: $r"
		t_check "limit: 15 QPs bound to new counters (16 sets with the port's)" test $n = 15
		t_check "limit: the 16th new counter is ENOMEM (ALLOC_Q_COUNTER NO_RES_ERR)" sh -c "echo '$r' | grep -q 'Cannot allocate memory'"
		t_check "limit: $fn holds all 16 sets" test "$(qpc_sets $fn)" = 16
		qpc_show $l
		t_check "limit: rdma statistic qp show lists the 15 counters" test "$(grep -c cntn /tmp/qs)" = 15
		t_check "counter_traffic ends cleanly" qpc_stop
	else
		QPC_EXTRA=
		t_fail "counter_traffic -x 16 on $d started"
	fi
	t_check "$fn is back to its one Q counter set" test "$(qpc_sets $fn)" = 1
	t_check "mlx5_ib_rs.rdma.1 kept its one Q counter set" test "$(qpc_sets mlx5_ib_rs.rdma.1)" = 1
	breadth_baseline "the counter suite"
	unload_ours

	# Upstream rdma_rxe: port counters, no counter_bind_qp.
	peer_up
	l=rxe0/1
	out=$(rdma statistic qp mode link $l 2>&1)
	echo "    rxe: $out"
	t_check "rxe0: qp mode is 'qp auto off'" sh -c "echo '$out' | grep -q 'qp auto off'"
	t_check "rxe0: qp set auto type on is accepted (rxe has port hw_counters)" rdma statistic qp set link $l auto type on
	if qpc_start rxe0 0; then
		qpc_show $l
		t_check "rxe0: auto mode binds nothing (no counter_dealloc/alloc_stats: alloc_and_bind() NULL)" test ! -s /tmp/qs
		t_check "rxe0: auto off" rdma statistic qp set link $l auto off
		r=$(qpc_try rdma statistic qp bind link $l lqpn $QPC_RESP)
		echo "    rxe manual bind: $r"
		t_check "rxe0: a manual bind is ENOMEM (alloc_and_bind() NULL)" sh -c "echo '$r' | grep -q 'Cannot allocate memory'"
		r=$(qpc_try rdma statistic qp bind link $l lqpn 999999)
		echo "    rxe unknown LQPN: $r"
		t_check "rxe0: unknown LQPN is ENOENT, as ours" sh -c "echo '$r' | grep -q 'No such file or directory'"
		r=$(qpc_try rdma statistic qp unbind link $l cntn 5 lqpn $QPC_RESP)
		echo "    rxe unbind unbound: $r"
		t_check "rxe0: unbinding an unbound QP is EINVAL, as ours" sh -c "echo '$r' | grep -q 'Invalid argument'"
		t_check "rxe0: counter_traffic ends cleanly" qpc_stop
	else
		t_fail "counter_traffic on rxe0 started"
	fi
	peer_down
}
