// SPDX-License-Identifier: GPL-2.0
/*
 * Capacity held by a handle (SPEC.md): WSEM_IOC_LEND, WSEM_OPEN_LOANS and
 * the demand event.
 *
 *  - a handle's loan adds to the capacity in force; its withdrawal, by the
 *    call, a close or the death of the lender (SIGKILL), is a shrink:
 *    nothing held is taken back, a waiter heavier than what is left fails
 *    with EINVAL, the others wait until they fit;
 *  - a semaphore that takes its capacity from loans has an own capacity of
 *    0 and a ceiling: its waiters within the ceiling wait through any
 *    withdrawal and are granted when a loan comes back;
 *  - lending more needs ownership, lending less never does;
 *  - bad calls fail with the errno that names the cause and change
 *    nothing;
 *  - POLLRDBAND tells a handle that demand (used weight, waiters, queued
 *    weight) changed since it last read the state, and wakes a poller;
 *  - a lender of WSEM_LEND_END_HOLDERS (CAP_KILL) kills, when its file is
 *    released, every process that holds weight on the semaphore or on a
 *    child of it (each that has a holding handle's file, also one that
 *    never acquired through it) and each holding handle's kill group
 *    (WSEM_IOC_SET_KILL), and nobody else; a LEND without the flag
 *    forgets it;
 *  - a loan with a deadline (WSEM_LEND_DEADLINE, CLOCK_BOOTTIME in the
 *    caller's time namespace) is withdrawn by the kernel when it passes
 *    unless lent again, as the lender's close would withdraw it: with
 *    WSEM_LEND_END_HOLDERS its holders are killed in the same step and
 *    nothing is granted from it; the lender's handle stays open.  Time
 *    suspended counts: a machine suspended past the deadline ends the
 *    holders at its resume (to RAM, woken by the RTC; skipped where the
 *    kernel has no suspend, as the debug kernel's tinyconfig).
 *
 * Every test owns a semaphore of its own, anonymous but for the one about
 * permission, which needs a name to be opened by another user.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <wsem.h>

#include "kselftest_harness.h"
#include "util.h"

#define LONG_MS		5000	/* a wake-up that must come comes before */
#define MSEC		1000000LL
#define EXPIRY_DELAY	"/sys/module/wsem/parameters/test_loan_expiry_delay_ms"
#define DEADLINE_S	5	/* a loan's deadline before a suspend, */
#define SUSPEND_S	8	/* ... which lasts longer */

/* WSEM_IOC_LEND with a deadline @in_ns from now on CLOCK_BOOTTIME. */
static int lend_until(int fd, uint64_t capacity, uint64_t flags, int64_t in_ns)
{
	struct wsem_lend_args a = {
		.size = sizeof(a),
		.flags = flags | WSEM_LEND_DEADLINE,
		.capacity = capacity,
		.deadline_ns = clock_ns(CLOCK_BOOTTIME) + in_ns,
	};

	return ioctl(fd, WSEM_IOC_LEND, &a);
}

/* Wait up to LONG_MS for @fd's capacity in force to be @capacity. */
static bool capacity_becomes(int fd, uint64_t capacity)
{
	int ms;

	for (ms = 0; ms < LONG_MS; ms += 5) {
		if (stat_of(fd).capacity == capacity)
			return true;
		usleep(5000);
	}
	return false;
}

/* WSEM_IOC_LEND on @fd with @flags; 0 or -1 with errno. */
static int lend_flags(int fd, uint64_t capacity, uint64_t flags)
{
	struct wsem_lend_args a = {
		.size = sizeof(a),
		.flags = flags,
		.capacity = capacity,
	};

	return ioctl(fd, WSEM_IOC_LEND, &a);
}

static int lend(int fd, uint64_t capacity)
{
	return lend_flags(fd, capacity, 0);
}

/* A semaphore that takes its capacity from loans, with @ceiling. */
static int open_loans(uint64_t ceiling)
{
	return open_with(NULL, WSEM_OPEN_ANON | WSEM_OPEN_LOANS, ceiling, 0);
}

/* poll() @fd for @events; its revents, 0 on a timeout, -1 on error. */
static short poll_for(int fd, short events, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = events };

	if (poll(&p, 1, timeout_ms) < 0)
		return -1;
	return p.revents;
}

FIXTURE(lend) {
	int fd;		/* a plain semaphore of capacity 2 */
	int lender;	/* another handle to it */
};

FIXTURE_SETUP(lend)
{
	self->fd = self->lender = -1;
	if (access("/dev/wsem", F_OK))
		SKIP(return, "/dev/wsem is missing (module not loaded)");
	self->fd = wsem_open_anon(2, 0);
	ASSERT_LE(0, self->fd);
	self->lender = wsem_reopen(self->fd, 0);
	ASSERT_LE(0, self->lender);
}

FIXTURE_TEARDOWN(lend)
{
	if (self->lender >= 0)
		close(self->lender);
	if (self->fd >= 0)
		close(self->fd);
}

