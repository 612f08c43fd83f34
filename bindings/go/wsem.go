// SPDX-License-Identifier: LGPL-2.1-or-later

package wsem

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// ErrClosed is returned by Acquire, Stat and Resize after Close.
var ErrClosed = errors.New("wsem: use of a closed Weighted")

// maxSpare is how many empty, idle handles a Weighted keeps for its next
// waiters; more are closed as they come back.
const maxSpare = 8

// A Weighted is a handle set on one kernel semaphore; see the package
// documentation.  Its methods may be called from any goroutine.
type Weighted struct {
	mu      sync.Mutex
	base    *handle              // the first handle; closed only by Close
	spare   []*handle            // idle handles that hold nothing
	holding map[*handle]struct{} // handles that hold weight (never waiting)
	waiting map[*handle]struct{} // handles with a request queued
	held    int64                // the sum of every handle's held
	label   string               // SetLabel's, given to every handle
	closed  bool
	pool    atomic.Pointer[fastPool] // EnablePool's, or nil
}

// A handle is one kernel handle of a Weighted, in the runtime's poller.
type handle struct {
	f    *os.File
	rc   syscall.RawConn
	held int64 // what it holds, as far as this Weighted acquired it
}

// newHandle wraps a bound handle fd, which it owns from then on, in an
// *os.File that the network poller watches (non-blocking, edge-triggered).
func newHandle(fd int, name string) (*handle, error) {
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return nil, os.NewSyscallError("fcntl", err)
	}
	f := os.NewFile(uintptr(fd), name)
	rc, err := f.SyscallConn()
	if err == nil {
		// Deadlines exist only for files in the poller: this is how a
		// waiter is woken for its ctx.
		err = f.SetReadDeadline(time.Time{})
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return &handle{f: f, rc: rc}, nil
}

// do runs one ioctl on the handle (EBADF-like os.ErrClosed once closed).
func (h *handle) do(cmd uintptr, ptr unsafe.Pointer) (r int, err error) {
	cerr := h.rc.Control(func(fd uintptr) {
		r, err = ioctl(fd, cmd, ptr)
	})
	if cerr != nil {
		return -1, cerr
	}
	return r, err
}

func (h *handle) doU64(cmd uintptr, v uint64) (int, error) {
	return h.do(cmd, unsafe.Pointer(&v))
}

func (h *handle) acquire(n int64, flags uint64) error {
	args := acquireArgs{weight: uint64(n), flags: flags}
	args.size = uint64(unsafe.Sizeof(args))
	_, err := h.do(iocAcquire, unsafe.Pointer(&args))
	return err
}

func (h *handle) release(n int64) error {
	_, err := h.doU64(iocRelease, uint64(n))
	return err
}

// reopen is a new handle, holding nothing, on h's semaphore.
func (h *handle) reopen() (*handle, error) {
	fd, err := h.doU64(iocReopen, reopenCloexec)
	if err != nil {
		return nil, os.NewSyscallError("wsem reopen", err)
	}
	return newHandle(fd, h.f.Name())
}

// finalized counts the Weighteds that the garbage collector closed.
var finalized atomic.Int64

// bindNew opens /dev/wsem (read-only to watch) and binds the handle as
// args say.
func bindNew(args *openArgs, what string, watch bool) (*Weighted, error) {
	fd, err := syscall.Open(devicePath, accessMode(watch)|syscall.O_CLOEXEC,
		0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: devicePath, Err: err}
	}
	args.size = uint64(unsafe.Sizeof(*args))
	err = retryAfterGC(func() error {
		_, err := ioctl(uintptr(fd), iocOpen, unsafe.Pointer(args))
		return err
	})
	if err != nil {
		syscall.Close(fd)
		return nil, &os.PathError{Op: "wsem open", Path: what, Err: err}
	}
	return fromFD(fd, what)
}

// retryAfterGC runs try again while it fails with ENOSPC (the namespace's
// limit) and a garbage collection closes Weighteds that nobody closed:
// their kernel semaphores count until then, and the Go heap, which they
// hardly grow, does not know it.  An ENOSPC that no collection helps is
// returned, after at most a few milliseconds.
func retryAfterGC(try func() error) error {
	err := try()
	for i := 0; err == syscall.ENOSPC && i < 8; i++ {
		before := finalized.Load()
		runtime.GC()
		// The finalizers run on their own goroutine: give them time.
		for j := 0; j < 20 && finalized.Load() == before; j++ {
			time.Sleep(time.Millisecond)
		}
		if finalized.Load() == before {
			break
		}
		err = try()
	}
	return err
}

