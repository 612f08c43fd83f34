// SPDX-License-Identifier: GPL-2.0

package main

// The local end of the agent's etcd lease.  etcd expires a lease TTL
// seconds after the leader last renewed it, and a leader renews it only
// on a request it received; a request this agent sent at time t and that
// etcd answered was received after t, so etcd keeps the lease at least
// until t + TTL, by this host's clock (a new leader only extends leases).
// The agent keeps that instant, its lease's local end, from the send time
// of each answered renewal (not the answer's time: an answer can come late)
// on CLOCK_BOOTTIME (Go's own clock stops while the machine is suspended;
// etcd's does not), and acts a margin before it:
//
//	the kernel: each loan carries the deadline local end - margin
//	    (WSEM_LEND_DEADLINE), moved on by each answered renewal; at it
//	    the kernel withdraws the loan itself (and under deadline ends
//	    the holders in the same step), whether or not this agent still
//	    runs: a paused, frozen or starved agent lends nothing past it;
//
//	both policies: the host's loan drops to 0, so the host grants nothing
//	    more from a share that etcd may soon consider free (finish: from
//	    then on an administrator may declare the host dead);
//	deadline: the holders are also ended (SIGKILL of each holder's
//	    process, again at each tick while any holds), because under that
//	    policy the other agents take the share back once they have seen
//	    the host's claim (alive/HOST, under the lease) gone for the TTL
//	    (store.go), by when this host's kernel deadline has passed.
//
// The same when etcd answers a renewal with "no such lease" (revoked, or
// lost): nothing is lent from then on, and the holders are ended under
// deadline, until a look under a new lease has read the share again.
// When a renewal is answered again before etcd expired the lease, the
// agent looks at etcd again and lends what etcd still has as its share.

import (
	"context"
	"errors"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	clientv3 "wsem.example/agent/etcdapi"
)

// leaseEnd is the local end of one lease: set when the lease is granted,
// moved on by each answered renewal.
type leaseEnd struct {
	mu    sync.Mutex
	id    clientv3.LeaseID
	until time.Duration // CLOCK_BOOTTIME
	gone  bool          // etcd answered a renewal: no such lease
	moved chan struct{} // one token: any of the above changed (watchLeaseEnd)
}

// changed is the channel that gets a token when the lease, its local end
// or its being gone changes (one for any number of changes not taken).
func (e *leaseEnd) changed() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.moved == nil {
		e.moved = make(chan struct{}, 1)
	}
	return e.moved
}

// tell puts the token of changed(); under e.mu.
func (e *leaseEnd) tell() {
	select {
	case e.moved <- struct{}{}:
	default: // a token waits already, or no one has asked (nil)
	}
}

// start is a new lease id, granted by a request sent at sent (CLOCK_BOOTTIME).
func (e *leaseEnd) start(id clientv3.LeaseID, sent, ttl time.Duration) {
	e.mu.Lock()
	e.id, e.until, e.gone = id, sent+ttl, false
	e.tell()
	e.mu.Unlock()
}

// expired: etcd answered a renewal of id with "no such lease".
func (e *leaseEnd) expired(id clientv3.LeaseID) {
	e.mu.Lock()
	if e.id == id {
		e.gone = true
		e.tell()
	}
	e.mu.Unlock()
}

// lost: id is not the lease any more, etcd said it is gone, or its local
// end passed (etcd may have expired it).
func (e *leaseEnd) lost(id clientv3.LeaseID) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.id != id || e.gone || bootTime() >= e.until
}

// renewed: a renewal of id sent at sent was answered with ttl; true if
// that moved the local end on.
func (e *leaseEnd) renewed(id clientv3.LeaseID, sent, ttl time.Duration) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.id == id && sent+ttl > e.until {
		e.until = sent + ttl
		e.tell()
		return true
	}
	return false
}

func (e *leaseEnd) get() (clientv3.LeaseID, time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.id, e.until
}

// isGone: etcd said the lease id is gone.
func (e *leaseEnd) isGone(id clientv3.LeaseID) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.id == id && e.gone
}

// endMargin is how long before its lease's local end the agent stops
// lending (and, under deadline, ends the holders): a fifth of the TTL,
// at least half a second, and at most 5 seconds.
func endMargin(ttl time.Duration) time.Duration {
	m := ttl / 5
	if m < 500*time.Millisecond {
		m = 500 * time.Millisecond
	}
	if m > 5*time.Second {
		m = 5 * time.Second
	}
	return m
}

