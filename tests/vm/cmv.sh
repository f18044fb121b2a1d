# SPDX-License-Identifier: GPL-2.0
# Mode cmv: the rdma_cm suites of check2 (tests/vm/cm.sh: vm_cm_verify, vm_cm_verify_rxe), for
# quick runs.
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"
[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode cmv
