#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The tests of make check that need no guest: selftests/host/*_test.sh
# (the install layout, the packages and DKMS, the summary's TAP plans, the
# shell completion...), each framed as a program so that summary.awk
# checks its exit status and plan as it does in a guest, then lint.sh
# (unless NO_LINT=1).  Their TAP goes to $BUILD/hosttests/*.tap and
# $BUILD/lint.tap.
#
# check.sh runs this first, with -n: no summary of its own, check.sh's
# counts them.  make test (check-all.sh) runs it without -n at the lowest
# priority, from the moment make check has built the userspace and its
# modules, beside make check's guests and then check-debug and
# check-distro; it ends with
# its own summary line ("lane host: ...", then "N passed, N failed").
set -u -o pipefail
. "$(dirname "$0")/lib.sh"

summary=1
[ "${1:-}" = -n ] && summary=

take_check_lock
dir=$BUILD/hosttests
rm -rf "$dir"
mkdir -p "$dir"
inputs=()

stage "host tests"
for t in "$ROOT"/selftests/host/*_test.sh; do
	[ -f "$t" ] || continue
	name=${t##*/}
	hs=$(date +%s)
	{
		echo "# wsem-vm: begin $name"
		children_cpu c0
		bash "$t" 2>&1
		st=$?
		children_cpu c1
		echo "# wsem-vm: end $name exit=$st time=$(($(date +%s) - hs)) cpu=$(((c1 - c0) / CLK_TCK))"
	} | tee "$dir/$name.tap"
	inputs+=(label=host "$dir/$name.tap")
done
if [ -z "${NO_LINT:-}" ]; then
	stage "lint"
	bash "$VMDIR/lint.sh"
	inputs+=(label=- "$BUILD/lint.tap")
fi
[ -n "$summary" ] || exit 0
stage "summary"
awk -v expected="$EXPECTED_SKIPS" -f "$VMDIR/summary.awk" "${inputs[@]}"
