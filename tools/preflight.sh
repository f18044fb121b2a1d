#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Can the modules be built against this kernel build tree? Run by `make`, `make install`
# and DKMS before Kbuild; only reads.
#   tools/preflight.sh KDIR [LLVM]   one line per missing piece on stderr (`error:` lines
#                                    fail, `warning:` lines do not); exit 1 on any error
#   tools/preflight.sh --llvm KDIR   prints the LLVM= value that fits the tree's compiler
#                                    (-N for clang-N, 1 for a plain clang, empty for GCC)
# Out-of-tree Rust modules compile against the kernel's own Rust metadata
# (rust/libkernel.rmeta), so the tree must be a full build of a CONFIG_RUST kernel by the
# same rustc; the C parts need the compiler the kernel was built with.
set -uo pipefail

# The kernel the modules are written against: its Rust kernel crate's API.
KVER_WANT=7.3

conf_get() { # NAME: the value of CONFIG_NAME in the tree's auto.conf, quotes removed
	sed -n "s/^CONFIG_$1=//p" "$conf" | sed 's/^"\(.*\)"$/\1/' | head -n1
}

# The LLVM= suffix for the tree's clang: -N if clang-N exists for its major version N,
# 1 if the plain clang is that version, else -N (the missing compiler is reported).
llvm_for_tree() {
	local v major
	[ "$(conf_get CC_IS_CLANG)" = y ] || { echo ""; return; }
	v=$(conf_get CLANG_VERSION)
	major=$((v / 10000))
	if command -v "clang-$major" >/dev/null; then
		echo "-$major"
	elif clang --version 2>/dev/null | head -n1 | grep -q "version $major\."; then
		echo 1
	else
		echo "-$major"
	fi
}

if [ "${1:-}" = --llvm ]; then
	conf="${2:-}/include/config/auto.conf"
	[ -r "$conf" ] || exit 0
	llvm_for_tree
	exit 0
fi

kdir=${1:-}
llvm=${2-}
errors=0
err() { printf 'error: %s\n' "$*" >&2; errors=$((errors + 1)); }
warn() { printf 'warning: %s\n' "$*" >&2; }

[ -n "$kdir" ] || { err "usage: tools/preflight.sh KDIR [LLVM]"; exit 1; }
kdir=${kdir%/}
conf="$kdir/include/config/auto.conf"

# 1. A configured kernel build tree.
if [ ! -f "$kdir/Makefile" ] || [ ! -r "$conf" ]; then
	err "no configured kernel build tree at $kdir: pass KDIR=<the build tree of a CONFIG_RUST kernel>" \
		"(default: /lib/modules/\$(uname -r)/build, from your kernel's headers or build package)"
	exit 1
fi

# 2. Its version.
rel=$(cat "$kdir/include/config/kernel.release" 2>/dev/null || true)
if [ -z "$rel" ]; then
	err "$kdir has no include/config/kernel.release: finish the kernel build (make) or run make modules_prepare in it"
else
	ver=$(printf '%s\n' "$rel" | sed -n 's/^\([0-9]*\.[0-9]*\).*/\1/p')
	if [ -z "$ver" ]; then
		err "cannot read a version from kernel release '$rel' in $kdir"
	elif [ "$(printf '%s\n%s\n' "$KVER_WANT" "$ver" | sort -V | head -n1)" != "$KVER_WANT" ]; then
		err "kernel $rel is older than $KVER_WANT: the modules use Linux $KVER_WANT's Rust kernel crate; build against a $KVER_WANT kernel"
	elif [ "$ver" != "$KVER_WANT" ]; then
		warn "kernel $rel is newer than $KVER_WANT, the only version the modules are tested on: changes in the Rust kernel crate can break the build"
	fi
fi

# 3. Rust support in the kernel.
if [ "$(conf_get RUST)" != y ]; then
	err "kernel ${rel:-at $kdir} is built without CONFIG_RUST=y (distribution kernels usually are): build and boot a $KVER_WANT kernel with CONFIG_RUST=y and pass its build tree as KDIR"
	exit 1
fi
for opt in MODULES MLX5_CORE AUXILIARY_BUS; do
	case "$(conf_get "$opt")" in
	y | m) ;;
	*) err "kernel ${rel:-at $kdir} is built without CONFIG_$opt (mlx5_ib_rs needs it): enable it and rebuild the kernel" ;;
	esac
