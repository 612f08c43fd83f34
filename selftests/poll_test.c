// SPDX-License-Identifier: GPL-2.0
/*
 * poll() and epoll on a handle (docs/reference.md, "The ABI at a glance").
 *
 * A bound handle is readable (POLLIN) exactly while a try-acquire of 1
 * would succeed: nobody is queued and some weight is free.  So a queued
 * waiter hides free weight (no barging through poll either), and a poller
 * wakes when weight comes back by a release, a close or a grow, or when
 * the last waiter leaves the queue.  An unbound handle reports POLLERR.
 *
 * Every test owns an anonymous semaphore; its handles come from REOPEN.
 * Helpers run in threads, each with a handle of its own.  Where a test is
 * about waking a poller, the helper first waits until the poller sleeps in
 * poll() or epoll_wait() (its /proc wchan names a poll function), so that
 * the wake-up path is what runs, never an early return.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <wsem.h>

#include "kselftest_harness.h"
#include "util.h"

#define CAP		4
#define LONG_MS		5000	/* a wake-up that must come comes before */
#define SHORT_MS	200	/* one that must not come does not by then */
#define NSEC_PER_MSEC	1000000LL

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / NSEC_PER_MSEC;
}

/* poll() one descriptor for POLLIN; its revents, 0 on a timeout. */
static short poll_in(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (poll(&p, 1, timeout_ms) < 0)
		return -1;
	return p.revents;
}

/*
 * Whether thread @tid sleeps in poll(2), select(2) or epoll_wait(2) by its
 * system call and state, where its wchan is no help (5.10 with the ORC
 * unwinder says "0"): 1, or 0.
 */
static const long poll_syscalls[] = {
#ifdef SYS_poll
	SYS_poll,
#endif
#ifdef SYS_select
	SYS_select,
#endif
#ifdef SYS_epoll_wait
	SYS_epoll_wait,
#endif
	SYS_pselect6, SYS_ppoll, SYS_epoll_pwait,
};

static int asleep_in_poll_syscall(pid_t tid)
{
	char path[64], buf[256], *p;
	long nr;
	FILE *f;
	int i, n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n > 0 ? n : 0] = '\0';
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || p[2] != 'S')
		return 0;
	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	n = fscanf(f, "%ld", &nr);
	fclose(f);
	if (n != 1)
		return 0;
	for (i = 0; i < (int)(sizeof(poll_syscalls) /
			      sizeof(poll_syscalls[0])); i++)
		if (nr == poll_syscalls[i])
			return 1;
	return 0;
}

/*
 * Wait until thread @tid of this process sleeps in poll(2), select(2) or
 * epoll_wait(2): its wchan is a function of theirs (do_sys_poll, ep_poll,
 * ...), or where the kernel cannot tell a wchan ("0"), its system call is
 * one of theirs and it sleeps.  0, or -1 after LONG_MS.
 */
static int wait_asleep_in_poll(pid_t tid)
{
	int64_t end = now_ms() + LONG_MS;
	char path[64], buf[128];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/wchan", (int)tid);
	do {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -1;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n > 0) {
			buf[n] = '\0';
			if (strstr(buf, "poll") || strstr(buf, "select"))
				return 0;
			if (!strcmp(buf, "0") && asleep_in_poll_syscall(tid))
				return 0;
		}
		usleep(1000);
	} while (now_ms() < end);
	return -1;
}

/*
 * A thread's job: once thread @poller (if not 0) sleeps in poll, do @op on
 * @fd; the outcome in @ret/@err, and whether the poller was seen asleep.
 */
struct job {
	int fd;
	pid_t poller;		/* wait until it sleeps in poll; 0: at once */
	enum { RELEASE, GROW, CLOSE, ACQUIRE_TIMEOUT, POLL, SIGNAL } op;
	uint64_t arg;		/* weight, capacity, or poll timeout */
	int64_t timeout_ns;	/* for ACQUIRE_TIMEOUT */
	pthread_t target;	/* for SIGNAL: gets SIGUSR1 */
	int ret;
	int err;
	int asleep;		/* 0: the poller was seen asleep, -1: not */
	int done;		/* set once the job has returned */
	pid_t tid;		/* the job's thread */
	pthread_t t;
};

