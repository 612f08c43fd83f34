#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The jobserver endpoint with the host's real GNU make (Debian 12's make
# 4.3 speaks the pipe style): "wsem run NAME --jobserver=pipe -- make"
# runs recipes that each log their start and end, with their build's ID,
# in one shared log, so that the log tells how many ran at once, in one
# build and in all.  Never more than the capacity, and the capacity
# reached; recursive make; two builds at once by two users, and one in a
# container that sees the semaphore only through a bind mount of wsemfs; a
# client writing more bytes than it read; makes killed with SIGKILL
# mid-build, again and again, beside another build: that build gets their
# tokens at once, the jobs they leave are ended (wsem run is their
# subreaper), nothing stays used.  Runs as root in the test VM
# (mkinitramfs.sh brings make along for it); TAP on stdout.

if [ ! -c /dev/wsem ]; then
	echo "1..0 # SKIP no /dev/wsem: the wsem module is not loaded"
	exit 4
fi
if ! command -v make >/dev/null; then
	echo "1..0 # SKIP no make in this guest"
	exit 4
fi
T=$(mktemp -d /tmp/jobserver_make_test.XXXXXX) || exit 1
chmod 0777 "$T"
N=jsmake$$
CAP=3
MNT=/sys/fs/wsem
mounted=
unmounted_msg=
wsem create "$N" $CAP --mode 0666 || { echo "Bail out! create failed"; exit 1; }
if [ "$(stat -f -c %t "$MNT" 2>/dev/null)" != "7773656d" ]; then
	# What run --jobserver says where wsemfs is not mounted.
	unmounted_msg=$(wsem run "$N" --jobserver -- true 2>&1; echo "exit $?")
	mount -t wsem wsem "$MNT" || { echo "Bail out! cannot mount wsemfs"; exit 1; }
	mounted=1
fi

# Recipes j1..jJ; each appends "+ ID" to LOG when it starts and "- ID"
# when it ends (appends of a line are atomic: the log's order is the true
# order).  "sub": S sub-makes of this Makefile through $(MAKE), each a
# build of its own ID, s1 of 2 jobs and the others of 5 (s1, which held a
# token, ends while the others want more).  "cheat": util.sh's cheat, on
# the endpoint EP.
cat >"$T/Makefile" <<'EOT'
J ?= 10
ID ?= a
all: $(patsubst %,j%,$(shell seq 1 $(J)))
j%:
	@echo + $(ID) >>$(LOG); sleep $(NAP); echo - $(ID) >>$(LOG)
sub: $(patsubst %,s%,$(shell seq 1 $(S)))
s%:
	@$(MAKE) -s -f $(firstword $(MAKEFILE_LIST)) J=$(if $(filter s1,$@),2,5) ID=$@
cheat:
	@sh $(CURDIR)/cheat.sh $(LOG) $(EP)
tail: t1 t2
t1:
	@echo + $(ID) >>$(LOG); sleep 1; echo - $(ID) >>$(LOG)
t2:
	@echo + $(ID) >>$(LOG); sleep 6; echo - $(ID) >>$(LOG)
.PHONY: all sub cheat tail
EOT

# shellcheck source-path=SCRIPTDIR source=util.sh
. "$(dirname "$0")/util.sh"
write_cheat "$T/cheat.sh"

# lines LOG WHAT: how many lines are WHAT ("+ a": recipes of a started).
lines() {
	grep -c "^$2\$" "$1"
}

# wait_lines LOG WHAT COUNT: up to 10 s for COUNT lines WHAT in LOG.
wait_lines() {
	i=0
	while [ "$(lines "$1" "$2")" -lt "$3" ]; do
		i=$((i + 1))
		[ $i -gt 100 ] && { echo "no $3 lines '$2' in 10 s"; return 1; }
		sleep 0.1
	done
}

# build ID [MAKE ARGS...]: make in $T under wsem run --jobserver=pipe,
# logging to $T/log, its stderr in $T/ID.err.
build() {
	id=$1
	shift
	wsem run "$N" --jobserver=pipe -- \
		make -C "$T" LOG="$T/log" ID="$id" "$@" 2>"$T/$id.err"
}

