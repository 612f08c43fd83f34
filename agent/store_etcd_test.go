// SPDX-License-Identifier: GPL-2.0

//go:build etcd

package main

// The store's transactions against an etcd of Debian's in the test's own
// process (etcd 3.4's go.etcd.io/etcd/integration, 3.5's
// go.etcd.io/etcd/tests/v3/integration: cluster34_etcd_test.go,
// cluster35_etcd_test.go): make -C agent check-etcd, which the host lane
// runs; not the package's build.

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	clientv3 "wsem.example/agent/etcdapi"
)

func testStore(t *testing.T, host string) (*store, context.Context, func()) {
	_, st, ctx, done := testCluster(t, host)
	return st, ctx, done
}

// testCluster is testStore's, with its cluster.
func testCluster(t *testing.T, host string) (cluster, *store, context.Context, func()) {
	clus := newCluster(t, &clusterConfig{Size: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	st := &store{cli: clus.RandClient(), prefix: "/wsem/t/", host: host,
		ttl: 2}
	if err := st.ensureCapacity(ctx, 6); err != nil {
		t.Fatal(err)
	}
	return clus, st, ctx, func() {
		cancel()
		clus.Terminate(t)
	}
}

func put(t *testing.T, ctx context.Context, st *store, k, v string,
	opts ...clientv3.OpOption) int64 {
	r, err := st.cli.Put(ctx, st.prefix+k, v, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return r.Header.Revision
}

func value(t *testing.T, ctx context.Context, st *store, k string) string {
	kv, err := st.getKey(ctx, st.prefix+k)
	if err != nil {
		t.Fatal(err)
	}
	if kv == nil {
		return ""
	}
	return string(kv.Value)
}

// claimLease is the lease alive/HOST is under.
func claimLease(t *testing.T, ctx context.Context, st *store) clientv3.LeaseID {
	kv, err := st.getKey(ctx, st.key("alive"))
	if err != nil || kv == nil {
		t.Fatalf("alive/%s: %v", st.host, err)
	}
	return clientv3.LeaseID(kv.Lease)
}

// A share is taken back only while its host's claim is gone and the share
// is the one seen; its ttl/ key goes with it.
func TestTakeBack(t *testing.T) {
	st, ctx, done := testStore(t, "me")
	defer done()
	rev := put(t, ctx, st, "share/h", "2")
	o := orphan{rev: rev, ttlRev: put(t, ctx, st, "ttl/h", "2")}
	if ok, err := st.takeBack(ctx, "h", orphan{rev: rev - 1,
		ttlRev: o.ttlRev}); err != nil || ok {
		t.Fatalf("another revision of the share: taken back %v, %v", ok, err)
	}
	l, err := st.cli.Grant(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	put(t, ctx, st, "alive/h", "", clientv3.WithLease(l.ID))
	if ok, err := st.takeBack(ctx, "h", o); err != nil || ok {
		t.Fatalf("its claim back: taken back %v, %v", ok, err)
	}
	if _, err := st.cli.Revoke(ctx, l.ID); err != nil {
		t.Fatal(err)
	}
	// a claim made and lost since: ttl/h put again
	ttlRev := put(t, ctx, st, "ttl/h", "2")
	if ok, err := st.takeBack(ctx, "h", o); err != nil || ok {
		t.Fatalf("a claim came and went: taken back %v, %v", ok, err)
	}
	o.ttlRev = ttlRev
	if ok, err := st.takeBack(ctx, "h", o); err != nil || !ok {
		t.Fatalf("claim gone, share the one seen: taken back %v, %v", ok, err)
	}
	if value(t, ctx, st, "share/h") != "" || value(t, ctx, st, "ttl/h") != "" {
		t.Fatal("the share or its ttl/ key is still there")
	}
}

// A claim another machine made is refused, and stays as it was; one this
// machine made is taken over, with ttl/HOST under policy deadline.
func TestSessionClaims(t *testing.T) {
	st, ctx, done := testStore(t, "h")
	defer done()
	l, err := st.cli.Grant(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	put(t, ctx, st, "alive/h", "machine=0123 boot=4567",
		clientv3.WithLease(l.ID))
	st.takeover, st.deadline = true, true
	if _, err := st.session(ctx); !errors.Is(err, errOtherMachine) {
		t.Fatalf("another machine's claim: %v", err)
	}
	if lease := claimLease(t, ctx, st); lease != l.ID {
		t.Fatal("another machine's claim changed")
	}
	put(t, ctx, st, "alive/h", thisMachine(), clientv3.WithLease(l.ID))
	lease, err := st.session(ctx)
	if err != nil || lease == l.ID {
		t.Fatalf("this machine's stopped claim: lease %x, %v", lease, err)
	}
	if got := claimLease(t, ctx, st); got != lease {
		t.Fatalf("the claim is under %x, not the new lease %x", got, lease)
	}
	if value(t, ctx, st, "ttl/h") != "2" {
		t.Fatal("policy deadline: no ttl/h of 2 with the claim")
	}
}

// declare-dead: refused for a policy deadline host, which keeps its share;
// done for a finish host whose claim is gone, once it has stayed gone for
// the wait (by then the host's kernel deadline has passed), and refused if
// the host claims itself again in that time.
func TestDeclareDead(t *testing.T) {
	st, ctx, done := testStore(t, "me")
	defer done()
	put(t, ctx, st, "share/d", "1")
	put(t, ctx, st, "ttl/d", "2")
	err := declareDead(ctx, st.cli, st.prefix, "d", time.Second, nil)
	if err == nil || !strings.Contains(err.Error(), "policy deadline") {
		t.Fatalf("a policy deadline host: %v", err)
	}
	if value(t, ctx, st, "share/d") != "1" {
		t.Fatal("a refused declare-dead changed the share")
	}
	put(t, ctx, st, "share/f", "1")
	began := time.Now()
	if err := declareDead(ctx, st.cli, st.prefix, "f", time.Second,
		nil); err != nil {
		t.Fatalf("a finish host without a claim: %v", err)
	}
	if took := time.Since(began); took < time.Second {
		t.Errorf("declared dead after %v, not after the wait of 1 s", took)
	}
	if value(t, ctx, st, "share/f") != "" {
		t.Fatal("declare-dead left the share")
	}
	// the host's agent claims it again while declare-dead waits, and
	// loses the claim again
	put(t, ctx, st, "share/g", "1")
	end := make(chan error, 1)
	go func() {
		end <- declareDead(ctx, st.cli, st.prefix, "g", 2*time.Second,
			func() {
				put(t, ctx, st, "alive/g", thisMachine())
				st.cli.Delete(ctx, st.prefix+"alive/g")
			})
	}()
	if err := <-end; err == nil {
		t.Fatal("declare-dead done while the host claimed itself again")
	}
	if value(t, ctx, st, "share/g") != "1" {
		t.Fatal("the refused declare-dead changed the share")
	}
}

// A bad demand or a key of no known kind is skipped; a bad share is not.
func TestReadSkipsBadKeys(t *testing.T) {
	st, ctx, done := testStore(t, "me")
	defer done()
	put(t, ctx, st, "share/a", "2")
	put(t, ctx, st, "demand/b", "not a demand")
	put(t, ctx, st, "junk", "?")
	v, _, err := st.read(ctx)
	if err != nil || v.shares["a"] != 2 || len(v.demands) != 0 ||
		len(st.skipped) != 2 {
		t.Fatalf("read: %v, skipped %v", err, st.skipped)
	}
	put(t, ctx, st, "share/c", "x")
	if _, _, err := st.read(ctx); err == nil {
		t.Fatal("a share that does not parse was skipped")
	}
}

// grantCount counts the leases a client is granted.
type grantCount struct {
	clientv3.Lease
	n int
}

func (g *grantCount) Grant(ctx context.Context, ttl int64) (*clientv3.LeaseGrantResponse, error) {
	g.n++
	return g.Lease.Grant(ctx, ttl)
}

// testLimit is a policy deadline limit of capacity 6 on host h, served by
// st's etcd.
func testLimit() *limit {
	return &limit{name: "t", prefix: "/wsem", capacity: 6, host: "h",
		ttl: 2, policy: "deadline", mode: 0600, hold: time.Second,
		turn: time.Second}
}

// A second agent checks first: one that finds another handle lending to
// the host's semaphore, or another machine's claim, changes nothing in
// etcd (no lease granted, the claim and its lease as they were).
func TestStartChecksFirst(t *testing.T) {
	st, ctx, done := testStore(t, "h")
	defer done()
	l, err := st.cli.Grant(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	put(t, ctx, st, "share/h", "2")
	put(t, ctx, st, "ttl/h", "2")
	grants := &grantCount{Lease: st.cli.Lease}
	st.cli.Lease = grants
	defer func() { st.cli.Lease = grants.Lease }()
	unchanged := func(what string) {
		t.Helper()
		if grants.n != 0 {
			t.Errorf("%s: %d leases granted", what, grants.n)
		}
		if got := claimLease(t, ctx, st); got != l.ID {
			t.Errorf("%s: the claim moved to lease %x", what, got)
		}
		ttl, err := st.cli.TimeToLive(ctx, l.ID)
		if err != nil || ttl.TTL <= 0 {
			t.Errorf("%s: the live agent's lease ended: %v", what, err)
		}
		if value(t, ctx, st, "share/h") != "2" {
			t.Errorf("%s: the share changed", what)
		}
	}

	// this machine's live agent, which lends 2 to the semaphore
	put(t, ctx, st, "alive/h", thisMachine(), clientv3.WithLease(l.ID))
	sem := newFakeSem(6, 2)
	defer useFakeSem(sem, t.TempDir())()
	if _, err := startWith(ctx, testLimit(), st.cli); err == nil ||
		!strings.Contains(err.Error(), "another handle lends") {
		t.Fatalf("another handle lends: %v", err)
	}
	unchanged("another handle lends")

	// another capacity than etcd's: said before the semaphore's lender
	lim := testLimit()
	lim.capacity = 7
	if _, err := startWith(ctx, lim, st.cli); err == nil ||
		!strings.Contains(err.Error(), "capacity in etcd is 6, this host says 7") {
		t.Fatalf("another capacity: %v", err)
	}
	unchanged("another capacity")

	// another machine's agent: the semaphore here lends nothing
	put(t, ctx, st, "alive/h", "machine=0123 boot=4567",
		clientv3.WithLease(l.ID))
	sem.stat.Lent, sem.stat.Capacity = 0, 0
	if _, err := startWith(ctx, testLimit(), st.cli); !errors.Is(err,
		errOtherMachine) {
		t.Fatalf("another machine's claim: %v", err)
	}
	unchanged("another machine's claim")
}

// A stopping agent gives back last: when the handle that lends closes,
// the claim and the share are still in etcd; after, both are gone.
func TestLeaveClosesFirst(t *testing.T) {
	st, ctx, done := testStore(t, "h")
	defer done()
	put(t, ctx, st, "share/h", "2")
	sem := newFakeSem(6, 0)
	defer useFakeSem(sem, t.TempDir())()
	a, err := startWith(ctx, testLimit(), st.cli)
	if err != nil {
		t.Fatal(err)
	}
	if sem.stat.Lent != 2 || value(t, ctx, st, "ttl/h") == "" {
		t.Fatalf("started: lends %d, ttl/h %q", sem.stat.Lent,
			value(t, ctx, st, "ttl/h"))
	}
	var atClose []string
	sem.onClose = func() {
		atClose = []string{value(t, ctx, st, "alive/h"),
			value(t, ctx, st, "share/h"), value(t, ctx, st, "ttl/h")}
		if sem.stat.Lent != 0 {
			t.Errorf("the handle closed lending %d", sem.stat.Lent)
		}
	}
	a.leave()
	if !sem.closed {
		t.Fatal("the handle is not closed")
	}
	if atClose[0] == "" || atClose[1] != "2" || atClose[2] == "" {
		t.Errorf("at the handle's close: claim %q, share %q, ttl %q "+
			"(the claim, share 2 and ttl/ still there)", atClose[0],
			atClose[1], atClose[2])
	}
	for _, k := range []string{"alive/h", "share/h", "ttl/h", "demand/h"} {
		if v := value(t, ctx, st, k); v != "" {
			t.Errorf("after leave: %s is %q", k, v)
		}
	}
}

// A growth computed before the capacity (or capacity/next) changed fails.
func TestGrowthSeesCapacity(t *testing.T) {
	st, ctx, done := testStore(t, "h")
	defer done()
	for _, k := range []string{"capacity/next", "capacity"} {
		_, rev, err := st.read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		put(t, ctx, st, k, "4")
		if ok, err := st.growShare(ctx, rev, 5); err != nil || ok {
			t.Errorf("%s changed since the read: grown %v, %v", k,
				ok, err)
		}
	}
}

// sharesFit checks that at each revision of st's etcd from rev on, the
// shares add up to no more than the capacity.
func sharesFit(t *testing.T, ctx context.Context, st *store, rev int64) {
	t.Helper()
	last, err := st.cli.Get(ctx, "/")
	if err != nil {
		t.Fatal(err)
	}
	for r := rev; r <= last.Header.Revision; r++ {
		g, err := st.cli.Get(ctx, st.prefix, clientv3.WithPrefix(),
			clientv3.WithRev(r))
		if err != nil {
			t.Fatal(err)
		}
		var capacity, sum int64
		for _, kv := range g.Kvs {
			n, _ := strconv.ParseInt(string(kv.Value), 10, 64)
			if string(kv.Key) == st.prefix+"capacity" {
				capacity = n
			} else if strings.HasPrefix(string(kv.Key), st.prefix+"share/") {
				sum += n
			}
		}
		if sum > capacity {
			t.Errorf("revision %d: shares of %d, capacity %d", r, sum,
				capacity)
		}
	}
}

// set-capacity: growth at once; a shrink puts capacity/next, which the
// agents' looks take as the capacity, and writes the capacity once the
// shares fit; at no revision do the shares add up to more than the
// capacity.  One stopped while it waits leaves capacity/next, which a
// set-capacity the shares fit in takes away.
func TestSetCapacity(t *testing.T) {
	st, ctx, done := testStore(t, "h")
	defer done()
	rev := put(t, ctx, st, "share/a", "3")
	put(t, ctx, st, "share/b", "2")
	if old, err := setCapacity(ctx, st, 8, nil); err != nil || old != 6 ||
		value(t, ctx, st, "capacity") != "8" {
		t.Fatalf("grow 6 -> 8: old %d, %v, capacity %s", old, err,
			value(t, ctx, st, "capacity"))
	}
	waiting := make(chan int64, 1)
	end := make(chan error, 1)
	go func() {
		_, err := setCapacity(ctx, st, 4, func(sum int64) { waiting <- sum })
		end <- err
	}()
	select {
	case sum := <-waiting:
		if sum != 5 {
			t.Errorf("waits for shares of %d, not 5", sum)
		}
	case err := <-end:
		sharesFit(t, ctx, st, rev)
		t.Fatalf("set-capacity 4 with shares of 5 did not wait: %v", err)
	}
	if value(t, ctx, st, "capacity") != "8" ||
		value(t, ctx, st, "capacity/next") != "4" {
		t.Fatalf("while the shares are 5: capacity %s, capacity/next %s",
			value(t, ctx, st, "capacity"),
			value(t, ctx, st, "capacity/next"))
	}
	if v, _, err := st.read(ctx); err != nil || v.capacity != 4 ||
		v.full != 8 || v.free() != -1 {
		t.Fatalf("an agent's look: %+v, %v", v, err)
	}
	// host a's agent gives 1 back
	a := &store{cli: st.cli, prefix: st.prefix, host: "a", ttl: st.ttl}
	if ok, err := a.shrinkShare(ctx, 3, 2); err != nil || !ok {
		t.Fatalf("a's shrink: %v %v", ok, err)
	}
	select {
	case err := <-end:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("set-capacity 4 did not end with shares of 4")
	}
	if value(t, ctx, st, "capacity") != "4" ||
		value(t, ctx, st, "capacity/next") != "" {
		t.Fatalf("after: capacity %s, capacity/next %s",
			value(t, ctx, st, "capacity"),
			value(t, ctx, st, "capacity/next"))
	}
	// stopped while it waits: capacity/next stays until a set-capacity
	// ends
	sctx, stop := context.WithCancel(ctx)
	if _, err := setCapacity(sctx, st, 3, func(int64) { stop() }); err == nil {
		t.Fatal("set-capacity 3, stopped: no error")
	}
	if value(t, ctx, st, "capacity/next") != "3" {
		t.Fatal("set-capacity 3, stopped: no capacity/next 3")
	}
	if _, err := setCapacity(ctx, st, 4, nil); err != nil ||
		value(t, ctx, st, "capacity/next") != "" {
		t.Fatalf("set-capacity 4 again: %v, capacity/next %s", err,
			value(t, ctx, st, "capacity/next"))
	}
	sharesFit(t, ctx, st, rev)
}

// A capacity below 1 in etcd fails the look (refused, not used); a
// capacity/next that is not one is skipped.
func TestReadCapacity(t *testing.T) {
	st, ctx, done := testStore(t, "h")
	defer done()
	for _, bad := range []string{"-3", "0", "x"} {
		put(t, ctx, st, "capacity", bad)
		if _, _, err := st.read(ctx); err == nil {
			t.Errorf("capacity %s: read", bad)
		}
	}
	put(t, ctx, st, "capacity", "6")
	for _, bad := range []string{"-1", "0", "x"} {
		put(t, ctx, st, "capacity/next", bad)
		if v, _, err := st.read(ctx); err != nil || v.capacity != 6 {
			t.Errorf("capacity/next %s: %v", bad, err)
		}
	}
}

// A watch on a member whose packets are dropped (the agent's, which wakes
// its looks) moves to another member once the keepalive ping goes
// unanswered: it sees a change made through the other member within the
// keepalive's time and timeout, not never.
func TestKeepaliveLeavesBlackhole(t *testing.T) {
	clus := newCluster(t, &clusterConfig{Size: 2,
		GRPCKeepAliveMinTime: time.Millisecond})
	defer clus.Terminate(t)
	lim := testLimit()
	lim.endpoints = []string{clus.addr(0)}
	cfg, err := lim.clientConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.DialOptions = []grpc.DialOption{grpc.WithBlock()}
	cli, err := clientv3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	wc := cli.Watch(context.Background(), "k", clientv3.WithCreatedNotify())
	if _, ok := <-wc; !ok {
		t.Fatal("no watch")
	}
	// (the watch's connection stays on member 0 until it fails)
	cli.SetEndpoints(clus.addr(0), clus.addr(1))
	time.Sleep(time.Second)
	clus.blackhole(0)
	defer clus.unblackhole(0)
	// (the bridge passes what each way's copy was already reading:
	// a first change, which may come through)
	if _, err := clus.Client(1).Put(context.Background(), "k", "1"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wc:
	case <-time.After(time.Second):
	}
	began := time.Now()
	if _, err := clus.Client(1).Put(context.Background(), "k", "2"); err != nil {
		t.Fatal(err)
	}
	bound := keepAliveTime + cfg.DialKeepAliveTimeout + 10*time.Second
	for end := time.After(bound); ; {
		select {
		case r := <-wc:
			for _, ev := range r.Events {
				if string(ev.Kv.Value) == "2" {
					t.Logf("the watch saw the change after %v",
						time.Since(began))
					return
				}
			}
		case <-end:
			t.Fatalf("the watch saw no change within %v", bound)
		}
	}
}

// Two agents under a set-capacity shrink (each with a fake semaphore that
// holds 2 and has 1 waiting): the rule takes capacity/next as the
// capacity, the host behind the front lowers its loan to the rule's share
// at once and its share to what it holds, and lower when a holder
// releases; then set-capacity writes the capacity.  The shares within the
// capacity at every revision, each loan within its share.
func TestAgentsFollowSetCapacity(t *testing.T) {
	st, ctx, done := testStore(t, "a")
	defer done()
	r, err := st.cli.Get(ctx, "/")
	if err != nil {
		t.Fatal(err)
	}
	first := r.Header.Revision
	sems := []*fakeSem{newFakeSem(6, 0), newFakeSem(6, 0)}
	var agents []*agent
	defer useFakeSem(nil, t.TempDir())()
	for i, host := range []string{"a", "b"} {
		sem := sems[i]
		createLoans = func(string, int64, os.FileMode) (kernelSem, error) {
			return sem, nil
		}
		// ttl= 30: with 2, a renewal answered late on a busy
		// machine cuts the loan between two looks (not what is tested)
		lim := testLimit()
		lim.host, lim.policy, lim.hold = host, "finish", 10*time.Millisecond
		lim.ttl = 30
		a, err := startWith(ctx, lim, st.cli)
		if err != nil {
			t.Fatal(err)
		}
		defer a.leave()
		sem.stat.Used, sem.stat.QueuedWeight, sem.stat.Waiters = 2, 1, 1
		agents = append(agents, a)
	}
	// looks of both agents until cond, or 15 s (a bound for a hang:
	// the host lane runs at nice 19 beside the guests)
	lookUntil := func(what string, cond func() bool) {
		t.Helper()
		for end := time.Now().Add(15 * time.Second); !cond(); {
			if time.Now().After(end) {
				t.Fatalf("not so after 15 s: %s (shares %s %s, loans "+
					"%d %d)", what, value(t, ctx, st, "share/a"),
					value(t, ctx, st, "share/b"), sems[0].stat.Lent,
					sems[1].stat.Lent)
			}
			for _, a := range agents {
				if err := a.reconcile(ctx); err != nil {
					t.Fatal(err)
				}
				if a.lent() > a.share {
					t.Fatalf("%s lends %d of a share of %d",
						a.lim.host, a.lent(), a.share)
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	lookUntil("shares of 3 and 3 lent", func() bool {
		return sems[0].stat.Lent == 3 && sems[1].stat.Lent == 3
	})
	end := make(chan error, 1)
	go func() {
		_, err := setCapacity(ctx, st, 4, nil)
		end <- err
	}()
	lookUntil("b lends 1 (the rule's) and keeps a share of 2 (held)",
		func() bool {
			return sems[1].stat.Lent == 1 &&
				value(t, ctx, st, "share/b") == "2"
		})
	select {
	case err := <-end:
		t.Fatalf("set-capacity ended with shares of 5: %v", err)
	default:
	}
	sems[1].stat.Used = 1 // a holder of b releases 1
	lookUntil("set-capacity 4 done", func() bool {
		return value(t, ctx, st, "capacity") == "4"
	})
	if err := <-end; err != nil {
		t.Fatal(err)
	}
	if value(t, ctx, st, "share/a") != "3" || value(t, ctx, st, "share/b") != "1" {
		t.Errorf("shares %s and %s, not 3 and 1",
			value(t, ctx, st, "share/a"), value(t, ctx, st, "share/b"))
	}
	sharesFit(t, ctx, st, first)
}

// fakeStore is a file descriptor store's notify socket (NOTIFY_SOCKET,
// FDSTORE set for the test): recv reads one message and its descriptors.
type fakeStore struct{ c *net.UnixConn }

func newFakeStore(t *testing.T) *fakeStore {
	path := filepath.Join(t.TempDir(), "notify")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path,
		Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	// (closed at the test's end, not before: a test that drops the
	// store would otherwise leave the socket to the garbage collector,
	// whose finalizer closes it, and the agent's sendmsg is refused)
	t.Cleanup(func() { c.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	t.Setenv("FDSTORE", "4")
	return &fakeStore{c: c}
}

func (s *fakeStore) recv(t *testing.T) (string, []int) {
	t.Helper()
	buf, oob := make([]byte, 512), make([]byte, 128)
	s.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, oobn, _, _, err := s.c.ReadMsgUnix(buf, oob)
	if err != nil {
		t.Fatalf("no message to the store: %v", err)
	}
	var fds []int
	scms, _ := syscall.ParseSocketControlMessage(oob[:oobn])
	for _, scm := range scms {
		got, _ := syscall.ParseUnixRights(&scm)
		fds = append(fds, got...)
	}
	return string(buf[:n]), fds
}

// With a file descriptor store, a started agent keeps its lending handle
// there, and a stopped one hands over (fdstore.go): the loan drops to what
// is held but goes on (one lend, until the renewed lease's end less the
// margin), the handle is not the last one closed, etcd keeps that much of
// the share and the claim stays under its lease; the next agent takes the
// handle back from the store and lends through it, under a lease of its
// own.
func TestHandOver(t *testing.T) {
	st, ctx, done := testStore(t, "h")
	defer done()
	fs := newFakeStore(t)
	put(t, ctx, st, "share/h", "3")
	sem := newFakeSem(6, 0)
	sem.stat.Name, sem.stat.Used = "t", 1
	defer useFakeSem(sem, t.TempDir())()
	lim := testLimit()
	a, err := startWith(ctx, lim, st.cli)
	if err != nil {
		t.Fatal(err)
	}
	msg, fds := fs.recv(t)
	if msg != "FDSTORE=1\nFDNAME="+storeName(lim)+"\n" || len(fds) != 1 {
		t.Fatalf("to the store: %q with %d descriptors", msg, len(fds))
	}
	lease := claimLease(t, ctx, st)
	before := a.loanDeadline()
	sem.lends = nil
	a.leave()
	if len(sem.lends) != 1 || sem.lends[0].n != 1 ||
		sem.lends[0].deadline != a.loanDeadline() ||
		sem.lends[0].deadline <= before {
		t.Errorf("handed over: lends %v (want one: 1 until the "+
			"renewed lease's end less the margin, %v; before: %v)",
			sem.lends, a.loanDeadline(), before)
	}
	if sem.stat.Lent != 1 || value(t, ctx, st, "share/h") != "1" {
		t.Errorf("handed over: lends %d, share %q (want 1 and 1: what "+
			"is held)", sem.stat.Lent, value(t, ctx, st, "share/h"))
	}
	if claimLease(t, ctx, st) != lease || value(t, ctx, st, "ttl/h") == "" {
		t.Error("handed over: the claim or ttl/h is gone")
	}

	// The next agent: the store passes the handle back.
	adopt := adoptLoans
	defer func() { adoptLoans = adopt }()
	var adopted int
	adoptLoans = func(fd int) (kernelSem, error) {
		adopted = fd
		sem.closed = false
		return sem, nil
	}
	stored.fds = map[string]int{storeName(lim): fds[0]}
	sem.closed = false
	b, err := startWith(ctx, lim, st.cli)
	if err != nil {
		t.Fatal(err)
	}
	defer b.leave()
	if adopted != fds[0] || sem.stat.Lent != 1 || sem.stat.LentHere != 1 {
		t.Errorf("restarted: adopted fd %d (stored %d), lends %d of %d",
			adopted, fds[0], sem.stat.LentHere, sem.stat.Lent)
	}
	if claimLease(t, ctx, st) == lease {
		t.Error("restarted: the claim is still under the old lease")
	}
	syscall.Close(fds[0])
}

// A hand-over keeps in etcd what is held once the loan is lowered: a
// grant made between its read of what is held and its lend stays within
// the host's share (the loan is lowered below what is then held, and
// nothing more is granted until the holders are under it).
func TestHandOverKeepsWhatIsHeld(t *testing.T) {
	st, ctx, done := testStore(t, "h")
	defer done()
	newFakeStore(t)
	put(t, ctx, st, "share/h", "3")
	sem := newFakeSem(6, 0)
	sem.stat.Name, sem.stat.Used = "t", 1
	defer useFakeSem(sem, t.TempDir())()
	a, err := startWith(ctx, testLimit(), st.cli)
	if err != nil {
		t.Fatal(err)
	}
	sem.onLend = func() { sem.stat.Used, sem.onLend = 2, nil }
	a.leave()
	if sem.stat.Lent != 1 || value(t, ctx, st, "share/h") != "2" {
		t.Errorf("handed over with 2 held: lends %d, share %q (want 1 "+
			"and 2)", sem.stat.Lent, value(t, ctx, st, "share/h"))
	}
}

// rpcCount counts the unary requests of a client (all but the watch's and
// the lease renewals' streams), by method ("/etcdserverpb.KV/Range"); before,
// if set, is called with each one's method before it is sent.
type rpcCount struct {
	mu     sync.Mutex
	n      map[string]int
	before func(method string)
}

func (c *rpcCount) intercept(ctx context.Context, method string, req,
	reply interface{}, cc *grpc.ClientConn, invoker grpc.UnaryInvoker,
	opts ...grpc.CallOption) error {
	c.mu.Lock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[method]++
	before := c.before
	c.mu.Unlock()
	if before != nil {
		before(method)
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

// take is what was counted since the last take.
func (c *rpcCount) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = map[string]int{}
	return n
}

func total(n map[string]int) int {
	sum := 0
	for _, x := range n {
		sum += x
	}
	return sum
}

const rangeRPC = "/etcdserverpb.KV/Range"

// countingClient is a client of clus's first member whose unary requests c
// counts.
func countingClient(t *testing.T, clus cluster, c *rpcCount) *clientv3.Client {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{clus.addr(0)},
		DialTimeout: 5 * time.Second,
		DialOptions: []grpc.DialOption{grpc.WithBlock(),
			grpc.WithUnaryInterceptor(c.intercept)}})
	if err != nil {
		t.Fatal(err)
	}
	return cli
}

// manyHosts puts n other hosts' claims and ttl/ keys, and a share of 1 and a
// demand of 1 for the first ones of them, as much as capacity 6 takes but 1.
func manyHosts(t *testing.T, ctx context.Context, st *store, n int) {
	for i := 0; i < n; i++ {
		h := "x" + strconv.Itoa(i)
		put(t, ctx, st, "alive/"+h, "")
		put(t, ctx, st, "ttl/"+h, "2")
		if i < 5 {
			put(t, ctx, st, "share/"+h, "1")
			put(t, ctx, st, "demand/"+h, "1 1")
		}
	}
}

// quietLimit is an agent's limit for host h, policy finish, hold= 400 ms
// and ttl= 30: a test that counts the requests of a change, or of an idle
// agent, is not about the lease, and on a loaded machine renewals of a
// ttl= of 2 s come late enough to cut the loan and look again (a read).
func quietLimit() *limit {
	lim := testLimit()
	lim.host, lim.policy, lim.hold = "h", "finish", 400*time.Millisecond
	lim.ttl = 30
	return lim
}

// runAgentLimit starts an agent of the limit lim on cli, with a fake
// semaphore, and runs it until the function it returns, which waits for
// its end.
func runAgentLimit(t *testing.T, ctx context.Context, cli *clientv3.Client,
	lim *limit) (*agent, func()) {
	sem := newFakeSem(6, 0)
	restore := useFakeSem(sem, t.TempDir())
	a, err := startWith(ctx, lim, cli)
	if err != nil {
		restore()
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		a.run(rctx)
	}()
	return a, func() {
		stop()
		<-ran
		restore()
	}
}

// An idle agent reads nothing from etcd: over several hold/2 periods with no
// change, its client sends no request but the lease renewals (a stream),
// however many hosts share the limit (100 here).
func TestIdleReadsNothing(t *testing.T) {
	clus, st, ctx, done := testCluster(t, "h")
	defer done()
	manyHosts(t, ctx, st, 100)
	var c rpcCount
	cli := countingClient(t, clus, &c)
	defer cli.Close()
	a, stop := runAgentLimit(t, ctx, cli, quietLimit())
	defer stop()
	time.Sleep(500 * time.Millisecond) // its first looks
	c.take()
	time.Sleep(5 * a.lim.hold / 2)
	if n := c.take(); total(n) != 0 {
		t.Errorf("idle for 5 hold/2 periods: %d requests, %d of them "+
			"Ranges (%v)", total(n), n[rangeRPC], n)
	}
}

// An idle agent's watch of its lease's end sleeps until that end (less the
// margin) or a renewal moves it: with ttl= 30 s (a renewal every 10 s, the
// margin 5 s) it wakes at most once in 3 s, where a watch that looked at
// the clock every second woke three times.
func TestIdleLeaseWatchSleeps(t *testing.T) {
	_, st, ctx, done := testCluster(t, "h")
	defer done()
	a, stop := runAgentLimit(t, ctx, st.cli, quietLimit())
	defer stop()
	time.Sleep(500 * time.Millisecond) // its first looks
	w0 := a.leaseWakes.Load()
	time.Sleep(3 * time.Second)
	if w := a.leaseWakes.Load() - w0; w > 1 {
		t.Errorf("idle for 3 s with ttl= 30: the lease's watch woke %d times", w)
	}
	if a.leaseWakes.Load() == 0 {
		t.Error("the lease's watch never ran")
	}
}

// A change of one other host's demand costs this agent a constant number of
// etcd requests (none here: no share moves), not a read of every host's
// keys; the agent did look at the change.
func TestOtherDemandCostsConstant(t *testing.T) {
	clus, st, ctx, done := testCluster(t, "h")
	defer done()
	manyHosts(t, ctx, st, 100)
	var c rpcCount
	cli := countingClient(t, clus, &c)
	defer cli.Close()
	a, stop := runAgentLimit(t, ctx, cli, quietLimit())
	time.Sleep(500 * time.Millisecond)
	c.take()
	rev := put(t, ctx, st, "demand/x3", "1 0")
	time.Sleep(300 * time.Millisecond)
	if _, err := st.cli.Delete(ctx, st.prefix+"demand/x4"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	n := c.take()
	stop()
	if n[rangeRPC] != 0 || total(n) > 2 {
		t.Errorf("two changes of another host's demand: %d requests, "+
			"%d of them Ranges (%v)", total(n), n[rangeRPC], n)
	}
	if a.st.last.rev < rev {
		t.Errorf("the agent's last look was at revision %d, before the "+
			"change at %d", a.st.last.rev, rev)
	}
}

// sameView checks that st's kept view is what a read of etcd gives now, at
// the same revision.
func sameView(t *testing.T, ctx context.Context, st, fresh *store) {
	t.Helper()
	v1, r1, err1 := st.snapshot(&st.kept)
	v2, r2, err2 := fresh.read(ctx)
	if (err1 != nil || err2 != nil) && fmt.Sprint(err1) != fmt.Sprint(err2) {
		t.Fatalf("kept: %v; read: %v", err1, err2)
	}
	if err1 == nil && (!reflect.DeepEqual(v1, v2) || r1 != r2) {
		t.Fatalf("kept at %d: %+v\nread at %d: %+v", r1, v1, r2, v2)
	}
}

// randomChanges makes n random puts and deletes under st's prefix (two at
// once in a transaction, now and then): shares, demands (some that do not
// parse), claims, ttl/ keys, capacity/next and a key of no known kind.
func randomChanges(t *testing.T, ctx context.Context, st *store,
	rng *rand.Rand, n int) int64 {
	var rev int64
	op := func() clientv3.Op {
		h := string(rune('a' + rng.Intn(5)))
		var k, v string
		switch rng.Intn(6) {
		case 0:
			k, v = "share/"+h, strconv.Itoa(rng.Intn(3))
		case 1:
			k, v = "demand/"+h, fmt.Sprintf("%d %d", rng.Intn(4), rng.Intn(2))
			if rng.Intn(5) == 0 {
				v = "not a demand"
			}
		case 2:
			k, v = "alive/"+h, ""
		case 3:
			k, v = "ttl/"+h, strconv.Itoa(1+rng.Intn(3))
		case 4:
			k, v = "capacity/next", strconv.Itoa(1+rng.Intn(8))
		default:
			k, v = "junk/"+h, "?"
		}
		if rng.Intn(3) == 0 {
			return clientv3.OpDelete(st.prefix + k)
		}
		return clientv3.OpPut(st.prefix+k, v)
	}
	for i := 0; i < n; i++ {
		ops := []clientv3.Op{op()}
		if rng.Intn(4) == 0 {
			if o := op(); string(o.KeyBytes()) != string(ops[0].KeyBytes()) {
				ops = append(ops, o)
			}
		}
		r, err := st.cli.Txn(ctx).Then(ops...).Commit()
		if err != nil {
			t.Fatal(err)
		}
		rev = r.Header.Revision
	}
	return rev
}

// keptReaches waits until st's kept view is at rev (5 s at most).
func keptReaches(t *testing.T, st *store, rev int64) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); st.keptRev() < rev; {
		if time.Now().After(end) {
			t.Fatalf("the kept view is at %d, not %d, after 5 s",
				st.keptRev(), rev)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The kept view follows the watch exactly: after random changes under the
// prefix from another client it is what a read gives, at the same revision;
// after a compaction past its revision (its watch stopped meanwhile) it reads
// the prefix again and is again what a read gives.
func TestViewFollowsWatch(t *testing.T) {
	st, ctx, done := testStore(t, "me")
	defer done()
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	f := &store{cli: st.cli, prefix: st.prefix, host: "me", ttl: st.ttl}
	if err := f.resync(ctx); err != nil {
		t.Fatal(err)
	}
	follow := func() func() {
		fctx, stop := context.WithCancel(ctx)
		ended := make(chan struct{})
		go func() {
			defer close(ended)
			f.follow(fctx, func() {})
		}()
		return func() {
			stop()
			<-ended
		}
	}
	stop := follow()
	keptReaches(t, f, randomChanges(t, ctx, st, rng, 300))
	sameView(t, ctx, f, st)
	stop()
	rev := randomChanges(t, ctx, st, rng, 100)
	if _, err := st.cli.Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}
	stop = follow()
	defer stop()
	keptReaches(t, f, rev)
	if f.kept.resyncs != 1 {
		t.Errorf("%d reads of the prefix after the compaction, not 1",
			f.kept.resyncs)
	}
	sameView(t, ctx, f, st)
	keptReaches(t, f, randomChanges(t, ctx, st, rng, 100))
	sameView(t, ctx, f, st)
}

// slowWatcher passes each answer of a watch on after delay: a view that
// lags behind etcd.
type slowWatcher struct {
	clientv3.Watcher
	delay time.Duration
}

func (w *slowWatcher) Watch(ctx context.Context, key string,
	opts ...clientv3.OpOption) clientv3.WatchChan {
	in := w.Watcher.Watch(ctx, key, opts...)
	out := make(chan clientv3.WatchResponse)
	go func() {
		defer close(out)
		for r := range in {
			select {
			case <-time.After(w.delay):
			case <-ctx.Done():
				return
			}
			select {
			case out <- r:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// A stale view cannot over-commit: an agent whose view lags 300 ms behind
// etcd asks for all of the capacity, and another client takes 5 of the 6
// just before the agent's growth is committed.  The growth's transaction
// fails; the agent waits for its view to take that share in (it reads
// nothing) and grows by the 1 left; at no revision do the shares add up to
// more than the capacity.
func TestStaleViewCannotOvercommit(t *testing.T) {
	clus, st, ctx, done := testCluster(t, "a")
	defer done()
	r, err := st.cli.Get(ctx, "/")
	if err != nil {
		t.Fatal(err)
	}
	first := r.Header.Revision
	var c rpcCount
	cli := countingClient(t, clus, &c)
	defer cli.Close()
	cli.Watcher = &slowWatcher{Watcher: cli.Watcher,
		delay: 300 * time.Millisecond}
	sem := newFakeSem(6, 0)
	defer useFakeSem(sem, t.TempDir())()
	lim := testLimit()
	// (no renewals here: a ttl= long enough for its looks to find them
	// not late)
	lim.host, lim.policy, lim.ttl = "a", "finish", 10
	a, err := startWith(ctx, lim, cli)
	if err != nil {
		t.Fatal(err)
	}
	defer a.leave()
	sem.waiter(6)
	var once sync.Once
	c.before = func(method string) {
		if method == "/etcdserverpb.KV/Txn" {
			once.Do(func() { put(t, ctx, st, "share/b", "5") })
		}
	}
	c.take()
	began := time.Now()
	if err := a.reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	n := c.take()
	if a.raced != 1 || a.share != 1 || value(t, ctx, st, "share/a") != "1" {
		t.Errorf("growths that failed: %d (want 1); share %d, in etcd "+
			"%q (want 1)", a.raced, a.share, value(t, ctx, st, "share/a"))
	}
	if n[rangeRPC] != 0 || n["/etcdserverpb.KV/Txn"] != 2 {
		t.Errorf("%d Ranges (want 0) and %d transactions (want 2: the "+
			"failed growth, the one after the view took the share "+
			"in): %v", n[rangeRPC], n["/etcdserverpb.KV/Txn"], n)
	}
	if took := time.Since(began); took < 600*time.Millisecond {
		t.Errorf("the look took %v: it did not wait for its view "+
			"(300 ms behind) after its write and its failed growth",
			took)
	}
	sharesFit(t, ctx, st, first)
}

// lateLook is a look of agent a whose watch passes each answer on late.
type lateLook struct {
	a    *agent
	st   *store // another client's
	ctx  context.Context
	c    rpcCount      // a's requests since the look began
	took time.Duration // the look's reconcile
}

// startLateLook starts an agent of host a (policy finish, ttl= 10: its
// looks find no renewal late) on a fake semaphore of 6, its watch's
// answers delay late, and runs one reconcile for a waiter of 2; all of it
// ends with the test.
func startLateLook(t *testing.T, delay time.Duration) *lateLook {
	clus, st, ctx, done := testCluster(t, "a")
	t.Cleanup(done)
	l := &lateLook{st: st, ctx: ctx}
	cli := countingClient(t, clus, &l.c)
	t.Cleanup(func() { cli.Close() })
	cli.Watcher = &slowWatcher{Watcher: cli.Watcher, delay: delay}
	sem := newFakeSem(6, 0)
	t.Cleanup(useFakeSem(sem, t.TempDir()))
	lim := testLimit()
	lim.host, lim.policy, lim.ttl = "a", "finish", 10
	a, err := startWith(ctx, lim, cli)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.leave)
	l.a = a
	sem.waiter(2)
	l.c.take()
	began := time.Now()
	if err := a.reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	l.took = time.Since(began)
	return l
}

// A look whose watch brings nothing (a connection that hangs) does not wait
// for it past viewWait: it reads the prefix once and goes on.
func TestLookReadsWhenWatchHangs(t *testing.T) {
	l := startLateLook(t, time.Hour)
	n := l.c.take()
	if l.a.share != 2 || n[rangeRPC] != 1 || l.took < viewWait ||
		l.took > viewWait+2*time.Second {
		t.Errorf("share %d (want 2), %d Ranges (want 1), %v (want "+
			"viewWait and a little more)", l.a.share, n[rangeRPC],
			l.took)
	}
}

// A look whose watch is late by more than viewWait reads the prefix once;
// when the watch then brings what that read had taken in, the view skips
// it, and reads the prefix no second time (no "event out of revision
// order"); the events after the read are taken in.
func TestLateWatchAfterLookRead(t *testing.T) {
	l := startLateLook(t, viewWait+500*time.Millisecond)
	rev := put(t, l.ctx, l.st, "demand/b", "1 1")
	keptReaches(t, l.a.st, rev)
	n := l.c.take()
	k := &l.a.st.kept
	k.mu.Lock()
	resyncs := k.resyncs
	k.mu.Unlock()
	v, _, err := l.a.st.snapshot(k)
	if err != nil || v.shares["a"] != 2 || v.demands["b"].need != 1 {
		t.Errorf("the view at %d: %+v, %v", rev, v, err)
	}
	if l.a.share != 2 || n[rangeRPC] != 1 || resyncs != 1 {
		t.Errorf("share %d (want 2), %d Ranges and %d reads of the "+
			"prefix after the first (want 1: the look's)", l.a.share,
			n[rangeRPC], resyncs)
	}
}
