// SPDX-License-Identifier: GPL-2.0

// wsem-agent keeps this host's share of cluster limits in etcd and lends
// it to the host's semaphore of the same name.  The limits are the lines
// of /etc/wsem.d/*.conf with cluster=etcd:
//
//	licences capacity=20 cluster=etcd endpoints=https://10.0.0.1:2379 cacert=/etc/etcd/ca.pem
//
// Usage:
//
//	wsem-agent [-c DIR_OR_FILE]...           run (a systemd unit's ExecStart)
//	wsem-agent declare-dead NAME HOST        give back a dead host's share
//	wsem-agent set-capacity NAME N           change the cluster's capacity
//	wsem-agent status NAME [--json]          the limit as etcd has it
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	clientv3 "wsem.example/agent/etcdapi"
)

// lg is the agent's log: standard error, one line per event, no time
// (journald adds it).  Not the log package's own logger, whose output
// etcd's client packages redirect into theirs (capnslog's prefix).
var lg = log.New(os.Stderr, "wsem-agent: ", 0)

// An agent serves one limit.
type agent struct {
	lim     *limit
	st      *store
	loc     *local
	share   int64     // what etcd has as this host's share
	loan    int64     // what the agent lends the host's semaphore: <= share
	idle    time.Time // since when the share is above the rule's, or zero
	grants  int64     // the semaphore's grants when the host last looked
	served  time.Time // since when served all at the queue's front, or zero
	fell    time.Time // since when the need is below the published one
	again   time.Time // look again then (toPublish's grace), or zero
	raced   int64     // growths that found a share changed in etcd
	capSeen int64     // etcd's capacity at the last look (noteCapacity)
	lock    *os.File  // the host's lock file (lockHost), or nil
	shown   viewFile  // what wsem stat shows (view.go)
	// other policy deadline hosts' shares whose claim is gone (plan.go)
	orphans map[string]orphan

	// wake has the agent look (poke); the watch that keeps the store's
	// view (follow) runs from the start until stopWatch, and ends
	// watched
	wake      chan struct{}
	stopWatch context.CancelFunc
	watched   chan struct{}

	// mu guards loan, cut, ended and front: the look at etcd raises and
	// lowers the loan, the lease's watch (lease.go) drops it to 0 near
	// the lease's local end, and no raise is made while cut; both end the
	// holders (endHolders) when the lease ends or is lost.
	mu    sync.Mutex
	cut   bool         // the lease's local end is near: lend nothing
	ended map[int]bool // holders sent SIGKILL (endHolders)
	front bool         // the last look found the host at the queue's front

	leaseWakes atomic.Int64 // watchLeaseEnd's rounds (a test counts them)
}

// poke has the agent look again (run), once however many pokes come
// before the look.
func (a *agent) poke() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// setFront records whether the host is at the front of the queue.
func (a *agent) setFront(front bool) {
	a.mu.Lock()
	a.front = front
	a.mu.Unlock()
}

// atFront: the last look found the host at the front of the queue, where
// a grant may end its turn (turnOver).
func (a *agent) atFront() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.front
}

// startWatch starts the watch that keeps the store's view (follow), which
// the looks decide from, until endWatch.
func (a *agent) startWatch() {
	ctx, cancel := context.WithCancel(context.Background())
	a.stopWatch, a.watched = cancel, make(chan struct{})
	go func() {
		defer close(a.watched)
		a.st.follow(ctx, a.poke)
	}()
}

// endWatch stops the watch, and waits for it to end.
func (a *agent) endWatch() {
	if a.stopWatch != nil {
		a.stopWatch()
		<-a.watched
		a.stopWatch = nil
	}
}

// setLoan makes the host's semaphore take loan from the agent's handle
// (nothing while cut).  A loan lowered below what is held revokes
// nothing: the host grants nothing more until its holders are under it.
func (a *agent) setLoan(loan int64, why string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cut {
		loan = 0
	}
	return a.lendLocked(loan, why)
}

// lent is what the agent lends now.
func (a *agent) lent() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.loan
}

// lendLocked lends loan until the lease's local end less the margin (the
// kernel withdraws it then unless lent again: lease.go); a deadline that
// has passed lends nothing.
func (a *agent) lendLocked(loan int64, why string) error {
	err := a.loc.lend(loan, a.loanDeadline())
	if errors.Is(err, syscall.ETIMEDOUT) {
		loan, why = 0, why+"; the lease's local end has passed"
		err = a.loc.lend(0, 0)
	}
	if err != nil {
		return err
	}
	if loan != a.loan {
		lg.Printf("%s: loan %d -> %d (%s)", a.lim.name, a.loan, loan,
			why)
	}
	a.loan = loan
	return nil
}

// setShare records what etcd has as this host's share.
func (a *agent) setShare(share int64, why string) {
	if share != a.share {
		lg.Printf("%s: share %d -> %d (%s)", a.lim.name, a.share, share,
			why)
	}
	a.share = share
}

