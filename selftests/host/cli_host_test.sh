#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# What wsem(1) does before it needs the module, on the host, in TAP: -V,
# the exit statuses of "wsem run" (125 for its own failures, 126/127 for
# COMMAND before anything is opened), and that the README, docs/ and
# wsem.1 say what the code does about them.  cli_test.sh tests the rest in
# the VM.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WSEM=$ROOT/userlib/wsem
README=$ROOT/README.md
REFERENCE=$ROOT/docs/reference.md
MAN=$ROOT/userlib/man/wsem.1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# shellcheck source=selftests/host/tap.sh
. "$(dirname "$0")/tap.sh"

# status WANT CMD...: CMD exits WANT; its stderr is in $T/err.
status() {
	local want=$1 got=0
	shift
	"$@" >"$T/out" 2>"$T/err" || got=$?
	cat "$T/out" "$T/err"
	[ "$got" -eq "$want" ] || { echo "exited $got, want $want"; return 1; }
}

# one_line RE: stderr was one line matching RE.
one_line() {
	[ "$(wc -l <"$T/err")" -eq 1 ] && grep -Eq "$1" "$T/err"
}

version() {
	local v
	for v in -V --version; do
		status 0 "$WSEM" "$v" && grep -Eqx 'wsem [0-9]+\.[0-9]+\.[0-9]+' \
			"$T/out" && [ ! -s "$T/err" ] || return 1
	done
}

# run's usage errors: 125 and the usage line, nothing run.
run_usage() {
	local args
	for args in "run x --weight 0 -- touch $T/ran" "run x --bogus -- touch $T/ran" \
	    "run x -t 1x -- touch $T/ran" "run x" "run -- touch $T/ran" \
	    "run x -n -t 1 -- touch $T/ran"; do
		# shellcheck disable=SC2086 # word splitting wanted
		status 125 "$WSEM" $args && one_line '^wsem: usage: ' ||
			return 1
	done
	[ ! -e "$T/ran" ]
}

# flock(1)'s and timeout(1)'s spellings that mean something else in wsem,
# or nothing: refused, one usage line naming wsem's, nothing run; never
# taken (before: -w 2 was a weight of 2, -c 4 a capacity).
flock_habits() {
	local args
	for args in "-w 2" "-w2" "--wait 2" "-nw 2" "-c 4" "--command true" \
	    "-s" "-x" "-u" "-o" "-F" "--nb" "-k 5" "--signal KILL" \
	    "--preserve-status" "--foreground"; do
		# shellcheck disable=SC2086 # word splitting wanted
		status 125 "$WSEM" run x $args -- touch "$T/ran" &&
			one_line '^wsem: usage: -?-[A-Za-z-]+ is not an option of run: ' ||
			return 1
	done
	status 125 "$WSEM" run x -w 2 -- true &&
		one_line "flock\(1\)'s -w, a wait of at most SECONDS, is --timeout SECONDS; a weight is --weight W" &&
		status 125 "$WSEM" run x -c 4 -- true &&
		one_line "to create NAME, --create CAPACITY" &&
		status 2 "$WSEM" acquire --fd 0 -w 2 &&
		one_line '^wsem: usage: -w is not an option of acquire: ' &&
		status 2 "$WSEM" acquire --fd 0 -x &&
		one_line 'is --weight all' &&
		status 2 "$WSEM" release --fd 0 -w 1 &&
		one_line '^wsem: usage: -w is not an option of release: ' &&
		[ ! -e "$T/ran" ]
}

# Every spelling run and acquire refuse is in wsem.1's table of habits,
# and none is offered among the options of --help.
docs_flock_habits() {
	local verb names n
	for verb in run acquire; do
		names=$("$WSEM" "$verb" --help | sed -n 's/^Refused .*): //p')
		[ -n "$names" ] || return 1
		for n in $names; do
			sed -n '/^\.SS Habits of flock/,/^\.SH /p' "$MAN" |
				grep -q -- "$(printf '%s' "$n" | sed 's/-/\\\\-/g')" ||
				{ echo "$verb $n: not in wsem.1"; return 1; }
			! "$WSEM" "$verb" --help | grep -qE "^  (-., )? *$n[ ,]" ||
				{ echo "$verb $n: offered"; return 1; }
		done
	done
}

