#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# make bench-cluster's scale scenario, the guest's part (WSEM_BC_SCALE;
# bench/cluster.sh boots the guest; busybox sh): for each count of hosts
# in WSEM_BC_SCALE, and for each of the two simulators (wsem-scale-old:
# the agent before the kept view; wsem-scale-new: this tree's; built by
# bench/cluster/build-scale.sh), a new 3-member etcd cluster on the
# guest's loopback (its data thrown away after), then the simulator with
# that many hosts (bench/cluster/scalesim_test.go says what it does and
# prints).  The two run one after the other, the order swapped at each
# count.  Figures go to the console as "@@scale" lines; the progress as
# "# ..." lines.
#
# WSEM_BC_SCALE_NATIVE=DIR: not in a guest but on this machine, in the
# network namespace this runs in (bench/cluster.sh makes one and runs
# this script there at nice 19): the simulators are DIR's, the run
# directory DIR/run, and util.sh this tree's.  Unset: the guest's paths.
set -u
T=/tmp/cs
if [ -n "${WSEM_BC_SCALE_NATIVE:-}" ]; then
	# never the machine's own loopback: its ports may be taken, and
	# 1000 agents' connections are not for a shared network stack
	if [ -z "$(ip netns identify 2>/dev/null)" ]; then
		echo "# bench-cluster: FAILED: not in a network namespace of its own"
		exit 1
	fi
	T=$WSEM_BC_SCALE_NATIVE/run
	PATH=$WSEM_BC_SCALE_NATIVE:$PATH
	# (the simulator's run directory, os.MkdirTemp's)
	TMPDIR=$T
	export TMPDIR
	# shellcheck source=../selftests/util.sh
	. "$(dirname "$0")/../selftests/util.sh"
else
	# until_true: the selftests' helpers (mkinitramfs.sh packs util.sh
	# beside the tests, at /selftests in the guest)
	# shellcheck source=../selftests/util.sh
	. /selftests/util.sh
fi

COUNTS=${WSEM_BC_SCALE:-100}
HOLD=${WSEM_BC_SCALE_HOLD:-1000}
IDLE=${WSEM_BC_SCALE_IDLE:-20}
PER=${WSEM_BC_SCALE_PER_CLIENT:-10}
TTL=${WSEM_BC_SCALE_TTL:-10}
WINDOW=${WSEM_BC_SCALE_WINDOW:-0}
EPS=http://127.0.0.1:23791,http://127.0.0.1:23792,http://127.0.0.1:23793
export ETCDCTL_API=3
mkdir -p "$T"

say() { echo "# bench-cluster: $*"; }
fail() {
	say "FAILED: $*"
	for f in "$T"/*.log "$T"/*.err; do
		[ -f "$f" ] && tail -n 15 "$f" | sed "s|^|# ${f##*/}: |"
	done
	exit 1
}

# start_etcd: three members m1-m3, client ports 23791-23793, peer ports
# 23801-23803, data under $T/etcd; their pids in etcd_pids (a,b,c)
start_etcd() {
	rm -rf "$T/etcd"
	mkdir -p "$T/etcd"
	cl=m1=http://127.0.0.1:23801,m2=http://127.0.0.1:23802
	cl=$cl,m3=http://127.0.0.1:23803
	etcd_pids=
	for i in 1 2 3; do
		etcd --name "m$i" --data-dir "$T/etcd/m$i" \
			--listen-client-urls "http://127.0.0.1:2379$i" \
			--advertise-client-urls "http://127.0.0.1:2379$i" \
			--listen-peer-urls "http://127.0.0.1:2380$i" \
			--initial-advertise-peer-urls "http://127.0.0.1:2380$i" \
			--initial-cluster "$cl" --initial-cluster-token wsem-scale \
			>"$T/m$i.log" 2>&1 &
		etcd_pids=${etcd_pids:+$etcd_pids,}$!
	done
	until_true 120 etcdctl --endpoints "$EPS" --dial-timeout=2s \
		--command-timeout=3s endpoint health >/dev/null 2>&1 ||
		fail "etcd does not answer"
}
stop_etcd() {
	for p in $(echo "$etcd_pids" | tr , ' '); do
		kill "$p"
	done
	wait 2>/dev/null
	etcd_pids=
}
cleanup() {
	[ -n "${etcd_pids:-}" ] && stop_etcd
}
trap cleanup EXIT

# An agent's lock file, watch handle and etcd client each take a
# descriptor, and etcd one per client connection.  (busybox sh has -n)
# shellcheck disable=SC3045
if [ -n "${WSEM_BC_SCALE_NATIVE:-}" ]; then
	# (this machine's hard limit may be lower, and enough: 1000 hosts
	# take about 1000 + 2 per etcd client)
	# shellcheck disable=SC3045
	ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" ||
		fail "ulimit -n"
	say "natively, network namespace $(ip netns identify), nice $(nice), ulimit -n $(ulimit -n)"
else
	ulimit -n 65536 || fail "ulimit -n 65536"
fi
say "kernel $(uname -r), $(nproc) CPUs; hosts $COUNTS, hold=$HOLD ms"
echo "@@meta kernel $(uname -r)"
echo "@@meta cpus $(nproc)"
echo "@@meta hold $HOLD"
echo "@@meta holdmoved 1000"
echo "@@meta idle $IDLE"
echo "@@meta per_client $PER"
echo "@@meta ttl $TTL"
[ -n "${WSEM_BC_SCALE_NATIVE:-}" ] && echo "@@meta where native"
ip link set lo up
order=${WSEM_BC_SCALE_TREES:-old new}
for n in $COUNTS; do
	for tree in $order; do
		start_etcd
		say "$n hosts, the $tree agent (etcd $etcd_pids)"
		clients=$(((n + PER - 1) / PER))
		# (a failed run says so, with what it measured, and the
		# others go on)
		# shellcheck disable=SC2086 # SIMFLAGS: a list of flags
		if ! "wsem-scale-$tree" -test.run TestScaleSim -sim.tree "$tree" \
			-sim.hosts "$n" -sim.clients "$clients" \
			-sim.endpoints "$EPS" -sim.etcdpids "$etcd_pids" \
			-sim.hold "${HOLD}ms" -sim.idle "${IDLE}s" \
			-sim.ttl "$TTL" -sim.window "${WINDOW}s" \
			${WSEM_BC_SCALE_SIMFLAGS:-} \
			>"$T/$tree$n.out" 2>"$T/$tree$n.err"; then
			say "the simulator failed ($tree, $n hosts)"
			grep -v '^@@scale' "$T/$tree$n.out" | tail -n 5 |
				sed 's/^/# out: /'
			echo "@@scale $tree $n failed"
		fi
		grep '^@@scale' "$T/$tree$n.out"
		# what the agents logged that was not a share's or a loan's move
		echo "@@scale $tree $n log $(grep -Evc ': (share|loan) [0-9]+ -> ' \
			"$T/$tree$n.err")"
		grep -Ev ': (share|loan) [0-9]+ -> ' "$T/$tree$n.err" |
			sort | uniq -c | sort -rn | head -n 5 | sed 's/^/# log: /'
		stop_etcd
	done
	order=$(echo "$order" | awk '{ print $NF, $1 }' | sed 's/^\(.*\) \1$/\1/')
done
say "done"
