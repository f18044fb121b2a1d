# SPDX-License-Identifier: GPL-2.0
# Shared settings and helpers for the rdma-rs tools (sourced, not run).
# The cache lives outside the repository so that every run, worktree and CI job
# on the same machine reuses the kernel build.
export PATH="$HOME/.cargo/bin:$PATH"
CACHE=${RDMA_RS_CACHE:-/var/cache/rdma-rs}
KVER_MAJOR=7.3
KSRC="$CACHE/linux-$KVER_MAJOR"
STAMP_DIR="$CACHE/stamps"
LLVM_SUFFIX=-19
export LIBCLANG_PATH=/usr/lib/llvm-19/lib

step() { printf '==> %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }
# timed LABEL CMD...: run CMD, then say how long it took.
timed() {
	local label=$1 t0 rc=0
	shift
	t0=$(date +%s)
	"$@" || rc=$?
	printf '==> %s: %ss%s\n' "$label" "$(($(date +%s) - t0))" "$([ $rc = 0 ] || echo " (FAILED, exit $rc)")" >&2
	return $rc
}
