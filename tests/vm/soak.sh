# SPDX-License-Identifier: GPL-2.0
# `make soak`: runs the libibverbs workload N times (rdmars.n=, default 100)
# against a device and checks that nothing grows: restrack counts (`rdma
# res`) return to their baseline; slab usage is printed before and after,
# with the caches that grew most.
#
# Runs go in J parallel lanes (rdmars.jobs=, default 2: the VM has two
# vCPUs, and concurrent processes on the same and on different devices are
# part of what is soaked). Each lane cycles through eight kinds of run:
# both teardown orders, MRs up to 1, 16 and 256 MiB, and two runs that exit
# without destroying anything. The device: rdmars.stack=peer (default:
# rdma_rxe on veth) or ours (mlx5_0 InfiniBand and mlx5_1 RoCE, alternately
# in groups of four, the lanes out of phase).
# peer.sh (peer_up/peer_down) and ours.sh come with run_mode.
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"

slab_kb() { awk '/^Slab:/ { print $2 }' /proc/meminfo; }
res_counts() { rdma res | sed "s/^[0-9]*: //" | tr "\n" " "; }
# name and bytes in use (active objects x object size) of every slab cache
slab_caches() { awk 'NR > 2 { print $1, $2 * $4 }' /proc/slabinfo; }

# run_args K: the arguments of the K-th run of a lane.
run_args() {
	case $(($1 % 8)) in
	0) echo "-o 0 -m 1" ;;
	1) echo "-o 1 -m 1" ;;
	2) echo "-o 0 -m 16" ;;
	3) echo "-x -m 1" ;;
	4) echo "-o 1 -m 16" ;;
	5) echo "-o 0 -m 256" ;;
	6) echo "-x -m 16" ;;
	7) echo "-o 1 -m 1" ;;
	esac
}

# lane L: runs i = L, L + jobs, ... < n; one line per run in /tmp/soak.runs.
lane() {
	local l=$1 i=$1 k=0 d args
	while [ $i -lt "$n" ]; do
		args=$(run_args $k)
		d=$dev
		if [ "$stack" != peer ] && [ $(((k / 4 + l) % 2)) = 1 ]; then d=mlx5_1; fi
		if /rdma-rs/verbs_workload -d "$d" $args >/tmp/soak.$l.out 2>&1; then
			echo "$i ok" >>/tmp/soak.runs
		else
			echo "$i FAIL $d $args" >>/tmp/soak.runs
			echo "soak: run $i ($d $args) failed:"
			grep '^R fail' /tmp/soak.$l.out | head -n 3
		fi
		# Lane 0 reports about every 50 runs of all lanes.
		if [ "$l" = 0 ] && [ $(((k + 1) * jobs % 50)) -lt "$jobs" ]; then
			echo "soak: $(wc -l </tmp/soak.runs)/$n runs, $(($(date +%s) - t0)) s, $(grep -c FAIL /tmp/soak.runs) failed, slab $(slab_kb) kB, $(res_counts)"
		fi
		i=$((i + jobs))
		k=$((k + 1))
	done
}

# vm_soak (suite of mode soak). Its settings and the lanes' shared state
# are globals: the lanes run as background subshells of this function.
soak_suite() {
	local arg l fails runs before_res after_res before_slab after_slab t1 f
	n=100
	jobs=2
	stack=peer
	for arg in $(cat /proc/cmdline); do
		case "$arg" in
		rdmars.n=*) n=${arg#rdmars.n=} ;;
		rdmars.jobs=*) jobs=${arg#rdmars.jobs=} ;;
		rdmars.stack=*) stack=${arg#rdmars.stack=} ;;
		esac
	done
	echo "soak: stack $stack, $n runs, $jobs lanes"
	if [ "$stack" = peer ]; then
		peer_up
		dev=rxe0
	else
		load_ours sim=ib,eth
		dev=mlx5_0
	fi
	# One warm-up run per device so that one-time allocations are not counted
	# as growth.
	/rdma-rs/verbs_workload -d "$dev" -m 1 >/dev/null 2>&1
	[ "$stack" = peer ] || /rdma-rs/verbs_workload -d mlx5_1 -m 1 >/dev/null 2>&1
	echo 3 >/proc/sys/vm/drop_caches
	before_res=$(res_counts)
	before_slab=$(slab_kb)
	slab_caches >/tmp/slab.before
	: >/tmp/soak.runs
	t0=$(date +%s)
	l=0
	while [ $l -lt "$jobs" ]; do
		lane $l &
		l=$((l + 1))
	done
	wait
	t1=$(date +%s)
	echo 3 >/proc/sys/vm/drop_caches
	after_res=$(res_counts)
	after_slab=$(slab_kb)
	slab_caches >/tmp/slab.after
	fails=$(grep -c FAIL /tmp/soak.runs)
	runs=$(wc -l </tmp/soak.runs)
	echo "soak: $runs runs of verbs_workload ($stack, $jobs lanes) in $((t1 - t0)) s, $fails failed"
	echo "soak: restrack before: $before_res"
	echo "soak: restrack after:  $after_res"
	echo "soak: slab before ${before_slab} kB, after ${after_slab} kB, delta $((after_slab - before_slab)) kB"
	echo "soak: slab caches that grew most (bytes in use, before -> after):"
	awk 'NR == FNR { b[$1] = $2; next } { print $2 - b[$1], $1, b[$1] + 0, $2 }' /tmp/slab.before /tmp/slab.after |
		sort -rn | head -n 8 |
		awk '{ printf "soak:   %-28s %10d -> %10d (%+d)\n", $2, $3, $4, $1 }'
	if [ "$fails" = 0 ] && [ "$runs" = "$n" ]; then
		t_ok "$n workload runs pass"
	else
		t_fail "$n workload runs pass" "$fails of $runs failed"
	fi
	if [ "$before_res" = "$after_res" ]; then t_ok "restrack counts back to baseline"; else t_fail "restrack counts back to baseline"; fi
	if [ "$stack" != peer ]; then
		for f in mlx5_ib_rs.rdma.0 mlx5_ib_rs.rdma.1; do
			t_check "$f: the simulator holds only the kernel PD and UAR after $n runs" fwsim_resources_probed $f
		done
	fi
	if [ "$stack" = peer ]; then peer_down; else unload_ours; fi
	kmemleak_check
}

[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode soak
