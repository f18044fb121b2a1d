# SPDX-License-Identifier: GPL-2.0
# Connection management (issue 37). VM mode `cm` (tools/vm.sh cm KBUILD LOG); its suites also
# run in check.
#   vm_cm_ucma: /dev/infiniband/rdma_cm on two simulated RoCE functions (sim=eth,eth, their
#     interfaces 10.66.0.1/24 and 10.66.0.2/24): tests/userspace/ucma_test.c (the raw ABI's
#     errnos; bind, port allocation, reuseaddr, address and route resolution with librdmacm
#     44); with -r: the driver unloaded under a listening and a resolved id, each gets
#     DEVICE_REMOVAL. The functions have QP1 on the wire (mlx5_ib_rs mad_qps=1).
#   vm_cm_ucma_rxe: the same program on upstream rdma_ucm over rxe (veth pair 10.77.0.1/24,
#     10.77.0.2/24), its check lines compared with ours.
#   vm_cm_conn (mode cm only, minutes under TCG): connections between the two functions with
#     librdmacm's programs (rping, ucmatose, udaddy, rdma_server/rdma_client) and perftest -R,
#     the errors a user sees, a client killed mid-connection.
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"

CM_SRC=10.66.0.1
CM_DST=10.66.0.2

# cm_netdevs: the two functions' interfaces up with their addresses; "A B" on stdout.
cm_netdevs() {
	local a b
	a=$(ls /sys/class/infiniband/mlx5_0/device/net/ 2>/dev/null)
	b=$(ls /sys/class/infiniband/mlx5_1/device/net/ 2>/dev/null)
	[ -n "$a" ] && [ -n "$b" ] || return 1
	ip link set "$a" up && ip link set "$b" up &&
		ip addr add $CM_SRC/24 dev "$a" && ip addr add $CM_DST/24 dev "$b" || return 1
	# Each address is two GIDs, RoCE v1's and (after it) v2's.
	cm_wait_gids mlx5_0 0000:0000:0000:0000:0000:ffff:0a42:0001 &&
		cm_wait_gids mlx5_1 0000:0000:0000:0000:0000:ffff:0a42:0002 || return 1
	echo "$a $b"
}

# cm_wait_gids DEV GID: waits (at most ~10 s) until two entries of DEV port 1 hold GID.
cm_wait_gids() {
	local i=0
	while [ $i -lt 100 ]; do
		[ "$(grep -lx "$2" /sys/class/infiniband/$1/ports/1/gids/* 2>/dev/null | wc -l)" -ge 2 ] &&
			return 0
		nap
		i=$((i + 1))
	done
	return 1
}

cm_ucma_suite() {
	local nd
	ip link set lo up
	# mlx5_ib_rs's KUnit suites count the driver's resources without mad_qps=1.
	touch /tmp/kunit-ran.mlx5_ib_rs
	load_ours sim=eth,eth mad_qps=1
	t_check "rdma_cm is a misc device at /dev/infiniband/rdma_cm" test -c /dev/infiniband/rdma_cm
	t_check "/dev/infiniband/rdma_cm is 0666" sh -c \
		'[ "$(stat -c %a /dev/infiniband/rdma_cm)" = 666 ]'
	# Both interfaces share this namespace and subnet: ARP from one to the other carries a
	# local source address, which IPv4 answers only with accept_local.
	sysctl -qw net.ipv4.conf.all.accept_local=1
	nd=$(cm_netdevs)
	t_check "the functions' interfaces have $CM_SRC and $CM_DST ($nd)" test -n "$nd"
	if [ -n "$nd" ]; then
		t_import "ucma" /rdma-rs/ucma_test $CM_SRC $CM_DST 10.66.0.77 10.99.0.1
		cp /tmp/import.out /tmp/cm-ours.out
		t_check "ucma: SRC binds to mlx5_0" grep -q "^I bound to device mlx5_0 port 1" /tmp/cm-ours.out
		t_check "ucma: SRC -> DST resolves on mlx5_0" \
			grep -q "^I resolved on device mlx5_0 port 1" /tmp/cm-ours.out
		t_check "ucma: any -> DST resolves on DST's mlx5_1 from DST" \
			grep -q "^I from any: device mlx5_1, source $CM_DST" /tmp/cm-ours.out
		# An id left open at rmmod: the file pins the module; closed, everything goes.
		sleep 30 </dev/infiniband/rdma_cm &
		local p=$!
		nap 0.2
		t_check "rmmod ib_core_rs with rdma_cm open: EBUSY" sh -c '! rmmod ib_core_rs 2>/dev/null'
		kill $p
		wait $p 2>/dev/null
		# The device goes under a listening and a resolved id: each gets DEVICE_REMOVAL.
		/rdma-rs/ucma_test -r $CM_SRC >/tmp/cm-rm.out 2>&1 &
		p=$!
		local i=0 rc=0
		while [ $i -lt 100 ] && ! grep -q "^I waiting" /tmp/cm-rm.out; do
			nap 0.1
			i=$((i + 1))
		done
		t_check "rmmod mlx5_ib_rs under bound, listening and resolved ids" rmmod mlx5_ib_rs
		wait $p || rc=$?
		t_import_file "ucma removal" /tmp/cm-rm.out $rc
		t_check "rmmod ib_core_rs" rmmod ib_core_rs
		t_check "modprobe -r mlx5_core" modprobe -r mlx5_core
		sysctl -qw net.ipv4.conf.all.accept_local=0
		return
	fi
	sysctl -qw net.ipv4.conf.all.accept_local=0
	unload_ours
}

