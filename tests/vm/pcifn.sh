# SPDX-License-Identifier: GPL-2.0
# Mode pcifn (make pcifn): upstream mlx5_core on the emulated ConnectX PCI function
# (host/cxfn served over vfio-user, Documentation/pcifn.md).
#  - vm_pcifn: mlx5_core probes the function (firmware version, mlx5_core.rdma.0, no
#    failed command, health polling quiet over several polls) and `modprobe -r` removes it.
#  - vm_pcifn_ib: mlx5_ib_rs binds mlx5_core.rdma.0 and registers mlx5_0 through the
#    mlx5_core backend; ibv_devinfo -v, rdma dev, rdma res and the libibverbs workload on it
#    through libmlx5; dc_test, umr_test and rereg_test (DC, UMR-built keys, rereg in place
#    by UMR); traffic through the function's data path (ibv_rc_pingpong polling
#    and with completion events, ib_write_bw, ib_send_lat: WQEs executed by the model over
#    guest memory, CQEs and EQEs written back, MSI-X into mlx5_core's completion EQ); then
#    everything is unloaded.
#  - vm_pcifn_ucx (tests/vm/pcifn_ucx.sh): UCX's mlx5 transports on the function.
# tools/pcifn.sh checks the server's side afterwards (every command answered with status 0,
# the firmware disabled again at the end).
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"
. "${RDMARS_DIR:-/rdma-rs}/ours.sh"

# pcifn_kmsg_since N: kernel log lines after the first N.
pcifn_kmsg_since() { dmesg | tail -n +"$(($1 + 1))"; }

# pcifn_no_bad_lines FILE WHAT: no failed command, health report, warning or oops in FILE.
pcifn_no_bad_lines() {
	local bad
	bad=$(grep -E 'failed, status|health|Health|FW fatal|synd|assert_|WARNING:|BUG:|Oops|Call Trace|timeout|Timeout' "$1")
	if [ -z "$bad" ]; then
		t_ok "$2: no failed command, health report, warning or oops in the kernel log"
	else
		t_fail "$2: no failed command, health report, warning or oops in the kernel log" "$(echo "$bad" | head -n 3)"
	fi
}

pcifn_probe() {
	local d found= n0
	for d in /sys/bus/pci/devices/*; do
		echo "pcifn: ${d##*/} $(cat "$d/vendor"):$(cat "$d/device") class $(cat "$d/class")"
		[ "$(cat "$d/vendor")" = 0x15b3 ] && found=${d##*/}
	done
	if [ -n "$found" ]; then
		t_ok "a Mellanox PCI function is present ($found)"
	else
		t_fail "a Mellanox PCI function is present" "none on the PCI bus"
		return
	fi
	dmesg -n 8
	n0=$(dmesg | wc -l)
	t_check "modprobe mlx5_core" modprobe mlx5_core
	# mlx5_core's health poll runs every 2 s: let it run several times.
	sleep "${PCIFN_WAIT:-8}"
	echo "pcifn: auxiliary devices: $(ls /sys/bus/auxiliary/devices 2>/dev/null | tr '\n' ' ')"
	echo "pcifn: MSI-X vectors: $(ls /sys/bus/pci/devices/$found/msi_irqs 2>/dev/null | wc -l)"
	t_check "mlx5_core.rdma.0 appears" test -e /sys/bus/auxiliary/devices/mlx5_core.rdma.0
	t_check "mlx5_core is bound to $found" test -e /sys/bus/pci/drivers/mlx5_core/$found
	t_check "mlx5_core uses MSI-X vectors" test -n "$(ls /sys/bus/pci/devices/$found/msi_irqs 2>/dev/null)"
	t_check "modprobe -r mlx5_core" modprobe -r mlx5_core
	t_check "mlx5_core.rdma.0 is gone" test ! -e /sys/bus/auxiliary/devices/mlx5_core.rdma.0
	pcifn_kmsg_since "$n0" >/tmp/pcifn-probe.kmsg
	t_check "mlx5_core logs the firmware version 28.43.1014" \
		grep -q 'mlx5_core 0000:.*: firmware version: 28.43.1014' /tmp/pcifn-probe.kmsg
	pcifn_no_bad_lines /tmp/pcifn-probe.kmsg "probe and remove"
}

