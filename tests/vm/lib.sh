# SPDX-License-Identifier: GPL-2.0
# KTAP output for the VM's user-space tests (sourced by the mode scripts).
# Results are collected while a suite runs and printed in one block at its
# end, so kernel KTAP printed meanwhile (a module's KUnit suites run at
# insmod) never interleaves with ours. The suites themselves are listed in
# suites.list and run by run_mode/run_suites below.

# Every script sources this file; the first time counts.
[ -n "${_rdmars_lib:-}" ] && return 0
_rdmars_lib=1

RDMARS_MODS=/lib/modules/rdma-rs
RDMARS_DIR=${RDMARS_DIR:-/rdma-rs}
RDMARS_SUITES=${RDMARS_SUITES:-$RDMARS_DIR/suites.list}
RDMARS_KMEMLEAK=${RDMARS_KMEMLEAK:-/sys/kernel/debug/kmemleak}

# Debian's static busybox prefers its own applets over $PATH: name the real
# kmod and iproute2 tools explicitly (busybox's modprobe and ip lack what
# the tests use: modprobe -r -a, ip link add ... type veth).
insmod() { /usr/sbin/insmod "$@"; }
rmmod() { /usr/sbin/rmmod "$@"; }
lsmod() { /usr/sbin/lsmod "$@"; }
modprobe() { /usr/sbin/modprobe "$@"; }
ip() { /usr/sbin/ip "$@"; }
_suite=
_results=${RDMARS_RESULTS:-/tmp/ktap-results}

# vm_accel: KVM or TCG, the accelerator tools/vm.sh booted the VM with (rdmars.accel=).
vm_accel() {
	case " $(cat /proc/cmdline) " in
	*" rdmars.accel=kvm "*) echo KVM ;;
	*) echo TCG ;;
	esac
}

# suite_begin NAME / suite_end: only run_suites calls them (every suite is
# a line of suites.list). The judge takes `--- suite NAME` as the suite's
# start and its KTAP result line as its end.
suite_begin() {
	_suite=$1
	_suite_t0=$(cut -d. -f1 /proc/uptime)
	: >"$_results"
	echo "--- suite $1"
}

_record() { echo "$1|$2|$3" >>"$_results"; }

# now_cs: sets _now_cs to the uptime in hundredths of a second, read by the shell itself (no
# process started). took T0: prints the time since T0 (a _now_cs) as "    (took N.NN s)", each
# timed step's cost in the console log (t_check, t_import, tr_pair, cm_pair).
now_cs() {
	local u _ s f
	read -r u _ </proc/uptime
	s=${u%.*}
	f=${u#*.}
	f=${f#0}
	_now_cs=$((s * 100 + f))
}
took() {
	local d
	now_cs
	d=$((_now_cs - $1))
	printf '    (took %d.%02d s)\n' $((d / 100)) $((d % 100))
}

# show_tail PREFIX N FILE: prints FILE's last N lines, each after PREFIX, read by the shell
# itself (a ring of N variables): under TCG with the debug kernel each process start costs
# about 0.3 s, and `sed ... | tail` after every program pair started two.
show_tail() {
	local p=$1 n=$2 c=0 i line
	[ -r "$3" ] || return 0
	while IFS= read -r line || [ -n "$line" ]; do
		eval "_st_$((c % n))=\$line"
		c=$((c + 1))
	done <"$3"
	i=$((c > n ? c - n : 0))
	while [ $i -lt $c ]; do
		eval "line=\$_st_$((i % n))"
		printf '%s%s\n' "$p" "$line"
		i=$((i + 1))
	done
}

# t_check DESCRIPTION COMMAND...: passes if COMMAND exits 0. Output shown.
t_check() {
	local d=$1 t0 rc=0
	shift
	echo "+ $*"
	now_cs
	t0=$_now_cs
	"$@" || rc=$?
	took $t0
	if [ $rc = 0 ]; then _record ok "$d" ""; else _record fail "$d" "exit $rc"; fi
}

t_ok() { _record ok "$1" ""; }
t_fail() { _record fail "$1" "${2:-}"; echo "FAIL: $1 ${2:-}"; }
t_skip() { _record skip "$1" "$2"; }

suite_end() {
	local n=0 failed=0 res desc why total
	total=$(wc -l <"$_results")
	echo "    KTAP version 1"
	echo "    # Subtest: $_suite"
	echo "    1..$total"
	echo "    # $_suite: $(($(cut -d. -f1 /proc/uptime) - ${_suite_t0:-0})) s"
	while IFS='|' read -r res desc why; do
		n=$((n + 1))
		case "$res" in
		ok) echo "    ok $n $desc" ;;
		skip) echo "    ok $n $desc # SKIP $why" ;;
		*) echo "    not ok $n $desc"; failed=1 ;;
		esac
	done <"$_results"
	if [ $failed = 0 ]; then echo "ok 1 $_suite"; else echo "not ok 1 $_suite"; fi
}

