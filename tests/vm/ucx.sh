# SPDX-License-Identifier: GPL-2.0
# UCX 1.13 (Debian bookworm's ucx-utils) on the simulated ConnectX functions. Sourced by the
# mode scripts (RDMARS_SOURCED=1) or run as the VM mode `ucx`.
#  - vm_ucx_devices: the simulated functions' PCI identity files (vendor 0x15b3, the model's
#    device id) where UCX looks for them (two levels above /sys/class/infiniband/mlx5_N), and
#    `ucx_info -d` listing rc_mlx5 and ud_mlx5 on every function (dc_mlx5: tests/vm/dc.sh).
#  - vm_ucx_perftest: unmodified ucx_perftest UCT tests over rc_mlx5 (am_lat, put_bw and get
#    zero copy, fadd, cswap) and ud_mlx5 with both ends on one function (the server takes the
#    client's device), and UCP tests (tag_lat, tag_bw, put_bw, get, fadd) between two
#    functions (UCX_NET_DEVICES=mlx5_0:1 for the server, mlx5_1:1 for the client), each
#    completing its iterations.
# The functions: sim=ib,ib,eth,eth gives mlx5_0 and mlx5_1 (one InfiniBand fabric) and
# mlx5_2 and mlx5_3 (one Ethernet fabric).
# UCX runs with its defaults: with `log_max_rmp` and DEVX, rc_mlx5 takes the cyclic SRQ topology
# and creates its receive queue as a DEVX RMP in umems (uct_rc_mlx5_devx_init_rx()).
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"
. "${RDMARS_DIR:-/rdma-rs}/ours.sh"

UCX_SIM=sim=ib,ib,eth,eth

# /dev/shm for UCX's shared-memory transports (their absence is only an error message).
ucx_env() {
	[ -d /dev/shm ] || { mkdir -p /dev/shm && mount -t tmpfs tmpfs /dev/shm; }
}
_ucx_port=18900

# ucx_transports DEV: the transports `ucx_info -d` lists on DEV:1 (one a line).
ucx_transports() {
	awk -v d="$1:1" '$2 == "Transport:" { tl = $3 } $2 == "Device:" && $3 == d { print tl }' /tmp/ucx-info.out | sort -u
}

ucx_devices_suite() {
	local n f v d want tls
	ucx_env
	load_ours $UCX_SIM
	for n in 0 1 2 3; do
		f=/sys/class/infiniband/mlx5_$n
		d=$(readlink -f $f/../..)
		v=$(cat "$d/vendor" 2>&1)
		# hca_type is "MT" and the PCI device id in decimal (upstream hca_type_show()).
		want=$(printf '0x%04x' "$(sed 's/^MT//' $f/hca_type 2>/dev/null)")
		echo "mlx5_$n: $d: vendor $v device $(cat "$d/device" 2>&1) (hca_type $(cat $f/hca_type 2>&1))"
		t_check "mlx5_$n: the PCI vendor file two levels up says 0x15b3" test "$v" = 0x15b3
		t_check "mlx5_$n: the PCI device file is the model's ConnectX ($want)" test "$(cat "$d/device" 2>&1)" = "$want"
	done
	ucx_info -d >/tmp/ucx-info.out 2>&1
	echo "ucx_info -d: exit $?, $(wc -l </tmp/ucx-info.out) lines"
	grep -E '# +(Transport|Device):' /tmp/ucx-info.out | sed 's/^/    ucx_info| /' | head -n 60
	for n in 0 1 2 3; do
		tls=" $(ucx_transports mlx5_$n | tr '\n' ' ')"
		echo "mlx5_$n:$tls"
		case "$tls" in *" rc_mlx5 "*) t_ok "ucx_info -d lists rc_mlx5 on mlx5_$n:1" ;; *) t_fail "ucx_info -d lists rc_mlx5 on mlx5_$n:1" "$tls" ;; esac
		case "$tls" in *" ud_mlx5 "*) t_ok "ucx_info -d lists ud_mlx5 on mlx5_$n:1" ;; *) t_fail "ucx_info -d lists ud_mlx5 on mlx5_$n:1" "$tls" ;; esac
	done
	# UCX_SIM is TRAFFIC_SIM: vm_pingpong continues on these functions when it comes next.
	fabric_give traffic unload_ours
}

# ucx_wait_listen PORT: something listens on TCP PORT (at most ~20 s).
ucx_wait_listen() {
	local i=0
	while [ $i -lt 200 ]; do
		tcp_listening "$1" && return 0
		nap
		i=$((i + 1))
	done
	return 1
}