func fromFD(fd int, name string) (*Weighted, error) {
	h, err := newHandle(fd, name)
	if err != nil {
		return nil, err
	}
	w := &Weighted{
		base:    h,
		spare:   []*handle{h},
		holding: make(map[*handle]struct{}),
		waiting: make(map[*handle]struct{}),
	}
	// As os.File does: a Weighted that becomes unreachable unclosed is
	// closed, giving back what it holds and its kernel handles.  Close
	// it yourself: the collector may come much later.
	runtime.SetFinalizer(w, (*Weighted).finalize)
	return w, nil
}

// finalize closes a Weighted that nobody closed.
func (w *Weighted) finalize() {
	if w.Close() == nil {
		finalized.Add(1)
	}
}

func openNamed(name string, flags uint64, capacity int64,
	perm os.FileMode) (*Weighted, error) {
	var args openArgs
	if strings.ContainsRune(name, '/') || capacity < 0 ||
		perm&^os.ModePerm != 0 {
		return nil, &os.PathError{Op: "wsem open", Path: name,
			Err: syscall.EINVAL}
	}
	if err := setName(&args.name, name); err != nil {
		return nil, &os.PathError{Op: "wsem open", Path: name, Err: err}
	}
	args.flags = flags
	if flags&openCreat != 0 {
		args.capacity = uint64(capacity)
		args.mode = uint32(perm)
	}
	return bindNew(&args, name, false)
}

// NewWeighted opens the semaphore called name, creating it with capacity n
// and mode 0600 (less the umask) if it does not exist.  An existing
// semaphore keeps its own capacity.  It is the replacement of x/sync's
// semaphore.NewWeighted(n).
func NewWeighted(name string, n int64) (*Weighted, error) {
	return Create(name, n, 0o600)
}

// Create opens the semaphore called name, creating it with capacity n
// (1..2^62) and permission bits perm (less the umask) if it does not exist.
func Create(name string, n int64, perm os.FileMode) (*Weighted, error) {
	return openNamed(name, openCreat, n, perm)
}

// CreateLoans opens the semaphore called name, creating it, if it does
// not exist, as one that takes its capacity from loans (Lend): its own
// capacity is 0, and ceiling (1..2^62) is the largest weight a request
// may ask for.  Its waiters within the ceiling wait while the loans fall
// short, withdrawn ones included.  An existing semaphore stays as it is.
func CreateLoans(name string, ceiling int64, perm os.FileMode) (*Weighted,
	error) {
	return openNamed(name, openCreat|openLoans, ceiling, perm)
}

// CreateExclusive is Create that fails with an error matching
// os.ErrExist if the semaphore exists.
func CreateExclusive(name string, n int64, perm os.FileMode) (*Weighted,
	error) {
	return openNamed(name, openCreat|openExcl, n, perm)
}

// Open opens an existing semaphore: by name, or, for anything with a '/',
// by the path of its wsemfs file.  A missing one is an error matching
// os.ErrNotExist.
func Open(name string) (*Weighted, error) {
	return openExisting(name, false)
}

// OpenWatch opens an existing semaphore, by name or path as Open does,
// for looking only: the kernel handles are open for reading alone, so
// read permission is enough (wsem_open_watch() in C).  Stat, Holders and
// WaitIdle work; Acquire, Resize and SetLabel fail with an error matching
// syscall.EBADF, and TryAcquire is false.
func OpenWatch(name string) (*Weighted, error) {
	return openExisting(name, true)
}

