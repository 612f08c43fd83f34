#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The jobserver endpoint's fifo style with Debian sid's real clients, which
# mkinitramfs.sh brings into the guest under /opt/sid (sid-clients.sh):
# GNU make 4.4.1 (flat and recursive), ninja 1.13 and cargo 1.97, each
# started by "wsem run NAME --jobserver -- CLIENT".  Every job logs "+"
# when it starts and "-" when it ends, so that the log tells how many ran
# at once: never more than the capacity, and the capacity at some point;
# nothing used afterwards.  A make or a cargo killed with SIGKILL while a
# make shares the semaphore gives its tokens back at once, and the make
# grows back to the capacity.  Runs as root in the test VM; TAP on
# stdout.
#
# Environment: WSEM_CLIENTS_KILLS, how many times each kill test kills a
# build (default 3).

if [ ! -c /dev/wsem ]; then
	echo "1..0 # SKIP no /dev/wsem: the wsem module is not loaded"
	exit 4
fi
SID=/opt/sid/bin
# In make check's guests mkinitramfs.sh says why the clients are missing:
# "skip REASON" where sid is left out on purpose, "fail REASON" otherwise.
if [ ! -x $SID/make ] || [ ! -x $SID/ninja ] || [ ! -x $SID/cargo ] ||
   [ ! -x $SID/rustc ]; then
	why=$(cat /etc/wsem-sid-clients 2>/dev/null)
	case $why in
	skip\ *)
		echo "1..0 # SKIP ${why#skip }"
		exit 4 ;;
	'')
		echo "1..0 # SKIP no sid clients in $SID (make check's guests have them)"
		exit 4 ;;
	esac
	echo "not ok 1 Debian sid's make, ninja, cargo and rustc in $SID"
	echo "# ${why#fail }"
	echo "1..1"
	exit 1
fi

T=$(mktemp -d /tmp/jobserver_clients_test.XXXXXX) || exit 1
N=jsclients$$
N1=jsclients1$$
CAP=3
NAP=0.5
KILLS=${WSEM_CLIENTS_KILLS:-3}
MNT=/sys/fs/wsem
FIFO=$MNT/@jobserver/$N
mounted=
if ! wsem create "$N" $CAP --mode 0666 ||
   ! wsem create "$N1" 1 --mode 0666; then
	echo "Bail out! create failed"
	exit 1
fi
if [ "$(stat -f -c %t "$MNT" 2>/dev/null)" != "7773656d" ]; then
	mount -t wsem wsem "$MNT" || { echo "Bail out! cannot mount wsemfs"; exit 1; }
	mounted=1
fi
# cargo and its rustc: the sid ones, a private home, no registry.  No
# incremental state: every build here is a first one, with nothing to
# reuse.
export RUSTC=$SID/rustc CARGO_HOME="$T/cargo-home" CARGO_INCREMENTAL=0
export CARGO_TERM_COLOR=never

# The job every client runs: "+ ID" into LOG, a nap, "- ID" (appends of
# a line are atomic, so the log's order is the true order; ID tells the
# builds that share a log apart).
# shellcheck disable=SC2016 # make's and ninja's variables, not sh's
JOB='echo + $(ID) >>$(LOG); sleep $(NAP); echo - $(ID) >>$(LOG)'

# makefile DIR JOBS: a Makefile of JOBS independent jobs in DIR.
makefile() {
	mkdir -p "$1"
	{
		printf 'all:'
		i=0
		while [ "$i" -lt "$2" ]; do
			printf ' j%d' "$i"
			i=$((i + 1))
		done
		printf '\n\nj%%:\n\t@%s\n.PHONY: all\n' "$JOB"
	} >"$1/Makefile"
}

# ninjafile DIR JOBS LOG [ID]: the same for ninja, its LOG and ID fixed.
ninjafile() {
	mkdir -p "$1"
	# shellcheck disable=SC2016 # sed's
	{
		printf 'LOG = %s\nNAP = %s\nID = %s\n' "$3" $NAP "${4:-}"
		printf 'rule job\n  command = %s\n' \
			"$(echo "$JOB" | sed 's/\$(\([A-Z]*\))/$\1/g')"
		i=0
		while [ "$i" -lt "$2" ]; do
			printf 'build j%d: job\n' "$i"
			i=$((i + 1))
		done
	} >"$1/build.ninja"
}

