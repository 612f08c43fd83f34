// SPDX-License-Identifier: GPL-2.0
/*
 * Waiting without a thread, deadlines, idle (SPEC.md, "Waiting without a
 * thread, deadlines, idle"): the asynchronous request, its cancel, close
 * and kill; acquires with a deadline on each clock, kept across EINTR and
 * across clock changes; idle waits, blocking and by poll.
 *
 * Every test owns an anonymous semaphore of capacity CAP through self->fd
 * and makes more handles with wsem_reopen().  Blocking waiters are threads
 * (or children where a process must die); queueing is observed with
 * wsem_stat().waiters, never with sleeps.
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
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <wsem.h>

#include "kselftest_harness.h"
#include "util.h"

#define CAP		4
#define MSEC		1000000LL

FIXTURE(async) {
	int fd;			/* the test's handle, holding nothing at first */
};

FIXTURE_SETUP(async)
{
	self->fd = wsem_open_anon(CAP, 0);
	if (self->fd < 0)
		SKIP(return, "/dev/wsem: %s", strerror(errno));
}

FIXTURE_TEARDOWN(async)
{
	if (self->fd >= 0)
		close(self->fd);
}

/* poll(2)'s revents of @fd for @events within @ms; 0 if none. */
static short poll_for(int fd, short events, int ms)
{
	struct pollfd p = { .fd = fd, .events = events };

	if (poll(&p, 1, ms) != 1)
		return 0;
	return p.revents;
}

static uint64_t used(int fd)
{
	struct wsem_stat st;

	return wsem_stat(fd, &st) ? UINT64_MAX : st.used;
}

static uint64_t held(int fd)
{
	struct wsem_stat st;

	return wsem_stat(fd, &st) ? UINT64_MAX : st.held;
}

/* A blocking waiter: acquire @weight, note the order, maybe release. */
struct blocker {
	pthread_t thread;
	int fd;
	uint64_t weight;
	int id;
	bool release;		/* give the weight back at once */
	atomic_int *order;	/* where the next grant writes its id */
	int *log;
	int ret, err;
	atomic_bool done;
};

static void *blocker_main(void *arg)
{
	struct blocker *b = arg;

	b->ret = wsem_acquire(b->fd, b->weight);
	b->err = errno;
	if (!b->ret && b->order)
		b->log[atomic_fetch_add(b->order, 1)] = b->id;
	if (!b->ret && b->release)
		wsem_release(b->fd, b->weight);
	atomic_store(&b->done, true);
	return NULL;
}

/* Start @b on its own handle of @fd's semaphore; 0 or -1. */
static int blocker_start(struct blocker *b, int fd, uint64_t weight)
{
	b->fd = wsem_reopen(fd, 0);
	b->weight = weight;
	atomic_store(&b->done, false);
	if (b->fd < 0)
		return -1;
	return pthread_create(&b->thread, NULL, blocker_main, b) ? -1 : 0;
}

static void blocker_join(struct blocker *b)
{
	pthread_join(b->thread, NULL);
	close(b->fd);
}

TEST_F(async, granted_at_once)
{
	ASSERT_EQ(0, wsem_acquire_async(self->fd, 3));
	EXPECT_EQ(3, held(self->fd));
	/* Nothing to collect: the call said it all. */
	EXPECT_EQ(-1, wsem_acquire_result(self->fd));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(-1, wsem_acquire_cancel(self->fd));
	EXPECT_EQ(ENOENT, errno);
}

/* Queued: not readable, EINPROGRESS; granted: readable, then collected. */
TEST_F(async, queued_request_polls_readable_once_granted)
{
	int a = wsem_reopen(self->fd, 0);

	ASSERT_LE(0, a);
	ASSERT_EQ(0, wsem_acquire(self->fd, CAP));
	ASSERT_EQ(-1, wsem_acquire_async(a, 2));
	ASSERT_EQ(EINPROGRESS, errno);
	EXPECT_EQ(0, wait_waiters(self->fd, 1));
	EXPECT_EQ(0, poll_for(a, POLLIN, 0));
	EXPECT_EQ(-1, wsem_acquire_result(a));
	EXPECT_EQ(EINPROGRESS, errno);
	EXPECT_EQ(0, held(a));

	ASSERT_EQ(0, wsem_release(self->fd, CAP));
	EXPECT_EQ(POLLIN, poll_for(a, POLLIN, 10000));
	/* The weight is the handle's before anyone collects it. */
	EXPECT_EQ(2, held(a));
	EXPECT_EQ(2, used(a));
	EXPECT_EQ(0, wsem_acquire_result(a));
	EXPECT_EQ(-1, wsem_acquire_result(a));
	EXPECT_EQ(ENOENT, errno);
	/* Collected: poll is back to "a try of 1 would succeed". */
	EXPECT_EQ(POLLIN, poll_for(a, POLLIN, 0));
	EXPECT_EQ(0, close(a));
	EXPECT_EQ(0, used(self->fd));
}