// reconcile brings the share to what the rule (plan.go) gives this host:
// it grows in etcd first, then the loan; it shrinks the loan first, then
// etcd, never below what the host still holds.  So the host holds and
// grants from no more than what etcd says it has: the loan never exceeds
// the share, and after a loan is lowered below what is held, nothing more
// is granted and the held weight only falls.
func (a *agent) reconcile(ctx context.Context) error {
	// The claim on alive/HOST, made again at once if the lease was lost
	// (each look, at least every hold/2); what was lent under the lost
	// one is withdrawn first.
	if a.st.lease != 0 && a.st.end.lost(a.st.lease) {
		a.loseLease()
	}
	if _, err := a.st.session(ctx); err != nil {
		return err
	}
	if a.st.renewalsLate() {
		// etcd has not answered the lease's renewals for half of
		// ttl=: a read of one key says whether it answers at all (the
		// look fails, and says why, while it does not), since the
		// view stays as it was while the watch hears nothing
		if err := a.st.answers(ctx); err != nil {
			return err
		}
	}
	d, used, grants, err := a.loc.demand()
	if err != nil {
		return err
	}
	granted := grants != a.grants
	a.grants = grants
	a.again = time.Time{}
	// The view the watch keeps (kept.go), not a read: etcd is asked
	// only to commit what the look decides.
	v, rev, err := a.st.look(ctx)
	if err != nil {
		return err
	}
	a.noteCapacity(v)
	if !v.alive[a.lim.host] {
		// The claim went while the lease lives (deleted by hand):
		// the other agents count from now; act as on a lost lease.
		a.st.end.expired(a.st.lease)
		return fmt.Errorf("alive/%s is gone from etcd: claiming "+
			"the host again", a.lim.host)
	}
	if took, err := a.takeBackOrphans(ctx, v); err != nil {
		return err
	} else if took {
		if v, rev, err = a.st.look(ctx); err != nil {
			return err
		}
	}
	turned := a.turnOver(v, granted)
	if turned && v.othersWait(a.lim.host) && a.lent() > used {
		// The turn is over and other hosts wait: nothing more is
		// granted here from now on (a job started while the queue
		// changes in etcd would hold its weight into the next
		// host's turn).  The look below lends what the rule gives.
		if err := a.setLoan(used, "turn over, others wait"); err != nil {
			return err
		}
	}
	wrote, err := a.st.setDemand(ctx, v, a.toPublish(v, d), turned)
	if err != nil {
		return err
	}
	for try := 0; try < 8; try++ {
		// (the first view is still the one to decide from, unless
		// the demand was just written: look waits for the view to
		// have it, and after a failed growth, for the change that
		// failed it)
		if try > 0 || wrote {
			if v, rev, err = a.st.look(ctx); err != nil {
				return err
			}
		}
		a.setFront(v.front(a.lim.host))
		// What etcd has is the share: less after declare-dead, more
		// after a change that etcd took but this agent did not see.
		if got := v.shares[a.lim.host]; got != a.share {
			a.setShare(got, "as etcd has it")
			if a.lent() > got {
				if err := a.setLoan(got, "as etcd has it"); err != nil {
					return err
				}
			}
		}
		target := v.targets()[a.lim.host]
		switch {
		case target > a.share:
			a.idle = time.Time{}
			g := min64(target-a.share, v.free())
			if g <= 0 {
				return a.raiseLoan(a.share, d)
			}
			// (fleet_test widens the race it guards against)
			time.Sleep(testDelay)
			ok, err := a.st.growShare(ctx, rev, a.share+g)
			if err != nil {
				return err
			}
			if ok {
				a.setShare(a.share+g, "grown")
				return a.raiseLoan(a.share, d)
			}
			a.raced++
		case target < a.share:
			return a.shrink(ctx, v, target)
		default:
			a.idle = time.Time{}
			return a.raiseLoan(a.share, d)
		}
	}
	return nil
}

// noteCapacity logs, once for each value, that etcd's capacity is not
// capacity= (set-capacity changed it): the shares follow etcd's; the
// host's semaphore keeps its ceiling, and the next start needs capacity=
// changed.
func (a *agent) noteCapacity(v *view) {
	c := v.capacity
	if v.full != 0 {
		c = v.full
	}
	if c == a.capSeen {
		return
	}
	if a.capSeen != 0 || c != a.lim.capacity {
		lg.Printf("%s: capacity %d in etcd (capacity= %d), the shares "+
			"kept within %d", a.lim.name, c, a.lim.capacity,
			v.capacity)
	}
	a.capSeen = c
}

// loseLease is the end of what was lent under a lease that is lost (etcd
// said it is gone, or its local end passed): nothing is lent until a look
// under the new one has read the share, and under policy deadline the
// holders are ended, as at the lease's local end (lease.go).
func (a *agent) loseLease() {
	if err := a.setLoan(0, "the lease was lost"); err != nil {
		lg.Printf("%s: %v", a.lim.name, err)
	}
	if a.lim.policy == "deadline" {
		a.endHolders()
	}
}

