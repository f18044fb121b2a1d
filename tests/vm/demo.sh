# `make demo` inside the VM: our stack with a simulated ConnectX, then what
# rdma-core sees of it.
. /rdma-rs/lib.sh
. /rdma-rs/ours.sh

suite_begin demo
load_ours sim=ib,eth
echo
echo "================ rdma-rs demo ================"
echo "Loaded: $(lsmod | awk '/_rs / { print $1 }' | tr '\n' ' ')"
echo
echo "Simulated ConnectX functions (mlx5_ib_rs sim=ib,eth), as auxiliary devices:"
ls /sys/bus/auxiliary/devices/
fwsim_show
echo
echo "What the driver's probe read from them and the RDMA devices it registered:"
dmesg | grep 'registered as mlx5_' | sed 's/^\[[^]]*\] //'
for cmd in "ibv_devinfo -v" "rdma dev" "rdma link" "rdma res"; do
	echo
	echo "\$ $cmd"
	$cmd 2>&1
done
echo
echo "mlx5_0 (InfiniBand) and mlx5_1 (RoCE) are registered with ib_core_rs;"
echo "ibv_devinfo needs the uverbs char devices and the mlx5 user ABI (not yet)."
echo "=============================================="
unload_ours
suite_end
