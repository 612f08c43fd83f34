#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Boot a Debian kernel in QEMU (TCG) with wsem.ko, the wsem CLI and the
# selftests in an initramfs.
#
# usage: run.sh [-k KVER] [-K KO] [-m check|cmd|shell] [-c CMD]
#               [-T VM_TIMEOUT] [-t TEST_TIMEOUT] [-l LOG]
#               [-I IMAGE -k NAME -K KO] [-a KERNEL_ARGS] [-n NIC]
#   check  run the selftests and the harness checks; the console goes to LOG
#          (default build/KVER/console.log); exits 0 if the guest finished,
#          the TAP verdict is summary.awk's.  A guest still running after
#          VM_TIMEOUT seconds is killed and its console tail printed.
#   cmd    run CMD in the guest (sh -c), print its output, exit with its
#          status.
#   shell  an interactive shell on the serial console (Ctrl-A X quits QEMU).
# Without -K the module is built for KVER first.
# -I boots IMAGE (a kernel of no package, as make check-debug's) instead
# of KVER's own (lib.sh's kernel_image): -k only names it then, and -K is
# required.  -a adds to the kernel command line.  -n gives the guest one NIC, QEMU's
# "-nic NIC" (twoguest.sh's: "socket,listen=...,model=e1000,mac=..."),
# instead of none.  WSEM_VM_ENV ("NAME=VALUE ...") is exported
# in the guest (mkinitramfs.sh).
set -u -o pipefail
. "$(dirname "$0")/lib.sh"

kver='' ko='' mode=check cmd='' vm_timeout='' test_timeout=${TEST_TIMEOUT:-120} logf=''
image='' append='' nic=none
while getopts k:K:m:c:T:t:l:I:a:n: opt; do
	case $opt in
	k) kver=$OPTARG ;;
	K) ko=$OPTARG ;;
	m) mode=$OPTARG ;;
	c) cmd=$OPTARG ;;
	T) vm_timeout=$OPTARG ;;
	t) test_timeout=$OPTARG ;;
	l) logf=$OPTARG ;;
	I) image=$OPTARG ;;
	a) append=$OPTARG ;;
	n) nic=$OPTARG ;;
	*) exit 2 ;;
	esac
done
# jobserver_clients_test.sh brings sid's make, ninja, cargo and rustc into
# the initramfs (sid-clients.sh): 165 MB more to unpack (6 s of the boot)
# and 445 MB that stay in the guest's memory, which leaves a 1 GiB guest
# with all the tests about 250 MB: such guests get 2 GiB.  The test takes
# about a minute: VM_TIMEOUT defaults to 900 s for them (the full tier on
# 6.12, fleet_test.sh's whole scenario included, took 548 s in CI on
# 2026-11-29 and more than 600 s, the limit then, in the next run: its
# tests' own times 521 s and 575 s, fleet_test.sh's 263 s of it).
# The kernel tier's C programs alone took 93-196 s (PREEMPT_RT the
# slowest) beside another guest on 2026-11-29; PREEMPT_RT's fuzzer may
# take 200 s of them on a new machine (check.sh).
mem=1G check_timeout=500
if list_tests | grep -qx jobserver_clients_test.sh; then
	mem=2G check_timeout=900
elif list_tests | grep -qx fleet_test.sh; then
	# fleet_test.sh's whole scenario (6.12) takes about 360 s alone
	# (TEST_TIMEOUT_fleet_test=540 in check.sh); beside another guest
	# the 420 s of before killed it at its 151st check.
	check_timeout=600
fi
# WSEM_VM_MEM: the guest's memory instead (make bench-cluster's scale
# scenario: 2G for its hundreds of simulated agents and 3 etcd members).
mem=${WSEM_VM_MEM:-$mem}
case $mode in
check) vm_timeout=${vm_timeout:-${VM_TIMEOUT:-$check_timeout}} ;;
cmd) vm_timeout=${vm_timeout:-${VM_TIMEOUT:-900}} ;;
shell) ;;
*) die "unknown mode $mode" ;;
esac
if [ -n "$image" ]; then
	if [ -z "$kver" ] || [ -z "$ko" ]; then
		die "-I IMAGE needs -k NAME and -K KO"
	fi
