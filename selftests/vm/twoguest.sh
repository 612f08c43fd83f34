#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# One cluster limit across two guests: two QEMU guests at once, each its own
# kernel and its own wsem.ko (a: bookworm's 6.1, b: the 6.12 of bookworm's
# backports, by default), joined by QEMU's socket netdev over the host's
# loopback (a listens on 127.0.0.1:PORT, a free port chosen now; b
# connects), each an e1000 NIC on that link, its one address besides the
# loopback's.  Each runs selftests/twoguest.sh (TWOGUEST_ROLE=a or b): an
# etcd member and an agent on a, an agent on b pointed at a's etcd, the
# same limit declared on both.
#
# usage: twoguest.sh [-a KVER] [-A KO] [-b KVER] [-B KO] [-q]
#   -A, -B   a's and b's wsem.ko (built for their kernel when not given)
#   -q       make check's: no summary line (make check counts the logs
#            itself), the userspace not built again
# make check runs it once, after its other guests (check.sh);
# make check-twoguest alone.
# The consoles go to build/twoguest/a.log and b.log, their TAP (and the
# harness's) counted by summary.awk as the lanes "twoguest-a (KVER)" and
# "twoguest-b (KVER)".  Each guest gets TWOGUEST_TIMEOUT seconds (default
# 240, the test program 210: b sleeps 30 s of it); both are killed by then
# whatever happens.
set -u -o pipefail
. "$(dirname "$0")/lib.sh"

ka=6.1 kb=6.12 koa='' kob='' quiet=
while getopts a:A:b:B:q opt; do
	case $opt in
	a) ka=$OPTARG ;;
	A) koa=$OPTARG ;;
	b) kb=$OPTARG ;;
	B) kob=$OPTARG ;;
	q) quiet=1 ;;
	*) exit 2 ;;
	esac
done
vm_timeout=${TWOGUEST_TIMEOUT:-240}
test_timeout=$((vm_timeout - 30))

take_check_lock
check_begin twoguest
[ -n "$quiet" ] || build_userspace
ka=$(resolve_kernel "$ka") kb=$(resolve_kernel "$kb")
if [ -z "$ka" ] || [ -z "$kb" ]; then
	n=$((n + 1))
	echo "ok $n two guests # SKIP two installed kernels with headers are needed (6.1 and 6.12)" |
		tee -a "$tapf"
	[ -n "$quiet" ] || awk -f "$VMDIR/summary.awk" label=- "$tapf"
	exit 0
fi
for r in a b; do
	eval "k=\$k$r ko=\$ko$r"
	if [ -z "$ko" ]; then
		stage "wsem.ko for $k (guest $r)"
		WSEM_TEST_KNOBS=y build_module "$k" >"$out/module-$r.log" 2>&1
		tap $? "build: wsem.ko for $k" "$out/module-$r.log"
		eval "ko$r=\$BUILD/\$k/mod/wsem.ko"
	fi
done
if [ ! -x "$BUILD/agent/wsem-agent" ]; then
	$MAKE -C "$ROOT/agent" >"$out/agent.log" 2>&1
	tap $? "build: wsem-agent" "$out/agent.log"
fi

# free_port: a TCP port of the loopback that nobody uses now
free_port() {
	command -v python3 >/dev/null || { echo $((20000 + RANDOM % 20000)); return; }
	python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}
# listening PORT: some process listens on 127.0.0.1:PORT (a's QEMU)
listening() {
	local hex
	hex=$(printf '%04X' "$1")
	awk -v p="0100007F:$hex" '$2 == p && $4 == "0A" { f = 1 }
		END { exit !f }' /proc/net/tcp
}

port=$(free_port)
stage "two guests: a ($ka) listens on 127.0.0.1:$port, b ($kb) connects"
# boot R KVER KO NIC: guest R in the background, its pid in pid_R
boot() {
	WSEM_VM_ENV="TWOGUEST_ROLE=$1${WSEM_VM_ENV:+ $WSEM_VM_ENV}" TESTS=twoguest.sh \
		bash "$VMDIR/run.sh" -k "$2" -K "$3" -m check -l "$out/$1.log" \
		-T "$vm_timeout" -t "$test_timeout" -n "$4" >"$out/run-$1.log" 2>&1 &
	eval "pid_$1=\$!"
}
ts=$(date +%s)
: >"$out/a.log"
: >"$out/b.log"
boot a "$ka" "$koa" "socket,listen=127.0.0.1:$port,model=e1000,mac=52:54:00:78:00:01"
# a's QEMU must listen before b's connects (packing a's initramfs first)
i=0
while ! listening "$port" && kill -0 "$pid_a" 2>/dev/null && [ $i -lt 600 ]; do
	sleep 0.1
	i=$((i + 1))
done
listening "$port"
tap $? "two guests: a's QEMU listens on 127.0.0.1:$port" "$out/run-a.log"
boot b "$kb" "$kob" "socket,connect=127.0.0.1:$port,model=e1000,mac=52:54:00:78:00:02"
wait "$pid_a"
wait "$pid_b"
for r in a b; do
	eval "k=\$k$r"
	stage "guest $r ($k)"
	show_guest "twoguest-$r" "$out/$r.log" "$out/run-$r.log"
done
echo "twoguest: both guests ended in $(($(date +%s) - ts))s"
[ -n "$quiet" ] && exit 0
stage "summary"
awk -v expected="$EXPECTED_SKIPS" -f "$VMDIR/summary.awk" label=- "$tapf" label="twoguest-a ($ka)" "$out/a.log" \
	label="twoguest-b ($kb)" "$out/b.log"
