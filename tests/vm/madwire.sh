# SPDX-License-Identifier: GPL-2.0
# MADs on the wire (suite vm_mad_wire of suites.list, modes check2 and madwire;
# Documentation/mad.md): the hosts' QP0 and QP1 (mlx5/ib/gsi.rs) carry the unmodified
# infiniband-diags between the two functions of sim=ib,ib through the fabric's switch, with
# the embedded SM's LIDs (0x102, 0x104, the switch 1):
#  - ibping -S on mlx5_1's umad port answers ibping -L 0x104 from mlx5_0 (vendor class 0x32 on
#    QP1, the MAD layer's receive dispatch to a umad agent);
#  - smpquery nodeinfo/portinfo by LID (the other HCA's SMA through its QP0, process_mad and
#    agent_send_response(); the switch's SMA at LID 1) and by directed route (0,1 the switch,
#    0,1,2 the other HCA: smi.c on receive and on the reply's way back);
#  - perfquery of the other function's LID (its PMA through QP1);
#  - ibnetdiscover prints the switch and both HCAs with their GUIDs and ports.
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"

# mw_guid DEV: the node GUID of DEV as infiniband-diags print it (0x + 16 hex digits).
mw_guid() {
	echo "0x$(tr -d : < /sys/class/infiniband/$1/node_guid)"
}

# mw_run NAME CMD...: runs CMD (10 s at most), its output in /tmp/mw-NAME and the log.
mw_run() {
	local n=$1
	shift
	echo "+ $*"
	timeout 10 "$@" >/tmp/mw-$n 2>&1
	local rc=$?
	sed "s/^/    $n| /" /tmp/mw-$n
	return $rc
}

# mw_has DESC NAME REGEX: the output of mw_run NAME matches REGEX.
mw_has() {
	if grep -Eq "$3" /tmp/mw-$2; then t_ok "$1"; else t_fail "$1" "no '$3'"; fi
}

mad_wire_suite() {
	load_ours sim=ib,ib
	local g0 g1
	g0=$(mw_guid mlx5_0)
	g1=$(mw_guid mlx5_1)
	ibping -C mlx5_1 -S >/tmp/mw-ibping-S 2>&1 &
	local srv=$!
	sleep 1
	mw_run ibping ibping -C mlx5_0 -c 3 -L 0x104
	mw_has "ibping mlx5_0 -> LID 0x104 (ibping -S on mlx5_1): 3 answered" ibping \
		"3 packets transmitted, 3 received"
	kill $srv 2>/dev/null
	wait $srv 2>/dev/null
	mw_run ni-lid smpquery -C mlx5_0 nodeinfo 0x104
	mw_has "smpquery nodeinfo 0x104: mlx5_1's NodeGuid" ni-lid "^NodeGuid:\.+$g1\$"
	mw_run pi-lid smpquery -C mlx5_0 portinfo 0x104 1
	mw_has "smpquery portinfo 0x104: LID 0x104, SMLid 1, Active" pi-lid \
		"^Lid:\.+0x0104\$"
	mw_has "smpquery portinfo 0x104: SMLid 1" pi-lid "^SMLid:\.+0x0001\$"
	mw_has "smpquery portinfo 0x104: Active" pi-lid "^LinkState:\.+Active\$"
	mw_run ni-sw smpquery -C mlx5_0 nodeinfo 1
	mw_has "smpquery nodeinfo 1: the switch" ni-sw "^NodeType:\.+Switch\$"
	mw_run ni-dr1 smpquery -C mlx5_0 -D nodeinfo 0,1
	mw_has "smpquery -D nodeinfo 0,1: the switch" ni-dr1 "^NodeType:\.+Switch\$"
	mw_run ni-dr2 smpquery -C mlx5_0 -D nodeinfo 0,1,2
	mw_has "smpquery -D nodeinfo 0,1,2: mlx5_1's NodeGuid" ni-dr2 "^NodeGuid:\.+$g1\$"
	mw_run pi-dr2 smpquery -C mlx5_0 -D portinfo 0,1,2
	mw_has "smpquery -D portinfo 0,1,2: LID 0x104" pi-dr2 "^Lid:\.+0x0104\$"
	mw_run perf perfquery -C mlx5_0 0x104 1
	mw_has "perfquery 0x104: PortCounters of LID 0x104" perf "^# Port counters: Lid 260 port 1"
	mw_has "perfquery 0x104: PortXmitPkts" perf "^PortXmitPkts:\.+[0-9]+\$"
	mw_run disc ibnetdiscover -C mlx5_0
	mw_has "ibnetdiscover: one switch" disc "^Switch"
	mw_has "ibnetdiscover: mlx5_0's GUID" disc "^Ca.*H-${g0#0x}"
	mw_has "ibnetdiscover: mlx5_1's GUID" disc "^Ca.*H-${g1#0x}"
	unload_ours
}

[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode madwire
