# SPDX-License-Identifier: GPL-2.0
# The uverbs fuzzer (host/uverbs-fuzz, /rdma-rs/uverbs_fuzz): random call
# sequences from the project's spec tables on ours (the mock device, both
# simulated mlx5 functions) and, with the same seed, on upstream ib_uverbs +
# rdma_rxe, the two compared errno by errno; device removal and module
# unload raced against it. `make check` runs a bounded slice (a fixed seed,
# rdmars.fuzz_n= absent); `make fuzz N=... SEED=...` is the VM mode `fuzz`.
# See Documentation/testing.md, "The uverbs fuzzer".
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"

FZ=/rdma-rs/uverbs_fuzz

# fz_params: FZ_N steps per run, FZ_SEED, FZ_V (-v: every call printed),
# from the kernel command line (make fuzz), else the make-check slice.
fz_params() {
	local arg
	FZ_N=400
	FZ_SEED=1
	FZ_V=
	for arg in $(cat /proc/cmdline); do
		case "$arg" in
		rdmars.n=*) FZ_N=${arg#rdmars.n=} ;;
		rdmars.seed=*) FZ_SEED=${arg#rdmars.seed=} ;;
		rdmars.verbose=1) FZ_V=-v ;;
		esac
	done
}

# fz_run PREFIX ARGS...: one fuzzer run, its R lines as cases (a kernel
# report makes it exit 2: the sequence and the reproducer are printed).
fz_run() {
	local p=$1
	shift
	t_import "$p" timeout 3000 $FZ -p 20000 $FZ_V "$@"
}

# fz_race PREFIX WHAT FUZZ-ARGS...: the fuzzer in the background; after a
# few seconds WHAT (a command: rmmod, unbind) runs against it. WHAT must
# finish within 60 s and the fuzzer must exit cleanly afterwards (its calls
# then fail with EIO/ENODEV/ENOENT; no kernel report).
fz_race() {
	local p=$1 what=$2 pid rc t0 t1
	shift 2
	$FZ -p 1000000 "$@" >/tmp/fz-race.out 2>&1 &
	pid=$!
	sleep 4
	t0=$(date +%s)
	rc=0
	timeout 60 sh -c "$what" || rc=$?
	t1=$(date +%s)
	echo "$what: exit $rc after $((t1 - t0)) s while the fuzzer ran"
	if [ $rc = 0 ]; then t_ok "$p: $what completes under the fuzzer"; else t_fail "$p: $what completes under the fuzzer" "exit $rc"; fi
	rc=0
	wait $pid || rc=$?
	t_import_file "$p" /tmp/fz-race.out $rc
}

# vm_fuzz_mock: our stack on the mock device (driver id RXE, like rdma_rxe):
# the traced run the differential suite compares (-u: the same calls as on
# upstream), a run with every call kind, then rmmod of the mock under the
# fuzzer.
fuzz_mock_suite() {
	fz_params
	t_check "insmod ib_core_rs" insmod $RDMARS_MODS/ib_core_rs.ko
	t_check "insmod rdma_rs_mock" insmod $RDMARS_MODS/rdma_rs_mock.ko
	fz_run "fuzz rxe_mock0 (traced, as on upstream)" -d /dev/infiniband/uverbs0 -i 14 -s $FZ_SEED -n $FZ_N -u -t /tmp/fz-ours.trace
	fz_run "fuzz rxe_mock0" -d /dev/infiniband/uverbs0 -i 14 -s $((FZ_SEED + 1)) -n $FZ_N
	fz_race "fuzz rxe_mock0 vs rmmod" "/usr/sbin/rmmod rdma_rs_mock" -d /dev/infiniband/uverbs0 -i 14 -s $((FZ_SEED + 2)) -n $((FZ_N * 4))
	t_check "uverbs0 gone with the mock" test ! -e /dev/infiniband/uverbs0
	t_check "rmmod ib_core_rs" rmmod ib_core_rs
}

# vm_fuzz_diff: the traced sequence on upstream ib_uverbs + rdma_rxe (veth),
# then the two traces compared call by call.
fuzz_diff_suite() {
	fz_params
	t_check "modprobe ib_uverbs rdma_rxe veth" modprobe -a ib_uverbs rdma_rxe veth
	ip link add veth0 type veth peer name veth1 && ip link set veth0 up && ip link set veth1 up
	t_check "rdma link add rxe0" rdma link add rxe0 type rxe netdev veth0
	fz_run "fuzz rxe0 (upstream, traced)" -d /dev/infiniband/uverbs0 -i 14 -s $FZ_SEED -n $FZ_N -u -t /tmp/fz-up.trace
	rdma link delete rxe0
	ip link del veth0
	modprobe -r rdma_rxe
	modprobe -r ib_uverbs
	modprobe -r ib_core
	modprobe -r veth
	t_import "differential (seed $FZ_SEED)" $FZ -c /tmp/fz-ours.trace /tmp/fz-up.trace
}