# vm_cm_kernel: the kernel rdma_cm consumer (mlx5/ib/cma_tests.rs) between the two functions,
# started by writing "SRC DST PORT" to /sys/kernel/debug/mlx5_fwsim/kcm: listen, resolve,
# rdma_create_qp() on each id, connect/accept with private data, a SEND and an RDMA WRITE
# checked, disconnect, each side's events; twice (the port and every object are released),
# then the functions hold what they held before and the modules unload.
cm_kernel_suite() {
	local nd f=/sys/kernel/debug/mlx5_fwsim/kcm r0 r1 n
	ip link set lo up
	touch /tmp/kunit-ran.mlx5_ib_rs
	load_ours sim=eth,eth mad_qps=1
	sysctl -qw net.ipv4.conf.all.accept_local=1
	nd=$(cm_netdevs)
	t_check "the functions' interfaces have $CM_SRC and $CM_DST ($nd)" test -n "$nd"
	t_check "kcm: a malformed request is EINVAL" sh -c "! echo '10.66.0 $CM_DST 1' 2>/dev/null >$f"
	r0=$(cat /sys/kernel/debug/mlx5_fwsim/*/resources | tr '\n' ' ')
	n=$(dmesg | grep -c 'kcm: kernel rdma_cm consumer passed')
	for i in 1 2; do
		t_check "kcm: run $i: $CM_SRC -> $CM_DST:7471 connects, moves data, disconnects" \
			sh -c "echo '$CM_SRC $CM_DST 7471' >$f"
	done
	dmesg | grep 'kcm: ' | sed 's/^/    dmesg| /'
	t_check "kcm: both runs report passing" \
		test "$(dmesg | grep -c 'kcm: kernel rdma_cm consumer passed')" = $((n + 2))
	t_check "kcm: active side: ADDR_RESOLVED ROUTE_RESOLVED ESTABLISHED DISCONNECTED" sh -c \
		"dmesg | grep -q 'kcm: active side: \[AddrResolved, RouteResolved, Established, Disconnected\]'"
	t_check "kcm: passive side: CONNECT_REQUEST ESTABLISHED DISCONNECTED" sh -c \
		"dmesg | grep -q 'kcm: passive side: \[ConnectRequest, Established, Disconnected\]'"
	r1=$(cat /sys/kernel/debug/mlx5_fwsim/*/resources | tr '\n' ' ')
	t_check "kcm: the functions hold what they held before" test "$r0" = "$r1"
	sysctl -qw net.ipv4.conf.all.accept_local=0
	unload_ours
}

# cm_rxe_pair_up: upstream's rdma_ucm over two rxe devices on a veth pair, rxe0 on veth0
# (10.77.0.1/24) and rxe1 on veth1 (10.77.0.2/24), accept_local on (the two ends are addresses
# of this host); cm_rxe_pair_down undoes it and unloads upstream's modules.
cm_rxe_pair_up() {
	t_check "modprobe rdma_ucm rdma_rxe veth" modprobe -a rdma_ucm ib_uverbs rdma_rxe veth
	t_check "veth0/veth1 with 10.77.0.1/24, 10.77.0.2/24" sh -c \
		'/usr/sbin/ip link add veth0 type veth peer name veth1 &&
		 /usr/sbin/ip link set veth0 up && /usr/sbin/ip link set veth1 up &&
		 /usr/sbin/ip addr add 10.77.0.1/24 dev veth0 && /usr/sbin/ip addr add 10.77.0.2/24 dev veth1'
	t_check "rdma link add rxe0 (veth0), rxe1 (veth1)" sh -c \
		'rdma link add rxe0 type rxe netdev veth0 && rdma link add rxe1 type rxe netdev veth1'
	sleep 1
	sysctl -qw net.ipv4.conf.all.accept_local=1
}

cm_rxe_pair_down() {
	sysctl -qw net.ipv4.conf.all.accept_local=0
	rdma link delete rxe1
	rdma link delete rxe0
	ip link del veth0
	cm_unload_upstream
}

cm_ucma_rxe_suite() {
	cm_rxe_pair_up
	t_import "ucma on rxe" /rdma-rs/ucma_test 10.77.0.1 10.77.0.2 10.77.0.77 10.99.0.1
	# The same checks pass on both (ours with -c has one more: connect's EOPNOTSUPP).
	grep '^R ' /tmp/cm-ours.out | grep -v 'without the IB CM' | sed 's/ (.*)$//' >/tmp/cm-a
	grep '^R ' /tmp/import.out | sed 's/ (.*)$//' >/tmp/cm-b
	if [ -s /tmp/cm-a ] && diff /tmp/cm-a /tmp/cm-b >/tmp/cm-diff; then
		t_ok "ucma: ours and upstream rdma_ucm pass the same checks"
	else
		sed 's/^/    diff| /' /tmp/cm-diff
		t_fail "ucma: ours and upstream rdma_ucm pass the same checks"
	fi
	cm_rxe_pair_down
}