ninjafile "$T/ninja" 12 "$T/log"
makefile "$T/flat" 12
makefile "$T/long" 1000
# Recursive make: three sub-makes of four jobs each, run by $(MAKE).
mkdir -p "$T/top"
# shellcheck disable=SC2016 # make's
printf 'all: s0 s1 s2\n\ns%%:\n\t@$(MAKE) -s -C sub$* LOG=$(LOG) NAP=$(NAP)\n' \
	>"$T/top/Makefile"
for s in 0 1 2; do
	makefile "$T/top/sub$s" 4
done

# crates DIR COUNT: a cargo workspace of COUNT library crates, no
# dependencies (nothing to download, nothing to link).
crates() {
	mkdir -p "$1"
	{
		printf '[workspace]\nresolver = "2"\nmembers = ['
		i=0
		while [ "$i" -lt "$2" ]; do
			printf '"c%d", ' "$i"
			i=$((i + 1))
		done
		printf ']\n'
	} >"$1/Cargo.toml"
	i=0
	while [ "$i" -lt "$2" ]; do
		mkdir -p "$1/c$i/src"
		printf '[package]\nname = "c%d"\nversion = "0.1.0"\nedition = "2021"\n' \
			"$i" >"$1/c$i/Cargo.toml"
		printf 'pub fn f(x: u64) -> u64 {\n    x * %d + 1\n}\n' "$i" \
			>"$1/c$i/src/lib.rs"
		i=$((i + 1))
	done
}
crates "$T/ws" 9
crates "$T/wsA" 6
# RUSTC_WRAPPER: "+" and "-" around each crate's rustc, with a nap in the
# job (cargo's own probes of rustc are passed through).
cat >"$T/wrap" <<'EOT'
#!/bin/sh
case " $* " in
*" --crate-name c"[0-9]*)
	echo + >>"$WRAP_LOG"
	sleep "$WRAP_NAP"
	"$@"
	r=$?
	echo - >>"$WRAP_LOG"
	exit $r ;;
esac
exec "$@"
EOT
chmod 0755 "$T/wrap"
export RUSTC_WRAPPER="$T/wrap"

# Root's and nobody's builds (t_two_users): nobody's ninja of 12 jobs in
# a folder of nobody's (ninja writes its .ninja_log there), both logging
# into T/logU.
chmod 0755 "$T"
ninjafile "$T/ninjaU" 12 "$T/logU" u
chown nobody "$T/ninjaU"

# A make whose one job is a cheat (t_extra_bytes), beside a make of 60.
mkdir -p "$T/cheat"
# shellcheck disable=SC2016 # make's
printf 'all: cheat\ncheat:\n\t@sh %s $(LOG)\n.PHONY: all cheat\n' \
	"$T/cheat.sh" >"$T/cheat/Makefile"
makefile "$T/many" 60

# Each check says how long it took.
# shellcheck disable=SC2034 # util.sh's check reads it
check_secs=1
# shellcheck source-path=SCRIPTDIR source=util.sh
. "$(dirname "$0")/util.sh"
write_cheat "$T/cheat.sh"

# snapshot: "used U" then "PID WEIGHT COMM" for each holder.
snapshot() {
	wsem stat "$N" --json | sed 's/"queue":.*//' | tr '{' '\n' | sed -n \
		-e 's/.*"used":\([0-9]*\).*/used \1/p' \
		-e 's/^"pid":\([0-9]*\),"comm":"\([^"]*\)".*"weight":\([0-9]*\).*/\1 \3 \2/p'
}

# parents: "PID PPID" for each process.
parents() {
	cat /proc/[0-9]*/stat 2>/dev/null |
	sed -n 's/^\([0-9]*\) (.*) . \([0-9]*\) .*/\1 \2/p'
}

