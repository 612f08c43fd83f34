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
# In both: a policy=deadline agent SIGSTOPped while its host holds a whole
# limit: the host's kernel ends the loan and its holders at the loan's
# deadline, and two hosts never hold more than the capacity together.

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
t0=$(date +%s)
N=seats
CAP=6
FULL=${WSEM_FLEET_FULL:-0}
NET=10.77.0
IP=/usr/lib/iproute2/ip # iproute2's (mkinitramfs.sh)
mkdir -p "$T"
export ETCDCTL_API=3

if [ "$FULL" = 1 ]; then
	# Three etcd members at $NET.1-3 and four hosts at $NET.11-14, each
	# in its network namespace, joined by veth pairs to a bridge in this
	# one ($NET.254: etcdctl and the observer); a host is also an IPC,
	# PID and mount namespace of its own.
	HOSTS="1 2 3 4"
	NSF="--ipc --pid --mount --net"
	EP=http://$NET.1:2379,http://$NET.2:2379,http://$NET.3:2379
	ALL_HOSTS=$HOSTS
else
	# One member on the loopback; a host is an IPC namespace.
	HOSTS="1 2 3"
	NSF="--ipc"
	EP=http://127.0.0.1:2379
	ALL_HOSTS=$HOSTS
fi

# in_host H CMD...: CMD in host H's namespaces (with a PID namespace
# nsenter forks: the process started is its child)
in_host() {
	eval "a=\$anchor_$1"
	shift
	# shellcheck disable=SC2086 # the flags
	nsenter -t "$a" $NSF -- "$@"
}

# in_host_bg H CMD...: the same in the background, with nsenter itself the
# background job (not a subshell running in_host)
in_host_bg() {
	eval "a=\$anchor_$1"
	shift
	# shellcheck disable=SC2086 # the flags
	nsenter -t "$a" $NSF -- "$@" &
}

# child_of PID: PID's first child; real_pid PID: the process that the
# nsenter of pid PID runs (in_host_bg: its child in full mode, where nsenter
# forks into the PID namespace; nsenter itself, exec'd, in smoke mode)
child_of() {
	c=$(cut -d' ' -f1 "/proc/$1/task/$1/children" 2>/dev/null)
	[ -n "$c" ] && echo "$c"
}
real_pid() {
	if [ "$FULL" = 1 ]; then
		until_true 5 child_of "$1" >/dev/null
		child_of "$1"
	else
		echo "$1"
	fi
}

# stop_agent SIG H: send SIG to host H's agent and wait for it (its status)
stop_agent() {
	p=
	eval "p=\$agent_$2"
	kill "-$1" "$(real_pid "$p")"
	wait "$p"
}

# used H, cap_of H: host H's semaphore's used weight and capacity in force
stat_field() {
	stat_key "$T/h$1/$N" "$2"
}

# sem_is H NAME KEY V: host H's semaphore NAME says KEY is V (a predicate
# for until_true and check); field_is H KEY V: the same of $N
sem_is() {
	[ "$(stat_key "$T/h$1/$2" "$3")" = "$4" ]
}
field_is() {
	sem_is "$1" "$N" "$2" "$3"
}

# loans_of NAME CEILING H...: on each host H, NAME is a loans semaphore of
# CEILING
loans_of() {
	lname=$1 lceil=$2
	shift 2
	for h in "$@"; do
		sem_is "$h" "$lname" ceiling "$lceil" || return 1
	done
}

# loans_ready: every host's semaphore is there, a loans one of ceiling CAP
loans_ready() {
	for h in $HOSTS; do
		[ -e "$T/h$h/$N" ] && field_is $h ceiling $CAP || return 1
	done
}

# other_ipc_ns PID: PID is in another IPC namespace than this shell
other_ipc_ns() {
	[ "$(readlink "/proc/$1/ns/ipc")" != "$(readlink /proc/self/ns/ipc)" ]
}

# start_agent H [DELAY_MS]: host H's agent, its pid (or its nsenter's) in
# agent_H; with DELAY_MS, the agent waits that long between reading etcd
# and growing its share there (WSEM_AGENT_TEST_DELAY_MS)
start_agent() {
	WSEM_AGENT_TEST_DELAY_MS=${2:-0} in_host_bg "$1" \
		wsem-agent -c "$T/h$1.conf" >>"$T/agent$1.log" 2>&1
	eval "agent_$1=\$!"
}

# deadline_agents NAME OPTS H...: on each host H an agent of NAME under
# policy=deadline (capacity 2, OPTS more keys), its conf $T/NAME-H.conf,
# its log $T/NAME-agentH.log, its pid (or its nsenter's) in NAME_agent_H
deadline_agents() {
	dn=$1 dopts=$2
	shift 2
	for h in "$@"; do
		echo "$dn capacity=2 cluster=etcd endpoints=$EP host=h$h hold=1000 $dopts policy=deadline" \
			>"$T/$dn-$h.conf"
		in_host_bg $h wsem-agent -c "$T/$dn-$h.conf" \
			>>"$T/$dn-agent$h.log" 2>&1
		eval "${dn}_agent_$h=\$!"
	done
}

# jobs_loop H WEIGHT SECONDS: a loop of jobs of WEIGHT on host H, each
# holding for SECONDS, until $T/stop-H exists; the loop runs inside the host
# (one nsenter for all its jobs); a job ended by its host's death is no
# failure
jobs_loop() {
	in_host "$1" sh -c '
	while [ ! -e "$1/stop-$2" ]; do
		if wsem run "$3" --weight "$4" --timeout 30 -- sleep "$5"; then
			echo >>"$1/done-$2-$4"
		else
			st=$?
			[ -e "$1/stop-$2" ] && break
			echo "job on h$2 failed: $st" >>"$1/jobs.err"
			sleep 0.5
		fi
	done' sh "$T" "$1" "$N" "$2" "$3"
}

# start_loops H... : on each host H, loops of jobs of 1, 2 and 3 (pids
# added to loops); stop_loops: they end
start_loops() {
	for h in "$@"; do
		rm -f "$T/stop-$h"
		jobs_loop $h 1 0.3 &
		loops="$loops $!"
		jobs_loop $h 2 0.2 &
		loops="$loops $!"
		jobs_loop $h 3 0.4 &
		loops="$loops $!"
	done
}
stop_loops() {
	for h in $HOSTS; do
		touch "$T/stop-$h"
	done
	# shellcheck disable=SC2086 # pids (none: a bare wait would wait for all)
	[ -z "$loops" ] || wait $loops 2>/dev/null
	loops=
}

# jobs_done: how many jobs ended well so far, on all hosts
jobs_done() {
	cat "$T"/done-* 2>/dev/null | wc -l
}
# more_done THAN: more than THAN jobs ended well
more_done() {
	[ "$(jobs_done)" -gt "$1" ]
}

# wait_quiet: nothing held on any host (no_shares, util.sh: none in etcd)
wait_quiet() {
	for h in $HOSTS; do
		[ "$(stat_field $h used)" = 0 ] || return 1
	done
}