/* One request per handle, until the ended one is collected. */
TEST_F(async, one_request_per_handle)
{
	int a = wsem_reopen(self->fd, 0);

	ASSERT_LE(0, a);
	ASSERT_EQ(0, wsem_acquire(self->fd, CAP));
	ASSERT_EQ(-1, wsem_acquire_async(a, 1));
	ASSERT_EQ(EINPROGRESS, errno);
	EXPECT_EQ(-1, wsem_acquire_async(a, 1));
	EXPECT_EQ(EBUSY, errno);
	ASSERT_EQ(0, wsem_release(self->fd, CAP));
	EXPECT_EQ(POLLIN, poll_for(a, POLLIN, 10000));
	EXPECT_EQ(-1, wsem_acquire_async(a, 1));
	EXPECT_EQ(EBUSY, errno);
	EXPECT_EQ(1, used(a));
	EXPECT_EQ(0, wsem_acquire_result(a));
	/* Blocking acquires on the handle are not requests. */
	EXPECT_EQ(0, wsem_acquire(a, 1));
	EXPECT_EQ(0, wsem_acquire_async(a, 1));
	EXPECT_EQ(3, held(a));
	EXPECT_EQ(0, close(a));
}

/* A cancelled head lets the waiters behind it in at once. */
TEST_F(async, cancel_grants_the_followers)
{
	struct blocker b = { 0 };
	int a = wsem_reopen(self->fd, 0);
	struct wsem_stat st;

	ASSERT_LE(0, a);
	ASSERT_EQ(0, wsem_acquire(self->fd, 2));
	ASSERT_EQ(-1, wsem_acquire_async(a, 3));
	ASSERT_EQ(EINPROGRESS, errno);
	ASSERT_EQ(0, blocker_start(&b, self->fd, 2));
	ASSERT_EQ(0, wait_waiters(self->fd, 2));
	EXPECT_FALSE(atomic_load(&b.done));

	EXPECT_EQ(0, wsem_acquire_cancel(a));
	blocker_join(&b);
	EXPECT_EQ(0, b.ret);
	ASSERT_EQ(0, wsem_stat(a, &st));
	EXPECT_EQ(0, st.held);
	EXPECT_EQ(0, st.waiters);
	EXPECT_EQ(2, st.used);		/* ours; the blocker's went with it */
	EXPECT_EQ(-1, wsem_acquire_cancel(a));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(0, close(a));
}

/* A grant that came first wins: EALREADY, and the weight is held. */
TEST_F(async, cancel_after_the_grant)
{
	int a = wsem_reopen(self->fd, 0);

	ASSERT_LE(0, a);
	ASSERT_EQ(0, wsem_acquire(self->fd, CAP));
	ASSERT_EQ(-1, wsem_acquire_async(a, 1));
	ASSERT_EQ(0, wsem_release(self->fd, CAP));
	EXPECT_EQ(-1, wsem_acquire_cancel(a));
	EXPECT_EQ(EALREADY, errno);
	EXPECT_EQ(1, held(a));
	EXPECT_EQ(0, wsem_release(a, 1));
	EXPECT_EQ(0, close(a));
}

/* close(2) cancels: the followers are granted, nothing leaks. */
TEST_F(async, close_cancels)
{
	struct blocker b = { 0 };
	int a = wsem_reopen(self->fd, 0);

	ASSERT_LE(0, a);
	ASSERT_EQ(0, wsem_acquire(self->fd, 1));
	ASSERT_EQ(-1, wsem_acquire_async(a, CAP));
	ASSERT_EQ(0, blocker_start(&b, self->fd, 3));
	ASSERT_EQ(0, wait_waiters(self->fd, 2));
	EXPECT_EQ(0, close(a));
	blocker_join(&b);
	EXPECT_EQ(0, b.ret);
	EXPECT_EQ(1, used(self->fd));	/* the blocker's closed with it */
}

