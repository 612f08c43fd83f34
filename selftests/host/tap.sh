# SPDX-License-Identifier: GPL-2.0
#
# Sourced by the host tests: check NAME CMD... prints one TAP line, with
# the tail of a failing CMD's output as comments, and counts in $n and
# $failed.  The caller sets $T, a scratch directory of its own.
n=0
failed=0

check() {
	local name=$1
	shift
	n=$((n + 1))
	if "$@" >"$T/log" 2>&1; then
		echo "ok $n - $name"
	else
		echo "not ok $n - $name"
		tail -n 20 "$T/log" | sed 's/^/#  /'
		failed=$((failed + 1))
	fi
}
