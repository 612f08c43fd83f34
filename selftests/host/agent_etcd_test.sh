#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# wsem-agent's store against an etcd of Debian's running in the test's own
# process (go.etcd.io/etcd/integration, golang-etcd-server-dev): the
# take-back of a policy deadline share, a claim of another machine
# refused and one of this machine taken over, declare-dead, the keys a
# look skips, a start that checks before it changes etcd and a stop that
# closes the lending handle before it gives back, set-capacity and the
# capacity in etcd, a black-holed member left by the keepalive; the view
# the agent keeps from its watch: an idle agent reads nothing, another
# host's change of demand costs a constant number of requests, the view
# equals a read after random changes and after a compaction, and a stale
# view's growth fails and waits, never over the capacity; a look whose
# watch hangs reads the prefix once, and when that watch comes late, its
# events the read took in are skipped, not read again.  No guest, no
# network: make -C agent check-etcd.  TAP.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# shellcheck source=selftests/host/tap.sh
. "$(dirname "$0")/tap.sh"

echo "1..19"
if [ ! -d /usr/share/gocode/src/go.etcd.io/etcd/integration ]; then
	for i in $(seq 19); do
		echo "ok $i # SKIP no go.etcd.io/etcd/integration (golang-etcd-server-dev)"
	done
	exit 0
fi
make -s -C "$ROOT/agent" check-etcd >"$T/go.log" 2>&1
st=$?
# said NAME: what go test -v logged of test NAME (t.Log, t.Fatal: printed
# as they come, between its "=== RUN" and its "--- FAIL"), and that line
said() {
	awk -v t="$1" '$0 == "=== RUN   " t { on = 1; next }
		on && /^ +[A-Za-z0-9_]+\.go:[0-9]+: / { print }
		on && index($0, "--- FAIL: " t " ") == 1 { print; exit }' \
		"$T/go.log"
}
# passed NAME: go test -v said "--- PASS: NAME"; else what it said of it
passed() {
	grep -q -- "^--- PASS: $1 " "$T/go.log" && return 0
	said "$1"
	return 1
}
# ran: go test passed; else what it said of the first test that failed,
# or the tail of its output (a build that failed)
ran() {
	local first
	[ $st -eq 0 ] && return 0
	first=$(sed -n 's/^--- FAIL: \([^ ]*\) .*/\1/p' "$T/go.log" | head -n 1)
	if [ -n "$first" ]; then
		said "$first"
	else
		tail -n 3 "$T/go.log"
	fi
	return 1
}
check "the agent's store builds and runs against an in-process etcd" ran
check "a share is taken back only while its host's claim is gone, the share the one seen" \
	passed TestTakeBack
check "another machine's claim is refused and unchanged, this machine's is taken over" \
	passed TestSessionClaims
check "declare-dead refuses a policy deadline host, gives a finish host's share back after the wait, refused if its claim comes and goes" \
	passed TestDeclareDead
check "a look skips a bad demand and a key of no known kind, not a bad share" \
	passed TestReadSkipsBadKeys
check "a second agent that finds another lender or another machine's claim changes nothing in etcd" \
	passed TestStartChecksFirst
check "a stopping agent closes its lending handle before it gives the share back and revokes its lease" \
	passed TestLeaveClosesFirst
check "a growth computed before the capacity or capacity/next changed fails" \
	passed TestGrowthSeesCapacity
check "set-capacity grows at once, shrinks the shares first, never a share above the capacity at any revision" \
	passed TestSetCapacity
check "a capacity below 1 in etcd fails the look, such a capacity/next is skipped" \
	passed TestReadCapacity
check "a watch on a black-holed member moves to another one within the keepalive's time and timeout" \
	passed TestKeepaliveLeavesBlackhole
check "two agents under a set-capacity shrink: loan first, share down to what is held, capacity written once they fit" \
	passed TestAgentsFollowSetCapacity
check "an idle agent sends etcd no request over 5 hold/2 periods (100 other hosts), the lease renewals only" \
	passed TestIdleReadsNothing
check "a change of another host's demand costs the agent no read of the prefix and at most 2 requests" \
	passed TestOtherDemandCostsConstant
check "the view kept from the watch equals a read at its revision after random changes, and after a compaction (one read again)" \
	passed TestViewFollowsWatch
check "a stale view's growth fails, waits for the view (no read) and takes what is left: never over the capacity" \
	passed TestStaleViewCannotOvercommit
check "a look whose watch brings nothing reads the prefix once after a second, and goes on" \
	passed TestLookReadsWhenWatchHangs
check "a watch late past a look's read: what the read took in is skipped, no second read of the prefix" \
	passed TestLateWatchAfterLookRead
check "an idle agent's watch of its lease's end sleeps until a renewal or that end (a CLOCK_BOOTTIME timerfd): at most one wake in 3 s with ttl= 30" \
	passed TestIdleLeaseWatchSleeps
[ $st -eq 0 ] || {
	grep -B 3 -A 12 -- '^--- FAIL' "$T/go.log"
	tail -n 30 "$T/go.log"
} | sed 's/^/# /'
exit $((failed > 0))
