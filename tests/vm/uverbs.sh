# SPDX-License-Identifier: GPL-2.0
# uverbs through real rdma-core: the mock device (rdma_rs_mock, driver id
# RXE = 14) served by our uverbs, seen by librxe; the raw ABI checks; the same
# checks against the upstream peer. Runs as its own mode and inside check.
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"

uverbs_suite() {
	t_check "insmod ib_core_rs" insmod $RDMARS_MODS/ib_core_rs.ko
	# The pure ABI's KUnit suite (uverbs/abi_kunit.rs) ran at this insmod: its cases are judged
	# from the console's KTAP; this fails if the suite is not built in or did not pass.
	t_check "KUnit suite ib_core_rs_uverbs_spec ran at insmod and passed" \
		grep -qx 'ok 1 ib_core_rs_uverbs_spec' /sys/kernel/debug/kunit/ib_core_rs_uverbs_spec/results
	t_check "insmod rdma_rs_mock" insmod $RDMARS_MODS/rdma_rs_mock.ko
	echo "+ ls -l /dev/infiniband; cat /sys/class/infiniband_verbs/*"
	ls -l /dev/infiniband/ | sed 's/^/    /'
	t_check "uverbs0 is 231:192 crw-rw-rw-" sh -c 'ls -l /dev/infiniband/uverbs0 | grep -q "^crw-rw-rw-.* 231, *192 "'
	t_check "class abi_version is 6" sh -c '[ "$(cat /sys/class/infiniband_verbs/abi_version)" = 6 ]'
	t_check "uverbs0/ibdev is rxe_mock0" sh -c '[ "$(cat /sys/class/infiniband_verbs/uverbs0/ibdev)" = rxe_mock0 ]'
	t_check "uverbs0/abi_version is 2" sh -c '[ "$(cat /sys/class/infiniband_verbs/uverbs0/abi_version)" = 2 ]'
	t_check "uverbs0/dev is 231:192" sh -c '[ "$(cat /sys/class/infiniband_verbs/uverbs0/dev)" = 231:192 ]'
	echo "+ ibv_devices"
	ibv_devices >/tmp/uv-devices 2>&1
	sed 's/^/    devices| /' /tmp/uv-devices
	t_check "ibv_devices lists rxe_mock0" grep -q 'rxe_mock0[[:space:]]*0002c90300abcdef' /tmp/uv-devices
	echo "+ ibv_devinfo"
	ibv_devinfo >/tmp/uv-devinfo 2>&1
	local rc=$?
	sed 's/^/    devinfo| /' /tmp/uv-devinfo
	if [ $rc = 0 ] && grep -q '^hca_id:[[:space:]]*rxe_mock0' /tmp/uv-devinfo &&
		grep -q 'fw_ver:[[:space:]]*1.2.3' /tmp/uv-devinfo &&
		grep -q 'vendor_part_id:[[:space:]]*22136' /tmp/uv-devinfo &&
		grep -q 'state:[[:space:]]*PORT_ACTIVE' /tmp/uv-devinfo; then
		t_ok "ibv_devinfo shows rxe_mock0 through our uverbs"
	else
		t_fail "ibv_devinfo shows rxe_mock0 through our uverbs" "exit $rc"
		strace -f -e trace=openat,ioctl,write,read ibv_devinfo 2>&1 | tail -40 | sed 's/^/    strace| /'
	fi
	echo "+ ibv_devinfo -v"
	ibv_devinfo -v >/tmp/uv-devinfo-v 2>&1
	rc=$?
	sed 's/^/    devinfo-v| /' /tmp/uv-devinfo-v
	if [ $rc = 0 ] && grep -q 'max_qp:[[:space:]]*64' /tmp/uv-devinfo-v &&
		grep -q 'GID\[  0\]:[[:space:]]*fe80:0000:0000:0000:0002:c903:00ab:cd01' /tmp/uv-devinfo-v; then
		t_ok "ibv_devinfo -v shows the mock's attributes and GID 0"
	else
		t_fail "ibv_devinfo -v shows the mock's attributes and GID 0" "exit $rc"
	fi
	# A process holding a user context: `rdma res show ctx` lists it with its pid and comm
	# (upstream RES_CTX_GET).
	ibv_asyncwatch -d rxe_mock0 >/dev/null 2>&1 &
	aw=$!
	sleep 2
	echo "+ rdma res show ctx"
	rdma res show ctx >/tmp/uv-ctx 2>&1
	sed 's/^/    rdma| /' /tmp/uv-ctx
	if grep -q "rxe_mock0 ctxn [0-9]* pid $aw comm ibv_asyncwatch" /tmp/uv-ctx; then
		t_ok "rdma res show ctx lists the open context with pid and comm"
	else
		t_fail "rdma res show ctx lists the open context with pid and comm"
	fi
	kill $aw
	wait $aw 2>/dev/null
	t_import "uverbs_abi on rxe_mock0 (ours)" /rdma-rs/uverbs_abi -d /dev/infiniband/uverbs0 -i 14
	# Pinned user memory (Umem) and mmap() of the uverbs file, through the mock.
	t_import "uverbs_mmap on rxe_mock0" /rdma-rs/uverbs_mmap -d /dev/infiniband/uverbs0 checks
	# librxe maps a CQ's and a QP's queues at create (rxe's mmap info in the response, as
	# for an SRQ): 50 of each alive at once through libibverbs (uverbs_bench's slab figure).
	/rdma-rs/uverbs_bench -d rxe_mock0 -f slab -s 50 >/tmp/uv-slab 2>&1
	sed 's/^/    slab| /' /tmp/uv-slab
	t_check "librxe: 50 CQs, 50 QPs and 50 MRs alive on rxe_mock0 (queues mapped)" \
		sh -c 'grep -q "^fig rxe_mock0 slab_bytes_cq " /tmp/uv-slab && grep -q "^fig rxe_mock0 slab_bytes_qp " /tmp/uv-slab && grep -q "^fig rxe_mock0 slab_bytes_mr " /tmp/uv-slab'
	# Close with objects open destroyed them: unloading the mock reports no leftovers.
	dmesg -c >/dev/null
	t_check "rmmod rdma_rs_mock" rmmod rdma_rs_mock
	if dmesg | grep -q 'left\|leaked\|still tracked'; then
		dmesg | sed 's/^/    dmesg| /'
		t_fail "no uverbs object or context left after close"
	else
		t_ok "no uverbs object or context left after close"
	fi
	t_check "uverbs0 gone with the device" sh -c '[ ! -e /dev/infiniband/uverbs0 ] && [ ! -e /sys/class/infiniband_verbs/uverbs0 ]'
	t_check "rmmod ib_core_rs" rmmod ib_core_rs
}

