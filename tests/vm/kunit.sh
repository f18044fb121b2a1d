# SPDX-License-Identifier: GPL-2.0
# VM mode `kunit` (tools/vm.sh kunit KBUILD LOG): only our modules' KUnit
# suites (they run at insmod), the unload and the fabric suite, for a quick
# iteration on one layer; `make check` runs them too (suites.list).
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"

[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode kunit
