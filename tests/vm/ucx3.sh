# SPDX-License-Identifier: GPL-2.0
# The VM mode `ucx3`: the suites of issue 39's REREG_MR in place and steering capabilities,
# for short runs (every suite of mode `ucx3` in suites.list, then a kmemleak scan).
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"
[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode ucx3
