# SPDX-License-Identifier: GPL-2.0
# IPoIB (core/ipoib.rs, Documentation/ipoib.md). VM mode `ipoib` (tools/vm.sh ipoib) runs
# these suites alone; `make check` runs vm_ipoib in check2 on the fabric vm_cm_ib leaves.
#  - vm_ipoib: two simulated InfiniBand functions (sim=ib,ib mad_qps=1, ib_core_rs ipoib=1)
#    under the embedded SM: each port has an ib interface of type infiniband whose 20-byte
#    address carries the port's GID and whose MTU is the datagram MTU of the port's active
#    MTU; one interface moved into a network namespace, IPv4 on both, the broadcast group
#    joined (carrier on), ping -c 10 each way across the switch: the interfaces' packet
#    counters and the port's PortXmitPkts/PortRcvPkts (perfquery) grew by at least the
#    pings, each side's ARP entry holds the peer's 20-byte address; down and up again: the
#    carrier off, then on (joined again), ping; unloading with the interfaces up and
#    addressed (one in the namespace) removes them.
#  - vm_ipoib_opensm: the same under opensm (sm=0), which made the broadcast group itself
#    (Q_Key 0x0b1b, MTU 2048: the interfaces take 2044 once joined); then opensm restarted with
#    new LIDs: the interfaces join again (carrier back on) and ping by the new LIDs.
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"

# ipoib_gid_bytes DEV: DEV's port 1 GID 0 as `ip link` prints an address's bytes.
ipoib_gid_bytes() {
	tr -d : </sys/class/infiniband/$1/ports/1/gids/0 | sed 's/../&:/g; s/:$//'
}

# ipoib_if DEV: the interface whose address carries DEV's port 1 GID.
ipoib_if() {
	local g f
	g=$(ipoib_gid_bytes $1)
	for f in /sys/class/net/ib*; do
		[ -e "$f/address" ] || continue
		case "$(cat $f/address)" in *"$g") echo "${f##*/}"; return 0 ;; esac
	done
	return 1
}

