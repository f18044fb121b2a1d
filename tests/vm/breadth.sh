#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Verbs breadth (issue 16): REREG_MR, hardware counters, device rename and
# `rdma monitor`, memory windows. Runs as its own mode (`make breadth`); vm_mw
# also runs inside check.
#  - vm_mw: tests/userspace/mw_test.c (ALLOC_MW/DEALLOC_MW errnos, type 1 and
#    type 2 binds through Debian's libmlx5, RDMA through window rkeys, local
#    and remote invalidation, bind errors) on both link layers of ours and on
#    upstream rdma_rxe, the facts compared line by line; ibv_devinfo -v's
#    max_mw.
#  - vm_rereg: tests/userspace/rereg_test.c on both link layers of ours
#    (raw write() and libibverbs' ibv_rereg_mr() through Debian's libmlx5)
#    and on upstream rdma_rxe; the errno and data-path facts compared line
#    by line (rxe 7.3 has no TRANS rereg: that part is checked on ours only,
#    against upstream mlx5_ib_rereg_user_mr()'s behaviour).
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"

BREADTH_SIM=sim=ib,eth
BREADTH_ROCE_GID=1

# The simulator holds only what the bound functions hold.
breadth_baseline() {
	local n
	for n in 0 1; do
		t_check "mlx5_ib_rs.rdma.$n holds only the kernel PD and UAR after $1" \
			fwsim_resources_probed mlx5_ib_rs.rdma.$n
	done
	t_check "rdma res shows no MR after $1" sh -c '! rdma res show mr | grep -q .'
}

# rereg_test's TRANS cases on ours ($1) kept the keys: mlx5 loads the new translation into
# the mkey by UMR WQEs (upstream umr_rereg_pas()); the old rkey's traffic is checked by R lines.
rereg_trans_kept() {
	t_check "$1: rereg TRANS keeps the lkey and rkey (UMR translation load)" \
		grep -qx "I trans_rkey_kept 1" /tmp/import.out
	t_check "$1: rereg TRANS+PD+ACCESS keeps the rkey" \
		grep -qx "I trans_pd_access_rkey_kept 1" /tmp/import.out
}

rereg_suite() {
	local d
	load_ours $BREADTH_SIM
	t_import "rereg_test mlx5_0 (IB, libibverbs)" /rdma-rs/rereg_test -d mlx5_0 -t -l
	grep '^C ' /tmp/import.out >/tmp/rereg-mlx5_0.c
	rereg_trans_kept mlx5_0
	t_import "rereg_test mlx5_1 (RoCE, raw write)" /rdma-rs/rereg_test -d mlx5_1 -g $BREADTH_ROCE_GID -t
	grep '^C ' /tmp/import.out >/tmp/rereg-mlx5_1.c
	rereg_trans_kept mlx5_1
	breadth_baseline "the rereg test"
	unload_ours
	peer_up
	t_import "rereg_test rxe0 (upstream)" /rdma-rs/rereg_test -d rxe0 -g 0
	grep '^C ' /tmp/import.out >/tmp/rereg-rxe0.c
	t_check "rxe0: TRANS rereg is EOPNOTSUPP (rxe_rereg_user_mr() supports PD and ACCESS)" \
		grep -qx "I trans 95" /tmp/import.out
	peer_down
	for d in mlx5_0 mlx5_1; do
		if [ -s /tmp/rereg-$d.c ] && diff /tmp/rereg-rxe0.c /tmp/rereg-$d.c >/tmp/rereg-diff; then
			t_ok "rereg_test: $d's $(wc -l </tmp/rereg-$d.c) facts equal rxe0's"
		else
			sed 's/^/    diff| /' /tmp/rereg-diff | head -n 40
			t_fail "rereg_test: $d's facts equal rxe0's"
		fi
	done
}

