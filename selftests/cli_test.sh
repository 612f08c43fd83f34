#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# End-to-end tests of the wsem(1) command line, in TAP.  Runs as root in the
# test VM (busybox sh, module loaded, wsem on PATH): every verb, its errors
# and exit statuses, --json read back with sed/grep, and "wsem run" holding
# its lease for exactly as long as COMMAND, limiting real concurrent jobs.
#
# Each test is a shell function run in a subshell with "set -ex": the first
# failing command fails the test, and the tail of its trace is printed as
# TAP diagnostics.  A test that exits 77 is skipped (first output line is
# the reason).
# shellcheck disable=SC2016 # $WSEM_FD is for the shell that wsem runs

if [ ! -c /dev/wsem ]; then
	echo "1..0 # SKIP no /dev/wsem: the wsem module is not loaded"
	exit 4
fi
P=clit$$				# prefix of every semaphore made here
T=$(mktemp -d /tmp/cli_test.XXXXXX) || exit 1
WSEM=$(command -v wsem) || { echo "Bail out! no wsem on PATH"; exit 1; }
: >"$T/pids"

# ---- helpers ---------------------------------------------------------------

# expect STATUS CMD...: run CMD (stdout in $T/out, stderr in $T/err) and
# fail unless it exits with STATUS.
expect() {
	want=$1
	shift
	got=0
	"$@" >"$T/out" 2>"$T/err" || got=$?
	[ "$got" -eq "$want" ] && return 0
	echo "'$*' exited $got, want $want; stderr:"
	cat "$T/err"
	return 1
}

# err_is LINE: what the last expect saw on stderr is exactly LINE.
err_is() {
	if [ "$(wc -l <"$T/err")" -eq 1 ] && [ "$(cat "$T/err")" = "$1" ]; then
		return 0
	fi
	echo "stderr is not the one line '$1' but:"
	cat "$T/err"
	return 1
}

# usage_err: the last expect wrote one "wsem: usage: ..." line.
usage_err() {
	if [ "$(wc -l <"$T/err")" -eq 1 ] && grep -q '^wsem: usage: ' "$T/err"
	then
		return 0
	fi
	echo "stderr is not one 'wsem: usage: ...' line but:"
	cat "$T/err"
	return 1
}

# quiet: the last expect printed nothing, on stdout or stderr.
quiet() {
	[ ! -s "$T/out" ] || { echo "stdout:"; cat "$T/out"; return 1; }
	[ ! -s "$T/err" ] || { echo "stderr:"; cat "$T/err"; return 1; }
}

# within LO HI VALUE: LO <= VALUE < HI.
within() {
	[ "$3" -ge "$1" ] || { echo "$3 < $1"; return 1; }
	[ "$3" -lt "$2" ] || { echo "$3 >= $2"; return 1; }
}

# child_of PID: the pid of PID's (first) child, or nothing.
child_of() {
	for c_stat in /proc/[0-9]*/stat; do
		read -r c_pid _ _ c_ppid _ <"$c_stat" 2>/dev/null ||
			continue
		[ "$c_ppid" = "$1" ] && { echo "$c_pid"; return 0; }
	done
	return 0
}

# gone PID: PID has exited (no process, or a zombie nobody reaped yet).
gone() {
	st=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' \
		"/proc/$1/status" 2>/dev/null)
	[ -z "$st" ] || [ "$st" = Z ]
}

# no_handle PID: PID has no descriptor on a wsem handle.
no_handle() {
	if grep -l '^wsem-held:' /proc/"$1"/fdinfo/* 2>/dev/null; then
		echo "process $1 holds a wsem handle"
		return 1
	fi
}

# chmod_sem_via_fs NAME MODE: chmod a semaphore through a private wsemfs mount.
chmod_sem_via_fs() {
	mkdir -p "$T/fs"
	unshare -m sh -c "mount -t wsem wsem $T/fs && chmod $2 $T/fs/$1"
}

# jget NAME KEY: the value of KEY in "wsem stat NAME --json" (quotes off).
jget() {
	wsem stat "$1" --json |
		sed -n "s/.*\"$2\":\"\{0,1\}\([^,\"}]*\).*/\1/p"
}

# is KEY NAME VALUE: stat NAME says KEY is VALUE.
is() {
	v=$(jget "$2" "$1")
	[ "$v" = "$3" ] && return 0
	echo "$2: $1 is '$v', want '$3'"
	return 1
}

# retry TRIES CMD...: run CMD until it succeeds, every 0.1 s, TRIES times
# at most.
retry() {
	tries=$1
	shift
	i=0
	until "$@"; do
		i=$((i + 1))
		[ $i -lt "$tries" ] || return 1
		sleep 0.1
	done
}

# eventually CMD...: retry CMD every 0.1 s for up to 20 s.
eventually() {
	retry 200 "$@"
}

# ended HOW CMD...: CMD "terminated by signal N" or "exited with non-zero
# status N", as busybox time tells them apart (the shell's $? does not).
ended() {
	e_how=$1
	shift
	busybox time "$@" >"$T/out" 2>"$T/err" || :
	grep -qx "Command $e_how" "$T/err" && return 0
	echo "'$*' has not $e_how:"
	cat "$T/err"
	return 1
}

# bg CMD...: start CMD in the background; $BG is its pid.  The runner kills
# whatever a test leaves behind.
bg() {
	"$@" </dev/null >/dev/null 2>&1 &
	BG=$!
	echo "$BG" >>"$T/pids"
}

# reap PID: kill PID, wait for it, and tell how it ended ($REAPED).
reap() {
	kill -KILL "$1" 2>/dev/null || :
	REAPED=0
	wait "$1" || REAPED=$?
}

# centiseconds since boot
now_cs() {
	awk '{ printf "%d\n", $1 * 100 }' /proc/uptime
}

# The one-object-per-line JSON that stat --json and ls --json print.
JSON_OBJ='\{"name":"[A-Za-z0-9._-]*","capacity":[0-9]+,"used":[0-9]+,'
JSON_OBJ="$JSON_OBJ"'"available":[0-9]+,"held":[0-9]+,"waiters":[0-9]+,'
JSON_OBJ="$JSON_OBJ"'"queued_weight":[0-9]+,"uid":[0-9]+,"gid":[0-9]+,'
JSON_OBJ="$JSON_OBJ"'"mode":"0[0-7]{3}","grants_at_once":[0-9]+,'
JSON_OBJ="$JSON_OBJ"'"grants_waited":[0-9]+,"timeouts":[0-9]+,'
JSON_OBJ="$JSON_OBJ"'"interrupts":[0-9]+,"shrunk":[0-9]+,'
JSON_OBJ="$JSON_OBJ"'"wait_ns_total":[0-9]+,"wait_ns_max":[0-9]+,'
JSON_OBJ="$JSON_OBJ"'"queue_max":[0-9]+,"lent":[0-9]+,"lent_here":[0-9]+,'
JSON_OBJ="$JSON_OBJ"'"ceiling":[0-9]+,"depth":[0-9]+,"parent_id":[0-9]+'
# stat --json adds the IPC namespace's number, who holds and who waits
JSON_STAT="$JSON_OBJ"',"ipc_ns":[0-9]+,"holders":\[[^]]*\],"queue":\[[^]]*\],"children":\[[^]]*\]\}'
JSON_OBJ="$JSON_OBJ"'\}'

# ---- create, ls, stat, resize, rm ------------------------------------------

t_create() {
	expect 0 wsem create "$P-a" 4
	quiet
	is capacity "$P-a" 4
	is used "$P-a" 0
	is available "$P-a" 4
	is waiters "$P-a" 0
	is uid "$P-a" 0
	is gid "$P-a" 0
	is mode "$P-a" 0600
	is name "$P-a" "$P-a"
}

# --mode is the mode, whatever the umask (as mkdir -m); without it, 0600
# masked by the umask.  The umask of what runs after is left as it was.
t_create_mode() {
	umask 077
	expect 0 wsem create "$P-m1" 2 --mode 0644
	is mode "$P-m1" 0644
	umask 022
	expect 0 wsem create "$P-m2" 2 --mode=666
	is mode "$P-m2" 0666
	[ "$(umask)" = 0022 ]
	umask 0
	expect 0 wsem create "$P-m3" 2 --mode 0
	is mode "$P-m3" 0000
	umask 077
	expect 0 wsem create "$P-m4" 2
	is mode "$P-m4" 0600
	umask 066
	expect 0 wsem create "$P-m5" 2
	is mode "$P-m5" 0600
	umask 0266
	expect 0 wsem create "$P-m6" 2
	is mode "$P-m6" 0400
	umask 022
}

t_create_existing() {
	expect 0 wsem create "$P-e" 4
	# the same capacity: what was asked for is there
	expect 0 wsem create "$P-e" 4
	quiet
	# another: say so, and fail unless --exist-ok
	expect 1 wsem create "$P-e" 9
	err_is "wsem: $P-e: exists with capacity 4, not 9 (--exist-ok accepts it, wsem resize changes it)"
	is capacity "$P-e" 4
	expect 0 wsem create "$P-e" 9 --exist-ok
	err_is "wsem: note: $P-e exists with capacity 4, not 9, left as it is"
	is capacity "$P-e" 4
	expect 1 wsem create "$P-e" 4 --exclusive
	err_is "wsem: $P-e: File exists"
	expect 0 wsem create "$P-x" 1 -x
	expect 1 wsem create "$P-x" 1 -x
	err_is "wsem: $P-x: File exists"
	expect 2 wsem create "$P-x" 1 --exclusive --exist-ok
	usage_err
}

t_create_invalid() {
	expect 1 wsem create "$P-z" 0
	err_is "wsem: $P-z: capacity 0 is out of range (1 .. 2^62 = 4611686018427387904)"
	expect 1 wsem create "$P-z" 4611686018427387905
	err_is "wsem: $P-z: capacity 4611686018427387905 is out of range (1 .. 2^62 = 4611686018427387904)"
	expect 1 wsem create "a b" 1
	err_is "wsem: a b: invalid name: a name is 1..63 bytes of [A-Za-z0-9._-]"
	expect 125 wsem run "bad*name" --create 1 -- true
	err_is "wsem: bad*name: invalid name: a name is 1..63 bytes of [A-Za-z0-9._-]"
	# a path names a wsemfs file, and those are not created
	expect 2 wsem create "$P/z" 1
	err_is "wsem: $P/z: a semaphore is created by NAME, in the IPC namespace it is for"
	long=$(printf '%.64s' "$P-$(printf '%064d' 0)")
	expect 1 wsem create "$long" 1
	err_is "wsem: $long: invalid name: a name is 1..63 bytes of [A-Za-z0-9._-]"
	expect 1 wsem stat "$long"
	err_is "wsem: $long: invalid name: a name is 1..63 bytes of [A-Za-z0-9._-]"
	expect 3 wsem stat "$P-z"
	long=${long%0}				# 63 bytes is fine
	expect 0 wsem create "$long" 4611686018427387904
	is capacity "$long" 4611686018427387904
}

# run's own usage errors are 125 (as env(1) and timeout(1)), not 2.
t_usage() {
	while read -r args; do
		want=2
		case $args in run*) want=125 ;; esac
		# shellcheck disable=SC2086 # word splitting wanted
		expect $want wsem $args
		usage_err
	done <<-EOF
	
	bogus
	create
	create $P-u
	create $P-u 4x
	create $P-u -1
	create $P-u +1
	create $P-u 18446744073709551616
	create $P-u 4 --mode 0800
	create $P-u 4 --mode 01000
	create $P-u 4 --mode
	create $P-u 4 --exclusive=yes
	create $P-u 4 --bogus
	create $P-u 4 -q
	create $P-u 4 --exclusive --exist-ok
	create $P-u 4 extra
	rm
	rm $P-u extra
	ls extra
	ls --wide
	stat
	stat $P-u $P-u
	resize $P-u
	resize $P-u 1.5
	run $P-u
	run $P-u --
	run $P-u --weight 2
	run -- true
	run $P-u --weight -1 -- true
	run $P-u --weight 0 -- true
	run $P-u -w0 -- true
	run $P-u -w alll -- true
	run $P-u --weight 1x -- true
	run $P-u --weight 99999999999999999999 -- true
	run $P-u --timeout -1 -- true
	run $P-u --timeout 1e3 -- true
	run $P-u --timeout 1.2.3 -- true
	run $P-u --timeout . -- true
	run $P-u --timeout 9999999999999 -- true
	run $P-u --timeout 1 --nonblock -- true
	run $P-u -t 1 -n -- true
	run $P-u --timeout 5x -- true
	run $P-u --timeout 1ms -- true
	run $P-u --timeout s -- true
	run $P-u --timeout -5m -- true
	run $P-u --timeout 99999999999d -- true
	run $P-u -t -- true
	run $P-u -w -- true
	run $P-u -q -- true
	run $P-u -E 256 -n -- true
	run $P-u -E x -n -- true
	run $P-u --mode 0644 -- true
	run $P-u -c 2 -m 0800 -- true
	run $P-u --create x -- true
	EOF
	expect 3 wsem stat "$P-u"		# nothing was created
}

# --help and -h: the synopsis and options on stdout, exit 0, nothing done.
t_help() {
	for args in "--help" "-h" "help"; do
		expect 0 wsem "$args"
		grep -q '^  wsem run NAME' "$T/out"
		[ ! -s "$T/err" ]
	done
	for verb in create rm ls stat resize run; do
		expect 0 wsem "$verb" --help
		grep -q "^Usage: wsem $verb" "$T/out"
		grep -q -- '-h, --help' "$T/out"
		[ ! -s "$T/err" ]
		expect 0 wsem help "$verb"
		grep -q "^Usage: wsem $verb" "$T/out"
	done
	expect 0 wsem run "$P-hp" --weight 2 -h -- touch "$T/hp-ran"
	grep -q -- '    --weight W' "$T/out"
	grep -q -- '-E, --conflict-exit-code N' "$T/out"
	[ ! -e "$T/hp-ran" ]
	# -V and --version: the version, on stdout
	for args in -V --version; do
		expect 0 wsem "$args"
		grep -Eqx 'wsem [0-9]+\.[0-9]+\.[0-9]+' "$T/out"
		[ ! -s "$T/err" ]
	done
	expect 0 wsem create "$P-hp" 3 --help
	expect 3 wsem stat "$P-hp"
	expect 3 wsem stat "$P-u"		# nothing was created
}

# (run: 125, its own failure, which no COMMAND status can be mistaken for)
t_not_found() {
	for args in "stat $P-nf" "stat $P-nf --json" "rm $P-nf" \
	    "resize $P-nf 3" "run $P-nf -- true"; do
		want=3
		case $args in run*) want=125 ;; esac
		# shellcheck disable=SC2086
		expect $want wsem $args
		err_is "wsem: $P-nf: No such file or directory"
	done
	# a path that is not there: the same answer, not "Invalid argument"
	for args in "stat /nonexistent/$P" "rm /nonexistent/$P" \
	    "resize /nonexistent/$P 3" "run /nonexistent/$P -- true" \
	    "run /nonexistent/$P -n -E 0 -- true" "wait /nonexistent/$P"; do
		want=3
		case $args in run*) want=125 ;; esac
		# shellcheck disable=SC2086
		expect $want wsem $args
		err_is "wsem: /nonexistent/$P: No such file or directory"
	done
}