# cm_unload_upstream: unloads upstream's RDMA modules and veth. ib_uverbs_support holds ib_core
# after ib_uverbs goes: retry for up to 60 s, then show what is left.
cm_unload_upstream() {
	local i=0
	until modprobe -r -a rdma_ucm rdma_rxe ib_uverbs ib_uverbs_support rdma_cm iw_cm ib_cm ib_core \
		veth 2>/dev/null ||
		! grep -q "^ib_core " /proc/modules || [ $i -ge 120 ]; do
		nap 0.5
		i=$((i + 1))
	done
	echo "upstream modules unloaded after $i retries"
	grep -E "^(ib_|rdma_|iw_)" /proc/modules | sed 's/^/    left| /'
}

# cm_listening PROG PID: waits (5 s at most, while PID runs) until a cm_id of PROG listens
# (`rdma res show cm_id`: "state LISTEN ... comm PROG"). iproute2 6.1 prints no line for an
# AF_IB id (its ss_ntop() knows AF_INET and AF_INET6 only).
cm_listening() {
	local t0
	now_cs
	t0=$_now_cs
	while kill -0 $2 2>/dev/null &&
		! rdma res show cm_id 2>/dev/null | grep -q "state LISTEN .*comm $1 "; do
		now_cs
		[ $((_now_cs - t0)) -ge 500 ] && break
		nap 0.1
	done
}

# cm_pair NAME SECS "SERVER CMD" "CLIENT CMD": the server in the background, the client once
# the server listens (an AF_IB server: after a second); both must exit 0 within SECS. Their outputs are in /tmp/cm-s and
# /tmp/cm-c.
cm_pair() {
	local s rc=0 rs=0 t0
	echo "+ $3 & $4"
	now_cs
	t0=$_now_cs
	timeout $2 $3 >/tmp/cm-s 2>&1 &
	s=$!
	case "$3" in
	*"-f gid"*) sleep 1 ;; # AF_IB: not in rdma res (cm_listening)
	*) cm_listening "${3%% *}" $s ;;
	esac
	timeout $2 $4 >/tmp/cm-c 2>&1 || rc=$?
	wait $s || rs=$?
	took $t0
	show_tail '    client| ' 20 /tmp/cm-c
	show_tail '    server| ' 20 /tmp/cm-s
	t_check "$1: client exit 0 ($rc), server exit 0 ($rs)" test $rc = 0 -a $rs = 0
}

# cm_conn_load: the functions with QP1 on the wire (mad_qps=1), rdma_cm's CM response timeout
# 19 (2 s a try) and 3 retries, so that an unanswered REQ ends in seconds. mlx5_ib_rs's KUnit
# suites count the driver's resources without mad_qps=1: they run in the modes that load it
# without.
cm_conn_load() {
	touch /tmp/kunit-ran.mlx5_ib_rs
	load_mlx5_core
	kunit_insmod "insmod ib_core_rs cma_cm_response_timeout=19 cma_max_cm_retries=3" \
		$RDMARS_MODS/ib_core_rs.ko cma_cm_response_timeout=19 cma_max_cm_retries=3
	kunit_insmod "insmod mlx5_ib_rs sim=eth,eth mad_qps=1" $RDMARS_MODS/mlx5_ib_rs.ko \
		sim=eth,eth mad_qps=1
	eth_settle
}

# cm_fails NAME SECS CMD EXPECT: CMD fails (not by the timeout of SECS) and prints EXPECT.
cm_fails() {
	local rc=0
	timeout $2 $3 >/tmp/cm-c 2>&1 || rc=$?
	sed 's/^/    client| /' /tmp/cm-c | tail -6
	t_check "$1: exits non-zero before ${2}s ($rc)" test $rc != 0 -a $rc != 124
	if grep -q "$4" /tmp/cm-c; then t_ok "$1: '$4'"; else t_fail "$1: '$4'"; fi
}

