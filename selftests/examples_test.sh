#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The programs of examples/ as a user runs them: an epoll loop and its
# io_uring twin gate jobs on several semaphores, queued in strict FIFO
# order among blocking "wsem run" waiters, and never hold more than the
# capacity between them.  Runs as root in the test VM; TAP on stdout.

if [ ! -c /dev/wsem ]; then
	echo "1..0 # SKIP no /dev/wsem: the wsem module is not loaded"
	exit 4
fi
T=$(mktemp -d /tmp/examples_test.XXXXXX) || exit 1
N=ex$$
n=0
fails=0

cleanup() {
	for p in $(cat "$T/pids" 2>/dev/null); do
		kill -KILL "$p" 2>/dev/null
	done
	wait 2>/dev/null
	for s in f u a b c; do
		wsem rm "$N-$s" 2>/dev/null
	done
	rm -rf "$T"
}
trap cleanup EXIT

# result DESCRIPTION STATUS [SKIP-REASON]
result() {
	n=$((n + 1))
	if [ -n "${3:-}" ]; then
		echo "ok $n $1 # SKIP $3"
	elif [ "$2" -eq 0 ]; then
		echo "ok $n $1"
	else
		echo "not ok $n $1"
		fails=$((fails + 1))
	fi
}

field() {
	wsem stat "$1" --json | sed -n "s/.*\"$2\":\([0-9]*\).*/\1/p"
}

# until_field NAME FIELD VALUE: wait (20 s at most) for the state.
until_field() {
	i=0
	while [ "$(field "$1" "$2")" != "$3" ]; do
		i=$((i + 1))
		[ $i -lt 200 ] || { echo "# $1: $2 never became $3"; return 1; }
		sleep 0.1
	done
}

bg() {
	"$@" &
	echo $! >>"$T/pids"
}

# fifo PROG S: PROG's request queued between two blocking runs is served
# between them, and its weight goes back when its job ends.
fifo() {
	s=$N-$2
	log=$T/$2.log
	wsem create "$s" 1 || return 1
	bg wsem run "$s" -- sleep 60
	holder=$!
	until_field "$s" used 1 || return 1
	bg wsem run "$s" -- sh -c "echo blocking first >>$log"
	until_field "$s" waiters 1 || return 1
	"$1" -t 200 "$s:1" >>"$log" 2>"$T/$2.err" &
	prog=$!
	echo $prog >>"$T/pids"
	until_field "$s" waiters 2 || { cat "$T/$2.err"; return 1; }
	bg wsem run "$s" -- sh -c "echo blocking last >>$log"
	until_field "$s" waiters 3 || return 1
	kill -KILL "$holder"
	wait "$prog" || { echo "# $1 exited $?"; cat "$T/$2.err"; return 1; }
	until_field "$s" used 0 || return 1
	grep -v queued "$log" >"$T/$2.got"
	printf '%s\n' "blocking first" "$s granted 1" "$s releasing 1" \
		"blocking last" >"$T/$2.want"
	if ! cmp -s "$T/$2.want" "$T/$2.got"; then
		echo "# order:"
		sed 's/^/#   /' "$log"
		return 1
	fi
}

# never_over PROG: two PROG processes, each with jobs on a of capacity 1
# and b of capacity 2, never hold more than the capacity together.
never_over() {
	log=$T/over.$1.log
	wsem create "$N-a" 1 && wsem create "$N-b" 2 || return 1
	"$1" -r 4 -t 20 "$N-a:1" "$N-b:2" >>"$log" 2>&1 &
	p1=$!
	"$1" -r 4 -t 20 "$N-a:1" "$N-b:1" >>"$log" 2>&1 &
	p2=$!
	echo "$p1 $p2" >>"$T/pids"
	wait "$p1" || return 1
	wait "$p2" || return 1
	[ "$(grep -c granted "$log")" -eq 16 ] || { cat "$log"; return 1; }
	awk -v a="$N-a" -v b="$N-b" '
		$2 == "granted" { u[$1] += $3 }
		$2 == "releasing" { u[$1] -= $3 }
		u[a] > 1 || u[b] > 2 { print "# over: " $0; bad = 1 }
		END { exit bad }' "$log" || return 1
	until_field "$N-a" used 0 && until_field "$N-b" used 0
}

echo "1..4"
fifo epoll_jobs f
result "epoll_jobs: its request is served in FIFO order among blocking runs" $?
never_over epoll_jobs
result "epoll_jobs: two loops on two semaphores never exceed a capacity" $?

if ! command -v uring_jobs >/dev/null; then
	result "uring_jobs: FIFO order" 0 "not built (no liburing-dev)"
	result "uring_jobs: never over" 0 "not built (no liburing-dev)"
elif wsem create "$N-c" 1 && uring_jobs -t 0 "$N-c:1" 2>&1 |
	grep -q "Function not implemented\|Operation not permitted"; then
	result "uring_jobs: FIFO order" 0 "no io_uring in this kernel"
	result "uring_jobs: never over" 0 "no io_uring in this kernel"
else
	fifo uring_jobs u
	result "uring_jobs: its POLL_ADD completes in FIFO order" $?
	wsem rm "$N-a"
	wsem rm "$N-b"
	never_over uring_jobs
	result "uring_jobs: two rings on two semaphores never exceed a capacity" $?
fi
[ $fails -eq 0 ]
