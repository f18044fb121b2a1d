# `make soak`: runs the libibverbs workload N times (rdmars.n=, default 100)
# against a device and checks that nothing grows: restrack counts (`rdma
# res`) return to their baseline; slab usage is printed before and after.
# Every 4th run exits without destroying anything; runs alternate teardown
# orders. The device: rdmars.stack=peer (default: rdma_rxe on veth) or ours.
. /rdma-rs/lib.sh
. /rdma-rs/ours.sh
RDMARS_SOURCED=1 . /rdma-rs/peer.sh

n=100
stack=peer
for arg in $(cat /proc/cmdline); do
	case "$arg" in
	rdmars.n=*) n=${arg#rdmars.n=} ;;
	rdmars.stack=*) stack=${arg#rdmars.stack=} ;;
	esac
done

slab_kb() { awk '/^Slab:/ { print $2 }' /proc/meminfo; }
res_counts() { rdma res | sed 's/^[0-9]*: //'; }

suite_begin "vm_soak_$stack"
if [ "$stack" = peer ]; then
	peer_up
	dev=rxe0
else
	load_ours sim=ib,eth
	# Both simulated functions, alternately: mlx5_0 (InfiniBand), mlx5_1 (RoCE).
	dev=mlx5_0
fi
# One warm-up run so that one-time allocations are not counted as growth.
/rdma-rs/verbs_workload -d "$dev" -m 1 >/dev/null 2>&1
echo 3 >/proc/sys/vm/drop_caches
before_res=$(res_counts)
before_slab=$(slab_kb)
t0=$(date +%s)
fails=0
i=0
while [ $i -lt "$n" ]; do
	case $((i % 4)) in
	0) args="-o 0 -m 1" ;;
	1) args="-o 1 -m 1" ;;
	2) args="-o 0 -m 16" ;;
	3) args="-x -m 1" ;;
	esac
	d=$dev
	if [ "$stack" != peer ] && [ $((i / 4 % 2)) = 1 ]; then d=mlx5_1; fi
	/rdma-rs/verbs_workload -d "$d" $args >/tmp/soak.out 2>&1 || {
		fails=$((fails + 1))
		grep '^R fail' /tmp/soak.out | head -n 3
	}
	i=$((i + 1))
	if [ $((i % 50)) = 0 ]; then
		echo "soak: $i/$n runs, $(($(date +%s) - t0)) s, $fails failed, slab $(slab_kb) kB, $(res_counts | tr '\n' ' ')"
	fi
done
t1=$(date +%s)
echo 3 >/proc/sys/vm/drop_caches
after_res=$(res_counts)
after_slab=$(slab_kb)
echo "soak: $n runs of verbs_workload on $dev in $((t1 - t0)) s"
echo "soak: restrack before: $before_res"
echo "soak: restrack after:  $after_res"
echo "soak: slab before ${before_slab} kB, after ${after_slab} kB, delta $((after_slab - before_slab)) kB"
if [ $fails = 0 ]; then t_ok "$n workload runs pass"; else t_fail "$n workload runs pass" "$fails failed"; fi
if [ "$before_res" = "$after_res" ]; then t_ok "restrack counts back to baseline"; else t_fail "restrack counts back to baseline"; fi
if [ "$stack" != peer ]; then
	for f in mlx5_ib_rs.rdma.0 mlx5_ib_rs.rdma.1; do
		t_check "$f: the simulator holds only the kernel PD and UAR after $n runs" fwsim_resources_probed $f
	done
fi
if [ "$stack" = peer ]; then peer_down; else unload_ours; fi
kmemleak_check
suite_end
