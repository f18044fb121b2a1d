# SPDX-License-Identifier: GPL-2.0
# Mode cmrm: rdma_cm under a device's removal (tests/vm/cm.sh: vm_cm_removal) alone, for quick runs.
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"
[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode cmrm
