// SPDX-License-Identifier: GPL-2.0

package main

// The host's semaphore: one that takes its capacity from loans (own
// capacity 0, the cluster's capacity as its ceiling).  The agent's handle
// lends the host's share; if the agent dies, however it dies, the kernel
// withdraws the loan, and the host grants nothing more until an agent
// lends again (what runs keeps its weight: a withdrawal is a shrink).

import (
	"context"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
	"wsem.example/wsem"
)

type local struct {
	name  string
	w     kernelSem
	watch *os.File // a second handle, polled for POLLRDBAND
	// events: an epoll set of watch for POLLRDBAND, in Go's own poller
	// (demandEvents); nil if watch cannot be polled so
	events *os.File
	ends   bool   // policy deadline: the agent's death ends the holders
	store  string // the handle's name in the file descriptor store
	kept   bool   // the store has the handle (fdstore.go)
}

// kernelSem is what the agent uses of a *wsem.Weighted (a test's fake
// stands in for the kernel's).
type kernelSem interface {
	Lend(n int64) error
	LendEndingHolders(n int64) error
	LendUntil(n int64, endHolders bool, deadline time.Duration) error
	Stat() (*wsem.Stat, error)
	Holders() ([]wsem.Holder, error)
	Handle() (*os.File, error)
	File() (*os.File, error)
	Close() error
}

// createLoans opens the host's semaphore (wsem.CreateLoans).
var createLoans = func(name string, ceiling int64, mode os.FileMode) (kernelSem, error) {
	return wsem.CreateLoans(name, ceiling, mode)
}

// adoptLoans takes back a handle the file descriptor store kept
// (wsem.AdoptFD).
var adoptLoans = func(fd int) (kernelSem, error) {
	return wsem.AdoptFD(fd)
}

// lendingHandle is the host's semaphore through the handle the file
// descriptor store kept for lim, if it passed one that is still on the
// semaphore of that name (its loan goes on: true), else through a new
// handle.
func lendingHandle(lim *limit, store string) (kernelSem, bool, error) {
	if fd := takeStored(store); fd >= 0 {
		w, err := adoptLoans(fd)
		var st *wsem.Stat
		if err == nil {
			st, err = w.Stat()
		}
		if err == nil && st.Name == lim.name {
			lg.Printf("%s: the lending handle kept across the restart "+
				"taken back (it lends %d)", lim.name, st.LentHere)
			return w, true, nil
		}
		if err == nil {
			err = fmt.Errorf("it is on another semaphore (%q)",
				st.Name)
			w.Close()
		}
		lg.Printf("%s: the kept lending handle is not taken back: %v",
			lim.name, err)
		unstoreFD(store)
	}
	w, err := createLoans(lim.name, lim.capacity, lim.mode)
	return w, false, err
}

// lend lends n; under policy deadline with WSEM_LEND_END_HOLDERS, so that
// the kernel kills the holders if the agent dies, however it dies: the
// other agents take their share back once the agent's claim is gone.
//
// With a deadline (CLOCK_BOOTTIME, not 0) the kernel withdraws the loan at
// it unless lent again (and under deadline ends the holders then): a
// paused agent lends nothing past it.
func (l *local) lend(n int64, deadline time.Duration) error {
	if n > 0 && deadline > 0 {
		return l.w.LendUntil(n, l.ends, deadline)
	}
	if l.ends {
		return l.w.LendEndingHolders(n)
	}
	return l.w.Lend(n)
}

// openLocal opens lim's host semaphore (through the handle the file
// descriptor store kept, if any) and checks that no other handle lends to
// it and that it is a loans semaphore of the cluster's capacity.
func openLocal(lim *limit) (*local, error) {
	name, ceiling, store := lim.name, lim.capacity, storeName(lim)
	w, kept, err := lendingHandle(lim, store)
	if err != nil {
		return nil, err
	}
	st, err := w.Stat()
	if err == nil && st.Lent != st.LentHere {
		err = fmt.Errorf("%s: another handle lends %d to it: is "+
			"another wsem-agent running?", name, st.Lent-st.LentHere)
	} else if err == nil && (st.Ceiling == 0 || st.Capacity != st.Lent) {
		err = fmt.Errorf("%s has a capacity of its own (%d): the "+
			"agent lends to a semaphore made with wsem create %s "+
			"CAPACITY --loans", name, st.Capacity-st.Lent, name)
	} else if err == nil && st.Ceiling != ceiling {
		err = fmt.Errorf("%s takes requests up to %d, the cluster's "+
			"capacity is %d", name, st.Ceiling, ceiling)
	}
	var f *os.File
	if err == nil {
		f, err = w.Handle()
	}
	if err != nil {
		w.Close()
		if kept {
			unstoreFD(store)
		}
		return nil, err
	}
	return &local{name: name, w: w, watch: f, events: demandEvents(f),
		store: store, kept: kept}, nil
}

