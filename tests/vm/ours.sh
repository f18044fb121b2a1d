# SPDX-License-Identifier: GPL-2.0
# Our stack: load, run the KUnit suites (they run at insmod), unload.
# Sourced by the mode scripts after lib.sh.

# mlx5_ib_rs links against mlx5_core (its real-hardware backend calls
# mlx5_cmd_do, like upstream mlx5_ib), so mlx5_core goes in first. Our
# modules live outside depmod's index, so insmod cannot pull it in itself.
# In the VM mlx5_core loads and finds no ConnectX: no mlx5_core.rdma.N.
load_mlx5_core() {
	t_check "modprobe mlx5_core (mlx5_ib_rs depends on it)" modprobe mlx5_core
}

# kunit_insmod DESCRIPTION MODULE.ko [PARAMETERS...]: insmod; a module's KUnit suites
# run at its first insmod in this boot only (later ones filter every suite out through
# kunit.filter_glob): the judge needs each suite's report once, and under KASAN the
# suites cost more than the suite that loads the module. RDMARS_KUNIT_EVERY_LOAD=1 runs them
# at every load. RDMARS_KUNIT_GLOB (default every suite) is the filter a first load uses
# (mode pcifn: the one suite that runs on the emulated function).
kunit_insmod() {
	local d=$1 ko=$2 glob=/sys/module/kunit/parameters/filter_glob
	shift 2
	local stamp=/tmp/kunit-ran.$(basename "$ko" .ko)
	if [ -e "$stamp" ] && [ -w $glob ] && [ "${RDMARS_KUNIT_EVERY_LOAD:-0}" != 1 ]; then
		printf rdmars-no-suite >$glob
	fi
	t_check "$d" insmod "$ko" "$@"
	[ -w $glob ] && printf '%s' "${RDMARS_KUNIT_GLOB:-*.*}" >$glob
	touch "$stamp"
}

# load_ours [mlx5_ib_rs parameters...], e.g. load_ours sim=ib,eth; RDMARS_CORE_PARAMS:
# ib_core_rs parameters.
load_ours() {
	load_mlx5_core
	# shellcheck disable=SC2086
	kunit_insmod "insmod ib_core_rs ${RDMARS_CORE_PARAMS:-}" $RDMARS_MODS/ib_core_rs.ko ${RDMARS_CORE_PARAMS:-}
	kunit_insmod "insmod mlx5_ib_rs $*" $RDMARS_MODS/mlx5_ib_rs.ko "$@"
	case "$*" in *eth*) eth_settle ;; esac
}

# eth_settle: waits (at most 10 s) until no interface holds a tentative IPv6 address. The
# simulated RoCE functions' interfaces come up at probe, and their link-local addresses (the
# default GIDs) go through duplicate address detection (1-2 s) first: until then the kernel
# neither sends nor answers neighbour solicitations from or for them, so a RoCE v2 AV to a
# link-local GID (upstream ib_resolve_eth_dmac(): route and neighbour) would time out, as it
# would on a host whose interfaces just came up.
eth_settle() {
	local i=0
	while [ $i -lt 100 ] && [ -n "$(ip -6 addr show tentative 2>/dev/null)" ]; do
		nap
		i=$((i + 1))
	done
}
# The core's KUnit suites with a mock RDMA driver (tests/kunit/) run at
# this insmod; load after ib_core_rs, unload before it.
load_core_tests() {
	kunit_insmod "insmod ib_core_rs_test" $RDMARS_MODS/ib_core_rs_test.ko
}
unload_core_tests() {
	t_check "rmmod ib_core_rs_test" rmmod ib_core_rs_test
}
unload_ours() {
	t_check "rmmod mlx5_ib_rs" rmmod mlx5_ib_rs
	t_check "rmmod ib_core_rs" rmmod ib_core_rs
	t_check "modprobe -r mlx5_core" modprobe -r mlx5_core
	if lsmod | grep -q '_rs '; then t_fail "no rdma-rs module left loaded"; else t_ok "no rdma-rs module left loaded"; fi
}

# vm_ours_lifecycle: the three modules in and out; every KUnit suite of
# ib_core_rs, ib_core_rs_test and mlx5_ib_rs runs at these insmods.
ours_lifecycle_suite() {
	load_ours
	load_core_tests
	unload_core_tests
	unload_ours
}

# The firmware simulator's functions (mlx5_ib_rs sim=...).
FWSIM_DBG=/sys/kernel/debug/mlx5_fwsim
AUX_DEVS=/sys/bus/auxiliary/devices

# fwsim_driver_of DEV: the name of the driver DEV is bound to (empty if none).
fwsim_driver_of() {
	[ -e "$AUX_DEVS/$1/driver" ] && basename "$(readlink "$AUX_DEVS/$1/driver")"
}

# fwsim_resources_zero DEV: every resource count in debugfs is 0 (and there are 11 kinds:
# pd uar td cq qp mkey srq xrc uctx umem memic), and the function's simulated IOMMU holds no
# mapping.
fwsim_resources_zero() {
	local f=$FWSIM_DBG/$1/resources
	cat "$f" "$FWSIM_DBG/$1/iommu" | tr '\n' ' '
	echo
	[ "$(wc -l <"$f")" = 11 ] && [ -z "$(awk '$2 != 0' "$f")" ] &&
		grep -qx 'mappings 0' "$FWSIM_DBG/$1/iommu"
}

# fwsim_resources_probed DEV: what a bound function holds (the profile's kernel PD and UAR;
# no DMA mapping).
fwsim_resources_probed() {
	local f=$FWSIM_DBG/$1/resources
	cat "$f" "$FWSIM_DBG/$1/iommu" | tr '\n' ' '
	echo
	[ "$(awk '$1 == "pd" || $1 == "uar" { print $2 }' "$f" | tr '\n' ' ')" = "1 1 " ] &&
		[ -z "$(awk '$1 != "pd" && $1 != "uar" && $2 != 0' "$f")" ] &&
		grep -qx 'mappings 0' "$FWSIM_DBG/$1/iommu"
}

fwsim_show() {
	local d
	for d in "$FWSIM_DBG"/*/; do
		d=$(basename "$d")
		echo "$d: driver $(fwsim_driver_of "$d")"
		sed 's/^/    /' "$FWSIM_DBG/$d/identity" "$FWSIM_DBG/$d/resources"
	done
}