# The etcd members (full mode): member I at $NET.I in the network
# namespace of mnet_I, etcd's pid in etcd_I; restarted from its data.
CLUSTER=m1=http://$NET.1:2380,m2=http://$NET.2:2380,m3=http://$NET.3:2380
start_member() {
	eval "a=\$mnet_$1"
	u=http://$NET.$1
	nsenter -t "$a" --net -- etcd --name "m$1" --data-dir "$T/m$1" \
		--listen-client-urls $u:2379 --advertise-client-urls $u:2379 \
		--listen-peer-urls $u:2380 --initial-advertise-peer-urls $u:2380 \
		--initial-cluster $CLUSTER --initial-cluster-token wsem-fleet \
		--heartbeat-interval 200 --election-timeout 2000 \
		>>"$T/m$1.log" 2>&1 &
	eval "etcd_$1=\$!"
}
# member_ok I: member I answers and has a leader
member_ok() {
	etcdctl --endpoints "http://$NET.$1:2379" --command-timeout=2s \
		endpoint health >/dev/null 2>&1
}
members_ok() {
	member_ok 1 && member_ok 2 && member_ok 3
}
# leader: the member that says it leads
leader() {
	etcdctl --endpoints $EP --command-timeout=2s endpoint status 2>/dev/null |
		awk -F', ' '$5 == "true" { sub(/:2379$/, "", $1);
			sub(/.*\./, "", $1); print $1 }'
}
# leader_not I: some member other than I leads
leader_not() {
	l=$(leader)
	[ -n "$l" ] && [ "$l" != "$1" ]
}

# join PID NAME ADDR: a veth pair from the bridge into PID's network
# namespace, ADDR/24 on its end there
join() {
	$IP link add "v$2" type veth peer name "p$2" &&
		$IP link set "p$2" netns "$1" &&
		$IP link set "v$2" master wsbr0 up &&
		nsenter -t "$1" --net -- sh -c "$IP link set lo up &&
			$IP addr add $3/24 dev p$2 && $IP link set p$2 up"
}

# net_up: the bridge (the guest kernel's modules first, mkinitramfs.sh)
net_up() {
	if [ -f /lib/modules/net/order ]; then
		while read -r m; do
			grep -q "^$m " /proc/modules ||
				insmod "/lib/modules/net/$m.ko" || return 1
		done </lib/modules/net/order
	fi
	$IP link set lo up &&
		$IP link add wsbr0 type bridge &&
		$IP addr add $NET.254/24 dev wsbr0 &&
		$IP link set wsbr0 up
}

cleanup() {
	touch "$T/job-end"
	for h in $ALL_HOSTS; do
		touch "$T/stop-$h"
	done
	if [ "$FULL" = 1 ]; then
		# a PID namespace's init takes everything in it along
		for h in $ALL_HOSTS; do
			eval "kill -KILL \${anchor_$h:-} 2>/dev/null"
		done
		for i in 1 2 3; do
			eval "kill -KILL \${etcd_$i:-} \${mnet_$i:-} 2>/dev/null"
		done
	else
		for h in $ALL_HOSTS; do
			eval "kill \${agent_$h:-} \${anchor_$h:-} 2>/dev/null"
		done
		kill ${etcd_1:-} 2>/dev/null
	fi
	# shellcheck disable=SC2086 # pids
	kill ${loops:-} ${agent_x:-} 2>/dev/null
	wait 2>/dev/null
	# the mounts hold their namespaces, and the module
	for h in $ALL_HOSTS; do
		umount "$T/h$h" 2>/dev/null
	done
}
trap cleanup EXIT
loops=

if [ "$FULL" = 1 ]; then
	check "a bridge (the kernel's bridge module; iproute2)" \
		net_up
	for i in 1 2 3; do
		unshare --net sleep 100000 &
		eval "mnet_$i=\$!"
		until_true 5 test -e /proc/$!/ns/net
		join $! "m$i" $NET.$i
		start_member $i
	done
	te=$(date +%s)
	check "a 3-member etcd cluster answers, each member in its network namespace" \
		until_true 60 etcdctl --endpoints $EP put /probe 1
else
	ip link set lo up
	etcd_alone m1 "$T/etcd" "$T/m1.log"
	etcd_1=$etcd_pid
	te=$(date +%s)
	check "etcd answers" until_true 120 etcdctl --endpoints $EP put /probe 1
fi
echo "# etcd: $(($(date +%s) - te)) s to answer"
if [ "$fails" -ne 0 ]; then
	for f in "$T"/m*.log; do
		tail -n 20 "$f" | sed "s|^|# ${f##*/}: |"
	done
fi

for h in $HOSTS; do
	mkdir -p "$T/h$h"
	if [ "$FULL" = 1 ]; then
		unshare --ipc --pid --mount-proc --net -f sleep 100000 &
		until_true 5 child_of $! >/dev/null
		a=$(child_of $!)
		join "$a" "h$h" $NET.1$h
	else
		unshare --ipc sleep 100000 &
		a=$!
	fi
	eval "anchor_$h=\$a"
	until_true 5 other_ipc_ns "$a"
	nsenter -t "$a" --ipc -- mount -t wsem wsem "$T/h$h"
	# (turn=4000: in this guest a turn's change, a drain and the next
	# host's growths, takes 0.4-0.8 s, most of the default 1 s turn)
	echo "$N capacity=$CAP cluster=etcd endpoints=$EP host=h$h hold=1000 ttl=5 turn=4000" \
		>"$T/h$h.conf"
	start_agent $h
done
nh=$(echo $HOSTS | wc -w)
check "$nh agents start; each host's $N takes loans (own capacity 0, ceiling $CAP)" \
	until_true 30 loans_ready
check "nothing lent while nothing is asked" field_is 1 capacity 0

# A bad write under the prefix (issue 43): a demand that does not parse
# and a key of no known kind are skipped and logged, and the agents'
# looks go on (they failed every look before).
ectl put "/wsem/$N/demand/bogus" "not a demand" >/dev/null
ectl put "/wsem/$N/junk" "?" >/dev/null
in_host 1 wsem run $N --weight 1 --timeout 20 -- true
result "a malformed demand and a key of no known kind in etcd: a job still runs on h1" $?
check "... h1's agent logged the keys it skipped" \
	grep -q "demand/bogus.*skipped" "$T/agent1.log"
ectl del "/wsem/$N/demand/bogus" >/dev/null
ectl del "/wsem/$N/junk" >/dev/null
check "... and gives the share back" until_true 10 share_is h1 0

# One agent, three limits (issue 43): pool is served; lost, whose etcd is
# a port nobody listens on, says every ttl=1 which endpoint does not
# answer and keeps trying; seats, declared with another capacity than
# etcd's, is logged and stops nothing else.  (One limit's failure ended
# the whole agent before, and a start waited on etcd without a word.)
cat >"$T/multi.conf" <<EOF
pool capacity=3 cluster=etcd endpoints=$EP host=h3 hold=1000
lost capacity=3 cluster=etcd endpoints=http://127.0.0.1:9 host=h3 ttl=1
seats capacity=$((CAP + 1)) cluster=etcd endpoints=$EP host=hx
EOF
in_host_bg 3 wsem-agent -c "$T/multi.conf" >"$T/multi.log" 2>&1
multi=$!
pool_ready() {
	[ -e "$T/h3/pool" ] && [ "$(stat_key "$T/h3/pool" ceiling)" = 3 ]
}
check "one agent, three limits: pool is served (a loans semaphore of ceiling 3)" \
	until_true 20 pool_ready
check "... lost says which endpoint does not answer, and keeps trying" \
	until_true 10 grep -q "lost: starting for .*etcd does not answer at http://127.0.0.1:9: still trying" \
	"$T/multi.log"
check "... seats' other capacity is logged" \
	grep -q "seats: /wsem/seats/capacity in etcd is $CAP, this host says $((CAP + 1))" \
	"$T/multi.log"
