#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make deb on this machine: the seven packages build, lintian has nothing to
# say, the symbols file is exact (the build checks it), wsem-dkms's source
# builds with dkms for the newest kernel whose headers are here (not RT),
# wsem holds the boot-time setup, python3-wsem's package imports with
# Debian's python3 and a program importing golang-wsem-dev's source builds
# with Debian's go in GOPATH mode, offline (each package unpacked with
# dpkg-deb -x, its /usr then taken as the system's).  Skips without dpkg-buildpackage
# (deps.sh installs it).  As root, wsem-dkms also builds with dkms inside
# each cached chroot of chroot_releases (selftests/vm/chroot.sh: bullseye's
# 5.10 and gcc 10, sid's newest kernel and gcc): that release's dkms, gcc
# and headers.
# TAP on stdout.
set -u -o pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d /tmp/deb_test.XXXXXX) || exit 1
trap 'rm -rf "$T"' EXIT
n=0
failed=0

result() {
	n=$((n + 1))
	if [ "$2" -eq 0 ]; then
		echo "ok $n - $1"
	else
		echo "not ok $n - $1"
		failed=$((failed + 1))
	fi
}

for tool in dpkg-buildpackage lintian dkms dh_dkms; do
	if ! command -v "$tool" >/dev/null; then
		echo "1..0 # SKIP no $tool (deps.sh installs it)"
		exit 4
	fi
done
# DKMS on this host for one kernel, the newest that is not PREEMPT_RT:
# this host's dkms and dkms.conf are the same for each, and make check
# builds wsem.ko against every kernel's headers (W=1 -Werror); the
# chroots below bring each release's own dkms and gcc.
kvers=$(ls /usr/src | sed -n 's/^linux-headers-\(.*-amd64\)$/\1/p' |
	grep -v -- '-rt-' | sort -V | tail -n 1)
# The chroots cached, or being built (make check builds them, in the
# background: chroot_wait); root only.
chroots=
if [ "$(id -u)" -eq 0 ]; then
	# lib.sh for in_chroot and chroot_releases; it sets ROOT as we do.
	. "$ROOT/selftests/vm/lib.sh"
	for r in $(chroot_releases); do
		chroot_wait "$r"
		d=$(bash "$VMDIR/chroot.sh" -n "$r" 2>/dev/null) &&
			chroots="$chroots $d"
	done
fi
echo "1..$((7 + $(echo "$kvers" $chroots | wc -w)))"
# The packages' version: the release's (version_test.sh holds
# debian/changelog to it).
V=$(cat "$ROOT/VERSION")

make -s -C "$ROOT" deb >"$T/deb.log" 2>&1
st=$?
[ $st -eq 0 ] || sed 's/^/# /' "$T/deb.log" | tail -n 30
result "make deb: dpkg-buildpackage, exact symbols, lintian clean" $st

out=$ROOT/build/deb
missing=
for p in wsem-dkms_${V}_all libwsem1_${V}_amd64 libwsem-dev_${V}_amd64 \
	wsem_${V}_amd64 wsem-agent_${V}_amd64 python3-wsem_${V}_all \
	golang-wsem-dev_${V}_all; do
	[ -f "$out/$p.deb" ] || missing="$missing $p"
done
[ -z "$missing" ] || echo "# missing:$missing"
result "the seven packages" "$([ -z "$missing" ]; echo $?)"

# What each holds that matters on a real host.
want_files() {
	dpkg-deb -c "$out/$1.deb" | awk '{ print $6 }' >"$T/$1.list"
	shift_pkg=$1
	shift
	for f in "$@"; do
		grep -qx "\./$f" "$T/$shift_pkg.list" ||
			{ echo "# $shift_pkg lacks $f"; return 1; }
	done
}
want_files wsem_${V}_amd64 usr/bin/wsem usr/bin/wsem-static \
	lib/systemd/system/sys-fs-wsem.mount \
	lib/systemd/system/wsem-apply.service \
	usr/lib/modules-load.d/wsem.conf lib/udev/rules.d/60-wsem.rules \
	etc/wsem.d/ usr/share/man/man1/wsem.1.gz \
	usr/share/man/man4/wsem.4.gz usr/share/man/man5/wsem.d.5.gz \
	usr/share/man/man7/wsem.7.gz &&
want_files libwsem-dev_${V}_amd64 usr/include/wsem.h \
	usr/include/wsem/linux/wsem.h \
	usr/lib/x86_64-linux-gnu/pkgconfig/wsem.pc \
	usr/share/man/man3/wsem_acquire_async.3.gz \
	usr/share/man/man3/wsem_holders_children_sized.3.gz &&
want_files wsem-dkms_${V}_all usr/src/wsem-$V/dkms.conf \
	usr/src/wsem-$V/Kbuild usr/src/wsem-$V/module/sem.c &&
want_files wsem-agent_${V}_amd64 usr/bin/wsem-agent \
	lib/systemd/system/wsem-agent.service \
	usr/share/man/man8/wsem-agent.8.gz &&
want_files python3-wsem_${V}_all \
	usr/lib/python3/dist-packages/wsem/__init__.py \
	usr/lib/python3/dist-packages/wsem/py.typed &&
want_files golang-wsem-dev_${V}_all \
	usr/share/gocode/src/wsem.example/wsem/go.mod \
	usr/share/gocode/src/wsem.example/wsem/wsem.go
result "wsem: units, modules-load.d, udev rule, wsem(1), wsem(4), wsem.d(5), wsem(7); -dev: headers, .pc, section 3; -dkms: source; -agent: program, unit, man page; the bindings" $?