# tree PID: PID and its descendants.
tree() {
	parents | awk -v top="$1" '{ parent[$1] = $2 }
	END {
		keep[top] = 1
		do {
			more = 0
			for (p in parent)
				if (!(p in keep) && (parent[p] in keep)) {
					keep[p] = 1
					more = 1
				}
		} while (more)
		for (p in keep)
			print p
	}'
}

# child PID: PID's child process (the client wsem run started).
child() {
	parents | awk -v p="$1" '$2 == p { print $1; exit }'
}

# held_by PID...: what the processes PID... hold, from one snapshot:
# "U H" with U the semaphore's used and H their sum.
held_by() {
	snapshot >"$T/snap"
	awk -v pids=" $* " '
	$1 == "used" { u = $2; next }
	index(pids, " " $1 " ") { h += $2 }
	END { print u + 0, h + 0 }' "$T/snap"
}

# client_ran LOG JOBS ERR: all JOBS jobs ran, at most CAP at once and
# CAP at some point, the client's ERR says nothing of the jobserver, and
# nothing is used afterwards.
client_ran() {
	cat "$3"
	[ "$(grep -c + "$1")" -eq "$2" ] ||
		{ echo "$(grep -c + "$1") of $2 jobs ran"; return 1; }
	m=$(most "$1")
	echo "# at most $m at once" >&3
	! sed "s|$T|T|g" "$3" | grep -i jobserver ||
		{ echo "a word of the jobserver"; return 1; }
	[ "$m" -le $CAP ] || { echo "$m jobs at once, more than $CAP"; return 1; }
	[ "$m" -eq $CAP ] || { echo "never more than $m at once"; return 1; }
	wait_used 0
}

t_ninja() {
	: >"$T/log"
	wsem run "$N" --jobserver -- $SID/ninja -C "$T/ninja" \
		>"$T/ninja.out" 2>"$T/ninja.err" || { cat "$T/ninja.out"; return 1; }
	# ninja 1.13 says so when it finds a jobserver it can use.
	grep "Jobserver mode detected: *-j1 --jobserver-auth=fifo:$FIFO\$" \
		"$T/ninja.out" || { cat "$T/ninja.out"; return 1; }
	client_ran "$T/log" 12 "$T/ninja.err"
}

# Capacity 1 is wsem run's own unit: ninja runs only its implicit job,
# where its default parallelism (the CPUs + 2) would run several.
t_ninja_one() {
	: >"$T/log"
	wsem run "$N1" --jobserver -- $SID/ninja -C "$T/ninja" \
		>"$T/ninja.out" 2>&1 || { cat "$T/ninja.out"; return 1; }
	m=$(most "$T/log")
	echo "# at most $m at once" >&3
	[ "$(grep -c + "$T/log")" -eq 12 ] && [ "$m" -eq 1 ] &&
	[ "$(used "$N1")" = 0 ]
}

t_make() {
	: >"$T/log"
	wsem run "$N" --jobserver -- $SID/make -C "$T/flat" LOG="$T/log" \
		NAP=$NAP 2>"$T/make.err" || return 1
	client_ran "$T/log" 12 "$T/make.err"
}

# The top make's recipes are sub-makes by $(MAKE): its own path, the sid
# make, which finds the fifo in MAKEFLAGS as its parent left it.
t_recursive() {
	: >"$T/log"
	wsem run "$N" --jobserver -- $SID/make -C "$T/top" LOG="$T/log" \
		NAP=$NAP >"$T/make.out" 2>"$T/make.err" || return 1
	client_ran "$T/log" 12 "$T/make.err"
}

# Under an outer jobserver of 8 tokens, a pipe (sid's make -j8
# --jobserver-style=pipe, whose recipe runs wsem run by $(MAKE)'s '+'):
# the inner make 4.4.1 gets both in MAKEFLAGS, and keeps to the
# semaphore's CAP, not the outer 8 (it took the last --jobserver-auth,
# the outer one, and ran 8 and more, when wsem's words went in front).
t_outer_pipe() {
	: >"$T/log"
	mkdir -p "$T/outer"
	printf 'all:\n\t+wsem run %s --jobserver -- %s -C %s LOG=%s NAP=%s\n' \
		"$N" "$SID/make" "$T/flat" "$T/log" $NAP >"$T/outer/Makefile"
	$SID/make -j8 --jobserver-style=pipe -C "$T/outer" >/dev/null \
		2>"$T/make.err" || { cat "$T/make.err"; return 1; }
	client_ran "$T/log" 12 "$T/make.err"
}

