#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make check-debug: the kernel tier's tests (list_tests in lib.sh; the
# full tier with CHECK_FULL=1) in a VM running the Linux 7.2 debug kernel
# of debug-kernel.sh (lockdep, KASAN, kmemleak, UBSAN, DEBUG_LIST, debug
# objects, hung task and soft lockup detectors, failslab), built once per
# machine in the sid chroot of chroot.sh (built first when it is not cached,
# waited for while check.sh builds it), wsem.ko built there against it with
# sid's gcc.  runtests.sh fails on any such report in dmesg and on a kmemleak
# leak after the tests and after unloading.  Ends with the failing names and
# one line "N passed, N failed"; exits non-zero on any failure.
#
# Environment: VM_TIMEOUT (seconds for the whole guest, default 1200),
# TEST_TIMEOUT (seconds per test program, default 600), TESTS, NO_DEPS=1,
# WSEM_VM_ENV (more NAME=VALUE for the guest, after DEBUG_ENV's).
set -u -o pipefail
. "$(dirname "$0")/lib.sh"
preflight || { echo "0 passed, 1 failed"; exit 1; }

# KASAN and lockdep under TCG make process-heavy tests about 10 times
# slower: what the tests that know it should do less here.
#   fuzz_test: 40000 requests instead of 600000, with up to 300 s for
#   them instead of 100 (840-970/s here on a quiet machine; beside
#   check-distro's guest in make test 411-469/s, 85-97 s; 309/s, 129 s,
#   with two more builds running: the requests are the coverage, the
#   time only a bound); gangstorm_test: 2000 gangs, not 10000
DEBUG_ENV="WSEM_FUZZ_OPS=40000 WSEM_FUZZ_SECONDS=300 WSEM_GANGSTORM_GANGS=2000"

take_check_lock
check_begin check-debug
summary() {
	stage "summary ($(($(date +%s) - t0))s)"
	awk -v expected="$EXPECTED_SKIPS" -f "$VMDIR/summary.awk" "$@"
	exit
}

if [ -z "${NO_DEPS:-}" ]; then
	stage "dependencies"
	bash "$VMDIR/deps.sh" ||
		log "check-debug: some packages are missing; going on"
fi

build_userspace

# The kernel and the module are built in the sid chroot (chroot, a mount
# namespace): as check.sh's chroot lanes, a machine without root skips.
if [ "$(id -u)" -ne 0 ]; then
	n=$((n + 1))
	echo "ok $n 7.2 debug lane # SKIP building in the sid chroot needs root" |
		tee -a "$tapf"
	summary label=- "$tapf"
fi

stage "7.2 debug kernel (built once per machine in the sid chroot: about 830 CPU-seconds)"
dk=$(bash "$VMDIR/debug-kernel.sh" 2>"$out/kernel.log")
st=$?
grep '^debug-kernel: \(built\|cached\)' "$out/kernel.log"
tap $st "build: the debug kernel" "$out/kernel.log"
[ $st -eq 0 ] || summary label=- "$tapf"
name=debug-$(cat "$dk/build/include/config/kernel.release")
# debug-kernel.sh has made sure of the chroot.
cdir=$(bash "$VMDIR/chroot.sh" -n sid)

stage "wsem.ko for $name (in the sid chroot, $(cat "$cdir/gcc" 2>/dev/null))"
mod=$BUILD/$name/mod
[ -n "$cdir" ] && copy_module_tree "$mod" >"$out/module.log" 2>&1 &&
	CHROOT_SRV=$dk/build in_chroot "$cdir" "$mod" make -s -C /srv M=/mnt \
		W=1 KCFLAGS=-Werror WSEM_TEST_KNOBS=y modules \
		>>"$out/module.log" 2>&1 && [ -f "$mod/wsem.ko" ]
tap $? "build: wsem.ko for $name in the sid chroot, W=1, no warning" \
	"$out/module.log"
[ -f "$mod/wsem.ko" ] || summary label=- "$tapf"

tier=kernel
[ -n "${CHECK_FULL:-}" ] && tier=full
stage "tests on $name, the $tier tier"
logf=$BUILD/$name/console.log
: >"$logf"
WSEM_TIER=$tier WSEM_VM_ENV="$DEBUG_ENV${WSEM_VM_ENV:+ $WSEM_VM_ENV}" \
VM_TIMEOUT=${VM_TIMEOUT:-1500} TEST_TIMEOUT=${TEST_TIMEOUT:-600} \
	bash "$VMDIR/run.sh" -k "$name" -I "$dk/bzImage" -K "$mod/wsem.ko" \
		-m check -l "$logf" >"$out/run.log" 2>&1
show_guest "$name" "$logf" "$out/run.log"
summary label=- "$tapf" label="$name" "$logf"
