# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Sourced by the bindings' ABI tests: ioc_archs DIR writes DIR/ARCH.txt,
# "WSEM_IOC_NAME VALUE" lines, for ARCH in generic (asm-generic: x86, arm,
# arm64, riscv, s390, ...), powerpc, mips, sparc, alpha and parisc: every
# WSEM_IOC_* of uapi/linux/wsem.h as the C compiler makes it with that
# architecture's <asm/ioctl.h>, taken from the newest
# /usr/src/linux-source-*.tar.xz (extracted once into build/ioc-headers).
# Returns 1, with a reason on stdout, when there is no kernel source.
ioc_archs() {
	local dir=$1 root tar hdrs a
	root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	hdrs=$root/build/ioc-headers
	tar=$(ls /usr/src/linux-source-*.tar.xz 2>/dev/null | sort -V | tail -1)
	if [ ! -f "$hdrs/.done" ]; then
		if [ -z "$tar" ]; then
			echo "no /usr/src/linux-source-*.tar.xz (apt-get install linux-source)"
			return 1
		fi
		rm -rf "$hdrs" && mkdir -p "$hdrs" &&
		tar -xJf "$tar" -C "$hdrs" --strip-components=1 --wildcards \
			'*/include/uapi/asm-generic/ioctl.h' \
			'*/arch/*/include/uapi/asm/ioctl.h' || return 1
		touch "$hdrs/.done"
	fi
	cat >"$dir/ioc.c" <<'EOC'
#include <stdio.h>
#include <linux/wsem.h>
#define P(x) printf("%s %llu\n", #x, (unsigned long long)(x))
int main(void)
{
	P(WSEM_IOC_OPEN); P(WSEM_IOC_REOPEN); P(WSEM_IOC_ACQUIRE);
	P(WSEM_IOC_RELEASE); P(WSEM_IOC_SET_CAPACITY); P(WSEM_IOC_STAT);
	P(WSEM_IOC_UNLINK); P(WSEM_IOC_LIST); P(WSEM_IOC_HOLDERS);
	P(WSEM_IOC_ASYNC); P(WSEM_IOC_WAIT_IDLE); P(WSEM_IOC_SET_LABEL);
	P(WSEM_IOC_LEND);
	P(WSEM_IOC_ACQUIRE_MANY);
	return 0;
}
EOC
	for a in generic powerpc mips sparc alpha parisc; do
		# <linux/ioctl.h> includes <asm/ioctl.h>: this one's, first.
		mkdir -p "$dir/inc-$a/asm" "$dir/inc-$a/asm-generic" || return 1
		cp "$hdrs/include/uapi/asm-generic/ioctl.h" \
			"$dir/inc-$a/asm-generic/" || return 1
		if [ $a = generic ]; then
			cp "$hdrs/include/uapi/asm-generic/ioctl.h" \
				"$dir/inc-$a/asm/" || return 1
		else
			cp "$hdrs/arch/$a/include/uapi/asm/ioctl.h" \
				"$dir/inc-$a/asm/" || return 1
		fi
		gcc -Wall -Werror -I"$dir/inc-$a" -I"$root/uapi" \
			-o "$dir/ioc-$a" "$dir/ioc.c" &&
		"$dir/ioc-$a" >"$dir/$a.txt" || return 1
	done
}
