#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make wire: two test VMs on one wire (Documentation/wire.md).
#   tools/wire.sh KBUILD [PEER]
# PEER: rxe (default) or ours (VM B runs rdma-rs too: mode wire_b_ours).
# VM A (mode wire_a: rdma-rs, its Ethernet fabric's uplink on A's virtio-net interface) and
# VM B (mode wire_b: upstream ib_core + rdma_rxe on B's virtio-net interface) boot side by
# side through tools/vm.sh, each with one virtio-net NIC whose backend is QEMU's datagram
# netdev on a Unix socket (out/wire/a.sock <-> out/wire/b.sock): no root, no tap, nothing
# outside the two VMs. QEMU's filter-dump writes every frame of A's NIC, both directions, to
# out/wire/wire.pcap. The VMs find each other by a fixed address plan (tests/vm/wire.sh).
# Then both console logs are judged (host/vmlog) and the capture is dissected by tshark
# (malformed frames counted), and a summary is printed. Exit status 0 only if all pass.
# Two VMs at once: run it holding both VM slots where slots are shared.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/tools/lib.sh"
kb=$1
peer=${2:-rxe}
case $peer in
rxe) mb=wire_b ;;
ours) mb=wire_b_ours ;;
*) die "PEER is rxe or ours, not $peer" ;;
esac
d="$here/out/wire"
logs="$here/out/logs"
mkdir -p "$d" "$logs"
rm -f "$d/a.sock" "$d/b.sock" "$d/wire.pcap"

# nic SIDE PEER MAC: the QEMU arguments of one VM's wire NIC.
nic() {
	local a="-netdev dgram,id=wire,local.type=unix,local.path=$d/$1.sock,remote.type=unix,remote.path=$d/$2.sock"
	a="$a -device virtio-net-pci,netdev=wire,mac=$3"
	[ "$1" != a ] || a="$a -object filter-dump,id=cap,netdev=wire,file=$d/wire.pcap"
	echo "$a"
}

export RDMARS_VM_TIMEOUT=${RDMARS_VM_TIMEOUT:-1200}
RDMARS_QEMU_ARGS="$(nic a b 52:54:00:38:00:0a)" "$here/tools/vm.sh" wire_a "$kb" "$logs/wire_a.log" &
pa=$!
RDMARS_QEMU_ARGS="$(nic b a 52:54:00:38:00:0b)" "$here/tools/vm.sh" $mb "$kb" "$logs/$mb.log" &
pb=$!
wait $pa || true
wait $pb || true

rc=0
declare -A verdict
for m in wire_a $mb; do
	if (cd "$here" && cargo run --quiet --release -p rdma-rs-vmlog -- --mode $m "$logs/$m.log") >"$d/$m.judge" 2>&1; then
		verdict[$m]=PASS
	else
		verdict[$m]=FAIL
		rc=1
	fi
	cat "$d/$m.judge"
done

# The capture: every frame dissected by tshark (a malformed one, or one with an expert error
# but RoCE v2's UDP checksum 0 over IPv6, fails), and the ICRC of every RoCE v2 packet checked from the specification
# (tools/wire-icrc.py, independent of the model's code).
cap=missing
if [ ! -s "$d/wire.pcap" ]; then
	rc=1
elif ! command -v tshark >/dev/null; then
	cap="$(stat -c %s "$d/wire.pcap") bytes; no tshark on the host to dissect it"
	rc=1
