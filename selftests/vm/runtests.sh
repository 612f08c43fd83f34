#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Load wsem.ko, run every selftest and the harness's own checks, unload;
# TAP on stdout.  Runs as root, in the VM (from /init) or on a host that can
# load modules (make check-host).  Plain sh: busybox ash and bash alike.
#
# Environment: WSEM_KO (the module), SELFTESTS (directory of *_test and
# *_test.sh), TESTS (names to run; default all), TEST_TIMEOUT (seconds per
# test program; TEST_TIMEOUT_NAME, NAME the program's name up to its first
# dot, for that one: check.sh gives fleet_test.sh's whole scenario more),
# REAP_ALL=1 (in the VM: kill every process left after each
# test).
#
# Each test program runs between "# wsem-vm: begin NAME" and
# "# wsem-vm: end NAME exit=N time=S cpu=C" (N is "timeout" after
# TEST_TIMEOUT; C the CPU-seconds the guest's CPUs were busy meanwhile);
# summary.awk turns all of it into the final count.  On a kernel with
# kmemleak (make check-debug's) a leak found after the tests or after
# unloading is a failure too.

: "${WSEM_KO:?}" "${SELFTESTS:?}"
TEST_TIMEOUT=${TEST_TIMEOUT:-120}
TESTS=${TESTS:-}

BAD='WARNING:|BUG:|Oops|lockdep|KASAN|UBSAN|hung_task|blocked for more than'
BAD="$BAD|soft lockup|hard LOCKUP|rcu.*stall|general protection|Kernel panic"
BAD="$BAD|Call Trace|still has objects|Objects remaining"
KMEMLEAK=/sys/kernel/debug/kmemleak
CLK_TCK=$(getconf CLK_TCK 2>/dev/null || echo 100)

# names_left PROGRAM: after PROGRAM, the namespace's semaphore names if
# they are not what the program before it left (a comment, not a check:
# named semaphores persist until unlinked, so that a failing test's log
# shows who left one that a later test counts).
names=
names_left() {
	local now
	command -v wsem >/dev/null || return 0
	now=$(wsem ls -n -o name 2>/dev/null | tr '\n' ' ')
	[ "$now" != "$names" ] &&
		echo "# wsem-vm: names in the namespace after $1: ${now:-none}"
	names=$now
}

n=0
# tap STATUS NAME: one TAP line of the harness's own.
tap() {
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $n harness: $2"
	else
		echo "not ok $n harness: $2"
	fi
}

# The kernel log is marked before each step and read from the mark on, so
# that nothing is cleared (this may be a real machine's log).
mark=0
# busy_ticks: the clock ticks all CPUs here have been busy since boot
# (/proc/stat: all but idle and iowait), for a test's "cpu=" (a guest's
# CPU, close to its QEMU's on the host: a vCPU that runs is a busy thread).
busy_ticks() {
	read -r _ u n s _ _ i si st _ </proc/stat
	echo $((u + n + s + i + si + st))
}

dmesg_mark() {
	mark=$((mark + 1))
	echo "wsem-selftest: mark $mark" >/dev/kmsg
}

# dmesg_check WHEN: fail if the kernel log since the last mark shows a
# warning, a bug, an oops or a lockup.  The log is shown, each line that
# matched as "# dmesg report: " (summary.awk takes those as the reason),
# the others as "# dmesg: ".
dmesg_check() {
	dmesg | sed -n "/wsem-selftest: mark $mark\$/,\$p" >/tmp/wsem-dmesg.$$
	if grep -Eq "$BAD" /tmp/wsem-dmesg.$$; then
		sed -E "/$BAD/s/^/# dmesg report: /; t; s/^/# dmesg: /" \
			/tmp/wsem-dmesg.$$
		tap 1 "dmesg clean $1"
	else
		tap 0 "dmesg clean $1"
	fi
	rm -f /tmp/wsem-dmesg.$$
}

