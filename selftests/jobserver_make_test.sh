#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The jobserver endpoint with the host's real GNU make (Debian 12's make
# 4.3 speaks the pipe style): "wsem run NAME --jobserver=pipe -- make"
# runs a Makefile of JOBS recipes that each log their start and end, so
# that the log tells how many ran at once.  Never more than the capacity,
# more than one at some point, and nothing used afterwards; a make killed
# with SIGKILL mid-build leaves nothing used either.  Runs as root in the
# test VM (mkinitramfs.sh brings make along for it); TAP on stdout.

if [ ! -c /dev/wsem ]; then
	echo "1..0 # SKIP no /dev/wsem: the wsem module is not loaded"
	exit 4
fi
if ! command -v make >/dev/null; then
	echo "1..0 # SKIP no make in this guest"
	exit 4
fi
T=$(mktemp -d /tmp/jobserver_make_test.XXXXXX) || exit 1
N=jsmake$$
CAP=3
JOBS=10
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

# JOBS recipes; each appends "+" when it starts and "-" when it ends
# (appends of a line are atomic, so the log's order is the true order).
{
	printf 'all:'
	i=0
	while [ $i -lt $JOBS ]; do
		printf ' j%d' $i
		i=$((i + 1))
	done
	printf '\n\nj%%:\n\t@echo + >>$(LOG); sleep $(NAP); echo - >>$(LOG)\n'
	printf '.PHONY: all\n'
} >"$T/Makefile"

n=0
fails=0
# check DESCRIPTION CMD...: one TAP line for CMD's exit status.
check() {
	d=$1
	shift
	n=$((n + 1))
	if "$@" >"$T/out" 2>"$T/err"; then
		echo "ok $n $d"
	else
		echo "not ok $n $d"
		sed 's/^/# /' "$T/out" "$T/err"
		fails=$((fails + 1))
	fi
}

# most LOG: the most recipes that ran at once.
most() {
	awk '$1 == "+" { c++; if (c > m) m = c } $1 == "-" { c-- }
	     END { print m + 0 }' "$1"
}

# used: the semaphore's used weight.
used() {
	wsem stat "$N" --json | sed -n 's/.*"used":\([0-9]*\).*/\1/p'
}

# wait_used W: up to 5 s for used to be W.
wait_used() {
	i=0
	while [ "$(used)" != "$1" ]; do
		i=$((i + 1))
		[ $i -gt 50 ] && { echo "used is $(used), want $1"; return 1; }
		sleep 0.1
	done
}

t_build() {
	: >"$T/log"
	wsem run "$N" --jobserver=pipe -- \
		make -C "$T" LOG="$T/log" NAP=0.3 2>"$T/make.err" || return 1
	cat "$T/make.err"
	! grep -q jobserver "$T/make.err" || return 1
	[ "$(grep -c + "$T/log")" -eq $JOBS ] || return 1
	m=$(most "$T/log")
	echo "# at most $m at once" >&3
	[ "$m" -le $CAP ] && [ "$m" -gt 1 ] && wait_used 0
}

# The same with MAKEFLAGS the user had: they are kept, after ours.
t_user_makeflags() {
	: >"$T/log"
	MAKEFLAGS=s wsem run "$N" --jobserver=pipe -- \
		sh -c 'echo "$MAKEFLAGS"; make -C "$1" LOG="$1/log" NAP=0.1' \
		sh "$T" >"$T/mf" || return 1
	grep -q -- "-j$CAP --jobserver-auth=[0-9]*,[0-9]* s\$" "$T/mf" &&
	[ "$(most "$T/log")" -le $CAP ] && wait_used 0
}

# An endpoint descriptor stays open throughout (make and its recipes
# inherit it too): the tokens must go back at make's death, not only when
# the endpoint's last file goes.
t_sigkill() {
	exec 7<"$MNT/@jobserver/$N"
	sigkill_build
	r=$?
	exec 7<&-
	return $r
}

sigkill_build() {
	: >"$T/log"
	wsem run "$N" --jobserver=pipe -- \
		make -C "$T" LOG="$T/log" NAP=3 2>/dev/null &
	wpid=$!
	i=0
	r=0
	while [ "$(grep -c + "$T/log")" -lt $CAP ]; do
		i=$((i + 1))
		[ $i -gt 100 ] && { echo "the build did not start"; r=1; break; }
		sleep 0.1
	done
	[ "$(used)" = $CAP ] || { echo "used is $(used) mid-build"; r=1; }
	mpid=$(pidof make)
	[ -n "$mpid" ] || { echo "no make running"; r=1; }
	kill -KILL $mpid
	wait $wpid
	echo "wsem run exited $?"
	wait_used 0 || r=1
	# The recipes make started run on, holding nothing; let them end.
	sleep 3.5
	return $r
}

# The default style, fifo, by NAME and by PATH: the endpoint's path.
t_fifo_style() {
	wsem run "$N" --jobserver -- sh -c 'echo "$MAKEFLAGS"' >"$T/mf" &&
	grep -qx " -j$CAP --jobserver-auth=fifo:$MNT/@jobserver/$N" "$T/mf" &&
	[ -p "$MNT/@jobserver/$N" ] &&
	mkdir "$T/m" && mount -t wsem wsem "$T/m" &&
	wsem run "$T/m/$N" --jobserver=fifo -- sh -c 'echo "$MAKEFLAGS"' \
		>"$T/mf2"
	r=$?
	umount "$T/m" 2>/dev/null
	[ $r -eq 0 ] &&
	grep -qx " -j$CAP --jobserver-auth=fifo:$T/m/@jobserver/$N" "$T/mf2"
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
	echo "$unmounted_msg" | grep -qx "exit 1"
}

# An unknown style is a usage error; --fd N has no endpoint to give.
t_usage() {
	wsem run "$N" --jobserver=socket -- true
	[ $? -eq 2 ] || return 1
	exec 8<>"$MNT/$N"
	wsem run --fd 8 --jobserver -- true
	r=$?
	exec 8>&-
	[ $r -eq 2 ]
}

exec 3>&1
check "--jobserver: fifo style by NAME and by PATH" t_fifo_style
check "--jobserver without wsemfs at $MNT: one line, exit 1" t_unmounted
check "--jobserver=socket and --jobserver --fd N: usage errors" t_usage
check "make -j through the endpoint: at most $CAP at once, more than 1" t_build
check "MAKEFLAGS the user had are kept, after ours" t_user_makeflags
check "make killed with SIGKILL mid-build: nothing stays used" t_sigkill
check "nothing used at the end" wait_used 0

wsem rm "$N"
[ -n "$mounted" ] && umount "$MNT"
rm -rf "$T"
echo "1..$n"
[ $fails -eq 0 ]
