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
# measuring times); WSEM_BENCH_SCENARIOS=a,b runs only those scenarios
# (wsem-bench -s: uncontended, handoff, contention, fairness, scale,
# memory, massgrant, namespaces, longhold, idleherd, jobserver, nest,
# gang, gangfair, bigtree, shrink, pool, poolwait), and
# bench/results.* are then left alone: the results go to build/bench-part/.
# The binary must be built already (make bench does).
#
# Before/after (vm only): with WSEM_BENCH_BEFORE=REV (make bench BEFORE=REV)
# the module of git revision REV is built too, for the same kernel, and
# both go into the one VM; there the chosen scenarios (by default
# WSEM_BENCH_BA_SCENARIOS="uncontended,handoff,massgrant,namespaces,
# longhold,idleherd,jobserver", else WSEM_BENCH_SCENARIOS; a -s in
# WSEM_BENCH_ARGS wins) run with REV's module loaded, then, after rmmod
# and insmod, with the working tree's.  WSEM_BENCH_PASSES=N (default 1)
# repeats that pair N times and takes each figure's median.
# WSEM_BENCH_BEFORE_KO=KO takes a built module instead of REV.  The tables and the before/after
# comparison go to build/bench-ba/ (bench/results.* are left alone).  From
# REV a renamed twin is built too (module and device wsem_before), loaded
# beside the working tree's in its runs: scenario 1 then times batches of
# the two back to back, "wsem / before module, paired batches", a ratio
# that the drift of the machine's speed between runs does not reach.
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
	if ! gnuplot -e "datafile='$1/results.dat'; outfile='$1/results.png'; title='$2'" \
		"$BENCH/plot.gp"; then
		log "bench: gnuplot failed (not every scenario ran?): no plot"
		return 0
	fi
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

# The git revision measured ("dirty" when the module, uapi, userlib or
# bench differ from it), for -r.
revision() {
	local r
	r=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null) || { echo unknown; return; }
	git -C "$ROOT" diff --quiet HEAD -- Kbuild module uapi userlib bench \
		2>/dev/null || r="$r-dirty"
	echo "$r"
}

# How selftests/vm/run.sh runs the guest's CPUs (its -accel), for -a.
vm_accel() {
	sed -n 's/.*-accel \([a-z]*\).*/\1/p' "$ROOT/selftests/vm/run.sh" | head -n 1
}

run_vm() {
	local out=$BENCH st scen=${WSEM_BENCH_SCENARIOS:-}
	# A part of the scenarios does not replace the committed results.
	if [ -n "$scen" ]; then
		out=$ROOT/build/bench-part
		mkdir -p "$out"
	fi
	CONSOLE=$(mktemp)
	trap 'rm -f "$CONSOLE"' EXIT
	# In the guest: the table goes to a file, the progress to the console;
	# then each file is printed between markers.
	local cmd="mkdir -p /tmp/bench && wsem-bench -o /tmp/bench ${scen:+-s $scen} -r $(revision) -a $(vm_accel) ${WSEM_BENCH_ARGS:-} >/tmp/bench/results.txt; st=\$?
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

# The Debian kernel that selftests/vm/run.sh boots for $kver.
guest_kernel() {
	# shellcheck disable=SC2016 # expanded by the inner shell
	bash -c '. "$0"; if [ -n "$1" ]; then resolve_kernel "$1"; else default_kernel; fi' \
		"$ROOT/selftests/vm/lib.sh" "$kver"
}

# The headers that selftests/vm/lib.sh builds against for KVER $1.
kernel_headers() {
	# shellcheck disable=SC2016 # expanded by the inner shell
	bash -c '. "$0"; kdir_of "$1"' "$ROOT/selftests/vm/lib.sh" "$1"
}

# before_module KVER DIR: DIR/wsem-before.ko for KVER, built from the git
# revision WSEM_BENCH_BEFORE (with KVER's headers, as build_module builds
# the working tree's) or copied from WSEM_BENCH_BEFORE_KO; sets before_name.
before_module() {
	local k=$1 dir=$2 rev src magic
	if [ -n "${WSEM_BENCH_BEFORE_KO:-}" ]; then
		[ -f "$WSEM_BENCH_BEFORE_KO" ] || die "no $WSEM_BENCH_BEFORE_KO"
		magic=$(modinfo -F vermagic "$WSEM_BENCH_BEFORE_KO" 2>/dev/null)
		case $magic in
		"$k "*) ;;
		*) die "$WSEM_BENCH_BEFORE_KO is built for '${magic%% *}', not $k" ;;
		esac
		cp "$WSEM_BENCH_BEFORE_KO" "$dir/wsem-before.ko"
		before_name=$WSEM_BENCH_BEFORE_KO
		return 0
	fi
	rev=$(git -C "$ROOT" rev-parse --verify -q "$WSEM_BENCH_BEFORE^{commit}") ||
		die "no git revision $WSEM_BENCH_BEFORE"
	src=$ROOT/build/bench-ba/src-$k-$rev
	if [ ! -f "$src/wsem.ko" ]; then
		log "bench: building wsem.ko of $WSEM_BENCH_BEFORE ($rev) for $k"
		rm -rf "$src"
		mkdir -p "$src"
		git -C "$ROOT" archive "$rev" Kbuild module uapi | tar -x -C "$src" ||
			die "git archive $rev failed"
		make -s -C "$(kernel_headers "$k")" M="$src" modules >&2 ||
			die "building the module of $rev failed"
	fi
	cp "$src/wsem.ko" "$dir/wsem-before.ko"
	twin_module "$k" "$rev" "$src.twin" && cp "$src.twin/wsem_before.ko" "$dir/"
	before_name="$WSEM_BENCH_BEFORE ($(git -C "$ROOT" log -1 --format='%h %s' "$rev"))"
}

