#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make bench-jobserver: three builds at once of FILES generated C files
# each (the compiler proper, Debian 12's cc1 -O2, one job per file), in one
# VM (the newest 6.12 kernel, or KVER), four ways:
#
#   wsem      a host limit of C = the guest's CPUs, one semaphore, each
#             build "wsem run lim --jobserver=pipe -- make" (make 4.3)
#   pipe      make's own jobserver pipe, -jC, shared by the three builds
#             as sub-makes of one parent make: what a plain pipe can do
#   -jC each  three makes at once, each -jC alone: 3C jobs on C CPUs
#   serial    the three -jC builds one after another
#
# For each: the wall time, the CPU time the guest spent (user + system of
# all CPUs, from /proc/stat), the CPU time charged to the builds' own
# processes (reaped children's user + system), the most compilers that ran
# at once, and the wall and CPU time as ratios to wsem's.  The ways run in
# a rotated order, one more each run.  Under TCG a guest's CPU second is a
# second its vCPU thread ran or waited for the host, so the CPU column is
# only as clean as the host is quiet.  Prints medians and each run; results
# in build/bench-jobserver/results.txt.
#
# usage: jobserver.sh [KVER]        (FILES=N, default 200; RUNS=N, default 1)
set -u -o pipefail

BENCH=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$BENCH")
OUT=$ROOT/build/bench-jobserver
kver=${1:-}
files=${FILES:-200}
runs=${RUNS:-1}

log() { printf '%s\n' "$*" >&2; }
die() { log "bench-jobserver: $*"; exit 1; }

cc1=$(gcc -print-prog-name=cc1 2>/dev/null)
[ -x "$cc1" ] || die "no cc1 (apt-get install gcc)"
mk=$(command -v make) || die "no make"
mkdir -p "$OUT"

# The guest's part, run by /init (sh) after the module is loaded.
guest=$(cat <<'EOT'
set -u
C=$(nproc)
W=/tmp/jsbench
mkdir -p $W && cd $W || exit 1
# gen DIR: FILES C files of a few loops each, and a Makefile that compiles
# each one alone, logging "+"/"-" around it (for the most at once).
gen() {
	mkdir -p "$1"
	i=0
	while [ $i -lt $FILES ]; do
		{
			f=0
			while [ $f -lt 4 ]; do
				printf 'int f%d_%d(int *a, int n)\n{\n' $i $f
				printf '\tint s = %d;\n\tfor (int k = 0; k < n; k++)\n' $f
				printf '\t\ts += a[k] * (k ^ %d) + (s >> 3);\n' $i
				printf '\treturn s;\n}\n'
				f=$((f + 1))
			done
		} >"$1/f$i.c"
		i=$((i + 1))
	done
	cat >"$1/Makefile" <<'EOM'
SRC := $(wildcard *.c)
all: $(SRC:.c=.s)
%.s: %.c
	@echo + >>$(LOG); cc1 -quiet -ffreestanding -O2 $< -o $@; echo - >>$(LOG)
EOM
}
for b in b1 b2 b3; do gen $b; done
printf 'all: b1 b2 b3\nb1 b2 b3:\n\t@$(MAKE) -s -C $@ LOG=$(LOG)\n.PHONY: all b1 b2 b3\n' \
	>top.mk
wsem create lim $C --mode 0666 || exit 1
mount -t wsem wsem /sys/fs/wsem 2>/dev/null

busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 }' /proc/stat; }
# reaped: the user + system ticks of this shell's reaped children, and so
# of every process of the builds (each parent reaps its own and adds them).
reaped() { awk '{ print $16 + $17 }' /proc/$$/stat; }
now() { cut -d' ' -f1 /proc/uptime; }
most() { awk '$1 == "+" { c++; if (c > m) m = c } $1 == "-" { c-- } END { print m + 0 }' log; }