# The facts of mw_test's last run (/tmp/import.out) where mlx5 and rdma_rxe differ by
# design (Documentation/datapath.md, "Memory windows"), checked on ours ($1).
mw_mlx5_facts() {
	local f
	for f in "t1_read_past_end 10" "t2_bind_bound 6" "bind_write_without_local_write 6" \
		"bind_past_mr_end 6" "t2_send_inv_with_inv 1" "bind_without_mw_bind 0" \
		"dereg_bound_mr 0" "read_after_dereg 10"; do
		t_check "$1: mw_test I $f (mlx5's behaviour)" grep -qx "I $f" /tmp/import.out
	done
}

mw_suite() {
	local d
	load_ours $BREADTH_SIM
	t_check "mlx5_0: ibv_devinfo -v shows a non-zero max_mw" sh -c \
		"ibv_devinfo -v -d mlx5_0 | grep -Eq 'max_mw:[[:space:]]+[1-9]'"
	t_import "mw_test mlx5_0 (IB)" /rdma-rs/mw_test -d mlx5_0
	grep '^C ' /tmp/import.out >/tmp/mw-mlx5_0.c
	mw_mlx5_facts mlx5_0
	t_import "mw_test mlx5_1 (RoCE)" /rdma-rs/mw_test -d mlx5_1 -g $BREADTH_ROCE_GID
	grep '^C ' /tmp/import.out >/tmp/mw-mlx5_1.c
	mw_mlx5_facts mlx5_1
	breadth_baseline "the mw test"
	unload_ours
	peer_up
	t_import "mw_test rxe0 (upstream)" /rdma-rs/mw_test -d rxe0 -g 0
	grep '^C ' /tmp/import.out >/tmp/mw-rxe0.c
	peer_down
	for d in mlx5_0 mlx5_1; do
		if [ -s /tmp/mw-$d.c ] && diff /tmp/mw-rxe0.c /tmp/mw-$d.c >/tmp/mw-diff; then
			t_ok "mw_test: $d's $(wc -l </tmp/mw-$d.c) facts equal rxe0's"
		else
			sed 's/^/    diff| /' /tmp/mw-diff | head -n 40
			t_fail "mw_test: $d's facts equal rxe0's"
		fi
	done
}

