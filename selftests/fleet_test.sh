#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# A cluster limit on etcd (wsem-agent), in one guest: an etcd member on the
# guest's loopback and three simulated hosts, each an IPC namespace of its
# own (its own semaphore "seats", its agent, its jobs: "wsem run"), its
# wsemfs mounted at $T/hN where fleet_watch reads them all.  TAP.
#
# With WSEM_FLEET_FULL=1 (the 6.12 lane) the whole scenario: steady jobs on
# every host while fleet_watch fails on any instant the hosts hold more
# than the cluster's capacity together; demand moving to one host; an
# agent SIGKILLed while its host holds weight (finish policy: its share
# stays in etcd until the holders are gone, a new agent takes it up);
# declare-dead; at the end every share back in etcd and nothing held.
# Without it, a smoke test: the agent starts, lends, gives back, stops.

. "$(dirname "$0")/util.sh"

if [ ! -c /dev/wsem ]; then
	echo "1..0 # SKIP no /dev/wsem: the wsem module is not loaded"
	exit 4
fi
for b in etcd etcdctl wsem-agent fleet_watch; do
	command -v $b >/dev/null || {
		echo "1..0 # SKIP no $b in the guest (golang-etcd-server-dev, etcd-server)"
		exit 4
	}
done

T=/tmp/fleet.$$
N=seats
CAP=6
EP=http://127.0.0.1:2379
mkdir -p "$T"
export ETCDCTL_API=3

ip link set lo up
etcd --name m1 --data-dir "$T/etcd" --listen-client-urls $EP \
	--advertise-client-urls $EP --listen-peer-urls http://127.0.0.1:2380 \
	--initial-advertise-peer-urls http://127.0.0.1:2380 \
	--initial-cluster m1=http://127.0.0.1:2380 >"$T/etcd.log" 2>&1 &
etcd_pid=$!

# in_host H CMD...: CMD in host H's IPC namespace
in_host() {
	h=$1
	shift
	eval "nsenter -t \$anchor_$h --ipc -- \"\$@\""
}

# used H, cap_of H: host H's semaphore's used weight and capacity in force
stat_field() {
	wsem stat "$T/h$1/$N" --json | tr ',{}' '\n\n\n' |
		sed -n "s/^ *\"$2\": *//p"
}

# share H: host H's share in etcd (0: none)
share() {
	s=$(etcdctl --endpoints $EP get --print-value-only "/wsem/$N/share/h$1")
	echo "${s:-0}"
}

# share_is H V, field_is H FIELD V: predicates for until_true and check
share_is() {
	[ "$(share "$1")" = "$2" ]
}
field_is() {
	[ "$(stat_field "$1" "$2")" = "$3" ]
}

# loans_ready: every host's semaphore is there, a loans one of ceiling CAP
loans_ready() {
	for h in 1 2 3; do
		[ -e "$T/h$h/$N" ] && field_is $h ceiling $CAP || return 1
	done
}

# other_ipc_ns PID: PID is in another IPC namespace than this shell
other_ipc_ns() {
	[ "$(readlink "/proc/$1/ns/ipc")" != "$(readlink /proc/self/ns/ipc)" ]
}

# until_true SECONDS CMD...: CMD succeeds within SECONDS (tenths polled)
until_true() {
	end=$(($(date +%s) + $1))
	shift
	while ! "$@" 2>/dev/null; do
		[ "$(date +%s)" -le "$end" ] || return 1
		sleep 0.1
	done
}

# start_agent H [DELAY_MS]: host H's agent, its pid in agent_H (nsenter
# execs it); with DELAY_MS, the agent waits that long between reading etcd
# and growing its share there (WSEM_AGENT_TEST_DELAY_MS)
start_agent() {
	eval "a=\$anchor_$1"
	WSEM_AGENT_TEST_DELAY_MS=${2:-0} nsenter -t "$a" --ipc -- \
		wsem-agent -c "$T/h$1.conf" >>"$T/agent$1.log" 2>&1 &
	eval "agent_$1=\$!"
}

# jobs H WEIGHT SECONDS: a loop of jobs of WEIGHT on host H, each holding
# for SECONDS, until $T/stop-H exists
jobs_loop() {
	while [ ! -e "$T/stop-$1" ]; do
		if in_host "$1" wsem run $N -w "$2" --timeout 30 -- sleep "$3"; then
			echo >>"$T/done-$1-$2"
		else
			echo "job on h$1 failed: $?" >>"$T/jobs.err"
			sleep 0.5
		fi
	done
}

cleanup() {
	touch "$T/job-end"
	for h in 1 2 3; do
		touch "$T/stop-$h"
		eval "kill \${agent_$h:-} \${anchor_$h:-} 2>/dev/null"
	done
	# shellcheck disable=SC2086 # pids
	kill ${loops:-} ${agent_x:-} 2>/dev/null
	kill $etcd_pid 2>/dev/null
	wait 2>/dev/null
	# the mounts hold their namespaces, and the module
	for h in 1 2 3; do
		umount "$T/h$h" 2>/dev/null
	done
}
trap cleanup EXIT

