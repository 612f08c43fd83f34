#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The guest of `make check-distro`: Debian bookworm from debootstrap
# (minbase) plus what selftests/vm/distro.packages lists, as an ext4 disk
# image in qcow2, with its kernel and initrd next to it for a direct boot
# (root=/dev/vda).  Built once per machine and cached outside the tree.
#
# usage: distro-image.sh [-f | -n]
#   -f  build again even if cached
#   -n  build nothing: print the directory and succeed if it is cached
#
# Prints the cache directory on stdout; in it:
#   root.qcow2   the disk (boot it through a qcow2 overlay: it stays clean)
#   vmlinuz, initrd.img, kernel.release
#   manifest     the installed packages and their versions
#   build-time   how long the build took, and what
# The cache key is a hash of the package list, the suite, the mirror and
# RECIPE, so any of them changing builds a new image.  Cache root:
# WSEM_DISTRO_CACHE, else /var/cache/wsem-distro-image when writable, else
# ~/.cache/wsem-distro-image.  Needs root (debootstrap, chroot).
#
# The image holds one piece of the harness: wsem-lane.service, which
# mounts the 9p share tagged "lane" (when there is one) and runs lane.sh
# from it.  Without the share the guest is a plain bookworm system.
set -u -o pipefail
. "$(dirname "$0")/lib.sh"

# Bump when the way the image is made changes (the unit below included).
RECIPE=3
SUITE=bookworm
MIRROR=${WSEM_DISTRO_MIRROR:-$(host_mirror)}
SECURITY_MIRROR=${WSEM_DISTRO_MIRROR_SECURITY:-$(host_mirror security)}
LIST=$VMDIR/distro.packages
SIZE=8G

force= cached_only=
while getopts fn opt; do
	case $opt in
	f) force=1 ;;
	n) cached_only=1 ;;
	*) exit 2 ;;
	esac
done

pkgs=$(sed 's/#.*//' "$LIST" | tr -s ' \t\n' '\n' | sed '/^$/d')
[ -n "$pkgs" ] || die "no packages in $LIST"
key=$( {
	echo "recipe $RECIPE"
	echo "suite $SUITE $MIRROR"
	echo "$pkgs"
} | sha256sum | cut -c1-16)

root=$(cache_root wsem-distro-image "${WSEM_DISTRO_CACHE:-}")
dir=$root/$SUITE-$key
if [ -n "$cached_only" ]; then
	[ -f "$dir/.done" ] || exit 1
	echo "$dir"
	exit 0
fi

cache_take "$root" "$dir" distro-image "$force"

[ "$(id -u)" -eq 0 ] || die "building the image needs root (debootstrap)"
for t in debootstrap mkfs.ext4 qemu-img; do
	command -v "$t" >/dev/null ||
		die "no $t (apt-get install debootstrap e2fsprogs qemu-utils)"
done

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
in_root() {
	chroot "$rfs" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 "$@"
}

rm -rf "$work" "$dir" "$dir.tmp"
mkdir -p "$work"
t0=$(date +%s)
log "distro-image: debootstrap $SUITE (log: $blog)"
debootstrap --variant=minbase --arch=amd64 "$SUITE" "$rfs" "$MIRROR" \
	>"$blog" 2>&1 || fail "debootstrap"
t1=$(date +%s)

# apt in the chroot: the point releases and security updates too, as a
# user's system has them; no daemon starts.
cat >"$rfs/etc/apt/sources.list" <<EOF
deb $MIRROR $SUITE main
deb $MIRROR $SUITE-updates main
deb $SECURITY_MIRROR $SUITE-security main
EOF
printf '#!/bin/sh\nexit 101\n' >"$rfs/usr/sbin/policy-rc.d"
chmod 755 "$rfs/usr/sbin/policy-rc.d"
# The initrd that linux-image-amd64's install makes: only what finds and
# mounts the root disk (MODULES=list and a hook that names the modules),
# not Debian's MODULES=most, every storage and filesystem driver: 37 MB
# that TCG unpacked, and whose udev probed, at each of the lane's three
# boots.  (Files of no package, so that no conffile prompt can come.)
mkdir -p "$rfs/etc/initramfs-tools/conf.d" "$rfs/etc/initramfs-tools/hooks"
echo MODULES=list >"$rfs/etc/initramfs-tools/conf.d/wsem-lane.conf"
cat >"$rfs/etc/initramfs-tools/hooks/wsem-lane" <<'EOF'
#!/bin/sh
# The root disk of make check-distro's guest: virtio, ext4.
[ "$1" = prereqs ] && exit 0
. /usr/share/initramfs-tools/hook-functions
manual_add_modules virtio_pci virtio_blk ext4
EOF
chmod 755 "$rfs/etc/initramfs-tools/hooks/wsem-lane"
mount -t proc proc "$rfs/proc" && mounted="proc $mounted" &&
mount -t sysfs sysfs "$rfs/sys" && mounted="sys $mounted" &&
mount --bind /dev "$rfs/dev" && mounted="dev $mounted" &&
mount --bind /dev/pts "$rfs/dev/pts" && mounted="dev/pts $mounted" ||
	die "mounting /proc, /sys, /dev in the chroot failed"

