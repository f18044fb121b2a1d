# SPDX-License-Identifier: GPL-2.0
# Fault injection at every point (issue 14): each verb of the workload under
# the kernel's allocation fault injection (failslab, fail_page_alloc) and the
# firmware simulator's command fault knob, one point at a time
# (tests/userspace/fault_sweep.c). Sourced by the mode scripts; run as the VM
# mode `faults` (make faults: the full sweep). make check runs vm_faults, a
# bounded slice (faults_slice_suite).
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"
. "${RDMARS_DIR:-/rdma-rs}/ours.sh"

FAULT_DBG=/sys/kernel/debug

# The verbs swept, in the order a workload performs them (the base verbs, then the
# SRQ, XRC domain, XRC SRQ, memory window, DEVX umem, DEVX object, mlx5dv mkey, DC verbs,
# REREG_MR in place and a DEVX RMP).
FAULT_VERBS="ctx uctx pd mr cq qp modify ah srq xrcd xsrq mw umem dobj dmkey dci dct rereg rmp mcast d_rmp d_dct d_dci d_dmkey d_dobj d_umem d_mw d_xsrq d_xrcd d_srq d_ah d_qp d_cq d_mr d_pd d_uctx d_ctx"
# make check's slice: the kernel's own paths (no ibv_open_device, whose
# libibverbs part alone has about 100 allocation points; no AH, which on
# mlx5 has no firmware command).
FAULT_SLICE_VERBS="uctx pd mr cq qp modify mcast d_qp d_cq d_mr d_pd d_uctx"

# faults_setup: failslab and fail_page_alloc armed only by a task's own
# /proc/thread-self/fail-nth: probability 0 (nothing fails at random),
# task-filter on (only tasks with make-it-fail could fail at random, and none
# has it), sleeping allocations eligible (ignore-gfp-wait N: the default Y
# would exempt every GFP_KERNEL allocation), every page order (min-order 0),
# user pages exempt (ignore-gfp-highmem Y: the anonymous pages of the test's
# own page faults are not the stack's points), no message per injected
# failure (verbose 0: the default prints a stack trace).
faults_setup() {
	local a ok=1
	for a in failslab fail_page_alloc; do
		[ -d $FAULT_DBG/$a ] || { ok=0; continue; }
		echo 0 >$FAULT_DBG/$a/probability
		echo 0 >$FAULT_DBG/$a/verbose
		echo Y >$FAULT_DBG/$a/task-filter
		echo N >$FAULT_DBG/$a/ignore-gfp-wait
		echo -1 >$FAULT_DBG/$a/times
	done
	if [ -d $FAULT_DBG/fail_page_alloc ]; then
		echo 0 >$FAULT_DBG/fail_page_alloc/min-order
		echo Y >$FAULT_DBG/fail_page_alloc/ignore-gfp-highmem
	fi
	[ $ok = 1 ] && [ -w /proc/self/fail-nth ]
}

# faults_run DEV FN VERB KIND [MAX [STEP [GID_INDEX]]]: one sweep; its `S` summary line
# is kept in /tmp/faults.summary.
faults_run() {
	local dev=$1 fn=$2 verb=$3 kind=$4 max=${5:-100000} step=${6:-1} g=${7:-0}
	t_import "$dev $verb $kind${7:+ (GID $7)}" /rdma-rs/fault_sweep -d $dev -v $verb -k $kind \
		-f $FWSIM_DBG/$fn -m $max -s $step -g $g
	grep '^S ' /tmp/import.out | sed "s/^S /$dev /" >>/tmp/faults.summary
}

faults_report() {
	echo "+ fault injection: points hit per verb"
	sed 's/^/    faults| /' /tmp/faults.summary
}

