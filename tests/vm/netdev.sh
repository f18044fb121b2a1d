# SPDX-License-Identifier: GPL-2.0
# The simulated Ethernet functions' interfaces (mlx5/eth.rs, rust/netdev.rs) on their
# fabric's Ethernet segment (mlx5/simdev/ether.rs); VM mode `netdev` (tools/vm.sh netdev)
# runs this suite alone, `make check` runs it in check2 (suites.list).
#  - vm_netdev: with sim=eth,eth, each function's interface sits under its device
#    (mlx5_N/device/net/) with the function's MAC (the one the default GID is built from);
#    one interface moved into a network namespace, IPv4 on both: ping and a TCP transfer
#    across, the interface counters moved by at least what was sent; link down: port DOWN
#    and IB_EVENT_PORT_ERR, no traffic; up: ACTIVE, IB_EVENT_PORT_ACTIVE, ping again; the MTU
#    range and the RoCE port's active MTU following the interface's; unloading with addresses
#    configured and the interfaces up removes them.
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"

# nd_gid_of_mac MAC: the link-local GID (sysfs format) of a MAC's modified EUI-64.
nd_gid_of_mac() {
	local IFS=:
	# shellcheck disable=SC2086
	set -- $1
	printf 'fe80:0000:0000:0000:%02x%s:%sff:fe%s:%s%s\n' $((0x$1 ^ 2)) "$2" "$3" "$4" "$5" "$6"
}

