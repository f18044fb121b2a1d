#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Installs a QEMU with the vfio-user client (`-device vfio-user-pci`, QEMU >= 10.1)
# for the emulated-PCI-function boot (Documentation/pcifn.md), cached like the kernel:
#
#   $CACHE/qemu-trixie/root/    trixie-backports qemu-system-x86 and its whole dependency
#                               closure from trixie (glibc included), unpacked with dpkg -x
#   $CACHE/qemu-trixie/qemu     wrapper: runs that QEMU through the root's own dynamic loader
#                               with the root's libraries, firmware and modules
#
# The host's apt state is not touched: a private apt configuration (trixie + trixie-backports)
# lives under $CACHE/qemu-trixie/apt. No maintainer scripts run and nothing is installed on
# the host. Run by `make setup` (tools/setup.sh) and by `make pcifn`; `make check` does not boot it.
# Prints the wrapper's path. First run: about 10 s (90 packages, 200 MB unpacked); cached: instant.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/tools/lib.sh"

dir="$CACHE/qemu-trixie"
root="$dir/root"
wrapper="$dir/qemu"
stamp="$dir/.done-11.1"

if [ -f "$stamp" ] && [ -x "$wrapper" ]; then
	echo "$wrapper"
	exit 0
fi
command -v apt-get >/dev/null || die "apt-get is needed to fetch trixie's QEMU"

t0=$(date +%s)
apt="$dir/apt"
rm -rf "$dir.tmp"
mkdir -p "$dir.tmp/apt/etc/sources.list.d" "$dir.tmp/apt/etc/preferences.d" \
	"$dir.tmp/apt/state/lists/partial" "$dir.tmp/apt/cache/archives/partial" "$dir.tmp/root"
cat >"$dir.tmp/apt/etc/sources.list.d/trixie.sources" <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: trixie trixie-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
# An empty dpkg status: apt resolves the complete closure, as for an empty root.
: >"$dir.tmp/apt/state/status"
chmod -R 777 "$dir.tmp/apt" # apt downloads as _apt
aptopts=(
	-o Dir::Etc::SourceList=/dev/null
	-o Dir::Etc::SourceParts="$dir.tmp/apt/etc/sources.list.d"
	-o Dir::Etc::Preferences=/dev/null
	-o Dir::Etc::PreferencesParts="$dir.tmp/apt/etc/preferences.d"
	-o Dir::State="$dir.tmp/apt/state"
	-o Dir::State::status="$dir.tmp/apt/state/status"
	-o Dir::Cache="$dir.tmp/apt/cache"
	-o APT::Architecture=amd64
	-o APT::Architectures::=amd64
	-o APT::Install-Recommends=false
	-o Debug::NoLocking=true
)
step "qemu-vfio-user: apt-get update (private trixie lists)"
apt-get "${aptopts[@]}" update -qq
step "qemu-vfio-user: downloading qemu-system-x86 from trixie-backports with its closure"
DEBIAN_FRONTEND=noninteractive apt-get "${aptopts[@]}" install -y -qq --download-only \
	-t trixie-backports qemu-system-x86 qemu-system-data ipxe-qemu seabios >/dev/null
n=0
for deb in "$dir.tmp/apt/cache/archives/"*.deb; do
	dpkg -x "$deb" "$dir.tmp/root"
	n=$((n + 1))
done
step "qemu-vfio-user: unpacked $n packages"

# Debian's merged /usr: /lib64 and /lib are links into usr/ in a real trixie root.
for l in lib lib64 bin sbin; do
	if [ -d "$dir.tmp/root/usr/$l" ] && [ ! -e "$dir.tmp/root/$l" ]; then
		ln -s "usr/$l" "$dir.tmp/root/$l"
	fi
done
cat >"$dir.tmp/qemu" <<'WRAP'
#!/bin/sh
# Runs trixie's QEMU from the private root next to this script (tools/qemu-vfio-user.sh).
d=$(dirname "$(readlink -f "$0")")/root
libs="$d/usr/lib/x86_64-linux-gnu:$d/usr/lib/x86_64-linux-gnu/pulseaudio:$d/usr/lib"
QEMU_MODULE_DIR="$d/usr/lib/x86_64-linux-gnu/qemu"
export QEMU_MODULE_DIR
exec "$d/usr/lib64/ld-linux-x86-64.so.2" --library-path "$libs" \
	"$d/usr/bin/qemu-system-x86_64" -L "$d/usr/share/qemu" -L "$d/usr/share/seabios" \
	-L "$d/usr/lib/ipxe/qemu" "$@"
WRAP
chmod +x "$dir.tmp/qemu"
rm -rf "$dir.tmp/apt/cache/archives"
rm -rf "$dir"
mv "$dir.tmp" "$dir"
ver=$("$wrapper" --version | head -1)
"$wrapper" -device help 2>/dev/null | grep -q '"vfio-user-pci"' ||
	die "$ver has no vfio-user-pci device"
touch "$stamp"
step "qemu-vfio-user: $ver with vfio-user-pci in $(($(date +%s) - t0))s"
echo "$wrapper"