# -j 8 would run all nine at once: cargo warns that it ignores -j for the
# jobserver it found, and says nothing else of it.  The holders seen
# meanwhile are shown (rustc draws tokens of its own).
t_cargo() {
	: >"$T/log"
	while :; do
		snapshot | awk 'NF == 3 { print $3 }'
		sleep 0.2
	done >"$T/comms" 2>/dev/null &
	spid=$!
	WRAP_LOG=$T/log WRAP_NAP=$NAP CARGO_TARGET_DIR=$T/target \
		wsem run "$N" --jobserver -- $SID/cargo build -j 8 --offline \
		--manifest-path "$T/ws/Cargo.toml" 2>"$T/cargo.err"
	r=$?
	kill $spid
	wait $spid
	echo "# holders seen: $(sort -u "$T/comms" | tr '\n' ' ')" >&3
	[ $r -eq 0 ] || { cat "$T/cargo.err"; return 1; }
	ign='configured with an external jobserver in its environment, ignoring'
	grep -qF "$ign" "$T/cargo.err" ||
		{ cat "$T/cargo.err"; echo "no word of the jobserver"; return 1; }
	grep -vF "$ign" "$T/cargo.err" >"$T/cargo.err2"
	client_ran "$T/log" 9 "$T/cargo.err2"
}

# Root's make and nobody's ninja at once, on the one semaphore (mode
# 0666), into one log: at most CAP jobs at once in all, and CAP; jobs of
# both at some point at once; ninja (nobody's) found the endpoint.
t_two_users() {
	: >"$T/logU"
	chmod 0666 "$T/logU"
	wsem run "$N" --jobserver -- $SID/make -C "$T/flat" LOG="$T/logU" \
		ID=r NAP=$NAP 2>"$T/r.err" &
	pr=$!
	su -s /bin/sh -c "wsem run $N --jobserver -- $SID/ninja -C $T/ninjaU \
		>$T/ninjaU/out 2>$T/ninjaU/err" nobody
	ru=$?
	wait $pr
	rr=$?
	echo "root's make exited $rr, nobody's ninja $ru"
	cat "$T/ninjaU/out"
	[ $rr -eq 0 ] && [ $ru -eq 0 ] || return 1
	cat "$T/r.err" "$T/ninjaU/err" >"$T/ru.err"
	client_ran "$T/logU" 24 "$T/ru.err" || return 1
	[ "$(grep -c '^+ r$' "$T/logU")" -eq 12 ] &&
	[ "$(grep -c '^+ u$' "$T/logU")" -eq 12 ] || return 1
	awk '$1 == "+" { c[$2]++; if (c["r"] && c["u"]) both = 1 }
	     $1 == "-" { c[$2]-- }
	     END { exit !both }' "$T/logU" ||
		{ echo "no job of one ran beside a job of the other"; return 1; }
	grep -q "Jobserver mode detected: *-j1 --jobserver-auth=fifo:$FIFO\$" \
		"$T/ninjaU/out"
}

