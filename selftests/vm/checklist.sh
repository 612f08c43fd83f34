#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# checklist.sh LOG [LOG2]: the distinct checks a make test (or make check)
# output LOG ran, one per line: "WHERE<TAB>NAME", WHERE the lane's kernel
# and tier ("6.1.0-57-amd64 kernel", "debug-7.2.13 kernel", "twoguest",
# "distro", "host", "build", "lint"), NAME the TAP line's description with
# its number and any SKIP or TODO directive taken off and every run of
# digits written N (a check that prints a time or a pid is one check).
# With LOG2: what each has that the other has not, "-" lines LOG's only,
# "+" lines LOG2's only (a check lost shows as "-"); exit 1 if any "-".
set -u -o pipefail

checks() {
	tr -d '\r' <"$1" | awk '
	/^==== tests on / {
		where = $4
		sub(/,$/, "", where)
		where = where " " $6
		next
	}
	/^==== (one limit across two guests|two guests|guest [ab] )/ { where = "twoguest"; next }
	/^==== (7\.2 debug kernel|wsem\.ko for debug)/ { where = "build"; next }
	/^==== host tests/ { where = "host"; next }
	/^==== (host|make deb|the guest image|the guest:|the podman|the guest.s results)/ {
		where = "distro"; next
	}
	/^==== lint/ { where = "lint"; next }
	/^==== (build|wsem\.ko for|the [a-z]+ chroot|dependencies)/ { where = "build"; next }
	/^==== summary/ { where = ""; next }
	where == "" { next }
	/^(not )?ok [0-9]+/ {
		line = $0
		sub(/^(not )?ok [0-9]+ *(- )?/, "", line)
		sub(/ *# *(SKIP|TODO).*$/, "", line)
		gsub(/[0-9]+/, "N", line)
		print where "\t" line
	}' | sort -u
}

if [ $# -eq 1 ]; then
	checks "$1"
	exit
fi
[ $# -eq 2 ] || { echo "usage: checklist.sh LOG [LOG2]" >&2; exit 2; }
a=$(mktemp) b=$(mktemp)
trap 'rm -f "$a" "$b"' EXIT
checks "$1" >"$a"
checks "$2" >"$b"
echo "# $(wc -l <"$a") distinct checks in $1, $(wc -l <"$b") in $2"
comm -23 "$a" "$b" | sed 's/^/- /'
comm -13 "$a" "$b" | sed 's/^/+ /'
[ -z "$(comm -23 "$a" "$b")" ]
