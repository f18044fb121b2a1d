# SPDX-License-Identifier: GPL-2.0
# VM mode `roce_ip` (tools/vm.sh roce_ip KBUILD LOG): traffic by the RoCE IP GIDs
# (roce_ip_suite in roce_gid.sh); its suite also runs in check2.
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"
[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode roce_ip
