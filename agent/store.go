// SPDX-License-Identifier: GPL-2.0

package main

// One cluster limit in etcd, under PREFIX/NAME/:
//
//	capacity      the cluster's capacity, written by the first agent, and
//	              changed by wsem-agent set-capacity (setCapacity)
//	capacity/next a lower capacity that set-capacity waits for the shares
//	              to fit in: the agents' rule takes the lower of the two
//	share/HOST    what HOST may lend to its semaphore; under no lease, so
//	              that no lease's end, expiry or revocation, ever frees it:
//	              it goes when its host gives it back, when a policy
//	              deadline host's claim has been seen gone for its TTL
//	              (ttl/HOST; any other agent takes it back then, when the
//	              host's kernel has withdrawn its loan: lease.go), or when
//	              an administrator declares the host dead
//	ttl/HOST      policy deadline: the TTL of HOST's etcd lease, in
//	              seconds, written before it lends (absent: finish)
//	demand/HOST   "NEED FLOOR": what HOST's semaphore holds plus what its
//	              waiters ask for, and what it holds plus its first
//	              waiter's weight; under the agent's etcd lease; its
//	              create revision is the host's place in the queue
//	alive/HOST    the agent is running (under its lease)
//
// The sum of the shares never exceeds the capacity: a share grows only in
// a transaction that finds no share key changed or created since the
// revision the agent computed the growth at, nor the capacity (nor
// capacity/next); a share shrinks (or goes) unconditionally, which only
// frees capacity; the capacity falls only in a transaction that finds
// the shares, which fit in it, unchanged.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	clientv3 "wsem.example/agent/etcdapi"
)

type store struct {
	cli      *clientv3.Client
	prefix   string // PREFIX/NAME/
	host     string
	lease    clientv3.LeaseID // the lease alive/HOST was last claimed under
	ttl      int
	takeover bool              // the host's lock is ours: take alive/HOST over
	deadline bool              // policy deadline: ttl/HOST written with each claim
	skipped  map[string]string // keys read skips, and their values (skip)
	end      leaseEnd          // the lease's local end (lease.go)
	last     readView          // the last view looked at, for wsem stat (view.go)
	kept     keptView          // the limit as the watch brings it (kept.go)
	// the revision of this agent's last write under the prefix; a failed
	// transaction's view and answer revisions (wrote, failed in kept.go)
	want, failRev, failAt int64
}

func (s *store) key(kind string) string {
	return s.prefix + kind + "/" + s.host
}

// session is the agent's etcd lease, granted anew when it was lost: etcd
// said it is gone, or its local end passed (lease.go; renewLease is what
// renews it).  A new one claims alive/HOST, which no other live agent may
// hold: one lender per host.  A claim still under this agent's own
// earlier lease (one whose renewals went unanswered, in a leader's change,
// while etcd has not expired it yet) is taken over, not refused: else the
// agent would run without a claim once that lease expired, and
// declare-dead could give its host's share away.
func (s *store) session(ctx context.Context) (clientv3.LeaseID, error) {
	if s.lease != 0 && !s.end.lost(s.lease) {
		return s.lease, nil
	}
	// Checked before a lease is granted: a claim of another machine,
	// or, at the first claim, one this agent may not take over.
	k := s.key("alive")
	kv, err := s.getKey(ctx, k)
	if err != nil {
		return 0, err
	}
	if kv != nil && !sameMachine(string(kv.Value)) {
		return 0, s.otherMachine(kv)
	}
	if kv != nil && s.lease == 0 && !s.takeover {
		return 0, errHostTaken
	}
	sent := bootTime()
	g, err := s.cli.Grant(ctx, int64(s.ttl))
	if err != nil {
		return 0, err
	}
	lease := g.ID
	claim := []clientv3.Op{clientv3.OpPut(k, thisMachine(),
		clientv3.WithLease(lease)), s.ttlOp(g.TTL)}
	r, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
		Then(claim...).Commit()
	old := s.lease
	if err == nil && !r.Succeeded && old == 0 && s.takeover {
		old, err = s.stoppedClaim(ctx, k)
	}
	if err == nil && !r.Succeeded && old != 0 {
		r, err = s.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.LeaseValue(k), "=", old)).
			Then(claim...).Commit()
	}
	if err == nil && !r.Succeeded {
		err = errHostTaken
	}
	if err != nil {
		s.revoke(lease)
		return 0, err
	}
	s.wrote(r.Header.Revision)
	if old != 0 {
		why := "taken over from an agent that stopped"
		if s.lease != 0 {
			why = "the lease was lost"
		}
		lg.Printf("%s: alive/%s claimed again under a new etcd lease "+
			"(%s)", s.prefix, s.host, why)
		// its demand key goes with it; what is still needed is
		// published again
		s.cli.Revoke(ctx, old)
	}
	s.lease = lease
	s.end.start(lease, sent, time.Duration(s.ttl)*time.Second)
	return lease, nil
}

