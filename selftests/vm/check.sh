#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make check: install what is missing, build the userspace parts, lint, then
# for every kernel (find_kernels) build wsem.ko and run all tests in a VM.
# Then the same for the kernels of other Debian releases (chroot_releases
# in lib.sh: bullseye's 5.10, sid's newest; trixie's 6.12 is built, not
# booted: chroot_booted), each module built in that release's chroot with
# its own gcc; a chroot not cached yet is built in the background from the
# start, while the other lanes run.
# Ends with the failing names, a count per lane and one line "N passed, N
# failed"; exits non-zero on any failure.
#
# Environment: KVERS (kernels to test), VM_TIMEOUT (seconds per guest),
# TEST_TIMEOUT (seconds per test program; fleet_test.sh has 540 on the
# 6.12 lane, 300 on the others: TEST_TIMEOUT_fleet_test), TESTS (test
# programs to run; unset, the 6.12 lane runs the full tier and the others the kernel tier: list_tests
# in lib.sh), CHECK_FULL=1 (the full tier on every kernel: make check-full),
# VM_JOBS (guests at once, default 2; the 6.12 lane always runs alone,
# last: solo_lane), NO_LINT=1, NO_HOST_TESTS=1 (neither selftests/host nor
# lint: hosttests.sh), NO_DEPS=1, CHROOTS
# (releases, "" for none; KVERS may name them, or their kernels: "5.10"),
# TWOGUEST=0 (not the two-guest test: twoguest.sh, run with the 6.12 lane
# when TESTS is unset or names twoguest.sh),
# CHECK_BUILT (a file touched once the userspace and the host kernels'
# modules are built, before the first guest boots: make test starts its
# host tests then), CHECK_QUIET (a file touched once the solo lane's
# fleet_test.sh has ended: no guest of make check's minds a neighbour
# from then on, and make test may start check-distro's).
set -u -o pipefail
. "$(dirname "$0")/lib.sh"
preflight || { echo "0 passed, 1 failed"; exit 1; }

take_check_lock
check_begin check

# jobserver_clients_test.sh runs sid's make, ninja and cargo in every
# lane, taken from the sid chroot (mkinitramfs.sh, sid-clients.sh): that
# chroot is needed even where KVERS leaves its lane out.
clients=
list_tests | grep -qx jobserver_clients_test.sh && clients=1

# The chroots' downloads take minutes and little CPU: start them now, and
# those that need debootstrap, which a new machine has only once deps.sh
# has installed it, after that.
declare -A chroot_pids
releases= chroot_builds=
for r in $(chroot_releases); do
	if chroot_wanted "$r"; then
		releases="$releases $r"
	elif [ "$r/$clients" != sid/1 ]; then
		continue
	fi
	chroot_builds="$chroot_builds $r"
done
# start_chroot_builds: in the background, each chroot of $chroot_builds
# neither cached nor already being built here (root and debootstrap only).
start_chroot_builds() {
	local r
	for r in $chroot_builds; do
		[ -n "${chroot_pids[$r]:-}" ] && continue
		bash "$VMDIR/chroot.sh" -n "$r" >/dev/null 2>&1 && continue
		if [ "$(id -u)" -ne 0 ] || ! command -v debootstrap >/dev/null; then
			continue
		fi
		echo "check: building the $r chroot in the background"
		bash "$VMDIR/chroot.sh" "$r" </dev/null >"$out/chroot-$r.log" 2>&1 &
		chroot_pids[$r]=$!
	done
}
start_chroot_builds

if [ -z "${NO_DEPS:-}" ]; then
	stage "dependencies"
	bash "$VMDIR/deps.sh" || log "check: some packages are missing; going on"
	start_chroot_builds
fi

build_userspace

inputs=(label=- "$tapf")

