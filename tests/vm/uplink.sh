# SPDX-License-Identifier: GPL-2.0
# A simulated Ethernet fabric's uplink (mlx5_ib_rs uplink=IF: rust/uplink.rs,
# mlx5/simdev/ether.rs); VM mode `uplink` (tools/vm.sh uplink) runs it alone.
#  - vm_uplink: a veth pair stands for the wire: veth0 is the uplink, veth1 in the network
#    namespace up1 stands for a host outside the VM. With sim=eth uplink=veth0, veth0 is
#    promiscuous; the function's interface pings 10.38.0.2 in up1 (ARP resolved through the
#    uplink: up1 learns the function's MAC), up1 pings back, a TCP transfer of 512 KiB into up1
#    arrives intact; unloading leaves promiscuous mode and releases veth0 (it can be deleted);
#    uplink= naming no interface, or without an Ethernet function, fails the load.
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"

# ul_promisc IF: IF's promiscuity count (ip -d link).
ul_promisc() {
	ip -d link show "$1" | sed -n 's/.* promiscuity \([0-9]*\).*/\1/p'
}

uplink_suite() {
	local a mac rc srv neigh
	t_check "modprobe veth" modprobe veth
	t_check "ip link add veth0/veth1" ip link add veth0 type veth peer name veth1
	t_check "ip netns add up1" ip netns add up1
	t_check "ip link set veth1 netns up1" ip link set veth1 netns up1
	t_check "up1: ip addr add 10.38.0.2/24 dev veth1" ip netns exec up1 ip addr add 10.38.0.2/24 dev veth1
	ip netns exec up1 ip link set lo up
	t_check "up1: ip link set veth1 up" ip netns exec up1 ip link set veth1 up
	t_check "ip link set veth0 up" ip link set veth0 up
	t_check "veth0 promiscuity 0 before the uplink" test "$(ul_promisc veth0)" = 0

	load_ours sim=eth uplink=veth0
	t_check "veth0 promiscuous while it is the uplink" test "$(ul_promisc veth0)" = 1
	a=$(ls /sys/class/infiniband/mlx5_0/device/net/ 2>/dev/null)
	echo "interface of mlx5_0: $a"
	t_check "mlx5_0 has an interface" test -n "$a"
	if [ -z "$a" ]; then
		unload_ours
		ip link del veth0
		ip netns del up1
		return
	fi
	mac=$(cat /sys/class/net/$a/address)
	t_check "ip addr add 10.38.0.1/24 dev $a" ip addr add 10.38.0.1/24 dev $a
	t_check "ip link set $a up" ip link set $a up
	t_check "ping -c 3 10.38.0.2 (up1, behind the uplink) from $a" ping -c 3 -W 5 10.38.0.2
	neigh=$(ip netns exec up1 /usr/sbin/ip neigh show dev veth1)
	echo "up1 neighbours: $neigh"
	t_check "up1 resolved 10.38.0.1 to $a's MAC $mac over the uplink" \
		sh -c "echo '$neigh' | grep -q '^10.38.0.1 .*$mac'"
	t_check "ping -c 3 10.38.0.1 from up1" ip netns exec up1 ping -c 3 -W 5 10.38.0.1

	# A TCP transfer of 512 KiB into up1 (as vm_netdev: busybox nc, the receiver's input
	# held open by a FIFO).
	dd if=/dev/urandom of=/tmp/ul-send bs=1024 count=512 2>/dev/null
	rm -f /tmp/ul-recv /tmp/ul-hold
	mkfifo /tmp/ul-hold
	ip netns exec up1 timeout 120 nc -l -p 5001 </tmp/ul-hold >/tmp/ul-recv 2>/dev/null &
	srv=$!
	exec 9>/tmp/ul-hold
	sleep 1
	rc=0
	timeout 120 nc 10.38.0.2 5001 </tmp/ul-send >/dev/null || rc=$?
	wait $srv
	exec 9>&-
	t_check "nc to 10.38.0.2:5001 exits 0" test $rc = 0
	t_check "TCP: 524288 bytes arrive intact in up1" \
		sh -c "test \"\$(wc -c </tmp/ul-recv)\" = 524288 && cmp /tmp/ul-send /tmp/ul-recv"
	echo "veth1 rx $(ip netns exec up1 cat /sys/class/net/veth1/statistics/rx_packets) packets;" \
		"$a rx $(cat /sys/class/net/$a/statistics/rx_packets) packets"

	unload_ours
	t_check "veth0 promiscuity 0 after unload" test "$(ul_promisc veth0)" = 0
	t_check "veth0 released: ip link del veth0 returns" timeout 30 ip link del veth0
	t_check "ip netns del up1" ip netns del up1

	# Bad uplinks fail the load and leave nothing behind.
	load_mlx5_core
	t_check "insmod ib_core_rs" insmod $RDMARS_MODS/ib_core_rs.ko
	if insmod $RDMARS_MODS/mlx5_ib_rs.ko sim=eth uplink=nosuchif0 2>/tmp/ul-err; then
		t_fail "uplink=nosuchif0 fails the load"
		rmmod mlx5_ib_rs
	else
		t_ok "uplink=nosuchif0 fails the load ($(cat /tmp/ul-err))"
	fi
	if insmod $RDMARS_MODS/mlx5_ib_rs.ko sim=ib uplink=lo 2>/tmp/ul-err; then
		t_fail "uplink= without an Ethernet function fails the load"
		rmmod mlx5_ib_rs
	else
		t_ok "uplink= without an Ethernet function fails the load ($(cat /tmp/ul-err))"
	fi
	t_check "lo promiscuity 0" test "$(ul_promisc lo)" = 0
	t_check "rmmod ib_core_rs" rmmod ib_core_rs
	t_check "modprobe -r mlx5_core" modprobe -r mlx5_core
	rm -f /tmp/ul-send /tmp/ul-recv /tmp/ul-hold /tmp/ul-err
}

[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode uplink