// revoke ends lease in etcd (its keys go with it), waiting at most its
// TTL for the answer.
func (s *store) revoke(lease clientv3.LeaseID) {
	ctx, cancel := context.WithTimeout(context.Background(),
		time.Duration(s.ttl)*time.Second)
	defer cancel()
	s.cli.Revoke(ctx, lease)
}

// renewalsLate: no renewal of the lease sent in the last half of ttl= was
// answered (they are sent every third: the last one had a sixth of ttl=
// to be answered, and was not).
func (s *store) renewalsLate() bool {
	id, until := s.end.get()
	ttl := time.Duration(s.ttl) * time.Second
	return id != 0 && bootTime()-(until-ttl) > ttl/2
}

// answers reads one key of the limit (its capacity): an error if etcd does
// not answer within a third of ttl= (or ctx).
func (s *store) answers(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(s.ttl)*time.Second/3)
	defer cancel()
	_, err := s.getKey(ctx, s.prefix+"capacity")
	return err
}

// getKey is key k as etcd has it now (nil: no such key).
func (s *store) getKey(ctx context.Context, k string) (*clientv3.KeyValue, error) {
	r, err := s.cli.Get(ctx, k)
	if err != nil || len(r.Kvs) == 0 {
		return nil, err
	}
	return r.Kvs[0], nil
}

// stoppedClaim is the lease of claim k, made by a stopped agent of this
// machine, for the caller (which holds the host's lock file) to take it
// over: 0 if there is no such key; errOtherMachine if another machine
// made it (nothing is taken over from a machine that may still lend).
func (s *store) stoppedClaim(ctx context.Context, k string) (clientv3.LeaseID, error) {
	kv, err := s.getKey(ctx, k)
	if kv == nil {
		return 0, err
	}
	if !sameMachine(string(kv.Value)) {
		return 0, s.otherMachine(kv)
	}
	return clientv3.LeaseID(kv.Lease), nil
}

// otherMachine is the error for claim kv, another machine's.
func (s *store) otherMachine(kv *clientv3.KeyValue) error {
	return fmt.Errorf("%w: %s is %q, this machine is %q",
		errOtherMachine, kv.Key, kv.Value, thisMachine())
}

// errOtherMachine: alive/HOST is another machine's claim.
var errOtherMachine = errors.New("another machine's wsem-agent serves " +
	"this host (give each machine its own host=)")

// thisMachine is the value of this machine's claims: "machine=ID boot=ID"
// (/etc/machine-id, empty where there is none; the kernel's boot_id).
func thisMachine() string {
	return "machine=" + readID("/etc/machine-id") + " boot=" +
		readID("/proc/sys/kernel/random/boot_id")
}

