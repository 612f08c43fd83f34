#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# in_chroot (selftests/vm/lib.sh), the way make check, check-debug and
# deb_test.sh enter a release chroot, on a machine whose / is not a mount
# point: make test inside a builder's chroot.  The builder's chroot is
# made here: a plain directory on a tmpfs whose mounts are shared (as
# systemd makes /), with this machine's /usr, /etc and /dev bound in,
# /proc mounted and this tree on /wsem, entered with chroot; the release
# chroot in it is busybox-static.  Everything happens in a mount
# namespace of this test's own.  Run where / is already not a mount point
# (make test in a builder's chroot), it tests there as it is.  Root only;
# skips without busybox.
# TAP on stdout.
set -u -o pipefail

# The part that runs inside the builder's chroot: inside ROOT REL TMP.
if [ "${1:-}" = inside ]; then
	ROOT=$2 rel=$3 T=$4
	mkdir -p "$T"
	# shellcheck source=selftests/host/tap.sh
	. "$ROOT/selftests/host/tap.sh"
	# shellcheck source=selftests/vm/lib.sh
	. "$ROOT/selftests/vm/lib.sh"
	echo "1..6"
	check "/ is not a mount point here: unshare --propagation private fails" \
		sh -c '! unshare --mount --propagation private true'
	check "preflight: nothing missing" preflight
	mkdir -p "$T/src1" "$T/src2"
	echo one >"$T/src1/file"
	echo two >"$T/src2/file"
	in_chroot "$rel" "$T/src1" sh -c \
		'cat /mnt/file; cat /proc/self/comm; ls /marker' >"$T/out" 2>&1
	check "in_chroot: CMD in the release chroot, SRC on /mnt, /proc mounted" \
		diff -u - "$T/out" <<-EOF
		one
		cat
		/marker
		EOF
	in_chroot "$rel" "$T/src1" sh -c 'exit 7' 2>"$T/err"
	st=$?
	check "in_chroot: CMD's exit status (7: $st)" [ "$st" -eq 7 ]
	# Four at once, ten times, each with its own SRC: their binds and
	# unmounts must not reach one another's namespaces.
	bad=0
	for round in 1 2 3 4 5 6 7 8 9 10; do
		for i in 1 2 3 4; do
			s=$((i % 2 + 1))
			(
				want=$(cat "$T/src$s/file")
				in_chroot "$rel" "$T/src$s" sh -c \
					"sleep 0.$(((round * i) % 5)); [ \"\$(cat /mnt/file)\" = $want ]" ||
					echo "round $round: call $i failed" >>"$T/bad"
			) 2>>"$T/bad" &
		done
		wait
	done
	[ -s "$T/bad" ] && bad=1
	check "in_chroot: 4 at once, 10 rounds: each saw its own /mnt" \
		sh -c "[ $bad -eq 0 ] || { cat '$T/bad'; exit 1; }"
	check "in_chroot: nothing stays mounted in the release chroot" \
		sh -c "! grep -F ' $rel/root' /proc/self/mountinfo"
	exit $((failed > 0))
fi

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [ "$(id -u)" -ne 0 ]; then
	echo "1..0 # SKIP needs root (mount, chroot)"
	exit 4
fi
bb=$(command -v busybox) || {
	echo "1..0 # SKIP no busybox (deps.sh installs busybox-static)"
	exit 4
}
T=$(mktemp -d /tmp/in_chroot_test.XXXXXX) || exit 1
trap 'rm -rf "$T"' EXIT

# The release chroot.
r=$T/rel/root
mkdir -p "$r/bin" "$r/proc" "$r/mnt" "$r/srv" "$r/usr"
cp "$bb" "$r/bin/busybox" && ln -s ../bin "$r/usr/bin" &&
	ln -s ../bin "$r/usr/sbin" && ln -s bin "$r/sbin" || exit 1
for a in sh cat ls sleep env; do
	ln -s busybox "$r/bin/$a"
done
: >"$r/marker"

# Already where / is not a mount point (make test in a builder's
# chroot): the test runs here, as it is.
if ! unshare --mount --propagation private true 2>/dev/null; then
	bash "$0" inside "$ROOT" "$T/rel" "$T/t"
	exit
fi

# shellcheck disable=SC2016 # expanded by that bash
unshare --mount --propagation private bash -c '
	T=$1 ROOT=$2
	m=$T/m
	mkdir -p "$m"
	mount -t tmpfs tmpfs "$m" && mount --make-shared "$m" || exit 1
	d=$m/builder
	mkdir -p "$d/usr" "$d/etc" "$d/dev" "$d/proc" "$d/wsem" "$d/tmp"
	for l in bin sbin lib lib32 lib64; do
		if [ -L "/$l" ]; then
			ln -s "$(readlink "/$l")" "$d/$l"
		elif [ -d "/$l" ]; then
			mkdir "$d/$l" && mount --bind "/$l" "$d/$l" || exit 1
		fi
	done
	mount --bind /usr "$d/usr" && mount --bind /etc "$d/etc" &&
		mount --rbind /dev "$d/dev" && mount -t proc proc "$d/proc" &&
		mount --bind "$ROOT" "$d/wsem" &&
		cp -a "$T/rel" "$d/tmp/rel" || exit 1
	exec chroot "$d" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		LC_ALL=C.UTF-8 bash /wsem/selftests/host/in_chroot_test.sh \
		inside /wsem /tmp/rel /tmp/t
' sh "$T" "$ROOT"
