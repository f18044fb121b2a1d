# SPDX-License-Identifier: GPL-2.0
# RoCE GID tables from netdevs (core/roce_gid.rs, upstream roce_gid_mgmt.c): the core's KUnit
# suite on the loopback netdev, then the simulated Ethernet functions' interfaces and their
# addresses compared with upstream rdma_rxe on a veth given the same addresses.
# VM mode `roce_gid` (tools/vm.sh roce_gid KBUILD LOG); its suites also run in check.
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"

# vm_roce_gid_core: ib_core_rs_test's `ib_core_rs_roce_gid` suite binds a mock RoCE device to
# `lo`; give lo its addresses first (127.0.0.1 and, on up, ::1).
roce_gid_core_suite() {
	t_check "ip link set lo up" ip link set lo up
	ip -4 addr show dev lo | grep -q 127.0.0.1 || ip addr add 127.0.0.1/8 dev lo
	echo "+ ip addr show dev lo"
	ip addr show dev lo | sed 's/^/    ip| /'
	# Only this suite of the modules' KUnit suites (the others belong to check and kunit).
	RDMARS_KUNIT_GLOB='ib_core_rs_roce_gid.*'
	load_ours
	load_core_tests
	unset RDMARS_KUNIT_GLOB
	unload_core_tests
	unload_ours
}

