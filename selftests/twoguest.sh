#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# One cluster limit across two guests: this guest's side of
# selftests/vm/twoguest.sh, which boots two guests (two kernels, two
# wsem.ko) joined by QEMU's socket netdev over the host's loopback and
# runs this in each, TWOGUEST_ROLE=a in one, b in the other.  The only
# address besides the loopback's is on that link: $NET.1 (a), $NET.2 (b).
# TAP.  Not a *_test.sh: the lanes do not run it alone.
#
# a: an etcd member at $NET.1:2379 and an agent (host=a); b: an agent
# (host=b) whose endpoints= is a's etcd.  Both declare "seats" of
# capacity $CAP.  The guests wait for each other through keys of their own
# in etcd (/twoguest/...), every wait bounded; a guest whose etcd or agent
# fails stops there and says so (/twoguest/ROLE-done), and the other gives
# up waiting for it at once.  A job of 3 on a takes a
# share of 3; a job of 2 on b then waits while a holds it (b is lent at
# most 1), and runs once a's job ends (b's share 2); meanwhile a samples
# the sum of the shares in etcd; at the end b's agent stops and b says so
# (/twoguest/b-done; before that, an agent on b that says it is host a is
# refused, a's claim unchanged), then a checks that every share is back, that the
# sum never exceeded $CAP, and stops its agent and etcd.
#
# Between the two, a host asleep past its loan's deadline (issue 43: a
# suspended host): a second limit, "gpus" of capacity $GCAP under
# policy=deadline, ttl=5.  A job on b holds all of it, writing
# CLOCK_BOOTTIME (/proc/uptime) to a file every 0.2 s, and a job on a
# waits for it; b stops its agent (SIGSTOP) and suspends itself to RAM
# (ACPI S3) for $SLEEP s, woken by its RTC's alarm.  Meanwhile a's etcd
# expires b's lease and a's agent takes b's share back: a's job runs while
# b sleeps.  At b's resume its kernel has ended the loan at its deadline
# (CLOCK_BOOTTIME, which counts the sleep): b's job is SIGKILLed before it
# runs again, with no tick written after the resume, and b's capacity is 0
# while a holds all of it, all before b's agent runs again (SIGCONT after
# these checks).  (With the loan's timer on CLOCK_MONOTONIC, the job wrote
# ticks for 3 s after the resume.)

. "$(dirname "$0")/util.sh"

ROLE=${TWOGUEST_ROLE:-}
N=seats
CAP=4
G=gpus
GCAP=2
SLEEP=30
RTC=/sys/class/rtc/rtc0/wakealarm
NET=10.78.0
EP=http://$NET.1:2379
T=/tmp/twoguest.$$
export ETCDCTL_API=3

case $ROLE in
a) me=1 peer=b ;;
b) me=2 peer=a ;;
*)
	echo "1..0 # SKIP TWOGUEST_ROLE is not a or b: selftests/vm/twoguest.sh runs this"
	exit 4 ;;
esac
if [ ! -c /dev/wsem ]; then
	echo "1..0 # SKIP no /dev/wsem: the wsem module is not loaded"
	exit 4
fi
for b in etcd etcdctl wsem-agent; do
	command -v $b >/dev/null || {
		echo "Bail out! no $b in the guest (mkinitramfs.sh)"
		exit 1
	}
done
mkdir -p "$T"

