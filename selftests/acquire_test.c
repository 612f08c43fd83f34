// SPDX-License-Identifier: GPL-2.0
/*
 * Acquire, try-acquire, acquire with timeout, release and set capacity
 * (SPEC.md "Operations" and the FIFO rule under "Waiting").
 *
 * Every test owns a named semaphore of capacity CAP and a handle on it.
 * Waiters are forked children, each with a handle of its own, that make one
 * acquire call, report the outcome on a shared pipe and then wait for a byte
 * from the test before they exit (which releases what they hold).  The test
 * orders arrivals by waiting for wsem_stat().waiters to grow after each
 * spawn; grants are observed through stat (a grant is done by the time the
 * releasing call returns) and through the reports.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <time.h>

#include <wsem.h>

#include "kselftest_harness.h"
#include "util.h"

#define DEV "/dev/wsem"
#define CAP 10
#define MAX_CHILDREN 8
#define NOBODY 65534
#define NSEC_PER_MSEC 1000000LL
#define NO_TIMEOUT (-1)

/* What a child reports on the shared pipe. */
struct report {
	int id;		/* index of the child */
	int err;	/* 0 when granted, else the acquire's errno */
};

FIXTURE(acq) {
	bool skip;	/* no /dev/wsem; 6.1 runs the body anyway: it returns */
	char name[WSEM_NAME_MAX];	/* this test's semaphore, capacity CAP */
	int fd;		/* the test's own handle on it */
	int rep[2];	/* children write struct report to rep[1] */
	int nr;		/* children spawned so far */
	pid_t pid[MAX_CHILDREN];	/* child i, 0 once reaped */
	int go[MAX_CHILDREN];	/* write end: a byte lets child i exit */
};