# Traffic on mlx5_0 of the function, both ends in this VM (tr_pair, traffic.sh), with the
# programs' default sizes (ibv_rc_pingpong: 4096-byte messages, receive depth 500; perftest:
# 64 KiB messages, depth 128): CQs, QPs and MRs of many scattered pages, whose page lists the
# function keeps on the host side (Documentation/pcifn.md). Each UAR store is a vfio-user
# message to the server, which executes the WQEs before it answers.
pcifn_traffic() {
	local irq0 irq1
	irq0=$(pcifn_comp_irqs)
	tr_pair "ibv_rc_pingpong on the function (default sizes, -n 200, polling)" ibv_rc_pingpong \
		"-d mlx5_0 -n 200" "-d mlx5_0 -n 200"
	tr_pair "ibv_rc_pingpong -e on the function (completion events)" ibv_rc_pingpong \
		"-d mlx5_0 -n 100 -e" "-d mlx5_0 -n 100 -e"
	irq1=$(pcifn_comp_irqs)
	grep mlx5 /proc/interrupts | sed 's/^/    interrupts| /'
	t_check "completion interrupts on mlx5_comp0 during -e (${irq0:-none} -> ${irq1:-none})" \
		test "${irq1:-0}" -ge "$((${irq0:-0} + 100))"
	tr_pair "ibv_rc_pingpong -c on the function (data checked)" ibv_rc_pingpong \
		"-d mlx5_0 -n 100 -c" "-d mlx5_0 -n 100 -c"
	tr_pair "ibv_rc_pingpong -r 16 -s 1024 on the function" ibv_rc_pingpong \
		"-d mlx5_0 -r 16 -s 1024 -n 100" "-d mlx5_0 -r 16 -s 1024 -n 100"
	tr_pair "ib_write_bw on the function (default sizes, -n 200)" ib_write_bw \
		"-d mlx5_0 -F -n 200" "-d mlx5_0 -F -n 200" "$PERF_WANT"
	tr_pair "ib_send_lat on the function (-n 200)" ib_send_lat \
		"-d mlx5_0 -F -n 200" "-d mlx5_0 -F -n 200" "$PERF_WANT"
	tr_pair "ib_atomic_bw on the function (fetch-and-add, -n 200)" ib_atomic_bw \
		"-d mlx5_0 -F -n 200" "-d mlx5_0 -F -n 200" "$PERF_WANT"
	t_check "rdma res shows no QP after the traffic" sh -c '! rdma res show qp | grep -q .'
}

