# SPDX-License-Identifier: GPL-2.0
# rdma_cm on InfiniBand (vm_cm_ib): AF_IB addresses (struct sockaddr_ib: a port GID and a
# service ID) between the two simulated InfiniBand functions (sim=ib,ib mad_qps=1), routes
# from the SA's PathRecords, connections over the IB CM by LIDs (no GRH).
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"

# cm_ib_gid DEV: DEV's port 1 GID 0 (the sysfs form inet_pton takes).
cm_ib_gid() {
	cat /sys/class/infiniband/$1/ports/1/gids/0
}

# cm_ib_lid DEV: DEV's port 1 LID, decimal.
cm_ib_lid() {
	printf '%d' "$(cat /sys/class/infiniband/$1/ports/1/lid)"
}

# cm_ib_load MLX5_PARAMS...: the modules, rdma_cm's CM timeouts short (cm_conn_load's);
# RDMARS_CORE_PARAMS: more ib_core_rs parameters.
cm_ib_load() {
	touch /tmp/kunit-ran.mlx5_ib_rs
	load_mlx5_core
	# shellcheck disable=SC2086
	kunit_insmod "insmod ib_core_rs cma_cm_response_timeout=19 cma_max_cm_retries=3 ${RDMARS_CORE_PARAMS:-}" \
		$RDMARS_MODS/ib_core_rs.ko cma_cm_response_timeout=19 cma_max_cm_retries=3 ${RDMARS_CORE_PARAMS:-}
	kunit_insmod "insmod mlx5_ib_rs $*" $RDMARS_MODS/mlx5_ib_rs.ko "$@"
}

# cm_ib_run TAG: with an SM that has an SA: ucma_test -i (AF_IB bind, resolve, the
# SA's path, errnos; multicast joins through the SA, UD messages to the group), then unmodified ucmatose over AF_IB (-f gid: two connections, 10
# messages of 1000 bytes each way) and udaddy (-f gid: SIDR), servers on mlx5_0, clients on
# mlx5_1.
cm_ib_run() {
	local t=$1 g0 g1 l0 l1
	g0=$(cm_ib_gid mlx5_0)
	g1=$(cm_ib_gid mlx5_1)
	l0=$(cm_ib_lid mlx5_0)
	l1=$(cm_ib_lid mlx5_1)
	echo "    $t: mlx5_0 $g0 LID $l0, mlx5_1 $g1 LID $l1"
	t_import "$t: ucma_test -i" /rdma-rs/ucma_test -i "$g1" "$g0" "$l1" "$l0"
	cm_pair "$t: ucmatose -f gid -c 2 -S 1000" 60 \
		"ucmatose -f gid -b $g0 -c 2 -C 10 -S 1000" \
		"ucmatose -f gid -s $g0 -b $g1 -c 2 -C 10 -S 1000"
	if grep -q "^data transfers complete" /tmp/cm-c && grep -q "^data transfers complete" /tmp/cm-s; then
		t_ok "$t: ucmatose: both ends' data transfers complete"
	else
		t_fail "$t: ucmatose: both ends' data transfers complete"
	fi
	# UD over AF_IB: a SIDR REQ by LIDs, its REP back to the sender's LID.
	cm_pair "$t: udaddy -f gid -c 2" 60 "udaddy -f gid -b $g0 -c 2 -C 10" \
		"udaddy -f gid -s $g0 -b $g1 -c 2 -C 10"
	cm_ib_stray_dreq "$t" "$l0"
	if cm_ib_ip_runs $t ucma; then
		cm_ib_ip "$t"
	else
		echo "    $t: IP addresses: not on this fabric (cm_ib_ip_runs)"
	fi
}

# cm_ib_ifname DEV: the IPoIB interface of DEV's port 1 (ARPHRD_INFINIBAND, its hardware
# address ending with the port's GID).
cm_ib_ifname() {
	local g n
	g=$(cm_ib_gid $1 | tr -d :)
	for n in /sys/class/net/*; do
		[ "$(cat $n/type 2>/dev/null)" = 32 ] || continue
		case "$(tr -d : <$n/address)" in *"$g")
			echo ${n##*/}
			return
			;;
		esac
	done
}

