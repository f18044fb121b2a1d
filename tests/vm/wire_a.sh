# SPDX-License-Identifier: GPL-2.0
# VM mode `wire_a`: VM A of make wire (tools/wire.sh; the suites are in wire.sh).
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"
[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode wire_a