t_ls_table() {
	wsem create "$P-l" 3
	wsem create "$P-longer-name" 12345
	expect 0 wsem ls
	head -n 1 "$T/out" | grep -Eq '^NAME +CAPACITY +USED +WAITERS$'
	grep -Eq "^$P-l +3 +0 +0\$" "$T/out"
	grep -Eq "^$P-longer-name +12345 +0 +0\$" "$T/out"
	# aligned: every line is as long as the header
	[ "$(awk '{ print length($0) }' "$T/out" | sort -u | wc -l)" -eq 1 ]
	# in name order
	awk 'NR > 1 { print $1 }' "$T/out" >"$T/names"
	sort "$T/names" | cmp -s - "$T/names"
}

# ls -o COLUMNS picks and orders the columns (named as the JSON keys),
# -n leaves the header out: what scripts and the completion parse.
t_ls_columns() {
	wsem create "$P-c1" 3
	wsem create "$P-c2" 12 --mode 0640
	expect 0 wsem ls -o name,available,mode
	head -n 1 "$T/out" | grep -Eq '^NAME +AVAILABLE  MODE$'
	grep -Eq "^$P-c1 +3  0600\$" "$T/out"
	grep -Eq "^$P-c2 +12  0640\$" "$T/out"
	[ "$(awk '{ print length($0) }' "$T/out" | sort -u | wc -l)" -eq 1 ]
	expect 0 wsem ls --noheadings --output used,name
	if grep -q NAME "$T/out"; then return 1; fi
	grep -Eq "^ *0  $P-c1\$" "$T/out"
	# -n alone: the default columns, no header
	expect 0 wsem ls -n
	grep -Eq "^$P-c1 +3 +0 +0\$" "$T/out"
	[ "$(wc -l <"$T/out")" -eq $(($(wsem ls | wc -l) - 1)) ]
	# the names, one a line, as the completion reads them
	expect 0 wsem ls -n -o name
	grep -qx "$P-c1" "$T/out"
	grep -qx "$P-c2" "$T/out"
	expect 2 wsem ls -o name,colour
	err_is "wsem: usage: unknown column 'colour' (name, capacity, used, available, held, waiters, queued_weight, lent, ceiling, depth, uid, gid, mode) (wsem ls [-l | -o COLUMNS] [-n] [--json])"
	expect 2 wsem ls -o name --json
	usage_err
	expect 2 wsem ls -n -l
	usage_err
}

t_ls_json() {
	wsem create "$P-j1" 3
	wsem create "$P-j2" 5 --mode 0640
	expect 0 wsem ls --json
	[ "$(head -n 1 "$T/out")" = "[" ]
	[ "$(tail -n 1 "$T/out")" = "]" ]
	n=$(($(wc -l <"$T/out") - 2))
	# every object on its own line, commas between them
	[ "$(grep -Ec "^  $JSON_OBJ,?\$" "$T/out")" -eq "$n" ]
	[ "$(grep -Ec "^  $JSON_OBJ,\$" "$T/out")" -eq $((n - 1)) ]
	grep -q "\"name\":\"$P-j1\",\"capacity\":3," "$T/out"
	grep "\"name\":\"$P-j2\"" "$T/out" | grep -q '"mode":"0640"'
	[ "$n" -eq $(($(wsem ls | wc -l) - 1)) ]
}

t_ls_json_empty() {
	# a fresh IPC namespace has no semaphores
	expect 0 unshare -i wsem ls --json
	[ "$(cat "$T/out")" = "[]" ]
	expect 0 unshare -i wsem ls
	[ "$(wc -l <"$T/out")" -eq 1 ]
}

t_stat_table() {
	wsem create "$P-s" 7 --mode 0640
	expect 0 wsem stat "$P-s"
	for kv in "name: $P-s" "capacity: 7" "used: 0" "available: 7" \
	    "held: 0" "waiters: 0" "queued_weight: 0" "lent: 0" "ceiling: 0" \
	    "uid: 0" "gid: 0" \
	    "mode: 0640" "depth: 0" "parent_id: 0"; do
		grep -Eq "^${kv%% *} +${kv#* }\$" "$T/out"
	done
	grep -Eq '^ipc_ns: +ipc:\[[0-9]+\] \(this namespace, the host.s\)$' \
		"$T/out"
	grep -Eq '^grants: +0 at once, 0 after waiting$' "$T/out"
	grep -Eq '^failed waits: +0 timed out, 0 interrupted, 0 ended by a shrink$' \
		"$T/out"
	grep -Eq '^waiting: +longest 0ms, in all 0ms; longest queue 0$' \
		"$T/out"
	# 18 fields, then two empty tables
	[ "$(wc -l <"$T/out")" -eq 24 ]
	[ "$(sed -n '19,24p' "$T/out" | tr '\n' '|')" = \
		"|HOLDERS|  (none)||WAITERS (in queue order)|  (none)|" ]
	# values aligned in one column
	[ "$(head -n 18 "$T/out" | awk '{ sub(/^[a-z_ ]+: */, ""); print }' |
		wc -l)" -eq 18 ]
	[ "$(head -n 18 "$T/out" | awk '{ print index($0, $2) }' |
		sort -u | wc -l)" -le 2 ]
}

t_stat_holders() {
	wsem create "$P-h" 4
	bg wsem run "$P-h" --weight 3 -- sleep 60
	h=$BG
	eventually is used "$P-h" 3
	bg wsem run "$P-h" --weight 2 -- true
	w=$BG
	eventually is waiters "$P-h" 1
	expect 0 wsem stat "$P-h"
	cat "$T/out"
	sed -n '/^HOLDERS$/,/^$/p' "$T/out" >"$T/h"
	sed -n '/^WAITERS/,$p' "$T/out" >"$T/w"
	grep -Eq '^ +PID +COMMAND +CGROUP +WEIGHT +HELD FOR +LABEL$' "$T/h"
	grep -Eq "^ +$h +wsem +[^ ]+ +3 +[0-9.]+m?s +sleep 60\$" "$T/h"
	grep -Eq '^ +PID +COMMAND +CGROUP +WEIGHT +WAITING FOR +LABEL$' "$T/w"
	grep -Eq "^ +$w +wsem +[^ ]+ +2 +[0-9.]+m?s +true\$" "$T/w"
	expect 0 wsem stat "$P-h" --json
	grep -Eq "^$JSON_STAT\$" "$T/out"
	grep -Eq "\"holders\":\[\{\"pid\":$h,\"comm\":\"wsem\",\"cgroup\":\"[^\"]*\",\"label\":\"sleep 60\",\"weight\":3,\"held_ns\":[0-9]+\}\]" \
		"$T/out"
	grep -Eq "\"queue\":\[\{\"pid\":$w,\"comm\":\"wsem\",\"cgroup\":\"[^\"]*\",\"label\":\"true\",\"weight\":2,\"waiting_ns\":[0-9]+\}\]" \
		"$T/out"
	# another user with read permission only sees them too
	chmod_sem_via_fs "$P-h" 0644
	expect 0 su -s /bin/sh -c "$WSEM stat $P-h" nobody
	grep -Eq "^ +$h +wsem " "$T/out"
	reap "$h"
	wait "$w"
	is grants_at_once "$P-h" 1
	is grants_waited "$P-h" 1
	is queue_max "$P-h" 1
}

# run labels the handle with COMMAND: the holder is named by its job,
# supervised (pid and comm are wsem's) and --inherit alike.
t_run_label() {
	wsem create "$P-l" 3
	bg wsem run "$P-l" -- sleep 5
	h=$BG
	bg wsem run "$P-l" --inherit -- sleep 5
	inh=$BG
	eventually is used "$P-l" 2
	expect 0 wsem stat "$P-l"
	cat "$T/out"
	grep -Eq "^ +$h +wsem +[^ ]+ +1 +[0-9.]+m?s +sleep 5\$" "$T/out"
	grep -Eq "^ +$inh +wsem +[^ ]+ +1 +[0-9.]+m?s +sleep 5\$" "$T/out"
	expect 0 wsem stat "$P-l" --json
	grep -Eq "\"pid\":$h,\"comm\":\"wsem\",\"cgroup\":\"[^\"]*\",\"label\":\"sleep 5\"" \
		"$T/out"
	grep -Eq "\"pid\":$inh,\"comm\":\"wsem\",\"cgroup\":\"[^\"]*\",\"label\":\"sleep 5\"" \
		"$T/out"
	reap "$h"
	reap "$inh"
	# cut to 63 bytes, a byte that is not printable ASCII becomes '?'
	long=$(printf '%070d' 0)
	bg wsem run "$P-l" -- sh -c "sleep 5 # $(printf 'a\tb') $long"
	eventually is used "$P-l" 1
	expect 0 wsem stat "$P-l" --json
	want=$(printf 'sh -c sleep 5 # a?b %s' "$long" | cut -c 1-63)
	grep -Fq "\"label\":\"$want\"" "$T/out"
}

t_top() {
	wsem create "$P-t1" 2
	wsem create "$P-t2" 1
	bg wsem run "$P-t2" -- sleep 60
	h=$BG
	eventually is used "$P-t2" 1
	bg wsem run "$P-t2" -- true
	eventually is waiters "$P-t2" 1
	# not a terminal: plain rounds, a blank line between them
	expect 0 wsem top -n 2 -d 0.1s
	[ "$(grep -c '^wsem top: [0-9]* semaphores, round [12]$' "$T/out")" -eq 2 ]
	[ "$(grep -c '^$' "$T/out")" -eq 1 ]
	if grep -q "$(printf '\033')" "$T/out"; then
		echo "escape sequences off a terminal"
		false
	fi
	# the busiest first: the one with a waiter heads the table
	[ "$(sed -n '3p' "$T/out" | awk '{ print $1 }')" = "$P-t2" ]
	grep -Eq '^NAME +CAPACITY +USED +WAITERS +HOLDS OF PARENT +LENT +CEILING +DEPTH +UID +GID +MODE +LONGEST WAIT$' \
		"$T/out"
	grep -Eq "^$P-t2 +1 +1 +1 +- +0 +0 +0 " "$T/out"	# a root: -
	expect 2 wsem top -n 0
	usage_err
	# one semaphore is "1 semaphore"
	expect 0 unshare -i sh -c "$WSEM create one 1 && exec $WSEM top -n 1"
	[ "$(head -n 1 "$T/out")" = "wsem top: 1 semaphore, round 1" ]
	expect 0 unshare -i "$WSEM" top -n 1
	[ "$(head -n 1 "$T/out")" = "wsem top: 0 semaphores, round 1" ]
	expect 2 wsem top -d soon
	usage_err
	reap "$h"
}

# top draws the tree: 8 slots split between two containers, one of them
# split again; each child under its parent, the busiest first, indented
# two spaces a level, with what it holds of its parent.
t_top_tree() {
	wsem create "$P-gpu" 8
	wsem create "$P-ca" 4 --parent "$P-gpu"
	wsem create "$P-cb" 6 --parent "$P-gpu"
	wsem create "$P-ci" 2 --parent "$P-ca"
	bg wsem run "$P-ci" --weight 2 -- sleep 60
	eventually is used "$P-gpu" 2
	bg wsem run "$P-cb" --weight 3 -- sleep 60
	eventually is used "$P-gpu" 5
	expect 0 wsem top -n 1
	cat "$T/out"
	grep -A 3 "^$P-gpu " "$T/out" >"$T/tree"
	sed -n 1p "$T/tree" | grep -Eq "^$P-gpu +8 +5 +0 +- +0 +0 +0 "
	sed -n 2p "$T/tree" | grep -Eq "^  $P-cb +6 +3 +0 +3 of $P-gpu +0 +0 +1 "
	sed -n 3p "$T/tree" | grep -Eq "^  $P-ca +4 +2 +0 +2 of $P-gpu +0 +0 +1 "
	sed -n 4p "$T/tree" | grep -Eq "^    $P-ci +2 +2 +0 +2 of $P-ca +0 +0 +2 "
	# children are not listed again as roots
	[ "$(grep -c "$P-ci " "$T/out")" -eq 1 ]
	# a child whose parent this namespace does not list: at the left,
	# its parent by id
	mkdir -p "$T/fs"
	expect 0 unshare -m sh -c "mount -t wsem wsem $T/fs && exec unshare -i \
		sh -c '$WSEM create kid 1 --parent $T/fs/$P-ca &&
		exec $WSEM run kid -- $WSEM top -n 1'"
	cat "$T/out"
	grep -Eq "^kid +1 +1 +0 +1 of \\[$(jget "$P-ci" parent_id)\\] +0 +0 +2 " \
		"$T/out"
}

# stat of a parent lists its children that hold weight, and what each
# holds of it, in the table and in --json; stat of one without any, none.
t_stat_children() {
	wsem create "$P-sg" 8
	wsem create "$P-sa" 4 --parent "$P-sg"
	wsem create "$P-sb" 6 --parent "$P-sg"
	bg wsem run "$P-sa" --weight 2 -- sleep 60
	bg wsem run "$P-sb" --weight 3 -- sleep 60
	eventually is used "$P-sg" 5
	expect 0 wsem stat "$P-sg"
	sed -n '/^CHILDREN/,$p' "$T/out" >"$T/kids"
	cat "$T/kids"
	grep -Eq "^  CHILD +WEIGHT$" "$T/kids"
	grep -Eq "^  $P-sa +2$" "$T/kids"
	grep -Eq "^  $P-sb +3$" "$T/kids"
	[ "$(grep -c "^  $P-s[ab] " "$T/kids")" -eq 2 ]
	expect 0 wsem stat "$P-sg" --json
	grep -q "\"children\":\[{\"name\":\"$P-s[ab]\",\"weight\":[23]},{\"name\":\"$P-s[ab]\",\"weight\":[23]}\]}$" "$T/out"
	grep -q "{\"name\":\"$P-sa\",\"weight\":2}" "$T/out"
	expect 0 wsem stat "$P-sa"
	! grep -q "^CHILDREN" "$T/out"
}

t_wait_idle() {
	wsem create "$P-w" 2
	expect 0 wsem wait "$P-w" --idle
	quiet
	bg wsem run "$P-w" -- sleep 60
	h=$BG
	eventually is used "$P-w" 1
	expect 124 wsem wait "$P-w" --idle -t 0.1s
	err_is "wsem: $P-w: timed out"
	# a waiter of read permission only, while the job runs
	wsem stat "$P-w" >/dev/null
	"$WSEM" wait "$P-w" -i </dev/null >"$T/w.out" 2>&1 &
	w=$!
	echo "$w" >>"$T/pids"
	sleep 0.3
	if gone "$w"; then
		echo "wait --idle returned while the job held weight"
		false
	fi
	reap "$h"
	st=0
	wait "$w" || st=$?
	[ "$st" -eq 0 ] || { echo "wait --idle exited $st"; false; }
	# --idle is the default (and only) thing to wait for
	expect 0 wsem wait "$P-w"
	quiet
	expect 0 wsem wait "$P-w" -t 1s
	expect 3 wsem wait "$P-none" --idle
	expect 3 wsem wait "$P-none"
	expect 2 wsem wait
	usage_err
}