func openExisting(name string, watch bool) (*Weighted, error) {
	if !strings.ContainsRune(name, '/') {
		var args openArgs
		if err := setName(&args.name, name); err != nil {
			return nil, &os.PathError{Op: "wsem open", Path: name,
				Err: err}
		}
		return bindNew(&args, name, watch)
	}
	// Opened first, then asked which file system it is on: no race
	// with a file swapped in between.  O_NONBLOCK: no FIFO or device
	// may block the open of a wrong path.
	fd, err := syscall.Open(name, accessMode(watch)|syscall.O_CLOEXEC|
		syscall.O_NOCTTY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	var sf syscall.Statfs_t
	if err := syscall.Fstatfs(fd, &sf); err != nil || sf.Type != wsemFSMagic {
		syscall.Close(fd)
		if err == nil {
			err = syscall.EINVAL
		}
		return nil, &os.PathError{Op: "wsem open", Path: name, Err: err}
	}
	return fromFD(fd, name)
}

// accessMode is the open(2) access mode of a handle: read-only to watch.
func accessMode(watch bool) int {
	if watch {
		return syscall.O_RDONLY
	}
	return syscall.O_RDWR
}

// NewAnonymous creates a semaphore of capacity n without a name.  It lives
// while any handle on it does; File gives a descriptor to pass on.
func NewAnonymous(n int64) (*Weighted, error) {
	if n < 0 {
		return nil, os.NewSyscallError("wsem open", syscall.EINVAL)
	}
	return bindNew(&openArgs{flags: openAnon, capacity: uint64(n)},
		"anonymous", false)
}

// NewAnonymousLoans creates a semaphore without a name that takes its
// capacity from loans, with the ceiling ceiling (see CreateLoans).
func NewAnonymousLoans(ceiling int64) (*Weighted, error) {
	if ceiling < 0 {
		return nil, os.NewSyscallError("wsem open", syscall.EINVAL)
	}
	return bindNew(&openArgs{flags: openAnon | openLoans,
		capacity: uint64(ceiling)}, "anonymous", false)
}

// OpenFD takes up the semaphore of a handle descriptor fd, one that this
// process inherited (exec.Cmd.ExtraFiles, "wsem run --inherit"'s WSEM_FD)
// or received: the Weighted gets handles of its own, and fd stays the
// caller's, holding what it held.
func OpenFD(fd int) (*Weighted, error) {
	flags := uint64(reopenCloexec)
	nfd, err := ioctl(uintptr(fd), iocReopen, unsafe.Pointer(&flags))
	if err != nil {
		return nil, os.NewSyscallError("wsem reopen", err)
	}
	return fromFD(nfd, "inherited")
}

// AdoptFD makes a Weighted of the handle descriptor fd itself, which it
// owns from then on (and closes if it is no bound handle): its first
// handle is fd's, with what that handle holds and lends.  OpenFD takes up
// only fd's semaphore, through a new handle.  For a handle whose loan
// must go on in a new process: one a service manager's file descriptor
// store kept across a restart (see File).
func AdoptFD(fd int) (*Weighted, error) {
	var a statArgs
	a.size = uint64(unsafe.Sizeof(a))
	if _, err := ioctl(uintptr(fd), iocStat, unsafe.Pointer(&a)); err != nil {
		syscall.Close(fd)
		return nil, os.NewSyscallError("wsem stat", err)
	}
	syscall.CloseOnExec(fd)
	return fromFD(fd, "adopted")
}

// Unlink removes the name of a semaphore; handles already open go on.
func Unlink(name string) error {
	var args unlinkArgs
	args.size = uint64(unsafe.Sizeof(args))
	if err := setName(&args.name, name); err != nil {
		return &os.PathError{Op: "wsem unlink", Path: name, Err: err}
	}
	fd, err := syscall.Open(devicePath, syscall.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: devicePath, Err: err}
	}
	defer syscall.Close(fd)
	if _, err := ioctl(uintptr(fd), iocUnlink, unsafe.Pointer(&args)); err != nil {
		return &os.PathError{Op: "wsem unlink", Path: name, Err: err}
	}
	return nil
}

// idleHandle is a handle for an acquire that cannot wait: one that holds
// weight already if there is one, so that units gather on few handles.
// Called with w.mu held; the handle stays where it is.
func (w *Weighted) idleHandle() (*handle, error) {
	for h := range w.holding {
		return h, nil
	}
	if n := len(w.spare); n > 0 {
		return w.spare[n-1], nil
	}
	h, err := w.newHandle()
	if err != nil {
		return nil, err
	}
	w.spare = append(w.spare, h)
	return h, nil
}

// takeSpare takes an idle handle that holds nothing out of the pool, for
// a request; putBack returns it.  Called with w.mu held.
func (w *Weighted) takeSpare() (*handle, error) {
	var h *handle
	if n := len(w.spare); n > 0 {
		h = w.spare[n-1]
		w.spare = w.spare[:n-1]
	} else {
		var err error
		if h, err = w.newHandle(); err != nil {
			return nil, err
		}
	}
	w.waiting[h] = struct{}{}
	return h, nil
}