/* A process killed with a request queued leaves the queue. */
TEST_F(async, kill_cancels)
{
	struct blocker b = { 0 };
	int status;
	pid_t pid;

	ASSERT_EQ(0, wsem_acquire(self->fd, 1));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int a = wsem_reopen(self->fd, 0);

		if (a < 0 || wsem_acquire_async(a, CAP) == 0 ||
		    errno != EINPROGRESS)
			_exit(1);
		pause();
		_exit(2);
	}
	ASSERT_EQ(0, wait_waiters(self->fd, 1));
	ASSERT_EQ(0, blocker_start(&b, self->fd, 2));
	ASSERT_EQ(0, wait_waiters(self->fd, 2));
	EXPECT_EQ(0, kill(pid, SIGKILL));
	EXPECT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status));
	blocker_join(&b);
	EXPECT_EQ(0, b.ret);
	EXPECT_EQ(0, wait_waiters(self->fd, 0));
}

/* A shrink below the request's weight ends it with EINVAL, pollably. */
TEST_F(async, shrink_ends_the_request)
{
	int a = wsem_reopen(self->fd, 0);

	ASSERT_LE(0, a);
	ASSERT_EQ(0, wsem_acquire(self->fd, 1));
	ASSERT_EQ(-1, wsem_acquire_async(a, CAP));
	ASSERT_EQ(0, wsem_set_capacity(self->fd, CAP - 1));
	EXPECT_EQ(POLLIN, poll_for(a, POLLIN, 10000));
	EXPECT_EQ(-1, wsem_acquire_result(a));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, held(a));
	EXPECT_EQ(-1, wsem_acquire_result(a));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(0, close(a));
}

/*
 * Strict FIFO across kinds: blocking threads and asynchronous requests
 * queued alternately are granted in arrival order, one at a time.
 */
TEST_F(async, fifo_with_blocking_and_async_waiters)
{
	enum { N = 6 };
	struct blocker b[N] = { 0 };
	int log[N], a[N], want[N], i, n = 0;
	atomic_int order = 0;
	bool async[N];

	memset(a, -1, sizeof(a));
	ASSERT_EQ(0, wsem_acquire(self->fd, CAP));
	for (i = 0; i < N; i++) {
		want[i] = i;
		async[i] = i % 2;
		if (async[i]) {
			a[i] = wsem_reopen(self->fd, 0);
			ASSERT_LE(0, a[i]);
			ASSERT_EQ(-1, wsem_acquire_async(a[i], CAP));
		} else {
			b[i].id = i;
			b[i].release = true;
			b[i].order = &order;
			b[i].log = log;
			ASSERT_EQ(0, blocker_start(&b[i], self->fd, CAP));
		}
		ASSERT_EQ(0, wait_waiters(self->fd, i + 1));
	}
	ASSERT_EQ(0, wsem_release(self->fd, CAP));
	/* Serve the asynchronous ones as they become readable. */
	while (n < N / 2) {
		struct pollfd p[N];
		int k = 0, r;

		for (i = 0; i < N; i++) {
			if (async[i] && a[i] >= 0)
				p[k++] = (struct pollfd){ .fd = a[i],
							  .events = POLLIN };
		}
		r = poll(p, k, 10000);
		ASSERT_LT(0, r);
		for (i = 0; i < N; i++) {
			int j;

			if (!async[i] || a[i] < 0)
				continue;
			for (j = 0; j < k && p[j].fd != a[i]; j++)
				;
			if (!(p[j].revents & POLLIN))
				continue;
			ASSERT_EQ(0, wsem_acquire_result(a[i]));
			log[atomic_fetch_add(&order, 1)] = i;
			EXPECT_EQ(0, close(a[i]));	/* gives CAP back */
			a[i] = -1;
			n++;
		}
	}
	for (i = 0; i < N; i++) {
		if (!async[i])
			blocker_join(&b[i]);
	}
	ASSERT_EQ(N, atomic_load(&order));
	for (i = 0; i < N; i++)
		EXPECT_EQ(want[i], log[i]) TH_LOG("grant %d", i);
	EXPECT_EQ(0, used(self->fd));
}

/* Edge-triggered epoll registered before the request sees its grant. */
TEST_F(async, epoll_sees_the_grant)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET };
	int a = wsem_reopen(self->fd, 0), ep = epoll_create1(EPOLL_CLOEXEC);

	ASSERT_LE(0, a);
	ASSERT_LE(0, ep);
	ASSERT_EQ(0, wsem_acquire(self->fd, CAP));
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, a, &ev));
	ASSERT_EQ(-1, wsem_acquire_async(a, 1));
	EXPECT_EQ(0, epoll_wait(ep, &ev, 1, 0));
	ASSERT_EQ(0, wsem_release(self->fd, CAP));
	EXPECT_EQ(1, epoll_wait(ep, &ev, 1, 10000));
	EXPECT_EQ(0, wsem_acquire_result(a));
	EXPECT_EQ(0, close(ep));
	EXPECT_EQ(0, close(a));
}