# other_ipc_ns PID: PID is in another IPC namespace than we are (looked at
# anew on each call, so that eventually can wait for it).
other_ipc_ns() {
	[ "$(readlink "/proc/$1/ns/ipc")" != "$(readlink /proc/self/ns/ipc)" ]
}

# apply_ns NAME: for an apply test, a new IPC namespace (its sleeper's pid
# in ns) and an empty directory of declarations, $T/NAME (in d).
apply_ns() {
	unshare -i sleep 600 </dev/null >/dev/null 2>&1 &
	ns=$!
	echo "$ns" >>"$T/pids"
	eventually other_ipc_ns "$ns"
	d=$T/$1
	mkdir -p "$d"
}

# In an IPC namespace of its own, so that --prune sees only its own.
t_apply() {
	apply_ns wsem.d
	printf '# limits\nbuild capacity=3 mode=0640 group=65534\n\n' \
		>"$d/10-build.conf"
	printf 'gpu   capacity=2  # one card\n' >"$d/20-gpu.conf"
	echo 'not a declaration' >"$d/README"
	expect 0 nsenter -t "$ns" -i "$WSEM" apply "$d"
	grep -qx "create build capacity 3 mode 0640" "$T/out"
	grep -qx "chown build 0:0 -> 0:65534" "$T/out"
	grep -qx "create gpu capacity 2 mode 0600" "$T/out"
	nsenter -t "$ns" -i "$WSEM" stat build --json >"$T/j"
	grep -q '"capacity":3,' "$T/j"
	grep -q '"gid":65534,' "$T/j"
	grep -q '"mode":"0640"' "$T/j"
	# again: nothing to do
	expect 0 nsenter -t "$ns" -i "$WSEM" apply "$d"
	quiet
	# a change, first as a dry run
	printf 'build capacity=5 mode=0660 owner=nobody\n' >"$d/10-build.conf"
	expect 0 nsenter -t "$ns" -i "$WSEM" apply -n "$d"
	grep -qx "resize build 3 -> 5 (dry run)" "$T/out"
	grep -qx "chmod build 0640 -> 0660 (dry run)" "$T/out"
	grep -qx "chown build 0:65534 -> 65534:65534 (dry run)" "$T/out"
	nsenter -t "$ns" -i "$WSEM" stat build --json | grep -q '"capacity":3,'
	expect 0 nsenter -t "$ns" -i "$WSEM" apply "$d"
	nsenter -t "$ns" -i "$WSEM" stat build --json >"$T/j"
	grep -q '"capacity":5,' "$T/j"
	grep -q '"uid":65534,' "$T/j"
	grep -q '"mode":"0660"' "$T/j"
	# not declared: no change, so not a word unless -v; removed with
	# --prune.  One made on first use by run --create is no different.
	nsenter -t "$ns" -i "$WSEM" create extra 1
	nsenter -t "$ns" -i "$WSEM" run extra2 --create 2 -- true
	expect 0 nsenter -t "$ns" -i "$WSEM" apply "$d"
	quiet
	expect 0 nsenter -t "$ns" -i "$WSEM" apply "$d"
	quiet
	expect 0 nsenter -t "$ns" -i "$WSEM" apply -v "$d"
	grep -qx "undeclared extra" "$T/out"
	grep -qx "undeclared extra2" "$T/out"
	nsenter -t "$ns" -i "$WSEM" rm extra2
	expect 0 nsenter -t "$ns" -i "$WSEM" apply --prune "$d"
	grep -qx "remove extra" "$T/out"
	expect 3 nsenter -t "$ns" -i "$WSEM" stat extra
	# a malformed file: one error with file and line, none of it applied,
	# the other files are, and --prune removes nothing
	printf 'disk capacity=1\nnet capacity=2 colour=red\n' >"$d/30-bad.conf"
	printf 'gpu capacity=4\n' >"$d/20-gpu.conf"
	nsenter -t "$ns" -i "$WSEM" create keep 1
	expect 1 nsenter -t "$ns" -i "$WSEM" apply --prune "$d"
	err_is "wsem: $d/30-bad.conf:2: unknown key (capacity, mode, owner, group, parent, cluster); nothing of this file is applied"
	grep -qx "resize gpu 2 -> 4" "$T/out"
	grep -qx "undeclared keep (kept: a file was rejected)" "$T/out"
	expect 3 nsenter -t "$ns" -i "$WSEM" stat disk
	# declared twice
	printf 'gpu capacity=4\n' >"$d/30-bad.conf"
	expect 1 nsenter -t "$ns" -i "$WSEM" apply "$d"
	err_is "wsem: $d/30-bad.conf:1: gpu declared again; nothing of this file is applied"
	expect 2 wsem apply "$d" --prune
	usage_err
	# no PATH: /etc/wsem.d, as wsem-apply.service runs it; whether this
	# machine has one or not, that is no usage error
	got=0
	nsenter -t "$ns" -i "$WSEM" apply -n >"$T/out" 2>"$T/err" || got=$?
	[ "$got" -ne 2 ]
	[ -z "$(grep usage "$T/err")" ]
}