# way NAME: run the three builds as NAME says; one line of figures.
way() {
	rm -f b*/*.s
	: >log
	t0=$(now)
	c0=$(busy)
	r0=$(reaped)
	case $1 in
	wsem)
		for b in b1 b2 b3; do
			wsem run lim --jobserver=pipe -- make -s -C $b LOG=$W/log &
		done
		wait ;;
	pipe) make -s -f top.mk -j$C LOG=$W/log ;;
	each)
		for b in b1 b2 b3; do make -s -C $b -j$C LOG=$W/log & done
		wait ;;
	serial)
		for b in b1 b2 b3; do make -s -C $b -j$C LOG=$W/log; done ;;
	esac
	t1=$(now)
	c1=$(busy)
	r1=$(reaped)
	n=$(ls b*/*.s | wc -l)
	[ "$n" -eq $((3 * FILES)) ] || echo "# $1: $n of $((3 * FILES)) built"
	echo "@@way $1 $(echo "$t1 - $t0" | bc) $((c1 - c0)) $(most) $(wsem stat lim --json | sed -n 's/.*"used":\([0-9]*\).*/\1/p') $((r1 - r0))"
}
echo "# $C CPUs, $FILES files per build, $RUNS runs"
# Run r starts with way r mod 4, so that no way always runs first (on a
# cold page cache) or always after the same one.
set -- wsem pipe each serial
r=0
while [ $r -lt $RUNS ]; do
	for w in "$@"; do way $w; done
	set -- "$2" "$3" "$4" "$1"
	r=$((r + 1))
done
EOT
)

cmd="FILES=$files; RUNS=$runs; export FILES RUNS
$guest"
log "bench-jobserver: $files files per build, $runs run(s); booting the VM"
WSEM_VM_BINS="$cc1 $mk" "$ROOT/selftests/vm/run.sh" ${kver:+-k "$kver"} \
	-T 3000 -m cmd -c "$cmd" >"$OUT/console.txt" 2>&1 ||
	die "the VM failed: $OUT/console.txt"
hz=$(getconf CLK_TCK)
# One row per way: the medians over the runs of the wall seconds, of the
# guest's busy CPU seconds and of the CPU seconds the builds' processes
# were charged; then every run's own figures.
awk -v hz="$hz" '
	/^@@way / { k = $2; i = ++n[k]; w[k, i] = $3; c[k, i] = $4 / hz
		    p[k, i] = $7 / hz; if ($5 > m[k]) m[k] = $5; u[k] = $6
		    runs = runs sprintf("%-8s %8.1f %8.1f %8.1f %3d\n", k, $3,
					$4 / hz, $7 / hz, $5) }
	/^# [0-9]+ CPUs/ { head = substr($0, 3) }
	function med(a, k, cnt,   i, j, t, v) {
		for (i = 1; i <= cnt; i++) v[i] = a[k, i]
		for (i = 1; i <= cnt; i++) for (j = i + 1; j <= cnt; j++)
			if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
		return v[int((cnt + 1) / 2)]
	}
	END {
		print "jobserver bench: " head "; medians"
		printf "%-8s %8s %8s %8s %7s %9s %8s %s\n", "way", "wall s",
		       "CPU s", "jobs s", "at once", "wall/wsem", "CPU/wsem",
		       "used after"
		split("wsem pipe each serial", ways, " ")
		bw = med(w, "wsem", n["wsem"]); bc = med(c, "wsem", n["wsem"])
		for (i = 1; i <= 4; i++) {
			k = ways[i]
			if (!n[k]) continue
			ww = med(w, k, n[k]); cc = med(c, k, n[k])
			printf "%-8s %8.1f %8.1f %8.1f %7d %9.2f %8.2f %s\n", k,
			       ww, cc, med(p, k, n[k]), m[k], ww / bw, cc / bc,
			       u[k]
		}
		printf "\neach run, in the order run (wall, CPU, jobs, at once):\n%s",
		       runs
	}' "$OUT/console.txt" | tee "$OUT/results.txt"
grep -q '^wsem ' "$OUT/results.txt" || die "no figures: $OUT/console.txt"
