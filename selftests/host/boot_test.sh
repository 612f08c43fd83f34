#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Nothing make demo or make test installs changes how the host boots: the
# guests' kernels are unpacked into the cache (selftests/vm/guest-kernels.sh),
# never installed.  deps.sh records, before its first install from this
# tree (boot_test.sh --record), the kernels in /boot, GRUB_DEFAULT and
# GRUB's saved entry; this test, at the end of make test, finds the same.
# A tree whose deps.sh never ran (no record) skips it.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
RECORD=$ROOT/build/boot-before
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# shellcheck source=selftests/host/tap.sh
. "$(dirname "$0")/tap.sh"

# What decides what the host boots, one line each.
boot_state() {
	local f
	for f in /boot/vmlinuz-* /boot/initrd.img-*; do
		[ -e "$f" ] && echo "boot: ${f#/boot/}"
	done
	sed -n 's/^GRUB_DEFAULT=/grub-default: /p' /etc/default/grub 2>/dev/null
	[ -f /boot/grub/grubenv ] &&
		sed -n 's/^saved_entry=/grub-saved: /p' /boot/grub/grubenv
	return 0
}

if [ "${1:-}" = --record ]; then
	[ -f "$RECORD" ] && exit 0
	mkdir -p "${RECORD%/*}" && boot_state >"$RECORD"
	exit
fi

unchanged() {
	boot_state >"$T/now"
	diff "$RECORD" "$T/now"
}

echo "TAP version 13"
if [ -f "$RECORD" ]; then
	check "the host boots what it booted before deps.sh: /boot's kernels, GRUB's default" \
		unchanged
else
	n=$((n + 1))
	echo "ok $n - the host boots what it booted # SKIP deps.sh never ran here"
fi
echo "1..$n"
[ "$failed" -eq 0 ]