# A name that is not one: 125 too.
run_bad_name() {
	status 125 "$WSEM" run 'a b' -- touch "$T/ran" &&
		one_line 'invalid name' && [ ! -e "$T/ran" ]
}

# COMMAND is looked up first: 127 / 126 whatever the device and the
# semaphore, which are never reached.
run_command_first() {
	printf 'echo hi\n' >"$T/noexec"
	chmod 0644 "$T/noexec"
	status 127 "$WSEM" run "nosuch$$" -- "no-such-command-$$" &&
		one_line "^wsem: no-such-command-$$: No such file or directory\$" &&
		status 127 "$WSEM" run "nosuch$$" -- "$T/none" &&
		status 126 "$WSEM" run "nosuch$$" -- "$T/noexec" &&
		one_line "^wsem: $T/noexec: Permission denied\$" &&
		status 126 "$WSEM" run "nosuch$$" -- "$T" &&
		status 126 env PATH="$T" "$WSEM" run "nosuch$$" -- noexec
}

# lend's own failures before the module is reached: 125 and one line;
# COMMAND is looked up first (127), as run's.
lend_usage() {
	local args
	for args in "lend x" "lend x y" "lend x 2 --bogus" "lend x 2 --" \
	    "lend --fd" "lend" "lend x 2 -w 1 -- true"; do
		# shellcheck disable=SC2086 # word splitting wanted
		status 125 "$WSEM" $args && one_line '^wsem: usage: ' ||
			return 1
	done
	status 125 "$WSEM" lend x 0 -- touch "$T/ran" &&
		one_line '^wsem: x: capacity 0 is out of range' &&
		status 125 "$WSEM" lend 'a b' 2 -- touch "$T/ran" &&
		one_line 'invalid name' &&
		status 127 "$WSEM" lend "nosuch$$" 2 -- "no-such-command-$$" &&
		one_line "^wsem: no-such-command-$$: No such file or directory\$" &&
		[ ! -e "$T/ran" ]
}

# No /dev/wsem: run says so, 125; rm -f does not hide it (1).
no_device() {
	status 125 "$WSEM" run "nosuch$$" -- true &&
		one_line '^wsem: /dev/wsem: No such file or directory' &&
		status 1 "$WSEM" rm -f "nosuch$$" &&
		one_line '^wsem: /dev/wsem: No such file or directory' &&
		status 125 "$WSEM" lend "nosuch$$" 2 &&
		one_line '^wsem: /dev/wsem: No such file or directory'
}

