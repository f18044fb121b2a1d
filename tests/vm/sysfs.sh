# SPDX-License-Identifier: GPL-2.0
# The RDMA core's user-visible surfaces with mock devices registered (tests/kunit/
# ib_core_rs_mockdev.rs): /sys/class/infiniband, `rdma dev`, `rdma link`, `rdma res`.
# Sourced by check.sh after lib.sh.

# t_eq DESC ACTUAL EXPECTED
t_eq() {
	if [ "$2" = "$3" ]; then t_ok "$1"; else t_fail "$1" "got '$2', want '$3'"; fi
}

# t_grep DESC PATTERN TEXT
t_grep() {
	if printf '%s\n' "$3" | grep -Eq -- "$2"; then t_ok "$1"; else t_fail "$1" "no match for '$2'"; fi
}

sysfs_suite() {
	t_check "insmod ib_core_rs" insmod $RDMARS_MODS/ib_core_rs.ko
	t_check "insmod ib_core_rs_mockdev" insmod $RDMARS_MODS/ib_core_rs_mockdev.ko
	local d=/sys/class/infiniband/mock_0 p=/sys/class/infiniband/mock_0/ports/1 out
	ls /sys/class/infiniband/
	ls $d $p $p/gids $p/pkeys $p/gid_attrs/types
	sysfs_snapshot $d >/tmp/sysfs-ours
	t_eq "sysfs node_type" "$(cat $d/node_type)" "1: CA"
	t_eq "sysfs node_guid" "$(cat $d/node_guid)" "0002:c903:00ab:0000"
	t_eq "sysfs sys_image_guid" "$(cat $d/sys_image_guid)" "0002:c903:00ab:1000"
	t_eq "sysfs fw_ver" "$(cat $d/fw_ver)" "1.2.3"
	t_eq "sysfs node_desc" "$(cat $d/node_desc)" "rdma-rs mock HCA"
	t_eq "sysfs mock_1 node_guid" "$(cat /sys/class/infiniband/mock_1/node_guid)" "0002:c903:00ab:0001"
	t_eq "sysfs ports/1/state" "$(cat $p/state)" "4: ACTIVE"
	t_eq "sysfs ports/1/phys_state" "$(cat $p/phys_state)" "5: LinkUp"
	t_eq "sysfs ports/1/link_layer" "$(cat $p/link_layer)" "InfiniBand"
	t_eq "sysfs ports/1/lid" "$(cat $p/lid)" "0x7"
	t_eq "sysfs ports/1/sm_lid" "$(cat $p/sm_lid)" "0x1"
	t_eq "sysfs ports/1/lid_mask_count" "$(cat $p/lid_mask_count)" "0"
	t_eq "sysfs ports/1/cap_mask" "$(cat $p/cap_mask)" "0x02510868"
	t_eq "sysfs ports/1/rate" "$(cat $p/rate)" "100 Gb/sec (4X EDR)"
	t_eq "sysfs ports/1/gids/0" "$(cat $p/gids/0)" "fe80:0000:0000:0000:0002:c903:00ab:0010"
	t_eq "sysfs ports/1/gids/1 (empty entry: zero GID)" "$(cat $p/gids/1)" "0000:0000:0000:0000:0000:0000:0000:0000"
	t_eq "sysfs ports/1/gids has 4 entries" "$(ls $p/gids | wc -l)" "4"
	t_eq "sysfs ports/1/pkeys/0" "$(cat $p/pkeys/0)" "0xffff"
	t_eq "sysfs ports/1/pkeys/1" "$(cat $p/pkeys/1)" "0x8001"
	t_eq "sysfs gid_attrs/types/0" "$(cat $p/gid_attrs/types/0)" "IB/RoCE v1"
	if cat $p/gid_attrs/types/1 2>/dev/null; then t_fail "sysfs gid_attrs/types/1 (empty) fails"; else t_ok "sysfs gid_attrs/types/1 (empty) fails"; fi
	if cat $p/gid_attrs/ndevs/0 2>/dev/null; then t_fail "sysfs gid_attrs/ndevs/0 (IB: no netdev) fails"; else t_ok "sysfs gid_attrs/ndevs/0 (IB: no netdev) fails"; fi

	out=$(rdma dev 2>&1); echo "rdma dev:"; echo "$out"
	t_grep "rdma dev: mock_0 with fw, node_guid, sys_image_guid" "mock_0: node_type ca fw 1\.2\.3 node_guid 0002:c903:00ab:0000 sys_image_guid 0002:c903:00ab:1000" "$out"
	t_grep "rdma dev: mock_1" "mock_1: node_type ca fw 1\.2\.3 node_guid 0002:c903:00ab:0001" "$out"
	out=$(rdma dev show mock_1 2>&1); echo "$out"
	t_grep "rdma dev show mock_1 (GET doit)" "mock_1: node_type ca" "$out"
	out=$(rdma link 2>&1); echo "rdma link:"; echo "$out"
	t_grep "rdma link: mock_0/1 ACTIVE LINK_UP, lid 7" "link mock_0/1 .*lid 7 .*state ACTIVE physical_state LINK_UP" "$out"
	t_grep "rdma link: mock_1/1" "link mock_1/1 .*lid 8 .*state ACTIVE" "$out"
	out=$(rdma res 2>&1); echo "rdma res:"; echo "$out"
	t_grep "rdma res: mock_0 counts" "mock_0: pd 1 cq 1 qp 1 cm_id 0 mr 1 ctx 0 srq 0" "$out"
	t_grep "rdma res: mock_1 counts" "mock_1: pd 0 cq 0 qp 0 cm_id 0 mr 0" "$out"
	out=$(rdma res show pd 2>&1); echo "$out"
	t_grep "rdma res show pd: kernel owner, 2 users" "dev mock_0 pdn 0 .*users 2 comm \\[ib_core_rs_mock" "$out"
	out=$(rdma res show cq 2>&1); echo "$out"
	t_grep "rdma res show cq: cqe 16, 2 users, owner" "dev mock_0 cqn 0 cqe 16 users 2 .*comm \\[ib_core_rs_mock" "$out"
	out=$(rdma res show qp 2>&1); echo "$out"
	t_grep "rdma res show qp: lqpn 257 RC INIT, owner" "link mock_0/- lqpn 257 .*type RC state INIT .*comm \\[ib_core_rs_mock" "$out"
	out=$(rdma res show mr 2>&1); echo "$out"
	t_grep "rdma res show mr: keys, owner" "dev mock_0 mrn 0 rkey 0x2200 lkey 0x1100 mrlen 0 comm \\[ib_core_rs_mock" "$out"

	t_check "rmmod ib_core_rs_mockdev" rmmod ib_core_rs_mockdev
	if [ -e /sys/class/infiniband/mock_0 ] || [ -e /sys/class/infiniband/mock_1 ]; then t_fail "sysfs devices gone after rmmod"; else t_ok "sysfs devices gone after rmmod"; fi
	out=$(rdma dev 2>&1)
	t_eq "rdma dev empty after rmmod" "$out" ""
	t_check "rmmod ib_core_rs" rmmod ib_core_rs
	if [ -e /sys/class/infiniband ]; then t_fail "infiniband class gone after rmmod"; else t_ok "infiniband class gone after rmmod"; fi
}
