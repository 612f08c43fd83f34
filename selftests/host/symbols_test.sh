#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# libwsem's exports, in TAP: userlib/libwsem.map lists them by name (no
# wildcard), one version node per release, each node inheriting the one
# before; and the map, the library's non-hidden functions (libwsem.a), the
# shared library's dynamic symbols (nm -D, with their nodes), the functions
# wsem.h declares and debian/libwsem1.symbols all name the same set.  So a
# new function cannot land unlisted, nor in an old node.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
U=$ROOT/userlib
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$ROOT/selftests/host/tap.sh"

so=$(ls "$U"/libwsem.so.*.*.* 2>/dev/null | head -1)
echo "1..6"
if [ -z "$so" ] || [ ! -f "$U/libwsem.a" ]; then
	for i in 1 2 3 4 5 6; do
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
[ $failed -eq 0 ]
