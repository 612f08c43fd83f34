// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The pool: a process's fast path over one handle (wsem_pool_open(3)).
 *
 * The pool has a handle of its own (a reopen of the caller's), so what the
 * kernel says that handle holds is exactly the pool's: @inuse, the weight
 * its threads acquired and have not released, plus @spare, weight it holds
 * that no thread uses.  Both are atomics.  While the semaphore's counters
 * page shows nobody queued (no waiter, no queued weight) and no shrink
 * overhang (used <= capacity), an acquire takes from @spare and a release
 * gives to it, without a system call; everything else goes to the kernel
 * through the handle, as the plain calls do:
 *
 *  - an acquire that @spare cannot serve first gives @spare back, then
 *    asks the kernel: with nobody queued, one try for its weight plus a
 *    batch (up to @max_spare, within what the page shows free) that
 *    becomes spare; else the plain acquire of its weight, which queues in
 *    arrival order with every other request;
 *  - a release puts the weight into @spare, then reads the page: if it
 *    shows a waiter or an overhang, all of @spare goes back, else what is
 *    above @max_spare (one system call at most); a batch does the same
 *    after the try, so no weight stays spare behind a request that queued
 *    before the store;
 *  - the watcher thread (none with WSEM_POOL_NOTHREAD) sleeps in poll(2)
 *    on the handle for the demand event (POLLRDBAND, the one lenders
 *    follow) and, when the state it then reads shows a waiter or an
 *    overhang, gives @spare back: an idle pool gives way at once.
 *
 * An acquire looks at the page before it takes from @spare: one that
 * looked before a request queued may still take spare weight after it,
 * and each thread has one acquire at a time, so a pool gets ahead of a
 * queued request by at most one acquire per thread; an acquire that
 * begins after the request queued finds it on the page and queues behind
 * it in the kernel.
 *
 * A child's page shows the child's queue and weight, not its ancestors',
 * on which its weight is held too: a pool over a child also maps its
 * tree's page (struct wsem_tree_counters) and serves from @spare only
 * while that shows nobody queued anywhere in the tree and no semaphore of
 * the tree over its capacity.  The watcher hears the tree's changes, too:
 * a child's handle reports the demand event when the tree's flags change.
 * Where a page cannot be mapped the pool keeps nothing spare: every call
 * is the kernel's.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "wsem.h"
#include "internal.h"

/**
 * struct wsem_pool - a process's pool over one handle
 * @spare: weight @fd holds that no thread uses; taken and given with
 *	atomics while nobody is queued
 * @inuse: weight @fd holds for the pool's threads (what they may release)
 * @c: @fd's counters page, or NULL: every call goes to the kernel
 * @tree: for a child, its tree's page, else NULL
 * @fd: the pool's own handle: what it holds is @spare + @inuse
 * @stop_fd: an eventfd that ends the watcher, or -1 without one
 * @max_spare: the most weight kept spare
 * @forks: pool_forks when the pool was opened: another value is a child
 *	of fork(2), which shares @fd but not the counts
 * @watcher: the thread that gives @spare back on the demand event
 */
struct wsem_pool {
	uint64_t spare;
	uint64_t inuse;
	const struct wsem_counters *c;
	const struct wsem_tree_counters *tree;
	int fd;
	int stop_fd;
	uint64_t max_spare;
	unsigned long forks;
	pthread_t watcher;
};

/* Counts the fork(2)s of this process's ancestors and itself. */
static unsigned long pool_forks;
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;

static void pool_forked(void)
{
	__atomic_add_fetch(&pool_forks, 1, __ATOMIC_RELAXED);
}

static void pool_init_once(void)
{
	pthread_atfork(NULL, NULL, pool_forked);
}

/* 0 if @p may be used by this process; else -1 with errno. */
static int pool_check(const struct wsem_pool *p)
{
	if (!p) {
		errno = EINVAL;
		return -1;
	}
	if (p->forks != __atomic_load_n(&pool_forks, __ATOMIC_RELAXED)) {
		errno = EBADF;
		return -1;
	}
	return 0;
}

/* Does a child's tree show a request queued or an overhang anywhere? */
static bool pool_tree_busy(const struct wsem_pool *p)
{
	return p->tree && (__atomic_load_n(&p->tree->flags, __ATOMIC_ACQUIRE) &
			   (WSEM_COUNTERS_GONE | WSEM_TREE_WAITING |
			    WSEM_TREE_OVER));
}

/*
 * One state of the page, or false without one.  @free: what a try of the
 * kernel could get now (capacity - used), valid when true is returned.
 */
static bool pool_page(const struct wsem_pool *p, uint64_t *free)
{
	struct wsem_counters s;

	if (!p->c || wsem_read_counters(p->c, &s))
		return false;
	if ((s.flags & WSEM_COUNTERS_GONE) || s.waiters || s.queued_weight ||
	    s.used > s.capacity || pool_tree_busy(p))
		return false;
	*free = s.capacity - s.used;
	return true;
}

/* May @spare serve: nobody is queued and nothing is over the capacity. */
static bool pool_uncontended(const struct wsem_pool *p)
{
	uint64_t free;

	return pool_page(p, &free);
}

/*
 * Sequentially consistent, as the exchange of pool_give_back(): a release
 * puts weight into @spare, then reads the page; the kernel writes the page,
 * then the watcher exchanges @spare.  One of them sees the other's store.
 */
static void pool_add(uint64_t *v, uint64_t n)
{
	__atomic_add_fetch(v, n, __ATOMIC_SEQ_CST);
}

/* Take @n from *@v if it has that much; false if it has not. */
static bool pool_sub(uint64_t *v, uint64_t n)
{
	uint64_t cur = __atomic_load_n(v, __ATOMIC_RELAXED);

	do {
		if (cur < n)
			return false;
	} while (!__atomic_compare_exchange_n(v, &cur, cur - n, true,
					      __ATOMIC_ACQ_REL,
					      __ATOMIC_RELAXED));
	return true;
}

/*
 * Release @n of @p->fd's weight to the kernel; on failure (never expected:
 * the handle holds it) the weight stays spare.  0 or -1 with errno.
 */
static int pool_release_spare(struct wsem_pool *p, uint64_t n)
{
	if (!n || !wsem_release(p->fd, n))
		return 0;
	pool_add(&p->spare, n);
	return -1;
}

/* Give all of @spare back to the kernel. */
static int pool_give_back(struct wsem_pool *p)
{
	return pool_release_spare(p, __atomic_exchange_n(&p->spare, 0,
							 __ATOMIC_SEQ_CST));
}

/* Give back what @spare holds above @max_spare. */
static int pool_trim_excess(struct wsem_pool *p)
{
	uint64_t cur = __atomic_load_n(&p->spare, __ATOMIC_RELAXED);

	while (cur > p->max_spare) {
		if (__atomic_compare_exchange_n(&p->spare, &cur, p->max_spare,
						true, __ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED))
			return pool_release_spare(p, cur - p->max_spare);
	}
	return 0;
}

/*
 * Weight went into @spare: give it all back if the page now shows a
 * request queued (or an overhang), else what is above @max_spare.  The
 * look comes after the store, so a request that queued before the store
 * is seen here, and one that queues after it finds the weight in @spare
 * for the watcher or the next call to give back.
 */
static void pool_settle(struct wsem_pool *p)
{
	if (pool_uncontended(p))
		pool_trim_excess(p);
	else
		pool_give_back(p);
}

/* The fast path: @weight from @spare, while the page shows nobody queued. */
static bool pool_take_spare(struct wsem_pool *p, uint64_t weight)
{
	if (__atomic_load_n(&p->spare, __ATOMIC_RELAXED) < weight ||
	    !pool_uncontended(p))
		return false;
	return pool_sub(&p->spare, weight);
}

/*
 * The weight of a batch beside @weight: up to @max_spare of what the page
 * shows free, with nobody queued; 0 for none.
 */
static uint64_t pool_batch(const struct wsem_pool *p, uint64_t weight)
{
	uint64_t free;

	if (!p->max_spare || !pool_page(p, &free) || free <= weight)
		return 0;
	free -= weight;
	return free < p->max_spare ? free : p->max_spare;
}

/* The kernel's acquire of @weight: as wsem_acquire_many()'s timeouts. */
static int pool_kernel_acquire(struct wsem_pool *p, uint64_t weight,
			       int64_t timeout_ns)
{
	if (timeout_ns < 0)
		return wsem_acquire(p->fd, weight);
	if (!timeout_ns)
		return wsem_tryacquire(p->fd, weight);
	return wsem_acquire_timeout(p->fd, weight, timeout_ns);
}

/*
 * The slow path: @spare goes back first (a pool never keeps weight while
 * it waits), then one try with a batch while nobody is queued, then the
 * plain acquire, in the kernel's FIFO order.
 */
static int pool_acquire_slow(struct wsem_pool *p, uint64_t weight,
			     int64_t timeout_ns)
{
	uint64_t extra;

	pool_give_back(p);
	extra = pool_batch(p, weight);
	if (extra && !wsem_tryacquire(p->fd, weight + extra)) {
		pool_add(&p->inuse, weight);
		pool_add(&p->spare, extra);
		pool_settle(p);
		return 0;
	}
	if (pool_kernel_acquire(p, weight, timeout_ns))
		return -1;
	pool_add(&p->inuse, weight);
	return 0;
}

/**
 * wsem_pool_acquire() - acquire @weight through the pool
 * @pool: from wsem_pool_open()
 * @weight: 1..capacity
 * @timeout_ns: < 0 waits as long as it takes, 0 only tries (EAGAIN), > 0
 *	gives up after that long (ETIMEDOUT), on CLOCK_MONOTONIC
 *
 * From the pool's spare weight while the counters page shows nobody
 * queued; else from the kernel, in its FIFO order.
 *
 * Return: 0, or -1 with errno (EAGAIN, ETIMEDOUT, EINTR, EINVAL, EBADF).
 */
int wsem_pool_acquire(struct wsem_pool *pool, uint64_t weight,
		      int64_t timeout_ns)
{
	if (pool_check(pool))
		return -1;
	if (!weight)
		return libwsem_einval();
	if (pool_take_spare(pool, weight)) {
		pool_add(&pool->inuse, weight);
		return 0;
	}
	return pool_acquire_slow(pool, weight, timeout_ns);
}

/**
 * wsem_pool_tryacquire() - wsem_pool_acquire() that never waits
 * @pool: from wsem_pool_open()
 * @weight: 1..capacity
 *
 * Return: 0, or -1 with errno (EAGAIN: not free, or someone is queued).
 */
int wsem_pool_tryacquire(struct wsem_pool *pool, uint64_t weight)
{
	return wsem_pool_acquire(pool, weight, 0);
}

/**
 * wsem_pool_release() - give back @weight a thread acquired through @pool
 * @pool: from wsem_pool_open()
 * @weight: 1..what the pool's threads hold
 *
 * The weight becomes spare; then what is spare above the pool's bound goes
 * back to the kernel, and all of it when the page shows a request queued
 * or more held than the capacity (or on a pool without a page).
 *
 * Return: 0, or -1 with errno (EINVAL: nothing changed, EBADF).
 */
int wsem_pool_release(struct wsem_pool *pool, uint64_t weight)
{
	if (pool_check(pool))
		return -1;
	if (!weight || !pool_sub(&pool->inuse, weight))
		return libwsem_einval();
	pool_add(&pool->spare, weight);
	pool_settle(pool);
	return 0;
}

/**
 * wsem_pool_trim() - give the spare weight back if anyone waits
 * @pool: from wsem_pool_open()
 *
 * Reads the semaphore's state through the pool's handle (wsem_stat(),
 * which also ends its demand event, POLLRDBAND) and gives all of the
 * pool's spare weight back when a request is queued or more is held than
 * the capacity (on a child: anywhere in its tree).  The watcher thread calls it on each demand event; a pool
 * opened with WSEM_POOL_NOTHREAD leaves that to the caller's event loop.
 *
 * Return: 0, or -1 with errno (EBADF, EINVAL).
 */
int wsem_pool_trim(struct wsem_pool *pool)
{
	struct wsem_stat st;

	if (pool_check(pool) || wsem_stat(pool->fd, &st))
		return -1;
	if (st.waiters || st.queued_weight || st.used > st.capacity ||
	    pool_tree_busy(pool))
		return pool_give_back(pool);
	return 0;
}

/**
 * wsem_pool_fd() - the pool's own handle
 * @pool: from wsem_pool_open()
 *
 * For wsem_stat(), the holders view, a label and poll(2); what it holds is
 * the pool's, threads' and spare.  Acquiring or releasing through it
 * directly confuses the pool's counts: don't.
 *
 * Return: the handle, or -1 with errno (EINVAL, EBADF).
 */
int wsem_pool_fd(const struct wsem_pool *pool)
{
	if (pool_check(pool))
		return -1;
	return pool->fd;
}

/* The watcher: the demand event, until @stop_fd is readable. */
static void *pool_watch(void *arg)
{
	struct wsem_pool *p = arg;
	struct pollfd pfd[2] = {
		{ .fd = p->fd, .events = POLLRDBAND },
		{ .fd = p->stop_fd, .events = POLLIN },
	};

	for (;;) {
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[1].revents || (pfd[0].revents & (POLLERR | POLLNVAL)))
			break;
		if ((pfd[0].revents & POLLRDBAND) && wsem_pool_trim(p) &&
		    errno != EINTR)
			break;
	}
	return NULL;
}

