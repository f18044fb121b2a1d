# SPDX-License-Identifier: GPL-2.0
# opensm managing the fabric over time (suite vm_mad_opensm_relid of suites.list, mode mad4;
# Documentation/mad.md), sim=ib,ib with the embedded SM off (sm=0):
#  - unmodified opensm sweeps the fabric; ibv_rc_pingpong, ibv_ud_pingpong, ib_send_lat and
#    ib_write_bw between the two functions by its LIDs;
#  - opensm restarted with a guid2lid file (its persistent GUID -> LID map, honoured on the
#    first sweep) giving both HCA ports new LIDs: the PortInfo Set with the new LID and the
#    ClientReregister bit reaches the device's SMA through QP0 and MAD_IFC, the SMA raises
#    the LID and CLIENT_REREG port changes, mlx5_ib reports IB_EVENT_LID_CHANGE and
#    IB_EVENT_CLIENT_REREGISTER (tests/userspace/port_events on both devices); sysfs and
#    ibv_devinfo show the new LIDs and SM LID; ibv_rc_pingpong and ibv_ud_pingpong reach each
#    other by them (the switch's forwarding table reprogrammed by opensm);
#  - killing opensm leaves both ports ACTIVE with their LIDs, and traffic runs;
#  - perfquery of mlx5_1's port from mlx5_0 (no SM running, so no other MAD on the link)
#    before and after N ibv_rc_pingpong and ibv_ud_pingpong messages of known size: the
#    packet counters grow by exactly the messages' packets plus perfquery's own MADs, the
#    4-byte-word data counters by their octets (PACKET_OVERHEAD 26 bytes a packet,
#    mlx5/fwsim/pma.rs), all exactly.
# umad's bad input on a swept fabric (sim=ib,ib, the MAD layer's QPs on the wire), each
# mode's kmemleak scan after it: suite vm_umad_bad (tests/userspace/umad_test.c -b: RMPP
# flags on an agent without RMPP, another class than the agent's, 2^32-1 ms timeouts and
# retries, close with sends in flight), vm_umad_faults (-F: open, REGISTER_AGENT2, write and
# UNREGISTER_AGENT under the kernel's allocation fault injection, each point ENOMEM (a
# write whose local SMP process_mad failed: EINVAL, as upstream) or success, the file working
# afterwards) and vm_fuzz_umad (-f: random registrations,
# writes, reads and ioctls, make fuzz's N and SEED).
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"

# m4_pguid DEV: port 1's GUID of DEV (0x + 16 hex digits, the GID's low half).
m4_pguid() {
	echo "0x$(tr -d : </sys/class/infiniband/$1/ports/1/gids/0 | cut -c17-)"
}

# m4_opensm [ARGS...]: starts opensm on mlx5_0's port (daemonised, log /tmp/opensm.log,
# sweep every 2 s).
m4_opensm() {
	local pg
	pg=$(m4_pguid mlx5_0)
	echo "+ opensm -B -g $pg -f /tmp/opensm.log -s 2 $*"
	opensm -B -g "$pg" -f /tmp/opensm.log -s 2 "$@" >/tmp/opensm.out 2>&1
}

# m4_kill_opensm: kills the running opensm and waits for it to exit.
m4_kill_opensm() {
	local pid i
	pid=$(pidof opensm)
	echo "+ kill opensm ($pid)"
	[ -n "$pid" ] && kill $pid
	for i in $(seq 50); do
		pidof opensm >/dev/null || break
		sleep 0.2
	done
	grep -E "ERR|SUBNET UP" /tmp/opensm.log | head -n 10 | sed 's/^/    opensm.log| /'
}

# m4_lid DEV: port 1's LID of DEV in decimal.
m4_lid() {
	printf %d "$(cat /sys/class/infiniband/$1/ports/1/lid)"
}

# m4_wait_lid DEV LID: waits (30 s at most) until DEV's port 1 has LID (decimal).
m4_wait_lid() {
	local i
	for i in $(seq 60); do
		[ "$(m4_lid $1)" = "$2" ] && return 0
		sleep 0.5
	done
	return 1
}

# m4_eq DESC GOT WANT
m4_eq() {
	if [ "$2" = "$3" ]; then t_ok "$1"; else t_fail "$1" "got '$2', want '$3'"; fi
}

# m4_events DEV EVENT NAME: tests/userspace/port_events on DEV until one event of type EVENT
# (40 s); its output in /tmp/mw-ev-NAME, its pid appended to m4_ev_pids.
m4_ev_pids=""
m4_events() {
	local i=0
	/rdma-rs/port_events "$1" 1 40 $2 >/tmp/mw-ev-$3 2>&1 &
	m4_ev_pids="$m4_ev_pids $!"
	while [ $i -lt 100 ] && ! grep -q '^ready' /tmp/mw-ev-$3; do
		sleep 0.1
		i=$((i + 1))
	done
}

