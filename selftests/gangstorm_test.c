// SPDX-License-Identifier: GPL-2.0
/*
 * Gangs at random (issue 31): GANGS random gang requests over 8 semaphores
 * (three trees and two plain ones), from worker processes that are killed
 * and signalled at random, with timeouts, resizes and loans at random.
 *
 *  - no deadlock: every worker's requests end (granted, timed out,
 *    interrupted, or failed by a shrink) and the storm finishes;
 *  - a gang never holds part of what it asked: right after a grant, each
 *    of its handles holds exactly its part;
 *  - capacity: while nothing shrinks (the storm's quiet phases), no
 *    semaphore's used weight exceeds its capacity, sampled at every grant;
 *  - nothing is lost: at the end, with every worker and lender gone,
 *    every semaphore has used 0, no waiter, and its own capacity.
 *
 * Task work comes at random too: each worker polls an eventfd of its own
 * through an io_uring, and the controller's write completes the poll as
 * task work, which parks a waiting gang in its place (and may meet a
 * SIGKILL while it is parked).
 *
 * GANGS is 10,000 (WSEM_GANGSTORM_GANGS sets it; the debug lane runs
 * fewer).  Each worker reopens handles of its own: weight belongs to the
 * handle, so a killed worker's weight must come back by its handles'
 * close.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <wsem.h>

#include "kselftest_harness.h"
#include "util.h"
#include "ring.h"

#define NSEMS		8
#define WORKERS		6
#define GANGS		10000
#define MSEC		1000000LL

/* What the workers and the controller share. */
struct storm {
	atomic_ullong done;		/* requests ended, all outcomes */
	atomic_ullong granted;
	atomic_ullong parted;		/* grants with a part missing */
	atomic_ullong over;		/* capacity exceeded while quiet */
	atomic_ullong bad;		/* an errno nothing explains */
	atomic_int quiet;		/* no shrink since this was set */
	atomic_ullong shrinks;		/* bumped before each shrink */
};

/* The trees: parent index or -1, and own capacity. */
static const int parent_of[NSEMS] = { -1, 0, 1, -1, 3, 3, -1, -1 };
static const uint64_t cap_of[NSEMS] = { 8, 5, 3, 6, 4, 4, 3, 2 };

static void on_usr1(int sig)
{
	(void)sig;
}

/*
 * Arm @ring's poll of @efd again once the last one completed (the
 * controller wrote): its count read back, the completion reaped.
 */