func readID(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// sameMachine says whether claim (alive/HOST's value) was made on this
// machine: the same machine id where both have one, else the same boot.
// An empty claim (an agent before claims said whose they are) counts as
// this machine's, as every claim did then.
func sameMachine(claim string) bool {
	if claim == "" {
		return true
	}
	id := func(v, key string) string {
		for _, f := range strings.Fields(v) {
			if k, x, ok := strings.Cut(f, "="); ok && k == key {
				return x
			}
		}
		return ""
	}
	me := thisMachine()
	if m := id(me, "machine"); m != "" && id(claim, "machine") != "" {
		return m == id(claim, "machine")
	}
	return id(me, "boot") != "" && id(me, "boot") == id(claim, "boot")
}

// shareOp puts share/HOST at n.
func (s *store) shareOp(n int64) clientv3.Op {
	return clientv3.OpPut(s.key("share"), strconv.FormatInt(n, 10))
}

// ttlOp, made with each claim (session), before anything is lent: under
// policy deadline it puts ttl/HOST, the TTL etcd granted the lease (at
// least ttl=: etcd raises one below its minimum), which the renewals'
// answers and so the kernel deadline follow: the host's share is taken
// back that long after its claim is seen gone.  A takeBack deletes it,
// and each claim puts it again, which other agents see as a new claim
// (orphansDue).  Under finish it deletes it.
func (s *store) ttlOp(ttl int64) clientv3.Op {
	if s.deadline {
		return clientv3.OpPut(s.key("ttl"), strconv.FormatInt(ttl, 10))
	}
	return clientv3.OpDelete(s.key("ttl"))
}

// dropTTL deletes ttl/HOST: a stopping agent's host has no share left.
func (s *store) dropTTL(ctx context.Context) error {
	_, err := s.cli.Delete(ctx, s.key("ttl"))
	return err
}

// takeBack deletes host's share (and its ttl/HOST) if its claim is still
// gone, and its share and ttl/HOST are still those of revisions o.rev and
// o.ttlRev (no claim came and went since): true if it did.
func (s *store) takeBack(ctx context.Context, host string, o orphan) (bool, error) {
	share := s.prefix + "share/" + host
	ttl := s.prefix + "ttl/" + host
	r, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(s.prefix+"alive/"+host), "=", 0),
			clientv3.Compare(clientv3.ModRevision(share), "=", o.rev),
			clientv3.Compare(clientv3.ModRevision(ttl), "=", o.ttlRev)).
		Then(clientv3.OpDelete(share),
			clientv3.OpDelete(ttl)).Commit()
	if err != nil {
		return false, err
	}
	if r.Succeeded {
		s.wrote(r.Header.Revision)
	}
	return r.Succeeded, nil
}

// errHostTaken: alive/HOST is another agent's (or a dead one's, until its
// lease expires).
var errHostTaken = errors.New("another wsem-agent serves this host " +
	"(alive/HOST is under another lease)")

// close revokes the agent's lease: its demand and alive keys go at once.
func (s *store) close() {
	if s.lease != 0 {
		s.revoke(s.lease)
		s.lease = 0
	}
}

// checkCapacity fails if etcd has another capacity than this host's,
// and changes nothing: the first of a start's checks.
func (s *store) checkCapacity(ctx context.Context, capacity int64) error {
	kv, err := s.getKey(ctx, s.prefix+"capacity")
	if err != nil || kv == nil {
		return err
	}
	return s.sameCapacity(kv, capacity)
}

// sameCapacity fails if kv (PREFIX/NAME/capacity, nil if missing) is not
// capacity.
func (s *store) sameCapacity(kv *clientv3.KeyValue, capacity int64) error {
	if kv != nil && string(kv.Value) == strconv.FormatInt(capacity, 10) {
		return nil
	}
	got := "nothing"
	if kv != nil {
		got = string(kv.Value)
	}
	return fmt.Errorf("%scapacity in etcd is %s, this host says %d",
		s.prefix, got, capacity)
}

// ensureCapacity writes the cluster's capacity if no agent did, and fails
// if another agent was configured with another one.
func (s *store) ensureCapacity(ctx context.Context, capacity int64) error {
	k := s.prefix + "capacity"
	r, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
		Then(clientv3.OpPut(k, strconv.FormatInt(capacity, 10))).
		Else(clientv3.OpGet(k)).Commit()
	if err != nil || r.Succeeded {
		return err
	}
	var kv *clientv3.KeyValue
	if kvs := r.Responses[0].GetResponseRange().Kvs; len(kvs) == 1 {
		kv = kvs[0]
	}
	return s.sameCapacity(kv, capacity)
}

// read is the limit as etcd has it now, and the revision it was read at:
// a read of the whole prefix, parsed as the kept view is (kept.go), for
// wsem-agent status and the tests.  The agent's looks use the kept view.
func (s *store) read(ctx context.Context) (*view, int64, error) {
	r, err := s.cli.Get(ctx, s.prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, 0, err
	}
	var k keptView
	s.load(&k, keyValues(r.Kvs), r.Header.Revision)
	v, rev, err := s.snapshot(&k)
	if err != nil {
		return nil, 0, err
	}
	s.last = readView{v, rev, bootTime()}
	return v, rev, nil
}