/* Start the watcher with every signal blocked: no handler runs there. */
static int pool_start_watcher(struct wsem_pool *p)
{
	sigset_t all, old;
	int err;

	p->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (p->stop_fd < 0)
		return -1;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&p->watcher, NULL, pool_watch, p);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!err)
		return 0;
	libwsem_close_keep_errno(p->stop_fd);
	p->stop_fd = -1;
	errno = err;
	return -1;
}

static void pool_free(struct wsem_pool *p)
{
	if (p->tree)
		libwsem_unmap_tree(p->tree);
	if (p->c)
		wsem_unmap_counters(p->c);
	if (p->stop_fd >= 0)
		close(p->stop_fd);
	free(p);
}

/**
 * wsem_pool_open() - a pool over a new handle on @fd's semaphore
 * @fd: a bound handle, open for reading and writing
 * @max_spare: the most weight the pool keeps held for its threads' later
 *	acquires (0..WSEM_CAPACITY_MAX; 0 keeps none, and so serves nothing
 *	from userspace)
 * @flags: 0 or WSEM_POOL_NOTHREAD (no watcher thread: the caller polls
 *	wsem_pool_fd() for POLLRDBAND and calls wsem_pool_trim())
 *
 * The pool takes a new handle (wsem_reopen(), close-on-exec): its weight
 * goes back when the pool is closed or the process dies.  On a child
 * semaphore it serves from its spare weight only while nobody is queued
 * anywhere in the tree and nothing of it is over its capacity.  Where the
 * counters pages cannot be mapped, the pool keeps nothing spare and every
 * call goes to the kernel.
 *
 * Return: the pool, or NULL with errno (EINVAL, EBADF, ENOMEM, EMFILE,
 * EAGAIN).
 */
