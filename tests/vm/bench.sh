# SPDX-License-Identifier: GPL-2.0
# `make bench`: the core's data-path dispatch benchmark (a tool, not a
# test): kernel-verbs post_send/poll_cq through ib_core_rs into a no-op
# driver op, next to a direct call of the same op (what upstream's inline
# ib_post_send()/ib_poll_cq() amount to: one call of the driver's op),
# rdmars.runs= times (one insmod each). rdmars.n= calls per figure.
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"

bench_suite() {
	local n runs r
	n=$(bench_arg n 1000000)
	runs=$(bench_arg runs 3)
	: >/tmp/bd-figs
	t_check "insmod ib_core_rs" insmod $RDMARS_MODS/ib_core_rs.ko
	for r in $(seq 1 "$runs"); do
		dmesg -c >/dev/null
		t_check "insmod ib_core_rs_test bench=$n (run $r)" insmod $RDMARS_MODS/ib_core_rs_test.ko bench=$n
		dmesg | grep 'ib_core_rs bench:' | sed 's/^\[[^]]*\] //; s/^/    /'
		# "ib_core_rs bench: VERB: core X ns/call, direct Y ns/call, ..."
		dmesg | awk -v r="$r" '/ib_core_rs bench: [a-z_]+: core/ {
			for (i = 1; i <= NF; i++) if ($i == "bench:") { v = $(i + 1); sub(/:$/, "", v) }
			for (i = 1; i <= NF; i++) {
				if ($i == "core") print "ours", r, v "_ns", $(i + 1)
				if ($i == "direct") print "up", r, v "_ns", $(i + 1)
			}
		}' >>/tmp/bd-figs
		t_check "rmmod ib_core_rs_test" rmmod ib_core_rs_test
	done
	t_check "rmmod ib_core_rs" rmmod ib_core_rs
	echo "================ rdma-rs benchmark ================"
	echo "kernel $(uname -r); runs $runs; $n calls per figure (each the best of 3 rounds; $(vm_accel))"
	bench_table /tmp/bd-figs "via ib_core_rs" "the op by pointer"
	echo "(ratio: pointer/core, 1.00 means the core adds nothing to the indirect call upstream's"
	echo " inline ib_post_send() makes; each run's line above also shows a static call of the op)"
	echo "==================================================="
}

[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode bench