in_host 3 wsem run pool --weight 3 --timeout 20 -- true
result "... a job of 3 of pool runs on h3 meanwhile" $? "$T/multi.log"
kill -TERM "$(real_pid "$multi")"
wait "$multi"
result "... the agent stops on SIGTERM, exit 1 (a limit could not start)" \
	"$(($? != 1))" "$T/multi.log"
sed 's/^/# multi: /' "$T/multi.log"

# An idle agent sleeps (issue 43, scale): it waits for its host's demand
# in an epoll set inside Go's own poller and for its lease's end on a
# timer, not in loops of 100 ms (20 wake-ups a second each before).
# hold=60000: no look of its own for 30 s.  Its threads' context switches
# over 5 s idle, then a job that queues on h2: the demand event alone
# makes the agent look, take a share and lend it within 10 s.  (On 6.1
# under TCG, 2026-12-01: 89 switches in 5 s, 171 on the debug kernel;
# 1,080 with the 100 ms loops.)
IDLE_SWITCHES=500
# ctxsw PID: the context switches of PID's threads so far
ctxsw() {
	cat /proc/"$1"/task/*/status 2>/dev/null |
		awk '/ctxt_switches/ { n += $2 } END { print n + 0 }'
}
echo "idle capacity=2 cluster=etcd endpoints=$EP host=h2 hold=60000 ttl=6" \
	>"$T/idle.conf"
in_host_bg 2 wsem-agent -c "$T/idle.conf" >"$T/idle.log" 2>&1
idle_agent=$!
check "an idle agent (hold=60000) starts: idle is a loans semaphore on h2" \
	until_true 20 sem_is 2 idle ceiling 2
sleep 3
ip=$(real_pid "$idle_agent")
c0=$(ctxsw "$ip")
sleep 5
c1=$(ctxsw "$ip")
echo "# idle agent: $((c1 - c0)) context switches in 5 s"
check "... it wakes rarely: $((c1 - c0)) context switches in 5 s (at most $IDLE_SWITCHES)" \
	test $((c1 - c0)) -le "$IDLE_SWITCHES"
in_host 2 wsem run idle --weight 1 --timeout 10 -- true
result "... a job on h2 runs within 10 s: the demand event woke the agent" \
	$? "$T/idle.log"
kill -TERM "$ip"
wait "$idle_agent"
result "... the idle agent stops on SIGTERM, exit 0" $? "$T/idle.log"

# A job on h1: its agent takes a share from etcd and lends it.
# (it holds until status has looked: two Go starts take seconds on the
# debug kernel)
in_host 1 wsem run $N --weight 2 --timeout 60 -- \
	sh -c "until [ -e '$T/job-end' ]; do sleep 0.1; done" &
job=$!
check "a job of 2 on h1 runs once the agent took a share of 2 from etcd" \
	until_true 10 share_is h1 2
in_host 1 wsem-agent -c "$T/h1.conf" status $N >"$T/status" 2>&1
in_host 1 wsem-agent -c "$T/h1.conf" status $N --json >"$T/status.json" 2>&1
grep -Eq '^h1 \* +2 +2 +2 +[-0-9]+ alive$' "$T/status" &&
	grep -Eq '^h2 +0 +0 +0 +- alive$' "$T/status" &&
	grep -q '"host":"h1","share":2,"need":2,"floor":2,' "$T/status.json" &&
	grep -q "\"capacity\":$CAP,\"free\":$((CAP - 2))," "$T/status.json" &&
	grep -q '"local":{"capacity":2,"used":2,"waiters":0}' "$T/status.json"
result "wsem-agent status: h1's share, need and floor, its agent alive, h2's, the free capacity, h1's semaphore" \
	$? "$T/status" "$T/status.json"
# set-capacity (issue 43, point 6): an N that is no capacity is refused;
# a shrink below the shares (h1 holds 2) puts capacity/next, after which
# h1 lends the rule's 1 and keeps its share of 2 (nothing held revoked);
# stopped, it leaves capacity/next, which set-capacity of the capacity in
# force takes away (h1 lends 2 again); a growth is written at once.
in_host 1 wsem-agent -c "$T/h1.conf" set-capacity $N -1 >"$T/setcap" 2>&1
rc=$?
[ $rc -eq 2 ] && [ "$(wc -l <"$T/setcap")" -eq 1 ] &&
	grep -q 'not a number from 1' "$T/setcap"
result "set-capacity $N -1: refused with one line, exit 2 (exit $rc)" $? "$T/setcap"
in_host_bg 1 wsem-agent -c "$T/h1.conf" set-capacity $N 1 >"$T/setcap" 2>&1
sc=$!
# shrinking: capacity/next 1, h1 lends 1, holds 2, its share 2
shrinking() {
	[ "$(ectl get --print-value-only "/wsem/$N/capacity/next")" = 1 ] &&
		field_is 1 capacity 1 && field_is 1 used 2 && share_is h1 2
}
check "set-capacity $N 1 while h1 holds 2: capacity/next 1, h1 lends 1 and keeps its share of 2" \
	until_true 10 shrinking
kill -INT "$(real_pid $sc)"
wait $sc
rc=$?
[ $rc -eq 1 ] && grep -q "capacity/next 1 stays" "$T/setcap" &&
	[ "$(ectl get --print-value-only "/wsem/$N/capacity")" = "$CAP" ]
result "... stopped by SIGINT: exit 1 (exit $rc), capacity/next stays, the capacity too" \
	$? "$T/setcap"
in_host 1 wsem-agent -c "$T/h1.conf" set-capacity $N $((CAP + 1)) >"$T/setcap" 2>&1 &&
	grep -q "^$N: capacity $CAP -> $((CAP + 1))$" "$T/setcap" &&
	in_host 1 wsem-agent -c "$T/h1.conf" set-capacity $N $CAP >"$T/setcap" 2>&1 &&
	[ -z "$(ectl get "/wsem/$N/capacity/next")" ] &&
	[ "$(ectl get --print-value-only "/wsem/$N/capacity")" = "$CAP" ]
result "... a growth to $((CAP + 1)) at once, and back to $CAP: capacity/next gone" $? "$T/setcap"
check "... h1 lends its share of 2 again" until_true 10 field_is 1 capacity 2
# wsem stat on a host shows the cluster from the view its agent writes to
# /run/wsem-agent/IPCNS/seats after each look (never from etcd itself):
# a failing look shows (etcd stopped), so does the view of an agent that
# died (stale); an agent that stops removes its view.
tv=$(date +%s)
# view_has H RE: host H's wsem stat --json (and its notes) match RE
view_has() {
	in_host "$1" wsem stat $N --json 2>&1 | grep -Eq "$2"
}
# no_view H: host H's wsem stat shows no view, and says nothing of one
no_view() {
	! in_host "$1" wsem stat $N --json 2>&1 | grep -q cluster
}
check "wsem stat on h1: the capacity and what is free, h1's share, need and floor, its agent alive, h1 this host" \
	until_true 10 view_has 1 "\"cluster\":\\{\"host\":\"h1\",\"prefix\":\"/wsem/$N/\",\"revision\":[0-9]+,\"capacity\":$CAP,\"free\":$((CAP - 2)),.*\"stale\":false,\"etcd_ok\":true,.*\\{\"host\":\"h1\",\"share\":2,\"need\":2,\"floor\":2,\"queue\":[0-9]+,\"alive\":true,\"this\":true\\}"
in_host 1 wsem stat $N >"$T/stat" 2>&1
grep -Eq "^CLUSTER \\(wsem-agent's view of etcd /wsem/$N/ at revision [0-9]+, read [0-9.]+m?s ago\\)\$" "$T/stat" &&
	grep -Eq '^  h1 \* +2 +2 +2 +[-0-9]+ +alive$' "$T/stat" &&
	grep -Eq '^  h2 +0 +0 +0 +- +alive$' "$T/stat" &&
	! grep -q stale "$T/stat"
result "... and in its text, h2 there too" $? "$T/stat"
check "wsem stat on h2: h2 is this host there" \
	view_has 2 '\{"host":"h2","share":0,"need":0,"floor":0,"queue":0,"alive":true,"this":true\}'
# etcd stopped (every member) and h3's agent SIGKILLed: h1's looks fail
# within ttl=5 s, h3's view is stale within ttl= + hold=
MEMBERS=1
[ "$FULL" != 1 ] || MEMBERS="1 2 3"
for i in $MEMBERS; do
	eval "kill -STOP \$etcd_$i"
done
stop_agent KILL 3
check "etcd stopped: wsem stat on h1 shows the agent's looks failing, and why" \
	until_true 12 view_has 1 '"etcd_ok":false,"error":"[^"]+","failing_ns":[1-9]'
check "h3's agent SIGKILLed: wsem stat on h3 shows its view stale" \
	until_true 12 view_has 3 '"stale":true'
for i in $MEMBERS; do
	eval "kill -CONT \$etcd_$i"
done
check "etcd back: h1's looks succeed again" \
	until_true 20 view_has 1 '"stale":false,"etcd_ok":true,'
start_agent 3
check "a new agent on h3: its view is fresh again" \
	until_true 20 view_has 3 '"stale":false,"etcd_ok":true,'
stop_agent TERM 2
result "agent h2 stops on SIGTERM, exit 0" $?
check "... and removes its view: wsem stat on h2 shows none" no_view 2
start_agent 2
check "h2's new agent writes its view" \
	until_true 20 view_has 2 '"this":true'
echo "# wsem stat's view: $(($(date +%s) - tv)) s"
touch "$T/job-end"
wait $job
check "the job's wsem run exits 0" test $? -eq 0
check "after the hold time the idle share goes back to etcd" \
	until_true 5 share_is h1 0

# A paused agent under policy=deadline (issue 43): h1's agent holds the
# whole of slots (capacity 2) for a job while h2 waits for it; the agent is
# SIGSTOPped for 3 x ttl=3.  Its loan carries a kernel deadline (the
# lease's local end less the margin, WSEM_LEND_DEADLINE): at it h1's
# kernel withdraws the loan and kills the job, before etcd expires the
# lease and deletes h1's claim; h2's agent takes h1's share back ttl=3 s
# after it saw the claim gone, and h2's job runs.  Sampled
# all along: never more than 2 held on h1 and h2 together.  (Without the
# kernel's deadline h1's job held on, and h2's ran beside it: 4 of 2.)
G=slots
# slots_used H: what host H holds of slots
slots_used() {
	stat_key "$T/h$1/$G" used
}
slots_used_is() {
	[ "$(slots_used "$1")" = "$2" ]
}
slots_ready() {
	[ -e "$T/h1/$G" ] && [ -e "$T/h2/$G" ]
}
deadline_agents $G "ttl=3 turn=4000" 1 2
check "policy=deadline: two agents of slots (capacity 2, ttl=3) start" \
	until_true 30 slots_ready
# watch_stop PID: the observer PID ends now (fleet_watch stops at
# SIGUSR1) and its status is returned.  Each scenario ends it once the
# moment it watches is over (its jobs ended, or the checks on them done)
# instead of waiting out the SECONDS it was started with.
watch_stop() {
	kill -USR1 "$1" 2>/dev/null
	wait "$1"
}
# h1_holds_h2_waits SECONDS [WHAT]: a job on h1 holds all 2 of slots (its
# pid in gjob1), one of 2 on h2 waits for it (gjob2), and fleet_watch
# samples both for SECONDS (gwatch)
h1_holds_h2_waits() {
	in_host 1 wsem run $G --weight 2 --timeout 60 -- sleep 30 >/dev/null 2>&1 &
	gjob1=$!
	check "a job on h1 holds all 2 of slots${2:-}" \
		until_true 20 slots_used_is 1 2
	in_host 2 wsem run $G --weight 2 --timeout 60 -- true >"$T/gjob2" 2>&1 &
	gjob2=$!
	fleet_watch 2 "$1" "$T/h1/$G" "$T/h2/$G" >"$T/gwatch" 2>&1 &
	gwatch=$!
	sleep 1
}
h1_holds_h2_waits 20
ga=$(real_pid "$slots_agent_1")
kill -STOP "$ga"
tp=$(date +%s)
check "h1's agent stopped: h1's kernel ends the job at the loan's deadline" \
	until_true 8 slots_used_is 1 0
echo "# the job's end: $(($(date +%s) - tp)) s after the SIGSTOP"
check "h1's loan is gone: its capacity is 0" \
	test "$(stat_key "$T/h1/$G" capacity)" = 0
wait $gjob1
check "h1's job ended by SIGKILL (wsem run exits 137)" test $? -eq 137
wait $gjob2
result "h2's job runs once h2's agent took h1's share back, exit 0" $? "$T/gjob2"
left=$((3 * 3 + tp - $(date +%s)))
[ "$left" -le 0 ] || sleep "$left"
kill -CONT "$ga"
watch_stop $gwatch
result "the agent paused 9 s: never more than 2 of slots held on h1 and h2 together" \
	$? "$T/gwatch"
echo "# $(cat "$T/gwatch")"

# A revoked lease (issue 43): etcdctl lease revoke of h1's lease, what
# etcd's early revoke or a lost lease also do, while h1 holds all 2 of
# slots and h2 waits for 2.  The revoke deletes alive/h1, not h1's share
# (under no lease); h1's agent, told "no such lease" at its next renewal,
# lends nothing and kills the job, claims h1 again under a new lease and
# gives the share back; h2's job runs then.  Sampled all along: never
# more than 2 held on h1 and h2 together.  (With the share under the
# lease, h2 took it at once, while h1's job held on to its kernel
# deadline: 4 of 2.)
# alive_lease H: the lease of alive/H of slots, in hex ("": none)
alive_lease() {
	l=$(ectl get "/wsem/$G/alive/$1" -w json |
		sed -n 's/.*"lease":\([0-9]*\).*/\1/p')
	[ -n "$l" ] && printf '%x\n' "$l"
}
check "h1's agent claims h1 again after its pause" until_true 20 alive_lease h1
h1_holds_h2_waits 10 " again"
ectl lease revoke "$(alive_lease h1)" >/dev/null
tr=$(date +%s)
wait $gjob1
check "h1's lease revoked: its agent ends h1's job (wsem run exits 137)" \
	test $? -eq 137
