# SPDX-License-Identifier: GPL-2.0
# MADs on the wire (suite vm_mad_wire of suites.list, modes check2 and madwire;
# Documentation/mad.md): the hosts' QP0 and QP1 (mlx5/ib/gsi.rs) carry the unmodified
# infiniband-diags between the two functions of sim=ib,ib (mad_qps=1) through the fabric's
# switch, with the embedded SM's LIDs (0x102, 0x104, the switch 1):
#  - ibping -S on mlx5_1's umad port answers ibping -L 0x104 from mlx5_0 (vendor class 0x32 on
#    QP1, the MAD layer's receive dispatch to a umad agent);
#  - smpquery nodeinfo/portinfo by LID (the other HCA's SMA through its QP0, process_mad and
#    agent_send_response(); the switch's SMA at LID 1) and by directed route (0,1 the switch,
#    0,1,2 the other HCA: smi.c on receive and on the reply's way back);
#  - perfquery of the other function's LID (its PMA through QP1);
#  - ibnetdiscover prints the switch and the own HCA.
# Suite vm_mad_opensm (modes check2 and madwire): with sm=0, unmodified opensm on mlx5_0 sweeps
# the fabric through the hosts' QP0 and the switch (directed routes 0,1 and 0,1,2; the switch's
# PortInfo LocalPortNum tells opensm which port the SMP came in on, so it probes the other
# one): both ports ACTIVE with its LIDs and its sm_lid (sysfs, ibv_devinfo, ibstat, sminfo to
# opensm's SMInfo agent through QP0), ibnetdiscover finds both HCAs behind the switch, opensm
# logs no error; opensm's SA answers saquery NodeRecord and PR and umad_test -a (RMPP segments
# reassembled by the MAD layer, umad's ENOSPC for a short buffer); killing opensm leaves the
# fabric running (ibv_rc_pingpong by its LIDs).
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"

# mw_guid DEV: the node GUID of DEV as infiniband-diags print it (0x + 16 hex digits).
mw_guid() {
	echo "0x$(tr -d : < /sys/class/infiniband/$1/node_guid)"
}

# The MAD timeout (ms) the infiniband-diags get (-t): their default, 1 s for the answer to
# come back, was missed in about 3 % of smpquery runs under TCG with two VMs on a two-core
# host (make check runs two VMs; a guest's vCPUs wait for the host's), the answer arriving
# late rather than lost. mw_run prints each command's time.
MW_T=4000

# mw_ms: milliseconds since boot (the VM's date has no %N).
mw_ms() {
	awk '{ printf "%d", $1 * 1000 }' /proc/uptime
}

# mw_run NAME CMD...: runs CMD (20 s at most), its output in /tmp/mw-NAME and the log.
mw_run() {
	local n=$1 t0 rc
	shift
	echo "+ $*"
	t0=$(mw_ms)
	timeout 20 "$@" >/tmp/mw-$n 2>&1
	rc=$?
	echo "    ($n: exit $rc after $(($(mw_ms) - t0)) ms)"
	sed "s/^/    $n| /" /tmp/mw-$n
	return $rc
}

# mw_has DESC NAME REGEX: the output of mw_run NAME matches REGEX.
mw_has() {
	if grep -Eq "$3" /tmp/mw-$2; then t_ok "$1"; else t_fail "$1" "no '$3'"; fi
}

# Mode madwire: the first load runs the special QPs' KUnit suite (mlx5_ib_rs_gsi), without
# mad_qps=1 (the MAD layer's own QP1 would take the MADs the suite sends).
mad_wire_kunit_suite() {
	RDMARS_KUNIT_GLOB='mlx5_ib_rs_gsi.*' load_ours
	unload_ours
}

