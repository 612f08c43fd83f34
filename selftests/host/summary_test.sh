#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# selftests/vm/summary.awk fed fabricated TAP and VM console logs, in TAP:
# a program that planned more results than it reported (it died half-way
# yet exited 0), or reported more than it planned, must count as failed;
# complete ones, skips and nested results must not; with expected=FILE, a
# skip that no line of FILE matches fails, one that a line matches does
# not, and every skip is named; a failure is followed by why it failed.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
AWK=$ROOT/selftests/vm/summary.awk
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
n=0
failed=0

# vmlog FILE: a console log around the program output on stdin.
vmlog() {
	{
		echo "# wsem-vm: kernel 6.12.0-test"
		echo "ok 1 harness: insmod wsem.ko"
		cat
		echo "# wsem-vm: done"
	} >"$1"
}

# case NAME WANT_STATUS WANT_LAST_LINE FILE [EXPECTED]: run summary.awk on
# FILE (with expected=EXPECTED).
case_() {
	local name=$1 want_st=$2 want=$3 st=0
	n=$((n + 1))
	awk -v expected="${5:-}" -f "$AWK" label=vm "$4" >"$T/out" 2>&1 ||
		st=$?
	if [ "$st" -eq "$want_st" ] && [ "$(tail -n 1 "$T/out")" = "$want" ]
	then
		echo "ok $n - $name"
	else
		echo "not ok $n - $name"
		echo "# exit $st (want $want_st), want last line '$want':"
		sed 's/^/#   /' "$T/out"
		failed=$((failed + 1))
	fi
}

echo "1..26"

vmlog "$T/full" <<'EOF2'
# wsem-vm: begin a_test
TAP version 13
1..3
ok 1 a.one
ok 2 a.two
ok 3 a.three
# wsem-vm: end a_test exit=0 time=1
EOF2
case_ "a complete program passes" 0 "4 passed, 0 failed" "$T/full"

vmlog "$T/short" <<'EOF2'
# wsem-vm: begin a_test
TAP version 13
1..3
ok 1 a.one
# wsem-vm: end a_test exit=0 time=1
EOF2
case_ "a program that reported 1 of 3 planned results fails" 1 \
	"2 passed, 1 failed" "$T/short"
n=$((n + 1))
if grep -qx 'FAILED: vm: a_test (TAP plan: planned 3 results, reported 1)' \
	"$T/out"; then
	echo "ok $n - the failure names the program and the plan"
else
	echo "not ok $n - the failure names the program and the plan"
	failed=$((failed + 1))
fi

vmlog "$T/extra" <<'EOF2'
# wsem-vm: begin a_test
1..1
ok 1 a.one
ok 2 a.two
# wsem-vm: end a_test exit=0 time=1
EOF2
case_ "more results than planned fails" 1 "3 passed, 1 failed" "$T/extra"

vmlog "$T/trailing" <<'EOF2'
# wsem-vm: begin b_test.sh
ok 1 - b one
ok 2 - b two # SKIP not here
1..2
# wsem-vm: end b_test.sh exit=0 time=1
EOF2
case_ "a plan at the end counts too; skips are results" 0 \
	"2 passed, 0 failed" "$T/trailing"

vmlog "$T/skipall" <<'EOF2'
# wsem-vm: begin c_test
1..0 # SKIP no /dev/wsem
# wsem-vm: end c_test exit=4 time=0
EOF2
case_ "a plan of 1..0 with a skip reason and exit 4 is a skip" 0 "1 passed, 0 failed" \
	"$T/skipall"

vmlog "$T/nested" <<'EOF2'
# wsem-vm: begin d_test
1..1
# 1..2
# ok 1 d.inner.one
# ok 2 d.inner.two
ok 1 d.outer
# wsem-vm: end d_test exit=0 time=0
EOF2
case_ "nested results do not count against the top-level plan" 0 \
	"4 passed, 0 failed" "$T/nested"

printf '1..3\nok 1 x\nok 2 y\n' >"$T/plain"
case_ "a plain TAP file short of its plan fails" 1 "2 passed, 1 failed" \
	"$T/plain"

printf 'ok 1 x\nok 2 y\n' >"$T/noplan"
case_ "a plain TAP file without a plan is counted as before" 0 \
	"2 passed, 0 failed" "$T/noplan"
# want_line WHAT LINE: summary.awk's last output has LINE (which may hold a
# "# SKIP" that must not reach this test's own TAP line: WHAT names it).
want_line() {
	n=$((n + 1))
	if grep -qxF "$2" "$T/out"; then
		echo "ok $n - it says $1"
	else
		echo "not ok $n - it says $1"
		sed 's/^/#   /' "$T/out"
		failed=$((failed + 1))
	fi
}

printf '# the skips this run expects\n^vm: b_test\\.sh: b two # SKIP not here$\n' \
	>"$T/expected"
case_ "an expected skip passes" 0 "2 passed, 0 failed" "$T/trailing" \
	"$T/expected"
want_line "which case it skipped, and why" \
	"SKIPPED: vm: b_test.sh: b two # SKIP not here"
