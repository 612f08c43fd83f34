#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# wsem(1) with paths and inherited handles (SPEC.md, "Command line"): a
# NAME may be the path of a wsemfs file, and stat, resize and run take
# --fd N, a handle from the parent (run acquires through a reopen of it).
# stat says which IPC namespace a semaphore lives in, no name leaks out of
# it, and run --create inside another namespace says what it made.  Runs
# as root in the test VM; TAP on stdout.  Each check is one command line
# whose exit status decides; nothing here is skipped by "set -e" rules.

if [ ! -c /dev/wsem ]; then
	echo "1..0 # SKIP no /dev/wsem: the wsem module is not loaded"
	exit 4
fi
T=$(mktemp -d /tmp/paths_test.XXXXXX) || exit 1
M=$T/mnt
N=paths$$
HOST_NS=4026531839
mkdir "$M" || exit 1
mount -t wsem none "$M" || { echo "Bail out! mount -t wsem failed"; exit 1; }
wsem create "$N" 4 --mode 0666 || { echo "Bail out! create failed"; exit 1; }
exec 8<>"$M/$N"

# shellcheck source-path=SCRIPTDIR source=util.sh
. "$(dirname "$0")/util.sh"

# key FILE KEY: KEY's value in the JSON object in FILE.
key() {
	sed -n "s/.*\"$2\":\"\{0,1\}\([^,\"}]*\).*/\1/p" "$1"
}

# json_is KEY VALUE ARGS...: "wsem stat ARGS --json" says KEY is VALUE.
json_is() {
	k=$1 v=$2
	shift 2
	wsem stat "$@" --json >"$T/j" || return 1
	got=$(key "$T/j" "$k")
	[ "$got" = "$v" ] || { echo "$k is '$got', want '$v'"; return 1; }
}

t_stat_path() {
	wsem stat "$M/$N" >"$T/s" &&
	grep -qx "name: *$N" "$T/s" &&
	grep -qx "capacity: *4" "$T/s" &&
	grep -qx "ipc_ns: *ipc:\[$HOST_NS\] (this namespace, the host's)" \
		"$T/s"
}

t_run_path() {
	wsem run "$M/$N" --weight 3 -- wsem stat "$N" --json >"$T/r" &&
	[ "$(key "$T/r" used)" = 3 ] && json_is used 0 "$N"
}

# The reopen is the job's own: it holds, the inherited handle does not.
t_run_fd() {
	wsem run --fd 8 --weight 2 --inherit -- \
		sh -c 'wsem stat --fd "$WSEM_FD" --json' >"$T/r" &&
	[ "$(key "$T/r" held)" = 2 ] && json_is held 0 --fd 8 &&
	json_is used 0 "$N"
}

t_resize() {
	wsem resize "$M/$N" 6 && json_is capacity 6 "$N" &&
	wsem resize --fd 8 5 && json_is capacity 5 "$N"
}

t_fd_and_name() {
	! wsem stat "$N" --fd 8 && grep -q "exclude each other" "$T/err"
}

t_fd_not_handle() {
	! wsem stat --fd 0 </dev/null && grep -q "not a wsem handle" "$T/err"
}

t_create_path() {
	wsem create "$M/new" 2
	[ $? -eq 2 ] && [ ! -e "$M/new" ] && ! wsem stat new
}

# Not a wsemfs file: refused, and left alone.
t_other_file() {
	echo keep >"$T/plain" &&
	! wsem stat "$T/plain" && ! wsem rm "$T/plain" &&
	! wsem run "$T/plain" -- true && [ "$(cat "$T/plain")" = keep ]
}

# From another IPC namespace: the handle works, the name does not show.
t_no_leak() {
	unshare -i wsem stat --fd 8 --json >"$T/o" &&
	[ "$(key "$T/o" name)" = "" ] && [ "$(key "$T/o" capacity)" = 5 ] &&
	[ "$(key "$T/o" ipc_ns)" = "$HOST_NS" ] &&
	unshare -i wsem stat --fd 8 >"$T/o" &&
	grep -q "(another namespace, the host's)" "$T/o"
}

# A path that is not there is ENOENT (exit 3; run: 125, its own failure),
# not "Invalid argument".
t_missing_path() {
	for v in "run $M/none -- true" "resize $M/none 2" "stat $M/none" \
	    "run /nonexistent/$N -- true" "resize /nonexistent/$N 2"; do
		st=0 want=3
		case $v in run*) want=125 ;; esac
		# shellcheck disable=SC2086 # word splitting wanted
		wsem $v 2>"$T/merr" || st=$?
		[ "$st" -eq "$want" ] || { echo "wsem $v exited $st"; return 1; }
		p=$(echo "$v" | cut -d' ' -f2)
		[ "$(cat "$T/merr")" = "wsem: $p: No such file or directory" ] ||
			{ cat "$T/merr"; return 1; }
	done
}

t_create_note() {
	unshare -i wsem run mine --create 1 -- true 2>"$T/e1" &&
	grep -q "gates only processes of this namespace" "$T/e1" &&
	wsem run "$N" --create 1 -- true 2>"$T/e2" &&
	! grep -q "gates only" "$T/e2"
}

t_rm_path() {
	wsem rm "$M/$N" && ! wsem stat "$N" && [ ! -e "$M/$N" ] &&
	json_is capacity 5 --fd 8
}

check "stat PATH shows the state and the host namespace" t_stat_path
check "run PATH holds the weight while COMMAND runs" t_run_path
check "run --fd N acquires through a reopen" t_run_fd
check "resize PATH and resize --fd N" t_resize
check "NAME and --fd N exclude each other" t_fd_and_name
check "--fd of something else is refused" t_fd_not_handle
check "create PATH is refused (exit 2), nothing made" t_create_path
check "a path to another file is refused and left alone" t_other_file
check "no name leaks to another IPC namespace" t_no_leak
check "a missing path is No such file or directory, exit 3 (run 125)" \
	t_missing_path
check "run --create notes a namespace other than the host's" t_create_note
check "rm PATH removes the semaphore; the handle goes on" t_rm_path

exec 8>&-
umount "$M"
rm -rf "$T"
tap_end