/* The queued request is listed among the waiters, as ours. */
TEST_F(async, holders_list_the_request)
{
	struct wsem_holder who[2];
	int a = wsem_reopen(self->fd, 0);
	size_t nholders;

	ASSERT_LE(0, a);
	ASSERT_EQ(0, wsem_acquire(self->fd, CAP));
	ASSERT_EQ(-1, wsem_acquire_async(a, 2));
	ASSERT_EQ(2, wsem_holders(self->fd, who, 2, &nholders));
	EXPECT_EQ(1, nholders);
	EXPECT_EQ(WSEM_HOLDER_WAITING, who[1].flags);
	EXPECT_EQ(2, who[1].weight);
	EXPECT_EQ(getpid(), who[1].pid);
	EXPECT_EQ(0, close(a));
}

/* A handle that may only watch cannot queue. */
TEST_F(async, read_only_handle_cannot_request)
{
	char name[WSEM_NAME_MAX];
	int rw, ro;
	__u64 flags = 0;
	struct wsem_open_args o = { .size = sizeof(o) };

	snprintf(name, sizeof(name), "async.ro.%d", getpid());
	rw = wsem_open(name, O_CREAT | O_EXCL, 0600, 1);
	ASSERT_LE(0, rw);
	ro = open("/dev/wsem", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, ro);
	strcpy(o.name, name);
	ASSERT_EQ(0, ioctl(ro, WSEM_IOC_OPEN, &o));
	EXPECT_EQ(-1, wsem_acquire_async(ro, 1));
	EXPECT_EQ(EBADF, errno);
	EXPECT_EQ(-1, ioctl(ro, WSEM_IOC_ASYNC, &flags));
	EXPECT_EQ(EBADF, errno);
	/* ... but it can wait for idle. */
	EXPECT_EQ(0, wsem_wait_idle(ro, 0));
	EXPECT_EQ(0, used(rw));
	EXPECT_EQ(0, close(ro));
	EXPECT_EQ(0, close(rw));
	EXPECT_EQ(0, wsem_unlink(name));
}

/* ---------------------------------------------------------------- */
/* Deadlines on clocks                                               */

static struct timespec ns_to_ts(int64_t ns)
{
	return (struct timespec){ .tv_sec = ns / NSEC, .tv_nsec = ns % NSEC };
}

/* Each clock's deadline ends the wait at that time, not before. */
TEST_F(async, deadline_on_each_clock)
{
	const clockid_t clocks[] = {
		CLOCK_MONOTONIC, CLOCK_BOOTTIME, CLOCK_REALTIME
	};
	struct timespec ts;
	int64_t end, t1;
	unsigned int i;

	ASSERT_EQ(0, wsem_acquire(self->fd, CAP));
	for (i = 0; i < ARRAY_SIZE(clocks); i++) {
		end = clock_ns(clocks[i]) + 100 * MSEC;
		ts = ns_to_ts(end);
		EXPECT_EQ(-1, wsem_acquire_clock(self->fd, 1, clocks[i], &ts));
		EXPECT_EQ(ETIMEDOUT, errno);
		t1 = clock_ns(clocks[i]);
		EXPECT_LE(end, t1) TH_LOG("clock %d", clocks[i]);
		EXPECT_GT(end + 5 * NSEC, t1) TH_LOG("clock %d", clocks[i]);
	}
	/* Past deadlines only take what is free right now. */
	ts = ns_to_ts(clock_ns(CLOCK_REALTIME) - NSEC);
	EXPECT_EQ(-1, wsem_acquire_clock(self->fd, 1, CLOCK_REALTIME, &ts));
	EXPECT_EQ(ETIMEDOUT, errno);
	ASSERT_EQ(0, wsem_release(self->fd, 1));
	EXPECT_EQ(0, wsem_acquire_clock(self->fd, 1, CLOCK_REALTIME, &ts));
	/* Bad clocks and times change nothing. */
	ts.tv_nsec = NSEC;
	EXPECT_EQ(-1, wsem_acquire_clock(self->fd, 1, CLOCK_MONOTONIC, &ts));
	EXPECT_EQ(EINVAL, errno);
	ts.tv_nsec = 0;
	EXPECT_EQ(-1, wsem_acquire_clock(self->fd, 1, CLOCK_TAI, &ts));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(CAP, used(self->fd));
	EXPECT_EQ(0, wait_waiters(self->fd, 0));
}