FIXTURE_SETUP(acq)
{
	self->fd = -1;
	self->rep[0] = -1;
	self->rep[1] = -1;
	snprintf(self->name, sizeof(self->name), "acq.%d.%s", getpid(),
		 _metadata->name);
	if (access(DEV, R_OK | W_OK)) {
		self->skip = true;
		SKIP(return, DEV " is missing");
	}
	ASSERT_EQ(0, pipe2(self->rep, O_CLOEXEC));
	self->fd = wsem_open(self->name, O_CREAT | O_EXCL, 0600, CAP);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(acq)
{
	int i, status;

	if (self->skip)
		return;
	for (i = 0; i < self->nr; i++) {
		if (self->pid[i] > 0) {
			EXPECT_EQ(0, kill(self->pid[i], SIGKILL));
			EXPECT_EQ(self->pid[i], waitpid(self->pid[i], &status, 0));
		}
		EXPECT_EQ(0, close(self->go[i]));
	}
	if (self->fd >= 0)
		EXPECT_EQ(0, close(self->fd));
	EXPECT_EQ(0, close(self->rep[0]));
	EXPECT_EQ(0, close(self->rep[1]));
	EXPECT_EQ(0, wsem_unlink(self->name));
}

/* Child @id: its own handle, one acquire of @weight, report, wait, exit. */
static void child(FIXTURE_DATA(acq) *self, int id, uint64_t weight,
		  int64_t timeout_ns, int go)
{
	struct report r = { .id = id };
	char c;
	int fd;

	close(self->fd);	/* only its own handle may hold for it */
	fd = wsem_open(self->name, 0, 0, 0);
	if (fd < 0)
		r.err = errno;
	else if (timeout_ns == NO_TIMEOUT ? wsem_acquire(fd, weight) :
		 wsem_acquire_timeout(fd, weight, timeout_ns))
		r.err = errno;
	if (write(self->rep[1], &r, sizeof(r)) != sizeof(r))
		_exit(1);
	if (read(go, &c, 1) < 0)
		_exit(1);
	_exit(0);
}

/* Fork child number self->nr; returns its id, or -1. */
static int spawn_timeout(FIXTURE_DATA(acq) *self, uint64_t weight,
			 int64_t timeout_ns)
{
	int id = self->nr, go[2];

	if (id >= MAX_CHILDREN || pipe2(go, O_CLOEXEC))
		return -1;
	self->pid[id] = fork();
	if (self->pid[id] < 0) {
		close(go[0]);
		close(go[1]);
		return -1;
	}
	if (!self->pid[id])
		child(self, id, weight, timeout_ns, go[0]);
	close(go[0]);
	self->go[id] = go[1];
	self->nr++;
	return id;
}

static int spawn(FIXTURE_DATA(acq) *self, uint64_t weight)
{
	return spawn_timeout(self, weight, NO_TIMEOUT);
}

/* Let child @id exit and reap it, so what it held is released; 0 or -1. */
static int finish(FIXTURE_DATA(acq) *self, int id)
{
	int status;

	if (write(self->go[id], "x", 1) != 1 ||
	    waitpid(self->pid[id], &status, 0) != self->pid[id])
		return -1;
	self->pid[id] = 0;
	return WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : -1;
}

/* Read one report, waiting at most 5 s; 0 or -1. */
static int read_report(FIXTURE_DATA(acq) *self, struct report *r)
{
	struct pollfd pfd = { .fd = self->rep[0], .events = POLLIN };

	if (poll(&pfd, 1, 5000) != 1)
		return -1;
	return read(self->rep[0], r, sizeof(*r)) == sizeof(*r) ? 0 : -1;
}

/*
 * Read @n reports and return the set of children granted as a bit mask;
 * a failed acquire or a missing report gives ~0, which matches no set.
 */
static unsigned int granted(FIXTURE_DATA(acq) *self, int n)
{
	unsigned int mask = 0;
	struct report r;

	while (n--) {
		if (read_report(self, &r) || r.err)
			return ~0u;
		mask |= 1u << r.id;
	}
	return mask;
}

/* Spawn a child that must queue as waiter number @pos; its id or -1. */
static int spawn_queued(FIXTURE_DATA(acq) *self, uint64_t weight, int pos)
{
	int id = spawn(self, weight);

	if (id < 0 || wait_waiters(self->fd, pos))
		return -1;
	return id;
}

TEST_F(acq, weight_zero_einval)
{
	struct wsem_stat st;

	if (self->skip)
		return;
	EXPECT_EQ(-1, wsem_acquire(self->fd, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, wsem_tryacquire(self->fd, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, wsem_acquire_timeout(self->fd, 0, 0));
	EXPECT_EQ(EINVAL, errno);
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(0, st.used);
	EXPECT_EQ(0, st.waiters);
}

/* w > C can never be granted: EINVAL at once, not a wait forever. */
TEST_F(acq, weight_above_capacity_einval)
{
	struct wsem_stat st;

	if (self->skip)
		return;
	EXPECT_EQ(-1, wsem_acquire(self->fd, CAP + 1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, wsem_acquire(self->fd, UINT64_MAX));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, wsem_tryacquire(self->fd, CAP + 1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, wsem_acquire_timeout(self->fd, CAP + 1,
					   100 * NSEC_PER_MSEC));
	EXPECT_EQ(EINVAL, errno);
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(0, st.used);
	EXPECT_EQ(0, st.waiters);
}

TEST_F(acq, weight_equal_capacity_ok)
{
	struct wsem_stat st;

	if (self->skip)
		return;
	ASSERT_EQ(0, wsem_acquire(self->fd, CAP));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(CAP, st.used);
	EXPECT_EQ(CAP, st.held);
	EXPECT_EQ(0, st.available);
}

TEST_F(acq, unbound_einval)
{
	int fd;

	if (self->skip)
		return;
	fd = open(DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	EXPECT_EQ(-1, wsem_acquire(fd, 1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, wsem_tryacquire(fd, 1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, wsem_acquire_timeout(fd, 1, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, close(fd));
}

TEST_F(acq, granted_at_once_while_fits)
{
	struct wsem_stat st;

	if (self->skip)
		return;
	ASSERT_EQ(0, wsem_acquire(self->fd, 3));
	ASSERT_EQ(0, wsem_acquire(self->fd, 7));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(CAP, st.used);
	EXPECT_EQ(CAP, st.held);
	EXPECT_EQ(0, st.waiters);
}

TEST_F(acq, blocks_until_release)
{
	struct wsem_stat st;
	int a;

	if (self->skip)
		return;
	ASSERT_EQ(0, wsem_acquire(self->fd, CAP));
	a = spawn_queued(self, 3, 1);
	ASSERT_LE(0, a);
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(CAP, st.used);
	EXPECT_EQ(3, st.queued_weight);
	ASSERT_EQ(0, wsem_release(self->fd, 3));
	EXPECT_EQ(1u << a, granted(self, 1));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(CAP, st.used);
	EXPECT_EQ(CAP - 3, st.held);
	EXPECT_EQ(0, st.waiters);
	EXPECT_EQ(0, st.queued_weight);
}

TEST_F(acq, try_eagain_when_not_enough)
{
	struct wsem_stat st;

	if (self->skip)
		return;
	ASSERT_EQ(0, wsem_acquire(self->fd, 8));
	EXPECT_EQ(-1, wsem_tryacquire(self->fd, 3));
	EXPECT_EQ(EAGAIN, errno);
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(8, st.used);
	EXPECT_EQ(8, st.held);
	EXPECT_EQ(0, st.waiters);
	EXPECT_EQ(0, wsem_tryacquire(self->fd, 2));
}

/* A try-acquire that would fit still fails while someone is queued. */
TEST_F(acq, try_no_barging)
{
	struct wsem_stat st;

	if (self->skip)
		return;
	ASSERT_EQ(0, wsem_acquire(self->fd, 8));
	ASSERT_LE(0, spawn_queued(self, 5, 1));
	EXPECT_EQ(-1, wsem_tryacquire(self->fd, 1));
	EXPECT_EQ(EAGAIN, errno);
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(8, st.used);
	EXPECT_EQ(1, st.waiters);
}

TEST_F(acq, timeout_etimedout)
{
	struct wsem_stat st;
	int64_t start, took;
	int fd2;

	if (self->skip)
		return;
	ASSERT_EQ(0, wsem_acquire(self->fd, CAP));
	fd2 = wsem_reopen(self->fd, O_CLOEXEC);
	ASSERT_LE(0, fd2);
	start = now_ns();
	EXPECT_EQ(-1, wsem_acquire_timeout(fd2, 1, 100 * NSEC_PER_MSEC));
	EXPECT_EQ(ETIMEDOUT, errno);
	took = now_ns() - start;
	EXPECT_LE(100 * NSEC_PER_MSEC, took);
	EXPECT_GT(20000 * NSEC_PER_MSEC, took);
	ASSERT_EQ(0, wsem_stat(fd2, &st));
	EXPECT_EQ(0, st.held);
	EXPECT_EQ(CAP, st.used);
	EXPECT_EQ(0, st.waiters);
	EXPECT_EQ(0, close(fd2));
}

TEST_F(acq, timeout_granted_before_deadline)
{
	int a;

	if (self->skip)
		return;
	ASSERT_EQ(0, wsem_acquire(self->fd, CAP));
	a = spawn_timeout(self, 3, 60000 * NSEC_PER_MSEC);
	ASSERT_LE(0, a);
	ASSERT_EQ(0, wait_waiters(self->fd, 1));
	ASSERT_EQ(0, wsem_release(self->fd, 3));
	EXPECT_EQ(1u << a, granted(self, 1));
}

/* The longest timeout is a long wait, not an overflow into the past. */
TEST_F(acq, timeout_max_waits)
{
	int a;

	if (self->skip)
		return;
	ASSERT_EQ(0, wsem_acquire(self->fd, CAP));
	a = spawn_timeout(self, 3, INT64_MAX);
	ASSERT_LE(0, a);
	ASSERT_EQ(0, wait_waiters(self->fd, 1));
	ASSERT_EQ(0, wsem_release(self->fd, 3));
	EXPECT_EQ(1u << a, granted(self, 1));
}

TEST_F(acq, timeout_zero_like_try)
{
	struct wsem_stat st;

	if (self->skip)
		return;
	ASSERT_EQ(0, wsem_acquire(self->fd, 8));
	EXPECT_EQ(-1, wsem_acquire_timeout(self->fd, 3, 0));
	EXPECT_EQ(ETIMEDOUT, errno);
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(8, st.used);
	EXPECT_EQ(0, st.waiters);
	EXPECT_EQ(0, wsem_acquire_timeout(self->fd, 2, 0));
}

TEST_F(acq, timeout_zero_no_barging)
{
	struct wsem_stat st;

	if (self->skip)
		return;
	ASSERT_EQ(0, wsem_acquire(self->fd, 8));
	ASSERT_LE(0, spawn_queued(self, 5, 1));
	EXPECT_EQ(-1, wsem_acquire_timeout(self->fd, 1, 0));
	EXPECT_EQ(ETIMEDOUT, errno);
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(8, st.used);
	EXPECT_EQ(1, st.waiters);
}

TEST_F(acq, timeout_negative_einval)
{
	struct wsem_stat st;

	if (self->skip)
		return;
	EXPECT_EQ(-1, wsem_acquire_timeout(self->fd, 1, -1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, wsem_acquire_timeout(self->fd, 1, INT64_MIN));
	EXPECT_EQ(EINVAL, errno);
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(0, st.used);
}

TEST_F(acq, release_zero_einval)
{
	struct wsem_stat st;

	if (self->skip)
		return;
	ASSERT_EQ(0, wsem_acquire(self->fd, 3));
	EXPECT_EQ(-1, wsem_release(self->fd, 0));
	EXPECT_EQ(EINVAL, errno);
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(3, st.used);
	EXPECT_EQ(3, st.held);
}

/* H bounds a release, not U: another handle's weight is not ours. */
TEST_F(acq, release_above_held_einval)
{
	struct wsem_stat st;
	int fd2;

	if (self->skip)
		return;
	fd2 = wsem_reopen(self->fd, O_CLOEXEC);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, wsem_acquire(fd2, 5));
	ASSERT_EQ(0, wsem_acquire(self->fd, 3));
	EXPECT_EQ(-1, wsem_release(self->fd, 4));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, wsem_release(self->fd, UINT64_MAX));
	EXPECT_EQ(EINVAL, errno);
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(8, st.used);
	EXPECT_EQ(3, st.held);
	EXPECT_EQ(0, close(fd2));
}

TEST_F(acq, release_partial)
{
	struct wsem_stat st;

	if (self->skip)
		return;
	ASSERT_EQ(0, wsem_acquire(self->fd, 5));
	ASSERT_EQ(0, wsem_release(self->fd, 2));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(3, st.used);
	EXPECT_EQ(3, st.held);
	ASSERT_EQ(0, wsem_release(self->fd, 3));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(0, st.used);
	EXPECT_EQ(0, st.held);
}

/* One release grants the head, then the next, while each fits. */
TEST_F(acq, release_grants_head_and_next)
{
	struct wsem_stat st;
	int a, b, c;

	if (self->skip)
		return;
	ASSERT_EQ(0, wsem_acquire(self->fd, CAP));
	a = spawn_queued(self, 3, 1);
	b = spawn_queued(self, 3, 2);
	c = spawn_queued(self, 5, 3);
	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	ASSERT_LE(0, c);
	ASSERT_EQ(0, wsem_release(self->fd, 6));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(CAP, st.used);
	EXPECT_EQ(1, st.waiters);
	EXPECT_EQ(5, st.queued_weight);
	EXPECT_EQ((1u << a) | (1u << b), granted(self, 2));
}

/* A head that does not fit blocks a follower that would. */
TEST_F(acq, release_stops_at_head)
{
	struct wsem_stat st;
	int a, b;

	if (self->skip)
		return;
	ASSERT_EQ(0, wsem_acquire(self->fd, CAP));
	a = spawn_queued(self, 5, 1);
	b = spawn_queued(self, 1, 2);
	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	ASSERT_EQ(0, wsem_release(self->fd, 4));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(CAP - 4, st.used);
	EXPECT_EQ(2, st.waiters);
	ASSERT_EQ(0, wsem_release(self->fd, 1));
	EXPECT_EQ(1u << a, granted(self, 1));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(CAP, st.used);
	EXPECT_EQ(1, st.waiters);
	ASSERT_EQ(0, wsem_release(self->fd, 5));
	EXPECT_EQ(1u << b, granted(self, 1));
}

/*
 * Five processes queue in the order A6 B1 C4 D2 E5 behind the test, which
 * holds all of CAP.  The releases below are chosen so that any overtaking
 * (a smaller, later waiter granted first) shows up as a different set of
 * grants at some step; the grants concatenated give the arrival order.
 */
TEST_F(acq, fifo_mixed_weights)
{
	static const uint64_t w[] = { 6, 1, 4, 2, 5 };
	unsigned int order[5], seen = 0;
	struct wsem_stat st;
	int id[5], i;

	if (self->skip)
		return;
	ASSERT_EQ(0, wsem_acquire(self->fd, CAP));
	for (i = 0; i < 5; i++) {
		id[i] = spawn_queued(self, w[i], i + 1);
		ASSERT_LE(0, id[i]);
	}
	/* U 9: B would fit but A heads the queue */
	ASSERT_EQ(0, wsem_release(self->fd, 1));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(5, st.waiters);
	EXPECT_EQ(9, st.used);
	/* U 4: A (6) fits, B (1) then does not */
	ASSERT_EQ(0, wsem_release(self->fd, 5));
	order[seen++] = granted(self, 1);
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(4, st.waiters);
	/* U 6: B fits, C (4) does not although D (2) would */
	ASSERT_EQ(0, wsem_release(self->fd, 4));
	order[seen++] = granted(self, 1);
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(3, st.waiters);
	EXPECT_EQ(7, st.used);
	/* A leaves, U 1: C and D fit, E (5) does not */
	ASSERT_EQ(0, finish(self, id[0]));
	order[seen++] = granted(self, 2);
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(1, st.waiters);
	EXPECT_EQ(7, st.used);
	/* B and C leave, U 2: E fits */
	ASSERT_EQ(0, finish(self, id[1]));
	ASSERT_EQ(0, finish(self, id[2]));
	order[seen++] = granted(self, 1);
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(0, st.waiters);
	EXPECT_EQ(7, st.used);

	EXPECT_EQ(1u << id[0], order[0]);
	EXPECT_EQ(1u << id[1], order[1]);
	EXPECT_EQ((1u << id[2]) | (1u << id[3]), order[2]);
	EXPECT_EQ(1u << id[4], order[3]);
}

/*
 * A waiter for all of CAP queues while 1 is free; a stream of waiters for
 * 1, each of which would fit, queues behind it, and the big one is granted
 * first as soon as the holder leaves.
 */
TEST_F(acq, big_not_starved_by_small)
{
	struct wsem_stat st;
	int holder, big, i;

	if (self->skip)
		return;
	holder = spawn(self, CAP - 1);
	ASSERT_LE(0, holder);
	ASSERT_EQ(1u << holder, granted(self, 1));
	big = spawn_queued(self, CAP, 1);
	ASSERT_LE(0, big);
	for (i = 0; i < 5; i++) {
		ASSERT_LE(0, spawn_queued(self, 1, i + 2));
		ASSERT_EQ(0, wsem_stat(self->fd, &st));
		EXPECT_EQ(CAP - 1, st.used);
	}
	ASSERT_EQ(0, finish(self, holder));
	EXPECT_EQ(1u << big, granted(self, 1));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(CAP, st.used);
	EXPECT_EQ(5, st.waiters);
	ASSERT_EQ(0, finish(self, big));
	EXPECT_EQ(0x7cu, granted(self, 5));
}

TEST_F(acq, grow_grants_waiters)
{
	struct wsem_stat st;
	int a, b;

	if (self->skip)
		return;
	ASSERT_EQ(0, wsem_acquire(self->fd, CAP));
	a = spawn_queued(self, 5, 1);
	b = spawn_queued(self, 5, 2);
	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	ASSERT_EQ(0, wsem_set_capacity(self->fd, 2 * CAP));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(2 * CAP, st.capacity);
	EXPECT_EQ(2 * CAP, st.used);
	EXPECT_EQ(0, st.waiters);
	EXPECT_EQ((1u << a) | (1u << b), granted(self, 2));
}

TEST_F(acq, grow_grants_only_what_fits)
{
	struct wsem_stat st;
	int a, b;

	if (self->skip)
		return;
	ASSERT_EQ(0, wsem_acquire(self->fd, CAP));
	a = spawn_queued(self, 5, 1);
	b = spawn_queued(self, 6, 2);
	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	ASSERT_EQ(0, wsem_set_capacity(self->fd, CAP + 5));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(CAP + 5, st.used);
	EXPECT_EQ(1, st.waiters);
	EXPECT_EQ(1u << a, granted(self, 1));
}

TEST_F(acq, shrink_keeps_held_weight)
{
	struct wsem_stat st;

	if (self->skip)
		return;
	ASSERT_EQ(0, wsem_acquire(self->fd, 8));
	ASSERT_EQ(0, wsem_set_capacity(self->fd, 5));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(5, st.capacity);
	EXPECT_EQ(8, st.used);
	EXPECT_EQ(8, st.held);
	EXPECT_EQ(0, st.available);
	EXPECT_EQ(0, wsem_release(self->fd, 8));
}

/* After a shrink below U nothing is granted until U + w <= C again. */
TEST_F(acq, shrink_no_grant_until_fits)
{
	struct wsem_stat st;
	int a;

	if (self->skip)
		return;
	ASSERT_EQ(0, wsem_acquire(self->fd, 8));
	ASSERT_EQ(0, wsem_set_capacity(self->fd, 5));
	EXPECT_EQ(-1, wsem_tryacquire(self->fd, 1));
	EXPECT_EQ(EAGAIN, errno);
	a = spawn_queued(self, 2, 1);
	ASSERT_LE(0, a);
	/* U 6: 6 + 2 > 5 */
	ASSERT_EQ(0, wsem_release(self->fd, 2));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(6, st.used);
	EXPECT_EQ(1, st.waiters);
	/* U 3: 3 + 2 <= 5 */
	ASSERT_EQ(0, wsem_release(self->fd, 3));
	EXPECT_EQ(1u << a, granted(self, 1));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(5, st.used);
	EXPECT_EQ(0, st.waiters);
}

/*
 * Queue A8 B1 C3 behind 4 held; shrink to 5.  A can never fit and fails
 * with EINVAL; B then fits (4 + 1) and is granted; C (3) keeps waiting.
 */
TEST_F(acq, shrink_fails_waiter_above_capacity)
{
	struct wsem_stat st;
	int err[3] = { -1, -1, -1 };	/* A's, B's and anyone else's */
	struct report r;
	int a, b, c, i;

	if (self->skip)
		return;
	ASSERT_EQ(0, wsem_acquire(self->fd, 4));
	a = spawn_queued(self, 8, 1);
	b = spawn_queued(self, 1, 2);
	c = spawn_queued(self, 3, 3);
	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	ASSERT_LE(0, c);
	ASSERT_EQ(0, wsem_set_capacity(self->fd, 5));
	for (i = 0; i < 2; i++) {	/* A and B report in either order */
		ASSERT_EQ(0, read_report(self, &r));
		err[r.id == a ? 0 : r.id == b ? 1 : 2] = r.err;
	}
	EXPECT_EQ(EINVAL, err[0]);
	EXPECT_EQ(0, err[1]);
	EXPECT_EQ(-1, err[2]);
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(5, st.used);
	EXPECT_EQ(1, st.waiters);
	EXPECT_EQ(3, st.queued_weight);
}

TEST_F(acq, set_capacity_out_of_range_einval)
{
	struct wsem_stat st;

	if (self->skip)
		return;
	EXPECT_EQ(-1, wsem_set_capacity(self->fd, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, wsem_set_capacity(self->fd, WSEM_CAPACITY_MAX + 1));
	EXPECT_EQ(EINVAL, errno);
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(CAP, st.capacity);
	EXPECT_EQ(0, wsem_set_capacity(self->fd, WSEM_CAPACITY_MAX));
}

/* A handle is not ownership: another uid holding one gets EPERM. */
TEST_F(acq, set_capacity_non_owner_eperm)
{
	struct wsem_stat st;
	int status;
	pid_t pid;

	if (self->skip)
		return;
	if (geteuid())
		SKIP(return, "needs root");
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (setresgid(NOBODY, NOBODY, NOBODY) ||
		    setresuid(NOBODY, NOBODY, NOBODY))
			_exit(1);
		if (wsem_set_capacity(self->fd, 2 * CAP) != -1)
			_exit(2);
		_exit(errno == EPERM ? 0 : 3);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(CAP, st.capacity);
}

/* The owner needs no privilege. */
TEST_F(acq, set_capacity_unprivileged_owner_ok)
{
	int status;
	pid_t pid;

	if (self->skip)
		return;
	if (geteuid())
		SKIP(return, "needs root");
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int fd;

		if (setresgid(NOBODY, NOBODY, NOBODY) ||
		    setresuid(NOBODY, NOBODY, NOBODY))
			_exit(1);
		fd = wsem_open_anon(1, O_CLOEXEC);
		if (fd < 0)
			_exit(2);
		_exit(wsem_set_capacity(fd, 2) ? 3 : 0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
}

TEST_HARNESS_MAIN
