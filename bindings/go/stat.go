// SPDX-License-Identifier: LGPL-2.1-or-later

package wsem

import (
	"os"
	"syscall"
	"time"
	"unsafe"
)

// Stat is the state of a semaphore (struct wsem_stat), as Weighted.Stat
// reads it.
type Stat struct {
	Name         string // empty for an anonymous or unlinked semaphore
	Capacity     int64
	Used         int64 // held by every handle of every process
	Available    int64 // Capacity - Used, or 0 after a shrink below Used
	Held         int64 // held by this Weighted (all its handles)
	Spare        int64 // also held by it, in its pool, used by nobody
	Waiters      int64 // queued waiters, of every process
	QueuedWeight int64 // the sum of their weights
	UID, GID     uint32
	Mode         os.FileMode

	// Statistics since the semaphore was created.
	GrantsAtOnce int64
	GrantsWaited int64
	Timeouts     int64
	Interrupts   int64
	Shrunk       int64 // waits that a shrink below their weight ended
	WaitTotal    time.Duration
	WaitMax      time.Duration
	QueueMax     int64

	// Loans (Lend): Capacity is the semaphore's own plus Lent.
	Lent     int64 // what every open handle lends
	LentHere int64 // what this Weighted lends
	Ceiling  int64 // 0, or a loans semaphore's largest request

	// The tree (CreateChild): 0 and 0 for a root.
	Depth    int64  // levels below its root
	ParentID uint64 // the parent's id, as fdinfo shows it (wsem-id)
}

// clamp turns a __u64 count into an int64 (UINT64_MAX: "too many").
func clamp(v uint64) int64 {
	if v > 1<<63-1 {
		return 1<<63 - 1
	}
	return int64(v)
}

// Stat reads the state of the semaphore.
func (w *Weighted) Stat() (*Stat, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, ErrClosed
	}
	var a statArgs
	a.size = uint64(unsafe.Sizeof(a))
	if _, err := w.base.do(iocStat, unsafe.Pointer(&a)); err != nil {
		return nil, os.NewSyscallError("wsem stat", err)
	}
	held, spare := w.held, int64(0)
	if p := w.pool.Load(); p != nil {
		held += p.inuse.Load()
		spare = p.spare.Load()
	}
	return &Stat{
		Name:         cString(a.name[:]),
		Capacity:     clamp(a.capacity),
		Used:         clamp(a.used),
		Available:    clamp(a.available),
		Held:         held,
		Spare:        spare,
		Waiters:      clamp(a.waiters),
		QueuedWeight: clamp(a.queuedWeight),
		UID:          a.uid,
		GID:          a.gid,
		Mode:         os.FileMode(a.mode) & os.ModePerm,
		GrantsAtOnce: clamp(a.grantsAtOnce),
		GrantsWaited: clamp(a.grantsWaited),
		Timeouts:     clamp(a.timeouts),
		Interrupts:   clamp(a.interrupts),
		Shrunk:       clamp(a.shrunk),
		WaitTotal:    time.Duration(clamp(a.waitNsTotal)),
		WaitMax:      time.Duration(clamp(a.waitNsMax)),
		QueueMax:     clamp(a.queueMax),
		Lent:         clamp(a.lent),
		LentHere:     clamp(a.lentHere),
		Ceiling:      clamp(a.ceiling),
		Depth:        clamp(a.depth),
		ParentID:     a.parentID,
	}, nil
}

// Resize sets the capacity (owner or CAP_IPC_OWNER only).  Growing grants
// the waiters that now fit; shrinking revokes nothing, and a waiter whose
// weight no longer fits at all fails with EINVAL.
func (w *Weighted) Resize(n int64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	if n < 0 {
		return os.NewSyscallError("wsem set capacity", syscall.EINVAL)
	}
	if _, err := w.base.doU64(iocSetCapacity, uint64(n)); err != nil {
		return os.NewSyscallError("wsem set capacity", err)
	}
	return nil
}

// Lend sets what this Weighted lends to the semaphore to n (0 withdraws
// it): the capacity in force is the semaphore's own plus every open
// handle's loan.  The loan is withdrawn when the Weighted is closed, or
// its process dies, however it dies; less capacity is a shrink, which
// revokes nothing held.  Lending more needs the owner or CAP_IPC_OWNER
// (an error matching syscall.EPERM); lending less never does.
func (w *Weighted) Lend(n int64) error {
	return w.lend(n, 0, 0)
}

// LendEndingHolders lends n as Lend does, and has the kernel send SIGKILL,
// when this Weighted's file is released (closed, or its process dead,
// however it dies), to the process that holds weight through each handle
// on the semaphore or on a child of it, before the loan is withdrawn: for
// an agent whose loan is good only while it lives.  A later Lend forgets
// it.  Needs CAP_KILL (an error matching syscall.EPERM).
func (w *Weighted) LendEndingHolders(n int64) error {
	return w.lend(n, lendEndHolders, 0)
}

// LendUntil lends n as Lend does (as LendEndingHolders does, with
// endHolders) until deadline, a time on CLOCK_BOOTTIME (which counts
// suspend; the time since boot): unless this Weighted lends again before
// then, the kernel withdraws the loan at the deadline as a close would,
// and with endHolders ends the holders in the same step.  So a lender
// that stops running, however it stops, lends nothing past its last
// deadline.  A deadline not in the future is an error matching
// syscall.ETIMEDOUT, and changes nothing.
func (w *Weighted) LendUntil(n int64, endHolders bool, deadline time.Duration) error {
	flags := uint64(lendDeadline)
	if endHolders {
		flags |= lendEndHolders
	}
	if deadline <= 0 {
		return os.NewSyscallError("wsem lend", syscall.ETIMEDOUT)
	}
	return w.lend(n, flags, uint64(deadline))
}

func (w *Weighted) lend(n int64, flags, deadline uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	if n < 0 {
		return os.NewSyscallError("wsem lend", syscall.EINVAL)
	}
	a := lendArgs{flags: flags, capacity: uint64(n), deadlineNs: deadline}
	a.size = uint64(unsafe.Sizeof(a))
	if _, err := w.base.do(iocLend, unsafe.Pointer(&a)); err != nil {
		return os.NewSyscallError("wsem lend", err)
	}
	return nil
}

// Handle is a new kernel handle on the semaphore, holding nothing, for
// another process: pass it in exec.Cmd.ExtraFiles, where the child takes
// it up with OpenFD, and close it here.  It is close-on-exec itself.
func (w *Weighted) Handle() (*os.File, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, ErrClosed
	}
	fd, err := w.base.doU64(iocReopen, reopenCloexec)
	if err != nil {
		return nil, os.NewSyscallError("wsem reopen", err)
	}
	return os.NewFile(uintptr(fd), "wsem-handle"), nil
}

// File is a duplicate of the descriptor of w's first handle, close-on-exec:
// the same handle, not a new one (Handle), so what it lends goes on while
// any duplicate is open.  For a service manager's file descriptor store
// (sd_notify's FDSTORE=1), from which the next process takes the handle
// back with AdoptFD.
func (w *Weighted) File() (*os.File, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, ErrClosed
	}
	var fd uintptr
	var errno syscall.Errno
	cerr := w.base.rc.Control(func(b uintptr) {
		fd, _, errno = syscall.Syscall(syscall.SYS_FCNTL, b,
			syscall.F_DUPFD_CLOEXEC, 0)
	})
	if cerr != nil {
		return nil, cerr
	}
	if errno != 0 {
		return nil, os.NewSyscallError("fcntl", errno)
	}
	return os.NewFile(fd, "wsem-handle"), nil
}
