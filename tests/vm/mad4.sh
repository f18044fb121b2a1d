# SPDX-License-Identifier: GPL-2.0
# Mode mad4 (Documentation/mad.md): opensm over time (suite vm_mad_opensm, tests/vm/madwire.sh)
# and umad's bad input.
# umad's bad input on a swept fabric (sim=ib,ib, the MAD layer's QPs on the wire), each
# mode's kmemleak scan after it: suite vm_umad_bad (tests/userspace/umad_test.c -b: RMPP
# flags on an agent without RMPP, another class than the agent's, 2^32-1 ms timeouts and
# retries, close with sends in flight), vm_umad_faults (-F: open, REGISTER_AGENT2, write and
# UNREGISTER_AGENT under the kernel's allocation fault injection, each point ENOMEM (a
# write whose local SMP process_mad failed: EINVAL, as upstream) or success, the file working
# afterwards) and vm_fuzz_umad (-f: random registrations,
# writes, reads and ioctls, make fuzz's N and SEED).
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"

# On the fabric vm_mad_wire leaves when it comes just before (check2; fabric_take, lib.sh).
FABRIC_TAKERS="$FABRIC_TAKERS umad_bad_suite=ib"
umad_ib_load() {
	RDMARS_KUNIT_GLOB=rdmars-no-suite load_ours sim=ib,ib mad_qps=1
}
umad_bad_suite() {
	fabric_take ib umad_ib_load
	t_import "umad_test -b umad0: RMPP flags, classes, 2^32-1 ms timeouts, close in flight" \
		/rdma-rs/umad_test -u 0 -b
	fabric_give ib unload_ours
}

# The fault sweep of umad (modes faults and mad4).
umad_faults_suite() {
	RDMARS_KUNIT_GLOB=rdmars-no-suite load_ours sim=ib,ib mad_qps=1
	if faults_setup; then
		t_import "umad_test -F umad0: umad's calls under allocation fault injection" \
			/rdma-rs/umad_test -u 0 -F 500
	else
		t_skip "umad_test -F umad0" "no failslab or fail-nth in this kernel"
	fi
	unload_ours
}

# umad's random calls (modes fuzz and mad4; make fuzz's N and SEED): on the IB port of a swept
# fabric, where LID-routed MADs reach the other function's agents, and on a RoCE port.
fuzz_umad_suite() {
	fz_params
	RDMARS_KUNIT_GLOB=rdmars-no-suite load_ours sim=ib,ib,eth mad_qps=1
	t_import "umad_test random calls on umad0 (IB, LIDs on the fabric)" \
		/rdma-rs/umad_test -u 0 -f $((FZ_N * 10)) -r $FZ_SEED
	t_import "umad_test random calls on umad2 (RoCE)" \
		/rdma-rs/umad_test -u 2 -f $((FZ_N * 5)) -r $((FZ_SEED + 1))
	unload_ours
}

[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode mad4
