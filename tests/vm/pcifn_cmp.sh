# SPDX-License-Identifier: GPL-2.0
# The comparison of the two RDMA stacks on the emulated ConnectX function (issue 13,
# Documentation/pcifn.md "Upstream mlx5_ib on the function, compared with ours"): the same
# normalised dump of mlx5_0, printed in mode `pcifn` (our mlx5_ib_rs + ib_core_rs) and in
# mode `pcifn_c` (upstream mlx5_ib + ib_core + ib_uverbs), each line `cmp| SECTION| TEXT`.
# tools/pcifn-compare.sh diffs the two console logs on the host against the checked-in list
# of known differences (tests/vm/pcifn_cmp.known).
#
# Sections:
#   devinfo   ibv_devinfo -v -d mlx5_0
#   sysfs     every attribute of the device and of port 1 (PATH<TAB>VALUE), the first GIDs
#             and P_Keys, the names of the counter files
#   rdma      rdma dev / link / res / statistic
#   mad       the port's SMA and PMA through umad: smpquery -D nodeinfo/portinfo/nodedesc 0
#             (hop count 0: the MAD layer hands them to the driver's process_mad, which asks
#             the function by MAD_IFC), perfquery and perfquery -x of the port's own LID
#             (LID-routed PerfMgt Gets, answered by the function's PMA through MAD_IFC);
#             GUIDs and the traffic counters' values normalised; then the fabric through
#             the function's switch (QP0 on the wire: our stack loads with mad_qps=1):
#             ibnetdiscover and smpquery by directed route (0,1: the switch) and by the
#             switch's LID under the embedded SM; then the embedded SM stopped (the test
#             window's SM command) and unmodified opensm sweeping: the port's SM LID
#             becoming opensm's, opensm's error count, the port's state, LID and SM LID, sminfo, ibnetdiscover; opensm killed, the
#             embedded SM run again
#   res       rdma res show pd|cq|qp|mr while the workload holds its objects (pid, comm
#             normalised)
#   workload  tests/userspace/verbs_workload -o 0: its checks (R) and facts (I: errnos,
#             limits)
#   traffic   tests/userspace/traffic: every completion (C lines) and check (R lines)
#   prog      ibv_rc_pingpong, ib_write_bw, ib_send_lat short runs: exit status of each end
#             and the figures that do not depend on time

PCIFN_CMP_DEV=mlx5_0
# The line tag: `cmp`; `cmpours` for our stack's dump in a pcifn_c boot (vm_pcifn_c_ours).
PCIFN_CMP_TAG=cmp

# pcifn_cmp_wanted: whether mode pcifn runs the dump (`rdmars.pcifn_cmp=1`, which
# `make pcifn-compare` sets; make check's pcifn VM does not pay for it).
pcifn_cmp_wanted() { grep -q 'rdmars.pcifn_cmp=1' /proc/cmdline; }

# pcifn_cmp_out SECTION: prefixes stdin.
pcifn_cmp_out() { sed "s/^/$PCIFN_CMP_TAG| $1| /"; }

pcifn_cmp_sysfs() {
	local d=/sys/class/infiniband/$PCIFN_CMP_DEV f
	for f in $(cd "$d" && find . -maxdepth 1 -type f; cd "$d" && find ports/1 -maxdepth 1 -type f; \
		cd "$d" && ls -d ports/1/gids/0 ports/1/gids/1 ports/1/pkeys/0 ports/1/pkeys/1 \
		ports/1/gid_attrs/types/0 ports/1/gid_attrs/ndevs/0 2>/dev/null); do
		f=${f#./}
		case "$f" in uevent) continue ;; esac
		printf '%s\t%s\n' "$f" "$(cat "$d/$f" 2>&1 | head -n 1 | sed 's/^cat: [^:]*: //')"
	done | sort
	# The directories, and the counter files by name (their values move with traffic).
	(cd "$d" && ls -1p . ports/1 2>/dev/null | grep / | sed 's/^/dir\t/') | sort
	for f in hw_counters ports/1/hw_counters ports/1/counters; do
		[ -d "$d/$f" ] && printf '%s\t%s\n' "$f" "$(ls "$d/$f" | tr '\n' ' ')"
	done
}