/* A loan adds to the capacity; stat shows it, and whose it is. */
TEST_F(lend, a_loan_adds_to_the_capacity)
{
	struct wsem_stat st;
	char text[2048];

	ASSERT_EQ(0, lend(self->lender, 3));
	st = stat_of(self->fd);
	EXPECT_EQ(5, st.capacity);
	EXPECT_EQ(3, st.lent);
	EXPECT_EQ(0, st.lent_here);
	EXPECT_EQ(0, st.ceiling);
	EXPECT_EQ(3, stat_of(self->lender).lent_here);
	/* read(2)'s text says the same. */
	memset(text, 0, sizeof(text));
	ASSERT_LT(0, pread(self->lender, text, sizeof(text) - 1, 0));
	EXPECT_NE(NULL, strstr(text, "\ncapacity: 5\n"));
	EXPECT_NE(NULL, strstr(text, "\nlent: 3\nlent_here: 3\nceiling: 0\n"));
	EXPECT_EQ(0, wsem_tryacquire(self->fd, 5));
	EXPECT_EQ(0, wsem_release(self->fd, 5));
	/* A new loan replaces the handle's old one. */
	ASSERT_EQ(0, lend(self->lender, 1));
	st = stat_of(self->fd);
	EXPECT_EQ(3, st.capacity);
	EXPECT_EQ(1, st.lent);
	/* The own capacity is set apart from the loans. */
	ASSERT_EQ(0, wsem_set_capacity(self->fd, 4));
	EXPECT_EQ(5, stat_of(self->fd).capacity);
	ASSERT_EQ(0, lend(self->lender, 0));
	st = stat_of(self->fd);
	EXPECT_EQ(4, st.capacity);
	EXPECT_EQ(0, st.lent);
}

/*
 * Closing the lender withdraws its loan as a shrink: the weight held stays
 * held, no grant happens until it fits again, and a waiter heavier than
 * the capacity left fails with EINVAL while a lighter one waits.
 */
TEST_F(lend, a_close_withdraws_the_loan_as_a_shrink)
{
	int heavy = wsem_reopen(self->fd, 0), light = wsem_reopen(self->fd, 0);
	struct wsem_stat st;

	ASSERT_LE(0, heavy);
	ASSERT_LE(0, light);
	ASSERT_EQ(0, lend(self->lender, 4));
	ASSERT_EQ(0, wsem_acquire(self->fd, 6));
	ASSERT_EQ(-1, wsem_acquire_async(heavy, 5));
	ASSERT_EQ(EINPROGRESS, errno);
	ASSERT_EQ(-1, wsem_acquire_async(light, 1));
	ASSERT_EQ(EINPROGRESS, errno);
	ASSERT_EQ(0, close(self->lender));
	self->lender = -1;

	st = stat_of(self->fd);
	EXPECT_EQ(2, st.capacity);
	EXPECT_EQ(0, st.lent);
	EXPECT_EQ(6, st.used);
	EXPECT_EQ(6, st.held);
	EXPECT_EQ(-1, wsem_acquire_result(heavy));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, wsem_acquire_result(light));
	EXPECT_EQ(EINPROGRESS, errno);
	/* 6 - 4 = 2 held: still no room for 1 more. */
	ASSERT_EQ(0, wsem_release(self->fd, 4));
	EXPECT_EQ(-1, wsem_acquire_result(light));
	EXPECT_EQ(EINPROGRESS, errno);
	ASSERT_EQ(0, wsem_release(self->fd, 1));
	EXPECT_EQ(0, wsem_acquire_result(light));
	EXPECT_EQ(1, stat_of(light).held);
	close(heavy);
	close(light);
	st = stat_of(self->fd);
	EXPECT_EQ(1, st.used);
	EXPECT_EQ(0, st.waiters);
}

/* The loan of a process killed with SIGKILL is withdrawn. */
TEST_F(lend, sigkill_of_the_lender_withdraws_its_loan)
{
	int ready[2], status;
	pid_t pid;
	char c;

	ASSERT_EQ(0, pipe(ready));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(ready[0]);
		if (lend(self->lender, 6))
			_exit(1);
		if (write(ready[1], "x", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(ready[1]);
	/* The child's handle is the only one that lends: close ours. */
	ASSERT_EQ(0, close(self->lender));
	self->lender = -1;
	ASSERT_EQ(1, read(ready[0], &c, 1));
	close(ready[0]);
	EXPECT_EQ(8, stat_of(self->fd).capacity);
	ASSERT_EQ(0, wsem_acquire(self->fd, 7));
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status));
	EXPECT_EQ(2, stat_of(self->fd).capacity);
	EXPECT_EQ(0, stat_of(self->fd).lent);
	EXPECT_EQ(7, stat_of(self->fd).used);
	EXPECT_EQ(0, wsem_release(self->fd, 7));
}

/*
 * A semaphore made to take its capacity from loans: own capacity 0, a
 * ceiling that bounds a request; its waiters wait through a withdrawal.
 */
