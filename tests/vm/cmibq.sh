# SPDX-License-Identifier: GPL-2.0
# Mode cmibq: the InfiniBand part of mode cmib alone (vm_cm_ib, vm_cm_ib_opensm,
# tests/vm/cm_ib.sh: AF_IB, the SA's paths and multicast groups, connections by LIDs), ib_core_rs's
# SA KUnit suites (ib_core_rs_sa_path, ib_core_rs_sa_mcmember) and the kmemleak scan.
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"
if [ "${RDMARS_SOURCED:-}" != 1 ]; then
	touch /tmp/kunit-ran.mlx5_ib_rs
	run_mode cmibq
fi
