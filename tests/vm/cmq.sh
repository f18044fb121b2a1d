# SPDX-License-Identifier: GPL-2.0
# Mode cmq: vm_cm_verify, vm_cm_verify_rxe and vm_cm_removal alone (tests/vm/cm.sh), KUnit
# skipped.
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"
if [ "${RDMARS_SOURCED:-}" != 1 ]; then
	touch /tmp/kunit-ran.ib_core_rs /tmp/kunit-ran.mlx5_ib_rs
	run_mode cmq
fi