TEST(loans_semaphore_waiters_wait_through_a_withdrawal)
{
	int fd, lender, waiter;
	struct wsem_stat st;

	if (access("/dev/wsem", F_OK))
		SKIP(return, "/dev/wsem is missing (module not loaded)");
	fd = open_loans(8);
	ASSERT_LE(0, fd);
	lender = wsem_reopen(fd, 0);
	waiter = wsem_reopen(fd, 0);
	ASSERT_LE(0, lender);
	ASSERT_LE(0, waiter);
	st = stat_of(fd);
	EXPECT_EQ(0, st.capacity);
	EXPECT_EQ(8, st.ceiling);
	EXPECT_EQ(-1, wsem_tryacquire(fd, 9));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, wsem_tryacquire(fd, 1));
	EXPECT_EQ(EAGAIN, errno);

	/* Within the ceiling, above the capacity: it waits. */
	ASSERT_EQ(-1, wsem_acquire_async(waiter, 3));
	ASSERT_EQ(EINPROGRESS, errno);
	ASSERT_EQ(0, lend(lender, 2));
	EXPECT_EQ(-1, wsem_acquire_result(waiter));
	EXPECT_EQ(EINPROGRESS, errno);
	ASSERT_EQ(0, lend(lender, 3));
	EXPECT_EQ(0, wsem_acquire_result(waiter));

	/* Withdrawn while held: nothing revoked; the next one waits on. */
	ASSERT_EQ(0, lend(lender, 0));
	ASSERT_EQ(-1, wsem_acquire_async(fd, 8));
	ASSERT_EQ(EINPROGRESS, errno);
	ASSERT_EQ(0, close(lender));
	st = stat_of(fd);
	EXPECT_EQ(0, st.capacity);
	EXPECT_EQ(3, st.used);
	EXPECT_EQ(1, st.waiters);
	EXPECT_EQ(-1, wsem_acquire_result(fd));
	EXPECT_EQ(EINPROGRESS, errno);
	/* The own capacity may be 0 here, and comes on top of loans. */
	ASSERT_EQ(0, wsem_set_capacity(fd, 0));
	ASSERT_EQ(0, wsem_release(waiter, 3));
	ASSERT_EQ(0, wsem_set_capacity(fd, 8));
	EXPECT_EQ(0, wsem_acquire_result(fd));
	EXPECT_EQ(8, stat_of(fd).held);
	close(waiter);
	close(fd);
}