// credit books n units granted through h.  Called with w.mu held.
func (w *Weighted) credit(h *handle, n int64) {
	if h.held == 0 {
		w.dropSpare(h)
	}
	h.held += n
	w.held += n
	w.holding[h] = struct{}{}
}

func (w *Weighted) dropSpare(h *handle) {
	for i, s := range w.spare {
		if s == h {
			last := len(w.spare) - 1
			w.spare[i] = w.spare[last]
			w.spare = w.spare[:last]
			return
		}
	}
}

// addSpare files an idle handle that holds nothing.  Called with w.mu held.
func (w *Weighted) addSpare(h *handle) {
	if w.closed || (len(w.spare) >= maxSpare && h != w.base) {
		h.f.Close()
		return
	}
	w.spare = append(w.spare, h)
}

// putBack returns a handle that takeSpare gave out, with n units granted.
func (w *Weighted) putBack(h *handle, n int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.waiting, h)
	if w.closed {
		h.f.Close()
		return
	}
	if n > 0 {
		w.credit(h, n)
		return
	}
	w.addSpare(h)
}

// Acquire acquires the semaphore with a weight of n, blocking until the
// units are granted, in strict FIFO order with every other waiter of every
// process, or until ctx is done.  On success it returns nil.  On failure it
// returns ctx.Err(), ErrClosed, or an error matching syscall.EINVAL (n is
// negative or larger than the capacity, or the capacity shrank below n
// while waiting), and holds nothing.  If ctx is already done, Acquire fails
// even if the units are free.
func (w *Weighted) Acquire(ctx context.Context, n int64) error {
	done := ctx.Done()
	select {
	case <-done:
		return ctx.Err()
	default:
	}
	if n <= 0 {
		if n == 0 {
			return nil
		}
		return os.NewSyscallError("wsem acquire", syscall.EINVAL)
	}
	tried := false
	if p := w.pool.Load(); p != nil {
		if p.closed.Load() {
			return ErrClosed
		}
		if p.takeSpare(n) {
			return nil
		}
		switch err := p.kernelTry(n); {
		case err == nil:
			return nil
		case p.closed.Load():
			return ErrClosed
		case err != syscall.EAGAIN:
			return os.NewSyscallError("wsem acquire", err)
		}
		tried = true // the pool tried the kernel: queue at once
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return ErrClosed
	}
	// Granted at once only if nobody is queued: the same rule the
	// asynchronous request below follows, without a handle to spare.
	var h *handle
	var err error = syscall.EAGAIN
	if !tried {
		h, err = w.idleHandle()
	}
	if err == nil {
		err = h.acquire(n, acquireTry)
		if err == nil {
			w.credit(h, n)
			w.mu.Unlock()
			return nil
		}
	}
	if err == syscall.EAGAIN {
		h, err = w.takeSpare()
	}
	w.mu.Unlock()
	if err != nil {
		return os.NewSyscallError("wsem acquire", err)
	}
	switch err = h.acquire(n, acquireAsync); err {
	case nil:
		w.putBack(h, n)
		return nil
	case syscall.EINPROGRESS:
		return w.wait(ctx, h, n)
	default:
		w.putBack(h, 0)
		return os.NewSyscallError("wsem acquire", err)
	}
}

// aLongTimeAgo is a read deadline that has passed: it wakes a waiter.
var aLongTimeAgo = time.Unix(1, 0)