# mark KEY [VALUE]: tell the other guest (/twoguest/KEY in etcd)
mark() {
	ectl put "/twoguest/$1" "${2:-1}" >/dev/null
}
# marked KEY: the other guest said KEY
marked() {
	[ -n "$(ectl get --print-value-only "/twoguest/$1")" ]
}
# claimed H: host H's agent's claim, alive/H, is in etcd
claimed() {
	[ -n "$(ectl get --keys-only "/wsem/$N/alive/$1")" ]
}
# shares_sum: the sum of every host's share in etcd, from one read
shares_sum() {
	ectl get --prefix --print-value-only "/wsem/$N/share/" |
		awk 'NF { s += $1 } END { print s + 0 }'
}
# says_whose H: host H's claim names its machine and boot
says_whose() {
	ectl get --print-value-only "/wsem/$N/alive/$1" | grep -q "machine=.* boot=."
}
# field F [SEM]: field F of this guest's semaphore SEM (default $N; wsem
# stat --json); field_is F V [SEM]: it is V
field() {
	stat_key "${2:-$N}" "$1"
}
field_is() {
	[ "$(field "$1" "${3:-$N}")" = "$2" ]
}
# waits [SEM]: one waiter on this guest's SEM (default $N), nothing held
waits() {
	field_is used 0 "${1:-$N}" && field_is waiters 1 "${1:-$N}"
}
# up: CLOCK_BOOTTIME in seconds (/proc/uptime: it counts time suspended)
up() {
	cut -d' ' -f1 /proc/uptime
}
# can_suspend: suspend to RAM (S3, "deep") and an RTC alarm to wake it
can_suspend() {
	grep -qw deep /sys/power/mem_sleep 2>/dev/null && [ -w $RTC ]
}
# suspend_to_ram SECONDS: S3 until the RTC's alarm SECONDS from now (not
# to idle: in QEMU the RTC's alarm wakes S3, through the firmware, but not
# s2idle); returns once resumed
suspend_to_ram() {
	echo deep >/sys/power/mem_sleep && echo 0 >$RTC &&
		echo "+$1" >$RTC && echo mem >/sys/power/state
}
# ticks_before LIMIT: the job's ticks ($T/ticks) are all before LIMIT
# (CLOCK_BOOTTIME seconds), and there is one
ticks_before() {
	awk -v lim="$1" '{ n++; if ($1 + 0 >= lim + 0) late++; last = $1 }
		END { print n + 0, "ticks, the last at", last, "s,", late + 0,
			"at or after", lim, "s"; exit !(n > 0 && late == 0) }' \
		"$T/ticks"
}
# peer_wait SECONDS CMD...: as until_true, but given up as soon as the
# other guest has ended its part (PEER-done: it stopped early on a failure)
peer_wait() {
	end=$(($(date +%s) + $1))
	shift
	while ! "$@" 2>/dev/null; do
		marked $peer-done && { echo "$peer stopped first"; return 1; }
		[ "$(date +%s)" -le "$end" ] || return 1
		sleep 0.1
	done
}
# stop_if_failed: after a failure that leaves nothing to test (etcd, the
# agents), end here, and tell the other guest (ROLE-done) so that it does
# not wait for us
stop_if_failed() {
	[ $fails -eq 0 ] && return 0
	mark "$ROLE-done" $fails 2>/dev/null
	sed "s/^/# $ROLE agent: /" "$T/agent.log" 2>/dev/null
	echo "# $ROLE: stopping here, $fails failed"
	tap_end
	exit
}

# net_up: the NIC's driver (the guest kernel's e1000, mkinitramfs.sh), its
# one address; the link's interface is the one that is not lo
nic=
net_up() {
	if [ -f /lib/modules/net/order ]; then
		while read -r m; do
			grep -q "^$m " /proc/modules ||
				insmod "/lib/modules/net/$m.ko" || return 1
		done </lib/modules/net/order
	fi
	until_true 10 find_nic || { echo "no NIC in /sys/class/net"; return 1; }
	ip link set lo up &&
		ip addr add $NET.$me/24 dev "$nic" &&
		ip link set "$nic" up
}
find_nic() {
	for f in /sys/class/net/*; do
		[ "${f##*/}" = lo ] && continue
		nic=${f##*/}
		return 0
	done
	return 1
}
# only_link_address: the guest's IPv4 addresses are the loopback's and
# ours on the link, and no route leaves the link
only_link_address() {
	a=$(ip -4 -o addr show | awk '{ print $4 }' | sort | tr '\n' ' ')
	[ "$a" = "$NET.$me/24 127.0.0.1/8 " ] ||
		{ echo "addresses: $a"; return 1; }
	! ip route show | grep -v "^$NET.0/24 " | grep -q . ||
		{ ip route show; return 1; }
}

