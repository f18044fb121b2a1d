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
# Suite vm_mad_opensm (modes check2, madwire and mad4): with sm=0, unmodified opensm on mlx5_0 sweeps
# the fabric through the hosts' QP0 and the switch (directed routes 0,1 and 0,1,2; the switch's
# PortInfo LocalPortNum tells opensm which port the SMP came in on, so it probes the other
# one): both ports ACTIVE with its LIDs and its sm_lid (sysfs, ibv_devinfo, ibstat, sminfo to
# opensm's SMInfo agent through QP0), ibnetdiscover finds both HCAs behind the switch, opensm
# logs no error; opensm's SA answers saquery NodeRecord and PR and umad_test -a (RMPP segments
# reassembled by the MAD layer, umad's ENOSPC for a short buffer); ibv_ud_pingpong and
# ib_write_bw by its LIDs. Then opensm over time:
#  - opensm restarted with a guid2lid file giving both HCA ports new LIDs: the PortInfo Set
#    with the new LID and the ClientReregister bit reaches each SMA through QP0 and MAD_IFC,
#    mlx5_ib reports IB_EVENT_LID_CHANGE and IB_EVENT_CLIENT_REREGISTER
#    (tests/userspace/port_events); sysfs, ibv_devinfo and smpquery show the new LIDs;
#  - killing opensm leaves both ports ACTIVE with their LIDs; opensm logged no error;
#  - perfquery of mlx5_1's port from mlx5_0 (no SM running, so no other MAD on the link)
#    around N ibv_rc_pingpong and ibv_ud_pingpong messages of known size by the new LIDs:
#    the packet counters grow by exactly the messages' packets plus perfquery's own MADs,
#    the 4-byte-word data counters by their octets (PACKET_OVERHEAD 26 bytes a packet,
#    mlx5/fwsim/pma.rs).
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

