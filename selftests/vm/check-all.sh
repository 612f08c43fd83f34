#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make test: make check's guests (6.1, 6.12, 6.12-rt, the chroot lanes),
# make check-debug (the 7.2 debug kernel, built the first time on a machine
# in the sid chroot, in the background from the start), make check-distro
# (the .debs in a Debian guest, its image built the first time on a
# machine) and make check's tests that need no guest (hosttests.sh:
# selftests/host and lint); then one line that counts them all: "N passed,
# N failed".  The lanes overlap where the machine has room: make check's
# guests (two at a time, about 0.7 of a CPU each) leave it some, and the
# 6.12 lane's fleet_test.sh, alone among guests (check.sh: its bounds in
# time need no other guest beside it), most of it.  So once make check has
# built what its guests boot (CHECK_BUILT_DONE), the host tests and
# check-distro start at the lowest priority, which takes only what the
# guests leave; check-debug's guest, from the end of fleet_test.sh
# (CHECK_QUIET_DONE), beside the rest of that lane.
# Exits non-zero on any failure; a lane that ends without its summary line
# counts as a failure.  A lane that cannot run here (check-distro without
# root, say) is a TAP skip, counted as skipped.
set -u -o pipefail
. "$(dirname "$0")/lib.sh"
preflight || { echo "0 passed, 1 failed"; exit 1; }

# One lock for all the lanes: hosttests.sh runs beside the others.
take_check_lock
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
t0=$(date +%s)

# lane SCRIPT: run it, its output shown and kept in $tmp/SCRIPT, how long
# it took too.
lane() {
	local t
	t=$(date +%s)
	bash "$VMDIR/$1.sh" </dev/null 2>&1 | tee "$tmp/$1"
	echo "check-all: $1 took $(($(date +%s) - t))s" | tee -a "$tmp/$1"
}
# What every lane needs, first: the background builds below need
# debootstrap, which a new machine has only once deps.sh has installed it.
if [ -z "${NO_DEPS:-}" ]; then
	stage "dependencies"
	bash "$VMDIR/deps.sh" </dev/null ||
		log "check-all: some packages are missing; going on"
	echo "check-all: dependencies took $(($(date +%s) - t0))s"
fi
# The distro lane's image is minutes of downloads and little CPU: when it
# is not cached yet, build it while the other lanes run.  distro-image.sh
# locks its cache, so check-distro takes it from there (or, should this
# build have failed, tries once more and reports why).
prefetch=
if [ "$(id -u)" -eq 0 ] && command -v debootstrap >/dev/null &&
   ! bash "$VMDIR/distro-image.sh" -n >/dev/null 2>&1; then
	bash "$VMDIR/distro-image.sh" </dev/null >"$tmp/distro-image" 2>&1 &
	prefetch=$!
	echo "check-all: building check-distro's image in the background"
fi
# The debug kernel is a quarter of an hour of both CPUs the first time on
# a machine: build it from the start too, the compile at the lowest
# priority, so that it takes what CPU the guests of make check leave idle
# (downloads, module builds, guests waiting on a test's sleep) and slows
# their timing-minded tests as little as it can.  It builds the sid chroot
# first if it is not cached, at normal priority (or waits for check.sh's
# build of it: chroot.sh locks its cache), and check-debug waits for it
# through the kernel cache's lock.
kernel=
if [ "$(id -u)" -eq 0 ] && command -v debootstrap >/dev/null &&
   ! bash "$VMDIR/debug-kernel.sh" -n >/dev/null 2>&1; then
	DEBUG_KERNEL_NICE=19 bash "$VMDIR/debug-kernel.sh" </dev/null \
		>"$tmp/debug-kernel" 2>&1 &
	kernel=$!
	echo "check-all: building check-debug's kernel in the background"
fi
# wait_file FILE PID: until FILE is there or PID has ended.
wait_file() {
	while kill -0 "$2" 2>/dev/null && [ ! -e "$1" ]; do
		sleep 2
	done
}
# wait_pid PID: until PID (not a child of this shell) has ended.
wait_pid() {
	while [ -n "$1" ] && kill -0 "$1" 2>/dev/null; do
		sleep 5
	done
}
# (check.sh tells when it has built what its guests boot, CHECK_BUILT_DONE,
# and when its solo lane's fleet_test.sh has ended, CHECK_QUIET_DONE)
built=$tmp/built quiet=$tmp/quiet-done
CHECK_QUIET_DONE=$quiet CHECK_BUILT_DONE=$built \
	NO_HOST_TESTS=1 NO_DEPS=1 lane check &
check=$!
wait_file "$built" "$check"
ht=$(date +%s)
nice -n 19 bash "$VMDIR/hosttests.sh" </dev/null >"$tmp/hosttests" 2>&1 &
host=$!
# check-distro at the lowest priority too; its image, when this run builds
# it, first (distro-image.sh locks its cache, so check-distro would take it
# from there anyway; this only says how the build went).
(
	if [ -n "$prefetch" ]; then
		wait_pid "$prefetch"
		echo "check-all: check-distro's image: $(tail -n 1 "$tmp/distro-image")"
	fi
	NO_DEPS=1 nice -n 19 bash "$VMDIR/check-distro.sh" </dev/null 2>&1
	echo "check-all: check-distro took $(($(date +%s) - ht))s"
) >"$tmp/check-distro" 2>&1 &
distro=$!
echo "check-all: the host tests, lint and check-distro start at the lowest priority, beside make check's guests"
wait_file "$quiet" "$check"
(
	td=$(date +%s)
	if [ -n "$kernel" ]; then
		wait_pid "$kernel"
		echo "check-all: check-debug's kernel: $(tail -n 1 "$tmp/debug-kernel")"
	fi
	NO_DEPS=1 bash "$VMDIR/check-debug.sh" </dev/null 2>&1
	echo "check-all: check-debug took $(($(date +%s) - td))s"
) >"$tmp/check-debug" 2>&1 &
debug=$!
echo "check-all: check-debug starts, beside what is left of make check"
wait "$check"
wait "$debug"
cat "$tmp/check-debug"
wait "$distro"
cat "$tmp/check-distro"
wait "$host"
cat "$tmp/hosttests"
echo "check-all: hosttests took $(($(date +%s) - ht))s"

printf '\n==== the lanes (%ss)\n' "$(($(date +%s) - t0))"
awk '
/^[0-9]+ skipped / { skipped += $1 }
/^[0-9]+ passed, [0-9]+ failed$/ { seen[FILENAME] = 1; passed += $1; failed += $3 }
END {
	for (i = 1; i < ARGC; i++)
		if (!(ARGV[i] in seen)) {
			n = split(ARGV[i], p, "/")
			print "FAILED: make " p[n] ": no summary line"
			failed++
		}
	if (skipped)
		print skipped " skipped"
	print (passed + 0) " passed, " (failed + 0) " failed"
	exit failed ? 1 : 0
}' "$tmp/check" "$tmp/hosttests" "$tmp/check-debug" "$tmp/check-distro"