# sample: until $T/sample-stop, the sum of the shares in etcd, read again
# and again; "SAMPLES MAX" in $T/sample at the end
sample() {
	k=0 max=0
	while [ ! -e "$T/sample-stop" ]; do
		v=$(ectl get --prefix --print-value-only "/wsem/$N/share/" \
			2>/dev/null) || continue
		s=$(echo "$v" | awk 'NF { s += $1 } END { print s + 0 }')
		k=$((k + 1))
		[ "$s" -gt "$max" ] && max=$s
		[ "$s" -gt $CAP ] && echo "sum $s at sample $k" >>"$T/over"
	done
	echo "$k $max" >"$T/sample"
}

# replay: every change of a share in etcd since its start (etcdctl watch
# from revision 1, stopped after 4 s), the sum of the shares after each
# (each of the agents' transactions changes one share: a change is a
# revision); "CHANGES MAX OVER LAST" in $T/replay
replay() {
	timeout 4 etcdctl --endpoints $EP watch --prefix "/wsem/$N/share/" \
		--rev=1 >"$T/watch" 2>&1
	awk -v cap=$CAP '
	function sum_now() {
		c++
		if (s > max)
			max = s
		if (s > cap)
			over++
	}
	st == 0 && ($0 == "PUT" || $0 == "DELETE") { t = $0; st = 1; next }
	st == 1 && t == "DELETE" { s -= v[$0]; v[$0] = 0; sum_now(); st = 0; next }
	st == 1 { k = $0; st = 2; next }
	st == 2 { s += $0 - v[k]; v[k] = $0; sum_now(); st = 0; next }
	END { print c + 0, max + 0, over + 0, s + 0 }' "$T/watch" >"$T/replay"
}

agent=
etcd_pid=
job=
gjob=
sampler=
cleanup() {
	touch "$T/sample-stop" "$T/job-end" "$T/gpus-end"
	# shellcheck disable=SC2086 # pids
	kill $agent $job $gjob $sampler $etcd_pid 2>/dev/null
	wait 2>/dev/null
}
trap cleanup EXIT

check "$ROLE: its NIC is up at $NET.$me/24 (QEMU's socket netdev)" net_up
echo "# $ROLE: kernel $(uname -r), $nic"
check "$ROLE: no other address than the link's and the loopback's, no route off the link" \
	only_link_address

if [ "$ROLE" = a ]; then
	etcd_alone a "$T/etcd" "$T/etcd.log"
	te=$(date +%s)
	check "a: etcd answers at $EP" until_true 60 ectl put /twoguest/probe 1
else
	# a boots, then starts etcd: seconds under TCG, and its kernel may
	# come up later than ours
	te=$(date +%s)
	check "b: a's etcd answers over the link at $EP" \
		until_true 120 ectl endpoint health
fi
echo "# $ROLE: etcd answered after $(($(date +%s) - te)) s"
stop_if_failed

cat >"$T/wsem.conf" <<EOF
$N capacity=$CAP cluster=etcd endpoints=$EP host=$ROLE hold=300 ttl=5
$G capacity=$GCAP cluster=etcd endpoints=$EP host=$ROLE hold=300 ttl=5 policy=deadline
EOF
wsem-agent -c "$T/wsem.conf" >"$T/agent.log" 2>&1 &
agent=$!
check "$ROLE: the agent starts: $N is a loans semaphore of ceiling $CAP, lent nothing" \
	until_true 30 field_is ceiling $CAP
check "$ROLE: ... and $G, policy=deadline: a loans semaphore of ceiling $GCAP" \
	until_true 30 field_is ceiling $GCAP $G
check "$ROLE: the agent claims host $ROLE in etcd (alive/$ROLE)" \
	until_true 15 claimed "$ROLE"
stop_if_failed