# cm_ib_ip_runs TAG PROG: whether cm_ib_ip runs PROG under TAG's SM: every program under both
# in modes cmib and cmibq; in make check's check2 (whose two fabrics, vm_mad_wire's and vm_sma's
# unswept one that opensm sweeps, are loaded with ib_core_rs ipoib=1) ucma_test -p and
# ib_send_bw -R under both SMs, ucmatose over IPv4 and rping under the embedded SM.
cm_ib_ip_runs() {
	[ "$(cm_mode)" = check2 ] || return 0
	case "$1:$2" in
	*:ucma | *:send | embedded:tose4 | embedded:rping) return 0 ;;
	esac
	return 1
}

# cm_ib_ip TAG: rdma_cm with IP addresses on InfiniBand: 10.67.0.1 and fd67::1 on mlx5_0's
# IPoIB interface, 10.67.0.2 and fd67::2 on mlx5_1's (net.ipv4.conf.all.accept_local on, so that
# one function's ARP request from the other's local address is answered). ucma_test -p (bind,
# resolve_addr to an address of this host, from no source: the interface that owns it; from
# the other function's address: a neighbour over IPoIB; the SA's paths; errnos); unmodified
# ib_send_bw -R and ib_write_bw -R (no source: on mlx5_1, loopback through its LID), ucmatose
# from 10.67.0.1 to 10.67.0.2 (4 connections) and over IPv6 (no source: on mlx5_0), rping -C 100
# -v from 10.67.0.1 to 10.67.0.2 with `rdma res show cm_id` during the run (cm_ib_ip_runs);
# the CM messages counted on both sides. The addresses go again at the end.
cm_ib_ip() {
	local t=$1 i0 i1 g0 g1 l0 l1 c0 al
	i0=$(cm_ib_ifname mlx5_0)
	i1=$(cm_ib_ifname mlx5_1)
	t_check "$t: the IPoIB interfaces of mlx5_0 and mlx5_1 ($i0, $i1)" test -n "$i0" -a -n "$i1"
	[ -n "$i0" ] && [ -n "$i1" ] || return 0
	g0=$(cm_ib_gid mlx5_0)
	g1=$(cm_ib_gid mlx5_1)
	l0=$(cm_ib_lid mlx5_0)
	l1=$(cm_ib_lid mlx5_1)
	al=$(sysctl -n net.ipv4.conf.all.accept_local)
	sysctl -qw net.ipv4.conf.all.accept_local=1
	ip addr replace 10.67.0.1/24 dev $i0
	ip addr replace 10.67.0.2/24 dev $i1
	ip addr replace fd67::1/64 dev $i0 nodad
	ip addr replace fd67::2/64 dev $i1 nodad
	ip link set $i0 up
	ip link set $i1 up
	t_check "$t: $i0 carrier on (broadcast group joined)" ipoib_wait_carrier $i0
	t_check "$t: $i1 carrier on (broadcast group joined)" ipoib_wait_carrier $i1
	ip -br addr show dev $i0 | sed 's/^/    /'
	ip -br addr show dev $i1 | sed 's/^/    /'
	c0=$(cm_counters)
	cm_ib_ip_runs $t ucma && t_import "$t: ucma_test -p" /rdma-rs/ucma_test -p 10.67.0.1 \
		10.67.0.2 fd67::1 fd67::2 "$g0" "$g1" "$l0" "$l1" 10.67.0.77 10.99.0.1
	cm_ib_ip_runs $t send && cm_pair "$t: ib_send_bw -R (IPv4, on mlx5_1)" 60 \
		"ib_send_bw -R -d mlx5_1 -n 100" "ib_send_bw -R -d mlx5_1 -n 100 10.67.0.2"
	cm_ib_ip_runs $t write && cm_pair "$t: ib_write_bw -R (IPv4, on mlx5_1)" 60 \
		"ib_write_bw -R -d mlx5_1 -n 100" "ib_write_bw -R -d mlx5_1 -n 100 10.67.0.2"
	cm_ib_ip_runs $t tose4 && cm_pair "$t: ucmatose -c 4 (IPv4, mlx5_0 to mlx5_1)" 60 \
		"ucmatose -b 10.67.0.2 -c 4 -C 10" "ucmatose -s 10.67.0.2 -b 10.67.0.1 -c 4 -C 10"
	cm_ib_ip_runs $t tose6 && cm_pair "$t: ucmatose -c 2 (IPv6, on mlx5_0)" 60 \
		"ucmatose -b fd67::1 -c 2 -C 10" "ucmatose -s fd67::1 -c 2 -C 10"
	cm_ib_ip_runs $t rping && cm_ib_rping "$t"
	ip neigh show dev $i0 | sed 's/^/    neigh| /'
	cm_ib_ip_counters "$t" "$c0"
	ip addr flush dev $i0
	ip addr flush dev $i1
	sysctl -qw net.ipv4.conf.all.accept_local=$al
}

