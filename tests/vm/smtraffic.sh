# SPDX-License-Identifier: GPL-2.0
# The IB pingpongs and perftest under unmodified opensm (sm=0, the MAD layer's QP0 and QP1 on
# the wire; Documentation/mad.md), the embedded SM's runs being vm_pingpong, vm_srq and
# vm_perftest. Suite vm_opensm_traffic (modes check2, madwire and smtraffic):
#  - on the fabric vm_mad_opensm leaves under opensm (its restarted run's LIDs) when it comes
#    just before (check2, madwire), else sim=ib,ib swept by an opensm of its own (mode
#    smtraffic): sminfo finds opensm MASTER;
#  - ibv_rc_pingpong, ibv_uc_pingpong, ibv_ud_pingpong and ibv_srq_pingpong with the data
#    checked (-c), and perftest's ib_send, ib_write, ib_read and ib_atomic _bw and _lat, once
#    each, mlx5_0 <-> mlx5_1 through the switch by the LIDs opensm assigned: each run's exit
#    status, its result line, and the LIDs both ends print (their own and the peer's);
#  - the ports keep opensm's LIDs throughout and no user QP is left.
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"

FABRIC_TAKERS="$FABRIC_TAKERS opensm_traffic_suite=opensm"

# smt_up: run alone, the fabric under an opensm of its own.
smt_up() {
	mw_sm0_load
	mw_opensm_fresh
}

# The iterations: few, enough for each program's result line (perftest takes 5 at least).
SMT_PP=10
SMT_PERF=5

opensm_traffic_suite() {
	fabric_take opensm smt_up
	local l0 l1 p t d
	l0=$(mw_lid mlx5_0)
	l1=$(mw_lid mlx5_1)
	echo "    opensm's LIDs: mlx5_0 $l0, mlx5_1 $l1"
	mw_run sminfo sminfo -t $MW_T -C mlx5_1
	mw_has "sminfo from mlx5_1: opensm's port ($l0) is MASTER" sminfo "sm lid $l0 .*SMINFO_MASTER"
	for p in rc uc ud; do
		d="ibv_${p}_pingpong -c mlx5_0 <-> mlx5_1 under opensm"
		tr_pair "$d" ibv_${p}_pingpong "-d mlx5_1 -c -n $SMT_PP" "-d mlx5_0 -c -n $SMT_PP"
		tr_lids "$d" $l1 $l0
	done
	d="ibv_srq_pingpong -c mlx5_0 <-> mlx5_1 under opensm (16 QPs, one SRQ)"
	tr_pair "$d" ibv_srq_pingpong "-d mlx5_1 -c -n $SMT_PP" "-d mlx5_0 -c -n $SMT_PP"
	tr_lids "$d" $l1 $l0
	for t in send_bw write_bw read_bw atomic_bw send_lat write_lat; do
		d="ib_$t mlx5_0 <-> mlx5_1 under opensm"
		tr_pair "$d" ib_$t "-d mlx5_1 -F -n $SMT_PERF" "-d mlx5_0 -F -n $SMT_PERF" "$PERF_WANT"
		tr_lids "$d" $l1 $l0
	done
	# The passive side of ib_read_lat and ib_atomic_lat prints no result line (perftest
	# measures on the client only): both ends exit 0 connected, the client has the figures.
	for t in read atomic; do
		d="ib_${t}_lat mlx5_0 <-> mlx5_1 under opensm"
		tr_pair "$d" ib_${t}_lat "-d mlx5_1 -F -n $SMT_PERF" "-d mlx5_0 -F -n $SMT_PERF" \
			"remote address: LID"
		t_check "ib_${t}_lat: the client's result line" grep -Eq "$PERF_WANT" /tmp/pair-c.out
		tr_lids "$d" $l1 $l0
	done
	mw_eq "mlx5_0 keeps opensm's LID" "$(mw_lid mlx5_0)" "$l0"
	mw_eq "mlx5_1 keeps opensm's LID" "$(mw_lid mlx5_1)" "$l1"
	t_check "rdma res shows no user QP after the runs" sh -c "! rdma res show qp | grep -q 'pid '"
	fabric_give opensm mw_opensm_down
}

[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode smtraffic
