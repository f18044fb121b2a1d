# SPDX-License-Identifier: GPL-2.0
# Two VMs on one wire (make wire, tools/wire.sh): VM A (mode wire_a) runs rdma-rs with its
# Ethernet fabric's uplink on A's virtio-net interface; VM B (mode wire_b) runs upstream
# ib_core + rdma_rxe on its virtio-net interface. QEMU joins the two interfaces host-side
# (-netdev dgram over Unix sockets); nothing else is on the wire.
#
# The address plan is fixed, so the VMs need no other channel to find each other:
#   A: eth0 (virtio-net, 52:54:00:38:00:0a) is the uplink, without an address; the simulated
#      function's interface has 10.38.1.1/24.
#   B: eth0 (virtio-net, 52:54:00:38:00:0b) has 10.38.1.2/24; rxe0 is on it.
# The VMs boot at about the same time; each step that needs the other side waits for it,
# bounded: B listens first where B is the server, A retries where A is the client (TCP port
# 5400 is the barrier: wire_sync).
#  - vm_wire_a / vm_wire_b (IP): A pings B and B pings A through A's uplink (ARP resolved
#    across it: B learns the function's MAC); 512 KiB of random data go A -> B over TCP and
#    come back B -> A, compared byte for byte on A; B reports the byte count and checksum it
#    received, and rxe0's link and its IPv4 RoCE v2 GID; then the RDMA programs of WIRE_RUNS
#    (UD, UC), each side once server and once client; rxe0's packet counters as the runs make
#    them, no sequence error, retry or duplicate; then WIRE_RC_RUNS (RC pingpong and
#    perftest) the same way, rxe0's error counters still 0; then WIRE_LOSS_RUNS with A's
#    module reloaded with dropped, doubled, reordered and corrupted frames: the runs
#    complete, the retransmissions in A's debugfs counters and rxe0's.
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"

WIRE_A=10.38.1.1
WIRE_B=10.38.1.2
WIRE_SYNC_PORT=5400

# wire_wait_ping IP SECONDS: until IP answers a ping (one a second), at most SECONDS.
wire_wait_ping() {
	local end=$(($(cut -d. -f1 /proc/uptime) + $2))
	while [ "$(cut -d. -f1 /proc/uptime)" -lt $end ]; do
		ping -c 1 -W 1 "$1" >/dev/null 2>&1 && return 0
		sleep 1
	done
	return 1
}

# wire_listen PORT OUT: a busybox nc listening on TCP PORT in the background ($!), what it
# receives into OUT; it ends when the peer closes. Its input is a FIFO held open (fd 9) until
# wire_unhold: busybox nc stops at the end of its input.
wire_listen() {
	rm -f /tmp/w-hold-$1
	mkfifo /tmp/w-hold-$1
	timeout 600 nc -l -p "$1" </tmp/w-hold-$1 >"$2" 2>/dev/null &
	exec 9>/tmp/w-hold-$1
}
wire_unhold() {
	exec 9>&-
	rm -f /tmp/w-hold-$1
}

# wire_sync NAME: a barrier between the two VMs, once both reach it (bounded: 600 s).
# A listens on TCP port 5400 and takes NAME from B; B connects until A listens.
wire_sync() {
	local end=$(($(cut -d. -f1 /proc/uptime) + 600)) got
	if [ "$WIRE_SIDE" = a ]; then
		wire_listen $WIRE_SYNC_PORT /tmp/w-sync
		wait $!
		wire_unhold $WIRE_SYNC_PORT
		got=$(cat /tmp/w-sync)
		[ "$got" = "$1" ] || { echo "wire_sync $1: got '$got'"; return 1; }
		return 0
	fi
	while [ "$(cut -d. -f1 /proc/uptime)" -lt $end ]; do
		echo "$1" | timeout 5 nc $WIRE_A $WIRE_SYNC_PORT 2>/dev/null && return 0
		sleep 1
	done
	echo "wire_sync $1: A never listened"
	return 1
}

# wire_serve DESCRIPTION NAME PORT PROG "ARGS" [WANT]: the server half of a two-VM test
# program run: PROG ARGS -p PORT in the background, then the barrier NAME (the peer's client
# starts after it); passes when it exits 0 and printed WANT (default ' iters in ').
wire_serve() {
	local d=$1 name=$2 port=$3 prog=$4 args=$5 want=${6:-' iters in '} s rc
	echo "+ $prog $args -p $port (server)"
	timeout 300 $prog $args -p $port </dev/null >/tmp/w-srv.out 2>&1 &
	s=$!
	tr_wait_listen $port || echo "server not listening on $port"
	wire_sync "$name"
	rc=0
	wait $s || rc=$?
	sed 's/^/    server| /' /tmp/w-srv.out | tail -n 12
	if [ $rc = 0 ] && grep -Eq -- "$want" /tmp/w-srv.out; then
		t_ok "$d: server"
	else
		t_fail "$d: server" "exit $rc"
	fi
}