# apply without PATH reads /etc/wsem.d, /run/wsem.d and /usr/lib/wsem.d as
# sysctl.d does: same name, /etc over /run over /usr/lib; a /etc symlink
# to /dev/null masks; in name order across the three; none of them there
# is nothing declared (exit 0, not a word).  In a new IPC namespace and a
# private mount namespace whose /etc, /run and /usr/lib are scratch
# directories (so the static wsem: nothing else runs after the mounts).
t_apply_dirs() {
	static=$(dirname "$WSEM")/wsem-static
	[ -x "$static" ] || static=$WSEM
	mkdir -p "$T/root/etc" "$T/root/run" "$T/root/usrlib"
	[ -d /usr/lib ] || mkdir -p /usr/lib	# the guest's initramfs
	[ -d /run ] || mkdir /run
	# $1: the directories' parent (scratch); the rest: wsem's arguments.
	# shellcheck disable=SC2016 # the inner shell's
	in_root='mount --make-rprivate / && mount --bind "$1/etc" /etc &&
		mount --bind "$1/run" /run && mount --bind "$1/usrlib" /usr/lib &&
		shift && exec "$@"'
	expect 0 unshare -i -m sh -c "$in_root" sh "$T/root" "$static" apply -n
	quiet
	mkdir "$T/root/etc/wsem.d" "$T/root/run/wsem.d" "$T/root/usrlib/wsem.d"
	echo 'x capacity=1' >"$T/root/usrlib/wsem.d/a.conf"
	echo 'x capacity=2' >"$T/root/run/wsem.d/a.conf"
	echo 'y capacity=3' >"$T/root/usrlib/wsem.d/b.conf"
	ln -s /dev/null "$T/root/etc/wsem.d/b.conf"
	echo 'z capacity=4' >"$T/root/usrlib/wsem.d/c.conf"
	echo 'w capacity=5' >"$T/root/etc/wsem.d/d.conf"
	echo 'v capacity=6' >"$T/root/run/wsem.d/0.conf"
	expect 0 unshare -i -m sh -c "$in_root" sh "$T/root" "$static" apply -n
	cat "$T/out"
	[ "$(cat "$T/out")" = "create v capacity 6 mode 0600 (dry run)
create x capacity 2 mode 0600 (dry run)
create z capacity 4 mode 0600 (dry run)
create w capacity 5 mode 0600 (dry run)" ]
	[ ! -s "$T/err" ]
	# /etc/wsem.d alone missing: the others still count
	rm -r "$T/root/etc/wsem.d"
	expect 0 unshare -i -m sh -c "$in_root" sh "$T/root" "$static" apply -n
	grep -qx "create y capacity 3 mode 0600 (dry run)" "$T/out"
	# a file with an error is named by the directory it was read from
	echo 'x capacity=zero' >"$T/root/run/wsem.d/a.conf"
	expect 1 unshare -i -m sh -c "$in_root" sh "$T/root" "$static" apply -n
	grep -q "^wsem: /run/wsem.d/a.conf:1: " "$T/err"
}

t_ls_long() {
	wsem create "$P-l" 3 --mode 0640
	expect 0 wsem ls -l
	grep -Eq '^NAME +CAPACITY +USED +WAITERS +LENT +CEILING +DEPTH +UID +GID +MODE +LONGEST WAIT$' \
		"$T/out"
	grep -Eq "^$P-l +3 +0 +0 +0 +0 +0 +0 +0 +0640 +0ms\$" "$T/out"
	expect 0 wsem ls --long
	grep -q "^$P-l " "$T/out"
}

t_stat_json() {
	wsem create "$P-sj" 6 --mode 0604
	expect 0 wsem stat "$P-sj" --json
	[ "$(wc -l <"$T/out")" -eq 1 ]
	# the fields of struct wsem_stat, then the IPC namespace's number
	grep -Eq "^$JSON_STAT\$" "$T/out"
	grep -q "^{\"name\":\"$P-sj\",\"capacity\":6,\"used\":0," "$T/out"
	grep -Eq '"mode":"0604","grants_at_once":0,' "$T/out"
	grep -Eq '"queue_max":0,"lent":0,"lent_here":0,"ceiling":0,"depth":0,"parent_id":0,"ipc_ns":[0-9]+,"holders":\[\],"queue":\[\],"children":\[\]}$' \
		"$T/out"
	expect 0 wsem stat --json "$P-sj"	# options go anywhere
}

t_resize() {
	wsem create "$P-r" 4
	expect 0 wsem resize "$P-r" 6
	is capacity "$P-r" 6
	expect 0 wsem resize "$P-r" 1
	is capacity "$P-r" 1
	expect 1 wsem resize "$P-r" 0
	err_is "wsem: $P-r: capacity 0 is out of range (1 .. 2^62 = 4611686018427387904)"
	is capacity "$P-r" 1
}

t_rm() {
	wsem create "$P-rm" 2
	expect 0 wsem rm "$P-rm"
	quiet
	expect 3 wsem stat "$P-rm"
	expect 3 wsem rm "$P-rm"
	err_is "wsem: $P-rm: No such file or directory"
	not_listed "$P-rm"
	# -f, as rm -f: one that is not there is no error; one that is goes
	expect 0 wsem rm -f "$P-rm"
	quiet
	expect 0 wsem rm --force "/nonexistent/$P-rm"
	quiet
	wsem create "$P-rm" 2
	expect 0 wsem rm -f "$P-rm"
	quiet
	not_listed "$P-rm"
	# ... other errors are still errors
	expect 1 wsem rm -f "a b"
	if [ "$(su -s /bin/sh -c 'id -u' nobody 2>/dev/null)" = 65534 ]; then
		wsem create "$P-rm" 2 --mode 0644
		expect 1 su -s /bin/sh -c "$WSEM rm -f $P-rm" nobody
		err_is "wsem: $P-rm: Operation not permitted"
	fi
}

# not_listed NAME: wsem ls does not show NAME.
not_listed() {
	if wsem ls | grep -q "^$1 "; then
		echo "$1 is still listed"
		return 1
	fi
}

# "su -s /bin/sh -c CMD nobody" runs CMD as uid/gid 65534.  (Not wrapped
# in a function: the trace of a function's commands would land in $T/err.)

t_permissions() {
	if [ "$(su -s /bin/sh -c 'id -u' nobody 2>/dev/null)" != 65534 ]; then
		echo "cannot become nobody with su"
		exit 77
	fi
	umask 022
	wsem create "$P-pr" 2 --mode 0644	# others may read only
	wsem create "$P-pp" 2			# 0600: private
	expect 0 su -s /bin/sh -c "$WSEM stat $P-pr --json" nobody
	grep -q '"mode":"0644"' "$T/out"
	expect 0 su -s /bin/sh -c "$WSEM ls" nobody
	grep -q "^$P-pr " "$T/out"
	if grep -q "^$P-pp " "$T/out"; then
		echo "nobody sees $P-pp"
		exit 1
	fi
	# no read permission: the same answer as run's, not "no such"
	expect 1 su -s /bin/sh -c "$WSEM stat $P-pp" nobody
	err_is "wsem: $P-pp: Permission denied"
	expect 1 su -s /bin/sh -c "$WSEM stat $P-pp --json" nobody
	err_is "wsem: $P-pp: Permission denied"
	expect 125 su -s /bin/sh -c "$WSEM run $P-pp -- true" nobody
	err_is "wsem: $P-pp: Permission denied"
	expect 3 su -s /bin/sh -c "$WSEM stat $P-none" nobody
	expect 1 su -s /bin/sh -c "$WSEM resize $P-pr 5" nobody
	err_is "wsem: $P-pr: Permission denied"
	expect 125 su -s /bin/sh -c "$WSEM run $P-pr -- true" nobody
	err_is "wsem: $P-pr: Permission denied"
	expect 1 su -s /bin/sh -c "$WSEM rm $P-pr" nobody
	err_is "wsem: $P-pr: Operation not permitted"
	is capacity "$P-pr" 2
	umask 0
	wsem create "$P-pw" 2 --mode 0666	# others may use it
	expect 0 su -s /bin/sh -c "$WSEM run $P-pw --weight 2 -- true" nobody
	expect 1 su -s /bin/sh -c "$WSEM resize $P-pw 5" nobody
	err_is "wsem: $P-pw: Operation not permitted"
	expect 1 su -s /bin/sh -c "$WSEM rm $P-pw" nobody
	err_is "wsem: $P-pw: Operation not permitted"
	is capacity "$P-pw" 2
}

# ---- wsem run ----------------------------------------------------------------

t_run_env() {
	# --create makes it (mode 0600); with --inherit, WSEM_FD is the
	# inherited handle
	expect 0 wsem run "$P-env" --create 3 --weight 2 --inherit -- \
		sh -c 'echo "fd=$WSEM_FD name=$WSEM_NAME"
			cat /proc/self/fdinfo/$WSEM_FD'
	grep -Eq "^fd=([3-9]|[1-9][0-9]+) name=$P-env\$" "$T/out"
	grep -Eq "^wsem-name:[[:space:]]+$P-env\$" "$T/out"
	grep -Eq '^wsem-held:[[:space:]]+2$' "$T/out"
	grep -Eq '^wsem-capacity:[[:space:]]+3$' "$T/out"
	is capacity "$P-env" 3
	is mode "$P-env" 0600
	is used "$P-env" 0
	# COMMAND is found on PATH and gets its arguments untouched
	expect 0 wsem run "$P-env" echo --weight 2 -- x
	[ "$(cat "$T/out")" = "--weight 2 -- x" ]
	# stdin closed: the handle still stays off fd 0
	expect 0 wsem run "$P-env" --inherit -- sh -c 'echo $WSEM_FD' <&-
	[ "$(cat "$T/out")" -gt 2 ]
	# supervised (the default): COMMAND gets no handle and no WSEM_FD
	expect 0 wsem run "$P-env" --weight 2 -- sh -c 'echo "fd=${WSEM_FD-none}"
		grep -l "^wsem-held:" /proc/self/fdinfo/* 2>/dev/null
		wsem stat '"$P-env"' --json'
	[ "$(head -n 1 "$T/out")" = "fd=none" ]
	[ "$(wc -l <"$T/out")" -eq 2 ]
	grep -q '"used":2,' "$T/out"
}

# Short options, and options after NAME but before "--" are wsem's;
# flock(1)'s -w is refused, never taken as a weight.
t_run_short_options() {
	wsem create "$P-so" 4
	expect 0 wsem run "$P-so" --weight 3 -- wsem stat "$P-so" --json
	grep -q '"used":3,' "$T/out"
	expect 0 wsem run "$P-so" --weight 2 -n -- wsem stat "$P-so" --json
	grep -q '"used":2,' "$T/out"
	expect 0 wsem run -t 1m --weight 4 "$P-so" -- wsem stat "$P-so" --json
	grep -q '"used":4,' "$T/out"
	expect 0 wsem run "$P-so" --weight=1 -vn --weight 3 -- wsem stat "$P-so" --json
	grep -q '"used":3,' "$T/out"
	expect 125 wsem run "$P-so" -w 2 -- touch "$T/so-ran"
	grep -q -- '--timeout SECONDS; a weight is --weight W' "$T/err"
	[ ! -e "$T/so-ran" ]
	# the first word that is not an option starts COMMAND
	expect 0 wsem run "$P-so" echo -w 2 -- x
	[ "$(cat "$T/out")" = "-w 2 -- x" ]
	umask 0
	expect 0 wsem create "$P-so2" 2 -m 0640
	is mode "$P-so2" 0640
	is used "$P-so" 0
}

# --create takes --mode, so a limit made by run is usable by others.
t_run_create_mode() {
	umask 022
	expect 0 wsem run "$P-cm" --create 2 --mode 0666 -- sh -c umask
	is mode "$P-cm" 0666			# as given, as mkdir -m
	[ "$(cat "$T/out")" = 0022 ]		# COMMAND has the user's umask
	umask 0
	expect 0 wsem run "$P-cm2" --create 2 -m 0666 --weight 2 -- true
	is mode "$P-cm2" 0666
	is capacity "$P-cm2" 2
	if [ "$(su -s /bin/sh -c 'id -u' nobody 2>/dev/null)" = 65534 ]; then
		expect 0 su -s /bin/sh -c "$WSEM run $P-cm2 --weight 2 -- true" nobody
	fi
	# without --create, the default mode, 0600 & ~umask
	expect 0 wsem run "$P-cm3" --create 1 -- true
	is mode "$P-cm3" 0600
}

# run --create on an existing semaphore of another capacity: one line, and on.
t_run_create_existing() {
	wsem create "$P-ce" 4
	expect 0 wsem run "$P-ce" --create 8 --weight 2 -- wsem stat "$P-ce" --json
	err_is "wsem: note: $P-ce exists with capacity 4, not 8, left as it is"
	grep -q '"capacity":4,"used":2,' "$T/out"
	expect 0 wsem run "$P-ce" --create 4 -- true
	quiet
	is capacity "$P-ce" 4
}

# Symbolic modes, as chmod and mkdir -m take them, relative to the
# default 0600; exact, whatever the umask.
t_symbolic_mode() {
	umask 077
	expect 0 wsem create "$P-sm1" 2 -m a+rw
	is mode "$P-sm1" 0666
	expect 0 wsem create "$P-sm2" 2 --mode u=rw,g=r
	is mode "$P-sm2" 0640
	expect 0 wsem create "$P-sm3" 2 -m go-w
	is mode "$P-sm3" 0600
	expect 0 wsem create "$P-sm4" 2 -m g=u,o=r
	is mode "$P-sm4" 0664
	expect 0 wsem run "$P-sm5" --create 1 -m g+r -- true
	is mode "$P-sm5" 0640
	expect 0 wsem create "$P-sm6" 2 -m 0604
	is mode "$P-sm6" 0604
	for m in u+s rw a+X "u=rw," ",g+r" 0800 ug; do
		expect 2 wsem create "$P-smx" 2 -m "$m"
		usage_err
	done
	expect 3 wsem stat "$P-smx"
	umask 022
}

# -w all: the whole capacity, an exclusive lease.
t_run_weight_all() {
	wsem create "$P-wa" 5
	expect 0 wsem run "$P-wa" --weight all -- wsem stat "$P-wa" --json
	grep -q '"capacity":5,"used":5,' "$T/out"
	bg wsem run "$P-wa" --weight 1 -- sleep 60
	eventually is used "$P-wa" 1
	expect 75 wsem run "$P-wa" --weight=all -n -- touch "$T/wa-ran"
	[ ! -e "$T/wa-ran" ]
	reap "$BG"
}

# acquire and release act on the shell's own descriptor, as flock 9 does:
# the weight stays after wsem exits, until release or the shell closes it.
t_acquire_release() {
	wsem create "$P-ar" 4 --mode 0600
	mkdir -p "$T/fs"
	cat >"$T/ar.sh" <<-'EOS'
	set -ex
	fs=$1 name=$2
	jv() { wsem stat "$@" --json | sed -n "s/.*\"$k\":\([0-9]*\).*/\1/p"; }
	mount -t wsem wsem "$fs"
	exec 9<>"$fs/$name"
	wsem acquire --fd 9 --weight 2 --label 'nightly "build"'
	k=used; [ "$(jv "$name")" = 2 ]
	k=held; [ "$(jv --fd 9)" = 2 ]
	wsem stat "$name" --json | grep -Fq '"label":"nightly \"build\""'
	st=0; wsem acquire --fd 9 --label "$(printf 'a\tb')" || st=$?
	[ $st -eq 2 ]
	wsem acquire --fd 9
	k=used; [ "$(jv "$name")" = 3 ]
	wsem release --fd 9 --weight 1
	k=used; [ "$(jv "$name")" = 2 ]
	st=0; wsem release --fd 9 --weight 5 2>"$fs.err" || st=$?
	[ $st -eq 1 ]
	[ "$(cat "$fs.err")" = "wsem: --fd 9: weight 5 exceeds what this handle holds (2)" ]
	wsem release --fd 9
	k=used; [ "$(jv "$name")" = 0 ]
	wsem release --fd 9			# nothing held: nothing to do
	wsem acquire --fd 9 --weight all
	k=used; [ "$(jv "$name")" = 4 ]
	st=0; wsem acquire --fd 9 -n 2>"$fs.err" || st=$?
	[ $st -eq 75 ]
	[ "$(cat "$fs.err")" = "wsem: --fd 9: would block" ]
	st=0; wsem acquire --fd 9 -t 0.1 -E 9 2>"$fs.err" || st=$?
	[ $st -eq 9 ]
	st=0; wsem acquire --fd 9 --weight 5 2>"$fs.err" || st=$?
	[ $st -eq 1 ]
	[ "$(cat "$fs.err")" = "wsem: --fd 9: weight 5 exceeds capacity 4" ]
	exec 9>&-				# closing releases, as flock's
	k=used; [ "$(jv "$name")" = 0 ]
	exec 8<"$fs/$name"			# read-only: watches only
	st=0; wsem acquire --fd 8 2>"$fs.err" || st=$?
	[ $st -eq 1 ]
	grep -q "^wsem: --fd 8: Bad file descriptor (" "$fs.err"
	st=0; wsem acquire --fd 8 --label ro 2>"$fs.err" || st=$?
	[ $st -eq 1 ]
	grep -q "^wsem: --fd 8: Bad file descriptor (" "$fs.err"
	exec 8<&-
	# a shell that ends gives its weight back
	sh -c "exec 7<>$fs/$name; wsem acquire --fd 7 --weight 3"
	k=used; [ "$(jv "$name")" = 0 ]
	umount "$fs"
	EOS
	expect 0 unshare -m sh "$T/ar.sh" "$T/fs" "$P-ar"
	# never on NAME: that handle would close as wsem exits
	for v in acquire release; do
		expect 2 wsem $v "$P-ar"
		usage_err
		grep -q -- "--fd N" "$T/err"
		expect 2 wsem $v
		usage_err
		grep -q -- "--fd N" "$T/err"
	done
	expect 2 wsem acquire --fd 0 --weight 0
	usage_err
	is used "$P-ar" 0
}

t_run_status() {
	wsem create "$P-st" 2
	expect 0 wsem run "$P-st" -- true
	expect 1 wsem run "$P-st" -- false
	expect 7 wsem run "$P-st" --weight 2 -- sh -c 'exit 7'
	# killed by a signal: the shell sees the signal itself (128 + 15)
	expect 143 wsem run "$P-st" -- sh -c 'kill -TERM $$'
	is used "$P-st" 0
}

# A COMMAND killed by a signal: wsem run dies of the same signal, as
# timeout(1) does, so that the shell sees it (busybox time tells a death
# by signal N from an exit with 128 + N); without a terminal (here a
# session of its own), a COMMAND that ends itself with SIGINT kills wsem
# alone, never its caller (top_tty_test.sh has the terminal's ^C, which
# ends the caller's loop); no core of wsem's own.
t_run_signal() {
	wsem create "$P-sg" 2
	ended "terminated by signal 15" wsem run "$P-sg" -- \
		sh -c 'kill -TERM $$'
	ended "exited with non-zero status 143" wsem run "$P-sg" -- \
		sh -c 'exit 143'
	ended "terminated by signal 9" wsem run "$P-sg" -- sh -c 'kill -KILL $$'
	ended "terminated by signal 15" wsem run "$P-sg" --inherit -- \
		sh -c 'kill -TERM $$'
	is used "$P-sg" 0
	command -v bash >/dev/null || { echo "no bash in the guest"; exit 1; }
	expect 0 setsid bash -c 'wsem run '"$P-sg"' -- sh -c "kill -INT 0"
		echo "alive $?" >'"$T/caller"
	[ "$(cat "$T/caller")" = "alive 130" ]
	# SIGABRT dumps core by default: COMMAND's (in its own directory),
	# never wsem's (SIGQUIT would do, but busybox time ignores it, and so
	# COMMAND would too)
	mkdir "$T/core-cmd" "$T/core-wsem"
	# shellcheck disable=SC3045 # busybox sh has ulimit -c
	ulimit -c unlimited
	(cd "$T/core-wsem" && ended "terminated by signal 6" wsem run \
		"$P-sg" -- sh -c "cd $T/core-cmd && kill -ABRT \$\$")
	ls -la "$T/core-cmd" "$T/core-wsem"
	# Where the kernel writes cores to files (not without CONFIG_COREDUMP,
	# as the debug kernel, nor through a pipe), COMMAND's is there.
	if [ -r /proc/sys/kernel/core_pattern ] &&
	   [ "$(cut -c1 /proc/sys/kernel/core_pattern)" != "|" ]; then
		[ -n "$(ls "$T/core-cmd")" ]
	fi
	[ -z "$(ls "$T/core-wsem")" ]
	is used "$P-sg" 0
}

t_run_exec_fail() {
	wsem create "$P-ex" 2
	expect 127 wsem run "$P-ex" -- /nonexistent/cmd
	err_is "wsem: /nonexistent/cmd: No such file or directory"
	expect 127 wsem run "$P-ex" -- no-such-command-here
	err_is "wsem: no-such-command-here: No such file or directory"
	echo 'echo hi' >"$T/noexec"
	chmod 0644 "$T/noexec"
	expect 126 wsem run "$P-ex" --weight 2 -- "$T/noexec"
	err_is "wsem: $T/noexec: Permission denied"
	is used "$P-ex" 0
}

# COMMAND is looked up (PATH, as execvp does) before wsem waits, opens or
# creates anything: a typo fails at once, 127, or 126 when it cannot be
# executed, as env(1) says.
t_run_command_first() {
	wsem create "$P-cf" 2
	bg wsem run "$P-cf" --weight 2 -- sleep 60
	holder=$BG
	eventually is used "$P-cf" 2
	expect 127 timeout 20 wsem run "$P-cf" -- no-such-command-here
	err_is "wsem: no-such-command-here: No such file or directory"
	expect 127 timeout 20 wsem run "$P-cf" --inherit -- /nonexistent/cmd
	err_is "wsem: /nonexistent/cmd: No such file or directory"
	echo 'echo hi' >"$T/cf-noexec"
	chmod 0644 "$T/cf-noexec"
	expect 126 timeout 20 wsem run "$P-cf" -- "$T/cf-noexec"
	err_is "wsem: $T/cf-noexec: Permission denied"
	expect 126 timeout 20 wsem run "$P-cf" -- "$T"
	err_is "wsem: $T: Permission denied"
	mkdir "$T/p1" "$T/p2" "$T/p3"
	cp "$T/cf-noexec" "$T/p1/cfcmd"
	expect 126 env PATH="$T/p1:$T/p2" "$(command -v timeout)" 20 \
		"$WSEM" run "$P-cf" -- cfcmd
	err_is "wsem: cfcmd: Permission denied"
	is waiters "$P-cf" 0
	# nothing made for a typo
	expect 127 wsem run "$P-cf2" --create 2 -- no-such-command-here
	expect 3 wsem stat "$P-cf2"
	reap "$holder"
	eventually is used "$P-cf" 0
	# as execvp: one that cannot be run is passed over for a later one
	printf '#!/bin/sh\necho p2\n' >"$T/p2/cfcmd"
	chmod 0755 "$T/p2/cfcmd"
	expect 0 env PATH="$T/p1:$T/p2" "$WSEM" run "$P-cf" -- cfcmd
	[ "$(cat "$T/out")" = p2 ]
	# an empty PATH entry is the current directory
	cp "$T/p2/cfcmd" "$T/p3/cfcmd3"
	(cd "$T/p3" && expect 0 env PATH="$T/p1:" "$WSEM" run "$P-cf" -- cfcmd3)
}

# --verbose: one line when it has to wait (how many ahead, what is in use),
# one when it gets the weight and after how long; nothing by default, and
# nothing when the weight is free.
t_run_verbose() {
	wsem create "$P-vb" 3
	expect 0 wsem run "$P-vb" --verbose --weight 2 -- true
	quiet
	bg wsem run "$P-vb" --weight 3 -- sleep 60
	holder=$BG
	eventually is used "$P-vb" 3
	bg wsem run "$P-vb" --weight 1 -- true
	eventually is waiters "$P-vb" 1
	wsem run "$P-vb" -v --weight 2 -- true 2>"$T/vb-err" &
	w=$!
	echo "$w" >>"$T/pids"
	eventually is waiters "$P-vb" 2
	wsem run "$P-vb" --weight 2 -- true 2>"$T/vb-quiet" &
	q=$!
	echo "$q" >>"$T/pids"
	eventually is waiters "$P-vb" 3
	[ "$(cat "$T/vb-err")" = "wsem: waiting for $P-vb: 1 ahead, 3/3 in use" ]
	sleep 1
	reap "$holder"
	wait "$w"
	wait "$q"
	cat "$T/vb-err"
	[ "$(wc -l <"$T/vb-err")" -eq 2 ]
	secs=$(sed -n "2s/^wsem: acquired $P-vb after \([0-9]*\)\.[0-9] s\$/\1/p" \
		"$T/vb-err")
	[ -n "$secs" ]
	within 1 30 "$secs"
	[ ! -s "$T/vb-quiet" ]
	eventually is used "$P-vb" 0
}

# (run's own failures, EINVAL and usage alike, exit 125)
t_run_invalid() {
	wsem create "$P-iv" 4
	expect 125 wsem run "$P-iv" --weight 5 -- touch "$T/iv-ran"
	err_is "wsem: $P-iv: weight 5 exceeds capacity 4"
	expect 125 wsem run "$P-iv" --weight 0 -- touch "$T/iv-ran"
	usage_err
	grep -q "invalid WEIGHT '0' (1 .. the capacity, or all)" "$T/err"
	expect 125 wsem run "$P-iv2" --create 0 -- true
	err_is "wsem: $P-iv2: capacity 0 is out of range (1 .. 2^62 = 4611686018427387904)"
	expect 3 wsem stat "$P-iv2"
	# a waiter whose weight a shrink put over the capacity
	bg wsem run "$P-iv" --weight 4 -- sleep 60
	h=$BG
	eventually is used "$P-iv" 4
	wsem run "$P-iv" --weight 3 -- touch "$T/iv-ran" 2>"$T/iv-err" &
	w=$!
	echo "$w" >>"$T/pids"
	eventually is waiters "$P-iv" 1
	wsem resize "$P-iv" 2
	st=0
	wait "$w" || st=$?
	[ "$st" -eq 125 ]
	[ "$(cat "$T/iv-err")" = "wsem: $P-iv: weight 3 exceeds capacity 2" ]
	[ ! -e "$T/iv-ran" ]
	reap "$h"
}

# --inherit: COMMAND replaces wsem: there is no wsem process left to kill,
# and killing COMMAND gives the weight back.
t_run_exec_in_place() {
	wsem create "$P-k" 4
	bg wsem run "$P-k" --weight 3 --inherit -- sleep 60
	eventually is used "$P-k" 3
	eventually grep -qx sleep "/proc/$BG/comm"
	for c in /proc/[0-9]*/comm; do
		if grep -qx wsem "$c" 2>/dev/null; then
			echo "a wsem process is left: $c"
			exit 1
		fi
	done
	grep -q "^wsem-held:[[:space:]]*3\$" /proc/$BG/fdinfo/*
	reap "$BG"
	[ "$REAPED" -eq 137 ]
	eventually is used "$P-k" 0
}

# Killing wsem while it waits: COMMAND never runs, the queue entry goes.
t_run_kill_waiting() {
	wsem create "$P-kw" 4
	bg wsem run "$P-kw" --weight 4 -- sleep 60
	holder=$BG
	eventually is used "$P-kw" 4
	bg wsem run "$P-kw" --weight 2 -- touch "$T/kw-ran"
	waiter=$BG
	eventually is waiters "$P-kw" 1
	is queued_weight "$P-kw" 2
	grep -qx wsem "/proc/$waiter/comm"
	reap "$waiter"
	eventually is waiters "$P-kw" 0
	reap "$holder"
	eventually is used "$P-kw" 0
	[ ! -e "$T/kw-ran" ]
}

# Killing the holder grants the queued job, which then runs.
t_run_kill_grants() {
	wsem create "$P-kg" 4
	bg wsem run "$P-kg" --weight 4 -- sleep 60
	holder=$BG
	eventually is used "$P-kg" 4
	bg wsem run "$P-kg" --weight 3 -- sh -c "touch $T/kg-ran; sleep 60"
	waiter=$BG
	eventually is waiters "$P-kg" 1
	[ ! -e "$T/kg-ran" ]
	reap "$holder"
	eventually test -e "$T/kg-ran"
	is used "$P-kg" 3
	is waiters "$P-kg" 0
	reap "$waiter"
	eventually is used "$P-kg" 0
}

# A job sees its own weight in "wsem stat" (through WSEM_FD); others see it
# in used.
t_run_held_visible() {
	wsem create "$P-h" 4
	bg wsem run "$P-h" --weight 3 --inherit -- \
		sh -c "wsem stat $P-h --json >$T/h.json
		wsem stat $P-h >$T/h.txt; sleep 60"
	eventually test -s "$T/h.txt"
	grep -q '"held":3,' "$T/h.json"
	grep -q '"used":3,' "$T/h.json"
	grep -Eq '^held: +3$' "$T/h.txt"
	is used "$P-h" 3
	is available "$P-h" 1
	is held "$P-h" 0			# we hold nothing
	reap "$BG"
	eventually is used "$P-h" 0
}

# --inherit: the lease lives as long as a descendant keeps the handle (the
# descendant here runs until the test kills it).
t_run_descendant() {
	wsem create "$P-d" 2
	expect 0 wsem run "$P-d" --weight 2 --inherit -- \
		sh -c "sleep 60 & echo \$! >$T/d.pid; exit 0"
	is used "$P-d" 2
	kill -KILL "$(cat "$T/d.pid")"
	eventually is used "$P-d" 0
	# ... and a command may give it back early by closing it
	expect 0 wsem run "$P-d" --weight 2 --inherit -- sh -c \
		"eval \"exec \$WSEM_FD>&-\"; sleep 60 & echo \$! >$T/d.pid"
	is used "$P-d" 0
	kill -KILL "$(cat "$T/d.pid")"
	# supervised (the default): what COMMAND leaves behind holds nothing
	expect 0 wsem run "$P-d" --weight 2 -- \
		sh -c "sleep 60 & echo \$! >$T/d.pid; exit 0"
	is used "$P-d" 0
	kill -0 "$(cat "$T/d.pid")"		# still running, without it
	no_handle "$(cat "$T/d.pid")"
	kill -KILL "$(cat "$T/d.pid")"
}

# Supervised: wsem stays COMMAND's parent, COMMAND holds no handle, a
# signal to wsem goes on to COMMAND, and wsem exits with COMMAND's status.
t_run_supervised() {
	wsem create "$P-sv" 4
	bg wsem run "$P-sv" --weight 3 -- sh -c \
		"trap 'echo hup >$T/sv-sig; exit 5' HUP
		 touch $T/sv-ready; while :; do sleep 0.1; done"
	eventually test -e "$T/sv-ready"
	grep -qx wsem "/proc/$BG/comm"
	c=$(child_of "$BG")
	[ -n "$c" ]
	no_handle "$c"
	if tr '\0' '\n' <"/proc/$c/environ" | grep -q '^WSEM_FD='; then
		echo "COMMAND has WSEM_FD"
		exit 1
	fi
	is used "$P-sv" 3
	kill -HUP "$BG"
	REAPED=0
	wait "$BG" || REAPED=$?
	[ "$REAPED" -eq 5 ]
	[ "$(cat "$T/sv-sig")" = hup ]
	is used "$P-sv" 0
	# SIGTERM and SIGUSR1 go on too; COMMAND killed by one: 128 + it.
	# (SIGINT is ignored in a background job; so it stays for COMMAND.)
	for sig in TERM USR1; do
		bg wsem run "$P-sv" --weight 2 -- sleep 60
		eventually is used "$P-sv" 2
		eventually test -n "$(child_of "$BG")"
		c=$(child_of "$BG")
		eventually grep -qx sleep "/proc/$c/comm"
		kill -$sig "$BG"
		REAPED=0
		wait "$BG" || REAPED=$?
		[ "$REAPED" -eq $((128 + $(kill -l $sig))) ]
		eventually gone "$c"
		is used "$P-sv" 0
	done
}

# A systemd service of KillMode=control-group: its manager signals every
# process of the unit, COMMAND too, so wsem does not pass its signals on.
# Played here: a shell that is the "manager" ($MANAGERPID, a user manager)
# puts itself in a cgroup NAME.service, runs wsem with $INVOCATION_ID, and
# sends SIGTERM to wsem alone, then to COMMAND; a systemctl on PATH
# answers for the unit.  With another KillMode, or another invocation id
# in systemctl's answer, wsem passes the SIGTERM on, as everywhere.
t_run_unit_signal() {
	cg=/sys/fs/cgroup/wsemtest-$$.service
	[ -w /sys/fs/cgroup/cgroup.procs ] || { echo "no cgroup2"; exit 77; }
	mkdir -p "$T/fakebin" "$cg"
	cat >"$T/fakebin/systemctl" <<-EOF
	#!/bin/sh
	echo "\$*" >>"$T/systemctl.args"
	printf 'KillMode=%s\nInvocationID=%s\n' "\$FAKE_MODE" "\$FAKE_ID"
	EOF
	chmod +x "$T/fakebin/systemctl"
	cat >"$T/mgr.sh" <<-EOF
	#!/bin/sh
	export MANAGERPID=\$\$ INVOCATION_ID=0123456789abcdef0123456789abcdef
	export PATH="$T/fakebin:\$PATH" FAKE_MODE="\$1" FAKE_ID="\$2"
	echo \$\$ >"$cg/cgroup.procs"
	rm -f "$T/us-sig" "$T/us-ready"
	wsem run "$P-us" -- sh -c 'echo \$\$ >"$T/us-cmd"
		trap "echo term >>$T/us-sig; exit 0" TERM
		touch "$T/us-ready"; while :; do sleep 0.1; done' &
	w=\$!
	until [ -e "$T/us-ready" ]; do sleep 0.1; done
	kill -TERM \$w
	sleep 1
	cat "$T/us-sig" >"$T/us-sig-wsem" 2>/dev/null || :
	kill -TERM "\$(cat "$T/us-cmd")" 2>/dev/null || :
	wait \$w
	EOF
	wsem create "$P-us" 1
	id=0123456789abcdef0123456789abcdef
	# control-group, this invocation: COMMAND has it once, from the manager
	expect 0 sh "$T/mgr.sh" control-group $id
	[ ! -s "$T/us-sig-wsem" ]
	[ "$(cat "$T/us-sig")" = term ]
	[ "$(cat "$T/systemctl.args")" = "--user show --property=KillMode --property=InvocationID -- wsemtest-$$.service" ]
	is used "$P-us" 0
	# mixed, or another invocation's answer: wsem passes it on, once
	for how in "mixed $id" "control-group 0123456789abcdef0123456789abcde0"
	do
		# shellcheck disable=SC2086 # two words
		expect 0 sh "$T/mgr.sh" $how
		[ "$(cat "$T/us-sig-wsem")" = term ]
		[ "$(cat "$T/us-sig")" = term ]
		is used "$P-us" 0
	done
	rmdir "$cg"
}

# Killing a supervising wsem, even with SIGKILL, kills COMMAND (its
# PR_SET_PDEATHSIG): COMMAND never runs without its lease.
t_run_pdeathsig() {
	wsem create "$P-pd" 4
	bg wsem run "$P-pd" --weight 4 -- sleep 60
	eventually is used "$P-pd" 4
	eventually test -n "$(child_of "$BG")"
	c=$(child_of "$BG")
	eventually grep -qx sleep "/proc/$c/comm"
	reap "$BG"
	[ "$REAPED" -eq 137 ]
	eventually gone "$c"
	eventually is used "$P-pd" 0
}

# euid_is PID UID: PID's effective uid is UID.
euid_is() {
	[ "$(awk '$1 == "Uid:" { print $3 }' "/proc/$1/status" 2>/dev/null)" = "$2" ]
}

# has_child PID: PID has a child.
has_child() {
	[ -n "$(child_of "$1")" ]
}

# soon CMD...: retry CMD every 0.1 s for up to 2 s.
soon() {
	retry 20 "$@"
}

# A set-uid COMMAND run by an ordinary user (issue 44): its exec clears
# the PR_SET_PDEATHSIG that wsem run asked for, and its user's kill(2)
# cannot reach it; the kernel's SIGKILL of the lease's process group, at
# the release of wsem's handle, does.  Twenty rounds of nobody's wsem run
# of a set-uid root sleep, wsem SIGKILLed at once once the child exists
# (maybe before its exec) in half of them, once the sleep runs with
# effective uid 0 in the others: each time the child is gone within 2 s,
# and the weight is back.
t_run_suid_kill() {
	command -v suid_sleep >/dev/null ||
		{ echo "no suid_sleep in the guest"; exit 77; }
	[ "$(su -s /bin/sh -c 'id -u' nobody 2>/dev/null)" = 65534 ] ||
		{ echo "no su to nobody"; exit 77; }
	s=/tmp/suid_sleep.$$
	cp "$(command -v suid_sleep)" "$s"
	chown 0:0 "$s"
	chmod 4755 "$s"
	wsem create "$P-su" 1 --mode 0666
	r=0
	while [ $r -lt 20 ]; do
		su -s /bin/sh -c "exec $WSEM run $P-su -- $s 613" nobody \
			</dev/null >/dev/null 2>&1 &
		w=$!
		echo "$w" >>"$T/pids"
		eventually has_child "$w"
		c=$(child_of "$w")
		grep -qx wsem "/proc/$w/comm"
		[ $((r % 2)) -eq 0 ] || eventually euid_is "$c" 0
		kill -KILL "$w"
		wait "$w" || :
		soon gone "$c"
		r=$((r + 1))
	done
	rm -f "$s"
	eventually is used "$P-su" 0
}

# The same for a gang (run --and): SIGKILL of wsem kills COMMAND's process
# group, what COMMAND started in the background included (which
# PR_SET_PDEATHSIG does not reach), and every semaphore of the gang, a
# child and its parent among them, gets its weight back.
t_run_gang_kill() {
	wsem create "$P-gk1" 2
	wsem create "$P-gk2" 3
	wsem create "$P-gk3" 1 --parent "$P-gk2"
	bg wsem run "$P-gk1" --weight 2 --and "$P-gk2:2" -a "$P-gk3" -- sh -c "
		sleep 611 & echo \$! >>$T/gk.pid
		sleep 612 & echo \$! >>$T/gk.pid; wait"
	eventually is used "$P-gk1" 2
	is used "$P-gk2" 3
	is used "$P-gk3" 1
	eventually awk 'END { exit NR != 2 }' "$T/gk.pid"
	gk=$(cat "$T/gk.pid")
	echo "$gk" >>"$T/pids"
	c=$(child_of "$BG")
	[ -n "$c" ]
	for p in $gk; do
		eventually grep -qx sleep "/proc/$p/comm"
	done
	reap "$BG"
	[ "$REAPED" -eq 137 ]
	eventually gone "$c"
	for p in $gk; do
		eventually gone "$p"
	done
	eventually is used "$P-gk1" 0
	eventually is used "$P-gk2" 0
	eventually is used "$P-gk3" 0
}

# Inside another IPC namespace the name is not found, yet stat and resize
# of NAME reach the inherited handle ($WSEM_FD, $WSEM_NAME).
t_run_inherited_other_ns() {
	wsem create "$P-ns" 4
	expect 0 wsem run "$P-ns" --weight 3 --inherit -- unshare -i sh -c \
		"wsem stat $P-ns --json; wsem resize $P-ns 6; wsem ls"
	grep -q '"capacity":4,"used":3,"available":1,"held":3,' "$T/out"
	if grep -q "^$P-ns " "$T/out"; then
		echo "$P-ns is listed in a new IPC namespace"
		exit 1
	fi
	is capacity "$P-ns" 6
	is used "$P-ns" 0
	# a nested run of NAME reopens the inherited handle: a lease of its own
	expect 0 wsem run "$P-ns" --weight 1 --inherit -- unshare -i \
		wsem run "$P-ns" --weight 2 -- cat /proc/self/status
	is used "$P-ns" 0
}

# A one-line error that blames the device when the device is the problem.
t_device_errors() {
	majmin=$(stat -c '%t %T' /dev/wsem)
	maj=$((0x${majmin% *}))
	min=$((0x${majmin#* }))
	mknod "$T/dev0600" c "$maj" "$min"
	chmod 0600 "$T/dev0600"
	: >"$T/notdev"
	chmod 0666 "$T/notdev"
	# no module (no /dev/wsem, no /sys/module/wsem, no /sys/fs/wsem)
	expect 1 unshare -m sh -c "mount --make-rprivate / 2>/dev/null
		mount -t tmpfs none /dev && mount -t tmpfs none /sys/module &&
		mount -t tmpfs none /sys/fs && exec $WSEM ls"
	err_is "wsem: /dev/wsem: No such file or directory (is the module loaded? modprobe wsem)"
	expect 125 unshare -m sh -c "mount --make-rprivate / 2>/dev/null
		mount -t tmpfs none /dev && mount -t tmpfs none /sys/module &&
		mount -t tmpfs none /sys/fs &&
		exec $WSEM run $P-dv --create 1 -- true"
	err_is "wsem: /dev/wsem: No such file or directory (is the module loaded? modprobe wsem)"
	# rm -f: a missing module is still an error, not a missing name
	expect 1 unshare -m sh -c "mount --make-rprivate / 2>/dev/null
		mount -t tmpfs none /dev && mount -t tmpfs none /sys/module &&
		mount -t tmpfs none /sys/fs && exec $WSEM rm -f $P-dv"
	err_is "wsem: /dev/wsem: No such file or directory (is the module loaded? modprobe wsem)"
	# the module is loaded, the device is not here (a container): the
	# hint is a file by its path, or wsemfs, not modprobe
	hint="the module is loaded: give a semaphore's file by its path, as wsem run /run/limits/NAME, or mount wsemfs: mount -t wsem wsem /sys/fs/wsem"
	expect 125 unshare -m sh -c "mount --make-rprivate / 2>/dev/null
		mount -t tmpfs none /dev && exec $WSEM run gpu -- true"
	err_is "wsem: /dev/wsem: No such file or directory ($hint)"
	expect 1 unshare -m sh -c "mount --make-rprivate / 2>/dev/null
		mount -t tmpfs none /dev && mount -t tmpfs none /sys/module &&
		exec $WSEM ls"
	err_is "wsem: /dev/wsem: No such file or directory ($hint)"
	# some other file at /dev/wsem
	expect 1 unshare -m sh -c "mount --make-rprivate / 2>/dev/null
		mount --bind $T/notdev /dev/wsem && exec $WSEM stat $P-dv"
	err_is "wsem: /dev/wsem is not a wsem device"
	if [ "$(su -s /bin/sh -c 'id -u' nobody 2>/dev/null)" != 65534 ]; then
		return 0
	fi
	# a /dev/wsem the user may not open: the device, not the semaphore
	wsem create "$P-dv" 2 --mode 0666
	expect 125 unshare -m sh -c "mount --make-rprivate / 2>/dev/null
		mount --bind $T/dev0600 /dev/wsem &&
		exec su -s /bin/sh -c '$WSEM run $P-dv -- true' nobody"
	err_is "wsem: /dev/wsem: Permission denied"
	expect 1 unshare -m sh -c "mount --make-rprivate / 2>/dev/null
		mount --bind $T/dev0600 /dev/wsem &&
		exec su -s /bin/sh -c '$WSEM ls' nobody"
	err_is "wsem: /dev/wsem: Permission denied"
}

t_run_timeout() {
	wsem create "$P-t" 4
	bg wsem run "$P-t" --weight 3 -- sleep 60
	eventually is used "$P-t" 3
	start=$(now_cs)
	expect 124 wsem run "$P-t" --weight 2 --timeout 0.5 -- touch "$T/t-ran"
	end=$(now_cs)
	err_is "wsem: $P-t: timed out"
	within 45 1000 $((end - start))
	# units, as timeout(1): 0.005m is 0.3 s
	start=$(now_cs)
	expect 124 wsem run "$P-t" --weight 2 -t 0.005m -- touch "$T/t-ran"
	end=$(now_cs)
	err_is "wsem: $P-t: timed out"
	within 27 1000 $((end - start))
	# --timeout 0 is --nonblock: the same status and line
	expect 75 wsem run "$P-t" --weight 2 --timeout 0 -- touch "$T/t-ran"
	err_is "wsem: $P-t: would block"
	expect 75 wsem run "$P-t" --weight 2 -t 0s -- touch "$T/t-ran"
	err_is "wsem: $P-t: would block"
	[ ! -e "$T/t-ran" ]
	is waiters "$P-t" 0
	# what fits is granted at once, timeout or not
	expect 0 wsem run "$P-t" --weight 1 --timeout 0 -- true
	expect 0 wsem run "$P-t" --weight 1 --timeout=2.5 -- true
	expect 0 wsem run "$P-t" --weight 1 -t 1.5s -- true
	expect 0 wsem run "$P-t" --weight 1 -t 2h -- true
	expect 0 wsem run "$P-t" --weight 1 -t 1d -- true
	reap "$BG"
	eventually is used "$P-t" 0
}

# -E N: the status of a conflict (would block, timed out), as flock(1)'s.
t_run_conflict_exit_code() {
	wsem create "$P-E" 2
	bg wsem run "$P-E" --weight 2 -- sleep 60
	eventually is used "$P-E" 2
	expect 9 wsem run "$P-E" -n -E 9 -- touch "$T/E-ran"
	err_is "wsem: $P-E: would block"
	# -E 0, as flock -n -E 0: skip quietly if busy, COMMAND does not run
	expect 0 wsem run "$P-E" --nonblock --conflict-exit-code 0 -- \
		touch "$T/E-ran"
	err_is "wsem: $P-E: would block"
	expect 0 wsem run "$P-E" -n -E 0 --inherit -- touch "$T/E-ran"
	expect 0 wsem run "$P-E" -t 0.1 -E 0 -- touch "$T/E-ran"
	err_is "wsem: $P-E: timed out"
	expect 0 wsem run "$P-E" -t 0.1 -E 0 --inherit -- touch "$T/E-ran"
	[ ! -e "$T/E-ran" ]
	is used "$P-E" 2
	expect 200 wsem run "$P-E" -t 0.1 -E 200 -- touch "$T/E-ran"
	err_is "wsem: $P-E: timed out"
	expect 42 wsem run "$P-E" -t 0 -E 42 -- touch "$T/E-ran"
	err_is "wsem: $P-E: would block"
	[ ! -e "$T/E-ran" ]
	# COMMAND's own status is untouched
	reap "$BG"
	eventually is used "$P-E" 0
	expect 3 wsem run "$P-E" -n -E 9 -- sh -c 'exit 3'
}

t_run_nonblock() {
	wsem create "$P-n" 4
	bg wsem run "$P-n" --weight 3 -- sleep 60
	holder=$BG
	eventually is used "$P-n" 3
	expect 75 wsem run "$P-n" --weight 2 --nonblock -- touch "$T/n-ran"
	err_is "wsem: $P-n: would block"
	[ ! -e "$T/n-ran" ]
	expect 0 wsem run "$P-n" --weight 1 --nonblock -- true
	# no barging: with a waiter queued, even weight that is free is refused
	bg wsem run "$P-n" --weight 2 -- true
	eventually is waiters "$P-n" 1
	expect 75 wsem run "$P-n" --weight 1 --nonblock -- true
	reap "$BG"
	eventually is waiters "$P-n" 0
	expect 0 wsem run "$P-n" --weight 1 --nonblock -- true
	reap "$holder"
	eventually is used "$P-n" 0
}

# The job that runs under "wsem run" in t_run_concurrency: it adds its weight
# to a shared running total (under a mkdir lock) when it starts and takes it
# off before it ends, recording any moment the total is above the capacity,
# and records when the kernel shows weight held beside its own.
cat >"$T/job.sh" <<'EOF'
# job.sh DIR NAME WEIGHT ID
d=$1 name=$2 w=$3 id=$4
lock() { until mkdir "$d/lock" 2>/dev/null; do usleep 2000; done; }
unlock() { rmdir "$d/lock"; }
bad() { echo "job $id: $*" >>"$d/violations"; }

lock
total=$(($(cat "$d/total") + w))
echo "$total" >"$d/total"
echo "+$w $id $total" >>"$d/log"
[ "$total" -le 4 ] || bad "running total $total > 4"
[ "$total" -le "$(cat "$d/max")" ] || echo "$total" >"$d/max"
unlock

if [ -n "${WSEM_FD:-}" ]; then
	grep -q "^wsem-held:[[:space:]]*$w\$" "/proc/self/fdinfo/$WSEM_FD" ||
		bad "fdinfo of WSEM_FD does not say held $w"
fi
# The kernel's word on overlap: weight held beside ours, while we hold.
used=$(wsem stat "$name" --json | sed -n 's/.*"used":\([0-9]*\).*/\1/p')
[ "$used" -ge "$w" ] && [ "$used" -le 4 ] || bad "used is $used"
[ "$used" -gt "$w" ] && echo "$id $w $used" >>"$d/overlaps"

lock
total=$(($(cat "$d/total") - w))
echo "$total" >"$d/total"
echo "-$w $id $total" >>"$d/log"
unlock
EOF

# The queue order is made known: a gate holds all 4 while the jobs queue one
# by one (each waits until the kernel counts it), weights 2 3 1 2 3 1 ...
# Then, whatever the timing, 3 and 1 are granted together when a 2 ends,
# and the first of them to look sees the other's weight held.  Odd jobs
# run supervised, even ones with --inherit.
t_run_concurrency() {
	d=$T/conc
	mkdir "$d"
	echo 0 >"$d/total"
	echo 0 >"$d/max"
	wsem create "$P-c" 4
	mkfifo "$d/gate"
	bg wsem run "$P-c" --weight 4 -- sh -c "read x <$d/gate"
	gate=$BG
	eventually is used "$P-c" 4
	pids=
	for i in 1 2 3 4 5 6 7 8 9 10 11 12; do
		w=$((i % 3 + 1))
		mode=
		[ $((i % 2)) -eq 0 ] && mode=--inherit
		bg wsem run "$P-c" --weight $w $mode -- \
			sh "$T/job.sh" "$d" "$P-c" $w $i
		pids="$pids $BG"
		eventually is waiters "$P-c" $i
	done
	echo go >"$d/gate"
	wait "$gate"
	for p in $pids; do
		wait "$p"
	done
	cat "$d/log"
	[ ! -e "$d/violations" ] || { cat "$d/violations"; false; }
	[ "$(cat "$d/total")" -eq 0 ]
	[ "$(wc -l <"$d/log")" -eq 24 ]
	# the log's order tells the same: never above 4
	awk '{ t += $1; if (t > 4) bad = 1 } END { exit bad || t != 0 }' \
		"$d/log"
	max=$(cat "$d/max")
	within 1 5 "$max"
	# jobs did run side by side, as the kernel saw it
	cat "$d/overlaps"
	[ "$(wc -l <"$d/overlaps")" -ge 1 ]
	is used "$P-c" 0
	is waiters "$P-c" 0
}

# ---- loans: create --loans, lend -------------------------------------------

t_create_loans() {
	expect 0 wsem create "$P-lo" 8 --loans
	quiet
	is capacity "$P-lo" 0
	is ceiling "$P-lo" 8
	is lent "$P-lo" 0
	expect 0 wsem stat "$P-lo"
	grep -Eq '^ceiling: +8$' "$T/out"
	grep -Eq '^lent: +0$' "$T/out"
	expect 0 wsem ls -l
	grep -Eq "^$P-lo +0 +0 +0 +0 +8 " "$T/out"
	# again, the same: fine; another ceiling, or the other kind: not
	expect 0 wsem create "$P-lo" 8 --loans
	quiet
	expect 1 wsem create "$P-lo" 4 --loans
	err_is "wsem: $P-lo: exists with ceiling 8, not 4 (--exist-ok accepts it)"
	expect 1 wsem create "$P-lo" 8
	err_is "wsem: $P-lo: exists as a loans semaphore of ceiling 8 (--exist-ok accepts it)"
	expect 0 wsem create "$P-lo" 8 --exist-ok
	err_is "wsem: note: $P-lo exists as a loans semaphore, left as it is"
	wsem create "$P-pl" 3
	expect 1 wsem create "$P-pl" 3 --loans
	err_is "wsem: $P-pl: exists with capacity 3, without --loans (--exist-ok accepts it)"
	# its own capacity may be 0; a plain one's not
	expect 0 wsem resize "$P-lo" 2
	is capacity "$P-lo" 2
	expect 0 wsem resize "$P-lo" 0
	is capacity "$P-lo" 0
	expect 1 wsem resize "$P-pl" 0
	err_is "wsem: $P-pl: capacity 0 is out of range (1 .. 2^62 = 4611686018427387904)"
	is capacity "$P-pl" 3
}

t_lend_command() {
	wsem create "$P-ld" 2
	expect 0 wsem lend "$P-ld" 3 -- sh -c "$WSEM stat $P-ld --json"
	grep -q '"capacity":5,' "$T/out"
	grep -q '"lent":3,"lent_here":0,"ceiling":0' "$T/out"
	is capacity "$P-ld" 2
	is lent "$P-ld" 0
	# COMMAND's status, or its signal
	expect 7 wsem lend "$P-ld" 1 -- sh -c 'exit 7'
	ended "terminated by signal 15" wsem lend "$P-ld" 1 -- \
		sh -c 'kill -TERM $$'
	is lent "$P-ld" 0
	# words after CAPACITY start COMMAND, as in run
	expect 0 wsem lend "$P-ld" 4 "$WSEM" stat "$P-ld"
	grep -Eq '^capacity: +6$' "$T/out"
	expect 127 wsem lend "$P-ld" 4 -- "no-such-cmd-$$"
	expect 125 wsem lend "$P-nosuch" 1 -- true
	err_is "wsem: $P-nosuch: No such file or directory"
}

t_lend_until_signal() {
	wsem create "$P-ls" 2
	"$WSEM" lend "$P-ls" 3 </dev/null >"$T/lout" 2>&1 &
	pid=$!
	eventually is capacity "$P-ls" 5
	is lent "$P-ls" 3
	kill -TERM "$pid"
	st=0
	wait "$pid" || st=$?
	[ "$st" -eq 0 ]
	[ ! -s "$T/lout" ]
	is capacity "$P-ls" 2
	is lent "$P-ls" 0
}

# A SIGKILLed lender's loan goes as a shrink: the weight held stays, and a
# queued run heavier than what is left fails.
t_lend_sigkill() {
	wsem create "$P-lk" 2
	bg wsem lend "$P-lk" 3
	lender=$BG
	eventually is capacity "$P-lk" 5
	bg wsem run "$P-lk" --weight 4 -- sleep 600
	eventually is used "$P-lk" 4
	"$WSEM" run "$P-lk" --weight 5 -- touch "$T/ran-lk" >"$T/wout" 2>&1 &
	waiter=$!
	echo "$waiter" >>"$T/pids"
	eventually is waiters "$P-lk" 1
	kill -KILL "$lender"
	st=0
	wait "$waiter" || st=$?
	[ "$st" -eq 125 ]
	grep -q "weight 5 exceeds capacity 2" "$T/wout"
	[ ! -e "$T/ran-lk" ]
	is capacity "$P-lk" 2
	is lent "$P-lk" 0
	is used "$P-lk" 4
	is available "$P-lk" 0
}

# On a loans semaphore the waiter waits through the withdrawal and runs
# once capacity is lent again.
t_lend_loans_waiter() {
	wsem create "$P-lw" 8 --loans
	bg wsem lend "$P-lw" 3
	lender=$BG
	eventually is capacity "$P-lw" 3
	bg wsem run "$P-lw" --weight 5 -- touch "$T/ran-lw"
	eventually is waiters "$P-lw" 1
	kill -KILL "$lender"
	eventually is capacity "$P-lw" 0
	sleep 0.3
	is waiters "$P-lw" 1
	[ ! -e "$T/ran-lw" ]
	# above the ceiling: fails at once
	expect 125 wsem run "$P-lw" --weight 9 -- true
	err_is "wsem: $P-lw: weight 9 exceeds ceiling 8"
	expect 0 wsem lend "$P-lw" 6 -- sh -c "
		until [ -e $T/ran-lw ]; do sleep 0.1; done"
	[ -e "$T/ran-lw" ]
	is capacity "$P-lw" 0
}

t_lend_refused() {
	wsem create "$P-lr" 4 --mode 0666
	# nobody may write /tmp: COMMAND, had it run, would leave the file
	rm -f "/tmp/$P-ran-lr"
	expect 125 su -s /bin/sh -c "$WSEM lend $P-lr 1 -- touch /tmp/$P-ran-lr" \
		nobody
	err_is "wsem: $P-lr: lending more needs the semaphore's owner or CAP_IPC_OWNER (Operation not permitted)"
	[ ! -e "/tmp/$P-ran-lr" ]
	expect 125 wsem lend "$P-lr" 4611686018427387904 -- touch "$T/ran-lr"
	err_is "wsem: $P-lr: lending 4611686018427387904 would take its capacity past 2^62 (Invalid argument)"
	[ ! -e "$T/ran-lr" ]
	is capacity "$P-lr" 4
	is lent "$P-lr" 0
	expect 125 wsem lend "$P-lr" 0 -- true
	usage_or_range=$(cat "$T/err")
	[ "$usage_or_range" = "wsem: $P-lr: capacity 0 is out of range (1 .. 2^62 = 4611686018427387904)" ]
}

# ---- runner ------------------------------------------------------------------


# ---- children (create --parent), gangs (run --and), apply parent= ---------

t_create_parent() {
	wsem create "$P-root" 8
	expect 0 wsem create "$P-kid" 4 --parent "$P-root"
	quiet
	is depth "$P-kid" 1
	is depth "$P-root" 0
	is parent_id "$P-root" 0
	[ "$(jget "$P-kid" parent_id)" -gt 0 ]
	expect 0 wsem stat "$P-kid"
	grep -Eq '^depth: +1$' "$T/out"
	grep -Eq '^parent_id: +[1-9][0-9]*$' "$T/out"
	grep -Eq "^parent: +$P-root\$" "$T/out"
	expect 0 wsem stat "$P-root"
	grep -Eq '^depth: +0$' "$T/out"
	if grep -q '^parent:' "$T/out"; then false; fi
	# there already, under that parent: as create of a root says
	expect 0 wsem create "$P-kid" 4 --parent "$P-root"
	quiet
	expect 1 wsem create "$P-kid" 5 -p "$P-root"
	err_is "wsem: $P-kid: exists with capacity 4, not 5 (--exist-ok accepts it, wsem resize changes it)"
	expect 1 wsem create "$P-kid" 4 -p "$P-root" --exclusive
	err_is "wsem: $P-kid: File exists"
	# there as a root, or under another parent
	wsem create "$P-other" 2
	expect 1 wsem create "$P-other" 2 --parent "$P-root"
	err_is "wsem: $P-other: exists, and is not a child of $P-root"
	expect 1 wsem create "$P-kid" 4 --parent "$P-other"
	err_is "wsem: $P-kid: exists, and is not a child of $P-other"
	# no parent: one line, exit 3, nothing made
	expect 3 wsem create "$P-orphan" 1 --parent "$P-none"
	err_is "wsem: $P-none: no such parent semaphore"
	expect 3 wsem stat "$P-orphan"
	expect 1 wsem create "$P-orphan" 1 --parent "bad name"
	expect 2 wsem create "$P-orphan" 1 --parent "$P-root" --parent-fd 3
	usage_err
	# a grandchild, in ls -l; its weight is its ancestors' too
	expect 0 wsem create "$P-gk" 2 -p "$P-kid"
	is depth "$P-gk" 2
	wsem ls -l | grep -Eq "^$P-gk +2 +0 +0 +0 +0 +2 "
	wsem ls -l | grep -Eq "^$P-root +8 +0 +0 +0 +0 +0 "
	wsem run "$P-gk" --weight 2 -- sh -c "wsem stat $P-root --json >$T/r.json
		wsem stat $P-kid --json >$T/k.json"
	grep -q '"used":2,' "$T/r.json"
	grep -q '"used":2,' "$T/k.json"
	is used "$P-root" 0
	# at most 8 levels below the root
	prev=$P-gk
	for i in 3 4 5 6 7 8; do
		wsem create "$P-d$i" 1 -p "$prev"
		prev=$P-d$i
	done
	is depth "$P-d8" 8
	expect 1 wsem create "$P-d9" 1 -p "$P-d8"
	err_is "wsem: $P-d9: too deep: $P-d8 is 8 levels below its root already, the most a tree has"
	expect 3 wsem stat "$P-d9"
}

# A parent by path (a wsemfs file, as bind-mounted into a container) or by
# an inherited handle.
t_create_parent_path() {
	wsem create "$P-host" 8
	mkdir -p "$T/fs"
	expect 0 unshare -m sh -c "mount -t wsem wsem $T/fs &&
		exec $WSEM create $P-c1 4 --parent $T/fs/$P-host"
	quiet
	is depth "$P-c1" 1
	[ "$(jget "$P-c1" parent_id)" -gt 0 ]
	expect 0 unshare -m sh -c "mount -t wsem wsem $T/fs &&
		exec 7<>$T/fs/$P-host && exec $WSEM create $P-c2 2 --parent-fd 7"
	quiet
	[ "$(jget "$P-c1" parent_id)" = "$(jget "$P-c2" parent_id)" ]
	# a read-only handle watches: it cannot parent
	expect 1 unshare -m sh -c "mount -t wsem wsem $T/fs &&
		exec 7<$T/fs/$P-host && exec $WSEM create $P-c3 2 --parent-fd 7"
	err_is "wsem: $P-c3: the parent --parent-fd 7 is open read-only: a child needs it open for reading and writing"
	expect 3 unshare -m sh -c "mount -t wsem wsem $T/fs &&
		exec $WSEM create $P-c3 4 --parent $T/fs/$P-none"
	err_is "wsem: $T/fs/$P-none: no such parent semaphore"
	expect 3 wsem stat "$P-c3"
	# the child of a path is where NAME says: this IPC namespace
	wsem run "$P-c1" --weight 4 -- sh -c "wsem stat $P-host --json >$T/h.json"
	grep -q '"used":4,' "$T/h.json"
}

# run --and: one gang, all held while COMMAND runs, none before or after.
t_run_gang() {
	wsem create "$P-g1" 2
	wsem create "$P-g2" 3
	wsem create "$P-g3" 1
	expect 0 wsem run "$P-g1" --weight 2 --and "$P-g2:3" -a "$P-g3" -- sh -c "
		wsem stat $P-g1 --json >$T/g1; wsem stat $P-g2 --json >$T/g2
		wsem stat $P-g3 --json >$T/g3"
	quiet
	grep -q '"used":2,' "$T/g1"
	grep -q '"used":3,' "$T/g2"
	grep -q '"used":1,' "$T/g3"
	is used "$P-g1" 0
	is used "$P-g2" 0
	is used "$P-g3" 0
	# one busy: --nonblock takes none of them
	bg wsem run "$P-g3" -- sleep 600
	h=$BG
	eventually is used "$P-g3" 1
	expect 75 wsem run "$P-g1" --and "$P-g2:1" --and "$P-g3" -n -- true
	err_is "wsem: $P-g1: would block"
	is used "$P-g1" 0
	is used "$P-g2" 0
	expect 124 wsem run "$P-g1" --and "$P-g3" -t 0.2 -- true
	err_is "wsem: $P-g1: timed out"
	is used "$P-g1" 0
	# waiting holds nothing; granted all at once when the last is free
	bg wsem run "$P-g1" --and "$P-g3" -- sh -c "touch $T/ran; sleep 600"
	eventually is waiters "$P-g3" 1
	is used "$P-g1" 0
	[ ! -e "$T/ran" ]
	reap "$h"
	eventually test -e "$T/ran"
	is used "$P-g1" 1
	is used "$P-g3" 1
	# a child and an unrelated semaphore in one gang
	wsem create "$P-g4" 2 --parent "$P-g2"
	expect 0 wsem run "$P-g4" --weight 2 --and "$P-g2:1" -- sh -c "
		wsem stat $P-g2 --json >$T/g2"
	grep -q '"used":3,' "$T/g2"
	# errors: 125, one line, nothing held
	expect 125 wsem run "$P-g2" --and "$P-none" -- true
	err_is "wsem: $P-none: No such file or directory"
	expect 125 wsem run "$P-g2" --and "$P-g4:3" -n -- true
	err_is "wsem: $P-g4: weight 3 exceeds capacity 2"
	is used "$P-g2" 0
	expect 125 wsem run "$P-g2" --and "$P-g4:0" -- true
	usage_err
	expect 125 wsem run "$P-g2" --and "$P-g4" --inherit -- true
	usage_err
	expect 125 wsem run "$P-g2" -a a -a b -a c -a d -a e -a f -a g -a h \
		-- true
	usage_err
}

# apply: parent=NAME makes a child; parents first, whatever the order.
t_apply_parent() {
	apply_ns wsem-nest.d
	printf 'kid capacity=2 parent=top\ngk capacity=1 parent=kid\n' \
		>"$d/10-kid.conf"
	printf 'top capacity=4\n' >"$d/20-top.conf"
	expect 0 nsenter -t "$ns" -i "$WSEM" apply -n "$d"
	[ "$(sed -n 1p "$T/out")" = "create top capacity 4 mode 0600 (dry run)" ]
	expect 0 nsenter -t "$ns" -i "$WSEM" apply "$d"
	[ "$(sed -n 1p "$T/out")" = "create top capacity 4 mode 0600" ]
	[ "$(sed -n 2p "$T/out")" = "create kid capacity 2 mode 0600 parent top" ]
	[ "$(sed -n 3p "$T/out")" = "create gk capacity 1 mode 0600 parent kid" ]
	nsenter -t "$ns" -i "$WSEM" stat kid >"$T/s"
	grep -Eq '^depth: +1$' "$T/s"
	grep -Eq '^parent: +top$' "$T/s"
	nsenter -t "$ns" -i "$WSEM" stat gk --json | grep -q '"depth":2,'
	expect 0 nsenter -t "$ns" -i "$WSEM" apply "$d"
	quiet
	# resized as any other
	printf 'kid capacity=3 parent=top\ngk capacity=1 parent=kid\n' \
		>"$d/10-kid.conf"
	expect 0 nsenter -t "$ns" -i "$WSEM" apply "$d"
	grep -qx "resize kid 2 -> 3" "$T/out"
	# never moved: declared elsewhere in the tree, it is left, with a line
	printf 'kid capacity=3\ngk capacity=1 parent=top\n' >"$d/10-kid.conf"
	expect 1 nsenter -t "$ns" -i "$WSEM" apply "$d"
	grep -qx "wsem: kid: exists as a child, not as a root: left as it is (wsem rm it for apply to make it anew)" "$T/err"
	grep -qx "wsem: gk: exists as a child, not as a child of top: left as it is (wsem rm it for apply to make it anew)" "$T/err"
	# a parent nobody declares, and that is not there
	printf 'kid capacity=3 parent=top\ngk capacity=1 parent=kid\nx capacity=1 parent=nothere\n' \
		>"$d/10-kid.conf"
	expect 1 nsenter -t "$ns" -i "$WSEM" apply "$d"
	err_is "wsem: x: create: parent nothere: no such semaphore"
	# a loop, and a parent of itself
	printf 'a capacity=1 parent=b\nb capacity=1 parent=a\n' >"$d/30-loop.conf"
	printf 'kid capacity=3 parent=top\ngk capacity=1 parent=kid\n' \
		>"$d/10-kid.conf"
	expect 1 nsenter -t "$ns" -i "$WSEM" apply "$d"
	grep -qx "wsem: $d/30-loop.conf:1: a: parent=b comes back to it: left out" "$T/err"
	grep -qx "wsem: $d/30-loop.conf:2: b: parent=a comes back to it: left out" "$T/err"
	printf 'a capacity=1 parent=a\n' >"$d/30-loop.conf"
	expect 1 nsenter -t "$ns" -i "$WSEM" apply "$d"
	err_is "wsem: $d/30-loop.conf:1: parent= names the semaphore itself; nothing of this file is applied"
}

# apply of a cluster limit (cluster=etcd): a loans semaphore whose ceiling
# is the capacity, lent to by wsem-agent; the agent's keys only with
# cluster=; an existing semaphore of another kind left as it is.
t_apply_cluster() {
	apply_ns wsem-cluster.d
	printf 'seats capacity=6 cluster=etcd endpoints=http://127.0.0.1:2379 host=h1 turn=500 mode=0666\n' \
		>"$d/10-seats.conf"
	expect 0 nsenter -t "$ns" -i "$WSEM" apply "$d"
	[ "$(cat "$T/out")" = "create seats loans ceiling 6 mode 0666" ]
	nsenter -t "$ns" -i "$WSEM" stat seats --json >"$T/j"
	grep -q '"capacity":0,' "$T/j"
	grep -Eq '"ceiling":6[,}]' "$T/j"
	expect 0 nsenter -t "$ns" -i "$WSEM" apply "$d"
	quiet
	# an agent's key without cluster=, another cluster, a parent
	printf 'net capacity=2 endpoints=http://127.0.0.1:2379\n' >"$d/20-bad.conf"
	expect 1 nsenter -t "$ns" -i "$WSEM" apply "$d"
	err_is "wsem: $d/20-bad.conf:1: endpoints=, host=, ... are wsem-agent's: only with cluster=etcd; nothing of this file is applied"
	printf 'net capacity=2 cluster=consul\n' >"$d/20-bad.conf"
	expect 1 nsenter -t "$ns" -i "$WSEM" apply "$d"
	err_is "wsem: $d/20-bad.conf:1: invalid cluster (etcd); nothing of this file is applied"
	printf 'net capacity=2 cluster=etcd parent=seats\n' >"$d/20-bad.conf"
	expect 1 nsenter -t "$ns" -i "$WSEM" apply "$d"
	err_is "wsem: $d/20-bad.conf:1: a cluster limit (cluster=) has no parent=; nothing of this file is applied"
	expect 3 nsenter -t "$ns" -i "$WSEM" stat net
	rm "$d/20-bad.conf"
	# a plain semaphore where a cluster limit is declared: left, a line
	nsenter -t "$ns" -i "$WSEM" rm seats
	nsenter -t "$ns" -i "$WSEM" create seats 6
	expect 1 nsenter -t "$ns" -i "$WSEM" apply "$d"
	err_is "wsem: seats: exists with a capacity of its own 6, not as cluster= declares it (loans, ceiling 6): left as it is (wsem rm it for apply to make it anew)"
	nsenter -t "$ns" -i "$WSEM" stat seats --json | grep -q '"capacity":6,'
}

# stat shows what wsem-agent keeps of a cluster limit in
# /run/wsem-agent/IPCNS/NAME (agent/view.go has the format), read from
# that file alone: the cluster's capacity and what is free, each host's
# line with this host marked, a failing look, a stale view.  A bad file,
# or another semaphore's, is one note on stderr: stat exits 0 without it.
t_stat_cluster() {
	wsem create "$P-cv" 2
	ns=$(readlink /proc/self/ns/ipc | tr -dc 0-9)
	d=/run/wsem-agent/$ns
	f=$d/$P-cv
	mkdir -p "$d"
	trap 'rm -f "$f"; rmdir "$d" /run/wsem-agent 2>/dev/null || :' EXIT
	id=$(wsem run "$P-cv" --inherit -- \
		sh -c 'sed -n "s/^wsem-id:[[:space:]]*//p" /proc/self/fdinfo/$WSEM_FD')
	[ -n "$id" ]
	# boot_ns AGO: CLOCK_BOOTTIME less AGO nanoseconds (the guest does not
	# suspend: /proc/uptime's clock)
	boot_ns() {
		awk -v a="$1" '{ printf "%.0f\n", $1 * 1000000000 - a }' /proc/uptime
	}
	# view LOOK_AGO ID [LINE...]: the file, as an agent whose last look
	# ended LOOK_AGO ns ago writes it, with LINEs before the hosts'
	view() {
		{
			echo "wsem-agent-view 1"
			printf 'name %s\nid %s\npid 4242\nthis h1\nprefix /wsem/%s/\n' \
				"$P-cv" "$2" "$P-cv"
			printf 'look %s\nrefresh 5300000000\nread %s\nrevision 42\n' \
				"$(boot_ns "$1")" "$(boot_ns 200000000)"
			printf 'capacity 6\nfree 3\n'
			shift 2
			for l in "$@"; do
				echo "$l"
			done
			printf 'host h%%202 1 0 0 0 0\nhost h1 2 2 2 2 1\n'
		} >"$f"
	}
	# the view of a running agent whose looks fail since 3 s, with a key
	# of a later agent and a host name with a blank (%20)
	view 100000000 "$id" "failing $(boot_ns 3000000000) context deadline exceeded" \
		"later-key 1 2 3"
	expect 0 wsem stat "$P-cv"
	cat "$T/out"
	[ ! -s "$T/err" ]
	[ "$(wc -l <"$T/out")" -eq 31 ]
	[ "$(sed -n '25p;27,30p' "$T/out" | tr '\n' '|')" = \
		"|  capacity 6 across the cluster, 3 free; this host is h1 (*)|  HOST     SHARE  NEED  FLOOR  QUEUE  AGENT|  h%202        1     0      0      -  gone|  h1 *         2     2      2      2  alive|" ]
	grep -Eq "^CLUSTER \(wsem-agent's view of etcd /wsem/$P-cv/ at revision 42, read [0-9]+ms ago\)\$" \
		"$T/out"
	grep -Eq '^  h%202 +1 +0 +0 +- +gone$' "$T/out"
	grep -Eq '^  h1 \* +2 +2 +2 +2 +alive$' "$T/out"
	grep -Eq "^  etcd: the agent's looks have failed for [3-9]\.[0-9]s: context deadline exceeded\$" \
		"$T/out"
	! grep -q stale "$T/out" || exit 1
	view 100000000 "$id" "failing $(boot_ns 3000000000) context deadline exceeded"
	expect 0 wsem stat "$P-cv" --json
	[ ! -s "$T/err" ]
	[ "$(wc -l <"$T/out")" -eq 1 ]
	grep -Eq "\"children\":\[\],\"cluster\":\{\"host\":\"h1\",\"prefix\":\"/wsem/$P-cv/\",\"revision\":42,\"capacity\":6,\"free\":3,\"age_ns\":[0-9]+,\"look_age_ns\":[0-9]+,\"refresh_ns\":5300000000,\"stale\":false,\"etcd_ok\":false,\"error\":\"context deadline exceeded\",\"failing_ns\":[3-9][0-9]{9},\"pid\":4242,\"hosts\":\[\{\"host\":\"h 2\",\"share\":1,\"need\":0,\"floor\":0,\"queue\":0,\"alive\":false,\"this\":false\},\{\"host\":\"h1\",\"share\":2,\"need\":2,\"floor\":2,\"queue\":2,\"alive\":true,\"this\":true\}\]\}\}\$" \
		"$T/out"
	# an agent that has not looked for a minute: stale (and the guest up
	# for more than that, so that the look's boot time is not negative)
	until [ "$(cut -d. -f1 /proc/uptime)" -ge 62 ]; do sleep 1; done
	view 60000000000 "$id"
	expect 0 wsem stat "$P-cv"
	grep -Eq '^  stale: not rewritten for 1m0[0-9]s, while a running agent rewrites it every 5\.3s at most: is wsem-agent \(pid 4242\) running\?$' \
		"$T/out"
	! grep -q '^  etcd:' "$T/out" || exit 1
	expect 0 wsem stat "$P-cv" --json
	grep -q '"refresh_ns":5300000000,"stale":true,"etcd_ok":true,"error":"","failing_ns":0,' \
		"$T/out"
	# bad files: a note, the rest of stat as without a view, exit 0
	for bad in "host h3 1 2 3" "host h3 1 2 3 4 2" "free -1" "capacity 6 7" \
	    "this h%2" "wsem-agent-view 2" "" "no-free"; do
		case $bad in
		"") printf '' >"$f"; why="empty" ;;
		no-free) view 0 "$id"; sed -i '/^free /d' "$f"; why='no "free" line' ;;
		wsem-agent-view*) view 0 "$id"; sed -i "1s/.*/$bad/" "$f"
			why='line 1: not "wsem-agent-view 1"' ;;
		*) view 0 "$id" "$bad"; why="line 13: not understood" ;;
		esac
		expect 0 wsem stat "$P-cv"
		err_is "wsem: note: $f: $why: no cluster view shown"
		[ "$(wc -l <"$T/out")" -eq 24 ]
		expect 0 wsem stat "$P-cv" --json
		err_is "wsem: note: $f: $why: no cluster view shown"
		grep -Eq "^$JSON_STAT\$" "$T/out"
	done
	view 0 "$id"
	printf 'host h4 0 0 0 0 1' >>"$f"		# no newline at the end
	expect 0 wsem stat "$P-cv"
	err_is "wsem: note: $f: line 15: no newline at its end: no cluster view shown"
	# the view of an earlier semaphore of that name
	view 0 $((id + 1))
	expect 0 wsem stat "$P-cv"
	err_is "wsem: note: $f: the view of another semaphore $P-cv (id $((id + 1)), this one's is $id): no cluster view shown"
	# none: nothing said
	rm "$f"
	expect 0 wsem stat "$P-cv"
	[ ! -s "$T/err" ]
	[ "$(wc -l <"$T/out")" -eq 24 ]
}