done

# 4. The Rust metadata of the kernel crates, which only a full build tree has.
missing=()
for f in rust/libkernel.rmeta rust/libcore.rmeta rust/libmacros.so; do
	[ -e "$kdir/$f" ] || missing+=("$f")
done
if [ ${#missing[@]} -gt 0 ]; then
	err "$kdir has no ${missing[*]}: out-of-tree Rust modules need the Rust metadata of the kernel's full build (header packages leave it out); pass the kernel's own build tree as KDIR"
fi
[ -x "$kdir/scripts/mod/modpost" ] ||
	err "$kdir has no scripts/mod/modpost: run make modules_prepare in the kernel tree"

# 5. The Rust toolchain: the metadata loads only into the rustc that wrote it.
want_rustc=$(conf_get RUSTC_VERSION_TEXT)
have_rustc=$(${RUSTC:-rustc} --version 2>/dev/null || true)
if [ -z "$have_rustc" ]; then
	err "no rustc on PATH: install ${want_rustc:-the rustc the kernel was built with} (rustup toolchain install <version>) or pass RUSTC=<path>"
elif [ -n "$want_rustc" ] && [ "$have_rustc" != "$want_rustc" ]; then
	want_v=$(printf '%s\n' "$want_rustc" | awk '{ print $2 }')
	err "the kernel was built with '$want_rustc', rustc here is '$have_rustc': use the same one (rustup toolchain install $want_v && rustup override set $want_v in this directory, or RUSTC=<path>)"
fi
# bindgen: the modules generate no bindings of their own, so another version only warns.
want_bindgen=$(conf_get BINDGEN_VERSION_TEXT)
have_bindgen=$(${BINDGEN:-bindgen} --version 2>/dev/null | head -n1 || true)
if [ -n "$want_bindgen" ] && [ "$have_bindgen" != "$want_bindgen" ]; then
	warn "the kernel was built with '$want_bindgen', bindgen here is '${have_bindgen:-missing}' (not needed to build these modules; cargo install --locked bindgen-cli --version ${want_bindgen#bindgen } to match)"
fi

# 6. The C compiler and LLVM tools the kernel was built with.
if [ "$(conf_get CC_IS_CLANG)" = y ]; then
	cv=$(conf_get CLANG_VERSION)
	major=$((cv / 10000))
	case "$llvm" in
	"" | 0) err "the kernel was built with clang $major (LLVM): pass LLVM=-$major (clang-$major) or LLVM=1 (plain clang)" ;;
	1) clang=clang lld=ld.lld ;;
	-*) clang=clang$llvm lld=ld.lld$llvm ;;
	*/) clang=${llvm}clang lld=${llvm}ld.lld ;;
	*) err "LLVM=$llvm: use LLVM=-$major, LLVM=1 or LLVM=<directory>/" ;;
	esac
	if [ -n "${clang:-}" ]; then
		have=$("$clang" --version 2>/dev/null | head -n1 || true)
		if [ -z "$have" ]; then
			err "no $clang: install clang $major and lld $major (Debian: apt install clang-$major lld-$major llvm-$major) or pass LLVM= for the one you have"
		elif ! printf '%s\n' "$have" | grep -q "version $major\."; then
			err "$clang is '$have', the kernel was built with clang $major ($(conf_get CC_VERSION_TEXT)): install clang-$major and pass LLVM=-$major"
		fi
		[ "$(conf_get LD_IS_LLD)" != y ] || command -v "$lld" >/dev/null ||
			err "no $lld: install lld $major (Debian: apt install lld-$major)"
	fi
elif [ "$(conf_get CC_IS_GCC)" = y ]; then
	[ -z "$llvm" ] || [ "$llvm" = 0 ] ||
		err "the kernel was built with GCC ($(conf_get CC_VERSION_TEXT)), not LLVM: pass LLVM= (empty)"
	command -v gcc >/dev/null || err "no gcc: install the GCC the kernel was built with ($(conf_get CC_VERSION_TEXT))"
fi

if [ $errors != 0 ]; then
	printf 'preflight: %d problem(s) with the kernel build tree %s; nothing was built or installed\n' "$errors" "$kdir" >&2
	exit 1
fi
exit 0
