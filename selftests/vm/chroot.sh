#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A Debian chroot of another release (bullseye: Linux 5.10, gcc 10; sid:
# the newest kernel and gcc) holding that release's kernel image, headers
# and compiler, so the module can be built by that release's own gcc and
# booted on its own kernel; sid's also holds linux-source-7.2 and the tools
# to build it, for the debug kernel of debug-kernel.sh, and trixie's Go and
# etcd 3.5's packages, for wsem-agent (agent_trixie_test.sh).  Built once
# per machine, cached outside the tree.
#
# usage: chroot.sh [-f | -n] RELEASE
#   -f  build again even if cached
#   -n  build nothing: print the directory and succeed if it is cached
#
# Prints the cache directory on stdout; in it:
#   root/           the chroot (debootstrap --variant=minbase + PACKAGES)
#   kernel.release  the release of the kernel in root/boot (uname -r)
#   gcc             the chroot's `gcc --version` first line
#   manifest        the installed packages and their versions
#   build-time      how long the build took, and what
# The cache key is a hash of the release, the mirror, PACKAGES and RECIPE,
# so any of them changing builds a new chroot.  Cache root:
# WSEM_CHROOT_CACHE, else /var/cache/wsem-chroot when writable, else
# ~/.cache/wsem-chroot.  Needs root (debootstrap, chroot).
set -u -o pipefail
. "$(dirname "$0")/lib.sh"

# Bump when the way the chroot is made changes what is in it that anything
# uses (not for INITRD=No below: a chroot with an initramfs serves as well).
RECIPE=1
MIRROR=${WSEM_CHROOT_MIRROR:-$(host_mirror)}
SECURITY_MIRROR=${WSEM_CHROOT_MIRROR_SECURITY:-$(host_mirror security)}
PACKAGES="build-essential kmod linux-headers-amd64 linux-image-amd64 dkms"
# sid's chroot also builds the debug kernel of `make check-debug`
# (debug-kernel.sh): the source and what building it needs (flex, bison
# and bc for Kconfig and the build, libelf-dev for objtool's ORC unwinder,
# libssl-dev for the certificate tools, cpio and rsync for the packaging
# scripts), as linux-source-7.2 recommends.
DEBUG_PACKAGES="linux-source-7.2 bc bison flex cpio libelf-dev libssl-dev rsync"
# sid's chroot also lends the guests the jobserver clients newer than
# bookworm's (jobserver_clients_test.sh; mkinitramfs.sh's add_sid_clients):
# make 4.4.1 (the fifo style), ninja 1.13, cargo (with rustc), and patchelf
# to make copies of them run on the guest's bookworm userland.
CLIENT_PACKAGES="make ninja-build cargo patchelf"
# trixie's chroot also builds wsem-agent against trixie's etcd 3.5, whose
# import paths are not bookworm's 3.4 ones (agent_trixie_test.sh: make -C
# agent and check-etcd there): Go, etcd's client, server and in-process
# test cluster (golang-etcd-server-dev), and x/sys, which the agent uses.
AGENT_PACKAGES="golang-go golang-etcd-server-dev golang-golang-x-sys-dev"

force= cached_only=
while getopts fn opt; do
	case $opt in
	f) force=1 ;;
	n) cached_only=1 ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || die "usage: chroot.sh [-f | -n] RELEASE"
release=$1
case $release in
sid | unstable) PACKAGES="$PACKAGES $DEBUG_PACKAGES $CLIENT_PACKAGES" ;;
trixie) PACKAGES="$PACKAGES $AGENT_PACKAGES" ;;
esac

key=$( {
	echo "recipe $RECIPE"
	echo "release $release $MIRROR"
	echo "$PACKAGES"
} | sha256sum | cut -c1-16)

root=$(cache_root wsem-chroot "${WSEM_CHROOT_CACHE:-}")
dir=$root/$release-$key
if [ -n "$cached_only" ]; then
	[ -f "$dir/.done" ] || exit 1
	echo "$dir"
	exit 0
fi

# One build of each release at a time (two releases may download at once).
cache_take "$(chroot_lock_dir "$release")" "$dir" "chroot $release" "$force"

[ "$(id -u)" -eq 0 ] || die "building a chroot needs root (debootstrap)"
command -v debootstrap >/dev/null || die "no debootstrap"