mad_wire_suite() {
	load_ours sim=ib,ib mad_qps=1
	local g0 g1
	g0=$(mw_guid mlx5_0)
	g1=$(mw_guid mlx5_1)
	ibping -C mlx5_1 -S >/tmp/mw-ibping-S 2>&1 &
	local srv=$!
	sleep 1
	mw_run ibping ibping -t $MW_T -C mlx5_0 -c 3 -L 0x104
	mw_has "ibping mlx5_0 -> LID 0x104 (ibping -S on mlx5_1): 3 answered" ibping \
		"3 packets transmitted, 3 received"
	kill $srv 2>/dev/null
	wait $srv 2>/dev/null
	mw_run ni-lid smpquery -t $MW_T -C mlx5_0 nodeinfo 0x104
	mw_has "smpquery nodeinfo 0x104: mlx5_1's node GUID" ni-lid "^Guid:\.+$g1\$"
	mw_run pi-lid smpquery -t $MW_T -C mlx5_0 portinfo 0x104 1
	mw_has "smpquery portinfo 0x104: LID 260" pi-lid "^Lid:\.+260\$"
	mw_has "smpquery portinfo 0x104: SMLid 1" pi-lid "^SMLid:\.+1\$"
	mw_has "smpquery portinfo 0x104: Active" pi-lid "^LinkState:\.+Active\$"
	mw_run ni-sw smpquery -t $MW_T -C mlx5_0 nodeinfo 1
	mw_has "smpquery nodeinfo 1: the switch" ni-sw "^NodeType:\.+Switch\$"
	mw_run ni-dr1 smpquery -t $MW_T -C mlx5_0 -D nodeinfo 0,1
	mw_has "smpquery -D nodeinfo 0,1: the switch" ni-dr1 "^NodeType:\.+Switch\$"
	mw_run ni-dr2 smpquery -t $MW_T -C mlx5_0 -D nodeinfo 0,1,2
	mw_has "smpquery -D nodeinfo 0,1,2: mlx5_1's node GUID" ni-dr2 "^Guid:\.+$g1\$"
	mw_run pi-dr2 smpquery -t $MW_T -C mlx5_0 -D portinfo 0,1,2
	mw_has "smpquery -D portinfo 0,1,2: LID 260" pi-dr2 "^Lid:\.+260\$"
	mw_run perf perfquery -t $MW_T -C mlx5_0 0x104 1
	mw_has "perfquery 0x104: PortCounters of LID 0x104" perf "^# Port counters: Lid 260 port 1"
	mw_has "perfquery 0x104: PortXmitPkts" perf "^PortXmitPkts:\.+[0-9]+\$"
	mw_run disc ibnetdiscover -t $MW_T -C mlx5_0
	mw_has "ibnetdiscover: one switch" disc "^Switch"
	mw_has "ibnetdiscover: mlx5_0's GUID" disc "^Ca.*H-${g0#0x}"
	unload_ours
}

# mw_wait_active DEV: waits (60 s at most) for port 1 of DEV to be ACTIVE.
mw_wait_active() {
	local i
	for i in $(seq 120); do
		grep -q ACTIVE /sys/class/infiniband/$1/ports/1/state && return 0
		sleep 0.5
	done
	return 1
}

