#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The Go binding's idea of the ABI against uapi/linux/wsem.h itself, in TAP:
# the C compiler prints the ioctl numbers, flags and struct sizes, and the
# Go test TestABI (in build/go/wsem-go.test) compares its own with them;
# then every architecture's ioctl numbers (TestIOCArchFromC) against the
# C compiler's with that architecture's <asm/ioctl.h> (ioc_archs.sh); then
# the host part of the Go tests (those needing /dev/wsem skip here).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=$ROOT/build/go/wsem-go.test
if [ ! -x "$BIN" ]; then
	echo "1..0 # SKIP no $BIN: the Go binding was not built (golang-go)"
	exit 4
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

cat >"$T/abi.c" <<'EOC'
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
	P(sizeof(struct wsem_open_args)); P(sizeof(struct wsem_acquire_args));
	P(sizeof(struct wsem_stat)); P(sizeof(struct wsem_unlink_args));
	P(sizeof(struct wsem_list_args)); P(sizeof(struct wsem_holder));
	P(sizeof(struct wsem_holders_args)); P(sizeof(struct wsem_label_args));
	P(sizeof(struct wsem_lend_args)); P(WSEM_OPEN_LOANS);
	P(WSEM_LEND_END_HOLDERS); P(WSEM_LEND_DEADLINE);
	P(WSEM_HOLDER_WAITING); P(WSEM_LABEL_MAX); P(WSEM_CGROUP_MAX);
	P(WSEM_OPEN_CREAT); P(WSEM_OPEN_EXCL); P(WSEM_OPEN_ANON);
	P(WSEM_ACQUIRE_TRY); P(WSEM_ACQUIRE_ASYNC); P(WSEM_REOPEN_CLOEXEC);
	P(WSEM_ASYNC_CANCEL); P(WSEM_NAME_MAX); P(WSEM_CAPACITY_MAX);
	P(WSEM_FS_MAGIC);
	P(WSEM_IOC_ACQUIRE_MANY); P(sizeof(struct wsem_many_entry));
	P(sizeof(struct wsem_many_args)); P(WSEM_HOLDER_CHILD);
	P(WSEM_OPEN_CHILD); P(WSEM_DEPTH_MAX); P(WSEM_MANY_MAX);
	P(sizeof(struct wsem_counters)); P(WSEM_COUNTERS_SIZE_VER0);
	P(WSEM_COUNTERS_GONE); P(sizeof(struct wsem_tree_counters));
	P(WSEM_TREE_COUNTERS_SIZE_VER0); P(WSEM_MMAP_TREE);
	P(WSEM_TREE_WAITING); P(WSEM_TREE_OVER);
	return 0;
}
EOC
echo "1..3"
failed=0
if gcc -I"$ROOT/uapi" -o "$T/abi" "$T/abi.c" >"$T/log" 2>&1 &&
	"$T/abi" >"$T/abi.txt" &&
	WSEM_GO_ABI=$T/abi.txt "$BIN" -test.run '^TestABI$' -test.v \
		>>"$T/log" 2>&1; then
	echo "ok 1 - Go binding: ioctl numbers, flags and sizes match wsem.h"
else
	echo "not ok 1 - Go binding: ioctl numbers, flags and sizes match wsem.h"
	failed=1
	sed 's/^/# /' "$T/log"
fi
. "$ROOT/selftests/host/ioc_archs.sh"
mkdir "$T/arch"
if ! why=$(ioc_archs "$T/arch" 2>&1); then
	echo "ok 2 - Go binding: each architecture's ioctl numbers # SKIP $why"
else
	# Each kernel architecture under a GOARCH that has its encoding.
	for m in generic:arm64 powerpc:ppc64le mips:mips64le sparc:sparc64 \
		alpha:alpha parisc:hppa; do
		[ "${m%%:*}" = "${m#*:}" ] ||
			mv "$T/arch/${m%%:*}.txt" "$T/arch/${m#*:}.txt"
	done
	rm -f "$T/arch/ioc.c" "$T/arch/ioc-"*
	if WSEM_GO_IOC_DIR=$T/arch "$BIN" -test.run '^TestIOCArch' -test.v \
		>"$T/log" 2>&1; then
		echo "ok 2 - Go binding: each architecture's ioctl numbers match wsem.h with its <asm/ioctl.h>"
	else
		echo "not ok 2 - Go binding: each architecture's ioctl numbers match wsem.h with its <asm/ioctl.h>"
		failed=1
		sed 's/^/# /' "$T/log"
	fi
fi
# No /dev/wsem on a host that cannot load modules: those tests skip.
if (cd "$T" && "$BIN" -test.short >"$T/log" 2>&1); then
	echo "ok 3 - Go binding: go test on the host"
else
	echo "not ok 3 - Go binding: go test on the host"
	failed=1
	sed 's/^/# /' "$T/log"
fi
exit $failed