# m4_counters NAME: PortCounters of mlx5_1's port (LID $m4_l1) read from mlx5_0, as
# "xd rd xp rp" (PortXmitData RcvData XmitPkts RcvPkts) into /tmp/m4-pc-NAME.
m4_counters() {
	mw_run pc-$1 perfquery -t $MW_T -C mlx5_0 $m4_l1 1
	awk -F'[.:]+' '
		$1 == "PortXmitData" { xd = $2 } $1 == "PortRcvData" { rd = $2 }
		$1 == "PortXmitPkts" { xp = $2 } $1 == "PortRcvPkts" { rp = $2 }
		END { print xd, rd, xp, rp }' /tmp/mw-pc-$1 >/tmp/m4-pc-$1
}

# m4_delta DESC A B PKTS OCTETS: the counters of read B minus read A are PKTS packets and
# OCTETS octets each way, plus perfquery's own MADs between the two snapshots: a read is a
# ClassPortInfo Get and a PortCounters Get, so A's last answer, B's ClassPortInfo Get and its
# answer and B's PortCounters Get (two MAD packets each way, 256 + 26 octets each), exactly.
m4_delta() {
	local d=$1 xd0 rd0 xp0 rp0 xd1 rd1 xp1 rp1 p o
	read -r xd0 rd0 xp0 rp0 </tmp/m4-pc-$2
	read -r xd1 rd1 xp1 rp1 </tmp/m4-pc-$3
	p=$(($4 + 2))
	o=$(($5 + 2 * 282))
	echo "    $d: xmit $((xd1 - xd0)) words $((xp1 - xp0)) pkts, rcv $((rd1 - rd0)) words $((rp1 - rp0)) pkts; want $p pkts, $o octets ($((o / 4)) words)"
	m4_eq "$d: PortXmitPkts +$p" $((xp1 - xp0)) $p
	m4_eq "$d: PortRcvPkts +$p" $((rp1 - rp0)) $p
	m4_words "$d: PortXmitData" $((xd1 - xd0)) $o
	m4_words "$d: PortRcvData" $((rd1 - rd0)) $o
}

# m4_words DESC WORDS OCTETS: WORDS 4-byte words are exactly OCTETS octets (a multiple of 4:
# the counter's rounding of the octets before and after cancels).
m4_words() {
	if [ $(($2 * 4)) = $3 ]; then
		t_ok "$1 +$2 words ($3 octets)"
	else
		t_fail "$1 +$2 words" "want $3 octets ($(($3 / 4)) words)"
	fi
}

# The data path's traffic with opensm's LIDs: the pingpongs and a short perftest slice.
m4_traffic() {
	tr_pair "ibv_rc_pingpong mlx5_0 -> mlx5_1 by $1" ibv_rc_pingpong \
		"-d mlx5_1 -n 20" "-d mlx5_0 -n 20"
	tr_pair "ibv_ud_pingpong mlx5_0 -> mlx5_1 by $1" ibv_ud_pingpong \
		"-d mlx5_1 -n 20" "-d mlx5_0 -n 20"
}

