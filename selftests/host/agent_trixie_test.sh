#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# wsem-agent against trixie's etcd 3.5 (golang-etcd-server-dev 3.5, whose
# import paths are not bookworm's 3.4 ones: agent/etcdapi), built and
# tested inside the cached trixie chroot (selftests/vm/chroot.sh trixie,
# which holds golang-go and the etcd packages for this): make -C agent
# (gofmt, go vet, the unit tests, the build) finding 3.5 by itself, the
# program linked with 3.5's client and not 3.4's, wsem-agent --help run
# there, and make -C agent check-etcd, each of its tests passed against an
# etcd 3.5 in the test's own process.  The tree is bind-mounted on /mnt
# (in_chroot, selftests/vm/lib.sh: a mount namespace of its own, nothing
# stays mounted), the build's output is build/agent-trixie, bound on /srv
# (Go's cache kept between runs, the stamps removed: every check runs
# again), and nothing is written in the chroot.  Root only; a build of
# the chroot under way is waited for; skips when it is not cached.  TAP.
set -u -o pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d /tmp/agent_trixie_test.XXXXXX) || exit 1
trap 'rm -rf "$T"' EXIT
# shellcheck source=selftests/host/tap.sh
. "$ROOT/selftests/host/tap.sh"

echo "1..6"
skip_all() {
	local i
	for i in 1 2 3 4 5 6; do
		echo "ok $i # SKIP $1"
	done
	exit 0
}
[ "$(id -u)" -eq 0 ] || skip_all "needs root (chroot, mount)"
# shellcheck source=selftests/vm/lib.sh
. "$ROOT/selftests/vm/lib.sh"
chroot_wait trixie
cdir=$(bash "$VMDIR/chroot.sh" -n trixie 2>/dev/null) ||
	skip_all "no trixie chroot cached (selftests/vm/chroot.sh trixie builds it, as root; make check does, in the background)"
[ -d "$cdir/root/usr/share/gocode/src/go.etcd.io/etcd/client/v3" ] ||
	skip_all "the trixie chroot has no etcd 3.5 (golang-etcd-server-dev)"
echo "# $(grep -E '^(golang-go|golang-etcd-server-dev) ' "$cdir/manifest" |
	tr '\n' ' ')"

out=$ROOT/build/agent-trixie
# trixie's go's build cache, kept in the (cached) chroot from run to run.
gocache=/var/cache/wsem-go-build
mkdir -p "$cdir/root$gocache" || exit 1
mkdir -p "$out/tmp" || exit 1
rm -f "$out/agent/.checked" "$out/agent/wsem-agent"
# trixie CMD...: CMD in the chroot, the tree on /mnt, $out on /srv; go
# test's temporary directories in /srv/tmp.
trixie() {
	CHROOT_SRV=$out in_chroot "$cdir" "$ROOT" env TMPDIR=/srv/tmp "$@"
}

trixie make -C /mnt/agent OUT=/srv/agent WSEM_GOCACHE=$gocache >"$T/make.log" 2>&1
st=$?
check "make -C agent in trixie's chroot: gofmt, go vet, the unit tests, the build" \
	sh -c "cat '$T/make.log'; exit $st"
check "the Makefile found etcd 3.5 (go build -tags etcd35)" \
	grep -q -- 'go build -tags etcd35 ' "$T/make.log"
# go tool nm: the packages the program holds, by their symbols.
trixie go tool nm /srv/agent/wsem-agent >"$T/nm" 2>&1
check "wsem-agent is linked with etcd 3.5's client (go.etcd.io/etcd/client/v3), not 3.4's" \
	sh -c "grep -q ' go\.etcd\.io/etcd/client/v3\.' '$T/nm' &&
		! grep -q ' go\.etcd\.io/etcd/clientv3\.' '$T/nm'"
trixie /srv/agent/wsem-agent --help >"$T/help" 2>&1
st=$?
check "wsem-agent --help runs there: exit 0, its usage" \
	sh -c "cat '$T/help'; [ $st -eq 0 ] && grep -q '^Usage of ' '$T/help'"

trixie make -C /mnt/agent OUT=/srv/agent WSEM_GOCACHE=$gocache check-etcd >"$T/etcd.log" 2>&1
st=$?
check "make -C agent check-etcd against etcd 3.5 in the test's process" \
	sh -c "grep -v 'logger.go' '$T/etcd.log'; exit $st"
# Every test the Makefile's -run names passed (go test -v's "--- PASS").
tests=$(sed -n "s/.*-run '\([^']*\)'.*/\1/p" "$ROOT/agent/Makefile" | tr '|' ' ')
missing=
for t in $tests; do
	grep -q -- "^--- PASS: $t " "$T/etcd.log" || missing="$missing $t"
done
check "each of check-etcd's $(echo "$tests" | wc -w) tests passed${missing:+ (not:$missing)}" \
	test -n "$tests" -a -z "$missing"
rm -rf "${out:?}/tmp"
exit $((failed > 0))
