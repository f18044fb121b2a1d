# SPDX-License-Identifier: GPL-2.0
# Connection management (issue 37). VM mode `cm` (tools/vm.sh cm KBUILD LOG); its suites also
# run in check.
#   vm_cm_ucma: /dev/infiniband/rdma_cm on two simulated RoCE functions (sim=eth,eth, their
#     interfaces 10.66.0.1/24 and 10.66.0.2/24): tests/userspace/ucma_test.c (the raw ABI's
#     errnos; bind, port allocation, reuseaddr, address and route resolution with librdmacm
#     44), with -c: the connection calls EOPNOTSUPP (the IB CM is not done); with -r: the
#     driver unloaded under a listening and a resolved id, each gets DEVICE_REMOVAL.
#   vm_cm_ucma_rxe: the same program on upstream rdma_ucm over rxe (veth pair 10.77.0.1/24,
#     10.77.0.2/24), its check lines compared with ours.
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
	rg_wait_gid mlx5_0 0000:0000:0000:0000:0000:ffff:0a42:0001 &&
		rg_wait_gid mlx5_1 0000:0000:0000:0000:0000:ffff:0a42:0002 || return 1
	# The v2 entries follow the v1 ones.
	sleep 1
	echo "$a $b"
}

# cm_rping NAME SERVER_ADDR CLIENT_ADDR: unmodified rping, 20 pings of verified data.
cm_rping() {
	local s rc=0 rs=0
	timeout 90 rping -s -a $2 -p 7174 -C 20 -v >/tmp/rping-s 2>&1 &
	s=$!
	sleep 1
	timeout 90 rping -c -a $2 -I $3 -p 7174 -C 20 -v >/tmp/rping-c 2>&1 || rc=$?
	wait $s || rs=$?
	sed 's/^/    rping-c| /' /tmp/rping-c | tail -5
	sed 's/^/    rping-s| /' /tmp/rping-s | tail -5
	t_check "$1: client exit 0 ($rc), server exit 0 ($rs)" test $rc = 0 -a $rs = 0
	t_check "$1: 20 pings of verified data" sh -c '[ "$(grep -c "ping data: rdma-ping-" /tmp/rping-c)" = 20 ]'
}

cm_ucma_suite() {
	local nd
	ip link set lo up
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
		cm_rping "rping mlx5_0 -> mlx5_1" $CM_DST $CM_SRC
		cm_rping "rping on mlx5_0" $CM_SRC $CM_SRC
		# An id left open at rmmod: the file pins the module; closed, everything goes.
		sleep 30 </dev/infiniband/rdma_cm &
		local p=$!
		sleep 0.2
		t_check "rmmod ib_core_rs with rdma_cm open: EBUSY" sh -c '! rmmod ib_core_rs 2>/dev/null'
		kill $p
		wait $p 2>/dev/null
		# The device goes under a listening and a resolved id: each gets DEVICE_REMOVAL.
		/rdma-rs/ucma_test -r $CM_SRC >/tmp/cm-rm.out 2>&1 &
		p=$!
		local i=0 rc=0
		while [ $i -lt 100 ] && ! grep -q "^I waiting" /tmp/cm-rm.out; do
			sleep 0.1
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

cm_ucma_rxe_suite() {
	t_check "modprobe rdma_ucm rdma_rxe veth" modprobe -a rdma_ucm ib_uverbs rdma_rxe veth
	t_check "veth0/veth1 with 10.77.0.1/24, 10.77.0.2/24" sh -c \
		'/usr/sbin/ip link add veth0 type veth peer name veth1 &&
		 /usr/sbin/ip link set veth0 up && /usr/sbin/ip link set veth1 up &&
		 /usr/sbin/ip addr add 10.77.0.1/24 dev veth0 && /usr/sbin/ip addr add 10.77.0.2/24 dev veth1'
	t_check "rdma link add rxe0 (veth0), rxe1 (veth1)" sh -c \
		'rdma link add rxe0 type rxe netdev veth0 && rdma link add rxe1 type rxe netdev veth1'
	sleep 1
	sysctl -qw net.ipv4.conf.all.accept_local=1
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
	sysctl -qw net.ipv4.conf.all.accept_local=0
	rdma link delete rxe1
	rdma link delete rxe0
	ip link del veth0
	# ib_uverbs_support holds ib_core after ib_uverbs goes; retry for up to 60 s, then show
	# what is left.
	local i=0
	until modprobe -r -a rdma_ucm rdma_rxe ib_uverbs ib_uverbs_support rdma_cm iw_cm ib_cm ib_core \
		veth 2>/dev/null ||
		! grep -q "^ib_core " /proc/modules || [ $i -ge 120 ]; do
		sleep 0.5
		i=$((i + 1))
	done
	echo "upstream modules unloaded after $i retries"
	grep -E "^(ib_|rdma_|iw_)" /proc/modules | sed 's/^/    left| /'
}

[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode cm