# mw_run NAME CMD...: runs CMD (20 s at most), its output in /tmp/mw-NAME and the log.
mw_run() {
	local n=$1 t0 rc
	shift
	echo "+ $*"
	now_cs
	t0=$_now_cs
	timeout 20 "$@" >/tmp/mw-$n 2>&1
	rc=$?
	now_cs
	echo "    ($n: exit $rc after $(((_now_cs - t0) * 10)) ms)"
	show_tail "    $n| " 500 /tmp/mw-$n
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

FABRIC_TAKERS="$FABRIC_TAKERS mad_wire_opensm_suite=sm0"

mad_wire_suite() {
	# The IPoIB interfaces too: vm_ipoib takes this fabric after vm_cm_ib (down until then,
	# they send nothing).
	RDMARS_CORE_PARAMS=ipoib=1 load_ours sim=ib,ib mad_qps=1
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
	fabric_give ib unload_ours
}

# mw_wait_active DEV: waits (60 s at most) for port 1 of DEV to be ACTIVE.
mw_wait_active() {
	local i
	for i in $(seq 120); do
		grep -q ACTIVE /sys/class/infiniband/$1/ports/1/state && return 0
		nap 0.5
	done
	return 1
}

# mw_pguid DEV: port 1's GUID of DEV (0x + 16 hex digits, the GID's low half).
mw_pguid() {
	echo "0x$(tr -d : </sys/class/infiniband/$1/ports/1/gids/0 | cut -c17-)"
}

# mw_opensm: starts opensm on mlx5_0's port (daemonised, log /tmp/opensm.log, appended to
# by each run; a sweep every 2 s).
mw_opensm() {
	local pg
	pg=$(mw_pguid mlx5_0)
	echo "+ opensm -B -g $pg -f /tmp/opensm.log -s 2"
	opensm -B -g "$pg" -f /tmp/opensm.log -s 2 >/tmp/opensm.out 2>&1
}

# mw_opensm_fresh: opensm started with no guid2lid file (it assigns the LIDs) and a new log;
# both ports ACTIVE after its sweep.
mw_opensm_fresh() {
	mkdir -p /var/cache/opensm /var/log
	rm -f /var/cache/opensm/guid2lid /tmp/opensm.log
	mw_opensm
	t_check "mlx5_0 port 1 ACTIVE after opensm's sweep" mw_wait_active mlx5_0
	t_check "mlx5_1 port 1 ACTIVE after opensm's sweep" mw_wait_active mlx5_1
}

# The fabric under opensm (fabric KEY opensm, lib.sh): vm_mad_opensm leaves it up with opensm
# running for vm_opensm_traffic and vm_cm_ib_opensm when they come next; each of them brings
# it up itself when run alone. mw_opensm_down [ASKED] takes it down: opensm killed, its log (every
# run since mw_opensm_fresh) free of errors but ASKED (fixed strings, one a line), the modules
# unloaded.
mw_opensm_down() {
	mw_kill_opensm
	grep -E "ERR|SUBNET UP" /tmp/opensm.log | head -n 20 | sed 's/^/    opensm.log| /'
	# $1: the errors the caller asked for (a fixed string), which do not count.
	local errs
	errs=$(grep "ERR" /tmp/opensm.log | grep -vcF "${1:-no error is asked for}")
	if [ "$errs" != 0 ]; then
		t_fail "opensm logged no error" "$errs ERR lines"
	else
		t_ok "opensm logged no error${1:+ but the one asked for}"
	fi
	unload_ours
}

# mw_sm0_load: sim=ib,ib with no SM and the MAD layer's QPs on the wire, the IPoIB interfaces
# (down); no KUnit suite at
# this load (mode mad4's first): they expect the embedded SM.
mw_sm0_load() {
	RDMARS_CORE_PARAMS=ipoib=1 RDMARS_KUNIT_GLOB=rdmars-no-suite load_ours sim=ib,ib sm=0 mad_qps=1
}

# mw_kill_opensm: kills the running opensm and waits (10 s at most) for it to exit.
mw_kill_opensm() {
	local pid i
	pid=$(pidof opensm)
	echo "+ kill opensm ($pid)"
	[ -n "$pid" ] && kill $pid
	for i in $(seq 50); do
		pidof opensm >/dev/null || break
		nap 0.2
	done
}

# mw_lid DEV: port 1's LID of DEV in decimal.
mw_lid() {
	printf %d "$(cat /sys/class/infiniband/$1/ports/1/lid)"
}

# mw_wait_lid DEV LID: waits (30 s at most) until DEV's port 1 has LID (decimal).
mw_wait_lid() {
	local i
	for i in $(seq 60); do
		[ "$(mw_lid $1)" = "$2" ] && return 0
		nap 0.5
	done
	return 1
}

# mw_eq DESC GOT WANT
mw_eq() {
	if [ "$2" = "$3" ]; then t_ok "$1"; else t_fail "$1" "got '$2', want '$3'"; fi
}

# mw_events DEV EVENT NAME: tests/userspace/port_events on DEV until one event of type EVENT
# (40 s); its output in /tmp/mw-ev-NAME, its pid appended to mw_ev_pids.
mw_ev_pids=""
mw_events() {
	local i=0
	/rdma-rs/port_events "$1" 1 40 $2 >/tmp/mw-ev-$3 2>&1 &
	mw_ev_pids="$mw_ev_pids $!"
	while [ $i -lt 100 ] && ! grep -q '^ready' /tmp/mw-ev-$3; do
		nap 0.1
		i=$((i + 1))
	done
}

# mw_counters NAME LID: PortCounters of LID's port 1 read from mlx5_0, as "xd rd xp rp"
# (PortXmitData RcvData XmitPkts RcvPkts) into /tmp/mw-pc-NAME.
mw_counters() {
	mw_run pc-$1 perfquery -t $MW_T -C mlx5_0 $2 1
	awk -F'[.:]+' '
		$1 == "PortXmitData" { xd = $2 } $1 == "PortRcvData" { rd = $2 }
		$1 == "PortXmitPkts" { xp = $2 } $1 == "PortRcvPkts" { rp = $2 }
		END { print xd, rd, xp, rp }' /tmp/mw-pc-$1 >/tmp/mw-pcv-$1
}

# mw_delta DESC A B PKTS OCTETS: the counters of read B minus read A are PKTS packets and
# OCTETS octets each way, plus perfquery's own MADs between the two snapshots: a read is a
# ClassPortInfo Get and a PortCounters Get, so A's last answer, B's ClassPortInfo Get and its
# answer and B's PortCounters Get (two MAD packets each way, 256 + 26 octets each), exactly.
mw_delta() {
	local d=$1 xd0 rd0 xp0 rp0 xd1 rd1 xp1 rp1 p o
	read -r xd0 rd0 xp0 rp0 </tmp/mw-pcv-$2
	read -r xd1 rd1 xp1 rp1 </tmp/mw-pcv-$3
	p=$(($4 + 2))
	o=$(($5 + 2 * 282))
	echo "    $d: xmit $((xd1 - xd0)) words $((xp1 - xp0)) pkts, rcv $((rd1 - rd0)) words $((rp1 - rp0)) pkts; want $p pkts, $o octets ($((o / 4)) words)"
	mw_eq "$d: PortXmitPkts +$p" $((xp1 - xp0)) $p
	mw_eq "$d: PortRcvPkts +$p" $((rp1 - rp0)) $p
	mw_words "$d: PortXmitData" $((xd1 - xd0)) $o
	mw_words "$d: PortRcvData" $((rd1 - rd0)) $o
}

# mw_words DESC WORDS OCTETS: WORDS 4-byte words are exactly OCTETS octets (a multiple of 4:
# the counter's rounding of the octets before and after cancels).
mw_words() {
	if [ $(($2 * 4)) = $3 ]; then
		t_ok "$1 +$2 words ($3 octets)"
	else
		t_fail "$1 +$2 words" "want $3 octets ($(($3 / 4)) words)"
	fi
}

# mw_both_active: port 1 of both functions is ACTIVE.
mw_both_active() {
	grep -q ACTIVE /sys/class/infiniband/mlx5_0/ports/1/state &&
		grep -q ACTIVE /sys/class/infiniband/mlx5_1/ports/1/state
}

# With sm=0 the ports wait in INIT for a host SM (vm_sma leaves this fabric when it comes
# first): unmodified opensm on mlx5_0 sweeps the fabric through the hosts' QP0 and the switch;
# then the fabric without an SM, and opensm restarted with other LIDs, left running for the
# suites that use it next.
mad_wire_opensm_suite() {
	fabric_take sm0 mw_sm0_load
	local l0 l1 sm0 sm1 g0 g1 n0=48 n1=49
	mw_opensm_fresh
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
	mw_kill_opensm
	t_check "ports stay ACTIVE after opensm exits" mw_both_active
	mw_eq "mlx5_1 keeps LID $((l1)) after opensm exits" "$(mw_lid mlx5_1)" $((l1))
	# With no SM on the fabric, perfquery of mlx5_1's port sees only the pingpongs (by
	# opensm's LIDs) and its own MADs.
	mw_counters a $((l1))
	# ibv_rc_pingpong -s 4096 -m 1024 -n 5: each side sends 5 messages of 4 packets (20
	# packets: their 26 header octets each and perfquery's MADs make whole 4-byte words).
	tr_pair "ibv_rc_pingpong -s 4096 -m 1024 -n 5 by opensm's LIDs, no SM" ibv_rc_pingpong \
		"-d mlx5_1 -s 4096 -m 1024 -n 5" "-d mlx5_0 -s 4096 -m 1024 -n 5"
	mw_counters b $((l1))
	mw_delta "5 RC messages of 4096 B each way" a b 20 $((5 * 4096 + 20 * 26))
	# ibv_ud_pingpong -s 1024 -n 10: each side sends 10 one-packet messages of 1024 B (a
	# whole number of 4-byte words with perfquery's MADs, as mw_words needs).
	tr_pair "ibv_ud_pingpong -s 1024 -n 10 by opensm's LIDs, no SM" ibv_ud_pingpong \
		"-d mlx5_1 -s 1024 -n 10" "-d mlx5_0 -s 1024 -n 10"
	mw_counters c $((l1))
	mw_delta "10 UD messages of 1024 B each way" b c 10 $((10 * 1024 + 10 * 26))
	# opensm restarted with a guid2lid file (its persistent GUID -> LID map, honoured on the
	# first sweep, osm_db_files.c's format: "GUID MIN MAX" entries, a blank line after each)
	# giving both HCA ports new LIDs (the switch keeps its own): its PortInfo Set with the
	# new LID and the ClientReregister bit reaches each SMA through QP0 and MAD_IFC, the SMA
	# raises the LID and CLIENT_REREG port changes, mlx5_ib reports IB_EVENT_LID_CHANGE (11)
	# and IB_EVENT_CLIENT_REREGISTER (17).
	g0=$(mw_pguid mlx5_0)
	g1=$(mw_pguid mlx5_1)
	printf '%s 0x%04x 0x%04x\n\n%s 0x%04x 0x%04x\n\n' $g0 $n0 $n0 $g1 $n1 $n1 \
		>/var/cache/opensm/guid2lid
	sed 's/^/    guid2lid| /' /var/cache/opensm/guid2lid
	mw_ev_pids=""
	mw_events mlx5_0 11 lid0
	mw_events mlx5_1 11 lid1
	mw_events mlx5_1 17 rereg1
	mw_opensm
	t_check "mlx5_0 port 1 gets LID $n0 from the restarted opensm" mw_wait_lid mlx5_0 $n0
	t_check "mlx5_1 port 1 gets LID $n1 from the restarted opensm" mw_wait_lid mlx5_1 $n1
	# shellcheck disable=SC2086
	wait $mw_ev_pids
	sed 's/^/    lid0| /' /tmp/mw-ev-lid0
	sed 's/^/    lid1| /' /tmp/mw-ev-lid1
	sed 's/^/    rereg1| /' /tmp/mw-ev-rereg1
	mw_has "mlx5_0: IB_EVENT_LID_CHANGE on port 1" ev-lid0 "^event .* 11 port 1$"
	mw_has "mlx5_1: IB_EVENT_LID_CHANGE on port 1" ev-lid1 "^event .* 11 port 1$"
	mw_has "mlx5_1: IB_EVENT_CLIENT_REREGISTER on port 1" ev-rereg1 "^event .* 17 port 1$"
	mw_eq "mlx5_1 sysfs sm_lid: the restarted opensm's port" \
		"$(cat /sys/class/infiniband/mlx5_1/ports/1/sm_lid)" "$(printf 0x%x $n0)"
	mw_run devinfo2 ibv_devinfo -d mlx5_1
	mw_has "ibv_devinfo mlx5_1: port_lid $n1" devinfo2 "port_lid:[[:space:]]+$n1\$"
	mw_has "ibv_devinfo mlx5_1: sm_lid $n0" devinfo2 "sm_lid:[[:space:]]+$n0\$"
	mw_run pi smpquery -t $MW_T -C mlx5_0 -D portinfo 0,1,2
	mw_has "smpquery -D portinfo 0,1,2: mlx5_1's port has LID $n1" pi "^Lid:\.+$n1\$"
	# Traffic by the new LIDs, opensm running (vm_opensm_traffic runs every pingpong and
	# perftest program on this fabric).
	tr_pair "ibv_ud_pingpong -c mlx5_0 -> mlx5_1 by the new LIDs ($n0, $n1)" ibv_ud_pingpong \
		"-d mlx5_1 -c -n 10" "-d mlx5_0 -c -n 10"
	fabric_give opensm mw_opensm_down
}

[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode madwire
