#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The MAKEFLAGS that "wsem run --jobserver" gives COMMAND
# (userlib/cli/makeflags.c), on the host, in TAP: whatever jobserver and
# -j an outer make or a CI left in MAKEFLAGS are gone, wsem's words come
# right after make's own word of single-letter flags (which stays first),
# everything else is kept byte for byte, variable definitions after "--"
# untouched.  A driver built here calls cli_makeflags() itself.  The VM's
# jobserver_make_test.sh and jobserver_clients_test.sh show that make 4.3
# and 4.4.1 then keep to the semaphore.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# shellcheck source=selftests/host/tap.sh
. "$(dirname "$0")/tap.sh"

cat >"$T/driver.c" <<'EOC'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"

/* driver OLD OURS ("-" for OLD: no MAKEFLAGS): prints [NEW]. */
int main(int argc, char **argv)
{
	char *s;

	if (argc != 3)
		return 2;
	s = cli_makeflags(strcmp(argv[1], "-") ? argv[1] : NULL, argv[2]);
	if (!s)
		return 1;
	printf("[%s]\n", s);
	free(s);
	return 0;
}
EOC
if ! cc -std=c11 -Wall -Wextra -Werror -I"$ROOT/userlib/cli" -I"$ROOT/userlib" -I"$ROOT/uapi" \
	-o "$T/driver" "$T/driver.c" "$ROOT/userlib/cli/makeflags.c" \
	>"$T/cc.log" 2>&1; then
	echo "not ok 1 - build the cli_makeflags() driver"
	sed 's/^/#  /' "$T/cc.log"
	echo "1..1"
	exit 1
fi

OURS='-j1 --jobserver-auth=fifo:/sys/fs/wsem/@jobserver/b'

# is OLD WANT: OLD becomes WANT.
is() {
	local got
	got=$("$T/driver" "$1" "$OURS") || return 1
	echo "MAKEFLAGS '$1' became '$got'"
	[ "$got" = "[$2]" ] || { echo "want '[$2]'"; return 1; }
}

check "no MAKEFLAGS" is - " $OURS"
check "empty MAKEFLAGS" is "" " $OURS"
check "make's own, no flags: leading blank" \
	is " -j8 --jobserver-auth=3,4" " $OURS"
check "make 4.4's fifo replaced" \
	is " -j8 --jobserver-auth=fifo:/tmp/GMfifo12" " $OURS"
check "flags word kept first" \
	is "ks -j8 --jobserver-auth=3,4" "ks $OURS"
check "the issue's two jobservers, the last an outer one" \
	is " -j8 --jobserver-auth=3,4 ks -j4 --jobserver-auth=5,6" " $OURS ks"
check "make < 4.2's --jobserver-fds and bare -j" \
	is " --jobserver-fds=3,4 -j" " $OURS"
check "separate-argument forms" \
	is "--jobserver-auth 3,4 --jobserver-fds 5,6 -j 8 --jobs 2 --jobs=3 -k" \
	" $OURS -k"
check "j cut from clusters of flags" \
	is "kj8 -sj -rj 4 -Bj3" "k $OURS -s -r -B"
check "a cluster that is only j" is "j8 -k" " $OURS -k"
check "j as another option's argument is kept" \
	is "-I/usr/j -Ojobs -l2 -W j.c" " $OURS -I/usr/j -Ojobs -l2 -W j.c"
check "other long options kept" \
	is "s --no-print-directory --trace" "s $OURS --no-print-directory --trace"
check "variable definitions after -- untouched" \
	is "s -j2 -- CC=gcc\\ -m32 X=--jobserver-auth=7,8 J=-j9" \
	"s $OURS -- CC=gcc\\ -m32 X=--jobserver-auth=7,8 J=-j9"
check "a first word that is a definition is not flags" \
	is "V=1 -j3" " $OURS V=1"
check "tabs and runs of blanks" \
	is "$(printf 'k\t -j4  \t--jobserver-auth=3,4\t-s ')" "k $OURS -s"
check "escaped blank inside a word" \
	is "-I/a\\ b -j3" " $OURS -I/a\\ b"

# This host's make (Debian 12: 4.3) under the MAKEFLAGS the driver makes
# of an outer jobserver's, a pipe of 8 tokens, and ours, a pipe of 2
# standing in for the endpoint: 10 jobs of 0.3 s run at most 3 at once
# (2 tokens and the implicit one), never on the outer pipe's tokens.
cat >"$T/Makefile" <<'EOM'
all: $(patsubst %,j%,1 2 3 4 5 6 7 8 9 10)
j%:
	@echo + >>$(LOG); sleep 0.3; echo - >>$(LOG)
EOM
cat >"$T/outer.py" <<'EOP'
import os, subprocess, sys
outer, ours = os.pipe(), os.pipe()
os.write(outer[1], b"+" * 8)
os.write(ours[1], b"+" * 2)
old = " -j9 --jobserver-auth=%d,%d ks" % outer
flags = subprocess.run([sys.argv[1], old,
                        "-j1 --jobserver-auth=%d,%d" % ours],
                       capture_output=True, text=True, check=True).stdout
env = dict(os.environ, MAKEFLAGS=flags.strip()[1:-1])
print("MAKEFLAGS:", env["MAKEFLAGS"])
sys.exit(subprocess.run(["make", "-C", sys.argv[2], "LOG=" + sys.argv[3]],
                        env=env, pass_fds=outer + ours).returncode)
EOP

# most LOG: the most "+" lines not yet matched by "-" at once.
most() {
	awk '$1 == "+" { n++; if (n > m) m = n } $1 == "-" { n-- }
	     END { print m + 0 }' "$1"
}

host_make() {
	local m
	command -v make >/dev/null || { echo "no make here"; return 0; }
	: >"$T/log"
	python3 "$T/outer.py" "$T/driver" "$T" "$T/log" || return 1
	m=$(most "$T/log")
	echo "$(make --version | head -1): at most $m jobs at once"
	[ "$(grep -c '^+' "$T/log")" -eq 10 ] && [ "$m" -eq 3 ]
}
check "make $(make --version 2>/dev/null | sed -n '1s/.* //p') keeps to our jobserver, not the outer one" host_make
echo "1..$n"
[ "$failed" -eq 0 ]
