# SPDX-License-Identifier: GPL-2.0
# `make bench-pcifn` (tools/bench-pcifn.sh): the emulated ConnectX-7 function
# (Documentation/pcifn.md) under one stack per boot, rdmars.stack=ours (ib_core_rs +
# mlx5_ib_rs) or rdmars.stack=up (upstream ib_core + ib_uverbs + mlx5_ib of the same
# kernel); the host script alternates the boots and builds the table from their logs
# (tools/bench-pcifn.py). A tool, not a test: the suite's checks are only that each step
# ran. Every figure is printed as `benchfig STACK RUN NAME VALUE`; a figure that cannot be
# taken on this stack prints `benchwhy NAME reason`.
#   - device probe and removal: mlx5_core.rdma.0 unbound from and bound to the RDMA driver
#     rdmars.probes= times (the bind returns once mlx5_0 is registered);
#   - tests/userspace/uverbs_bench on mlx5_0 through libmlx5: round trips (rt), context
#     open/close (ctx), CQ/SRQ/AH/MR create+destroy (cq, obj), the QP cycle and each
#     transition (qp, qpinit), MR registration 4 KiB .. rdmars.mrmax= MiB (mr), slab bytes
#     per object (slab, rdmars.nslab= objects: the function's tables hold 128 QPs and CQs,
#     256 mkeys, 512 PDs, 32 SRQs, so not 10k; rdmars.nslabsrq= SRQs, rdmars.nslabah= AHs,
#     default 10000: an AH is no device object);
#   - perftest ib_send_lat and ib_write_bw (64 B, 4 KiB and 64 KiB) through the function, both
#     ends in the VM (bench_traffic.sh's bt_perf), rdmars.tn= iterations.
# Parameters (kernel command line): rdmars.stack=, rdmars.run=, rdmars.n= calls per round
# trip figure, rdmars.nobj= iterations of an object figure, rdmars.figs= (uverbs_bench -f
# list plus `probe` and `traffic`); rdmars.perf=1 with rdmars.perffigs=, rdmars.perfn=,
# rdmars.perfobj=, rdmars.perfa=1: a perf profile of uverbs_bench on mlx5_0 (bench_uverbs.sh).
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"

# bp_ms T0 T1: milliseconds between two $EPOCHREALTIME values.
bp_ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (b - a) * 1000 }'; }

# bp_wait_active: until mlx5_0's port 1 is ACTIVE (at most 30 s).
bp_wait_active() {
	local i
	for i in $(seq 1 60); do
		grep -q ACTIVE /sys/class/infiniband/mlx5_0/ports/1/state 2>/dev/null && return 0
		sleep 0.5
	done
	return 1
}

# bp_probe STACK RUN K: K unbind/bind cycles of mlx5_core.rdma.0 with its RDMA driver.
bp_probe() {
	local f=mlx5_core.rdma.0 drv k t0 t1 t2
	drv=$(fwsim_driver_of $f)
	if [ -z "$drv" ]; then
		t_fail "$f is bound to an RDMA driver"
		return
	fi
	for k in $(seq 1 "$3"); do
		t0=$EPOCHREALTIME
		echo $f >/sys/bus/auxiliary/drivers/$drv/unbind
		t1=$EPOCHREALTIME
		echo $f >/sys/bus/auxiliary/drivers/$drv/bind
		t2=$EPOCHREALTIME
		[ -e /sys/class/infiniband/mlx5_0 ] || { t_fail "bind $f again ($drv): mlx5_0 registered"; return; }
		echo "$1 $2 device_remove_ms $(bp_ms "$t0" "$t1")" >>/tmp/bp-figs
		echo "$1 $2 device_probe_ms $(bp_ms "$t1" "$t2")" >>/tmp/bp-figs
	done
	t_ok "$3 unbind/bind cycles of $f ($drv)"
	bp_wait_active || t_fail "mlx5_0 port 1 ACTIVE after the bind"
}

# bp_traffic STACK RUN: perftest through the function (bench_traffic.sh's bt_perf), both ends
# in the VM: ib_send_lat, ib_write_bw at 64 B (message rate), 4 KiB and 64 KiB (bandwidth).
# A run that printed no result row gives a `skip` line with perftest's last message.
bp_traffic() {
	local s
	for s in lat 64 4096 65536; do
		if [ $s = lat ]; then
			bt_perf "$1" "$2" ib_send_lat mlx5_0
			bp_tfig "$1" "$2" send_lat_typical_us 5
		elif [ $s = 64 ]; then
			bt_perf "$1" "$2" ib_write_bw mlx5_0 -s 64
			bp_tfig "$1" "$2" write_64B_mpps 5
		else
			bt_perf "$1" "$2" ib_write_bw mlx5_0 -s $s
			bp_tfig "$1" "$2" "write_$((s / 1024))K_MBps" 4
		fi
	done
}