# quiet ID: whether build ID's make said nothing of the jobserver (such
# as "INTERNAL: Exiting with N jobserver tokens available").
quiet() {
	cat "$T/$1.err"
	! grep -qi jobserver "$T/$1.err"
}

# at_most M [ID] [K]: whether at most M recipes (of ID; since the last
# kill with K) ran at once, and exactly M at some point.
at_most() {
	m=$(most "$T/log" "${2:-}" "${3:-}")
	echo "# at most $m at once${2:+ in $2}${3:+ since the last kill}" >&3
	[ "$m" -eq "$1" ] || { echo "at most $m at once, want $1"; return 1; }
}

t_build() {
	: >"$T/log"
	build a NAP=0.3 || return 1
	quiet a && [ "$(lines "$T/log" "+ a")" -eq 10 ] && at_most $CAP &&
	wait_used 0
}

# The same with MAKEFLAGS the user had: make's own flags stay the first
# word, ours follow, the rest is kept.
t_user_makeflags() {
	: >"$T/log"
	MAKEFLAGS='s --no-print-directory' wsem run "$N" --jobserver=pipe -- \
		sh -c 'echo "$MAKEFLAGS"; make -C "$1" LOG="$1/log" NAP=0.1' \
		sh "$T" >"$T/mf" || return 1
	cat "$T/mf"
	grep -q -- "^s -j1 --jobserver-auth=[0-9]*,[0-9]* --no-print-directory\$" \
		"$T/mf" && [ "$(most "$T/log")" -le $CAP ] && wait_used 0
}

# Under an outer jobserver of 8 tokens (make 4.3 -j8: a pipe, passed to
# its '+' recipe, wsem run), the inner make keeps to CAP, not 8 (it took
# the outer --jobserver-auth, the last, when wsem's words went in front);
# the outer make's -k reaches it still.
t_outer_pipe() {
	: >"$T/log"
	mkdir -p "$T/outer"
	printf 'all:\n\t+wsem run %s --jobserver=pipe -- make -C %s LOG=%s ID=o NAP=0.3 J=12\n' \
		"$N" "$T" "$T/log" >"$T/outer/Makefile"
	printf 'mf:\n\t+@wsem run %s --jobserver=pipe -- sh -c %s\n' "$N" \
		"'echo \"\$\$MAKEFLAGS\"'" >>"$T/outer/Makefile"
	make -j8 -k -f "$T/outer/Makefile" 2>"$T/o.err" >/dev/null || return 1
	make -j8 -k -f "$T/outer/Makefile" mf >"$T/mf" || return 1
	cat "$T/mf"
	quiet o && [ "$(lines "$T/log" "+ o")" -eq 12 ] && at_most $CAP &&
	grep -q -- "^k -j1 --jobserver-auth=[0-9]*,[0-9]*\$" "$T/mf" &&
	wait_used 0
}

# Recursive make: 3 sub-makes of 2, 5 and 5 jobs share the 3 tokens.
t_recursive() {
	: >"$T/log"
	build top sub S=3 NAP=0.3 || return 1
	quiet top && [ "$(grep -c '^+ s' "$T/log")" -eq 12 ] &&
	at_most $CAP && wait_used 0
}

# The cheat in build a, its one job, beside build b of 60: had its bytes
# released a token that b holds, b would start another job at once on it
# (its read waits in the queue), and the two would together run more than
# CAP at once; had they lost one, b would not reach CAP after the cheat.
# Nothing is left used.
t_extra_bytes() {
	: >"$T/log"
	build a cheat EP="$MNT/@jobserver/$N" &
	pa=$!
	build b J=60 NAP=0.3
	rb=$?
	wait $pa
	ra=$?
	[ $ra -eq 0 ] && [ $rb -eq 0 ] && quiet a && quiet b || return 1
	grep "^cheated 10 times" "$T/a.err" || return 1
	at_most $CAP && at_cap_after_cheat "$T/log" b && wait_used 0
}

# most_between LOG FROM TO: the most jobs of any build running at once at
# LOG's lines FROM to TO.
most_between() {
	awk -v from="$2" -v to="$3" '
	$1 == "+" { c++ }
	$1 == "-" { c-- }
	NR >= from + 0 && NR <= to + 0 && c > m { m = c }
	END { print m + 0 }' "$1"
}