# vm_cm_conn: rdma_cm connections between the two RoCE functions over the IB CM on QP1
# (mlx5_ib_rs mad_qps=1) with librdmacm's own programs and perftest, unmodified; the errors a
# user sees (no listener, no neighbour, no answer); a client killed mid-connection.
cm_conn_suite() {
	local nd a b s c rs i
	ip link set lo up
	cm_conn_load
	sysctl -qw net.ipv4.conf.all.accept_local=1
	nd=$(cm_netdevs)
	t_check "the functions' interfaces have $CM_SRC and $CM_DST ($nd)" test -n "$nd"
	if [ -n "$nd" ]; then
		a=${nd% *}
		b=${nd#* }
		cm_pair "rping" 40 "rping -s -a $CM_DST -p 7174 -C 10 -v" \
			"rping -c -a $CM_DST -I $CM_SRC -p 7174 -C 10 -v"
		t_check "rping: 10 pings of verified data" \
			sh -c '[ "$(grep -c "ping data: rdma-ping-" /tmp/cm-c)" = 10 ]'
		t_check "rping: the client's disconnect is the server's DISCONNECTED" \
			grep -q "server DISCONNECT EVENT" /tmp/cm-s
		cm_pair "ucmatose -c 4" 40 "ucmatose -b $CM_DST -c 4 -C 10" \
			"ucmatose -s $CM_DST -b $CM_SRC -c 4 -C 10"
		t_check "ucmatose: 4 connections, data transfers complete" \
			grep -q "^data transfers complete" /tmp/cm-c
		cm_pair "udaddy -c 2 (SIDR)" 40 "udaddy -b $CM_DST -c 2 -C 10" \
			"udaddy -s $CM_DST -b $CM_SRC -c 2 -C 10"
		t_check "udaddy: data transfers complete" grep -q "^data transfers complete" /tmp/cm-c
		cm_pair "rdma_server/rdma_client" 40 "rdma_server -s $CM_DST" "rdma_client -s $CM_DST"
		cm_pair "ib_send_bw -R" 40 "ib_send_bw -R -n 100" "ib_send_bw -R -n 100 $CM_DST"
		cm_pair "ib_write_lat -R" 40 "ib_write_lat -R -n 100" "ib_write_lat -R -n 100 $CM_DST"
		# upstream cm_req_handler(): no listener for the service id answers a REJ with
		# IB_CM_REJ_INVALID_SERVICE_ID (8), which rdma_cm reports as REJECTED with it.
		cm_fails "no listener" 20 "rping -c -a $CM_DST -I $CM_SRC -p 7999 -C 1" \
			"RDMA_CM_EVENT_REJECTED, error 8"
		cm_fails "a silent neighbour" 20 "rping -c -a 10.66.0.77 -I $CM_SRC -p 7174 -C 1" \
			"RDMA_CM_EVENT_ADDR_ERROR, error -110"
		# A neighbour whose MAC no function has: the REQ and its 3 retries go unanswered.
		ip neigh replace 10.66.0.99 lladdr 02:00:00:00:00:99 dev "$a" nud permanent
		cm_fails "an unanswered REQ" 30 "rping -c -a 10.66.0.99 -I $CM_SRC -p 7174 -C 1" \
			"RDMA_CM_EVENT_UNREACHABLE, error -110"
		cm_fails "an unanswered SIDR REQ" 30 "udaddy -s 10.66.0.99 -b $CM_SRC -c 1 -C 1" \
			"RDMA_CM_EVENT_UNREACHABLE, error: -110"
		ip neigh del 10.66.0.99 dev "$a"
		# The client killed mid-connection: its ids go with its file, the DREQ tells the
		# server (DISCONNECTED), which ends.
		timeout 60 rping -s -a $CM_DST -p 7175 -C 100000 >/tmp/cm-s 2>&1 &
		s=$!
		sleep 1
		timeout 60 rping -c -a $CM_DST -I $CM_SRC -p 7175 -C 100000 -v >/tmp/cm-c 2>&1 &
		c=$!
		i=0
		while [ $i -lt 200 ] && ! grep -q "ping data" /tmp/cm-c; do
			nap 0.1
			i=$((i + 1))
		done
		kill -9 $c
		rs=0
		wait $s || rs=$?
		wait $c 2>/dev/null
		sed 's/^/    server| /' /tmp/cm-s | tail -4
		t_check "killed client: it had pinged" grep -q "ping data" /tmp/cm-c
		t_check "killed client: the server ends before its timeout ($rs)" test $rs != 124
		t_check "killed client: the server saw DISCONNECTED" grep -q "DISCONNECT EVENT" /tmp/cm-s
	fi
	sysctl -qw net.ipv4.conf.all.accept_local=0
	unload_ours
}

# rping_verify FILE N: FILE (rping -v's output) has N lines "ping data: rdma-ping-K: ...", K from
# 0, each with rping's pattern (rping.c: after the "rdma-ping-K: " prefix, the characters from
# 'A' + K % 58 on, wrapping after 'z' to 'A', up to the 64-byte buffer's last byte).
rping_verify() {
	awk -v n="$2" '
	BEGIN { k = 0 }
	/^ping data: / {
		want = "rdma-ping-" k ": "
		c = 65 + k % 58
		while (length(want) < 63) {
			want = want sprintf("%c", c)
			c++
			if (c > 122) c = 65
		}
		if (substr($0, 12) != want) {
			print "ping " k ": \"" substr($0, 12) "\", not \"" want "\""
			bad = 1
			exit 1
		}
		k++
	}
	END {
		if (bad) exit 1
		if (k != n) { print k " pings, not " n; exit 1 }
	}' "$1"
}

# cm_mode: the VM's mode (rdmars.mode=).
cm_mode() {
	sed -n 's/.*rdmars\.mode=\([^ ]*\).*/\1/p' /proc/cmdline
}

# cm_rping_count TAG: the pings of cm_verify_run: 1000 on ours; on rxe (TAG rxe, the reference
# whose event sequences ours is compared with) 1000 in modes cm and cmib, 100 elsewhere (make
# check's budget: under TCG 1000 pings take about 30 s).
cm_rping_count() {
	case "$1:$(cm_mode)" in rxe:cm | rxe:cmib | ours:*) echo 1000 ;; *) echo 100 ;; esac
}

# cm_events FILE: the rdma_cm events of rping -d's output (FILE), the ids' addresses left out.
cm_events() {
	grep -o "RDMA_CM_EVENT_[A-Z_]*.*" "$1" | sed 's/ cma_id 0x[0-9a-f]*//; s/ cma_id (nil)//'
}