echo "# the job's end: $(($(date +%s) - tr)) s after the revoke"
wait $gjob2
result "h2's job runs once h1 gave its share back, exit 0" $? "$T/gjob2"
watch_stop $gwatch
result "a revoked lease: never more than 2 of slots held on h1 and h2 together" \
	$? "$T/gwatch"
echo "# $(cat "$T/gwatch")"
check "h1's agent said why it lent nothing" \
	grep -q "etcd says the lease is gone" "$T/slots-agent1.log"
# The whole host frozen (issue 43): a cgroup v2 freezer over h1's agent
# and its job, which holds all 2 of slots while h2 waits for 2, for 3 x
# ttl=3.  Nothing of h1 runs: at the loan's deadline h1's kernel withdraws
# the loan and kills the job (a frozen task dies of SIGKILL), etcd
# expires h1's lease, h2's agent takes h1's share back ttl=3 s after the
# claim went, and h2's job runs, all while h1 is frozen.  Sampled all
# along: never more than 2 held on h1 and h2 together.
FRZ=/sys/fs/cgroup/wsem-fleet-h1
if [ -w /sys/fs/cgroup/cgroup.subtree_control ] && mkdir "$FRZ" 2>/dev/null &&
	[ -e "$FRZ/cgroup.freeze" ]; then
	check "frozen: h1's agent claims h1 again" until_true 20 alive_lease h1
	real_pid "$slots_agent_1" >"$FRZ/cgroup.procs"
	in_host 1 sh -c "echo \$\$ >'$FRZ/cgroup.procs'; exec wsem run $G \
		--weight 2 --timeout 60 -- sleep 60" >/dev/null 2>&1 &
	gjob1=$!
	check "frozen: a job on h1 (in h1's cgroup) holds all 2 of slots" \
		until_true 20 slots_used_is 1 2
	in_host 2 wsem run $G --weight 2 --timeout 60 -- true >"$T/gjob2" 2>&1 &
	gjob2=$!
	fleet_watch 2 12 "$T/h1/$G" "$T/h2/$G" >"$T/gwatch" 2>&1 &
	gwatch=$!
	sleep 1
	echo 1 >"$FRZ/cgroup.freeze"
	tf=$(date +%s)
	check "frozen: h1's kernel ends the frozen job at the loan's deadline" \
		until_true 8 slots_used_is 1 0
	echo "# the job's end: $(($(date +%s) - tf)) s after the freeze"
	wait $gjob2
	result "frozen: h2's job runs while h1 is frozen, exit 0" $? "$T/gjob2"
	check "frozen: h1 is still frozen" grep -q "frozen 1" "$FRZ/cgroup.events"
	left=$((3 * 3 + tf - $(date +%s)))
	[ "$left" -le 0 ] || sleep "$left"
	echo 0 >"$FRZ/cgroup.freeze"
	wait $gjob1
	check "frozen: h1's job ended by SIGKILL (wsem run exits 137)" \
		test $? -eq 137
	watch_stop $gwatch
	result "frozen 9 s: never more than 2 of slots held on h1 and h2 together" \
		$? "$T/gwatch"
	echo "# $(cat "$T/gwatch")"
	real_pid "$slots_agent_1" >/sys/fs/cgroup/cgroup.procs
	rmdir "$FRZ"
