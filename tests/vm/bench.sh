# `make bench`: the core's data-path dispatch benchmark (a tool, not a
# test): kernel-verbs post_send/poll_cq through ib_core_rs into a no-op
# driver op, next to a direct call of the same op. rdmars.n= calls per figure.
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"

bench_suite() {
	local n=1000000 arg
	for arg in $(cat /proc/cmdline); do
		case "$arg" in rdmars.n=*) n=${arg#rdmars.n=} ;; esac
	done
	t_check "insmod ib_core_rs" insmod $RDMARS_MODS/ib_core_rs.ko
	t_check "insmod ib_core_rs_test bench=$n" insmod $RDMARS_MODS/ib_core_rs_test.ko bench=$n
	echo "================ rdma-rs benchmark ================"
	dmesg | grep 'ib_core_rs bench:' | sed 's/^\[[^]]*\] //'
	echo "==================================================="
	t_check "rmmod ib_core_rs_test" rmmod ib_core_rs_test
	t_check "rmmod ib_core_rs" rmmod ib_core_rs
}

[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode bench
