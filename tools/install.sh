#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Installs and removes the production modules and the modprobe configuration
# (the top-level Makefile's modules_install, install and uninstall targets).
#   tools/install.sh modules_install  ib_core_rs.ko and mlx5_ib_rs.ko into
#                                     <root>/lib/modules/<release>/updates/rdma-rs (Kbuild's
#                                     modules_install: it strips, signs, compresses as the
#                                     kernel's configuration says)
#   tools/install.sh install          modules_install, the modprobe configuration
#                                     (<root>/etc/modprobe.d/rdma-rs.conf), depmod
#   tools/install.sh uninstall        removes both modules (any compression) and the
#                                     configuration, then depmod; nothing else
#   tools/install.sh files            the files `install` writes, relative to the root
# Environment: KDIR (the build tree the modules were built against; for uninstall and
# files only its kernel release is read, KERNELRELEASE overrides it, the running kernel's
# release without either), DESTDIR or
# INSTALL_MOD_PATH (a staging root, default /), LLVM.
# The modules must have been built (make) first: the test modules that a test build adds
# (ib_core_rs_test, ib_core_rs_mockdev, rdma_rs_mock) are never installed.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

# The production modules and where they go, shared with dkms.conf (tools/install-test.sh
# checks that the two agree).
MODULES="ib_core_rs mlx5_ib_rs"
MOD_DIR=updates/rdma-rs
CONF=etc/modprobe.d/rdma-rs.conf

action=${1:-}
kdir=${KDIR:-/lib/modules/$(uname -r)/build}
root=${DESTDIR:-${INSTALL_MOD_PATH:-}}
root=${root%/}

die() { printf 'error: %s\n' "$*" >&2; exit 1; }

release() {
	if [ -n "${KERNELRELEASE:-}" ]; then
		echo "$KERNELRELEASE"
	elif [ -r "$kdir/include/config/kernel.release" ]; then
		cat "$kdir/include/config/kernel.release"
	elif [ -z "${KDIR:-}" ]; then
		uname -r
	else
		die "no kernel release: $kdir/include/config/kernel.release is missing (pass KDIR=<build tree> or KERNELRELEASE=<release>)"
	fi
}

run_depmod() { # RELEASE
	local dm
	dm=$(PATH="$PATH:/sbin:/usr/sbin" command -v depmod) || {
		echo "warning: no depmod (package kmod): run depmod $1 yourself" >&2
		return 0
	}
	if [ -n "$root" ]; then "$dm" -a -b "$root" "$1"; else "$dm" -a "$1"; fi
}

modules_install() {
	local rel order saved m built
	rel=$(release)
	for m in $MODULES; do
		[ -f "$here/$m.ko" ] || die "$here/$m.ko is missing: build the modules first (make KDIR=$kdir)"
		# A build for another kernel (the test kernel of make check, say) is not installed.
		built=$(PATH="$PATH:/sbin:/usr/sbin" modinfo -F vermagic "$here/$m.ko" 2>/dev/null | awk '{ print $1 }')
		[ -z "$built" ] || [ "$built" = "$rel" ] ||
			die "$m.ko is built for kernel $built, not $rel: build the modules for it first (make KDIR=$kdir)"
	done
	# Kbuild installs what modules.order lists; a test build lists the test modules too.
	# Kbuild reads it from the module directory, so the production list stands in for it
	# during the install and the build's own list is put back after.
	order="$here/modules.order"
	saved="$here/.modules.order.rdma-rs-install"
	[ -f "$order" ] && cp "$order" "$saved"
	trap '[ -f "$saved" ] && mv -f "$saved" "$order"' EXIT
	for m in $MODULES; do echo "$m.o"; done >"$order"
	make -C "$kdir" M="$here" ${LLVM:+LLVM=$LLVM} INSTALL_MOD_DIR="$MOD_DIR" \
		${root:+INSTALL_MOD_PATH=$root} modules_install
	if [ -f "$saved" ]; then mv -f "$saved" "$order"; else rm -f "$order"; fi
	trap - EXIT
	echo "installed: $(for m in $MODULES; do printf '%s ' "$root/lib/modules/$rel/$MOD_DIR/$m.ko"; done)"
}

install_conf() {
	install -D -m 0644 "$here/dist/rdma-rs-modprobe.conf" "$root/$CONF"
	echo "installed: $root/$CONF"
}

install_all() {
	local rel
	rel=$(release)
	modules_install
	install_conf
	run_depmod "$rel"
	cat <<EOF
rdma-rs is installed for kernel $rel. Upstream ib_core and mlx5_ib will not load from now
on (the list is in /$CONF). If the initramfs carries mlx5_core or ib_core, regenerate it:
  update-initramfs -u -k $rel     (Debian, Ubuntu)
  dracut -f --kver $rel           (Fedora, RHEL, SUSE)
Undo with: make uninstall KDIR=$kdir
EOF
}

uninstall() {
	local rel dir m f
	rel=$(release)
	dir="$root/lib/modules/$rel/$MOD_DIR"
	for m in $MODULES; do
		for f in "$dir/$m.ko" "$dir/$m.ko".{gz,xz,zst}; do
			[ -e "$f" ] || continue
			rm -f "$f"
			echo "removed: $f"
		done
	done
	# The directories install created, if nothing else is in them.
	rmdir "$dir" 2>/dev/null || true
	rmdir "$(dirname "$dir")" 2>/dev/null || true
	# The configuration is shared by every kernel: it stays while another kernel under
	# the root still has the modules.
	local others
	others=$(find "$root/lib/modules" -name 'ib_core_rs.ko*' 2>/dev/null |
		sed "s|^$root/lib/modules/\([^/]*\)/.*|\1|" | sort -u | tr '\n' ' ')
	if [ -n "$others" ]; then
		echo "kept: $root/$CONF (rdma-rs is still installed for kernel(s) $others)"
	elif [ -e "$root/$CONF" ]; then
		rm -f "$root/$CONF"
		echo "removed: $root/$CONF"
	fi
	[ -d "$root/lib/modules/$rel" ] && run_depmod "$rel"
	[ ! -d "$root/var/lib/dkms/rdma-rs" ] ||
		echo "note: DKMS also has rdma-rs (dkms status rdma-rs); remove it with: dkms remove rdma-rs/<version> --all"
	echo "rdma-rs is uninstalled for kernel $rel; regenerate the initramfs if install asked you to."
}

files() {
	local rel m
	rel=$(release)
	for m in $MODULES; do echo "lib/modules/$rel/$MOD_DIR/$m.ko"; done
	echo "$CONF"
}

case $action in
modules_install) modules_install ;;
install) install_all ;;
uninstall) uninstall ;;
files) files ;;
*) die "usage: tools/install.sh modules_install|install|uninstall|files" ;;
esac