else
	# RPC-over-RDMA is dissected by a heuristic on any RC SEND's payload: perftest's and
	# the pingpongs' payloads are not RPC, and a zero-length SEND trips it into a malformed
	# frame. It is turned off; InfiniBand (BTH and extension headers) is still dissected.
	tshark() { command tshark --disable-protocol rpcordma "$@"; }
	frames=$(tshark -r "$d/wire.pcap" 2>/dev/null | wc -l)
	malformed=$(tshark -r "$d/wire.pcap" -Y '_ws.malformed' 2>/dev/null | wc -l)
	# Expert errors other than UDP checksum 0 over IPv6, which RoCE v2 sends by IBA Annex A17
	# (the ICRC covers the packet; rxe does the same) where RFC 8200 wants a checksum.
	errors=$(tshark -r "$d/wire.pcap" \
		-Y '_ws.expert.severity == "Error" && !(ipv6 && udp.dstport == 4791 && udp.checksum == 0)' \
		2>/dev/null | wc -l)
	roce=$(tshark -r "$d/wire.pcap" -Y 'udp.dstport == 4791' 2>/dev/null | wc -l)
	tshark -r "$d/wire.pcap" -q -z io,phs >"$d/wire.phs" 2>&1 || true
	tshark -r "$d/wire.pcap" -Y 'udp.dstport == 4791' -T fields -e frame.number -e ip.src -e ipv6.src \
		-e ipv6.dst -e infiniband.bth.opcode -e infiniband.bth.destqp -e infiniband.bth.psn \
		2>/dev/null | head -n 8 >"$d/wire.roce" || true
	cap="$frames frames ($roce RoCE v2), $malformed malformed, $errors with other expert errors (tshark)"
	# The CM's messages of the rdma_cm runs (MAD class 0x07 on QP1; attribute IDs of IBA
	# 12.6): each must be in the capture.
	cm=""
	for m in ConnectRequest:0x0010 ConnectReply:0x0013 ReadyToUse:0x0014 DisconnectRequest:0x0015 DisconnectReply:0x0016; do
		c=$(tshark -r "$d/wire.pcap" \
			-Y "infiniband.mad.mgmtclass == 0x07 && infiniband.mad.attributeid == ${m#*:}" \
			2>/dev/null | wc -l)
		cm="$cm ${m%%:*} $c,"
		[ "$c" -gt 0 ] || rc=1
	done
	cap="$cap; CM MADs (tshark):${cm%,}"
	[ "$malformed" = 0 ] && [ "$errors" = 0 ] || rc=1
	if [ "$roce" = 0 ]; then
		rc=1
	fi
	icrc_rc=0
	icrc=$(python3 "$here/tools/wire-icrc.py" "$d/wire.pcap") || icrc_rc=$?
	[ $icrc_rc = 0 ] || { echo "$icrc"; rc=1; }
	cap="$cap; $(echo "$icrc" | tail -n1 | sed 's/^wire-icrc: //')"
fi

printf '\n==> wire: summary\n'
printf '    VM A (rdma-rs, uplink on virtio-net): %s  %s\n' "${verdict[wire_a]}" "$(grep -m1 '^TOTAL' "$d/wire_a.judge")"
printf '    VM B (%s on virtio-net): %s  %s\n' "$peer" "${verdict[$mb]}" "$(grep -m1 '^TOTAL' "$d/$mb.judge")"
printf '    capture %s: %s\n' "$d/wire.pcap" "$cap"
[ ! -s "$d/wire.phs" ] || sed -n '/^eth/,/^=/p' "$d/wire.phs" | sed 's/^/      /'
[ ! -s "$d/wire.roce" ] || { echo "    first RoCE packets (frame, source, destination, BTH opcode, QP, PSN):"; sed 's/^/      /' "$d/wire.roce"; }
# The benchmark of tests/vm/wire.sh (printed, not asserted): perftest's result lines, A the
# client with ours, then with upstream rdma_rxe on its eth0; B serving.
if grep -aq 'bench: ' "$logs/wire_a.log"; then
	echo "    benchmark, A the client (ours, then rdma_rxe), B ($peer) serving; perftest's result line"
	echo "    (lat: bytes iters t_min t_max t_typical t_avg t_stdev 99% 99.9% usec; bw: bytes iters"
	echo "    BW peak, BW average MB/s, MsgRate Mpps):"
	grep -a 'bench: ' "$logs/wire_a.log" | sed 's/.*bench: //' | tr -d '\r' | sed 's/^/      /'
fi
exit $rc