static atomic_int eintr_seen;

static void on_usr1(int sig)
{
	(void)sig;
}

struct storm {
	pthread_t target;
	atomic_bool stop;
};

static void *storm_main(void *arg)
{
	struct storm *s = arg;

	while (!atomic_load(&s->stop)) {
		pthread_kill(s->target, SIGUSR1);
		usleep(2000);
	}
	return NULL;
}

/*
 * A signal storm (a handler, no SA_RESTART): each EINTR is retried with
 * the same absolute deadline, and the last try ends at it, not later.
 */
TEST_F(async, retried_wait_keeps_its_deadline)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	struct storm s = { .target = pthread_self() };
	pthread_t storm;
	struct timespec ts;
	int64_t end, t1;
	int ret;

	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	ASSERT_EQ(0, wsem_acquire(self->fd, CAP));
	end = clock_ns(CLOCK_MONOTONIC) + 400 * MSEC;
	ts = ns_to_ts(end);
	ASSERT_EQ(0, pthread_create(&storm, NULL, storm_main, &s));
	atomic_store(&eintr_seen, 0);
	while ((ret = wsem_acquire_clock(self->fd, 1, CLOCK_MONOTONIC, &ts)) &&
	       errno == EINTR)
		atomic_fetch_add(&eintr_seen, 1);
	t1 = clock_ns(CLOCK_MONOTONIC);
	atomic_store(&s.stop, true);
	pthread_join(storm, NULL);
	EXPECT_EQ(-1, ret);
	EXPECT_EQ(ETIMEDOUT, errno);
	EXPECT_LT(3, atomic_load(&eintr_seen));
	EXPECT_LE(end, t1);
	EXPECT_GT(end + 2 * NSEC, t1);
	EXPECT_EQ(0, wait_waiters(self->fd, 0));
	signal(SIGUSR1, SIG_DFL);
}

struct clock_waiter {
	int fd;
	struct timespec ts;
	int ret, err;
	atomic_bool done;
};

static void *clock_waiter_main(void *arg)
{
	struct clock_waiter *w = arg;

	w->ret = wsem_acquire_clock(w->fd, 1, CLOCK_REALTIME, &w->ts);
	w->err = errno;
	atomic_store(&w->done, true);
	return NULL;
}

/* A CLOCK_REALTIME deadline follows the clock when it is set. */
TEST_F(async, realtime_deadline_follows_the_clock)
{
	struct clock_waiter w = { .fd = self->fd };
	struct timespec now;
	pthread_t t;
	int i;

	ASSERT_EQ(0, wsem_acquire(self->fd, CAP));
	w.ts = ns_to_ts(clock_ns(CLOCK_REALTIME) + 3600 * NSEC);
	ASSERT_EQ(0, pthread_create(&t, NULL, clock_waiter_main, &w));
	ASSERT_EQ(0, wait_waiters(self->fd, 1));
	clock_gettime(CLOCK_REALTIME, &now);
	now.tv_sec += 7200;
	if (clock_settime(CLOCK_REALTIME, &now)) {
		wsem_release(self->fd, CAP);
		pthread_join(t, NULL);
		SKIP(return, "clock_settime: %s", strerror(errno));
	}
	for (i = 0; i < 1000 && !atomic_load(&w.done); i++)
		usleep(10000);
	clock_gettime(CLOCK_REALTIME, &now);
	now.tv_sec -= 7200;
	EXPECT_EQ(0, clock_settime(CLOCK_REALTIME, &now));
	EXPECT_TRUE(atomic_load(&w.done));
	if (!atomic_load(&w.done))
		wsem_release(self->fd, CAP);
	pthread_join(t, NULL);
	EXPECT_EQ(-1, w.ret);
	EXPECT_EQ(ETIMEDOUT, w.err);
}

/*
 * In a time namespace whose CLOCK_MONOTONIC runs a day ahead, a timeout
 * is still a timeout: the kernel reads deadlines in the caller's clocks.
 */
