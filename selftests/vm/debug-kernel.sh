#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The debug kernel of `make check-debug`: Debian sid's linux-source-7.2,
# `make tinyconfig` plus debug.config (lockdep, KASAN, kmemleak, UBSAN,
# ...), built by sid's own gcc inside the sid chroot of chroot.sh (which
# holds the source and the build's tools; it is built first if it is not
# cached, or waited for if it is being built), once per machine and cached
# outside the source tree.
#
# usage: debug-kernel.sh [-f | -n]
#   -f  build again even if cached
#   -n  build nothing: print the directory and succeed if it is cached
# Environment: DEBUG_KERNEL_NICE, a niceness for the kernel's build once
# the chroot is there (make test's background build: 19).
#
# Prints the cache directory on stdout; in it:
#   bzImage      the kernel
#   build/       the tree for out-of-tree modules, to be used in the sid
#                chroot (its host programs are linked against sid's libc):
#                CHROOT_SRV=DIR/build in_chroot CHROOT MOD make -C /srv M=/mnt
#   config       its .config
#   build-time   how long the build took (seconds), and what
# The cache key is a hash of debug.config, the chroot's linux-source-7.2
# package version, the chroot's compiler and this script's RECIPE, so any of
# them changing builds a new kernel.  Cache root: WSEM_DEBUG_CACHE, else
# /var/cache/wsem-debug-kernel when writable, else ~/.cache/wsem-debug-kernel.
set -u -o pipefail
. "$(dirname "$0")/lib.sh"

# Bump when the way the kernel is built changes.
RECIPE=2
KVERSION=7.2
RELEASE=sid
FRAGMENT=$VMDIR/debug.config

force= only_cached=
while getopts fn opt; do
	case $opt in
	f) force=1 ;;
	n) only_cached=-n ;;
	*) exit 2 ;;
	esac
done

# The chroot: cached, built by another (check.sh's background build: its
# lock is waited for), or built here.  With -n, only a cached one.
if ! cdir=$(bash "$VMDIR/chroot.sh" $only_cached "$RELEASE") ||
   [ -z "$cdir" ]; then
	[ -n "$only_cached" ] && exit 1
	die "no $RELEASE chroot (selftests/vm/chroot.sh $RELEASE)"
fi
TARBALL=$cdir/root/usr/src/linux-source-$KVERSION.tar.xz
[ -f "$TARBALL" ] ||
	die "no ${TARBALL#"$cdir/"} in the $RELEASE chroot (chroot.sh's packages)"
pkgver=$(awk -v p="linux-source-$KVERSION" '$1 == p { print $2 }' \
	"$cdir/manifest")
[ -n "$pkgver" ] || pkgver=$(stat -c %s-%Y "$TARBALL")
cc=$(cat "$cdir/gcc")
key=$( {
	echo "recipe $RECIPE"
	echo "linux-source-$KVERSION $pkgver"
	echo "$cc"
	cat "$FRAGMENT"
} | sha256sum | cut -c1-16)

root=$(cache_root wsem-debug-kernel "${WSEM_DEBUG_CACHE:-}")
dir=$root/$KVERSION-$key
if [ -n "$only_cached" ]; then
	[ -f "$dir/.done" ] || exit 1
	echo "$dir"
	exit 0
fi

cache_take "$root" "$dir" debug-kernel "$force"

[ -n "${DEBUG_KERNEL_NICE:-}" ] && renice -n "$DEBUG_KERNEL_NICE" $$ >/dev/null
work=$dir.work
rm -rf "$work" "$dir"
mkdir -p "$work"
src=$work/linux-source-$KVERSION
blog=$work/build.log
jobs=$(($(nproc) + 1))
# kmake ARGS...: make in the kernel source, in the chroot (the work
# directory is its /mnt).
kmake() {
	in_chroot "$cdir" "$work" make -C "/mnt/linux-source-$KVERSION" \
		ARCH=x86_64 "$@"
}
# fail WHAT: the end of the build log, then give up (the work tree stays).
fail() {
	tail -n 40 "$blog" >&2
	die "$1 failed (log: $blog)"
}

t0=$(date +%s)
log "debug-kernel: extracting $TARBALL"
tar -xJf "$TARBALL" -C "$work" || die "extracting $TARBALL failed"
t1=$(date +%s)

log "debug-kernel: tinyconfig + ${FRAGMENT#"$ROOT"/}"
{
	cp "$FRAGMENT" "$work/debug.config" &&
	kmake tinyconfig &&
	in_chroot "$cdir" "$work" sh -c 'cd "$1" && ARCH=x86_64 \
		scripts/kconfig/merge_config.sh -m .config /mnt/debug.config' \
		sh "/mnt/linux-source-$KVERSION" &&
	kmake olddefconfig
} >"$blog" 2>&1 || fail "configuring"

# Every line of the fragment must hold: Kconfig drops what it cannot
# have (a missing dependency) without a word.
bad=
while IFS= read -r line; do
	case $line in
	CONFIG_*=*)
		grep -qxF "$line" "$src/.config" || bad="$bad ${line%%=*}"
		;;
	'# CONFIG_'*' is not set')
		opt=${line#\# }
		opt=${opt%% *}
		grep -q "^$opt=" "$src/.config" && bad="$bad $opt(set)"
		;;
	esac
done <"$FRAGMENT"
[ -z "$bad" ] || die "the .config does not have:$bad"

log "debug-kernel: building with $jobs jobs, $cc (log: $blog)"
kmake -j"$jobs" bzImage modules >>"$blog" 2>&1 || fail "the kernel build"
t2=$(date +%s)

# The tree out-of-tree modules build against, as Debian's headers
# packages make it.
tmp=$dir.tmp
rm -rf "$tmp" "$work/extmod"
mkdir -p "$tmp"
in_chroot "$cdir" "$work" sh -c 'cd "$1" && srctree=. SRCARCH=x86 CC=gcc \
	HOSTCC=gcc MAKE=make sh scripts/package/install-extmod-build \
	/mnt/extmod' sh "/mnt/linux-source-$KVERSION" >>"$blog" 2>&1 ||
	fail "installing the module build tree"
mv "$work/extmod" "$tmp/build" || die "moving the module build tree"
cp "$src/.config" "$tmp/build/.config"
cp "$src/.config" "$tmp/config"
cp "$src/System.map" "$tmp/build/System.map"
cp "$src/arch/x86/boot/bzImage" "$tmp/bzImage"

# A module of nothing proves the tree builds and links modules.
probe=$work/probe
mkdir -p "$probe"
echo 'obj-m := probe.o' >"$probe/Kbuild"
printf '%s\n' '#include <linux/module.h>' 'MODULE_LICENSE("GPL");' \
	>"$probe/probe.c"
if ! CHROOT_SRV=$tmp/build in_chroot "$cdir" "$probe" make -C /srv M=/mnt \
	modules >>"$blog" 2>&1 ||
   [ ! -f "$probe/probe.ko" ]; then
	fail "building a module against the tree"
fi

{
	echo "$((t2 - t0))s (extract $((t1 - t0))s, configure and build" \
		"$((t2 - t1))s with $jobs jobs on $(nproc) CPUs)"
	echo "linux-source-$KVERSION $pkgver, $cc, in $cdir"
	echo "recipe $RECIPE, built $(date -u +%Y-%m-%dT%H:%M:%SZ)"
} >"$tmp/build-time"
touch "$tmp/.done"
mv "$tmp" "$dir"
rm -rf "$work"
log "debug-kernel: built in $(head -n 1 "$dir/build-time"): $dir"
echo "$dir"