# rg_gid_table DEV N: the first N entries of DEV port 1 as `index gid type ndev`, one a line;
# `-` where sysfs answers an error (upstream: EINVAL for an empty entry's attributes).
# The shell's read, no process per file.
rg_gid_table() {
	local i=0 g t n d=/sys/class/infiniband/$1/ports/1
	while [ $i -lt "$2" ]; do
		g= t= n=
		read -r g 2>/dev/null <$d/gids/$i || g=-
		read -r t 2>/dev/null <$d/gid_attrs/types/$i
		read -r n 2>/dev/null <$d/gid_attrs/ndevs/$i
		t=${t// /_}
		echo "$i ${g:--} ${t:--} ${n:--}"
		i=$((i + 1))
	done
}

# rg_wait_gid DEV GID: waits (at most ~10 s) until DEV port 1 lists GID (sysfs form).
rg_wait_gid() {
	local i=0
	while [ $i -lt 100 ]; do
		grep -qx "$2" /sys/class/infiniband/$1/ports/1/gids/* 2>/dev/null && return 0
		nap
		i=$((i + 1))
	done
	return 1
}

# rg_wait_no_gid DEV GID: waits (at most ~10 s) until DEV port 1 no longer lists GID.
rg_wait_no_gid() {
	local i=0
	while [ $i -lt 100 ]; do
		grep -qx "$2" /sys/class/infiniband/$1/ports/1/gids/* 2>/dev/null || return 0
		nap
		i=$((i + 1))
	done
	return 1
}

# rg_wait_entry DEV GID TYPE: waits (at most ~10 s) until DEV port 1 lists GID (sysfs form)
# with gid_attrs type TYPE ("IB/RoCE v1", "RoCE v2"): the core adds an address's v1 and v2
# entries one after the other.
rg_wait_entry() {
	local i=0
	while [ $i -lt 100 ]; do
		[ -n "$(rg_index_of "$@")" ] && return 0
		nap
		i=$((i + 1))
	done
	return 1
}

# rg_wait_rts N PROG: waits (at most ~20 s) until rdma res lists N QPs of PROG in RTS (a
# ping-pong's QPs connected: its messages flow from there on).
rg_wait_rts() {
	local i=0
	while [ $i -lt 200 ]; do
		[ "$(rdma res show qp 2>/dev/null | grep -c " state RTS .* comm $2")" -ge "$1" ] && return 0
		nap
		i=$((i + 1))
	done
	return 1
}

# The addresses both stacks get, and their GIDs as sysfs prints them.
RG_V4=10.66.0.1
RG_V4_GID=0000:0000:0000:0000:0000:ffff:0a42:0001
RG_V6=fd00:66::1
RG_V6_GID=fd00:0066:0000:0000:0000:0000:0000:0001

# rg_events DEV OUT: tests/userspace/port_events on DEV for one event (20 s), ready.
rg_events() {
	local i=0
	/rdma-rs/port_events "$1" 1 20 >"$2" 2>&1 &
	rg_ev_pid=$!
	while [ $i -lt 100 ] && ! grep -q '^ready' "$2"; do
		nap
		i=$((i + 1))
	done
}

# rg_v2_of TABLE: the RoCE v2 entries of a rg_gid_table listing, renumbered, without the
# netdev name (`gid type`), for comparing with rxe, which has RoCE v2 GIDs only.
rg_v2_of() {
	awk '$3 == "RoCE_v2" { print $2, $3 }' "$1"
}

# vm_roce_gid: the simulated Ethernet functions' GID tables built by the core from their
# interfaces' addresses (upstream roce_gid_mgmt.c), against upstream rdma_rxe on a veth with
# the same MAC and addresses.
roce_gid_suite() {
	local a b mac rc i
	# ibv_rc_pingpong exchanges its addresses over TCP on 127.0.0.1.
	ip link set lo up
	load_ours sim=eth,eth
	a=$(ls /sys/class/infiniband/mlx5_0/device/net/ 2>/dev/null)
	b=$(ls /sys/class/infiniband/mlx5_1/device/net/ 2>/dev/null)
	t_check "mlx5_0 and mlx5_1 have their interfaces ($a, $b)" test -n "$a" -a -n "$b"
	if [ -z "$a" ] || [ -z "$b" ]; then
		unload_ours
		return
	fi
	mac=$(cat /sys/class/net/$a/address)
	ip link set $a up
	ip link set $b up
	echo "+ mlx5_0 port 1 before any address"
	rg_gid_table mlx5_0 8 | tee /tmp/rg-ours-0 | sed 's/^/    gids| /'
	# upstream: the default GIDs at 0 (RoCE v1) and 1 (RoCE v2), from the interface's MAC.
	t_check "default GIDs: 0 IB/RoCE v1 and 1 RoCE v2 on $a, 2 empty" sh -c \
		"grep -q '^0 fe80:.* IB/RoCE_v1 $a\$' /tmp/rg-ours-0 &&
		 grep -q '^1 fe80:.* RoCE_v2 $a\$' /tmp/rg-ours-0 &&
		 grep -q '^2 0000:0000:0000:0000:0000:0000:0000:0000 - -\$' /tmp/rg-ours-0"
	echo "+ rdma link"
	rdma link | sed 's/^/    rdma| /'
	t_check "rdma link: mlx5_0/1 netdev $a" sh -c "rdma link show mlx5_0/1 | grep -Eq 'netdev $a( |\$)'"
	t_check "rdma link: mlx5_1/1 netdev $b" sh -c "rdma link show mlx5_1/1 | grep -Eq 'netdev $b( |\$)'"

	# An address added: its GIDs, and IB_EVENT_GID_CHANGE (18) on an async event reader.
	rg_events mlx5_0 /tmp/rg-ev-add
	t_check "ip addr add $RG_V4/24 dev $a" ip addr add $RG_V4/24 dev $a
	rc=0
	wait $rg_ev_pid || rc=$?
	sed 's/^/    events| /' /tmp/rg-ev-add
	t_check "address added: IB_EVENT_GID_CHANGE on mlx5_0 port 1" \
		sh -c "test $rc = 0 && grep -q '^event .* 18 port 1\$' /tmp/rg-ev-add"
	t_check "ip -6 addr add $RG_V6/64 dev $a nodad" ip -6 addr add $RG_V6/64 dev $a nodad
	t_check "mlx5_0 lists the IPv4-mapped GID" rg_wait_gid mlx5_0 $RG_V4_GID
	t_check "mlx5_0 lists the IPv6 GID" rg_wait_gid mlx5_0 $RG_V6_GID
	# Wait for the v2 entry of the IPv6 address too (each is one add_gid).
	rg_wait_entry mlx5_0 $RG_V6_GID "RoCE v2"
	echo "+ mlx5_0 port 1 with $RG_V4 and $RG_V6"
	rg_gid_table mlx5_0 8 | tee /tmp/rg-ours | sed 's/^/    gids| /'
	t_check "IPv4 GIDs at 2 (IB/RoCE v1) and 3 (RoCE v2), IPv6 at 4 and 5, 6 empty" sh -c \
		"grep -qx '2 $RG_V4_GID IB/RoCE_v1 $a' /tmp/rg-ours &&
		 grep -qx '3 $RG_V4_GID RoCE_v2 $a' /tmp/rg-ours &&
		 grep -qx '4 $RG_V6_GID IB/RoCE_v1 $a' /tmp/rg-ours &&
		 grep -qx '5 $RG_V6_GID RoCE_v2 $a' /tmp/rg-ours &&
		 grep -qx '6 0000:0000:0000:0000:0000:0000:0000:0000 - -' /tmp/rg-ours"
	ibv_devinfo -v -d mlx5_0 >/tmp/rg-devinfo 2>&1
	grep GID /tmp/rg-devinfo | sed 's/^/    devinfo| /'
	t_check "ibv_devinfo -v: GID[3] the IPv4-mapped GID, v2" \
		sh -c "grep -q 'GID\[  3\]:.*::ffff:10.66.0.1, RoCE v2' /tmp/rg-devinfo"
	# libibverbs prints a RoCE v1 GID in the raw form.
	t_check "ibv_devinfo -v: GID[4] the IPv6 GID, v1" sh -c \
		"grep -q 'GID\[  4\]:.*fd00:0066:0000:0000:0000:0000:0000:0001, RoCE v1' /tmp/rg-devinfo"
	# The GID table methods: netdev_ifindex and the types (IBV_GID_TYPE_ROCE_V1 1, _V2 2).
	i=$(cat /sys/class/net/$a/ifindex)
	/rdma-rs/gid_table mlx5_0 >/tmp/rg-gt 2>&1
	sed 's/^/    gid_table| /' /tmp/rg-gt
	t_check "QUERY_GID_TABLE: 6 entries, v1/v2 alternating, netdev_ifindex $i" sh -c \
		"test \"\$(grep -v '^entry' /tmp/rg-gt | tr '\n' ' ')\" = \
		 '0 1 1 $i 1 1 2 $i 2 1 1 $i 3 1 2 $i 4 1 1 $i 5 1 2 $i '"
	t_check "QUERY_GID_ENTRY: the same 6 entries" sh -c \
		"test \"\$(sed -n 's/^entry //p' /tmp/rg-gt | tr '\n' ' ')\" = \
		 '0 1 1 $i 1 1 2 $i 2 1 1 $i 3 1 2 $i 4 1 1 $i 5 1 2 $i '"

	# RC traffic between the functions on the IPv4 RoCE v2 GIDs (index 3 on both); their
	# interfaces share this namespace and subnet, so the AVs' ARP needs accept_local (see
	# roce_ip_suite).
	sysctl -qw net.ipv4.conf.all.accept_local=1
	t_check "ip addr add 10.66.0.2/24 dev $b" ip addr add 10.66.0.2/24 dev $b
	t_check "mlx5_1 lists 10.66.0.2's GID" \
		rg_wait_gid mlx5_1 0000:0000:0000:0000:0000:ffff:0a42:0002
	rg_wait_entry mlx5_1 0000:0000:0000:0000:0000:ffff:0a42:0002 "RoCE v2"
	timeout 60 ibv_rc_pingpong -d mlx5_1 -g 3 -n 100 >/tmp/rg-pp-srv 2>&1 &
	i=$!
	# ibv_rc_pingpong's default port.
	tr_wait_listen 18515
	rc=0
	timeout 60 ibv_rc_pingpong -d mlx5_0 -g 3 -n 100 127.0.0.1 >/tmp/rg-pp-cli 2>&1 || rc=$?
	wait $i
	sed 's/^/    pp| /' /tmp/rg-pp-cli /tmp/rg-pp-srv
	t_check "ibv_rc_pingpong -g 3 (IPv4 RoCE v2) mlx5_0 -> mlx5_1" \
		sh -c "test $rc = 0 && grep -q '100 iters' /tmp/rg-pp-cli"

	# Removed addresses: their GIDs go, with a GID change event.
	rg_events mlx5_0 /tmp/rg-ev-del
	t_check "ip addr del $RG_V4/24 dev $a" ip addr del $RG_V4/24 dev $a
	rc=0
	wait $rg_ev_pid || rc=$?
	t_check "address removed: IB_EVENT_GID_CHANGE on mlx5_0 port 1" \
		sh -c "test $rc = 0 && grep -q '^event .* 18 port 1\$' /tmp/rg-ev-del"
	t_check "ip -6 addr del $RG_V6/64 dev $a" ip -6 addr del $RG_V6/64 dev $a
	t_check "mlx5_0 no longer lists the IPv4-mapped GID" rg_wait_no_gid mlx5_0 $RG_V4_GID
	t_check "mlx5_0 no longer lists the IPv6 GID" rg_wait_no_gid mlx5_0 $RG_V6_GID
	rg_gid_table mlx5_0 8 >/tmp/rg-ours-del
	t_check "the table is the default GIDs again" cmp /tmp/rg-ours-0 /tmp/rg-ours-del

	# Put the addresses back and unload with them configured: nothing may leak.
	ip addr add $RG_V4/24 dev $a
	ip -6 addr add $RG_V6/64 dev $a nodad
	rg_wait_gid mlx5_0 $RG_V6_GID
	sysctl -qw net.ipv4.conf.all.accept_local=0
	unload_ours

	# Upstream: rdma_rxe on veth0 with the same MAC and addresses (rxe has RoCE v2 only).
	t_check "modprobe ib_uverbs rdma_rxe veth" modprobe -a ib_uverbs rdma_rxe veth
	t_check "ip link add veth0/veth1" ip link add veth0 type veth peer name veth1
	t_check "ip link set veth0 address $mac" ip link set veth0 address $mac
	ip link set veth0 up
	ip link set veth1 up
	t_check "rdma link add rxe0 type rxe netdev veth0" rdma link add rxe0 type rxe netdev veth0
	rg_events rxe0 /tmp/rg-ev-rxe
	ip addr add $RG_V4/24 dev veth0
	rc=0
	wait $rg_ev_pid || rc=$?
	sed 's/^/    rxe-events| /' /tmp/rg-ev-rxe
	ip -6 addr add $RG_V6/64 dev veth0 nodad
	rg_wait_entry rxe0 $RG_V6_GID "RoCE v2"
	echo "+ rxe0 port 1 with $RG_V4 and $RG_V6"
	rg_gid_table rxe0 8 | tee /tmp/rg-rxe | sed 's/^/    gids| /'
	echo "+ rdma link (rxe)"
	rdma link | sed 's/^/    rdma| /'
	rg_v2_of /tmp/rg-ours >/tmp/rg-ours-v2
	rg_v2_of /tmp/rg-rxe >/tmp/rg-rxe-v2
	t_check "the RoCE v2 GIDs in the same order as rxe0's (default, IPv4, IPv6)" \
		sh -c "test -s /tmp/rg-rxe-v2 && cmp /tmp/rg-ours-v2 /tmp/rg-rxe-v2"
	t_check "rxe raised IB_EVENT_GID_CHANGE for the address too" \
		sh -c "test $rc = 0 && grep -q '^event .* 18 port 1\$' /tmp/rg-ev-rxe"
	t_check "gid_attrs/ndevs: the netdev name on both (rxe: veth0)" \
		sh -c "awk '\$3 != \"-\" { print \$4 }' /tmp/rg-rxe | sort -u | grep -qx veth0"
	t_check "gid_attrs of an empty entry: an error on both" \
		sh -c "grep -q ' - -\$' /tmp/rg-rxe && grep -q ' - -\$' /tmp/rg-ours"
	t_check "rdma link: rxe0/1 netdev veth0" sh -c "rdma link show rxe0/1 | grep -q 'netdev veth0'"
	i=$(cat /sys/class/net/veth0/ifindex)
	/rdma-rs/gid_table rxe0 >/tmp/rg-gt-rxe 2>&1
	sed 's/^/    gid_table| /' /tmp/rg-gt-rxe
	t_check "rxe QUERY_GID_TABLE: 3 RoCE v2 entries with netdev_ifindex $i (as ours)" sh -c \
		"test \"\$(grep -v '^entry' /tmp/rg-gt-rxe | tr '\n' ' ')\" = '0 1 2 $i 1 1 2 $i 2 1 2 $i '"
	t_check "rdma link delete rxe0" rdma link delete rxe0
	t_check "ip link del veth0" ip link del veth0
	modprobe -r rdma_rxe
	modprobe -r ib_uverbs
	modprobe -r ib_core
	modprobe -r veth
}

# rg_index_of DEV GID TYPE: the index of GID (sysfs form) of type TYPE on DEV port 1.
# One grep finds the entries holding GID (a process for each entry would take seconds under
# TCG: a RoCE port has 256), in the same order as the glob.
rg_index_of() {
	local f i t
	for f in $(grep -lx "$2" /sys/class/infiniband/$1/ports/1/gids/* 2>/dev/null); do
		i=${f##*/}
		t=
		read -r t 2>/dev/null </sys/class/infiniband/$1/ports/1/gid_attrs/types/$i
		if [ "$t" = "$3" ]; then
			echo $i
			return
		fi
	done
}