TEST_F(async, deadline_in_a_time_namespace)
{
	int status, i;
	pid_t pid;

	if (unshare(CLONE_NEWTIME))
		SKIP(return, "unshare(CLONE_NEWTIME): %s", strerror(errno));
	ASSERT_EQ(0, write_file("/proc/self/timens_offsets",
				"monotonic 86400 0\nboottime 86400 0\n"));
	ASSERT_EQ(0, wsem_acquire(self->fd, CAP));
	pid = fork();		/* the child is in the new time namespace */
	ASSERT_LE(0, pid);
	if (!pid) {
		struct timespec ts;
		int64_t t0 = clock_ns(CLOCK_MONOTONIC);

		if (!wsem_acquire_timeout(self->fd, 1, 100 * MSEC) ||
		    errno != ETIMEDOUT)
			_exit(1);
		ts = ns_to_ts(clock_ns(CLOCK_BOOTTIME) + 100 * MSEC);
		if (!wsem_acquire_clock(self->fd, 1, CLOCK_BOOTTIME, &ts) ||
		    errno != ETIMEDOUT)
			_exit(2);
		/* ... and not before the deadline either. */
		_exit(clock_ns(CLOCK_MONOTONIC) - t0 < 200 * MSEC ? 3 : 0);
	}
	for (i = 0; i < 1000 && !waitpid(pid, &status, WNOHANG); i++)
		usleep(10000);
	if (i == 1000) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	ASSERT_TRUE(WIFEXITED(status)) TH_LOG("the wait did not end");
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/* ---------------------------------------------------------------- */
/* Idle                                                              */

struct idler {
	int fd;
	int ret, err;
	atomic_bool *gone;	/* the last holder has left */
	bool gone_then;		/* ... as the idle wait returned */
	atomic_bool done;
};

static void *idler_main(void *arg)
{
	struct idler *w = arg;

	w->ret = wsem_wait_idle(w->fd, -1);
	w->err = errno;
	w->gone_then = atomic_load(w->gone);
	atomic_store(&w->done, true);
	return NULL;
}

/*
 * The idle wait returns when the last holder leaves, and not while any
 * weight is held or anyone waits, even as holders come and go.
 */
TEST_F(async, idle_wakes_when_the_last_holder_leaves)
{
	atomic_bool gone = false;
	struct idler w = { .gone = &gone };
	struct blocker b = { 0 };
	int h2 = wsem_reopen(self->fd, 0);
	pthread_t t;

	ASSERT_LE(0, h2);
	w.fd = wsem_reopen(self->fd, 0);
	ASSERT_LE(0, w.fd);
	ASSERT_EQ(0, wsem_acquire(self->fd, 1));
	ASSERT_EQ(0, wsem_acquire(h2, 1));
	ASSERT_EQ(0, blocker_start(&b, self->fd, CAP));
	ASSERT_EQ(0, wait_waiters(self->fd, 1));
	ASSERT_EQ(0, pthread_create(&t, NULL, idler_main, &w));

	/* One holder leaves; then the other, and the waiter takes it all. */
	ASSERT_EQ(0, wsem_release(self->fd, 1));
	ASSERT_EQ(0, wsem_release(h2, 1));
	pthread_join(b.thread, NULL);
	ASSERT_EQ(0, b.ret);
	EXPECT_EQ(CAP, used(self->fd));
	usleep(50000);
	EXPECT_FALSE(atomic_load(&w.done));
	/* The last holder leaves. */
	atomic_store(&gone, true);
	EXPECT_EQ(0, close(b.fd));
	pthread_join(t, NULL);
	EXPECT_EQ(0, w.ret);
	EXPECT_TRUE(w.gone_then);
	EXPECT_EQ(0, close(w.fd));
	EXPECT_EQ(0, close(h2));
}

/* Waiting on a handle that holds weight or has a request would never end. */
TEST_F(async, idle_wait_refuses_its_own_weight)
{
	int a = wsem_reopen(self->fd, 0);

	ASSERT_LE(0, a);
	EXPECT_EQ(0, wsem_wait_idle(self->fd, 0));
	ASSERT_EQ(0, wsem_acquire(self->fd, CAP));
	EXPECT_EQ(-1, wsem_wait_idle(self->fd, -1));
	EXPECT_EQ(EDEADLK, errno);
	ASSERT_EQ(-1, wsem_acquire_async(a, 1));
	EXPECT_EQ(-1, wsem_wait_idle(a, -1));
	EXPECT_EQ(EDEADLK, errno);
	EXPECT_EQ(0, close(a));
	/* Busy: a timeout of 0 only looks. */
	a = wsem_reopen(self->fd, 0);
	ASSERT_LE(0, a);
	EXPECT_EQ(-1, wsem_wait_idle(a, 0));
	EXPECT_EQ(ETIMEDOUT, errno);
	EXPECT_EQ(0, close(a));
}

/*
 * EPOLLPRI: set exactly while idle, and an epoll entry that asks for
 * nothing else hears the change.
 */
TEST_F(async, idle_by_poll)
{
	struct epoll_event ev = { .events = EPOLLPRI };
	int w = wsem_reopen(self->fd, 0), ep = epoll_create1(EPOLL_CLOEXEC);

	ASSERT_LE(0, w);
	ASSERT_LE(0, ep);
	EXPECT_EQ(POLLPRI, poll_for(w, POLLPRI, 0));
	ASSERT_EQ(0, wsem_acquire(self->fd, 1));
	EXPECT_EQ(0, poll_for(w, POLLPRI, 0));
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, w, &ev));
	EXPECT_EQ(0, epoll_wait(ep, &ev, 1, 0));
	ASSERT_EQ(0, wsem_release(self->fd, 1));
	ASSERT_EQ(1, epoll_wait(ep, &ev, 1, 10000));
	EXPECT_EQ(EPOLLPRI, ev.events & EPOLLPRI);
	EXPECT_EQ(POLLPRI, poll_for(w, POLLPRI, 0));
	EXPECT_EQ(0, close(ep));
	EXPECT_EQ(0, close(w));
}