# Hot unplug on the function: two processes hold a context, PDs, a CQ, an RC QP, an MR and
# libmlx5's mappings on mlx5_0, one of them with RDMA WRITEs in flight, while mlx5_core.rdma.0
# is unbound from mlx5_ib_rs: the removal completes, both processes get EIO from every call
# and IB_EVENT_DEVICE_FATAL and close (the handle is revoked: nothing reaches mlx5_core after
# the unbind), and the function bound again registers mlx5_0 and serves the workload. The
# server's firmware state at the end (tools/pcifn.sh) shows nothing left.
pcifn_unplug() {
	local f=mlx5_core.rdma.0 drv=mlx5_ib_rs.mlx5_ib_rs p1 p2 rc i
	rm -f /tmp/fu-go /tmp/fu-traffic /tmp/fu-*.out
	mkfifo /tmp/fu-go /tmp/fu-traffic
	/rdma-rs/uverbs_unplug -d mlx5_0 -o hold /tmp/fu-go >/tmp/fu-1.out 2>&1 &
	p1=$!
	/rdma-rs/uverbs_unplug -d mlx5_0 -o -t /tmp/fu-traffic hold /tmp/fu-go >/tmp/fu-2.out 2>&1 &
	p2=$!
	for i in $(seq 1 600); do
		[ "$(grep -l READY /tmp/fu-1.out /tmp/fu-2.out 2>/dev/null | wc -l)" = 2 ] && break
		sleep 0.2
	done
	echo "restrack while held: $(rdma res | grep mlx5_0)"
	timeout 10 sh -c 'echo go >/tmp/fu-traffic'
	for i in $(seq 1 300); do grep -q '^TRAFFIC' /tmp/fu-2.out && break; sleep 0.2; done
	t_check "a process has RDMA WRITEs in flight on the function" grep -q '^TRAFFIC' /tmp/fu-2.out
	rc=0
	timeout 120 sh -c "echo $f >/sys/bus/auxiliary/drivers/$drv/unbind" || rc=$?
	t_check "unbind $f completes while two processes hold objects (exit $rc)" test $rc = 0
	t_check "mlx5_0 unregistered" test ! -e /sys/class/infiniband/mlx5_0
	timeout 10 sh -c 'echo go >/tmp/fu-go'
	rc=0
	wait $p1 || rc=$?
	t_import_file "hot unplug on the function, holder" /tmp/fu-1.out $rc
	rc=0
	wait $p2 || rc=$?
	t_import_file "hot unplug on the function, traffic" /tmp/fu-2.out $rc
	t_check "the traffic process saw IB_EVENT_DEVICE_FATAL" grep -q IB_EVENT_DEVICE_FATAL /tmp/fu-2.out
	echo $f >/sys/bus/auxiliary/drivers/$drv/bind
	t_check "bind $f again: mlx5_0 registered" test -e /sys/class/infiniband/mlx5_0
	t_import "libmlx5 workload on mlx5_0 after the rebind" /rdma-rs/verbs_workload -d mlx5_0 -o 0
}

# The interrupts of mlx5_core's first completion vector so far (all CPUs).
pcifn_comp_irqs() {
	awk '/mlx5_comp0/ { s = 0; for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+$/) s += $i; print s }' /proc/interrupts
}

