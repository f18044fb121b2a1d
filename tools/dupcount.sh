#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Repeated code in the production files of the modules: the `duplicates` tool (six or more
# alike lines) over core/ uverbs/ mlx5/ rust/, test files left out (*_tests.rs, tests.rs,
# *_kunit.rs, test_*.rs). Prints the tool's count line. Usage: tools/dupcount.sh [DIR]
set -euo pipefail
src=$(cd "${1:-$(dirname "$0")/..}" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$src" && git ls-files -co --exclude-standard core uverbs mlx5 rust) |
	grep -Ev '(_tests|/tests|_kunit|/test_[^/]*)\.rs$' |
	while read -r f; do [ -f "$src/$f" ] && mkdir -p "$tmp/$(dirname "$f")" && cp "$src/$f" "$tmp/$f"; done
duplicates --repo "$tmp" --seconds 120 --most ${MOST:-1} | head -$((${MOST:-1} + 1))