# twin_module KVER REV DIR: DIR/wsem_before.ko, REV's module renamed so
# that it loads beside the working tree's: module wsem_before, device
# /dev/wsem_before, file system type wsem_before.  Scenario 1 then times
# both in one run, in batches paired back to back.
twin_module() {
	local k=$1 rev=$2 twin=$3
	[ -f "$twin/wsem_before.ko" ] && return 0
	rm -rf "$twin"
	mkdir -p "$twin"
	git -C "$ROOT" archive "$rev" Kbuild module uapi | tar -x -C "$twin" ||
		return 1
	sed -i 's/"wsem"/"wsem_before"/; s/^#define TRACE_SYSTEM wsem$/&_before/' \
		"$twin"/module/*.[ch]
	# The objects' list by its new name, where the probes hang on it too.
	sed -i 's/^obj-m := wsem\.o/obj-m := wsem_before.o/; s/^wsem-y/wsem_before-y/
		s/\$(wsem-y)/$(wsem_before-y)/' "$twin/Kbuild"
	make -s -C "$(kernel_headers "$k")" M="$twin" modules >&2 ||
		{ log "bench: no twin of $rev (its build failed): no paired row"; return 1; }
}

# The guest's script for before/after: $passes times the "before" module,
# then the working tree's, each run into /tmp/bench/SIDE.PASS/; then every
# file between markers.
ba_guest_cmd() {
	local scen=${WSEM_BENCH_BA_SCENARIOS:-${WSEM_BENCH_SCENARIOS:-uncontended,handoff,massgrant,namespaces,longhold,idleherd,jobserver}}
	cat <<GUEST
st=0
p=1
while [ \$p -le $passes ]; do
	for side in before after; do
		ko=/lib/modules/wsem.ko
		[ \$side = before ] && ko=/bin/wsem-before.ko
		rmmod wsem
		insmod \$ko || { echo "# bench: insmod \$ko failed"; exit 1; }
		d=/tmp/bench/\$side.\$p
		mkdir -p \$d
		echo "# bench: pass \$p of $passes, \$side: \$ko"
		twin=
		if [ \$side = after ] && [ -f /bin/wsem_before.ko ]; then
			insmod /bin/wsem_before.ko && twin=1
		fi
		wsem-bench -o \$d -s $scen -a $(vm_accel) ${WSEM_BENCH_ARGS:-} >\$d/results.txt || st=\$?
		[ -n "\$twin" ] && rmmod wsem_before
	done
	p=\$((p + 1))
done
for f in /tmp/bench/*/*; do
	echo "@@bench-file \${f#/tmp/bench/}"; cat \$f; echo '@@bench-end'
done
exit \$st
GUEST
}