# nap [SECONDS]: waits SECONDS (default 0.1) in the shell itself, by read's timeout on a FIFO
# nobody writes (opened read-write, so the open does not wait for a writer). A poll loop's
# `sleep 0.1` starts a process ten times a second, and under TCG with the debug kernel each
# start costs about as much CPU as the wait: the program being waited for gets less.
_nap_fifo=/tmp/.rdmars-nap
nap() {
	[ -p $_nap_fifo ] || mkfifo $_nap_fifo 2>/dev/null
	if [ -p $_nap_fifo ]; then
		read -r -t "${1:-0.1}" _ <>$_nap_fifo
	else
		sleep "${1:-0.1}"
	fi
	return 0
}

# tcp_listening PORT: a socket listens on TCP PORT (IPv4 or IPv6). The shell reads
# /proc/net/tcp and tcp6 itself (`local_address` ends in the port in hex, `st` 0A is
# LISTEN): a poll starts no process (see nap).
tcp_listening() {
	local p sl l r st rest f
	p=$(printf ':%04X' "$1")
	for f in /proc/net/tcp /proc/net/tcp6; do
		[ -r $f ] || continue
		while read -r sl l r st rest; do
			case "$l $st" in *"$p 0A") return 0 ;; esac
		done <$f
	done
	return 1
}

kmemleak_clear() {
	[ -w "$RDMARS_KMEMLEAK" ] && echo clear >"$RDMARS_KMEMLEAK"
}

# Scans for leaks and prints any report (the log judge fails on it).
kmemleak_check() {
	local f=$RDMARS_KMEMLEAK
	if [ ! -w "$f" ]; then
		t_skip "kmemleak scan" "kmemleak not available"
		return
	fi
	# A scan reports an object only if it was at least 5 s old when the scan began and its
	# contents (checksum) did not change since the previous scan, so a leak needs two scans:
	# the first takes the checksums, the second, begun 6 s after the suites ended or later,
	# reports it. The first scan's own time counts toward the 6 s (whole seconds of uptime:
	# 7 of them are more than 6 s).
	local t0 t1
	t0=$(cut -d. -f1 /proc/uptime)
	echo scan >$f
	t1=$(cut -d. -f1 /proc/uptime)
	[ $((t1 - t0)) -ge 7 ] || sleep $((7 - (t1 - t0)))
	echo scan >$f
	# debugfs files report size 0: read the report before testing it.
	cat $f >/tmp/kmemleak.report
	if [ -s /tmp/kmemleak.report ]; then
		cat /tmp/kmemleak.report
		t_fail "kmemleak: no unreferenced objects" "see report above"
	else
		t_ok "kmemleak: no unreferenced objects"
	fi
}

# t_import PREFIX COMMAND...: runs a test program that prints `R ok <desc>` /
# `R fail <desc>: <why>` lines (tests/userspace/) and records each as a
# case named "PREFIX: <desc>"; its other output is shown. The program's exit
# status is one more case.
t_import() {
	local p=$1 tag res rest rc=0 t0
	shift
	echo "+ $*"
	now_cs
	t0=$_now_cs
	"$@" >/tmp/import.out 2>&1 || rc=$?
	took $t0
	while read -r tag res rest; do
		case "$tag" in
		R)
			if [ "$res" = ok ]; then _record ok "$p: $rest" ""; else _record fail "$p: ${rest%%:*}" "${rest#*:}"; echo "FAIL: $p: $rest"; fi ;;
		*) echo "    $tag $res $rest" ;;
		esac
	done </tmp/import.out
	if [ $rc = 0 ]; then _record ok "$p: exit status 0" ""; else _record fail "$p: exit status 0" "exit $rc"; fi
}

# t_import_file PREFIX FILE RC: as t_import, for a program that ran in the
# background with its output in FILE and exit status RC.
t_import_file() {
	local p=$1 f=$2 rc=$3 tag res rest
	while read -r tag res rest; do
		case "$tag" in
		R)
			if [ "$res" = ok ]; then _record ok "$p: $rest" ""; else _record fail "$p: ${rest%%:*}" "${rest#*:}"; echo "FAIL: $p: $rest"; fi ;;
		*) echo "    $tag $res $rest" ;;
		esac
	done <"$f"
	if [ "$rc" = 0 ]; then _record ok "$p: exit status 0" ""; else _record fail "$p: exit status 0" "exit $rc"; fi
}