# wire_client DESCRIPTION NAME PORT PROG "ARGS" PEER [WANT]: the client half, after the
# barrier NAME: PROG ARGS -p PORT PEER (again while the connection is refused, up to 5 times).
wire_client() {
	local d=$1 name=$2 port=$3 prog=$4 args=$5 peer=$6 want=${7:-' iters in '} rc i
	wire_sync "$name"
	echo "+ $prog $args -p $port $peer (client)"
	for i in 1 2 3 4 5; do
		rc=0
		timeout 300 $prog $args -p $port $peer </dev/null >/tmp/w-cli.out 2>&1 || rc=$?
		grep -q "Couldn't connect" /tmp/w-cli.out || break
		sleep 2
	done
	sed 's/^/    client| /' /tmp/w-cli.out | tail -n 12
	if [ $rc = 0 ] && grep -Eq -- "$want" /tmp/w-cli.out; then
		t_ok "$d: client"
	else
		t_fail "$d: client" "exit $rc"
	fi
}

# The RDMA programs across the wire, in order; each line: NAME PORT PROG, A's arguments,
# B's arguments, which side serves. Their own TCP exchange of QPNs and GIDs goes between
# 10.38.1.1 and 10.38.1.2. GIDs: A's index 1 and B's (rxe's) index 0 are the link-local RoCE
# v2 GIDs of the function's and eth0's MACs (IPv6 packets; an AH's destination MAC comes from
# a link-local GID's EUI-64).
WIRE_RUNS='
ud_b_serves|18601|ibv_ud_pingpong|-d mlx5_0 -g 1 -s 512 -n 100|-d rxe0 -g 0 -s 512 -n 100|b
ud_a_serves|18602|ibv_ud_pingpong|-d mlx5_0 -g 1 -s 512 -n 100|-d rxe0 -g 0 -s 512 -n 100|a
uc_b_serves|18603|ibv_uc_pingpong|-d mlx5_0 -g 1 -s 512 -n 100|-d rxe0 -g 0 -s 512 -n 100|b
uc_a_serves|18604|ibv_uc_pingpong|-d mlx5_0 -g 1 -s 512 -n 100|-d rxe0 -g 0 -s 512 -n 100|a
'

# RC (engine/rc.rs): ibv_rc_pingpong with the data checked (-c), multi-packet messages at
# the 1024-byte path MTU, then perftest's bandwidth and latency programs (-m 1024: perftest
# takes each side's port MTU, not the pair's; -u 18: a 1 s ACK timeout, since under TCG a
# window of 128 packets can take longer than the default 67 ms to be acknowledged, and rxe's
# requester then sends again), each side once server and once client; a line may name what
# its output must hold (default ' iters in ').
PERF_WANT='^ *[0-9]+ +[0-9]+ +[0-9.]+'
WIRE_RC_RUNS="
rc_b_serves|18611|ibv_rc_pingpong|-d mlx5_0 -g 1 -s 4000 -n 100 -c|-d rxe0 -g 0 -s 4000 -n 100 -c|b
rc_a_serves|18612|ibv_rc_pingpong|-d mlx5_0 -g 1 -s 4000 -n 100 -c|-d rxe0 -g 0 -s 4000 -n 100 -c|a
uc_multi_b_serves|18613|ibv_uc_pingpong|-d mlx5_0 -g 1 -s 4000 -n 100 -c|-d rxe0 -g 0 -s 4000 -n 100 -c|b
uc_multi_a_serves|18614|ibv_uc_pingpong|-d mlx5_0 -g 1 -s 4000 -n 100 -c|-d rxe0 -g 0 -s 4000 -n 100 -c|a
"
n=18620
for t in ib_send_bw ib_write_bw ib_read_bw ib_atomic_bw ib_send_lat ib_write_lat; do
	case $t in
	*_lat) sz="-s 64" ;;
	ib_atomic_bw) sz="-o 8" ;;
	ib_read_bw) sz="-s 8192 -o 8" ;;
	*) sz="-s 8192" ;;
	esac
	for srv in b a; do
		n=$((n + 1))
		WIRE_RC_RUNS="$WIRE_RC_RUNS
${t}_${srv}_serves|$n|$t|-d mlx5_0 -x 1 -F -m 1024 -u 18 -n 100 $sz|-d rxe0 -x 0 -F -m 1024 -u 18 -n 100 $sz|$srv|$PERF_WANT"
	done
done