# compare DIR: each metric's median over the passes, before and after.
compare() {
	awk -F '\t' '
	function med(k, s,   n, i, j, t, a) {
		n = cnt[k, s]
		if (!n)
			return ""
		for (i = 1; i <= n; i++)
			a[i] = val[k, s, i]
		for (i = 2; i <= n; i++)
			for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
				t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
			}
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	function fmt(v) {
		if (v == "")
			return "-"
		if (v >= 100 || v <= -100)
			return sprintf("%.0f", v)
		return sprintf("%.3g", v)
	}
	FNR == 1 { side = FILENAME ~ /\/before\.[0-9]+\/metrics\.txt$/ ? "b" : "a" }
	$2 !~ /^-?[0-9.]+([eE][-+]?[0-9]+)?$/ { next }
	{
		if (!($1 in label)) { order[++n] = $1; label[$1] = $3 }
		val[$1, side, ++cnt[$1, side]] = $2 + 0
	}
	END {
		printf "%-58s %10s %10s %8s\n", "", "before", "after", "a / b"
		for (i = 1; i <= n; i++) {
			k = order[i]; b = med(k, "b"); a = med(k, "a")
			r = "-"
			if (b != "" && a != "" && b != 0)
				r = sprintf("%.2f", a / b)
			printf "%-58s %10s %10s %8s\n", label[k], fmt(b), fmt(a), r
		}
	}' "$1"/before.*/metrics.txt "$1"/after.*/metrics.txt
}

run_ba() {
	local out=$ROOT/build/bench-ba/last k st p side after_rev before_name= twin
	passes=${WSEM_BENCH_PASSES:-1}
	k=$(guest_kernel)
	[ -n "$k" ] || die "no installed kernel matches '${kver:-the default}'"
	rm -rf "$out"
	mkdir -p "$out"
	before_module "$k" "$out"
	CONSOLE=$(mktemp)
	trap 'rm -f "$CONSOLE"' EXIT
	wait_quiet
	twin=
	[ -f "$out/wsem_before.ko" ] && twin=$out/wsem_before.ko
	WSEM_VM_BINS="$BIN $out/wsem-before.ko $twin" "$ROOT/selftests/vm/run.sh" \
		-k "$k" -T $((600 + 900 * passes)) -m cmd -c "$(ba_guest_cmd)" |
		tee "$CONSOLE" | grep --line-buffered '^# '
	st=${PIPESTATUS[0]}
	[ "$st" -eq 0 ] || die "the benchmark failed in the VM (status $st)"
	for p in $(seq 1 "$passes"); do
		for side in before after; do
			mkdir -p "$out/$side.$p"
		done
	done
	awk -v dir="$out" '
		/^@@bench-file / { f = dir "/" $2; printf "" > f; on = 1; next }
		/^@@bench-end$/ { on = 0; close(f); next }
		on && !/^\[ *[0-9]+\.[0-9]+\]/ { print > f }
	' "$CONSOLE"
	for p in $(seq 1 "$passes"); do
		for side in before after; do
			[ -s "$out/$side.$p/metrics.txt" ] ||
				die "no $side.$p/metrics.txt came out of the VM"
		done
	done
	after_rev=$(git -C "$ROOT" log -1 --format='%h %s' HEAD)
	git -C "$ROOT" diff --quiet HEAD -- Kbuild module uapi ||
		after_rev="$after_rev, with uncommitted changes"
	{
		sed -n 1p "$out/after.1/results.txt"
		echo "before: $before_name"
		echo "after:  the working tree, $after_rev"
		echo "median of $passes pass(es), each before then after in one boot"
		echo
		compare "$out"
	} >"$out/compare.txt"
	cat "$out/after.$passes/results.txt"
	echo
	cat "$out/compare.txt"
	log "bench: before/after in $out/: compare.txt, {before,after}.N/results.*"
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
	"$BIN" -o "$out" ${WSEM_BENCH_SCENARIOS:+-s "$WSEM_BENCH_SCENARIOS"} \
		-r "$(revision)" ${WSEM_BENCH_ARGS:-} >"$out/results.txt"
	st=$?
	[ -n "$loaded" ] && rmmod wsem
	[ "$st" -eq 0 ] || die "wsem-bench failed (status $st)"
	cat "$out/results.txt"
	draw "$out" "$(title_of "$out")"
	log "bench: results in $out/results.{txt,json,dat,png}"
}

case $mode in
vm)
	if [ -n "${WSEM_BENCH_BEFORE:-}${WSEM_BENCH_BEFORE_KO:-}" ]; then
		run_ba
	else
		run_vm
	fi
	;;
host) run_host ;;
*) die "usage: run.sh vm [KVER] | run.sh host" ;;
esac
