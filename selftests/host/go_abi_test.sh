#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The Go binding's idea of the ABI against uapi/linux/wsem.h itself, in TAP:
# the C compiler prints the ioctl numbers, flags and struct sizes, and the
# Go test TestABI (in build/go/wsem-go.test) compares its own with them;
# then the host part of the Go tests (those needing /dev/wsem skip here).
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
	P(WSEM_IOC_UNLINK); P(WSEM_IOC_ASYNC);
	P(sizeof(struct wsem_open_args)); P(sizeof(struct wsem_acquire_args));
	P(sizeof(struct wsem_stat)); P(sizeof(struct wsem_unlink_args));
	P(WSEM_OPEN_CREAT); P(WSEM_OPEN_EXCL); P(WSEM_OPEN_ANON);
	P(WSEM_ACQUIRE_TRY); P(WSEM_ACQUIRE_ASYNC); P(WSEM_REOPEN_CLOEXEC);
	P(WSEM_ASYNC_CANCEL); P(WSEM_NAME_MAX); P(WSEM_CAPACITY_MAX);
	P(WSEM_FS_MAGIC);
	return 0;
}
EOC
echo "1..2"
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
# No /dev/wsem on a host that cannot load modules: those tests skip.
if (cd "$T" && "$BIN" -test.short >"$T/log" 2>&1); then
	echo "ok 2 - Go binding: go test on the host"
else
	echo "not ok 2 - Go binding: go test on the host"
	failed=1
	sed 's/^/# /' "$T/log"
fi
exit $failed