# RC with faults (A reloaded with wire_drop=97 wire_dup=101 wire_reorder=103
# wire_corrupt=107, and mad_qps=1 for the CM: of the RoCE v2 frames A's function sends or
# receives, about 1 % each is dropped, doubled, held back behind the next, or corrupted so
# that the receiver's ICRC check drops it): perftest's WRITE, SEND and READ bandwidth runs,
# each side serving, must complete with several messages in flight (perftest keeps both QPs
# until its closing handshake; the pingpongs exit as soon as their own work completes, so a
# lost last ACK leaves the other side retrying into a destroyed QP, and ibv_rc_pingpong's -c
# checks only the first byte of each page, one the receiver's own buffer already holds);
# then WIRE_LOSS_CM_RUNS check the data.
WIRE_LOSS_ARGS="-F -m 1024 -u 16 -n 200"
WIRE_LOSS_RUNS="
loss_write_b_serves|18641|ib_write_bw|-d mlx5_0 -x 1 $WIRE_LOSS_ARGS -s 8192|-d rxe0 -x 0 $WIRE_LOSS_ARGS -s 8192|b|$PERF_WANT
loss_write_a_serves|18642|ib_write_bw|-d mlx5_0 -x 1 $WIRE_LOSS_ARGS -s 8192|-d rxe0 -x 0 $WIRE_LOSS_ARGS -s 8192|a|$PERF_WANT
loss_send_b_serves|18643|ib_send_bw|-d mlx5_0 -x 1 $WIRE_LOSS_ARGS -s 8192|-d rxe0 -x 0 $WIRE_LOSS_ARGS -s 8192|b|$PERF_WANT
loss_send_a_serves|18644|ib_send_bw|-d mlx5_0 -x 1 $WIRE_LOSS_ARGS -s 8192|-d rxe0 -x 0 $WIRE_LOSS_ARGS -s 8192|a|$PERF_WANT
loss_read_b_serves|18645|ib_read_bw|-d mlx5_0 -x 1 $WIRE_LOSS_ARGS -s 8192 -o 8|-d rxe0 -x 0 $WIRE_LOSS_ARGS -s 8192 -o 8|b|$PERF_WANT
loss_read_a_serves|18646|ib_read_bw|-d mlx5_0 -x 1 $WIRE_LOSS_ARGS -s 8192 -o 8|-d rxe0 -x 0 $WIRE_LOSS_ARGS -s 8192 -o 8|a|$PERF_WANT
"
WIRE_FAULTS="wire_drop=97 wire_dup=101 wire_reorder=103 wire_corrupt=107"

# rdma_cm across the wire (A's module reloaded with mad_qps=1: QP1 on the wire, our CM with
# rxe's ib_cm): unmodified rping (10 pings, the data verified, -V) and ucmatose (2
# connections), each side once server and once client; each line: NAME, which side serves,
# the server's command, the client's, what the client must print.
WIRE_CM_RUNS="
rping_b_serves|b|rping -s -a $WIRE_B -p 7174 -C 10 -V|rping -c -a $WIRE_B -I $WIRE_A -p 7174 -C 10 -v -V|ping data: rdma-ping-9
rping_a_serves|a|rping -s -a $WIRE_A -p 7175 -C 10 -V|rping -c -a $WIRE_A -I $WIRE_B -p 7175 -C 10 -v -V|ping data: rdma-ping-9
ucmatose_b_serves|b|ucmatose -b $WIRE_B -c 2 -C 10|ucmatose -s $WIRE_B -b $WIRE_A -c 2 -C 10|data transfers complete
ucmatose_a_serves|a|ucmatose -b $WIRE_A -c 2 -C 10|ucmatose -s $WIRE_A -b $WIRE_B -c 2 -C 10|data transfers complete
"

# Byte-checked RC under the faults: rping with 8 KiB pings (each a SEND, a READ of eight
# 1024-byte responses carrying the client's buffer to the server, a WRITE of eight packets
# carrying it back, a SEND), the client comparing every byte of what came back with what it
# sent (-V: memcmp, "data mismatch!" and exit 1 otherwise), each side once server and once
# client; the connection over our CM with QP1 under the same faults.
WIRE_LOSS_CM_RUNS="
loss_rping_b_serves|b|rping -s -a $WIRE_B -p 7176 -S 8192 -C 40 -V|rping -c -a $WIRE_B -I $WIRE_A -p 7176 -S 8192 -C 40 -v -V|ping data: rdma-ping-39
loss_rping_a_serves|a|rping -s -a $WIRE_A -p 7177 -S 8192 -C 40 -V|rping -c -a $WIRE_A -I $WIRE_B -p 7177 -S 8192 -C 40 -v -V|ping data: rdma-ping-39
"