case_ "a skip that no line of expected= matches fails" 1 \
	"1 passed, 1 failed" "$T/skipall" "$T/expected"
want_line "which skip was not expected" \
	"FAILED: a skip not in $T/expected: vm: c_test"

# why: each failure's reason under it, from a kselftest case's Expected
# line, from the harness's dmesg report, from a host test's comments after
# its "not ok"; a passing case's comments are nobody's reason.
vmlog "$T/why" <<'EOF2'
# wsem-vm: begin e_test
1..2
#  RUN           e.fine ...
# e_test.c:9:fine:no reason at all
ok 1 e.fine
#  RUN           e.torn ...
# e_test.c:40:torn:reads begin
# e_test.c:50:torn:Expected 1000 (1000) < w.rounds (523)
# e_test.c:51:torn:the writer was slow
# torn: Test failed at step #3
not ok 2 e.torn
# wsem-vm: end e_test exit=1 time=2
# dmesg: [   12.5] wsem-selftest: mark 3
# dmesg: [   13.0] wsem: loaded
# dmesg report: [   13.1] rcu: INFO: rcu_preempt self-detected stall on CPU
not ok 9 harness: dmesg clean after e_test
# wsem-vm: begin f_test.sh
1..1
not ok 1 - the agent runs
#      x_test.go:574: not so after 15 s
#  --- FAIL: TestX (15.01s)
# wsem-vm: end f_test.sh exit=1 time=20
EOF2
case_ "the why: three failures" 1 "2 passed, 3 failed" "$T/why"
want_line "a kselftest case's Expected line and the lines after it" \
	"  why: e_test.c:50:torn:Expected 1000 (1000) < w.rounds (523)"
want_line "the kernel's report behind a dmesg failure" \
	"  why: dmesg report: [   13.1] rcu: INFO: rcu_preempt self-detected stall on CPU"
want_line "a host test's comment after its not ok" \
	"  why: x_test.go:574: not so after 15 s"
n=$((n + 1))
if grep -q "no reason at all\|reads begin\|mark 3\|wsem: loaded" "$T/out"; then
	echo "not ok $n - the why holds no passing case's or mark's lines"
	sed 's/^/#   /' "$T/out"
	failed=$((failed + 1))
else
	echo "ok $n - the why holds no passing case's or mark's lines"
fi
vmlog "$T/twice" <<'EOF2'
# wsem-vm: begin g_test
1..3
ok 1 # SKIP no failslab
ok 2 # SKIP no failslab
ok 3 g.c
# wsem-vm: end g_test exit=0 time=1
EOF2
case_ "two skips for one reason" 0 "2 passed, 0 failed" "$T/twice"
want_line "a skip seen twice once, with its count" \
	"SKIPPED: vm: g_test: # SKIP no failslab (x2)"
# lint's way, and the host tests': a failing check's output after its
# "not ok", two failures in a row each with its own
printf '%s\n' 'ok 1 lint: build' 'not ok 2 lint: checkpatch' \
	'#   CHECK: line length of 110 exceeds 100 columns' \
	'#   #804: FILE: module/wsem.h:804:' 'not ok 3 lint: kernel-doc' \
	'#   wsem.h:9: warning: no description' 'ok 4 lint: sparse' >"$T/lint"
case_ "two lint failures in a row" 1 "2 passed, 2 failed" "$T/lint"
want_line "what the checker printed after the not ok" \
	"  why: #804: FILE: module/wsem.h:804:"
n=$((n + 1))
if awk '/^FAILED: lint: checkpatch/ { c = 1; next } /^FAILED/ { c = 0 }
	c && /no description/ { bad = 1 } END { exit !bad }' "$T/out"; then
	echo "not ok $n - the next failure's output is not the first one's reason"
	sed 's/^/#   /' "$T/out"
	failed=$((failed + 1))
else
	echo "ok $n - the next failure's output is not the first one's reason"
fi

# a kselftest case killed by a signal, then one with an Expected line
vmlog "$T/crash" <<'EOF2'
# wsem-vm: begin h_test
TAP version 13
1..2
#  RUN           h.a ...
# a: Test terminated unexpectedly by signal 11
#          FAIL  h.a
not ok 1 h.a
#  RUN           h.b ...
# h_test.c:7:b:Expected 1 (1) == x (2)
#          FAIL  h.b
not ok 2 h.b
# wsem-vm: end h_test exit=1 time=1
EOF2
case_ "a crashed case, then a failed one" 1 "1 passed, 2 failed" "$T/crash"
want_line "how the crashed case ended" \
	"  why: a: Test terminated unexpectedly by signal 11"
n=$((n + 1))
if awk '/^FAILED: vm: h_test: h.a/ { c = 1; next } /^FAILED/ { c = 0 }
	c && /Expected|RUN/ { bad = 1 } END { exit !bad }' "$T/out"; then
	echo "not ok $n - the crashed case's reason is not the next case's"
	sed 's/^/#   /' "$T/out"
	failed=$((failed + 1))
else
	echo "ok $n - the crashed case's reason is not the next case's"
fi
[ $failed -eq 0 ]
