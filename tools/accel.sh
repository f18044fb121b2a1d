#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Which QEMU accelerator the test VMs use: prints `kvm` or `tcg` on stdout, the reason on
# stderr. KVM only when /dev/kvm is usable: a guest actually runs under it (a boot sector
# that writes to QEMU's isa-debug-exit port, so QEMU exits with status 99 at once), and,
# given a kernel image, that kernel boots under it to its no-root-file-system panic. A
# /dev/kvm that cannot run a guest, or hangs one (nested virtualisation), gives TCG. The
# verdict is kept in the kernel cache's accel-<hash> (or out/) until the host reboots or the
# kernel image changes.
#   tools/accel.sh [QEMU [BZIMAGE]]    RDMARS_ACCEL=kvm|tcg skips the probe
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
qemu=${1:-qemu-system-x86_64}
kernel=${2:-}

case ${RDMARS_ACCEL:-} in
kvm | tcg)
	echo "$RDMARS_ACCEL"
	echo "accel: $RDMARS_ACCEL (RDMARS_ACCEL)" >&2
	exit 0
	;;
esac

boot=$(cat /proc/sys/kernel/random/boot_id 2>/dev/null || echo unknown)
key="$boot $qemu ${kernel:+$kernel $(stat -c %Y "$kernel" 2>/dev/null)}"
# Kept with the kernel cache (every clone of the tree on this host shares it), else in out/.
cachedir=${RDMA_RS_CACHE:-/var/cache/rdma-rs}
{ mkdir -p "$cachedir" && [ -w "$cachedir" ]; } 2>/dev/null || cachedir="$here/out"
cache="$cachedir/accel-$(printf '%s' "$key" | sha256sum | cut -c1-12)"
if [ -f "$cache" ] && [ "$(sed -n 1p "$cache")" = "$key" ]; then
	sed -n 2p "$cache"
	sed -n '3,$p' "$cache" >&2
	exit 0
fi

verdict() { # ACCEL REASON
	mkdir -p "$cachedir"
	printf '%s\n%s\n%s\n' "$key" "$1" "accel: $1 ($2)" >"$cache.$$" && mv "$cache.$$" "$cache"
	echo "$1"
	echo "accel: $1 ($2)" >&2
	exit 0
}

if [ ! -e /dev/kvm ]; then
	verdict tcg "no /dev/kvm"
elif [ ! -r /dev/kvm ] || [ ! -w /dev/kvm ]; then
	verdict tcg "/dev/kvm is not readable and writable by $(id -un)"
fi
grep -qwE 'vmx|svm' /proc/cpuinfo || flags="; the CPU flags show neither vmx nor svm"

# A boot sector: mov al, 0x31; out 0xf4, al; hlt; jmp $. isa-debug-exit turns the byte
# into QEMU's exit status (0x31 << 1 | 1 = 99).
img=$(mktemp)
trap 'rm -f "$img"' EXIT
{
	printf '\xb0\x31\xe6\xf4\xf4\xeb\xfe'
	head -c 503 /dev/zero
	printf '\x55\xaa'
} >"$img"
rc=0
timeout -k 5 20 "$qemu" -accel kvm -machine pc -m 16 -nodefaults -display none -no-reboot \
	-device isa-debug-exit,iobase=0xf4,iosize=0x04 -drive "format=raw,file=$img,if=ide" \
	</dev/null >/dev/null 2>"$img.err" || rc=$?
err=$(head -n 1 "$img.err" 2>/dev/null)
rm -f "$img.err"
case $rc in
99) ;;
124 | 137) verdict tcg "a guest under -accel kvm did not finish in 20 s${flags:-}" ;;
*) verdict tcg "qemu -accel kvm failed (exit $rc${err:+: $err})${flags:-}" ;;
esac
[ -n "$kernel" ] || verdict kvm "a guest ran under -accel kvm${flags:-}"

# The kernel without an initramfs: it boots, finds no root file system and panics;
# panic=-1 reboots at once and -no-reboot turns that into QEMU's exit.
out=$(timeout -k 5 90 "$qemu" -accel kvm -m 512 -smp 2 -nographic -nodefaults -no-reboot \
	-serial stdio -kernel "$kernel" -append "console=ttyS0 panic=-1 no_timer_check" </dev/null 2>&1)
rc=$?
if printf '%s\n' "$out" | grep -q 'Kernel panic'; then
	verdict kvm "a guest and $(basename "$kernel") ran under -accel kvm${flags:-}"
elif [ $rc = 124 ] || [ $rc = 137 ]; then
	verdict tcg "$kernel did not reach its panic under -accel kvm in 90 s (last line: $(printf '%s\n' "$out" | tr -d '\r' | grep . | tail -n 1))${flags:-}"
else
	verdict tcg "$kernel under -accel kvm: qemu exit $rc without the expected panic${flags:-}"
fi
