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
#    received, and rxe0's link and its IPv4 RoCE v2 GID; then the RDMA programs of WIRE_RUNS,
#    each side once server and once client; rxe0's packet counters as the runs make them, no
#    sequence error, retry or duplicate.
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

# wire_rdma SIDE: this side's half of every WIRE_RUNS line.
wire_rdma() {
	local side=$1 peer name port prog aargs bargs server args
	if [ "$side" = a ]; then peer=$WIRE_B; else peer=$WIRE_A; fi
	echo "$WIRE_RUNS" | while IFS='|' read -r name port prog aargs bargs server; do
		[ -n "$name" ] || continue
		if [ "$side" = a ]; then
			args=$aargs
		elif [ -n "${WIRE_B_OURS:-}" ]; then
			args=$(echo "$aargs" | sed 's/mlx5_0/mlx5_1/')
		else
			args=$bargs
		fi
		if [ "$server" = "$side" ]; then
			wire_serve "$prog $args ($side serves)" "$name" "$port" "$prog" "$args"
		else
			wire_client "$prog $args ($side is the client)" "$name" "$port" "$prog" "$args" "$peer"
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
	t_check "wire_sync done" wire_sync done
	unload_ours
}

# rxe's counters after WIRE_RUNS: every run is 100 single-packet messages each way, so rxe
# sent and received 100 packets per run, without a sequence error or a retry.
wire_rxe_counters() {
	local h=/sys/class/infiniband/rxe0/ports/1/hw_counters runs c
	runs=$(echo "$WIRE_RUNS" | grep -c '|')
	t_check "rxe0 rcvd_pkts = $((runs * 100)) ($runs runs of 100)" test "$(cat $h/rcvd_pkts)" = $((runs * 100))
	t_check "rxe0 sent_pkts = $((runs * 100))" test "$(cat $h/sent_pkts)" = $((runs * 100))
	for c in rcvd_seq_err retry_exceeded_err retry_rnr_exceeded_err out_of_seq_request duplicate_request; do
		t_check "rxe0 $c = 0" test "$(cat $h/$c)" = 0
	done
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
	t_check "wire_sync done" wire_sync done
	t_check "rdma link delete rxe0" rdma link delete rxe0
	t_check "modprobe -r rdma_rxe ib_uverbs ib_core" modprobe -r rdma_rxe ib_uverbs ib_core
}

# B with rdma-rs too (make wire PEER=ours): sim=eth,eth with the uplink on eth0; the second
# function (mlx5_1) is B's end, 10.38.1.2, since the first has the same MAC as A's. It runs
# A's arguments of WIRE_RUNS with mlx5_1.
wire_b_ours_suite() {
	local a
	WIRE_SIDE=b
	WIRE_B_OURS=1
	t_check "ip link set eth0 up (the uplink)" ip link set eth0 up
	load_ours sim=eth,eth uplink=eth0
	a=$(ls /sys/class/infiniband/mlx5_1/device/net/ 2>/dev/null)
	t_check "mlx5_1 has an interface ($a)" test -n "$a"
	[ -n "$a" ] || { unload_ours; return; }
	echo "B: $a $(cat /sys/class/net/$a/address) $WIRE_B/24"
	t_check "ip addr add $WIRE_B/24 dev $a" ip addr add $WIRE_B/24 dev $a
	t_check "ip link set $a up" ip link set $a up
	wire_b_ip $a
	wire_rdma b
	t_check "wire_sync done" wire_sync done
	unload_ours
}
