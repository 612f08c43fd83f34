// SPDX-License-Identifier: GPL-2.0
/*
 * Loans through libwsem: wsem_lend() and the library's WSEM_LOANS flag.
 * A loan adds to the capacity in force (stat's capacity, lent, lent_here);
 * raising one needs ownership and lowering one does not; bad flags and a
 * capacity in force past WSEM_CAPACITY_MAX are EINVAL and change nothing;
 * a loan goes when its handle is closed or its process is SIGKILLed, as a
 * shrink: nothing held is revoked, and a plain semaphore's waiter heavier
 * than the new capacity fails with EINVAL, while a loans semaphore's
 * waiter waits on and is granted when a loan comes back.  poll(2) reports
 * POLLRDBAND after a waiter queues and after a release, until the handle
 * reads its stat (or read(2)s it).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <wsem.h>

#include "kselftest_harness.h"

#define NOBODY	65534
#define CAP	4	/* the own capacity of the fixture's semaphore */

FIXTURE(lend) {
	char name[32];		/* a named semaphore of this test, 0666 */
	int fd;			/* a handle on it */
};

FIXTURE_SETUP(lend)
{
	mode_t um = umask(0);

	snprintf(self->name, sizeof(self->name), "lendt%d", getpid());
	self->fd = wsem_open(self->name, O_CREAT | O_EXCL, 0666, CAP);
	umask(um);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(lend)
{
	EXPECT_EQ(0, close(self->fd));
	EXPECT_EQ(0, wsem_unlink(self->name));
}

/* The capacity in force of @fd's semaphore, or -1. */
static int64_t cap_of(int fd)
{
	struct wsem_stat st;

	if (wsem_stat(fd, &st))
		return -1;
	return (int64_t)st.capacity;
}

/* poll(2)'s revents for @fd, at once. */
static short revents(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN | POLLPRI | POLLRDBAND };

	return poll(&p, 1, 0) < 0 ? -1 : p.revents;
}

TEST_F(lend, lend_adds_to_capacity)
{
	struct wsem_stat st;
	int l = wsem_reopen(self->fd, 0);

	ASSERT_LE(0, l);
	ASSERT_LE(WSEM_STAT_SIZE_VER2, sizeof(st));
	ASSERT_EQ(0, wsem_lend(l, 3));
	ASSERT_EQ(0, wsem_stat(l, &st));
	EXPECT_EQ(CAP + 3, st.capacity);
	EXPECT_EQ(3, st.lent);
	EXPECT_EQ(3, st.lent_here);
	EXPECT_EQ(0, st.ceiling);
	EXPECT_EQ(CAP + 3, st.available);
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(3, st.lent);
	EXPECT_EQ(0, st.lent_here);
	/* a second lender adds to the first; a loan is set, not added */
	ASSERT_EQ(0, wsem_lend(self->fd, 2));
	EXPECT_EQ(CAP + 5, cap_of(l));
	ASSERT_EQ(0, wsem_lend(l, 1));
	EXPECT_EQ(CAP + 3, cap_of(l));
	ASSERT_EQ(0, wsem_lend(l, 0));
	ASSERT_EQ(0, wsem_lend(self->fd, 0));
	ASSERT_EQ(0, wsem_stat(l, &st));
	EXPECT_EQ(CAP, st.capacity);
	EXPECT_EQ(0, st.lent);
	/* own capacity and loans are separate */
	ASSERT_EQ(0, wsem_lend(l, 2));
	ASSERT_EQ(0, wsem_set_capacity(self->fd, 1));
	ASSERT_EQ(0, wsem_stat(l, &st));
	EXPECT_EQ(3, st.capacity);
	EXPECT_EQ(2, st.lent);
	EXPECT_EQ(0, close(l));
	EXPECT_EQ(1, cap_of(self->fd));
}

/* wsem_list() carries the loans too, with lent_here 0. */
TEST_F(lend, list_shows_loans)
{
	struct wsem_stat *buf;
	ssize_t n, i;

	ASSERT_EQ(0, wsem_lend(self->fd, 5));
	n = wsem_list(NULL, 0);
	ASSERT_LT(0, n);
	buf = calloc((size_t)n + 4, sizeof(*buf));
	ASSERT_NE(NULL, buf);
	n = wsem_list(buf, (size_t)n + 4);
	for (i = 0; i < n; i++)
		if (!strcmp(buf[i].name, self->name))
			break;
	ASSERT_LT(i, n);
	EXPECT_EQ(CAP + 5, buf[i].capacity);
	EXPECT_EQ(5, buf[i].lent);
	EXPECT_EQ(0, buf[i].lent_here);
	free(buf);
}