else
	result "frozen: a cgroup v2 freezer for h1 ($FRZ)" 1
fi
# A SIGHUP (a closed terminal, a reload) does not end an agent, whose end
# would end its loans: it is logged and ignored.
kill -HUP "$(real_pid "$slots_agent_1")"
sleep 1
check "h1's agent lives on after a SIGHUP and says it ignored it" \
	sh -c "kill -0 $(real_pid "$slots_agent_1") &&
		grep -q 'SIGHUP: ignored' '$T/slots-agent1.log'"
for h in 1 2; do
	eval "p=\$slots_agent_$h"
	kill -TERM "$(real_pid "$p")"
	wait "$p"
	result "slots' agent on h$h stops on SIGTERM, exit 0" $? \
		"$T/slots-agent$h.log"
done

# An agent restarted with its lending handle kept (issue 43, point 8):
# fdstore stands in for systemd's file descriptor store (the guest has no
# systemd; wsem-agent.service has FileDescriptorStoreMax=).  h1's agent of
# kept (policy deadline) runs under it and puts its lending handle there;
# a job on h1 holds all 2, one on h2 waits for 2.  A SIGTERM (a restart:
# the agent renews its lease once more and hands over, fdstore starts it
# again a second later) and a SIGKILL (a crash) each leave the loan in
# force: the next agent takes the handle back and lends through it, and
# h1's job lives on past the old loan's kernel deadline.  fdstore's own
# SIGTERM is the unit's stop for good: it closes the handle, and the
# kernel withdraws the loan and ends the job.  Sampled all along: never
# more than 2 held on both hosts together.  (Without the store a restart
# ended h1's job.)  ttl=10, 20 on a lockdep kernel: a crash leaves the
# next agent from 4.7 s (the lease's TTL less the margin, less the third
# of it since the last renewal) to come back and lend.
K=kept
kfails=$fails
KTTL=10
[ -r /proc/lockdep_stats ] && KTTL=20
kept_ready() {
	[ -e "$T/h1/$K" ] && [ -e "$T/h2/$K" ] && sem_is 1 $K ceiling 2
}
# kept_job_holds: h1's job runs and holds 2
kept_job_holds() {
	kill -0 $kjob1 && sem_is 1 $K used 2
}
# taken_back N: h1's agent took the kept handle back N times
taken_back() {
	[ "$(grep -c "lending handle kept across the restart taken back" \
		"$T/$K-agent1.log")" = "$1" ]
}
# kill_kept SIG: SIG to h1's agent under fdstore (its pid in the host)
kill_kept() {
	in_host 1 sh -c "kill -$1 \$(cat '$T/$K-agent1.pid')"
}
for h in 1 2; do
	echo "$K capacity=2 cluster=etcd endpoints=$EP host=h$h hold=1000 ttl=$KTTL turn=4000 policy=deadline" \
		>"$T/$K-$h.conf"
done
in_host_bg 1 fdstore "$T/$K-notify" "$T/$K-agent1.pid" \
	wsem-agent -c "$T/$K-1.conf" >>"$T/$K-agent1.log" 2>&1
kstore=$!
in_host_bg 2 wsem-agent -c "$T/$K-2.conf" >>"$T/$K-agent2.log" 2>&1
kagent2=$!
check "kept: h1's agent under a file descriptor store, h2's agent, start" \
	until_true 30 kept_ready
in_host 1 wsem run $K --weight 2 --timeout 60 -- sleep 300 >/dev/null 2>&1 &
kjob1=$!
check "kept: a job on h1 holds all 2" until_true 20 sem_is 1 $K used 2
in_host 2 sh -c "echo \$\$ >'$T/kjob2.pid'; exec wsem run $K --weight 2 \
	--timeout 300 -- true" >"$T/kjob2" 2>&1 &
kjob2=$!
fleet_watch 2 $((4 * KTTL)) "$T/h1/$K" "$T/h2/$K" >"$T/kwatch" 2>&1 &
kwatch=$!
check "kept: h1's agent put its lending handle in the store" \
	until_true 10 grep -q "^fdstore: kept wsem-lend" "$T/$K-agent1.log"
for sig in TERM KILL; do
	nb=$(grep -c "taken back" "$T/$K-agent1.log")
	kill_kept $sig
	tk=$(date +%s)
	check "kept: SIG$sig to h1's agent: the next one takes the handle back" \
		until_true 20 taken_back $((nb + 1))
	echo "# taken back $(($(date +%s) - tk)) s after the SIG$sig"
	# past the old loan's kernel deadline (the TTL less the margin)
	sleep $((KTTL - KTTL / 5 - $(date +%s) + tk + 1))
	check "kept: after SIG$sig h1's job lives on past the old loan's deadline, holding 2" \
		kept_job_holds
done
check "kept: h2's job still waits" kill -0 $kjob2
kill -TERM "$(real_pid "$kstore")"
wait $kstore
result "kept: the store stopped (the unit's stop for good), exit 0" $? \
	"$T/$K-agent1.log"
wait $kjob1
check "kept: the store closed the handle: the kernel ends h1's job (exit 137)" \
	test $? -eq 137
check "kept: h1's loan is gone with it" sem_is 1 $K capacity 0
watch_stop $kwatch
result "kept: never more than 2 of kept held on h1 and h2 together" $? \
	"$T/kwatch"