t0=$(date +%s)
check "etcd answers" until_true 120 etcdctl --endpoints $EP put /probe 1
echo "# etcd: $(($(date +%s) - t0)) s to answer"
[ "$fails" -eq 0 ] || tail -n 40 "$T/etcd.log" | sed 's/^/# etcd: /'

for h in 1 2 3; do
	unshare --ipc sleep 100000 &
	eval "anchor_$h=\$!"
	mkdir -p "$T/h$h"
	until_true 5 other_ipc_ns $!
	nsenter -t $! --ipc -- mount -t wsem wsem "$T/h$h"
	echo "$N capacity=$CAP cluster=etcd endpoints=$EP host=h$h hold=300 ttl=5" \
		>"$T/h$h.conf"
	start_agent $h
done
check "three agents start; each host's $N takes loans (own capacity 0, ceiling $CAP)" \
	until_true 20 loans_ready
check "nothing lent while nothing is asked" field_is 1 capacity 0

# A job on h1: its agent takes a share from etcd and lends it.
# (it holds until status has looked: two Go starts take seconds on the
# debug kernel)
in_host 1 wsem run $N -w 2 --timeout 60 -- \
	sh -c "until [ -e '$T/job-end' ]; do sleep 0.1; done" &
job=$!
check "a job of 2 on h1 runs once the agent took a share of 2 from etcd" \
	until_true 10 share_is 1 2
in_host 1 wsem-agent -c "$T/h1.conf" status $N >"$T/status" 2>&1
in_host 1 wsem-agent -c "$T/h1.conf" status $N --json >"$T/status.json" 2>&1
grep -Eq '^h1 \* +2 +2 +2 +[-0-9]+ alive$' "$T/status" &&
	grep -Eq '^h2 +0 +0 +0 +- alive$' "$T/status" &&
	grep -q '"host":"h1","share":2,"need":2,"floor":2,' "$T/status.json" &&
	grep -q "\"capacity\":$CAP,\"free\":$((CAP - 2))," "$T/status.json" &&
	grep -q '"local":{"capacity":2,"used":2,"waiters":0}' "$T/status.json"
result "wsem-agent status: h1's share, need and floor, its agent alive, h2's, the free capacity, h1's semaphore" \
	$? "$T/status" "$T/status.json"
touch "$T/job-end"
wait $job
check "the job's wsem run exits 0" test $? -eq 0
check "after the hold time the idle share goes back to etcd" \
	until_true 5 share_is 1 0

if [ "${WSEM_FLEET_FULL:-0}" != 1 ]; then
	for h in 1 2 3; do
		eval "kill -TERM \$agent_$h; wait \$agent_$h"
		result "agent h$h stops on SIGTERM, exit 0" $?
	done
	echo "1..$n"
	exit $((fails > 0))
fi

# Steady demand above the capacity on every host, watched.
loops=
for h in 1 2 3; do
	jobs_loop $h 1 0.3 &
	loops="$loops $!"
	jobs_loop $h 2 0.2 &
	loops="$loops $!"
	jobs_loop $h 3 0.4 &
	loops="$loops $!"
done
fleet_watch $CAP 15 "$T/h1/$N" "$T/h2/$N" "$T/h3/$N" >"$T/watch" 2>&1
result "15 s of jobs of 1, 2 and 3 on three hosts: never more than $CAP held together" \
	$? "$T/watch" "$T/jobs.err"
echo "# $(cat "$T/watch")"
util=$(sed -n 's/.* util \([0-9]*\)$/\1/p' "$T/watch")
result "utilisation while hosts wait: ${util:-?} % (at least 50)" \
	"$([ "${util:-0}" -ge 50 ]; echo $?)" "$T/watch"
check "no job failed" test ! -s "$T/jobs.err"
# No host's request starves: every loop, the weight-3 ones too, ran jobs.
starved=
for h in 1 2 3; do
	for w in 1 2 3; do
		c=$(wc -l <"$T/done-$h-$w" 2>/dev/null || echo 0)
		done_jobs="${done_jobs:-}h$h:w$w=$c "
		[ "$c" -gt 0 ] || starved="$starved h$h:w$w"
	done
done
echo "# jobs done: $done_jobs"
result "no host's jobs starve: each host ran jobs of each weight" \
	"$([ -z "$starved" ]; echo $?)"

# Demand moves: h1 and h2 stop, h3 asks for all of it.
touch "$T/stop-1" "$T/stop-2"
jobs_loop 3 $CAP 0.3 &
loops="$loops $!"
check "demand moves to h3: it gets all $CAP within 5 s" \
	until_true 5 share_is 3 $CAP
