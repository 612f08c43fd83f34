// SPDX-License-Identifier: GPL-2.0
/*
 * Gang acquire (SPEC.md, "Limits nest"): wsem_acquire_many().
 *
 *  - all or nothing: a gang that cannot be granted holds nothing (try,
 *    timeout, signal);
 *  - the weight granted on each semaphore belongs to the handle it was
 *    asked through, and goes back when that handle is closed or its
 *    process killed;
 *  - one place in the arrival order: no later request that needs one of
 *    its semaphores is granted before it (no barging on a semaphore where
 *    it would fit), so a stream of small requests cannot starve it;
 *  - gangs that take the same semaphores in opposite orders, over and
 *    over, never deadlock;
 *  - task work (io_uring) for a waiting gang's thread parks the gang in
 *    its place, as a single waiter is parked: granted meanwhile, it is
 *    the restarted call's; of a thread that never comes back, ended;
 *  - a gang over a child and its parent asks the parent for both parts;
 *    one that could never be granted fails with EINVAL;
 *  - bad calls say why.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <wsem.h>

#include "kselftest_harness.h"
#include "util.h"
#include "ring.h"

#define MSEC	1000000LL

static uint64_t used(int fd)
{
	return stat_of(fd).used;
}

static uint64_t grants(int fd)
{
	struct wsem_stat st = stat_of(fd);

	return st.grants_at_once + st.grants_waited;
}

/* Wait (5 s at most) until @fd's semaphore has @n waiters; 0 or -1. */
static int waiters_reach(int fd, uint64_t n)
{
	int64_t end = now_ns() + 5 * NSEC;

	while (now_ns() < end) {
		if (stat_of(fd).waiters >= n)
			return 0;
		usleep(1000);
	}
	return -1;
}

FIXTURE(gang) {
	int x, y;	/* two roots of capacity 2 */
};

FIXTURE_SETUP(gang)
{
	self->x = self->y = -1;
	if (access("/dev/wsem", F_OK))
		SKIP(return, "/dev/wsem is missing (module not loaded)");
	self->x = wsem_open_anon(2, 0);
	self->y = wsem_open_anon(2, 0);
	ASSERT_LE(0, self->x);
	ASSERT_LE(0, self->y);
}

FIXTURE_TEARDOWN(gang)
{
	park_pause_disarm();
	if (self->x >= 0)
		close(self->x);
	if (self->y >= 0)
		close(self->y);
}

/* Granted all at once, each part to its own handle. */
TEST_F(gang, each_part_belongs_to_its_handle)
{
	int fds[2] = { self->x, self->y };
	uint64_t w[2] = { 2, 1 };

	ASSERT_EQ(0, wsem_acquire_many(fds, w, 2, -1));
	EXPECT_EQ(2, stat_of(self->x).held);
	EXPECT_EQ(1, stat_of(self->y).held);
	/* Nobody queued, and it fit: granted at once on each. */
	EXPECT_EQ(1, stat_of(self->x).grants_at_once);
	EXPECT_EQ(0, stat_of(self->y).grants_waited);
	EXPECT_EQ(0, wsem_release(self->y, 1));
	EXPECT_EQ(0, wsem_release(self->x, 2));
	EXPECT_EQ(0, used(self->x) + used(self->y));
}

/* Nothing is held from a gang that is not granted. */
TEST_F(gang, all_or_nothing)
{
	int other = wsem_reopen(self->y, 0);
	int fds[2] = { self->x, self->y };
	uint64_t w[2] = { 1, 1 };

	ASSERT_LE(0, other);
	ASSERT_EQ(0, wsem_acquire(other, 2));
	EXPECT_EQ(-1, wsem_acquire_many(fds, w, 2, 0));
	EXPECT_EQ(EAGAIN, errno);
	EXPECT_EQ(0, used(self->x));
	EXPECT_EQ(-1, wsem_acquire_many(fds, w, 2, 50 * MSEC));
	EXPECT_EQ(ETIMEDOUT, errno);
	EXPECT_EQ(0, used(self->x));
	EXPECT_EQ(0, stat_of(self->x).waiters);
	EXPECT_EQ(0, stat_of(self->y).waiters);
	ASSERT_EQ(0, wsem_release(other, 1));
	ASSERT_EQ(0, wsem_acquire_many(fds, w, 2, 0));
	EXPECT_EQ(2, used(self->y));
	close(other);
	close(self->x);
	self->x = -1;
	EXPECT_EQ(1, used(self->y));
}

