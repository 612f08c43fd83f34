#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make deb: build the Debian packages from a copy of the tree (what git
# tracks, or everything but build/ outside a git checkout) in build/deb,
# then check them with lintian.  The .debs are left in build/deb.
set -eu -o pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/build/deb
ver=$(dpkg-parsechangelog -l "$root/debian/changelog" -S Version)
src=$out/wsem-$ver

rm -rf "$out"
mkdir -p "$src"
if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	(cd "$root" && git ls-files -z --cached --others --exclude-standard |
		xargs -0 cp --parents -t "$src")
else
	tar -C "$root" --exclude=./build -cf - . | tar -C "$src" -xf -
fi
(cd "$src" && dpkg-buildpackage -us -uc -b) >"$out/build.log" 2>&1 || {
	tail -n 40 "$out/build.log"
	echo "make deb: dpkg-buildpackage failed; see $out/build.log" >&2
	exit 1
}
ls "$out"/*.deb
lintian --fail-on error,warning "$out"/wsem_"$ver"_*.changes