if [ "$ROLE" = a ]; then
	sample &
	sampler=$!
	check "a: b's agent claims host b in etcd (over the link)" \
		peer_wait 150 claimed b
	stop_if_failed

	wsem run $N --weight 3 --timeout 60 -- \
		sh -c "until [ -e '$T/job-end' ]; do sleep 0.1; done" &
	job=$!
	check "a: a job of 3 runs on a: a's share in etcd moves to 3" \
		until_true 15 share_is a 3
	check "a: a holds 3" field_is used 3
	mark a-holds

	check "a: b's job of 2 waits while a holds 3 (b says so)" \
		peer_wait 60 marked b-waits
	touch "$T/job-end"
	wait $job
	check "a: a's job ends, exit 0" test $? -eq 0
	job=
	check "a: a's share goes back (b's job waits for it)" \
		until_true 15 share_is a 0

	# b asleep past its loan's deadline: a's job of $GCAP runs while b
	# sleeps, and holds until b has checked its side after its resume
	check "a: b's job holds all $GCAP of $G (b says so)" \
		peer_wait 60 marked b-gpus-holds
	wsem run $G --weight $GCAP --timeout 150 -- sh -c \
		"touch '$T/granted'; until [ -e '$T/gpus-end' ]; do sleep 0.1; done" &
	gjob=$!
	check "a: a job of $GCAP of $G waits on a (1 waiter, nothing held)" \
		until_true 10 waits $G
	mark a-gpus-waits
	check "a: b suspends itself to RAM (b says so)" \
		peer_wait 60 marked b-sleeps
	if [ "$(ectl get --print-value-only /twoguest/b-sleeps)" = skip ]; then
		echo "ok $((n += 1)) a: a's job runs while b sleeps # SKIP b cannot suspend to RAM"
	else
		tsl=$(date +%s)
		until_true $((SLEEP + 30)) test -e "$T/granted" && ! marked b-awake
		result "a: a's job of $GCAP runs while b sleeps (etcd expired b's lease, a's agent took b's share)" $?
		echo "# a: a's job ran $(($(date +%s) - tsl)) s after b went to sleep"
	fi
	check "a: b resumes and says its job ended at the resume (b-awake)" \
		peer_wait 90 marked b-awake
	touch "$T/gpus-end"
	wait $gjob
	check "a: a's job of $G ends, exit 0" test $? -eq 0
	gjob=
	check "a: a's share of $G goes back" until_true 15 share_is a 0 $G

	check "a: b ends its part (b-done) within 90 s" \
		until_true 90 marked b-done
	touch "$T/sample-stop"
	wait $sampler
	sampler=
	read -r k max <"$T/sample"
	echo "# a: $k samples of the shares in etcd, the largest sum $max"
	[ ! -e "$T/over" ] && [ "$max" -le $CAP ]
	result "a: the sum of the shares in etcd never above $CAP ($k samples)" \
		$? "$T/over"
	[ "$k" -ge 10 ] && [ "$max" -ge 3 ]
	result "a: the sampler read etcd at least 10 times and saw a's 3" $?
	check "a: nothing held on a" field_is used 0
	check "a: every share back in etcd (their sum 0)" \
		until_true 10 test "$(shares_sum)" = 0
	kill -TERM $agent
	wait $agent
	result "a: the agent stops on SIGTERM, exit 0" $? "$T/agent.log"
	agent=
	replay
	read -r c max over last <"$T/replay"
	echo "# a: $c changes of a share in etcd, the largest sum $max"
	[ "$over" = 0 ] && [ "$c" -ge 4 ] && [ "$max" -ge 3 ] && [ "$last" = 0 ]
	result "a: etcd's history: after each of its $c changes of a share the sum at most $CAP, 0 at the end" \
		$? "$T/watch"
