#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `make demo`: builds what is missing, boots the VM, loads our stack and
# prints what rdma-core sees (ibv_devinfo -v, rdma dev/link/res).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/tools/lib.sh"
logs="$here/out/logs"
mkdir -p "$logs"
timed "demo: setup" "$here/tools/setup.sh" >"$logs/setup.log" 2>&1 || die "setup failed; see $logs/setup.log"
kb=$(timed "demo: kernel (cached after the first run)" "$here/tools/kernel.sh")
timed "demo: module build" make -s -C "$kb" LLVM=$LLVM_SUFFIX M="$here" modules >"$logs/modules.log" 2>&1 ||
	die "module build failed; see $logs/modules.log"
RDMARS_VM_TIMEOUT=${RDMARS_VM_TIMEOUT:-600} "$here/tools/vm.sh" demo "$kb" "$logs/demo-console.log"
# The demo's own section of the console, without the kernel's messages.
sed -n '/^=* rdma-rs demo =*/,/^==========/p' "$logs/demo-console.log" | grep -v '^\[ *[0-9.]*\] ' || true
grep -q RDMARS-VM-DONE "$logs/demo-console.log" || die "the VM did not finish; see $logs/demo-console.log"
echo "(full console log: $logs/demo-console.log)"