/* The idle herd: a sleeper of each kind, and whether it was woken. */
struct sleeper {
	pthread_t thread;
	int fd;
	bool by_poll;		/* poll(2) for POLLPRI, not wsem_wait_idle() */
	atomic_int tid;
	int ret;
};

static void *sleeper_main(void *arg)
{
	struct sleeper *s = arg;
	struct pollfd p = { .fd = s->fd, .events = POLLPRI };

	atomic_store(&s->tid, gettid());
	if (s->by_poll)
		s->ret = poll(&p, 1, -1) == 1 ? 0 : -1;
	else
		s->ret = wsem_wait_idle(s->fd, -1);
	return NULL;
}

/*
 * Idle waiters and pollers of idle sleep through every release that
 * leaves the semaphore busy: they are woken when it comes to be idle, not
 * at each change (a herd of them made every release slow).
 */
TEST_F(async, idle_sleepers_sleep_through_busy_releases)
{
	struct sleeper sl[2] = { { .by_poll = false }, { .by_poll = true } };
	long long before[2];
	int keeper, i, n;
	pid_t tid;

	keeper = wsem_reopen(self->fd, 0);
	ASSERT_LE(0, keeper);
	ASSERT_EQ(0, wsem_acquire(keeper, 1));
	for (i = 0; i < 2; i++) {
		sl[i].fd = wsem_reopen(self->fd, 0);
		ASSERT_LE(0, sl[i].fd);
		ASSERT_EQ(0, pthread_create(&sl[i].thread, NULL, sleeper_main,
					    &sl[i]));
	}
	for (i = 0; i < 2; i++) {
		for (n = 0; n < 10000; n++) {
			tid = atomic_load(&sl[i].tid);
			if (tid && thread_sleeping(tid))
				break;
			usleep(1000);
		}
		ASSERT_TRUE(tid && thread_sleeping(tid));
		before[i] = nvcsw(tid);
	}
	/*
	 * The keeper's unit stays held: never idle.  Each pair is given
	 * time for a woken sleeper to go back to sleep, so that each release
	 * would find it there to wake.
	 */
	for (n = 0; n < 100; n++) {
		ASSERT_EQ(0, wsem_acquire(self->fd, 1));
		ASSERT_EQ(0, wsem_release(self->fd, 1));
		usleep(2000);
	}
	for (i = 0; i < 2; i++)
		EXPECT_GE(3, nvcsw(atomic_load(&sl[i].tid)) - before[i])
			TH_LOG("%s woken by releases that left it busy",
			       sl[i].by_poll ? "a poller" : "an idle waiter");
	/* Idle now: both wake. */
	EXPECT_EQ(0, close(keeper));
	for (i = 0; i < 2; i++) {
		pthread_join(sl[i].thread, NULL);
		EXPECT_EQ(0, sl[i].ret);
		EXPECT_EQ(0, close(sl[i].fd));
	}
}

/* ---------------------------------------------------------------- */
/* The granter's window: between dropping the lock and telling      */

/* The knob of a test build of wsem.ko (make check builds one). */
#define TELL_DELAY	"/sys/module/wsem/parameters/test_tell_delay_ms"

/* A release of 1 in a thread, and whether it has returned. */
struct releaser {
	pthread_t thread;
	int fd;
	int ret;
	atomic_bool done;
};