# A make at its build's tail: build a (targets t1, 1 s, and t2, 6 s)
# starts t1 on its own token while a filler holds the rest, and polls
# for a token for t2, which queues its request; t1's end interrupts the
# poll (SIGCHLD) and t2 runs on make's own token; make polls no more.  The
# request, granted when the filler ends, is not read: within a second it
# goes to build b, queued behind it, so that b and a together run CAP
# jobs again long before a ends.  (It used to stay a's until a's make
# exited: b ran one job beside t2.)
t_tail() {
	: >"$T/log"
	wsem run "$N" --weight $((CAP - 1)) -- sleep 3 &
	pf=$!
	build a tail &
	pa=$!
	wait_lines "$T/log" "+ a" 1 || return 1
	sleep 0.5
	build b J=60 NAP=0.3 &
	pb=$!
	wait $pf
	sleep 1.5
	echo M >>"$T/log"
	wait $pa || return 1
	from=$(grep -n '^M$' "$T/log" | cut -d: -f1)
	to=$(grep -n '^- a$' "$T/log" | tail -n 1 | cut -d: -f1)
	m=$(most_between "$T/log" "$from" "$to")
	echo "# from 1.5 s after the filler to a's end: at most $m at once" >&3
	wait $pb || return 1
	quiet a && quiet b && [ "$m" -eq $CAP ] && wait_used 0
}

# Two builds at once, root's and nobody's: CAP at most, and reached, in
# all; the one log is writable by both.
t_two_users() {
	: >"$T/log"
	chmod 0666 "$T/log"
	rm -f "$T/u.err"
	build a J=12 NAP=0.3 &
	pa=$!
	su -s /bin/sh -c "wsem run $N --jobserver=pipe -- make -C $T \
		LOG=$T/log ID=u J=12 NAP=0.3 2>$T/u.err" nobody
	ru=$?
	wait $pa
	ra=$?
	echo "root's build exited $ra, nobody's $ru"
	[ $ra -eq 0 ] && [ $ru -eq 0 ] && quiet a && quiet u || return 1
	[ "$(lines "$T/log" "+ a")" -eq 12 ] &&
	[ "$(lines "$T/log" "+ u")" -eq 12 ] &&
	at_most $CAP && wait_used 0
}

# rerooted CMD...: CMD in a mount namespace whose root is a mount (a
# recursive bind of /, moved onto / as switch_root does), as on a real
# host: the guest's root is the initramfs, which the pivot_root() of
# bubblewrap cannot leave (EINVAL), as container_test explains.
rerooted() {
	unshare -m sh -c 'mount --make-rprivate / && d=$(mktemp -d) &&
		mount --rbind / "$d" && cd "$d" && mount --move . / &&
		exec chroot . "$@"' sh "$@"
}

# Build c in a container (bubblewrap: its own user, mount, PID, IPC, UTS
# and network namespaces, a root of its own with the programs read-only,
# no /sys) where wsemfs is only a bind mount of the host's on
# /run/limits, beside build a on the host.
t_container() {
	if ! command -v bwrap >/dev/null; then
		echo "no bwrap in this guest (mkinitramfs.sh brings it)"
		return 1
	fi
	: >"$T/log"
	build a J=12 NAP=0.3 &
	pa=$!
	rerooted bwrap --unshare-all --die-with-parent \
		--ro-bind /bin /bin --ro-bind /lib /lib --ro-bind-try /lib64 /lib64 \
		--ro-bind /etc /etc --bind "$T" "$T" --dev /dev --proc /proc \
		--bind "$MNT" /run/limits -- \
		wsem run "/run/limits/$N" --jobserver=pipe -- make -C "$T" \
		LOG="$T/log" ID=c J=12 NAP=0.3 2>"$T/c.err"
	rc=$?
	cat "$T/c.err"
	wait $pa
	ra=$?
	echo "the host's build exited $ra, the container's $rc"
	[ $ra -eq 0 ] && [ $rc -eq 0 ] && quiet a && quiet c || return 1
	[ "$(lines "$T/log" "+ c")" -eq 12 ] && at_most $CAP && wait_used 0
}

