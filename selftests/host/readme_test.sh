#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# README.md's code, in TAP: every ```c block is a translation unit that
# compiles with -std=c11 -Wall -Wextra -Werror against userlib/wsem.h (and
# one with main() links against userlib/libwsem.a too, where it is
# built); every ```sh block is syntax-checked with "sh -n" here, and
# selftests/readme_run_test.sh runs them in the test VM.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# shellcheck source=selftests/host/tap.sh
. "$(dirname "$0")/tap.sh"

# Split README.md into $T/N.c and $T/N.sh, one file per block, named by
# the line its fence is on.
awk -v dir="$T" '
/^```(c|sh)$/ && !in_block { in_block = 1; f = dir "/" NR "." substr($0, 4); next }
/^```/ && in_block { in_block = 0; close(f); next }
in_block { print > f }
' "$ROOT/README.md"

# As a user builds them: cc with its default standard, our warnings.
CFLAGS="-Wall -Wextra -Werror -I$ROOT/userlib -I$ROOT/uapi"

# compile_block FILE: compile (and, with main(), link) one C block.
compile_block() {
	if grep -q '\bmain(' "$1" && [ -f "$ROOT/userlib/libwsem.a" ]; then
		# shellcheck disable=SC2086 # flags
		cc $CFLAGS -o "$T/a.out" -x c "$1" -x none "$ROOT/userlib/libwsem.a"
	else
		# shellcheck disable=SC2086
		cc $CFLAGS -c -o "$T/a.o" -x c "$1"
	fi
}

nc=0
for f in $(find "$T" -name "*.c" -printf "%f\n" | sort -n); do
	nc=$((nc + 1))
	line=${f##*/}
	check "README.md:${line%.c}: the C block compiles (-Wall -Wextra -Werror)" \
		compile_block "$T/$f"
done
for f in $(find "$T" -name "*.sh" -printf "%f\n" | sort -n); do
	line=${f##*/}
	check "README.md:${line%.sh}: the sh block parses (sh -n)" \
		sh -n "$T/$f"
done
n=$((n + 1))
if [ "$nc" -ge 2 ]; then
	echo "ok $n - README.md has $nc C blocks"
else
	echo "not ok $n - README.md has $nc C blocks, want 2 or more"
	failed=$((failed + 1))
fi
echo "1..$n"
[ $failed -eq 0 ]