static void *releaser_main(void *arg)
{
	struct releaser *r = arg;

	r->ret = wsem_release(r->fd, 1);
	atomic_store(&r->done, true);
	return NULL;
}

/*
 * @fd takes the whole capacity, @req queues a request for 1, and a thread
 * releases 1 of @fd's with the granter's pause armed for @ms: back once
 * the grant is published (a poll with no timeout sees the request ended),
 * the granter still in its pause, before it wakes @req's pollers.
 * 0, or -1.
 */
static int grant_and_pause(int fd, int req, struct releaser *r, int ms)
{
	int64_t end = now_ns() + 10 * NSEC;
	char val[16];

	if (wsem_acquire(fd, CAP) ||
	    wsem_acquire_async(req, 1) != -1 || errno != EINPROGRESS)
		return -1;
	snprintf(val, sizeof(val), "%d", ms);
	if (write_file(TELL_DELAY, val))
		return -1;
	r->fd = fd;
	atomic_store(&r->done, false);
	if (pthread_create(&r->thread, NULL, releaser_main, r))
		return -1;
	while (!(poll_for(req, POLLIN, 0) & POLLIN))
		if (now_ns() > end || usleep(1000))
			return -1;
	return 0;
}

/*
 * A handle closed while its request's grant is being told: the granter
 * holds the handle until it has woken its pollers (this was a
 * use-after-free), and the granted weight goes back at the close.
 */
TEST_F(async, close_while_the_grant_is_told)
{
	struct releaser r;
	int req;

	if (access(TELL_DELAY, F_OK))
		SKIP(return, "not a test build of wsem.ko (no %s)", TELL_DELAY);
	req = wsem_reopen(self->fd, 0);
	ASSERT_LE(0, req);
	ASSERT_EQ(0, grant_and_pause(self->fd, req, &r, 500));
	ASSERT_EQ(0, close(req));
	EXPECT_FALSE(atomic_load(&r.done));
	pthread_join(r.thread, NULL);
	EXPECT_EQ(0, r.ret);
	EXPECT_EQ(CAP - 1, used(self->fd));
	EXPECT_EQ(0, wsem_release(self->fd, CAP - 1));
	EXPECT_EQ(0, used(self->fd));
}

/* Another thread's look at @req's request, and its answer. */
struct looker {
	pthread_t thread;
	int fd;
	int ret, err;
};

static void *looker_main(void *arg)
{
	struct looker *l = arg;

	l->ret = wsem_acquire_result(l->fd);
	l->err = errno;
	return NULL;
}

/*
 * A published grant is final: collecting it waits for nothing, not for
 * the granter that has yet to wake the pollers, and a new request made on
 * the handle meanwhile is only that (a collector that slept until the old
 * grant was told could sleep on through the new request, unkillably).
 */
TEST_F(async, collecting_never_waits_for_the_granter)
{
	struct looker l = { 0 };
	struct releaser r;
	int64_t t0;
	int req;

	if (access(TELL_DELAY, F_OK))
		SKIP(return, "not a test build of wsem.ko (no %s)", TELL_DELAY);
	req = wsem_reopen(self->fd, 0);
	ASSERT_LE(0, req);
	ASSERT_EQ(0, grant_and_pause(self->fd, req, &r, 3000));
	t0 = now_ns();
	EXPECT_EQ(0, wsem_acquire_result(req));
	EXPECT_GT(NSEC, now_ns() - t0);
	EXPECT_EQ(1, held(req));
	/* A new request, queued behind a full semaphore. */
	ASSERT_EQ(0, wsem_release(req, 1));
	ASSERT_EQ(0, wsem_acquire(self->fd, 1));
	ASSERT_EQ(-1, wsem_acquire_async(req, 1));
	ASSERT_EQ(EINPROGRESS, errno);
	l.fd = req;
	ASSERT_EQ(0, pthread_create(&l.thread, NULL, looker_main, &l));
	pthread_join(l.thread, NULL);
	EXPECT_EQ(-1, l.ret);
	EXPECT_EQ(EINPROGRESS, l.err);
	EXPECT_FALSE(atomic_load(&r.done));
	EXPECT_EQ(0, wsem_acquire_cancel(req));
	pthread_join(r.thread, NULL);
	EXPECT_EQ(0, r.ret);
	EXPECT_EQ(0, wsem_release(self->fd, CAP));
	EXPECT_EQ(0, close(req));
	EXPECT_EQ(0, used(self->fd));
}

TEST_HARNESS_MAIN
