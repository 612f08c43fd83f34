/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libwsem: weighted, strictly FIFO counting semaphores over /dev/wsem.
 *
 * A handle is a plain file descriptor.  Weight acquired through it belongs
 * to the open file description and goes back when its last reference is
 * closed (close, exit, SIGKILL), like a flock(2) lock.  Every call returns
 * 0 (or a new descriptor) on success and -1 with errno set on failure, as
 * sem_wait(3) and semop(2) do.
 *
 *	int fd = wsem_open("jobs", O_CREAT, 0600, 8);
 *	if (fd < 0 || wsem_acquire(fd, 3) < 0)
 *		err(1, "jobs");
 *	do_work();
 *	wsem_release(fd, 3);	// or just close(fd)
 *
 * Link with -lwsem (pkg-config --cflags --libs wsem).
 */
#ifndef WSEM_H
#define WSEM_H

#include <stdint.h>
#include <sys/types.h>
#include <time.h>
#include <linux/wsem.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Declared here, at file scope: a C99 program without POSIX feature macros
 * gets no struct timespec from <time.h>, and one first named in a
 * prototype below would be a different type, local to that prototype.
 */
struct timespec;

/*
 * Handles: oflag takes O_CREAT and O_EXCL from <fcntl.h> (wsem_open() only),
 * O_CLOEXEC, WSEM_INHERIT and WSEM_LOANS.  Every handle the library returns is
 * close-on-exec, as if O_CLOEXEC were given, so that weight never leaks
 * into a program that system(3), popen(3) or exec starts; WSEM_INHERIT
 * asks for a handle that survives execve(2) instead (it and O_CLOEXEC
 * together are EINVAL).  The kernel ABI is untouched: this is the
 * library's choice of open(2) and reopen flags.
 */
#define WSEM_INHERIT	0x40000000

/*
 * WSEM_LOANS, with O_CREAT to wsem_open() or to wsem_open_anon(): a
 * semaphore this call creates takes its capacity from loans (wsem_lend()):
 * its own capacity is 0, and @capacity is its ceiling, the largest weight
 * a request may ask for.  Its waiters within the ceiling wait while loans
 * are short, withdrawn ones included.  An existing semaphore opened with
 * O_CREAT stays as it is; without O_CREAT (and on a path) it is EINVAL.
 * This is WSEM_OPEN_LOANS of the kernel ABI.
 */
#define WSEM_LOANS	0x20000000

int wsem_open(const char *name, int oflag, mode_t mode, uint64_t capacity);

/*
 * A handle open for reading only, on an existing semaphore (a name, or
 * a wsemfs path): it needs read permission alone and can stat, list the
 * holders, wait until idle, poll and read; acquire, release,
 * set_capacity and set_label fail with EBADF.  oflag: O_CLOEXEC,
 * WSEM_INHERIT.  wsem_open() takes O_RDWR, as mq_open(3) does, and
 * always opens for reading and writing (O_WRONLY is EINVAL).
 */
int wsem_open_watch(const char *name, int oflag);
int wsem_open_anon(uint64_t capacity, int oflag);
int wsem_reopen(int fd, int oflag);

/*
 * Limits that nest.  wsem_open_child(): a new semaphore whose parent is
 * @parent_fd's (a handle open for reading and writing); NULL @name makes
 * an anonymous child; oflag as wsem_open()'s, O_CREAT implied.  Weight
 * acquired on a child is acquired on each of its ancestors too, at once.
 * wsem_acquire_many(): one request for @weights[i] on @fds[i]'s semaphore,
 * each i (n at most WSEM_MANY_MAX), granted all at once or not at all;
 * timeout_ns < 0 waits for ever, 0 only tries (EAGAIN).
 */
int wsem_open_child(int parent_fd, const char *name, int oflag, mode_t mode,
		    uint64_t capacity);
int wsem_acquire_many(const int *fds, const uint64_t *weights, size_t n,
		      int64_t timeout_ns);
int wsem_unlink(const char *name);

/* Weight: timeout_ns is relative, measured on CLOCK_MONOTONIC. */
int wsem_acquire(int fd, uint64_t weight);
int wsem_acquire_timeout(int fd, uint64_t weight, int64_t timeout_ns);
int wsem_tryacquire(int fd, uint64_t weight);
int wsem_release(int fd, uint64_t weight);

/*
 * A deadline on a clock: @abs is absolute on CLOCK_MONOTONIC,
 * CLOCK_BOOTTIME or CLOCK_REALTIME (which follows changes of the clock,
 * like sem_clockwait(3)), so a call retried after EINTR keeps it.
 */
int wsem_acquire_clock(int fd, uint64_t weight, clockid_t clockid,
		       const struct timespec *abs);

/*
 * Waiting without a thread.  wsem_acquire_async() takes a place at the
 * tail of the queue and returns: 0 if granted at once, else -1 with
 * EINPROGRESS, and the handle polls readable (POLLIN) once the request
 * has ended; wsem_acquire_result() then says how: 0 (the weight is the
 * handle's), -1 with EINPROGRESS (still queued) or the error it ended with.
 * wsem_acquire_cancel() leaves the queue (0), or fails with EALREADY when
 * the request was granted meanwhile: the weight is held.  One request per
 * handle (EBUSY); close(2) cancels it.  ENOENT: no request.
 */
int wsem_acquire_async(int fd, uint64_t weight);
int wsem_acquire_result(int fd);
int wsem_acquire_cancel(int fd);

/*
 * Until nothing is held and nobody is queued; timeout_ns < 0 waits
 * forever, 0 only looks (ETIMEDOUT).  EDEADLK: this handle holds weight
 * or has a request.  poll(2) reports idle as POLLPRI.
 */