/*
 * Raising a loan needs ownership; lowering it never does, even through a
 * handle the owner made and passed on.  A refused raise changes nothing.
 */
TEST_F(lend, non_owner_raises_eperm_lowers_ok)
{
	int l = wsem_reopen(self->fd, 0);
	int status;
	pid_t pid;

	if (geteuid())
		SKIP(return, "needs root");
	ASSERT_LE(0, l);
	ASSERT_EQ(0, wsem_lend(l, 3));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int own;

		if (setresgid(NOBODY, NOBODY, NOBODY) ||
		    setresuid(NOBODY, NOBODY, NOBODY))
			_exit(1);
		own = wsem_open(self->name, 0, 0, 0);
		if (own < 0)
			_exit(2);
		if (wsem_lend(own, 1) != -1 || errno != EPERM)
			_exit(3);
		if (wsem_lend(l, 4) != -1 || errno != EPERM)
			_exit(4);
		if (cap_of(l) != CAP + 3)
			_exit(5);
		if (wsem_lend(l, 1))
			_exit(6);
		if (wsem_lend(l, 2) != -1 || errno != EPERM)
			_exit(7);
		if (wsem_lend(own, 0))	/* 0 to 0: not more */
			_exit(8);
		_exit(cap_of(l) == CAP + 1 ? 0 : 9);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	EXPECT_EQ(CAP + 1, cap_of(self->fd));
	EXPECT_EQ(0, close(l));
}

TEST_F(lend, bad_input_einval)
{
	struct wsem_lend_args args = {
		.size = sizeof(args),
		.flags = WSEM_LEND_DEADLINE << 1,
		.capacity = 1,
	};
	int unbound, watch;

	/* unknown flags */
	errno = 0;
	EXPECT_EQ(-1, ioctl(self->fd, WSEM_IOC_LEND, &args));
	EXPECT_EQ(EINVAL, errno);
	/* the capacity in force past WSEM_CAPACITY_MAX */
	errno = 0;
	EXPECT_EQ(-1, wsem_lend(self->fd, WSEM_CAPACITY_MAX));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(-1, wsem_lend(self->fd, UINT64_MAX));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, wsem_lend(self->fd, WSEM_CAPACITY_MAX - CAP));
	EXPECT_EQ(WSEM_CAPACITY_MAX, cap_of(self->fd));
	errno = 0;
	EXPECT_EQ(-1, wsem_set_capacity(self->fd, CAP + 1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, wsem_lend(self->fd, 0));
	EXPECT_EQ(CAP, cap_of(self->fd));
	/* an unbound handle */
	unbound = open("/dev/wsem", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, unbound);
	errno = 0;
	EXPECT_EQ(-1, wsem_lend(unbound, 1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, close(unbound));
	/* a handle open for reading only */
	watch = wsem_open_watch(self->name, 0);
	ASSERT_LE(0, watch);
	errno = 0;
	EXPECT_EQ(-1, wsem_lend(watch, 1));
	EXPECT_EQ(EBADF, errno);
	EXPECT_EQ(0, close(watch));
	EXPECT_EQ(CAP, cap_of(self->fd));
	/* WSEM_LOANS only where a semaphore is created */
	errno = 0;
	EXPECT_EQ(-1, wsem_open(self->name, WSEM_LOANS, 0, 8));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(-1, wsem_open_watch(self->name, WSEM_LOANS));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(-1, wsem_reopen(self->fd, WSEM_LOANS));
	EXPECT_EQ(EINVAL, errno);
}

/*
 * A withdrawal by close is a shrink: the weight held stays held, and a
 * waiter heavier than the capacity left fails with EINVAL.
 */
TEST_F(lend, close_withdraws_as_a_shrink)
{
	int l = wsem_reopen(self->fd, 0);
	int h = wsem_reopen(self->fd, 0);
	int w = wsem_reopen(self->fd, 0);
	struct wsem_stat st;

	ASSERT_LE(0, l);
	ASSERT_LE(0, h);
	ASSERT_LE(0, w);
	ASSERT_EQ(0, wsem_lend(l, 3));
	ASSERT_EQ(0, wsem_tryacquire(h, 6));
	errno = 0;
	ASSERT_EQ(-1, wsem_acquire_async(w, CAP + 1));
	ASSERT_EQ(EINPROGRESS, errno);
	EXPECT_EQ(0, close(l));
	ASSERT_EQ(0, wsem_stat(h, &st));
	EXPECT_EQ(CAP, st.capacity);
	EXPECT_EQ(0, st.lent);
	EXPECT_EQ(6, st.used);
	EXPECT_EQ(6, st.held);
	EXPECT_EQ(0, st.available);
	EXPECT_EQ(0, st.waiters);
	errno = 0;
	EXPECT_EQ(-1, wsem_acquire_result(w));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, wsem_release(h, 6));
	EXPECT_EQ(0, wsem_tryacquire(h, CAP));
	EXPECT_EQ(0, close(h));
	EXPECT_EQ(0, close(w));
}

