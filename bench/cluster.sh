#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make bench-cluster: a cluster limit on etcd (wsem-agent) measured in one
# VM (the newest 6.12 kernel, or KVER): one etcd member on the guest's
# loopback, three simulated hosts (each an IPC namespace with its
# semaphore and its agent), and bench/cluster/wsem-cluster-bench; the
# guest's part is bench/cluster-guest.sh, which says what runs there and
# in what order.  Prints the table and writes it to
# build/bench-cluster/results.txt (the guest's console beside it, in
# console.txt).  About 4 minutes on 2 CPUs.
#
# usage: cluster.sh [KVER]
#        cluster.sh --summary   the table again from build/bench-cluster/raw.txt
# WSEM_BC_PHASE=S (default 10): the seconds of each phase of the job
# script; WSEM_BC_TRIES=N (default 30): acquires that get a share from etcd.
# WSEM_BENCH_WAIT=S (default 600): how long to wait for other VMs on this
# machine to end first (0: do not wait).
# WSEM_BC_SCALE="N...": the scale scenario instead of the above (run_scale):
# N simulated hosts on a 3-member etcd, today's agent beside the one
# before the kept view, for each N; the table in
# build/bench-cluster/scale-results.txt.
# WSEM_BC_SCALE_NATIVE=1 (with WSEM_BC_SCALE): the scale scenario on this
# machine, not in a guest (run_scale_native): as root, in a network
# namespace of its own, at nice 19.
set -u -o pipefail

BENCH=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$BENCH")
OUT=$ROOT/build/bench-cluster
BIN=$BENCH/cluster/wsem-cluster-bench
kver=${1:-}
phase=${WSEM_BC_PHASE:-10}
tries=${WSEM_BC_TRIES:-30}

log() { printf '%s\n' "$*" >&2; }
die() { log "bench-cluster: $*"; exit 1; }

# wait_vms: other VMs on this machine slow ours: wait for them (as
# bench/run.sh).  Sets others (how many still ran), load and rev, for the
# summary.
wait_vms() {
	others=0
	waited=0
	while pgrep -x qemu-system-x86 >/dev/null; do
		if [ "$waited" -ge "${WSEM_BENCH_WAIT:-600}" ]; then
			others=$(pgrep -x qemu-system-x86 | wc -l)
			log "bench-cluster: $others other VM(s) still run: the figures" \
				"will be disturbed"
			break
		fi
		[ "$waited" -eq 0 ] && log "bench-cluster: waiting for other VMs to end"
		sleep 5
		waited=$((waited + 5))
	done
	load=$(cut -d' ' -f1 /proc/loadavg)

	rev=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
	git -C "$ROOT" diff --quiet HEAD -- Kbuild module uapi userlib agent bench \
		2>/dev/null || rev="$rev-dirty"
}

# scale_raw: scale-raw.txt: the "@@" lines of scale-console.txt and the
# host's (wait_vms's).
scale_raw() {
	{
		grep -a '^@@' "$OUT/scale-console.txt"
		echo "@@meta date $(date -u '+%Y-%m-%d_%H:%M_UTC')"
		echo "@@meta rev $rev"
		echo "@@meta old $(cat "$OUT/scale/old.rev")"
		echo "@@meta load $load"
		echo "@@meta others $others"
	} >"$OUT/scale-raw.txt"
}