work=$dir.work
rfs=$work/root
blog=$work/build.log
mounted=
cleanup() {
	local m
	for m in $mounted; do
		umount -l "$rfs/$m" 2>/dev/null
	done
}
trap cleanup EXIT
fail() {
	tail -n 40 "$blog" >&2
	die "$1 failed (log: $blog)"
}
# INITRD=No: the kernel package's hooks (initramfs-tools', dracut's) make
# no initramfs.  No guest boots one of the chroot's (mkinitramfs.sh packs
# the guests'), and making it took 200-250 s of each chroot's apt, twice
# in sid (the kernel's hook, then dracut's trigger).
in_root() {
	chroot "$rfs" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 INITRD=No "$@"
}

# A bind of root/ onto itself that in_chroot (lib.sh) left when killed
# would keep rm from removing it.
if [ -f "$dir/.bound" ] && mountpoint -q "$dir/root"; then
	umount "$dir/root" || umount -l "$dir/root"
fi
rm -rf "$work" "$dir" "$dir.tmp"
mkdir -p "$work"
t0=$(date +%s)
log "chroot $release: debootstrap (log: $blog)"
# A release the mirror no longer has (bullseye once it leaves the main
# archive for archive.debian.org) is one line that says so and what to do,
# not debootstrap's errors.
if ! debootstrap --variant=minbase --arch=amd64 "$release" "$rfs" "$MIRROR" \
	>"$blog" 2>&1; then
	grep -q "Failed getting release file\|Couldn't download .*Release\|Release signed by unknown key\|No such file.*Release" "$blog" &&
		die "$release is not on $MIRROR any more (a release that left the main archive is on http://archive.debian.org/debian): WSEM_CHROOT_MIRROR=URL takes another mirror, CHROOTS= leaves the lane out (log: $blog)"
	fail "debootstrap"
fi
t1=$(date +%s)

# A stable release takes its point releases and security updates (the
# kernel's newest ABI); sid and testing have neither.
{
	echo "deb $MIRROR $release main"
	case $release in
	sid | unstable | testing | experimental) ;;
	*)
		echo "deb $MIRROR $release-updates main"
		echo "deb $SECURITY_MIRROR" \
			"$release-security main"
		;;
	esac
} >"$rfs/etc/apt/sources.list"
# The mirror may serve a snapshot older than sid's Release file allows
# (Valid-Until is a week there).
echo 'Acquire::Check-Valid-Until "false";' >"$rfs/etc/apt/apt.conf.d/99wsem"
printf '#!/bin/sh\nexit 101\n' >"$rfs/usr/sbin/policy-rc.d"
chmod 755 "$rfs/usr/sbin/policy-rc.d"
mount -t proc proc "$rfs/proc" && mounted="proc $mounted" &&
mount --bind /dev "$rfs/dev" && mounted="dev $mounted" ||
	die "mounting /proc, /dev in the chroot failed"

log "chroot $release: apt-get install $PACKAGES"
# shellcheck disable=SC2086 # a list
{
	in_root apt-get -q update &&
	in_root apt-get -q -y -o Dpkg::Use-Pty=0 --no-install-recommends \
		install $PACKAGES &&
	in_root apt-get -q -y -o Dpkg::Use-Pty=0 dist-upgrade &&
	in_root apt-get clean
} >>"$blog" 2>&1 </dev/null || fail "apt-get install"
cleanup
mounted=
rm -f "$rfs/usr/sbin/policy-rc.d"
t2=$(date +%s)

tmp=$dir.tmp
mkdir -p "$tmp"
in_root dpkg-query -W -f='${Package} ${Version}\n' >"$tmp/manifest"
# The kernel whose headers are there too (the newest, should there be two).
krel=
for k in "$rfs"/boot/vmlinuz-*; do
	k=${k##*/vmlinuz-}
	[ -d "$rfs/usr/src/linux-headers-$k" ] && [ -d "$rfs/lib/modules/$k" ] &&
		krel=$(printf '%s\n%s\n' "$krel" "$k" | sed '/^$/d' |
			sort -V | tail -n 1)
done
[ -n "$krel" ] || die "no kernel with headers in $rfs"
echo "$krel" >"$tmp/kernel.release"
in_root gcc --version | head -n 1 >"$tmp/gcc"
mv "$rfs" "$tmp/root"

{
	echo "$((t2 - t0))s (debootstrap $((t1 - t0))s, apt $((t2 - t1))s)"
	echo "$release, kernel $krel, $(cat "$tmp/gcc")," \
		"$(wc -l <"$tmp/manifest") packages"
	echo "recipe $RECIPE, key $key, built $(date -u +%Y-%m-%dT%H:%M:%SZ)"
} >"$tmp/build-time"
touch "$tmp/.done"
mv "$tmp" "$dir"
rm -rf "$work"
log "chroot $release: built in $(head -n 1 "$dir/build-time"): $dir"
echo "$dir"
