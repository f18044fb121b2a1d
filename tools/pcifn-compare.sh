#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Compares our stack with upstream C mlx5_ib on the emulated ConnectX function
# (Documentation/pcifn.md, "Upstream mlx5_ib on the function, compared with ours"): the
# `cmp| ` dumps of tests/vm/pcifn_cmp.sh in the console logs of a `pcifn` boot (ours) and a
# `pcifn_c` boot (upstream), diffed line by line. Every line that is only in one of them must
# match an entry of the known-differences list (tests/vm/pcifn_cmp.known); the rest fails.
#   tools/pcifn-compare.sh OURS_LOG UPSTREAM_LOG [KNOWN]
# With the same log twice (a pcifn_c boot, whose vm_pcifn_c_ours suite dumps our stack too)
# our dump is the `cmpours| ` lines.
# Prints the diff, then `ok`/`not ok` lines (pcifn_compare_*) and exits 0 if all are ok.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
ours_log=$1
c_log=$2
known=${3:-$here/tests/vm/pcifn_cmp.known}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The dump of one log: the `cmp| ` lines without the prefix and the console's CRs. A failed
# check of the traffic test prints whatever errno was last set (its checks are on
# completions, not errnos): that text is dropped.
dump() {
	tr -d '\r' <"$1" | sed -n "s/^$2| //p" | sed '/^traffic| R fail /s/: errno [0-9]* ([^)]*)$//'
}
ours_tag=cmp
[ "$ours_log" -ef "$c_log" ] && ours_tag=cmpours
dump "$ours_log" $ours_tag >"$tmp/ours"
dump "$c_log" cmp >"$tmp/c"
# The entries: SIDE<TAB>ERE (comments and blank lines dropped).
sed 's/[[:space:]]*#.*//; /^[[:space:]]*$/d' "$known" >"$tmp/known"

rc=0
for side in ours c; do
	if [ ! -s "$tmp/$side" ]; then
		echo "not ok pcifn_compare_dump_$side: no comparison dump in the $side log"
		rc=1
	else
		echo "ok pcifn_compare_dump_$side: $(wc -l <"$tmp/$side") lines"
	fi
done
[ $rc = 0 ] || exit 1

echo "pcifn-compare: diff of the dumps (- ours, + upstream mlx5_ib)"
diff -u "$tmp/ours" "$tmp/c" | tail -n +3 | sed 's/^/pcifn-compare| /' || true
# Lines only in one dump, each with its side.
diff "$tmp/ours" "$tmp/c" | sed -n 's/^< /ours\t/p; s/^> /c\t/p' >"$tmp/diff" || true

unknown=0
n=0
: >"$tmp/used"
while IFS="$(printf '\t')" read -r side line; do
	n=$((n + 1))
	hit=
	while IFS="$(printf '\t')" read -r kside re; do
		[ "$kside" = "$side" ] || continue
		if printf '%s\n' "$line" | grep -Eq -- "$re"; then
			hit=1
			printf '%s\t%s\n' "$kside" "$re" >>"$tmp/used"
			break
		fi
	done <"$tmp/known"
	if [ -z "$hit" ]; then
		echo "pcifn-compare: unknown difference ($side only): $line"
		unknown=$((unknown + 1))
	fi
done <"$tmp/diff"
# Entries that matched nothing: fixed differences whose entry should go.
while IFS= read -r k; do
	grep -qxF -- "$k" "$tmp/used" || echo "pcifn-compare: known difference not seen (stale entry?): $k"
done <"$tmp/known"
if [ $unknown = 0 ]; then
	echo "ok pcifn_compare: $n differing lines, every one a known difference ($known)"
else
	echo "not ok pcifn_compare: $unknown of $n differing lines are not known differences"
	rc=1
fi
exit $rc