# hw_counters of $1 port 1, "name value" lines, sorted by name.
hwc_snapshot() {
	local f
	for f in /sys/class/infiniband/$1/ports/1/hw_counters/*; do
		echo "$(basename "$f") $(cat "$f")"
	done | sort
}

# The delta of counter $3 between snapshots $1 and $2.
hwc_delta() {
	echo $(($(awk -v n="$3" '$1 == n { print $2 }' "$2") - $(awk -v n="$3" '$1 == n { print $2 }' "$1")))
}

# Every counter of snapshot $1 (but lifespan) appears with its value in the
# `rdma statistic show` output $2, on the line of link $3.
rstat_has_all() {
	local n v
	grep -q "^link $3 " "$2" || return 1
	while read -r n v; do
		[ "$n" = lifespan ] && continue
		grep -Eq " $n $v( |\$)" "$2" || { echo "    missing: $n $v"; return 1; }
	done <"$1"
}

# vm_hw_counters: upstream mlx5_ib's port Q counters (counters.c: basic_q_cnts,
# out_of_seq_q_cnts, retrans_q_cnts and roce_accl_cnts: the simulator has out_of_seq_cnt
# and retransmission_q_counters, not the other optional counter caps), from the
# simulator's Q counter set, in sysfs and `rdma statistic show`, moved by the
# traffic that ran: rereg_test's 3 accepted RDMA WRITEs and 2 RDMA READs
# (exactly), then perftest's writes, reads and atomics (at least -n each).
hw_counters_suite() {
	local d c want
	load_ours $BREADTH_SIM
	d=mlx5_0
	want="duplicate_request implied_nak_seq_err local_ack_timeout_err out_of_buffer out_of_sequence packet_seq_err rnr_nak_retry_err roce_adp_retrans roce_adp_retrans_to roce_slow_restart roce_slow_restart_cnps roce_slow_restart_trans rx_atomic_requests rx_dct_connect rx_read_requests rx_write_requests"
	t_check "$d: ports/1/hw_counters holds upstream mlx5_ib's 16 counters and lifespan" \
		test "$(ls /sys/class/infiniband/$d/ports/1/hw_counters | grep -v lifespan | tr '\n' ' ')" = "$want "
	t_check "$d: hw_counters/lifespan is 10 (upstream's default)" \
		test "$(cat /sys/class/infiniband/$d/ports/1/hw_counters/lifespan)" = 10
	hwc_snapshot $d >/tmp/hwc0
	sed 's/^/    hwc0| /' /tmp/hwc0
	t_check "$d: every counter reads 0 after load" sh -c "! awk '\$1 != \"lifespan\" && \$2 != 0' /tmp/hwc0 | grep -q ."
	t_import "rereg_test $d (counted)" /rdma-rs/rereg_test -d $d -t -l
	hwc_snapshot $d >/tmp/hwc1
	sed 's/^/    hwc1| /' /tmp/hwc1
	for c in rx_write_requests:3 rx_read_requests:2 rx_atomic_requests:0 out_of_buffer:0; do
		t_check "$d: rereg_test moved ${c%%:*} by ${c#*:}" test "$(hwc_delta /tmp/hwc0 /tmp/hwc1 ${c%%:*})" = "${c#*:}"
	done
	tr_pair "ib_write_bw -n 100 on $d" ib_write_bw "-d $d -F -n 100" "-d $d -F -n 100" "$PERF_WANT"
	tr_pair "ib_read_bw -n 100 on $d" ib_read_bw "-d $d -F -n 100" "-d $d -F -n 100" "$PERF_WANT"
	tr_pair "ib_atomic_bw -n 100 on $d" ib_atomic_bw "-d $d -F -n 100" "-d $d -F -n 100" "$PERF_WANT"
	hwc_snapshot $d >/tmp/hwc2
	sed 's/^/    hwc2| /' /tmp/hwc2
	for c in rx_write_requests rx_read_requests rx_atomic_requests; do
		echo "    $c +$(hwc_delta /tmp/hwc1 /tmp/hwc2 $c)"
		t_check "$d: perftest moved $c by at least 100" test "$(hwc_delta /tmp/hwc1 /tmp/hwc2 $c)" -ge 100
	done
	echo "+ rdma statistic show link $d/1"
	rdma statistic show link $d/1 >/tmp/rstat 2>&1
	sed 's/^/    rdma| /' /tmp/rstat
	hwc_snapshot $d >/tmp/hwc3
	t_check "rdma statistic show: $d/1 with the sysfs values" rstat_has_all /tmp/hwc3 /tmp/rstat $d/1
	t_check "mlx5_1 (RoCE) has the same counters" \
		test "$(ls /sys/class/infiniband/mlx5_1/ports/1/hw_counters | grep -v lifespan | tr '\n' ' ')" = "$want "
	breadth_baseline "the counter traffic"
	unload_ours
	peer_up
	echo "+ rdma statistic show link rxe0/1"
	rdma statistic show link rxe0/1 2>&1 | sed 's/^/    rxe| /'
	t_check "rxe0 (upstream): rdma statistic show link rxe0/1 has the same shape" \
		sh -c "rdma statistic show link rxe0/1 | grep -Eq '^link rxe0/1( [a-z_]+ [0-9]+)+ ?\$'"
	t_check "our line has that shape too" grep -Eq "^link $d/1( [a-z_]+ [0-9]+)+ ?\$" /tmp/rstat
	peer_down
}

# rdma dev set $1 name $2: "rc <status> <stderr>" with the device names masked.
rn_try() {
	local rc=0
	rdma dev set "$1" name "$2" >/tmp/rn.err 2>&1 || rc=$?
	# Upstream's extack text ("Error: Attribute failed policy validation.") is left
	# out: rdma-rs sends no extack messages (Documentation/core.md).
	echo "rc $rc $(tr '\n' ' ' </tmp/rn.err | sed -E "s/$RN_A/A/g; s/$RN_B/B/g; s/Error: [^.]*\. //")"
}

# The rename facts of device $1 (another device $2 exists), one line each, to
# stdout: renames to a new name, to the other device's name, to its own name, to
# 70 characters (nldev_policy: EINVAL), to 64 (nla_strscpy() keeps 63), and
# back; what sysfs, `rdma dev`, the uverbs node and libibverbs see.
rename_facts() {
	local a=$1 b=$2 long u
	RN_A=$a RN_B=$b
	long=$(printf 'n%.0s' $(seq 70))
	u=$(grep -lx "$a" /sys/class/infiniband_verbs/uverbs*/ibdev | head -n 1)
	u=${u%/ibdev}
	echo "new $(rn_try $a renamed0)"
	echo "sysfs_new $(test -d /sys/class/infiniband/renamed0 && echo yes) old $(test -e /sys/class/infiniband/$a && echo yes)"
	echo "rdma_dev $(rdma dev show renamed0 | grep -c 'renamed0')"
	echo "uverbs_ibdev $(cat $u/ibdev)"
	echo "ibv_devices $(ibv_devices | grep -c 'renamed0')"
	echo "ibv_devinfo $(ibv_devinfo -d renamed0 >/dev/null 2>&1 && echo ok)"
	echo "taken $(rn_try renamed0 $b)"
	echo "same $(rn_try renamed0 renamed0)"
	echo "long $(rn_try renamed0 $long)"
	echo "long_sysfs $(ls /sys/class/infiniband | grep -c '^nnn')"
	echo "name64 $(rn_try renamed0 $(printf 'n%.0s' $(seq 64)))"
	echo "name64_sysfs $(ls /sys/class/infiniband | grep -c "^$(printf 'n%.0s' $(seq 63))\$")"
	echo "back $(rn_try $(printf 'n%.0s' $(seq 63)) $a)"
	echo "back_sysfs $(test -d /sys/class/infiniband/$a && echo yes) uverbs $(cat $u/ibdev | sed "s/$a/A/")"
}

