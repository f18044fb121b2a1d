# KTAP output for the VM's user-space tests (sourced by the mode scripts).
# Results are collected while a suite runs and printed in one block at its
# end, so kernel KTAP printed meanwhile (a module's KUnit suites run at
# insmod) never interleaves with ours.

RDMARS_MODS=/lib/modules/rdma-rs

# Debian's static busybox prefers its own applets over $PATH: name the real
# kmod and iproute2 tools explicitly (busybox's modprobe and ip lack what
# the tests use: modprobe -r -a, ip link add ... type veth).
insmod() { /usr/sbin/insmod "$@"; }
rmmod() { /usr/sbin/rmmod "$@"; }
lsmod() { /usr/sbin/lsmod "$@"; }
modprobe() { /usr/sbin/modprobe "$@"; }
ip() { /usr/sbin/ip "$@"; }
_suite=
_results=/tmp/ktap-results

suite_begin() {
	_suite=$1
	: >"$_results"
	echo "--- suite $1"
}

_record() { echo "$1|$2|$3" >>"$_results"; }

# t_check DESCRIPTION COMMAND...: passes if COMMAND exits 0. Output shown.
t_check() {
	local d=$1
	shift
	echo "+ $*"
	if "$@"; then _record ok "$d" ""; else _record fail "$d" "exit $?"; fi
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

kmemleak_clear() {
	[ -w /sys/kernel/debug/kmemleak ] && echo clear >/sys/kernel/debug/kmemleak
}

# Scans for leaks and prints any report (the log judge fails on it).
kmemleak_check() {
	local f=/sys/kernel/debug/kmemleak
	if [ ! -w $f ]; then
		t_skip "kmemleak scan" "kmemleak not available"
		return
	fi
	# Objects younger than 5 s are never reported: let them age, scan twice.
	sleep 6
	echo scan >$f
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
	local p=$1 tag res rest rc=0
	shift
	echo "+ $*"
	"$@" >/tmp/import.out 2>&1 || rc=$?
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