# wire_cm SIDE [RUNS]: this side's half of every line of RUNS (default WIRE_CM_RUNS). The
# server starts, then both meet at the barrier; the client runs again while it is rejected
# (the server not listening yet), up to 5 times.
wire_cm() {
	local side=$1 runs=${2:-$WIRE_CM_RUNS} name srv sargs cargs want rc i s
	echo "$runs" | while IFS='|' read -r name srv sargs cargs want; do
		[ -n "$name" ] || continue
		if [ "$srv" = "$side" ]; then
			echo "+ $sargs (server)"
			timeout 300 $sargs </dev/null >/tmp/w-cm-s 2>&1 &
			s=$!
			sleep 2
			wire_sync "$name"
			rc=0
			wait $s || rc=$?
			sed 's/^/    server| /' /tmp/w-cm-s | tail -n 12
			t_check "$name: $sargs: server exit 0 ($rc)" test $rc = 0
		else
			wire_sync "$name"
			echo "+ $cargs (client)"
			for i in 1 2 3 4 5; do
				rc=0
				timeout 280 $cargs </dev/null >/tmp/w-cm-c 2>&1 || rc=$?
				grep -q "REJECTED" /tmp/w-cm-c || break
				sleep 2
			done
			grep -v '^ping data: ' /tmp/w-cm-c | sed 's/^/    client| /' | tail -n 12
			grep '^ping data: ' /tmp/w-cm-c | tail -n 1 | cut -c 1-80 | sed 's/^/    client| /'
			t_check "$name: $cargs: client exit 0 ($rc)" test $rc = 0
			t_check "$name: no data mismatch" sh -c "! grep -q 'data mismatch' /tmp/w-cm-c"
			if grep -q -- "$want" /tmp/w-cm-c; then
				t_ok "$name: the client printed '$want'"
			else
				t_fail "$name: the client printed '$want'"
			fi
		fi
	done
}

# The benchmark (printed, not asserted): message rate and latency with A as the client and
# B (rxe) serving, first A with rdma-rs (ours <-> rxe), then A with upstream rdma_rxe on its
# eth0 (rxe <-> rxe), the same programs and arguments in the same two VMs. Each client's
# result line is printed as "bench: CONFIG PROG: ..." (tools/wire.sh gathers them).
WIRE_BENCH_ARGS="-F -m 1024 -u 18"
WIRE_BENCH_RUNS="
bench_send_lat|18661|ib_send_lat|-s 64 -n 200
bench_write_lat|18662|ib_write_lat|-s 64 -n 200
bench_send_bw|18663|ib_send_bw|-s 64 -n 2000
bench_write_bw|18664|ib_write_bw|-s 64 -n 2000
bench_read_bw|18665|ib_read_bw|-s 64 -n 2000 -o 8
"

# wire_bench SIDE CONFIG: B serves each run of WIRE_BENCH_RUNS, A is its client (A's
# device and GID index in WIRE_BENCH_DEV, B's in WIRE_BENCH_SRV_DEV, rxe0's by default).
wire_bench() {
	local side=$1 config=$2 name port prog args rc line
	echo "$WIRE_BENCH_RUNS" | while IFS='|' read -r name port prog args; do
		[ -n "$name" ] || continue
		name="${name}_$config"
		if [ "$side" = b ]; then
			wire_serve "$prog $args ($config bench, b serves)" "$name" "$port" "$prog" \
				"${WIRE_BENCH_SRV_DEV:--d rxe0 -x 0} $WIRE_BENCH_ARGS $args" "$PERF_WANT"
			continue
		fi
		wire_client "$prog $args ($config bench, a is the client)" "$name" "$port" "$prog" \
			"$WIRE_BENCH_DEV $WIRE_BENCH_ARGS $args" "$WIRE_B" "$PERF_WANT"
		line=$(grep -E '^ *[0-9]+ +[0-9]+ +[0-9.]+' /tmp/w-cli.out | tail -n 1 | tr -s ' ')
		echo "bench: $config $prog $args:$line"
	done
}

