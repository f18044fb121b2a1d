# SPDX-License-Identifier: GPL-2.0
# Mode cmv: the rdma_cm suites of check and check2 (tests/vm/cm.sh), the rxe comparison, the
# removal suite and the fault sweeps with ucma and multicast, for quick runs. The modules'
# KUnit suites are skipped (modes kunit and cm run them).
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"
if [ "${RDMARS_SOURCED:-}" != 1 ]; then
	touch /tmp/kunit-ran.ib_core_rs /tmp/kunit-ran.mlx5_ib_rs
	run_mode cmv
fi