TESTS="
t_create create makes a semaphore: capacity, used 0, mode 0600, owner
t_create_mode create --mode is exact, the default masked by the umask
t_create_existing create: same capacity is fine, another fails unless --exist-ok
t_create_invalid create rejects bad capacities and names with exit 1
t_usage usage errors exit 2 (run: 125) with one wsem: usage: line
t_help wsem -h, --help, help VERB, VERB --help, -V and --version exit 0
t_not_found stat, rm, resize of a missing name exit 3, run 125
t_ls_table ls prints an aligned table with a header, in name order
t_ls_json ls --json is an array of objects keyed by struct wsem_stat
t_ls_columns ls -o COLUMNS and -n: chosen columns, no header
t_ls_json_empty ls of an empty namespace
t_stat_table stat prints every field, aligned
t_stat_json stat --json is one object keyed by struct wsem_stat
t_stat_holders stat shows who holds and who waits, in tables and JSON
t_run_label run labels the handle with COMMAND, supervised and --inherit
t_ls_long ls -l adds owner, group, mode and the longest wait
t_top top -n N: plain rounds off a terminal, busiest first
t_top_tree top draws the tree: children under their parent, what each holds of it
t_stat_children stat of a parent lists what each child holds of it, table and JSON
t_wait_idle wait [--idle]: returns when the last holder leaves; -t exits 124
t_apply apply: creates, resizes, re-modes; idempotent; --dry-run, --prune; a bad file is one error
t_apply_dirs apply without PATH: /etc, /run, /usr/lib wsem.d as sysctl.d; none is nothing declared
t_resize resize changes the capacity; 0 is refused
t_rm rm removes the name; again exits 3; rm -f of a missing one exits 0
t_permissions another user: stat/ls with read only, resize/run/rm refused
t_run_env run --inherit exports WSEM_FD; supervised COMMAND has no handle
t_run_short_options run -n -t ..., options after NAME before --; -w refused
t_run_create_mode run --create takes --mode
t_run_create_existing run --create on another capacity says so on stderr and runs
t_symbolic_mode create -m and run --create -m take symbolic modes, relative to 0600
t_run_weight_all run --weight all holds the whole capacity
t_acquire_release acquire/release --fd N hold weight on the shell's own descriptor
t_run_status run exits with COMMAND's status, or its signal
t_run_signal run dies of the signal that killed COMMAND; without a terminal its caller lives on
t_run_exec_fail run: COMMAND not found 127, not executable 126
t_run_command_first run finds COMMAND before it waits: 127/126 at once
t_run_verbose run --verbose says when it waits and how long it took
t_run_invalid run: bad weight or capacity exits 125
t_run_exec_in_place run --inherit becomes COMMAND; killing it frees the lease
t_run_kill_waiting killing a waiting run leaves the queue, COMMAND never runs
t_run_kill_grants killing the holder lets the queued run start
t_run_held_visible a job's held weight shows in wsem stat while it runs
t_run_descendant --inherit: a descendant keeps the lease; supervised: not
t_run_supervised run waits for COMMAND, forwards signals, exits with its status
t_run_unit_signal run in a KillMode=control-group unit: the manager's signals reach COMMAND once
t_run_pdeathsig SIGKILL to a supervising wsem kills COMMAND too
t_run_gang_kill SIGKILL to wsem run --and: COMMAND's group killed, every semaphore freed
t_run_suid_kill SIGKILL to nobody's wsem run: its set-uid root COMMAND is gone within 2 s, 20 rounds
t_run_inherited_other_ns stat/resize/run NAME use WSEM_FD in another IPC namespace
t_device_errors /dev/wsem missing, not wsem, not permitted: one line naming it
t_run_timeout run --timeout exits 124 with one line; --timeout 0 is --nonblock
t_run_conflict_exit_code run -E N: the status of would block and timed out
t_run_nonblock run --nonblock exits 75 with one line, no barging
t_run_concurrency 12 jobs of weights 1-3 under capacity 4 never exceed it
t_create_loans create --loans: capacity 0, a ceiling; resize to 0; existing ones compared
t_lend_command lend -- COMMAND: lent while it runs, its status, its signal
t_lend_until_signal lend without COMMAND: until SIGTERM, then exit 0, withdrawn
t_lend_sigkill SIGKILL of the lender: a shrink, held weight kept, a heavier waiter fails
t_lend_loans_waiter a loans semaphore's waiter waits through a withdrawal, runs on a new loan
t_lend_refused lend: EPERM for another user, past 2^62, 0: exit 125 with one line
t_create_parent create --parent NAME: a child; stat, ls -l, errors, depth
t_create_parent_path create --parent PATH and --parent-fd N; read-only refused
t_run_gang run --and: all held while COMMAND runs, none if one is busy
t_apply_parent apply parent=: parents first, never moved, loops refused
t_apply_cluster apply cluster=etcd: a loans semaphore for wsem-agent; its keys only with cluster=
t_stat_cluster stat shows wsem-agent's view of a cluster limit; a bad view file is a note, exit 0
"

