#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The Go binding (bindings/go) in the test VM, in TAP: its test program
# wsem-go.test (x/sync's semaphore scenarios on a Weighted, one FIFO queue
# shared with the wsem command's blocking waiters, raw asynchronous
# waiters and Go waiters of other processes, cancellation races, Close,
# shrink, the handle pool, EnablePool's fast path) and, through it, the
# example program wsem-go-pool run as three processes sharing one limit
# and pool_replay (selftests/pool_replay.c: EnablePool under pool_test's
# replay, TestPoolReplayed).
# Then x/sync's scenarios again, each Weighted with EnablePool(2)
# (-wsem.pool=2), as TAP lines named "pool:TestName".  One TAP line per
# top-level Go test; everything else it prints becomes a diagnostic.
#
# Environment: WSEM_GO_TEST_ARGS, more flags for wsem-go.test (such as
# "-test.run=TestFIFOMixed"); on a lockdep kernel it runs -test.short.

if [ ! -c /dev/wsem ]; then
	echo "1..0 # SKIP no /dev/wsem: the wsem module is not loaded"
	exit 4
fi
bin=$(command -v wsem-go.test) || {
	echo "1..0 # SKIP no wsem-go.test: the Go binding was not built (golang-go)"
	exit 4
}
# Below the runner's limit, so that a hang prints the goroutines.
limit=$((${TEST_TIMEOUT:-120} - 10))
# A lockdep (debug) kernel under TCG is about 10 times slower: hammer less.
short=
[ -r /proc/lockdep_stats ] && short=-test.short
out=/tmp/go_test.$$
xsync='^(TestWeighted|TestWeightedPanic|TestWeightedPanicKeepsHeld|TestWeightedTryAcquire|TestWeightedAcquire|TestWeightedDoesntBlockIfTooBig|TestLargeAcquireDoesntStarve|TestAllocCancelDoesntStarve|TestWeightedAcquireCanceled|TestWorkerPool)$'
# The first run gets three quarters of the time, the second what is left,
# so that a hang in either still prints its goroutines and the TAP.
t0=$(date +%s)
# shellcheck disable=SC2086 # flags
(cd /tmp && "$bin" -test.v -test.timeout "$((limit * 3 / 4))s" $short \
	${WSEM_GO_TEST_ARGS:-}) >"$out.1" 2>&1
st1=$?
left=$((limit - ($(date +%s) - t0)))
[ "$left" -lt 5 ] && left=5
# shellcheck disable=SC2086 # flags
(cd /tmp && "$bin" -test.v -test.timeout "${left}s" $short \
	-test.run "$xsync" -wsem.pool=2) >"$out.2" 2>&1
st2=$?
st=$st1
[ "$st" -eq 0 ] && st=$st2
echo "TAP version 13"
awk -v st1="$st1" -v st2="$st2" '
FNR == 1 {
	# The second file is the run with the pool: its names say so.
	if (NR != 1) {
		if (st1 != 0 && !failed)
			print "not ok " ++n " - wsem-go.test exited " st1
		prefix = "pool:"
		failed = 0
		skipwhy = ""
	}
}
/^--- (PASS|FAIL|SKIP): / {
	n++
	name = prefix $3
	if ($2 == "PASS:")
		print "ok " n " - " name
	else if ($2 == "SKIP:")
		print "ok " n " - " name " # SKIP " skipwhy
	else {
		print "not ok " n " - " name
		failed++
	}
	skipwhy = ""
	next
}
/^=== (RUN|PAUSE|CONT)/ { next }
{
	print "# " $0
	if ($0 ~ /^    [a-z_]+\.go:[0-9]+: /)
		skipwhy = $0
	sub(/^ +[a-z_]+\.go:[0-9]+: /, "", skipwhy)
}
END {
	# A program that died (timeout, panic) without a failing test: one more.
	if (st2 != 0 && !failed)
		print "not ok " ++n " - wsem-go.test -wsem.pool=2 exited " st2
	print "1.." n
}' "$out.1" "$out.2"
rm -f "$out.1" "$out.2"
exit $st
