#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The MAD layer and umad (issue 36): vm_umad. The infiniband_mad class and its nodes as
# libibumad reads them, tests/userspace/umad_test.c (raw ioctl/read/write/poll: upstream's
# errnos, an unanswered send's ETIMEDOUT, and a local directed-route NodeInfo answered by the
# driver's process_mad when the driver has one), Debian's ibstat/ibstatus (infiniband-diags
# 44 over libibumad) against sysfs, and the device's removal with a umad file open.
. "${RDMARS_DIR:-/rdma-rs}/lib.sh"

UMAD_SIM=sim=ib,eth
# 1 once the driver answers process_mad (the mlx5 subnet management agent): then the local
# NodeInfo SMP is checked too. Without it a hop-count-0 SMP has nowhere to go.
UMAD_SMP=1

umad_suite() {
	local g lid state
	load_ours $UMAD_SIM
	t_check "infiniband_mad abi_version is 5" sh -c '[ "$(cat /sys/class/infiniband_mad/abi_version)" = 5 ]'
	echo "+ ls -l /dev/infiniband; grep . /sys/class/infiniband_mad/*/ibdev /sys/class/infiniband_mad/*/port"
	ls -l /dev/infiniband/ | sed 's/^/    /'
	grep . /sys/class/infiniband_mad/*/ibdev /sys/class/infiniband_mad/*/port | sed 's/^/    /'
	t_check "umad0 is 231:0, issm0 is 231:64" sh -c \
		'[ "$(cat /sys/class/infiniband_mad/umad0/dev)" = 231:0 ] && [ "$(cat /sys/class/infiniband_mad/issm0/dev)" = 231:64 ]'
	t_check "umad0: ibdev mlx5_0, port 1" sh -c \
		'[ "$(cat /sys/class/infiniband_mad/umad0/ibdev)" = mlx5_0 ] && [ "$(cat /sys/class/infiniband_mad/umad0/port)" = 1 ]'
	t_check "umad1: mlx5_1 (RoCE), no issm1 (no QP0)" sh -c \
		'[ "$(cat /sys/class/infiniband_mad/umad1/ibdev)" = mlx5_1 ] && [ ! -e /sys/class/infiniband_mad/issm1 ]'
	t_check "/dev/infiniband/umad0 and issm0 exist" test -c /dev/infiniband/umad0 -a -c /dev/infiniband/issm0
	g=$(cat /sys/class/infiniband/mlx5_0/node_guid)
	if [ "$UMAD_SMP" = 1 ]; then
		t_import "umad_test umad0 with a local NodeInfo SMP" /rdma-rs/umad_test -u 0 -s -g "$g"
	else
		t_import "umad_test umad0" /rdma-rs/umad_test -u 0
	fi
	echo "+ ibstat"
	ibstat >/tmp/umad-ibstat 2>&1
	sed 's/^/    ibstat| /' /tmp/umad-ibstat
	t_check "ibstat lists mlx5_0 and mlx5_1" sh -c "grep -q \"^CA 'mlx5_0'\" /tmp/umad-ibstat && grep -q \"^CA 'mlx5_1'\" /tmp/umad-ibstat"
	t_check "ibstat: mlx5_0 Node GUID as sysfs" grep -q "Node GUID: 0x$(echo "$g" | tr -d :)" /tmp/umad-ibstat
	lid=$(cat /sys/class/infiniband/mlx5_0/ports/1/lid)
	state=$(sed 's/^[0-9]*: //' /sys/class/infiniband/mlx5_0/ports/1/state)
	t_check "ibstat: mlx5_0 port 1 Base lid $((lid)) and State $state as sysfs" sh -c \
		"grep -q 'Base lid: $((lid))\$' /tmp/umad-ibstat && grep -qi 'State: $state' /tmp/umad-ibstat"
	echo "+ ibstatus"
	ibstatus >/tmp/umad-ibstatus 2>&1
	sed 's/^/    ibstatus| /' /tmp/umad-ibstatus
	t_check "ibstatus: mlx5_0 port 1 base lid as sysfs" grep -q "base lid:.*$lid" /tmp/umad-ibstatus
	if [ "$UMAD_SMP" = 1 ]; then
		# infiniband-diags over libibumad: a directed-route SMP with an empty path, answered
		# by the node's SMA through process_mad.
		echo "+ smpquery -D nodeinfo 0"
		smpquery -D nodeinfo 0 >/tmp/umad-ni 2>&1
		sed 's/^/    smpquery| /' /tmp/umad-ni
		t_check "smpquery -D nodeinfo 0: NodeGuid as sysfs node_guid" \
			grep -q "^Guid:\.*0x$(echo "$g" | tr -d :)\$" /tmp/umad-ni
		echo "+ smpquery -D portinfo 0"
		smpquery -D portinfo 0 >/tmp/umad-pi 2>&1
		sed 's/^/    smpquery| /' /tmp/umad-pi
		t_check "smpquery -D portinfo 0: Lid $((lid)) as sysfs" grep -q "^Lid:\.*$((lid))\$" /tmp/umad-pi
		# perfquery resolves the local port by directed route, then sends a LID-routed PerfMgt
		# Get to the port's own LID: the MAD layer hands it to process_mad (the PMA).
		echo "+ perfquery"
		perfquery >/tmp/umad-pq 2>&1
		local prc=$?
		sed 's/^/    perfquery| /' /tmp/umad-pq
		t_check "perfquery of the local port: exit 0, Port counters of Lid $((lid)) port 1" sh -c \
			"[ $prc = 0 ] && grep -q 'Port counters: Lid $((lid)) port 1' /tmp/umad-pq && grep -q '^PortXmitData:' /tmp/umad-pq"
	fi
	t_import "umad_test random calls on umad0" /rdma-rs/umad_test -u 0 -f 3000 -r 7
	t_import "umad_test random calls on umad1 (RoCE)" /rdma-rs/umad_test -u 1 -f 1000 -r 11
	# issm0: IsSM through the driver's modify_port (mlx5: MODIFY_HCA_VPORT_CONTEXT).
	t_import "umad_test issm0" /rdma-rs/umad_test -u 0 -m mlx5_0
	# The device goes away while umad files are open: one idle, one with an agent, a MAD in
	# flight and a read() blocked.
	exec 4<>/dev/infiniband/umad0
	/rdma-rs/umad_test -u 0 -k >/tmp/umad-kill.out 2>&1 &
	local kpid=$! i=0
	while ! grep -q "waiting in read" /tmp/umad-kill.out && [ $i -lt 50 ]; do nap 0.2; i=$((i + 1)); done
	nap 0.5
	t_check "rmmod mlx5_ib_rs with umad0 open, a MAD in flight and a read blocked" rmmod mlx5_ib_rs
	wait $kpid
	t_import_file "umad_test -k" /tmp/umad-kill.out $?
	t_check "umad0 is gone" test ! -e /sys/class/infiniband_mad/umad0
	t_check "read of the orphaned umad file: EIO" sh -c '! dd bs=512 count=1 <&4 2>/tmp/umad-dd; grep -qi "input/output error" /tmp/umad-dd'
	exec 4<&-
	t_check "rmmod ib_core_rs" rmmod ib_core_rs
	t_check "modprobe -r mlx5_core" modprobe -r mlx5_core
}

# Standalone: the VM mode `umad` (its suites are in suites.list).
[ "${RDMARS_SOURCED:-}" = 1 ] || run_mode umad