# pcifn_cmp_pair PROG ARGS: both ends over 127.0.0.1; the exit status of each and the
# lines of the client that do not carry a time or a rate.
pcifn_cmp_pair() {
	local prog=$1 args=$2 s src crc
	_tr_port=$((_tr_port + 1))
	timeout 60 $prog $args -p $_tr_port >/tmp/cmpp-s.out 2>&1 &
	s=$!
	if ! tr_wait_listen $_tr_port; then
		# A server that failed before listening; a client would only retry to connect.
		kill $s 2>/dev/null
		wait $s
		src=$?
		echo "$prog $args: server exit $src before listening: $(grep -v '^ *$' /tmp/cmpp-s.out | head -n 2 | tr '\n' ' ')"
		return
	fi
	timeout 60 $prog $args -p $_tr_port 127.0.0.1 >/tmp/cmpp-c.out 2>&1
	crc=$?
	wait $s
	src=$?
	echo "$prog $args: server exit $src, client exit $crc"
	case "$prog" in
	ibv_rc_pingpong) sed -n 's/^\([0-9]* bytes in\) .*\( iters\?\).*/\1 \2/p; s/^\([0-9]* iters in\) .*/\1/p' /tmp/cmpp-c.out ;;
	*) grep -E '^ (Dual-port|Number of qps|Connection type|TX depth|Mtu|Link type|Max inline|CQ Moderation|rdma_cm)' /tmp/cmpp-c.out |
		sed 's/^ *//; s/  */ /g' ;;
	esac | sed "s/^/$prog: /"
}