# cm_mckey_stats WHEN: the simulated functions' multicast attachments and segment counters.
cm_mckey_stats() {
	local f
	for f in $FWSIM_DBG/mlx5_ib_rs.rdma.*/stats; do
		[ -r "$f" ] && echo "    $1: ${f%/stats}: $(grep -E '^(mcg_attached|ether_|wire_overflow)' "$f" | tr '\n' ' ')"
	done
}

# cm_mckey TAG SRC DST: mckey's receiver on DST's interface, joined to 239.1.2.3 (the
# interface's IGMP membership checked meanwhile: the group's MAC 01:00:5e:01:02:03 in
# /proc/net/dev_mcast, which ip_mc_inc_group() adds; the test kernel has no /proc/net/igmp),
# its sender on SRC's; both print to /tmp/cmv-TAG.mckey-*.
cm_mckey() {
	local t=$1 r rr=0 rs=0 i=0 w
	timeout 60 mckey -m 239.1.2.3 -b "$3" -C 10 >/tmp/cm-s 2>&1 &
	r=$!
	while [ $i -lt 100 ] && ! grep -q 01005e010203 /proc/net/dev_mcast; do
		nap 0.1
		i=$((i + 1))
	done
	t_check "$t: mckey: the receiver's join is an IGMP membership (/proc/net/dev_mcast)" \
		grep -q 01005e010203 /proc/net/dev_mcast
	sleep 1
	cm_mckey_stats "before the sender"
	# mckey's sender posts its sends unsignaled, then leaves the group and destroys its QP at
	# once: under TCG neither the model nor rxe may have sent all of them by then. It sends 40
	# for the receiver's 10, and runs again (at most 5 times) until the receiver has them.
	i=0
	while [ $i -lt 5 ] && kill -0 $r 2>/dev/null; do
		rs=0
		timeout 40 mckey -m 239.1.2.3 -b "$2" -s -C 40 >/tmp/cm-c 2>&1 || rs=$?
		i=$((i + 1))
		# The receiver ends once it has its 10 (at most 2 s after the sender).
		w=0
		while [ $w -lt 20 ] && kill -0 $r 2>/dev/null; do
			nap 0.1
			w=$((w + 1))
		done
	done
	echo "    mckey: the sender ran $i times"
	wait $r || rr=$?
	cm_mckey_stats "after the sender"
	sed 's/^/    sender| /' /tmp/cm-c | tail -12
	sed 's/^/    receiver| /' /tmp/cm-s | tail -12
	t_check "$t: mckey -C 40 to a receiver of 10: sender exit 0 ($rs), receiver exit 0 ($rr)" \
		test $rs = 0 -a $rr = 0
	t_check "$t: mckey: the receiver got its 10 messages" grep -q "^data transfers complete" /tmp/cm-s
	t_check "$t: mckey: the groups are left (no IGMP membership)" \
		sh -c '! grep -q 01005e010203 /proc/net/dev_mcast'
	cp /tmp/cm-s /tmp/cmv-$t.mckey-receiver
	cp /tmp/cm-c /tmp/cmv-$t.mckey-sender
}

# cm_res_cm_id TAG SRC DST PORT: while rping's client on SRC talks to its server on DST:PORT,
# `rdma res show cm_id` (nldev RES_CM_ID_GET) shows the listener and both ends of the
# connection with their QP, state, port space, owner and addresses, and `rdma res` counts the
# three; once rping ended, none is left. The rxe run (upstream's rdma_cm) must print the same.
# The server's id has its QP number from rping's accept, which may come after the id is in
# CONNECT: the sampling waits for both ends' QP numbers.
cm_res_cm_id() {
	local t=$1 src=$2 dst=$3 port=$4 i=0 out sum n=0
	while [ $i -lt 150 ] && kill -0 $c 2>/dev/null; do
		out=$(rdma res show cm_id 2>&1)
		sum=$(rdma res 2>&1)
		n=$(echo "$sum" | awk '{for (i = 1; i < NF; i++) if ($i == "cm_id") n += $(i + 1)} END {print n + 0}')
		# Both ends' QP numbers: the server's id has its own once rping accepted (upstream
		# cma_accept_ib() sets a user id's qp_num), after its CONNECT_REQUEST.
		[ "$(echo "$out" | grep -cE 'lqpn [0-9]+ qp-type RC state CONNECT')" -ge 2 ] && [ "$n" = 3 ] && break
		nap 0.1
		i=$((i + 1))
	done
	echo "$out" | sed 's/^/    cm_id| /'
	echo "$sum" | sed 's/^/    res| /'
	t_check "$t: rdma res show cm_id: the listener on $dst:$port" sh -c "echo '$out' | grep -qE \
		'cm-idn [0-9]+ state LISTEN ps TCP pid [0-9]+ comm rping src-addr $dst:$port dst-addr 0.0.0.0:0'"
	t_check "$t: rdma res show cm_id: the server's connected id" sh -c "echo '$out' | grep -qE \
		'cm-idn [0-9]+ lqpn [0-9]+ qp-type RC state CONNECT ps TCP pid [0-9]+ comm rping src-addr $dst:$port dst-addr $src:[0-9]+'"
	t_check "$t: rdma res show cm_id: the client's connected id" sh -c "echo '$out' | grep -qE \
		'cm-idn [0-9]+ lqpn [0-9]+ qp-type RC state CONNECT ps TCP pid [0-9]+ comm rping src-addr $src:[0-9]+ dst-addr $dst:$port'"
	t_check "$t: rdma res counts the three (cm_id $n)" test "$n" = 3
}

