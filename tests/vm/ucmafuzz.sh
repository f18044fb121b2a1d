# SPDX-License-Identifier: GPL-2.0
# Mode ucmafuzz: the ucma fuzzer on ours and on upstream rxe, compared (tests/vm/fuzz.sh), and
# the leak scan; the modules' KUnit suites are skipped (modes kunit and cm run them).
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"
if [ "${RDMARS_SOURCED:-}" != 1 ]; then
	touch /tmp/kunit-ran.ib_core_rs /tmp/kunit-ran.mlx5_ib_rs
	run_mode ucmafuzz
fi