# cm_ib_ip_counters TAG BEFORE: since cm_counters printed BEFORE, each REQ, REP and RTU counted
# sent was counted received, at least one REQ. The disconnects' DREQs and DREPs are printed, not
# compared: a send counts when posted (upstream: at its completion), and ucmatose destroys its
# ids right after disconnecting, which cancels their DREQs' sends (ib_cancel_mad()); under
# opensm's path timings 3 of 15 DREQs counted sent were seen never received.
cm_ib_ip_counters() {
	local d
	d=$(echo "$2 $(cm_counters)" |
		awk '{for (i = 1; i <= NF / 2; i += 2) printf "%s %d ", $i, $(i + NF / 2 + 1) - $(i + 1)}')
	echo "    $1: CM counters moved by: $d"
	t_check "$1: IP ids: cm_tx_msgs and cm_rx_msgs count each REQ, REP and RTU once a side" sh -c \
		"echo '$d' | awk '{for (i = 1; i < 12; i += 4) if (\$(i + 1) != \$(i + 3)) exit 1; exit \$2 < 1}'"
}

# cm_ib_rping TAG: unmodified rping -C 100 -v from 10.67.0.1 (mlx5_0) to 10.67.0.2 (mlx5_1):
# every ping's data, both ends exit 0, `rdma res show cm_id` shows the listener and both
# connected ids with their IP addresses during the run.
cm_ib_rping() {
	local t=$1 c s rc=0 rs=0
	timeout 60 rping -s -a 10.67.0.2 -p 7181 -C 100 -v >/tmp/cm-s 2>&1 &
	s=$!
	sleep 1
	timeout 60 rping -c -a 10.67.0.2 -I 10.67.0.1 -p 7181 -C 100 -v >/tmp/cm-c 2>/tmp/cm-c.err &
	c=$!
	cm_res_cm_id "$t" 10.67.0.1 10.67.0.2 7181
	wait $c || rc=$?
	wait $s || rs=$?
	tail -3 /tmp/cm-c /tmp/cm-c.err /tmp/cm-s | sed 's/^/    rping| /'
	t_check "$t: rping -C 100 -v (IPv4, mlx5_0 to mlx5_1): client exit 0 ($rc), server exit 0 ($rs)" \
		test $rc = 0 -a $rs = 0
	if rping_verify /tmp/cm-c 100 >/tmp/cmv-why; then
		t_ok "$t: rping: 100 pings, each with rping's data"
	else
		t_fail "$t: rping: 100 pings, each with rping's data" "$(cat /tmp/cmv-why)"
	fi
}

# cm_ib_cnt DEV GROUP MSG: a CM counter of DEV's port 1.
cm_ib_cnt() {
	cat /sys/class/infiniband/$1/ports/1/cm_$2/$3
}

