# SPDX-License-Identifier: GPL-2.0
# Mode kcm: the kernel rdma_cm consumer suite alone (vm_cm_kernel, tests/vm/cm.sh), KUnit
# skipped.
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"
if [ "${RDMARS_SOURCED:-}" != 1 ]; then
	touch /tmp/kunit-ran.ib_core_rs /tmp/kunit-ran.mlx5_ib_rs
	run_mode kcm
fi