# The tests that need no guest (hosttests.sh: selftests/host, lint),
# counted in this summary; not with NO_HOST_TESTS=1 (make test runs them
# beside its later lanes instead).
if [ -z "${NO_HOST_TESTS:-}" ]; then
	bash "$VMDIR/hosttests.sh" -n
	for f in "$BUILD"/hosttests/*.tap; do
		[ -f "$f" ] && inputs+=(label=host "$f")
	done
	[ -z "${NO_LINT:-}" ] && inputs+=(label=- "$BUILD/lint.tap")
fi

kernels=$(find_kernels)
[ -n "$kernels" ] || [ -n "$releases" ] || tap 1 "no Debian 6.1/6.12 kernel with headers installed"

for k in $kernels; do
	stage "wsem.ko for $k"
	WSEM_TEST_KNOBS=y build_module "$k" >"$out/module-$k.log" 2>&1
	tap $? "build: wsem.ko for $k" "$out/module-$k.log"
done
[ -n "${CHECK_BUILT:-}" ] && touch "$CHECK_BUILT"

# report KVER: wait for KVER's guest, then show its console.
report() {
	local k=$1 logf=$BUILD/$1/console.log
	wait "${pids[$k]}"
	stage "tests on $k, the ${tiers[$k]} tier (console: ${logf#"$ROOT"/})"
	show_guest "$k" "$logf" "$out/run-$k.log"
}

# sid_wait: before the first guest boots, wait for the sid chroot being
# built in the background when the tests need sid's clients: mkinitramfs.sh
# takes them from a cached chroot only and never builds one (a guest
# packed before the build ends would fail jobserver_clients_test.sh).
# The build started first thing; the wait is what is left of it.
sid_wait() {
	local ws
	[ -n "$clients" ] && [ -n "${chroot_pids[sid]:-}" ] || return 0
	stage "waiting for the sid chroot (sid's make, ninja and cargo for jobserver_clients_test.sh)"
	ws=$(date +%s)
	wait "${chroot_pids[sid]}"
	unset 'chroot_pids[sid]'
	tail -n 1 "$out/chroot-sid.log"
	echo "check: waited $(($(date +%s) - ws))s for the sid chroot"
}

# VM_JOBS guests at once; their consoles are shown in order as they end.
# A guest uses 0.7 of this machine's 2 CPUs on average (most tests wait on
# sleeps and children), so two at once take much less than twice the
# time; every test is made to pass on the debug kernel, 2-4 times slower.
# The one exception is the solo lane.
declare -A pids tiers
queue=()
# solo_lane KVER: KVER's guest runs the cluster limit's whole scenario,
# whose bounds in time (a job's longest wait, 9.9 s of 13 alone; take-backs
# within ttl=) want no other guest beside it: it is booted last, once the
# chroots that a new machine builds in the background are built;
# fleet_test.sh runs first (solo_tests).  Work at the lowest priority may
# run beside it (make test's host tests and lint, a new machine's debug
# kernel build: check-all.sh): it takes only what the guest leaves (fleet_test.sh beside the host
# tests and lint at nice 19: the longest wait 9282 ms, 8983 alone, the
# utilisation 98 % both times).
solo_lane() {
	case $1 in
	*-rt-amd64) return 1 ;;
	6.12.*-amd64) return 0 ;;
	esac
	return 1
}
# solo_tests TIER: the solo lane's tests, fleet_test.sh first: only it
# needs the machine to itself among the guests.
solo_tests() {
	local all
	all=$(WSEM_TIER=$1 list_tests)
	grep -x fleet_test.sh <<<"$all"
	grep -vx fleet_test.sh <<<"$all"
}
# boot KVER KO [IMAGE]: queue KVER's guest (IMAGE: a kernel not in /boot).
boot() {
	local k=$1 ko=$2 image=${3:-} logf=$BUILD/$1/console.log kenv= jobs
	local tests=${TESTS:-}
	sid_wait
	: >"$logf"
	inputs+=(label="$k" "$logf")
	jobs=${VM_JOBS:-2}
	solo_lane "$k" && jobs=1
	while [ "${#queue[@]}" -ge "$jobs" ] ||
	      { [ "${#queue[@]}" -gt 0 ] && solo_lane "${queue[0]}"; }; do
		report "${queue[0]}"
		queue=("${queue[@]:1}")
	done
	tier=kernel
	{ solo_lane "$k" || [ -n "${CHECK_FULL:-}" ]; } && tier=full
	tiers[$k]=$tier
	echo "booting $k (the $tier tier)"
	# fleet_test.sh's smoke, where a lane runs it (make check-full, or
	# TESTS): a paused and a frozen host, a revoked lease, restarts under
	# a file descriptor store: 90-120 s on 6.1, at the others' 120 s.
	kenv="TEST_TIMEOUT_fleet_test=300"
	# The cluster limit's whole scenario on the solo lane (the others
	# start the agent only).
	# (3 etcd members, 4 hosts, members and a host SIGKILLed: about
	# 140-260 s under TCG before the frozen host and the restarts, which
	# add about 50 s; over the 120 s of the other tests).
	if solo_lane "$k"; then
		kenv="WSEM_FLEET_FULL=1 TEST_TIMEOUT_fleet_test=540"
		tests=$(solo_tests "$tier")
	fi
	# PREEMPT_RT under TCG: the kernel's spinlocks sleep, and the fuzzer
	# makes 2000-4000 requests/s (with the wsemfs chaos, on a loaded
	# host) instead of 9000-10000, and 1100/s on a new machine beside
	# the chroots' debootstraps: 100000 requests within 200 s.
	# Elsewhere 300000 (the fuzzer's own default is 600000: 21-45 s and
	# 40-62 CPU-seconds a lane under TCG), half of that depth for each of
	# five kernels; make fuzz makes 10^7 on each.
	case $k in
	*-rt-amd64)
		kenv="$kenv WSEM_FUZZ_OPS=100000 WSEM_FUZZ_SECONDS=200"
		kenv="$kenv TEST_TIMEOUT_fuzz_test=240" ;;
	*)
		kenv="$kenv WSEM_FUZZ_OPS=300000" ;;
	esac
	TESTS=$tests WSEM_TIER=$tier \
		WSEM_VM_ENV="$kenv${WSEM_VM_ENV:+ $WSEM_VM_ENV}" \
		bash "$VMDIR/run.sh" ${image:+-I "$image"} -k "$k" -K "$ko" \
		-m check -l "$logf" >"$out/run-$k.log" 2>&1 &
	pids[$k]=$!
	queue+=("$k")
}
# quiet_watch KVER: touch CHECK_QUIET once the solo lane KVER's guest has
# ended fleet_test.sh (it runs first: solo_tests), or has ended.
quiet_watch() {
	local k=$1
	[ -n "${CHECK_QUIET:-}" ] || return 0
	(
		while kill -0 "${pids[$k]}" 2>/dev/null &&
		      ! grep -q 'wsem-vm: end fleet_test\.sh' "$BUILD/$k/console.log"; do
			sleep 2
		done
		touch "$CHECK_QUIET"
	) >/dev/null 2>&1 &
}
for k in $kernels; do
	ko=$BUILD/$k/mod/wsem.ko
	solo_lane "$k" || { [ -f "$ko" ] && boot "$k" "$ko"; }
done

# The other releases' kernels: their chroot (waited for if it is being
# built), the module built there, the guest booting the chroot's kernel.
for r in $releases; do
	stage "the $r chroot"
	if [ -n "${chroot_pids[$r]:-}" ]; then
		wait "${chroot_pids[$r]}"
		tail -n 1 "$out/chroot-$r.log"
	fi
	cs=$(date +%s)
	cdir=$(bash "$VMDIR/chroot.sh" -n "$r")
	if [ -z "$cdir" ] && { [ "$(id -u)" -ne 0 ] ||
			      ! command -v debootstrap >/dev/null; }; then
		# As check-distro: a lane this machine cannot run is a skip.
		n=$((n + 1))
		echo "ok $n $r lane # SKIP no $r chroot cached; building one needs root and debootstrap" |
			tee -a "$tapf"
		continue
	fi
	if [ -z "$cdir" ]; then
		tap 1 "$r chroot (selftests/vm/chroot.sh $r)" "$out/chroot-$r.log"
		continue
	fi
	head -n 2 "$cdir/build-time"
	k=$(cat "$cdir/kernel.release")
	stage "wsem.ko for $k ($r, $(cat "$cdir/gcc"))"
	WSEM_TEST_KNOBS=y build_chroot_module "$cdir" >"$out/module-$k.log" 2>&1
	st=$?
	# A release whose compiler moved (sid's gcc, daily) and now warns:
	# one line that says so and what to do, before the build's log.
	w=$(grep -m 1 'error: .*\[-W[a-z0-9=-]*\]' "$out/module-$k.log")
	[ "$st" -ne 0 ] && [ -n "$w" ] &&
		echo "check: $r's compiler ($(cat "$cdir/gcc")) warns where W=1 -Werror wants none: ${w#/mnt/}; fix the code, or CHROOTS= leaves the $r lane out"
	tap $st "build: wsem.ko for $k in the $r chroot, W=1, no warning" \
		"$out/module-$k.log"
	echo "check: $r: module built in $(($(date +%s) - cs))s"
	ko=$BUILD/$k/mod/wsem.ko
	chroot_booted "$r" || continue
	[ -f "$ko" ] && boot "$k" "$ko" "$cdir/root/boot/vmlinuz-$k"
done
for k in $kernels; do
	ko=$BUILD/$k/mod/wsem.ko
	solo_lane "$k" && [ -f "$ko" ] && boot "$k" "$ko" && quiet_watch "$k"
done
for k in "${queue[@]}"; do
	report "$k"
done

# The cluster limit across two guests (twoguest.sh: 6.1 and 6.12 at once,
# joined by QEMU's socket netdev), once per make check, after the other
# guests: with the 6.12 lane, when TESTS is unset or names twoguest.sh
# (not with TWOGUEST=0); 6.1's module is this run's when its lane ran.
k612=$(grep '^6\.12\..*-amd64$' <<<"$kernels" | grep -v -- '-rt-' | tail -n 1)
k61=$(resolve_kernel 6.1)
if [ -n "$k612" ] && [ -f "$BUILD/$k612/mod/wsem.ko" ] && [ -n "$k61" ] &&
   [ "${TWOGUEST:-1}" != 0 ] &&
   { [ -z "${TESTS:-}" ] || list_tests | grep -qx twoguest.sh; }; then
	stage "one limit across two guests ($k61 and $k612)"
	ko61=
	grep -qx "$k61" <<<"$kernels" && ko61=$BUILD/$k61/mod/wsem.ko
	bash "$VMDIR/twoguest.sh" -q -a "$k61" ${ko61:+-A "$ko61"} -b "$k612" \
		-B "$BUILD/$k612/mod/wsem.ko"
	inputs+=(label=- "$BUILD/twoguest/build.tap"
		 label="twoguest-a ($k61)" "$BUILD/twoguest/a.log"
		 label="twoguest-b ($k612)" "$BUILD/twoguest/b.log")
fi

stage "summary ($(($(date +%s) - t0))s)"
awk -v expected="$EXPECTED_SKIPS" -f "$VMDIR/summary.awk" "${inputs[@]}"
