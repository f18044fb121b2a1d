# SPDX-License-Identifier: GPL-2.0
# Mode cmib: rdma_cm on InfiniBand (vm_cm_ib, tests/vm/cm_ib.sh: AF_IB, routes from the SA,
# connections by LIDs) and the rdma_cm suites on RoCE it must leave working
# (tests/vm/cm.sh); ib_core_rs's KUnit suites run at its first load (ib_core_rs_sa_path and
# ib_core_rs_sa_mcmember judged).
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"
if [ "${RDMARS_SOURCED:-}" != 1 ]; then
	touch /tmp/kunit-ran.mlx5_ib_rs
	run_mode cmib
fi
