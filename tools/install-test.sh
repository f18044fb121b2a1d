#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The install path's tests, on the host in a few seconds (tools/check.sh runs them after
# the module build):
#   * make install then make uninstall into a staging root leave it as it was (every file,
#     its content and mode), and install wrote the two production modules and the modprobe
#     configuration, nothing else but depmod's index;
#   * DKMS installs the same files: dkms.conf's modules in their DEST_MODULE_LOCATION and
#     what its POST_INSTALL hook writes, against make install's list; its POST_REMOVE
#     hook takes the configuration away again;
#   * the preflight rejects a kernel tree without CONFIG_RUST, and a missing tree, with
#     its message.
#   tools/install-test.sh KDIR     KDIR: the tree the modules in the checkout were built for
# Prints `ok DESCRIPTION` / `not ok DESCRIPTION`; exits 1 if any is `not ok`.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
kdir=${1:?usage: tools/install-test.sh KDIR}
bad=0
ok() { echo "ok $*"; }
notok() { echo "not ok $*"; bad=1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rel=$(cat "$kdir/include/config/kernel.release")

# listing ROOT: every file and directory under ROOT with its mode and content hash.
listing() {
	(cd "$1" && find . -mindepth 1 -printf '%y %m %p\n' | sort -k3 | while read -r type mode path; do
		if [ "$type" = f ]; then
			echo "$type $mode $path $(sha256sum <"$path" | cut -c1-16)"
		else
			echo "$type $mode $path"
		fi
	done)
}

# --- make install, make uninstall ---------------------------------------------------------
# A root that looks like a system's: the kernel's module directory with depmod's index,
# an /etc/modprobe.d with someone else's file in it.
root="$tmp/root"
mkdir -p "$root/lib/modules/$rel/kernel" "$root/etc/modprobe.d"
echo "options dummy numdummies=1" >"$root/etc/modprobe.d/other.conf"
depmod -b "$root" "$rel" 2>/dev/null || /sbin/depmod -b "$root" "$rel"
listing "$root" >"$tmp/before"

rc=0
make --no-print-directory -s -C "$here" install KDIR="$kdir" DESTDIR="$root" >"$tmp/install.log" 2>&1 || rc=$?
listing "$root" >"$tmp/installed"
# What install added: files only, depmod's modules.* index aside.
comm -13 <(awk '$1 == "f" { print $3 }' "$tmp/before") <(awk '$1 == "f" { print $3 }' "$tmp/installed") |
	sed 's|^\./||' | grep -v "^lib/modules/$rel/modules\." >"$tmp/make-files"
expect=$(KDIR="$kdir" "$here/tools/install.sh" files | sort)
if [ $rc = 0 ] && [ "$(sort "$tmp/make-files")" = "$expect" ]; then
	ok "make install DESTDIR=<root> writes the production modules and the modprobe configuration ($(wc -l <"$tmp/make-files") files)"
else
	notok "make install DESTDIR=<root> writes the production modules and the modprobe configuration (exit $rc; wrote: $(tr '\n' ' ' <"$tmp/make-files"); expected: $(echo $expect))"
	sed 's/^/#   /' "$tmp/install.log"
fi
if grep -q "updates/rdma-rs/mlx5_ib_rs.ko" "$root/lib/modules/$rel/modules.dep" 2>/dev/null; then
	ok "make install runs depmod: modules.dep lists mlx5_ib_rs"
else
	notok "make install runs depmod: modules.dep lists mlx5_ib_rs"
fi
if grep -q '^install ib_core /bin/false' "$root/etc/modprobe.d/rdma-rs.conf" 2>/dev/null; then
	ok "make install: the modprobe configuration keeps upstream ib_core from loading"
else
	notok "make install: the modprobe configuration keeps upstream ib_core from loading"
fi

rc=0
make --no-print-directory -s -C "$here" uninstall KDIR="$kdir" DESTDIR="$root" >"$tmp/uninstall.log" 2>&1 || rc=$?
listing "$root" >"$tmp/after"
if [ $rc = 0 ] && cmp -s "$tmp/before" "$tmp/after"; then
	ok "make install then make uninstall leave the staging root as it was"
else
	notok "make install then make uninstall leave the staging root as it was (exit $rc)"
	diff "$tmp/before" "$tmp/after" | sed 's/^/#   /'
	sed 's/^/#   /' "$tmp/uninstall.log"
fi

# --- DKMS: the same files ------------------------------------------------------------------
# dkms.conf is shell; its arrays are read with DKMS's own variables set.
droot="$tmp/dkms"
mkdir -p "$droot/lib/modules/$rel" "$droot/etc/modprobe.d"
dkms_files=$( (
	kernel_source_dir=$kdir kernelver=$rel
	# shellcheck disable=SC1091
	. "$here/dkms.conf"
	for i in "${!BUILT_MODULE_NAME[@]}"; do
		echo "lib/modules/$rel${DEST_MODULE_LOCATION[$i]}/${BUILT_MODULE_NAME[$i]}.ko"
	done
	# DKMS runs the hook from the source directory with its arguments.
	cd "$here" && RDMARS_ROOT="$droot" $POST_INSTALL >/dev/null
	(cd "$droot" && find . -type f | sed 's|^\./||')
) | sort)
if [ -n "$dkms_files" ] && [ "$dkms_files" = "$expect" ]; then
	ok "DKMS (dkms.conf and its POST_INSTALL hook) installs the same files as make install"
else
	notok "DKMS (dkms.conf and its POST_INSTALL hook) installs the same files as make install (DKMS: $(echo $dkms_files); make: $(echo $expect))"
fi
(
	kernel_source_dir=$kdir kernelver=$rel
	# shellcheck disable=SC1091
	. "$here/dkms.conf"
	cd "$here" && RDMARS_ROOT="$droot" $POST_REMOVE >/dev/null
)
if [ ! -e "$droot/etc/modprobe.d/rdma-rs.conf" ]; then
	ok "DKMS's POST_REMOVE hook removes the modprobe configuration"
else
	notok "DKMS's POST_REMOVE hook removes the modprobe configuration"
fi
if grep -q '^MAKE\[0\]=.*make .*modules"' "$here/dkms.conf" && ! grep -q 'RDMARS_WERROR' "$here/dkms.conf"; then
	ok "DKMS builds with make modules (the preflight, production modules, warnings not errors)"
else
	notok "DKMS builds with make modules (the preflight, production modules, warnings not errors)"
fi

# --- The preflight ---------------------------------------------------------------------------
fake="$tmp/fake-kernel"
mkdir -p "$fake/include/config" "$fake/rust" "$fake/scripts/mod"
echo 'all:' >"$fake/Makefile"
echo 7.3.0 >"$fake/include/config/kernel.release"
printf 'CONFIG_MODULES=y\nCONFIG_MLX5_CORE=m\nCONFIG_AUXILIARY_BUS=y\nCONFIG_CC_IS_GCC=y\n' >"$fake/include/config/auto.conf"
listing "$fake" >"$tmp/fake-before"
rc=0
out=$(make --no-print-directory -s -C "$here" modules KDIR="$fake" 2>&1) || rc=$?
if [ $rc != 0 ] && grep -q '^error: kernel 7.3.0 is built without CONFIG_RUST=y' <<<"$out" &&
	listing "$fake" | cmp -s - "$tmp/fake-before"; then
	ok "make with a kernel tree without CONFIG_RUST: the preflight says so and fails, the tree untouched"
else
	notok "make with a kernel tree without CONFIG_RUST: the preflight says so and fails (exit $rc)"
	sed 's/^/#   /' <<<"$out"
fi
rc=0
out=$("$here/tools/preflight.sh" "$tmp/no-such-tree" 2>&1) || rc=$?
if [ $rc != 0 ] && grep -q '^error: no configured kernel build tree at' <<<"$out"; then
	ok "the preflight rejects a missing kernel tree with one line"
else
	notok "the preflight rejects a missing kernel tree with one line (exit $rc)"
fi
# A CONFIG_RUST tree without the Rust metadata (a header package's tree).
echo 'CONFIG_RUST=y' >>"$fake/include/config/auto.conf"
rc=0
out=$("$here/tools/preflight.sh" "$fake" "" 2>&1) || rc=$?
if [ $rc != 0 ] && grep -q 'has no rust/libkernel.rmeta' <<<"$out"; then
	ok "the preflight rejects a CONFIG_RUST tree without rust/*.rmeta"
else
	notok "the preflight rejects a CONFIG_RUST tree without rust/*.rmeta (exit $rc)"
fi
exit $bad