// takeBackOrphans deletes the shares of other policy deadline hosts whose
// claim it has seen gone for their TTL (orphansDue in plan.go): true if it
// deleted one.  A share not due yet has its look (a.again).
func (a *agent) takeBackOrphans(ctx context.Context, v *view) (bool, error) {
	if a.orphans == nil {
		a.orphans = map[string]orphan{}
	}
	now := a.st.last.at
	took := false
	for _, h := range orphansDue(v, a.orphans, a.lim.host, now) {
		ok, err := a.st.takeBack(ctx, h, a.orphans[h])
		if err != nil {
			return took, err
		}
		delete(a.orphans, h)
		if ok {
			lg.Printf("%s: %s's share of %d taken back: its claim "+
				"has been gone for its ttl=%d (policy deadline)",
				a.lim.name, h, v.shares[h], v.ttls[h])
			took = true
		}
	}
	if at := nextDue(v, a.orphans); at != 0 {
		a.lookBy(time.Now().Add(at - bootTime()))
	}
	return took, nil
}

// lookBy has the agent look at etcd again by t at the latest.
func (a *agent) lookBy(t time.Time) {
	if a.again.IsZero() || t.Before(a.again) {
		a.again = t
	}
}

// turnOver says whether this host leaves its place in the queue for the
// back: it is at the front (its demand key is the oldest) and a request on
// it was granted (granted: since the last look) turn= or more after it
// first had, at the front, all that the rule gives it (its share as large
// as the rule's, read in v: the other hosts gave back what it needed).  The
// host at the front is served for a turn, not for one grant: the shares do
// not move from host to host (each move a drain of the host that gives up
// its share) at every grant, and the time the others take to give their
// shares back is not taken from the turn.  Other hosts keep their places.
func (a *agent) turnOver(v *view, granted bool) bool {
	if !v.front(a.lim.host) {
		a.served = time.Time{}
		return false
	}
	now := time.Now()
	if a.served.IsZero() && v.shares[a.lim.host] >= v.targets()[a.lim.host] {
		a.served = now
	}
	if !granted || a.served.IsZero() || now.Sub(a.served) < a.lim.turn {
		return false
	}
	a.served = time.Time{}
	return true
}

// toPublish is the demand to publish in etcd: d, but a fall of the need
// (with no rise of the floor) only once it has lasted the grace.  What a
// host's jobs give back, its next jobs mostly ask for again at once: the
// rule then does not take the share away and give it back, and the other
// agents are not woken by the dip.  A demand kept too high for the grace
// only keeps an idle share that long.
func (a *agent) toPublish(v *view, d demand) demand {
	old, queued := v.demands[a.lim.host]
	if !queued || d.need >= old.need || d.floor > old.floor {
		a.fell = time.Time{}
		return d
	}
	now := time.Now()
	if a.fell.IsZero() {
		a.fell = now
	}
	if end := a.fell.Add(a.grace()); now.Before(end) {
		a.lookBy(end)
		return old
	}
	return d
}

// grace is how long a fall of the host's need waits before it is
// published: 100 ms, or hold= if shorter.
func (a *agent) grace() time.Duration {
	if a.lim.hold < 100*time.Millisecond {
		return a.lim.hold
	}
	return 100 * time.Millisecond
}

// raiseLoan lends up to loan, as the host's demand asks.
func (a *agent) raiseLoan(loan int64, d demand) error {
	if loan <= a.lent() {
		return nil
	}
	return a.setLoan(loan, fmt.Sprintf("need %d, floor %d", d.need,
		d.floor))
}

// shrink gives back what the rule no longer gives this host: at once when
// another host lacks capacity, else after the hold time.  The loan drops
// to the rule's share at once, even below what is held (nothing is
// revoked, nothing more is granted), and etcd gets back all but the
// greater of that share and what is still held; each later look, woken
// by a release, gives back more, until the share is the rule's.
func (a *agent) shrink(ctx context.Context, v *view, target int64) error {
	now := time.Now()
	if a.idle.IsZero() {
		a.idle = now
	}
	others := v.othersWait(a.lim.host)
	draining := a.lent() <= target
	if !draining && !others && now.Sub(a.idle) < a.lim.hold {
		return nil
	}
	why := "idle"
	if others {
		why = "others wait"
	}
	if a.lent() > target {
		if err := a.setLoan(target, why); err != nil {
			return err
		}
	}
	// Read after the loan is down: from here the held weight only falls.
	_, used, _, err := a.loc.demand()
	if err != nil {
		return err
	}
	keep := target
	if used > keep {
		keep = used
		why = fmt.Sprintf("%d still held", used)
	}
	if keep < a.share {
		// (if etcd has another share now, the next look follows it)
		ok, err := a.st.shrinkShare(ctx, a.share, keep)
		if err != nil {
			return err
		}
		if ok {
			a.setShare(keep, why)
		}
	}
	if a.share == target {
		a.idle = time.Time{}
	}
	return nil
}