# bp_tfig STACK RUN NAME COLUMN: the figure from perftest's result row, or why not.
bp_tfig() {
	local v
	v=$(bt_col "$4")
	if [ -n "$v" ]; then
		bt_fig "$1" "$2" "$3" "$v"
	else
		echo "    $1-$2| skip mlx5_0 $3 perftest printed no result ($(grep -v '^ *-*$' /tmp/bt-out | tail -n 1))"
	fi
}

bench_pcifn_suite() {
	local stack run n nobj nslab nslabsrq nslabah mrmax probes figs common f
	stack=$(bench_arg stack ours)
	run=$(bench_arg run 1)
	n=$(bench_arg n 500)
	nobj=$(bench_arg nobj 100)
	nslab=$(bench_arg nslab 100)
	nslabsrq=$(bench_arg nslabsrq 20)
	nslabah=$(bench_arg nslabah 10000)
	mrmax=$(bench_arg mrmax 1024)
	probes=$(bench_arg probes 3)
	bt_n=$(bench_arg tn 500)
	bu_figs=$(bench_arg figs probe,rt,ctx,cq,obj,qp,qpinit,mr,slab,traffic)
	common="-n $n -c $nobj -s $nslab -S $nslabsrq -A $nslabah -m $mrmax"
	: >/tmp/bp-figs
	: >/tmp/bu-figs
	: >/tmp/bt-figs
	[ -w /sys/kernel/debug/kmemleak ] && echo scan=off >/sys/kernel/debug/kmemleak
	echo "bench: kernel $(uname -r), $(grep -c ^processor /proc/cpuinfo) vCPUs, $(awk '/MemTotal/ { print $2 / 1024 " MiB" }' /proc/meminfo), stack $stack, run $run"
	[ -e /sys/kernel/debug/kmemleak ] && echo "bench: NOTE this is the test kernel (KASAN, lockdep, kmemleak): not the benchmark kernel"
	t_check "modprobe mlx5_core" modprobe mlx5_core
	if [ "$stack" = ours ]; then
		t_check "insmod ib_core_rs" insmod $RDMARS_MODS/ib_core_rs.ko
		t_check "insmod mlx5_ib_rs" insmod $RDMARS_MODS/mlx5_ib_rs.ko
	else
		t_check "modprobe ib_uverbs mlx5_ib (upstream)" modprobe -a ib_uverbs mlx5_ib
	fi
	t_check "mlx5_0 port 1 ACTIVE" bp_wait_active
	echo "bench: mlx5_core.rdma.0 driver: $(fwsim_driver_of mlx5_core.rdma.0)"
	bu_has probe && bp_probe "$stack" "$run" "$probes"
	for f in rt ctx cq obj qp qpinit mr slab; do
		# shellcheck disable=SC2086
		bu_has $f && bu_run "$stack" "$run" mlx5_0 $f $common
	done
	if bu_has traffic; then
		bp_traffic "$stack" "$run"
		cat /tmp/bt-figs >>/tmp/bp-figs
	fi
	# Upstream registers user MRs by UMR WQEs on its mkey cache's mkeys; see the why line.
	if dmesg | grep -q 'reg umr failed'; then
		echo "benchwhy upstream_mr_by_umr upstream mlx5_ib loads a user MR's translation by a UMR WQE; the model executes a UMR translation of at most 8 bus-contiguous runs (fwsim/engine/umr.rs, xlat::MAX_RUNS: the function keeps longer page lists only for commands, host/cxfn/src/iova.rs), and a guest buffer's pages are scattered: the UMR completes MW_BIND_ERR (reg umr failed (6) and a WARN in umr.c), ibv_reg_mr fails EFAULT"
	fi
	cat /tmp/bu-figs >>/tmp/bp-figs
	# rdmars.perf=1: a profile of this stack over rdmars.perffigs= (bench_uverbs.sh's bu_perf).
	bu_perf "$stack" mlx5_0
	if [ "$stack" = ours ]; then
		t_check "rmmod mlx5_ib_rs" rmmod mlx5_ib_rs
		t_check "rmmod ib_core_rs" rmmod ib_core_rs
	else
		t_check "modprobe -r mlx5_ib ib_uverbs ib_core" modprobe -r mlx5_ib ib_uverbs ib_core
	fi
	t_check "modprobe -r mlx5_core" modprobe -r mlx5_core
	t_check "figures printed" test -s /tmp/bp-figs
	sed 's/^/benchfig /' /tmp/bp-figs
	# What cannot be measured on both stacks in this boot, and why.
	echo "benchwhy kverbs_post_send_ns the core's dispatch is make bench's figure (ib_core_rs_test on a no-op driver against the op called through a pointer, which is upstream's inline ib_post_send()); on the function it would need a kernel-verbs client module for each core, and the project builds none against upstream ib_core"
}

[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode bench_pcifn