# cm_ib_stray_dreq TAG LID0: a DREQ of no connection from mlx5_1's umad to mlx5_0 (LID0)
# is counted there as received and as a duplicate, and answered with a DREP (upstream
# cm_issue_drep()), which mlx5_1 counts as received. The DREP is a direct retry (upstream
# cm_alloc_response_msg(..., true)), which cm_send_handler() counts as two sends and one
# retry.
cm_ib_stray_dreq() {
	local t=$1 rx0 dup0 tx0 re0 rx1 want i
	rx0=$(cm_ib_cnt mlx5_0 rx_msgs dreq)
	dup0=$(cm_ib_cnt mlx5_0 rx_duplicates dreq)
	tx0=$(cm_ib_cnt mlx5_0 tx_msgs drep)
	re0=$(cm_ib_cnt mlx5_0 tx_retries drep)
	rx1=$(cm_ib_cnt mlx5_1 rx_msgs drep)
	t_import "$t: umad_test -D" /rdma-rs/umad_test -u "$(cm_ib_umad mlx5_1)" -D "$2"
	want="$((rx0 + 1)) $((dup0 + 1)) $((tx0 + 2)) $((re0 + 1)) $((rx1 + 1))"
	i=0
	while [ $i -lt 30 ] && [ "$(cm_ib_cnt mlx5_1 rx_msgs drep)" != $((rx1 + 1)) ]; do
		nap 0.1
		i=$((i + 1))
	done
	mw_eq "$t: a stray DREQ: mlx5_0 cm_rx_msgs/dreq, cm_rx_duplicates/dreq, cm_tx_msgs/drep, cm_tx_retries/drep; mlx5_1 cm_rx_msgs/drep" \
		"$(cm_ib_cnt mlx5_0 rx_msgs dreq) $(cm_ib_cnt mlx5_0 rx_duplicates dreq) $(cm_ib_cnt mlx5_0 tx_msgs drep) $(cm_ib_cnt mlx5_0 tx_retries drep) $(cm_ib_cnt mlx5_1 rx_msgs drep)" \
		"$want"
}

