#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Build (or reuse) an rdma-rs kernel. Prints the build directory on stdout.
#   tools/kernel.sh                 the test kernel (kernel/rdma-rs.config)
#   tools/kernel.sh FRAGMENT...     kernel/rdma-rs.config, then each FRAGMENT on top:
#                                   a later line for an option replaces the earlier one
#                                   (kernel/bench.config: the benchmark kernel)
# The build lives in $CACHE/kbuild-<kernel version>-<hash of the composed fragment>,
# so every run, worktree and CI job on this machine reuses it until either changes.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/tools/lib.sh"

# A builder of its own: the flags of a make that runs it (`make -n`, `-w`, a jobserver) are
# not this build's; under `make -n` the version query below would print its commands.
unset MAKEFLAGS MFLAGS MAKELEVEL

base="$here/kernel/rdma-rs.config"
# --no-print-directory: under `make -C <this tree>` the inherited MAKEFLAGS carry -w, whose
# "Entering directory" lines would become part of the version.
kver=$(make -s --no-print-directory -C "$KSRC" kernelversion)
if [ $# = 0 ]; then
	# The test kernel: the fragment as it is (its hash names the cache).
	frag=$base
else
	# Compose: the option name of a line is its CONFIG_ word (`CONFIG_X=...` or
	# `# CONFIG_X is not set`); an override takes the place of the base line.
	for f in "$@"; do [ -f "$f" ] || die "no config fragment $f"; done
	mkdir -p "$CACHE"
	composed=$(awk '
		function opt(l) {
			if (l ~ /^CONFIG_[A-Za-z0-9_]+=/) { sub(/=.*/, "", l); return l }
			if (l ~ /^# CONFIG_[A-Za-z0-9_]+ is not set$/) { split(l, w, " "); return w[2] }
			return ""
		}
		{ o = opt($0) }
		o != "" && (o in at) { line[at[o]] = $0; next }
		{ line[++n] = $0; if (o != "") at[o] = n }
		END { for (i = 1; i <= n; i++) print line[i] }' "$base" "$@")
	hash=$(printf '%s\n' "$composed" | sha256sum | cut -c1-12)
	frag="$CACHE/fragment-$hash.config"
	[ -f "$frag" ] || { printf '%s\n' "$composed" >"$frag.$$" && mv "$frag.$$" "$frag"; }
fi
hash=$(sha256sum "$frag" | cut -c1-12)
kb="$CACHE/kbuild-$kver-$hash"

if [ -f "$kb/.rdma-rs-complete" ]; then
	echo "$kb"
	exit 0
fi

# One build per key at a time: a second caller (another worktree, a CI job)
# waits for the first and then reuses its result.
mkdir -p "$CACHE"
exec {lockfd}>"$kb.lock"
flock "$lockfd"
if [ -f "$kb/.rdma-rs-complete" ]; then
	echo "$kb"
	exit 0
fi

kmake() { make -s --no-print-directory -C "$KSRC" O="$kb" LLVM=$LLVM_SUFFIX "$@"; }

configure() {
	mkdir -p "$kb"
	cp "$frag" "$kb/.config"
	kmake olddefconfig
	kmake rustavailable >/dev/null
	# Every fragment line must survive olddefconfig (a dependency we missed
	# silently drops an option otherwise).
	local bad=0 line opt
	while IFS= read -r line; do
		case "$line" in
		CONFIG_*=*) grep -qx "$line" "$kb/.config" || { echo "config: $line did not stick" >&2; bad=1; } ;;
		"# CONFIG_"*" is not set")
			opt=${line#\# }; opt=${opt%% *}
			grep -q "^$opt=" "$kb/.config" && { echo "config: $opt should be unset" >&2; bad=1; } ;;
		esac
	done <"$frag"
	return $bad
}

build() {
	kmake -j"$(nproc)" bzImage modules
	rm -rf "$kb/modroot"
	kmake INSTALL_MOD_PATH="$kb/modroot" modules_install >/dev/null
}

step "building kernel $kver with fragment $hash into $kb (cold: about 15 min on 2 cores)" 
timed "kernel: configure" configure >&2
timed "kernel: build" build >&2
touch "$kb/.rdma-rs-complete"
echo "$kb"
