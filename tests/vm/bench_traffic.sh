# `make bench-traffic`: the data-path benchmark (a tool, not a test): perftest's
# ib_send_lat (latency) and ib_write_bw (message rate) through libmlx5 on
# ours (mlx5_0 on the firmware simulator) and through librxe on upstream
# (rdma_rxe on veth), both ends in the VM over 127.0.0.1, one after the other;
# then the device worker's CPU time while the functions sit idle.
# rdmars.n= iterations per figure.
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"

# bt_perf TOOL DEV EXTRA OUT: server + client on 127.0.0.1; the client's output in OUT.
bt_perf() {
	local tool=$1 dev=$2 extra=$3 out=$4
	timeout 600 $tool -d $dev $extra -F -n $bt_n -p 18777 >/tmp/bt-s.out 2>&1 &
	local s=$!
	sleep 1
	timeout 600 $tool -d $dev $extra -F -n $bt_n -p 18777 127.0.0.1 >"$out" 2>&1
	wait $s
	sed "s/^/    $dev-$tool| /" "$out" | tail -n 6
}

# bt_kticks NAME: ticks of the kernel threads whose name contains $1, from /proc/*/stat.
bt_kticks() {
	local t=0 p f
	for p in /proc/[0-9]*; do
		read -r f <"$p/stat" 2>/dev/null || continue
		case "$f" in *"$1"*) set -- "$1" $f; t=$((t + ${15} + ${16})) ;; esac
	done
	echo $t
}

bench_traffic_suite() {
	local idle0 idle1 before after lo lu ro ru arg
	bt_n=2000
	for arg in $(cat /proc/cmdline); do
		case "$arg" in rdmars.n=*) bt_n=${arg#rdmars.n=} ;; esac
	done
	[ -w /sys/kernel/debug/kmemleak ] && echo scan=off >/sys/kernel/debug/kmemleak
	load_ours sim=ib,eth
	bt_perf ib_send_lat mlx5_0 "" /tmp/bt-ours-lat
	bt_perf ib_write_bw mlx5_0 "" /tmp/bt-ours-bw
	# Idle: the functions bound, no traffic, 10 s; the device workers' CPU time.
	idle0=$(awk '{ print $1 }' /proc/uptime)
	before=$(bt_kticks kworker)
	sleep 10
	after=$(bt_kticks kworker)
	idle1=$(awk '{ print $1 }' /proc/uptime)
	echo "idle_kworker_ticks $((after - before)) over $idle0..$idle1 s (CLK_TCK 100)" >/tmp/bt-idle
	unload_ours
	t_check "modprobe ib_uverbs rdma_rxe veth" modprobe -a ib_uverbs rdma_rxe veth
	ip link add veth0 type veth peer name veth1 && ip link set veth0 up && ip link set veth1 up
	t_check "rdma link add rxe0" rdma link add rxe0 type rxe netdev veth0
	bt_perf ib_send_lat rxe0 "-x 0" /tmp/bt-up-lat
	bt_perf ib_write_bw rxe0 "-x 0" /tmp/bt-up-bw
	rdma link delete rxe0
	ip link del veth0
	modprobe -r rdma_rxe ib_uverbs ib_core veth
	echo "================ rdma-rs traffic benchmark ================"
	# ib_send_lat: "#bytes #iterations t_min t_max t_typical t_avg ..." (usec);
	# ib_write_bw: "#bytes #iterations BW peak BW average MsgRate[Mpps]".
	bt_lat() { awk '/^ *[0-9]+ +[0-9]+ +[0-9.]+/ { print $5; exit }' "$1"; }
	bt_rate() { awk '/^ *[0-9]+ +[0-9]+ +[0-9.]+/ { print $5; exit }' "$1"; }
	lo=$(bt_lat /tmp/bt-ours-lat); lu=$(bt_lat /tmp/bt-up-lat)
	ro=$(bt_rate /tmp/bt-ours-bw); ru=$(bt_rate /tmp/bt-up-bw)
	echo "n = $bt_n per figure (perftest -F, both ends in the VM, TCG)"
	printf '%-34s %14s %14s %8s\n' "" "ours (mlx5_0)" "upstream (rxe0)" "ratio"
	awk -v o="$lo" -v u="$lu" 'BEGIN { printf "%-34s %14s %14s %8s\n", "ib_send_lat typical usec (2 B)", o, u, (o > 0 ? sprintf("%.2f", u / o) : "-") }'
	awk -v o="$ro" -v u="$ru" 'BEGIN { printf "%-34s %14s %14s %8s\n", "ib_write_bw msg rate Mpps (64 KiB)", o, u, (u > 0 ? sprintf("%.2f", o / u) : "-") }'
	echo "(ratio: >= 1.0 means ours is no slower: upstream/ours for latency, ours/upstream for rate)"
	cat /tmp/bt-idle
	echo "==========================================================="
}

[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode bench_traffic
