// SPDX-License-Identifier: LGPL-2.1-or-later

package wsem

// The pool (EnablePool): a process's fast path, by the rules of libwsem's
// pool (userlib/src/pool.c, wsem_pool_open(3)), in Go.
//
// The pool has a kernel handle of its own, so what the kernel says that
// handle holds is exactly the pool's: inuse, what goroutines acquired
// through the pool and have not released, plus spare, weight held that
// nobody uses.  Both are atomics.  While the semaphore's counters page
// (struct wsem_counters, mapped read-only) shows no waiter, no queued
// weight and no more used than the capacity, Acquire and TryAcquire take
// from spare and Release gives to it, without a system call.  Otherwise:
//
//   - an acquire that spare cannot serve gives all of spare back, then
//     tries the kernel on the pool's handle for its weight plus a batch
//     (up to maxSpare of what the page shows free) that becomes spare, or
//     for its weight alone; if that fails it is the Weighted's plain
//     Acquire, queued in FIFO order, and the weight granted so is held by
//     the Weighted's other handles, not the pool's;
//   - a release moves weight from inuse to spare and reads the page once:
//     all of spare goes back if the page shows a waiter or an overhang,
//     else what is above maxSpare;
//   - a goroutine (the watcher) sleeps in the network poller on an epoll
//     descriptor that watches the pool's handle for EPOLLRDBAND, the
//     kernel's demand event, and, when WSEM_IOC_STAT then shows a waiter
//     or an overhang, gives spare back: an idle pool gives way at once.
//
// An acquire reads the page before it takes from spare: one that read it
// before a request queued may still take spare after, and a goroutine has
// one acquire under way at a time, so a pool gets ahead of a queued
// request by at most one acquire per goroutine.
//
// A child semaphore's page shows the child's queue, not its ancestors',
// on which its weight is held too: on a child the pool also maps the
// tree's page (struct wsem_tree_counters, at WSEM_MMAP_TREE pages) and
// serves from spare only while that shows nobody queued anywhere in the
// tree and nothing of it over its capacity; a child's handle reports
// EPOLLRDBAND when those flags change, so the watcher hears them.  Where
// a page cannot be mapped the pool keeps nothing spare: every call goes
// to the kernel.