# ipoib_stat [NETNS] IF COUNTER: a counter of /sys/class/net/IF/statistics.
ipoib_stat() {
	if [ $# = 3 ]; then
		ip netns exec "$1" cat "/sys/class/net/$2/statistics/$3"
	else
		cat "/sys/class/net/$1/statistics/$2"
	fi
}

# ipoib_wait_carrier [NETNS] IF: waits (at most 20 s) for IF's carrier (the broadcast join).
ipoib_wait_carrier() {
	local i=0 ns=
	[ $# = 2 ] && ns="ip netns exec $1" && shift
	while [ $i -lt 200 ]; do
		[ "$($ns cat /sys/class/net/$1/carrier 2>/dev/null)" = 1 ] && return 0
		nap 0.1
		i=$((i + 1))
	done
	return 1
}

# ipoib_load: the fabric with IPoIB interfaces (cm_ib_load's modules, ib_core_rs ipoib=1).
ipoib_load() {
	RDMARS_CORE_PARAMS=ipoib=1 cm_ib_load sim=ib,ib mad_qps=1 "$@"
}

# ipoib_run TAG [MTU]: the interfaces, their addresses and MTU; a ping each way through a
# namespace; MTU: the interfaces' once the broadcast group is joined (when it is smaller than
# theirs, upstream ipoib_mcast_join_finish()).
ipoib_run() {
	local t=$1 a b aa ba mtu max want tx0 rx0 brx0 btx0 l0
	a=$(ipoib_if mlx5_0)
	b=$(ipoib_if mlx5_1)
	echo "    $t: mlx5_0 $a, mlx5_1 $b"
	t_check "$t: mlx5_0 and mlx5_1 each have an interface with their port GID" \
		test -n "$a" -a -n "$b"
	if [ -z "$a" ] || [ -z "$b" ]; then
		ip -d link
		return
	fi
	ip -d link show $a >/tmp/ipoib-link
	cat /tmp/ipoib-link
	aa=$(cat /sys/class/net/$a/address)
	ba=$(cat /sys/class/net/$b/address)
	t_check "$t: $a is link/infiniband with its address and the IPv4 broadcast address" \
		grep -q "link/infiniband $aa brd 00:ff:ff:ff:ff:12:40:1b:ff:ff:00:00:00:00:00:00:ff:ff:ff:ff" /tmp/ipoib-link
	t_check "$t: $a's address is 20 bytes, the GID part mlx5_0's port GID" \
		test "$(echo $aa | tr : ' ' | wc -w) $(echo $aa | cut -c13-)" = "20 $(ipoib_gid_bytes mlx5_0)"
	t_check "$t: $a is of type 32 (ARPHRD_INFINIBAND)" test "$(cat /sys/class/net/$a/type)" = 32
	# The port's active MTU less the IPoIB header, at most the interface's largest (what the
	# driver's UD QP takes, less the header).
	mtu=$(ibv_devinfo -d mlx5_0 | awk '/active_mtu/ { print $2; exit }')
	max=$(sed -n 's/.* maxmtu \([0-9]*\).*/\1/p' /tmp/ipoib-link)
	want=$((mtu - 4))
	[ -n "$max" ] && [ "$max" -lt $want ] && want=$max
	t_check "$t: $a MTU $want (the port's active MTU $mtu less the IPoIB header; maxmtu $max)" \
		test "$(cat /sys/class/net/$a/mtu)" = $want
	t_check "$t: $a is under mlx5_0's parent device" \
		test "$(readlink -f /sys/class/net/$a/device)" = "$(readlink -f /sys/class/infiniband/mlx5_0/device)"

	t_check "$t: ip netns add ib1" ip netns add ib1
	t_check "$t: ip link set $b netns ib1" ip link set $b netns ib1
	t_check "$t: $b is in ib1" ip netns exec ib1 ip link show $b
	t_check "$t: ip addr add 10.88.0.1/24 dev $a" ip addr add 10.88.0.1/24 dev $a
	t_check "$t: ip link set $a up" ip link set $a up
	t_check "$t: ib1: ip addr add 10.88.0.2/24 dev $b" ip netns exec ib1 ip addr add 10.88.0.2/24 dev $b
	t_check "$t: ib1: ip link set $b up" ip netns exec ib1 ip link set $b up
	t_check "$t: $a carrier on (broadcast group joined)" ipoib_wait_carrier $a
	t_check "$t: $b carrier on in ib1 (broadcast group joined)" ipoib_wait_carrier ib1 $b
	[ -n "${2:-}" ] && want=$2
	t_check "$t: $a MTU $want once the broadcast group is joined" \
		test "$(cat /sys/class/net/$a/mtu)" = $want

	l0=$(cm_ib_lid mlx5_0)
	mw_counters ipoib-0 $l0
	tx0=$(ipoib_stat $a tx_packets)
	rx0=$(ipoib_stat $a rx_packets)
	btx0=$(ipoib_stat ib1 $b tx_packets)
	brx0=$(ipoib_stat ib1 $b rx_packets)
	ipoib_ping "$t"
	mw_counters ipoib-1 $l0
	echo "    $t: $a tx $tx0 -> $(ipoib_stat $a tx_packets), rx $rx0 -> $(ipoib_stat $a rx_packets); $b tx $btx0 -> $(ipoib_stat ib1 $b tx_packets), rx $brx0 -> $(ipoib_stat ib1 $b rx_packets)"
	# 10 requests and 10 replies each way.
	t_check "$t: $a tx_packets grew by >= 20" test $(($(ipoib_stat $a tx_packets) - tx0)) -ge 20
	t_check "$t: $a rx_packets grew by >= 20" test $(($(ipoib_stat $a rx_packets) - rx0)) -ge 20
	t_check "$t: $b tx_packets grew by >= 20" test $(($(ipoib_stat ib1 $b tx_packets) - btx0)) -ge 20
	t_check "$t: $b rx_packets grew by >= 20" test $(($(ipoib_stat ib1 $b rx_packets) - brx0)) -ge 20
	local xp0 rp0 xp1 rp1
	read -r _ _ xp0 rp0 </tmp/mw-pcv-ipoib-0
	read -r _ _ xp1 rp1 </tmp/mw-pcv-ipoib-1
	echo "    $t: mlx5_0 port 1 PortXmitPkts $xp0 -> $xp1, PortRcvPkts $rp0 -> $rp1"
	t_check "$t: mlx5_0 PortXmitPkts grew by >= 20 (the pings crossed the fabric)" \
		test $((xp1 - xp0)) -ge 20
	t_check "$t: mlx5_0 PortRcvPkts grew by >= 20" test $((rp1 - rp0)) -ge 20
	ip neigh show dev $a >/tmp/ipoib-neigh-a
	ip netns exec ib1 ip neigh show dev $b >/tmp/ipoib-neigh-b
	cat /tmp/ipoib-neigh-a /tmp/ipoib-neigh-b
	t_check "$t: $a's ARP entry for 10.88.0.2 holds $b's 20-byte address" \
		grep -q "^10.88.0.2 .*lladdr $ba " /tmp/ipoib-neigh-a
	t_check "$t: $b's ARP entry for 10.88.0.1 holds $a's 20-byte address" \
		grep -q "^10.88.0.1 .*lladdr $aa " /tmp/ipoib-neigh-b
	# Down (the group left, the paths forgotten) and up again: joined again, a path asked
	# again.
	t_check "$t: ip link set $a down" ip link set $a down
	t_check "$t: $a carrier off once down" test "$(cat /sys/class/net/$a/carrier 2>/dev/null || echo 0)" != 1
	t_check "$t: ip link set $a up" ip link set $a up
	t_check "$t: $a carrier on again (broadcast group joined again)" ipoib_wait_carrier $a
	t_check "$t: ping -c 3 10.88.0.2 after $a went down and up" ping -c 3 -i 0.2 -W 5 10.88.0.2
	ip link show $a
}

# ipoib_gone: after the modules went with the interfaces up (one in ib1): no interface
# left in either namespace; the namespace goes.
ipoib_gone() {
	ip netns exec ib1 ip -o link >/tmp/ipoib-left-ns
	ip -o link >/tmp/ipoib-left
	t_check "no infiniband interface left in ib1" ipoib_not grep -q infiniband /tmp/ipoib-left-ns
	t_check "no infiniband interface left" ipoib_not grep -q infiniband /tmp/ipoib-left
	ip netns del ib1 2>/dev/null
}

# ipoib_not CMD...: CMD fails.
ipoib_not() {
	! "$@"
}

# vm_ipoib: ipoib_run with the embedded SM (the interfaces create the broadcast group).
ipoib_suite() {
	fabric_take ib ipoib_load
	t_check "mlx5_0 port 1 ACTIVE (embedded SM)" mw_wait_active mlx5_0
	t_check "mlx5_1 port 1 ACTIVE (embedded SM)" mw_wait_active mlx5_1
	ipoib_run embedded
	unload_ours
	ipoib_gone
}

# ipoib_ping TAG: ping -c 10 each way between mlx5_0's interface and mlx5_1's in ib1.
ipoib_ping() {
	t_check "$1: ping -c 10 10.88.0.2 (ib1)" ping -c 10 -i 0.2 -W 5 10.88.0.2
	t_check "$1: ping -c 10 10.88.0.1 from ib1" ip netns exec ib1 ping -c 10 -i 0.2 -W 5 10.88.0.1
}

# ipoib_new_lids: opensm restarted with new LIDs for both ports (a guid2lid file, as
# vm_mad_opensm): LID_CHANGE and CLIENT_REREGISTER end the SA's memberships; the interfaces
# join the broadcast group again and forget their paths, so a ping goes by the new LIDs.
ipoib_new_lids() {
	local a n0 n1
	a=$(ipoib_if mlx5_0)
	n0=$(($(mw_lid mlx5_0) + 16))
	n1=$(($(mw_lid mlx5_1) + 16))
	mw_kill_opensm
	printf '%s 0x%04x 0x%04x\n\n%s 0x%04x 0x%04x\n\n' "$(mw_pguid mlx5_0)" $n0 $n0 \
		"$(mw_pguid mlx5_1)" $n1 $n1 >/var/cache/opensm/guid2lid
	mw_opensm
	t_check "new LIDs: mlx5_0 port 1 LID $n0" mw_wait_lid mlx5_0 $n0
	t_check "new LIDs: mlx5_1 port 1 LID $n1" mw_wait_lid mlx5_1 $n1
	nap 1
	t_check "new LIDs: $a carrier on (broadcast group joined again)" ipoib_wait_carrier $a
	t_check "new LIDs: ib1's interface carrier on" \
		ipoib_wait_carrier ib1 "$(ip netns exec ib1 ls /sys/class/net | grep '^ib')"
	ipoib_ping "new LIDs ($n0, $n1)"
}

# vm_ipoib_opensm: ipoib_run under opensm, whose broadcast group (MTU 2048) the interfaces
# join; then opensm with new LIDs.
ipoib_opensm_suite() {
	ipoib_load sm=0
	mw_opensm_fresh
	ipoib_run opensm 2044
	ipoib_new_lids
	# opensm may log "osm_vendor_send: ERR 5430 ... Attr 0x35 ... failed" (then "ERR 4C04"):
	# when the SA client resends a PathRecord query (same TID) before opensm's first answer
	# has completed, umad refuses the second answer to the same destination with EINVAL, as
	# upstream's is_duplicate() does; the first answer reaches the client. Those lines do not
	# count.
	mw_opensm_down "osm_vendor_send"
	ipoib_gone
}

FABRIC_TAKERS="$FABRIC_TAKERS ipoib_suite=ib"

if [ "${RDMARS_SOURCED:-}" != 1 ]; then
	# ib_core_rs's IPoIB KUnit suites only at its first load; none of mlx5_ib_rs's.
	touch /tmp/kunit-ran.mlx5_ib_rs
	RDMARS_KUNIT_GLOB='ib_core_rs_ipoib*'
	run_mode ipoib
fi
