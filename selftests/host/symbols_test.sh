#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# libwsem's exports, in TAP: userlib/libwsem.map lists them by name (no
# wildcard), one version node per release, each node inheriting the one
# before; and the map, the library's non-hidden functions (libwsem.a), the
# shared library's dynamic symbols (nm -D, with their nodes), the functions
# wsem.h declares and debian/libwsem1.symbols all name the same set.  So a
# new function cannot land unlisted, nor in an old node.  In the symbols
# file each symbol's minimum version is the release its node is named for
# (LIBWSEM_1: 1.0.0, LIBWSEM_1.1: 1.1.0), and none is above the package's
# version (debian/changelog): a program built against libwsem-dev must
# never depend on a libwsem1 that does not exist.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
U=$ROOT/userlib
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$ROOT/selftests/host/tap.sh"

so=$(ls "$U"/libwsem.so.*.*.* 2>/dev/null | head -1)
echo "1..8"
if [ -z "$so" ] || [ ! -f "$U/libwsem.a" ]; then
	for i in 1 2 3 4 5 6 7 8; do
		echo "ok $i - libwsem symbols # SKIP not built (make -C userlib)"
	done
	exit 0
fi

# The map as "NAME NODE" lines, sorted; its nodes in order in $T/nodes.
awk '
	{ sub(/\/\*.*\*\//, "") }
	/\/\*/ { c = 1 } c { if (/\*\//) c = 0; next }
	/^[A-Za-z0-9_.]+ *\{/ { node = $1; print node > nodes; next }
	/^\}/ { inherit = $2; sub(/;$/, "", inherit); print node, inherit > parents; next }
	/global:|local:/ { next }
	NF { s = $1; sub(/;$/, "", s); if (s != "*") print s, node }
' nodes="$T/nodes" parents="$T/parents" "$U/libwsem.map" | sort >"$T/map"

no_wildcard() {
	cat "$T/map"
	! awk '{ print $1 }' "$T/map" | grep '[*?[]' &&
	[ -s "$T/map" ] &&
	grep -q '^[[:space:]]*local:' "$U/libwsem.map"
}
check "libwsem.map lists every symbol by name, local: * for the rest" \
	no_wildcard

# Each node after the first inherits the one before it; the first none.
chained() {
	cat "$T/parents"
	awk 'NR == 1 { if ($2 != "") exit 1; prev = $1; next }
	     { if ($2 != prev) exit 1; prev = $1 }
	     END { if (NR == 0) exit 1 }' "$T/parents"
}
check "one node per release, each inheriting the one before" chained

# Defined, global, default-visibility functions of the archive: what a
# static link sees, and what the shared library would export if listed.
readelf -sW "$U/libwsem.a" |
	awk '$4 == "FUNC" && $5 == "GLOBAL" && $6 == "DEFAULT" &&
	     $7 != "UND" { print $8 }' | sort -u >"$T/archive"
awk '{ print $1 }' "$T/map" >"$T/map-names"
check "libwsem.a's public functions are the map's names" \
	diff -u "$T/map-names" "$T/archive"

nm -D --defined-only "$so" |
	awk '$2 == "T" { split($3, a, "@@"); print a[1], a[2] }' |
	sort >"$T/dynamic"
check "nm -D ${so##*/}: the map's names, each in its node" \
	diff -u "$T/map" "$T/dynamic"

# Function names declared in wsem.h, "int (wsem_stat)(" included.
sed -n 's/^[a-z_][a-z_ ]*[ *](\{0,1\}\(wsem_[a-z0-9_]*\))\{0,1\}(.*/\1/p' \
	"$U/wsem.h" | sort -u >"$T/header"
check "wsem.h declares exactly the map's functions" \
	diff -u "$T/map-names" "$T/header"

sed -n 's/^ \(wsem_[a-z0-9_]*\)@\([A-Za-z0-9_.]*\) .*/\1 \2/p' \
	"$ROOT/debian/libwsem1.symbols" | sort >"$T/debian"
check "debian/libwsem1.symbols: the map's names, each in its node" \
	diff -u "$T/map" "$T/debian"

# "NAME@NODE VERSION" lines, the nodes' own ("LIBWSEM_1@LIBWSEM_1") too,
# as "NAME NODE VERSION WANT": WANT is the release the node is named for.
sed -n 's/^ \([A-Za-z0-9_.]*\)@\(LIBWSEM_[0-9.]*\) \([^ ]*\)$/\1 \2 \3/p' \
	"$ROOT/debian/libwsem1.symbols" |
	awk '{ v = substr($2, 9); n = split(v, a, ".")
	       for (i = n + 1; i <= 3; i++) v = v ".0"
	       print $1, $2, $3, v }' >"$T/minver"
node_release() {
	cat "$T/minver"
	[ "$(wc -l <"$T/minver")" -eq \
	  "$(grep -c '^ [^ ]*@' "$ROOT/debian/libwsem1.symbols")" ] &&
	awk '$3 != $4 { print "not its node'"'"'s release:", $0; bad = 1 }
	     END { exit bad }' "$T/minver"
}
check "debian/libwsem1.symbols: each minimum version is its node's release" \
	node_release

# dpkg-parsechangelog reads the version as dpkg-buildpackage does; the
# first line's "(VERSION)" where it is missing.
pkgver=$(dpkg-parsechangelog -l "$ROOT/debian/changelog" -S Version \
	2>/dev/null) ||
	pkgver=$(sed -n '1s/^[^ ]* (\([^)]*\)).*/\1/p' "$ROOT/debian/changelog")
not_above_package() {
	echo "package version: $pkgver"
	[ -n "$pkgver" ] && [ -s "$T/minver" ] || return 1
	local name node v want bad=0
	while read -r name node v want; do
		if ! dpkg --compare-versions "$v" le "$pkgver"; then
			echo "$name@$node: minimum version $v above the package's $pkgver"
			bad=1
		fi
	done <"$T/minver"
	return $bad
}
check "no minimum version in debian/libwsem1.symbols above the package's" \
	not_above_package
[ $failed -eq 0 ]
