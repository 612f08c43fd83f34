#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The guest side of `make check-distro`, run by wsem-lane.service (see
# distro-image.sh) from the 9p share at /mnt/lane on every boot of the
# Debian guest.  The share holds this script, debs/ (the .debs of make
# deb) and out/, where it leaves:
#   tap        the TAP lines, numbered across boots
#   phase      where the lane is: install, installed, purged, done
#   timeline   the podman scenario, readable
#   *.log      what the steps printed
# Boot 1 installs the .debs as a user would (apt install ./wsem*.deb),
# checks DKMS, writes /etc/wsem.d/lane.conf and reboots.  Boot 2 checks
# the boot (module, /dev/wsem, /sys/fs/wsem, the semaphore, no failed
# unit, a clean kernel log), runs the podman scenario, purges the packages
# and reboots.  Boot 3 checks that the purged system boots clean, and
# powers off.
set -u -o pipefail

LANE=/mnt/lane
. "$LANE/distro-util.sh"
OUT=$LANE/out
SEM=lane
CAP=4
# Every package of make deb: boot 1 installs them all, boot 2 purges them.
PACKAGES=(wsem wsem-dkms wsem-agent libwsem1 libwsem-dev python3-wsem
	golang-wsem-dev)
export PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8
export DEBIAN_FRONTEND=noninteractive

# say MESSAGE: a line on the console, after the seconds since this boot
# began (where the lane's time goes, boot by boot).
say() {
	local up
	read -r up _ </proc/uptime
	echo "# distro: ${up%.*}s: $*" >/dev/console
}

# tap STATUS NAME [LOG]: one TAP line, numbered after those of earlier
# boots; a failure is followed by the end of LOG as comments, which
# make test's summary shows under its FAILED line ("why:").
tap() {
	local n r=ok
	[ "$1" -eq 0 ] || r="not ok"
	n=$(($(grep -c -e '^ok ' -e '^not ok ' "$OUT/tap") + 1))
	echo "$r $n $2" | tee -a "$OUT/tap" >/dev/console
	if [ "$1" -ne 0 ] && [ -f "${3:-}" ]; then
		tail -n 30 "$3" | sed 's/^/#   /' >>"$OUT/tap"
	fi
}

phase() { echo "$1" >"$OUT/phase"; sync; }

# system_state: the state once the boot is over, as `systemctl
# is-system-running --wait` prints it, asked again while systemctl could
# not ask: a first boot once answered "Failed to query system state:
# Transport endpoint is not connected" (its connection to the manager went
# away while it waited).  At most 300 s in all; what systemctl last said
# when it never answered.
system_state() {
	local st end
	end=$(($(up | cut -d. -f1) + 300))
	while :; do
		st=$(timeout 300 systemctl is-system-running --wait 2>&1)
		# The state is its last line ("unknown" after a failure).
		case ${st##*$'\n'} in
		running | degraded | maintenance | stopping | offline)
			st=${st##*$'\n'}
			break
			;;
		esac
		[ "$(up | cut -d. -f1)" -lt "$end" ] || break
		sleep 1
	done
	echo "$st"
}

# systemctl_retry ARGS...: systemctl ARGS, once more a second later (up
# to 10 times) when it fails, as above, to reach the manager; its last
# output.
systemctl_retry() {
	local n=0 o st
	while :; do
		o=$(systemctl "$@" 2>&1)
		st=$?
		n=$((n + 1))
		{ [ $st -ne 0 ] && [ $n -lt 10 ]; } || break
		case $o in
		*"Failed to"*) sleep 1 ;;
		*) break ;;
		esac
	done
	[ -z "$o" ] || printf '%s\n' "$o"
	return $st
}