echo "# $(cat "$T/kwatch")"
in_host 2 sh -c "kill \$(cat '$T/kjob2.pid') 2>/dev/null"
wait $kjob2
kill -TERM "$(real_pid "$kagent2")"
wait $kagent2
result "kept: h2's agent stops on SIGTERM, exit 0" $? "$T/$K-agent2.log"
[ $fails -eq $kfails ] || sed 's/^/# h1: /' "$T/$K-agent1.log"

if [ "$FULL" != 1 ]; then
	for h in $HOSTS; do
		stop_agent TERM $h
		result "agent h$h stops on SIGTERM, exit 0" $?
	done
	echo "1..$n"
	exit $((fails > 0))
fi

HP=
for h in $HOSTS; do
	HP="$HP $T/h$h/$N"
done

# watch_start SECONDS: the observer in the background, on every host
# (pid in watch); watch_end WHAT: it ended without seeing more than CAP
watch_start() {
	# shellcheck disable=SC2086 # the paths
	fleet_watch $CAP "$1" $HP >"$T/watch" 2>&1 &
	watch=$!
}
watch_end() {
	watch_stop $watch
	result "$1: never more than $CAP held on the $nh hosts together" \
		$? "$T/watch"
	echo "# $(cat "$T/watch")"
}
# all_back WHAT: the jobs end, nothing held, every share back in etcd
all_back() {
	stop_loops
	check "$1: the jobs end, nothing held on any host" until_true 15 wait_quiet
	check "$1: every share back in etcd" until_true 10 no_shares
	echo "# $(($(date +%s) - t0)) s into the test"
}

# Steady demand above the capacity on three hosts (h4 idle), watched: on
# each host a fleet_jobs per weight 1, 2 and 3, each job held 200-400 ms
# (at random), the next asked for at once (no process started between two
# jobs: what lies idle is the cluster limit's doing, not the jobs' own).
for h in 1 2 3; do
	rm -f "$T/stop-$h"
	for w in 1 2 3; do
		in_host $h fleet_jobs $N $w 200 400 "$T/stop-$h" \
			>"$T/steady-$h-$w" 2>&1 &
		steady="${steady:-} $!"
	done
done
# The start is not the steady state: every share is 0 when the jobs start,
# and the first host's share grows from nothing.  The observer starts once
# one host has all of the capacity (its turn began).
# one_has_all: some host's share in etcd is the whole capacity
one_has_all() {
	share_is h1 $CAP || share_is h2 $CAP || share_is h3 $CAP
}
check "the first turn begins: one host's share is all $CAP" \
	until_true 10 one_has_all
# shellcheck disable=SC2086 # the paths
fleet_watch $CAP 20 $HP >"$T/watch" 2>&1
result "20 s of jobs of 1, 2 and 3 on three hosts: never more than $CAP held together" \
	$? "$T/watch"
echo "# $(cat "$T/watch")"
# Utilisation is a benchmark figure (make bench-cluster), not a check:
# it measures the guest's load as much as the rule (44-66 % beside other
# guests, 88-94 % alone).
util=$(sed -n 's/.* util \([0-9]*\)$/\1/p' "$T/watch")
echo "# utilisation while hosts wait: ${util:-?} %"
for h in 1 2 3; do
	touch "$T/stop-$h"
done
# Each pid's own status: wait with several pids tells the last one's.
st=0
for p in $steady; do
	wait "$p" || st=1
done
result "every steady job's acquire and release succeeded" $st \
	"$T"/steady-*
# No host's request starves: each weight on each host ran jobs.  And no
# job waits longer than the turns ahead of it (docs/design.md, Fairness): a host's
# request waits at most for the other hosts' turns, each turn= plus twice
# the longest hold (the drain before it, the grant that ends it) and a
# second for the agents' looks and etcd, then its own host's drain:
# 2 x (4 + 2 x 0.4 + 1) + 0.4 + 1 = 13 s.
starved='' wmax=0
for h in 1 2 3; do
	for w in 1 2 3; do
		# "jobs N longest MS"
		jn=0 ms=0
		read -r _ jn _ ms <"$T/steady-$h-$w"
		done_jobs="${done_jobs:-}h$h:w$w=$jn "
		[ "$jn" -gt 0 ] 2>/dev/null || starved="$starved h$h:w$w"
		[ "$ms" -le "$wmax" ] 2>/dev/null || wmax=$ms
	done
done
echo "# jobs done: $done_jobs"
result "no host's jobs starve: each host ran jobs of each weight" \
	"$([ -z "$starved" ]; echo $?)"
result "the longest wait of a job: $wmax ms (at most 13000)" \
	"$([ "$wmax" -gt 0 ] && [ "$wmax" -le 13000 ]; echo $?)"

# Demand moves: the others stop, h3 asks for all of it.
rm -f "$T/stop-3"
jobs_loop 3 $CAP 0.3 &
loops="$loops $!"
check "demand moves to h3: it gets all $CAP within 5 s" \
	until_true 5 share_is h3 $CAP
all_back "steady jobs"

# set-capacity under load (issue 43): the loops of jobs of 1, 2 and 3 on
# three hosts while the capacity goes from $CAP to 4 and back, watched:
# never more than $CAP held while the shrink is under way (the agents
# lower their shares first, as each host's holders end), never more
# than 4 once set-capacity has returned, and the jobs go on at either.
start_loops 1 2 3
fleet_watch $CAP 40 $HP >"$T/scwatch" 2>&1 &
scw=$!
sleep 2
in_host 1 timeout 60 wsem-agent -c "$T/h1.conf" set-capacity $N 4 \
	>"$T/setcap" 2>&1
result "set-capacity $N 4 under load returns once the shares fit, exit 0" \
	$? "$T/setcap"
before=$(jobs_done)
fleet_watch 4 8 $HP >"$T/scwatch4" 2>&1
result "... then never more than 4 held on the $nh hosts together" \
	$? "$T/scwatch4"
echo "# $(cat "$T/scwatch4")"
check "... and the jobs go on being granted" more_done $((before + 6))
in_host 1 wsem-agent -c "$T/h1.conf" set-capacity $N $CAP >"$T/setcap" 2>&1
result "set-capacity $N $CAP under load: a growth, at once, exit 0" $? \
	"$T/setcap"
before=$(jobs_done)
check "... the jobs go on being granted" \
	until_true 10 more_done $((before + 6))
watch_stop $scw
result "set-capacity down and up under load: never more than $CAP held" \
	$? "$T/scwatch"
echo "# $(cat "$T/scwatch")"
all_back "set-capacity under load"

# The race the growth's transaction guards against, reached every run: the
# agents, started anew, wait 200 ms between reading etcd and growing their
# share there, and three hosts ask for 4 each at once, round after round:
# all three see the capacity free, one growth takes (h4 asks nothing: with
# four, a round takes four moves of the share and 12 s hold too few).
for h in 1 2 3; do
	stop_agent TERM $h
	start_agent $h 200
done
watch_start 12
rounds=0
while kill -0 $watch 2>/dev/null; do
	js=
	for h in 1 2 3; do
		in_host $h wsem run $N --weight 4 --timeout 30 -- sleep 0.2 &
		js="$js $!"
	done
	# shellcheck disable=SC2086 # pids
	wait $js
	rounds=$((rounds + 1))
done
wait $watch
result "$rounds rounds of 3 hosts asking 4 each at once, agents slowed: never more than $CAP held" \
	$? "$T/watch"
