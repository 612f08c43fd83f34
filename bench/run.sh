#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make bench / make bench-host: run wsem-bench, keep its results, draw them.
#
# usage: run.sh vm [KVER]   boot one VM (Debian kernel KVER, default the
#                           newest 6.12) with the freshly built wsem.ko, run
#                           every scenario there, copy the results out into
#                           bench/: results.txt (the table), results.json,
#                           results.dat and results.png
#        run.sh host        the same on this machine, which must have
#                           /dev/wsem (as root with ./wsem.ko built, it is
#                           loaded for the run); results into build/bench-host/
# WSEM_BENCH_ARGS adds options for wsem-bench (e.g. "-t 0.5" halves the
# measuring times).  The binary must be built already (make bench does).
set -u -o pipefail

BENCH=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$BENCH")
BIN=$BENCH/wsem-bench
FILES="results.txt results.json results.dat"
mode=${1:-}
kver=${2:-}

log() { printf '%s\n' "$*" >&2; }
die() { log "bench: $*"; exit 1; }

[ -x "$BIN" ] || die "no $BIN: run make bench"

# gnuplot draws the plot; as root, install it if it is missing.
ensure_gnuplot() {
	command -v gnuplot >/dev/null && return 0
	if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
		log "bench: installing gnuplot-nox"
		export DEBIAN_FRONTEND=noninteractive
		apt-get install -y -q --no-install-recommends gnuplot-nox \
			</dev/null >&2 ||
		{ apt-get -q update </dev/null >&2 &&
		  apt-get install -y -q --no-install-recommends gnuplot-nox \
			</dev/null >&2; }
	fi
	command -v gnuplot >/dev/null
}

# draw DIR TITLE: DIR/results.png from DIR/results.dat.
draw() {
	if ! ensure_gnuplot; then
		log "bench: no gnuplot (apt-get install gnuplot-nox): no plot"
		return 0
	fi
	gnuplot -e "datafile='$1/results.dat'; outfile='$1/results.png'; title='$2'" \
		"$BENCH/plot.gp" || die "gnuplot failed"
	log "bench: plot in $1/results.png"
}

# The title of the plot: what ran where and when.
title_of() {
	sed -n '1s/^wsem-bench //p' "$1/results.txt"
}

# Other VMs on this machine would slow ours unevenly: wait (up to
# WSEM_BENCH_WAIT seconds, default 900) until none runs.
wait_quiet() {
	local waited=0 limit=${WSEM_BENCH_WAIT:-900} load
	# (The kernel keeps 15 characters of a command's name.)
	while pgrep -x qemu-system-x86 >/dev/null; do
		if [ "$waited" -ge "$limit" ]; then
			log "bench: other VMs still run: the figures will be disturbed"
			return 0
		fi
		[ "$waited" -eq 0 ] &&
			log "bench: waiting for other VMs on this machine to end"
		sleep 5
		waited=$((waited + 5))
	done
	load=$(cut -d' ' -f1 /proc/loadavg)
	if [ "${load%%.*}" -ge 2 ]; then
		log "bench: load average $load: other work on this machine" \
			"disturbs the figures"
	fi
}

run_vm() {
	local out=$BENCH st
	CONSOLE=$(mktemp)
	trap 'rm -f "$CONSOLE"' EXIT
	# In the guest: the table goes to a file, the progress to the console;
	# then each file is printed between markers.
	local cmd="mkdir -p /tmp/bench && wsem-bench -o /tmp/bench ${WSEM_BENCH_ARGS:-} >/tmp/bench/results.txt; st=\$?
for f in $FILES; do echo \"@@bench-file \$f\"; cat /tmp/bench/\$f; echo '@@bench-end'; done
exit \$st"
	wait_quiet
	WSEM_VM_BINS=$BIN "$ROOT/selftests/vm/run.sh" ${kver:+-k "$kver"} \
		-T 1200 -m cmd -c "$cmd" | tee "$CONSOLE" | grep --line-buffered '^# '
	st=${PIPESTATUS[0]}
	[ "$st" -eq 0 ] || die "the benchmark failed in the VM (status $st)"
	# Kernel messages that land inside a file are dropped.
	awk -v dir="$out" '
		/^@@bench-file / { f = dir "/" $2; printf "" > f; on = 1; next }
		/^@@bench-end$/ { on = 0; close(f); next }
		on && !/^\[ *[0-9]+\.[0-9]+\]/ { print > f }
	' "$CONSOLE"
	for f in $FILES; do
		[ -s "$out/$f" ] || die "no $f came out of the VM"
	done
	if command -v python3 >/dev/null; then
		python3 -m json.tool "$out/results.json" >/dev/null ||
			die "$out/results.json is not valid JSON"
	fi
	cat "$out/results.txt"
	draw "$out" "$(title_of "$out")"
	log "bench: results in $out/results.{txt,json,dat,png}"
}

run_host() {
	local out=$ROOT/build/bench-host loaded=
	if [ ! -e /dev/wsem ]; then
		if [ "$(id -u)" -ne 0 ] || [ ! -f "$ROOT/wsem.ko" ]; then
			die "no /dev/wsem: make module && sudo insmod wsem.ko"
		fi
		insmod "$ROOT/wsem.ko" || die "insmod $ROOT/wsem.ko failed"
		loaded=1
	fi
	mkdir -p "$out"
	# shellcheck disable=SC2086 # options
	"$BIN" -o "$out" ${WSEM_BENCH_ARGS:-} >"$out/results.txt"
	st=$?
	[ -n "$loaded" ] && rmmod wsem
	[ "$st" -eq 0 ] || die "wsem-bench failed (status $st)"
	cat "$out/results.txt"
	draw "$out" "$(title_of "$out")"
	log "bench: results in $out/results.{txt,json,dat,png}"
}

case $mode in
vm) run_vm ;;
host) run_host ;;
*) die "usage: run.sh vm [KVER] | run.sh host" ;;
esac