# Every module of the Python package, every .go file of the Go binding:
# a new one cannot be left out of its package.
same_files() {
	(cd "$ROOT/bindings/$2" && find . -name "$3" ! -path '*/__pycache__/*' |
		sed 's|^\./||' | sort) >"$T/want" &&
	grep "^\./$4/." "$T/$1.list" | grep -E "$5" |
		sed "s|^\./$4/||" | sort >"$T/got" &&
	diff -u "$T/want" "$T/got" | sed 's/^/# /'
	cmp -s "$T/want" "$T/got"
}
same_files python3-wsem_${V}_all python '*.py' \
	usr/lib/python3/dist-packages '\.py$' &&
	same_files golang-wsem-dev_${V}_all go '*.go' \
		usr/share/gocode/src/wsem.example/wsem '\.go$'
st=$?
# Installed: python3 finds the package in dist-packages (not the tree),
# go builds a program importing wsem.example/wsem from GOPATH alone.
dpkg-deb -x "$out/python3-wsem_${V}_all.deb" "$T/py"
(cd "$T" && PYTHONPATH=$T/py/usr/lib/python3/dist-packages /usr/bin/python3 \
	-c 'import wsem, sys; print(wsem.__file__, wsem.__version__);
sys.exit(wsem.__version__ != sys.argv[1] or
	 not wsem.__file__.startswith(sys.argv[2]))' "$V" "$T/py/") \
	>"$T/py.log" 2>&1 || st=1
sed 's/^/# /' "$T/py.log"
result "python3-wsem: import wsem from its dist-packages; the package holds every module" $st

dpkg-deb -x "$out/golang-wsem-dev_${V}_all.deb" "$T/go"
mkdir -p "$T/hello"
cat >"$T/hello/main.go" <<'GO'
package main

import (
	"fmt"

	"wsem.example/wsem"
)

func main() {
	_, err := wsem.NewWeighted("deb-test", 1)
	fmt.Println(err)
}
GO
if command -v go >/dev/null; then
	(cd "$T/hello" && env GOPATH="$T/go/usr/share/gocode" GO111MODULE=off \
		GOFLAGS= GOPROXY=off GOENV=off GOTOOLCHAIN=local CGO_ENABLED=0 \
		GOCACHE="$T/gocache" go build -o "$T/hello/hello" . &&
		[ -x "$T/hello/hello" ]) >"$T/go.log" 2>&1
	st=$?
	sed 's/^/# /' "$T/go.log"
	result "golang-wsem-dev: a program importing wsem.example/wsem builds with GOPATH=/usr/share/gocode, GO111MODULE=off" $st
else
	n=$((n + 1))
	echo "ok $n - golang-wsem-dev builds in GOPATH mode # SKIP no go (deps.sh installs golang-go)"
fi

# The units enable at install and wait for the module: the postinst says so.
dpkg-deb -e "$out/wsem_${V}_amd64.deb" "$T/ctl"
grep -q 'deb-systemd-helper.*wsem-apply.service' "$T/ctl/postinst" &&
	grep -q 'sys-fs-wsem.mount' "$T/ctl/postinst"
result "wsem's postinst enables wsem-apply.service and sys-fs-wsem.mount" $?

# The agent's unit is enabled only by an administrator (after declaring a
# cluster limit): its postinst touches it only if it was enabled before.
dpkg-deb -e "$out/wsem-agent_${V}_amd64.deb" "$T/actl"
grep -q "debian-installed 'wsem-agent.service'" "$T/actl/postinst" &&
	! grep -q "new installations run enable" "$T/actl/postinst"
result "wsem-agent's postinst does not enable wsem-agent.service" $?

# DKMS, as the package's postinst runs it, for that kernel.
dpkg-deb -x "$out/wsem-dkms_${V}_all.deb" "$T/root"
for k in $kvers; do
	mkdir -p "$T/tree"
	dkms build -m wsem -v "$V" -k "$k" --sourcetree "$T/root/usr/src" \
		--dkmstree "$T/tree" >"$T/dkms.log" 2>&1
	st=$?
	ko=$(find "$T/tree/wsem/$V/$k" -name 'wsem.ko*' 2>/dev/null | head -1)
	if [ $st -eq 0 ] && [ -n "$ko" ] &&
		modinfo -F vermagic "$ko" | grep -q "^$k "; then
		result "dkms builds wsem.ko for $k" 0
	else
		sed 's/^/# /' "$T/dkms.log" | tail -n 20
		result "dkms builds wsem.ko for $k" 1
	fi
done
# The same in each chroot, the package's tree bind-mounted on /mnt.
for d in $chroots; do
	k=$(cat "$d/kernel.release")
	r=$(basename "$d")
	r=${r%-*}
	mkdir -p "$T/tree-$r"
	in_chroot "$d" "$T" dkms build -m wsem -v "$V" -k "$k" \
		--sourcetree /mnt/root/usr/src --dkmstree "/mnt/tree-$r" \
		>"$T/dkms-$r.log" 2>&1
	st=$?
	ko=$(find "$T/tree-$r/wsem/$V/$k" -name 'wsem.ko*' 2>/dev/null | head -1)
	if [ $st -eq 0 ] && [ -n "$ko" ] &&
		modinfo -F vermagic "$ko" | grep -q "^$k "; then
		result "dkms builds wsem.ko for $k in the $r chroot ($(cat "$d/gcc"))" 0
	else
		sed 's/^/# /' "$T/dkms-$r.log" | tail -n 20
		result "dkms builds wsem.ko for $k in the $r chroot" 1
	fi
done
[ $failed -eq 0 ]
