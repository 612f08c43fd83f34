// SPDX-License-Identifier: GPL-2.0
/*
 * The pool (SPEC.md "Fast path within a process", wsem_pool(3)): a
 * process's threads acquire and release through userspace atomics while
 * the counters page shows nobody queued, and go to the kernel, in its
 * FIFO order, once a request waits.
 *
 *  - the fast path: acquires and releases served from spare weight make
 *    no grant in the kernel; the batch and the bound on spare weight;
 *  - a queued request: the pool's try fails (no barging) and gives its
 *    spare back, a release gives all back, and an idle pool's watcher
 *    gives it back on the demand event (without the watcher, the request
 *    waits until wsem_pool_trim());
 *  - weighted, try and timeout as the plain calls, and their errors; the
 *    calls of a child of fork(2) fail with EBADF;
 *  - a child semaphore's pool: its fast path stops while a request is
 *    queued anywhere in the tree or the tree holds more than a capacity
 *    (its tree's page), and an idle one gives way to a sibling's request;
 *  - the fallbacks: a loan withdrawn under the pool (used above the
 *    capacity) and a queued gang or jobserver reader stop the fast path;
 *    an endpoint is no handle;
 *  - the bound and FIFO, replayed: pooled processes of several threads,
 *    SIGKILLed and started again at random moments, and plain waiters in
 *    other processes log every step in shared memory; a checker replays
 *    the log: never more held than the capacity, and no acquire that
 *    began after a full-capacity request queued granted before it (so a
 *    pool gets ahead of a queued request only by the acquires already
 *    under way: at most one per thread);
 *  - pooled processes killed at random moments leave nothing held.
 *
 * WSEM_POOL_SEED=N replays a run's random choices (not its timing);
 * WSEM_POOL_MS (3000) is how long the replayed run goes (up to four times
 * that on a guest too slow to make 200 pooled acquires in it).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <wsem.h>

#include "kselftest_harness.h"
#include "util.h"
#include "pool_replay.h"

/* How long a request that must stay queued is watched, in ms. */
#define QUIET_MS	300
/* How long something that must happen may take here (TCG, KASAN). */
#define WAIT_MS		10000

/* The semaphore's kernel grants made at once: what the fast path skips. */
static uint64_t grants(int fd)
{
	return stat_of(fd).grants_at_once + stat_of(fd).grants_waited;
}

static uint64_t held_of(int fd)
{
	return stat_of(fd).held;
}

/* Poll @fd for POLLIN for @ms; 1 if readable, 0 if not. */
static int readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

/* Wait up to WAIT_MS until @fd's asynchronous request ended; its result. */
static int async_result(int fd)
{
	readable(fd, WAIT_MS);
	return wsem_acquire_result(fd);
}

FIXTURE(pool) {
	int fd;			/* a handle on a new semaphore of 4 */
	int other;		/* a second handle on it, for plain requests */
	struct wsem_pool *p;	/* a pool over @fd, max_spare 4, no watcher */
};

FIXTURE_SETUP(pool)
{
	self->p = NULL;
	self->fd = wsem_open_anon(4, 0);
	ASSERT_LE(0, self->fd);
	self->other = wsem_reopen(self->fd, 0);
	ASSERT_LE(0, self->other);
	self->p = wsem_pool_open(self->fd, 4, WSEM_POOL_NOTHREAD);
	ASSERT_NE(NULL, self->p) TH_LOG("pool: %s", strerror(errno));
}

FIXTURE_TEARDOWN(pool)
{
	if (self->p)
		EXPECT_EQ(0, wsem_pool_close(self->p));
	EXPECT_EQ(0, close(self->other));
	EXPECT_EQ(0, stat_of(self->fd).used);
	EXPECT_EQ(0, close(self->fd));
}

/*
 * The first acquire takes a batch: its weight and what is free, up to
 * max_spare; the next ones come from it without a kernel grant, and
 * releases keep max_spare of it.
 */
