# SPDX-License-Identifier: GPL-2.0
# `make bench-uverbs`: the control-path benchmark (a tool, not a test):
# tests/userspace/uverbs_bench.c through libibverbs on ours and on upstream
# (ib_uverbs + rdma_rxe on veth), same VM, alternating, rdmars.runs= times.
# Ours is rxe_mock0 (the mock driver over ib_core_rs: the core and uverbs
# alone) for the light round trips, the handle-table scale and the slab bytes
# (10k objects: more than the simulator's tables), and mlx5_0 (mlx5_ib_rs on
# the firmware simulator, through libmlx5) for the CQ, QP and MR figures,
# with the simulator's own time (debugfs
# stats exec_ns) reported apart. Parameters (kernel command line):
# rdmars.n= calls per round-trip figure, rdmars.nobj= iterations of the
# object figures, rdmars.nslab= objects alive for the slab figure,
# rdmars.mrmax= the largest MR in MiB, rdmars.scale= the most PDs alive,
# rdmars.figs= which figures (uverbs_bench -f; default all), rdmars.perf=1
# a perf profile of the round trips on each stack (first run): of the figures
# rdmars.perffigs= (default rt; scale with rdmars.perfscale= objects, default
# 10: the handle lookup and destroy at that size) on ours' rdmars.perfdev=
# (default rxe_mock0; mlx5_0 profiles the simulated function: cq, qp, mr), with
# rdmars.perfn= calls a round-trip figure (default 5000) and rdmars.perfobj= objects an
# object figure (default 500): more samples for a short figure; rdmars.perfa=1 profiles every
# CPU with call graphs (by task and symbol, callees included; rdmars.perflines= lines, default 80).
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"

# bench_arg NAME DEFAULT: rdmars.NAME= from the kernel command line.
bench_arg() {
	local a v=$2
	for a in $(cat /proc/cmdline); do
		case "$a" in "rdmars.$1="*) v=${a#rdmars.$1=} ;; esac
	done
	echo "$v"
}

# bench_table FILE [LEFT RIGHT]: FILE has `STACK RUN NAME VALUE` lines (STACK ours|up);
# prints per figure the median and the range over the runs of each stack and
# the ratio of the medians, oriented so that >= 1.0 means ours is no slower
# (figures named *_ns, *_us, *bytes* are costs: upstream/ours; the rest are
# rates: ours/upstream).
bench_table() {
	awk -v L="${2:-ours}" -v R="${3:-upstream}" '
	function med(s, k,   n) { n = cnt[s, k]; return n % 2 ? val[s, k, (n + 1) / 2] : (val[s, k, n / 2] + val[s, k, n / 2 + 1]) / 2 }
	function show(s, k) {
		if (!cnt[s, k]) return "-"
		return sprintf("%.4g [%.4g..%.4g]", med(s, k), val[s, k, 1], val[s, k, cnt[s, k]])
	}
	{
		k = $3
		if (!(k in seen)) { seen[k] = 1; order[++nk] = k }
		# Insertion sort: the values of (stack, figure) stay in order.
		j = ++cnt[$1, k]
		while (j > 1 && val[$1, k, j - 1] > $4 + 0) { val[$1, k, j] = val[$1, k, j - 1]; j-- }
		val[$1, k, j] = $4 + 0
	}
	END {
		printf "%-26s %-30s %-30s %6s\n", "figure", L " median [min..max]", R " median [min..max]", "ratio"
		for (i = 1; i <= nk; i++) {
			k = order[i]
			r = "-"
			if (cnt["ours", k] && cnt["up", k] && med("ours", k) > 0 && med("up", k) > 0)
				r = sprintf("%.2f", k ~ /(_ns|_us)(_|$)|bytes/ ? med("up", k) / med("ours", k) : med("ours", k) / med("up", k))
			printf "%-26s %-30s %-30s %6s\n", k, show("ours", k), show("up", k), r
		}
	}' "$1"
}

# bu_run STACK RUN DEV FIGS ARGS...: one uverbs_bench run; its figures appended to /tmp/bu-figs.
bu_run() {
	local stack=$1 run=$2 dev=$3 figs=$4
	shift 4
	local rc=0
	/rdma-rs/uverbs_bench -d "$dev" -f "$figs" "$@" >/tmp/bu-out 2>&1 || rc=$?
	sed "s/^/    $stack-$run| /" /tmp/bu-out
	# A run that printed no figure (a usage error, a failed verb) is a failure, not a gap.
	if [ $rc != 0 ] || ! grep -qE '^(fig|skip) ' /tmp/bu-out; then
		t_fail "uverbs_bench $figs on $dev (run $run) exit $rc with figures"
	fi
	awk -v s="$stack" -v r="$run" '$1 == "fig" { print s, r, $3, $4 }' /tmp/bu-out >>/tmp/bu-figs
}

