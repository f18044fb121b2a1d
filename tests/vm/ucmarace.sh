# SPDX-License-Identifier: GPL-2.0
# Mode ucmarace (tools/race-reverts.sh, never in make check): tests/userspace/ucma_race.c on
# the tree's modules and on upstream rdma_ucm over rxe (every check passes), then on
# ib_core_rs built with one fix of uverbs/ucma.rs reverted (tests/races/NAME.patch:
# ib_core_rs-NAME.ko with the mlx5_ib_rs-NAME.ko built against it, in /lib/modules/rdma-rs):
# each must make ucma_race fail a check of its race class, so the test catches the class.
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"

# race_class NAME: the ucma_race class (its checks' prefix) that the revert NAME must fail.
race_class() {
	case $1 in
	ucma-destroy-event) echo "destroy vs event" ;;
	ucma-migrate-close) echo "migrate vs close" ;;
	ucma-closed-file) echo "closed file" ;;
	esac
}

# vm_ucma_race: the control: ucma_race on the tree's modules (the two RoCE functions of
# cm.sh), then on upstream over rxe (cm_rxe_pair_up); every check must pass.
ucma_race_suite() {
	local nd
	ip link set lo up
	touch /tmp/kunit-ran.ib_core_rs /tmp/kunit-ran.mlx5_ib_rs
	load_ours sim=eth,eth mad_qps=1
	sysctl -qw net.ipv4.conf.all.accept_local=1
	nd=$(cm_netdevs)
	t_check "the functions' interfaces have $CM_SRC and $CM_DST ($nd)" test -n "$nd"
	t_import "ucma races (ours)" timeout 300 /rdma-rs/ucma_race $CM_SRC 10.66.0.77
	sysctl -qw net.ipv4.conf.all.accept_local=0
	unload_ours
	cm_rxe_pair_up
	t_import "ucma races (upstream rxe)" timeout 300 /rdma-rs/ucma_race 10.77.0.1 10.77.0.77
	cm_rxe_pair_down
}

# vm_ucma_race_reverted: each reverted build in turn on the two RoCE functions of cm.sh.
ucma_race_reverted_suite() {
	local ko n want rc nd
	ip link set lo up
	for ko in "$RDMARS_MODS"/ib_core_rs-*.ko; do
		[ -f "$ko" ] || continue
		n=${ko##*/ib_core_rs-}
		n=${n%.ko}
		want=$(race_class "$n")
		if [ -z "$want" ]; then
			t_fail "$n: a revert with a known race class (race_class, tests/vm/ucmarace.sh)"
			continue
		fi
		touch "/tmp/kunit-ran.ib_core_rs-$n" "/tmp/kunit-ran.mlx5_ib_rs-$n"
		load_mlx5_core
		kunit_insmod "$n: insmod ib_core_rs-$n.ko" "$ko"
		kunit_insmod "$n: insmod mlx5_ib_rs-$n.ko sim=eth,eth mad_qps=1" \
			"$RDMARS_MODS/mlx5_ib_rs-$n.ko" sim=eth,eth mad_qps=1
		eth_settle
		sysctl -qw net.ipv4.conf.all.accept_local=1
		nd=$(cm_netdevs)
		t_check "$n: the functions' interfaces have $CM_SRC and $CM_DST ($nd)" test -n "$nd"
		rc=0
		timeout 300 /rdma-rs/ucma_race $CM_SRC 10.66.0.77 >/tmp/race-$n.out 2>&1 || rc=$?
		sed 's/^/    race| /' /tmp/race-$n.out
		t_check "$n reverted: ucma_race fails (exit $rc)" test $rc = 1
		t_check "$n reverted: a '$want' check fails" grep -q "^R fail $want: " /tmp/race-$n.out
		sysctl -qw net.ipv4.conf.all.accept_local=0
		t_check "$n: rmmod mlx5_ib_rs" rmmod mlx5_ib_rs
		t_check "$n: rmmod ib_core_rs" rmmod ib_core_rs
		t_check "$n: modprobe -r mlx5_core" modprobe -r mlx5_core
	done
	t_check "every reverted build ran" test -n "$(ls "$RDMARS_MODS"/ib_core_rs-*.ko 2>/dev/null)"
}

[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode ucmarace
