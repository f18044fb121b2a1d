#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Diffs the Rust user-ABI structs (every `uapi_structs!` declaration:
# uverbs/abi/structs.rs, mlx5/uabi.rs) against the kernel's uapi headers
# (include/uapi/rdma): each struct's size and each member's offset and size.
# The Rust binary `uabi-fields` prints the declarations; this script turns the
# same names into a C program compiled against the headers, so nothing is
# listed twice. Exits non-zero and prints the mismatching lines on any
# difference, or if a `uapi_structs!` invocation sits in a file the binary
# does not mount.
#
# usage: tools/uabi-check/run.sh [KERNEL_SRC]   (default /var/cache/rdma-rs/linux-7.3)
set -euo pipefail

ksrc=${1:-/var/cache/rdma-rs/linux-7.3}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
rdma=$ksrc/include/uapi/rdma
for f in ib_user_verbs.h ib_user_ioctl_verbs.h rdma_user_ioctl_cmds.h mlx5-abi.h; do
	[ -r "$rdma/$f" ] || { echo "uabi-check: cannot read $rdma/$f" >&2; exit 2; }
done

# Every file that declares ABI structs must be one the binary prints.
mounted="mlx5/uabi.rs uverbs/abi/structs.rs"
found=$(cd "$root" && grep -rl --include='*.rs' '^uapi_structs! {' core uverbs mlx5 rust 2>/dev/null | sort | tr '\n' ' ')
if [ "$found" != "$mounted " ]; then
	echo "uabi-check: uapi_structs! declarations in [$found], the check reads [$mounted]" >&2
	exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

(cd "$root" && cargo run -q -p rdma-rs-uverbs-abi --bin uabi-fields) >"$tmp/rust.txt"

# The kernel's rdma/ headers, with the system's linux/types.h under them.
mkdir -p "$tmp/inc"
ln -s "$rdma" "$tmp/inc/rdma"
{
	echo '#include <stddef.h>'
	echo '#include <stdio.h>'
	echo '#include <rdma/rdma_user_ioctl_cmds.h>'
	echo '#include <rdma/ib_user_verbs.h>'
	echo '#include <rdma/ib_user_ioctl_verbs.h>'
	echo '#include <rdma/mlx5-abi.h>'
	echo 'int main(void)'
	echo '{'
	awk '
	$1 == "struct" { printf "\tprintf(\"struct %s %%zu\\n\", sizeof(struct %s));\n", $2, $2 }
	$1 == "field" {
		s = $2; sub(/\..*/, "", s); m = substr($2, length(s) + 2)
		printf "\tprintf(\"field %s %%zu %%zu\\n\", offsetof(struct %s, %s), sizeof(((struct %s *)0)->%s));\n", $2, s, m, s, m
	}
	' "$tmp/rust.txt"
	echo '	return 0;'
	echo '}'
} >"$tmp/check.c"

gcc -std=gnu11 -O0 -Wall -Werror -I"$tmp/inc" -o "$tmp/check" "$tmp/check.c"
"$tmp/check" >"$tmp/c.txt"

n=$(grep -c '^struct ' "$tmp/rust.txt")
m=$(grep -c '^field ' "$tmp/rust.txt")
if diff -u --label rust-structs --label kernel-headers "$tmp/rust.txt" "$tmp/c.txt" >"$tmp/diff"; then
	echo "uabi-check: OK, $n structs and $m members match $rdma"
	exit 0
fi
echo "uabi-check: MISMATCH between the Rust structs and $rdma:" >&2
grep '^[-+][^-+]' "$tmp/diff" >&2
exit 1