log "distro-image: apt-get install" $pkgs
# shellcheck disable=SC2086 # a list
{
	in_root apt-get -q update &&
	in_root apt-get -q -y -o Dpkg::Use-Pty=0 --no-install-recommends \
		install $pkgs &&
	in_root apt-get -q -y -o Dpkg::Use-Pty=0 dist-upgrade &&
	in_root apt-get clean
} >>"$blog" 2>&1 </dev/null || fail "apt-get install"
in_root dpkg-query -W -f='${Package} ${Version}\n' >"$work/manifest"
cleanup
mounted=
rm -f "$rfs/usr/sbin/policy-rc.d"
t2=$(date +%s)

# The system: root on /dev/vda, no password on the console, a fixed name,
# a machine id of its own.
echo '/dev/vda / ext4 defaults,errors=remount-ro 0 1' >"$rfs/etc/fstab"
echo wsem-guest >"$rfs/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 wsem-guest\n' >"$rfs/etc/hosts"
in_root passwd -d root >>"$blog" 2>&1 || fail "passwd -d root"
rm -f "$rfs/etc/machine-id" "$rfs/var/lib/dbus/machine-id"
in_root systemd-machine-id-setup >>"$blog" 2>&1 ||
	fail "systemd-machine-id-setup"

# The lane's driver.  Type=simple: its start job ends at once, so lane.sh
# can wait for the boot to finish (systemctl is-system-running --wait)
# and then judge it.
cat >"$rfs/etc/systemd/system/wsem-lane.service" <<'EOF'
[Unit]
Description=make check-distro: the lane script from the 9p share "lane"
After=local-fs.target
ConditionVirtualization=vm

[Service]
Type=simple
ExecStart=/bin/sh -c 'modprobe -q 9pnet_virtio; mkdir -p /mnt/lane && mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 lane /mnt/lane || exit 0; exec /bin/bash /mnt/lane/lane.sh'
StandardOutput=journal+console
StandardError=journal+console

[Install]
WantedBy=multi-user.target
EOF
in_root systemctl enable wsem-lane.service >>"$blog" 2>&1 ||
	fail "systemctl enable wsem-lane.service"
# Two of podman's units that Debian starts at every boot, for containers
# with a restart policy or an auto-update label, which the lane never
# makes: under TCG they were the two slowest after the disk (ci48's
# blame: 15-17 s and 12-15 s of each of three boots), and lane.sh waits
# for the boot to end before it judges it.  Masked: the lane's podman
# runs, stops and removes its containers itself.
in_root systemctl mask podman-auto-update.service podman-restart.service \
	>>"$blog" 2>&1 || fail "systemctl mask podman-auto-update podman-restart"

# The kernel and initrd, for qemu -kernel/-initrd.
tmp=$dir.tmp
mkdir -p "$tmp"
krel=$(basename "$(readlink -f "$rfs/vmlinuz")")
krel=${krel#vmlinuz-}
[ -f "$rfs/boot/vmlinuz-$krel" ] && [ -f "$rfs/boot/initrd.img-$krel" ] ||
	die "no kernel or initrd in $rfs/boot"
cp "$rfs/boot/vmlinuz-$krel" "$tmp/vmlinuz"
cp "$rfs/boot/initrd.img-$krel" "$tmp/initrd.img"
echo "$krel" >"$tmp/kernel.release"
mv "$work/manifest" "$tmp/manifest"

log "distro-image: mkfs.ext4 -d ($SIZE, sparse) and qemu-img convert"
mkfs.ext4 -q -F -L wsem-root -d "$rfs" "$work/root.img" "$SIZE" \
	>>"$blog" 2>&1 || fail "mkfs.ext4"
qemu-img convert -O qcow2 "$work/root.img" "$tmp/root.qcow2" \
	>>"$blog" 2>&1 || fail "qemu-img convert"
t3=$(date +%s)

{
	echo "$((t3 - t0))s (debootstrap $((t1 - t0))s, apt $((t2 - t1))s," \
		"disk $((t3 - t2))s)"
	echo "$SUITE, kernel $krel, $(wc -l <"$tmp/manifest") packages"
	echo "recipe $RECIPE, key $key, built $(date -u +%Y-%m-%dT%H:%M:%SZ)"
} >"$tmp/build-time"
touch "$tmp/.done"
mv "$tmp" "$dir"
rm -rf "$work"
# One image a suite: those of another key (an older RECIPE or list) go,
# under the cache's lock (1.7 GB each).
cache_drop_others "$dir" "$root/$SUITE-"
log "distro-image: built in $(head -n 1 "$dir/build-time"): $dir"
echo "$dir"