# With sm=0 the ports wait in INIT for a host SM: unmodified opensm on mlx5_0 sweeps the
# fabric through the hosts' QP0 and the switch.
mad_wire_opensm_suite() {
	load_ours sim=ib,ib sm=0 mad_qps=1
	local pg
	pg=0x$(cat /sys/class/infiniband/mlx5_0/ports/1/gids/0 | tr -d : | cut -c17-)
	mkdir -p /var/cache/opensm /var/log
	echo "+ opensm -B -g $pg -f /tmp/opensm.log -s 2"
	opensm -B -g "$pg" -f /tmp/opensm.log -s 2 >/tmp/opensm.out 2>&1
	t_check "mlx5_0 port 1 ACTIVE after opensm's sweep" mw_wait_active mlx5_0
	t_check "mlx5_1 port 1 ACTIVE after opensm's sweep" mw_wait_active mlx5_1
	local l0 l1 sm0 sm1
	l0=$(cat /sys/class/infiniband/mlx5_0/ports/1/lid)
	l1=$(cat /sys/class/infiniband/mlx5_1/ports/1/lid)
	sm0=$(cat /sys/class/infiniband/mlx5_0/ports/1/sm_lid)
	sm1=$(cat /sys/class/infiniband/mlx5_1/ports/1/sm_lid)
	echo "    lids $l0 $l1 sm_lid $sm0 $sm1"
	if [ "$l0" != 0x0 ] && [ "$l1" != 0x0 ] && [ "$l0" != "$l1" ]; then
		t_ok "opensm assigned two LIDs ($l0, $l1)"
	else
		t_fail "opensm assigned two LIDs" "got $l0 $l1"
	fi
	if [ "$sm0" = "$l0" ] && [ "$sm1" = "$l0" ]; then
		t_ok "both ports' sm_lid is opensm's port ($l0)"
	else
		t_fail "both ports' sm_lid is opensm's port" "got $sm0 $sm1, want $l0"
	fi
	mw_run devinfo ibv_devinfo -d mlx5_1
	mw_has "ibv_devinfo mlx5_1: PORT_ACTIVE" devinfo "state:.*PORT_ACTIVE"
	mw_has "ibv_devinfo mlx5_1: port_lid $((l1))" devinfo "port_lid:[[:space:]]+$((l1))\$"
	mw_has "ibv_devinfo mlx5_1: sm_lid $((l0))" devinfo "sm_lid:[[:space:]]+$((l0))\$"
	mw_run sminfo sminfo -t $MW_T -C mlx5_1
	mw_has "sminfo from mlx5_1: opensm's LID, MASTER" sminfo "sm lid $((l0)) .*SMINFO_MASTER"
	mw_run ibstat ibstat mlx5_1
	mw_has "ibstat mlx5_1: Active, SM lid $((l0))" ibstat "SM lid: $((l0))\$"
	mw_run disc ibnetdiscover -t $MW_T -C mlx5_1
	mw_has "ibnetdiscover with opensm's LIDs: the switch" disc "^Switch"
	mw_has "ibnetdiscover from mlx5_1: mlx5_0 behind the switch" disc \
		"^Ca.*H-$(mw_guid mlx5_0 | cut -c3-)"
	mw_has "ibnetdiscover from mlx5_1: mlx5_1 on switch port 2" disc \
		"^\\[2\\].*H-$(mw_guid mlx5_1 | cut -c3-).* lid $((l1)) "
	# opensm's SA through QP1: a GetTable of every NodeRecord comes back in RMPP segments
	# (three records do not fit one MAD), reassembled by the MAD layer; saquery (libibumad)
	# reads it after ENOSPC with a buffer of one MAD.
	mw_run sa-nr saquery -t $MW_T -C mlx5_1 NodeRecord
	mw_has "saquery NodeRecord from mlx5_1: mlx5_0" sa-nr "$(mw_guid mlx5_0 | cut -c3-)"
	mw_has "saquery NodeRecord from mlx5_1: mlx5_1" sa-nr "$(mw_guid mlx5_1 | cut -c3-)"
	mw_has "saquery NodeRecord from mlx5_1: the switch" sa-nr "rdma-rs simulated switch"
	mw_run sa-pr saquery -t $MW_T -C mlx5_1 PR --slid $((l1)) --dlid $((l0))
	mw_has "saquery PR $((l1)) -> $((l0)): the PathRecord" sa-pr "^[[:space:]]+dlid\.+$((l0))\$"
	t_import "umad_test umad1: an RMPP answer, ENOSPC for one MAD's room" \
		/rdma-rs/umad_test -u 1 -a $((l0))
	local pid
	pid=$(pidof opensm)
	echo "+ kill opensm ($pid)"
	kill $pid
	sleep 3
	sed 's/^/    opensm.log| /' /tmp/opensm.log | grep -E "ERR|SUBNET UP|Entering" | head -20
	if grep -q "ERR" /tmp/opensm.log; then
		t_fail "opensm logged no error" "$(grep -c ERR /tmp/opensm.log) ERR lines"
	else
		t_ok "opensm logged no error"
	fi
	if grep -q ACTIVE /sys/class/infiniband/mlx5_0/ports/1/state &&
		grep -q ACTIVE /sys/class/infiniband/mlx5_1/ports/1/state; then
		t_ok "ports stay ACTIVE after opensm exits"
	else
		t_fail "ports stay ACTIVE after opensm exits"
	fi
	tr_pair "ibv_rc_pingpong mlx5_0 -> mlx5_1 by opensm's LIDs" ibv_rc_pingpong \
		"-d mlx5_1 -n 20" "-d mlx5_0 -n 20"
	unload_ours
}

[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode madwire