elif [ -n "$kver" ]; then
	k=$(resolve_kernel "$kver")
	[ -n "$k" ] || die "no installed kernel $kver (installed: $(find_kernels | tr '\n' ' '))"
	kver=$k
else
	kver=$(default_kernel)
fi
[ -n "$kver" ] || die "no Debian 6.1/6.12 kernel with headers is installed (selftests/vm/deps.sh installs them)"
kernel=${image:-$(kernel_image "$kver")}
[ -r "$kernel" ] || die "cannot read $kernel"
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 is not installed"

dir=$BUILD/$kver
mkdir -p "$dir"
if [ -z "$ko" ]; then
	build_module "$kver" >&2 || die "building wsem.ko for $kver failed"
	ko=$dir/mod/wsem.ko
fi

# Private files: several VMs may run at once.
tmp=$(mktemp -d "$dir/run-$mode.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
img=$tmp/initramfs.cpio.gz
cmdfile=
if [ "$mode" = cmd ]; then
	cmdfile=$tmp/cmd.sh
	printf '%s\n' "$cmd" >"$cmdfile"
fi
bash "$VMDIR/mkinitramfs.sh" -k "$ko" -o "$img" -m "$mode" -t "$test_timeout" \
	${cmdfile:+-c "$cmdfile"} || die "packing the initramfs failed"

# tsc=reliable: TCG's vCPUs read one virtual clock as their TSC, but on a
# loaded host the clocksource watchdog finds it skewed against its
# reference (HPET or ACPI PM) and marks it unstable mid-run; the static
# key sched_clock_stable() it switches then is patched while the other
# vCPU runs code translated before: an "Oops: int3" at
# sched_clock_cpu+0x9 from clocksource_watchdog_work, with no wsem code in
# it (twice in a row in make bench's guest on 2026-11-30, beside another
# guest).
#
# watchdog_thresh=60 and rcupdate.rcu_cpu_stall_timeout=60 (defaults 10,
# so a soft lockup after 20 s, and 21 s), as check-distro.sh's guest has
# them: under TCG on a busy host one vCPU can go unscheduled for over 20 s
# while the other runs, and the harness's clean-log check would blame the
# report on the test of the moment; a lockup or stall of the kernel's own
# lasts, and is still reported after 120 s and 60 s.
#
# no_console_suspend: the serial console stays on through a suspend to
# RAM (wait_test, lend_test and the two-guest test suspend their guest).
# Without it, what the kernel says between the suspend and the resume's
# console comes back is never printed: ci62's 6.12-rt guest ended in
# wait_test's suspend_is_not_eintr with no line after "RUN" (QEMU exits,
# -no-reboot, at a guest's panic or reset), so neither the oops rule
# below nor a reader could tell why.
qemu=(qemu-system-x86_64 -accel tcg -m "$mem" -smp 2 -nographic -no-reboot -nic "$nic"
	-kernel "$kernel" -initrd "$img"
	-append "console=ttyS0 panic=-1 quiet loglevel=4 tsc=reliable watchdog_thresh=60 rcupdate.rcu_cpu_stall_timeout=60 no_console_suspend${append:+ $append}")

if [ "$mode" = shell ]; then
	"${qemu[@]}"
	exit
fi

if [ -z "$logf" ]; then
	logf=$tmp/console.log
	[ "$mode" = check ] && logf=$dir/console.log
fi
# tcg_int3_death CONSOLE: the guest oopsed on an int3 and no frame of the
# oops is wsem's ("[wsem]")
tcg_int3_death() {
	tr -d '\r' <"$1" | awk '/Oops: int3/ { o = 1 } o && /\[wsem\]/ { w = 1 }
		END { exit !(o && !w) }'
}
# timeout --foreground: the guest stays in this script's process group
# (plain timeout makes a group of its own), so that whoever kills the
# group of a run -- a CI runner, the end of a session -- kills the guest
# too, instead of leaving it to use the CPUs until its timeout.
start=$(date +%s)
children_cpu cpu0
if [ "$mode" = check ]; then
	# A kernel that dies before /init runs has run nothing of wsem's (the
	# module is loaded by /init): boot once more, keep that console and
	# say so.  Seen once: Debian's 7.2 died at 1.9 s, before /init, on an
	# "Oops: int3" at sched_clock_cpu+0x9 whose bytes were already the
	# patched nop -- most likely the static key sched_clock_stable(),
	# which sched_clock_init_late() switches with both vCPUs up (as read
	# in 6.1's kernel/sched/clock.c), and a vCPU of TCG running code
	# translated before the patch ended: the kind of oops of issue 20's
	# ttwu_do_activate(), with no wsem code loaded.  Likewise a guest
	# that dies mid-run on an "Oops: int3" with no frame of wsem's in
	# its trace (seen once, 7.2, in kmem_cache_free() from a mkdir, and
	# the same lane passed on the same code after): wsem has no int3 of
	# its own, and its bugs oops otherwise.  A second death fails.
	for boot in 1 2; do
		timeout --foreground -k 5 "$vm_timeout" "${qemu[@]}" \
			</dev/null >"$logf" 2>&1
		st=$?
		[ "$st" -eq 124 ] || [ "$st" -eq 137 ] && break
		# No pipe into grep -q: its early exit would SIGPIPE the
		# writer, and pipefail make a long console look like a death.
		if grep -aq '^# wsem-vm: kernel' "$logf"; then
			grep -aq '^# wsem-vm: done' "$logf" && break
			tcg_int3_death "$logf" || break
			when="mid-run"
		else
			when="before /init"
		fi
		[ $boot -eq 2 ] && break
		cp "$logf" "$dir/console.boot1.log"
		log "run.sh: $kver: the kernel died $when" \
			"($(tr -d '\r' <"$logf" | grep -m1 -o 'Oops: [^[]*\|Kernel panic.*' ||
			    echo 'no oops line')); booting again" \
			"(first console: ${dir#"$ROOT"/}/console.boot1.log)"
	done
else
	# Show the command's output as it comes, without the boot lines and
	# the exit marker.
	timeout --foreground -k 5 "$vm_timeout" "${qemu[@]}" </dev/null 2>&1 |
		tee "$logf" |
	{
		on=
		while IFS= read -r line; do
			line=${line%$'\r'}
			case $line in
			*'# wsem-vm: kernel '*) on=1; continue ;;
			'wsem-vm-exit: '*) on=; continue ;;
			esac
			[ -n "$on" ] && printf '%s\n' "$line"
		done
	}
	st=${PIPESTATUS[0]}
fi
secs=$(($(date +%s) - start))
children_cpu cpu
cpu=$(((cpu - cpu0) / CLK_TCK))

tail_log() {
	log "---- the console's last 40 lines ----"
	tail -n 40 "$logf" | tr -d '\r' >&2
	log "----"
}
if [ "$st" -eq 124 ] || [ "$st" -eq 137 ]; then
	log "run.sh: $kver: the guest did not finish within ${vm_timeout}s; killed"
	tail_log
	[ "$mode" = cmd ] && exit 124
	exit 1
fi
if [ "$mode" = check ]; then
	if ! grep -aq '^# wsem-vm: done' "$logf"; then
		log "run.sh: $kver: the guest stopped before the end (panic?)"
		tail_log
		exit 1
	fi
	log "run.sh: $kver: guest finished in ${secs}s, ${cpu} CPU-seconds of QEMU"
	exit 0
fi
rc=$(tr -d '\r' <"$logf" | sed -n 's/^wsem-vm-exit: \([0-9]*\)$/\1/p' | tail -n 1)
if [ -z "$rc" ]; then
	log "run.sh: $kver: the guest stopped before the command ended"
	tail_log
	exit 125
fi
exit "$rc"