import (
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// counters is struct wsem_counters (WSEM_COUNTERS_SIZE_VER0).
type counters struct {
	seq          uint32
	flags        uint32
	size         uint32
	_            uint32
	capacity     uint64
	used         uint64
	waiters      uint64
	queuedWeight uint64
}

const countersGone = 1 << 0 // WSEM_COUNTERS_GONE

// treeCounters is struct wsem_tree_counters (WSEM_TREE_COUNTERS_SIZE_VER0).
type treeCounters struct {
	seq   uint32
	flags uint32
	size  uint32
	_     uint32
}

const (
	mmapTree    = 1      // WSEM_MMAP_TREE, in pages
	treeWaiting = 1 << 1 // WSEM_TREE_WAITING
	treeOver    = 1 << 2 // WSEM_TREE_OVER
)

// A fastPool is a Weighted's pool; see above.
type fastPool struct {
	spare    atomic.Int64 // held by h, used by nobody
	inuse    atomic.Int64 // held by h for the Weighted's goroutines
	closed   atomic.Bool
	maxSpare int64
	h        *handle   // the pool's own handle: holds spare + inuse
	page     []byte    // the counters page mapping, or nil
	c        *counters // its start, or nil: everything is the kernel's
	tree     []byte    // on a child, its tree's page mapping, else nil
	t        *treeCounters
	watch    *os.File // the epoll descriptor the watcher sleeps on
	done     chan struct{}
}

// free reads the page once, consistently: what a try of the kernel could
// get now (capacity - used), and true if nobody is queued and nothing is
// held over the capacity; false without a page.  sync/atomic's loads are
// sequentially consistent, so the second load of seq comes after the
// fields.
func (p *fastPool) free() (int64, bool) {
	if p.c == nil {
		return 0, false
	}
	for tries := 1; ; tries++ {
		s1 := atomic.LoadUint32(&p.c.seq)
		if s1&1 == 0 {
			flags := atomic.LoadUint32(&p.c.flags)
			capacity := atomic.LoadUint64(&p.c.capacity)
			used := atomic.LoadUint64(&p.c.used)
			waiters := atomic.LoadUint64(&p.c.waiters)
			queued := atomic.LoadUint64(&p.c.queuedWeight)
			if atomic.LoadUint32(&p.c.seq) == s1 {
				if flags&countersGone != 0 || waiters != 0 ||
					queued != 0 || used > capacity || p.treeBusy() {
					return 0, false
				}
				return clamp(capacity - used), true
			}
		}
		// The kernel writes a few fields under a spinlock.
		if tries%64 == 0 {
			runtime.Gosched()
		}
	}
}

// treeBusy: on a child, does the tree's page show a request queued or an
// overhang anywhere in the tree (or the tree gone)?
func (p *fastPool) treeBusy() bool {
	return p.t != nil &&
		atomic.LoadUint32(&p.t.flags)&(countersGone|treeWaiting|treeOver) != 0
}

// takeFrom takes n from *v if it has that much.
func takeFrom(v *atomic.Int64, n int64) bool {
	for {
		cur := v.Load()
		if cur < n {
			return false
		}
		if v.CompareAndSwap(cur, cur-n) {
			return true
		}
	}
}

// releaseSpare gives n of the handle's weight back to the kernel; on a
// failure (never expected: the handle holds it; or the pool was closed)
// it stays spare.
func (p *fastPool) releaseSpare(n int64) {
	if n > 0 && p.h.release(n) != nil {
		p.spare.Add(n)
	}
}

// giveBack gives all of spare back to the kernel.
func (p *fastPool) giveBack() {
	p.releaseSpare(p.spare.Swap(0))
}

// trimExcess gives back what spare holds above maxSpare.
func (p *fastPool) trimExcess() {
	for cur := p.spare.Load(); cur > p.maxSpare; cur = p.spare.Load() {
		if p.spare.CompareAndSwap(cur, p.maxSpare) {
			p.releaseSpare(cur - p.maxSpare)
			return
		}
	}
}

// settle runs after weight went into spare: all of it goes back if the
// page now shows a request queued (or an overhang), else what is above
// maxSpare.  The page is read after the store, so a request that queued
// before it is seen here, and one that queues after it finds the weight
// spare for the watcher or the next call to give back.
func (p *fastPool) settle() {
	if _, ok := p.free(); ok {
		p.trimExcess()
	} else {
		p.giveBack()
	}
}

// takeSpare is the fast path: n from spare while the page shows nobody
// queued.
func (p *fastPool) takeSpare(n int64) bool {
	if p.spare.Load() < n {
		return false
	}
	if _, ok := p.free(); !ok {
		return false
	}
	if !takeFrom(&p.spare, n) {
		return false
	}
	p.inuse.Add(n)
	return true
}

// kernelTry is what an acquire that spare could not serve does first:
// spare goes back (a pool keeps nothing while someone may wait), then one
// try of the kernel for n and a batch, with nobody queued, else one for n
// alone.  nil, syscall.EAGAIN (not free, or someone is queued) or the
// kernel's other error.
func (p *fastPool) kernelTry(n int64) error {
	p.giveBack()
	var extra int64
	if free, ok := p.free(); ok && free > n {
		extra = free - n
		if extra > p.maxSpare {
			extra = p.maxSpare
		}
	}
	if extra > 0 && p.h.acquire(n+extra, acquireTry) == nil {
		p.inuse.Add(n)
		p.spare.Add(extra)
		p.settle()
		return nil
	}
	if err := p.h.acquire(n, acquireTry); err != nil {
		return err
	}
	p.inuse.Add(n)
	return nil
}

// release is Release's fast path: n that goroutines acquired through the
// pool becomes spare; false if the pool's goroutines hold less than n.
func (p *fastPool) release(n int64) bool {
	if !takeFrom(&p.inuse, n) {
		return false
	}
	p.spare.Add(n)
	p.settle()
	return true
}

// trim reads the state through the pool's handle (WSEM_IOC_STAT, which
// ends the demand event) and gives spare back if anyone waits or more is
// held than the capacity.
func (p *fastPool) trim() {
	var a statArgs
	a.size = uint64(unsafe.Sizeof(a))
	if _, err := p.h.do(iocStat, unsafe.Pointer(&a)); err != nil {
		return
	}
	if a.waiters != 0 || a.queuedWeight != 0 || a.used > a.capacity ||
		p.treeBusy() {
		p.giveBack()
	}
}

// mapAt maps size bytes of the pool's handle at offset, read-only.
func (p *fastPool) mapAt(offset int64, size int) []byte {
	var page []byte
	var err error
	cerr := p.h.rc.Control(func(fd uintptr) {
		page, err = syscall.Mmap(int(fd), offset, size,
			syscall.PROT_READ, syscall.MAP_SHARED)
	})
	if cerr != nil || err != nil {
		return nil
	}
	return page
}

// mapPage maps the counters page of the pool's handle, and on a child
// (depth above 0) its tree's page first; without them (an error, or a
// module without the pages) the pool keeps nothing spare.
func (p *fastPool) mapPage(depth uint64) {
	if depth > 0 {
		p.tree = p.mapAt(mmapTree*int64(os.Getpagesize()),
			int(unsafe.Sizeof(treeCounters{})))
		if p.tree == nil {
			return
		}
		p.t = (*treeCounters)(unsafe.Pointer(&p.tree[0]))
	}
	if p.page = p.mapAt(0, int(unsafe.Sizeof(counters{}))); p.page != nil {
		p.c = (*counters)(unsafe.Pointer(&p.page[0]))
	}
}

// unmap unmaps the page: only once nothing can read it any more, from
// the pool's finalizer.
func (p *fastPool) unmap() {
	if p.page != nil {
		syscall.Munmap(p.page)
		p.page, p.c = nil, nil
	}
	if p.tree != nil {
		syscall.Munmap(p.tree)
		p.tree, p.t = nil, nil
	}
}

// startWatcher starts the goroutine that gives spare back on the demand
// event: an epoll descriptor that watches the pool's handle for
// EPOLLRDBAND, in the network poller, so no OS thread sleeps for it.
func (p *fastPool) startWatcher() error {
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return os.NewSyscallError("epoll_create1", err)
	}
	cerr := p.h.rc.Control(func(fd uintptr) {
		ev := syscall.EpollEvent{Events: syscall.EPOLLRDBAND,
			Fd: int32(fd)}
		err = syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, int(fd), &ev)
	})
	if cerr == nil && err == nil {
		err = syscall.SetNonblock(ep, true)
	}
	if cerr != nil || err != nil {
		syscall.Close(ep)
		if cerr != nil {
			return cerr
		}
		return os.NewSyscallError("epoll_ctl", err)
	}
	p.watch = os.NewFile(uintptr(ep), "wsem-pool")
	rc, err := p.watch.SyscallConn()
	if err != nil {
		p.watch.Close()
		return err
	}
	go p.watchLoop(rc)
	return nil
}

