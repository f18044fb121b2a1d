# mlx5 user objects on the firmware simulator: raw uverbs write() commands
# with libmlx5's udata (tests/userspace/mlx5_user_raw.c: errnos, injected
# firmware failures, the simulator's tables), then Debian's libmlx5 through
# the libibverbs workload (UAR object + mmap at open, CQs, RC/UD QPs, MRs).
# VM mode `mlx5user`.
. /rdma-rs/lib.sh
. /rdma-rs/ours.sh

uverbs_of() {
	for d in /sys/class/infiniband_verbs/uverbs*; do
		[ "$(cat $d/ibdev)" = "$1" ] && basename $d
	done
}

kmemleak_clear
suite_begin vm_mlx5_user
load_ours sim=ib,eth
for n in 0 1; do
	fn=$FWSIM_DBG/mlx5_ib_rs.rdma.$n
	t_import "raw mlx5_$n" /rdma-rs/mlx5_user_raw /dev/infiniband/$(uverbs_of mlx5_$n) $fn
	t_import "libmlx5 mlx5_$n" /rdma-rs/verbs_workload -d mlx5_$n -m 1 -o 0
	t_import "libmlx5 mlx5_$n exit without destroy" /rdma-rs/verbs_workload -d mlx5_$n -m 1 -x
	cat $fn/resources
	t_check "mlx5_$n: the simulator holds only the kernel PD and UAR afterwards" fwsim_resources_probed mlx5_ib_rs.rdma.$n
done
unload_ours
suite_end
suite_begin vm_mlx5_user_leaks
kmemleak_check
suite_end
