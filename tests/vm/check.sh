# `make check` inside the VM: our modules with their KUnit suites, the
# upstream peer, then a kmemleak scan.
. /rdma-rs/lib.sh
. /rdma-rs/ours.sh
. /rdma-rs/fwsim.sh
. /rdma-rs/abs.sh
. /rdma-rs/sysfs.sh
. /rdma-rs/sysfs_compare.sh
RDMARS_SOURCED=1 . /rdma-rs/uverbs.sh
RDMARS_SOURCED=1 . /rdma-rs/peer.sh
RDMARS_SOURCED=1 . /rdma-rs/e2e.sh
RDMARS_SOURCED=1 . /rdma-rs/mlx5user.sh

kmemleak_clear

suite_begin vm_ours_lifecycle
load_ours
load_core_tests
unload_core_tests
unload_ours
suite_end

suite_begin vm_rust_abs
abs_suite
suite_end

suite_begin vm_core_sysfs_nldev
sysfs_suite
suite_end

suite_begin vm_upstream_conflict
abs_conflict_suite
suite_end

suite_begin vm_uverbs
uverbs_suite
suite_end

suite_begin vm_uverbs_unplug
uverbs_unplug_suite
suite_end

suite_begin vm_uverbs_peer
uverbs_peer_suite
suite_end

suite_begin vm_fwsim
fwsim_suite
suite_end

suite_begin vm_fwsim_fabrics
fwsim_fabric_suite
suite_end

suite_begin vm_e2e
e2e_suite
suite_end

suite_begin vm_mlx5_user
mlx5_user_suite
suite_end

suite_begin vm_mlx5_libmlx5
mlx5_libmlx5_suite
suite_end

suite_begin vm_mlx5_unplug
mlx5_unplug_suite
suite_end

suite_begin vm_peer_rxe
peer_up
peer_devinfo
peer_workload
peer_down
suite_end

suite_begin vm_workload_vs_rxe
workload_compare /tmp/wl-rxe0.out /tmp/wl-mlx5_1.out
suite_end

suite_begin vm_sysfs_vs_rxe
sysfs_compare /tmp/sysfs-ours /tmp/sysfs-rxe
suite_end

suite_begin vm_leaks
kmemleak_check
suite_end