# pcifn_cmp_mad: the `mad` section (the diags of infiniband-diags over umad, port 1). The
# GUIDs are the same model's, normalised all the same; the data and packet counters move
# with whatever ran before (our mode runs a KUnit RC loopback first, D9), so only their
# names are kept.
pcifn_cmp_mad() {
	local q rc
	if [ ! -e /sys/class/infiniband_mad/abi_version ]; then
		echo "no infiniband_mad class"
		return
	fi
	for q in "smpquery -D nodeinfo 0" "smpquery -D portinfo 0" "smpquery -D nodedesc 0" \
		"perfquery" "perfquery -x"; do
		# shellcheck disable=SC2086
		timeout 30 ${q%% *} -t 4000 -C $PCIFN_CMP_DEV -P 1 ${q#"${q%% *}"} \
			>/tmp/cmp-mad.out 2>&1
		rc=$?
		echo "$q: exit $rc"
		sed "s/^/$q: /" /tmp/cmp-mad.out
	done | sed -E 's/0x[0-9a-f]{16}/GUID/g
		s/(Port(Unicast|Multicast)?(Xmit|Rcv)(Data|Pkts)):\.+[0-9]+$/\1: N/'
	pcifn_cmp_fabric 2>&1 | sed -E 's/(0x)?[0-9a-f]{16}/GUID/g'
}

# pcifn_cmp_q CMD ARGS: one infiniband-diags query on port 1 of the device (-t 4 s, 30 s at
# most): its exit status, then its output, each line prefixed with CMD ARGS.
pcifn_cmp_q() {
	local q=$* rc
	# shellcheck disable=SC2086
	timeout 30 $1 -t 4000 -C $PCIFN_CMP_DEV -P 1 ${q#"$1"} >/tmp/cmp-mad.out 2>&1
	rc=$?
	echo "$q: exit $rc"
	# sminfo's activity count is the number of the SM's sweeps so far: timing, not a difference.
	grep -v '^# Topology file: generated on' /tmp/cmp-mad.out |
		sed "s/activity count [0-9]*/activity count N/; s|^|$q: |"
}

# pcifn_cmp_port: port 1's state, LID and SM LID (sysfs).
pcifn_cmp_port() {
	local p=/sys/class/infiniband/$PCIFN_CMP_DEV/ports/1
	echo "port: state $(cat $p/state) lid $(cat $p/lid) sm_lid $(cat $p/sm_lid)"
}

# pcifn_cmp_tw CMD ARG0: a test-window command of the function (host/cxfn/src/regs.rs).
pcifn_cmp_tw() {
	local d
	for d in /sys/bus/pci/devices/*; do
		[ "$(cat "$d/vendor")" = 0x15b3 ] || continue
		/rdma-rs/cxfn_badhw ctl "${d##*/}" "$@"
		return
	done
	echo "no 15b3 function"
}

# pcifn_cmp_fabric: the fabric through the function's switch (directed-route SMPs and
# LID-routed ones leave by QP0), under the embedded SM, then under opensm with the embedded
# SM stopped. Ends with the embedded SM running again and the port ACTIVE.
pcifn_cmp_fabric() {
	local pg i p
	pcifn_cmp_port
	pcifn_cmp_q ibnetdiscover
	pcifn_cmp_q smpquery -D nodeinfo 0,1
	pcifn_cmp_q smpquery switchinfo 1
	echo "tw sm 0: $(pcifn_cmp_tw 9 0)"
	mkdir -p /var/cache/opensm /var/log
	rm -f /var/cache/opensm/guid2lid /tmp/cmp-opensm.log
	pg=0x$(tr -d : </sys/class/infiniband/$PCIFN_CMP_DEV/ports/1/gids/0 | cut -c17-)
	opensm -B -g "$pg" -f /tmp/cmp-opensm.log -s 2 >/dev/null 2>&1
	# opensm's sweep is done at the port when the port's SM LID is opensm's, its own LID
	# (opensm logs no SUBNET UP at its default verbosity).
	p=/sys/class/infiniband/$PCIFN_CMP_DEV/ports/1
	i=0
	while [ $i -lt 120 ] && [ "$(cat $p/sm_lid)" != "$(cat $p/lid)" ]; do
		sleep 0.5
		i=$((i + 1))
	done
	[ "$(cat $p/sm_lid)" = "$(cat $p/lid)" ] && echo "opensm: the port's SM" || echo "opensm: not the port's SM"
	echo "opensm: $(grep -c ' ERR ' /tmp/cmp-opensm.log) ERR lines"
	pcifn_cmp_port
	pcifn_cmp_q sminfo
	pcifn_cmp_q ibnetdiscover
	pcifn_cmp_q smpquery portinfo 1 0
	i=$(pidof opensm)
	[ -n "$i" ] && kill $i
	for i in $(seq 50); do
		pidof opensm >/dev/null || break
		sleep 0.2
	done
	pcifn_cmp_port
	# The embedded SM again, and the link bounced (the test window's PORT) so that it sweeps
	# the port afresh: its LID and SM LID as before opensm, for what follows the dump.
	echo "tw sm 1: $(pcifn_cmp_tw 9 1)"
	echo "tw port 0: $(pcifn_cmp_tw 8 0)"
	echo "tw port 1: $(pcifn_cmp_tw 8 1)"
	i=0
	while [ $i -lt 60 ] && ! grep -q ACTIVE /sys/class/infiniband/$PCIFN_CMP_DEV/ports/1/state; do
		sleep 0.5
		i=$((i + 1))
	done
	pcifn_cmp_port
}

# pcifn_cmp_dump: the whole dump of mlx5_0 (the stack is loaded).
pcifn_cmp_dump() {
	local wl lvl
	echo "+ comparison dump of $PCIFN_CMP_DEV (tests/vm/pcifn_cmp.sh)"
	# No kernel message on the console in the middle of a dump line.
	lvl=$(awk '{ print $1 }' /proc/sys/kernel/printk)
	dmesg -n 1
	ibv_devinfo -v -d $PCIFN_CMP_DEV 2>&1 | pcifn_cmp_out devinfo
	pcifn_cmp_sysfs | pcifn_cmp_out sysfs
	{
		rdma dev; rdma link; rdma res; rdma statistic show 2>&1
	} 2>&1 | pcifn_cmp_out rdma
	pcifn_cmp_mad 2>&1 | pcifn_cmp_out mad
	/rdma-rs/verbs_workload -d $PCIFN_CMP_DEV -o 0 >/tmp/cmp-wl.out 2>&1
	echo "exit $?" >>/tmp/cmp-wl.out
	grep -E '^(R|I|exit) ' /tmp/cmp-wl.out | pcifn_cmp_out workload
	rm -f /tmp/cmp-release
	/rdma-rs/verbs_workload -d $PCIFN_CMP_DEV -m 1 -w /tmp/cmp-release >/tmp/cmp-hold.out 2>&1 &
	wl=$!
	i=0
	while ! grep -q '^I holding' /tmp/cmp-hold.out && [ $i -lt 600 ]; do
		sleep 0.2
		i=$((i + 1))
	done
	for r in pd cq qp mr; do rdma res show $r; done 2>&1 | sed "s/pid $wl /pid PID /" | pcifn_cmp_out res
	touch /tmp/cmp-release
	wait $wl
	echo "held workload exit $?" | pcifn_cmp_out res
	/rdma-rs/traffic -d $PCIFN_CMP_DEV -s 0x5eed -n 20 >/tmp/cmp-traffic.out 2>&1
	echo "exit $?" >>/tmp/cmp-traffic.out
	grep -E '^(C|R|exit) ' /tmp/cmp-traffic.out | pcifn_cmp_out traffic
	{
		pcifn_cmp_pair ibv_rc_pingpong "-d $PCIFN_CMP_DEV -n 50"
		pcifn_cmp_pair ibv_rc_pingpong "-d $PCIFN_CMP_DEV -n 20 -e"
		pcifn_cmp_pair ib_write_bw "-d $PCIFN_CMP_DEV -F -n 50 -s 4096"
		pcifn_cmp_pair ib_send_lat "-d $PCIFN_CMP_DEV -F -n 50"
	} 2>&1 | pcifn_cmp_out prog
	rdma res 2>&1 | pcifn_cmp_out after
	dmesg -n "$lvl"
	echo "+ end of the comparison dump"
}