// run looks (reconcile) on each poke: a change in etcd that the watch
// brings (follow), a change of the host's demand, the lease's and the
// loan deadline's events (watchLeaseEnd), a look asked for by a time
// (a.again), and every hold/2 in any case, which reads nothing from etcd:
// the looks decide from the watch's view.
func (a *agent) run(ctx context.Context) {
	var wg sync.WaitGroup
	poke := a.poke
	wg.Add(3)
	go func() {
		defer wg.Done()
		a.renewLease(ctx)
	}()
	go func() {
		defer wg.Done()
		a.watchLeaseEnd(ctx, poke)
	}()
	go func() {
		defer wg.Done()
		a.watchDemand(ctx)
	}()
	for ctx.Err() == nil {
		looked := time.Now()
		// Every etcd call of a look ends within the lease's time.
		lctx, cancel := context.WithTimeout(ctx,
			time.Duration(a.lim.ttl)*time.Second)
		err := a.reconcile(lctx)
		cancel()
		a.publish(err)
		if err != nil && ctx.Err() == nil {
			lg.Printf("%s: %v", a.lim.name, err)
			time.Sleep(a.lim.hold / 4)
			poke()
		}
		// (a fall of the need is published when its grace ends)
		var again <-chan time.Time
		if err == nil && !a.again.IsZero() {
			again = time.After(time.Until(a.again))
		}
		select {
		case <-a.wake:
		case <-again:
		case <-ctx.Done():
		}
		// The events of the next lookGap are taken in by one look.
		time.Sleep(time.Until(looked.Add(lookGap)))
	}
	wg.Wait()
	a.leave()
}

// follow keeps the kept view (loaded first) from etcd's watch of the
// prefix, from the view's revision on, until ctx ends; poke is called when
// an answer changes what a look uses, and after each resync.  A
// compaction past the view's revision, a canceled or ended watch (a
// member without a leader: WithRequireLeader) or a gap loads the view
// again from a read of the prefix, then watches from its revision.
func (s *store) follow(ctx context.Context, poke func()) {
	for pause := time.Duration(0); ctx.Err() == nil; {
		if pause > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(pause):
			}
			rctx, cancel := context.WithTimeout(ctx,
				time.Duration(s.ttl)*time.Second)
			err := s.resync(rctx)
			cancel()
			if err != nil {
				if ctx.Err() == nil {
					lg.Printf("%s: etcd: %v", s.prefix, err)
				}
				pause = time.Second
				continue
			}
			poke()
		}
		pause = 100 * time.Millisecond
		wctx, cancel := context.WithCancel(ctx)
		wc := s.cli.Watch(clientv3.WithRequireLeader(wctx), s.prefix,
			clientv3.WithPrefix(), clientv3.WithRev(s.watchFrom()+1))
		for resp := range wc {
			err := resp.Err()
			if err == nil && resp.Canceled {
				err = errors.New("watch canceled")
			}
			var news bool
			if err == nil {
				evs := make([]keyValue, len(resp.Events))
				for i, ev := range resp.Events {
					evs[i] = keyValue{key: string(ev.Kv.Key),
						value:  string(ev.Kv.Value),
						del:    ev.Type == clientv3.DELETE,
						mod:    ev.Kv.ModRevision,
						create: ev.Kv.CreateRevision}
				}
				news, err = s.applyEvents(evs)
			}
			if err != nil {
				if ctx.Err() == nil {
					lg.Printf("%s: etcd watch: %v", s.prefix, err)
				}
				break
			}
			if news {
				poke()
			}
		}
		cancel()
	}
}

// watchDemand pokes the look when the host's demand (its need or floor)
// changed, or a request was granted while the host is at the front of the
// queue (where a grant may end its turn), not at each grant and release
// that changes neither; and every hold/2 in any case.
func (a *agent) watchDemand(ctx context.Context) {
	var last demand
	var grants int64
	for ctx.Err() == nil {
		if !a.loc.waitDemand(ctx, a.lim.hold/2) {
			a.poke() // (the look reads the view, not etcd)
			continue
		}
		d, _, g, err := a.loc.demand()
		if err != nil || d != last || (g != grants && a.atFront()) {
			a.poke()
		}
		last, grants = d, g
	}
}

// lookGap is the least time from a look's start to the next: the demand
// events of a burst of grants and releases, and the watch events of other
// agents' changes, are one look, not one each.
const lookGap = 20 * time.Millisecond