mad_opensm_relid_suite() {
	RDMARS_KUNIT_GLOB=rdmars-no-suite load_ours sim=ib,ib sm=0 mad_qps=1
	local g0 g1 n0 n1
	mkdir -p /var/cache/opensm /var/log
	rm -f /var/cache/opensm/guid2lid
	m4_opensm
	t_check "mlx5_0 port 1 ACTIVE after opensm's sweep" mw_wait_active mlx5_0
	t_check "mlx5_1 port 1 ACTIVE after opensm's sweep" mw_wait_active mlx5_1
	echo "    lids $(m4_lid mlx5_0) $(m4_lid mlx5_1)"
	m4_traffic "opensm's LIDs"
	tr_pair "ib_send_lat mlx5_0 -> mlx5_1 by opensm's LIDs" ib_send_lat \
		"-d mlx5_1 -F -n 50" "-d mlx5_0 -F -n 50" "$PERF_WANT"
	tr_pair "ib_write_bw mlx5_0 -> mlx5_1 by opensm's LIDs" ib_write_bw \
		"-d mlx5_1 -F -n 50" "-d mlx5_0 -F -n 50" "$PERF_WANT"
	m4_kill_opensm
	sed 's/^/    guid2lid| /' /var/cache/opensm/guid2lid 2>/dev/null
	# New LIDs for both HCA ports (the switch keeps its own).
	g0=$(m4_pguid mlx5_0)
	g1=$(m4_pguid mlx5_1)
	n0=48
	n1=49
	# opensm's file format (osm_db_files.c): "GUID MIN MAX" entries, a blank line after each.
	printf '%s 0x%04x 0x%04x\n\n%s 0x%04x 0x%04x\n\n' $g0 $n0 $n0 $g1 $n1 $n1 \
		>/var/cache/opensm/guid2lid
	sed 's/^/    new guid2lid| /' /var/cache/opensm/guid2lid
	m4_ev_pids=""
	m4_events mlx5_0 11 lid0
	m4_events mlx5_1 11 lid1
	m4_events mlx5_1 17 rereg1
	m4_opensm
	t_check "mlx5_0 port 1 gets LID $n0 from the restarted opensm" m4_wait_lid mlx5_0 $n0
	t_check "mlx5_1 port 1 gets LID $n1 from the restarted opensm" m4_wait_lid mlx5_1 $n1
	# shellcheck disable=SC2086
	wait $m4_ev_pids
	sed 's/^/    lid0| /' /tmp/mw-ev-lid0
	sed 's/^/    lid1| /' /tmp/mw-ev-lid1
	sed 's/^/    rereg1| /' /tmp/mw-ev-rereg1
	mw_has "mlx5_0: IB_EVENT_LID_CHANGE on port 1" ev-lid0 "^event .* 11 port 1$"
	mw_has "mlx5_1: IB_EVENT_LID_CHANGE on port 1" ev-lid1 "^event .* 11 port 1$"
	mw_has "mlx5_1: IB_EVENT_CLIENT_REREGISTER on port 1" ev-rereg1 "^event .* 17 port 1$"
	m4_eq "mlx5_1 sysfs sm_lid: the restarted opensm's port" \
		"$(cat /sys/class/infiniband/mlx5_1/ports/1/sm_lid)" "$(printf 0x%x $n0)"
	mw_run devinfo ibv_devinfo -d mlx5_1
	mw_has "ibv_devinfo mlx5_1: port_lid $n1" devinfo "port_lid:[[:space:]]+$n1\$"
	mw_has "ibv_devinfo mlx5_1: sm_lid $n0" devinfo "sm_lid:[[:space:]]+$n0\$"
	mw_run pi smpquery -t $MW_T -C mlx5_0 -D portinfo 0,1,2
	mw_has "smpquery -D portinfo 0,1,2: mlx5_1's port has LID $n1" pi "^Lid:\.+$n1\$"
	m4_traffic "the new LIDs"
	m4_kill_opensm
	if grep -q ACTIVE /sys/class/infiniband/mlx5_0/ports/1/state &&
		grep -q ACTIVE /sys/class/infiniband/mlx5_1/ports/1/state; then
		t_ok "ports stay ACTIVE after opensm exits"
	else
		t_fail "ports stay ACTIVE after opensm exits"
	fi
	m4_eq "mlx5_1 keeps LID $n1 after opensm exits" "$(m4_lid mlx5_1)" $n1
	m4_l1=$n1
	# perfquery with no SM on the fabric: only the pingpongs and perfquery's own MADs.
	m4_counters a
	m4_counters b
	m4_delta "perfquery twice, nothing between" a b 0 0
	# ibv_rc_pingpong -s 4096 -m 1024 -n 10: each side sends 10 messages of 4 packets.
	tr_pair "ibv_rc_pingpong -s 4096 -m 1024 -n 10 after opensm exits" ibv_rc_pingpong \
		"-d mlx5_1 -s 4096 -m 1024 -n 10" "-d mlx5_0 -s 4096 -m 1024 -n 10"
	m4_counters c
	m4_delta "10 RC messages of 4096 B each way" b c 40 $((10 * 4096 + 40 * 26))
	# ibv_ud_pingpong -s 1024 -n 10: each side sends 10 one-packet messages of 1024 B.
	tr_pair "ibv_ud_pingpong -s 1024 -n 10 after opensm exits" ibv_ud_pingpong \
		"-d mlx5_1 -s 1024 -n 10" "-d mlx5_0 -s 1024 -n 10"
	m4_counters d
	m4_delta "10 UD messages of 1024 B each way" c d 10 $((10 * 1024 + 10 * 26))
	unload_ours
}

umad_bad_suite() {
	RDMARS_KUNIT_GLOB=rdmars-no-suite load_ours sim=ib,ib mad_qps=1
	t_import "umad_test -b umad0: RMPP flags, classes, 2^32-1 ms timeouts, close in flight" \
		/rdma-rs/umad_test -u 0 -b
	unload_ours
}

# The fault sweep of umad (modes faults and mad4).
umad_faults_suite() {
	RDMARS_KUNIT_GLOB=rdmars-no-suite load_ours sim=ib,ib mad_qps=1
	if faults_setup; then
		t_import "umad_test -F umad0: umad's calls under allocation fault injection" \
			/rdma-rs/umad_test -u 0 -F 500
	else
		t_skip "umad_test -F umad0" "no failslab or fail-nth in this kernel"
	fi
	unload_ours
}

# umad's random calls (modes fuzz and mad4; make fuzz's N and SEED): on the IB port of a swept
# fabric, where LID-routed MADs reach the other function's agents, and on a RoCE port.
fuzz_umad_suite() {
	fz_params
	RDMARS_KUNIT_GLOB=rdmars-no-suite load_ours sim=ib,ib,eth mad_qps=1
	t_import "umad_test random calls on umad0 (IB, LIDs on the fabric)" \
		/rdma-rs/umad_test -u 0 -f $((FZ_N * 10)) -r $FZ_SEED
	t_import "umad_test random calls on umad2 (RoCE)" \
		/rdma-rs/umad_test -u 2 -f $((FZ_N * 5)) -r $((FZ_SEED + 1))
	unload_ours
}

[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode mad4
