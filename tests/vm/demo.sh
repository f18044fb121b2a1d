# SPDX-License-Identifier: GPL-2.0
# `make demo` inside the VM: our stack with a simulated ConnectX, then what
# rdma-core sees of it (suite `demo` of suites.list).
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"
. "${RDMARS_DIR:-/rdma-rs}/ours.sh"

demo_suite() {
	local cmd d wl i pp bw
	load_ours sim=ib,eth
	echo
	echo "================ rdma-rs demo ================"
	echo "Loaded: $(lsmod | awk '/_rs / { print $1 }' | tr '\n' ' ')"
	echo
	echo "Simulated ConnectX functions (mlx5_ib_rs sim=ib,eth), as auxiliary devices:"
	ls /sys/bus/auxiliary/devices/
	fwsim_show
	echo
	echo "What the driver's probe read from them and the RDMA devices it registered:"
	dmesg | grep 'registered as mlx5_' | sed 's/^\[[^]]*\] //'
	for cmd in "ibv_devices" "ibv_devinfo -v" "rdma dev" "rdma link" "rdma res"; do
		echo
		echo "\$ $cmd"
		$cmd 2>&1
	done
	echo
	echo "A libibverbs workload (tests/userspace/verbs_workload.c) on mlx5_1 through"
	echo "libmlx5: PDs, MRs, CQs, an RC QP moved to RTS with a GID address vector and"
	echo "a UD QP; while it holds them:"
	rm -f /tmp/demo-release
	/rdma-rs/verbs_workload -d mlx5_1 -m 1 -w /tmp/demo-release >/tmp/demo-wl.out 2>&1 &
	wl=$!
	i=0
	while ! grep -q '^I holding' /tmp/demo-wl.out && [ $i -lt 600 ]; do
		sleep 0.2
		i=$((i + 1))
	done
	for cmd in "rdma res show pd" "rdma res show cq" "rdma res show qp" "rdma res show mr"; do
		echo
		echo "\$ $cmd"
		$cmd 2>&1 | grep 'mlx5_1'
	done
	echo
	echo "Simulator resources with the workload holding them:"
	for d in "$FWSIM_DBG"/*/; do echo "  $(basename "$d"): $(tr '\n' ' ' <"$d/resources")"; done
	touch /tmp/demo-release
	wait $wl
	echo "workload: $(grep -c '^R ok' /tmp/demo-wl.out) checks passed, $(grep -c '^R fail' /tmp/demo-wl.out) failed"
	echo
	echo "mlx5_0 (InfiniBand) and mlx5_1 (RoCE) are registered with ib_core_rs and"
	echo "served by its uverbs: Debian's unmodified libibverbs + libmlx5 (bound by"
	echo "driver id 1 over netlink) opened a user context on each (mlx5 udata, a"
	echo "transport domain per context) and queried device, ports and GIDs."
	echo
	echo "Traffic through libmlx5 on the simulated data path: both ends of Debian's"
	echo "ibv_rc_pingpong on mlx5_1 (RoCE v2, GID 1) over TCP on 127.0.0.1:"
	echo "\$ ibv_rc_pingpong -d mlx5_1 -g 1 -n 200 & ibv_rc_pingpong -d mlx5_1 -g 1 -n 200 127.0.0.1"
	ibv_rc_pingpong -d mlx5_1 -g 1 -n 200 -p 18700 >/tmp/demo-pp-s.out 2>&1 &
	pp=$!
	sleep 1
	ibv_rc_pingpong -d mlx5_1 -g 1 -n 200 -p 18700 127.0.0.1 2>&1 | grep -v '^ *local\|^ *remote'
	wait $pp
	echo
	echo "perftest's ib_write_bw on mlx5_0 (InfiniBand):"
	echo "\$ ib_write_bw -d mlx5_0 -F -n 1000 & ib_write_bw -d mlx5_0 -F -n 1000 127.0.0.1"
	ib_write_bw -d mlx5_0 -F -n 1000 -p 18701 >/tmp/demo-bw-s.out 2>&1 &
	bw=$!
	sleep 1
	ib_write_bw -d mlx5_0 -F -n 1000 -p 18701 127.0.0.1 2>&1 | grep -A3 '#bytes'
	wait $bw
	echo
	echo "After every context closed, the simulator holds only the kernel PD and UAR:"
	for d in "$FWSIM_DBG"/*/; do echo "  $(basename "$d"): $(tr '\n' ' ' <"$d/resources")"; done
	echo "=============================================="
	unload_ours
}

[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode demo