# The boot is over (running or degraded) and was clean: no failed unit.
# A failed unit's journal goes into the log.
check_boot() {
	local st u units log=$OUT/failed-$1.log
	st=$(system_state)
	systemctl_retry --failed --no-legend --plain >"$log" 2>&1
	say "boot $1: system $st after $(up)s: $(systemd-analyze 2>/dev/null |
		head -n 1)"
	# Where the boot's time went, for the record (out/blame-N.log: each
	# unit's own time; the chain the boot waited on after it)
	{
		systemd-analyze blame --no-pager | head -n 15
		echo
		systemd-analyze critical-chain --no-pager
	} >"$OUT/blame-$1.log" 2>&1
	[ "$st" = running ] && [ ! -s "$log" ]
	tap $? "boot $1: systemd reached running, no failed unit ($st)" "$log"
	units=$(awk '{ print $1 }' "$log")
	for u in $units; do
		journalctl -b -u "$u" --no-pager -o cat >>"$log" 2>&1
	done
}

# The kernel log at warning and above: boot 1, the stock system on this
# emulated machine, is the baseline (TCG has its MTRR, MMCONFIG and clock
# complaints); later boots may add only what loading any out-of-tree,
# unsigned module prints, and the clock calibration lines that TCG's
# timing makes come and go from boot to boot; so does the hrtimer
# subsystem's one-time note that an interrupt took tens of milliseconds,
# which is the vCPU thread descheduled on a loaded host (a cold run of
# make test printed it at boot 2), and, for the same cause, the HPET's
# note that RTC interrupts were lost (a clean Debian 12 chroot's make
# test printed "hpet: Lost 19 RTC interrupts" at boot 2).  No taint but
# the module's two (O = 4096, E = 8192).  The kernel's own lines only:
# journalctl -k also holds what userspace wrote to /dev/kmsg (systemd
# before journald runs, udevd), which journald files under the writer's
# name, not "kernel"; all of /dev/kmsg at warning and above is kept in
# klog-N.kmsg.
check_klog() {
	local t all=$OUT/klog-$1.all
	journalctl -k -b -p warning --no-pager -o cat SYSLOG_IDENTIFIER=kernel \
		>"$all" 2>&1
	journalctl -k -b -p warning --no-pager -o short-monotonic \
		>"$OUT/klog-$1.kmsg" 2>&1
	if [ "$1" = 1 ]; then
		say "kernel log baseline: $(wc -l <"$all") lines at warning and above"
		[ -s "$all" ]
		tap $? "boot 1: the kernel's log at warning and above read ($(wc -l <"$all") lines: TCG's complaints)" "$all"
		return
	fi
	grep -vxF -f "$OUT/klog-1.all" "$all" |
		grep -v -e 'loading out-of-tree module taints kernel' \
			-e 'module verification failed: signature and/or required key missing' \
			-e '^tsc: ' -e '^clocksource: ' -e '^APIC calibration ' \
			-e '^Unstable clock detected' -e '"trace_clock=local"' \
			-e '^If you want to keep using the local clock' \
			-e '^on the kernel command line$' \
			-e '^hrtimer: interrupt took [0-9]* ns$' \
			-e '^hpet: Lost [0-9]* RTC interrupts$' \
			>"$OUT/klog-$1.log"
	t=$(cat /proc/sys/kernel/tainted)
	echo "tainted: $t" >>"$OUT/klog-$1.log"
	[ "$(wc -l <"$OUT/klog-$1.log")" -eq 1 ] && [ $((t & ~12288)) -eq 0 ]
	tap $? "boot $1: journalctl -k clean (nothing new at warning and above; taint $t)" \
		"$OUT/klog-$1.log"
}

# install_debs GLOB PACKAGE...: apt install ./GLOB in debs/, as a user
# types it, and dpkg then knows each PACKAGE as installed; one TAP line.
install_debs() {
	local glob=$1 log=$OUT/apt-install.log
	shift
	say "apt install ./$glob"
	# shellcheck disable=SC2086 # GLOB is for the shell to expand
	(cd "$LANE/debs" && apt -y -q -o Dpkg::Use-Pty=0 \
		install ./$glob) >>"$log" 2>&1 </dev/null &&
		dpkg-query -W "$@" >>"$log" 2>&1
	tap $? "apt install ./$glob: $* installed" "$log"
}

