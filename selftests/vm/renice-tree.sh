#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# usage: renice-tree.sh NICE PID
# Give PID and every process below it the niceness NICE, each parent
# before its children (a child forked meanwhile inherits the new
# niceness), and every thread of each: Linux's niceness is a thread's,
# and renice -p PID changes PID's main thread alone (QEMU's vCPU threads,
# the Go compiler's, would keep theirs).  Exits 1 if PID itself could not
# be reniced (gone, or a lower niceness without root).  make test's
# check-all.sh, and debian/build.sh for the make deb it waits for.
set -u

# renice_tree NICE PID
renice_tree() {
	local c t
	renice -n "$1" -p "$2" >/dev/null 2>&1 || return 1
	for t in "/proc/$2/task/"*; do
		renice -n "$1" -p "${t##*/}" >/dev/null 2>&1
	done
	# Each thread's children, from /proc (CONFIG_PROC_CHILDREN, which
	# Debian's kernels have), not pgrep: a clean Debian 12 chroot has
	# no procps, and reniced PID alone.
	for c in $(cat "/proc/$2/task/"*/children 2>/dev/null); do
		renice_tree "$1" "$c"
	done
	return 0
}

[ $# -eq 2 ] || { echo "usage: renice-tree.sh NICE PID" >&2; exit 2; }
renice_tree "$1" "$2"