// watchLoop is the watcher: until close closes its epoll descriptor.
func (p *fastPool) watchLoop(rc syscall.RawConn) {
	defer close(p.done)
	rc.Read(func(epfd uintptr) bool {
		// Drain what woke us; the poller waits for the next event.
		var evs [1]syscall.EpollEvent
		syscall.EpollWait(int(epfd), evs[:], 0)
		p.trim()
		return false
	})
}

// close stops the watcher and closes the pool's handle, which gives back
// everything it holds.  The page stays mapped: a goroutine in the fast
// path may still read it; the finalizer unmaps it.
func (p *fastPool) close() error {
	p.closed.Store(true)
	if p.watch != nil {
		p.watch.Close()
		<-p.done
	}
	err := p.h.f.Close()
	p.spare.Store(0)
	p.inuse.Store(0)
	return err
}

// EnablePool gives w a pool: Acquire, TryAcquire and Release are then
// served from weight that w's own kernel handle keeps spare, with atomic
// operations and no system call, while the semaphore's counters page
// shows nobody queued; up to maxSpare (0..2^62) is kept spare while
// nobody else needs it.  Once a request of any process waits, the pool's
// spare weight goes back at its next Release, or at once through a
// goroutine that watches the kernel's demand event, and its acquires go
// to the kernel in FIFO order, so the pool gets ahead of a waiting
// request by at most one Acquire per goroutine.  The weight stays the
// kernel's to enforce: Stat().Used counts it (Stat().Spare says how much
// nobody uses), and Close or the process's death, however it dies, gives
// it back.
//
// On a child semaphore the pool serves from spare only while nobody is
// queued anywhere in its tree and nothing of the tree is over its
// capacity.  Where the counters pages cannot be mapped the pool keeps
// nothing spare and every call is the kernel's; AcquireMany always is,
// and waits as any request does for the pool to give way.
//
// A negative maxSpare, or one over 2^62, is an error matching
// syscall.EINVAL; a second EnablePool on w one matching syscall.EEXIST.
func (w *Weighted) EnablePool(maxSpare int64) error {
	if maxSpare < 0 || maxSpare > wsemCapacityMax {
		return fmt.Errorf("wsem: EnablePool(%d): maxSpare must be 0..2^62: %w",
			maxSpare, syscall.EINVAL)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	if w.pool.Load() != nil {
		return fmt.Errorf("wsem: EnablePool: this Weighted has a pool already: %w",
			syscall.EEXIST)
	}
	h, err := w.newHandle()
	if err != nil {
		return err
	}
	var a statArgs
	a.size = uint64(unsafe.Sizeof(a))
	if _, err := h.do(iocStat, unsafe.Pointer(&a)); err != nil {
		h.f.Close()
		return os.NewSyscallError("wsem stat", err)
	}
	p := &fastPool{h: h, maxSpare: maxSpare, done: make(chan struct{})}
	p.mapPage(a.depth)
	if p.c != nil {
		if err := p.startWatcher(); err != nil {
			p.unmap()
			h.f.Close()
			return err
		}
	}
	runtime.SetFinalizer(p, (*fastPool).unmap)
	w.pool.Store(p)
	return nil
}