// renewLease renews the agent's lease every third of its TTL, recording
// the local end of each answered renewal (the agent's only renewals: a
// stream of etcd's client would renew it too, but does not say when it
// sent what was answered), or that etcd has no such lease.  Each
// renewal may take up to the TTL (an answer that comes late still moves
// the end on from its send time), so each is sent by a goroutine of its
// own, and a slow one does not hold the next back.
func (a *agent) renewLease(ctx context.Context) {
	ttl := time.Duration(a.lim.ttl) * time.Second
	var wg sync.WaitGroup
	defer wg.Wait()
	for ctx.Err() == nil {
		id, _ := a.st.end.get()
		sent := bootTime()
		if id != 0 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rctx, cancel := context.WithTimeout(ctx, ttl)
				defer cancel()
				a.renewOnce(rctx, id, sent)
			}()
		}
		select {
		case <-ctx.Done():
		case <-time.After(ttl / 3):
		}
	}
}

// renewOnce renews lease id, sent being when the request leaves: if etcd
// answers, the lease's local end moves on from sent, and the loan's kernel
// deadline with it; if etcd has no such lease, it is recorded gone.
func (a *agent) renewOnce(ctx context.Context, id clientv3.LeaseID,
	sent time.Duration) {
	if a.renewEnd(ctx, id, sent) {
		a.renewLoan()
	}
}

// renewEnd renews lease id, sent being when the request leaves: true if
// etcd answered and that moved the lease's local end on from sent; if etcd
// has no such lease, it is recorded gone.  The loan's kernel deadline
// moves only when the agent lends next (renewLoan, or any lend).
func (a *agent) renewEnd(ctx context.Context, id clientv3.LeaseID,
	sent time.Duration) bool {
	r, err := a.st.cli.KeepAliveOnce(ctx, id)
	if err == nil && r.TTL > 0 {
		return a.st.end.renewed(id, sent,
			time.Duration(r.TTL)*time.Second)
	}
	if errors.Is(err, clientv3.ErrLeaseNotFound) {
		a.st.end.expired(id)
	}
	return false
}

// watchLeaseEnd acts when the lease's local end is near, or etcd said the
// lease is gone (revoked, or lost) (see the top of this file); poke wakes
// the agent's look at etcd when a renewal came through again, and at once
// when the lease is gone, for the look to claim the host again under a new
// one.  It sleeps until the lease changes (leaseEnd.changed) or its end
// less the margin comes, on a timer on CLOCK_BOOTTIME (bootTimer): an end
// passed while the machine was suspended is acted on at the resume, as
// the kernel's deadline on the loan is.  Under deadline, while the end
// has passed, it ends the holders again every leaseKillTick.
func (a *agent) watchLeaseEnd(ctx context.Context, poke func()) {
	margin := endMargin(time.Duration(a.lim.ttl) * time.Second)
	changed := a.st.end.changed()
	timer, err := newBootTimer()
	if err != nil {
		// (the kernel's deadline still ends the loan in time)
		lg.Printf("%s: %v: the lease's end is not watched", a.lim.name, err)
		return
	}
	defer timer.close()
	for ctx.Err() == nil {
		id, until := a.st.end.get()
		now := bootTime()
		gone := id != 0 && a.st.end.isGone(id)
		over := id != 0 && (gone || now >= until-margin)
		if gone {
			poke()
		}
		if a.setCut(over, gone, until) {
			poke()
		}
		var at time.Duration // 0: until the lease changes
		if over && a.lim.policy == "deadline" {
			a.endHolders()
			at = now + leaseKillTick
		} else if id != 0 && !over {
			at = until - margin
		}
		if err := timer.set(at); err != nil {
			lg.Printf("%s: %v", a.lim.name, err)
		}
		a.leaseWakes.Add(1)
		select {
		case <-ctx.Done():
		case <-changed:
		case <-timer.C:
		}
	}
}

// leaseKillTick is how often, under deadline, watchLeaseEnd ends the
// holders again once the lease's end passed.
const leaseKillTick = 100 * time.Millisecond

