#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Boots the test VM in a mode (check, peer, demo, shell).
#   tools/vm.sh MODE KBUILD LOG
# The initramfs is rebuilt from the current modules and scripts. QEMU runs
# with KVM where /dev/kvm runs a guest and the test kernel (tools/accel.sh; RDMARS_ACCEL=
# kvm|tcg decides), else with TCG; no NIC, the serial console on stdio. In
# non-interactive modes the console is written to LOG, each suite's start and result
# are printed as they appear in it (`==> suite NAME: ok (N s)`), and the VM is killed
# after RDMARS_VM_TIMEOUT seconds (default 900).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/tools/lib.sh"
mode=$1
kb=$2
log=$3
mkdir -p "$(dirname "$log")" "$here/out"
# One initramfs per mode: `make check` boots the pcifn VM beside the main one.
initrd="$here/out/initramfs-$mode.cpio.gz"
# Two VMs starting together build the same binaries: one at a time, up to the boot.
exec 8>"$here/out/.vm-build.lock"
flock 8
# The project's user-space test programs (tests/userspace/), built against
# the host's rdma-core 44 (the same libraries the initramfs carries).
mkdir -p "$here/out/vm-bin"
for src in "$here"/tests/userspace/*.c; do
	bin="$here/out/vm-bin/$(basename "$src" .c)"
	# Their shared helpers (tests/userspace/rdmars_test.h) count as part of each.
	if [ ! -x "$bin" ] || [ "$src" -nt "$bin" ] ||
		[ "$here/tests/userspace/rdmars_test.h" -nt "$bin" ]; then
		# A program names extra libraries in a " * LDLIBS: ..." comment line (devx_test: -lmlx5).
		libs=$(sed -n 's/^ \* LDLIBS: //p' "$src")
		# shellcheck disable=SC2086
		gcc -O2 -Wall -Wextra -Werror -o "$bin" "$src" -libverbs $libs || die "building $src failed"
	fi
done
# The uverbs fuzzer (host/uverbs-fuzz), linked statically: it needs no
# library that the initramfs does not carry.
(cd "$here" && RUSTFLAGS="-C target-feature=+crt-static" cargo build --quiet --release \
	-p rdma-rs-uverbs-fuzz --target x86_64-unknown-linux-gnu --target-dir "$here/out/fuzz-target") ||
	die "building the uverbs fuzzer failed"
cp "$here/out/fuzz-target/x86_64-unknown-linux-gnu/release/uverbs_fuzz" "$here/out/vm-bin/uverbs_fuzz"
case $mode in bench*) export RDMARS_INITRD_PERF=1 ;; esac
timed "vm: initramfs" "$here/tools/initramfs.sh" "$kb" "$initrd"
flock -u 8
exec 8>&-

# no_timer_check: under TCG on a loaded host the boot-time check that the IO-APIC timer
# ticks can miss its window and panic ("IO-APIC + timer doesn't work!"); the timer works.
# tsc=reliable: under TCG the guest's TSC follows the host clock, but on a loaded host the
# clocksource watchdog sees the HPET's emulation lag, marks the TSC unstable and switches to
# the HPET; then perftest's CPU clock calibration (rdtsc against gettimeofday) can fail and a
# latency test's server prints `inf` (seen in make check with two VMs side by side).
# RDMARS_QEMU: another QEMU binary (tools/qemu-vfio-user.sh's wrapper for `make pcifn`);
# RDMARS_QEMU_ARGS: extra arguments (word-split), e.g. shared memory and a vfio-user device.
accel=$("$here/tools/accel.sh" "${RDMARS_QEMU:-qemu-system-x86_64}" "$kb/arch/x86/boot/bzImage" 2>"$here/out/accel-$mode.why") ||
	accel=tcg
# shellcheck disable=SC2206
qemu=(${RDMARS_QEMU:-qemu-system-x86_64} -accel "$accel" -m "${RDMARS_VM_MEM:-3G}" -smp 2 -nographic -no-reboot -nic none
	${RDMARS_QEMU_ARGS:-}
	-kernel "$kb/arch/x86/boot/bzImage" -initrd "$initrd"
	-append "console=ttyS0 no_timer_check tsc=reliable panic=-1 oops=panic loglevel=7 kasan.fault=report rdmars.mode=$mode rdmars.accel=$accel ${RDMARS_VM_ARGS:-}")
if [ "$mode" = shell ]; then
	exec "${qemu[@]}"
fi
step "vm: booting ($mode) with $accel: $(sed 's/^accel: [a-z]* //' "$here/out/accel-$mode.why"); console log: $log"
t0=$(date +%s)

# follow_suites LOG QEMU_PID: prints each suite's start and result while the console log
# grows, until QEMU exits. A user-space suite begins with `--- suite NAME` (tests/vm/lib.sh),
# a KUnit suite with its `# Subtest: NAME` line; both end with their top-level KTAP line
# `ok N NAME` / `not ok N NAME` (the kernel's timestamp prefix stripped).
follow_suites() {
	local line name t now
	local -A began=()
	while IFS= read -r line; do
		line=${line%$'\r'}
		[[ $line =~ ^\[\ *[0-9]+\.[0-9]+\]\ (.*)$ ]] && line=${BASH_REMATCH[1]}
		printf -v now '%(%s)T' -1
		if [[ $line =~ ^---\ suite\ ([^ ]+)$ ]]; then
			name=${BASH_REMATCH[1]}
			began[$name]=$now
			printf '==> suite %s: started (%s)\n' "$name" "$mode" >&2
		elif [[ $line =~ ^\ {4}#\ Subtest:\ ([^ ]+)$ ]]; then
			[ -n "${began[${BASH_REMATCH[1]}]:-}" ] || began[${BASH_REMATCH[1]}]=$now
		elif [[ $line =~ ^(not\ )?ok\ [0-9]+\ ([^ #]+)(\ #\ SKIP.*)?$ ]] && [ -n "${began[${BASH_REMATCH[2]}]:-}" ]; then
			name=${BASH_REMATCH[2]}
			t=$((now - ${began[$name]}))
			unset "began[$name]"
			if [ -n "${BASH_REMATCH[1]}" ]; then
				printf '==> suite %s: FAIL (%s s, %s; see %s)\n' "$name" "$t" "$mode" "$log" >&2
			elif [ -n "${BASH_REMATCH[3]}" ]; then
				printf '==> suite %s: skipped (%s s, %s)\n' "$name" "$t" "$mode" >&2
			else
				printf '==> suite %s: ok (%s s, %s)\n' "$name" "$t" "$mode" >&2
			fi
		fi
	done < <(tail -n +1 -F --pid="$2" "$1" 2>/dev/null)
}

# QEMU itself dying of a signal before the guest's init printed its mode (seen once in CI:
# SIGABRT, exit 134, 10 s after the start, beside the pcifn VM) is the emulator's failure,
# not a test's: nothing of the project ran yet. Its output goes to stderr and to LOG.crashed,
# and the VM boots once more. Any later failure (a guest panic, a timeout) stands.
for attempt in 1 2; do
	rc=0
	: >"$log"
	timeout -k 10 "${RDMARS_VM_TIMEOUT:-900}" "${qemu[@]}" </dev/null >"$log" 2>&1 &
	qpid=$!
	follow_suites "$log" "$qpid" &
	fpid=$!
	wait "$qpid" || rc=$?
	wait "$fpid" 2>/dev/null || true
	if [ $attempt = 2 ] || [ $rc -le 128 ] || [ $rc = 137 ] || grep -q 'rdma-rs VM: mode ' "$log"; then
		break
	fi
	cp "$log" "$log.crashed"
	printf '==> vm: %s: QEMU died before the guest ran (exit %s); its last lines:\n' "$mode" "$rc" >&2
	tail -n 15 "$log" | sed 's/^/    /' >&2
	step "vm: booting ($mode) again"
done
if [ $rc = 124 ] || [ $rc = 137 ]; then
	echo "rdma-rs: VM timed out after ${RDMARS_VM_TIMEOUT:-900} s; killed" >>"$log"
fi
printf '==> vm: %s run: %ss with %s (qemu exit %s); console log: %s\n' "$mode" "$(($(date +%s) - t0))" "$accel" "$rc" "$log" >&2
