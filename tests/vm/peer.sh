# SPDX-License-Identifier: GPL-2.0
# The upstream C stack as a peer: ib_core + ib_uverbs + rdma_rxe on one end
# of a veth pair (no QEMU NIC needed). Runs as its own mode and inside check.
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"
. "${RDMARS_DIR:-/rdma-rs}/sysfs_compare.sh"

peer_up() {
	t_check "modprobe ib_uverbs rdma_rxe" modprobe -a ib_uverbs rdma_rxe
	t_check "modprobe veth" modprobe veth
	t_check "ip link add veth0/veth1" ip link add veth0 type veth peer name veth1
	t_check "ip link set veth0 up" ip link set veth0 up
	t_check "ip link set veth1 up" ip link set veth1 up
	t_check "rdma link add rxe0" rdma link add rxe0 type rxe netdev veth0
}

peer_devinfo() {
	echo "+ ibv_devinfo"
	ibv_devinfo >/tmp/peer-devinfo 2>&1
	local rc=$?
	sed 's/^/    devinfo| /' /tmp/peer-devinfo
	if [ $rc = 0 ] && grep -q '^hca_id:[[:space:]]*rxe0' /tmp/peer-devinfo; then
		t_ok "ibv_devinfo lists rxe0 (upstream peer)"
	else
		t_fail "ibv_devinfo lists rxe0 (upstream peer)" "exit $rc"
	fi
	echo "+ rdma dev"
	rdma dev | sed 's/^/    rdma| /'
	sysfs_snapshot /sys/class/infiniband/rxe0 >/tmp/sysfs-rxe
}

# The project's libibverbs workload against rxe0: both teardown orders, and
# a run that exits without destroying anything (the kernel cleans up).
peer_workload() {
	# The run compared with ours (vm_workload_vs_rxe): MRs up to 256 MiB, as there.
	t_import "workload rxe0 order 0, MRs up to 256 MiB" /rdma-rs/verbs_workload -d rxe0 -o 0 -m 256
	cp /tmp/import.out /tmp/wl-rxe0.out
	t_import "workload rxe0 order 1" /rdma-rs/verbs_workload -d rxe0 -o 1 -m 16
	t_import "workload rxe0 exit without destroy" /rdma-rs/verbs_workload -d rxe0 -x -m 1
	# The held run whose `rdma res` lines vm_workload_vs_rxe compares with mlx5_1's.
	mlx5_res_while_held rxe0
	echo "+ rdma res (after the workloads exited)"
	rdma res | sed 's/^/    rdma| /'
}

peer_down() {
	t_check "rdma link delete rxe0" rdma link delete rxe0
	t_check "ip link del veth0" ip link del veth0
	t_check "rmmod rdma_rxe" modprobe -r rdma_rxe
	t_check "rmmod ib_uverbs" modprobe -r ib_uverbs
	t_check "rmmod ib_core" modprobe -r ib_core
	t_check "rmmod veth" modprobe -r veth
	echo "+ lsmod"
	lsmod
}

# vm_peer_rxe: the upstream stack up, ibv_devinfo, the workload, down.
peer_rxe_suite() {
	peer_up
	peer_devinfo
	peer_workload
	peer_down
}

# vm_sysfs_vs_rxe: our sysfs next to upstream rxe's (snapshots taken by
# vm_core_sysfs_nldev and vm_peer_rxe).
sysfs_vs_rxe_suite() {
	sysfs_compare /tmp/sysfs-ours /tmp/sysfs-rxe
}

# Standalone: the VM mode `peer` (its suites are in suites.list).
[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode peer
