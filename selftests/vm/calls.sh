#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# calls.sh DIR: no file of the module calls back into one that calls it.
# From the built objects DIR/module/*.o: file A calls file B when one of
# A's undefined symbols is a global that B defines (nm); the calls of all
# files must form no cycle.  Prints "A -> B" per pair with -v; on a cycle,
# one line naming it ("calls.sh: a cycle: sem -> main -> sem") and exit 1.
set -u -o pipefail

verbose=
[ "${1:-}" = -v ] && { verbose=1; shift; }
dir=${1:?usage: calls.sh [-v] DIR}
shopt -s nullglob
objs=("$dir"/module/*.o)
[ ${#objs[@]} -gt 0 ] || { echo "calls.sh: no objects in $dir/module"; exit 1; }

for o in "${objs[@]}"; do
	f=${o##*/}
	f=${f%.o}
	nm --defined-only "$o" | awk -v f="$f" '$2 ~ /^[A-Z]$/ { print "D", f, $3 }'
	nm --undefined-only "$o" | awk -v f="$f" '{ print "U", f, $NF }'
done | awk -v verbose="$verbose" '
$1 == "D" { def[$3] = $2; next }
{ undef[++nu] = $2 " " $3 }
END {
	for (i = 1; i <= nu; i++) {
		split(undef[i], a, " ")
		if (!(a[2] in def) || def[a[2]] == a[1] || (a[1] SUBSEP def[a[2]]) in edge)
			continue
		edge[a[1], def[a[2]]] = 1
		succ[a[1]] = succ[a[1]] " " def[a[2]]
		node[a[1]] = node[def[a[2]]] = 1
	}
	if (verbose)
		for (e in edge) {
			split(e, p, SUBSEP)
			print p[1] " -> " p[2]
		}
	# Depth first from each file; a file met again on the path is a cycle.
	for (n in node)
		if (!state[n] && visit(n, ""))
			exit 1
}
function visit(n, path,    k, m, s, c) {
	state[n] = 1
	path = path (path == "" ? "" : " -> ") n
	onpath[n] = path
	k = split(succ[n], s, " ")
	for (m = 1; m <= k; m++) {
		if (state[s[m]] == 1) {
			c = substr(path, length(onpath[s[m]]) - length(s[m]) + 1)
			print "calls.sh: a cycle: " c " -> " s[m]
			return 1
		}
		if (!state[s[m]] && visit(s[m], path))
			return 1
	}
	state[n] = 2
	return 0
}'