# In the same container, the semaphore's file bind-mounted alone, without
# its @jobserver/NAME: one line that says so, naming neither /dev/wsem nor
# the module, and exit 125; nothing ran.
t_container_no_endpoint() {
	command -v bwrap >/dev/null || { echo "no bwrap in this guest"; return 1; }
	rm -f "$T/ran"
	rerooted bwrap --unshare-all --die-with-parent \
		--ro-bind /bin /bin --ro-bind /lib /lib --ro-bind-try /lib64 /lib64 \
		--ro-bind /etc /etc --bind "$T" "$T" --dev /dev --proc /proc \
		--dir /run/limits --bind "$MNT/$N" "/run/limits/$N" -- \
		wsem run "/run/limits/$N" --jobserver -- touch "$T/ran" \
		2>"$T/ne.err"
	r=$?
	cat "$T/ne.err"
	[ $r -eq 125 ] && [ ! -e "$T/ran" ] && [ "$(wc -l <"$T/ne.err")" -eq 1 ] &&
	grep -q "^wsem: /run/limits/@jobserver/$N: .*/run/limits/$N is here without its jobserver endpoint" "$T/ne.err" &&
	! grep -q "/dev/wsem\|module" "$T/ne.err"
}

# children PID: the processes whose parent is PID, from /proc/N/stat,
# "N (COMM) STATE PPID ..." (the children file needs CONFIG_PROC_CHILDREN).
children() {
	parent=$1
	for f in /proc/[0-9]*/stat; do
		read -r line 2>/dev/null <"$f" || continue
		# shellcheck disable=SC2086 # the fields after COMM
		set -- ${line##*) }
		[ "${2:-}" = "$parent" ] || continue
		f=${f#/proc/}
		echo "${f%/stat}"
	done
}

# make_of PID: the make that the wsem run below shell PID supervises
# (PID's child, or PID itself, is wsem run).
make_of() {
	for p in $1 $(children "$1"); do
		for c in $(children "$p"); do
			[ "$(cat "/proc/$c/comm" 2>/dev/null)" = make ] &&
				echo "$c" && return 0
		done
	done
	return 1
}

# end_build PID: SIGTERM the make of wsem run PID (it ends its recipes),
# and wait for it.
end_build() {
	m=$(make_of "$1") && kill -TERM "$m"
	wait "$1"
}

# kill_build ID PID: SIGKILL the make of wsem run PID (build ID) once one
# of its recipes runs; wsem run must exit 137 having ended that recipe.
kill_build() {
	wait_lines "$T/log" "+ $1" 1 || return 1
	m=$(make_of "$2")
	[ -n "$m" ] || { echo "no make under wsem run $2"; return 1; }
	echo K >>"$T/log"
	kill -KILL "$m"
	wait "$2"
	r=$?
	[ $r -eq 137 ] || { echo "wsem run of $1 exited $r, want 137"; return 1; }
	# wsem run has ended the recipes (sleep 1.5) before it exited (one may
	# have ended on its own before that): none of them ends from now on.
	ended=$(lines "$T/log" "- $1")
	sleep 2
	[ "$(lines "$T/log" "- $1")" -eq "$ended" ] ||
		{ echo "a recipe of $1 ran on after its make was killed"; return 1; }
}

# An endpoint descriptor stays open throughout (make and its recipes
# inherit it too): the tokens must go back at make's death, not only when
# the endpoint's last file goes.
t_sigkill() {
	exec 7<"$MNT/@jobserver/$N"
	: >"$T/log"
	build k J=10 NAP=1.5 &
	pk=$!
	wait_lines "$T/log" "+ k" $CAP && [ "$(used "$N")" = $CAP ] &&
	kill_build k $pk && wait_used 0
	r=$?
	exec 7<&-
	return $r
}

# Build b runs 90 jobs; three times a build k starts beside it and has
# its make killed: each time all CAP tokens are b's again within a
# second, and after the last kill b runs CAP at once again.
t_kill_again() {
	: >"$T/log"
	build b J=90 NAP=0.5 &
	pb=$!
	wait_lines "$T/log" "+ b" $CAP || return 1
	for round in 1 2 3; do
		build "k$round" J=10 NAP=1.5 &
		kill_build "k$round" $! && wait_used $CAP 10 || {
			echo "round $round"
			end_build $pb
			return 1
		}
	done
	wait $pb || return 1
	quiet b && at_most $CAP b && at_most $CAP b K && wait_used 0
}

# The default style, fifo, by NAME and by PATH: the endpoint's path.
t_fifo_style() {
	wsem run "$N" --jobserver -- sh -c 'echo "$MAKEFLAGS"' >"$T/mf" &&
	grep -qx " -j1 --jobserver-auth=fifo:$MNT/@jobserver/$N" "$T/mf" &&
	[ -p "$MNT/@jobserver/$N" ] &&
	mkdir "$T/m" && mount -t wsem wsem "$T/m" &&
	wsem run "$T/m/$N" --jobserver=fifo -- sh -c 'echo "$MAKEFLAGS"' \
		>"$T/mf2"
	r=$?
	umount "$T/m" 2>/dev/null
	[ $r -eq 0 ] &&
	grep -qx " -j1 --jobserver-auth=fifo:$T/m/@jobserver/$N" "$T/mf2"
}

# Without wsemfs at /sys/fs/wsem, a NAME has no endpoint: one line, exit 1.
t_unmounted() {
	if [ -z "$mounted" ]; then
		echo "# SKIP $MNT was mounted already" >&3
		return 0
	fi
	echo "$unmounted_msg"
	[ "$(echo "$unmounted_msg" | wc -l)" -eq 2 ] &&
	echo "$unmounted_msg" | grep -q "^wsem: $MNT: wsemfs is not mounted" &&
	echo "$unmounted_msg" | grep -qx "exit 125"
}

# zombies PID: the children of PID that have ended and wait to be reaped.
zombies() {
	for z in $(children "$1"); do
		read -r line 2>/dev/null <"/proc/$z/stat" || continue
		st=${line##*) }
		[ "${st%% *}" = Z ] && echo "$z"
	done
}

# A job that leaves a process behind, which ends while COMMAND runs on:
# wsem run, its subreaper, reaps it when it ends; no zombie is left.
t_orphan_reaped() {
	wsem run "$N" --jobserver=pipe -- sh -c '(sleep 0.2 &); sleep 3' &
	p=$!
	sleep 1.5
	z=$(zombies "$p")
	wait "$p" || return 1
	[ -z "$z" ] || { echo "zombie children of wsem run: $z"; return 1; }
}

# An unknown style is a usage error; --fd N has no endpoint to give (run's
# own failures: 125).
t_usage() {
	wsem run "$N" --jobserver=socket -- true
	[ $? -eq 125 ] || return 1
	exec 8<>"$MNT/$N"
	wsem run --fd 8 --jobserver -- true
	r=$?
	exec 8>&-
	[ $r -eq 125 ]
}

exec 3>&1
check "--jobserver: fifo style by NAME and by PATH" t_fifo_style
check "--jobserver without wsemfs at $MNT: one line, exit 125" t_unmounted
check "--jobserver=socket and --jobserver --fd N: usage errors" t_usage
check "make -j through the endpoint: $CAP at once, never more" t_build
check "MAKEFLAGS the user had are kept, make's flags first" t_user_makeflags
check "make 4.3 under an outer make -j8's pipe jobserver: $CAP at most" \
	t_outer_pipe
check "recursive make: 3 sub-makes share the $CAP tokens" t_recursive
check "a job writing more bytes than it read makes no token" t_extra_bytes
check "a make at its tail keeps no idle token from another build" t_tail
check "root's and nobody's builds at once: $CAP in all, never more" t_two_users
check "a build in a container through a bind mount, one on the host" t_container
check "a semaphore's file in a container without its endpoint: said so" \
	t_container_no_endpoint
check "make killed with SIGKILL: its jobs ended, nothing stays used" t_sigkill
check "makes killed again and again: the other build gets their tokens" t_kill_again
check "an orphan that ends while COMMAND runs is reaped, no zombie" t_orphan_reaped
check "nothing used at the end" wait_used 0

wsem rm "$N"
[ -n "$mounted" ] && umount "$MNT"
rm -rf "$T"
tap_end
