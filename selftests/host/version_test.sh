#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The release's version is the top-level file VERSION, in TAP.  What is
# built takes it from there (userlib/Makefile: libwsem.so.VERSION, wsem.pc,
# "wsem --version"; debian/rules: /usr/src/wsem-VERSION through the
# changelog); the files that must carry it literally (debian/changelog,
# the Python package's __version__, which pyproject.toml reads) say the
# same, and no man page's footer names another.  When the built userlib
# is here, its version is checked too.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# shellcheck source=selftests/host/tap.sh
. "$(dirname "$0")/tap.sh"

V=$(cat "$ROOT/VERSION" 2>/dev/null)
PY=$ROOT/bindings/python

echo "1..6"

one_version() {
	echo "VERSION: '$V'"
	[ "$(wc -l <"$ROOT/VERSION")" -eq 1 ] &&
		printf '%s\n' "$V" | grep -Eqx '[0-9]+\.[0-9]+\.[0-9]+'
}
check "VERSION holds one version, X.Y.Z" one_version

# A native package: the changelog's top entry is the release itself.
changelog() {
	local c
	c=$(dpkg-parsechangelog -l "$ROOT/debian/changelog" -S Version \
		2>/dev/null) ||
		c=$(sed -n '1s/^[^ ]* (\([^)]*\)).*/\1/p' "$ROOT/debian/changelog")
	echo "debian/changelog: '$c', VERSION: '$V'"
	[ -n "$V" ] && [ "$c" = "$V" ]
}
check "debian/changelog's version is VERSION's" changelog

python_version() {
	local p
	p=$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' "$PY/wsem/__init__.py")
	echo "wsem.__version__: '$p', VERSION: '$V'"
	[ -n "$V" ] && [ "$p" = "$V" ] || return 1
	# pyproject.toml carries none of its own: it reads wsem.__version__.
	grep -n '^version *= *"' "$PY/pyproject.toml" && return 1
	grep -q '^dynamic = \["version"\]$' "$PY/pyproject.toml" &&
		grep -q '^version = { attr = "wsem.__version__" }$' \
			"$PY/pyproject.toml"
}
check "the Python package's version is VERSION's; pyproject.toml reads it" \
	python_version

# .TH TITLE SECTION DATE SOURCE MANUAL: SOURCE is "wsem", or "wsem V".
man_footers() {
	local f bad=0
	for f in "$ROOT"/userlib/man/*.[0-9] "$ROOT"/agent/*.[0-9]; do
		grep -H '^\.TH ' "$f"
		grep '^\.TH ' "$f" | grep -Eq '"wsem( '"${V//./\\.}"')?"' ||
			{ echo "  another version in ${f#"$ROOT"/}"; bad=1; }
	done
	return $bad
}
check "no man page's footer names another version" man_footers

built() {
	if [ ! -x "$ROOT/userlib/wsem" ] || [ ! -f "$ROOT/userlib/wsem.pc" ]; then
		echo "ok $((n += 1)) - $1 # SKIP not built (make -C userlib)"
		return 1
	fi
}
cli_version() {
	local got
	got=$("$ROOT/userlib/wsem" --version)
	echo "$got"
	[ "$got" = "wsem $V" ]
}
if built "wsem --version prints VERSION's"; then
	check "wsem --version prints VERSION's" cli_version
fi
pc_version() {
	grep '^Version:' "$ROOT/userlib/wsem.pc"
	grep -qx "Version: $V" "$ROOT/userlib/wsem.pc" &&
		[ -f "$ROOT/userlib/libwsem.so.$V" ]
}
if built "wsem.pc and libwsem.so.VERSION"; then
	check "wsem.pc and libwsem.so.VERSION" pc_version
fi
[ $failed -eq 0 ]
