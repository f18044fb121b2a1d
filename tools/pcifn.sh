#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make pcifn: boots the test VM with the emulated ConnectX PCI function attached over
# vfio-user (Documentation/pcifn.md): the host/cxfn server on a UNIX socket, trixie's QEMU
# (tools/qemu-vfio-user.sh) with guest RAM in a shared memfd, mode `pcifn` in the guest.
#   tools/pcifn.sh KBUILD LOG [ib|eth|cx6dx] [MODE]
# MODE: the VM mode, `pcifn` (our stack; the default) or `pcifn_c` (upstream mlx5_ib, ib_core
# and ib_uverbs on the same function, for tools/pcifn-compare.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/tools/lib.sh"
kb=$1
log=$2
model=${3:-ib}
vmmode=${4:-pcifn}
qemu=$("$here/tools/qemu-vfio-user.sh")
(cd "$here" && cargo build --quiet --release -p rdma-rs-cxfn --bin cxfn-server)
mkdir -p "$here/out/pcifn"
sock="$here/out/pcifn/cxfn-$vmmode.sock"
slog="$here/out/pcifn/server-$vmmode.log"
mem=${RDMARS_VM_MEM:-3G}
# One VM at a time for the whole team.
exec 9>/tmp/rdma-vm.lock
flock 9
CXFN_TRACE=${CXFN_TRACE:-} "$here/target/release/cxfn-server" "$sock" "$model" 2>"$slog" &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
# The modules' KUnit suites (which run at every insmod) are make check's business; here they
# would take most of the run under TCG. Mode pcifn runs one, mlx5_ib_rs_fn_kverbs (kernel
# queues on the function), and filters out the rest; mode pcifn_c runs none.
if [ "$vmmode" = pcifn ]; then
	kunit_args="kunit.filter_glob=mlx5_ib_rs_fn_kverbs"
else
	kunit_args="kunit.enable=0"
fi
# The VM is killed only well past its usual time (about 8 minutes beside make check's main VM):
# on a loaded host 600 s is not enough for its last suite.
RDMARS_VM_ARGS="$kunit_args ${RDMARS_VM_ARGS:-}" RDMARS_QEMU="$qemu" RDMARS_VM_TIMEOUT=${RDMARS_VM_TIMEOUT:-1500} \
	RDMARS_QEMU_ARGS="-object memory-backend-memfd,id=mem,size=$mem,share=on -machine q35,memory-backend=mem -device {\"driver\":\"vfio-user-pci\",\"socket\":{\"type\":\"unix\",\"path\":\"$sock\"}}" \
	"$here/tools/vm.sh" "$vmmode" "$kb" "$log"
wait $server 2>/dev/null || true
step "pcifn: server log $slog"
# The device's side: what the firmware model executed, and where it was left.
ncmd=$(grep -c '^cxfn-server: fw opcode' "$slog" || true)
nbad=$(grep '^cxfn-server: fw opcode' "$slog" | grep -vc 'status 0x0 ' || true)
echo "pcifn: server: $ncmd commands executed, $nbad with a status other than OK"
grep '^cxfn-server: fw opcode' "$slog" | grep -v 'status 0x0 ' | sort | uniq -c | sed 's/^/pcifn: server:   /' || true
grep '^cxfn-server: firmware state' "$slog" | sed 's/^/pcifn: server: /'
grep '^cxfn-server: data path' "$slog" | sed 's/^/pcifn: server: /'
wqes=$(sed -n 's/^cxfn-server: data path: .* \([0-9]*\) WQEs, \([0-9]*\) EQEs.*/\1 \2/p' "$slog")
if [ "${wqes%% *}" -gt 0 ] 2>/dev/null && [ "${wqes##* }" -gt 0 ] 2>/dev/null; then
	echo "ok pcifn_server_datapath: the model executed WQEs over guest memory and wrote EQEs ($wqes)"
else
	echo "not ok pcifn_server_datapath: no WQE executed or no EQE written (${wqes:-no data-path line})"
fi
if grep -q '^cxfn-server: firmware state disabled' "$slog"; then
	echo "ok pcifn_server_teardown: the firmware is disabled again after modprobe -r"
else
	echo "not ok pcifn_server_teardown: the firmware was not disabled at the end"
fi