# run_scale: the scale scenario: the two simulators built
# (cluster/build-scale.sh), the guest (cluster-scale-guest.sh); its "@@"
# lines and the host's into scale-raw.txt.
run_scale() {
	if ! command -v etcd >/dev/null || ! command -v etcdctl >/dev/null; then
		die "no etcd or etcdctl (apt-get install etcd-server etcd-client)"
	fi
	mkdir -p "$OUT"
	log "bench-cluster: building the simulators (agent of $(git -C "$ROOT" \
		rev-parse --short "${WSEM_BC_SCALE_OLD:-bbe0767}") and of this tree)"
	bash "$BENCH/cluster/build-scale.sh" "$OUT/scale" ||
		die "building the simulators failed"
	wait_vms
	cmd="WSEM_BC_SCALE='$WSEM_BC_SCALE'
	WSEM_BC_SCALE_HOLD=${WSEM_BC_SCALE_HOLD:-1000}
	WSEM_BC_SCALE_IDLE=${WSEM_BC_SCALE_IDLE:-20}
	WSEM_BC_SCALE_PER_CLIENT=${WSEM_BC_SCALE_PER_CLIENT:-10}
	WSEM_BC_SCALE_TTL=${WSEM_BC_SCALE_TTL:-10}
	WSEM_BC_SCALE_WINDOW=${WSEM_BC_SCALE_WINDOW:-0}
	WSEM_BC_SCALE_TREES='${WSEM_BC_SCALE_TREES:-old new}'
	export WSEM_BC_SCALE WSEM_BC_SCALE_HOLD WSEM_BC_SCALE_IDLE WSEM_BC_SCALE_PER_CLIENT
	export WSEM_BC_SCALE_TTL WSEM_BC_SCALE_WINDOW WSEM_BC_SCALE_TREES
	$(cat "$BENCH/cluster-scale-guest.sh")"
	log "bench-cluster: booting the VM (scale: $WSEM_BC_SCALE hosts)"
	# TESTS=fleet_test.sh: mkinitramfs.sh then brings etcd and etcdctl
	# into the guest, as for that test.
	WSEM_VM_MEM=${WSEM_VM_MEM:-2G} TESTS=fleet_test.sh \
		WSEM_VM_BINS="$OUT/scale/wsem-scale-old $OUT/scale/wsem-scale-new" \
		"$ROOT/selftests/vm/run.sh" ${kver:+-k "$kver"} -T 3000 -m cmd \
		-c "$cmd" 2>&1 | tr -d '\r' | tee "$OUT/scale-console.txt" |
		grep --line-buffered '^# '
	st=${PIPESTATUS[0]}
	[ "$st" -eq 0 ] || die "the benchmark failed in the VM (status $st): $OUT/scale-console.txt"
	scale_raw
}

# run_scale_native: the scale scenario as run_scale, but with the guest's
# part (cluster-scale-guest.sh, WSEM_BC_SCALE_NATIVE set) run on this
# machine: in a network namespace made for it (its loopback only; deleted
# after) and at nice 19, with the simulators of build-scale.sh.  For counts
# of hosts that one TCG guest cannot simulate; other VMs are not waited
# for, only counted.
run_scale_native() {
	if ! command -v etcd >/dev/null || ! command -v etcdctl >/dev/null; then
		die "no etcd or etcdctl (apt-get install etcd-server etcd-client)"
	fi
	[ "$(id -u)" -eq 0 ] || die "WSEM_BC_SCALE_NATIVE: a network namespace needs root"
	mkdir -p "$OUT"
	log "bench-cluster: building the simulators (agent of $(git -C "$ROOT" \
		rev-parse --short "${WSEM_BC_SCALE_OLD:-bbe0767}") and of this tree)"
	bash "$BENCH/cluster/build-scale.sh" "$OUT/scale" ||
		die "building the simulators failed"
	WSEM_BENCH_WAIT=0 wait_vms 2>/dev/null
	ns=wsem-scale-$$
	ip netns add "$ns" || die "ip netns add $ns failed"
	trap 'ip netns del "$ns"' EXIT
	log "bench-cluster: natively, in network namespace $ns (scale: $WSEM_BC_SCALE hosts)"
	WSEM_BC_SCALE_NATIVE=$OUT/scale WSEM_BC_SCALE=$WSEM_BC_SCALE \
		WSEM_BC_SCALE_HOLD=${WSEM_BC_SCALE_HOLD:-1000} \
		WSEM_BC_SCALE_IDLE=${WSEM_BC_SCALE_IDLE:-20} \
		WSEM_BC_SCALE_PER_CLIENT=${WSEM_BC_SCALE_PER_CLIENT:-10} \
		WSEM_BC_SCALE_TTL=${WSEM_BC_SCALE_TTL:-10} \
		WSEM_BC_SCALE_WINDOW=${WSEM_BC_SCALE_WINDOW:-0} \
		WSEM_BC_SCALE_TREES=${WSEM_BC_SCALE_TREES:-old new} \
		ip netns exec "$ns" nice -n 19 sh "$BENCH/cluster-scale-guest.sh" 2>&1 |
		tee "$OUT/scale-console.txt" | grep --line-buffered '^# '
	st=${PIPESTATUS[0]}
	[ "$st" -eq 0 ] || die "the benchmark failed (status $st): $OUT/scale-console.txt"
	scale_raw
}