# kmemleak_check WHEN: on a kernel with kmemleak (make check-debug's), fail
# if a scan finds unreferenced objects; then forget them.  Scanning twice,
# a few seconds apart, lets objects in flight be referenced again, and
# kmemleak ignores objects younger than 5 s.
kmemleak_check() {
	[ -w "$KMEMLEAK" ] || return 0
	sleep 6
	echo scan >"$KMEMLEAK"
	sleep 6
	echo scan >"$KMEMLEAK"
	cat "$KMEMLEAK" >/tmp/wsem-kmemleak.$$
	if [ -s /tmp/wsem-kmemleak.$$ ]; then
		sed 's/^/# kmemleak: /' /tmp/wsem-kmemleak.$$
		tap 1 "no kmemleak leaks $1"
	else
		tap 0 "no kmemleak leaks $1"
	fi
	rm -f /tmp/wsem-kmemleak.$$
	echo clear >"$KMEMLEAK"
}

if [ -d /sys/module/wsem ]; then
	echo "# wsem is already loaded; unload it first"
	tap 1 "wsem not loaded before the tests"
	exit 1
fi
if [ -r /proc/lockdep_stats ]; then
	# A report during the boot turns lockdep off for good, and silently.
	grep -Eq '^ *debug_locks: +1$' /proc/lockdep_stats
	tap $? "lockdep is active"
fi
if [ -w "$KMEMLEAK" ]; then
	# What the boot left unreferenced is not ours.  Only our scans from
	# now on: the periodic one, in the middle of a fuzz run on two slow
	# vCPUs, held RCU long enough for a stall report.
	echo scan >"$KMEMLEAK"
	echo clear >"$KMEMLEAK"
	echo scan=off >"$KMEMLEAK"
fi
dmesg_mark
insmod "$WSEM_KO"
tap $? "insmod wsem.ko"
if [ ! -d /sys/module/wsem ]; then
	echo "# module not loaded, no tests run"
	exit 1
fi
# devtmpfs creates the node as the device registers; udev may retouch it.
i=0
while [ ! -c /dev/wsem ] && [ $i -lt 20 ]; do
	sleep 0.1
	i=$((i + 1))
done
[ -c /dev/wsem ] && [ "$(stat -c %a /dev/wsem)" = 666 ]
tap $? "/dev/wsem is a character device of mode 0666"

exec 3<>/dev/wsem
rmmod wsem 2>/dev/null
st=$?
exec 3>&-
[ $st -ne 0 ] && [ -d /sys/module/wsem ]
tap $? "rmmod refused while a handle is open"
dmesg_check "after loading"

if [ -z "$TESTS" ]; then
	for t in "$SELFTESTS"/*_test "$SELFTESTS"/*_test.sh; do
		[ -f "$t" ] && TESTS="$TESTS ${t##*/}"
	done
fi
for t in $TESTS; do
	dmesg_mark
	echo "# wsem-vm: begin $t"
	run=
	[ -x "$SELFTESTS/$t" ] || run='sh'
	tt=$TEST_TIMEOUT
	eval "tt=\${TEST_TIMEOUT_${t%%.*}:-\$tt}"
	start=$(date +%s)
	b0=$(busy_ticks)
	(cd /tmp && exec timeout -s KILL "$tt" $run "$SELFTESTS/$t" \
		</dev/null 2>&1)
	st=$?
	secs=$(($(date +%s) - start))
	cpu=$((($(busy_ticks) - b0) / CLK_TCK))
	[ $st -eq 137 ] && [ $secs -ge "$tt" ] && st=timeout
	echo "# wsem-vm: end $t exit=$st time=$secs cpu=$cpu"
	if [ -n "${REAP_ALL:-}" ]; then
		# Nothing a test left behind may hold handles in the next one.
		kill -KILL -1 2>/dev/null
		sleep 0.2
	fi
	dmesg_check "after $t"
	names_left "$t"
done
kmemleak_check "after the tests"

dmesg_mark
ok=1
for i in 1 2 3 4 5 6 7 8 9 10; do
	rmmod wsem 2>/tmp/wsem-rmmod.$$ && { ok=0; break; }
	sleep 1
done
[ $ok -ne 0 ] && sed 's/^/# /' /tmp/wsem-rmmod.$$
rm -f /tmp/wsem-rmmod.$$
tap $ok "rmmod succeeds after the tests"
dmesg_check "after unloading"
kmemleak_check "after unloading"
