#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The guests' Debian kernels, unpacked into the cache, never installed on
# the host: /boot, GRUB's menu and its default stay the host's own.  For
# each 6.1 and 6.12 kernel whose headers deps.sh installed (the headers
# metapackages pull in the newest), the image package linux-image-KVER
# (the kernel and its modules) is downloaded with "apt-get download" and
# unpacked with "dpkg-deb -x" into build/kernels/KVER, whose modules get a
# modules.dep (depmod -b); lib.sh's kernel_image and kernel_modules find
# it there.  A kernel whose image its owner installed in /boot is used
# from there, and not downloaded.  WSEM_GUEST_KERNELS, a shell pattern,
# narrows the kernels (deps.sh --demo: 6.12's alone).  The cache key is the package's
# version, in build/kernels/KVER/version.  Exits 0 when every kernel is
# there, 1 after one line naming what could not be had.
set -u
# shellcheck source=selftests/vm/lib.sh
. "$(dirname "$0")/lib.sh"

# unpack KVER: linux-image-KVER into $BUILD/kernels/KVER, if not there.
unpack() {
	local kver=$1 pkg=linux-image-$1 dir=$BUILD/kernels/$1 ver tmp
	ver=$(dpkg-query -W -f='${Version}' "linux-headers-$kver" 2>/dev/null)
	[ -f "$dir/version" ] && [ "$(cat "$dir/version")" = "$ver" ] &&
		return 0
	tmp=$(mktemp -d) || return 1
	# the headers' own version first; else whatever apt has of that ABI
	if ! (cd "$tmp" && { apt-get download -q "$pkg=$ver" ||
			     apt-get download -q "$pkg"; } >/dev/null 2>&1); then
		rm -rf "$tmp"
		log "guest-kernels: apt-get download $pkg failed (no such package in this machine's apt sources, or no network): the $kver guest cannot boot"
		return 1
	fi
	rm -rf "$dir.new"
	mkdir -p "$dir.new" &&
		dpkg-deb -x "$tmp"/*.deb "$dir.new" &&
		[ -f "$dir.new/boot/vmlinuz-$kver" ] &&
		depmod -b "$dir.new" "$kver" &&
		echo "$ver" >"$dir.new/version" || {
		rm -rf "$tmp" "$dir.new"
		log "guest-kernels: unpacking $pkg failed"
		return 1
	}
	rm -rf "$tmp" "$dir"
	mv "$dir.new" "$dir"
	log "guest-kernels: $pkg $ver unpacked into $dir"
}

ret=0
for h in /lib/modules/*/build; do
	kver=${h#/lib/modules/}
	kver=${kver%/build}
	case $kver in
	6.1.0-*-amd64 | 6.12.*+deb12-amd64 | 6.12.*+deb12-rt-amd64) ;;
	*) continue ;;
	esac
	# shellcheck disable=SC2254 # a pattern (deps.sh --demo: 6.12's)
	case $kver in
	${WSEM_GUEST_KERNELS:-*}) ;;
	*) continue ;;
	esac
	[ -z "${WSEM_CACHED_KERNELS:-}" ] && [ -f "/boot/vmlinuz-$kver" ] &&
		continue
	unpack "$kver" || ret=1
done
exit "$ret"
