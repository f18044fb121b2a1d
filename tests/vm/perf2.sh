# SPDX-License-Identifier: GPL-2.0
# VM mode `perf2`: the mlx5 raw uverbs suite and the libmlx5 workload (QUERY_CONTEXT,
# ibv_import_device()), for iterating on them alone.
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"
[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode perf2