struct gang_call {
	int fds[WSEM_MANY_MAX];
	uint64_t w[WSEM_MANY_MAX];
	size_t n;
	int64_t timeout_ns;
	_Atomic pid_t tid;
	int ret, err;
	atomic_bool ended;
};

static void on_signal(int sig)
{
	(void)sig;
}

static void *gang_main(void *p)
{
	struct gang_call *c = p;

	c->tid = gettid();
	c->ret = wsem_acquire_many(c->fds, c->w, c->n, c->timeout_ns);
	c->err = errno;
	atomic_store(&c->ended, true);
	return NULL;
}

/*
 * A queued gang is never overtaken: a later request on a semaphore where
 * the gang would fit waits behind it; when the gang is granted, it gets
 * everything at once.
 */
TEST_F(gang, a_queued_gang_is_not_overtaken)
{
	struct gang_call c = { .n = 2, .timeout_ns = -1 };
	int holder = wsem_reopen(self->x, 0), late = wsem_reopen(self->y, 0);
	int other = wsem_reopen(self->y, 0);
	pthread_t th;

	ASSERT_LE(0, holder);
	ASSERT_LE(0, late);
	ASSERT_LE(0, other);
	c.fds[0] = self->x;
	c.fds[1] = self->y;
	c.w[0] = 2;
	c.w[1] = 1;
	ASSERT_EQ(0, wsem_acquire(holder, 1));
	ASSERT_EQ(0, wsem_acquire(other, 1));
	ASSERT_EQ(0, pthread_create(&th, NULL, gang_main, &c));
	ASSERT_EQ(0, waiters_reach(self->y, 1));
	EXPECT_EQ(1, stat_of(self->x).waiters);
	/* y has room for 1, but the gang came first there. */
	EXPECT_EQ(-1, wsem_tryacquire(late, 1));
	EXPECT_EQ(EAGAIN, errno);
	ASSERT_EQ(-1, wsem_acquire_async(late, 1));
	ASSERT_EQ(EINPROGRESS, errno);
	/* A release on y: the walk stops at the gang, which x holds back. */
	ASSERT_EQ(0, wsem_release(other, 1));
	EXPECT_EQ(-1, wsem_acquire_result(late));
	EXPECT_EQ(EINPROGRESS, errno);
	EXPECT_EQ(0, used(self->y));
	ASSERT_EQ(0, wsem_release(holder, 1));
	ASSERT_EQ(0, pthread_join(th, NULL));
	EXPECT_EQ(0, c.ret);
	EXPECT_EQ(2, stat_of(self->x).held);
	EXPECT_EQ(1, stat_of(self->y).held);
	/* Then the one behind it on y. */
	EXPECT_EQ(0, wsem_acquire_result(late));
	EXPECT_EQ(2, used(self->y));
	close(holder);
	close(late);
	close(other);
}

/* A signal ends a gang's wait with EINTR, and nothing is held. */
TEST_F(gang, a_signal_ends_the_wait)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct gang_call c = { .n = 2, .timeout_ns = -1 };
	int holder = wsem_reopen(self->x, 0);
	pthread_t th;

	ASSERT_LE(0, holder);
	sigemptyset(&sa.sa_mask);
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	c.fds[0] = self->x;
	c.fds[1] = self->y;
	c.w[0] = 1;
	c.w[1] = 2;
	ASSERT_EQ(0, wsem_acquire(holder, 2));
	ASSERT_EQ(0, pthread_create(&th, NULL, gang_main, &c));
	ASSERT_EQ(0, waiters_reach(self->y, 1));
	ASSERT_EQ(0, pthread_kill(th, SIGUSR1));
	ASSERT_EQ(0, pthread_join(th, NULL));
	EXPECT_EQ(-1, c.ret);
	EXPECT_EQ(EINTR, c.err);
	EXPECT_EQ(0, used(self->y));
	EXPECT_EQ(0, stat_of(self->x).waiters);
	EXPECT_EQ(0, stat_of(self->y).waiters);
	/* The queue moves on: y is free for whoever comes next. */
	EXPECT_EQ(0, wsem_tryacquire(self->y, 2));
	close(holder);
}

