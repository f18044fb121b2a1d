# mlx5 user objects on the firmware simulator. Sourced by check.sh
# (RDMARS_SOURCED=1: the raw suite) or run as the VM mode `mlx5user` (both).
#  - vm_mlx5_user: raw uverbs commands with libmlx5's udata
#    (tests/userspace/mlx5_user_raw.c): the UAR object and its mmap, PD, CQ
#    (write and ioctl), RC QP, MR, the errnos of bad requests, each create
#    command failed by the simulator's fault knob; the simulator's tables.
#  - vm_mlx5_libmlx5: Debian's libmlx5 through the libibverbs workload.
. /rdma-rs/lib.sh
. /rdma-rs/ours.sh

uverbs_of() {
	for d in /sys/class/infiniband_verbs/uverbs*; do
		[ "$(cat $d/ibdev)" = "$1" ] && basename $d
	done
}

mlx5_user_suite() {
	load_ours sim=ib,eth
	for n in 0 1; do
		fn=$FWSIM_DBG/mlx5_ib_rs.rdma.$n
		t_import "raw mlx5_$n" /rdma-rs/mlx5_user_raw /dev/infiniband/$(uverbs_of mlx5_$n) $fn
		t_check "mlx5_$n: the simulator holds only the kernel PD and UAR afterwards" fwsim_resources_probed mlx5_ib_rs.rdma.$n
	done
	unload_ours
}

mlx5_libmlx5_suite() {
	load_ours sim=ib,eth
	for n in 0 1; do
		t_import "libmlx5 mlx5_$n" /rdma-rs/verbs_workload -d mlx5_$n -m 1 -o 0
		t_import "libmlx5 mlx5_$n exit without destroy" /rdma-rs/verbs_workload -d mlx5_$n -m 1 -x
		t_check "mlx5_$n: the simulator holds only the kernel PD and UAR afterwards" fwsim_resources_probed mlx5_ib_rs.rdma.$n
	done
	unload_ours
}

if [ "${RDMARS_SOURCED:-}" != 1 ]; then
	kmemleak_clear
	suite_begin vm_mlx5_user
	mlx5_user_suite
	suite_end
	suite_begin vm_mlx5_libmlx5
	mlx5_libmlx5_suite
	suite_end
	suite_begin vm_mlx5_user_leaks
	kmemleak_check
	suite_end
fi
