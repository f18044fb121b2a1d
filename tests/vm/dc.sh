# SPDX-License-Identifier: GPL-2.0
# Dynamically connected transport (suite vm_dc of suites.list, modes dc and check): the
# project's DC test (tests/userspace/dc_test.c) through Debian's libmlx5 (rdma-core 44) on
# the simulator: one DCI (mlx5dv_create_qp, the extended send API with
# mlx5dv_wr_set_dc_addr) reaching three DCTs, one on its own function and two on the other
# function of the fabric, with SEND, RDMA WRITE and RDMA READ (every byte checked), and a
# wrong DC access key failing as on a ConnectX (nothing delivered, the DCI's send completes
# with IBV_WC_RETRY_EXC_ERR). InfiniBand (mlx5_0 -> mlx5_1) and RoCE (mlx5_2 -> mlx5_3).
# Then the simulator's tables (DCTs are in its QP table) and rdma res are back to baseline.
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"

dc_suite() {
	load_ours $TRAFFIC_SIM
	t_import "dc_test mlx5_0 -> mlx5_1 (IB)" /rdma-rs/dc_test -d mlx5_0 -e mlx5_1
	t_import "dc_test mlx5_2 -> mlx5_3 (RoCE)" /rdma-rs/dc_test -d mlx5_2 -e mlx5_3 -g $ROCE_GID
	tr_baseline "the DC tests"
	unload_ours
}

# The DC verbs under fault injection (suite vm_dc_faults; tests/vm/faults.sh): a DCI's create
# and destroy, a DCT's create with its move to RTR (CREATE_DCT) and its destroy (DRAIN_DCT,
# DESTROY_DCT), every allocation and firmware point on the RoCE function (as vm_faults; the
# full sweep, make faults, takes both functions).
dc_faults_suite() {
	faults_sweep "mlx5_1:mlx5_ib_rs.rdma.1" "dci dct d_dct d_dci" 100000 1
}

# UCX 1.13's dc_mlx5 (suite vm_ucx_dc): `ucx_info -d -t dc_mlx5` lists it on every function (UCX reads
# the `dct` capability through DEVX), and unmodified ucx_perftest UCT tests over it with both
# ends on one function, and a UCP tag-matching test between two functions, complete their
# iterations (helpers of tests/vm/ucx.sh). UCX creates its DCTs and DCIs with DEVX commands
# (CREATE_DCT, CREATE_QP of a DCI) and its SRQ as the verbs SRQ's topology
# (UCX_DC_MLX5_SRQ_TOPO=cyclic_emulated, as rc_mlx5 in tests/vm/ucx.sh).
ucx_dc_suite() {
	local n d tls
	ucx_env
	export UCX_DC_MLX5_SRQ_TOPO=cyclic_emulated
	load_ours $UCX_SIM
	# -t: the listing of dc_mlx5 alone (ucx_info opens no other transport's interfaces;
	# vm_ucx_devices lists them all).
	ucx_info -d -t dc_mlx5 >/tmp/ucx-info.out 2>&1
	for n in 0 1 2 3; do
		tls=" $(ucx_transports mlx5_$n | tr '\n' ' ')"
		echo "mlx5_$n:$tls"
		case "$tls" in *" dc_mlx5 "*) t_ok "ucx_info -d lists dc_mlx5 on mlx5_$n:1" ;; *) t_fail "ucx_info -d lists dc_mlx5 on mlx5_$n:1" "$tls" ;; esac
	done
	for d in mlx5_0 mlx5_2; do
		ucx_pair "ucx_perftest am_lat over dc_mlx5 on $d" 300 "" "" -t am_lat -x dc_mlx5 -d $d:1
		ucx_pair "ucx_perftest put_bw (zero copy) over dc_mlx5 on $d" 200 "" "" -t put_bw -D zcopy -s 4096 -x dc_mlx5 -d $d:1
		ucx_pair "ucx_perftest get (zero copy) over dc_mlx5 on $d" 200 "" "" -t get -D zcopy -s 4096 -x dc_mlx5 -d $d:1
		ucx_pair "ucx_perftest fadd over dc_mlx5 on $d" 200 "" "" -t fadd -x dc_mlx5 -d $d:1
	done
	ucx_pair "ucx_perftest UCP tag_bw over dc_mlx5, mlx5_0 to mlx5_1" 300 \
		"UCX_TLS=dc_mlx5 UCX_NET_DEVICES=mlx5_0:1" "UCX_TLS=dc_mlx5 UCX_NET_DEVICES=mlx5_1:1" -t tag_bw
	t_check "rdma res shows no QP after the UCX DC runs" sh -c '! rdma res show qp | grep -q .'
	for d in 0 1 2 3; do
		t_check "mlx5_ib_rs.rdma.$d holds only the kernel PD and UAR after the UCX DC runs" \
			fwsim_resources_probed mlx5_ib_rs.rdma.$d
	done
	unset UCX_DC_MLX5_SRQ_TOPO
	unload_ours
}

# Standalone: the VM mode `dc` (its suites are in suites.list).
[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode dc