boot_install() {
	local kver
	kver=$(uname -r)
	check_boot 1
	check_klog 1
	[ ! -d /sys/module/wsem ] && [ ! -e /dev/wsem ]
	tap $? "boot 1: no wsem before the packages"

	# What a new user types: the command and the module, nothing else
	# (the command carries its own copy of the library).  Then the
	# library's and the binding's packages, so that apt purge is seen to
	# take them all away.
	install_debs 'wsem*.deb' wsem wsem-dkms wsem-agent
	install_debs 'libwsem*.deb' libwsem1 libwsem-dev
	install_debs 'python3-wsem*.deb' python3-wsem
	install_debs 'golang-wsem-dev*.deb' golang-wsem-dev
	say "installed"

	dkms status wsem >"$OUT/dkms.log" 2>&1
	grep -q "^wsem/[^,]*, $kver, [^:]*: installed" "$OUT/dkms.log"
	tap $? "dkms built and installed wsem for the guest's kernel $kver" \
		"$OUT/dkms.log"
	modinfo -k "$kver" -F filename wsem >>"$OUT/dkms.log" 2>&1 &&
		grep -q "^/lib/modules/$kver/updates/dkms/wsem.ko" "$OUT/dkms.log"
	tap $? "modinfo: wsem.ko in /lib/modules/$kver/updates/dkms" \
		"$OUT/dkms.log"

	mkdir -p /etc/wsem.d
	echo "$SEM capacity=$CAP mode=0666" >/etc/wsem.d/lane.conf
	say "wrote /etc/wsem.d/lane.conf: $(cat /etc/wsem.d/lane.conf); rebooting"
	phase installed
	systemctl reboot
}

boot_installed() {
	local log=$OUT/boot2.log
	check_boot 2
	check_klog 2
	[ -d /sys/module/wsem ]
	tap $? "boot 2: the module is loaded (modules-load.d)"
	[ -c /dev/wsem ] && stat -c '%n %A %t:%T' /dev/wsem >"$log" 2>&1
	tap $? "boot 2: /dev/wsem is a character device" "$log"
	findmnt -n -o FSTYPE /sys/fs/wsem >>"$log" 2>&1 &&
		[ "$(findmnt -n -o FSTYPE /sys/fs/wsem)" = wsem ]
	tap $? "boot 2: wsemfs is mounted at /sys/fs/wsem" "$log"
	systemctl is-active wsem-apply.service >>"$log" 2>&1
	tap $? "boot 2: wsem-apply.service ran" "$log"
	wsem stat "$SEM" --json >>"$log" 2>&1 &&
		[ -f "/sys/fs/wsem/$SEM" ] &&
		grep -q "\"capacity\":$CAP," "$log"
	tap $? "boot 2: /etc/wsem.d applied: $SEM of capacity $CAP in /sys/fs/wsem" \
		"$log"
	boot_python
	boot_go
	boot_agent
	unit_signal control-group 0
	unit_signal mixed 1

	say "podman"
	bash "$LANE/distro-podman.sh" "$SEM" "$CAP" "$OUT"
	tap_podman

	purge
	phase purged
	say "rebooting the purged system"
	systemctl reboot
}

# distro-podman.sh leaves its verdicts in out/podman.tap, "STATUS NAME".
tap_podman() {
	local st name
	if [ ! -s "$OUT/podman.tap" ]; then
		tap 1 "podman: the scenario reported nothing" "$OUT/podman.log"
		return
	fi
	while read -r st name; do
		tap "$st" "$name" "$OUT/podman.log"
	done <"$OUT/podman.tap"
}

# lines_in FILE: its number of lines, 0 if there is no FILE
lines_in() {
	if [ -e "$1" ]; then wc -l <"$1"; else echo 0; fi
}