static void rearm(struct ring *ring, int efd, bool armed)
{
	uint64_t v;

	if (armed && ring_unreaped(ring) == 0)
		return;
	if (armed && read(efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		_exit(3);
	ring_reap(ring);
	if (ring_poll_add(ring, efd))
		_exit(3);
}

/*
 * One worker: random gangs until @s->done reaches @gangs, with task work
 * when the controller writes @efd (io_uring unavailable: none).
 */
static void worker(struct storm *s, const int *sems, uint64_t gangs,
		   unsigned int seed, int efd)
{
	struct rng r = { .s = seed * 2654435761u + 1 };
	struct sigaction sa = { .sa_handler = on_usr1 };
	int fds[NSEMS], pick[NSEMS], i;
	struct ring ring;
	bool uring;
	struct wsem_stat st;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	for (i = 0; i < NSEMS; i++) {
		fds[i] = wsem_reopen(sems[i], 0);
		if (fds[i] < 0)
			_exit(2);
	}
	uring = !ring_setup(&ring);
	if (uring)
		rearm(&ring, efd, false);
	while (atomic_load(&s->done) < gangs) {
		int use[WSEM_MANY_MAX];
		uint64_t w[WSEM_MANY_MAX];
		unsigned long long shrinks = atomic_load(&s->shrinks);
		int quiet = atomic_load(&s->quiet);
		size_t n = 1 + below(&r, 4), k;
		int64_t timeout;
		int ret, err;

		for (i = 0; i < NSEMS; i++)
			pick[i] = i;
		for (k = 0; k < n; k++) {
			int j = k + below(&r, NSEMS - k), t;

			t = pick[k];
			pick[k] = pick[j];
			pick[j] = t;
			use[k] = fds[pick[k]];
			w[k] = 1 + below(&r, 2);
		}
		/* A try, a wait for ever (until a signal), or 1..50 ms. */
		switch (below(&r, 10)) {
		case 0:
			timeout = 0;
			break;
		case 1:
			timeout = -1;
			break;
		default:
			timeout = (1 + (int64_t)below(&r, 50)) * MSEC;
		}
		ret = wsem_acquire_many(use, w, n, timeout);
		err = errno;
		atomic_fetch_add(&s->done, 1);
		if (uring)
			rearm(&ring, efd, true);
		if (ret) {
			if (err != EAGAIN && err != ETIMEDOUT && err != EINTR &&
			    err != EINVAL)
				atomic_fetch_add(&s->bad, 1);
			continue;
		}
		atomic_fetch_add(&s->granted, 1);
		for (k = 0; k < n; k++) {
			if (wsem_stat(use[k], &st) || st.held != w[k])
				atomic_fetch_add(&s->parted, 1);
			if (quiet && atomic_load(&s->quiet) &&
			    atomic_load(&s->shrinks) == shrinks &&
			    st.used > st.capacity)
				atomic_fetch_add(&s->over, 1);
		}
		if (chance(&r, 50))
			usleep(below(&r, 2000));
		for (k = 0; k < n; k++)
			wsem_release(use[k], w[k]);
	}
	_exit(0);
}

/* A lender: lends @cap to @sem until it is killed. */
static pid_t lender(int sem, uint64_t cap)
{
	pid_t pid = fork();

	if (pid)
		return pid;
	{
		struct wsem_lend_args a = { .size = sizeof(a), .capacity = cap };
		int fd = wsem_reopen(sem, 0);

		if (fd < 0 || ioctl(fd, WSEM_IOC_LEND, &a))
			_exit(2);
		for (;;)
			pause();
	}
}

TEST(ten_thousand_gangs)
{
	uint64_t gangs = env_u64("WSEM_GANGSTORM_GANGS", GANGS);
	struct rng r = { .s = (uint64_t)getpid() };
	pid_t workers[WORKERS], lenders[2] = { 0, 0 };
	int efds[WORKERS];
	int sems[NSEMS], i, status, round = 0;
	int64_t end = now_ns() + 600 * NSEC;
	unsigned long long last = 0;
	struct wsem_stat st;
	struct storm *s;

	if (access("/dev/wsem", F_OK))
		SKIP(return, "/dev/wsem is missing (module not loaded)");
	s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, s);
	memset(s, 0, sizeof(*s));
	for (i = 0; i < NSEMS; i++) {
		sems[i] = parent_of[i] < 0 ?
			  wsem_open_anon(cap_of[i], 0) :
			  wsem_open_child(sems[parent_of[i]], NULL, 0, 0,
					  cap_of[i]);
		ASSERT_LE(0, sems[i]);
	}
	for (i = 0; i < WORKERS; i++) {
		efds[i] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		ASSERT_LE(0, efds[i]);
		workers[i] = fork();
		ASSERT_LE(0, workers[i]);
		if (!workers[i])
			worker(s, sems, gangs, getpid(), efds[i]);
	}

	/* The storm: every 20 ms something happens to someone. */
	while (atomic_load(&s->done) < gangs && now_ns() < end) {
		int v = below(&r, WORKERS), t = below(&r, NSEMS);

		usleep(20 * 1000);
		round++;
		/* Task work for someone, each round. */
		(void)!write(efds[below(&r, WORKERS)], &(uint64_t){ 1 }, 8);
		switch (below(&r, 6)) {
		case 0:		/* a worker dies, another takes its place */
			kill(workers[v], SIGKILL);
			waitpid(workers[v], &status, 0);
			workers[v] = fork();
			ASSERT_LE(0, workers[v]);
			if (!workers[v])
				worker(s, sems, gangs, getpid() + round,
				       efds[v]);
			break;
		case 1:		/* a signal */
			kill(workers[v], SIGUSR1);
			break;
		case 2:		/* a shrink, then the capacity back */
			atomic_store(&s->quiet, 0);
			atomic_fetch_add(&s->shrinks, 1);
			wsem_set_capacity(sems[t], 1);
			usleep(2000);
			wsem_set_capacity(sems[t], cap_of[t]);
			break;
		case 3:		/* a loan, or its lender killed */
			if (lenders[t % 2]) {
				atomic_store(&s->quiet, 0);
				atomic_fetch_add(&s->shrinks, 1);
				kill(lenders[t % 2], SIGKILL);
				waitpid(lenders[t % 2], &status, 0);
				lenders[t % 2] = 0;
			} else {
				lenders[t % 2] = lender(sems[t], 2);
				ASSERT_LE(0, lenders[t % 2]);
			}
			break;
		default:	/* quiet: the capacity check counts */
			atomic_fetch_add(&s->shrinks, 1);
			atomic_store(&s->quiet, 1);
		}
		/* Progress, or a deadlock: something ends every 10 s. */
		if (round % 500 == 0) {
			ASSERT_NE(last, atomic_load(&s->done));
			last = atomic_load(&s->done);
		}
	}
	for (i = 0; i < WORKERS; i++) {
		kill(workers[i], SIGKILL);
		waitpid(workers[i], &status, 0);
	}
	for (i = 0; i < 2; i++) {
		if (lenders[i]) {
			kill(lenders[i], SIGKILL);
			waitpid(lenders[i], &status, 0);
		}
	}
	TH_LOG("%llu requests, %llu granted, %d rounds",
	       (unsigned long long)atomic_load(&s->done),
	       (unsigned long long)atomic_load(&s->granted), round);
	EXPECT_LE(gangs, atomic_load(&s->done));
	EXPECT_LT(0, atomic_load(&s->granted));
	EXPECT_EQ(0, atomic_load(&s->parted));
	EXPECT_EQ(0, atomic_load(&s->over));
	EXPECT_EQ(0, atomic_load(&s->bad));
	for (i = 0; i < NSEMS; i++) {
		ASSERT_EQ(0, wsem_stat(sems[i], &st));
		EXPECT_EQ(0, st.used);
		EXPECT_EQ(0, st.waiters);
		EXPECT_EQ(0, st.lent);
		EXPECT_EQ(cap_of[i], st.capacity);
	}
	for (i = NSEMS - 1; i >= 0; i--)
		close(sems[i]);
	munmap(s, sizeof(*s));
}

TEST_HARNESS_MAIN