int wsem_wait_idle(int fd, int64_t timeout_ns);
int wsem_wait_idle_clock(int fd, clockid_t clockid,
			 const struct timespec *abs);

/*
 * State.  struct wsem_stat grows with new versions of this header: the
 * _sized calls take the caller's sizeof, and wsem_stat() and wsem_list()
 * are macros that pass it, so that a program built against an older
 * header keeps working with a newer libwsem.so.1 (the functions of those
 * names, which such programs call, fill WSEM_STAT_SIZE_VER0 bytes).
 */
int wsem_set_capacity(int fd, uint64_t capacity);
int wsem_stat_sized(int fd, struct wsem_stat *st, size_t size);
ssize_t wsem_list_sized(struct wsem_stat *buf, size_t n, size_t size);
int (wsem_stat)(int fd, struct wsem_stat *st);
ssize_t (wsem_list)(struct wsem_stat *buf, size_t n);
#define wsem_stat(fd, st) wsem_stat_sized((fd), (st), sizeof(struct wsem_stat))
#define wsem_list(buf, n) wsem_list_sized((buf), (n), sizeof(struct wsem_stat))

/*
 * Who holds and who waits: up to @n entries, the holders first, then the
 * waiters in queue order (flags WSEM_HOLDER_WAITING).  Returns how many
 * there are in all (more than @n: @buf was too small), with *@nholders
 * set to how many of them hold; -1 with errno (EACCES for a handle not
 * open for reading).
 */
ssize_t wsem_holders_sized(int fd, struct wsem_holder *buf, size_t n,
			   size_t size, size_t *nholders);
#define wsem_holders(fd, buf, n, nholders) \
	wsem_holders_sized((fd), (buf), (n), sizeof(struct wsem_holder), \
			   (nholders))

/*
 * The same, then one entry per child semaphore that holds weight (flags
 * WSEM_HOLDER_CHILD: what it holds of this one, its name in @label).
 * Returns how many entries there are in all, with *@nholders and
 * *@nchildren set (either may be NULL); -1 with errno.
 */
ssize_t wsem_holders_children_sized(int fd, struct wsem_holder *buf,
				    size_t n, size_t size, size_t *nholders,
				    size_t *nchildren);
#define wsem_holders_children(fd, buf, n, nholders, nchildren) \
	wsem_holders_children_sized((fd), (buf), (n), \
				    sizeof(struct wsem_holder), (nholders), \
				    (nchildren))

/*
 * Lend capacity: @fd's loan becomes @capacity (0 withdraws it).  The
 * semaphore's capacity in force (wsem_stat()'s capacity) is its own plus
 * every open handle's loan, and a loan is withdrawn when the handle's last
 * descriptor is closed or its last process dies, however it dies.  Less
 * capacity is a shrink: nothing held is taken back.  Lending more needs
 * what wsem_set_capacity() needs (owner or CAP_IPC_OWNER); lending less
 * never does.  0, or -1 with errno (EPERM, EINVAL, EBADF).
 */
int wsem_lend(int fd, uint64_t capacity);

/*
 * Label @fd's holder or waiter in the holders view (what the weight is
 * held for): up to WSEM_LABEL_MAX - 1 bytes of printable ASCII; NULL or ""
 * clears it.  0, or -1 with errno (EINVAL, EBADF for a read-only handle).
 */
int wsem_set_label(int fd, const char *label);

/*
 * The counters page (struct wsem_counters): map @fd's semaphore's counters
 * read-only, and read them without a system call.  wsem_map_counters()
 * returns the page or NULL with errno (EINVAL, EACCES, ENOMEM);
 * wsem_read_counters() copies one consistent state of it into @out,
 * retrying while the kernel writes, and returns 0 (or -1, EFAULT);
 * wsem_unmap_counters() unmaps it.  The page stays readable after the
 * semaphore is gone, with WSEM_COUNTERS_GONE in @flags.
 */
const struct wsem_counters *wsem_map_counters(int fd);
int wsem_read_counters(const struct wsem_counters *c,
		       struct wsem_counters *out);
int wsem_unmap_counters(const struct wsem_counters *c);

/*
 * A pool: this process's fast path over one handle (wsem_pool(3)).  It
 * holds weight of the semaphore through a handle of its own and serves
 * its threads' acquires and releases with atomics, no system call, while
 * the counters page shows nobody queued; once a request waits, its
 * acquires go to the kernel in arrival order and its spare weight goes
 * back.  A pool gets ahead of a queued request by at most one acquire per
 * thread: the acquires that had looked at the page before it queued.
 * @max_spare bounds the weight it keeps for later acquires; timeout_ns as
 * wsem_acquire_many()'s (< 0 for ever, 0 only tries: EAGAIN).  Its weight
 * goes back when the pool is closed or the process dies.  Without
 * WSEM_POOL_NOTHREAD a thread of the pool's gives spare weight back on the
 * demand event (POLLRDBAND); with it, the caller polls wsem_pool_fd() for
 * POLLRDBAND and calls wsem_pool_trim().
 */
#define WSEM_POOL_NOTHREAD	0x1

struct wsem_pool;

struct wsem_pool *wsem_pool_open(int fd, uint64_t max_spare, int flags);
int wsem_pool_close(struct wsem_pool *pool);
int wsem_pool_acquire(struct wsem_pool *pool, uint64_t weight,
		      int64_t timeout_ns);
int wsem_pool_tryacquire(struct wsem_pool *pool, uint64_t weight);
int wsem_pool_release(struct wsem_pool *pool, uint64_t weight);
int wsem_pool_trim(struct wsem_pool *pool);
int wsem_pool_fd(const struct wsem_pool *pool);

#ifdef __cplusplus
}
#endif

#endif /* WSEM_H */
