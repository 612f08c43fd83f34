#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# make demo's guest half, selftests/vm/demo.sh (copied next to this file by
# mkinitramfs.sh), run as make demo runs it, in an IPC namespace of its
# own, and held to what the README says it shows: it ends "demo ok"; its
# jobs start in the order they arrived (strict FIFO: the weight-3 job at
# the head is not passed by a weight-1 job behind it that would fit);
# the job SIGKILLed while it held its lease gives its weight back; the
# kernel's count never passes the capacity; nothing is held at the end.
# What make demo does on the host (deps.sh --demo, the build, run.sh) is
# not run here.  Runs as root in the test VM; TAP on stdout.

if [ ! -c /dev/wsem ]; then
	echo "1..0 # SKIP no /dev/wsem: the wsem module is not loaded"
	exit 4
fi
DIR=$(dirname "$0")
[ -f "$DIR/demo.sh" ] || { echo "Bail out! no $DIR/demo.sh"; exit 1; }
T=$(mktemp -d /tmp/demo_test.XXXXXX) || exit 1
trap 'rm -rf "$T"' EXIT
n=0
fails=0

# check DESCRIPTION COMMAND...
check() {
	d=$1
	shift
	n=$((n + 1))
	if "$@"; then
		echo "ok $n $d"
	else
		echo "not ok $n $d"
		fails=$((fails + 1))
	fi
}

rm -f /tmp/demo.done /tmp/job?.pid /tmp/job?.err
unshare -i sh "$DIR/demo.sh" >"$T/out" 2>&1
status=$?
sed 's/^/# /' "$T/out"

said_ok() { [ "$status" -eq 0 ] && grep -qx 'demo ok' "$T/out"; }
# No job starts before one that arrived before it (job numbers are the
# arrival order), but for jobs granted in one moment, whose shells may log
# their start in either order: 0.5 s apart at most.  At least 7 start (one
# may be killed before it does).
in_order() {
	sed -n 's/^ *\([0-9.]*\)s  job \([0-9]\) starts.*/\2 \1/p' "$T/out" |
		awk '{ t[$1] = $2; n++ }
		END {
			for (i in t)
				for (j in t)
					if (i + 0 < j + 0 && t[j] + 0.5 < t[i] + 0) {
						print "# job " j " started before job " i
						bad = 1
					}
			exit bad || n < 7
		}'
}

check "demo.sh exits 0 and says \"demo ok\"" said_ok
check "the jobs start in the order they arrived (strict FIFO)" in_order
check "a job SIGKILLed while it held its lease gives its weight back" \
	grep -q 'gets SIGKILL .*lease returned' "$T/out"
check "the kernel's count never passes the capacity of 4" \
	grep -q '^peak weight in use: [0-4] of 4 as the jobs saw it, [0-4] as the kernel did$' "$T/out"
check "nothing is held at the end" \
	grep -qx 'used at the end: 0 (expected 0)' "$T/out"
check "no bare \"Killed\" line from the shell of the job it killed" \
	sh -c '! grep -qx Killed "$1"' sh "$T/out"
echo "1..$n"
[ "$fails" -eq 0 ]