static void *run_job(void *p)
{
	struct job *j = p;

	__atomic_store_n(&j->tid, gettid(), __ATOMIC_SEQ_CST);
	if (j->poller)
		j->asleep = wait_asleep_in_poll(j->poller);
	switch (j->op) {
	case RELEASE:
		j->ret = wsem_release(j->fd, j->arg);
		break;
	case GROW:
		j->ret = wsem_set_capacity(j->fd, j->arg);
		break;
	case CLOSE:
		j->ret = close(j->fd);
		break;
	case ACQUIRE_TIMEOUT:
		j->ret = wsem_acquire_timeout(j->fd, j->arg, j->timeout_ns);
		break;
	case POLL:
		j->ret = poll_in(j->fd, (int)j->arg);
		break;
	case SIGNAL:
		j->ret = pthread_kill(j->target, SIGUSR1) ? -1 : 0;
		break;
	}
	j->err = j->ret < 0 ? errno : 0;
	__atomic_store_n(&j->done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static int start(struct job *j)
{
	return pthread_create(&j->t, NULL, run_job, j);
}

/* The thread id of a started job, once it has one; 0 after LONG_MS. */
static pid_t job_tid(struct job *j)
{
	int64_t end = now_ms() + LONG_MS;
	pid_t tid;

	while (!(tid = __atomic_load_n(&j->tid, __ATOMIC_SEQ_CST)) &&
	       now_ms() < end)
		usleep(1000);
	return tid;
}

static void on_sigusr1(int sig)
{
	(void)sig;
}

FIXTURE(poll) {
	int fd;		/* the test's handle, holds what the test acquires */
	int other;	/* a second handle on the same semaphore */
};

FIXTURE_SETUP(poll)
{
	self->fd = -1;
	self->other = -1;
	if (access("/dev/wsem", R_OK | W_OK))
		SKIP(return, "/dev/wsem is missing");
	self->fd = wsem_open_anon(CAP, O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	self->other = wsem_reopen(self->fd, O_CLOEXEC);
	ASSERT_LE(0, self->other);
}

FIXTURE_TEARDOWN(poll)
{
	if (self->fd >= 0)
		close(self->fd);
	if (self->other >= 0)
		close(self->other);
}

TEST_F(poll, unbound_handle_is_an_error)
{
	int fd = open("/dev/wsem", O_RDWR | O_CLOEXEC);

	ASSERT_LE(0, fd);
	EXPECT_EQ(POLLERR, poll_in(fd, 0));
	EXPECT_EQ(0, close(fd));
}

TEST_F(poll, readable_while_weight_is_free)
{
	EXPECT_EQ(POLLIN, poll_in(self->other, 0));
	ASSERT_EQ(0, wsem_acquire(self->fd, CAP - 1));
	EXPECT_EQ(POLLIN, poll_in(self->other, 0));
	ASSERT_EQ(0, wsem_acquire(self->fd, 1));
	EXPECT_EQ(0, poll_in(self->other, 0));
	EXPECT_EQ(0, poll_in(self->fd, 0));
	ASSERT_EQ(0, wsem_release(self->fd, 1));
	EXPECT_EQ(POLLIN, poll_in(self->other, 0));
}

/*
 * A sleeping poll() wakes on a release, a grow and a close: each done by a
 * thread once it sees this one asleep in poll().
 */
TEST_F(poll, release_grow_and_close_wake_a_poller)
{
	struct job j = { .fd = self->fd, .poller = gettid() };
	int64_t t0;
	int fd2;

	ASSERT_EQ(0, wsem_acquire(self->fd, CAP));

	j.op = RELEASE;
	j.arg = 1;
	ASSERT_EQ(0, start(&j));
	t0 = now_ms();
	EXPECT_EQ(POLLIN, poll_in(self->other, LONG_MS));
	EXPECT_GT(LONG_MS, now_ms() - t0);
	pthread_join(j.t, NULL);
	ASSERT_EQ(0, j.ret);
	EXPECT_EQ(0, j.asleep);		/* the wake-up, not an early return */

	ASSERT_EQ(0, wsem_acquire(self->fd, 1));
	j.op = GROW;
	j.arg = CAP + 1;
	ASSERT_EQ(0, start(&j));
	EXPECT_EQ(POLLIN, poll_in(self->other, LONG_MS));
	pthread_join(j.t, NULL);
	ASSERT_EQ(0, j.ret);
	EXPECT_EQ(0, j.asleep);

	/* A third handle takes the rest; closing it gives it back. */
	fd2 = wsem_reopen(self->fd, O_CLOEXEC);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, wsem_acquire(fd2, 1));
	EXPECT_EQ(0, poll_in(self->other, 0));
	j.fd = fd2;
	j.op = CLOSE;
	ASSERT_EQ(0, start(&j));
	EXPECT_EQ(POLLIN, poll_in(self->other, LONG_MS));
	pthread_join(j.t, NULL);
	ASSERT_EQ(0, j.ret);
	EXPECT_EQ(0, j.asleep);
}

/*
 * Free weight behind a queued waiter is not readable: a try-acquire would
 * fail.  When the waiter leaves (here by a signal, sent once this thread
 * sleeps in epoll_wait()), the epoll waiter wakes.
 */
TEST_F(poll, queued_waiter_hides_free_weight_until_it_leaves)
{
	struct job w = {
		.op = ACQUIRE_TIMEOUT, .arg = 2,
		.timeout_ns = 2 * LONG_MS * NSEC_PER_MSEC,
	};
	struct job k = { .poller = gettid(), .op = SIGNAL };
	struct sigaction sa = { .sa_handler = on_sigusr1 };	/* no restart */
	struct epoll_event ev = { .events = EPOLLIN };
	int ep;

	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	w.fd = wsem_reopen(self->fd, O_CLOEXEC);
	ASSERT_LE(0, w.fd);
	ASSERT_EQ(0, wsem_acquire(self->fd, CAP - 1));
	ASSERT_EQ(0, start(&w));
	ASSERT_EQ(0, wait_waiters(self->fd, 1));
	EXPECT_EQ(0, poll_in(self->other, 0));

	ep = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, ep);
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, self->other, &ev));
	k.target = w.t;
	ASSERT_EQ(0, start(&k));
	EXPECT_EQ(1, epoll_wait(ep, &ev, 1, LONG_MS));
	EXPECT_EQ(EPOLLIN, ev.events & (EPOLLIN | EPOLLERR));
	pthread_join(k.t, NULL);
	EXPECT_EQ(0, k.asleep);		/* it woke us, we did not find it */
	EXPECT_EQ(0, k.ret);
	pthread_join(w.t, NULL);
	EXPECT_EQ(-1, w.ret);
	EXPECT_EQ(EINTR, w.err);
	EXPECT_EQ(POLLIN, poll_in(self->other, 0));
	EXPECT_EQ(0, close(ep));
	EXPECT_EQ(0, close(w.fd));
}

