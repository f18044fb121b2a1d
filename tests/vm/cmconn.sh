# SPDX-License-Identifier: GPL-2.0
# Mode cmconn: the rdma_cm connection suite alone (tests/vm/cm.sh), for quick runs.
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"
[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode cmconn