# Close cleanup and hot unplug (issue 4) on the mock device.
uv_res_counts() { rdma res | sed 's/^[0-9]*: //'; }
uv_res_pd() { rdma res | sed -n 's/.* pd \([0-9]*\).*/\1/p'; }

uverbs_unplug_suite() {
	t_check "insmod ib_core_rs" insmod $RDMARS_MODS/ib_core_rs.ko
	t_check "insmod rdma_rs_mock" insmod $RDMARS_MODS/rdma_rs_mock.ko
	# Close cleanup: a process exits holding a context and 6 PDs.
	local before after pid mpid i rc t0 t1
	before=$(uv_res_counts)
	echo "restrack before: $before"
	t_import "close cleanup (exit with 6 PDs)" /rdma-rs/uverbs_unplug -d rxe_mock0 exit 6
	after=$(uv_res_counts)
	echo "restrack after: $after"
	if [ -n "$before" ] && [ "$before" = "$after" ]; then
		t_ok "close cleanup: restrack counts back to baseline"
	else
		t_fail "close cleanup: restrack counts back to baseline" "before '$before' after '$after'"
	fi
	# Hot unplug: a process holds a context, 4 PDs and the async fd; the device goes away.
	rm -f /tmp/unplug-go
	/rdma-rs/uverbs_unplug -d rxe_mock0 hold /tmp/unplug-go >/tmp/unplug.out 2>&1 &
	pid=$!
	# A second process holds pinned memory and two mappings of the pattern page.
	/rdma-rs/uverbs_mmap -d /dev/infiniband/uverbs0 hold /tmp/unplug-go >/tmp/unplug-mmap.out 2>&1 &
	mpid=$!
	for i in $(seq 1 300); do grep -q READY /tmp/unplug.out && grep -q READY /tmp/unplug-mmap.out && break; nap 0.1; done
	echo "restrack while held: $(uv_res_counts)"
	if [ "$(uv_res_pd)" = 4 ]; then t_ok "restrack counts the 4 held PDs"; else t_fail "restrack counts the 4 held PDs" "$(uv_res_counts)"; fi
	t0=$(date +%s)
	rc=0
	timeout 60 /usr/sbin/rmmod rdma_rs_mock || rc=$?
	t1=$(date +%s)
	echo "rmmod rdma_rs_mock: exit $rc after $((t1 - t0)) s"
	if [ $rc = 0 ] && kill -0 $pid 2>/dev/null; then
		t_ok "rmmod rdma_rs_mock completes while the process holds the context"
	else
		t_fail "rmmod rdma_rs_mock completes while the process holds the context" "rmmod exit $rc"
	fi
	t_check "uverbs0 gone while the file is open" sh -c '[ ! -e /dev/infiniband/uverbs0 ] && [ ! -e /sys/class/infiniband_verbs/uverbs0 ]'
	touch /tmp/unplug-go
	rc=0
	wait $pid || rc=$?
	t_import_file "hot unplug" /tmp/unplug.out $rc
	rc=0
	wait $mpid || rc=$?
	t_import_file "hot unplug with mappings and pinned memory" /tmp/unplug-mmap.out $rc
	t_check "rmmod ib_core_rs after the unplug" rmmod ib_core_rs
}

# The same raw checks against upstream ib_uverbs + rdma_rxe.
uverbs_peer_suite() {
	t_check "modprobe ib_uverbs rdma_rxe veth" modprobe -a ib_uverbs rdma_rxe veth
	ip link add veth0 type veth peer name veth1 && ip link set veth0 up && ip link set veth1 up
	t_check "rdma link add rxe0" rdma link add rxe0 type rxe netdev veth0
	# -u: skip the double GET_CONTEXT, which leaks a task reference upstream (see uverbs_abi.c).
	t_import "uverbs_abi on rxe0 (upstream)" /rdma-rs/uverbs_abi -d /dev/infiniband/uverbs0 -i 14 -u
	rdma link delete rxe0
	ip link del veth0
	modprobe -r rdma_rxe
	modprobe -r ib_uverbs
	modprobe -r ib_core
	modprobe -r veth
}

# Standalone: the VM mode `uverbs` (its suites are in suites.list).
[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode uverbs
