# `make demo` inside the VM: our stack with a simulated ConnectX, then what
# rdma-core sees of it.
. /rdma-rs/lib.sh
. /rdma-rs/ours.sh

suite_begin demo
load_ours
echo
echo "================ rdma-rs demo ================"
echo "Loaded: $(lsmod | awk '/_rs / { print $1 }' | tr '\n' ' ')"
for cmd in "ibv_devinfo -v" "rdma dev" "rdma link" "rdma res"; do
	echo
	echo "\$ $cmd"
	$cmd 2>&1
done
echo
echo "Not there yet: the firmware simulator and the mlx5 driver's device"
echo "binding are not implemented, so no RDMA device is registered and the"
echo "commands above find none. See the open issues in README.md."
echo "=============================================="
unload_ours
suite_end