# The cheat in make A beside make B, into one log.  The builds' wsem
# runs hold two of the three units, so the token left alternates between
# B and the cheat.  Had the cheat's bytes released a token that B holds,
# B, which waits for one more in poll() (in the queue), would start
# another job on it at once, and the builds would together run more than
# CAP at once; had they lost one, B would not reach CAP after the cheat
# (A has ended then).  Nothing is used afterwards.
t_extra_bytes() {
	: >"$T/logX"
	wsem run "$N" --jobserver -- $SID/make -C "$T/cheat" LOG="$T/logX" \
		ID=a NAP=$NAP 2>"$T/a.err" &
	pa=$!
	wsem run "$N" --jobserver -- $SID/make -C "$T/many" LOG="$T/logX" \
		ID=b NAP=$NAP 2>"$T/b.err"
	rb=$?
	wait $pa
	ra=$?
	echo "make A exited $ra, make B $rb"
	[ $ra -eq 0 ] && [ $rb -eq 0 ] || return 1
	grep "^cheated 10 times" "$T/a.err" || return 1
	cat "$T/a.err" "$T/b.err" >"$T/ab.err"
	client_ran "$T/logX" 61 "$T/ab.err" || return 1
	at_cap_after_cheat "$T/logX" b
}

# start_b LOG CMD...: start build B in the background (bpid: its wsem run).
start_b() {
	: >"$1"
	shift
	"$@" >/dev/null 2>&1 &
	bpid=$!
}

# alive PID: whether PID runs (or is a zombie not reaped yet).
alive() {
	[ -d "/proc/$1" ]
}

# trees PID...: the processes PID... and their descendants.
trees() {
	for p; do
		alive "$p" && tree "$p"
	done
}

# ds: the time since boot in tenths of a second.
ds() {
	awk '{ print int($1 * 10) }' /proc/uptime
}

# settles SINCE [JOBS]: used is what B's processes hold, and JOBS (pids)
# and their descendants (one snapshot for both), 1 s after SINCE (ds) at
# the latest (and in at least one of two snapshots).
settles() {
	i=0
	while :; do
		# shellcheck disable=SC2046,SC2086 # lists
		set -- $(held_by $(tree "$bpid") $(trees $2)) "$1" "$2"
		[ "$1" = "$2" ] && return 0
		i=$((i + 1))
		[ $i -ge 2 ] && [ $(($(ds) - $3)) -gt 10 ] && {
			echo "kill $k: used $1, those processes hold $2," \
				"$(($(ds) - $3)) tenths of a second after"
			cat "$T/snap"
			return 1
		}
		set -- "$3" "$4"
		sleep 0.1
	done
}

# kills START_A: KILLS times, start build A beside B (bpid) with START_A K,
# wait until A's client holds a token and SIGKILL it.  Within 1 s what it
# held is back: used is what B and the jobs A started hold (they run on:
# make's recipes hold nothing; a cargo's rustc draws tokens of its own).
# Once those jobs end, used is B's alone, and B reaches the capacity.
kills() {
	k=0
	starter=$1
	while [ $k -lt "$KILLS" ]; do
		k=$((k + 1))
		ks=$(date +%s)
		"$starter" $k &
		apid=$!
		i=0 cpid=
		while :; do
			i=$((i + 1))
			[ $i -gt 300 ] && { echo "kill $k: A held no token"; return 1; }
			sleep 0.1
			alive "$bpid" || { echo "kill $k: B ended too soon"; return 1; }
			[ -n "$cpid" ] || cpid=$(child "$apid")
			[ -n "$cpid" ] || continue
			# shellcheck disable=SC2046 # two numbers
			set -- $(held_by "$cpid")
			[ "$2" -ge 1 ] && break
		done
		ajobs=$(tree "$cpid" | grep -vx "$cpid")
		orphans="$orphans $ajobs"
		kt=$(date +%s)
		from=$(($(wc -l <"$blog") + 1))
		kd=$(ds)
		kill -KILL "$cpid"
		settles "$kd" "$ajobs" || return 1
		wait "$apid"
		apid=
		i=0
		# shellcheck disable=SC2086 # a list
		while [ -n "$(trees $ajobs)" ]; do
			i=$((i + 1))
			[ $i -gt 600 ] && { echo "kill $k: A's jobs still run"; return 1; }
			sleep 0.1
		done
		ke=$(date +%s)
		settles "$(ds)" || return 1
		i=0
		while [ "$(most "$blog" "" "$from")" -lt $CAP ]; do
			i=$((i + 1))
			[ $i -gt 200 ] && {
				echo "kill $k: B not at $CAP again; B's log since:"
				tail -n +"$from" "$blog" | tr -d '\n'
				echo
				wsem stat "$N"
				ps
				return 1
			}
			sleep 0.1
		done
		echo "# kill $k: A held a token $((kt - ks)) s after its start;" \
			"A's jobs ended $((ke - kt)) s after the kill, B at $CAP" \
			"$(($(date +%s) - kt)) s after" >&3
	done
}

