#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# rdma-rs setup: host packages, Rust pieces, Linux 7.3 source.
# Idempotent: every step checks whether it is already done.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/tools/lib.sh"

need_root() { [ "$(id -u)" = 0 ] || die "setup needs root (apt-get); run as root or install the packages listed in tools/setup.sh"; }

# --- APT sources -------------------------------------------------------------
apt_sources() {
	local f=/etc/apt/sources.list.d/rdma-rs-backports.sources
	if [ ! -f "$f" ]; then
		need_root
		cat >"$f" <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports trixie-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
		rm -f "$STAMP_DIR/apt-updated"
	fi
	if [ ! -f "$STAMP_DIR/apt-updated" ]; then
		step "apt-get update"
		apt-get update -qq
		touch "$STAMP_DIR/apt-updated"
	fi
}

HOST_PKGS="flex bison bc libelf-dev libssl-dev cpio kmod busybox-static clang-19 lld-19 llvm-19 libclang-19-dev rsync"
# rdma-core user space that goes into the VM (bookworm's 44.0), with dev headers
# for the project's own verbs test programs; perftest for the data-path suites and
# make bench-traffic; infiniband-diags (ibstat, smpquery, perfquery over libibumad) and
# opensm for the management plane (tests/vm/umad.sh).
VM_PKGS="ibverbs-utils libibverbs1 libibverbs-dev ibverbs-providers rdma-core iproute2 perftest infiniband-diags libibumad3 opensm"
# UCX 1.13 (bookworm): ucx_info and ucx_perftest over the mlx5 transports (tests/vm/ucx.sh).
VM_PKGS="$VM_PKGS ucx-utils libucx0"
# tshark (Wireshark's dissectors) on the host: make wire dissects the two VMs' capture
# (tools/wire.sh).
HOST_PKGS="$HOST_PKGS tshark"
# librdmacm 44 (bookworm): rping, ucmatose, udaddy, mckey and the headers of
# tests/userspace/ucma_test.c (tests/vm/cm.sh).
VM_PKGS="$VM_PKGS rdmacm-utils librdmacm-dev"

apt_packages() {
	local missing=()
	for p in $HOST_PKGS $VM_PKGS; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		need_root
		step "apt-get install ${missing[*]}"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	fi
	if ! command -v qemu-system-x86_64 >/dev/null; then
		need_root
		step "apt-get install -t bookworm-backports qemu-system-x86"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			-t bookworm-backports qemu-system-x86 >/dev/null
	fi
}

rust_pieces() {
	if ! rustup component list --installed 2>/dev/null | grep -q '^rust-src'; then
		step "rustup component add rust-src"
		rustup component add rust-src
	fi
	if ! command -v bindgen >/dev/null || ! bindgen --version | grep -q '0.71.1'; then
		step "cargo install bindgen-cli 0.71.1 (about 75 s)"
		LIBCLANG_PATH=/usr/lib/llvm-19/lib cargo install --locked bindgen-cli --version 0.71.1
	fi
}

kernel_source() {
	if [ -f "$KSRC/Makefile" ]; then return; fi
	step "fetching linux-source-$KVER_MAJOR from trixie-backports"
	local tmp
	tmp=$(mktemp -d); chmod 777 "$tmp" # apt-get download runs as _apt
	(cd "$tmp" && apt-get download -qq "linux-source-$KVER_MAJOR" && dpkg -x linux-source-*.deb x)
	mkdir -p "$CACHE"
	local tarball
	tarball=$(ls "$tmp"/x/usr/src/linux-source-*.tar.xz)
	rm -rf "$KSRC.tmp"
	mkdir -p "$KSRC.tmp"
	tar -C "$KSRC.tmp" --strip-components=1 -xf "$tarball"
	mv "$KSRC.tmp" "$KSRC"
	rm -rf "$tmp"
}

# trixie's QEMU 11.1 with the vfio-user client, unpacked into the cache (no host packages
# change): the emulated ConnectX function's VM boots (make pcifn, vm_pcifn in make check).
# Documentation/pcifn.md, "The transport".
qemu_vfio_user() {
	"$here/tools/qemu-vfio-user.sh" >/dev/null
}

mkdir -p "$STAMP_DIR"
timed "setup: apt sources" apt_sources
timed "setup: packages" apt_packages
timed "setup: rust-src and bindgen" rust_pieces
timed "setup: kernel source" kernel_source
timed "setup: QEMU with the vfio-user client" qemu_vfio_user
