# SPDX-License-Identifier: GPL-2.0
# VM mode `resolve` (tools/vm.sh resolve KBUILD LOG): RoCE address resolution through the IP
# stack (vm_roce_ip), the link-local RoCE v2 GID traffic it takes part in (vm_pingpong), and
# the raw create_ah errnos (vm_mlx5_user). Each suite also runs in make check.
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"
[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode resolve