// loanDeadline is the kernel deadline of the agent's loan: its lease's
// local end less the margin (CLOCK_BOOTTIME), or 0 with no lease yet.
func (a *agent) loanDeadline() time.Duration {
	id, until := a.st.end.get()
	if id == 0 {
		return 0
	}
	return until - endMargin(time.Duration(a.lim.ttl)*time.Second)
}

// renewLoan lends again what the agent lends, to move its kernel deadline
// on after an answered renewal moved the lease's local end.
func (a *agent) renewLoan() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cut || a.loan == 0 {
		return
	}
	if err := a.lendLocked(a.loan, "renewal"); err != nil {
		lg.Printf("%s: %v", a.lim.name, err)
	}
}

// wallTime is a CLOCK_BOOTTIME instant as a wall-clock time, for the log.
func wallTime(boot time.Duration) time.Time {
	return time.Now().Add(boot - bootTime())
}

// setCut records whether the lease's local end is near, or the lease gone;
// true when neither is so any more (etcd answered again, or a new lease).
func (a *agent) setCut(over, gone bool, until time.Duration) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if over == a.cut {
		return false
	}
	a.cut = over
	if !over {
		a.ended = nil
		lg.Printf("%s: etcd renewed the lease again: looking at the "+
			"share", a.lim.name)
		return true
	}
	why := "the lease's local end"
	if gone {
		why = "etcd says the lease is gone"
		lg.Printf("%s: %s (revoked, or lost): lending nothing",
			a.lim.name, why)
	} else {
		lg.Printf("%s: etcd has not renewed the lease since %s: it may "+
			"expire at %s; lending nothing", a.lim.name,
			wallTime(until-time.Duration(a.lim.ttl)*time.Second).Format(time.StampMilli),
			wallTime(until).Format(time.StampMilli))
	}
	if err := a.lendLocked(0, why); err != nil {
		lg.Printf("%s: %v", a.lim.name, err)
	}
	return false
}

// endHolders sends SIGKILL to the process of each of the host's holders
// (a "wsem run" takes its command's process group along: its kill group).
// A holder whose process this agent cannot see, or a child semaphore's
// weight, is only logged.
func (a *agent) endHolders() {
	hs, err := a.loc.w.Holders()
	if err != nil {
		lg.Printf("%s: %v", a.lim.name, err)
		return
	}
	for _, h := range hs {
		if h.Waiting {
			continue
		}
		if !a.markEnded(h.PID) {
			continue
		}
		if h.PID <= 0 || h.Child {
			lg.Printf("%s: cannot end a holder of %d (%s): no "+
				"process this agent sees", a.lim.name, h.Weight,
				h.Label)
			continue
		}
		err := a.killHolder(h.PID)
		lg.Printf("%s: SIGKILL to pid %d (%s, holding %d), the "+
			"share's deadline: %v", a.lim.name, h.PID, h.Comm,
			h.Weight, errOrOK(err))
	}
}

// killHolder sends SIGKILL to the process pid through a pidfd, opened
// before a second read of the holders finds pid still holding weight: a
// pid that a holder's death freed and another process took meanwhile is
// not signalled (errNotHolder).  Without pidfd_open(2) (a seccomp filter
// that refuses it: ENOSYS), a plain kill(2).
func (a *agent) killHolder(pid int) error {
	pfd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ENOSYS) {
		return syscall.Kill(pid, syscall.SIGKILL)
	}
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	hs, err := a.loc.w.Holders()
	if err != nil {
		return err
	}
	for _, h := range hs {
		if h.PID == pid && !h.Waiting && !h.Child {
			return unix.PidfdSendSignal(pfd, unix.SIGKILL, nil, 0)
		}
	}
	return errNotHolder
}

var errNotHolder = errors.New("no longer a holder: not signalled")

// markEnded notes that pid is sent SIGKILL: false if it was already (the
// lease's watch and the look both end holders).
func (a *agent) markEnded(pid int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ended == nil {
		a.ended = map[int]bool{}
	}
	if a.ended[pid] {
		return false
	}
	a.ended[pid] = true
	return true
}

// endHoldersWithin ends the holders and waits until nothing is held, or
// ctx ends.
func (a *agent) endHoldersWithin(ctx context.Context) {
	for ctx.Err() == nil {
		_, used, _, err := a.loc.demand()
		if err != nil || used == 0 {
			return
		}
		a.endHolders()
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func errOrOK(err error) string {
	if err != nil {
		return err.Error()
	}
	return "sent"
}
