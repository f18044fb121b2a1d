# SPDX-License-Identifier: GPL-2.0
# `make bench-traffic`: the data-path benchmark (a tool, not a test): perftest's
# ib_send_lat (latency, 2 B), ib_write_bw (message rate at 64 B, bandwidth
# at 64 KiB) and ib_send_bw (message rate at 64 B) through libmlx5 on ours (mlx5_0, InfiniBand, on the firmware
# simulator) and through librxe on upstream (rdma_rxe on veth), both ends in
# the VM over 127.0.0.1, alternating, rdmars.runs= times; then the device
# worker's CPU time while the functions sit idle, with no QP and with one idle
# QP (an ibv_rc_pingpong server waiting for its client).
# rdmars.n= iterations per perftest figure. rdmars.trapped=1 also measures ours with
# mlx5_ib_rs uar_emulate=0 in each run (each faulting UAR store installs its page, which is
# re-armed afterwards: Documentation/datapath.md, "Doorbells"), right after ours with the
# stores emulated, and prints that as a second table against the same rxe runs.
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"

bt_port=18700

# bt_wait_listen PORT: until something listens on TCP PORT (at most 30 s).
bt_wait_listen() {
	local hex i
	hex=$(printf ':%04X$' "$1")
	for i in $(seq 1 60); do
		awk -v p="$hex" '$2 ~ p && $4 == "0A" { f = 1 } END { exit !f }' /proc/net/tcp /proc/net/tcp6 2>/dev/null && return 0
		sleep 0.5
	done
	return 1
}

# bt_stats: the simulator's data-path counters of mlx5_0 (uar_traps, fabric_*: how its fabric
# served the doorbells, Documentation/datapath.md "Doorbells") as "name value" lines.
bt_stats() {
	grep -E '^(uar_traps|fabric_)' /sys/kernel/debug/mlx5_fwsim/mlx5_ib_rs.rdma.0/stats 2>/dev/null
}

# bt_perf STACK RUN TOOL DEV EXTRA...: server + client on 127.0.0.1; the client's output in /tmp/bt-out.
# On ours (STACK ours or trap), also what the simulator's counters grew by during the run.
bt_perf() {
	local stack=$1 run=$2 tool=$3 dev=$4 s
	shift 4
	bt_port=$((bt_port + 1))
	[ "$stack" != up ] && bt_stats >/tmp/bt-st0
	timeout 300 $tool -d "$dev" "$@" -F -n "$bt_n" -p $bt_port >/tmp/bt-s.out 2>&1 &
	s=$!
	bt_wait_listen $bt_port || echo "    $stack-$run| $tool server did not listen"
	timeout 300 $tool -d "$dev" "$@" -F -n "$bt_n" -p $bt_port 127.0.0.1 >/tmp/bt-out 2>&1
	wait $s
	sed "s/^/    $stack-$run-$tool| /" /tmp/bt-out | tail -n 4
	if [ "$stack" != up ]; then
		bt_stats >/tmp/bt-st1
		awk 'NR == FNR { a[$1] = $2; next } $2 != a[$1] { printf " %s +%.0f", $1, $2 - a[$1] }
			END { print "" }' /tmp/bt-st0 /tmp/bt-st1 | sed "s/^/    $stack-$run-$tool| counters:/"
	fi
}

# bt_col N: column N of perftest's first result row.
bt_col() { awk -v c="$1" '/^ *[0-9]+ +[0-9]+ +[0-9.]+/ { print $c; exit }' /tmp/bt-out; }

# bt_fig STACK RUN NAME VALUE: one figure (nothing when perftest printed no row).
bt_fig() { [ -n "$4" ] && echo "$1 $2 $3 $4" >>/tmp/bt-figs; }