TEST_F(pool, fast_path_makes_no_grant)
{
	int pfd = wsem_pool_fd(self->p);
	uint64_t g;
	int i;

	ASSERT_LE(0, pfd);
	EXPECT_EQ(0, held_of(pfd));
	ASSERT_EQ(0, wsem_pool_acquire(self->p, 1, -1));
	EXPECT_EQ(4, held_of(pfd));	/* 1 and a batch of 3: all free */
	g = grants(self->fd);
	for (i = 0; i < 100; i++) {
		ASSERT_EQ(0, wsem_pool_acquire(self->p, 2, -1));
		ASSERT_EQ(0, wsem_pool_tryacquire(self->p, 1));
		ASSERT_EQ(0, wsem_pool_release(self->p, 3));
	}
	EXPECT_EQ(g, grants(self->fd));
	EXPECT_EQ(4, held_of(pfd));
	EXPECT_EQ(4, stat_of(self->fd).used);
	ASSERT_EQ(0, wsem_pool_release(self->p, 1));
	EXPECT_EQ(4, held_of(pfd));	/* all spare, within max_spare */
	/* Spare weight is held: a plain try finds nothing free. */
	EXPECT_EQ(-1, wsem_tryacquire(self->other, 1));
	EXPECT_EQ(EAGAIN, errno);
	EXPECT_EQ(g, grants(self->fd));
}

/* A pool keeps no more than max_spare; the rest goes back at release. */
TEST(max_spare_bounds_what_is_kept)
{
	int fd = wsem_open_anon(10, 0);
	struct wsem_pool *p;
	int pfd;

	ASSERT_LE(0, fd);
	p = wsem_pool_open(fd, 2, WSEM_POOL_NOTHREAD);
	ASSERT_NE(NULL, p);
	pfd = wsem_pool_fd(p);
	ASSERT_EQ(0, wsem_pool_acquire(p, 5, -1));
	EXPECT_EQ(7, held_of(pfd));	/* 5 and a batch of 2 */
	ASSERT_EQ(0, wsem_pool_acquire(p, 2, -1));
	EXPECT_EQ(7, held_of(pfd));
	ASSERT_EQ(0, wsem_pool_release(p, 7));
	EXPECT_EQ(2, held_of(pfd));
	EXPECT_EQ(2, stat_of(fd).used);
	EXPECT_EQ(0, wsem_pool_close(p));
	EXPECT_EQ(0, stat_of(fd).used);	/* the pool's handle went */
	/* max_spare 0: every call is the kernel's, nothing stays. */
	p = wsem_pool_open(fd, 0, WSEM_POOL_NOTHREAD);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, wsem_pool_acquire(p, 3, -1));
	EXPECT_EQ(3, stat_of(fd).used);
	ASSERT_EQ(0, wsem_pool_release(p, 3));
	EXPECT_EQ(0, stat_of(fd).used);
	EXPECT_EQ(0, wsem_pool_close(p));
	EXPECT_EQ(0, close(fd));
}

/*
 * A queued request: the pool's try fails even with spare weight (no
 * barging) and gives the spare back; a release then gives back what the
 * thread held, and the request is granted.
 */
TEST_F(pool, queued_request_stops_the_fast_path)
{
	int pfd = wsem_pool_fd(self->p);

	ASSERT_EQ(0, wsem_pool_acquire(self->p, 1, -1));
	EXPECT_EQ(4, held_of(pfd));
	ASSERT_EQ(-1, wsem_acquire_async(self->other, 4));
	ASSERT_EQ(EINPROGRESS, errno);
	ASSERT_EQ(0, wait_waiters(self->fd, 1));
	EXPECT_EQ(-1, wsem_pool_tryacquire(self->p, 1));
	EXPECT_EQ(EAGAIN, errno);
	EXPECT_EQ(1, held_of(pfd));	/* the spare went back */
	EXPECT_EQ(-1, wsem_pool_acquire(self->p, 1, 50 * 1000000LL));
	EXPECT_EQ(ETIMEDOUT, errno);
	EXPECT_EQ(-1, wsem_acquire_result(self->other));
	EXPECT_EQ(EINPROGRESS, errno);
	ASSERT_EQ(0, wsem_pool_release(self->p, 1));
	EXPECT_EQ(0, held_of(pfd));
	EXPECT_EQ(0, async_result(self->other));
	EXPECT_EQ(0, wsem_release(self->other, 4));
}

/*
 * A release while a request waits gives back all of the spare weight with
 * the released weight, at once.
 */
