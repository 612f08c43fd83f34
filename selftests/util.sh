# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=sh
# Helpers that more than one shell selftest needs, as util.h is for the C
# ones: TAP lines, the most jobs a log shows at once, a semaphore's used
# weight.  Sourced by the test ("$(dirname "$0")/util.sh": mkinitramfs.sh
# puts it beside the tests in the guest), which sets T (its scratch
# directory), N (its semaphore, for wait_used) and CAP (its capacity,
# for at_cap_after_cheat); n and fails count the checks and the failed
# ones.  Plain sh: busybox ash and bash alike.
# shellcheck disable=SC2154 # T, N and CAP: the test's

n=0
fails=0

# need_module_and_python3: the TAP skip (exit 4) without the module, a
# bail-out without the guest's python3 (mkinitramfs.sh puts it there).
need_module_and_python3() {
	if [ ! -c /dev/wsem ]; then
		echo "1..0 # SKIP no /dev/wsem: the wsem module is not loaded"
		exit 4
	fi
	if [ ! -x /usr/bin/python3 ]; then
		echo "Bail out! no /usr/bin/python3 in the guest"
		exit 1
	fi
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

# stat_key SEM KEY: KEY's value in "wsem stat SEM --json", the first one:
# the semaphore's own (a "cluster" object, which wsem stat adds for a
# cluster limit of the caller's namespace, comes after it)
stat_key() {
	wsem stat "$1" --json | tr ',{}' '\n\n\n' |
		sed -n "s/^ *\"$2\": *//p" | head -n 1
}

# result DESCRIPTION STATUS [FILE...]: one TAP line for STATUS; after a
# "not ok", the FILEs, commented.
result() {
	n=$((n + 1))
	if [ "$2" -eq 0 ]; then
		echo "ok $n $1"
		return
	fi
	echo "not ok $n $1"
	fails=$((fails + 1))
	shift 2
	[ $# -eq 0 ] || sed 's/^/# /' "$@"
}

# check DESCRIPTION CMD...: one TAP line for CMD's exit status; after a
# "not ok", what CMD printed, commented.  With check_secs set, how long
# it took, in a comment line of its own.
check() {
	d=$1
	shift
	s=$(date +%s)
	"$@" >"$T/out" 2>"$T/err"
	result "$d" $? "$T/out" "$T/err"
	if [ -n "${check_secs:-}" ]; then
		echo "# $(($(date +%s) - s)) s"
	fi
}

# most LOG [ID] [FROM]: the most jobs that ran at once, from LOG's lines
# "+ ID" (a job of build ID started) and "- ID" (ended): of build ID
# alone unless ID is empty; with FROM, counting only the starts from line
# FROM on, or, FROM being K, since the last line "K" (a build killed
# there).
most() {
	awk -v id="${2:-}" -v from="${3:-1}" '
	$1 == "K" { if (from == "K") m = c; next }
	id != "" && $2 != id { next }
	$1 == "+" { c++; if ((from == "K" || NR >= from + 0) && c > m) m = c }
	$1 == "-" { c-- }
	END { print m + 0 }' "$1"
}

# used NAME: the semaphore's used weight.
used() {
	wsem stat "$1" --json | sed -n 's/.*"used":\([0-9]*\).*/\1/p'
}

# wait_used W [TENTHS]: up to TENTHS (default 50) tenths of a second for
# N's used to be W.
wait_used() {
	i=0
	while [ "$(used "$N")" != "$1" ]; do
		i=$((i + 1))
		[ $i -gt "${2:-50}" ] &&
			{ echo "used is $(used "$N"), want $1"; return 1; }
		sleep 0.1
	done
}

# write_cheat FILE: the script of a job that is a jobserver client
# itself (as a linker's LTO is), run as "sh FILE LOG [ENDPOINT]": it
# takes the endpoint's path, or finds the fifo in MAKEFLAGS as clients
# do, opens it twice as make does (stdin to read, stdout to write), and
# once the builds are under way, 10 times: reads a token (a blocking
# read: it waits its turn in the queue), writes back four bytes, and
# 0.1 s later, holding nothing, three more.  No redirection in the loop:
# the shell's dup2() over an endpoint descriptor is a close, which ends
# what the process holds and its entry, and bytes written then would be
# those of a process that holds nothing and read nothing.  It logs as
# "x" in LOG, and "cheated 10 times: +" on stderr.
write_cheat() {
	cat >"$1" <<'EOT'
ep=${2:-$(echo "$MAKEFLAGS" |
	sed -n 's/.*--jobserver-auth=fifo:\([^ ]*\).*/\1/p')}
[ -p "$ep" ] || { echo "no endpoint: '$ep', MAKEFLAGS $MAKEFLAGS" >&2; exit 1; }
echo + x >>"$1"
sleep 1
exec <"$ep" >"$ep" || exit 1
i=0
while [ $i -lt 10 ]; do
	read -r -n 1 tok && printf '++++' || exit 1
	sleep 0.1
	printf '+++' || exit 1
	sleep 0.1
	i=$((i + 1))
done
echo "cheated $i times: $tok" >&2
echo - x >>"$1"
EOT
}

# at_cap_after_cheat LOG ID: whether build ID ran CAP jobs at once after
# the cheat ended (its "- x" in LOG): the cheat lost no token.
at_cap_after_cheat() {
	x=$(grep -n '^- x$' "$1" | cut -d: -f1)
	m=$(most "$1" "$2" "$x")
	echo "# $2 after the cheat: at most $m at once" >&3
	[ "$m" -eq "$CAP" ] || { echo "$2 not at $CAP after the cheat"; return 1; }
}

# The cluster limit's tests (fleet_test.sh, twoguest.sh and
# bench/cluster-guest.sh) on etcd: EP is etcd's client URL (or URLs), N
# the limit.
# etcd_alone NAME DIR LOG: a cluster of one etcd member NAME, in the
# background, data in DIR, serving EP, its peer port on the loopback; its
# pid in etcd_pid
etcd_alone() {
	etcd --name "$1" --data-dir "$2" --listen-client-urls "$EP" \
		--advertise-client-urls "$EP" \
		--listen-peer-urls http://127.0.0.1:2380 \
		--initial-advertise-peer-urls http://127.0.0.1:2380 \
		--initial-cluster "$1=http://127.0.0.1:2380" >"$3" 2>&1 &
	etcd_pid=$!
}
# ectl ARGS...: etcdctl on EP, each call bounded
ectl() {
	etcdctl --endpoints "$EP" --dial-timeout=2s --command-timeout=3s "$@"
}
# share HOST [NAME]: HOST's share of NAME (default N) in etcd (0: none);
# share_is HOST V [NAME]: it is V; no_shares: etcd has no host's share of N
share() {
	s=$(ectl get --print-value-only "/wsem/${2:-$N}/share/$1")
	echo "${s:-0}"
}
share_is() {
	[ "$(share "$1" "${3:-$N}")" = "$2" ]
}
no_shares() {
	[ -z "$(ectl get --prefix "/wsem/$N/share/")" ]
}

# tap_end: the TAP plan, last; true if every check passed.
tap_end() {
	echo "1..$n"
	[ $fails -eq 0 ]
}
