#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Every repo path the docs name in backticks exists in the tree.
#   tools/doc-paths.sh [FILE...]     default: README.md Documentation/*.md rust/README.md
# Prints `ok DESCRIPTION` / `not ok DESCRIPTION` lines (tools/check.sh counts them); exits 1
# if any is `not ok`. What counts as a repo path, inside an inline `code span` (fenced blocks
# are not read):
#   - a word with a `/` ending in .rs .c .h .sh .py .md, or a folder ending in `/`;
#     `a/{b,c}.rs` and `a/*.rs` are expanded; `path.rs::item` and `path.rs:LINE` are the path;
#   - `../x` is read against the doc's own folder; any other path against the top of the
#     tree, then the folders of $bases (e.g. `ib/cq.rs` is mlx5/ib/cq.rs) and the host
#     crates (`src/fuzzer.rs` of host/uverbs-fuzz/, `tests/datapath.rs` of host/cxfn/);
#   - not checked: absolute paths (`/sys/...`, `$KSRC/...`), upstream kernel and rdma-core
#     paths ($upstream), placeholders (`rust/X.rs`, `tests/vm/MODE.sh`), and relative
#     folders that resolve nowhere (sysfs folders such as `ports/1/`).
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here" || exit 1
[ $# -gt 0 ] || set -- README.md Documentation/*.md rust/README.md
bad=0
ok() { echo "ok $*"; }
notok() { echo "not ok $*"; bad=1; }

bases="core/ uverbs/ uverbs/file/ mlx5/ mlx5/ib/ mlx5/fwsim/ mlx5/fwsim/engine/ mlx5/cmd/ mlx5/prm/ rust/ tools/ tests/ host/ $(ls -d host/*/ 2>/dev/null | tr '\n' ' ')"
upstream='^(drivers|include/(uapi|linux|rdma|trace)|providers|libibverbs|librdmacm|rust/kernel|lib|docs|net|arch|fs|mm|block)/'
ext='\.(rs|c|h|sh|py|md)$'

# The tracked files and folders (or, outside a git checkout, the files on disk).
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	files=$(git ls-files)
else
	files=$(find . -type f ! -path './.git/*' ! -path './target/*' | sed 's|^\./||')
fi
dirs=$(sed -n 's|/[^/]*$|/|p' <<<"$files" | awk -F/ '{ p = ""; for (i = 1; i < NF; i++) { p = p $i "/"; print p } }' | sort -u)
declare -A tracked
while read -r x; do tracked[$x]=1; done <<<"$files
$dirs"
exists() { [ -n "${tracked[$1]:-}" ]; }	# exists PATH: a tracked file, or (PATH/) folder
normalize() {	# normalize PATH: drop ./ and dir/.. steps
	local p=$1 prev=
	while [ "$p" != "$prev" ]; do
		prev=$p
		p=$(sed -E 's#(^|/)\./#\1#g; s#(^|/)[^/.][^/]*/\.\./#\1#' <<<"$p")
	done
	echo "$p"
}

set -f	# a glob in a doc is matched against the tracked files, not the disk
for f in "$@"; do
	[ -r "$f" ] || { notok "$f exists"; continue; }
	fdir=$(dirname "$f")/
	[ "$fdir" = ./ ] && fdir=
	named=$(awk '/^[[:space:]]*(```|~~~)/ { inblock = !inblock; next } !inblock' "$f" |
		grep -oE '`[^`]+`' | tr -d '`' |
		grep -oE '(^|[^A-Za-z0-9_./$~{},*-])(\.\./)*[A-Za-z0-9_.*{},-]*[A-Za-z0-9_*{},-]/[A-Za-z0-9_./*{},-]*' |
		sed -E 's#^[^A-Za-z0-9_.*{},-]##; s#::.*##' | sort -u)
	for tok in $named; do
		tok=${tok%%:*}
		tok=${tok%.}
		tok=${tok%,}
		grep -qE "$ext|/$" <<<"$tok" || continue
		grep -qE "$upstream" <<<"$tok" && continue
		grep -qE '(^|/)[A-Z]{1,4}(\.[a-z]+)?(/|$)' <<<"$tok" && continue
		# Expand {a,b} lists; globs are matched against the tracked files.
		for p in $(eval "echo $(sed 's/[^A-Za-z0-9_./{},*-]//g; s/\*/\\*/g' <<<"$tok")"); do
			p=${p//\\/}
			cands=()
			case $p in
			../*) cands=("$(normalize "$fdir$p")") ;;
			*)
				cands=("$p")
				for b in $bases; do cands+=("$b$p"); done ;;
			esac
			found=
			for c in "${cands[@]}"; do
				case $c in
				*'*'*) re=$(sed 's/[.]/\\./g; s/\*/[^\/]*/g' <<<"$c")
					grep -qE "^$re\$" <<<"$files" && { found=$c; break; } ;;
				*) exists "$c" && { found=$c; break; } ;;
				esac
			done
			if [ -n "$found" ]; then
				if [ "$found" = "$p" ]; then ok "$f: $p exists"; else ok "$f: $p exists ($found)"; fi
			elif [ "${#cands[@]}" -gt 1 ] && [ "${p%/}" != "$p" ]; then
				:	# a relative folder that is no folder of the tree: not a repo path
			else
				notok "$f: $p exists (no such file or folder in the tree)"
			fi
		done
	done
done
exit $bad
