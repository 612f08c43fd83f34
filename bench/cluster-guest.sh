#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# make bench-cluster's part in the guest (bench/cluster.sh boots it; busybox
# sh; /init has loaded wsem.ko).  One etcd member on the guest's loopback
# and three simulated hosts, each an IPC namespace of its own with its
# wsemfs mounted at $T/hN (as fleet_test.sh's smoke mode sets them up), a
# cluster limit "seats" of capacity 6 and, per host, a wsem-agent for it.
# In this order:
#   3s. the job script of shifting demand on a static split: a plain
#       semaphore "split" of capacity 2 on each host, no agent running;
#   3c. the same job script on "seats", the agents running with the
#       defaults (hold= 1000 ms) but ttl=5; (4) their CPU time and the
#       share changes they logged over that run;
#   1.  acquire+release pairs on h1, whose share (1) suffices: its agent
#       runs with hold=600000 so that the share stays, next to a plain
#       semaphore "plain" in the same namespace;
#   2.  TRIES acquires on h2, which has no share: each waits for its agent
#       to get one from etcd; hold=100 gives the share back between tries
#       (each try starts once etcd has no share of h2 and its semaphore
#       no loan); (4) the agent's CPU time and share changes over them.
# Figures go to the console as "@@..." lines (wsem-cluster-bench's, and
# "@@agent ..." lines here); the progress as "# ..." lines.
# shellcheck disable=SC2154 # anchor_H, agent_H: set through eval
set -u
# until_true: the selftests' helpers (mkinitramfs.sh packs util.sh beside
# the tests, at /selftests in the guest)
# shellcheck source=../selftests/util.sh
. /selftests/util.sh

T=/tmp/cb
N=seats
CAP=6
EP=http://127.0.0.1:2379
PHASE=${WSEM_BC_PHASE:-10}
TRIES=${WSEM_BC_TRIES:-30}
B=wsem-cluster-bench
export ETCDCTL_API=3
mkdir -p "$T"

say() { echo "# bench-cluster: $*"; }
fail() {
	say "FAILED: $*"
	for f in "$T"/*.log; do
		[ -f "$f" ] && tail -n 15 "$f" | sed "s|^|# ${f##*/}: |"
	done
	exit 1
}

# in_host H CMD...: CMD in host H's IPC namespace (nsenter execs CMD)
in_host() {
	eval "a=\$anchor_$1"
	shift
	nsenter -t "$a" --ipc -- "$@"
}

# other_ipc_ns PID: PID is in another IPC namespace than this shell
other_ipc_ns() {
	[ "$(readlink "/proc/$1/ns/ipc")" != "$(readlink /proc/self/ns/ipc)" ]
}

# stat_field H NAME FIELD: a field of host H's semaphore NAME
stat_field() {
	stat_key "$T/h$1/$2" "$3"
}
field_is() {
	[ "$(stat_field "$1" "$2" "$3")" = "$4" ]
}

# no_share H: etcd has no share of host H, and its semaphore no loan
no_share() {
	share_is "h$1" 0 && field_is "$1" $N capacity 0
}

# start_agent H CONF_WORDS: host H's agent for "seats" with the words
# (hold=, ttl=) added to its line; its pid in agent_H
start_agent() {
	echo "$N capacity=$CAP cluster=etcd endpoints=$EP host=h$1 $2" \
		>"$T/h$1.conf"
	eval "a=\$anchor_$1"
	nsenter -t "$a" --ipc -- wsem-agent -c "$T/h$1.conf" \
		>>"$T/agent$1.log" 2>&1 &
	eval "agent_$1=\$!"
	until_true 60 field_is "$1" $N ceiling $CAP ||
		fail "h$1's agent did not make its loans semaphore"
}
stop_agent() {
	eval "p=\$agent_$1"
	kill "$p"
	wait "$p"
	eval "agent_$1="
}

# cpu_ticks PID: utime + stime of PID (/proc/PID/stat, clock ticks)
cpu_ticks() {
	sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'
}
# share_lines H: the "share A -> B" lines in host H's agent's log
share_lines() {
	grep -c ': share [0-9]* -> [0-9]*' "$T/agent$1.log"
}

