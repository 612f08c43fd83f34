#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The guests' Debian kernels, unpacked into the cache, never installed on
# the host: /boot, GRUB's menu and its default stay the host's own.
#  - 6.1 (the host release's kernel): deps.sh installs its headers
#    (linux-headers-amd64, which needs no image); its image package
#    linux-image-KVER (the kernel and its modules) is downloaded with
#    "apt-get download" and unpacked with "dpkg-deb -x" into the cache
#    (lib.sh's WSEM_KERNEL_CACHE: /var/cache/wsem-guest-kernels when
#    writable) as KVER, whose modules get a modules.dep (depmod -b).
#  - 6.12 and 6.12 PREEMPT_RT (bookworm-security): their headers packages
#    depend on the kernel's image, so installing them would install a
#    kernel the host then boots.  The newest of each (named by the
#    linux-headers-6.12-amd64 and -rt-amd64 metapackages) is unpacked, image,
#    headers, their -common part and linux-kbuild, into the cache's KVER;
#    the headers' Makefile, which includes the -common part's by its
#    /usr/src path, is pointed at the unpacked one.
# lib.sh's kernel_image, kernel_modules and kdir_of find them there.  A
# kernel whose image (or headers) its owner installed is used from /boot
# (or /lib/modules/KVER/build), and not downloaded.  WSEM_GUEST_KERNELS,
# a shell pattern, narrows the kernels (deps.sh --demo: 6.12's alone).
# Where this machine's apt sources lack bookworm-security (a debootstrap
# tree has only "bookworm main"), the 6.12 packages are read through a
# private list of its own in $BUILD/apt (private_apt): the machine's
# sources, lists and package cache are left as they are.
# The cache key is the packages' version, in KVER/version there; the
# cache's lock keeps one run at a time on a machine.
# Exits 0 when every kernel is there, 1 after one line naming what could
# not be had.
set -u
# shellcheck source=selftests/vm/lib.sh
. "$(dirname "$0")/lib.sh"

# The packages that hold KVER's headers: linux-headers-KVER and what of
# it apt-cache depends names -common and linux-kbuild.
headers_pkgs() {
	echo "linux-headers-$1"
	apt-cache "${APT[@]}" depends "linux-headers-$1" 2>/dev/null |
		sed -n 's/^ *|\{0,1\}Depends: \(linux-headers-.*-common.*\)$/\1/p
			s/^ *|\{0,1\}Depends: \(linux-kbuild-.*\)$/\1/p'
}

# extract TMP DIR KVER HEADERS FINAL: every package in TMP unpacked into
# DIR, the modules' index made, and with HEADERS=1 the headers' Makefile
# pointed at the -common part in FINAL, where DIR will be.
extract() {
	local p
	mkdir -p "$2" || return 1
	for p in "$1"/*.deb; do
		dpkg-deb -x "$p" "$2" || return 1
	done
	[ -f "$2/boot/vmlinuz-$3" ] && depmod -b "$2" "$3" || return 1
	[ "$4" = 0 ] && return 0
	sed -i "s|^include /usr/src/|include $5/usr/src/|" \
		"$2/usr/src/linux-headers-$3/Makefile"
}

# unpack KVER VER HEADERS: linux-image-KVER (and with HEADERS=1 its
# headers packages) of version VER into the cache's KVER, if not there.
unpack() {
	local kver=$1 ver=$2 headers=$3 dir=$WSEM_KERNEL_CACHE/$1 tmp pkgs p
	if [ -f "$dir/version" ] && [ "$(cat "$dir/version")" = "$ver" ] &&
	   { [ "$headers" = 0 ] ||
	     [ -f "$dir/usr/src/linux-headers-$kver/Makefile" ]; }; then
		return 0
	fi
	pkgs=linux-image-$kver
	[ "$headers" = 1 ] && pkgs="$pkgs $(headers_pkgs "$kver" | xargs)"
	tmp=$(mktemp -d) || return 1
	# that version first; else whatever apt has of that ABI
	for p in $pkgs; do
		(cd "$tmp" && { apt-get "${APT[@]}" download -q "$p=$ver" ||
				apt-get "${APT[@]}" download -q "$p"; } \
			>/dev/null 2>&1) && continue
		rm -rf "$tmp"
		log "guest-kernels: apt-get download $p failed (no such package in this machine's apt sources, or no network): the $kver guest cannot boot"
		return 1
	done
	rm -rf "$dir.new"
	if ! extract "$tmp" "$dir.new" "$kver" "$headers" "$dir" ||
	   ! echo "$ver" >"$dir.new/version"; then
		rm -rf "$tmp" "$dir.new"
		log "guest-kernels: unpacking $pkgs failed"
		return 1
	fi
	rm -rf "$tmp" "$dir"
	mv "$dir.new" "$dir"
	log "guest-kernels: $pkgs $ver unpacked into $dir"
}

# wanted KVER: is KVER one of the guests', and not narrowed away?
wanted() {
	case $1 in
	6.1.0-*-amd64 | 6.12.*+deb12-amd64 | 6.12.*+deb12-rt-amd64) ;;
	*) return 1 ;;
	esac
	# shellcheck disable=SC2254 # a pattern (deps.sh --demo: 6.12's)
	case $1 in
	${WSEM_GUEST_KERNELS:-*}) return 0 ;;
	esac
	return 1
}

cache_lock "$WSEM_KERNEL_CACHE" guest-kernels

# apt's options for the kernels' packages: none while this machine's
# sources have the 6.12 kernels (as a Debian 12 install's do), else
# private_apt's (lib.sh).
APT=()

if ! apt-cache show linux-headers-6.12-amd64 >/dev/null 2>&1 &&
   ! private_apt; then
	log "guest-kernels: apt-get update of bookworm-security failed (no network?): the 6.12 guests cannot boot"
	APT=()
fi

ret=0
# The kernels whose headers are installed (6.1's; 6.12's where the
# machine's owner installed them): their images.
for h in /lib/modules/*/build; do
	kver=${h#/lib/modules/}
	kver=${kver%/build}
	wanted "$kver" || continue
	[ -z "${WSEM_CACHED_KERNELS:-}" ] && [ -f "/boot/vmlinuz-$kver" ] &&
		continue
	ver=$(dpkg-query -W -f='${Version}' "linux-headers-$kver" 2>/dev/null)
	unpack "$kver" "$ver" 0 || ret=1
done
# 6.12's, whose headers are not installed: image and headers.
for meta in linux-headers-6.12-amd64 linux-headers-6.12-rt-amd64; do
	kver=$(apt-cache "${APT[@]}" depends "$meta" 2>/dev/null |
	       sed -n 's/^ *Depends: linux-headers-//p' | head -n 1)
	if [ -z "$kver" ]; then
		log "guest-kernels: apt knows no $meta (the 6.12 kernels are in bookworm-security): its guest cannot boot"
		ret=1
		continue
	fi
	wanted "$kver" || continue
	[ -f "/lib/modules/$kver/build/Makefile" ] && continue
	ver=$(apt-cache "${APT[@]}" show --no-all-versions "linux-headers-$kver" 2>/dev/null |
	      sed -n 's/^Version: //p' | head -n 1)
	unpack "$kver" "$ver" 1 || ret=1
done
exit "$ret"
