#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make deb: build the Debian packages from a copy of the tree (what git
# tracks, or everything but build/ outside a git checkout) in build/deb,
# then check them with lintian.  The .debs are left in build/deb.  A
# build of the same sources with the same compilers is not done again
# (build/deb/source.key: make test builds them in the host tests and uses
# them in check-distro).
set -eu -o pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/build/deb
ver=$(dpkg-parsechangelog -l "$root/debian/changelog" -S Version)
src=$out/wsem-$ver
# One build at a time: make test runs deb_test.sh (hosttests.sh) beside
# check-distro, and both make deb; the second finds the first's packages.
# The host tests run at nice 19: a make deb that waits for theirs raises
# that build to its own priority (root only), or check-distro would wait
# at the host tests' priority (on a new machine, whose Go cache is cold,
# 15 minutes and more behind the debug kernel's build and the guests).
mkdir -p "$root/build"
exec 9>"$root/build/.deb.lock"
if ! flock -n 9; then
	# the holder's pid, if it is still this script
	holder=$(cat "$root/build/.deb.pid" 2>/dev/null || true)
	if [ -n "$holder" ] &&
	   tr '\0' ' ' <"/proc/$holder/cmdline" 2>/dev/null |
		grep -q 'debian/build\.sh' &&
	   [ "$(ps -o ni= -p "$holder")" -gt "$(nice)" ] &&
	   bash "$root/selftests/vm/renice-tree.sh" "$(nice)" "$holder"; then
		echo "make deb: waiting for another make deb (pid $holder), now at nice $(nice) as this one"
	fi
	flock 9
fi
echo $$ >"$root/build/.deb.pid"

# sources: the files the packages are built from, NUL-separated, relative
sources() {
	if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		git -C "$root" ls-files -z --cached --others --exclude-standard
	else
		(cd "$root" && find . -path ./build -prune -o -type f -print0)
	fi
}
# The key: every source file's name, mode and contents, and the tools.
mapfile -d '' files < <(cd "$root" && sources | sort -z)
key=$({
	(cd "$root" && stat -c '%n %a' "${files[@]}" && sha256sum "${files[@]}")
	gcc -dumpfullversion
	go version 2>/dev/null || true
	dpkg-query -W debhelper dkms 2>/dev/null || true
} | sha256sum | cut -d' ' -f1)
if [ -f "$out/source.key" ] && [ "$(cat "$out/source.key")" = "$key" ] &&
   ls "$out"/*.deb >/dev/null 2>&1; then
	echo "make deb: the packages of these sources are built already ($out)"
	ls "$out"/*.deb
	exit 0
fi

rm -rf "$out"
mkdir -p "$src"
(cd "$root" && cp --parents -t "$src" "${files[@]}")
(cd "$src" && dpkg-buildpackage -us -uc -b) >"$out/build.log" 2>&1 || {
	tail -n 40 "$out/build.log"
	echo "make deb: dpkg-buildpackage failed; see $out/build.log" >&2
	exit 1
}
ls "$out"/*.deb
lintian --fail-on error,warning "$out"/wsem_"$ver"_*.changes
echo "$key" >"$out/source.key"
