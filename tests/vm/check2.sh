# SPDX-License-Identifier: GPL-2.0
# The second VM of `make check`: every suite of mode `check2` in suites.list,
# in its order (the data-path programs and the uverbs fuzzer's slice, then a
# kmemleak scan). tools/check.sh boots it after the emulated PCI function's VM,
# beside the first VM (tests/vm/check.sh), so that `make check` takes about as
# long as the longer of the two. The list is the only one: add a suite there.
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"
run_mode check2