// demandEvents is an epoll set that is readable while watch has a demand
// event (POLLRDBAND), as a file of Go's own poller, so that waitDemand
// sleeps until the event or its time ends and wakes for nothing else (an
// idle agent wakes for its renewals, its lease's end and its looks).  nil
// if watch cannot be polled so: waitDemand then polls watch itself.
func demandEvents(watch *os.File) *os.File {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil
	}
	fd := int(watch.Fd())
	ev := unix.EpollEvent{Events: pollRdband, Fd: int32(fd)}
	if unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &ev) != nil ||
		unix.SetNonblock(ep, true) != nil {
		unix.Close(ep)
		return nil
	}
	f := os.NewFile(uintptr(ep), "wsem-demand")
	if f.SetReadDeadline(time.Time{}) != nil { // not in Go's poller
		f.Close()
		return nil
	}
	return f
}

// keep puts the lending handle in the file descriptor store, if there is
// one, for the next agent to take back: once the limit has started.
func (l *local) keep() {
	if l.kept || !fdStoreOn() {
		return
	}
	f, err := l.w.File()
	if err == nil {
		l.kept = storeFD(l.store, f)
		f.Close()
	}
}

// unkeep has the store close the lending handle: the agent's own close
// of it is then the last one.
func (l *local) unkeep() {
	if l.kept {
		unstoreFD(l.store)
		l.kept = false
	}
}

// demand is what the host asks for (see plan.go), what it holds, and how
// many of its requests were granted so far.
func (l *local) demand() (d demand, used, grants int64, err error) {
	st, err := l.w.Stat()
	if err != nil {
		return d, 0, 0, err
	}
	d.need = st.Used + st.QueuedWeight
	d.floor = st.Used
	if st.Waiters > 0 {
		hs, err := l.w.Holders()
		if err != nil {
			return d, 0, 0, err
		}
		for _, h := range hs {
			if h.Waiting {
				d.floor += h.Weight
				break
			}
		}
	}
	return d, st.Used, st.GrantsAtOnce + st.GrantsWaited, nil
}

// waitDemand returns when the semaphore's demand changed (POLLRDBAND:
// true), or after timeout, or when ctx is done.  It reads the watch
// handle's text, which is what ends the event until the next change.
// pollRdband is POLLRDBAND, which golang.org/x/sys/unix does not name:
// asm-generic/poll.h's 0x80, which no architecture's poll.h overrides
// (they change POLLWRNORM, POLLWRBAND, POLLMSG and POLLRDHUP).
const pollRdband = 0x80

func (l *local) waitDemand(ctx context.Context, timeout time.Duration) bool {
	if l.events == nil {
		return l.pollDemand(ctx, timeout)
	}
	rc, err := l.events.SyscallConn()
	if err != nil || l.events.SetReadDeadline(time.Now().Add(timeout)) != nil {
		return l.pollDemand(ctx, timeout)
	}
	// ctx's end is a deadline passed (no wake-up of its own until then).
	waited := make(chan struct{})
	defer close(waited)
	go func() {
		select {
		case <-ctx.Done():
			l.events.SetReadDeadline(time.Unix(1, 0))
		case <-waited:
		}
	}()
	var evs [1]unix.EpollEvent
	got := false
	// false: Go's poller waits until the set is readable, or the deadline
	rc.Read(func(fd uintptr) bool {
		n, err := unix.EpollWait(int(fd), evs[:], 0)
		for err == unix.EINTR {
			n, err = unix.EpollWait(int(fd), evs[:], 0)
		}
		got = n > 0
		return got || err != nil
	})
	if got {
		l.readDemand()
	}
	return got
}

// pollDemand is waitDemand for a watch handle that is no epoll set's
// (a test's fake): it polls watch, ten times a second at least.
func (l *local) pollDemand(ctx context.Context, timeout time.Duration) bool {
	pfd := []unix.PollFd{{Fd: int32(l.watch.Fd()), Events: pollRdband}}
	end := time.Now().Add(timeout)
	for ctx.Err() == nil {
		left := time.Until(end)
		if left <= 0 {
			return false
		}
		if left > 100*time.Millisecond {
			left = 100 * time.Millisecond // to see ctx end
		}
		n, _ := unix.Poll(pfd, int(left/time.Millisecond))
		if n == 1 {
			l.readDemand()
			return true
		}
	}
	return false
}

// readDemand reads the watch handle's text, which ends its demand event
// until the next change.
func (l *local) readDemand() {
	var buf [4096]byte
	unix.Pread(int(l.watch.Fd()), buf[:], 0)
}

// close closes the agent's handles; the loan ends with them unless the
// file descriptor store keeps the lending one (unkeep first to end it).
func (l *local) close() {
	if l.events != nil {
		l.events.Close()
	}
	l.watch.Close()
	l.w.Close()
}
