#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The wsem demonstration (busybox sh, in the VM, as root, module loaded):
# eight jobs of weights 1-3 share a semaphore of capacity 4 through
# `wsem run`; one job is SIGKILLed while it holds its lease, and its weight
# goes straight to the next job in the queue.  Prints a timeline, in which
# strict FIFO shows too: a weight-3 job at the head holds back a weight-1
# job behind it that would fit (no barging, no starvation).

CAP=4
LOG=/tmp/demo.log
: >"$LOG"

now() { cut -d' ' -f1 /proc/uptime; }
T0=$(now)
stamp() { awk -v a="$(now)" -v b="$T0" 'BEGIN { printf "%6.2f", a - b }'; }
say() { echo "$(stamp)s  $*"; }
# "USED WAITERS", from one look at the semaphore
state() {
	wsem stat build --json |
		sed 's/.*"used":\([0-9]*\).*"waiters":\([0-9]*\).*/\1 \2/'
}
used() { state | cut -d' ' -f1; }
waiting() { state | cut -d' ' -f2; }

# job N W SECONDS: one unit of work under `wsem run`; it logs its own view.
# wsem supervises it (the default): the lease ends when the job's shell
# ends, so killing the job returns the weight at once, whatever it started.
job() {
	wsem run build --weight "$2" -- sh -c '
		echo "$(cut -d" " -f1 /proc/uptime) start '"$1 $2"'" >>'"$LOG"'
		echo $$ >/tmp/job'"$1"'.pid
		sleep '"$3"'
		echo "$(cut -d" " -f1 /proc/uptime) end '"$1 $2"'" >>'"$LOG"'
	'
	echo "$(now) exit $1 $2 $?" >>"$LOG"
}

# The kernel's view: log used weight and waiters whenever they change.
monitor() {
	last=
	while [ ! -f /tmp/demo.done ]; do
		cur=$(state)
		[ "$cur" != "$last" ] && echo "$(now) sem $cur" >>"$LOG"
		last=$cur
		sleep 0.05
	done
}

echo "== wsem demo: capacity $CAP, eight jobs of weight 1-3, FIFO"
wsem create build "$CAP" --mode 0666 || exit 1
wsem ls
monitor &
mon=$!

# Arrival order is the queue order: start them one by one.
i=0
for w in 3 2 2 1 3 1 2 1; do
	i=$((i + 1))
	job "$i" "$w" 2 2>"/tmp/job$i.err" &
	while [ "$(waiting)" -eq 0 ] && [ "$(used)" -eq 0 ]; do sleep 0.05; done
	sleep 0.2
	say "job $i (weight $w) arrives: used $(used)/$CAP, $(waiting) waiting"
done

# Kill job 4 if it is running, else whichever job holds weight now (one
# that ends on its own just before is passed over: the kill must land).
sleep 0.5
victim=
for n in 4 3 2 5 6 7 8; do
	[ -f /tmp/job$n.pid ] && ! grep -q "end $n " "$LOG" || continue
	t=$(now)
	kill -9 "$(cat /tmp/job$n.pid)" 2>/dev/null || continue
	echo "$t kill $n" >>"$LOG"
	victim=$n
	break
done
if [ -n "$victim" ]; then
	say "SIGKILLed job $victim while it held its lease"
	sleep 0.3
	say "after the kill: used $(used)/$CAP, $(waiting) waiting"
fi
for n in 1 2 3 4 5 6 7 8; do
	while ! grep -q "exit $n " "$LOG"; do sleep 0.1; done
done
sleep 0.3
touch /tmp/demo.done
wait
# What the jobs said on stderr, but for the "Killed" of the victim's
# shell: its `wsem run` dies of the job's SIGKILL (as timeout(1) does),
# and busybox sh says so for a command in the foreground.
cat /tmp/job?.err | grep -vx Killed >&2

echo
echo "== timeline (seconds since start; what each job saw)"
sort -n "$LOG" | awk -v t0="$T0" -v cap="$CAP" '
	$2 == "start" { cur += $4; w[$3] = $4; if (cur > max) max = cur
		printf "%6.2fs  job %s starts, weight %s   -> %d/%d in use\n", $1 - t0, $3, $4, cur, cap }
	$2 == "kill" && !done[$3] { cur -= w[$3]; done[$3] = 1
		printf "%6.2fs  job %s gets SIGKILL         -> %d/%d in use, lease returned\n", $1 - t0, $3, cur, cap }
	$2 == "end" && !done[$3] { cur -= $4; done[$3] = 1
		printf "%6.2fs  job %s ends              -> %d/%d in use\n", $1 - t0, $3, cur, cap }
	$2 == "exit" && $5 != 0 { printf "%6.2fs  job %s exited with status %s\n", $1 - t0, $3, $5 }
	$2 == "sem" { if ($3 > kmax) kmax = $3
		printf "%6.2fs      kernel: used %s/%d, %s waiting\n", $1 - t0, $3, cap, $4 }
	END { printf "\npeak weight in use: %d of %d as the jobs saw it, %d as the kernel did\n", max, cap, kmax
		if (max > cap || kmax > cap) { print "LIMIT EXCEEDED"; exit 1 } }' || exit 1
echo "used at the end: $(used) (expected 0)"
wsem rm build
[ "$(grep -c ' start ' "$LOG")" -ge 7 ] || { echo "not every job ran"; exit 1; }
echo "demo ok"