# suites_of MODE: "NAME=FUNCTION" of every `vm` line of suites.list whose
# modes include MODE, in file order.
suites_of() {
	awk -v m="$1" '{ sub(/#.*/, "") } $1 == "vm" && NF == 4 && index("," $4 ",", "," m ",") { print $2 "=" $3 }' "$RDMARS_SUITES"
}

# run_suites MODE: runs the suites of MODE (suites.list), each between
# suite_begin and suite_end, after clearing kmemleak. A suite whose
# function no script defines fails by name. Returns 1 if the list has no
# suite for MODE or a function was missing, else 0: failed test cases are
# the judge's business, the status says whether the harness itself worked.
run_suites() {
	# Prefixed names: the suite functions run inside this one and see (and
	# may assign) its locals.
	local _rs_mode=$1 _rs_list _rs_s _rs_fn _rs_status=0
	if [ ! -r "$RDMARS_SUITES" ]; then
		echo "rdma-rs: the suite list $RDMARS_SUITES is missing"
		return 1
	fi
	_rs_list=$(suites_of "$_rs_mode")
	if [ -z "$_rs_list" ]; then
		echo "rdma-rs: no suite of mode $_rs_mode in $RDMARS_SUITES"
		return 1
	fi
	kmemleak_clear
	for _rs_s in $_rs_list; do
		_rs_fn=${_rs_s#*=}
		suite_begin "${_rs_s%%=*}"
		case "$(type "$_rs_fn" 2>/dev/null)" in
		*function*) "$_rs_fn" ;;
		*)
			t_fail "suite function $_rs_fn is defined" "no tests/vm/*.sh defines it"
			_rs_status=1
			;;
		esac
		suite_end
	done
	return $_rs_status
}

# next_suite: the function of the suite of the mode that runs after the running one (empty
# after the last). It reads run_suites' locals.
next_suite() {
	local s found=
	for s in ${_rs_list:-}; do
		if [ -n "$found" ]; then
			echo "${s#*=}"
			return 0
		fi
		[ "$s" = "${_rs_s:-}" ] && found=1
	done
	return 0
}

# A fabric shared by consecutive suites, so that a mode loads the modules (and starts
# opensm) once for them. A KEY names what a suite leaves: the modules with their parameters
# and what runs on them (opensm). A suite that can continue on what the suite before it
# left names itself in FABRIC_TAKERS ("FUNCTION=KEY", appended by its script), begins with
# `fabric_take KEY CMD...` (CMD brings the fabric up unless the suite before it left KEY) and
# ends with `fabric_give KEY CMD...` (CMD takes it down unless the next suite of the mode
# takes KEY). Only the very next suite: any other one in between loads modules of its own.
FABRIC_TAKERS=
_fabric_kept=/tmp/.rdmars-fabric
fabric_take() {
	local k=$1 kept=
	shift
	[ -r $_fabric_kept ] && read -r kept <$_fabric_kept
	rm -f $_fabric_kept
	if [ "$kept" = "$k" ]; then
		echo "    fabric $k: left up by the suite before"
		return 0
	fi
	"$@"
}
fabric_give() {
	local k=$1 n
	shift
	n=$(next_suite)
	case " $FABRIC_TAKERS " in
	*" $n=$k "*)
		echo "$k" >$_fabric_kept
		echo "    fabric $k: left up for $n"
		return 0
		;;
	esac
	"$@"
}

# source_all: defines every suite function: sources each script of
# RDMARS_DIR but lib.sh, the make-check mode scripts and a developer's scratch scripts
# (tests/vm/scratch*.sh, untracked: `tools/vm.sh scratchX` boots one), with their
# standalone parts off.
source_all() {
	local _sa_f
	RDMARS_SOURCED=1
	for _sa_f in "$RDMARS_DIR"/*.sh; do
		case "${_sa_f##*/}" in lib.sh | check.sh | check2.sh | scratch*.sh) continue ;; esac
		. "$_sa_f"
	done
}

# run_mode MODE: every script's functions, then the suites of MODE. The
# mode scripts (tests/vm/MODE.sh) end with it.
run_mode() {
	source_all
	run_suites "$1"
}