# cm_res_wildcard TAG: an rping server listening on 0.0.0.0 (bound to no device: upstream's
# cma_listen_on_all() listens on each device through an internal id with the listener's
# owner) shows in `rdma res show cm_id` once under every RDMA device, without port or
# destination; `rdma res show cm_id link DEV/1` (iproute2 sends PORT_INDEX, upstream
# fill_res_cm_id_entry() leaves out the ids of other ports) shows it nowhere. Its line, device
# and numbers made generic, and the counts to /tmp/cmv-TAG.res-wildcard (vm_cm_verify_rxe
# compares them with upstream's).
cm_res_wildcard() {
	local t=$1 s i=0 out devs d nd=0 each=0 np=0
	timeout 60 rping -s -a 0.0.0.0 -p 7185 >/tmp/cm-w 2>&1 &
	s=$!
	devs=$(rdma dev | sed -n 's/^[0-9]*: \([^:]*\):.*/\1/p')
	for d in $devs; do nd=$((nd + 1)); done
	while [ $i -lt 100 ]; do
		out=$(rdma res show cm_id 2>&1 | grep 'src-addr 0.0.0.0:7185')
		[ "$(echo "$out" | grep -c .)" -ge $nd ] && break
		nap 0.1
		i=$((i + 1))
	done
	echo "$out" | sed 's/^/    cm_id| /'
	for d in $devs; do
		[ "$(echo "$out" | grep -c "^link $d/- ")" = 1 ] && each=$((each + 1))
		np=$((np + $(rdma res show cm_id link $d/1 2>&1 | grep -c 'src-addr 0.0.0.0:7185')))
	done
	kill $s 2>/dev/null
	wait $s 2>/dev/null
	t_check "$t: rdma res show cm_id: the 0.0.0.0 listener once under each of the $nd devices ($each)" \
		test $nd -gt 0 -a "$each" = $nd -a "$(echo "$out" | grep -c .)" = $nd
	t_check "$t: rdma res show cm_id link DEV/1: not the 0.0.0.0 listener (port 0) ($np)" test $np = 0
	{
		echo "$out" | sed -E 's/^link [^ ]+\/- /link DEV\/- /; s/cm-idn [0-9]+/cm-idn N/; s/pid [0-9]+/pid P/' |
			sort -u
		echo "once under each device: $([ "$each" = $nd ] && echo yes || echo no), on port 1: $np"
	} >/tmp/cmv-$t.res-wildcard
}

# cm_counters: the IB CM's message counters of every port (upstream cm_counter_groups:
# /sys/class/infiniband/DEV/ports/N/cm_{tx,rx}_msgs/MSG), summed: "tx_req N rx_req N ...".
cm_counters() {
	local m g
	for m in req rep rtu dreq drep; do
		for g in tx rx; do
			printf '%s_%s %s ' $g $m "$(cat /sys/class/infiniband/*/ports/*/cm_${g}_msgs/$m 2>/dev/null |
				awk '{n += $1} END {print n + 0}')"
		done
	done
}

# cm_counters_check TAG BEFORE: since cm_counters printed BEFORE, the connection's messages
# were counted: each one sent was received (no loss between two ports of one VM), at least one
# REQ. The last DREP may still be on its way (the client does not wait for it; upstream counts
# a send at its completion): up to 3 s for the counts to meet.
cm_counters_check() {
	local d i=0
	while :; do
		d=$(echo "$2 $(cm_counters)" |
			awk '{for (i = 1; i <= NF / 2; i += 2) printf "%s %d ", $i, $(i + NF / 2 + 1) - $(i + 1)}')
		echo "$d" | awk '{for (i = 1; i < NF; i += 4) if ($(i + 1) != $(i + 3)) exit 1; exit $2 < 1}' &&
			break
		[ $i -ge 30 ] && break
		nap 0.1
		i=$((i + 1))
	done
	echo "    $1: CM counters moved by: $d"
	t_check "$1: cm_tx_msgs and cm_rx_msgs count each REQ, REP, RTU, DREQ and DREP once a side" sh -c \
		"echo '$d' | awk '{for (i = 1; i < NF; i += 4) if (\$(i + 1) != \$(i + 3)) exit 1; exit \$2 < 1}'"
}