// keyValues is kvs, as read gives them, for the kept view.
func keyValues(kvs []*clientv3.KeyValue) []keyValue {
	out := make([]keyValue, len(kvs))
	for i, kv := range kvs {
		out[i] = keyValue{key: string(kv.Key), value: string(kv.Value),
			mod: kv.ModRevision, create: kv.CreateRevision}
	}
	return out
}

// resync loads the kept view with a read of the whole prefix: at the
// agent's start, and when its watch cannot go on from the view's revision
// (a compaction, a canceled watch, a gap).
func (s *store) resync(ctx context.Context) error {
	r, err := s.cli.Get(ctx, s.prefix, clientv3.WithPrefix())
	if err != nil {
		return err
	}
	s.load(&s.kept, keyValues(r.Kvs), r.Header.Revision)
	return nil
}

// errGap: the watch brought an event at or below a revision it had
// brought before, or the one it was started after.
var errGap = errors.New("an event out of revision order: reading again")

// applyEvents takes the events of one answer of the watch into the kept
// view, in order: news if one of them changes what a look uses.  etcd's
// watch brings every change after the revision it was started after, in
// revision order, all of a revision's events in one answer: the first
// event must come after the last revision the watch brought before
// (watchRev), each next one at or after the one before it (else errGap,
// and nothing is taken in).  The events at or below the view's revision R
// are skipped: they are in the view already (a look's read, resync, may
// have taken it past its watch).  The view stays exactly etcd's keys at
// its revision: the watch has brought every change up to this answer's
// last one, those up to watchRev in earlier answers, the rest in this one;
// R is at or past watchRev (each answer leaves the view at or past its last
// event, and R never falls: load), so every change after R, up to the
// answer's last, is in this answer, and is taken in here, in order.
func (s *store) applyEvents(evs []keyValue) (news bool, err error) {
	k := &s.kept
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(evs) == 0 {
		return false, nil
	}
	last := k.watchRev
	for i, ev := range evs {
		if ev.mod < last || (i == 0 && ev.mod == last) {
			return false, fmt.Errorf("%w (revision %d after %d)",
				errGap, ev.mod, last)
		}
		last = ev.mod
	}
	k.watchRev = last
	if last <= k.rev {
		return false, nil
	}
	for _, ev := range evs {
		if ev.mod > k.rev && s.applyLocked(k, ev) {
			news = true
		}
	}
	k.rev = last
	k.movedLocked()
	return news, nil
}

// skip logs a key of the limit that read leaves out, once per key and
// value: a demand, a ttl or a capacity/next that does not parse (the host
// then asks for nothing, its share is not taken back, or the shares are
// kept within the capacity only), or a key of no known kind.
// One bad write under the prefix does not stop every agent's looks.
func (s *store) skip(key, value string, err error) {
	if s.skipped == nil {
		s.skipped = map[string]string{}
	}
	if old, ok := s.skipped[key]; ok && old == value {
		return
	}
	s.skipped[key] = value
	lg.Printf("%s: %q: skipped (%v)", key, value, err)
}

// growShare sets this host's share to share if no share changed since rev,
// nor the capacity (nor capacity/next: set-capacity): false if one did
// (the next look waits for the view to take that change in: failed).  rev
// is the revision of the view the growth was computed from (kept.go says
// why a view behind etcd cannot over-commit through this compare).
func (s *store) growShare(ctx context.Context, rev, share int64) (bool, error) {
	r, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(s.prefix+"share/").
			WithPrefix(), "<", rev+1),
			clientv3.Compare(clientv3.ModRevision(s.prefix+"capacity").
				WithPrefix(), "<", rev+1)).
		Then(s.shareOp(share)).Commit()
	if err != nil {
		return false, err
	}
	if r.Succeeded {
		s.wrote(r.Header.Revision)
	} else {
		s.failed(rev, r.Header.Revision)
	}
	return r.Succeeded, nil
}

// shrinkShare lowers this host's share from old to share (0 deletes it),
// if etcd still has old: false if not (an administrator lowered it).
func (s *store) shrinkShare(ctx context.Context, old, share int64) (bool, error) {
	k := s.key("share")
	op := clientv3.OpDelete(k)
	if share > 0 {
		op = s.shareOp(share)
	}
	r, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.Value(k), "=",
			strconv.FormatInt(old, 10))).
		Then(op).Commit()
	if err != nil {
		return false, err
	}
	if r.Succeeded {
		s.wrote(r.Header.Revision)
	} else {
		// etcd has another share than the view the look had:
		// changed after it
		s.failed(s.last.rev, r.Header.Revision)
	}
	return r.Succeeded, nil
}