// leave is the end of a stopped agent, giving back last: the host grants
// nothing more (its loan drops to 0, and under deadline its holders are
// ended); the handle that lends is closed (the kernel withdraws the loan,
// and under deadline ends in the same step what still holds); then etcd
// gets back all of the share but what was still held; then the lease is
// revoked, and the claim with it, from whose end the other agents count
// to take back what is left of a deadline host's share.
func (a *agent) leave() {
	a.endWatch()
	if a.loc.kept {
		a.handOver()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	a.unpublish()
	err := a.setLoan(0, "agent stopped")
	if a.lim.policy == "deadline" {
		// what they still hold stays the host's share below, and
		// the handle's close ends them in any case
		a.endHoldersWithin(ctx)
	}
	cancel()
	// read with nothing lent: from here what is held only falls
	_, used, _, err2 := a.loc.demand()
	a.loc.close()
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	gone := a.share == 0
	if err == nil && err2 == nil && used < a.share {
		gone, err = a.st.shrinkShare(ctx, a.share, used)
		gone = gone && used == 0
	}
	if err == nil && err2 == nil && gone {
		// nothing left to take back after the claim goes
		err = a.st.dropTTL(ctx)
	}
	a.st.close()
	lg.Printf("%s: %d growths found another share changed in etcd "+
		"and were computed again", a.lim.name, a.raced)
	if err == nil {
		err = err2
	}
	said := ""
	if err == nil && used > 0 {
		said = fmt.Sprintf("stopped; %d still held stays this host's "+
			"share", used)
	}
	a.unlockHost(err, said)
}

// handOver is the end of a stopped agent whose lending handle the file
// descriptor store keeps, for the next agent to take back (fdstore.go):
// the lease is renewed once more, so that the loan's kernel deadline
// leaves the next agent as long as it can (the lease's TTL less the
// margin); then a single lend lowers the loan to what is held and
// carries that deadline (none if neither changed).  Nothing is granted
// above the loan from then on; at the deadline the kernel withdraws it,
// and under deadline ends the holders, unless the next agent lends again
// first.  etcd gets back all of the share but the loan, or what is held
// after the lend if more; the lease is left to the next agent, which
// takes the claim over.  Nothing held is ended.
// If the unit stops for good, the store closes the handle: the kernel
// withdraws the loan then (under deadline, ending the holders), and what
// was held stays the host's share in etcd as after an agent's death.
func (a *agent) handOver() {
	a.unpublish()
	renewed := false
	if id, _ := a.st.end.get(); id != 0 {
		ctx, cancel := context.WithTimeout(context.Background(),
			time.Duration(a.lim.ttl)*time.Second)
		renewed = a.renewEnd(ctx, id, bootTime())
		cancel()
	}
	// One lend lowers the loan to what is held (if more is lent) and,
	// as every lend, lends until the lease's local end less the margin,
	// moved on by the renewal if etcd answered; with nothing to lower,
	// it is made only if that end moved (renewLoan's lend).
	_, used, _, err := a.loc.demand()
	lent := a.lent()
	if err == nil && (used < lent || (renewed && lent > 0)) {
		err = a.setLoan(min64(used, lent),
			"agent stopped, its handle kept")
	}
	// What is held, read again with the loan lowered: a grant made since
	// the read above may hold more than the loan, but from here nothing
	// is granted above the loan, and what is held above it only falls.
	// etcd keeps the greater of the loan and that.
	keep := a.lent()
	if err == nil {
		var held int64
		if _, held, _, err = a.loc.demand(); held > keep {
			keep = held
		}
	}
	if err == nil && keep < a.share {
		ctx, cancel := context.WithTimeout(context.Background(),
			5*time.Second)
		var ok bool
		if ok, err = a.st.shrinkShare(ctx, a.share, keep); ok {
			a.setShare(keep, "agent stopped, its handle kept")
		}
		cancel()
	}
	a.loc.close()
	a.unlockHost(err, fmt.Sprintf("stopped; the lending handle is kept "+
		"for the next agent (lends %d, share %d)", a.lent(), a.share))
}

// unlockHost is the last step of leave and handOver: it logs how the stop
// ended (err if not nil, then said if not empty), then closes the host's
// lock file (lockHost), which lets the next agent on this machine start,
// once the loan and etcd are as the stop leaves them.
func (a *agent) unlockHost(err error, said string) {
	if err != nil {
		lg.Printf("%s: stopping: %v", a.lim.name, err)
	}
	if said != "" {
		lg.Printf("%s: %s", a.lim.name, said)
	}
	if a.lock != nil {
		a.lock.Close()
	}
}

// lockHost takes the lock file of lim's host (PREFIX NAME HOST, escaped,
// in runDir), waiting while another agent on this machine has it; nil (and
// a log line) where no lock file can be made.
func lockHost(ctx context.Context, lim *limit) (*os.File, error) {
	if err := os.MkdirAll(runDir, 0755); err != nil {
		lg.Printf("%s: no lock file (%v): a stopped agent's claim "+
			"is waited for", lim.name, err)
		return nil, nil
	}
	p := filepath.Join(runDir, url.PathEscape(lim.prefix+"/"+lim.name+
		"@"+lim.host)+".lock")
	// 0600, an older one's mode too: a user who may open the file
	// may flock() it and keep the agent from starting.
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0600)
	if err == nil {
		err = f.Chmod(0600)
		if err != nil {
			f.Close()
		}
	}
	if err != nil {
		return nil, err
	}
	locked := fmt.Errorf("another wsem-agent serves this host (%s is "+
		"locked)", p)
	err = waitWhile(ctx, lim.name, locked, func() error {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return locked
		}
		return err
	})
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return f, nil
}

