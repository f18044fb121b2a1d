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
echo "What the driver's probe read from them (QUERY_HCA_CAP, QUERY_ADAPTER, ALLOC_PD):"
dmesg | grep 'allocated and freed' | sed 's/^\[[^]]*\] //'
for cmd in "ibv_devinfo -v" "rdma dev" "rdma link" "rdma res"; do
	echo
	echo "\$ $cmd"
	$cmd 2>&1
done
echo
echo "Not there yet: the driver binds the simulated functions and runs their"
echo "first firmware commands, but RDMA device registration (the mlx5 driver"
echo "issue) is not implemented, so the commands above find no RDMA device."
echo "=============================================="
unload_ours
suite_end