/* The loan of a process that dies of SIGKILL goes with it. */
TEST_F(lend, sigkill_of_lender_withdraws)
{
	int h = wsem_reopen(self->fd, 0);
	int p[2];
	struct wsem_stat st;
	char c;
	pid_t pid;

	ASSERT_LE(0, h);
	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int l = wsem_open(self->name, 0, 0, 0);

		if (l < 0 || wsem_lend(l, 5))
			_exit(1);
		if (write(p[1], "x", 1) != 1)
			_exit(2);
		for (;;)
			pause();
	}
	close(p[1]);
	ASSERT_EQ(1, read(p[0], &c, 1));
	close(p[0]);
	EXPECT_EQ(CAP + 5, cap_of(h));
	ASSERT_EQ(0, wsem_tryacquire(h, CAP + 5));
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, NULL, 0));
	ASSERT_EQ(0, wsem_stat(h, &st));
	EXPECT_EQ(CAP, st.capacity);
	EXPECT_EQ(0, st.lent);
	EXPECT_EQ(CAP + 5, st.held);
	EXPECT_EQ(0, close(h));
	EXPECT_EQ(CAP, cap_of(self->fd));
}

/*
 * A semaphore that takes its capacity from loans: own capacity 0, the
 * ceiling bounds a request, and a waiter within it waits through a
 * withdrawal until a loan comes back.
 */
TEST(loans_semaphore)
{
	int s = wsem_open_anon(8, WSEM_LOANS);
	int l, h, w, l2;
	struct wsem_stat st;

	ASSERT_LE(0, s);
	ASSERT_EQ(0, wsem_stat(s, &st));
	EXPECT_EQ(0, st.capacity);
	EXPECT_EQ(8, st.ceiling);
	EXPECT_EQ(0, st.lent);
	l = wsem_reopen(s, 0);
	h = wsem_reopen(s, 0);
	w = wsem_reopen(s, 0);
	ASSERT_LE(0, l);
	ASSERT_LE(0, h);
	ASSERT_LE(0, w);
	/* above the ceiling: EINVAL at once */
	errno = 0;
	EXPECT_EQ(-1, wsem_acquire_async(w, 9));
	EXPECT_EQ(EINVAL, errno);
	ASSERT_EQ(0, wsem_lend(l, 5));
	EXPECT_EQ(5, cap_of(s));
	ASSERT_EQ(0, wsem_tryacquire(h, 2));
	errno = 0;
	ASSERT_EQ(-1, wsem_acquire_async(w, 5));
	ASSERT_EQ(EINPROGRESS, errno);
	/* the loan goes: the waiter waits on, the holder keeps its weight */
	EXPECT_EQ(0, close(l));
	ASSERT_EQ(0, wsem_stat(h, &st));
	EXPECT_EQ(0, st.capacity);
	EXPECT_EQ(2, st.held);
	EXPECT_EQ(1, st.waiters);
	errno = 0;
	EXPECT_EQ(-1, wsem_acquire_result(w));
	EXPECT_EQ(EINPROGRESS, errno);
	/* own capacity 0 is allowed here */
	EXPECT_EQ(0, wsem_set_capacity(s, 1));
	EXPECT_EQ(0, wsem_set_capacity(s, 0));
	errno = 0;
	EXPECT_EQ(-1, wsem_acquire_result(w));
	EXPECT_EQ(EINPROGRESS, errno);
	/* a loan back: granted */
	l2 = wsem_reopen(s, 0);
	ASSERT_LE(0, l2);
	ASSERT_EQ(0, wsem_lend(l2, 7));
	EXPECT_EQ(0, wsem_acquire_result(w));
	ASSERT_EQ(0, wsem_stat(w, &st));
	EXPECT_EQ(5, st.held);
	EXPECT_EQ(7, st.used);
	EXPECT_EQ(0, close(l2));
	EXPECT_EQ(0, close(w));
	EXPECT_EQ(0, close(h));
	EXPECT_EQ(0, close(s));
}

