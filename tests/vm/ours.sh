# Our stack: load, run the KUnit suites (they run at insmod), unload.
# Sourced by check.sh and demo.sh after lib.sh.
load_ours() {
	t_check "insmod ib_core_rs" insmod $RDMARS_MODS/ib_core_rs.ko
	t_check "insmod mlx5_ib_rs" insmod $RDMARS_MODS/mlx5_ib_rs.ko
	# The core's KUnit suites with a mock driver run at this insmod.
	t_check "insmod ib_core_rs_test" insmod $RDMARS_MODS/ib_core_rs_test.ko
}
unload_ours() {
	t_check "rmmod ib_core_rs_test" rmmod ib_core_rs_test
	t_check "rmmod mlx5_ib_rs" rmmod mlx5_ib_rs
	t_check "rmmod ib_core_rs" rmmod ib_core_rs
	if lsmod | grep -q '_rs '; then t_fail "no rdma-rs module left loaded"; else t_ok "no rdma-rs module left loaded"; fi
}