/* SIGKILL of a gang's holder gives back every part. */
TEST_F(gang, sigkill_gives_back_every_part)
{
	int ready[2], status;
	pid_t pid;
	char c;

	ASSERT_EQ(0, pipe(ready));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int fds[2] = { wsem_reopen(self->x, 0),
			       wsem_reopen(self->y, 0) };
		uint64_t w[2] = { 2, 2 };

		if (wsem_acquire_many(fds, w, 2, -1) ||
		    write(ready[1], "x", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(ready[1]);
	ASSERT_EQ(1, read(ready[0], &c, 1));
	close(ready[0]);
	EXPECT_EQ(2, used(self->x));
	EXPECT_EQ(2, used(self->y));
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, used(self->x));
	EXPECT_EQ(0, used(self->y));
}

struct crosser {
	int a, b;		/* handles of its own, in its order */
	int rounds;
	int failures;
};

static void *cross_main(void *p)
{
	struct crosser *c = p;
	int fds[2] = { c->a, c->b };
	uint64_t w[2] = { 1, 1 };
	int i;

	for (i = 0; i < c->rounds; i++) {
		if (wsem_acquire_many(fds, w, 2, 10 * NSEC) ||
		    wsem_release(c->a, 1) || wsem_release(c->b, 1))
			c->failures++;
	}
	return NULL;
}

/* Gangs over the same semaphores, asked in opposite orders: no deadlock. */
TEST(opposite_orders_never_deadlock)
{
	struct crosser c[4];
	pthread_t th[4];
	int a, b, i;

	if (access("/dev/wsem", F_OK))
		SKIP(return, "/dev/wsem is missing (module not loaded)");
	a = wsem_open_anon(1, 0);
	b = wsem_open_anon(1, 0);
	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	for (i = 0; i < 4; i++) {
		int fa = wsem_reopen(a, 0), fb = wsem_reopen(b, 0);

		c[i] = (struct crosser) {
			.a = i % 2 ? fb : fa,
			.b = i % 2 ? fa : fb,
			.rounds = 500,
		};
		ASSERT_EQ(0, pthread_create(&th[i], NULL, cross_main, &c[i]));
	}
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, pthread_join(th[i], NULL));
		EXPECT_EQ(0, c[i].failures);
		close(c[i].a);
		close(c[i].b);
	}
	EXPECT_EQ(0, used(a));
	EXPECT_EQ(0, used(b));
	close(a);
	close(b);
}

/* Is a waiter labelled "gang" queued on @fd's semaphore? */
static bool gang_queued(int fd)
{
	struct wsem_holder h[16];
	size_t nholders;
	ssize_t n, i;

	n = wsem_holders(fd, h, 16, &nholders);
	for (i = nholders; i < n && i < 16; i++) {
		if ((h[i].flags & WSEM_HOLDER_WAITING) &&
		    !strcmp(h[i].label, "gang"))
			return true;
	}
	return false;
}

struct streamer {
	int fd;
	atomic_bool *stop;
};

static void *stream_main(void *p)
{
	struct streamer *s = p;

	while (!atomic_load(s->stop)) {
		if (wsem_acquire(s->fd, 1))
			break;
		usleep(200);
		wsem_release(s->fd, 1);
	}
	return NULL;
}

/*
 * A gang that needs all of x and y, under a stream of small requests on
 * each: it is granted within a bounded number of grants on x (those that
 * were ahead of it), not starved.
 */
TEST_F(gang, a_stream_of_small_ones_does_not_starve_it)
{
	struct gang_call c = { .n = 2, .timeout_ns = 10 * NSEC };
	struct streamer s[4];
	atomic_bool stop = false;
	uint64_t before, after;
	bool queued;
	pthread_t th[4], g;
	int i;

	for (i = 0; i < 4; i++) {
		s[i].fd = wsem_reopen(i % 2 ? self->y : self->x, 0);
		s[i].stop = &stop;
		ASSERT_LE(0, s[i].fd);
		ASSERT_EQ(0, pthread_create(&th[i], NULL, stream_main, &s[i]));
	}
	usleep(20 * 1000);
	c.fds[0] = self->x;
	c.fds[1] = self->y;
	c.w[0] = 2;
	c.w[1] = 2;
	ASSERT_EQ(0, wsem_set_label(self->x, "gang"));
	ASSERT_EQ(0, pthread_create(&g, NULL, gang_main, &c));
	/* From when the gang is seen queued on x ... */
	while (!gang_queued(self->x) && !atomic_load(&c.ended))
		;
	before = grants(self->x);
	queued = !atomic_load(&c.ended);
	ASSERT_EQ(0, pthread_join(g, NULL));
	after = grants(self->x);
	EXPECT_EQ(0, c.ret) {
		TH_LOG("the gang: %s", strerror(c.err));
	}
	/*
	 * ... to its grant, x grants at most the two streamers' requests
	 * that were ahead of it, and the gang's own.
	 */
	if (queued)
		EXPECT_GE(3, after - before);
	atomic_store(&stop, true);
	if (!c.ret) {
		wsem_release(self->x, 2);
		wsem_release(self->y, 2);
	}
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, pthread_join(th[i], NULL));
		close(s[i].fd);
	}
}