echo "# $(cat "$T/watch")"
for h in 1 2 3; do
	stop_agent TERM $h
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
check "... every share back in etcd" until_true 10 no_shares

# SIGKILL of an etcd member, a follower, then of the leader, each while
# the hosts run jobs, watched; the member killed comes back from its data
# before the next one dies (two of three must stay for a quorum).
# With the leader's, a second limit under policy=deadline (issue 43):
# lead, capacity 2, ttl=5, on h1 and h2; h1's job holds 2 through the
# leader's change (its loan's kernel deadline is the lease's end less the
# margin, and no renewal is answered while no member leads), h2's job
# waits for 2.  Never more than 2 of lead held on both together; h2's job
# runs once h1's has ended (by its end, or by the loan's deadline: said).
check "the etcd members all answer" until_true 20 members_ok
L=lead
deadline_agents $L "ttl=5 turn=4000" 1 2
check "policy deadline: lead's agents on h1 and h2 start" \
	until_true 30 loans_of $L 2 1 2
for who in follower leader; do
	l=$(leader)
	if [ $who = leader ]; then
		k=$l
		in_host_bg 1 wsem run $L --weight 2 --timeout 30 -- sleep 15
		ljob1=$!
		check "lead: h1's job holds 2" until_true 15 sem_is 1 $L used 2
		in_host_bg 2 wsem run $L --weight 2 --timeout 60 -- true
		ljob2=$!
		fleet_watch 2 20 "$T/h1/$L" "$T/h2/$L" >"$T/lwatch" 2>&1 &
		lwatch=$!
	else
		k=$((${l:-0} % 3 + 1))
	fi
	start_loops $HOSTS
	watch_start 10
	sleep 2
	before=$(jobs_done)
	eval "kill -KILL \$etcd_$k; wait \$etcd_$k 2>/dev/null"
	echo "# SIGKILL of etcd member m$k, the $who (leader: m${l:-?})"
	if [ $who = leader ]; then
		check "another member leads once the leader m$k is SIGKILLed" \
			until_true 15 leader_not "$k"
	fi
	check "with the $who m$k SIGKILLed, the hosts' jobs go on being granted" \
		until_true 10 more_done $((before + 6))
	start_member "$k"
	check "m$k restarted from its data answers again" until_true 20 member_ok "$k"
	watch_end "the $who m$k SIGKILLed and restarted"
	all_back "the $who SIGKILLed"
done
wait $ljob1
echo "# lead: h1's job through the leader's change: exit $? (137: ended at its loan's deadline)"
wait $ljob2
result "lead: h2's job runs once h1's has ended, exit 0" $?
watch_stop $lwatch
result "lead: the leader SIGKILLed under policy deadline: never more than 2 held on h1 and h2 together" \
	$? "$T/lwatch"
echo "# $(cat "$T/lwatch")"
for h in 1 2; do
	eval "p=\$${L}_agent_$h"
	kill "$(real_pid "$p")"
	wait "$p"
	result "lead's agent on h$h stops on SIGTERM, exit 0" $? \
		"$T/$L-agent$h.log"
done
# claimed: every host's agent has its claim alive/HOST in etcd
claimed() {
	for h in $HOSTS; do
		etcdctl --endpoints $EP get --keys-only "/wsem/$N/alive/h$h" |
			grep -q . || { echo "no alive/h$h"; return 1; }
	done
}
# An agent whose etcd lease lapsed in the leader's change (its keep-alive
# unanswered for ttl= seconds) makes a new one at its next look and
# claims alive/HOST again (taking it over if it is still under its old
# lease): the host of a running agent always has its claim, so
# declare-dead cannot give its share away.  (Before that fix, seen in 3
# runs of 5: no claim until the host's demand changed.)
check "every agent's claim (alive/HOST, under its lease) is in etcd after the leader's change" \
	until_true 3 claimed
lost=$(cat "$T"/agent*.log | grep -c "etcd lease was lost")
echo "# agents whose lease lapsed and that claimed their host again: $lost"
check "... no job failed" test ! -s "$T/jobs.err"

# SIGKILL of a whole host (its PID namespace's init: its agent and its jobs
# with it) while it holds weight: the kernel releases its holders, its loan
# is gone, its share stays in etcd (policy finish: a host cut off may still
# run them) until declare-dead once its agent's lease (ttl=5) expired; then
# the others take it up.
# h4 runs one long job of 1, alone, so that it still holds weight when
# it dies (the loops' short jobs may all have ended, and h4's share been
# given back, in the moment before the kill), while hosts 1-3 run loops.
start_loops 1 2 3
watch_start 12
# holds H: host H holds weight
holds() {
	[ "$(stat_field "$1" used)" -gt 0 ]
}
# (every claim there: a lease lapsed under load is claimed again first)
until_true 5 claimed
in_host_bg 4 wsem run $N --weight 1 --timeout 60 -- sleep 100
check "h4 holds weight" until_true 20 holds 4
eval "kill -KILL \$anchor_4"
s4=$(share h4)
eval "wait \$agent_4"
echo "# SIGKILL of h4's PID namespace with a share of $s4"
# (at once: the dead agent's lease has 3-5 s left, ttl=5 renewed every
# third of it, and the checks below may take seconds under load)
check "h4 SIGKILLed whole: declare-dead refused while its agent's lease lasts" \
	sh -c "! wsem-agent -c $T/h1.conf declare-dead $N h4 ||
		{ tail -n 8 $T/agent4.log; exit 1; }"
# gone_or_idle H: host H's semaphore is gone (its last handle closed) or
# holds nothing and is lent nothing
gone_or_idle() {
	[ ! -e "$T/h$1/$N" ] || { field_is "$1" used 0 && field_is "$1" capacity 0; }
}
check "... its semaphore holds nothing and is lent nothing (or is gone)" \
	until_true 5 gone_or_idle 4
check "... its share stays in etcd" test "$(share h4)" -gt 0
check "... declare-dead done once the lease has expired, ttl= after" \
	until_true 12 wsem-agent -c "$T/h1.conf" declare-dead $N h4
check "... no share of h4 left" share_is h4 0
# shares_full: hosts 1-3 have all of the capacity in etcd, read at one
# revision (under steady demand the shares move from host to host all the
# time: three reads would rarely add up)
shares_full() {
	[ "$(etcdctl --endpoints $EP get --prefix --print-value-only \
		"/wsem/$N/share/" | awk '{ s += $1 } END { print s + 0 }')" -eq $CAP ]
}
if until_true 10 shares_full; then
	result "... and the other hosts take all $CAP up" 0
else
	result "... and the other hosts take all $CAP up" 1
	for h in 1 2 3; do
		echo "# h$h: share $(share h$h); $(tail -n 3 "$T/agent$h.log" |
			tr '\n' ' ')"
	done
fi
watch_end "a host SIGKILLed whole"
HOSTS="1 2 3"
all_back "a host SIGKILLed"

# A host's network cut off and restored, policy finish (seats): h1 holds
# 2; cut off, its agent stops lending a margin before its etcd lease
# (ttl=5) can expire, while its job runs on and its share stays in etcd;
# the others run jobs in the rest; restored, h1 lends its share again.
in_host_bg 1 wsem run $N --weight 2 --timeout 60 -- \
	sh -c "until [ -e '$T/cut-end' ]; do sleep 0.5; done"
job=$!
check "partition (finish): h1 holds 2" until_true 10 field_is 1 used 2
HP0=$HP
HP="$T/h1/$N $T/h2/$N $T/h3/$N"
watch_start 28
$IP link set vh1 down
tc=$(date +%s)
check "h1 cut off: it lends nothing before its lease can expire (within 6 s), 2 still held" \
	until_true 6 field_is 1 capacity 0