# bu_fwsim_ns: the simulator's exec_ns, summed over its functions.
bu_fwsim_ns() {
	cat /sys/kernel/debug/mlx5_fwsim/*/stats 2>/dev/null | awk '/^exec_ns/ { t += $2 } END { print t + 0 }'
}

# bu_perf STACK DEV: where a light round trip's time goes (perf's cpu-clock
# samples, kernel and user, over the rdmars.perffigs= figures; rdmars.perf=1 and
# perf in the initramfs). rdmars.perffigs= is one uverbs_bench figure list, or several
# joined by `+`, each profiled alone (`perf-STACK-FIGS|` lines); FIGS:N runs that one with
# N calls a round trip and N objects an object figure.
bu_perf() {
	command -v perf >/dev/null || return 0
	[ "$(bench_arg perf 0)" = 1 ] || return 0
	echo -1 >/proc/sys/kernel/perf_event_paranoid 2>/dev/null
	echo 0 >/proc/sys/kernel/kptr_restrict 2>/dev/null
	# rdmars.perfa=1: every CPU, with call graphs, sorted by task and symbol, inclusive of
	# callees: what other tasks (workers, kthreads) do while the figure runs, and which
	# caller a cost belongs to.
	local rec="" rep="--sort sym" lines=30 p figs pn pobj tag
	if [ "$(bench_arg perfa 0)" = 1 ]; then
		rec="-a -g" rep="--sort comm,sym --children -g none" lines=$(bench_arg perflines 80)
	fi
	for p in $(bench_arg perffigs rt | tr + ' '); do
		figs=${p%%:*} pn=$(bench_arg perfn 5000) pobj=$(bench_arg perfobj 500) tag=$1
		[ "$p" = "$figs" ] || pn=${p#*:} pobj=${p#*:}
		case "$(bench_arg perffigs rt)" in *+*) tag=$1-$figs ;; esac
		# shellcheck disable=SC2086
		perf record -q $rec -e cpu-clock -F 2000 -o /tmp/perf.data /rdma-rs/uverbs_bench -d "$2" \
			-f "$figs" -k "$(bench_arg perfscale 10)" -n "$pn" -c "$pobj" >/tmp/perf-bench.out 2>&1
		sed "s/^/    perf-$tag| /" /tmp/perf-bench.out
		# shellcheck disable=SC2086
		perf report -q -i /tmp/perf.data --kallsyms=/proc/kallsyms --stdio $rep 2>/dev/null | grep -v '^$' |
			head -n "$lines" | sed "s/^/    perf-$tag| /"
		rm -f /tmp/perf.data
	done
}

# bu_has FIG: FIG is in the comma-separated list $bu_figs.
bu_has() { case ",$bu_figs," in *",$1,"*) return 0 ;; esac; return 1; }

bench_uverbs_suite() {
	local n nobj nslab mrmax scale runs r f0 f1 common
	n=$(bench_arg n 5000)
	nobj=$(bench_arg nobj 300)
	nslab=$(bench_arg nslab 10000)
	mrmax=$(bench_arg mrmax 1024)
	# Up to 100k PDs in one context (the handle table is a tree: uverbs/uobject_table.rs).
	scale=$(bench_arg scale 100000)
	runs=$(bench_arg runs 3)
	bu_figs=$(bench_arg figs rt,cq,qp,qpinit,mr,pin,slab,scale)
	common="-n $n -c $nobj -s $nslab -m $mrmax -k $scale"
	: >/tmp/bu-figs
	# kmemleak's automatic scan (test kernel only) makes every allocation wait
	# for its locks while it runs: off for the measurement.
	[ -w /sys/kernel/debug/kmemleak ] && echo scan=off >/sys/kernel/debug/kmemleak
	echo "bench: kernel $(uname -r), $(grep -c ^processor /proc/cpuinfo) vCPUs, $(awk '/MemTotal/ { print $2 / 1024 " MiB" }' /proc/meminfo)"
	[ -e /sys/kernel/debug/kmemleak ] && echo "bench: NOTE this is the test kernel (KASAN, lockdep, kmemleak): not the benchmark kernel"
	for r in $(seq 1 "$runs"); do
		# Ours.
		load_ours sim=ib
		t_check "insmod rdma_rs_mock" insmod $RDMARS_MODS/rdma_rs_mock.ko
		bu_has rt && bu_run ours "$r" rxe_mock0 rt $common
		bu_has cq && bu_run ours "$r" mlx5_0 cq $common
		if bu_has qp; then
			f0=$(bu_fwsim_ns)
			bu_run ours "$r" mlx5_0 qp $common
			f1=$(bu_fwsim_ns)
			echo "ours $r qp_fwsim_us $(awk -v a="$f0" -v b="$f1" -v c="$nobj" 'BEGIN { printf "%.1f", (b - a) / c / 1000 }')" >>/tmp/bu-figs
		fi
		if bu_has qpinit; then
			f0=$(bu_fwsim_ns)
			bu_run ours "$r" mlx5_0 qpinit $common
			f1=$(bu_fwsim_ns)
			echo "ours $r qp_loop_fwsim_us $(awk -v a="$f0" -v b="$f1" -v c="$nobj" 'BEGIN { printf "%.1f", (b - a) / c / 1000 }')" >>/tmp/bu-figs
		fi
		bu_has mr && bu_run ours "$r" mlx5_0 mr $common
		bu_has pin && bu_run ours "$r" mlx5_0 pin $common
		# The slab and scale figures take longest: the first run only.
		# The slab figure holds 10k objects of each kind: more than the simulator's
		# tables (128 QPs, 512 PDs), so ours is the core and uverbs over the mock driver.
		[ "$r" = 1 ] && bu_has slab && bu_run ours "$r" rxe_mock0 slab $common
		[ "$r" = 1 ] && bu_has scale && bu_run ours "$r" rxe_mock0 scale $common
		# The other runs measure the scale figure's small points (10 and 1,000 PDs) again:
		# cheap, and a single cold sample of them read 0.6 or 2.3 of rxe with the same code.
		[ "$r" != 1 ] && bu_has scale && bu_run ours "$r" rxe_mock0 scale $common -k 1000
		if [ "$r" = 1 ]; then
			# Where the time goes: the syscalls of a short run, with their durations.
			strace -T -e trace=ioctl,write /rdma-rs/uverbs_bench -d rxe_mock0 -f rt -n 3 2>&1 | tail -12 | sed 's/^/    strace-ours| /'
			bu_perf ours "$(bench_arg perfdev rxe_mock0)"
		fi
		t_check "rmmod rdma_rs_mock" rmmod rdma_rs_mock
		unload_ours
		# Upstream.
		t_check "modprobe ib_uverbs rdma_rxe veth" modprobe -a ib_uverbs rdma_rxe veth
		ip link add veth0 type veth peer name veth1 && ip link set veth0 up && ip link set veth1 up
		t_check "rdma link add rxe0" rdma link add rxe0 type rxe netdev veth0
		local figs=rt,cq,qp,qpinit,mr,pin
		[ "$r" = 1 ] && figs=$figs,slab,scale
		local f
		for f in $(echo "$figs" | tr , ' '); do
			bu_has "$f" && bu_run up "$r" rxe0 "$f" $common
		done
		[ "$r" != 1 ] && bu_has scale && bu_run up "$r" rxe0 scale $common -k 1000
		if [ "$r" = 1 ]; then
			strace -T -e trace=ioctl,write /rdma-rs/uverbs_bench -d rxe0 -f rt -n 3 2>&1 | tail -12 | sed 's/^/    strace-up| /'
			bu_perf up rxe0
		fi
		rdma link delete rxe0
		ip link del veth0
		modprobe -r rdma_rxe ib_uverbs ib_core veth
	done
	t_check "uverbs_bench produced figures for both stacks" \
		sh -c 'grep -q "^ours " /tmp/bu-figs && grep -q "^up " /tmp/bu-figs'
	echo "================ rdma-rs uverbs benchmark ================"
	echo "kernel $(uname -r); runs $runs; n $n per round trip, $nobj per object figure, $nslab objects for slab, MR up to $mrmax MiB, up to $scale PDs; $(vm_accel)"
	echo "ours: rxe_mock0 (rt, scale, slab) and mlx5_0 on the simulator (cq, qp, qpinit, mr, pin); upstream: rxe0 (rdma_rxe on veth)"
	bench_table /tmp/bu-figs
	echo "(ratio >= 1.0: ours is no slower; qp_fwsim_us is the simulator's share of one QP cycle, inside ours' qp_* figures;"
	echo " qp_loop_fwsim_us its share of one RESET -> INIT -> RESET, inside qp_loop_init_us + qp_loop_reset_us)"
	echo "=========================================================="
}

[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode bench_uverbs