# vm_rename: `rdma dev set DEV name NEW` (nldev SET + DEV_NAME, upstream
# ib_device_rename()) on mlx5_0 and on upstream rxe0, the facts compared.
rename_suite() {
	load_ours $BREADTH_SIM
	rename_facts mlx5_0 mlx5_1 >/tmp/rn-ours
	sed 's/^/    ours| /' /tmp/rn-ours
	t_check "mlx5_0 renamed: sysfs, rdma dev, uverbs ibdev, libibverbs follow" \
		sh -c "grep -qx 'new rc 0 ' /tmp/rn-ours && grep -qx 'sysfs_new yes old ' /tmp/rn-ours && grep -qx 'uverbs_ibdev renamed0' /tmp/rn-ours && grep -qx 'ibv_devinfo ok' /tmp/rn-ours"
	t_check "mlx5_0 is back under its name: ibv_devinfo -d mlx5_0" sh -c "ibv_devinfo -d mlx5_0 >/dev/null"
	tr_pair "ibv_rc_pingpong on mlx5_0 after the renames" ibv_rc_pingpong "-d mlx5_0 -n 20" "-d mlx5_0 -n 20"
	unload_ours
	peer_up
	t_check "ip link add veth2/veth3" ip link add veth2 type veth peer name veth3
	t_check "ip link set veth2 up" ip link set veth2 up
	t_check "rdma link add rxe1" rdma link add rxe1 type rxe netdev veth2
	rename_facts rxe0 rxe1 >/tmp/rn-rxe
	sed 's/^/    rxe| /' /tmp/rn-rxe
	t_check "rdma link delete rxe1" rdma link delete rxe1
	t_check "ip link del veth2" ip link del veth2
	peer_down
	if diff /tmp/rn-rxe /tmp/rn-ours >/tmp/rn-diff; then
		t_ok "rename: mlx5_0's $(wc -l </tmp/rn-ours) facts equal rxe0's"
	else
		sed 's/^/    diff| /' /tmp/rn-diff
		t_fail "rename: mlx5_0's facts equal rxe0's"
	fi
}

# The event lines of notification log $1, device names and numbers masked,
# netdev events left out (rdma-rs has no netdevs), sorted and unique.
mon_shapes() {
	grep '^E ' "$1" | grep -v NETDEV | sed -E 's/(mlx5_|rxe|mon)[0-9]+/DEV/g; s/[0-9]+/N/g' | sort -u
}