echo "# h1 stopped lending $(($(date +%s) - tc)) s after the cut"
check "... its job runs on" field_is 1 used 2
check "... its share of 2 stays in etcd (policy finish)" share_is h1 2
in_host 2 wsem run $N --weight 4 --timeout 20 -- true
result "... a job of 4 (the rest) runs on h2 meanwhile" $?
check "... a job of 5 on h3 times out (the cut host's 2 are not given away)" \
	sh -c "nsenter -t $anchor_3 $NSF -- wsem run $N --weight 5 --timeout 2 -- true 2>&1 |
		grep -q 'timed out'"
$IP link set vh1 up
# lends_again: h1 lends at least its share of 2 again
lends_again() {
	[ "$(stat_field 1 capacity)" -ge 2 ]
}
check "h1 restored: it lends its share again" until_true 30 lends_again
touch "$T/cut-end"
wait $job
result "... and h1's job ended well" $?
watch_end "a host cut off (finish)"
HP=$HP0
all_back "a host cut off and restored"
grep -h "lending nothing\|renewed the lease again\|claimed again" "$T/agent1.log" |
	sed 's/^/# h1: /'

# The same under policy deadline (a second limit, gpus 2, on h2 and h3):
# h2 holds 2, h3 waits for 1; h2 cut off, its agent ends its job a margin
# before the lease can expire, etcd deletes h2's claim when it does, h3's
# agent takes h2's share back ttl=5 s after it saw the claim gone, and
# h3's job runs: within twice ttl=5 and the looks at etcd; never more
# than 2 held on both together.
CAP0=$CAP
N=gpus
CAP=2
deadline_agents $N "ttl=5" 2 3
check "policy deadline: two agents start (gpus 2 on h2 and h3)" \
	until_true 30 loans_of $N $CAP 2 3
in_host_bg 2 wsem run $N --weight 2 --timeout 30 -- sleep 60
job=$!
check "... h2 holds 2" \
	until_true 10 field_is 2 used 2
in_host_bg 3 wsem run $N --weight 1 --timeout 40 -- sh -c "date +%s.%N >$T/job3.ran"
job3=$!
until_true 10 field_is 3 waiters 1
HP0=$HP
HP="$T/h2/$N $T/h3/$N"
watch_start 20
$IP link set vh2 down
tc=$(date +%s.%N)
wait $job
r=$?
check "h2 cut off: its job is ended (SIGKILL, wsem run's status $r)" test $r -ge 128
echo "# h2's job ended $(echo "$(date +%s.%N) $tc" | awk '{ printf "%.1f", $1 - $2 }') s after the cut"
# holds_and_lends_nothing H: host H's semaphore holds nothing, lent nothing
holds_and_lends_nothing() {
	field_is "$1" used 0 && field_is "$1" capacity 0
}
check "... nothing held on h2, nothing lent" holds_and_lends_nothing 2
check "... h3's agent takes h2's share back ttl=5 s after h2's claim went, h3's job runs (within 16 s of the cut)" \
	until_true 16 sh -c "! kill -0 $job3 2>/dev/null"
wait $job3
result "... and ends well" $?
ran=$(awk -v c="$tc" '{ printf "%.1f", $1 - c }' "$T/job3.ran" 2>/dev/null)
echo "# h3's job ran ${ran:-?} s after the cut"
watch_end "a host cut off (deadline)"
$IP link set vh2 up
check "h2 restored: its agent claims h2 again" \
	until_true 30 grep -q "claimed again" "$T/gpus-agent2.log"
# The agent's own death: under deadline it lends with
# WSEM_LEND_END_HOLDERS, and the kernel kills its host's holders when its
# handle goes, however it dies; h2's agent takes h3's share back once
# h3's claim has been gone for ttl=5 s.
in_host_bg 3 wsem run $N --weight 1 --timeout 30 -- sleep 60
job=$!
check "h3 holds 1 of gpus" until_true 15 field_is 3 used 1
eval "p=\$gpus_agent_3"
kill -KILL "$(real_pid "$p")"
wait "$p"
wait $job
r=$?
check "SIGKILL of h3's deadline agent: the kernel ends h3's job at once (status $r)" \
	test $r -ge 128
check "... nothing held on h3" until_true 2 field_is 3 used 0
check "... h2's agent takes h3's share back (within its lease and ttl=5 s)" \
	until_true 16 share_is h3 0
eval "p=\$gpus_agent_2"
kill "$(real_pid "$p")"
wait "$p"
result "gpus' agent on h2 stops on SIGTERM" $?
check "policy deadline: every share back in etcd" \
	until_true 10 no_shares
grep -h "lending nothing\|SIGKILL\|claimed again" "$T"/gpus-agent*.log |
	sed 's/^/# gpus: /'
N=seats
CAP=$CAP0
HP=$HP0

# One agent per host: a second one for h3 waits, lending nothing.
in_host_bg 3 wsem-agent -c "$T/h3.conf" >"$T/agentx.log" 2>&1
agent_x=$!
sleep 2
check "a second agent for h3 waits for the first one's claim" \
	grep -q "another wsem-agent serves this host" "$T/agentx.log"
check "... and does not serve it" sh -c "! grep -q 'across the cluster' $T/agentx.log"
kill "$(real_pid $agent_x)"
wait "$agent_x"
result "... and stops on SIGTERM while it waits, exit 0" $?

# An agent SIGKILLed while its host holds 2: the host grants nothing more,
# the share stays in etcd, a new agent takes it up once the dead one's
# etcd lease (ttl=5) has expired.
in_host_bg 1 wsem run $N --weight 2 --timeout 30 -- sleep 10
job=$!
until_true 10 field_is 1 used 2
stop_agent KILL 1
check "SIGKILL of h1's agent: the loan is withdrawn (capacity 0)" \
	field_is 1 capacity 0
check "... and 2 still held" field_is 1 used 2
check "... and h1's share of 2 stays in etcd" share_is h1 2
start_agent 1
check "a new agent on h1 takes its share of 2 up" \
	until_true 9 field_is 1 capacity 2
wait $job
check "... and gives it back once the job ends" \
	until_true 5 share_is h1 0

# declare-dead: a host whose agent and jobs are gone for good.
in_host_bg 2 wsem run $N --weight 1 --timeout 30 -- sleep 30
job=$!
check "a job of 1 on h2" until_true 10 field_is 2 used 1
stop_agent KILL 2
kill -KILL "$(real_pid $job)"
wait $job
check "h2 dead, its job too, with a share of 1 in etcd" share_is h2 1
check "wsem-agent declare-dead $N h2 is refused while the agent's lease lasts" \
	sh -c "! wsem-agent -c $T/h1.conf declare-dead $N h2"
# (each try once the lease expired waits ttl=5 s with the claim gone)
check "... and gives the share back once it has expired, ttl= after" \
	until_true 10 wsem-agent -c "$T/h1.conf" declare-dead $N h2
check "... no share of h2 left" share_is h2 0

for h in 1 3; do
	stop_agent TERM $h
	result "agent h$h stops on SIGTERM, exit 0" $?
done
check "every share back in etcd" no_shares
check "nothing held on any host" wait_quiet
for h in $ALL_HOSTS; do
	echo "# agent h$h: $(grep -c ' share ' "$T/agent$h.log") share changes logged"
	[ "$fails" -eq 0 ] || tail -n 20 "$T/agent$h.log" | sed "s/^/# h$h: /"
done
echo "1..$n"
exit $((fails > 0))