/* WSEM_LOANS by name, with O_CREAT; a plain semaphore refuses 0. */
TEST(loans_named)
{
	char name[32];
	struct wsem_stat st;
	int s, p;

	snprintf(name, sizeof(name), "lendn%d", getpid());
	s = wsem_open(name, O_CREAT | O_EXCL | WSEM_LOANS, 0600, 6);
	ASSERT_LE(0, s);
	ASSERT_EQ(0, wsem_stat(s, &st));
	EXPECT_EQ(0, st.capacity);
	EXPECT_EQ(6, st.ceiling);
	/* an existing one stays as it is */
	p = wsem_open(name, O_CREAT | WSEM_LOANS, 0600, 3);
	ASSERT_LE(0, p);
	ASSERT_EQ(0, wsem_stat(p, &st));
	EXPECT_EQ(6, st.ceiling);
	EXPECT_EQ(0, close(p));
	EXPECT_EQ(0, wsem_unlink(name));
	EXPECT_EQ(0, close(s));
	p = wsem_open_anon(3, 0);
	ASSERT_LE(0, p);
	ASSERT_EQ(0, wsem_stat(p, &st));
	EXPECT_EQ(0, st.ceiling);
	errno = 0;
	EXPECT_EQ(-1, wsem_set_capacity(p, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, close(p));
}

/*
 * POLLRDBAND: set once demand changed (a waiter queues, weight is
 * released) since the handle last read its stat; a stat or a read(2)
 * clears it, on that handle only.
 */
TEST_F(lend, pollrdband_follows_demand)
{
	int watch = wsem_open_watch(self->name, 0);
	int other = wsem_open_watch(self->name, 0);
	int h = wsem_reopen(self->fd, 0);
	int w = wsem_reopen(self->fd, 0);
	struct wsem_stat st;
	char buf[4096];

	ASSERT_LE(0, watch);
	ASSERT_LE(0, other);
	ASSERT_LE(0, h);
	ASSERT_LE(0, w);
	ASSERT_EQ(0, wsem_tryacquire(h, CAP));
	ASSERT_EQ(0, wsem_stat(watch, &st));
	ASSERT_EQ(0, wsem_stat(other, &st));
	EXPECT_EQ(0, revents(watch) & POLLRDBAND);
	/* a waiter queues */
	errno = 0;
	ASSERT_EQ(-1, wsem_acquire_async(w, 1));
	ASSERT_EQ(EINPROGRESS, errno);
	EXPECT_EQ(POLLRDBAND, revents(watch) & POLLRDBAND);
	EXPECT_EQ(POLLRDBAND, revents(watch) & POLLRDBAND);	/* stays */
	ASSERT_EQ(0, wsem_stat(watch, &st));
	EXPECT_EQ(0, revents(watch) & POLLRDBAND);
	EXPECT_EQ(POLLRDBAND, revents(other) & POLLRDBAND);
	/* a release (which grants the waiter) */
	ASSERT_EQ(0, wsem_release(h, 1));
	EXPECT_EQ(POLLRDBAND, revents(watch) & POLLRDBAND);
	EXPECT_LT(0, read(watch, buf, sizeof(buf)));
	EXPECT_EQ(0, revents(watch) & POLLRDBAND);
	ASSERT_EQ(0, wsem_stat(other, &st));
	EXPECT_EQ(0, revents(other) & POLLRDBAND);
	/* a release that grants nobody */
	ASSERT_EQ(0, wsem_release(h, 1));
	EXPECT_EQ(POLLRDBAND, revents(watch) & POLLRDBAND);
	ASSERT_EQ(0, wsem_stat(watch, &st));
	EXPECT_EQ(0, revents(watch) & POLLRDBAND);
	/* a loan is no demand */
	ASSERT_EQ(0, wsem_lend(self->fd, 1));
	EXPECT_EQ(0, revents(watch) & POLLRDBAND);
	EXPECT_EQ(0, wsem_lend(self->fd, 0));
	EXPECT_EQ(0, close(w));
	EXPECT_EQ(0, close(h));
	EXPECT_EQ(0, close(other));
	EXPECT_EQ(0, close(watch));
}

TEST_HARNESS_MAIN