# A's part of the benchmark: ours (mlx5_ib_rs without faults), then upstream rdma_rxe on
# eth0 with A's address.
wire_bench_a() {
	local a
	wire_reload_a "(benchmark)"
	WIRE_BENCH_DEV="-d mlx5_0 -x 1" wire_bench a ours
	unload_ours
	t_check "modprobe ib_uverbs rdma_rxe (A)" modprobe -a ib_uverbs rdma_rxe
	t_check "ip addr add $WIRE_A/24 dev eth0 (A)" ip addr add $WIRE_A/24 dev eth0
	t_check "rdma link add rxe0 type rxe netdev eth0 (A)" rdma link add rxe0 type rxe netdev eth0
	t_check "rxe0's port is ACTIVE (A)" sh -c "rdma link show rxe0/1 | grep -q 'state ACTIVE'"
	t_check "B answers a ping from eth0" wire_wait_ping $WIRE_B 120
	WIRE_BENCH_DEV="-d rxe0 -x 0" wire_bench a rxe
	t_check "rdma link delete rxe0 (A)" rdma link delete rxe0
	t_check "ip addr del $WIRE_A/24 dev eth0 (A)" ip addr del $WIRE_A/24 dev eth0
	t_check "modprobe -r rdma_rxe ib_uverbs ib_core (A)" modprobe -r rdma_rxe ib_uverbs ib_core
	# Ours again, A's address on the function's interface (the last barrier is on it).
	load_ours sim=eth uplink=eth0
	a=$(ls /sys/class/infiniband/mlx5_0/device/net/ 2>/dev/null)
	t_check "ip addr add $WIRE_A/24 dev $a (after the benchmark)" ip addr add $WIRE_A/24 dev $a
	t_check "ip link set $a up" ip link set $a up
	t_check "B answers a ping again" wire_wait_ping $WIRE_B 120
}

# wire_rdma SIDE [RUNS]: this side's half of every line of RUNS (default WIRE_RUNS).
wire_rdma() {
	local side=$1 runs=${2:-$WIRE_RUNS} peer name port prog aargs bargs server args want
	if [ "$side" = a ]; then peer=$WIRE_B; else peer=$WIRE_A; fi
	echo "$runs" | while IFS='|' read -r name port prog aargs bargs server want; do
		[ -n "$name" ] || continue
		if [ "$side" = a ]; then
			args=$aargs
		elif [ -n "${WIRE_B_OURS:-}" ]; then
			args=$aargs
		else
			args=$bargs
		fi
		want=${want:- iters in }
		if [ "$server" = "$side" ]; then
			wire_serve "$prog $args ($side serves)" "$name" "$port" "$prog" "$args" "$want"
		else
			wire_client "$prog $args ($side is the client)" "$name" "$port" "$prog" "$args" "$peer" "$want"
		fi
	done
}