# scale_summary: the scale scenario's table, from scale-raw.txt.
scale_summary() {
	[ -s "$OUT/scale-raw.txt" ] || die "no $OUT/scale-raw.txt"
	awk -f "$BENCH/cluster/scale.awk" "$OUT/scale-raw.txt" \
		>"$OUT/scale-results.txt.tmp" || die "summing up failed"
	mv "$OUT/scale-results.txt.tmp" "$OUT/scale-results.txt"
	cat "$OUT/scale-results.txt"
	log "bench-cluster: results in $OUT/scale-results.txt"
}

# run_vm: the guest; its "@@" lines and the host's into raw.txt.
run_vm() {
	[ -x "$BIN" ] || die "no $BIN: run make bench-cluster"
	[ -x "$ROOT/build/agent/wsem-agent" ] ||
		die "no build/agent/wsem-agent (make -C agent; golang-etcd-server-dev)"
	command -v etcd >/dev/null && command -v etcdctl >/dev/null ||
		die "no etcd or etcdctl (apt-get install etcd-server etcd-client)"
	mkdir -p "$OUT"

	wait_vms

	cmd="WSEM_BC_PHASE=$phase; WSEM_BC_TRIES=$tries; export WSEM_BC_PHASE WSEM_BC_TRIES
	$(cat "$BENCH/cluster-guest.sh")"
	log "bench-cluster: booting the VM (phases of $phase s, $tries tries)"
	# TESTS=fleet_test.sh: mkinitramfs.sh then brings etcd, etcdctl and
	# wsem-agent into the guest, as for that test.
	TESTS=fleet_test.sh WSEM_VM_BINS=$BIN "$ROOT/selftests/vm/run.sh" \
		${kver:+-k "$kver"} -T 1200 -m cmd -c "$cmd" 2>&1 |
		tr -d '\r' | tee "$OUT/console.txt" | grep --line-buffered '^# '
	st=${PIPESTATUS[0]}
	[ "$st" -eq 0 ] || die "the benchmark failed in the VM (status $st): $OUT/console.txt"
	{
		grep -a '^@@' "$OUT/console.txt"
		echo "@@meta date $(date -u '+%Y-%m-%d_%H:%M_UTC')"
		echo "@@meta rev $rev"
		echo "@@meta phase $phase"
		echo "@@meta load $load"
		echo "@@meta others $others"
	} >"$OUT/raw.txt"
}

if [ -n "${WSEM_BC_SCALE:-}" ]; then
	if [ "$kver" != --summary ]; then
		if [ -n "${WSEM_BC_SCALE_NATIVE:-}" ]; then
			run_scale_native
		else
			run_scale
		fi
	fi
	scale_summary
	exit
fi
[ "$kver" = --summary ] || run_vm
[ -s "$OUT/raw.txt" ] || die "no $OUT/raw.txt"
# fetch: the tries' figures, sorted by time, for the percentiles.
grep '^@@fetch ' "$OUT/raw.txt" | sort -n -k2 >"$OUT/fetch.txt"

awk -v hz="$(getconf CLK_TCK)" '
function r2(a, b) { return b > 0 ? sprintf("%.2f", a / b) : "-" }
$1 == "@@meta" { meta[$2] = $3 }
$1 == "@@pair" && NF == 9 { pm[$2] = $3; p99[$2] = $4; mean[$2] = $5
			    cs[$2] = $6; ca[$2] = $7; ce[$2] = $8; pn[$2] = $9 }
