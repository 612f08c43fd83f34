#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The code of README.md and docs/*.md, in TAP: every ```c block is a
# translation unit that compiles with -Wall -Wextra -Werror against
# userlib/wsem.h (and one with main() links against userlib/libwsem.a too,
# where it is built); every ```sh block is syntax-checked with "sh -n"
# here, and selftests/readme_run_test.sh runs them in the test VM.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# shellcheck source=selftests/host/tap.sh
. "$(dirname "$0")/tap.sh"

# Split each file into $T/DIR/N.c and $T/DIR/N.sh, one file per block,
# named by the line its fence is on; DIR is the file's name with its "/"
# made "@" (docs@jobserver.md).
cd "$ROOT" || exit 1
files="README.md $(ls docs/*.md)"
for doc in $files; do
	d="$T/$(echo "$doc" | tr / @)"
	mkdir "$d"
	awk -v dir="$d" '
	/^```(c|sh)$/ && !in_block { in_block = 1; f = dir "/" NR "." substr($0, 4); next }
	/^```/ && in_block { in_block = 0; close(f); next }
	in_block { print > f }
	' "$doc"
done

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

nc=0 nsh=0
for doc in $files; do
	d="$T/$(echo "$doc" | tr / @)"
	for f in $(find "$d" -name "*.c" -printf "%f\n" | sort -n); do
		nc=$((nc + 1))
		check "$doc:${f%.c}: the C block compiles (-Wall -Wextra -Werror)" \
			compile_block "$d/$f"
	done
	for f in $(find "$d" -name "*.sh" -printf "%f\n" | sort -n); do
		nsh=$((nsh + 1))
		check "$doc:${f%.sh}: the sh block parses (sh -n)" \
			sh -n "$d/$f"
	done
done
n=$((n + 1))
if [ "$nc" -ge 2 ] && [ "$nsh" -ge 5 ]; then
	echo "ok $n - README.md and docs/*.md have $nc C blocks, $nsh sh blocks"
else
	echo "not ok $n - README.md and docs/*.md have $nc C blocks and $nsh sh blocks, want 2 and 5 or more"
	failed=$((failed + 1))
fi
echo "1..$n"
[ $failed -eq 0 ]