# A: the function's interface (its name in $WIRE_IF), the uplink on eth0.
wire_a_suite() {
	local a mac rc srv
	WIRE_SIDE=a
	t_check "ip link set eth0 up (the uplink)" ip link set eth0 up
	load_ours sim=eth uplink=eth0
	a=$(ls /sys/class/infiniband/mlx5_0/device/net/ 2>/dev/null)
	t_check "mlx5_0 has an interface ($a)" test -n "$a"
	[ -n "$a" ] || { unload_ours; return; }
	WIRE_IF=$a
	mac=$(cat /sys/class/net/$a/address)
	echo "A: $a $mac $WIRE_A/24, uplink eth0 $(cat /sys/class/net/eth0/address)"
	t_check "ip addr add $WIRE_A/24 dev $a" ip addr add $WIRE_A/24 dev $a
	t_check "ip link set $a up" ip link set $a up
	t_check "B ($WIRE_B) answers a ping through the uplink (waited up to 600 s)" \
		wire_wait_ping $WIRE_B 600
	t_check "ping -c 3 $WIRE_B" ping -c 3 -W 5 $WIRE_B
	t_check "wire_sync ip" wire_sync ip
	# 512 KiB to B's port 5001; B sends what it received back to port 5002.
	dd if=/dev/urandom of=/tmp/w-send bs=1024 count=512 2>/dev/null
	rm -f /tmp/w-back
	wire_listen 5002 /tmp/w-back
	srv=$!
	rc=1
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		rc=0
		timeout 120 nc $WIRE_B 5001 </tmp/w-send >/dev/null 2>&1 || rc=$?
		[ $rc = 0 ] && break
		sleep 2
	done
	t_check "TCP: nc to B ($WIRE_B:5001) exits 0" test $rc = 0
	wait $srv
	wire_unhold 5002
	echo "A: sent $(md5sum </tmp/w-send), got back $(wc -c </tmp/w-back) bytes"
	t_check "TCP: 524288 bytes A -> B -> A arrive intact" \
		sh -c "test \"\$(wc -c </tmp/w-back)\" = 524288 && cmp /tmp/w-send /tmp/w-back"
	echo "A: $a tx $(cat /sys/class/net/$a/statistics/tx_packets) rx $(cat /sys/class/net/$a/statistics/rx_packets) packets;" \
		"eth0 tx $(cat /sys/class/net/eth0/statistics/tx_packets) rx $(cat /sys/class/net/eth0/statistics/rx_packets)"
	rm -f /tmp/w-send /tmp/w-back
	t_check "wire_sync ip-done" wire_sync ip-done
	echo "A: mlx5_0 GID 1 $(cat /sys/class/infiniband/mlx5_0/ports/1/gids/1) ($(cat /sys/class/infiniband/mlx5_0/ports/1/gid_attrs/types/1))"
	wire_rdma a
	wire_rdma a "$WIRE_RC_RUNS"
	grep -E "^(wire|ether)_" /sys/kernel/debug/mlx5_fwsim/*/stats 2>/dev/null | sed 's/^/A: /'
	wire_reload_a "(QP1 on the wire)" mad_qps=1
	wire_cm a
	wire_loss_a
	wire_bench_a
	t_check "wire_sync done" wire_sync done
	unload_ours
}

# wire_reload_a WHY [PARAMETERS...]: mlx5_ib_rs again with PARAMETERS, the interface as
# before.
wire_reload_a() {
	local why=$1 a
	shift
	unload_ours
	load_ours sim=eth uplink=eth0 "$@"
	a=$(ls /sys/class/infiniband/mlx5_0/device/net/ 2>/dev/null)
	t_check "ip addr add $WIRE_A/24 dev $a $why" ip addr add $WIRE_A/24 dev $a
	t_check "ip link set $a up" ip link set $a up
	t_check "B answers a ping again" wire_wait_ping $WIRE_B 120
}

# The transport Q counters of mlx5_0's port (hw_counters, upstream mlx5_ib's names), "name
# value" lines.
WIRE_QCNTS="out_of_sequence duplicate_request packet_seq_err implied_nak_seq_err local_ack_timeout_err rnr_nak_retry_err"
wire_qcnts() {
	local c
	for c in $WIRE_QCNTS; do
		echo "$c $(cat /sys/class/infiniband/mlx5_0/ports/1/hw_counters/$c 2>/dev/null)"
	done
}

# wire_qcnt_check WHO: mlx5_0's transport Q counters show the faults: its responder counted
# requests past the expected PSN and duplicates, its requester went back (a sequence NAK, an
# implied NAK or the ACK timer).
wire_qcnt_check() {
	local q
	q=$(wire_qcnts)
	echo "$q" | sed "s/^/$1: hw_counters /"
	t_check "$1's responder counted gaps and duplicates (hw_counters out_of_sequence, duplicate_request > 0)" \
		test "$(echo "$q" | awk '/^out_of_sequence / { o = $2 } /^duplicate_request / { d = $2 } END { print (o > 0 && d > 0) ? 1 : 0 }')" = 1
	t_check "$1's requester went back (hw_counters packet_seq_err + implied_nak_seq_err + local_ack_timeout_err > 0)" \
		test "$(echo "$q" | awk '/^(packet_seq_err|implied_nak_seq_err|local_ack_timeout_err) / { n += $2 } END { print n + 0 }')" -gt 0
}

# A's part of WIRE_LOSS_RUNS and WIRE_LOSS_CM_RUNS: the module again with the faults (and
# QP1 on the wire for the CM); then A's debugfs counters and its port's Q counters.
wire_loss_a() {
	local st q
	wire_reload_a "(faults injected)" mad_qps=1 $WIRE_FAULTS
	wire_rdma a "$WIRE_LOSS_RUNS"
	wire_cm a "$WIRE_LOSS_CM_RUNS"
	st=$(cat /sys/kernel/debug/mlx5_fwsim/*/stats 2>/dev/null)
	echo "$st" | grep -E "^wire_" | sed 's/^/A (faults): /'
	t_check "A's requester sent packets again (wire_rc_retransmits > 0)" \
		test "$(echo "$st" | awk '/^wire_rc_retransmits/ { print $2 }')" -gt 0
	t_check "A's responder saw duplicates and gaps (wire_rc_duplicates, wire_rc_out_of_sequence > 0)" \
		test "$(echo "$st" | awk '/^wire_rc_duplicates/ { d = $2 } /^wire_rc_out_of_sequence/ { o = $2 } END { print (d > 0 && o > 0) ? 1 : 0 }')" = 1
	t_check "A dropped the corrupted frames it received by their ICRC (wire_bad_icrc > 0)" \
		test "$(echo "$st" | awk '/^wire_bad_icrc/ { print $2 }')" -gt 0
	wire_qcnt_check A
	# Every RC QP counts into the port's Q counter set: its responder counters are the
	# debugfs ones (no UC ran under the faults).
	q=$(wire_qcnts)
	t_check "A's hw_counters out_of_sequence = debugfs wire_rc_out_of_sequence" \
		test "$(echo "$q" | awk '/^out_of_sequence / { print $2 }')" = "$(echo "$st" | awk '/^wire_rc_out_of_sequence/ { print $2 }')"
	t_check "A's hw_counters duplicate_request = debugfs wire_rc_duplicates" \
		test "$(echo "$q" | awk '/^duplicate_request / { print $2 }')" = "$(echo "$st" | awk '/^wire_rc_duplicates/ { print $2 }')"
}