touch "$T/stop-3"
wait_quiet() {
	for h in 1 2 3; do
		[ "$(stat_field $h used)" = 0 ] || return 1
	done
}
check "the jobs end: nothing held" until_true 15 wait_quiet

# The race the growth's transaction guards against, reached every run: the
# agents, started anew, wait 200 ms between reading etcd and growing their
# share there, and the three hosts ask for 4 each at once, round after
# round: all three see the capacity free, one growth takes.
for h in 1 2 3; do
	eval "kill -TERM \$agent_$h; wait \$agent_$h"
	start_agent $h 200
done
fleet_watch $CAP 12 "$T/h1/$N" "$T/h2/$N" "$T/h3/$N" >"$T/watch" 2>&1 &
watch=$!
rounds=0
while kill -0 $watch 2>/dev/null; do
	in_host 1 wsem run $N -w 4 --timeout 30 -- sleep 0.2 &
	j1=$!
	in_host 2 wsem run $N -w 4 --timeout 30 -- sleep 0.2 &
	j2=$!
	in_host 3 wsem run $N -w 4 --timeout 30 -- sleep 0.2 &
	wait $j1 $j2 $!
	rounds=$((rounds + 1))
done
wait $watch
result "$rounds rounds of three hosts asking 4 each at once, agents slowed: never more than $CAP held" \
	$? "$T/watch"
echo "# $(cat "$T/watch")"
for h in 1 2 3; do
	eval "kill -TERM \$agent_$h; wait \$agent_$h"
	start_agent $h
done
raced=0
for h in 1 2 3; do
	r=$(sed -n 's/.*: \([0-9]*\) growths found.*/\1/p' "$T/agent$h.log" |
		tail -n 1)
	raced=$((raced + ${r:-0}))
done
result "... where $raced growths found another share changed and were computed again" \
	"$([ "$raced" -gt 0 ]; echo $?)"

# One agent per host: a second one for h3 waits, lending nothing.
eval "a=\$anchor_3"
nsenter -t "$a" --ipc -- wsem-agent -c "$T/h3.conf" >"$T/agentx.log" 2>&1 &
agent_x=$!
sleep 2
check "a second agent for h3 waits for the first one's claim" \
	grep -q "another wsem-agent serves this host" "$T/agentx.log"
check "... and does not serve it" sh -c "! grep -q 'across the cluster' $T/agentx.log"
kill "$agent_x"
wait "$agent_x"

# An agent SIGKILLed while its host holds 2: the host grants nothing more,
# the share stays in etcd, a new agent takes it up once the dead one's
# etcd lease (ttl=5) has expired.
in_host 1 wsem run $N -w 2 --timeout 30 -- sleep 10 &
job=$!
until_true 10 field_is 1 used 2
kill -KILL "$agent_1"
wait "$agent_1"
check "SIGKILL of h1's agent: the loan is withdrawn (capacity 0)" \
	field_is 1 capacity 0
check "... and 2 still held" field_is 1 used 2
check "... and h1's share of 2 stays in etcd" share_is 1 2
start_agent 1
check "a new agent on h1 takes its share of 2 up" \
	until_true 9 field_is 1 capacity 2
wait $job
check "... and gives it back once the job ends" \
	until_true 5 share_is 1 0

# declare-dead: a host whose agent and jobs are gone for good (the job is
# wsem run itself: nsenter execs it).
eval "a=\$anchor_2"
nsenter -t "$a" --ipc -- wsem run $N -w 1 --timeout 30 -- sleep 30 &
job=$!
check "a job of 1 on h2" until_true 10 field_is 2 used 1
kill -KILL "$agent_2"
wait "$agent_2"
kill -KILL $job
wait $job
check "h2 dead, its job too, with a share of 1 in etcd" share_is 2 1
check "wsem-agent declare-dead $N h2 is refused while the agent's lease lasts" \
	sh -c "! wsem-agent -c $T/h1.conf declare-dead $N h2"
check "... and gives the share back once it has expired" \
	until_true 10 wsem-agent -c "$T/h1.conf" declare-dead $N h2
check "... no share of h2 left" share_is 2 0

for h in 1 3; do
	eval "kill -TERM \$agent_$h; wait \$agent_$h"
	result "agent h$h stops on SIGTERM, exit 0" $?
done
no_shares() {
	[ -z "$(etcdctl --endpoints $EP get --prefix /wsem/$N/share/)" ]
}
check "every share back in etcd" no_shares
for h in 1 2 3; do
	echo "# agent h$h: $(grep -c ' share ' "$T/agent$h.log") share changes logged"
	[ "$fails" -eq 0 ] || tail -n 20 "$T/agent$h.log" | sed "s/^/# h$h: /"
done
echo "1..$n"
exit $((fails > 0))