TEST_F(pool, release_gives_spare_back)
{
	int pfd = wsem_pool_fd(self->p);

	ASSERT_EQ(0, wsem_pool_acquire(self->p, 2, -1));
	ASSERT_EQ(0, wsem_pool_acquire(self->p, 1, -1));
	EXPECT_EQ(4, held_of(pfd));	/* 3 in use, 1 spare */
	ASSERT_EQ(-1, wsem_acquire_async(self->other, 3));
	ASSERT_EQ(EINPROGRESS, errno);
	ASSERT_EQ(0, wait_waiters(self->fd, 1));
	ASSERT_EQ(0, wsem_pool_release(self->p, 2));
	EXPECT_EQ(1, held_of(pfd));
	EXPECT_EQ(0, async_result(self->other));
	EXPECT_EQ(0, wsem_release(self->other, 3));
	ASSERT_EQ(0, wsem_pool_release(self->p, 1));
}

/*
 * An idle pool: without a watcher its spare weight stays held while a
 * request waits, until wsem_pool_trim(); with one, it goes back at once on
 * the demand event.
 */
TEST_F(pool, idle_pool_gives_way)
{
	struct wsem_pool *w;
	int64_t t0;

	ASSERT_EQ(0, wsem_pool_acquire(self->p, 1, -1));
	ASSERT_EQ(0, wsem_pool_release(self->p, 1));
	EXPECT_EQ(4, held_of(wsem_pool_fd(self->p)));
	ASSERT_EQ(-1, wsem_acquire_async(self->other, 2));
	ASSERT_EQ(EINPROGRESS, errno);
	EXPECT_EQ(0, readable(self->other, QUIET_MS));
	ASSERT_EQ(0, wsem_pool_trim(self->p));
	EXPECT_EQ(0, async_result(self->other));
	EXPECT_EQ(0, held_of(wsem_pool_fd(self->p)));
	EXPECT_EQ(0, wsem_release(self->other, 2));

	w = wsem_pool_open(self->fd, 4, 0);
	ASSERT_NE(NULL, w);
	ASSERT_EQ(0, wsem_pool_acquire(w, 3, -1));
	ASSERT_EQ(0, wsem_pool_release(w, 3));
	EXPECT_EQ(4, held_of(wsem_pool_fd(w)));
	t0 = now_ns();
	ASSERT_EQ(0, wsem_acquire_timeout(self->other, 4, WAIT_MS * 1000000LL));
	TH_LOG("the watcher gave way in %lld us", (now_ns() - t0) / 1000);
	EXPECT_EQ(0, held_of(wsem_pool_fd(w)));
	EXPECT_EQ(0, wsem_release(self->other, 4));
	/* Once nobody waits, the fast path comes back. */
	ASSERT_EQ(0, wsem_pool_acquire(w, 1, -1));
	EXPECT_EQ(4, held_of(wsem_pool_fd(w)));
	ASSERT_EQ(0, wsem_pool_release(w, 1));
	EXPECT_EQ(0, wsem_pool_close(w));
}