# cm_verify_run TAG SRC DST SILENT: librdmacm's programs between SRC and DST: rping -v -d
# (cm_rping_count pings, each one's data checked; the rdma_cm events of both ends), mckey,
# ucmatose, udaddy, the errors of no listener and of a SILENT neighbour. What the two
# implementations must both print goes to /tmp/cmv-TAG.*.
cm_verify_run() {
	local t=$1 src=$2 dst=$3 silent=$4 n s c rc rs t0 c0
	n=$(cm_rping_count $t)
	c0=$(cm_counters)
	t0=$(cut -d. -f1 /proc/uptime)
	# The client's stdout alone: rping's errors go to stderr, which would land inside a
	# line of the buffered stdout (-d's events go to stdout, whole lines).
	timeout $((n / 4 + 30)) rping -s -a $dst -p 7180 -C $n -v -d >/tmp/cm-s 2>&1 &
	s=$!
	cm_listening rping $s
	rc=0
	rs=0
	timeout $((n / 4 + 30)) rping -c -a $dst -I $src -p 7180 -C $n -v -d >/tmp/cm-c \
		2>/tmp/cm-c.err &
	c=$!
	cm_res_cm_id "$t" "$src" "$dst" 7180
	cm_res_wildcard "$t"
	wait $c || rc=$?
	wait $s || rs=$?
	t_check "$t: rdma res: no cm_id left once rping ended" \
		sh -c '[ -z "$(rdma res show cm_id)" ] && ! rdma res | grep -q "cm_id [1-9]"'
	echo "    $t: rping -C $n -v -d took $(($(cut -d. -f1 /proc/uptime) - t0)) s"
	cm_counters_check "$t" "$c0"
	tail -3 /tmp/cm-c /tmp/cm-c.err /tmp/cm-s | sed 's/^/    rping| /'
	t_check "$t: rping -C $n -v -d: client exit 0 ($rc), server exit 0 ($rs)" test $rc = 0 -a $rs = 0
	if rping_verify /tmp/cm-c $n >/tmp/cmv-why; then
		t_ok "$t: rping: $n pings, each with rping's data"
	else
		t_fail "$t: rping: $n pings, each with rping's data" "$(cat /tmp/cmv-why)"
	fi
	cm_events /tmp/cm-s >/tmp/cmv-$t.rping-server
	cm_events /tmp/cm-c >/tmp/cmv-$t.rping-client
	sed 's/^/    events| /' /tmp/cmv-$t.rping-server /tmp/cmv-$t.rping-client
	cm_mckey "$t" "$src" "$dst"
	cm_pair "$t: ucmatose -c 2" 40 "ucmatose -b $dst -c 2 -C 10" \
		"ucmatose -s $dst -b $src -c 2 -C 10"
	cp /tmp/cm-s /tmp/cmv-$t.ucmatose-server
	cp /tmp/cm-c /tmp/cmv-$t.ucmatose-client
	cm_pair "$t: udaddy -c 2" 40 "udaddy -b $dst -c 2 -C 10" "udaddy -s $dst -b $src -c 2 -C 10"
	cp /tmp/cm-s /tmp/cmv-$t.udaddy-server
	cp /tmp/cm-c /tmp/cmv-$t.udaddy-client
	cm_fails "$t: no listener" 20 "rping -c -a $dst -I $src -p 7999 -C 1" \
		"RDMA_CM_EVENT_REJECTED, error 8"
	grep "cma event" /tmp/cm-c >/tmp/cmv-$t.no-listener
	cm_fails "$t: a silent neighbour" 20 "rping -c -a $silent -I $src -p 7180 -C 1" \
		"RDMA_CM_EVENT_ADDR_ERROR, error -110"
	grep "cma event" /tmp/cm-c >/tmp/cmv-$t.silent
}

# cm_conn_up: cm_conn_load's functions with their interfaces up and addressed (cm_netdevs;
# "A B" in /tmp/cm-nd, empty if that failed); cm_conn_down undoes it. The fabric (lib.sh's
# fabric_take) `cmconn` that vm_cm_verify leaves to vm_cm_removal.
cm_conn_up() {
	ip link set lo up
	cm_conn_load
	sysctl -qw net.ipv4.conf.all.accept_local=1
	cm_netdevs >/tmp/cm-nd || : >/tmp/cm-nd
}

cm_conn_down() {
	sysctl -qw net.ipv4.conf.all.accept_local=0
	unload_ours
}

# vm_cm_verify: librdmacm's programs between the two RoCE functions (cm_verify_run), what
# they print kept for vm_cm_verify_rxe.
cm_verify_suite() {
	local nd
	fabric_take cmconn cm_conn_up
	nd=$(cat /tmp/cm-nd)
	t_check "the functions' interfaces have $CM_SRC and $CM_DST ($nd)" test -n "$nd"
	[ -n "$nd" ] && cm_verify_run ours $CM_SRC $CM_DST 10.66.0.77
	fabric_give cmconn cm_conn_down
}

