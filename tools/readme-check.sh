#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Every target and suite the README names exists, and `make help` lists every target.
#   tools/readme-check.sh [FILE...]     default: README.md
# Prints `ok DESCRIPTION` / `not ok DESCRIPTION` lines (tools/check.sh counts them); exits 1
# if any is `not ok`. Names, as the README writes them:
#   a target   `make NAME ...` in backticks, or a code-block line (fenced or indented)
#              `make NAME` / `sudo make NAME`
#   a suite    any `vm_NAME` in backticks; `NAME` in backticks right after "KUnit " or "suite "
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here" || exit 1
[ $# -gt 0 ] || set -- README.md
bad=0
ok() { echo "ok $*"; }
notok() { echo "not ok $*"; bad=1; }

# The targets: the Makefile's rules, and the ones `make help` prints.
rules=$(grep -oE '^[a-zA-Z0-9_-]+:([^=]|$)' Makefile | sed 's/:.*//' | sort -u)
helped=$(make --no-print-directory -s help | sed -n 's/^  \([a-zA-Z0-9_-]*\)  .*/\1/p' | sort -u)
missing=$(comm -23 <(echo "$rules") <(echo "$helped") | tr '\n' ' ')
if [ -z "$missing" ]; then
	ok "make help lists every target of the Makefile ($(echo "$rules" | wc -l))"
else
	notok "make help lists every target of the Makefile: no ## line for $missing"
fi

# The suites: every name of tests/vm/suites.list.
suites=$(awk '!/^#/ && NF >= 4 { print $2 }' tests/vm/suites.list | sort -u)

for f in "$@"; do
	[ -r "$f" ] || { notok "$f exists"; continue; }
	# Targets: `make x` spans, and make lines inside ``` blocks.
	named=$( {
		grep -oE '`(sudo )?make [a-z][a-zA-Z0-9_-]*' "$f" | sed -E 's/^`(sudo )?make //'
		awk '/^```/ { inblock = !inblock; next } inblock' "$f" |
			sed -nE 's/^[[:space:]]*(sudo )?make ([a-z][a-zA-Z0-9_-]*).*/\2/p'
		sed -nE 's/^( {3,}|\t)(sudo )?make ([a-z][a-zA-Z0-9_-]*).*/\3/p' "$f"
	} | grep -vE '^[A-Z_]+=' | sort -u)
	for t in $named; do
		if grep -qx "$t" <<<"$rules"; then
			ok "$f: make $t is a target"
		else
			notok "$f: make $t is a target (the Makefile has no rule $t)"
		fi
	done
	named=$( {
		grep -oE '`vm_[a-z0-9_]+`' "$f"
		grep -oE '(KUnit|suite) `[a-z0-9_]+`' "$f" | sed 's/^[A-Za-z]* //'
	} | tr -d '`' | sort -u)
	for s in $named; do
		if grep -qx "$s" <<<"$suites"; then
			ok "$f: $s is a suite of tests/vm/suites.list"
		else
			notok "$f: $s is a suite of tests/vm/suites.list (it is not)"
		fi
	done
done
exit $bad