/* A child and its parent in one gang: the parent is asked for both. */
TEST(a_child_and_its_parent_add_up)
{
	struct wsem_stat st;
	int root, kid, fds[2];
	uint64_t w[2];

	if (access("/dev/wsem", F_OK))
		SKIP(return, "/dev/wsem is missing (module not loaded)");
	root = wsem_open_anon(4, 0);
	ASSERT_LE(0, root);
	kid = wsem_open_child(root, NULL, 0, 0, 4);
	ASSERT_LE(0, kid);
	fds[0] = kid;
	fds[1] = root;
	w[0] = 2;
	w[1] = 2;
	ASSERT_EQ(0, wsem_acquire_many(fds, w, 2, 0));
	st = stat_of(root);
	EXPECT_EQ(4, st.used);
	EXPECT_EQ(2, st.held);
	EXPECT_EQ(2, stat_of(kid).held);
	ASSERT_EQ(0, wsem_release(kid, 2));
	ASSERT_EQ(0, wsem_release(root, 2));
	/* 3 + 2 on a root of 4 can never be granted. */
	w[0] = 3;
	EXPECT_EQ(-1, wsem_acquire_many(fds, w, 2, -1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, used(root));
	close(kid);
	close(root);
}

/*
 * A queued gang whose parts, summed on one semaphore, no longer fit its
 * capacity after a shrink fails with EINVAL, as a plain request does,
 * though each part alone would still fit: {child:3, root:2} on a root of
 * 5 shrunk to 4.
 */
TEST(a_shrink_fails_a_gang_that_can_no_longer_fit_together)
{
	struct gang_call c = { .n = 2, .timeout_ns = 20 * NSEC };
	int root, kid, other;
	pthread_t g;

	if (access("/dev/wsem", F_OK))
		SKIP(return, "/dev/wsem is missing (module not loaded)");
	root = wsem_open_anon(5, 0);
	ASSERT_LE(0, root);
	kid = wsem_open_child(root, NULL, 0, 0, 4);
	ASSERT_LE(0, kid);
	other = wsem_reopen(root, 0);
	ASSERT_LE(0, other);
	/* 1 held: 3 + 2 more do not fit the root of 5, so the gang waits. */
	ASSERT_EQ(0, wsem_acquire(other, 1));
	c.fds[0] = kid;
	c.fds[1] = root;
	c.w[0] = 3;
	c.w[1] = 2;
	ASSERT_EQ(0, pthread_create(&g, NULL, gang_main, &c));
	ASSERT_EQ(0, waiters_reach(root, 2));
	ASSERT_EQ(0, wsem_set_capacity(root, 4));
	ASSERT_EQ(0, pthread_join(g, NULL));
	EXPECT_EQ(-1, c.ret);
	EXPECT_EQ(EINVAL, c.err);
	EXPECT_EQ(0, stat_of(root).waiters);
	EXPECT_EQ(0, stat_of(kid).waiters);
	EXPECT_EQ(1, used(root));
	EXPECT_EQ(0, used(kid));
	/* The tree goes on: a plain request is granted at once. */
	EXPECT_EQ(0, wsem_tryacquire(root, 3));
	close(other);
	close(kid);
	close(root);
}

/*
 * A gang's try that fails changes nothing, as a plain try: the longest
 * queue stays 0 and a watcher of demand (EPOLLRDBAND) hears nothing.
 */
TEST_F(gang, a_failed_try_changes_nothing)
{
	struct pollfd p = { .events = POLLRDBAND };
	int fds[2] = { self->x, self->y };
	uint64_t w[2] = { 1, 1 };
	struct wsem_stat st;

	ASSERT_EQ(0, wsem_acquire(self->y, 2));
	p.fd = wsem_reopen(self->x, 0);
	ASSERT_LE(0, p.fd);
	/* Reading the state marks the demand seen. */
	ASSERT_EQ(0, wsem_stat(p.fd, &st));
	ASSERT_EQ(0, poll(&p, 1, 0));
	EXPECT_EQ(-1, wsem_acquire_many(fds, w, 2, 0));
	EXPECT_EQ(EAGAIN, errno);
	EXPECT_EQ(0, poll(&p, 1, 0));
	EXPECT_EQ(0, stat_of(self->x).queue_max);
	EXPECT_EQ(0, stat_of(self->y).queue_max);
	EXPECT_EQ(0, used(self->x));
	ASSERT_EQ(0, wsem_release(self->y, 2));
	close(p.fd);
}

/* A demand watcher asleep in poll(POLLRDBAND): how it came back. */
struct demand_watch {
	int fd;
	_Atomic pid_t tid;
	int n;
	short revents;
	int64_t ns;
};

static void *demand_watch(void *arg)
{
	struct demand_watch *d = arg;
	struct pollfd p = { .fd = d->fd, .events = POLLRDBAND };
	int64_t t0 = now_ns();

	d->tid = gettid();
	d->n = poll(&p, 1, 5000);
	d->revents = p.revents;
	d->ns = now_ns() - t0;
	return NULL;
}

/*
 * A gang granted at once tells the demand watchers of each of its
 * semaphores, asleep in poll(POLLRDBAND), as a single grant at once does
 * (it takes no walk of the trees afterwards: it only took room).
 */
TEST_F(gang, a_gang_granted_at_once_wakes_each_demand_watcher)
{
	struct demand_watch d[2] = { { .fd = -1 }, { .fd = -1 } };
	int fds[2] = { self->x, self->y };
	uint64_t w[2] = { 1, 2 };
	pthread_t th[2];
	struct wsem_stat st;
	int i;

	for (i = 0; i < 2; i++) {
		d[i].fd = wsem_reopen(fds[i], 0);
		ASSERT_LE(0, d[i].fd);
		/* Reading the state marks the demand seen. */
		ASSERT_EQ(0, wsem_stat(d[i].fd, &st));
		ASSERT_EQ(0, pthread_create(&th[i], NULL, demand_watch, &d[i]));
	}
	for (i = 0; i < 2; i++)
		while (!d[i].tid || !thread_sleeping(d[i].tid))
			usleep(1000);
	usleep(20000);
	ASSERT_EQ(0, wsem_acquire_many(fds, w, 2, 0));
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, pthread_join(th[i], NULL));
		EXPECT_EQ(1, d[i].n);
		EXPECT_TRUE(d[i].revents & POLLRDBAND);
		EXPECT_GT(4000000000LL, d[i].ns);
		close(d[i].fd);
	}
	EXPECT_EQ(1, used(self->x));
	EXPECT_EQ(2, used(self->y));
	ASSERT_EQ(0, wsem_release(self->x, 1));
	ASSERT_EQ(0, wsem_release(self->y, 2));
}