# kill_loop START_A: kills, then B's client killed too: nothing may stay
# used.  The orphaned jobs end before the next test.
kill_loop() {
	orphans='' apid=''
	kills "$1"
	r=$?
	if [ -n "$apid" ]; then
		orphans="$orphans $(tree "$apid")"
		kill -KILL "$(child "$apid")" 2>/dev/null
		wait "$apid"
	fi
	orphans="$orphans $(tree "$bpid")"
	kill -KILL "$(child "$bpid")" 2>/dev/null
	wait "$bpid"
	wait_used 0 || r=1
	for p in $orphans; do
		i=0
		while alive "$p" && [ $i -lt 300 ]; do
			i=$((i + 1))
			sleep 0.1
		done
	done
	return $r
}

# start_b_make KIND: build B of the kill tests: a make of 1000 jobs of
# 1 s, more than any kill loop here outlasts (it is killed at the end).  A
# make gives each token back when its job ends and asks again, so that A
# gets its turns; a cargo keeps its tokens while it has work, and would
# starve A.  The log is KIND's own: a recipe that an earlier B started as
# it was killed (after its processes were listed) may still write its "-".
start_b_make() {
	blog=$T/logB.$1
	start_b "$blog" wsem run "$N" --jobserver -- $SID/make -C "$T/long" \
		LOG="$blog" NAP=1
}

# start_a_make K: build A of kill K, run in the background: wsem run execs.
start_a_make() {
	exec wsem run "$N" --jobserver -- $SID/make -C "$T/flat" \
		LOG="$T/logA" NAP=2 >/dev/null 2>&1
}

# A's target directory starts with what cargo learnt of rustc in
# t_cargo's (.rustc_info.json), which spares it two runs of rustc: a
# minute on the debug kernel.
start_a_cargo() {
	mkdir -p "$T/targetA$1"
	cp "$T/target/.rustc_info.json" "$T/targetA$1/" 2>/dev/null
	exec env WRAP_LOG="$T/logA" WRAP_NAP=1 \
		CARGO_TARGET_DIR="$T/targetA$1" CARGO_HOME="$T/cargo-home-a" \
		wsem run "$N" --jobserver -- $SID/cargo build -j 8 --offline \
		--manifest-path "$T/wsA/Cargo.toml" >/dev/null 2>&1
}

t_make_kill() {
	start_b_make make
	kill_loop start_a_make
}

t_cargo_kill() {
	start_b_make cargo
	kill_loop start_a_cargo
}

exec 3>&1
check "ninja 1.13 (fifo): at most $CAP at once, and $CAP" t_ninja
check "ninja 1.13 with capacity 1: one job at a time" t_ninja_one
check "make 4.4.1 (fifo): at most $CAP at once, and $CAP; no warning" t_make
check "make 4.4.1, 3 \$(MAKE) sub-makes: at most $CAP in all, and $CAP" \
	t_recursive
check "make 4.4.1 under an outer make's pipe jobserver of 8: at most $CAP" \
	t_outer_pipe
check "cargo 1.97 build -j 8: at most $CAP rustc at once, and $CAP" t_cargo
check "make 4.4.1 SIGKILLed beside another: used back at once, other at $CAP" \
	t_make_kill
check "cargo SIGKILLed beside a make: used back at once, make at $CAP" \
	t_cargo_kill
check "root's make 4.4.1 and nobody's ninja at once: $CAP in all, never more" \
	t_two_users
check "a job of make 4.4.1 writing more bytes than it read makes no token" \
	t_extra_bytes
check "nothing used at the end" wait_used 0

wsem rm "$N"
wsem rm "$N1"
[ -n "$mounted" ] && umount "$MNT"
rm -rf "$T"
tap_end
