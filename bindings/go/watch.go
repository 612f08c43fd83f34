// SPDX-License-Identifier: LGPL-2.1-or-later

package wsem

import (
	"context"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// A Holder is a kernel handle holding weight, or a waiter (Waiting),
// as Weighted.Holders lists them.
type Holder struct {
	Weight  int64
	Age     time.Duration // since the grant, or since it queued
	Waiting bool
	PID     int    // in the caller's PID namespace; 0 if not visible
	Comm    string // the command of that process
	Cgroup  string // its cgroup v2 path, relative to the caller's
	Label   string // the handle's label (SetLabel); a child's name or "[ID]"
	Child   bool   // a child semaphore's weight (CreateChild), not a handle's
}

// newHandle is a new handle of w on its semaphore, holding nothing, with
// w's label.  Called with w.mu held.
func (w *Weighted) newHandle() (*handle, error) {
	h, err := w.base.reopen()
	if err != nil || w.label == "" {
		return h, err
	}
	if err := h.setLabel(w.label); err != nil {
		h.f.Close()
		return nil, os.NewSyscallError("wsem set label", err)
	}
	return h, nil
}

func (h *handle) setLabel(label string) error {
	var args labelArgs
	args.size = uint64(unsafe.Sizeof(args))
	if len(label) >= wsemLabelMax {
		return syscall.EINVAL
	}
	for i := 0; i < len(label); i++ {
		if label[i] == 0 {
			return syscall.EINVAL
		}
		args.label[i] = label[i]
	}
	_, err := h.do(iocSetLabel, unsafe.Pointer(&args))
	return err
}

// SetLabel labels every kernel handle of w, now and later, in the holders
// view (Holders, "wsem stat"): what the weight is held for.  Up to 63
// bytes of printable ASCII; "" clears it.  An error matching
// syscall.EINVAL for any other label, syscall.EBADF for OpenWatch's.
func (w *Weighted) SetLabel(label string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	all := []*handle{w.base}
	for _, set := range []map[*handle]struct{}{w.holding, w.waiting} {
		for h := range set {
			all = append(all, h)
		}
	}
	all = append(all, w.spare...)
	if p := w.pool.Load(); p != nil {
		all = append(all, p.h)
	}
	seen := make(map[*handle]bool)
	for _, h := range all {
		if seen[h] {
			continue
		}
		seen[h] = true
		if err := h.setLabel(label); err != nil {
			return os.NewSyscallError("wsem set label", err)
		}
	}
	w.label = label
	return nil
}

// Holders lists who holds weight on the semaphore (one entry per kernel
// handle, of any process) and then who waits, in queue order.  Needs
// read permission, as Stat does.
func (w *Weighted) Holders() ([]Holder, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, ErrClosed
	}
	count := 16
	for {
		buf := make([]holderEntry, count)
		args := holdersArgs{
			entries:   uint64(uintptr(unsafe.Pointer(&buf[0]))),
			count:     uint32(count),
			entrySize: uint32(unsafe.Sizeof(holderEntry{})),
		}
		args.size = uint64(unsafe.Sizeof(args))
		_, err := w.base.do(iocHolders, unsafe.Pointer(&args))
		if err != nil {
			return nil, os.NewSyscallError("wsem holders", err)
		}
		total := int(args.holders) + int(args.waiters) +
			int(args.children)
		if total > count {
			count = total + 16
			continue
		}
		out := make([]Holder, total)
		for i := range out {
			e := &buf[i]
			out[i] = Holder{
				Weight:  clamp(e.weight),
				Age:     time.Duration(clamp(e.ageNs)),
				Waiting: e.flags&holderWaiting != 0,
				PID:     int(e.pid),
				Comm:    cString(e.comm[:]),
				Cgroup:  cString(e.cgroup[:]),
				Label:   cString(e.label[:]),
				Child:   e.flags&holderChild != 0,
			}
		}
		return out, nil
	}
}

// waitIdleTry is one WSEM_IOC_WAIT_IDLE that never sleeps: nil if idle,
// EAGAIN if not.
func waitIdleTry(fd uintptr) error {
	args := acquireArgs{flags: acquireTry}
	args.size = uint64(unsafe.Sizeof(args))
	_, err := ioctl(fd, iocWaitIdle, unsafe.Pointer(&args))
	return err
}

// WaitIdle blocks until nothing is held on the semaphore and nobody is
// queued (a drain before maintenance), or until ctx is done (ctx.Err()).
// A Weighted that holds weight itself would wait for ever: that is an
// error matching syscall.EDEADLK at once.  It waits in the network
// poller, as Acquire does, through a handle of its own that an epoll
// descriptor watches for EPOLLPRI, the kernel's idle report.
func (w *Weighted) WaitIdle(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return ErrClosed
	}
	held := w.held
	if p := w.pool.Load(); p != nil {
		p.giveBack()
		held += p.inuse.Load()
	}
	if held > 0 {
		w.mu.Unlock()
		return os.NewSyscallError("wsem wait idle", syscall.EDEADLK)
	}
	fd, err := w.base.doU64(iocReopen, reopenCloexec)
	w.mu.Unlock()
	if err != nil {
		return os.NewSyscallError("wsem reopen", err)
	}
	defer syscall.Close(fd)
	switch err := waitIdleTry(uintptr(fd)); err {
	case nil:
		return nil
	case syscall.EAGAIN:
	default:
		return os.NewSyscallError("wsem wait idle", err)
	}
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return os.NewSyscallError("epoll_create1", err)
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLPRI, Fd: int32(fd)}
	if err := syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
		syscall.Close(ep)
		return os.NewSyscallError("epoll_ctl", err)
	}
	if err := syscall.SetNonblock(ep, true); err != nil {
		syscall.Close(ep)
		return os.NewSyscallError("fcntl", err)
	}
	f := os.NewFile(uintptr(ep), "wsem-idle")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	stop := make(chan struct{})
	defer close(stop)
	if done := ctx.Done(); done != nil {
		go func() {
			select {
			case <-done:
				f.SetReadDeadline(aLongTimeAgo)
			case <-stop:
			}
		}()
	}
	var ended error
	err = rc.Read(func(epfd uintptr) bool {
		// Drain what woke us; the poller waits for the next event.
		var evs [1]syscall.EpollEvent
		syscall.EpollWait(int(epfd), evs[:], 0)
		ended = waitIdleTry(uintptr(fd))
		return ended != syscall.EAGAIN
	})
	switch {
	case err == nil && ended == nil:
		return nil
	case err == nil:
		return os.NewSyscallError("wsem wait idle", ended)
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return err
}
