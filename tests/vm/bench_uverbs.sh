# `make bench-uverbs`: the uverbs round-trip benchmark (a tool, not a test):
# tests/userspace/uverbs_bench.c through libibverbs on ours (rxe_mock0 over
# ib_core_rs) and on upstream (ib_uverbs + rdma_rxe on veth), same VM, one
# after the other; rdmars.n= iterations per figure.
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"

bench_uverbs_suite() {
	local n=5000 arg
	for arg in $(cat /proc/cmdline); do
		case "$arg" in rdmars.n=*) n=${arg#rdmars.n=} ;; esac
	done
	# kmemleak's automatic scan (first one about a minute after boot) makes every
	# allocation wait for its locks while it runs: off for the measurement.
	[ -w /sys/kernel/debug/kmemleak ] && echo scan=off >/sys/kernel/debug/kmemleak
	t_check "insmod ib_core_rs" insmod $RDMARS_MODS/ib_core_rs.ko
	t_check "insmod rdma_rs_mock" insmod $RDMARS_MODS/rdma_rs_mock.ko
	/rdma-rs/uverbs_bench -d rxe_mock0 -n "$n" >/tmp/bench-ours 2>&1
	t_check "uverbs_bench on rxe_mock0" grep -q '^bench ' /tmp/bench-ours
	cat /tmp/bench-ours
	# Where the time goes: the syscalls of a short run, with their durations.
	strace -T -e trace=ioctl,write /rdma-rs/uverbs_bench -d rxe_mock0 -n 3 2>&1 | tail -16 | sed 's/^/    strace-ours| /'
	t_check "rmmod rdma_rs_mock" rmmod rdma_rs_mock
	t_check "rmmod ib_core_rs" rmmod ib_core_rs
	t_check "modprobe ib_uverbs rdma_rxe veth" modprobe -a ib_uverbs rdma_rxe veth
	ip link add veth0 type veth peer name veth1 && ip link set veth0 up && ip link set veth1 up
	t_check "rdma link add rxe0" rdma link add rxe0 type rxe netdev veth0
	/rdma-rs/uverbs_bench -d rxe0 -n "$n" >/tmp/bench-up 2>&1
	t_check "uverbs_bench on rxe0" grep -q '^bench ' /tmp/bench-up
	cat /tmp/bench-up
	strace -T -e trace=ioctl,write /rdma-rs/uverbs_bench -d rxe0 -n 3 2>&1 | tail -16 | sed 's/^/    strace-up| /'
	rdma link delete rxe0
	ip link del veth0
	modprobe -r rdma_rxe ib_uverbs ib_core veth
	echo "================ rdma-rs uverbs benchmark ================"
	grep -h "^raw " /tmp/bench-ours /tmp/bench-up
	awk '
	FNR == 1 { f++ }
	/^bench / { for (i = 3; i < NF; i += 2) v[f, $i] = $(i + 1); v[f, "dev"] = $2 }
	END {
		printf "n = %s per figure\n", v[1, "n"]
		printf "%-28s %14s %14s %8s\n", "", "ours (" v[1, "dev"] ")", "upstream (" v[2, "dev"] ")", "ratio"
		printf "%-28s %14s %14s\n", "QUERY_PORT ns/call", v[1, "query_port_ns"], v[2, "query_port_ns"]
		if (v[2, "query_port_ops"] > 0)
			printf "%-28s %14s %14s %8.2f\n", "QUERY_PORT calls/s", v[1, "query_port_ops"], v[2, "query_port_ops"], v[1, "query_port_ops"] / v[2, "query_port_ops"]
		if (v[2, "pd_pairs_per_s"] > 0)
			printf "%-28s %14s %14s %8.2f\n", "PD alloc+dealloc pairs/s", v[1, "pd_pairs_per_s"], v[2, "pd_pairs_per_s"], v[1, "pd_pairs_per_s"] / v[2, "pd_pairs_per_s"]
		printf "(ratio: ours/upstream in ops/s; >= 1.0 means ours is no slower)\n"
	}' /tmp/bench-ours /tmp/bench-up
	echo "=========================================================="
}

[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode bench_uverbs