$1 == "@@pair" && $2 == "paired" { paired = $3; npaired = $4 }
$1 == "@@pair" && $2 == "waited" { waited = $3 }
$1 == "@@fetch" { n++; ft[n] = $2; fs[n] = $3; fa[n] = $4; fe[n] = $5 }
($1 == "@@static" || $1 == "@@cluster") && $2 ~ /^(phase|all)/ {
	k = $1 "," $2; uw[k] = $3; ua[k] = $4; tw[k] = $5; jobs[k] = $6
	mw[k] = $7; xw[k] = $8 }
($1 == "@@static" || $1 == "@@cluster") && $2 == "cpu" {
	cw[$1] = $3; cag[$1] = $4; cet[$1] = $5; cob[$1] = $6 }
($1 == "@@static" || $1 == "@@cluster") && $2 == "seen" {
	chg[$1] = $3; maxu[$1] = $4 }
$1 == "@@agent" { aticks[$2] = $3; alines[$2] = $4 }
END {
	# the tries come sorted by their time: nearest-rank percentiles
	med = ft[int((n + 1) / 2)]; p99i = int(0.99 * n + 0.999999)
	phase = meta["phase"]; date = meta["date"]; gsub(/_/, " ", date)
	printf "wsem cluster bench: %s, kernel %s, %s vCPUs (QEMU TCG), git %s\n",
	       date, meta["kernel"], meta["cpus"], meta["rev"]
	printf "host: load average %s at the start, %d other VM(s) running\n",
	       meta["load"], meta["others"]
	printf "one etcd member (guest loopback), 3 simulated hosts (IPC namespaces), cluster capacity 6\n\n"

	print "1. acquire(1)+release(1) on h1, whose share suffices (1 lent), next to a plain"
	print "   semaphore in the same namespace; a sample = one batch of 16 pairs / 16;"
	print "   5 rounds of 0.4 s each, alternating; mean = the rounds time / pairs;"
	print "   CPU per pair of this process, of the agent of h1 and of etcd over the"
	print "   same rounds (kernel CPU clocks); ratios = cluster / plain"
	printf "   %-22s %8s %8s %8s %6s %6s %9s %9s %9s %8s\n", "ns per pair",
	       "median", "p99", "mean", "ratio", "ratio", "CPU self", "CPU agent",
	       "CPU etcd", "pairs"
	printf "   %-22s %8s %8s %8s %6s %6s\n", "", "", "", "", "median", "mean"
	split("plain cluster", sides, " ")
	for (i = 1; i <= 2; i++) {
		s = sides[i]
		printf "   %-22s %8d %8d %8d %6s %6s %9d %9d %9d %8d\n",
		       s == "plain" ? "plain semaphore" : "cluster limit (seats)",
		       pm[s], p99[s], mean[s], r2(pm[s], pm["plain"]),
		       r2(mean[s], mean["plain"]), cs[s], ca[s], ce[s], pn[s]
	}
	printf "   CPU per pair, all three together: cluster / plain %s\n",
	       r2(cs["cluster"] + ca["cluster"] + ce["cluster"],
		  cs["plain"] + ca["plain"] + ce["plain"])
	printf "   paired batches (cluster / plain, median of %d): %s; grants on seats that waited: %d\n\n",
	       npaired, paired, waited

	printf "2. acquire(1) on h2, which has no share: its agent gets one from etcd\n"
	printf "   (hold=100 gives it back between tries); %d tries; p99 by nearest rank\n", n
	if (p99i == n)
		printf "   (with %d tries the p99 is the largest)\n", n
	printf "   %-22s %9s %9s %9s %9s\n", "", "median", "p99", "min", "max"
	printf "   %-22s %9.1f %9.1f %9.1f %9.1f\n", "ms from call to grant",
	       med / 1e6, ft[p99i] / 1e6, ft[1] / 1e6, ft[n] / 1e6
	printf "   median / the plain pair of 1. (median): %s\n",
	       (pm["plain"] > 0 ? sprintf("%.0f", med / pm["plain"]) : "-")
	# CPU during the try of median time, and the mean over the tries
	for (i = 1; i <= n; i++) { ss += fs[i]; sa += fa[i]; se += fe[i] }
	printf "   CPU per acquire, mean over the tries: self %.2f ms, agent %.1f ms, etcd %.1f ms\n\n",
	       ss / n / 1e6, sa / n / 1e6, se / n / 1e6

	printf "3. shifting demand: phases of %s s: 1 jobs on h1, 2 on h2, 3 on all three;\n", phase
	print "   per active host 5 job loops of weights 2,1,2,1,2 (8 asked), each job held"
	print "   200-500 ms (the same pseudo-random sequence in both runs); static: a plain"
	print "   semaphore of 2 per host, no agent; cluster: the limit of 6, agents"
	print "   (default hold=). util = time-weighted sum of used / 6 while some host"
	print "   waits (idle = 100 - util); wait = acquire call to return"
	printf "   %-14s %9s %9s %9s %6s %9s %9s\n", "", "util %", "overall %",
	       "waited s", "jobs", "mean ms", "max ms"
	split("phase1 phase2 phase3 all", ph, " ")
	for (j = 1; j <= 4; j++) {
		for (i = 1; i <= 2; i++) {
			s = i == 1 ? "@@static" : "@@cluster"; k = s "," ph[j]
			printf "   %-14s %9.1f %9.1f %9.2f %6d %9.1f %9.1f\n",
			       (i == 1 ? "static " : "cluster ") ph[j], uw[k],
			       ua[k], tw[k], jobs[k], mw[k], xw[k]
		}
	}
	ks = "@@static,all"; kc = "@@cluster,all"
	printf "   cluster / static: idle capacity while some host waits %s, largest wait %s, mean wait %s\n",
	       r2(100 - uw[kc], 100 - uw[ks]), r2(xw[kc], xw[ks]),
	       r2(mw[kc], mw[ks])
	for (i = 1; i <= 2; i++) {
		s = i == 1 ? "@@static" : "@@cluster"; k = s ",all"
		printf "   CPU per job, %-8s: workers %.2f ms, agents %.2f ms, etcd %.2f ms (observer %.0f ms in all); largest sum of used %d, %d changes observed\n",
		       i == 1 ? "static" : "cluster", cw[s] / jobs[k] / 1e6,
		       cag[s] / jobs[k] / 1e6, cet[s] / jobs[k] / 1e6,
		       cob[s] / 1e6, maxu[s], chg[s]
	}
	printf "   the agents and etcd kept %.0f %% of the %d vCPUs busy over the cluster run\n",
	       (cag["@@cluster"] + cet["@@cluster"]) / (3 * phase * 1e9 * meta["cpus"]) * 100,
	       meta["cpus"]
	print ""
	print "4. agent CPU (utime + stime, /proc/PID/stat) per share change (its log lines"
	print "   \"share A -> B\"), over each run"
	printf "   %-34s %9s %8s %12s\n", "", "CPU ms", "changes", "ms / change"
	split("shift fetch", ar, " ")
	for (i = 1; i <= 2; i++) {
		a = ar[i]; ms = aticks[a] * 1000 / hz
		printf "   %-34s %9.0f %8d %12s\n",
		       a == "shift" ? "3. cluster run (3 agents)" : "2. the tries (the agent of h2)",
		       ms, alines[a], r2(ms, alines[a])
	}
}' <(grep -v '^@@fetch ' "$OUT/raw.txt"; cat "$OUT/fetch.txt") \
	>"$OUT/results.txt.tmp" || die "summing up failed"
mv "$OUT/results.txt.tmp" "$OUT/results.txt"
cat "$OUT/results.txt"
log "bench-cluster: results in $OUT/results.txt"