// waitWhile calls try every second while it fails with busy (logging the
// first such failure, the wait's reason), until it succeeds, fails
// otherwise or ctx ends (so that a SIGTERM ends the wait).
func waitWhile(ctx context.Context, name string, busy error, try func() error) error {
	for said := false; ; said = true {
		err := try()
		if !errors.Is(err, busy) {
			return err
		}
		if !said {
			lg.Printf("%s: %v: waiting", name, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func start(ctx context.Context, lim *limit) (*agent, error) {
	cli, err := lim.client()
	if err != nil {
		return nil, err
	}
	defer sayUnreachable(ctx, lim, cli)()
	a, err := startWith(ctx, lim, cli)
	if err != nil {
		cli.Close()
	}
	return a, err
}

// startWith is start's, with lim's etcd client.  It checks first and
// changes etcd last: etcd's capacity (if there) is capacity=, then the
// host's lock file, then no other handle lends to the host's semaphore,
// then etcd's capacity is written if no agent did (a new limit), then the
// claim (session: another machine's is refused before anything is
// granted, this machine's stopped one taken over).  A second agent that
// fails on any of them changes nothing in etcd.  What it took is given
// back if it fails (the deferred functions).
func startWith(ctx context.Context, lim *limit, cli *clientv3.Client) (_ *agent, err error) {
	st := lim.store(cli)
	if err := st.checkCapacity(ctx, lim.capacity); err != nil {
		return nil, err
	}
	// One agent per host on this machine: the lock file's flock, which
	// a dead agent's process lets go of.  With it, a claim in etcd that
	// is not this agent's is a stopped agent's, and is taken over at
	// once; without it (no lock file can be made), the claim is waited
	// for.
	lock, err := lockHost(ctx, lim)
	if err != nil {
		return nil, err
	}
	if lock != nil {
		defer func() {
			if err != nil {
				lock.Close()
			}
		}()
	}
	// No other handle lends to the host's semaphore.
	loc, err := openLocal(lim)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			loc.unkeep()
			loc.close()
			st.close()
		}
	}()
	if err := st.ensureCapacity(ctx, lim.capacity); err != nil {
		return nil, err
	}
	loc.ends = lim.policy == "deadline"
	st.takeover = lock != nil
	err = waitWhile(ctx, lim.name, errHostTaken, func() error {
		_, err := st.session(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	a := &agent{lim: lim, st: st, loc: loc, lock: lock,
		wake: make(chan struct{}, 1)}
	// The view the looks decide from: a read now, then the watch.
	err = st.resync(ctx)
	var v *view
	if err == nil {
		v, _, err = st.look(ctx)
	}
	if err == nil {
		// A share outlives its agent: take up what etcd says is
		// ours (it was not taken back while the claim was held).
		a.setShare(v.shares[lim.host], "taken up from etcd")
		err = a.setLoan(a.share, "taken up from etcd")
	}
	if _, used, _, err2 := loc.demand(); err == nil && err2 == nil &&
		lim.policy == "deadline" && used > a.share {
		lg.Printf("%s: %d held, etcd has a share of %d: the holders "+
			"outlived their share (taken back while no agent "+
			"held the claim)", lim.name, used, a.share)
		ectx, cancel := context.WithTimeout(ctx, 5*time.Second)
		a.endHoldersWithin(ectx)
		cancel()
	}
	if err != nil {
		return nil, err
	}
	loc.keep()
	a.startWatch()
	return a, nil
}

// sayUnreachable logs, every ttl= while start waits for etcd, which of
// lim's endpoints do not answer (and keeps waiting); the function it
// returns ends that.
func sayUnreachable(ctx context.Context, lim *limit, cli *clientv3.Client) func() {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		ttl := time.Duration(lim.ttl) * time.Second
		began := time.Now()
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(ttl):
			}
			var down []string
			for _, ep := range lim.endpoints {
				pctx, pcancel := context.WithTimeout(ctx, time.Second)
				if _, err := cli.Status(pctx, ep); err != nil {
					down = append(down, ep)
				}
				pcancel()
			}
			if ctx.Err() != nil || len(down) == 0 {
				continue
			}
			lg.Printf("%s: starting for %.0f s: etcd does not answer "+
				"at %s: still trying", lim.name,
				time.Since(began).Seconds(), strings.Join(down, ","))
		}
	}()
	return cancel
}

func (lim *limit) client() (*clientv3.Client, error) {
	cfg, err := lim.clientConfig()
	if err != nil {
		return nil, err
	}
	return clientv3.New(cfg)
}

// clientConfig is lim's etcd client's: its endpoints and TLS, and gRPC's
// keepalive pings, so that a member whose packets are dropped (a black
// hole: no reset, no answer) is left for another one within
// keepAliveTime plus keepAliveTimeout: else the calls and the watch on
// its connection would wait on it for as long as it lasts.
func (lim *limit) clientConfig() (clientv3.Config, error) {
	var tc *tls.Config
	if lim.cacert != "" || lim.cert != "" {
		info := clientv3.TLSInfo{TrustedCAFile: lim.cacert,
			CertFile: lim.cert, KeyFile: lim.key}
		var err error
		if tc, err = info.ClientConfig(); err != nil {
			return clientv3.Config{}, err
		}
	}
	return clientv3.Config{Endpoints: lim.endpoints,
		DialTimeout: 5 * time.Second, TLS: tc,
		DialKeepAliveTime:    keepAliveTime,
		DialKeepAliveTimeout: keepAliveTimeout(lim.ttl)}, nil
}

// keepAliveTime is how long a connection to etcd goes without a word from
// the member before the client pings it: gRPC's least (a shorter one is
// raised to it), and above etcd's least for its clients' pings (5 s).
const keepAliveTime = 10 * time.Second

// keepAliveTimeout is how long the client waits for a ping's answer
// before it drops the connection for another member: a third of ttl=, at
// least a second and at most 5.
func keepAliveTimeout(ttl int) time.Duration {
	d := time.Duration(ttl) * time.Second / 3
	if d < time.Second {
		d = time.Second
	}
	if d > 5*time.Second {
		d = 5 * time.Second
	}
	return d
}

// limitsOf reads the -c paths, or, without any, what wsem apply reads.
func limitsOf(confs []string) ([]*limit, error) {
	if len(confs) == 0 {
		return readFiles(defaultFiles())
	}
	return readConfs(confs)
}

// limitNamed is the cluster limit called name in the -c paths or the
// default files.
func limitNamed(confs []string, name string) (*limit, error) {
	lims, err := limitsOf(confs)
	if err != nil {
		return nil, err
	}
	for _, lim := range lims {
		if lim.name == name {
			return lim, nil
		}
	}
	return nil, fmt.Errorf("%s: no cluster limit of that name", name)
}

// onLimit calls f with the store of the cluster limit called name, through
// an etcd client of its own, and the context that within makes for the
// limit (and its cancel function).
func onLimit(confs []string, name string,
	within func(*limit) (context.Context, context.CancelFunc),
	f func(context.Context, *store, *limit) error) error {
	lim, err := limitNamed(confs, name)
	if err != nil {
		return err
	}
	cli, err := lim.client()
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := within(lim)
	defer cancel()
	return f(ctx, lim.store(cli), lim)
}

// ttlTimes is a context that ends after n times lim's ttl=.
func ttlTimes(n int) func(*limit) (context.Context, context.CancelFunc) {
	return func(lim *limit) (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(),
			time.Duration(n*lim.ttl)*time.Second)
	}
}

// untilStopped is a context that ends at SIGTERM or SIGINT.
func untilStopped(*limit) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), syscall.SIGTERM,
		os.Interrupt)
}