# Starts tests/userspace/rdma_notify (what `rdma monitor` does: joins
# RDMA_NL_GROUP_NOTIFY; the VM's iproute2 6.1 has no `rdma monitor`) with its
# output in $1; waits until it has joined. Sets MON_PID.
mon_start() {
	local i=0
	/rdma-rs/rdma_notify -t 120 >"$1" 2>&1 &
	MON_PID=$!
	while ! grep -q '^I ready' "$1" && [ $i -lt 50 ]; do
		nap 0.2
		i=$((i + 1))
	done
}

mon_stop() {
	sleep 1
	kill $MON_PID 2>/dev/null
	wait $MON_PID 2>/dev/null
}

# vm_monitor: the RDMA_NL_GROUP_NOTIFY notifications (RDMA_NLDEV_CMD_MONITOR,
# upstream rdma_nl_notify_event()) while ours renames a device, then
# unregisters and registers both (rmmod/insmod mlx5_ib_rs); the same kinds of
# event from upstream rxe (rdma link add, rename, rdma link delete); the lines
# compared (netdev events apart: rxe has a netdev, ours none).
monitor_suite() {
	load_ours $BREADTH_SIM
	mon_start /tmp/mon-ours
	t_check "the notification listener joined RDMA_NL_GROUP_NOTIFY on ours" grep -q '^I ready' /tmp/mon-ours
	t_check "rdma dev set mlx5_1 name mon0" rdma dev set mlx5_1 name mon0
	t_check "rdma dev set mon0 name mlx5_1" rdma dev set mon0 name mlx5_1
	t_check "rmmod mlx5_ib_rs (unregisters mlx5_0 and mlx5_1)" rmmod mlx5_ib_rs
	t_check "insmod mlx5_ib_rs $BREADTH_SIM" insmod $RDMARS_MODS/mlx5_ib_rs.ko $BREADTH_SIM
	mon_stop
	sed 's/^/    ours| /' /tmp/mon-ours
	t_check "ours: RENAME mon0 then RENAME mlx5_1" sh -c \
		"grep '^E RENAME' /tmp/mon-ours | awk '{ print \$5 }' | tr '\n' ' ' | grep -qx 'mon0 mlx5_1 '"
	t_check "ours: UNREGISTER of mlx5_0 and mlx5_1" sh -c \
		"test \$(grep -c '^E UNREGISTER dev [0-9]* mlx5_[01]\$' /tmp/mon-ours) = 2"
	t_check "ours: REGISTER of mlx5_0 and mlx5_1" sh -c \
		"test \$(grep -c '^E REGISTER dev [0-9]* mlx5_[01]\$' /tmp/mon-ours) = 2"
	breadth_baseline "the monitor test"
	unload_ours
	peer_up
	t_check "ip link add veth2/veth3" ip link add veth2 type veth peer name veth3
	t_check "ip link set veth2 up" ip link set veth2 up
	mon_start /tmp/mon-rxe
	t_check "rdma link add rxe1" rdma link add rxe1 type rxe netdev veth2
	t_check "rdma dev set rxe1 name mon0" rdma dev set rxe1 name mon0
	t_check "rdma dev set mon0 name rxe1" rdma dev set mon0 name rxe1
	t_check "rdma link delete rxe1" rdma link delete rxe1
	mon_stop
	sed 's/^/    rxe| /' /tmp/mon-rxe
	t_check "ip link del veth2" ip link del veth2
	peer_down
	mon_shapes /tmp/mon-ours >/tmp/mon-ours.s
	mon_shapes /tmp/mon-rxe >/tmp/mon-rxe.s
	if [ -s /tmp/mon-rxe.s ] && diff /tmp/mon-rxe.s /tmp/mon-ours.s >/tmp/mon-diff; then
		t_ok "notifications: ours sends rxe's $(wc -l </tmp/mon-rxe.s) kinds of device event line"
	else
		sed 's/^/    diff| /' /tmp/mon-diff
		t_fail "notifications: ours sends rxe's kinds of device event line"
	fi
}

[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode breadth