else
	check "b: a's agent's claim of host a is in etcd" \
		peer_wait 30 claimed a
	stop_if_failed
	check "b: a's job holds (a says so)" peer_wait 90 marked a-holds
	check "b: a's share in etcd is 3" share_is a 3

	wsem run $N --weight 2 --timeout 60 -- sh -c \
		"touch '$T/ran'; until [ -e '$T/job-end' ]; do sleep 0.1; done" &
	job=$!
	check "b: a job of 2 on b waits (1 waiter, nothing held)" \
		until_true 10 waits
	sleep 2
	[ ! -e "$T/ran" ] && field_is waiters 1 && [ "$(field capacity)" -le 1 ] &&
		[ $(($(share a) + $(share b))) -le $CAP ]
	result "b: 2 s later it still waits, b lent at most 1, a's and b's shares at most $CAP" \
		$?
	echo "# b: lent $(field capacity), share a $(share a), share b $(share b)"
	mark b-waits

	check "b: once a's job ends, b's job runs" until_true 30 test -e "$T/ran"
	check "b: b's share in etcd moves to 2" until_true 10 share_is b 2
	check "b: b holds 2" field_is used 2
	touch "$T/job-end"
	wait $job
	check "b: b's job ends, exit 0" test $? -eq 0
	job=
	check "b: b's share goes back to etcd" until_true 10 share_is b 0
	check "b: nothing held on b" field_is used 0

	# Asleep past the loan's deadline: a job holds all of $G, ticking
	# CLOCK_BOOTTIME into $T/ticks, while a's job waits for it; then b
	# suspends itself to RAM for $SLEEP s
	wsem run $G --weight $GCAP --timeout 60 -- sh -c \
		"while :; do cut -d' ' -f1 /proc/uptime >>'$T/ticks'; sleep 0.2; done" &
	gjob=$!
	check "b: a job holds all $GCAP of $G (policy=deadline)" \
		until_true 20 field_is used $GCAP $G
	mark b-gpus-holds
	check "b: a's job of $GCAP waits for it (a says so)" \
		peer_wait 60 marked a-gpus-waits
	if can_suspend; then
		before=$(cat /sys/power/suspend_stats/success)
		mark b-sleeps $SLEEP
		# b's agent stopped too, until the checks below: at the
		# resume only the kernel can end the job (a running agent
		# that found its lease gone would end it too, soon after)
		kill -STOP $agent
		ts=$(up)
		suspend_to_ram $SLEEP
		st=$? tr=$(up)
		[ $st -eq 0 ] &&
			[ "$(cat /sys/power/suspend_stats/success)" -gt "$before" ] &&
			awk -v a="$ts" -v b="$tr" -v s=$SLEEP 'BEGIN { exit !(b - a >= s - 2) }'
		result "b: suspended to RAM (S3, the RTC's alarm +$SLEEP s): at $ts s, resumed at $tr s" $?
		wait $gjob
		check "b: its job was ended by SIGKILL (wsem run exits 137)" \
			test $? -eq 137
		gjob=
		# a tick at or after ts + SLEEP/2 is one the job wrote after
		# the resume
		lim=$(awk -v a="$ts" -v s=$SLEEP 'BEGIN { print a + s / 2 }')
		check "b: the job wrote nothing after the resume: its kernel ended the loan at its deadline" \
			ticks_before "$lim"
		echo "# b: $(ticks_before "$lim")"
		check "b: b's loan of $G is gone: capacity 0" field_is capacity 0 $G
		check "b: ... nothing held" field_is used 0 $G
		kill -CONT $agent
	else
		mark b-sleeps skip
		echo "ok $((n += 1)) b: asleep past the loan's deadline # SKIP no suspend to RAM woken by an RTC alarm"
		kill $gjob
		wait $gjob
		gjob=
	fi
	mark b-awake
	check "b: b's share of $G in etcd is 0 (a's agent took it)" \
		until_true 30 share_is b 0 $G
	kill -TERM $agent
	wait $agent
	result "b: the agent stops on SIGTERM, exit 0" $? "$T/agent.log"
	agent=

	# One agent per host: an agent on b that says it is host a finds
	# a's claim made by another machine (another boot, and another
	# machine id where both have one), and is refused at once; a's
	# claim stays as it was.
	la=$(ectl get "/wsem/$N/alive/a" -w json | sed -n 's/.*"lease":\([0-9]*\).*/\1/p')
	sed 's/host=b/host=a/' "$T/wsem.conf" >"$T/same.conf"
	timeout 30 wsem-agent -c "$T/same.conf" >"$T/same.log" 2>&1
	result "b: an agent on b with host=a is refused (exit 1)" \
		"$(($? != 1))" "$T/same.log"
	check "b: ... naming another machine's agent" \
		grep -q "another machine's wsem-agent serves this host" "$T/same.log"
	sed 's/^/# b: /' "$T/same.log"
	lb=$(ectl get "/wsem/$N/alive/a" -w json | sed -n 's/.*"lease":\([0-9]*\).*/\1/p')
	check "b: ... and a's claim in etcd is the same (lease $la)" \
		test -n "$la" -a "$la" = "$lb"
	check "b: ... and says whose it is (machine=, boot=)" says_whose a
	mark b-done $fails
fi
[ $fails -eq 0 ] || sed "s/^/# $ROLE agent: /" "$T/agent.log"
tap_end