# Closing the inherited lease takes exec (bash's {WSEM_FD}>&-, or eval of
# exec N>&- in sh): "cmd $WSEM_FD>&-" closes cmd's stdout instead.
# shellcheck disable=SC2016 # the text of shell code, not to expand
docs_close_lease() {
	! grep -nE '(^|[^{])\$?WSEM_FD\}?>&-' "$README" "$ROOT"/docs/*.md "$MAN" |
		grep -vE 'exec \{WSEM_FD\}>&-|exec \$WSEM_FD>&-|exec \\\$WSEM_FD>&-'
}

# wsem.1 gives one status for stat of a semaphore the caller may not read:
# the one the code gives (cli_test.sh's t_permissions), 1.
docs_stat_unreadable() {
	! grep -n -A1 'may not read' "$MAN" | grep -E 'exit [02-9]|No such file'
}

# run's 125 is in the man page's EXIT STATUS and docs/reference.md's table.
# shellcheck disable=SC2016 # `run` is Markdown
docs_run_125() {
	sed -n '/^\.SH EXIT STATUS/,/^\.SH /p' "$MAN" | grep -qx '\.B 125' &&
		grep -q '^| 125 | `run` failed itself' "$REFERENCE"
}

# owner= and group= of wsem.d: wsem resolves names through NSS, so an
# account only nss_wrapper knows (as one only LDAP or sssd knows) is found;
# wsem-static reads /etc/passwd and /etc/group only, and does not find it.
# "apply -n FILE" parses FILE before it opens /dev/wsem: a name it cannot
# resolve is "unknown owner" (or group) on stderr, module or not.
NSSW=
for d in "/usr/lib/$(uname -m)-linux-gnu" /usr/lib64 /usr/lib; do
	[ -f "$d/libnss_wrapper.so" ] && { NSSW=$d/libnss_wrapper.so; break; }
done
nss_user=wsemnss$$
printf '%s:x:4242:4343:wsem test:/nonexistent:/bin/false\n' "$nss_user" \
	>"$T/passwd"
printf '%s:x:4343:\n' "$nss_user" >"$T/group"
printf 'gpu capacity=2 owner=%s group=%s\n' "$nss_user" "$nss_user" \
	>"$T/nss.conf"
printf 'gpu capacity=2 owner=%s\n' "nobody$$" >"$T/nobody.conf"
printf 'gpu capacity=2 group=%s\n' "nobody$$" >"$T/nogroup.conf"
printf 'gpu capacity=2 owner=root group=root\n' >"$T/root.conf"
in_nssw() {
	LD_PRELOAD=$NSSW NSS_WRAPPER_PASSWD=$T/passwd \
		NSS_WRAPPER_GROUP=$T/group "$@"
}
# apply_names WANT BIN FILE [PRELOAD]: apply -n says "unknown" (WANT=1)
# or not (0) about FILE.
apply_names() {
	local want=$1 bin=$2 file=$3
	shift 3
	"$@" "$bin" apply -n "$file" >"$T/out" 2>"$T/err"
	cat "$T/out" "$T/err"
	if [ "$want" -eq 1 ]; then
		grep -Eq ': unknown (owner|group);' "$T/err"
	else
		! grep -q 'unknown' "$T/err"
	fi
}
nss_names() {
	! grep -q "^$nss_user:" /etc/passwd /etc/group &&
		apply_names 1 "$WSEM" "$T/nss.conf" &&
		apply_names 0 "$WSEM" "$T/nss.conf" in_nssw &&
		apply_names 1 "$WSEM" "$T/nobody.conf" in_nssw &&
		apply_names 1 "$WSEM" "$T/nogroup.conf" in_nssw
}
static_files() {
	apply_names 1 "$ROOT/userlib/wsem-static" "$T/nss.conf" in_nssw &&
		apply_names 0 "$ROOT/userlib/wsem-static" "$T/root.conf" &&
		apply_names 1 "$ROOT/userlib/wsem-static" "$T/nobody.conf"
}

echo "TAP version 13"
check "wsem -V and --version print the version" version
check "run: usage errors exit 125" run_usage
check "run: an invalid name exits 125" run_bad_name
check "run, acquire, release refuse flock(1)'s -w, -c, -s ... with wsem's spelling" \
	flock_habits
check "wsem.1 maps every refused flock(1) and timeout(1) option" \
	docs_flock_habits
check "run: COMMAND not found 127, not executable 126, first" \
	run_command_first
check "lend: usage errors, bad name or capacity 125, COMMAND first 127" \
	lend_usage
if [ -e /dev/wsem ]; then
	n=$((n + 1))
	echo "ok $n - run without /dev/wsem exits 125 # SKIP /dev/wsem is here"
else
	check "run, lend without /dev/wsem exit 125, rm -f 1" no_device
fi
if [ -z "$NSSW" ]; then
	n=$((n + 1))
	echo "ok $n - apply: owner=, group= through NSS # SKIP no libnss_wrapper.so (deps.sh installs libnss-wrapper)"
else
	check "apply: owner=, group= through NSS (nss_wrapper's user and group)" \
		nss_names
fi
if [ -z "$NSSW" ] || [ ! -x "$ROOT/userlib/wsem-static" ]; then
	n=$((n + 1))
	echo "ok $n - apply in wsem-static: owner=, group= from /etc/passwd and /etc/group only # SKIP no libnss_wrapper.so or wsem-static"
else
	check "apply in wsem-static: owner=, group= from /etc/passwd and /etc/group only" \
		static_files
fi
check "README, docs/ and wsem.1 close the lease with exec" docs_close_lease
check "wsem.1: stat of an unreadable semaphore is exit 1 only" \
	docs_stat_unreadable
check "docs/reference.md and wsem.1 list run's 125" docs_run_125
echo "1..$n"
[ "$failed" -eq 0 ]
