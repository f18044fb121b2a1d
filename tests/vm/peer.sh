# The upstream C stack as a peer: ib_core + ib_uverbs + rdma_rxe on a dummy
# netdev (no QEMU NIC needed). Runs as its own mode and inside check.
. /rdma-rs/lib.sh

peer_up() {
	t_check "modprobe ib_uverbs rdma_rxe" modprobe -a ib_uverbs rdma_rxe
	# dummy makes dummy0 by itself unless told not to.
	t_check "modprobe dummy" modprobe dummy numdummies=0
	t_check "ip link add dummy0" ip link add dummy0 type dummy
	t_check "ip link set dummy0 up" ip link set dummy0 up
	t_check "rdma link add rxe0" rdma link add rxe0 type rxe netdev dummy0
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
}

peer_down() {
	t_check "rdma link delete rxe0" rdma link delete rxe0
	t_check "ip link del dummy0" ip link del dummy0
	t_check "rmmod rdma_rxe" modprobe -r rdma_rxe
	t_check "rmmod ib_uverbs" modprobe -r ib_uverbs
	t_check "rmmod ib_core" modprobe -r ib_core
	t_check "rmmod dummy" modprobe -r dummy
	echo "+ lsmod"
	lsmod
}

if [ "${RDMARS_SOURCED:-}" != 1 ]; then
	suite_begin vm_peer_rxe
	peer_up
	peer_devinfo
	peer_down
	suite_end
fi