# rxe's counters after WIRE_RUNS: every run is 100 single-packet messages each way, so rxe
# sent and received 100 packets per run, without a sequence error or a retry.
wire_rxe_counters() {
	local h=/sys/class/infiniband/rxe0/ports/1/hw_counters runs c
	runs=$(echo "$WIRE_RUNS" | grep -c '|')
	t_check "rxe0 rcvd_pkts = $((runs * 100)) ($runs runs of 100)" test "$(cat $h/rcvd_pkts)" = $((runs * 100))
	t_check "rxe0 sent_pkts = $((runs * 100))" test "$(cat $h/sent_pkts)" = $((runs * 100))
	wire_rxe_errors
}

# rxe's error counters: no sequence error or retry, and (unless "dups" is given) no
# duplicate.
wire_rxe_errors() {
	local h=/sys/class/infiniband/rxe0/ports/1/hw_counters c cs
	cs="rcvd_seq_err retry_exceeded_err retry_rnr_exceeded_err out_of_seq_request"
	[ "${1:-}" = dups ] || cs="$cs duplicate_request"
	for c in $cs; do
		t_check "rxe0 $c = 0" test "$(cat $h/$c)" = 0
	done
}

# B's part of WIRE_LOSS_RUNS and WIRE_LOSS_CM_RUNS: rxe's counters show what A's faults
# made rxe do again.
wire_loss_b() {
	local h=/sys/class/infiniband/rxe0/ports/1/hw_counters seq dup oos retry c
	seq=$(cat $h/rcvd_seq_err)
	dup=$(cat $h/duplicate_request)
	oos=$(cat $h/out_of_seq_request)
	retry=$(cat $h/completer_retry_err)
	wire_rdma b "$WIRE_LOSS_RUNS"
	echo "B: rxe0 counters after perftest's runs under the faults:"
	for c in rcvd_seq_err duplicate_request out_of_seq_request completer_retry_err; do
		echo "    $c $(cat $h/$c)"
	done
	wire_cm b "$WIRE_LOSS_CM_RUNS"
	echo "B: rxe0 counters after the faults:"
	for c in $h/*; do echo "    $(basename $c) $(cat $c)"; done
	t_check "rxe0 was NAKed for gaps (rcvd_seq_err $seq -> $(cat $h/rcvd_seq_err))" \
		test "$(cat $h/rcvd_seq_err)" -gt "$seq"
	t_check "rxe0 answered duplicates (duplicate_request $dup -> $(cat $h/duplicate_request))" \
		test "$(cat $h/duplicate_request)" -gt "$dup"
	t_check "rxe0 NAKed gaps as responder (out_of_seq_request $oos -> $(cat $h/out_of_seq_request))" \
		test "$(cat $h/out_of_seq_request)" -gt "$oos"
	echo "B: rxe0 completer_retry_err $retry -> $(cat $h/completer_retry_err) (retries on its ACK timer or an implied NAK)"
}

# B's IP part, on interface $1 (eth0 under rxe; the function's interface under ours).
wire_b_ip() {
	local rc srv
	# Listen before anything else: A sends as soon as it reaches B.
	rm -f /tmp/w-recv
	wire_listen 5001 /tmp/w-recv
	srv=$!
	t_check "A ($WIRE_A) answers a ping through its uplink (waited up to 600 s)" \
		wire_wait_ping $WIRE_A 600
	t_check "ping -c 3 $WIRE_A" ping -c 3 -W 5 $WIRE_A
	echo "B: neighbours: $(ip neigh show dev $1)"
	t_check "wire_sync ip" wire_sync ip
	wait $srv
	wire_unhold 5001
	echo "B: received $(wc -c </tmp/w-recv) bytes, $(md5sum </tmp/w-recv)"
	t_check "TCP: 524288 bytes arrive from A" test "$(wc -c </tmp/w-recv)" = 524288
	rc=1
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		rc=0
		timeout 120 nc $WIRE_A 5002 </tmp/w-recv >/dev/null 2>&1 || rc=$?
		[ $rc = 0 ] && break
		sleep 2
	done
	t_check "TCP: nc back to A ($WIRE_A:5002) exits 0" test $rc = 0
	rm -f /tmp/w-recv
	t_check "wire_sync ip-done" wire_sync ip-done
}

# B: rxe0 on eth0.
wire_b_suite() {
	local gid
	WIRE_SIDE=b
	t_check "ip addr add $WIRE_B/24 dev eth0" ip addr add $WIRE_B/24 dev eth0
	t_check "ip link set eth0 up" ip link set eth0 up
	t_check "modprobe ib_uverbs rdma_rxe" modprobe -a ib_uverbs rdma_rxe
	t_check "rdma link add rxe0 type rxe netdev eth0" rdma link add rxe0 type rxe netdev eth0
	rdma link show
	t_check "rxe0's port is ACTIVE" sh -c "rdma link show rxe0/1 | grep -q 'state ACTIVE'"
	gid=$(cat /sys/class/infiniband/rxe0/ports/1/gids/1 2>/dev/null)
	echo "B: rxe0 GID 1 $gid ($(cat /sys/class/infiniband/rxe0/ports/1/gid_attrs/types/1 2>/dev/null))"
	t_check "rxe0 GID 1 is $WIRE_B's RoCE v2 GID" test "$gid" = "0000:0000:0000:0000:0000:ffff:0a26:0102"
	wire_b_ip eth0
	wire_rdma b
	echo "B: rxe0 counters:"
	for c in /sys/class/infiniband/rxe0/ports/1/hw_counters/*; do echo "    $(basename $c) $(cat $c)"; done
	wire_rxe_counters
	wire_rdma b "$WIRE_RC_RUNS"
	echo "B: rxe0 counters after RC:"
	for c in /sys/class/infiniband/rxe0/ports/1/hw_counters/*; do echo "    $(basename $c) $(cat $c)"; done
	t_check "rxe0 rcvd_pkts grew past the UD and UC runs' 400" \
		test "$(cat /sys/class/infiniband/rxe0/ports/1/hw_counters/rcvd_pkts)" -gt 400
	# Under TCG on a loaded host an ACK can take longer than ibv_rc_pingpong's 67 ms ACK
	# timeout: either side may send again, and rxe counts what it receives twice as
	# duplicate_request; a sequence error or a spent retry count would be a fault.
	wire_rxe_errors dups
	t_check "modprobe rdma_ucm (rdma_cm, ib_cm)" modprobe rdma_ucm
	wire_cm b
	wire_loss_b
	wire_bench b ours
	wire_bench b rxe
	t_check "wire_sync done" wire_sync done
	t_check "rdma link delete rxe0" rdma link delete rxe0
	# rdma_ucm's dependencies (rdma_cm, iw_cm, ib_cm) hold ib_core: out first, one by one.
	for m in rdma_ucm rdma_cm iw_cm ib_cm; do
		[ ! -d /sys/module/$m ] || t_check "rmmod $m" rmmod $m
	done
	t_check "modprobe -r rdma_rxe ib_uverbs ib_core" modprobe -r rdma_rxe ib_uverbs ib_core
}

# B with rdma-rs too (make wire PEER=ours): sim=eth@2 with the uplink on eth0 (serial 2: a
# MAC, and so link-local GID, other than A's function's, serial 1), 10.38.1.2. It runs A's
# arguments of WIRE_RUNS.
wire_b_ours_suite() {
	local a
	WIRE_SIDE=b
	WIRE_B_OURS=1
	t_check "ip link set eth0 up (the uplink)" ip link set eth0 up
	load_ours sim=eth@2 uplink=eth0
	a=$(ls /sys/class/infiniband/mlx5_0/device/net/ 2>/dev/null)
	t_check "mlx5_0 has an interface ($a)" test -n "$a"
	[ -n "$a" ] || { unload_ours; return; }
	echo "B: $a $(cat /sys/class/net/$a/address) $WIRE_B/24"
	t_check "ip addr add $WIRE_B/24 dev $a" ip addr add $WIRE_B/24 dev $a
	t_check "ip link set $a up" ip link set $a up
	wire_b_ip $a
	wire_rdma b
	wire_rdma b "$WIRE_RC_RUNS"
	unload_ours
	load_ours sim=eth@2 uplink=eth0 mad_qps=1
	a=$(ls /sys/class/infiniband/mlx5_0/device/net/ 2>/dev/null)
	t_check "ip addr add $WIRE_B/24 dev $a (QP1 on the wire)" ip addr add $WIRE_B/24 dev $a
	t_check "ip link set $a up" ip link set $a up
	wire_cm b
	wire_rdma b "$WIRE_LOSS_RUNS"
	wire_cm b "$WIRE_LOSS_CM_RUNS"
	# A's faults reach B's engine too: its Q counters show gaps, duplicates and going back.
	wire_qcnt_check B
	# A's benchmark against ours on B (A first with ours, then with rxe).
	WIRE_BENCH_SRV_DEV="-d mlx5_0 -x 1" wire_bench b ours
	WIRE_BENCH_SRV_DEV="-d mlx5_0 -x 1" wire_bench b rxe
	t_check "wire_sync done" wire_sync done
	unload_ours
}