# faults_sweep FUNCTIONS VERBS MAX STEP: each verb, both kinds, on each
# function (mlx5_N:mlx5_ib_rs.rdma.N), every STEP-th allocation point and
# every firmware command point; then the simulator holds only the kernel PD
# and UAR and restrack nothing.
faults_sweep() {
	local fns=$1 verbs=$2 max=$3 step=$4 pair dev fn verb
	: >/tmp/faults.summary
	load_ours sim=ib,eth
	if ! t_check "fault injection set up (failslab, fail_page_alloc, fail-nth)" faults_setup; then
		unload_ours
		return
	fi
	for pair in $fns; do
		dev=${pair%%:*}
		fn=${pair#*:}
		for verb in $verbs; do
			faults_run $dev $fn $verb slab $max $step
			faults_run $dev $fn $verb fw $max 1
		done
		t_check "$dev: the simulator holds only the kernel PD and UAR afterwards" fwsim_resources_probed $fn
	done
	t_check "rdma res: no pd, cq, qp or mr left" sh -c "rdma res | grep -v ' pd 0 cq 0 qp 0 .*mr 0' | grep -q . && exit 1 || exit 0"
	faults_report
	unload_ours
}

# vm_faults (make check): the RoCE function, the kernel's verbs, every
# firmware command point, every 8th allocation point.
faults_slice_suite() {
	faults_sweep "mlx5_1:mlx5_ib_rs.rdma.1" "$FAULT_SLICE_VERBS" 100000 8
}

# vm_rereg_faults: ibv_rereg_mr() of the access flags, which mlx5 makes in place by a UMR WQE
# on a UMR QP it creates for the call, and a DEVX cyclic RMP in a umem (UCX's receive queue),
# its create and destroy: every allocation and firmware point on the RoCE function (the full
# sweep, make faults, takes both functions).
rereg_faults_suite() {
	faults_sweep "mlx5_1:mlx5_ib_rs.rdma.1" "rereg rmp d_rmp" 100000 1
}

# vm_faults_full (make faults): both functions, every point.
faults_full_suite() {
	faults_sweep "mlx5_0:mlx5_ib_rs.rdma.0 mlx5_1:mlx5_ib_rs.rdma.1" "$FAULT_VERBS" 100000 1
}

# faults_wait_gid3: mlx5_1's GID 3 becomes ::ffff:10.78.0.1 (the GID cache updates from a work
# item after the address event), within 10 s.
faults_wait_gid3() {
	local i=0
	while [ $i -lt 100 ]; do
		grep -q '0000:0000:0000:0000:0000:ffff:0a4e:0001' \
			/sys/class/infiniband/mlx5_1/ports/1/gids/3 2>/dev/null && return 0
		nap 0.1
		i=$((i + 1))
	done
	return 1
}

# vm_faults_ip: the RoCE function with an IPv4 address on its interface; AH and connected QP
# AVs from its IPv4 RoCE v2 GID (index 3) to that address, resolved through the route, under
# every allocation and firmware command point; an rdma_cm id bound to the address and joined to
# a group, MIGRATE_ID and WRITE_CM_EVENT under every allocation point.
faults_ip_suite() {
	local ifc
	: >/tmp/faults.summary
	load_ours sim=ib,eth
	if ! t_check "fault injection set up (failslab, fail_page_alloc, fail-nth)" faults_setup; then
		unload_ours
		return
	fi
	ip link set lo up
	ifc=$(ls /sys/class/infiniband/mlx5_1/device/net/ 2>/dev/null)
	t_check "ip addr add 10.78.0.1/24 dev $ifc" ip addr add 10.78.0.1/24 dev "$ifc"
	t_check "mlx5_1 GID 3 is ::ffff:10.78.0.1" faults_wait_gid3
	for verb in ah modify; do
		faults_run mlx5_1 mlx5_ib_rs.rdma.1 $verb slab 100000 1 3
		faults_run mlx5_1 mlx5_ib_rs.rdma.1 $verb fw 100000 1 3
	done
	# An rdma_cm id bound to that address and joined to a group (ucma, rdma_cm), an id's
	# MIGRATE_ID with an event pending and its WRITE_CM_EVENT: no firmware command, so
	# allocation points only.
	for verb in cmid cmmig cmev; do
		faults_run mlx5_1 mlx5_ib_rs.rdma.1 $verb slab 100000 1 3
	done
	t_check "mlx5_1: the simulator holds only the kernel PD and UAR afterwards" \
		fwsim_resources_probed mlx5_ib_rs.rdma.1
	faults_report
	unload_ours
}

# Standalone: the VM mode `faults` (its suites are in suites.list).
[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode faults