/* Weights, try and timeouts as the plain calls, with their errors. */
TEST_F(pool, try_timeout_and_errors)
{
	int pfd = wsem_pool_fd(self->p);
	int64_t t0;

	EXPECT_EQ(-1, wsem_pool_acquire(self->p, 0, -1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, wsem_pool_acquire(self->p, 5, -1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, wsem_pool_release(self->p, 1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, wsem_pool_release(self->p, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(NULL, wsem_pool_open(self->fd, 4, 0x100));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(NULL, wsem_pool_open(self->fd, WSEM_CAPACITY_MAX + 1, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(NULL, wsem_pool_open(-1, 4, 0));
	EXPECT_EQ(EBADF, errno);

	ASSERT_EQ(0, wsem_acquire(self->other, 3));
	ASSERT_EQ(0, wsem_pool_tryacquire(self->p, 1));
	EXPECT_EQ(1, held_of(pfd));
	EXPECT_EQ(-1, wsem_pool_tryacquire(self->p, 1));
	EXPECT_EQ(EAGAIN, errno);
	EXPECT_EQ(-1, wsem_pool_acquire(self->p, 1, 0));
	EXPECT_EQ(EAGAIN, errno);
	t0 = now_ns();
	EXPECT_EQ(-1, wsem_pool_acquire(self->p, 2, 100 * 1000000LL));
	EXPECT_EQ(ETIMEDOUT, errno);
	EXPECT_LE(100 * 1000000LL, now_ns() - t0);
	EXPECT_EQ(-1, wsem_pool_release(self->p, 2));	/* holds 1 */
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(1, held_of(pfd));
	EXPECT_EQ(0, wsem_release(self->other, 3));
	ASSERT_EQ(0, wsem_pool_acquire(self->p, 3, 100 * 1000000LL));
	EXPECT_EQ(4, held_of(pfd));
	ASSERT_EQ(0, wsem_pool_release(self->p, 4));
	EXPECT_EQ(4, held_of(pfd));
}

/*
 * A child of fork(2) shares the pool's handle but not its counts: its
 * calls fail with EBADF, its close frees its copy only.
 */
TEST_F(pool, forked_child_cannot_use_it)
{
	pid_t pid;
	int status;

	ASSERT_EQ(0, wsem_pool_acquire(self->p, 1, -1));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		bool ok = wsem_pool_acquire(self->p, 1, -1) == -1 &&
			  errno == EBADF &&
			  wsem_pool_release(self->p, 1) == -1 &&
			  errno == EBADF && wsem_pool_fd(self->p) == -1 &&
			  wsem_pool_close(self->p) == 0;

		_exit(ok ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	EXPECT_EQ(4, held_of(wsem_pool_fd(self->p)));
	ASSERT_EQ(0, wsem_pool_acquire(self->p, 3, -1));
	ASSERT_EQ(0, wsem_pool_release(self->p, 4));
}

/*
 * A child semaphore's pool serves from spare weight while nobody is queued
 * anywhere in its tree and nothing of the tree is over its capacity: a
 * request of a sibling held up by the parent, which the child's own page
 * does not show, stops its fast path (the try fails, its spare goes back),
 * and so does a parent shrunk below what is held.
 */
TEST(child_semaphore_pool)
{
	int root = wsem_open_anon(8, 0), a, b, pfd, i;
	struct wsem_pool *p;
	uint64_t g;

	ASSERT_LE(0, root);
	a = wsem_open_child(root, NULL, 0, 0600, 4);
	b = wsem_open_child(root, NULL, 0, 0600, 8);
	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	p = wsem_pool_open(a, 4, WSEM_POOL_NOTHREAD);
	ASSERT_NE(NULL, p);
	pfd = wsem_pool_fd(p);
	ASSERT_EQ(0, wsem_pool_acquire(p, 1, -1));
	EXPECT_EQ(4, held_of(pfd));	/* 1 and a batch of 3 */
	g = grants(a);
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, wsem_pool_acquire(p, 2, -1));
		ASSERT_EQ(0, wsem_pool_release(p, 2));
	}
	EXPECT_EQ(g, grants(a));	/* served from spare */
	EXPECT_EQ(4, stat_of(root).used);

	/* b's request fits b, not the root: a's page shows no waiter. */
	ASSERT_EQ(0, wsem_acquire(b, 4));
	ASSERT_EQ(-1, wsem_acquire_async(b, 4));
	ASSERT_EQ(EINPROGRESS, errno);
	ASSERT_EQ(0, wait_waiters(root, 1));
	EXPECT_EQ(0, stat_of(a).waiters);
	EXPECT_EQ(-1, wsem_pool_tryacquire(p, 1));
	EXPECT_EQ(EAGAIN, errno);
	EXPECT_EQ(1, held_of(pfd));	/* the spare went back */
	ASSERT_EQ(0, wsem_pool_release(p, 1));
	EXPECT_EQ(0, held_of(pfd));	/* all of it, b waiting */
	EXPECT_EQ(0, async_result(b));
	EXPECT_EQ(0, wsem_release(b, 8));

	/* Nobody queued: the fast path comes back. */
	ASSERT_EQ(0, wsem_pool_acquire(p, 1, -1));
	EXPECT_EQ(4, held_of(pfd));
	g = grants(a);

	/* The root shrunk below what is held: no weight from spare. */
	ASSERT_EQ(0, wsem_set_capacity(root, 3));
	ASSERT_EQ(0, wsem_pool_acquire(p, 1, 0));
	EXPECT_EQ(g + 1, grants(a));	/* the kernel's, after the give-back */
	EXPECT_EQ(2, held_of(pfd));
	ASSERT_EQ(0, wsem_set_capacity(root, 8));
	ASSERT_EQ(0, wsem_pool_release(p, 2));
	EXPECT_EQ(0, wsem_pool_close(p));
	EXPECT_EQ(0, stat_of(root).used);
	EXPECT_EQ(0, close(b));
	EXPECT_EQ(0, close(a));
	EXPECT_EQ(0, close(root));
}

/*
 * An idle pool over a child gives way to a sibling's request that the
 * parent holds up: a child's handle reports the demand event when its
 * tree's flags change, and its watcher gives the spare back.
 */
TEST(child_semaphore_idle_pool_gives_way)
{
	int root = wsem_open_anon(8, 0), a, b;
	struct wsem_pool *p;

	ASSERT_LE(0, root);
	a = wsem_open_child(root, NULL, 0, 0600, 4);
	b = wsem_open_child(root, NULL, 0, 0600, 8);
	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	p = wsem_pool_open(a, 4, 0);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, wsem_pool_acquire(p, 3, -1));
	ASSERT_EQ(0, wsem_pool_release(p, 3));
	EXPECT_EQ(4, held_of(wsem_pool_fd(p)));
	ASSERT_EQ(0, wsem_acquire(b, 4));
	ASSERT_EQ(0, wsem_acquire_timeout(b, 4, WAIT_MS * 1000000LL));
	EXPECT_EQ(0, held_of(wsem_pool_fd(p)));
	EXPECT_EQ(8, stat_of(root).used);
	EXPECT_EQ(0, wsem_release(b, 8));
	EXPECT_EQ(0, wsem_pool_close(p));
	EXPECT_EQ(0, close(b));
	EXPECT_EQ(0, close(a));
	EXPECT_EQ(0, close(root));
}

/*
 * A loan withdrawn under the pool leaves more held than the capacity in
 * force: the spare weight serves nothing (no grant until it fits again)
 * and goes back at the next call.
 */
TEST(loan_withdrawn_stops_the_fast_path)
{
	int fd = wsem_open_anon(8, WSEM_LOANS), lender;
	struct wsem_pool *p;
	int pfd;

	ASSERT_LE(0, fd);
	lender = wsem_reopen(fd, 0);
	ASSERT_LE(0, lender);
	ASSERT_EQ(0, wsem_lend(lender, 4));
	p = wsem_pool_open(fd, 4, WSEM_POOL_NOTHREAD);
	ASSERT_NE(NULL, p);
	pfd = wsem_pool_fd(p);
	ASSERT_EQ(0, wsem_pool_acquire(p, 2, -1));
	EXPECT_EQ(4, held_of(pfd));
	ASSERT_EQ(0, wsem_lend(lender, 1));	/* used 4 > capacity 1 */
	EXPECT_EQ(-1, wsem_pool_tryacquire(p, 1));
	EXPECT_EQ(EAGAIN, errno);
	EXPECT_EQ(2, held_of(pfd));
	ASSERT_EQ(0, wsem_pool_release(p, 1));
	EXPECT_EQ(1, held_of(pfd));	/* still over: nothing kept */
	ASSERT_EQ(0, wsem_lend(lender, 4));
	ASSERT_EQ(0, wsem_pool_acquire(p, 1, -1));
	EXPECT_EQ(4, held_of(pfd));	/* room again: a batch */
	ASSERT_EQ(0, wsem_pool_release(p, 2));
	EXPECT_EQ(0, wsem_pool_close(p));
	EXPECT_EQ(0, close(lender));
	EXPECT_EQ(0, close(fd));
}

struct gang {
	pthread_t thread;
	int fds[2];
	int ret;
};

static void *gang_run(void *arg)
{
	struct gang *g = arg;
	uint64_t w[2] = { 4, 1 };

	g->ret = wsem_acquire_many(g->fds, w, 2, WAIT_MS * 1000000LL);
	return NULL;
}

/* A queued gang is a waiter: the pool gives way to it. */
TEST_F(pool, queued_gang_stops_the_fast_path)
{
	struct gang g = { .ret = -1 };
	int other_sem = wsem_open_anon(1, 0);

	ASSERT_LE(0, other_sem);
	g.fds[0] = self->other;
	g.fds[1] = other_sem;
	ASSERT_EQ(0, wsem_pool_acquire(self->p, 1, -1));
	ASSERT_EQ(0, pthread_create(&g.thread, NULL, gang_run, &g));
	ASSERT_EQ(0, wait_waiters(self->fd, 1));
	EXPECT_EQ(-1, wsem_pool_tryacquire(self->p, 1));
	EXPECT_EQ(EAGAIN, errno);
	ASSERT_EQ(0, wsem_pool_release(self->p, 1));
	pthread_join(g.thread, NULL);
	EXPECT_EQ(0, g.ret);
	EXPECT_EQ(4, stat_of(self->fd).used);
	EXPECT_EQ(0, wsem_release(self->other, 4));
	EXPECT_EQ(0, close(other_sem));
}

struct reader {
	pthread_t thread;
	int fd;
	ssize_t ret;
};

static void *reader_run(void *arg)
{
	struct reader *r = arg;
	char c;

	r->ret = read(r->fd, &c, 1);
	return NULL;
}

/*
 * The jobserver: its endpoint is no handle (no pool over it), and a
 * reader waiting for a token is a waiter the pool gives way to.
 */
TEST(jobserver_reader_stops_the_fast_path)
{
	char dir[] = "/tmp/pool_test.XXXXXX", name[48], path[160];
	struct reader r = { .ret = -2 };
	struct wsem_pool *p;
	int fd;

	snprintf(name, sizeof(name), "pool_js.%d", getpid());
	ASSERT_EQ(0, unshare(CLONE_NEWNS));
	ASSERT_EQ(0, mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
	ASSERT_NE(NULL, mkdtemp(dir));
	ASSERT_EQ(0, mount("wsem", dir, "wsem", 0, NULL));
	snprintf(path, sizeof(path), "%s/%s/%s", dir, WSEM_JOBSERVER_DIR,
		 name);
	fd = wsem_open(name, O_CREAT | O_EXCL, 0600, 2);
	ASSERT_LE(0, fd);
	r.fd = open(path, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, r.fd);
	EXPECT_EQ(NULL, wsem_pool_open(r.fd, 2, 0));
	EXPECT_EQ(ENOTTY, errno);
	p = wsem_pool_open(fd, 2, WSEM_POOL_NOTHREAD);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, wsem_pool_acquire(p, 1, -1));
	EXPECT_EQ(2, held_of(wsem_pool_fd(p)));
	ASSERT_EQ(0, pthread_create(&r.thread, NULL, reader_run, &r));
	ASSERT_EQ(0, wait_waiters(fd, 1));
	EXPECT_EQ(-1, wsem_pool_tryacquire(p, 1));
	EXPECT_EQ(EAGAIN, errno);
	pthread_join(r.thread, NULL);	/* the spare went back */
	EXPECT_EQ(1, r.ret);
	EXPECT_EQ(1, held_of(wsem_pool_fd(p)));
	EXPECT_EQ(0, wsem_pool_close(p));
	EXPECT_EQ(0, close(r.fd));
	EXPECT_EQ(0, stat_of(fd).used);
	EXPECT_EQ(0, wsem_unlink(name));
	EXPECT_EQ(0, close(fd));
	EXPECT_EQ(0, umount2(dir, MNT_DETACH));
	EXPECT_EQ(0, rmdir(dir));
}

/*
 * The replayed run (pool_replay.h).  Every step is an entry of a log in
 * shared memory, in the order of an atomic counter taken at the step:
 * before a call (START), after it returned (DONE, QUEUED, GRANT), before
 * a release (REL), before a SIGKILL (KILL, by the parent, of a whole
 * process).
 */
#define CAP		4
#define POOLED		3	/* pooled processes at once */
#define THREADS		2	/* threads of each */
#define LOG_MAX		(1 << 20)

struct shared {
	atomic_uint_fast64_t next;
	atomic_int stop;
	atomic_uint_fast64_t ops;	/* pooled acquires done */
	struct entry log[LOG_MAX];
};

static struct shared *sh;

static void note(uint32_t kind, uint32_t who, uint64_t weight)
{
	uint64_t i = atomic_fetch_add(&sh->next, 1);

	if (i < LOG_MAX) {
		sh->log[i].weight = weight;
		sh->log[i].who = who;
		atomic_store_explicit((atomic_uint *)&sh->log[i].kind, kind,
				      memory_order_release);
	}
}

static bool stopping(void)
{
	return atomic_load(&sh->stop) ||
	       atomic_load(&sh->next) >= LOG_MAX - 64;
}

struct pooled_thread {
	struct wsem_pool *p;
	uint32_t who;
	struct rng r;
};

static void *pooled_run(void *arg)
{
	struct pooled_thread *t = arg;

	while (!stopping()) {
		uint64_t w = 1 + below(&t->r, 2);

		note(START, t->who, w);
		if (wsem_pool_acquire(t->p, w, -1)) {
			note(NONE, t->who, 0);
			continue;
		}
		note(DONE, t->who, w);
		atomic_fetch_add(&sh->ops, 1);
		if (chance(&t->r, 50))
			usleep(below(&t->r, 200));
		else
			sched_yield();
		note(REL, t->who, w);
		if (wsem_pool_release(t->p, w))
			_exit(3);
	}
	return NULL;
}

/* A pooled process: THREADS threads through one pool until told to stop. */
static void pooled_main(int fd, uint32_t gen, uint64_t seed)
{
	struct pooled_thread t[THREADS];
	pthread_t th[THREADS];
	struct rng r = { seed };
	struct wsem_pool *p;
	int i;

	p = wsem_pool_open(fd, 1 + below(&r, CAP), 0);
	if (!p)
		_exit(2);
	for (i = 0; i < THREADS; i++) {
		t[i] = (struct pooled_thread){ p, gen << 8 | i, { rnd(&r) } };
		if (pthread_create(&th[i], NULL, pooled_run, &t[i]))
			_exit(2);
	}
	for (i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	_exit(wsem_pool_close(p) ? 5 : 0);
}

/* A plain process: replay_plain() on the shared log. */
static void plain_main(int fd, uint32_t who, uint64_t seed)
{
	replay_plain(fd, who, seed, CAP, note, stopping);
}

static pid_t spawn(void (*fn)(int, uint32_t, uint64_t), int fd, uint32_t who,
		   uint64_t seed)
{
	pid_t pid = fork();

	if (!pid)
		fn(fd, who, seed);
	return pid;
}

/*
 * Pooled processes and plain ones on one semaphore of CAP; every so often
 * a pooled process is SIGKILLed (KILL logged first) and a new one started.
 * Then the replay, and nothing held once all are gone.  With @child, the
 * pools are over a child of CAP of that semaphore, whose own page never
 * shows the plain processes' requests (they ask the parent): its tree's
 * page does.
 */
static void replayed_run(struct __test_metadata *_metadata, bool child)
{
	uint64_t seed = env_u64("WSEM_POOL_SEED", (uint64_t)now_ns());
	int64_t run_ns = env_u64("WSEM_POOL_MS", 3000) * 1000000LL, end;
	pid_t pooled[POOLED], plain[2];
	uint32_t gen[POOLED], next_gen = 1;
	struct rng r = { seed };
	struct replay rp;
	int fd, pool_fd, i, status, kills = 0;
	uint64_t g, n;

	TH_LOG("WSEM_POOL_SEED=%llu", (unsigned long long)seed);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sh);
	fd = wsem_open_anon(CAP, 0);
	ASSERT_LE(0, fd);
	pool_fd = child ? wsem_open_child(fd, NULL, 0, 0600, CAP) : fd;
	ASSERT_LE(0, pool_fd);
	for (i = 0; i < POOLED; i++) {
		gen[i] = next_gen++;
		pooled[i] = spawn(pooled_main, pool_fd, gen[i], rnd(&r));
		ASSERT_LT(0, pooled[i]);
	}
	for (i = 0; i < 2; i++) {
		plain[i] = spawn(plain_main, fd, (REPLAY_PLAIN + i) << 8,
				 rnd(&r));
		ASSERT_LT(0, plain[i]);
	}
	/* A slow guest (the RT lane beside others) goes on for its 200. */
	end = now_ns() + run_ns;
	while ((now_ns() < end || (atomic_load(&sh->ops) < 200 &&
				   now_ns() < end + 3 * run_ns)) &&
	       !stopping()) {
		usleep(50000 + below(&r, 250000));
		i = below(&r, POOLED);
		note(KILL, gen[i], 0);
		kill(pooled[i], SIGKILL);
		ASSERT_EQ(pooled[i], waitpid(pooled[i], &status, 0));
		ASSERT_TRUE(WIFSIGNALED(status)) TH_LOG("status %#x", status);
		kills++;
		gen[i] = next_gen++;
		pooled[i] = spawn(pooled_main, pool_fd, gen[i], rnd(&r));
		ASSERT_LT(0, pooled[i]);
	}
	atomic_store(&sh->stop, 1);
	for (i = 0; i < POOLED; i++) {
		ASSERT_EQ(pooled[i], waitpid(pooled[i], &status, 0));
		EXPECT_EQ(0, status);
	}
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(plain[i], waitpid(plain[i], &status, 0));
		EXPECT_EQ(0, status);
	}
	EXPECT_EQ(0, stat_of(fd).used);
	EXPECT_EQ(0, stat_of(fd).waiters);
	g = grants(pool_fd);
	n = atomic_load(&sh->next);
	replay(&rp, sh->log, n < LOG_MAX ? n : LOG_MAX, CAP, THREADS);
	TH_LOG("%llu entries, %llu grants (%llu pooled; the kernel granted "
	       "%llu on the pools' semaphore), %d kills, %llu full requests "
	       "queued and checked, at most %llu acquires under way across "
	       "one", (unsigned long long)rp.entries,
	       (unsigned long long)rp.ops,
	       (unsigned long long)atomic_load(&sh->ops),
	       (unsigned long long)g, kills,
	       (unsigned long long)rp.checked,
	       (unsigned long long)rp.ahead_max);
	EXPECT_EQ(0, rp.over) TH_LOG("first at entry %lld", (long long)rp.first_bad);
	EXPECT_EQ(0, rp.overtaken) TH_LOG("first at entry %lld",
					  (long long)rp.first_bad);
	EXPECT_LE(rp.ahead_max, POOLED * THREADS + 2);
	EXPECT_LT(0, rp.checked);
	EXPECT_LT(100, atomic_load(&sh->ops));
	if (child)
		EXPECT_EQ(0, close(pool_fd));
	EXPECT_EQ(0, close(fd));
	munmap(sh, sizeof(*sh));
}

TEST(bound_and_fifo_replayed)
{
	replayed_run(_metadata, false);
}

/* The same with the pools over a child: the tree's page at work. */
TEST(bound_and_fifo_replayed_on_a_child)
{
	replayed_run(_metadata, true);
}

/*
 * Pooled processes SIGKILLed at random moments (within the time their
 * first steps take here, measured) leave nothing held: used is 0 once
 * they are gone, and a request of the whole capacity is granted at once.
 */
TEST(kills_leave_nothing_held)
{
	uint64_t seed = env_u64("WSEM_POOL_SEED", (uint64_t)now_ns());
	int64_t end = now_ns() + 8 * NSEC, spread_us = 20000, t0;
	struct rng r = { seed };
	pid_t pid[POOLED];
	int fd, i, status, rounds = 0;

	TH_LOG("WSEM_POOL_SEED=%llu", (unsigned long long)seed);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sh);
	fd = wsem_open_anon(CAP, 0);
	ASSERT_LE(0, fd);
	while (now_ns() < end && rounds < 200) {
		atomic_store(&sh->ops, 0);
		atomic_store(&sh->next, 0);
		t0 = now_ns();
		for (i = 0; i < POOLED; i++) {
			pid[i] = spawn(pooled_main, fd, 1 + i, rnd(&r));
			ASSERT_LT(0, pid[i]);
		}
		/* The first round measures how long the first steps take. */
		if (!rounds) {
			while (atomic_load(&sh->ops) < 20 &&
			       now_ns() - t0 < WAIT_MS * 1000000LL)
				usleep(100);
			spread_us = 2 * (now_ns() - t0) / 1000;
			TH_LOG("kills spread over %lld us", (long long)spread_us);
		}
		for (i = 0; i < POOLED; i++) {
			usleep(below(&r, spread_us / POOLED + 1));
			kill(pid[i], SIGKILL);
		}
		for (i = 0; i < POOLED; i++)
			ASSERT_EQ(pid[i], waitpid(pid[i], &status, 0));
		ASSERT_EQ(0, stat_of(fd).used) TH_LOG("round %d", rounds);
		ASSERT_EQ(0, stat_of(fd).waiters);
		ASSERT_EQ(0, wsem_tryacquire(fd, CAP));
		ASSERT_EQ(0, wsem_release(fd, CAP));
		rounds++;
	}
	TH_LOG("%d rounds", rounds);
	EXPECT_EQ(0, close(fd));
	munmap(sh, sizeof(*sh));
}

TEST_HARNESS_MAIN
