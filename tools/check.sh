#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `make check`: every test of rdma-rs, ending with one line `N passed, N failed`.
# Steps: setup, rustfmt, host cargo tests, the import graph, the README's targets and suites,
# kernel (cached), module build (warnings are errors: RDMARS_WERROR=1), the install path, the
# VM (KUnit suites, user-space tests, the upstream peer, kmemleak) and, beside
# it, the VM of the emulated PCI function (tools/pcifn.sh) followed by the
# second test VM (mode check2); the log judge on all three. Full logs go to out/logs/.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/tools/lib.sh"
logs="$here/out/logs"
rm -rf "$logs"
mkdir -p "$logs"
t_start=$(date +%s)
passed=0 failed=0 skipped=0

fail_out() {
	echo "error: $1 (full logs: $logs)" >&2
	failed=$((failed + 1))
	summary
}
summary() {
	printf '==> check: %ss in all; logs in %s\n' "$(($(date +%s) - t_start))" "$logs" >&2
	echo "$passed passed, $failed failed, $skipped skipped"
	[ $failed = 0 ]
	exit $?
}
# result NAME STATUS: one harness-level test.
result() {
	if [ "$2" = 0 ]; then
		passed=$((passed + 1)); echo "  PASS $1"
	else
		failed=$((failed + 1)); echo "  FAIL $1 (see $logs)"
	fi
}

# tap_results LOG: the `ok ...` / `not ok ...` lines of a test script's LOG as results.
tap_results() {
	local line
	while read -r line; do
		case $line in
		"ok "*) passed=$((passed + 1)); echo "  PASS ${line#ok }" ;;
		"not ok "*) failed=$((failed + 1)); echo "  FAIL ${line#not ok }" ;;
		esac
	done < <(grep -E '^(not )?ok ' "$1")
}

quiet_setup() { "$here/tools/setup.sh" >"$logs/setup.log" 2>&1; }
timed "check: setup (packages, rust-src, bindgen, kernel source; idempotent)" quiet_setup || fail_out "setup failed"

# Formatting: the kernel's rustfmt config for module code, cargo fmt for host crates.
step "check: rustfmt"
ksrc_fmt="$KSRC/.rustfmt.toml"
rc=0
(cd "$here" && rustfmt --check --edition 2021 --config-path "$ksrc_fmt" \
	$(find core mlx5 uverbs rust tests/kunit tests/mockdev -name '*.rs' 2>/dev/null)) >"$logs/rustfmt.log" 2>&1 || rc=$?
result "rustfmt (module code)" $rc
rc=0
(cd "$here" && cargo fmt --all --check) >"$logs/cargo-fmt.log" 2>&1 || rc=$?
result "cargo fmt (host crates)" $rc

# Host tests of the pure code and of the harness itself.
rc=0
(cd "$here" && timed "check: cargo test" cargo test --workspace --quiet) >"$logs/cargo-test.log" 2>&1 || rc=$?
read -r hp hf hi < <(awk '/^test result:/ { p += $4; f += $6; i += $8 } END { print p+0, f+0, i+0 }' "$logs/cargo-test.log")
passed=$((passed + hp)); failed=$((failed + hf)); skipped=$((skipped + hi))
echo "  host cargo test: $hp passed, $hf failed, $hi ignored"
if [ $rc != 0 ] && [ "$hf" = 0 ]; then result "cargo test (build)" $rc; fi

# The PRM layout check against the kernel's mlx5_ifc.h.
if [ -x "$here/tools/prm-check/run.sh" ]; then
	rc=0
	"$here/tools/prm-check/run.sh" "$KSRC" >"$logs/prm-check.log" 2>&1 || rc=$?
	result "PRM layouts match mlx5_ifc.h" $rc
fi

# The user-ABI structs against the kernel's include/uapi/rdma headers.
if [ -x "$here/tools/uabi-check/run.sh" ]; then
	rc=0
	"$here/tools/uabi-check/run.sh" "$KSRC" >"$logs/uabi-check.log" 2>&1 || rc=$?
	result "user ABI structs match include/uapi/rdma" $rc
fi

# The architecture: no import cycle among the files of one folder, no upward core -> uverbs
# import, the unsafe boundary declared at every crate root (tools/modgraph.py).
rc=0
python3 "$here/tools/modgraph.py" --check >"$logs/modgraph.log" 2>&1 || rc=$?
sed 's/^/  /' "$logs/modgraph.log"
result "import graph: no cycle, no upward import (tools/modgraph.py)" $rc
# The checker itself: each fault it claims to catch, on a small tree that has it.
rc=0
python3 "$here/tools/modgraph.py" --self-test >"$logs/modgraph-self-test.log" 2>&1 || rc=$?
tap_results "$logs/modgraph-self-test.log"
[ $rc = 0 ] || grep -q '^not ok' "$logs/modgraph-self-test.log" || result "modgraph self-test ran (exit $rc)" $rc