# rg_ll_of DEV: the link-local default GID of DEV's port 1 (index 0), which sysfs prints as
# an IPv6 address.
rg_ll_of() {
	cat /sys/class/infiniband/$1/ports/1/gids/0
}

# ri_wait_retry_exc OUT...: waits (at most ~60 s) until one of the pingpong outputs OUT reports
# the transport retry counter exceeded (IBV_WC_RETRY_EXC_ERR).
ri_wait_retry_exc() {
	local i=0
	while [ $i -lt 600 ]; do
		grep -q 'transport retry counter exceeded' "$@" 2>/dev/null && return 0
		nap
		i=$((i + 1))
	done
	return 1
}

# vm_roce_ip: traffic by the IP GIDs (index 3: the IPv4 address's RoCE v2 GID, 5: the IPv6
# one's, in upstream's order) between the two functions and with both ends on one function,
# through unmodified libibverbs examples and perftest; a peer whose address goes away is a
# retry-exceeded completion error, as on hardware (the packets to a GID nobody owns are
# dropped); user AHs get their destination MACs through the route and the neighbour table.
roce_ip_suite() {
	local a b s c rc ma mb llb
	ip link set lo up
	load_ours sim=eth,eth
	a=$(ls /sys/class/infiniband/mlx5_0/device/net/ 2>/dev/null)
	b=$(ls /sys/class/infiniband/mlx5_1/device/net/ 2>/dev/null)
	t_check "mlx5_0 and mlx5_1 have their interfaces ($a, $b)" test -n "$a" -a -n "$b"
	if [ -z "$a" ] || [ -z "$b" ]; then
		unload_ours
		return
	fi
	ip link set $a up
	ip link set $b up
	# Both functions' interfaces are in this namespace on one subnet: an ARP request from one
	# to the other carries a local source address, which IPv4 takes only with accept_local
	# (fib_validate_source()), as on a host with two ports cabled to one switch. RoCE v2
	# IPv4 AVs between them resolve by that ARP (IPv6 neighbour discovery needs nothing).
	t_check "sysctl net.ipv4.conf.all.accept_local=1" sysctl -qw net.ipv4.conf.all.accept_local=1
	# Not under `sh -c`: the initramfs's sh would run busybox's ip, which has no `nodad`.
	t_check "ip addr add $RG_V4/24 dev $a" ip addr add $RG_V4/24 dev $a
	t_check "ip -6 addr add $RG_V6/64 dev $a nodad" ip -6 addr add $RG_V6/64 dev $a nodad
	t_check "ip addr add 10.66.0.2/24 dev $b" ip addr add 10.66.0.2/24 dev $b
	t_check "ip -6 addr add fd00:66::2/64 dev $b nodad" ip -6 addr add fd00:66::2/64 dev $b nodad
	t_check "mlx5_0 lists the IPv6 GID" rg_wait_gid mlx5_0 $RG_V6_GID
	t_check "mlx5_1 lists the IPv6 GID" \
		rg_wait_gid mlx5_1 fd00:0066:0000:0000:0000:0000:0000:0002
	# The v2 entries (each address's comes right after its v1 one), as the pairs take them.
	rg_wait_entry mlx5_0 $RG_V4_GID "RoCE v2"
	rg_wait_entry mlx5_0 $RG_V6_GID "RoCE v2"
	rg_wait_entry mlx5_1 0000:0000:0000:0000:0000:ffff:0a42:0002 "RoCE v2"
	rg_wait_entry mlx5_1 fd00:0066:0000:0000:0000:0000:0000:0002 "RoCE v2"
	rg_gid_table mlx5_1 6 | sed 's/^/    gids| /'

	# Between the two functions (ibv_ud_pingpong: messages within the 1024-byte path MTU of
	# a 1500-byte interface).
	tr_pair "ibv_ud_pingpong -g 3 (IPv4 RoCE v2) mlx5_0 -> mlx5_1" ibv_ud_pingpong \
		"-d mlx5_1 -g 3 -s 512 -n 100" "-d mlx5_0 -g 3 -s 512 -n 100"
	tr_pair "ibv_ud_pingpong -g 5 (IPv6 RoCE v2) mlx5_0 -> mlx5_1" ibv_ud_pingpong \
		"-d mlx5_1 -g 5 -s 512 -n 100" "-d mlx5_0 -g 5 -s 512 -n 100"
	tr_pair "ibv_rc_pingpong -g 5 (IPv6 RoCE v2) mlx5_0 -> mlx5_1" ibv_rc_pingpong \
		"-d mlx5_1 -g 5 -n 100" "-d mlx5_0 -g 5 -n 100"
	tr_pair "ib_send_lat -x 3 mlx5_0 -> mlx5_1" ib_send_lat \
		"-d mlx5_1 -x 3 -F -n 200" "-d mlx5_0 -x 3 -F -n 200" "$PERF_WANT"
	tr_pair "ib_write_bw -x 3 mlx5_0 -> mlx5_1" ib_write_bw \
		"-d mlx5_1 -x 3 -F -n 200" "-d mlx5_0 -x 3 -F -n 200" "$PERF_WANT"
	# Both ends on one function.
	tr_pair "ibv_rc_pingpong -g 3, both ends on mlx5_0" ibv_rc_pingpong \
		"-d mlx5_0 -g 3 -n 100" "-d mlx5_0 -g 3 -n 100"
	tr_pair "ibv_ud_pingpong -g 3, both ends on mlx5_0" ibv_ud_pingpong \
		"-d mlx5_0 -g 3 -s 512 -n 100" "-d mlx5_0 -g 3 -s 512 -n 100"
	tr_pair "ib_write_bw -x 3, both ends on mlx5_0" ib_write_bw \
		"-d mlx5_0 -x 3 -F -n 200" "-d mlx5_0 -x 3 -F -n 200" "$PERF_WANT"

	# RoCE v1 and v2 by the link-local default GIDs (index 0 v1, 1 v2): a v1 AV takes its
	# destination MAC from the GID (upstream rdma_get_ll_mac()), a v2 one resolves it by IPv6
	# neighbour discovery (upstream ib_resolve_unicast_gid_dmac()).
	tr_pair "ibv_rc_pingpong -g 0 (RoCE v1) mlx5_0 -> mlx5_1" ibv_rc_pingpong \
		"-d mlx5_1 -g 0 -n 100" "-d mlx5_0 -g 0 -n 100"
	tr_pair "ibv_rc_pingpong -g 1 (link-local RoCE v2) mlx5_0 -> mlx5_1" ibv_rc_pingpong \
		"-d mlx5_1 -g 1 -n 100" "-d mlx5_0 -g 1 -n 100"
	# A RoCE v1 requester and a RoCE v2 responder: a ConnectX QP takes only the framing of
	# its own GID entry's version, so nothing is acknowledged and the requester exceeds its
	# retries, as on hardware.
	_tr_port=$((_tr_port + 1))
	timeout 120 ibv_rc_pingpong -d mlx5_1 -g 1 -n 10 -p $_tr_port >/tmp/ri-s 2>&1 &
	s=$!
	tr_wait_listen $_tr_port
	timeout 120 ibv_rc_pingpong -d mlx5_0 -g 0 -n 10 -p $_tr_port 127.0.0.1 >/tmp/ri-c 2>&1 &
	c=$!
	rc=0
	ri_wait_retry_exc /tmp/ri-c || rc=1
	kill $s $c 2>/dev/null
	wait $s $c
	sed 's/^/    server| /' /tmp/ri-s | tail -n 4
	sed 's/^/    client| /' /tmp/ri-c | tail -n 4
	t_check "ibv_rc_pingpong -g 0 (v1) to a -g 1 (v2) peer: transport retry counter exceeded" \
		sh -c "test $rc = 0 && ! grep -q ' iters in ' /tmp/ri-s /tmp/ri-c"

	# The server's address removed while the two ping-pong: its GIDs leave mlx5_1's table
	# (SET_ROCE_ADDRESS clears them), the packets to 10.66.0.2 are dropped and a requester
	# ends in IBV_WC_RETRY_EXC_ERR, as on hardware.
	_tr_port=$((_tr_port + 1))
	timeout 180 ibv_rc_pingpong -d mlx5_1 -g 3 -n 100000000 -p $_tr_port \
		>/tmp/ri-s 2>&1 &
	s=$!
	tr_wait_listen $_tr_port
	timeout 180 ibv_rc_pingpong -d mlx5_0 -g 3 -n 100000000 -p $_tr_port 127.0.0.1 \
		>/tmp/ri-c 2>&1 &
	c=$!
	rg_wait_rts 2 ibv_rc_pingpong
	t_check "ip addr del 10.66.0.2/24 dev $b during the ping-pong" \
		ip addr del 10.66.0.2/24 dev $b
	rc=0
	ri_wait_retry_exc /tmp/ri-s /tmp/ri-c || rc=1
	kill $s $c 2>/dev/null
	wait $s $c
	sed 's/^/    server| /' /tmp/ri-s | tail -n 6
	sed 's/^/    client| /' /tmp/ri-c | tail -n 6
	t_check "the peer's address removed: transport retry counter exceeded, no success" \
		sh -c "test $rc = 0 && ! grep -q ' iters in ' /tmp/ri-s /tmp/ri-c"

	# Address resolution (upstream ib_resolve_eth_dmac(), rdma_addr_find_l2_eth_by_grh()):
	# a user AH's destination MAC from the route and the neighbour table, in the AV libmlx5
	# builds from the create_ah response.
	ma=$(cat /sys/class/net/$a/address)
	mb=$(cat /sys/class/net/$b/address)
	# No IPv6 route to fd77::/16 (IPv4 has none either, but a lookup bound to an interface
	# takes an IPv4 destination without a route as on the link: ip_route_output_key()).
	/rdma-rs/ah_resolve mlx5_0 5 fd77::9 >/tmp/ri-ah 2>&1
	sed 's/^/    ah| /' /tmp/ri-ah
	t_check "AH to fd77::9 (no route): ENETUNREACH" grep -qx 'errno 101' /tmp/ri-ah
	/rdma-rs/ah_resolve mlx5_0 3 10.66.0.77 >/tmp/ri-ah 2>&1
	sed 's/^/    ah| /' /tmp/ri-ah
	t_check "AH to 10.66.0.77 (on the link, no answer to ARP): ETIMEDOUT" \
		grep -qx 'errno 110' /tmp/ri-ah
	ip neigh show dev $a | sed 's/^/    neigh| /'
	ip neigh show 10.66.0.77 dev $a >/tmp/ri-neigh 2>&1
	t_check "ip neigh: the AH's ARP entry for 10.66.0.77 on $a" test -s /tmp/ri-neigh
	# Link-local destinations: from the v1 GID the MAC is the GID's EUI-64, no neighbour
	# entry; from the v2 GID by IPv6 neighbour discovery over the segment.
	llb=$(rg_ll_of mlx5_1)
	ip -6 neigh flush dev $a
	/rdma-rs/ah_resolve mlx5_0 0 $llb >/tmp/ri-ah 2>&1
	sed 's/^/    ah| /' /tmp/ri-ah
	t_check "AH to $llb from the RoCE v1 GID: $b's MAC $mb" grep -qx "dmac $mb" /tmp/ri-ah
	t_check "ip neigh: no entry for $llb after the v1 AH" \
		sh -c "! ip -6 neigh show $llb dev $a | grep -q lladdr"
	/rdma-rs/ah_resolve mlx5_0 1 $llb >/tmp/ri-ah 2>&1
	sed 's/^/    ah| /' /tmp/ri-ah
	t_check "AH to $llb from the RoCE v2 GID: $b's MAC $mb" grep -qx "dmac $mb" /tmp/ri-ah
	t_check "ip neigh: $llb lladdr $mb on $a, resolved by the v2 AH" \
		sh -c "ip -6 neigh show $llb dev $a | grep -q 'lladdr $mb'"
	# upstream rdma_check_ah_attr(): a RoCE AV needs a GRH; rdma_get_gid_attr(): an empty
	# source entry is ENODATA.
	/rdma-rs/ah_resolve mlx5_0 3 10.66.0.77 nogrh >/tmp/ri-ah 2>&1
	t_check "AH without a GRH on RoCE: EINVAL" grep -qx 'errno 22' /tmp/ri-ah
	/rdma-rs/ah_resolve mlx5_0 40 10.66.0.77 >/tmp/ri-ah 2>&1
	t_check "AH from the empty GID entry 40: ENODATA" grep -qx 'errno 61' /tmp/ri-ah
	/rdma-rs/ah_resolve mlx5_0 5 $RG_V6 >/tmp/ri-ah 2>&1
	sed 's/^/    ah| /' /tmp/ri-ah
	t_check "AH to the own $RG_V6 (a local route): the interface's MAC $ma" \
		grep -qx "dmac $ma" /tmp/ri-ah
	# A neighbour across the segment: $b in a namespace of its own with 10.66.0.2.
	t_check "ip netns add ri-b" ip netns add ri-b
	t_check "ip link set $b netns ri-b" ip link set $b netns ri-b
	t_check "ri-b: ip link set $b up" ip netns exec ri-b ip link set $b up
	t_check "ri-b: ip addr add 10.66.0.2/24 dev $b" \
		ip netns exec ri-b ip addr add 10.66.0.2/24 dev $b
	/rdma-rs/ah_resolve mlx5_0 3 10.66.0.2 >/tmp/ri-ah 2>&1
	sed 's/^/    ah| /' /tmp/ri-ah
	ip neigh show dev $a | sed 's/^/    neigh| /'
	t_check "AH to 10.66.0.2 in ri-b: $b's MAC $mb (ARP over the segment)" \
		grep -qx "dmac $mb" /tmp/ri-ah
	ip neigh show 10.66.0.2 dev $a >/tmp/ri-neigh 2>&1
	t_check "ip neigh: 10.66.0.2 lladdr $mb on $a, resolved by the AH" \
		grep -q "lladdr $mb" /tmp/ri-neigh
	ip netns exec ri-b ip link set $b netns 1
	ip netns del ri-b

	# Addresses configured and an RC QP alive on the IPv4 RoCE v2 GID when its function goes
	# (unbinding it, as a PCI remove does): ibv_rc_pingpong between the functions, still
	# sending; the remove completes, the simulator keeps nothing of the function, and the
	# leak check after the suite finds nothing.
	ip link set $b up
	ip addr add 10.66.0.2/24 dev $b
	if t_check "mlx5_1 lists 10.66.0.2's GID again" \
		rg_wait_gid mlx5_1 0000:0000:0000:0000:0000:ffff:0a42:0002; then
		local f=mlx5_ib_rs.rdma.0 drv
		rg_wait_entry mlx5_1 0000:0000:0000:0000:0000:ffff:0a42:0002 "RoCE v2"
		ibv_rc_pingpong -d mlx5_1 -g 3 -n 100000000 -p 18555 >/tmp/ri-s 2>&1 &
		s=$!
		tr_wait_listen 18555
		ibv_rc_pingpong -d mlx5_0 -g 3 -n 100000000 -p 18555 127.0.0.1 >/tmp/ri-c 2>&1 &
		c=$!
		rg_wait_rts 2 ibv_rc_pingpong
		drv=$(fwsim_driver_of $f)
		t_check "ibv_rc_pingpong -g 3 running between the functions" kill -0 $c
		t_check "unbind $f with addresses configured and an RC QP alive" \
			timeout 60 sh -c "echo $f >/sys/bus/auxiliary/drivers/$drv/unbind"
		t_check "$f: the simulator holds nothing after the remove" fwsim_resources_zero $f
		kill $s $c 2>/dev/null
		wait $s $c 2>/dev/null
		sed 's/^/    client| /' /tmp/ri-c | tail -n 3
		echo $f >/sys/bus/auxiliary/drivers/$drv/bind
		t_check "bind $f again" test -n "$(fwsim_driver_of $f)"
	fi
	sysctl -qw net.ipv4.conf.all.accept_local=0
	unload_ours

}

