// SPDX-License-Identifier: LGPL-2.1-or-later

package wsem

// Limits that nest: a child semaphore under a parent, and one request for
// weight on several semaphores at once.

import (
	"context"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// MaxMany is how many semaphores one AcquireMany may ask.
const MaxMany = manyMax

// CreateChild opens the semaphore called name as a child of w's semaphore,
// creating it with capacity n (1..2^62) of its own and permission bits
// perm (less the umask) if it does not exist; an empty name makes an
// anonymous child.  Weight acquired on the child is acquired on w's
// semaphore and every ancestor too, at once.  A request holds up later
// ones on an ancestor only once it fits every semaphore of its line below
// it, so a full child never stops its siblings.  w must be open for reading and writing (not
// OpenWatch).  A name that exists under another parent, or as a root, is
// an error matching os.ErrExist; more than 8 levels below the root,
// syscall.ELOOP.
func (w *Weighted) CreateChild(name string, n int64,
	perm os.FileMode) (*Weighted, error) {
	return w.createChild(name, n, perm, 0)
}

// CreateChildExclusive is CreateChild that fails with an error matching
// os.ErrExist if the child exists.
func (w *Weighted) CreateChildExclusive(name string, n int64,
	perm os.FileMode) (*Weighted, error) {
	return w.createChild(name, n, perm, openExcl)
}

func (w *Weighted) createChild(name string, n int64, perm os.FileMode,
	excl uint64) (*Weighted, error) {
	what := name
	args := openArgs{flags: openChild | openCreat | excl,
		capacity: uint64(n), mode: uint32(perm)}
	if name == "" {
		what = "anonymous child"
		args.flags = openChild | openAnon
		args.mode = 0
	}
	if n < 0 || perm&^os.ModePerm != 0 || (name == "" && excl != 0) {
		return nil, &os.PathError{Op: "wsem open", Path: what,
			Err: syscall.EINVAL}
	}
	if err := setName(&args.name, name); err != nil {
		return nil, &os.PathError{Op: "wsem open", Path: what, Err: err}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, ErrClosed
	}
	var child *Weighted
	var err error
	cerr := w.base.rc.Control(func(fd uintptr) {
		args.parentFD = int32(fd)
		child, err = bindNew(&args, what, false)
	})
	if cerr != nil {
		return nil, cerr
	}
	return child, err
}

// AcquireMany acquires ns[i] of ws[i]'s semaphore for each i, as one
// request: granted all at once or not at all, in strict FIFO order on
// every one of them (the request takes one place in the arrival order,
// and no later request is granted before it on any of its semaphores).
// Each ws[i] then holds ns[i], given back with ws[i].Release.  Between 1
// and MaxMany semaphores, each another one, each n at least 1.
//
// It blocks until granted or ctx is done: a deadline of ctx is the
// kernel's deadline (context.DeadlineExceeded), and a ctx cancelled
// meanwhile interrupts the wait (a signal to the waiting thread) with
// ctx.Err().  Other signals to that thread wait until the request ends,
// so that it keeps its place.  On failure it holds nothing: ctx.Err(),
// ErrClosed, or an error matching syscall.EINVAL (a weight above a
// capacity, a semaphore twice).  If ctx is already done, it fails even if the units are free.
func AcquireMany(ctx context.Context, ws []*Weighted, ns []int64) error {
	if len(ws) == 0 || len(ws) > manyMax || len(ws) != len(ns) {
		return os.NewSyscallError("wsem acquire many", syscall.EINVAL)
	}
	for _, n := range ns {
		if n <= 0 {
			return os.NewSyscallError("wsem acquire many",
				syscall.EINVAL)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	hs := make([]*handle, 0, len(ws))
	giveUp := func(err error) error {
		for i, h := range hs {
			ws[i].putBack(h, 0)
		}
		return err
	}
	for _, w := range ws {
		w.mu.Lock()
		if w.closed {
			w.mu.Unlock()
			return giveUp(ErrClosed)
		}
		h, err := w.takeSpare()
		w.mu.Unlock()
		if err != nil {
			return giveUp(os.NewSyscallError("wsem acquire many",
				err))
		}
		hs = append(hs, h)
	}
	err := gang(ctx, hs, ns)
	if err != nil {
		return giveUp(err)
	}
	for i, h := range hs {
		ws[i].putBack(h, ns[i])
	}
	return nil
}

// withFDs runs f with the descriptors of hs in fds, each held open (not
// closed by a Close meanwhile) for the time of f.
func withFDs(hs []*handle, fds []int32, f func()) error {
	if len(hs) == 0 {
		f()
		return nil
	}
	var err error
	cerr := hs[0].rc.Control(func(fd uintptr) {
		fds[len(fds)-len(hs)] = int32(fd)
		err = withFDs(hs[1:], fds, f)
	})
	if cerr != nil {
		return cerr
	}
	return err
}

// gang is the one WSEM_IOC_ACQUIRE_MANY of AcquireMany.
func gang(ctx context.Context, hs []*handle, ns []int64) error {
	fds := make([]int32, len(hs))
	var ended error
	err := withFDs(hs, fds, func() {
		ended = gangWait(ctx, fds, ns)
	})
	if err != nil {
		return err
	}
	return ended
}

// gangWait issues the request on this OS thread; a ctx done meanwhile
// sends the thread SIGURG (which the Go runtime ignores) until the wait
// ends, with EINTR.  Every other signal is blocked on the thread while it
// waits (blockSignals), so that another signal's handler, which ends a
// wait with EINTR, does not send the gang to the end of its queues: it
// runs once the wait is over.  An EINTR that ctx did not cause (a SIGURG
// of the runtime's own, which it sends to preempt a goroutine and may
// send just before the call) issues it again, at the end of the queues.
func gangWait(ctx context.Context, fds []int32, ns []int64) error {
	entries := make([]manyEntry, len(fds))
	for i := range fds {
		entries[i] = manyEntry{fd: fds[i], weight: uint64(ns[i])}
	}
	args := manyArgs{count: uint32(len(fds)),
		entries: uint64(uintptr(unsafe.Pointer(&entries[0])))}
	args.size = uint64(unsafe.Sizeof(args))
	if d, ok := ctx.Deadline(); ok {
		// CLOCK_REALTIME (0), as the time.Time of the deadline is.
		args.flags = acquireDeadline | acquireClock
		if ns := d.UnixNano(); ns > 0 {
			args.deadlineNs = uint64(ns)
		} else {
			args.deadlineNs = 1
		}
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := syscall.Gettid()
	var mu sync.Mutex
	waiting := true
	stop := make(chan struct{})
	watcher := make(chan struct{})
	go func() {
		defer close(watcher)
		select {
		case <-ctx.Done():
		case <-stop:
			return
		}
		for {
			mu.Lock()
			if !waiting {
				mu.Unlock()
				return
			}
			syscall.Tgkill(syscall.Getpid(), tid, syscall.SIGURG)
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	var err error
	restore := blockSignals()
	for {
		_, err = ioctl(uintptr(fds[0]), iocAcquireMany,
			unsafe.Pointer(&args))
		if err != syscall.EINTR || ctx.Err() != nil {
			break
		}
	}
	restore()
	mu.Lock()
	waiting = false
	mu.Unlock()
	close(stop)
	<-watcher
	runtime.KeepAlive(entries)
	switch {
	case err == nil:
		return nil
	case err == syscall.ETIMEDOUT:
		return context.DeadlineExceeded
	case err == syscall.EINTR && ctx.Err() != nil:
		return ctx.Err()
	}
	return os.NewSyscallError("wsem acquire many", err)
}

// blockSignals blocks every signal but SIGURG on the calling OS thread,
// which the caller has locked, and returns what puts its mask back.  The
// kernel's sigset_t is 8 bytes wide on every architecture Debian's Go
// builds for but mips.
func blockSignals() func() {
	const sigSetMask = 2 // SIG_SETMASK
	set := ^uint64(1 << (uint(syscall.SIGURG) - 1))
	var old uint64
	_, _, e := syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, sigSetMask,
		uintptr(unsafe.Pointer(&set)), uintptr(unsafe.Pointer(&old)),
		8, 0, 0)
	if e != 0 {
		return func() {}
	}
	return func() {
		syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, sigSetMask,
			uintptr(unsafe.Pointer(&old)), 0, 8, 0, 0)
	}
}
