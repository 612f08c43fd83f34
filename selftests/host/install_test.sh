#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host-side checks of the userland build and its installed layout, in TAP
# (make check runs every selftests/host/*_test.sh on the host):
#  - "make install" puts the uapi header in INCLUDEDIR/wsem/linux/, never in
#    INCLUDEDIR/linux/ (linux-libc-dev's when PREFIX=/usr), and a program
#    with "#include <wsem.h>" builds against the installed tree, with a
#    plain -I and with pkg-config, and the man pages of sections 1, 3, 4,
#    5 and 7 go to MANDIR;
#  - the library and the CLI build where __u64 is unsigned long (ppc64el,
#    mips64el, alpha), simulated with an <asm/types.h> that says so;
#  - WERROR=0 leaves -Werror out.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$ROOT/selftests/host/tap.sh"

echo "1..9"

D=$T/dest
check "make install DESTDIR=... PREFIX=/usr" \
	make -s -C "$ROOT/userlib" install DESTDIR="$D" PREFIX=/usr
check "the uapi header is in INCLUDEDIR/wsem/linux, nothing in INCLUDEDIR/linux" \
	eval "[ -f '$D/usr/include/wsem/linux/wsem.h' ] &&
	      [ ! -e '$D/usr/include/linux' ] && [ -f '$D/usr/include/wsem.h' ]"

cat >"$T/prog.c" <<'PROG'
#include <stdio.h>
#include <wsem.h>

int main(void)
{
	struct wsem_stat st = { .size = sizeof(st) };

	printf("%d %d\n", (int)sizeof(st) > 0, WSEM_INHERIT != 0);
	return wsem_open_anon(1, 0) < 0 ? 0 : 0;
}
PROG
# Only the installed tree: no -I into the source, and /usr/include/linux
# has no wsem.h to fall back on.
check "#include <wsem.h> builds against the installed tree (-I only)" \
	cc -Wall -Werror -I"$D/usr/include" -o "$T/prog" "$T/prog.c" \
		"$D/usr/lib/libwsem.a"
check "man pages in MANDIR: wsem(1), wsem(4), wsem.d(5), wsem(7), section 3 and its links" \
	eval "for p in man1/wsem.1 man4/wsem.4 man5/wsem.d.5 man7/wsem.7 \
		man3/libwsem.3 man3/wsem_holders_children_sized.3; do
		[ -s '$D/usr/share/man/'\$p ] || { echo \$p; exit 1; }; done"
check "bash completion installed in DATADIR/bash-completion/completions" \
	test -s "$D/usr/share/bash-completion/completions/wsem"
check "#include <wsem.h> builds with pkg-config --cflags --libs wsem" \
	eval "PKG_CONFIG_PATH='$D/usr/lib/pkgconfig' \
	      PKG_CONFIG_SYSROOT_DIR='$D' pkg-config --cflags --libs wsem \
		>'$T/pc' && cc -Wall -Werror -o '$T/prog2' '$T/prog.c' \
		\$(cat '$T/pc') && LD_LIBRARY_PATH='$D/usr/lib' '$T/prog2'"

# __u64 as unsigned long: every printf of one must use PRIu64 or a cast.
mkdir -p "$T/l64/asm"
echo '#include <asm-generic/int-l64.h>' >"$T/l64/asm/types.h"
l64_build() {
	local f
	for f in "$ROOT"/userlib/src/*.c "$ROOT"/userlib/cli/*.c \
		"$ROOT"/userlib/cli/ids/*.c; do
		cc -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror \
			-DWSEM_VERSION="\"$(cat "$ROOT/VERSION")\"" \
			-I"$T/l64" -I"$ROOT/userlib" -I"$ROOT/uapi" \
			-fsyntax-only "$f" || return 1
	done
}
check "userlib builds where __u64 is unsigned long" l64_build
check "tests' printfs build where __u64 is unsigned long" \
	eval "for f in '$ROOT'/selftests/*_test.c; do
		cc -std=gnu11 -Wall -Wextra -Werror -I'$T/l64' -I'$ROOT/uapi' \
		   -I'$ROOT/userlib' -isystem '$ROOT/build/ksft' -fsyntax-only \
		   \"\$f\" || exit 1; done"
check "WERROR=0 leaves -Werror out" \
	eval "make -s -C '$ROOT/userlib' -n -B WERROR=0 obj/src/open.o |
	      grep -v -- -Werror | grep -q -- -Wall &&
	      make -s -C '$ROOT/userlib' -n -B obj/src/open.o | grep -q -- -Werror"
[ $failed -eq 0 ]
