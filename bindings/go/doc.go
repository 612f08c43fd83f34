// SPDX-License-Identifier: LGPL-2.1-or-later

// Package wsem is the Go binding of wsem: weighted, strictly FIFO counting
// semaphores kept by the Linux kernel (the wsem module, /dev/wsem), so that
// one limit holds across every process that opens the same semaphore.
//
// A *Weighted has the method set of golang.org/x/sync/semaphore.Weighted,
//
//	Acquire(ctx context.Context, n int64) error
//	TryAcquire(n int64) bool
//	Release(n int64)
//
// with the same meaning, so a program that limits its goroutines with
// semaphore.NewWeighted(4) limits work across processes by changing one
// line:
//
//	sem, err := wsem.NewWeighted("jobs", 4) // was semaphore.NewWeighted(4)
//	if err != nil {
//		log.Fatal(err)
//	}
//	defer sem.Close()
//
// # Constructors
//
// x/sync's NewWeighted(n) cannot fail and makes a private semaphore; here a
// semaphore is a kernel object with a name, permissions and a lifetime of
// its own, so the constructors return an error and say which semaphore:
//
//   - NewWeighted(name, n): open the named semaphore, creating it with
//     capacity n and mode 0600 if it does not exist.  An existing one keeps
//     its capacity (compare Stat().Capacity if that matters).
//   - Create(name, n, perm) and CreateExclusive(name, n, perm): the same
//     with a mode, and failing with EEXIST if it exists.
//   - Open(name): an existing named semaphore; a name with a '/' is a path
//     to a wsemfs file ("mount -t wsem"), such as one bind-mounted into a
//     container, as for the C library and the wsem command.
//   - NewAnonymous(n): a semaphore without a name, shared with child
//     processes by passing Handle's descriptor (exec.Cmd.ExtraFiles),
//     where OpenFD takes it up.
//   - AdoptFD(fd): the handle fd itself, not a new one on its semaphore:
//     for a lender whose handle a service manager's file descriptor store
//     kept across a restart (put there as File's duplicate), so that its
//     loan goes on.
//
// Names are 1..63 bytes of [A-Za-z0-9._-] in the caller's IPC namespace.
// Close gives back every unit the Weighted holds and cancels its waits.
//
// # Close what you open
//
// A Weighted is a kernel semaphore and kernel handles, not only memory:
// they count against the IPC namespace's limit (max_sems_per_ns; ENOSPC
// beyond it) and may hold weight that other processes wait for.  Call
// Close (defer sem.Close()).  A Weighted that becomes unreachable unclosed
// is closed by a finalizer, as an os.File is, but only when the garbage
// collector gets to it, which may be much later; a constructor that meets
// ENOSPC runs the collector once and tries again if that closed any.
//
// # How it maps onto the kernel
//
// Weight belongs to a kernel handle (an open file description), and a handle
// has at most one asynchronous request at a time.  A Weighted therefore
// keeps a small set of handles on its semaphore (WSEM_IOC_REOPEN): units
// granted at once gather on the handles that already hold some; a waiting
// Acquire queues an asynchronous request (WSEM_ACQUIRE_ASYNC) on a handle of
// its own and sleeps in the Go runtime's network poller until the handle
// polls readable or ctx is done, so no OS thread is blocked per waiter and
// the waiter can always be cancelled.  Release(n) gives n units back through
// the handles that hold them; as in x/sync, any goroutine may release what
// another one acquired.  The bookkeeping is per Weighted: two Weighted
// values on one semaphore are independent holders, like two processes.
//
// # The pool: no system call while nobody waits
//
// Every Acquire and Release above is a system call.  sem.EnablePool(n)
// (once, after the constructor) gives the Weighted a pool, libwsem's
// (wsem_pool_open(3)) in Go: a kernel handle of its own keeps up to n units
// spare, and while the semaphore's counters page (mapped read-only) shows
// nobody queued and no more used than the capacity, Acquire and TryAcquire
// take from the spare units and Release gives to them with atomic
// operations, without a system call.  Once a request of any process
// waits, the spare units go back to the kernel at the next Release, or at
// once through a goroutine asleep in the network poller on the kernel's
// demand event, and the Acquires go to the kernel in FIFO order: the pool
// gets ahead of a waiting request by at most one Acquire per goroutine.
// On a child semaphore the pool also reads its tree's page (its own does
// not show its ancestors' queues) and serves from spare only while nobody
// is queued anywhere in the tree and nothing of it is over its capacity.
// What falls back to the kernel path: a Weighted whose page cannot be
// mapped keeps nothing spare; AcquireMany (a gang) always asks the kernel,
// and waits as any request does until the pool gives way.  The spare units
// count in Stat().Used and Stat().Spare; Close or the process's death,
// however it dies, gives them back.
//
// # Differences from x/sync, all deliberate
//
//   - Acquire with n larger than the capacity fails at once with an error
//     that matches syscall.EINVAL (x/sync waits for ctx to be done).  A
//     request already queued fails the same way when the capacity shrinks
//     below its weight.
//   - Acquire with n < 0 fails (EINVAL), TryAcquire(n < 0) is false,
//     Release(n < 0) panics; n == 0 acquires and releases nothing.
//   - Acquire fails with ErrClosed after Close; TryAcquire is then false and
//     Release does nothing (Close gave everything back).
//
// # Cancellation
//
// As in x/sync: Acquire with a ctx already done fails with ctx.Err() even
// if the units are free.  A waiter whose ctx ends leaves the queue, and the
// waiters behind it that now fit are granted at once (go#37852: a cancelled
// head does not keep its followers waiting); the kernel does this, so it
// holds for waiters of any process.  If the grant and the cancellation race
// and the grant wins, Acquire gives the units straight back and returns
// ctx.Err(), as x/sync does: a failed Acquire never holds anything.
package wsem
