#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make check-distro: the packages on a real distribution.  make deb's
# .debs go into a Debian bookworm guest (distro-image.sh, cached) booted
# with systemd under QEMU TCG on a qcow2 overlay, so every run starts from
# the same clean image.  In it, distro-lane.sh installs them with apt,
# checks that DKMS built the module for the guest's kernel, reboots,
# checks the boot (module, /dev/wsem, /sys/fs/wsem, /etc/wsem.d applied,
# no failed unit, a clean journalctl -k), runs the podman scenario
# (distro-podman.sh: three containers on one host semaphore, one killed;
# its timeline is printed; then docs/containers.md's split of gpu 8
# between two containers through child semaphores), purges the packages, and reboots
# once more to see the purged system boot clean.  Ends with the failing
# names and one line "N passed, N failed"; exits non-zero on any failure.
#
# What it cannot do here (no root, no qemu, no debootstrap and no way to
# install it, no Debian mirror for a first image) is a TAP skip, not a
# failure.
#
# Environment: VM_TIMEOUT (seconds for the whole guest, all its boots;
# default 2400), NO_DEPS=1 (do not install missing host packages).
set -u -o pipefail
. "$(dirname "$0")/lib.sh"
preflight || { echo "0 passed, 1 failed"; exit 1; }

take_check_lock
check_begin check-distro
summary() {
	stage "summary ($(($(date +%s) - t0))s)"
	awk -v expected="$EXPECTED_SKIPS" -f "$VMDIR/summary.awk" "$@"
	exit
}
skip() {
	n=$((n + 1))
	echo "ok $n distro lane # SKIP $*" | tee -a "$tapf"
	summary label=- "$tapf"
}

stage "host"
[ "$(id -u)" -eq 0 ] || skip "needs root (debootstrap, the image)"
if [ -z "${NO_DEPS:-}" ]; then
	bash "$VMDIR/deps.sh" >"$out/deps.log" 2>&1 ||
		log "check-distro: some packages are missing; going on"
fi
for t in qemu-system-x86_64 qemu-img debootstrap mkfs.ext4 dpkg-buildpackage; do
	command -v "$t" >/dev/null || skip "no $t on this machine"
done
echo "qemu, qemu-img, debootstrap, mkfs.ext4 and dpkg-buildpackage are here"

stage "make deb"
bash "$ROOT/debian/build.sh" >"$out/deb.log" 2>&1
tap $? "build: make deb" "$out/deb.log"
debs=$(ls "$BUILD"/deb/{wsem,wsem-dkms,wsem-agent,libwsem1,libwsem-dev,python3-wsem,golang-wsem-dev}_*.deb 2>/dev/null)
[ "$(echo "$debs" | wc -w)" -eq 7 ] || summary label=- "$tapf"

stage "the guest image (built once per machine: about 5 minutes)"
mirror_host=$(host_mirror | sed -E 's|^[a-z]+://([^/:]+).*|\1|')
if ! bash "$VMDIR/distro-image.sh" -n >/dev/null 2>&1 &&
   ! timeout 20 bash -c "exec 3<>/dev/tcp/$mirror_host/80" 2>/dev/null; then
	skip "no cached image, and no Debian mirror to build one"
fi
img=$(bash "$VMDIR/distro-image.sh" 2>"$out/image.log")
st=$?
cat "$out/image.log"
tap $st "build: the bookworm image" "$out/image.log"
[ $st -eq 0 ] || summary label=- "$tapf"
sed 's/^/# /' "$img/build-time"

stage "the guest: install, reboot, podman, purge, reboot"
share=$out/share
mkdir -p "$share/debs" "$share/out"
# shellcheck disable=SC2086 # a list
if ! cp $debs "$share/debs/" ||
   ! cp "$VMDIR/distro-lane.sh" "$share/lane.sh" ||
   ! cp "$VMDIR/distro-podman.sh" "$share/distro-podman.sh" ||
   ! cp "$VMDIR/distro-util.sh" "$share/distro-util.sh"; then
	die "cannot fill $share"
fi
qemu-img create -q -f qcow2 -F qcow2 -b "$img/root.qcow2" "$out/disk.qcow2" ||
	die "qemu-img create failed"
logf=$out/console.log
# 2400 s: a guard against a guest that hangs, not a speed check.  On a new
# machine the guest runs beside the debug kernel's build and the host
# tests: there boot 1's apt install (DKMS) once took 841 s (ci55), and a
# landing CI's guest had ended boot 2's purge when 1200 s stopped it
# during boot 3, every check until then passed.
vm_timeout=${VM_TIMEOUT:-2400}
start=$(date +%s)
children_cpu cpu0
# No -no-reboot: the guest reboots twice in one qemu, and powers off at
# the end.  watchdog_thresh=60: under TCG on a busy host a vCPU can stall
# for over 20 s (once: podman clearing a huge page, in the boot after the
# purge, wsem gone), which the default threshold reports as a soft lockup
# and the clean-log check would blame; 120 s still catches a real one.
# rcu_cpu_stall_timeout=60 (default 21) for the same stalls seen by RCU:
# once an "rcu_preempt detected stalls" after the purge, host load 11-14.
# (--foreground: in this script's process group, as run.sh's guests)
timeout --foreground -k 5 "$vm_timeout" qemu-system-x86_64 -accel tcg -m 2G -smp 2 \
	-nographic -nic none \
	-kernel "$img/vmlinuz" -initrd "$img/initrd.img" \
	-append "root=/dev/vda ro console=ttyS0 quiet systemd.show_status=error watchdog_thresh=60 rcupdate.rcu_cpu_stall_timeout=60" \
	-drive "file=$out/disk.qcow2,if=virtio,format=qcow2" \
	-virtfs "local,path=$share,mount_tag=lane,security_model=none,id=lane" \
	</dev/null >"$logf" 2>&1
qst=$?
secs=$(($(date +%s) - start))
children_cpu cpu
cpu=$(((cpu - cpu0) / CLK_TCK))
echo "check-distro: the guest ran ${secs}s, ${cpu} CPU-seconds of QEMU"
phase=$(cat "$share/out/phase" 2>/dev/null)
tr -d '\r' <"$logf" | sed 's/\x1b\[[0-9;?]*[A-Za-z]//g; s/\x1bc//g' |
	grep -e '^# distro:' -e '^\[ *[0-9.]*\] ' | grep -v '^\[ *[0-9.]*\] \(systemd-\|audit\|EXT4\|random\)'
if [ -f "$share/out/timeline" ]; then
	stage "the podman timeline"
	cat "$share/out/timeline"
fi
stage "the guest's results"
cat "$share/out/tap" 2>/dev/null
[ $qst -eq 0 ] && [ "$phase" = "done" ]
st=$?
if [ $st -ne 0 ]; then
	log "check-distro: the guest stopped in phase ${phase:-none} after ${secs}s (qemu status $qst)"
	tail -n 40 "$logf" | tr -d '\r' >&2
fi
tap $st "the guest went through its three boots and powered off (${secs}s)" "$logf"
summary label=- "$tapf" label=distro "$share/out/tap"