/* Bad calls say why and change nothing. */
TEST_F(gang, bad_calls_say_why)
{
	int efd = eventfd(0, EFD_CLOEXEC), ro, fds[WSEM_MANY_MAX + 1];
	uint64_t w[WSEM_MANY_MAX + 1];
	char path[64];
	int i;

	ASSERT_LE(0, efd);
	for (i = 0; i <= WSEM_MANY_MAX; i++) {
		fds[i] = self->x;
		w[i] = 1;
	}
	EXPECT_EQ(-1, wsem_acquire_many(fds, w, 0, -1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, wsem_acquire_many(fds, w, WSEM_MANY_MAX + 1, -1));
	EXPECT_EQ(EINVAL, errno);
	/* The same semaphore twice, even through two handles. */
	fds[1] = wsem_reopen(self->x, 0);
	ASSERT_LE(0, fds[1]);
	EXPECT_EQ(-1, wsem_acquire_many(fds, w, 2, -1));
	EXPECT_EQ(EINVAL, errno);
	close(fds[1]);
	fds[1] = self->y;
	w[1] = 0;
	EXPECT_EQ(-1, wsem_acquire_many(fds, w, 2, -1));
	EXPECT_EQ(EINVAL, errno);
	w[1] = 3;
	EXPECT_EQ(-1, wsem_acquire_many(fds, w, 2, -1));
	EXPECT_EQ(EINVAL, errno);
	w[1] = 1;
	fds[1] = efd;
	EXPECT_EQ(-1, wsem_acquire_many(fds, w, 2, -1));
	EXPECT_EQ(EINVAL, errno);
	fds[1] = 999;
	EXPECT_EQ(-1, wsem_acquire_many(fds, w, 2, -1));
	EXPECT_EQ(EBADF, errno);
	/* A handle that only watches acquires nothing. */
	snprintf(path, sizeof(path), "gang.%d", getpid());
	i = wsem_open(path, O_CREAT | O_EXCL, 0600, 2);
	ASSERT_LE(0, i);
	ro = wsem_open_watch(path, 0);
	ASSERT_LE(0, ro);
	fds[1] = ro;
	EXPECT_EQ(-1, wsem_acquire_many(fds, w, 2, -1));
	EXPECT_EQ(EBADF, errno);
	EXPECT_EQ(0, wsem_unlink(path));
	close(ro);
	close(i);
	EXPECT_EQ(0, used(self->x));
	EXPECT_EQ(0, stat_of(self->x).waiters);
	close(efd);
}

/* ---------------------------------------------------------------- */
/* Task work while a gang waits                                      */


/* A thread whose gang {x: 1, y: 1} waits, with a ring that completes. */
struct parker {
	int fds[2];		/* its own handles on x and y */
	int pipe[2];		/* [0] is polled through its ring */
	int stay;		/* an eventfd it waits on after leaving */
	struct ring ring;
	int ring_err;		/* io_uring_setup's errno, or 0 */
	_Atomic pid_t tid;	/* its id once its ring is up, -1 if not */
	int ret, err;		/* the gang's answer */
	unsigned int cqes;	/* its completions once its call returned */
	_Atomic int left;	/* it left through the handler */
	_Atomic int ended;	/* its call returned, or it left */
};

static __thread sigjmp_buf *leave_to;

static void leave_handler(int sig)
{
	(void)sig;
	siglongjmp(*leave_to, 1);
}

static void *parker_main(void *p)
{
	struct parker *k = p;
	uint64_t w[2] = { 1, 1 }, one;
	sigjmp_buf jb;

	k->ring_err = ring_poll_start(&k->ring, k->pipe[0]);
	if (k->ring_err) {
		atomic_store(&k->tid, -1);
		return NULL;
	}
	leave_to = &jb;
	if (sigsetjmp(jb, 1)) {
		atomic_store(&k->left, 1);
	} else {
		atomic_store(&k->tid, gettid());
		k->ret = wsem_acquire_many(k->fds, w, 2, -1);
		k->err = errno;
		k->cqes = ring_completions(&k->ring);
	}
	atomic_store(&k->ended, 1);
	if (atomic_load(&k->left) && k->stay >= 0)
		(void)!read(k->stay, &one, sizeof(one));
	ring_close(&k->ring);
	return NULL;
}

static void parker_init(struct __test_metadata *_metadata, struct parker *k,
			int x, int y, bool stay)
{
	memset(k, 0, sizeof(*k));
	ASSERT_EQ(0, pipe2(k->pipe, O_CLOEXEC));
	k->fds[0] = wsem_reopen(x, O_CLOEXEC);
	k->fds[1] = wsem_reopen(y, O_CLOEXEC);
	ASSERT_LE(0, k->fds[0]);
	ASSERT_LE(0, k->fds[1]);
	k->stay = stay ? eventfd(0, EFD_CLOEXEC) : -1;
}

static void parker_close(struct parker *k)
{
	close(k->fds[0]);
	close(k->fds[1]);
	close(k->pipe[0]);
	close(k->pipe[1]);
	if (k->stay >= 0)
		close(k->stay);
}

/* Start @k's thread and wait until its gang is queued; false: no ring. */
static bool parker_start(struct __test_metadata *_metadata, struct parker *k,
			 pthread_t *th, int x)
{
	pid_t tid;

	ASSERT_EQ(0, pthread_create(th, NULL, parker_main, k));
	while (!(tid = atomic_load(&k->tid)))
		usleep(1000);
	if (tid < 0) {
		pthread_join(*th, NULL);
		return false;
	}
	ASSERT_EQ(0, waiters_reach(x, 1));
	return true;
}

/* Wait (5 s at most) until @fd's semaphore has @n waiters or fewer. */
static int waiters_fall(int fd, uint64_t n)
{
	int64_t end = now_ns() + 5 * NSEC;

	while (now_ns() < end) {
		if (stat_of(fd).waiters <= n)
			return 0;
		usleep(1000);
	}
	return -1;
}

/* Wait (5 s at most) for the parked count to be @n; true if it is. */
static bool parked_reach(int n)
{
	int64_t end = now_ns() + 5 * NSEC;

	while (parked_count() != n && now_ns() < end)
		usleep(1000);
	return parked_count() == n;
}

/*
 * With @holder taking all of x (2), start @k's thread (its own handles on
 * @x and @y; @stay: it waits on k->stay once it left through its handler)
 * and wait until its gang is queued.  With @base, the test build's park
 * knobs are needed, and *@base is the parked count before.  NULL, or why
 * the test skips.
 */
static const char *parker_queue(struct __test_metadata *_metadata,
				struct parker *k, pthread_t *th, int x, int y,
				int holder, bool stay, int *base)
{
	static char why[64];

	if (base) {
		*base = parked_count();
		if (*base < 0 || access(PARK_DELAY, W_OK))
			return "not a test build of the module";
	}
	parker_init(_metadata, k, x, y, stay);
	ASSERT_EQ(0, wsem_acquire(holder, 2));
	if (parker_start(_metadata, k, th, x))
		return NULL;
	parker_close(k);
	snprintf(why, sizeof(why), "io_uring: %s", strerror(k->ring_err));
	return why;
}

/*
 * Task work (an io_uring completion) for a waiting gang's thread: the
 * thread returns to run it and its call restarts, and the gang keeps
 * its place, as a single waiter does: a request queued after it on x is
 * still after it when x has room.
 */
TEST_F(gang, task_work_keeps_its_place)
{
	int holder = wsem_reopen(self->x, 0), late = wsem_reopen(self->x, 0);
	const char *skip;
	struct parker k;
	long long before;
	pthread_t th;
	int64_t end;

	ASSERT_LE(0, holder);
	ASSERT_LE(0, late);
	skip = parker_queue(_metadata, &k, &th, self->x, self->y, holder,
			    false, NULL);
	if (skip)
		SKIP(return, "%s", skip);
	ASSERT_EQ(-1, wsem_acquire_async(late, 1));
	ASSERT_EQ(EINPROGRESS, errno);
	ASSERT_EQ(0, waiters_reach(self->x, 2));

	before = nvcsw(k.tid);
	ASSERT_LE(0, before);
	ASSERT_EQ(1, write(k.pipe[1], "x", 1));
	end = now_ns() + 5 * NSEC;
	while (!ring_completions(&k.ring) && now_ns() < end)
		usleep(1000);
	EXPECT_EQ(1, ring_completions(&k.ring)) {
		TH_LOG("the task work did not run while the gang waited");
	}
	while (nvcsw(k.tid) == before && now_ns() < end)
		usleep(1000);
	EXPECT_LT(before, nvcsw(k.tid));
	EXPECT_EQ(2, stat_of(self->x).waiters);
	EXPECT_FALSE(atomic_load(&k.ended));

	/* One unit on x: the gang's, which came first. */
	ASSERT_EQ(0, wsem_release(holder, 1));
	ASSERT_EQ(0, pthread_join(th, NULL));
	EXPECT_EQ(0, k.ret);
	EXPECT_EQ(1, k.cqes);
	EXPECT_EQ(1, stat_of(k.fds[0]).held);
	EXPECT_EQ(1, stat_of(k.fds[1]).held);
	EXPECT_EQ(-1, wsem_acquire_result(late)) {
		TH_LOG("the request behind the gang was granted first");
	}
	EXPECT_EQ(EINPROGRESS, errno);
	ASSERT_EQ(0, wsem_release(k.fds[0], 1));
	EXPECT_EQ(0, wsem_acquire_result(late));
	close(holder);
	close(late);
	parker_close(&k);
}

/*
 * Granted while its thread is away running the task work (held there a
 * while by the test knob test_park_delay_ms): the parked gang is granted
 * in its place, each part to its handle, and the restarted call finds it
 * granted.
 */
TEST_F(gang, a_parked_gang_is_granted_while_away)
{
	int holder = wsem_reopen(self->x, 0);
	const char *skip;
	struct parker k;
	pthread_t th;
	int base;

	ASSERT_LE(0, holder);
	skip = parker_queue(_metadata, &k, &th, self->x, self->y, holder,
			    false, &base);
	if (skip)
		SKIP(return, "%s", skip);
	ASSERT_EQ(0, write_file(PARK_DELAY, "2000"));
	ASSERT_EQ(1, write(k.pipe[1], "x", 1));
	ASSERT_TRUE(parked_reach(base + 1));
	ASSERT_EQ(0, wsem_release(holder, 1));
	/* The work item grants it while the thread is still away. */
	EXPECT_EQ(0, waiters_fall(self->x, 0));
	EXPECT_EQ(base + 1, parked_count());
	EXPECT_EQ(1, stat_of(k.fds[0]).held);
	EXPECT_EQ(1, stat_of(k.fds[1]).held);
	EXPECT_FALSE(atomic_load(&k.ended));
	ASSERT_EQ(0, pthread_join(th, NULL));
	EXPECT_EQ(0, k.ret);
	EXPECT_EQ(base, parked_count());
	EXPECT_EQ(1, stat_of(k.fds[0]).held) {
		TH_LOG("the restarted call did not take its grant back");
	}
	EXPECT_EQ(1, used(self->y));
	close(holder);
	parker_close(&k);
	EXPECT_EQ(0, used(self->x) + used(self->y));
}

/*
 * Park @k's gang (held in the kernel by the test knob), then signal its
 * thread: it leaves through the handler instead of restarting.
 */
static void park_and_leave(struct __test_metadata *_metadata,
			   struct parker *k, pthread_t th, int base)
{
	struct sigaction sa = { .sa_handler = leave_handler };

	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	/* held until the signal comes, for 30 s at most */
	ASSERT_EQ(0, write_file(PARK_DELAY, "30000"));
	ASSERT_EQ(1, write(k->pipe[1], "x", 1));
	ASSERT_TRUE(parked_reach(base + 1));
	ASSERT_EQ(0, pthread_kill(th, SIGUSR1));
	while (!atomic_load(&k->ended))
		usleep(1000);
	EXPECT_EQ(1, atomic_load(&k->left)) {
		TH_LOG("it restarted instead of leaving through the handler");
	}
}

/*
 * A parked gang whose thread left through its handler and ended never
 * comes back: a grant walk that reaches it ends it, whether it fits or
 * not (here x is full: the walk of a waiter's timeout behind it), and
 * the requests behind it go on.
 */
TEST_F(gang, a_parked_gang_of_an_ended_thread_is_ended)
{
	int holder = wsem_reopen(self->x, 0), late = wsem_reopen(self->x, 0);
	const char *skip;
	struct parker k;
	pthread_t th;
	int base;

	ASSERT_LE(0, holder);
	ASSERT_LE(0, late);
	skip = parker_queue(_metadata, &k, &th, self->x, self->y, holder,
			    false, &base);
	if (skip)
		SKIP(return, "%s", skip);
	park_and_leave(_metadata, &k, th, base);
	ASSERT_EQ(0, pthread_join(th, NULL));
	EXPECT_EQ(1, stat_of(self->x).waiters);
	EXPECT_EQ(base + 1, parked_count());
	EXPECT_EQ(-1, wsem_acquire_timeout(late, 1, 20 * MSEC));
	EXPECT_EQ(ETIMEDOUT, errno);
	EXPECT_TRUE(parked_reach(base)) {
		TH_LOG("the parked gang of an ended thread is still there");
	}
	EXPECT_EQ(0, waiters_fall(self->x, 0));
	EXPECT_EQ(0, stat_of(self->y).waiters);
	EXPECT_EQ(0, used(self->y));
	ASSERT_EQ(0, wsem_release(holder, 1));
	EXPECT_EQ(0, wsem_tryacquire(late, 1));
	close(holder);
	close(late);
	parker_close(&k);
}

/*
 * A parked gang whose thread left and lives on is ended when one of its
 * handles is closed: nothing of it is left queued or parked.
 */
TEST_F(gang, closing_a_handle_ends_its_parked_gang)
{
	int holder = wsem_reopen(self->x, 0);
	uint64_t one = 1;
	const char *skip;
	struct parker k;
	pthread_t th;
	int base;

	ASSERT_LE(0, holder);
	skip = parker_queue(_metadata, &k, &th, self->x, self->y, holder,
			    true, &base);
	if (skip)
		SKIP(return, "%s", skip);
	park_and_leave(_metadata, &k, th, base);
	EXPECT_EQ(1, stat_of(self->x).waiters);
	EXPECT_EQ(1, stat_of(self->y).waiters);
	EXPECT_EQ(base + 1, parked_count());
	ASSERT_EQ(0, close(k.fds[1]));
	k.fds[1] = -1;
	EXPECT_EQ(base, parked_count()) {
		TH_LOG("the parked gang is still there after the close");
	}
	EXPECT_EQ(0, stat_of(self->x).waiters);
	EXPECT_EQ(0, stat_of(self->y).waiters);
	EXPECT_EQ(0, wsem_tryacquire(self->y, 2));
	ASSERT_EQ(sizeof(one), write(k.stay, &one, sizeof(one)));
	ASSERT_EQ(0, pthread_join(th, NULL));
	close(holder);
	parker_close(&k);
}

TEST_HARNESS_MAIN
