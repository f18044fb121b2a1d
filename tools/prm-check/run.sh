#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Diffs the Rust PRM table (mlx5/prm/*.rs) against the kernel's mlx5_ifc.h:
# every declared layout size, member offset and width, every opcode, and every
# command status value. The Rust binary `prm-fields` prints the table; this
# script turns the same names into a C program compiled against the kernel
# headers, so nothing is listed twice. Exits non-zero and prints the
# mismatching lines on any difference.
#
# usage: tools/prm-check/run.sh [KERNEL_SRC]   (default /var/cache/rdma-rs/linux-7.3)
set -euo pipefail

ksrc=${1:-/var/cache/rdma-rs/linux-7.3}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
ifc=$ksrc/include/linux/mlx5/mlx5_ifc.h
cmdc=$ksrc/drivers/net/ethernet/mellanox/mlx5/core/cmd.c
devh=$ksrc/include/linux/mlx5/device.h
for f in "$ifc" "$cmdc" "$devh"; do
	[ -r "$f" ] || { echo "prm-check: cannot read $f" >&2; exit 2; }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

(cd "$root" && cargo run -q -p rdma-rs-prm --bin prm-fields) >"$tmp/rust.txt"

# mbox_in/mbox_out (the common header) are declared in cmd.c, not in a header.
awk '/^struct mlx5_ifc_mbox_(in|out)_bits \{/,/^\};/' "$cmdc" >"$tmp/mbox.h"
grep -q mlx5_ifc_mbox_in_bits "$tmp/mbox.h" || { echo "prm-check: mbox_in not found in $cmdc" >&2; exit 2; }

{
	echo '#include "shim.h"'
	echo "#include \"$ifc\""
	echo '#include "mbox.h"'
	echo 'int main(void)'
	echo '{'
	awk '
	$1 == "layout" { printf "\tprintf(\"layout %s %%zu\\n\", PRM_ST_SZ(%s));\n", $2, $2 }
	$1 == "field" {
		split($2, p, ".")
		printf "\tprintf(\"field %s %%zu %%zu\\n\", PRM_OFF(%s, %s), PRM_SZ(%s, %s));\n", $2, p[1], p[2], p[1], p[2]
	}
	$1 == "opcode" { printf "\tprintf(\"opcode %s %%d\\n\", (int)MLX5_CMD_OP_%s);\n", $2, $2 }
	' "$tmp/rust.txt"
	echo '	return 0;'
	echo '}'
} >"$tmp/check.c"

gcc -std=gnu11 -O0 -Wall -Werror -I"$here" -I"$tmp" -o "$tmp/check" "$tmp/check.c"
"$tmp/check" >"$tmp/c.txt"

# device.h needs the whole kernel include tree to compile; its status enum is
# plain `MLX5_CMD_STAT_NAME = 0xNN,` lines, so read those as text.
awk '$1 == "status" { print $2 }' "$tmp/rust.txt" | while read -r name; do
	v=$(sed -n "s/^[[:space:]]*MLX5_CMD_STAT_${name}[[:space:]]*=[[:space:]]*\(0x[0-9a-fA-F]*\),.*/\1/p" "$devh")
	if [ -n "$v" ]; then echo "status $name $((v))"; else echo "status $name missing-in-device.h"; fi
done >>"$tmp/c.txt"

n=$(wc -l <"$tmp/rust.txt")
if diff -u --label rust-table --label kernel-headers "$tmp/rust.txt" "$tmp/c.txt" >"$tmp/diff"; then
	echo "prm-check: OK, $n items match $ksrc"
	exit 0
fi
echo "prm-check: MISMATCH between the Rust table and $ksrc:" >&2
grep '^[-+][^-+]' "$tmp/diff" >&2
exit 1