/*
 * A release that goes to a queued waiter leaves nothing free: the poller
 * sleeps on.  It wakes when that waiter releases in turn.
 */
TEST_F(poll, a_grant_to_a_waiter_does_not_wake_pollers)
{
	struct job w = {
		.op = ACQUIRE_TIMEOUT, .arg = CAP,
		.timeout_ns = LONG_MS * NSEC_PER_MSEC,
	};
	struct job p = { .fd = self->other, .op = POLL, .arg = LONG_MS };
	pid_t ptid;

	w.fd = wsem_reopen(self->fd, O_CLOEXEC);
	ASSERT_LE(0, w.fd);
	ASSERT_EQ(0, wsem_acquire(self->fd, 1));
	ASSERT_EQ(0, start(&w));
	ASSERT_EQ(0, wait_waiters(self->fd, 1));
	ASSERT_EQ(0, start(&p));
	ptid = job_tid(&p);
	ASSERT_NE(0, ptid);
	/* The poller sleeps before the release, or the test shows nothing. */
	ASSERT_EQ(0, wait_asleep_in_poll(ptid));

	/* The waiter gets all of it: not readable, before or after. */
	ASSERT_EQ(0, wsem_release(self->fd, 1));
	pthread_join(w.t, NULL);
	ASSERT_EQ(0, w.ret);
	EXPECT_EQ(0, poll_in(self->other, SHORT_MS));

	/* The poller thread still sleeps; the waiter's release wakes it. */
	EXPECT_EQ(0, __atomic_load_n(&p.done, __ATOMIC_SEQ_CST));
	ASSERT_EQ(0, wsem_release(w.fd, 1));
	pthread_join(p.t, NULL);
	EXPECT_EQ(POLLIN, p.ret);
	EXPECT_EQ(0, close(w.fd));
}

TEST_HARNESS_MAIN
