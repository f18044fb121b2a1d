#!/usr/bin/env bash
# Build (or reuse) the rdma-rs test kernel. Prints the build directory on stdout.
# The build lives in $CACHE/kbuild-<kernel version>-<hash of the config fragment>,
# so every run, session and CI job on this machine reuses it until either changes.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/tools/lib.sh"

frag="$here/kernel/rdma-rs.config"
kver=$(make -s -C "$KSRC" kernelversion)
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

kmake() { make -s -C "$KSRC" O="$kb" LLVM=$LLVM_SUFFIX "$@"; }

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
