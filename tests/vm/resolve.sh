# SPDX-License-Identifier: GPL-2.0
# VM mode `resolve` (tools/vm.sh resolve KBUILD LOG): RoCE address resolution through the IP
# stack and VLAN GIDs (vm_roce_ip), the fuzzer on IP GIDs (vm_fuzz_mlx5) and the fault sweep
# of AVs from an IP GID (vm_faults_ip).
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"
[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode resolve