# vm_fuzz_mlx5: both simulated functions (IB and RoCE), each left with only
# its kernel PD and UAR; the RoCE function with IPv4 and IPv6 addresses on its
# interface, so GID queries meet its IP GIDs and CREATE_AH resolves IP
# destinations through the route and neighbour tables (-g: its own addresses,
# an on-link address nobody answers, an unroutable one); the RoCE function
# unbound and bound again under the fuzzer; mlx5_ib_rs unloaded under it at
# the end.
FZ_GIDS=10.77.0.1,fd00:77::1,10.77.0.9,fd99::9
fuzz_mlx5_suite() {
	local n d g ifc
	fz_params
	load_ours sim=ib,eth
	ip link set lo up
	ifc=$(ls /sys/class/infiniband/mlx5_1/device/net/ 2>/dev/null)
	t_check "mlx5_1's interface $ifc: ip addr add 10.77.0.1/24" ip addr add 10.77.0.1/24 dev "$ifc"
	t_check "mlx5_1's interface $ifc: ip -6 addr add fd00:77::1/64 nodad" \
		ip -6 addr add fd00:77::1/64 dev "$ifc" nodad
	for n in 0 1; do
		d=/dev/infiniband/$(uverbs_of mlx5_$n)
		g=
		[ $n = 1 ] && g="-g $FZ_GIDS"
		fz_run "fuzz mlx5_$n" -d $d -i 1 -s $((FZ_SEED + 10 + n)) -n $FZ_N $g
		t_check "mlx5_$n: the simulator holds only the kernel PD and UAR after the fuzzer" fwsim_resources_probed mlx5_ib_rs.rdma.$n
	done
	local f=mlx5_ib_rs.rdma.1 drv
	drv=$(fwsim_driver_of $f)
	d=/dev/infiniband/$(uverbs_of mlx5_1)
	fz_race "fuzz mlx5_1 vs unbind" "echo $f >/sys/bus/auxiliary/drivers/$drv/unbind" -d $d -i 1 -s $((FZ_SEED + 12)) -n $((FZ_N * 4)) -g $FZ_GIDS
	t_check "$f: the simulator holds nothing after the remove" fwsim_resources_zero $f
	echo $f >/sys/bus/auxiliary/drivers/$drv/bind
	t_check "bind $f again" test -n "$(fwsim_driver_of $f)"
	d=/dev/infiniband/$(uverbs_of mlx5_0)
	# Module unload raced against the fuzzer (the simulator's workers stop
	# with the module: the kthread registry).
	fz_race "fuzz mlx5_0 vs rmmod mlx5_ib_rs" "/usr/sbin/rmmod mlx5_ib_rs" -d $d -i 1 -s $((FZ_SEED + 13)) -n $((FZ_N * 4))
	t_check "rmmod ib_core_rs" rmmod ib_core_rs
	t_check "modprobe -r mlx5_core" modprobe -r mlx5_core
}

# The ucma mode of the fuzzer (uverbs_fuzz -U): random rdma_cm command sequences, addresses by
# role (this function's, the peer function's, a silent neighbour, an unroutable address, a
# group). UF_N steps (rdmars.n= of make fuzz divided by 50, at least UF_N's default of 150).
uf_params() {
	fz_params
	UF_N=150
	[ "$FZ_N" -gt $((UF_N * 50)) ] && UF_N=$((FZ_N / 50))
}

# vm_fuzz_ucma: ours, the two simulated RoCE functions of tests/vm/cm.sh (10.66.0.1 and .2,
# QP1 on the wire), the traced sequence vm_fuzz_ucma_rxe compares.
fuzz_ucma_suite() {
	local nd
	uf_params
	ip link set lo up
	touch /tmp/kunit-ran.mlx5_ib_rs
	load_ours sim=eth,eth mad_qps=1
	sysctl -qw net.ipv4.conf.all.accept_local=1
	nd=$(cm_netdevs)
	t_check "the functions' interfaces have $CM_SRC and $CM_DST ($nd)" test -n "$nd"
	fz_run "ucma fuzz (ours, traced)" -U -a $CM_SRC,$CM_DST,10.66.0.77,10.99.0.1,239.1.2.3 \
		-s $FZ_SEED -n $UF_N -t /tmp/uf-ours.trace
	t_import "ucma races (ours)" timeout 300 /rdma-rs/ucma_race $CM_SRC 10.66.0.77
	sysctl -qw net.ipv4.conf.all.accept_local=0
	unload_ours
}

# vm_fuzz_ucma_rxe: the same seed on upstream rdma_ucm over two rxe devices on a veth pair
# (10.77.0.1 and .2, tests/vm/cm.sh's cm_rxe_pair_up), then the two traces compared errno by
# errno and event by event.
fuzz_ucma_rxe_suite() {
	uf_params
	cm_rxe_pair_up
	fz_run "ucma fuzz (upstream rxe, traced)" -U -a 10.77.0.1,10.77.0.2,10.77.0.77,10.99.0.1,239.1.2.3 \
		-s $FZ_SEED -n $UF_N -t /tmp/uf-up.trace
	t_import "ucma races (upstream rxe)" timeout 300 /rdma-rs/ucma_race 10.77.0.1 10.77.0.77
	cm_rxe_pair_down
	t_import "ucma differential (seed $FZ_SEED)" $FZ -c /tmp/uf-ours.trace /tmp/uf-up.trace
}

# Standalone: the VM mode `fuzz` (its suites are in suites.list).
[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode fuzz