pcifn_ib() {
	local n0 uv
	n0=$(dmesg | wc -l)
	# The one KUnit suite of this mode (tools/pcifn.sh filters out the others at boot):
	# mlx5_ib_rs_fn_kverbs runs kernel RC queues on the function at mlx5_ib_rs's insmod.
	RDMARS_KUNIT_GLOB=mlx5_ib_rs_fn_kverbs load_ours
	sleep 1
	pcifn_kmsg_since "$n0" | grep 'mlx5_ib_rs_fn_kverbs' | sed 's/^/    kverbs| /'
	t_check "kernel RC queues on mlx5_0 of the function (KUnit mlx5_ib_rs_fn_kverbs: SEND, WRITE, READ, atomics, events)" \
		sh -c "dmesg | tail -n +$((n0 + 1)) | grep -q 'mlx5_ib_rs_fn_kverbs: mlx5_0: kernel RC loopback passed'"
	# The auxiliary bus names a driver "<module>.<driver name>".
	echo "pcifn: mlx5_core.rdma.0 driver: $(fwsim_driver_of mlx5_core.rdma.0)"
	t_check "mlx5_ib_rs is bound to mlx5_core.rdma.0" \
		test "$(fwsim_driver_of mlx5_core.rdma.0)" = mlx5_ib_rs.mlx5_ib_rs
	t_check "mlx5_0 is registered" test -e /sys/class/infiniband/mlx5_0
	t_check "mlx5_0's parent is the PCI function" \
		sh -c 'readlink /sys/class/infiniband/mlx5_0/device | grep -q 0000:00:02.0'
	# First, as in mode pcifn_c right after upstream mlx5_ib's probe: the comparison dump
	# (make pcifn-compare only), with the MAD layer's QP0 and QP1 on the wire (mad_qps=1) as
	# upstream's, for its fabric part; then the usual load again.
	if pcifn_cmp_wanted; then
		unload_ours
		load_ours mad_qps=1
		pcifn_cmp_dump
		unload_ours
		load_ours
	fi
	ibv_devinfo -v -d mlx5_0 >/tmp/pcifn-devinfo 2>&1
	sed 's/^/    ibv_devinfo| /' /tmp/pcifn-devinfo | head -n 80
	t_check "ibv_devinfo -v: mlx5_0 with fw_ver 28.43.1014" grep -q 'fw_ver:.*28.43.1014' /tmp/pcifn-devinfo
	t_check "ibv_devinfo -v: vendor_part_id 4129 (ConnectX-7)" grep -q 'vendor_part_id:.*4129' /tmp/pcifn-devinfo
	t_check "ibv_devinfo -v: board_id RDMARS_CX7" grep -q 'board_id:.*RDMARS_CX7' /tmp/pcifn-devinfo
	# upstream: ib_dev.num_comp_vectors = mlx5_comp_vectors_max(), one per CPU here.
	t_check "ibv_devinfo -v: num_comp_vectors $(nproc) (one completion EQ per CPU)" \
		grep -q "num_comp_vectors:[[:space:]]*$(nproc)\$" /tmp/pcifn-devinfo
	t_check "ibv_devinfo -v: port 1 PORT_ACTIVE, link layer InfiniBand" \
		sh -c 'grep -q "state:.*PORT_ACTIVE" /tmp/pcifn-devinfo && grep -q "link_layer:.*InfiniBand" /tmp/pcifn-devinfo'
	rdma dev >/tmp/pcifn-rdma-dev 2>&1
	sed 's/^/    rdma-dev| /' /tmp/pcifn-rdma-dev
	t_check "rdma dev lists mlx5_0 with its firmware and node GUID" \
		grep -q '^[0-9]*: mlx5_0: node_type ca fw 28.43.1014 node_guid' /tmp/pcifn-rdma-dev
	# The workload's default sizes (4096-entry CQs, 64 KiB MRs): page lists of up to 64
	# scattered pages, kept by the function (Documentation/pcifn.md).
	t_import "libmlx5 workload on mlx5_0 (emulated function)" /rdma-rs/verbs_workload -d mlx5_0 -o 0
	t_import "libmlx5 workload on mlx5_0, other destroy order" /rdma-rs/verbs_workload -d mlx5_0 -o 1
	t_import "libmlx5 workload on mlx5_0, exit without destroy" /rdma-rs/verbs_workload -d mlx5_0 -x
	mlx5_res_while_held mlx5_0
	# DEVX on the function: a CQ and QPs built through DEVX, traffic, and the event channels:
	# the DEVX CREATE_CQ goes through mlx5_core's mlx5_create_cq() as every CREATE_CQ of this
	# backend (mlx5/corehw.rs), so the CQ's completions come back through mlx5_core's EQ to
	# the subscriptions (upstream devx_cq_comp()).
	t_import "devx_test on mlx5_0 (emulated function)" /rdma-rs/devx_test -d mlx5_0
	# ConnectX user space on the function: a DCI reaching DCTs (mlx5dv; both ends on the one
	# function) with a bad DC key, indirect mkeys built by UMR with every byte checked, and
	# re-registration in place by UMR keeping the keys.
	t_import "dc_test on mlx5_0 (emulated function; DCI and DCTs on it)" \
		/rdma-rs/dc_test -d mlx5_0 -e mlx5_0
	t_import "umr_test on mlx5_0 (emulated function)" /rdma-rs/umr_test -d mlx5_0
	t_import "rereg_test on mlx5_0 (emulated function)" /rdma-rs/rereg_test -d mlx5_0 -t -l
	t_check "rereg_test on mlx5_0: a translation change kept the keys" \
		grep -q "^I trans_rkey_kept 1" /tmp/import.out
	pcifn_traffic
	pcifn_unplug
	t_check "rdma res: no pd, cq, qp or mr left" sh -c "rdma res | grep -v ' pd 0 cq 0 qp 0 .*mr 0' | grep -q . && exit 1 || exit 0"
	unload_ours
	pcifn_kmsg_since "$n0" >/tmp/pcifn-ib.kmsg
	grep -E 'mlx5_ib_rs|mlx5_core\.rdma' /tmp/pcifn-ib.kmsg | sed 's/^/    kmsg| /' | head -n 20
	pcifn_no_bad_lines /tmp/pcifn-ib.kmsg "mlx5_ib_rs on the function"
}

# Standalone: the VM mode `pcifn` (its suites are in suites.list).
[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode pcifn
