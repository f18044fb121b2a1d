#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The proof that tests/userspace/ucma_race.c catches each ucma race class
# (Documentation/testing.md, "The ucma races"): for each tests/races/NAME.patch (one fix of
# uverbs/ucma.rs reverted), the tracked sources with their working-tree changes are copied to
# out/races/src-NAME, patched and built (ib_core_rs-NAME.ko and the mlx5_ib_rs-NAME.ko built
# against it), then VM mode `ucmarace` runs ucma_race on the tree's modules and on rxe (it
# passes) and on each reverted build: it must fail the check that tests/vm/ucmarace.sh names
# for NAME. Nothing of the tree itself is changed.
#   tools/race-reverts.sh [--build|--vm] [NAME...]   (default: every tests/races/*.patch)
# --build: the modules alone; --vm: the VM alone, on what out/races/mods holds. About 4 minutes
# of build per patch, then one VM (a few minutes under TCG).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/tools/lib.sh"
kb=$("$here/tools/kernel.sh")
out=$here/out/races
build=1 vm=1
case "${1:-}" in
--build) vm=0; shift ;;
--vm) build=0; shift ;;
esac
names=("$@")
if [ ${#names[@]} = 0 ]; then
	for p in "$here"/tests/races/*.patch; do names+=("$(basename "$p" .patch)"); done
fi
[ $build = 1 ] && rm -rf "$out"
mkdir -p "$out/mods" "$here/out/logs"
# The control: the tree's own modules (make test-modules).
for m in ib_core_rs mlx5_ib_rs; do
	[ -f "$here/$m.ko" ] || die "no $m.ko in the tree: make test-modules first"
	cp "$here/$m.ko" "$out/mods/"
done
for n in "${names[@]}"; do
	[ $build = 1 ] || break
	p=$here/tests/races/$n.patch
	[ -f "$p" ] || die "no $p"
	src=$out/src-$n
	mkdir -p "$src"
	git -C "$here" ls-files -z | (cd "$here" && tar --null -T - -cf -) | tar -C "$src" -xf -
	patch -s -d "$src" -p1 <"$p" || die "$n.patch does not apply to uverbs/ucma.rs: refresh it"
	timed "races: build with $n reverted" make -s -C "$kb" LLVM=-19 M="$src" modules
	cp "$src/ib_core_rs.ko" "$out/mods/ib_core_rs-$n.ko"
	cp "$src/mlx5_ib_rs.ko" "$out/mods/mlx5_ib_rs-$n.ko"
	rm -rf "$src"
done
[ $vm = 1 ] || exit 0
RDMARS_MODDIR=$out/mods "$here/tools/vm.sh" ucmarace "$kb" "$here/out/logs/ucmarace.log"
cd "$here" && cargo run --quiet --release -p rdma-rs-vmlog -- --mode ucmarace out/logs/ucmarace.log