struct wsem_pool *wsem_pool_open(int fd, uint64_t max_spare, int flags)
{
	struct wsem_pool *p;
	struct wsem_stat st;

	if ((flags & ~WSEM_POOL_NOTHREAD) || max_spare > WSEM_CAPACITY_MAX) {
		errno = EINVAL;
		return NULL;
	}
	pthread_once(&pool_once, pool_init_once);
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->stop_fd = -1;
	p->max_spare = max_spare;
	p->forks = __atomic_load_n(&pool_forks, __ATOMIC_RELAXED);
	p->fd = wsem_reopen(fd, O_CLOEXEC);
	if (p->fd < 0 || wsem_stat(p->fd, &st))
		goto err;
	if (st.depth)
		p->tree = libwsem_map_tree(p->fd);
	if (!st.depth || p->tree)
		p->c = wsem_map_counters(p->fd);
	if (p->c && !(flags & WSEM_POOL_NOTHREAD) && pool_start_watcher(p))
		goto err;
	return p;
err:
	if (p->fd >= 0)
		libwsem_close_keep_errno(p->fd);
	pool_free(p);
	return NULL;
}

/**
 * wsem_pool_close() - end the pool and close its handle
 * @pool: from wsem_pool_open(), or NULL
 *
 * Everything the handle holds goes back, what threads still hold through
 * the pool too.  In a child of fork(2) (where the pool's other calls fail
 * with EBADF) it only frees the child's copy: the parent's handle keeps
 * its weight.
 *
 * Return: 0, or -1 with errno (what close(2) says).
 */
int wsem_pool_close(struct wsem_pool *pool)
{
	uint64_t one = 1;
	int ret;

	if (!pool)
		return 0;
	if (pool->stop_fd >= 0 && !pool_check(pool)) {
		while (write(pool->stop_fd, &one, sizeof(one)) < 0 &&
		       errno == EINTR)
			;
		pthread_join(pool->watcher, NULL);
	}
	ret = close(pool->fd);
	pool_free(pool);
	return ret;
}