# nd_stat [NETNS] IF COUNTER: a counter of /sys/class/net/IF/statistics.
nd_stat() {
	if [ $# = 3 ]; then
		ip netns exec "$1" cat "/sys/class/net/$2/statistics/$3"
	else
		cat "/sys/class/net/$1/statistics/$2"
	fi
}

# nd_events DEV OUT EVENT: starts tests/userspace/port_events on DEV until one event of type
# EVENT (20 s; the GID changes a link change also brings may come first), its output in OUT,
# and waits until it is ready; its pid in nd_ev_pid.
nd_events() {
	local i=0
	/rdma-rs/port_events "$1" 1 20 $3 >"$2" 2>&1 &
	nd_ev_pid=$!
	while [ $i -lt 100 ] && ! grep -q '^ready' "$2"; do
		nap 0.1
		i=$((i + 1))
	done
}

# nd_wait_state DEV STATE: waits (at most ~5 s) until DEV's port 1 state reads STATE.
nd_wait_state() {
	local i=0
	while [ $i -lt 50 ]; do
		[ "$(cat "/sys/class/infiniband/$1/ports/1/state")" = "$2" ] && return 0
		nap 0.1
		i=$((i + 1))
	done
	return 1
}

netdev_suite() {
	local a b d n mac gid rc before_tx before_txb before_rx before_rxb srv dropped
	load_ours sim=eth,eth
	a=$(ls /sys/class/infiniband/mlx5_0/device/net/ 2>/dev/null)
	b=$(ls /sys/class/infiniband/mlx5_1/device/net/ 2>/dev/null)
	echo "interfaces: mlx5_0 $a, mlx5_1 $b"
	t_check "mlx5_0 has one interface under its device" test -n "$a" -a "$(echo "$a" | wc -w)" = 1
	t_check "mlx5_1 has one interface under its device" test -n "$b" -a "$(echo "$b" | wc -w)" = 1
	if [ -z "$a" ] || [ -z "$b" ]; then
		unload_ours
		return
	fi
	for d in mlx5_0:$a mlx5_1:$b; do
		n=${d#*:}
		d=${d%%:*}
		mac=$(cat /sys/class/net/$n/address)
		gid=$(cat /sys/class/infiniband/$d/ports/1/gids/0)
		echo "$d: $n address $mac, GID 0 $gid"
		t_check "$n has $d's MAC (the one its default GID is built from)" \
			test "$(nd_gid_of_mac "$mac")" = "$gid"
		t_check "$n is up with a carrier" \
			sh -c "ip link show $n | grep -q '<.*UP.*>' && test \"\$(cat /sys/class/net/$n/carrier)\" = 1"
		t_check "$n MTU 1500, type ether" \
			sh -c "test \"\$(cat /sys/class/net/$n/mtu)\" = 1500 && test \"\$(cat /sys/class/net/$n/type)\" = 1"
		t_check "$d port 1 ACTIVE while $n is up" nd_wait_state $d "4: ACTIVE"
	done
	ip -d link show $a

	t_check "ip netns add nd1" ip netns add nd1
	t_check "ip link set $b netns nd1" ip link set $b netns nd1
	t_check "$b left the initial namespace" test ! -e /sys/class/net/$b
	t_check "$b is in nd1" ip netns exec nd1 ip link show $b
	t_check "ip addr add 10.77.0.1/24 dev $a" ip addr add 10.77.0.1/24 dev $a
	t_check "ip link set $a up" ip link set $a up
	t_check "nd1: ip addr add 10.77.0.2/24 dev $b" ip netns exec nd1 ip addr add 10.77.0.2/24 dev $b
	t_check "nd1: ip link set $b up" ip netns exec nd1 ip link set $b up
	ip netns exec nd1 ip link set lo up
	t_check "mlx5_1 port 1 ACTIVE again once $b is up in nd1" nd_wait_state mlx5_1 "4: ACTIVE"

	before_tx=$(nd_stat $a tx_packets)
	before_txb=$(nd_stat $a tx_bytes)
	before_rx=$(nd_stat nd1 $b rx_packets)
	before_rxb=$(nd_stat nd1 $b rx_bytes)
	t_check "ping -c 3 10.77.0.2 (nd1) from $a" ping -c 3 -W 5 10.77.0.2
	t_check "ping -c 3 10.77.0.1 from nd1" ip netns exec nd1 ping -c 3 -W 5 10.77.0.1

	# A TCP transfer of 512 KiB into nd1 (busybox nc: the sender shuts its half down at the
	# end of its input; the receiver ends when the connection does, so its own input must
	# not end first: a FIFO held open by this shell).
	dd if=/dev/urandom of=/tmp/nd-send bs=1024 count=512 2>/dev/null
	rm -f /tmp/nd-recv /tmp/nd-hold
	mkfifo /tmp/nd-hold
	ip netns exec nd1 timeout 120 nc -l -p 5001 </tmp/nd-hold >/tmp/nd-recv 2>/dev/null &
	srv=$!
	exec 9>/tmp/nd-hold
	sleep 1
	rc=0
	timeout 120 nc 10.77.0.2 5001 </tmp/nd-send >/dev/null || rc=$?
	wait $srv
	exec 9>&-
	t_check "nc to 10.77.0.2:5001 exits 0" test $rc = 0
	t_check "TCP: 524288 bytes arrive intact in nd1" \
		sh -c "test \"\$(wc -c </tmp/nd-recv)\" = 524288 && cmp /tmp/nd-send /tmp/nd-recv"
	echo "$a tx: $before_tx -> $(nd_stat $a tx_packets) packets, $before_txb -> $(nd_stat $a tx_bytes) bytes"
	echo "$b rx: $before_rx -> $(nd_stat nd1 $b rx_packets) packets, $before_rxb -> $(nd_stat nd1 $b rx_bytes) bytes"
	# At least the pings' and the transfer's packets (524288 bytes in segments of at most 1448).
	t_check "$a tx_packets grew by >= 365" test $(($(nd_stat $a tx_packets) - before_tx)) -ge 365
	t_check "$a tx_bytes grew by >= 524288" test $(($(nd_stat $a tx_bytes) - before_txb)) -ge 524288
	t_check "$b rx_packets grew by >= 365" test $(($(nd_stat nd1 $b rx_packets) - before_rx)) -ge 365
	t_check "$b rx_bytes grew by >= 524288" test $(($(nd_stat nd1 $b rx_bytes) - before_rxb)) -ge 524288
	t_check "$b tx_packets >= 3 (ping replies, ACKs)" test "$(nd_stat nd1 $b tx_packets)" -ge 3
	t_check "the segment delivered >= 365 frames (debugfs ether_delivered)" \
		test "$(awk '/^ether_delivered/ { print $2 }' $FWSIM_DBG/mlx5_ib_rs.rdma.0/stats)" -ge 365

	# Link down: the RDMA port goes DOWN with IB_EVENT_PORT_ERR (10); nothing crosses.
	nd_events mlx5_0 /tmp/nd-ev-down 10
	t_check "ip link set $a down" ip link set $a down
	rc=0
	wait $nd_ev_pid || rc=$?
	sed 's/^/    events| /' /tmp/nd-ev-down
	t_check "link down: IB_EVENT_PORT_ERR on mlx5_0 port 1" \
		sh -c "test $rc = 0 && grep -q '^event .* 10 port 1\$' /tmp/nd-ev-down"
	t_check "link down: mlx5_0 port 1 state 1: DOWN" nd_wait_state mlx5_0 "1: DOWN"
	t_check "link down: $a has no carrier" test "$(cat /sys/class/net/$a/carrier 2>/dev/null || echo 0)" != 1
	dropped=$(awk '/^ether_dropped/ { print $2 }' $FWSIM_DBG/mlx5_ib_rs.rdma.0/stats)
	if ip netns exec nd1 ping -c 2 -W 2 10.77.0.1 >/dev/null 2>&1; then
		t_fail "link down: ping from nd1 to 10.77.0.1 gets no reply"
	else
		t_ok "link down: ping from nd1 to 10.77.0.1 gets no reply"
	fi
	t_check "link down: the segment dropped nd1's frames to $a (debugfs ether_dropped)" \
		test "$(awk '/^ether_dropped/ { print $2 }' $FWSIM_DBG/mlx5_ib_rs.rdma.0/stats)" -gt "$dropped"

	# Up again: ACTIVE with IB_EVENT_PORT_ACTIVE (9); traffic resumes.
	nd_events mlx5_0 /tmp/nd-ev-up 9
	t_check "ip link set $a up" ip link set $a up
	rc=0
	wait $nd_ev_pid || rc=$?
	sed 's/^/    events| /' /tmp/nd-ev-up
	t_check "link up: IB_EVENT_PORT_ACTIVE on mlx5_0 port 1" \
		sh -c "test $rc = 0 && grep -q '^event .* 9 port 1\$' /tmp/nd-ev-up"
	t_check "link up: mlx5_0 port 1 state 4: ACTIVE" nd_wait_state mlx5_0 "4: ACTIVE"
	t_check "link up: ping -c 3 10.77.0.2 works again" ping -c 3 -W 5 10.77.0.2

	# MTU: within 68..9978 (PMTU max_mtu 10000 less 22); the RoCE port's active MTU follows.
	t_check "ip link set $a mtu 4200" ip link set $a mtu 4200
	t_check "nd1: ip link set $b mtu 4200" ip netns exec nd1 ip link set $b mtu 4200
	t_check "MTU 4200: mlx5_0 port 1 active_mtu 4096 (5)" \
		sh -c "ibv_devinfo -d mlx5_0 | grep -q 'active_mtu:[[:space:]]*4096 (5)'"
	t_check "MTU 4200: ping -s 4000 across unfragmented" ping -c 2 -W 5 -s 4000 10.77.0.2
	if ip link set $a mtu 9979 2>/dev/null; then
		t_fail "ip link set $a mtu 9979 refused (max_mtu 9978)"
	else
		t_ok "ip link set $a mtu 9979 refused (max_mtu 9978)"
	fi
	t_check "ip link set $a mtu 1500" ip link set $a mtu 1500
	t_check "MTU 1500: mlx5_0 port 1 active_mtu 1024 (3)" \
		sh -c "ibv_devinfo -d mlx5_0 | grep -q 'active_mtu:[[:space:]]*1024 (3)'"

	# Unload with addresses configured, both interfaces up, one in another namespace.
	unload_ours
	t_check "$a gone after rmmod" test ! -e /sys/class/net/$a
	if ip netns exec nd1 ip link show $b >/dev/null 2>&1; then
		t_fail "$b gone from nd1 after rmmod"
	else
		t_ok "$b gone from nd1 after rmmod"
	fi
	t_check "ip netns del nd1" ip netns del nd1
	rm -f /tmp/nd-send /tmp/nd-recv /tmp/nd-hold
}

[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode netdev
