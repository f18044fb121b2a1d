# SPDX-License-Identifier: GPL-2.0
# RoCE GID tables from netdevs (core/roce_gid.rs, upstream roce_gid_mgmt.c): the core's KUnit
# suite on the loopback netdev, then the simulated Ethernet functions' interfaces and their
# addresses compared with upstream rdma_rxe on a veth given the same addresses.
# VM mode `roce_gid` (tools/vm.sh roce_gid KBUILD LOG); its suites also run in check.
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"

# vm_roce_gid_core: ib_core_rs_test's `ib_core_rs_roce_gid` suite binds a mock RoCE device to
# `lo`; give lo its addresses first (127.0.0.1 and, on up, ::1).
roce_gid_core_suite() {
	t_check "ip link set lo up" ip link set lo up
	ip -4 addr show dev lo | grep -q 127.0.0.1 || ip addr add 127.0.0.1/8 dev lo
	echo "+ ip addr show dev lo"
	ip addr show dev lo | sed 's/^/    ip| /'
	# Only this suite of the modules' KUnit suites (the others belong to check and kunit).
	RDMARS_KUNIT_GLOB='ib_core_rs_roce_gid.*'
	load_ours
	load_core_tests
	unset RDMARS_KUNIT_GLOB
	unload_core_tests
	unload_ours
}

[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode roce_gid
