#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make check-host: the VM's tests on this machine, which must be able to load
# modules (run as root): insmod ./wsem.ko, run the selftests and the
# harness's checks, rmmod.  A wsem already loaded is unloaded first (it must
# be unused) and loaded again afterwards.  Ends with "N passed, N failed".
set -u -o pipefail
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" -eq 0 ] || die "make check-host needs root (insmod, rmmod, other uids)"
ko=${WSEM_KO:-$ROOT/wsem.ko}
[ -f "$ko" ] || die "no $ko: make module first"

reload=
if [ -d /sys/module/wsem ]; then
	reload=$(modinfo -n wsem 2>/dev/null)
	[ -n "$reload" ] || reload=$ko
	rmmod wsem || die "wsem is loaded and in use; close its handles first"
	log "check-host: unloaded wsem; it is loaded again afterwards"
fi

mkdir -p "$BUILD"
logf=$BUILD/check-host.log
# The wsem CLI and the tests on PATH, as in the VM.
PATH=$ROOT/userlib:$ROOT/selftests:$PATH \
WSEM_KO=$ko SELFTESTS=$ROOT/selftests TESTS="$(list_tests | tr '\n' ' ')" \
	sh "$VMDIR/runtests.sh" 2>&1 | tee "$logf"
echo
if [ -n "$reload" ] && [ ! -d /sys/module/wsem ]; then
	insmod "$reload" || log "check-host: could not load $reload again"
fi
awk -f "$VMDIR/summary.awk" label=host "$logf"
