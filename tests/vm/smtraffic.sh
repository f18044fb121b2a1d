# SPDX-License-Identifier: GPL-2.0
# Mode smtraffic (tools/vm.sh smtraffic; Documentation/mad.md): the IB pingpongs and perftest
# under unmodified opensm (sm=0, the MAD layer's QP0 and QP1 on the wire), the embedded SM's
# runs being vm_pingpong, vm_srq and vm_perftest (mode traffic and make check).
#  - vm_opensm_traffic (40-120 s under TCG): opensm sweeps sim=ib,ib; then ibv_rc_pingpong, ibv_uc_pingpong,
#    ibv_ud_pingpong and ibv_srq_pingpong, and ib_send/write/read/atomic _bw and _lat once
#    each, mlx5_0 <-> mlx5_1 by opensm's LIDs through the switch (the LIDs it programmed in
#    the switch's forwarding table); the ports keep opensm's LIDs throughout and nothing is
#    left held.
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"

opensm_traffic_suite() {
	RDMARS_KUNIT_GLOB=rdmars-no-suite load_ours sim=ib,ib sm=0 mad_qps=1
	local l0 l1 p t
	mkdir -p /var/cache/opensm /var/log
	rm -f /var/cache/opensm/guid2lid /tmp/opensm.log
	mw_opensm
	t_check "mlx5_0 port 1 ACTIVE after opensm's sweep" mw_wait_active mlx5_0
	t_check "mlx5_1 port 1 ACTIVE after opensm's sweep" mw_wait_active mlx5_1
	l0=$(mw_lid mlx5_0)
	l1=$(mw_lid mlx5_1)
	mw_run sminfo sminfo -t $MW_T -C mlx5_1
	mw_has "sminfo from mlx5_1: opensm's port ($l0) is MASTER" sminfo "sm lid $l0 .*SMINFO_MASTER"
	for p in rc uc ud; do
		tr_pair "ibv_${p}_pingpong mlx5_0 <-> mlx5_1 under opensm" ibv_${p}_pingpong \
			"-d mlx5_1 -n 100" "-d mlx5_0 -n 100"
	done
	tr_pair "ibv_srq_pingpong mlx5_0 <-> mlx5_1 under opensm (16 QPs, one SRQ)" ibv_srq_pingpong \
		"-d mlx5_1 -n 50" "-d mlx5_0 -n 50"
	for t in send write read atomic; do
		tr_pair "ib_${t}_bw mlx5_0 <-> mlx5_1 under opensm" ib_${t}_bw \
			"-d mlx5_1 -F -n 100" "-d mlx5_0 -F -n 100" "$PERF_WANT"
	done
	for t in send write; do
		tr_pair "ib_${t}_lat mlx5_0 <-> mlx5_1 under opensm" ib_${t}_lat \
			"-d mlx5_1 -F -n 100" "-d mlx5_0 -F -n 100" "$PERF_WANT"
	done
	# The passive side of ib_read_lat and ib_atomic_lat prints no result line (perftest
	# measures on the client only): both ends exit 0 connected, the client has the figures.
	for t in read atomic; do
		tr_pair "ib_${t}_lat mlx5_0 <-> mlx5_1 under opensm" ib_${t}_lat \
			"-d mlx5_1 -F -n 100" "-d mlx5_0 -F -n 100" "remote address: LID"
		t_check "ib_${t}_lat: the client's result line" grep -Eq "$PERF_WANT" /tmp/pair-c.out
	done
	mw_eq "mlx5_0 keeps opensm's LID" "$(mw_lid mlx5_0)" "$l0"
	mw_eq "mlx5_1 keeps opensm's LID" "$(mw_lid mlx5_1)" "$l1"
	t_check "rdma res shows no user QP after the runs" sh -c "! rdma res show qp | grep -q 'pid '"
	mw_kill_opensm
	if grep -q "ERR" /tmp/opensm.log; then
		t_fail "opensm logged no error" "$(grep -c ERR /tmp/opensm.log) ERR lines"
	else
		t_ok "opensm logged no error"
	fi
	unload_ours
}

[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode smtraffic
