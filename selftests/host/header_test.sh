#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The public headers as their users compile them, in TAP: userlib/wsem.h
# and uapi/linux/wsem.h, each included twice, with gcc and g++ (and clang,
# clang++ when installed) in every C and C++ standard that Debian's
# compilers know, -Wall -Wextra -pedantic -Werror, with no feature macros
# (a strict C99 <time.h> has no struct timespec) and with
# _POSIX_C_SOURCE.  The program calls every function of wsem.h, and in
# C++ is linked with userlib/libwsem.a when it is built, so that a
# declaration outside extern "C" fails too.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$ROOT/selftests/host/tap.sh"

cat >"$T/use.c" <<'EOC'
#include <wsem.h>
#include <wsem.h>
#include <linux/wsem.h>
#include <stddef.h>

/* Never run: every function named, so that each must link. */
int use(int fd, const struct timespec *ts);
int use(int fd, const struct timespec *ts)
{
	struct wsem_stat st;
	struct wsem_holder h[1];
	size_t nh;
	int r = 0;

	r |= wsem_open("a", 0, 0600, 1) + wsem_open_anon(1, 0) +
	     wsem_reopen(fd, 0) + wsem_unlink("a");
	r |= wsem_open_watch("a", 0);
	r |= wsem_acquire(fd, 1) + wsem_acquire_timeout(fd, 1, 0) +
	     wsem_tryacquire(fd, 1) + wsem_release(fd, 1);
	r |= wsem_acquire_clock(fd, 1, 1, ts);
	r |= wsem_acquire_async(fd, 1) + wsem_acquire_result(fd) +
	     wsem_acquire_cancel(fd);
	r |= wsem_wait_idle(fd, -1) + wsem_wait_idle_clock(fd, 1, ts);
	r |= wsem_set_capacity(fd, 1) + wsem_stat(fd, &st) +
	     (int)wsem_list(&st, 1) + (wsem_stat)(fd, &st) +
	     (int)(wsem_list)(&st, 1) + wsem_stat_sized(fd, &st, sizeof(st)) +
	     (int)wsem_list_sized(&st, 1, sizeof(st));
	r |= (int)wsem_holders(fd, h, 1, &nh);
	r |= wsem_set_label(fd, "x");
	r |= wsem_lend(fd, 1) + wsem_open_anon(1, WSEM_LOANS);
	return r;
}

int main(void)
{
	return 0;
}
EOC
cp "$T/use.c" "$T/use.cc"
lib=$ROOT/userlib/libwsem.a

# compile CC STD [MACROS...]: the program, linked in C++ when possible.
compile() {
	local cc=$1 std=$2 src=$T/use.c out=$T/a.out
	shift 2
	case $cc in *++) src=$T/use.cc ;; esac
	if [ "$src" = "$T/use.cc" ] && [ -f "$lib" ]; then
		"$cc" -std="$std" -Wall -Wextra -pedantic -Werror "$@" \
			-I"$ROOT/userlib" -I"$ROOT/uapi" -o "$out" "$src" "$lib"
	else
		"$cc" -std="$std" -Wall -Wextra -pedantic -Werror "$@" \
			-I"$ROOT/userlib" -I"$ROOT/uapi" -c -o "$out.o" "$src"
	fi
}

# Does CC know -std=STD at all?  (An older compiler lacks c2x, c++20.)
knows() {
	echo 'int x;' | "$1" -std="$2" -x "$3" -fsyntax-only - 2>/dev/null
}

cases=()
for cc in gcc clang; do
	command -v "$cc" >/dev/null || continue
	for std in c99 c11 c17 c2x; do
		knows "$cc" "$std" c && cases+=("$cc $std")
	done
done
for cc in g++ clang++; do
	command -v "$cc" >/dev/null || continue
	for std in c++98 c++11 c++17 c++20; do
		knows "$cc" "$std" c++ && cases+=("$cc $std")
	done
done

echo "1..$((${#cases[@]} * 2))"
for c in "${cases[@]}"; do
	set -- $c
	check "wsem.h: $1 -std=$2 -Wall -Wextra -pedantic -Werror" \
		compile "$1" "$2"
	check "wsem.h: $1 -std=$2 -D_POSIX_C_SOURCE=200809L, the same" \
		compile "$1" "$2" -D_POSIX_C_SOURCE=200809L
done
[ $failed -eq 0 ]