// store is the limit's keys in etcd, through cli.
func (lim *limit) store(cli *clientv3.Client) *store {
	return &store{cli: cli, prefix: lim.prefix + "/" + lim.name + "/",
		host: lim.host, ttl: lim.ttl, deadline: lim.policy == "deadline"}
}

// declareDeadCmd declares host dead (declareDead), after ttl= seconds
// with its claim gone, all within three times ttl=.
func declareDeadCmd(confs []string, name, host string) error {
	return onLimit(confs, name, ttlTimes(3), func(ctx context.Context,
		st *store, lim *limit) error {
		ttl := time.Duration(lim.ttl) * time.Second
		return declareDead(ctx, st.cli, st.prefix, host, ttl, func() {
			lg.Printf("%s: %s's claim is gone: waiting ttl=%d s, by "+
				"when its kernel lends nothing more", name, host,
				lim.ttl)
		})
	})
}

// parseCapacity is set-capacity's N: a number from 1 to capacity='s
// largest.
func parseCapacity(arg string) (int64, error) {
	n, err := strconv.ParseInt(arg, 10, 64)
	if err != nil || n < 1 || n > limits["capacity"] {
		return 0, fmt.Errorf("set-capacity: %q: not a number from 1 "+
			"to %d", arg, limits["capacity"])
	}
	return n, nil
}