# unit_signal MODE N: wsem run as the main process of a transient service
# of KillMode=MODE.  SIGTERM from systemd to wsem alone (systemctl kill
# --kill-who=main) reaches COMMAND N times: 0 under control-group, where
# systemd's stop signals COMMAND itself, 1 under mixed, where wsem passes it
# on.  The stop then ends the unit with COMMAND signalled once in all, and
# nothing held.
unit_signal() {
	local mode=$1 want=$2 u=wsem-sig-$1 f=/run/wsem-sig-$1 n1=x n2=x
	local log=$OUT/unit-$1.log
	rm -f "$f" "$f.ready"
	systemd-run --unit="$u" -p KillMode="$mode" wsem run "$SEM" -- sh -c \
		"trap 'echo term >>$f' TERM; touch $f.ready
		 while [ ! -s $f ]; do sleep 0.1; done; sleep 1; exit 0" \
		>"$log" 2>&1
	for _ in $(seq 300); do
		[ -e "$f.ready" ] && break
		sleep 0.1
	done
	if [ -e "$f.ready" ]; then
		systemctl kill --kill-who=main -s TERM "$u" >>"$log" 2>&1
		sleep 2
		n1=$(lines_in "$f")
		systemctl stop "$u" >>"$log" 2>&1
		n2=$(lines_in "$f")
	fi
	{
		echo "COMMAND's SIGTERMs: $n1 after the kill of wsem, $n2 after the stop"
		systemctl status --no-pager "$u"
		wsem stat "$SEM" --json
	} >>"$log" 2>&1
	[ "$n1" = "$want" ] && [ "$n2" = 1 ] &&
		[ "$(systemctl is-active "$u")" != active ] &&
		grep -q '"used":0,' "$log"
	tap $? "boot 2: wsem run as a KillMode=$mode service: systemd's SIGTERM to wsem alone reaches COMMAND $want times, the stop once in all" \
		"$log"
}

# python3-wsem with Debian's python3, as its users import it: the
# module from dist-packages, 3 of the semaphore held while wsem stat
# says so, released, and 1 held at once for as long as a with block.
boot_python() {
	local log=$OUT/python.log
	python3 - "$SEM" >"$log" 2>&1 <<'EOT'
import subprocess, sys, wsem
print(wsem.__file__)
assert wsem.__file__.startswith("/usr/lib/python3/dist-packages/")
sem = wsem.Semaphore(sys.argv[1])
sem.acquire(3)
st = subprocess.run(["wsem", "stat", sys.argv[1], "--json"],
                    capture_output=True, text=True, check=True).stdout
print(st, end="")
assert '"used":3,' in st and sem.stat().used == 3
sem.release(3)
with sem:
    assert sem.stat().used == 1
assert sem.stat().used == 0
sem.close()
EOT
	tap $? "boot 2: python3-wsem: import wsem from dist-packages, acquire, stat, release" \
		"$log"
}

# golang-wsem-dev with Debian's go, as Debian's golang-*-dev packages are
# used: a program importing wsem.example/wsem builds from GOPATH
# /usr/share/gocode alone (GO111MODULE=off, offline), then holds 2 of the
# semaphore while wsem stat says so, and releases them.
boot_go() {
	local log=$OUT/go.log dir=/tmp/gowsem
	mkdir -p "$dir"
	cat >"$dir/main.go" <<'EOT'
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"wsem.example/wsem"
)

func main() {
	w, err := wsem.Open(os.Args[1])
	if err == nil {
		err = w.Acquire(context.Background(), 2)
	}
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	st, err := exec.Command("wsem", "stat", os.Args[1], "--json").Output()
	fmt.Print(string(st))
	if err != nil || !strings.Contains(string(st), `"used":2,`) {
		fmt.Println("not 2 used:", err)
		os.Exit(1)
	}
	w.Release(2)
	s, err := w.Stat()
	if err != nil || s.Used != 0 {
		fmt.Println("not 0 used after the release:", err)
		os.Exit(1)
	}
}
EOT
	(cd "$dir" && env GOPATH=/usr/share/gocode GO111MODULE=off GOFLAGS= \
		GOPROXY=off GOENV=off GOTOOLCHAIN=local CGO_ENABLED=0 \
		GOCACHE="$dir/cache" HOME="$dir" go build -o "$dir/gowsem" . &&
		"$dir/gowsem" "$SEM") >"$log" 2>&1
	tap $? "boot 2: golang-wsem-dev: a program importing wsem.example/wsem builds with Debian's go from GOPATH=/usr/share/gocode, acquires, stats, releases" \
		"$log"
}