# cm_ib_cnts SPEC...: the CM counters SPEC names (DEV/GROUP/MSG: DEV's port 1 cm_GROUP/MSG;
# DEV/GROUP/all: the sum of the group's files), on one line.
cm_ib_cnts() {
	local s out= n f v d
	for s in "$@"; do
		d=/sys/class/infiniband/${s%%/*}/ports/1/cm_${s#*/}
		if [ "${s##*/}" = all ]; then
			n=0
			for f in ${d%/all}/*; do
				read -r v <"$f"
				n=$((n + v))
			done
		else
			read -r n <"$d"
		fi
		out="$out $n"
	done
	echo $out
}

# cm_ib_delta BEFORE AFTER: each number of AFTER less the one of BEFORE at its place.
cm_ib_delta() {
	local a=$1 out= x
	set -- $2
	for x in $a; do
		out="$out $(($1 - x))"
		shift
	done
	echo $out
}

# cm_ib_umad DEV: the number of DEV's port 1 umad device.
cm_ib_umad() {
	local u
	for u in /sys/class/infiniband_mad/umad*; do
		if [ "$(cat $u/ibdev)" = "$1" ] && [ "$(cat $u/port)" = 1 ]; then
			echo "${u##*umad}"
			return
		fi
	done
}

# cm_ib_bg_until FILE PATTERN: waits (10 s at most) until FILE has a line PATTERN or the
# background program writing it ($!) ended.
cm_ib_bg_until() {
	local i=0
	while [ $i -lt 100 ] && ! grep -q "$2" "$1" && kill -0 $! 2>/dev/null; do
		nap 0.1
		i=$((i + 1))
	done
}

# cm_ib_raw TAG G0 G1 L0 L1: raw CM messages from mlx5_1's umad (tests/userspace/umad_test.c
# -C) to mlx5_0 (GID G0, LID L0), mlx5_0's rdma_cm listening through
# tests/userspace/ucma_test.c -L/-U, each counted with the CM counters as upstream's cm.c
# counts it. The REPs, SIDR REPs and DREPs go to mlx5_1's kernel CM (it holds the CM class's
# Send method on the port, so no umad agent can take them), which counts them received and
# finds no connection of theirs.
cm_ib_raw() {
	local t=$1 g0=$2 g1=$3 l0=$4 l1=$5 u1 spec b i rc=0
	u1=$(cm_ib_umad mlx5_1)
	# A LAP and an APR of no connection (and one LAP cut short): counted received, dropped
	# (cm_lap_handler(), cm_apr_handler(): no connection), no answer; attribute 0x001B
	# counted nowhere (cm_recv_handler()).
	spec="mlx5_0/rx_msgs/lap mlx5_0/rx_msgs/apr mlx5_0/rx_msgs/all mlx5_0/rx_duplicates/all mlx5_0/tx_msgs/all mlx5_1/rx_msgs/all"
	b=$(cm_ib_cnts $spec)
	t_import "$t: umad_test -C lap" /rdma-rs/umad_test -u "$u1" -C lap "$l0"
	i=0
	while [ $i -lt 30 ] && [ "$(cm_ib_cnt mlx5_0 rx_msgs apr)" = "$(echo $b | cut -d' ' -f2)" ]; do
		nap 0.1
		i=$((i + 1))
	done
	nap 0.3
	mw_eq "$t: LAP, APR, a short LAP, 0x001B: $spec" "$(cm_ib_delta "$b" "$(cm_ib_cnts $spec)")" \
		"2 1 3 0 0 0"

	# A REQ whose id the listener's user destroys once accepted: a REJ (cm_destroy_id() in
	# IB_CM_REP_SENT) that ends its REP's wait (2^(15-8) ms, no resend). Then a REQ twice with
	# the same comm ID and TID, a third time once the user accepted it: one connection
	# (cm_match_req(): the REQ_RCVD duplicate dropped, the REP_SENT one too,
	# cm_dup_req_handler()); its REP is never answered: sent again twice (MaxCMRetries 2,
	# 2^(17-8) ms each), counted in cm_tx_retries (cm_send_handler()), then IB_CM_REP_ERROR
	# (RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT) and no REJ (cm_process_send_error()).
	spec="mlx5_0/rx_msgs/req mlx5_0/rx_duplicates/req mlx5_0/tx_msgs/rep mlx5_0/tx_retries/rep mlx5_0/tx_msgs/rej mlx5_0/tx_msgs/all mlx5_1/rx_msgs/rep mlx5_1/rx_msgs/rej mlx5_1/tx_msgs/all"
	b=$(cm_ib_cnts $spec)
	/rdma-rs/ucma_test -L "$g0" 4791 >/tmp/cm-raw 2>&1 &
	cm_ib_bg_until /tmp/cm-raw '^I listening'
	t_import "$t: umad_test -C req" /rdma-rs/umad_test -u "$u1" -C req "$l0" "$l1" "$g0" "$g1" \
		$((0x01060000 + 4791)) mlx5_0
	wait $! || rc=$?
	t_import_file "$t: ucma_test -L (RC listener)" /tmp/cm-raw $rc
	mw_eq "$t: a REQ destroyed once accepted, a REQ thrice and its REP unanswered: $spec" \
		"$(cm_ib_delta "$b" "$(cm_ib_cnts $spec)")" "4 2 4 2 1 5 4 1 0"

	# A SIDR REQ twice (same request ID and TID) before the listener's user answers: one
	# request (cm_sidr_req_handler(): the duplicate counted), one SIDR REP.
	spec="mlx5_0/rx_msgs/sidr_req mlx5_0/rx_duplicates/sidr_req mlx5_0/tx_msgs/sidr_rep mlx5_0/tx_msgs/all mlx5_1/rx_msgs/sidr_rep"
	b=$(cm_ib_cnts $spec)
	rc=0
	/rdma-rs/ucma_test -U "$g0" 4791 >/tmp/cm-raw 2>&1 &
	cm_ib_bg_until /tmp/cm-raw '^I listening'
	t_import "$t: umad_test -C sidr" /rdma-rs/umad_test -u "$u1" -C sidr "$l0" \
		$((0x01110000 + 4791))
	wait $! || rc=$?
	t_import_file "$t: ucma_test -U (UD listener)" /tmp/cm-raw $rc
	i=0
	while [ $i -lt 30 ] && [ "$(cm_ib_cnt mlx5_1 rx_msgs sidr_rep)" = "$(echo $b | cut -d' ' -f5)" ]; do
		nap 0.1
		i=$((i + 1))
	done
	mw_eq "$t: a SIDR REQ twice: $spec" "$(cm_ib_delta "$b" "$(cm_ib_cnts $spec)")" "2 1 1 1 1"
}

# cm_ib_mcast_reset TAG G0: a UD id on mlx5_0 joined to a group through the SA
# (tests/userspace/ucma_test.c -N); a PortInfo Set with ClientReregister to mlx5_0's port
# (umad_test -C rereg, a local SMP) raises IB_EVENT_CLIENT_REREGISTER: the membership fails
# with RDMA_CM_EVENT_MULTICAST_ERROR, -ENETRESET (upstream multicast.c
# mcast_event_handler()), and a join again goes to the SA.
cm_ib_mcast_reset() {
	local t=$1 rc=0
	/rdma-rs/ucma_test -N "$2" >/tmp/cm-mc 2>&1 &
	cm_ib_bg_until /tmp/cm-mc '^I joined'
	t_import "$t: umad_test -C rereg" /rdma-rs/umad_test -u "$(cm_ib_umad mlx5_0)" -C rereg
	wait $! || rc=$?
	t_import_file "$t: ucma_test -N (a membership through the reregistration)" /tmp/cm-mc $rc
}

# Each suite runs on the fabric the suite before it left when that one is vm_mad_wire or
# vm_umad_bad (embedded SM), vm_mad_opensm or vm_opensm_traffic (opensm running): make
# check's check2 (fabric_take, lib.sh); then the ib_core_rs it loaded has the default CM
# timeouts, which a connection that succeeds never reaches.
FABRIC_TAKERS="$FABRIC_TAKERS cm_ib_suite=ib cm_ib_opensm_suite=opensm"

# vm_cm_ib: cm_ib_run with the embedded SM (the simulated switch's SA answers PathRecord
# Gets).
cm_ib_suite() {
	local t0
	RDMARS_CORE_PARAMS=ipoib=1 fabric_take ib cm_ib_load sim=ib,ib mad_qps=1
	t_check "mlx5_0 port 1 ACTIVE (embedded SM)" mw_wait_active mlx5_0
	t_check "mlx5_1 port 1 ACTIVE (embedded SM)" mw_wait_active mlx5_1
	cm_ib_run embedded
	now_cs
	t0=$_now_cs
	echo "+ cm_ib_raw, cm_ib_mcast_reset"
	cm_ib_raw embedded "$(cm_ib_gid mlx5_0)" "$(cm_ib_gid mlx5_1)" "$(cm_ib_lid mlx5_0)" \
		"$(cm_ib_lid mlx5_1)"
	cm_ib_mcast_reset embedded "$(cm_ib_gid mlx5_0)"
	took $t0
	fabric_give ib unload_ours
}

# cm_ib_opensm_up: run alone, the fabric under an opensm of its own.
cm_ib_opensm_up() {
	RDMARS_CORE_PARAMS=ipoib=1 cm_ib_load sim=ib,ib sm=0 mad_qps=1
	mw_opensm_fresh
}

# vm_cm_ib_opensm: cm_ib_run with opensm (sm=0; its SA): the path records carry opensm's
# LIDs; opensm logs no error.
cm_ib_opensm_suite() {
	fabric_take opensm cm_ib_opensm_up
	cm_ib_run opensm
	# ucma_test -i joins the non-multicast fe80::1: opensm refuses it (validate_requested_mgid)
	# before the join's MULTICAST_ERROR. With the IPoIB interfaces up, a PathRecord query the
	# SA client resent (same TID) before opensm's first answer completed gets its second answer
	# refused by umad (EINVAL, upstream's is_duplicate()): "osm_vendor_send: ERR 5430", then
	# "ERR 4C04: osm_vendor_send failed" (vm_ipoib_opensm).
	fabric_give opensm mw_opensm_down "ERR 1B01: Invalid prefix 0xFE00 in requested MGID
osm_vendor_send"
}
