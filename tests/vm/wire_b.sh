# SPDX-License-Identifier: GPL-2.0
# VM mode `wire_b`: VM B of make wire (tools/wire.sh; the suites are in wire.sh).
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"
[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode wire_b
