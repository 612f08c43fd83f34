#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The man pages of the tree (every tracked *.1 ... *.8 that starts with
# .TH), in TAP:
#  - man(1) formats each without a warning (LC_ALL=C.UTF-8, --warnings,
#    as a packager's "man -l" and lintian's groff-message do), and so does
#    groff -ww -man -z, which also sees bytes man's preconv lets by (a
#    form feed where a "\f" font escape was meant);
#  - every page its SEE ALSO names exists: one of the tree's pages, a name
#    that userlib/Makefile installs as a link (MAN3_LINKS), or a page of
#    this system (man -w); deps.sh installs man-db, groff-base and the
#    manpages of the system calls and the C library;
#  - every function userlib/libwsem.map exports has a page or a link.
# Skips without man and groff (deps.sh installs them).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# shellcheck source=selftests/host/tap.sh
. "$(dirname "$0")/tap.sh"

for tool in man groff; do
	if ! command -v "$tool" >/dev/null; then
		echo "1..0 # SKIP no $tool (deps.sh installs man-db and groff-base)"
		exit 0
	fi
done

cd "$ROOT" || exit 1
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	cands=$(git ls-files --cached --others --exclude-standard |
		grep -E '\.[1-8]$')
else
	cands=$(find . -path ./build -prune -o -type f -name '*.[1-8]' -print |
		sed 's|^\./||')
fi
pages=()
for f in $cands; do
	head -n 5 "$f" | grep -q '^\.TH ' && pages+=("$f")
done

# The pages the tree has, as NAME.SECTION: the files and the links.
for f in "${pages[@]}"; do
	b=${f##*/}
	echo "$b"
done >"$T/ours"
sed -n '/^MAN3_LINKS/,/^$/p' userlib/Makefile | tr -s ' \t\\' '\n' |
	sed -n 's/^\([a-z_0-9]*\):.*/\1.3/p' >>"$T/ours"

# warnings PAGE: what man and groff say about it, nothing if all is well.
warnings() {
	# shellcheck disable=SC2069 # stderr only, stdout dropped
	LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 \
		man --warnings -E UTF-8 -l "$1" 2>&1 >/dev/null
	LC_ALL=C.UTF-8 groff -ww -man -z "$1" 2>&1
}

# see_also PAGE: the NAME.SECTION of each page its SEE ALSO names.
see_also() {
	awk '/^\.SH +"?SEE ALSO"?/ { on = 1; next }
	     /^\.SH/ { on = 0 }
	     on && !/^\.\\"/' "$1" |
		sed -e 's/\\f[BIRP]//g' -e 's/\\-/-/g' -e 's/^\.[A-Z]* *//' |
		tr '\n' ' ' |
		grep -oE '[A-Za-z0-9_.:+-]+ *\([1-8][a-z]*\)' |
		sed -E 's/^([^ (]+) *\(([^)]*)\)$/\1.\2/'
}

# exists NAME.SECTION: one of ours, or the system's.
exists() {
	grep -qxF "$1" "$T/ours" && return 0
	man -w "${1##*.}" "${1%.*}" >/dev/null 2>&1
}

# check_see_also PAGE: each name exists, and there is at least one.
check_see_also() {
	local names p missing=
	names=$(see_also "$1")
	[ -n "$names" ] || { echo "no SEE ALSO, or nothing in it"; return 1; }
	for p in $names; do
		exists "$p" || missing="$missing ${p%.*}(${p##*.})"
	done
	[ -z "$missing" ] || { echo "no such page:$missing"; return 1; }
}

# Every function libwsem.so exports has a page, or a link to one.
check_exports() {
	local f missing=
	for f in $(sed -n 's/^[[:space:]]*\(wsem_[a-z_0-9]*\);$/\1/p' \
		userlib/libwsem.map); do
		grep -qxF "$f.3" "$T/ours" || missing="$missing $f"
	done
	[ -z "$missing" ] || { echo "no page or MAN3_LINKS entry:$missing"; return 1; }
}
check "every function of userlib/libwsem.map has a page or a link" check_exports

for f in "${pages[@]}"; do
	check "$f: man --warnings and groff -ww say nothing" \
		eval "w=\$(warnings '$f'); [ -z \"\$w\" ] || { echo \"\$w\"; false; }"
	check "$f: the pages its SEE ALSO names exist" check_see_also "$f"
done
n=$((n + 1))
if [ "${#pages[@]}" -ge 8 ]; then
	echo "ok $n - ${#pages[@]} man pages in the tree"
else
	echo "not ok $n - ${#pages[@]} man pages in the tree, want 8 or more"
	failed=$((failed + 1))
fi
echo "1..$n"
[ $failed -eq 0 ]