// wait sleeps until h's queued request for n units ends or ctx is done.
func (w *Weighted) wait(ctx context.Context, h *handle, n int64) error {
	done := ctx.Done()
	var stop, watcher chan struct{}
	if done != nil {
		stop = make(chan struct{})
		watcher = make(chan struct{})
		go func() {
			defer close(watcher)
			select {
			case <-done:
				h.f.SetReadDeadline(aLongTimeAgo)
			case <-stop:
			}
		}()
	}
	var ended error // how the request ended
	err := h.rc.Read(func(fd uintptr) bool {
		_, ended = ioctlU64(fd, iocAsync, 0)
		return ended != syscall.EINPROGRESS
	})
	if watcher != nil {
		close(stop)
		<-watcher
		h.f.SetReadDeadline(time.Time{})
	}
	if err == nil && ended == nil {
		// Granted; but a ctx done by now fails the call, as in x/sync.
		select {
		case <-done:
			return w.giveBack(ctx, h, n)
		default:
			w.putBack(h, n)
			return nil
		}
	}
	if err == nil {
		w.putBack(h, 0)
		return os.NewSyscallError("wsem acquire", ended)
	}
	// Woken by ctx or by Close: leave the queue, unless granted meanwhile.
	_, cerr := h.doU64(iocAsync, asyncCancel)
	if cerr == syscall.EALREADY {
		return w.giveBack(ctx, h, n)
	}
	w.putBack(h, 0)
	return w.whyStopped(ctx, err)
}

// giveBack releases n units granted to h that the caller will not have.
func (w *Weighted) giveBack(ctx context.Context, h *handle, n int64) error {
	if err := h.release(n); err != nil {
		// Close let go of it already; anything else is our bug.
		w.mu.Lock()
		closed := w.closed
		w.mu.Unlock()
		if !closed {
			panic("wsem: cannot give back a grant: " + err.Error())
		}
	}
	w.putBack(h, 0)
	return w.whyStopped(ctx, nil)
}

// whyStopped is the error of an Acquire that ctx or Close ended.
func (w *Weighted) whyStopped(ctx context.Context, err error) error {
	w.mu.Lock()
	closed := w.closed
	w.mu.Unlock()
	switch {
	case closed:
		return ErrClosed
	case ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		return err
	}
	return ctx.Err()
}

// TryAcquire acquires the semaphore with a weight of n without blocking.
// It succeeds only if the units are free and nobody is queued (no waiter
// is ever overtaken); on failure it returns false and holds nothing.
func (w *Weighted) TryAcquire(n int64) bool {
	if n <= 0 {
		return n == 0
	}
	if p := w.pool.Load(); p != nil {
		return !p.closed.Load() && (p.takeSpare(n) || p.kernelTry(n) == nil)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return false
	}
	h, err := w.idleHandle()
	if err != nil || h.acquire(n, acquireTry) != nil {
		return false
	}
	w.credit(h, n)
	return true
}

// Release releases the semaphore with a weight of n: the waiters at the
// head of the queue that now fit are granted, in any process.  It panics
// if the Weighted holds less than n (acquired by any of its goroutines).
// With a pool (EnablePool), what goroutines acquired through the pool
// becomes spare first, and goes back to the kernel as the pool's rules
// say; the rest is released at once.
func (w *Weighted) Release(n int64) {
	if n < 0 {
		panic("wsem: negative release")
	}
	p := w.pool.Load()
	if p != nil {
		if n == 0 || p.closed.Load() {
			return
		}
		if p.release(n) {
			return
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	if n > w.held {
		// The rest from the pool, taken before anything is released:
		// a Release of more than is held releases nothing.
		rest := n - w.held
		if p == nil || !takeFrom(&p.inuse, rest) {
			panic("wsem: released more than held")
		}
		defer func() {
			p.spare.Add(rest)
			p.settle()
		}()
		n = w.held
	}
	for h := range w.holding {
		if n == 0 {
			break
		}
		r := h.held
		if r > n {
			r = n
		}
		if err := h.release(r); err != nil {
			panic("wsem: release: " + err.Error())
		}
		n -= r
		w.held -= r
		if h.held -= r; h.held == 0 {
			delete(w.holding, h)
			w.addSpare(h)
		}
	}
}

// Close gives back everything the Weighted holds, ends its waiting
// Acquires (with ErrClosed) and closes its handles.
func (w *Weighted) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	w.closed = true
	runtime.SetFinalizer(w, nil)
	var first error
	if p := w.pool.Load(); p != nil {
		first = p.close()
	}
	closeAll := func(h *handle) {
		// A waiter's file is closed once its Read has returned.
		if err := h.f.Close(); err != nil && first == nil {
			first = err
		}
	}
	for _, h := range w.spare {
		closeAll(h)
	}
	for h := range w.holding {
		closeAll(h)
	}
	for h := range w.waiting {
		closeAll(h)
	}
	w.spare, w.holding, w.waiting, w.held = nil, nil, nil, 0
	return first
}
