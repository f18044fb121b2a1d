# SPDX-License-Identifier: GPL-2.0
# UCX 1.13 on the emulated ConnectX PCI function (Documentation/pcifn.md, "UCX on the
# function"): suite vm_pcifn_ucx, in mode pcifn (make check's pcifn VM) after vm_pcifn_ib, and
# alone as the VM mode pcifn_ucx (`tools/pcifn.sh KBUILD LOG ib pcifn_ucx`).
#  - vm_pcifn_ucx: `ucx_info -d` lists rc_mlx5, ud_mlx5 and dc_mlx5 on mlx5_0:1, the function
#    under mlx5_ib_rs: UCX opened its mlx5 memory domain through DEVX and each interface, and
#    rc_mlx5's receive queue, a DEVX RMP in a umem of scattered guest pages, was created (the
#    function keeps the umem's MTT, host/cxfn/src/iova.rs); a UCP tag-matching bandwidth
#    test over rc_mlx5 with both ends on the function completes its iterations.
#  - vm_pcifn_ucx_more (mode pcifn_ucx only): unmodified ucx_perftest UCT tests over rc_mlx5,
#    ud_mlx5 and dc_mlx5 and UCP tag_bw over dc_mlx5 (helpers of tests/vm/ucx.sh).
# Both: no QP left afterwards, everything unloaded, a clean kernel log.
# dc_mlx5 runs with UCX_DC_MLX5_SRQ_TOPO=cyclic_emulated, as in suite vm_ucx_dc.
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"
. "${RDMARS_DIR:-/rdma-rs}/ours.sh"

# pcifn_ucx_t WHAT: the seconds since the suite's start, on the console.
pcifn_ucx_t() {
	echo "pcifn_ucx: $(($(cut -d. -f1 /proc/uptime) - _pu_t0)) s: $1"
}

# pcifn_ucx_load: our stack on the function, mlx5_0's port 1 ACTIVE.
pcifn_ucx_load() {
	local i
	_pu_t0=$(cut -d. -f1 /proc/uptime)
	ucx_env
	dmesg -n 8
	_pu_n0=$(dmesg | wc -l)
	load_ours
	for i in $(seq 50); do
		grep -q ACTIVE /sys/class/infiniband/mlx5_0/ports/1/state 2>/dev/null && break
		sleep 0.2
	done
	t_check "mlx5_0 (the function) is registered, port 1 ACTIVE" grep -q ACTIVE /sys/class/infiniband/mlx5_0/ports/1/state
	pcifn_ucx_t loaded
}

# pcifn_ucx_unload WHAT: no QP left, everything unloaded, a clean kernel log.
pcifn_ucx_unload() {
	t_check "rdma res shows no QP after the UCX runs on the function" sh -c '! rdma res show qp | grep -q .'
	unload_ours
	pcifn_kmsg_since "$_pu_n0" >/tmp/pcifn-ucx.kmsg
	pcifn_no_bad_lines /tmp/pcifn-ucx.kmsg "$1"
	pcifn_ucx_t unloaded
}

# vm_pcifn_ucx (mode pcifn: make check): ucx_info -d with UCX's default queue sizes (rc_mlx5's
# and dc_mlx5's receive queue: an RMP of 4096 entries in a umem of scattered pages) and a UCP
# tag-matching bandwidth test over rc_mlx5. Each ucx_perftest pair costs about 10 s of UCX
# start-up under TCG, so the UCT tests are in vm_pcifn_ucx_more.
pcifn_ucx_suite() {
	local tls tl d=mlx5_0
	export UCX_DC_MLX5_SRQ_TOPO=cyclic_emulated
	pcifn_ucx_load
	ucx_info -d >/tmp/ucx-info.out 2>&1
	echo "ucx_info -d: exit $?, $(wc -l </tmp/ucx-info.out) lines"
	grep -E '# +(Transport|Device):|rror|annot' /tmp/ucx-info.out | sed 's/^/    ucx_info| /' | head -n 40
	tls=" $(ucx_transports $d | tr '\n' ' ')"
	echo "$d:$tls"
	for tl in rc_mlx5 ud_mlx5 dc_mlx5; do
		case "$tls" in
		*" $tl "*) t_ok "ucx_info -d lists $tl on $d:1 (the emulated function)" ;;
		*) t_fail "ucx_info -d lists $tl on $d:1 (the emulated function)" "$tls" ;;
		esac
	done
	pcifn_ucx_t "ucx_info -d"
	local one="UCX_TLS=rc_mlx5,ud_mlx5 UCX_NET_DEVICES=$d:1"
	ucx_pair "ucx_perftest UCP tag_bw over rc_mlx5 on the function" 20 "$one" "$one" -t tag_bw -s 8192
	pcifn_ucx_t "tag_bw rc_mlx5"
	unset UCX_DC_MLX5_SRQ_TOPO
	pcifn_ucx_unload "UCX on the function"
}

# vm_pcifn_ucx_more (mode pcifn_ucx only): unmodified ucx_perftest UCT tests, both ends on the
# function: am_lat, put_bw (zero copy), get (zero copy) and fadd over rc_mlx5 and dc_mlx5,
# cswap over rc_mlx5, am_lat over ud_mlx5, and UCP tag_bw over dc_mlx5.
pcifn_ucx_more_suite() {
	local tl d=mlx5_0
	export UCX_DC_MLX5_SRQ_TOPO=cyclic_emulated
	pcifn_ucx_load
	for tl in rc_mlx5 dc_mlx5; do
		ucx_pair "ucx_perftest am_lat over $tl on the function" 100 "" "" -t am_lat -x $tl -d $d:1
		pcifn_ucx_t "am_lat $tl"
		ucx_pair "ucx_perftest put_bw (zero copy) over $tl on the function" 50 "" "" -t put_bw -D zcopy -s 4096 -x $tl -d $d:1
		pcifn_ucx_t "put_bw $tl"
		ucx_pair "ucx_perftest get (zero copy) over $tl on the function" 50 "" "" -t get -D zcopy -s 4096 -x $tl -d $d:1
		pcifn_ucx_t "get $tl"
		ucx_pair "ucx_perftest fadd over $tl on the function" 50 "" "" -t fadd -x $tl -d $d:1
		pcifn_ucx_t "fadd $tl"
	done
	ucx_pair "ucx_perftest cswap over rc_mlx5 on the function" 50 "" "" -t cswap -x rc_mlx5 -d $d:1
	pcifn_ucx_t "cswap rc_mlx5"
	ucx_pair "ucx_perftest am_lat over ud_mlx5 on the function" 100 "" "" -t am_lat -x ud_mlx5 -d $d:1
	pcifn_ucx_t "am_lat ud_mlx5"
	ucx_pair "ucx_perftest UCP tag_bw over dc_mlx5 on the function" 50 \
		"UCX_TLS=dc_mlx5 UCX_NET_DEVICES=$d:1" "UCX_TLS=dc_mlx5 UCX_NET_DEVICES=$d:1" -t tag_bw
	pcifn_ucx_t "tag_bw dc_mlx5"
	unset UCX_DC_MLX5_SRQ_TOPO
	pcifn_ucx_unload "more UCX on the function"
}

# Standalone: the VM mode `pcifn_ucx` (its suites are in suites.list).
[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode pcifn_ucx
