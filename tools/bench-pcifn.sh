#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make bench-pcifn: the emulated ConnectX-7 function (Documentation/pcifn.md) under our stack
# and under upstream ib_core + ib_uverbs + mlx5_ib, one stack per boot, the boots
# alternating (ours, upstream, upstream, ours, ...: a drift of the host over the run falls on
# both), N_RUNS boots of each; then tools/bench-pcifn.py's table from their logs
# (Documentation/performance.md).
#   tools/bench-pcifn.sh KBUILD N_RUNS
# RDMARS_MODDIR: our modules built for KBUILD (the Makefile's bench-pcifn builds them);
# BENCH_ARGS: more kernel command-line parameters (tests/vm/bench_pcifn.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/tools/lib.sh"
kb=$1
runs=${2:-3}
logs=()
mkdir -p "$here/out/logs"
rm -f "$here"/out/logs/bench-pcifn-*.log
for r in $(seq 1 "$runs"); do
	if [ $((r % 2)) = 1 ]; then order="ours up"; else order="up ours"; fi
	for s in $order; do
		log="$here/out/logs/bench-pcifn-$s-$r.log"
		step "bench-pcifn: run $r of $runs, $s"
		RDMARS_VM_ARGS="rdmars.stack=$s rdmars.run=$r ${BENCH_ARGS:-}" RDMARS_VM_TIMEOUT=${RDMARS_VM_TIMEOUT:-1200} \
			"$here/tools/pcifn.sh" "$kb" "$log" ib bench_pcifn >/dev/null ||
			echo "bench-pcifn: the $s boot of run $r failed (see $log)"
		grep -E '^(not ok|FAIL:)' "$log" | sed "s/^/bench-pcifn: $s-$r: /" || true
		# The device's side of the boot (every firmware command and its status), for profiles.
		cp "$here/out/pcifn/server-bench_pcifn.log" "$here/out/logs/bench-pcifn-server-$s-$r.log" 2>/dev/null || true
		logs+=("$log")
	done
done
echo "================ rdma-rs on the emulated ConnectX-7 function: ours vs upstream mlx5_ib ================"
echo "kernel $(basename "$kb"); $runs boots of each stack, alternating; ${BENCH_ARGS:-default parameters}"
python3 "$here/tools/bench-pcifn.py" "${logs[@]}" | tee "$here/out/logs/bench-pcifn.table"
echo "(ratio > 1.0: ours is better; ours/upstream for rates, upstream/ours for *_ns, *_us, *_ms, *bytes*)"
echo "========================================================================================================"
