#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make test: make check's guests (6.1, 6.12, 6.12-rt, the chroot lanes),
# then make check-debug (the 7.2 debug kernel, built the first time on a
# machine in the sid chroot, in the background from the start) and make
# check-distro (the .debs in a Debian guest, its image built the first time
# on a machine) side by side, two guests as make check runs them
# (check-distro's from the end of the host tests once the solo lane has
# ended fleet_test.sh, if make check is still running then); at the
# lowest priority until make check ends (then at the guests'), make
# check's tests that need no guest (hosttests.sh: selftests/host and lint,
# about ten minutes of one CPU), from the moment make check has built the
# userspace and its modules, beside its guests (they leave a CPU idle for
# minutes, the solo lane's fleet_test.sh most); then one line that counts
# them all: "N passed, N failed".
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
	local t c0 c1
	t=$(date +%s)
	children_cpu c0
	bash "$VMDIR/$1.sh" </dev/null 2>&1 | tee "$tmp/$1"
	children_cpu c1
	echo "check-all: $1 took $(($(date +%s) - t))s, $(((c1 - c0) / CLK_TCK)) CPU-seconds" |
		tee -a "$tmp/$1"
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
# The host tests and lint at the lowest priority from the moment make
# check has built what they use (check.sh touches CHECK_BUILT before its
# first guest boots): they take what CPU the guests leave idle, the solo
# lane's fleet_test.sh most of all, where one guest waits on etcd and
# sleeps (beside them: its longest wait 9282 ms, 8983 alone).
built=$tmp/built quiet=$tmp/quiet
CHECK_BUILT=$built CHECK_QUIET=$quiet NO_HOST_TESTS=1 NO_DEPS=1 \
	lane check &
check=$!
while kill -0 "$check" 2>/dev/null && [ ! -e "$built" ]; do
	sleep 2
done
ht=$(date +%s)
nice -n 19 bash "$VMDIR/hosttests.sh" </dev/null >"$tmp/hosttests" 2>&1 &
host=$!
echo "check-all: the host tests and lint start, beside make check's guests, then check-debug and check-distro"
# check-distro's guest from the moment the host tests and lint have ended
# and make check's solo lane has ended fleet_test.sh (check.sh touches
# CHECK_QUIET), if make check is still running then: its last minutes,
# the rest of the solo lane and the two-guest test, leave a CPU idle
# (ci39: the machine 0.3-1.0 CPUs busy for three minutes), and the first
# boot of check-distro's, DKMS compiling the module, takes it.  At nice
# 10 until make check ends, so that the two-guest test's guests come
# first.
while kill -0 "$check" 2>/dev/null &&
      { [ ! -e "$quiet" ] || kill -0 "$host" 2>/dev/null; }; do
	sleep 2
done
distro=
if kill -0 "$check" 2>/dev/null; then
	echo "check-all: check-distro starts beside the end of make check (at nice 10 until it ends)"
	(
		renice -n 10 -p "$BASHPID" >/dev/null 2>&1
		NO_DEPS=1 lane check-distro >/dev/null
	) &
	distro=$!
fi
wait "$check"
[ -n "$distro" ] && bash "$VMDIR/renice-tree.sh" 0 "$distro"
# A kernel still being built is now what check-debug waits for: its build
# takes the guests' priority from here (root only).
if [ -n "$kernel" ] && kill -0 "$kernel" 2>/dev/null; then
	bash "$VMDIR/renice-tree.sh" 0 "$kernel"
	echo "check-all: check-debug's kernel is still being built: at nice $(nice_of "$kernel") from now on"
fi
# So do the host tests and lint still running: at nice 19 beside the two
# guests below they got almost nothing and ended last (ci48: deb_test.sh
# 843 s for 261 CPU-seconds, lint from 03:57 to 04:03, after both guests).
if kill -0 "$host" 2>/dev/null; then
	bash "$VMDIR/renice-tree.sh" 0 "$host"
	echo "check-all: the host tests are still running: at nice $(nice_of "$host") from now on"
fi
# check-debug's guest beside check-distro's, each lane started at once:
# check-debug waits for its kernel, check-distro for its image, through
# their caches' locks; check-debug's output is shown once both have
# ended.
NO_DEPS=1 lane check-debug >/dev/null &
debug=$!
# In a subshell of its own: lane counts the CPU of the children its shell
# waited for, and this shell also reaps check-debug's (ci48's line said
# 1,407 CPU-seconds for a guest of 874 and check-debug's 530).
if [ -n "$distro" ]; then
	wait "$distro"
	cat "$tmp/check-distro"
else
	(NO_DEPS=1 lane check-distro)
fi
wait "$debug"
if [ -n "$kernel" ]; then
	wait "$kernel"
	echo "check-all: check-debug's kernel, built in the background: exit $? ($(tail -n 1 "$tmp/debug-kernel"))"
fi
if [ -n "$prefetch" ]; then
	wait "$prefetch"
	echo "check-all: check-distro's image, built in the background: exit $? ($(tail -n 1 "$tmp/distro-image"))"
fi
cat "$tmp/check-debug"
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
