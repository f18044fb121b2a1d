# SPDX-License-Identifier: GPL-2.0
# Mode cmib: rdma_cm on InfiniBand (AF_IB, routes from the SA) and the cost of the rping and rxe
# comparison suites (tests/vm/cm.sh, tests/vm/cmib_ib.sh), KUnit skipped.
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"
if [ "${RDMARS_SOURCED:-}" != 1 ]; then
	touch /tmp/kunit-ran.ib_core_rs /tmp/kunit-ran.mlx5_ib_rs
	run_mode cmib
fi