# vm_cm_verify_rxe: the same programs on upstream's rdma_cm over rxe (one device on veth0,
# 10.77.0.1/24; its peer veth1 answers no ARP for 10.77.0.77), and what both print compared:
# rping's event sequences, ucmatose's and udaddy's outputs, the errors' events and statuses.
cm_verify_rxe_suite() {
	local f
	t_check "modprobe rdma_ucm rdma_rxe veth" modprobe -a rdma_ucm ib_uverbs rdma_rxe veth
	t_check "veth0 with 10.77.0.1/24, rxe0 on it" sh -c \
		'/usr/sbin/ip link add veth0 type veth peer name veth1 &&
		 /usr/sbin/ip link set veth0 up && /usr/sbin/ip link set veth1 up &&
		 /usr/sbin/ip addr add 10.77.0.1/24 dev veth0 &&
		 rdma link add rxe0 type rxe netdev veth0'
	t_check "rxe0 has the RoCE v2 GID of 10.77.0.1" \
		rg_wait_gid rxe0 0000:0000:0000:0000:0000:ffff:0a4d:0001
	cm_verify_run rxe 10.77.0.1 10.77.0.1 10.77.0.77
	for f in rping-server rping-client ucmatose-server ucmatose-client udaddy-server \
		udaddy-client mckey-receiver mckey-sender no-listener silent res-wildcard; do
		if [ -s /tmp/cmv-ours.$f ] && diff /tmp/cmv-ours.$f /tmp/cmv-rxe.$f >/tmp/cmv-diff; then
			t_ok "$f: ours and upstream over rxe print the same ($(wc -l </tmp/cmv-rxe.$f) lines)"
		else
			sed 's/^/    diff| /' /tmp/cmv-diff
			t_fail "$f: ours and upstream over rxe print the same"
		fi
	done
	rdma link delete rxe0
	ip link del veth0
	cm_unload_upstream
}

# vm_cm_removal: the function of 10.66.0.1 (mlx5_ib_rs.rdma.0) unbound under an rping server
# listening on it, the server end of a connected rping pair (its client on the other function)
# and an rping client connecting toward a peer that never answers (its REQ retrying): each of
# the three gets RDMA_CM_EVENT_DEVICE_REMOVAL and ends, the unbind completes, the simulator
# holds nothing of the function, the modules unload (kmemleak: vm_cm_leaks). On the functions
# vm_cm_verify leaves when it comes just before (make check's check2).
cm_removal_suite() {
	local nd a f=mlx5_ib_rs.rdma.0 drv ls cs cc hc rc i p t0
	fabric_take cmconn cm_conn_up
	nd=$(cat /tmp/cm-nd)
	t_check "the functions' interfaces have $CM_SRC and $CM_DST ($nd)" test -n "$nd"
	if [ -n "$nd" ]; then
		a=${nd% *}
		timeout 60 rping -s -a $CM_SRC -p 7190 -C 1 >/tmp/rm-listen 2>&1 &
		ls=$!
		timeout 60 rping -s -a $CM_SRC -p 7191 >/tmp/rm-conn-s 2>&1 &
		cs=$!
		sleep 1
		timeout 60 rping -c -a $CM_SRC -I $CM_DST -p 7191 -v >/tmp/rm-conn-c 2>&1 &
		cc=$!
		i=0
		while [ $i -lt 200 ] && ! grep -q "ping data" /tmp/rm-conn-c; do
			nap 0.1
			i=$((i + 1))
		done
		t_check "removal: the rping pair is connected and pinging" grep -q "ping data" /tmp/rm-conn-c
		ip neigh replace 10.66.0.99 lladdr 02:00:00:00:00:99 dev "$a" nud permanent
		timeout 60 rping -c -a 10.66.0.99 -I $CM_SRC -p 7192 -C 1 >/tmp/rm-half 2>&1 &
		hc=$!
		# rping opens the verbs device once its route is resolved, then connects: its REQ
		# goes unanswered for seconds (cm_conn_load's timeout and retries).
		i=0
		while [ $i -lt 200 ] && ! ls -l /proc/$hc/fd 2>/dev/null | grep -q uverbs; do
			nap 0.1
			i=$((i + 1))
		done
		sleep 1
		drv=$(fwsim_driver_of $f)
		rc=0
		t0=$(cut -d. -f1 /proc/uptime)
		timeout 60 sh -c "echo $f >/sys/bus/auxiliary/drivers/$drv/unbind" || rc=$?
		echo "    removal: the unbind took $(($(cut -d. -f1 /proc/uptime) - t0)) s"
		t_check "removal: unbind $f under listening, connected and connecting ids ($rc)" test $rc = 0
		i=0
		while [ $i -lt 300 ] && { kill -0 $ls || kill -0 $cs || kill -0 $hc; } 2>/dev/null; do
			nap 0.1
			i=$((i + 1))
		done
		for p in $ls $cs $hc; do
			rc=0
			kill -0 $p 2>/dev/null || wait $p || rc=$?
			echo "    removal: pid $p exit $rc"
		done
		for p in "the listening server:/tmp/rm-listen" "the connected server:/tmp/rm-conn-s" \
			"the client toward a silent peer:/tmp/rm-half"; do
			sed 's/^/    out| /' "${p#*:}" | tail -3
			t_check "removal: ${p%%:*} got RDMA_CM_EVENT_DEVICE_REMOVAL" \
				grep -q "cma detected device removal" "${p#*:}"
		done
		t_check "removal: the three ended before their timeout" sh -c \
			"! kill -0 $ls 2>/dev/null && ! kill -0 $cs 2>/dev/null && ! kill -0 $hc 2>/dev/null"
		kill $cc 2>/dev/null
		wait $cc 2>/dev/null
		t_check "removal: $f: the simulator holds nothing after the unbind" fwsim_resources_zero $f
		ip neigh del 10.66.0.99 dev "$a" 2>/dev/null
		t_check "removal: bind $f again" sh -c "echo $f >/sys/bus/auxiliary/drivers/$drv/bind"
	fi
	cm_conn_down
}

FABRIC_TAKERS="$FABRIC_TAKERS cm_removal_suite=cmconn"

[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode cm