# The agent's package: its unit is there but neither enabled nor started
# (no cluster=etcd line is declared), and the agent says so.
boot_agent() {
	local log=$OUT/agent.log st
	{
		ls -l /usr/bin/wsem-agent /lib/systemd/system/wsem-agent.service
		systemctl is-enabled wsem-agent.service
		systemctl is-active wsem-agent.service
	} >"$log" 2>&1
	[ -x /usr/bin/wsem-agent ] &&
		[ "$(systemctl is-enabled wsem-agent.service 2>/dev/null)" = disabled ] &&
		[ "$(systemctl is-active wsem-agent.service 2>/dev/null)" = inactive ]
	tap $? "boot 2: wsem-agent installed, its unit disabled and not started" "$log"
	wsem-agent >>"$log" 2>&1
	st=$?
	[ $st -eq 1 ] && grep -q "no cluster=etcd limit declared" "$log"
	tap $? "boot 2: wsem-agent without a cluster limit: exit 1 ($st), says so" "$log"
}

purge() {
	local log=$OUT/purge.log left
	say "apt purge ${PACKAGES[*]}"
	apt -y -q -o Dpkg::Use-Pty=0 purge "${PACKAGES[@]}" >"$log" 2>&1 </dev/null
	tap $? "apt purge ${PACKAGES[*]}" "$log"
	left=$( {
		dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' \
			"${PACKAGES[@]}" 2>/dev/null |
			grep -v ' un *$'
		ls -d /var/lib/dkms/wsem /usr/src/wsem-* 2>/dev/null
		find /lib/modules -name 'wsem.ko*' 2>/dev/null
		ls /lib/systemd/system/wsem-apply.service \
			/lib/systemd/system/sys-fs-wsem.mount \
			/etc/systemd/system/*/wsem-apply.service \
			/etc/systemd/system/*/sys-fs-wsem.mount \
			/usr/lib/modules-load.d/wsem.conf \
			/lib/udev/rules.d/60-wsem.rules /usr/bin/wsem \
			/usr/bin/wsem-static /usr/include/wsem.h \
			/usr/bin/wsem-agent \
			/lib/systemd/system/wsem-agent.service \
			/usr/lib/python3/dist-packages/wsem \
			/usr/share/gocode/src/wsem.example 2>/dev/null
	} )
	echo "left after purge: ${left:-nothing}" >>"$log"
	[ -z "$left" ]
	tap $? "purge: no package, DKMS tree, module, unit or file left" "$log"
	systemctl_retry --failed --no-legend --plain >"$OUT/failed-purge.log" 2>&1
	[ ! -s "$OUT/failed-purge.log" ]
	tap $? "purge: no failed unit" "$OUT/failed-purge.log"
}

boot_purged() {
	check_boot 3
	check_klog 3
	[ ! -d /sys/module/wsem ] && [ ! -e /dev/wsem ] &&
		[ ! -e /sys/fs/wsem ]
	tap $? "boot 3: no module, /dev/wsem or /sys/fs/wsem after the purge"
	phase "done"
	say "done; powering off"
	systemctl poweroff
}

mkdir -p "$OUT"
[ -f "$OUT/tap" ] || : >"$OUT/tap"
[ -f "$OUT/phase" ] || phase install
p=$(cat "$OUT/phase")
say "boot with phase $p, kernel $(uname -r), uptime $(up)s"
case $p in
install) boot_install ;;
installed) boot_installed ;;
purged) boot_purged ;;
*) say "nothing to do in phase $p"; systemctl poweroff ;;
esac
