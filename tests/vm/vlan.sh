# SPDX-License-Identifier: GPL-2.0
# VM mode `vlan` (tools/vm.sh vlan KBUILD LOG): VLAN GIDs (vm_roce_vlan in roce_gid.sh); its
# suite also runs in check and roce_ip.
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"
[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode vlan