# ucx_pair DESCRIPTION ITERS "SERVER ENV" "CLIENT ENV" CLIENT-ARGS...: ucx_perftest's server
# in the background and its client against 127.0.0.1; passes when both exit 0 and the
# client's "Final:" line reports ITERS iterations.
ucx_pair() {
	local d=$1 iters=$2 senv=$3 cenv=$4 s src crc
	shift 4
	_ucx_port=$((_ucx_port + 1))
	echo "+ env $senv ucx_perftest -p $_ucx_port & env $cenv ucx_perftest 127.0.0.1 -p $_ucx_port -n $iters $*"
	env $senv timeout 300 ucx_perftest -p $_ucx_port >/tmp/ucx-s.out 2>&1 &
	s=$!
	if ! ucx_wait_listen $_ucx_port; then
		kill $s 2>/dev/null
		wait $s
		sed 's/^/    server| /' /tmp/ucx-s.out | tail -n 20
		t_fail "$d" "server never listened"
		return
	fi
	env $cenv timeout 300 ucx_perftest 127.0.0.1 -p $_ucx_port -n $iters "$@" >/tmp/ucx-c.out 2>&1
	crc=$?
	wait $s
	src=$?
	sed 's/^/    server| /' /tmp/ucx-s.out | tail -n 12
	sed 's/^/    client| /' /tmp/ucx-c.out | tail -n 12
	if [ $src = 0 ] && [ $crc = 0 ] && grep -Eq "^Final: +$iters " /tmp/ucx-c.out; then
		t_ok "$d"
	else
		t_fail "$d" "server exit $src, client exit $crc"
	fi
}

ucx_perftest_suite() {
	local d
	ucx_env
	load_ours $UCX_SIM
	for d in mlx5_0 mlx5_2; do
		ucx_pair "ucx_perftest am_lat over rc_mlx5 on $d" 300 "" "" -t am_lat -x rc_mlx5 -d $d:1
		ucx_pair "ucx_perftest put_bw (zero copy) over rc_mlx5 on $d" 200 "" "" -t put_bw -D zcopy -s 4096 -x rc_mlx5 -d $d:1
		ucx_pair "ucx_perftest get (zero copy) over rc_mlx5 on $d" 200 "" "" -t get -D zcopy -s 4096 -x rc_mlx5 -d $d:1
		ucx_pair "ucx_perftest fadd over rc_mlx5 on $d" 200 "" "" -t fadd -x rc_mlx5 -d $d:1
		ucx_pair "ucx_perftest cswap over rc_mlx5 on $d" 200 "" "" -t cswap -x rc_mlx5 -d $d:1
		ucx_pair "ucx_perftest am_lat over ud_mlx5 on $d" 300 "" "" -t am_lat -x ud_mlx5 -d $d:1
	done
	# Between two functions: UCP over rc_mlx5 alone (ud_mlx5 for the wire-up only).
	local two="UCX_TLS=rc_mlx5,ud_mlx5"
	ucx_pair "ucx_perftest UCP tag_lat over rc_mlx5, mlx5_0 to mlx5_1" 300 \
		"$two UCX_NET_DEVICES=mlx5_0:1" "$two UCX_NET_DEVICES=mlx5_1:1" -t tag_lat
	ucx_pair "ucx_perftest UCP tag_bw over rc_mlx5, mlx5_0 to mlx5_1" 300 \
		"$two UCX_NET_DEVICES=mlx5_0:1" "$two UCX_NET_DEVICES=mlx5_1:1" -t tag_bw -s 8192
	ucx_pair "ucx_perftest UCP put_bw over rc_mlx5, mlx5_0 to mlx5_1" 200 \
		"$two UCX_NET_DEVICES=mlx5_0:1" "$two UCX_NET_DEVICES=mlx5_1:1" -t ucp_put_bw -s 4096
	ucx_pair "ucx_perftest UCP get over rc_mlx5, mlx5_0 to mlx5_1" 200 \
		"$two UCX_NET_DEVICES=mlx5_0:1" "$two UCX_NET_DEVICES=mlx5_1:1" -t ucp_get -s 4096
	ucx_pair "ucx_perftest UCP fadd over rc_mlx5, mlx5_0 to mlx5_1" 200 \
		"$two UCX_NET_DEVICES=mlx5_0:1" "$two UCX_NET_DEVICES=mlx5_1:1" -t ucp_fadd
	ucx_pair "ucx_perftest UCP tag_bw over rc_mlx5, mlx5_2 to mlx5_3 (RoCE)" 300 \
		"$two UCX_NET_DEVICES=mlx5_2:1" "$two UCX_NET_DEVICES=mlx5_3:1" -t tag_bw -s 8192
	ucx_pair "ucx_perftest UCP tag_bw over ud_mlx5, mlx5_0 to mlx5_1" 300 \
		"UCX_TLS=ud_mlx5 UCX_NET_DEVICES=mlx5_0:1" "UCX_TLS=ud_mlx5 UCX_NET_DEVICES=mlx5_1:1" -t tag_bw
	t_check "rdma res shows no QP after the UCX runs" sh -c '! rdma res show qp | grep -q .'
	for d in 0 1 2 3; do
		t_check "mlx5_ib_rs.rdma.$d holds only the kernel PD and UAR after the UCX runs" \
			fwsim_resources_probed mlx5_ib_rs.rdma.$d
	done
	unload_ours
}

# Standalone: the VM mode `ucx` (its suites are in suites.list).
[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode ucx
