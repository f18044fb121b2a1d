# SPDX-License-Identifier: GPL-2.0
# The rust/ abstractions as user space sees them through ib_core_rs's own users:
# the infiniband_verbs class and uverbs' char device numbers (rust/class.rs,
# rust/chrdev.rs), the NETLINK_RDMA socket answering `rdma system` and an empty
# `rdma dev` (rust/netlink.rs), and the clean refusal to load next to the
# upstream ib_core. Sourced by check.sh after lib.sh.

abs_suite() {
	t_check "insmod ib_core_rs" insmod $RDMARS_MODS/ib_core_rs.ko
	local v
	v=$(cat /sys/class/infiniband_verbs/abi_version 2>&1)
	echo "abi_version: $v"
	if [ "$v" = 6 ]; then t_ok "/sys/class/infiniband_verbs/abi_version is 6"; else t_fail "/sys/class/infiniband_verbs/abi_version is 6" "got '$v'"; fi
	grep infiniband_verbs /proc/devices
	if grep -q '^231 infiniband_verbs$' /proc/devices && [ "$(grep -c ' infiniband_verbs$' /proc/devices)" = 2 ]; then
		t_ok "char majors 231 and a dynamic one are infiniband_verbs"
	else
		t_fail "char majors 231 and a dynamic one are infiniband_verbs"
	fi
	local out rc
	out=$(rdma system 2>&1); rc=$?
	echo "rdma system: $out (exit $rc)"
	if [ $rc = 0 ] && echo "$out" | grep -q 'netns shared' && echo "$out" | grep -q 'copy-on-fork on'; then
		t_ok "rdma system: netns shared, copy-on-fork on"
	else
		t_fail "rdma system: netns shared, copy-on-fork on" "exit $rc"
	fi
	out=$(rdma dev 2>&1); rc=$?
	echo "rdma dev: '$out' (exit $rc)"
	if [ $rc = 0 ] && [ -z "$out" ]; then t_ok "rdma dev: no devices, exit 0"; else t_fail "rdma dev: no devices, exit 0" "exit $rc"; fi
	out=$(rdma -j dev show 2>&1); rc=$?
	echo "rdma -j dev show: '$out' (exit $rc)"
	if [ $rc = 0 ]; then t_ok "rdma -j dev show: exit 0"; else t_fail "rdma -j dev show: exit 0" "exit $rc"; fi
	t_check "rmmod ib_core_rs" rmmod ib_core_rs
	if [ -e /sys/class/infiniband_verbs ]; then t_fail "infiniband_verbs class gone after rmmod"; else t_ok "infiniband_verbs class gone after rmmod"; fi
	if grep -q infiniband_verbs /proc/devices; then t_fail "char regions gone after rmmod"; else t_ok "char regions gone after rmmod"; fi
}

# Loading ib_core_rs next to the upstream ib_core fails cleanly, with a message.
abs_conflict_suite() {
	t_check "modprobe ib_core (upstream)" modprobe ib_core
	dmesg -c >/dev/null 2>&1
	local rc=0
	insmod $RDMARS_MODS/ib_core_rs.ko 2>/tmp/insmod-err || rc=$?
	cat /tmp/insmod-err
	if [ $rc != 0 ]; then t_ok "insmod ib_core_rs fails while ib_core is loaded"; else t_fail "insmod ib_core_rs fails while ib_core is loaded"; fi
	dmesg | grep ib_core_rs
	if dmesg | grep -q 'ib_core_rs: NETLINK_RDMA .*upstream ib_core loaded'; then
		t_ok "the failure names the NETLINK_RDMA conflict"
	else
		t_fail "the failure names the NETLINK_RDMA conflict"
	fi
	if lsmod | grep -q '^ib_core_rs '; then t_fail "ib_core_rs not loaded"; else t_ok "ib_core_rs not loaded"; fi
	if [ -e /sys/class/infiniband_verbs ] || grep -q infiniband_verbs /proc/devices; then
		t_fail "nothing of ib_core_rs left registered"
	else
		t_ok "nothing of ib_core_rs left registered"
	fi
	t_check "modprobe -r ib_core" modprobe -r ib_core
	# And it loads again once upstream is gone.
	t_check "insmod ib_core_rs after ib_core is gone" insmod $RDMARS_MODS/ib_core_rs.ko
	t_check "rmmod ib_core_rs" rmmod ib_core_rs
}