// setDemand publishes this host's need and floor (nothing while the need
// is 0); wrote: it changed something in etcd.  The key keeps its revision, the host its place in the queue,
// unless requeue: the host's turn at the front is over (turnOver in
// main.go), and the host goes to the back.
func (s *store) setDemand(ctx context.Context, v *view, d demand,
	requeue bool) (wrote bool, err error) {
	old, queued := v.demands[s.host]
	if queued && (d.need == 0 || requeue) {
		r, err := s.cli.Delete(ctx, s.key("demand"))
		if err != nil {
			return true, err
		}
		if r.Deleted > 0 {
			s.wrote(r.Header.Revision)
		}
		queued, wrote = false, true
	}
	if d.need == 0 || (queued && old.need == d.need &&
		old.floor == d.floor) {
		return wrote, nil
	}
	lease, err := s.session(ctx)
	if err != nil {
		return true, err
	}
	r, err := s.cli.Put(ctx, s.key("demand"),
		fmt.Sprintf("%d %d", d.need, d.floor),
		clientv3.WithLease(lease))
	if err == nil {
		s.wrote(r.Header.Revision)
	}
	return true, err
}

// declareDead gives back host's share and demand, for an administrator who
// knows that the host's agent is stopped and none of its holders runs any
// more.  Refused while alive/HOST says an agent runs, and for a policy
// deadline host (ttl/HOST), whose share the other agents take back
// themselves when its kernel can no longer lend it.  Else it waits first,
// the claim still gone, for wait (the limit's ttl=): by then the host's
// kernel has withdrawn its loan, whose deadline is at most the TTL after
// the send of the host's last answered renewal, which came before its
// claim went.  A claim, a ttl/HOST or a change of the share in that time
// refuses it; waiting is called when the wait starts.  It reads etcd
// itself, not an agent's view: its own transactions compare what it read.
func declareDead(ctx context.Context, cli *clientv3.Client, prefix, host string,
	wait time.Duration, waiting func()) error {
	alive := prefix + "alive/" + host
	ttl := prefix + "ttl/" + host
	share := prefix + "share/" + host
	gone := []clientv3.Cmp{
		clientv3.Compare(clientv3.CreateRevision(alive), "=", 0),
		clientv3.Compare(clientv3.CreateRevision(ttl), "=", 0)}
	r, err := cli.Txn(ctx).If(gone...).Then(clientv3.OpGet(share)).
		Else(clientv3.OpGet(alive), clientv3.OpGet(ttl)).Commit()
	if err != nil {
		return err
	}
	if !r.Succeeded && len(r.Responses[0].GetResponseRange().Kvs) > 0 {
		return fmt.Errorf("%s: its wsem-agent is alive (%s): stop it "+
			"first", host, alive)
	}
	if !r.Succeeded {
		secs := "?"
		if kvs := r.Responses[1].GetResponseRange().Kvs; len(kvs) > 0 {
			secs = string(kvs[0].Value)
		}
		return fmt.Errorf("%s is under policy deadline (%s): any "+
			"running agent of the limit takes its share back %s s "+
			"after its claim went, when its kernel lends it no "+
			"more; nothing declared", host, ttl, secs)
	}
	var shareRev int64
	if kvs := r.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
		shareRev = kvs[0].ModRevision
		if waiting != nil {
			waiting()
		}
		wctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		wc := cli.Watch(wctx, prefix, clientv3.WithPrefix(),
			clientv3.WithRev(r.Header.Revision+1))
		for resp := range wc {
			for _, ev := range resp.Events {
				if k := string(ev.Kv.Key); k == alive || k == ttl ||
					k == share {
					return fmt.Errorf("%s changed while "+
						"declare-dead waited (its agent "+
						"is back?): nothing declared", k)
				}
			}
		}
		<-wctx.Done() // (a watch that ended early: the whole wait)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	t, err := cli.Txn(ctx).If(append(gone, clientv3.Compare(
		clientv3.ModRevision(share), "=", shareRev))...).
		Then(clientv3.OpDelete(share),
			clientv3.OpDelete(prefix+"demand/"+host)).Commit()
	if err == nil && !t.Succeeded {
		err = fmt.Errorf("%s: its claim or share changed while "+
			"declare-dead waited: nothing declared", host)
	}
	return err
}