# Kill what the last test left running and remove its semaphores.
cleanup() {
	while read -r p; do
		kill -KILL "$p" 2>/dev/null
	done <"$T/pids"
	: >"$T/pids"
	wsem ls 2>/dev/null | awk -v p="$P" 'index($1, p) == 1 { print $1 }' |
		while read -r s; do
			wsem rm "$s"
		done
}

# CLI_TESTS="t_a t_b": only those (to try a change quickly by hand).
if [ -n "${CLI_TESTS:-}" ]; then
	TESTS=$(echo "$TESTS" | while read -r fn rest; do
		case " $CLI_TESTS " in *" $fn "*) echo "$fn $rest" ;; esac
	done)
fi
nl='
'
set -f
IFS=$nl
# shellcheck disable=SC2086 # one test a line
set -- $TESTS
unset IFS
set +f

echo "TAP version 13"
echo "1..$#"
n=0
failed=0
for line in "$@"; do
	fn=${line%% *}
	desc=${line#* }
	n=$((n + 1))
	(set -ex; "$fn") </dev/null >"$T/log" 2>&1
	st=$?
	if [ $st -eq 0 ]; then
		echo "ok $n - $desc"
	elif [ $st -eq 77 ]; then
		echo "ok $n - $desc # SKIP $(head -n 1 "$T/log")"
	else
		echo "not ok $n - $desc"
		tail -n 25 "$T/log" | sed 's/^/#  /'
		failed=$((failed + 1))
	fi
	cleanup
done
rm -rf "$T"
[ $failed -eq 0 ]