# vm_roce_vlan: VLAN GIDs. A VLAN device on a function's interface gives GIDs for its
# addresses whose netdev is the VLAN device (upstream roce_gid_mgmt.c), programmed with the
# VLAN id (mlx5_ib_add_gid(): SET_ROCE_ADDRESS, fwsim debugfs `roce`); traffic over them
# between two functions; AVs resolved by ARP over VLAN 10 across the segment (802.1Q frames
# through the switch); rxe on a veth with a VLAN device compared.
roce_vlan_suite() {
	local a b ma mb vi vj
	ip link set lo up
	load_ours sim=eth,eth
	a=$(ls /sys/class/infiniband/mlx5_0/device/net/ 2>/dev/null)
	b=$(ls /sys/class/infiniband/mlx5_1/device/net/ 2>/dev/null)
	t_check "mlx5_0 and mlx5_1 have their interfaces ($a, $b)" test -n "$a" -a -n "$b"
	if [ -z "$a" ] || [ -z "$b" ]; then
		unload_ours
		return
	fi
	ma=$(cat /sys/class/net/$a/address)
	mb=$(cat /sys/class/net/$b/address)
	ip link set $a up
	ip link set $b up
	# See roce_ip_suite: both interfaces in this namespace, one subnet.
	sysctl -qw net.ipv4.conf.all.accept_local=1
	ip addr add $RG_V4/24 dev $a
	t_check "mlx5_0 lists $RG_V4's GID" rg_wait_gid mlx5_0 $RG_V4_GID
	# VLAN GIDs (upstream roce_gid_mgmt.c: the addresses of a VLAN device on the port's
	# netdev, with the VLAN device as the GID's netdev; mlx5_ib_add_gid(): SET_ROCE_ADDRESS
	# with the VLAN id).
	t_check "modprobe 8021q" modprobe 8021q
	t_check "ip link add link $a name va10 type vlan id 10" \
		ip link add link $a name va10 type vlan id 10
	ip link set va10 up
	t_check "ip addr add 10.67.0.1/24 dev va10" ip addr add 10.67.0.1/24 dev va10
	t_check "ip link add link $b name vb10 type vlan id 10" \
		ip link add link $b name vb10 type vlan id 10
	ip link set vb10 up
	t_check "ip addr add 10.67.0.2/24 dev vb10" ip addr add 10.67.0.2/24 dev vb10
	t_check "mlx5_0 lists the VLAN address's GID" \
		rg_wait_gid mlx5_0 0000:0000:0000:0000:0000:ffff:0a43:0001
	t_check "mlx5_1 lists the VLAN address's GID" \
		rg_wait_gid mlx5_1 0000:0000:0000:0000:0000:ffff:0a43:0002
	rg_wait_entry mlx5_0 0000:0000:0000:0000:0000:ffff:0a43:0001 "RoCE v2"
	rg_wait_entry mlx5_1 0000:0000:0000:0000:0000:ffff:0a43:0002 "RoCE v2"
	rg_gid_table mlx5_0 10 | sed 's/^/    gids| /'
	vi=$(rg_index_of mlx5_0 0000:0000:0000:0000:0000:ffff:0a43:0001 "RoCE v2")
	vj=$(rg_index_of mlx5_1 0000:0000:0000:0000:0000:ffff:0a43:0002 "RoCE v2")
	t_check "the VLAN GIDs' netdev is the VLAN device (mlx5_0 GID $vi: va10)" \
		sh -c "test -n '$vi' && test \"\$(cat /sys/class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/$vi)\" = va10"
	sed 's/^/    roce| /' $FWSIM_DBG/mlx5_ib_rs.rdma.0/roce
	t_check "SET_ROCE_ADDRESS of mlx5_0 GID $vi carried VLAN 10 and $a's MAC" \
		sh -c "grep -q '^port1 $vi 0000:0000:0000:0000:0000:ffff:0a43:0001 v2 ipv4 $ma vlan 10\$' $FWSIM_DBG/mlx5_ib_rs.rdma.0/roce"
	t_check "the untagged IPv4 GID carried no VLAN" \
		sh -c "grep -q '^port1 3 0000:0000:0000:0000:0000:ffff:0a42:0001 v2 ipv4 $ma vlan -\$' $FWSIM_DBG/mlx5_ib_rs.rdma.0/roce"
	tr_pair "ibv_rc_pingpong over the VLAN GIDs (-g $vi / $vj) mlx5_0 -> mlx5_1" ibv_rc_pingpong \
		"-d mlx5_1 -g $vj -n 100" "-d mlx5_0 -g $vi -n 100"
	t_check "ip link del vb10" ip link del vb10
	t_check "mlx5_1 no longer lists the VLAN GID" \
		rg_wait_no_gid mlx5_1 0000:0000:0000:0000:0000:ffff:0a43:0002
	t_check "its SET_ROCE_ADDRESS entries are cleared" \
		sh -c "! grep -q '0a43:0002' $FWSIM_DBG/mlx5_ib_rs.rdma.1/roce"

	# A neighbour across the segment: $b in a namespace of its own.
	t_check "ip netns add rv-b" ip netns add rv-b
	t_check "ip link set $b netns rv-b" ip link set $b netns rv-b
	ip netns exec rv-b ip link set $b up
	# ARP over VLAN 10 across the segment: the 802.1Q-tagged frames pass the switch.
	t_check "rv-b: ip link add link $b name vb10 type vlan id 10" \
		ip netns exec rv-b ip link add link $b name vb10 type vlan id 10
	ip netns exec rv-b ip link set vb10 up
	t_check "rv-b: ip addr add 10.67.0.2/24 dev vb10" \
		ip netns exec rv-b ip addr add 10.67.0.2/24 dev vb10
	/rdma-rs/ah_resolve mlx5_0 $vi 10.67.0.2 >/tmp/ri-ah 2>&1
	sed 's/^/    ah| /' /tmp/ri-ah
	t_check "AH from the VLAN GID to 10.67.0.2 in rv-b: $b's MAC (ARP on VLAN 10)" \
		grep -qx "dmac $mb" /tmp/ri-ah
	ip neigh show 10.67.0.2 dev va10 >/tmp/ri-neigh 2>&1
	t_check "ip neigh: 10.67.0.2 lladdr $mb on va10" grep -q "lladdr $mb" /tmp/ri-neigh
	ip netns exec rv-b ip link del vb10
	ip link del va10
	ip netns exec rv-b ip link set $b netns 1
	ip netns del rv-b
	sysctl -qw net.ipv4.conf.all.accept_local=0
	unload_ours

	# Upstream: rdma_rxe on veth0 with a VLAN device on it: the VLAN address's RoCE v2 GID,
	# its netdev the VLAN device, as ours above.
	t_check "modprobe ib_uverbs rdma_rxe veth" modprobe -a ib_uverbs rdma_rxe veth
	ip link add veth0 type veth peer name veth1
	ip link set veth0 up
	ip link set veth1 up
	t_check "rdma link add rxe0 type rxe netdev veth0" rdma link add rxe0 type rxe netdev veth0
	t_check "rxe: ip link add link veth0 name vr10 type vlan id 10" \
		ip link add link veth0 name vr10 type vlan id 10
	ip link set vr10 up
	ip addr add 10.67.0.1/24 dev vr10
	t_check "rxe0 lists the VLAN address's GID" \
		rg_wait_gid rxe0 0000:0000:0000:0000:0000:ffff:0a43:0001
	rg_gid_table rxe0 6 | sed 's/^/    rxe-gids| /'
	vi=$(rg_index_of rxe0 0000:0000:0000:0000:0000:ffff:0a43:0001 "RoCE v2")
	t_check "rxe: the VLAN GID's netdev is the VLAN device (GID $vi: vr10)" \
		sh -c "test -n '$vi' && test \"\$(cat /sys/class/infiniband/rxe0/ports/1/gid_attrs/ndevs/$vi)\" = vr10"
	rdma link delete rxe0
	ip link del vr10
	ip link del veth0
	modprobe -r rdma_rxe
	modprobe -r ib_uverbs
	modprobe -r ib_core
	modprobe -r veth
	modprobe -r 8021q
}

[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode roce_gid