// setCapacity makes the limit's capacity n.  Growth is written at once.
// A shrink below what the shares add up to puts capacity/next first, which
// the agents' rule takes as the capacity (read): they lower their shares
// as they lower any share, a loan before its share, never below what is
// held; the capacity is written once the shares fit in n, in a transaction
// that finds them unchanged since they were read.  So the shares never add
// up to more than the capacity in etcd.  waiting is called, once, when the
// shares must fall first; ctx's end leaves capacity/next in place (the
// shares are kept within it until a set-capacity ends: the old capacity
// again takes it away).  old is the capacity before.
func setCapacity(ctx context.Context, st *store, n int64,
	waiting func(sum int64)) (old int64, err error) {
	ttl := time.Duration(st.ttl) * time.Second
	for said := false; ; {
		old, sum, rev, done, err := st.capacityStep(ctx, n)
		if err != nil || done {
			return old, err
		}
		if rev == 0 {
			continue // something changed: read again
		}
		if !said && waiting != nil {
			waiting(sum)
			said = true
		}
		// the shares fall as the agents look: watched from rev on
		wctx, cancel := context.WithCancel(ctx)
		wc := st.cli.Watch(clientv3.WithRequireLeader(wctx), st.prefix,
			clientv3.WithPrefix(), clientv3.WithRev(rev+1))
		select {
		case <-wc:
		case <-wctx.Done():
		case <-time.After(ttl):
		}
		cancel()
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
	}
}

// capacityStep is one step of setCapacity, within ttl=: it reads the
// capacity (old), capacity/next and the shares (sum), and writes capacity
// n if the shares fit in it (done), else capacity/next n, each if none of
// them changed since.  rev: the revision to wait from (capacity/next is n,
// the shares do not fit in it yet), or 0 (read again).  The read is of
// etcd, not of an agent's view: the capacity falls only in a transaction
// that compares the shares the command itself read (a command, run once:
// the agents take capacity/next and the capacity from their views).
func (st *store) capacityStep(ctx context.Context, n int64) (old, sum, rev int64, done bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(st.ttl)*time.Second)
	defer cancel()
	k := st.prefix + "capacity"
	r, err := st.cli.Get(ctx, st.prefix, clientv3.WithPrefix())
	if err != nil {
		return 0, 0, 0, false, err
	}
	var next int64
	for _, kv := range r.Kvs {
		rest := strings.TrimPrefix(string(kv.Key), st.prefix)
		if rest != "capacity" && rest != "capacity/next" &&
			!strings.HasPrefix(rest, "share/") {
			continue
		}
		x, err := strconv.ParseInt(string(kv.Value), 10, 64)
		if (err != nil || x < 0) && rest == "capacity/next" {
			continue // replaced below
		}
		if err != nil || x < 0 {
			return 0, 0, 0, false, fmt.Errorf("%s is %q: not a number of "+
				"0 or more (put it right first)", kv.Key, kv.Value)
		}
		switch {
		case rest == "capacity":
			old = x
		case rest == "capacity/next":
			next = x
		default:
			sum += x
		}
	}
	if old == 0 {
		return 0, 0, 0, false, fmt.Errorf("%s: no capacity in etcd: the "+
			"first agent of the limit writes it", k)
	}
	// a shrink's capacity/next, or the capacity once the shares fit
	ops := []clientv3.Op{clientv3.OpPut(k+"/next", strconv.FormatInt(n, 10))}
	if sum <= n {
		ops = []clientv3.Op{clientv3.OpPut(k, strconv.FormatInt(n, 10)),
			clientv3.OpDelete(k + "/next")}
	} else if next == n {
		return old, sum, r.Header.Revision, false, nil
	}
	t, err := st.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(st.prefix+"share/").
			WithPrefix(), "<", r.Header.Revision+1),
			clientv3.Compare(clientv3.ModRevision(k).WithPrefix(),
				"<", r.Header.Revision+1)).
		Then(ops...).Commit()
	if err != nil {
		return 0, 0, 0, false, err
	}
	return old, sum, 0, t.Succeeded && sum <= n, nil
}