cleanup() {
	for h in 1 2 3; do
		eval "kill \${agent_$h:-} 2>/dev/null"
	done
	for h in 1 2 3; do
		eval "kill \${anchor_$h:-} 2>/dev/null"
	done
	kill "${etcd_pid:-}" 2>/dev/null
	wait 2>/dev/null
	for h in 1 2 3; do
		umount "$T/h$h" 2>/dev/null
	done
}
trap cleanup EXIT

say "kernel $(uname -r), $(nproc) CPUs; phases of $PHASE s, $TRIES tries"
echo "@@meta kernel $(uname -r)"
echo "@@meta cpus $(nproc)"
ip link set lo up
etcd_alone m1 "$T/etcd" "$T/etcd.log"
until_true 120 etcdctl --endpoints $EP put /probe 1 >/dev/null ||
	fail "etcd does not answer"
say "etcd answers"

for h in 1 2 3; do
	mkdir -p "$T/h$h"
	unshare --ipc sleep 100000 &
	eval "anchor_$h=\$!"
	a=$!
	until_true 5 other_ipc_ns "$a" || fail "no IPC namespace"
	nsenter -t "$a" --ipc -- mount -t wsem wsem "$T/h$h" ||
		fail "mounting h$h's wsemfs"
done
anchors=$anchor_1,$anchor_2,$anchor_3

# 3s: the static split.
for h in 1 2 3; do
	in_host $h wsem create split $((CAP / 3)) || fail "wsem create split"
done
say "3s. shifting demand on a static split ($((CAP / 3)) per host)"
$B shift split $CAP "$PHASE" "$T" "$anchors" - 0 >"$T/static.out" ||
	fail "the static split's run: $(cat "$T/static.out")"
sed 's/^@@shift/@@static/' "$T/static.out"

# 3c: the cluster limit, agents with the default hold.
for h in 1 2 3; do
	start_agent $h "ttl=5"
done
say "3c. shifting demand on the cluster limit (agents: default hold=)"
c0=0 l0=0
for h in 1 2 3; do
	eval "c0=\$((c0 + \$(cpu_ticks \$agent_$h)))"
	l0=$((l0 + $(share_lines $h)))
done
$B shift $N $CAP "$PHASE" "$T" "$anchors" "$agent_1,$agent_2,$agent_3" \
	"$etcd_pid" >"$T/cluster.out" ||
	fail "the cluster limit's run: $(cat "$T/cluster.out")"
sed 's/^@@shift/@@cluster/' "$T/cluster.out"
c1=0 l1=0
for h in 1 2 3; do
	eval "c1=\$((c1 + \$(cpu_ticks \$agent_$h)))"
	l1=$((l1 + $(share_lines $h)))
done
# ticks changes (all three agents, over the run)
echo "@@agent shift $((c1 - c0)) $((l1 - l0))"
until_true 20 no_shares || fail "shares still in etcd after the run"
for h in 1 2 3; do
	stop_agent $h
done

# 1: the share suffices.
say "1. acquire+release pairs on h1 with its share lent"
start_agent 1 "ttl=5 hold=600000"
in_host 1 wsem create plain $CAP || fail "wsem create plain"
in_host 1 wsem run $N --weight 1 --timeout 60 -- true || fail "the first job on h1"
until_true 10 field_is 1 $N capacity 1 || fail "h1 has no loan of 1"
share_is h1 1 || fail "h1's share in etcd is $(share h1), not 1"
in_host 1 $B pair $N plain "$agent_1" "$etcd_pid" || fail "the pairs"
stop_agent 1

# 2: the share comes from etcd.
say "2. $TRIES acquires on h2, each getting a share from etcd"
start_agent 2 "ttl=5 hold=100"
until_true 10 no_share 2 || fail "h2 has a share before the first try"
c0=$(cpu_ticks "$agent_2")
l0=$(share_lines 2)
i=0
while [ $i -lt "$TRIES" ]; do
	until_true 20 no_share 2 || fail "h2's share did not go back"
	in_host 2 $B fetch $N "$agent_2" "$etcd_pid" || fail "try $i"
	i=$((i + 1))
done
until_true 20 no_share 2 || fail "h2's share did not go back"
echo "@@agent fetch $(($(cpu_ticks "$agent_2") - c0)) $(($(share_lines 2) - l0))"
stop_agent 2
say "done"