// setCapacityCmd makes the capacity of the cluster limit called name n
// (setCapacity), waiting, a shrink, for the agents to lower the shares
// first, until SIGTERM or SIGINT.
func setCapacityCmd(confs []string, name string, n int64) error {
	return onLimit(confs, name, untilStopped, func(ctx context.Context,
		st *store, lim *limit) error {
		old, err := setCapacity(ctx, st, n, func(sum int64) {
			lg.Printf("%s: the shares add up to %d, above %d: the "+
				"agents lower them first (%scapacity/next %d), "+
				"what is held when its holders end; waiting",
				name, sum, n, st.prefix, n)
		})
		if err != nil && ctx.Err() != nil {
			return fmt.Errorf("%s: stopped: %scapacity/next %d "+
				"stays, and the agents keep the shares within "+
				"it; run set-capacity %s %d again to finish, or "+
				"with the capacity in force to take it away",
				name, st.prefix, n, name, n)
		}
		if err != nil {
			return err
		}
		fmt.Printf("%s: capacity %d -> %d\n", name, old, n)
		if n != lim.capacity {
			lg.Printf("%s: this host's capacity= is %d: change it "+
				"on every host (an agent whose capacity= is not "+
				"etcd's does not start)", name, lim.capacity)
		}
		return nil
	})
}

// testDelay is WSEM_AGENT_TEST_DELAY_MS, a test's knob: how long an agent
// waits between reading etcd and growing its share there, so that
// another agent's change comes in between (the transaction must fail).
var testDelay time.Duration

type confList []string

func (c *confList) String() string     { return fmt.Sprint(*c) }
func (c *confList) Set(s string) error { *c = append(*c, s); return nil }

func main() {
	var confs confList
	flag.Var(&confs, "c", "a .conf file or a directory of them "+
		"(default: as wsem apply, /etc, /run, /usr/lib wsem.d)")
	flag.Parse()
	if ms, err := strconv.Atoi(os.Getenv("WSEM_AGENT_TEST_DELAY_MS")); err == nil {
		testDelay = time.Duration(ms) * time.Millisecond
	}
	if flag.NArg() == 3 && flag.Arg(0) == "declare-dead" {
		if err := declareDeadCmd(confs, flag.Arg(1), flag.Arg(2)); err != nil {
			lg.Fatal(err)
		}
		return
	}
	if flag.NArg() == 3 && flag.Arg(0) == "set-capacity" {
		n, err := parseCapacity(flag.Arg(2))
		if err != nil {
			lg.Print(err)
			os.Exit(2)
		}
		if err := setCapacityCmd(confs, flag.Arg(1), n); err != nil {
			lg.Fatal(err)
		}
		return
	}
	if flag.NArg() >= 2 && flag.NArg() <= 3 && flag.Arg(0) == "status" &&
		(flag.NArg() == 2 || flag.Arg(2) == "--json") {
		err := statusCmd(os.Stdout, confs, flag.Arg(1), flag.NArg() == 3)
		if err != nil {
			lg.Fatal(err)
		}
		return
	}
	if flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: wsem-agent [-c PATH]... "+
			"[declare-dead NAME HOST | set-capacity NAME N | "+
			"status NAME [--json]]")
		os.Exit(2)
	}
	lims, err := limitsOf(confs)
	if err == nil && len(lims) == 0 {
		err = errors.New("no cluster=etcd limit declared")
	}
	if err != nil {
		lg.Fatal(err)
	}
	takeListenFDs()
	dropUnclaimed(lims)
	ctx, stop := signal.NotifyContext(context.Background(),
		syscall.SIGTERM, os.Interrupt)
	defer stop()
	ignoreHangup()
	if failed := serve(ctx, lims); failed > 0 {
		os.Exit(1)
	}
}

// ignoreHangup: a SIGHUP (a closed terminal, a reload asked of the unit)
// does not end the agent, whose end would end its loans and, under the
// deadline policy, its host's jobs: it is logged, saying that the
// configuration is read at start only.
func ignoreHangup() {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		for range hup {
			lg.Printf("SIGHUP: ignored; the configuration is read " +
				"at start only (restart the agent to apply a " +
				"change: its loans end with it)")
		}
	}()
}

// serve starts and runs an agent for each limit, each on its own: a limit
// that cannot start (its etcd, its semaphore, another machine's claim) is
// logged and leaves the others running.  Return: how many could not
// start; once all of them, at once.
func serve(ctx context.Context, lims []*limit) int {
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := 0
	all := make(chan struct{})
	for _, lim := range lims {
		wg.Add(1)
		go func(lim *limit) {
			defer wg.Done()
			a, err := start(ctx, lim)
			if err != nil && ctx.Err() != nil {
				lg.Printf("%s: stopped while starting", lim.name)
				return
			}
			if err != nil {
				lg.Printf("%s: %v", lim.name, err)
				mu.Lock()
				failed++
				if failed == len(lims) {
					close(all)
				}
				mu.Unlock()
				return
			}
			lg.Printf("%s: capacity %d across the cluster, host %s, "+
				"share %d", lim.name, lim.capacity, lim.host,
				a.share)
			a.run(ctx)
		}(lim)
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-all:
	}
	mu.Lock()
	defer mu.Unlock()
	return failed
}
