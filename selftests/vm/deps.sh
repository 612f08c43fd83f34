#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Install, with apt-get, whatever the build, the lint and the VM tests need
# and is missing.  Runs apt-get update only when something is to be
# installed.  Without root it only names what is missing.
set -u
# shellcheck source=selftests/vm/lib.sh
. "$(dirname "$0")/lib.sh"

# flex, bison, bc and libelf-dev build the debug kernel (debug-kernel.sh);
# bubblewrap goes into the guest for container_test; liburing-dev builds
# examples/uring_jobs; golang-go builds the Go binding; debhelper, dh-dkms,
# dkms, dh-python and lintian make deb; pip, setuptools and wheel for
# python_pip_test's offline "pip install"; debootstrap, qemu-utils and
# e2fsprogs build make check-distro's image; golang-etcd-server-dev (the
# etcd client), etcd-server and etcd-client for wsem-agent and fleet_test;
# clang for header_test's clang and clang++ half; man-db, groff-base,
# manpages, manpages-dev and systemd (sysctl.d(5), tmpfiles.d(5)) for
# man_test (the pages' warnings, and the system's pages their SEE ALSO
# names; a debootstrap tree has no systemd); libnss-wrapper for
# cli_host_test's owner=/group= names that only NSS knows; iproute2,
# whose ip mkinitramfs.sh copies into the guest for fleet_test's bridge and
# veth pairs (a Debian 12 install has it, a debootstrap tree not).  The 6.12
# kernels' headers are not installed (their packages depend on the
# kernel's image, which the host would then boot): guest-kernels.sh
# unpacks them, with the images, into the cache; pahole serves their
# kbuild as it serves 6.1's.
PKGS="build-essential pkg-config make gcc libc6-dev gcc-multilib binutils perl
python3 xz-utils gzip clang
cpio kmod busybox-static qemu-system-x86 sparse codespell
linux-headers-amd64 pahole
linux-source-6.1 linux-source-6.12 flex bison bc libelf-dev bubblewrap
liburing-dev golang-go debhelper dh-dkms dh-python dkms lintian dpkg-dev fakeroot
python3-pip python3-setuptools python3-wheel debootstrap qemu-utils e2fsprogs
golang-etcd-server-dev etcd-server etcd-client
man-db groff-base manpages manpages-dev systemd libnss-wrapper iproute2"

# make demo needs less: gcc and make for the module and the CLI, QEMU,
# busybox and cpio for the guest, and one guest kernel, 6.12, with its
# headers (pahole: their kbuild's BTF step).
if [ "${1:-}" = --demo ]; then
	PKGS="build-essential make gcc libc6-dev kmod xz-utils cpio
busybox-static qemu-system-x86 pahole"
	export WSEM_GUEST_KERNELS='6.12.*+deb12-amd64'
fi

# What the host boots, before anything is installed from this tree:
# selftests/host/boot_test.sh checks at the end of make test that it is
# the same.
bash "$(dirname "$0")/../host/boot_test.sh" --record

missing=
for p in $PKGS; do
	s=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)
	[ "$s" = installed ] || missing="$missing $p"
done
# The guests' kernels are not installed: guest-kernels.sh unpacks their
# images into the cache, so that nothing here changes how the host boots.
[ -z "$missing" ] && exec bash "$(dirname "$0")/guest-kernels.sh"

if [ "$(id -u)" -ne 0 ]; then
	echo "deps: missing packages:$missing" >&2
	echo "deps: as root: apt-get install$missing" >&2
	exit 1
fi

echo "deps: installing:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt_opts="-y -q -o Dpkg::Use-Pty=0 -o Dpkg::Options::=--force-confdef
	-o Dpkg::Options::=--force-confold --no-install-recommends"
apt-get -q update </dev/null || exit 1
# unknown_of PACKAGE...: those of them apt has no candidate for, with
# the options in APT.
unknown_of() {
	apt-cache "${APT[@]}" policy "$@" 2>/dev/null | awk -v want="$*" '
/^[^ ].*:$/ { p = substr($0, 1, length($0) - 1) }
/^  Candidate: / && $2 != "(none)" { has[p] = 1 }
END {
	n = split(want, w, " ")
	for (i = 1; i <= n; i++)
		if (!(w[i] in has))
			printf " %s", w[i]
}'
}

# A package that apt does not know fails the install with "Unable to
# locate package" among hundreds of lines: name them first, in one line.
# A tree made by debootstrap has only "bookworm main" in its sources,
# where Debian 12's installer adds bookworm-updates and bookworm-security:
# linux-source-6.12 is in bookworm-security.  What that has, its .deb is
# downloaded through private_apt's list (the machine's sources stay as
# they are) and installed with the rest, as apt installs ./NAME.deb.
# shellcheck disable=SC2086 # a list
unknown=$(unknown_of $missing)
debs=
if [ -n "$unknown" ] && private_apt; then
	# shellcheck disable=SC2086
	had=$(unknown_of $unknown)
	mkdir -p "$BUILD/apt/debs"
	for p in $unknown; do
		case " $had " in *" $p "*) continue ;; esac
		rm -f "$BUILD/apt/debs/${p}"_*.deb
		(cd "$BUILD/apt/debs" &&
		 apt-get "${APT[@]}" -q download "$p" </dev/null >/dev/null) ||
			continue
		debs="$debs $(ls "$BUILD/apt/debs/${p}"_*.deb)"
		missing=$(echo " $missing " | sed "s/ $p / /")
	done
	APT=()
	# shellcheck disable=SC2086
	unknown=$(unknown_of $missing)
fi
if [ -n "$unknown" ]; then
	echo "deps: not in this machine's apt sources, nor in bookworm-security:$unknown" >&2
	exit 1
fi
[ -n "$debs" ] && echo "deps: from bookworm-security, not in this machine's sources:$debs" >&2
# shellcheck disable=SC2086
apt-get install $apt_opts $missing $debs </dev/null || exit 1
exec bash "$(dirname "$0")/guest-kernels.sh"