# The README names only targets and suites that exist; make help lists every target.
"$here/tools/readme-check.sh" >"$logs/readme-check.log" 2>&1
tap_results "$logs/readme-check.log"
"$here/tools/doc-paths.sh" >"$logs/doc-paths.log" 2>&1
tap_results "$logs/doc-paths.log"
# Every shell script parses.
rc=0
(cd "$here" && for f in $(git ls-files '*.sh' tests/vm/init .ci/run); do bash -n "$f" || echo "$f"; done) \
	>"$logs/bash-n.log" 2>&1
[ -s "$logs/bash-n.log" ] && rc=1
result "every shell script parses (bash -n)" $rc

step "check: kernel (built once into $CACHE, then reused)"
kb=$(timed "check: kernel" "$here/tools/kernel.sh" 2> >(tee "$logs/kernel.log" | grep '^==>' >&2)) ||
	fail_out "kernel build failed"
rc=0
timed "check: module build" make -C "$kb" LLVM=$LLVM_SUFFIX M="$here" CLIPPY=1 RDMARS_WERROR=1 modules >"$logs/modules.log" 2>&1 || rc=$?
result "module build (clippy, warnings are errors)" $rc
[ $rc = 0 ] || { tail -n 30 "$logs/modules.log" >&2; fail_out "module build failed"; }

# The install path against the modules just built: install and uninstall into a staging
# root, DKMS's files against make install's, the preflight's refusals (seconds).
"$here/tools/install-test.sh" "$kb" >"$logs/install-test.log" 2>&1
tap_results "$logs/install-test.log"

# judge MODE LOG VERDICT: the log judge's verdict on one VM run, added to the totals.
judge() {
	local jrc=0 vp vf vs
	(cd "$here" && cargo run --quiet --release -p rdma-rs-vmlog -- --mode "$1" "$2") >"$3" 2>&1 || jrc=$?
	grep -v '^TOTAL ' "$3"
	read -r _ vp vf vs < <(grep '^TOTAL ' "$3" || echo "TOTAL 0 1 0")
	passed=$((passed + vp)); failed=$((failed + vf)); skipped=$((skipped + vs))
	if [ $jrc != 0 ] && [ "$vf" = 0 ]; then failed=$((failed + 1)); echo "  FAIL VM log judge, mode $1 (exit $jrc)"; fi
}

# The emulated ConnectX PCI function (Documentation/pcifn.md): upstream mlx5_core and
# mlx5_ib_rs on it, in a VM of its own (trixie's QEMU with the vfio-user client, the
# host/cxfn server), booted beside the main VM (two VMs: the machine's limit). The server's
# own checks (`ok`/`not ok` lines of tools/pcifn.sh) count as tests too.
# After it, in the same slot, the second VM of `make check` (mode check2: the data-path
# programs and the fuzzer's slice; its KUnit suites are the first VM's, so KUnit is off).
# The first VM (mode check) runs the rest meanwhile; both take about 8 minutes.
second_slot() {
	local rc=0 me=$BASHPID
	# Its VMs' suite results reach the terminal as they appear, beside the first VM's, until
	# this function's shell ends (`me`: inside the pipeline $BASHPID would be tail's own).
	tail -q -n +1 -F --pid=$me "$logs/pcifn-host.log" "$logs/check2-host.log" 2>/dev/null |
		grep --line-buffered '^==> suite' >&2 &
	timed "check: VM pcifn (the emulated PCI function, beside the main VM)" \
		"$here/tools/pcifn.sh" "$kb" "$logs/pcifn.log" >"$logs/pcifn-host.log" 2>&1 || rc=$?
	RDMARS_VM_ARGS="kunit.enable=0" RDMARS_VM_TIMEOUT=${RDMARS_VM_TIMEOUT:-2400} \
		timed "check: VM check2 (after pcifn)" "$here/tools/vm.sh" check2 "$kb" "$logs/console2.log" \
		>"$logs/check2-host.log" 2>&1
	return $rc
}
second_slot &
second_pid=$!

# The first VM: kill it only well past its usual time.
RDMARS_VM_TIMEOUT=${RDMARS_VM_TIMEOUT:-2400} timed "check: VM" "$here/tools/vm.sh" check "$kb" "$logs/console.log"
judge check "$logs/console.log" "$logs/verdict.txt"

pcrc=0
wait $second_pid || pcrc=$?
grep -h '^==>' "$logs/pcifn-host.log" "$logs/check2-host.log" | grep -v '^==> suite' >&2 || true
judge check2 "$logs/console2.log" "$logs/verdict2.txt"
result "pcifn VM (tools/pcifn.sh, see pcifn-host.log)" $pcrc
judge pcifn "$logs/pcifn.log" "$logs/verdict-pcifn.txt"
grep -E '^(not )?ok pcifn_server' "$logs/pcifn-host.log" >"$logs/pcifn-server.log"
tap_results "$logs/pcifn-server.log"
summary