# bt_stack STACK RUN DEV EXTRA...: the four perftest figures on DEV.
bt_stack() {
	local stack=$1 run=$2 dev=$3
	shift 3
	# ib_send_lat: "#bytes #iterations t_min t_max t_typical t_avg ..." (usec).
	bt_perf "$stack" "$run" ib_send_lat "$dev" "$@"
	bt_fig "$stack" "$run" send_lat_typical_us "$(bt_col 5)"
	# ib_write_bw: "#bytes #iterations BW_peak BW_average[MB/s] MsgRate[Mpps]".
	bt_perf "$stack" "$run" ib_write_bw "$dev" -s 64 "$@"
	bt_fig "$stack" "$run" write_64B_mpps "$(bt_col 5)"
	bt_perf "$stack" "$run" ib_write_bw "$dev" "$@"
	bt_fig "$stack" "$run" write_64K_MBps "$(bt_col 4)"
	# ib_send_bw: the same columns; each message also takes a receive WQE.
	bt_perf "$stack" "$run" ib_send_bw "$dev" -s 64 "$@"
	bt_fig "$stack" "$run" send_64B_mpps "$(bt_col 5)"
}

# bt_kticks NAME: user+system ticks of the threads whose name contains NAME, from /proc/*/stat.
bt_kticks() {
	local t=0 p f
	for p in /proc/[0-9]*; do
		read -r f <"$p/stat" 2>/dev/null || continue
		case "$f" in *"$1"*) set -- "$1" $f; t=$((t + ${15} + ${16})) ;; esac
	done
	echo $t
}

# bt_idle LABEL SECONDS: the simulator workers' CPU share over SECONDS, in per cent of one vCPU.
bt_idle() {
	local a b
	a=$(bt_kticks mlx5_fwsim)
	sleep "$2"
	b=$(bt_kticks mlx5_fwsim)
	echo "idle $1: worker ticks $((b - a)) in $2 s = $(awk -v t=$((b - a)) -v s="$2" 'BEGIN { printf "%.2f", t / s }')% of one vCPU (CLK_TCK 100)" >>/tmp/bt-idle
}

bench_traffic_suite() {
	local runs r pp trapped emu=/sys/module/mlx5_ib_rs/parameters/uar_emulate
	bt_n=$(bench_arg n 2000)
	runs=$(bench_arg runs 3)
	trapped=$(bench_arg trapped 0)
	: >/tmp/bt-figs
	: >/tmp/bt-idle
	[ -w /sys/kernel/debug/kmemleak ] && echo scan=off >/sys/kernel/debug/kmemleak
	for r in $(seq 1 "$runs"); do
		load_ours sim=ib,eth
		bt_stack ours "$r" mlx5_0
		if [ "$trapped" = 1 ]; then
			echo 0 >$emu
			bt_stack trap "$r" mlx5_0
			echo 1 >$emu
		fi
		if [ "$r" = 1 ]; then
			bt_idle "no QP" 10
			ibv_rc_pingpong -d mlx5_0 -p 18699 >/dev/null 2>&1 &
			pp=$!
			bt_wait_listen 18699 || true
			bt_idle "one idle QP (ibv_rc_pingpong server waiting)" 10
			kill $pp 2>/dev/null
			wait $pp 2>/dev/null
		fi
		unload_ours
		t_check "modprobe ib_uverbs rdma_rxe veth" modprobe -a ib_uverbs rdma_rxe veth
		ip link add veth0 type veth peer name veth1 && ip link set veth0 up && ip link set veth1 up
		t_check "rdma link add rxe0" rdma link add rxe0 type rxe netdev veth0
		bt_stack up "$r" rxe0 -x 0
		rdma link delete rxe0
		ip link del veth0
		modprobe -r rdma_rxe ib_uverbs ib_core veth
	done
	t_check "perftest produced figures for both stacks" \
		sh -c 'grep -q "^ours " /tmp/bt-figs && grep -q "^up " /tmp/bt-figs'
	echo "================ rdma-rs traffic benchmark ================"
	echo "kernel $(uname -r); runs $runs; n $bt_n per figure (perftest -F, both ends in the VM, $(vm_accel))"
	echo "ours: mlx5_0 (InfiniBand, firmware simulator, libmlx5); upstream: rxe0 (rdma_rxe on veth, librxe)"
	bench_table /tmp/bt-figs
	echo "(ratio >= 1.0: ours is no slower)"
	if [ "$trapped" = 1 ]; then
		echo "ours with uar_emulate=0 (trapped stores install the page), the same rxe runs:"
		awk '$1 != "ours"' /tmp/bt-figs | sed 's/^trap /ours /' >/tmp/bt-figs-trap
		bench_table /tmp/bt-figs-trap trapped upstream
	fi
	cat /tmp/bt-idle
	echo "==========================================================="
}

[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode bench_traffic