/* Lending more needs ownership; lending less, never. */
TEST(lending_more_needs_the_owner)
{
	char name[WSEM_NAME_MAX];
	int fd, status;
	pid_t pid;

	if (access("/dev/wsem", F_OK))
		SKIP(return, "/dev/wsem is missing (module not loaded)");
	if (geteuid())
		SKIP(return, "needs root to become another user");
	snprintf(name, sizeof(name), "lend.%d", getpid());
	umask(0);
	fd = open_with(name, WSEM_OPEN_CREAT | WSEM_OPEN_EXCL, 2, 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, lend(fd, 3));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int mine;

		/* Drop every privilege: no CAP_IPC_OWNER left. */
		if (setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(10);
		mine = wsem_open(name, 0, 0, 0);
		if (mine < 0)
			_exit(11);
		if (lend(mine, 1) != -1 || errno != EPERM)
			_exit(12);
		/* The owner's handle, passed on: less is fine, more is not. */
		if (lend(fd, 2) || lend(fd, 3) != -1 || errno != EPERM)
			_exit(13);
		if (wsem_set_capacity(mine, 5) != -1 || errno != EPERM)
			_exit(14);
		if (lend(fd, 0))
			_exit(15);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(2, stat_of(fd).capacity);
	EXPECT_EQ(0, stat_of(fd).lent);
	EXPECT_EQ(0, wsem_unlink(name));
	close(fd);
}

/* Bad calls fail with the errno that names the cause, changing nothing. */
TEST_F(lend, bad_calls_change_nothing)
{
	int unbound = open("/dev/wsem", O_RDWR | O_CLOEXEC), big;
	struct wsem_stat st;

	ASSERT_LE(0, unbound);
	ASSERT_EQ(0, lend(self->lender, 3));
	EXPECT_EQ(-1, lend_flags(self->lender, 4, WSEM_LEND_DEADLINE << 1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, lend(unbound, 1));
	EXPECT_EQ(EINVAL, errno);
	/* The capacity in force may not pass WSEM_CAPACITY_MAX. */
	EXPECT_EQ(-1, lend(self->lender, WSEM_CAPACITY_MAX - 1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, wsem_set_capacity(self->fd, WSEM_CAPACITY_MAX - 2));
	EXPECT_EQ(EINVAL, errno);
	/* A plain semaphore's own capacity is never 0. */
	EXPECT_EQ(-1, wsem_set_capacity(self->fd, 0));
	EXPECT_EQ(EINVAL, errno);
	big = wsem_open_anon(WSEM_CAPACITY_MAX, 0);
	ASSERT_LE(0, big);
	EXPECT_EQ(-1, lend(big, 1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(WSEM_CAPACITY_MAX, stat_of(big).capacity);
	close(big);
	/* LOANS names a created semaphore's ceiling: not without CREAT. */
	EXPECT_EQ(-1, open_with("lend.nocreat", WSEM_OPEN_LOANS, 4, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, open_loans(0));
	EXPECT_EQ(EINVAL, errno);
	st = stat_of(self->fd);
	EXPECT_EQ(5, st.capacity);
	EXPECT_EQ(3, st.lent);
	close(unbound);
}

/*
 * A deadline needs the struct that has it, and must be in the future:
 * EINVAL, ETIMEDOUT, and nothing changes (the loan keeps its size and
 * has no deadline).
 */
TEST_F(lend, bad_deadlines_change_nothing)
{
	struct wsem_lend_args a = {
		.size = WSEM_LEND_SIZE_VER0,
		.flags = WSEM_LEND_DEADLINE,
		.capacity = 4,
		.deadline_ns = clock_ns(CLOCK_BOOTTIME) + 10 * NSEC,
	};

	ASSERT_EQ(0, lend(self->lender, 3));
	EXPECT_EQ(-1, ioctl(self->lender, WSEM_IOC_LEND, &a));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, lend_until(self->lender, 4, 0, -1));
	EXPECT_EQ(ETIMEDOUT, errno);
	a.size = sizeof(a);
	a.deadline_ns = 0;
	EXPECT_EQ(-1, ioctl(self->lender, WSEM_IOC_LEND, &a));
	EXPECT_EQ(ETIMEDOUT, errno);
	EXPECT_EQ(5, stat_of(self->fd).capacity);
	EXPECT_EQ(3, stat_of(self->lender).lent_here);
	usleep(200000);
	EXPECT_EQ(5, stat_of(self->fd).capacity);
}

/*
 * At its deadline the loan is withdrawn as a close withdraws it (a
 * shrink: the weight held stays held, the waiter waits); lending again
 * before it moves it, and a plain LEND lends with no deadline.  The
 * lender's handle stays open and may lend anew.
 */
TEST_F(lend, a_deadline_withdraws_the_loan)
{
	int w = wsem_reopen(self->fd, 0), i;

	ASSERT_LE(0, w);
	ASSERT_EQ(0, lend_until(self->lender, 3, 0, 300 * MSEC));
	EXPECT_EQ(5, stat_of(self->fd).capacity);
	ASSERT_EQ(0, wsem_acquire(self->fd, 5));
	ASSERT_EQ(-1, wsem_acquire_async(w, 1));
	ASSERT_EQ(EINPROGRESS, errno);
	/* Renewed every 100 ms for 600 ms: it lives on. */
	for (i = 0; i < 6; i++) {
		usleep(100000);
		ASSERT_EQ(0, lend_until(self->lender, 3, 0, 300 * MSEC));
	}
	EXPECT_EQ(5, stat_of(self->fd).capacity);
	EXPECT_TRUE(capacity_becomes(self->fd, 2));
	EXPECT_EQ(0, stat_of(self->fd).lent);
	EXPECT_EQ(0, stat_of(self->lender).lent_here);
	EXPECT_EQ(5, stat_of(self->fd).used);
	EXPECT_EQ(1, stat_of(self->fd).waiters);
	ASSERT_EQ(0, wsem_release(self->fd, 3));
	EXPECT_EQ(-1, wsem_acquire_result(w));
	EXPECT_EQ(EINPROGRESS, errno);
	/* The handle lends anew; a plain LEND has no deadline. */
	ASSERT_EQ(0, lend_until(self->lender, 1, 0, 200 * MSEC));
	EXPECT_EQ(0, wsem_acquire_result(w));
	ASSERT_EQ(0, lend(self->lender, 1));
	usleep(400000);
	EXPECT_EQ(3, stat_of(self->fd).capacity);
	EXPECT_EQ(0, wsem_release(w, 1));
	EXPECT_EQ(0, wsem_release(self->fd, 2));
	close(w);
}

/*
 * The deadline is read on the caller's CLOCK_BOOTTIME: in a time
 * namespace a day ahead, a deadline 200 ms away ends the loan then, not
 * a day later (nor is it refused as past).
 */
TEST_F(lend, a_deadline_in_a_time_namespace)
{
	int status;
	pid_t pid;

	if (unshare(CLONE_NEWTIME))
		SKIP(return, "unshare(CLONE_NEWTIME): %s", strerror(errno));
	ASSERT_EQ(0, write_file("/proc/self/timens_offsets",
				"boottime 86400 0\n"));
	pid = fork();		/* the child is in the new time namespace */
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(lend_until(self->lender, 3, 0, 200 * MSEC) ? 1 : 0);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(5, stat_of(self->fd).capacity);
	EXPECT_TRUE(capacity_becomes(self->fd, 2));
}

/*
 * POLLRDBAND: demand changed since the handle last read the state.  A
 * grant, a queued waiter and a release each set it; stat clears it.
 */
TEST_F(lend, demand_shows_as_pollrdband_until_read)
{
	int watcher = wsem_reopen(self->fd, 0);
	char text[2048];

	ASSERT_LE(0, watcher);
	EXPECT_EQ(0, poll_for(watcher, POLLRDBAND, 0));
	ASSERT_EQ(0, wsem_acquire(self->fd, 2));
	EXPECT_EQ(POLLRDBAND, poll_for(watcher, POLLRDBAND, 0));
	stat_of(watcher);
	EXPECT_EQ(0, poll_for(watcher, POLLRDBAND, 0));
	/* A capacity change is no demand. */
	ASSERT_EQ(0, lend(self->lender, 0));
	EXPECT_EQ(0, poll_for(watcher, POLLRDBAND, 0));
	ASSERT_EQ(-1, wsem_acquire_async(self->lender, 1));
	ASSERT_EQ(EINPROGRESS, errno);
	EXPECT_EQ(POLLRDBAND, poll_for(watcher, POLLRDBAND, 0));
	stat_of(watcher);
	ASSERT_EQ(0, wsem_release(self->fd, 2));
	EXPECT_EQ(POLLRDBAND, poll_for(watcher, POLLRDBAND, 0));
	/* read(2) of the state clears it too. */
	ASSERT_LT(0, pread(watcher, text, sizeof(text), 0));
	EXPECT_EQ(0, poll_for(watcher, POLLRDBAND, 0));
	close(watcher);
}

struct later {
	int fd;
	uint64_t weight;
};

static void *acquire_later(void *p)
{
	struct later *l = p;

	usleep(100 * 1000);
	wsem_acquire(l->fd, l->weight);
	return NULL;
}

/* A poller of POLLRDBAND sleeps until demand changes, then wakes. */
TEST_F(lend, a_demand_poller_wakes_for_a_waiter)
{
	struct later l = { .fd = self->lender, .weight = 1 };
	pthread_t th;
	int64_t t0;

	ASSERT_EQ(0, wsem_acquire(self->fd, 2));
	stat_of(self->fd);
	ASSERT_EQ(0, pthread_create(&th, NULL, acquire_later, &l));
	t0 = now_ns();
	EXPECT_EQ(POLLRDBAND, poll_for(self->fd, POLLRDBAND, LONG_MS));
	EXPECT_GT(LONG_MS * 1000000LL, now_ns() - t0);
	EXPECT_EQ(1, stat_of(self->fd).waiters);
	ASSERT_EQ(0, wsem_release(self->fd, 2));
	ASSERT_EQ(0, pthread_join(th, NULL));
	EXPECT_EQ(1, stat_of(self->lender).held);
}

/*
 * A child process that closes its copy of @lender (so that the parent's
 * close releases the file), takes @weight through a handle of its own on
 * @fd's semaphore (weight belongs to the open file: the parent's @fd would
 * keep it after the child's death), says so, and waits.
 */
static pid_t fork_holder(int fd, uint64_t weight, int lender)
{
	int ready[2];
	pid_t pid;
	char c;

	if (pipe(ready))
		return -1;
	pid = fork();
	if (!pid) {
		close(ready[0]);
		close(lender);
		fd = wsem_reopen(fd, 0);
		if (fd < 0 || (weight && wsem_acquire(fd, weight)))
			_exit(1);
		if (write(ready[1], "x", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(ready[1]);
	if (pid > 0 && read(ready[0], &c, 1) != 1)
		pid = -1;
	close(ready[0]);
	return pid;
}

/* @pid ended by SIGKILL within LONG_MS (and is reaped). */
static bool killed_within(pid_t pid)
{
	int status, ms;

	for (ms = 0; ms < LONG_MS; ms += 10) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
		usleep(10000);
	}
	return false;
}

/*
 * killed_within(), and if @pid was not killed, kill and reap it: a holder
 * left alive keeps the test's output open.
 */
static bool killed_or_ended(pid_t pid)
{
	if (killed_within(pid))
		return true;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return false;
}

/* A loans semaphore of ceiling 4 and a handle to lend to it, as root. */
FIXTURE(end) {
	int fd;
	int lender;	/* -1 once the test closed it */
};

FIXTURE_SETUP(end)
{
	self->fd = self->lender = -1;
	if (access("/dev/wsem", F_OK))
		SKIP(return, "/dev/wsem is missing (module not loaded)");
	if (geteuid())
		SKIP(return, "needs CAP_KILL");
	self->fd = open_loans(4);
	ASSERT_LE(0, self->fd);
	self->lender = wsem_reopen(self->fd, 0);
	ASSERT_LE(0, self->lender);
}

FIXTURE_TEARDOWN(end)
{
	if (self->lender >= 0)
		close(self->lender);
	if (self->fd >= 0)
		close(self->fd);
}

/* The test's close of the lender. */
static int close_lender(int *lender)
{
	int fd = *lender;

	*lender = -1;
	return close(fd);
}

/*
 * WSEM_LEND_END_HOLDERS: the lender's close kills the processes that hold
 * weight on the semaphore and on its child, not one that only has a
 * handle; their weight comes back.
 */
TEST_F(end, end_holders_kills_the_holders_at_the_lenders_close)
{
	int fd = self->fd, lender = self->lender, child, idle_fd, status;
	pid_t a, b, idle;

	child = wsem_open_child(fd, NULL, 0, 0, 2);
	ASSERT_LE(0, child);
	idle_fd = wsem_reopen(fd, 0);
	ASSERT_LE(0, idle_fd);
	ASSERT_EQ(0, lend_flags(lender, 3, WSEM_LEND_END_HOLDERS));
	a = fork_holder(fd, 1, lender);
	ASSERT_LT(0, a);
	b = fork_holder(child, 2, lender);
	ASSERT_LT(0, b);
	idle = fork_holder(idle_fd, 0, lender);
	ASSERT_LT(0, idle);
	EXPECT_EQ(3, stat_of(fd).used);
	ASSERT_EQ(0, close_lender(&self->lender));
	EXPECT_TRUE(killed_within(a));
	EXPECT_TRUE(killed_within(b));
	EXPECT_EQ(0, stat_of(fd).used);
	EXPECT_EQ(0, stat_of(fd).capacity);
	/* A process that held nothing lives on. */
	EXPECT_EQ(0, waitpid(idle, &status, WNOHANG));
	EXPECT_EQ(0, kill(idle, SIGKILL));
	EXPECT_EQ(idle, waitpid(idle, &status, 0));
	close(idle_fd);
	close(child);
}

/*
 * A loan to a child ends the holders of that child and of its own
 * children, not those of its sibling: the end walks the lender's subtree.
 */
TEST_F(end, end_holders_ends_the_lenders_subtree_and_no_more)
{
	int fd = self->fd, c1, g1, c2, c1_lender, status;
	pid_t x, y, z;

	c1 = wsem_open_child(fd, NULL, 0, 0, 1);
	ASSERT_LE(0, c1);
	g1 = wsem_open_child(c1, NULL, 0, 0, 1);
	ASSERT_LE(0, g1);
	c2 = wsem_open_child(fd, NULL, 0, 0, 1);
	ASSERT_LE(0, c2);
	ASSERT_EQ(0, lend_flags(self->lender, 3, 0));
	c1_lender = wsem_reopen(c1, 0);
	ASSERT_LE(0, c1_lender);
	ASSERT_EQ(0, lend_flags(c1_lender, 1, WSEM_LEND_END_HOLDERS));
	x = fork_holder(g1, 1, c1_lender);
	ASSERT_LT(0, x);
	z = fork_holder(c1, 1, c1_lender);
	ASSERT_LT(0, z);
	y = fork_holder(c2, 1, c1_lender);
	ASSERT_LT(0, y);
	EXPECT_EQ(3, stat_of(fd).used);
	ASSERT_EQ(0, close(c1_lender));
	EXPECT_TRUE(killed_or_ended(x));
	EXPECT_TRUE(killed_or_ended(z));
	/* The sibling's holder lives on, with its weight. */
	EXPECT_EQ(0, waitpid(y, &status, WNOHANG));
	EXPECT_EQ(1, stat_of(fd).used);
	EXPECT_EQ(0, kill(y, SIGKILL));
	EXPECT_EQ(y, waitpid(y, &status, 0));
	close(c2);
	close(g1);
	close(c1);
}

/*
 * Every process that shares a holding handle is ended, not only the one
 * that acquired through it: a child forked after the acquire holds the
 * weight too (it has the handle's file).  The test process is their
 * subreaper, so that the orphaned child is its to reap.
 */
TEST_F(end, end_holders_kills_every_sharer_of_a_holding_handle)
{
	pid_t a, b;

	ASSERT_EQ(0, prctl(PR_SET_CHILD_SUBREAPER, 1));
	ASSERT_EQ(0, lend_flags(self->lender, 3, WSEM_LEND_END_HOLDERS));
	a = fork_holder_and_child(self->fd, self->lender, 2, false, -1, &b);
	ASSERT_LT(0, a);
	EXPECT_EQ(2, stat_of(self->fd).used);
	ASSERT_EQ(0, close_lender(&self->lender));
	EXPECT_TRUE(killed_within(a));
	EXPECT_TRUE(killed_or_ended(b)) {
		TH_LOG("the child that shares the handle lives on");
	}
	EXPECT_EQ(0, stat_of(self->fd).used);
	ASSERT_EQ(0, prctl(PR_SET_CHILD_SUBREAPER, 0));
}

/*
 * A holding handle's kill group (WSEM_IOC_SET_KILL: COMMAND's group under
 * `wsem run`) is killed with the holders, in the step that withdraws the
 * loan, not at the handle's close after its holder's death.  Here nothing
 * closes the handle (fork_holder_and_child() with a socket), and the
 * group's leader is no sharer.  Before the group was killed in that step
 * it lived on until the socket was closed.  The test process is the
 * subreaper that reaps the group's orphaned leader.
 */
TEST_F(end, end_holders_kills_a_holding_handles_kill_group)
{
	int sv[2], i;
	pid_t a, g;

	ASSERT_EQ(0, prctl(PR_SET_CHILD_SUBREAPER, 1));
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	ASSERT_EQ(0, lend_flags(self->lender, 3, WSEM_LEND_END_HOLDERS));
	a = fork_holder_and_child(self->fd, self->lender, 2, true, sv[0],
				   &g);
	ASSERT_LT(0, a);
	EXPECT_EQ(2, stat_of(self->fd).used);
	ASSERT_EQ(0, close_lender(&self->lender));
	EXPECT_TRUE(killed_within(a));
	EXPECT_TRUE(killed_or_ended(g)) {
		TH_LOG("the holding handle's kill group lives on");
	}
	/* The handle, in flight, holds its weight until the socket goes. */
	EXPECT_EQ(2, stat_of(self->fd).used);
	close(sv[0]);
	close(sv[1]);
	for (i = 0; i < 100 && stat_of(self->fd).used; i++)
		usleep(10000);
	EXPECT_EQ(0, stat_of(self->fd).used);
	ASSERT_EQ(0, prctl(PR_SET_CHILD_SUBREAPER, 0));
}

/*
 * The holders end in the same step that withdraws the loan: a holder's
 * death gives its weight back to a semaphore whose loan is gone already,
 * so a waiter is never granted from the dying loan (and then never
 * killed); it waits for a new loan.
 */
TEST_F(end, a_dying_loan_grants_nobody)
{
	int fd = self->fd, w, again;
	pid_t a;

	w = wsem_reopen(fd, 0);
	ASSERT_LE(0, w);
	ASSERT_EQ(0, lend_flags(self->lender, 3, WSEM_LEND_END_HOLDERS));
	a = fork_holder(fd, 3, self->lender);
	ASSERT_LT(0, a);
	ASSERT_EQ(-1, wsem_acquire_async(w, 2));
	ASSERT_EQ(EINPROGRESS, errno);
	ASSERT_EQ(0, close_lender(&self->lender));
	EXPECT_TRUE(killed_within(a));
	EXPECT_EQ(-1, wsem_acquire_result(w));
	EXPECT_EQ(EINPROGRESS, errno);
	EXPECT_EQ(0, stat_of(fd).used);
	EXPECT_EQ(0, stat_of(fd).capacity);
	EXPECT_EQ(1, stat_of(fd).waiters);
	/* A new loan grants it. */
	again = wsem_reopen(fd, 0);
	ASSERT_LE(0, again);
	ASSERT_EQ(0, lend(again, 2));
	EXPECT_EQ(0, wsem_acquire_result(w));
	EXPECT_EQ(2, stat_of(fd).used);
	close(w);
	close(again);
}

/*
 * WSEM_LEND_END_HOLDERS with a deadline: when it passes, the holders are
 * killed in the step that withdraws the loan, nothing is granted from it
 * (the waiter waits for a new loan), and the lender, alive, keeps its
 * handle; its later close kills nobody.
 */
TEST_F(end, a_deadline_ends_the_holders)
{
	int fd = self->fd, w, status;
	pid_t a, late;

	w = wsem_reopen(fd, 0);
	ASSERT_LE(0, w);
	ASSERT_EQ(0, lend_until(self->lender, 3, WSEM_LEND_END_HOLDERS,
				300 * MSEC));
	a = fork_holder(fd, 3, self->lender);
	ASSERT_LT(0, a);
	ASSERT_EQ(-1, wsem_acquire_async(w, 2));
	ASSERT_EQ(EINPROGRESS, errno);
	EXPECT_EQ(0, waitpid(a, &status, WNOHANG));
	EXPECT_TRUE(killed_or_ended(a));
	EXPECT_EQ(0, stat_of(fd).used);
	EXPECT_EQ(0, stat_of(fd).capacity);
	EXPECT_EQ(1, stat_of(fd).waiters);
	EXPECT_EQ(-1, wsem_acquire_result(w));
	EXPECT_EQ(EINPROGRESS, errno);
	/* A new loan (no deadline, no kill) grants it; the close kills nobody. */
	ASSERT_EQ(0, lend(self->lender, 3));
	EXPECT_EQ(0, wsem_acquire_result(w));
	late = fork_holder(fd, 1, self->lender);
	ASSERT_LT(0, late);
	ASSERT_EQ(0, close_lender(&self->lender));
	usleep(100000);
	EXPECT_EQ(0, waitpid(late, &status, WNOHANG));
	EXPECT_EQ(0, kill(late, SIGKILL));
	EXPECT_EQ(late, waitpid(late, &status, 0));
	close(w);
}

/*
 * A loan's deadline is on CLOCK_BOOTTIME, which goes on through a
 * suspend while CLOCK_MONOTONIC stops (as Go's clock does): a machine
 * suspended past the deadline ends the holders at its resume, long before
 * its CLOCK_MONOTONIC reaches the deadline.  A deadline kept on
 * CLOCK_MONOTONIC would let the holder run SUSPEND_S more seconds after
 * the resume, on a loan that other hosts have taken back meanwhile.
 */
TEST_F_TIMEOUT(end, a_suspend_past_the_deadline_ends_the_holders_at_resume, 60)
{
	int64_t mono, boot, slept, awake;
	pid_t a;

	ASSERT_EQ(0, lend_until(self->lender, 3, WSEM_LEND_END_HOLDERS,
				DEADLINE_S * NSEC));
	a = fork_holder(self->fd, 3, self->lender);
	ASSERT_LT(0, a);
	mono = clock_ns(CLOCK_MONOTONIC);
	boot = clock_ns(CLOCK_BOOTTIME);
	if (suspend_to_ram(SUSPEND_S)) {
		int err = errno;

		kill(a, SIGKILL);
		waitpid(a, NULL, 0);
		if (err == ENODEV)
			SKIP(return, "no suspend to RAM woken by an RTC alarm");
		ASSERT_EQ(0, err) {
			TH_LOG("suspend: %s", strerror(err));
		}
	}
	slept = clock_ns(CLOCK_BOOTTIME) - boot -
		(clock_ns(CLOCK_MONOTONIC) - mono);
	EXPECT_TRUE(killed_or_ended(a));
	awake = clock_ns(CLOCK_MONOTONIC) - mono;
	/* The machine slept past the deadline... */
	ASSERT_LE(DEADLINE_S * NSEC, slept) {
		TH_LOG("suspended %lld ms only", (long long)(slept / MSEC));
	}
	/* ... and the holder ended before its CLOCK_MONOTONIC got there. */
	EXPECT_GT(DEADLINE_S * NSEC, awake) {
		TH_LOG("%lld ms awake", (long long)(awake / MSEC));
	}
	EXPECT_EQ(0, stat_of(self->fd).capacity);
	EXPECT_EQ(0, stat_of(self->fd).used);
}

/*
 * What is past its deadline is never renewed: a LEND that comes after
 * the deadline, before the kernel's withdrawal has run (held back by the
 * test build's test_loan_expiry_delay_ms), finds the loan ended, with its
 * holders, and lends anew.
 */
TEST_F(end, a_renewal_after_the_deadline_renews_nothing)
{
	pid_t a;

	if (access(EXPIRY_DELAY, F_OK))
		SKIP(return, "not a test build (no %s)", EXPIRY_DELAY);
	ASSERT_EQ(0, write_file(EXPIRY_DELAY, "600"));
	ASSERT_EQ(0, lend_until(self->lender, 3, WSEM_LEND_END_HOLDERS,
				100 * MSEC));
	a = fork_holder(self->fd, 3, self->lender);
	ASSERT_LT(0, a);
	usleep(300000);
	ASSERT_EQ(0, lend_until(self->lender, 3, WSEM_LEND_END_HOLDERS,
				10 * NSEC));
	EXPECT_TRUE(killed_or_ended(a));
	EXPECT_EQ(3, stat_of(self->fd).capacity);
	EXPECT_EQ(0, stat_of(self->fd).used);
	ASSERT_EQ(0, lend(self->lender, 0));
	EXPECT_EQ(0, write_file(EXPIRY_DELAY, "0"));
}

/* A LEND without the flag forgets it: the close only withdraws. */
TEST_F(end, end_holders_is_forgotten_by_a_plain_lend)
{
	int fd = self->fd, lender = self->lender, status;
	pid_t a;

	ASSERT_EQ(0, lend_flags(lender, 2, WSEM_LEND_END_HOLDERS));
	ASSERT_EQ(0, lend(lender, 2));
	a = fork_holder(fd, 1, lender);
	ASSERT_LT(0, a);
	ASSERT_EQ(0, close_lender(&self->lender));
	usleep(100000);
	EXPECT_EQ(0, waitpid(a, &status, WNOHANG));
	EXPECT_EQ(1, stat_of(fd).used);
	EXPECT_EQ(0, kill(a, SIGKILL));
	EXPECT_EQ(a, waitpid(a, &status, 0));
	EXPECT_EQ(0, stat_of(fd).used);
}

/* WSEM_LEND_END_HOLDERS needs CAP_KILL: EPERM, and nothing changes. */
TEST_F(lend, end_holders_needs_cap_kill)
{
	int status;
	pid_t pid;

	if (geteuid())
		SKIP(return, "needs root to become another user");
	ASSERT_EQ(0, lend(self->lender, 1));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(10);
		if (lend_flags(self->lender, 1, WSEM_LEND_END_HOLDERS) != -1 ||
		    errno != EPERM)
			_exit(11);
		if (lend_flags(self->lender, 0, WSEM_LEND_END_HOLDERS) != -1 ||
		    errno != EPERM)
			_exit(12);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(3, stat_of(self->fd).capacity);
	EXPECT_EQ(1, stat_of(self->fd).lent);
}

TEST_HARNESS_MAIN
