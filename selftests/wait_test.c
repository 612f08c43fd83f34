// SPDX-License-Identifier: GPL-2.0
/*
 * Waiting: signals, stop/continue, the cgroup freezer, suspend, timeouts and
 * threads (SPEC.md "Waiting").
 *
 * Every test owns a named semaphore of capacity CAP.  The test process holds
 * weight through its own handle so that waiters queue; each waiter is a
 * forked child with its own handle that makes one acquire call, reports the
 * outcome on a pipe and then stays alive (pause) until the teardown kills it,
 * so a change in the queue is never explained by the waiter exiting.
 * Queueing is observed with wsem_stat().waiters, never with sleeps.
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
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/magic.h>
#include <wsem.h>

#include "kselftest_harness.h"
#include "util.h"

#define CAP		4		/* capacity of every test's semaphore */
#define MAX_KIDS	4		/* waiter processes per test */
#define MSEC		1000000LL
#define REPORT_WAIT_MS	10000		/* bound for a waiter to report */
#define RACE_LOOPS	300
#define THREADS		3
#define CGROUP_ROOT	"/sys/fs/cgroup"
#define SUSPEND_S	5	/* a suspend to RAM, past ... */
#define CLOCK_DEADLINE_S 3	/* ... the waiters' deadlines, set just before */

/* What a waiter child does. */
struct waiter_args {
	uint64_t weight;	/* weight to acquire */
	int64_t timeout_ns;	/* < 0: wsem_acquire(), else the timeout */
	int sa_flags;		/* SIGUSR1 handler flags; -1: no handler */
	bool on_clock;		/* wsem_acquire_clock() instead, until ... */
	clockid_t clock;	/* ... this clock ... */
	int64_t deadline_ns;	/* ... reads this (then timeout_ns is unused) */
};

/* What a waiter child reports once its acquire call has returned. */
struct waiter_result {
	int setup_err;		/* errno of a failed sigaction/open, or 0 */
	int ret;		/* return value of the acquire call */
	int err;		/* errno right after it */
	int stat_ret;		/* return value of wsem_stat() on its handle */
	int64_t elapsed_ns;	/* how long the acquire call took */
	int64_t end_ns;		/* CLOCK_MONOTONIC when it returned */
	struct wsem_stat st;	/* its handle right after the call */
};

FIXTURE(wait) {
	/* this test's semaphore: "wait.<test>.<pid>" */
	char name[WSEM_NAME_MAX];
	/* the test's handle, created with capacity CAP */
	int fd;
	/* waiter children still to be killed and reaped, 0 if none */
	pid_t kids[MAX_KIDS];
	/* read end of the pipe each waiter reports on, 0 if none */
	int res[MAX_KIDS];
	/* setup done: false after a SKIP, so body and teardown do nothing */
	bool ready;
	/* a cgroup the test made, removed by the teardown; "" if none */
	char cgroup[64];
};

static void on_signal(int sig)
{
	(void)sig;
}

static void __attribute__((noreturn))
waiter_main(const char *name, int out, const struct waiter_args *wa)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct waiter_result r;
	int64_t t0;
	int fd = -1;

	memset(&r, 0, sizeof(r));
	if (wa->sa_flags >= 0) {
		sa.sa_flags = wa->sa_flags;
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGUSR1, &sa, NULL))
			r.setup_err = errno;
	}
	if (!r.setup_err) {
		fd = wsem_open(name, 0, 0, 0);
		if (fd < 0)
			r.setup_err = errno;
	}
	if (!r.setup_err) {
		struct timespec abs = {
			.tv_sec = wa->deadline_ns / NSEC,
			.tv_nsec = wa->deadline_ns % NSEC,
		};

		t0 = now_ns();
		if (wa->on_clock)
			r.ret = wsem_acquire_clock(fd, wa->weight, wa->clock,
						   &abs);
		else if (wa->timeout_ns < 0)
			r.ret = wsem_acquire(fd, wa->weight);
		else
			r.ret = wsem_acquire_timeout(fd, wa->weight,
						     wa->timeout_ns);
		r.err = errno;
		r.end_ns = now_ns();
		r.elapsed_ns = r.end_ns - t0;
		r.stat_ret = wsem_stat(fd, &r.st);
	}
	if (write(out, &r, sizeof(r)) != sizeof(r))
		_exit(1);
	for (;;)
		pause();
}

/* Fork waiter @slot; it opens its own handle on the test's semaphore. */
static pid_t spawn_waiter(FIXTURE_DATA(wait) *self, int slot,
			  const struct waiter_args *wa)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		/* Do not share the test's handle (and its weight). */
		close(self->fd);
		close(p[0]);
		waiter_main(self->name, p[1], wa);
	}
	close(p[1]);
	self->kids[slot] = pid;
	self->res[slot] = p[0];
	return pid;
}

/* Read waiter @slot's report; -1 if it is still blocked after the bound. */
static int read_result(FIXTURE_DATA(wait) *self, int slot,
		       struct waiter_result *r)
{
	struct pollfd pfd = { .fd = self->res[slot], .events = POLLIN };

	if (poll(&pfd, 1, REPORT_WAIT_MS) != 1)
		return -1;
	if (read(self->res[slot], r, sizeof(*r)) != sizeof(*r))
		return -1;
	return 0;
}

/* 0 if waiter @slot has not reported anything yet. */
static int still_waiting(FIXTURE_DATA(wait) *self, int slot)
{
	struct pollfd pfd = { .fd = self->res[slot], .events = POLLIN };

	return poll(&pfd, 1, 0);
}

FIXTURE_SETUP(wait)
{
	if (access("/dev/wsem", F_OK))
		SKIP(return, "/dev/wsem is missing (module not loaded)");
	snprintf(self->name, sizeof(self->name), "wait.%s.%d",
		 _metadata->name, getpid());
	self->fd = wsem_open(self->name, O_CREAT | O_EXCL | O_CLOEXEC,
			     0600, CAP);
	ASSERT_LE(0, self->fd) {
		TH_LOG("create %s: %s", self->name, strerror(errno));
	}
	self->ready = true;
}

FIXTURE_TEARDOWN(wait)
{
	int i;

	if (!self->ready)
		return;
	for (i = 0; i < MAX_KIDS; i++) {
		if (self->kids[i] > 0) {
			kill(self->kids[i], SIGKILL);
			waitpid(self->kids[i], NULL, 0);
		}
		if (self->res[i] > 0)
			EXPECT_EQ(0, close(self->res[i]));
	}
	EXPECT_EQ(0, close(self->fd));
	EXPECT_EQ(0, wsem_unlink(self->name));
	if (self->cgroup[0])
		EXPECT_EQ(0, rmdir(self->cgroup));
}

/* A signal with a handler ends a wait with EINTR and nothing held. */
TEST_F(wait, signal_ends_wait_with_eintr)
{
	struct waiter_args wa = { .weight = 1, .timeout_ns = -1, .sa_flags = 0 };
	struct waiter_result r;

	if (!self->ready)
		return;
	ASSERT_EQ(0, wsem_acquire(self->fd, CAP));
	ASSERT_LT(0, spawn_waiter(self, 0, &wa));
	ASSERT_EQ(0, wait_waiters(self->fd, 1));
	ASSERT_EQ(0, kill(self->kids[0], SIGUSR1));
	ASSERT_EQ(0, read_result(self, 0, &r)) {
		TH_LOG("the waiter was not woken by the signal");
	}
	ASSERT_EQ(0, r.setup_err);
	EXPECT_EQ(-1, r.ret);
	EXPECT_EQ(EINTR, r.err);
	ASSERT_EQ(0, r.stat_ret);
	EXPECT_EQ(0, r.st.held);
}

/*
 * The interrupted waiter leaves the queue at once (its process still
 * lives), and weight released afterwards is not handed to it.
 */
TEST_F(wait, signal_removes_waiter_from_queue)
{
	struct waiter_args wa = { .weight = 2, .timeout_ns = -1, .sa_flags = 0 };
	struct waiter_result r;
	struct wsem_stat st;

	if (!self->ready)
		return;
	ASSERT_EQ(0, wsem_acquire(self->fd, CAP));
	ASSERT_LT(0, spawn_waiter(self, 0, &wa));
	ASSERT_EQ(0, wait_waiters(self->fd, 1));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(2, st.queued_weight);
	ASSERT_EQ(0, kill(self->kids[0], SIGUSR1));
	ASSERT_EQ(0, read_result(self, 0, &r));
	ASSERT_EQ(EINTR, r.err);

	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(0, st.waiters);
	EXPECT_EQ(0, st.queued_weight);
	EXPECT_EQ(CAP, st.used);
	ASSERT_EQ(0, wsem_release(self->fd, CAP));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(0, st.used);
	EXPECT_EQ(CAP, st.available);
}

/* SA_RESTART does not restart the wait: it still ends with EINTR. */
TEST_F(wait, sa_restart_still_eintr)
{
	struct waiter_args wa = {
		.weight = 1, .timeout_ns = -1, .sa_flags = SA_RESTART,
	};
	struct waiter_result r;
	struct wsem_stat st;

	if (!self->ready)
		return;
	ASSERT_EQ(0, wsem_acquire(self->fd, CAP));
	ASSERT_LT(0, spawn_waiter(self, 0, &wa));
	ASSERT_EQ(0, wait_waiters(self->fd, 1));
	ASSERT_EQ(0, kill(self->kids[0], SIGUSR1));
	ASSERT_EQ(0, read_result(self, 0, &r)) {
		TH_LOG("the wait was restarted after an SA_RESTART handler");
	}
	ASSERT_EQ(0, r.setup_err);
	EXPECT_EQ(-1, r.ret);
	EXPECT_EQ(EINTR, r.err);
	EXPECT_EQ(0, r.st.held);
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(0, st.waiters);
}

/*
 * Head-of-line: the head wants all of CAP, 1 is free, a waiter for 1 queues
 * behind it.  When the head leaves by signal, the one behind is granted
 * without anyone releasing anything.
 */
TEST_F(wait, head_signal_grants_followers)
{
	struct waiter_args head = { .weight = CAP, .timeout_ns = -1,
				    .sa_flags = 0 };
	struct waiter_args next = { .weight = 1, .timeout_ns = -1,
				    .sa_flags = -1 };
	struct waiter_result r;
	struct wsem_stat st;

	if (!self->ready)
		return;
	ASSERT_EQ(0, wsem_acquire(self->fd, CAP - 1));
	ASSERT_LT(0, spawn_waiter(self, 0, &head));
	ASSERT_EQ(0, wait_waiters(self->fd, 1));
	ASSERT_LT(0, spawn_waiter(self, 1, &next));
	ASSERT_EQ(0, wait_waiters(self->fd, 2));
	EXPECT_EQ(0, still_waiting(self, 1)) {
		TH_LOG("the second waiter overtook the head");
	}

	ASSERT_EQ(0, kill(self->kids[0], SIGUSR1));
	ASSERT_EQ(0, read_result(self, 0, &r));
	EXPECT_EQ(EINTR, r.err);
	ASSERT_EQ(0, read_result(self, 1, &r)) {
		TH_LOG("the follower was not granted when the head left");
	}
	ASSERT_EQ(0, r.setup_err);
	EXPECT_EQ(0, r.ret);
	EXPECT_EQ(1, r.st.held);
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(CAP, st.used);
	EXPECT_EQ(0, st.waiters);
}

/* As above, but the head leaves because its timeout expires. */
TEST_F(wait, head_timeout_grants_followers)
{
	struct waiter_args head = { .weight = CAP, .timeout_ns = 2 * NSEC,
				    .sa_flags = -1 };
	struct waiter_args next = { .weight = 1, .timeout_ns = -1,
				    .sa_flags = -1 };
	struct waiter_result r;
	struct wsem_stat st;

	if (!self->ready)
		return;
	ASSERT_EQ(0, wsem_acquire(self->fd, CAP - 1));
	ASSERT_LT(0, spawn_waiter(self, 0, &head));
	ASSERT_EQ(0, wait_waiters(self->fd, 1));
	ASSERT_LT(0, spawn_waiter(self, 1, &next));
	/* Both must be queued before the head's 2 s run out. */
	ASSERT_EQ(0, wait_waiters(self->fd, 2));

	ASSERT_EQ(0, read_result(self, 0, &r));
	EXPECT_EQ(-1, r.ret);
	EXPECT_EQ(ETIMEDOUT, r.err);
	ASSERT_EQ(0, read_result(self, 1, &r)) {
		TH_LOG("the follower was not granted when the head timed out");
	}
	ASSERT_EQ(0, r.setup_err);
	EXPECT_EQ(0, r.ret);
	EXPECT_EQ(1, r.st.held);
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(CAP, st.used);
	EXPECT_EQ(0, st.waiters);
}

/* Stopping and continuing a waiter never gives EINTR; it is still granted. */
TEST_F(wait, stop_cont_is_not_eintr)
{
	struct waiter_args wa = { .weight = 1, .timeout_ns = -1,
				  .sa_flags = -1 };
	struct waiter_result r;
	int i, status;

	if (!self->ready)
		return;
	ASSERT_EQ(0, wsem_acquire(self->fd, CAP));
	ASSERT_LT(0, spawn_waiter(self, 0, &wa));
	ASSERT_EQ(0, wait_waiters(self->fd, 1));
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, kill(self->kids[0], SIGSTOP));
		ASSERT_EQ(self->kids[0],
			  waitpid(self->kids[0], &status, WUNTRACED));
		ASSERT_TRUE(WIFSTOPPED(status));
		ASSERT_EQ(0, kill(self->kids[0], SIGCONT));
		ASSERT_EQ(self->kids[0],
			  waitpid(self->kids[0], &status, WCONTINUED));
		ASSERT_TRUE(WIFCONTINUED(status));
		/* It may have gone to the tail: wait until it is back. */
		ASSERT_EQ(0, wait_waiters(self->fd, 1));
		EXPECT_EQ(0, still_waiting(self, 0)) {
			TH_LOG("the stopped waiter returned early");
		}
	}
	ASSERT_EQ(0, wsem_release(self->fd, 1));
	ASSERT_EQ(0, read_result(self, 0, &r)) {
		TH_LOG("the continued waiter was never granted");
	}
	ASSERT_EQ(0, r.setup_err);
	EXPECT_EQ(0, r.ret);
	EXPECT_NE(EINTR, r.err);
	EXPECT_EQ(1, r.st.held);
}

/*
 * A stop does not extend a timeout: the deadline stays where the call put
 * it.  Timeout 3 s, stopped for 2 s from the start: the call ends at about
 * 3 s; a wait restarted with a fresh timeout would end after 5 s.
 */
TEST_F(wait, stop_cont_keeps_deadline)
{
	struct waiter_args wa = { .weight = 1, .timeout_ns = 3 * NSEC,
				  .sa_flags = -1 };
	struct timespec stop_for = { .tv_sec = 2 };
	struct waiter_result r;
	int status;

	if (!self->ready)
		return;
	ASSERT_EQ(0, wsem_acquire(self->fd, CAP));
	ASSERT_LT(0, spawn_waiter(self, 0, &wa));
	ASSERT_EQ(0, wait_waiters(self->fd, 1));
	ASSERT_EQ(0, kill(self->kids[0], SIGSTOP));
	ASSERT_EQ(self->kids[0], waitpid(self->kids[0], &status, WUNTRACED));
	ASSERT_TRUE(WIFSTOPPED(status));
	ASSERT_EQ(0, nanosleep(&stop_for, NULL));
	ASSERT_EQ(0, kill(self->kids[0], SIGCONT));

	ASSERT_EQ(0, read_result(self, 0, &r));
	ASSERT_EQ(0, r.setup_err);
	EXPECT_EQ(-1, r.ret);
	EXPECT_EQ(ETIMEDOUT, r.err);
	EXPECT_EQ(0, r.st.held);
	/* Never before the deadline (a few ms for clock granularity)... */
	EXPECT_LE(3 * NSEC - 20 * MSEC, r.elapsed_ns);
	/* ...and nowhere near deadline + stop time. */
	EXPECT_GT(4 * NSEC + 500 * MSEC, r.elapsed_ns);
}

/* A file of cgroup @dir: "@dir/@file" in @buf. */
static const char *cg_file(char *buf, size_t len, const char *dir,
			   const char *file)
{
	snprintf(buf, len, "%s/%s", dir, file);
	return buf;
}

/* cgroup @dir's "frozen" (cgroup.events) becomes @frozen within 10 s. */
static int cg_wait_frozen(const char *dir, int frozen)
{
	char path[96], events[256], want[16];
	int i;

	snprintf(want, sizeof(want), "frozen %d", frozen);
	cg_file(path, sizeof(path), dir, "cgroup.events");
	for (i = 0; i < 1000; i++) {
		if (read_file(path, events, sizeof(events)))
			return -1;
		if (strstr(events, want))
			return 0;
		usleep(10000);
	}
	errno = ETIMEDOUT;
	return -1;
}

/*
 * The cgroup freezer is not an interruption either (SPEC: "Stopping is not
 * an interruption"): a waiter in a cgroup frozen and thawed three times
 * goes on waiting, never sees EINTR, and is granted once weight comes back.
 */
TEST_F(wait, freezer_is_not_eintr)
{
	struct waiter_args wa = { .weight = 1, .timeout_ns = -1,
				  .sa_flags = -1 };
	struct waiter_result r;
	struct statfs fs;
	char path[96], pid[16];
	int i;

	if (!self->ready)
		return;
	if (statfs(CGROUP_ROOT, &fs) || fs.f_type != CGROUP2_SUPER_MAGIC ||
	    access(CGROUP_ROOT "/cgroup.procs", W_OK))
		SKIP(return, "no writable cgroup v2 hierarchy at " CGROUP_ROOT);
	snprintf(self->cgroup, sizeof(self->cgroup), CGROUP_ROOT "/wsem-wait.%d",
		 getpid());
	ASSERT_EQ(0, mkdir(self->cgroup, 0755)) {
		self->cgroup[0] = 0;
		TH_LOG("mkdir %s: %s", self->cgroup, strerror(errno));
	}
	if (access(cg_file(path, sizeof(path), self->cgroup, "cgroup.freeze"),
		   W_OK))
		SKIP(return, "no cgroup.freeze (a kernel before 5.2)");

	ASSERT_EQ(0, wsem_acquire(self->fd, CAP));
	ASSERT_LT(0, spawn_waiter(self, 0, &wa));
	ASSERT_EQ(0, wait_waiters(self->fd, 1));
	snprintf(pid, sizeof(pid), "%d", self->kids[0]);
	ASSERT_EQ(0, write_file(cg_file(path, sizeof(path), self->cgroup,
					"cgroup.procs"), pid));
	cg_file(path, sizeof(path), self->cgroup, "cgroup.freeze");
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, write_file(path, "1"));
		ASSERT_EQ(0, cg_wait_frozen(self->cgroup, 1)) {
			TH_LOG("the waiter's cgroup did not freeze");
		}
		usleep(100000);
		EXPECT_EQ(0, still_waiting(self, 0)) {
			TH_LOG("the frozen waiter returned");
		}
		ASSERT_EQ(0, write_file(path, "0"));
		ASSERT_EQ(0, cg_wait_frozen(self->cgroup, 0));
		/* It may have gone to the tail: wait until it is back. */
		ASSERT_EQ(0, wait_waiters(self->fd, 1)) {
			TH_LOG("the thawed waiter is not back in the queue");
		}
		EXPECT_EQ(0, still_waiting(self, 0)) {
			TH_LOG("the thawed waiter returned");
		}
	}
	ASSERT_EQ(0, wsem_release(self->fd, 1));
	ASSERT_EQ(0, read_result(self, 0, &r)) {
		TH_LOG("the thawed waiter was never granted");
	}
	ASSERT_EQ(0, r.setup_err);
	EXPECT_EQ(0, r.ret);
	EXPECT_NE(EINTR, r.err);
	EXPECT_EQ(1, r.st.held);
	/* The teardown's rmdir needs the cgroup empty. */
	ASSERT_EQ(0, kill(self->kids[0], SIGKILL));
	ASSERT_EQ(self->kids[0], waitpid(self->kids[0], NULL, 0));
	self->kids[0] = 0;
}

/*
 * Nor is a suspend to RAM (SPEC: "Stopping is not an interruption", and
 * deadlines on the clock they name).  Three waiters go through a suspend of
 * SUSPEND_S seconds: one with no deadline goes on waiting and is granted
 * after; one whose deadline on CLOCK_BOOTTIME, which counts the suspend,
 * passed while the machine slept ends with ETIMEDOUT at the resume, before
 * CLOCK_MONOTONIC gets there; one whose deadline is on CLOCK_MONOTONIC,
 * which stops in a suspend, ends with ETIMEDOUT when that clock gets there
 * and not before.
 */
TEST_F_TIMEOUT(wait, suspend_is_not_eintr, 60)
{
	struct waiter_args forever = { .weight = 1, .timeout_ns = -1,
				       .sa_flags = -1 };
	struct waiter_args mono = { .weight = 1, .sa_flags = -1,
				    .on_clock = true,
				    .clock = CLOCK_MONOTONIC };
	struct waiter_args boot = { .weight = 1, .sa_flags = -1,
				    .on_clock = true,
				    .clock = CLOCK_BOOTTIME };
	struct waiter_result r;
	int64_t mono0, boot0, slept, boot_on_mono;

	if (!self->ready)
		return;
	ASSERT_EQ(0, wsem_acquire(self->fd, CAP));
	ASSERT_LT(0, spawn_waiter(self, 0, &forever));
	mono.deadline_ns = clock_ns(CLOCK_MONOTONIC) + CLOCK_DEADLINE_S * NSEC;
	ASSERT_LT(0, spawn_waiter(self, 1, &mono));
	boot.deadline_ns = clock_ns(CLOCK_BOOTTIME) + CLOCK_DEADLINE_S * NSEC;
	ASSERT_LT(0, spawn_waiter(self, 2, &boot));
	ASSERT_EQ(0, wait_waiters(self->fd, 3));
	mono0 = clock_ns(CLOCK_MONOTONIC);
	boot0 = clock_ns(CLOCK_BOOTTIME);
	/* Where CLOCK_MONOTONIC would be at the boot deadline, unsuspended. */
	boot_on_mono = mono0 + (boot.deadline_ns - boot0);
	if (suspend_to_ram(SUSPEND_S)) {
		int err = errno;

		if (err == ENODEV)
			SKIP(return, "no suspend to RAM woken by an RTC alarm");
		ASSERT_EQ(0, err) {
			TH_LOG("suspend: %s", strerror(err));
		}
	}
	slept = clock_ns(CLOCK_BOOTTIME) - boot0 -
		(clock_ns(CLOCK_MONOTONIC) - mono0);
	ASSERT_LE(CLOCK_DEADLINE_S * NSEC, slept) {
		TH_LOG("suspended %lld ms only", (long long)(slept / MSEC));
	}

	/* The boot deadline passed in the sleep: it ends at the resume. */
	ASSERT_EQ(0, read_result(self, 2, &r)) {
		TH_LOG("the waiter on CLOCK_BOOTTIME was not ended");
	}
	EXPECT_EQ(-1, r.ret);
	EXPECT_EQ(ETIMEDOUT, r.err);
	EXPECT_EQ(0, r.st.held);
	EXPECT_GT(boot_on_mono, r.end_ns) {
		TH_LOG("it ended %lld ms after CLOCK_MONOTONIC passed its deadline",
		       (long long)((r.end_ns - boot_on_mono) / MSEC));
	}
	/* The one with no deadline was not woken for good by the suspend. */
	EXPECT_EQ(0, still_waiting(self, 0)) {
		TH_LOG("the waiter with no deadline returned");
	}
	/* The monotonic deadline did not count the sleep. */
	ASSERT_EQ(0, read_result(self, 1, &r)) {
		TH_LOG("the waiter on CLOCK_MONOTONIC was not ended");
	}
	EXPECT_EQ(-1, r.ret);
	EXPECT_EQ(ETIMEDOUT, r.err);
	EXPECT_LE(mono.deadline_ns, r.end_ns) {
		TH_LOG("it ended %lld ms before its deadline",
		       (long long)((mono.deadline_ns - r.end_ns) / MSEC));
	}
	EXPECT_EQ(0, still_waiting(self, 0));
	ASSERT_EQ(0, wsem_release(self->fd, 1));
	ASSERT_EQ(0, read_result(self, 0, &r)) {
		TH_LOG("the waiter with no deadline was never granted");
	}
	EXPECT_EQ(0, r.ret);
	EXPECT_NE(EINTR, r.err);
	EXPECT_EQ(1, r.st.held);
}

/* One thread's acquire call on a shared handle. */
struct thread_arg {
	int fd;			/* the handle all threads share */
	uint64_t weight;	/* weight to acquire */
	int64_t timeout_ns;	/* < 0: wsem_acquire(), else the timeout */
	int ret;		/* out: return value */
	int err;		/* out: errno */
};

static void *acquire_thread(void *p)
{
	struct thread_arg *ta = p;

	if (ta->timeout_ns < 0)
		ta->ret = wsem_acquire(ta->fd, ta->weight);
	else
		ta->ret = wsem_acquire_timeout(ta->fd, ta->weight,
					       ta->timeout_ns);
	ta->err = errno;
	return NULL;
}

/* Threads waiting on one handle are each their own queue entry. */
TEST_F(wait, threads_on_one_handle_queue_separately)
{
	struct thread_arg ta[THREADS];
	pthread_t t[THREADS];
	struct wsem_stat st;
	int h, i;

	if (!self->ready)
		return;
	h = wsem_open(self->name, O_CLOEXEC, 0, 0);
	ASSERT_LE(0, h);
	ASSERT_EQ(0, wsem_acquire(self->fd, CAP));
	for (i = 0; i < THREADS; i++) {
		ta[i] = (struct thread_arg){ .fd = h, .weight = 1,
					     .timeout_ns = 10 * NSEC };
		ASSERT_EQ(0, pthread_create(&t[i], NULL, acquire_thread,
					    &ta[i]));
	}
	EXPECT_EQ(0, wait_waiters(self->fd, THREADS));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(THREADS, st.queued_weight);

	ASSERT_EQ(0, wsem_release(self->fd, CAP));
	for (i = 0; i < THREADS; i++) {
		ASSERT_EQ(0, pthread_join(t[i], NULL));
		EXPECT_EQ(0, ta[i].ret);
	}
	EXPECT_EQ(0, close(h));
}

/* Each thread waiting on one handle is granted: held grows one by one. */
TEST_F(wait, threads_on_one_handle_each_granted)
{
	struct thread_arg ta[THREADS];
	pthread_t t[THREADS];
	struct wsem_stat st;
	int h, i;

	if (!self->ready)
		return;
	h = wsem_open(self->name, O_CLOEXEC, 0, 0);
	ASSERT_LE(0, h);
	ASSERT_EQ(0, wsem_acquire(self->fd, CAP));
	for (i = 0; i < THREADS; i++) {
		ta[i] = (struct thread_arg){ .fd = h, .weight = 1,
					     .timeout_ns = 10 * NSEC };
		ASSERT_EQ(0, pthread_create(&t[i], NULL, acquire_thread,
					    &ta[i]));
	}
	ASSERT_EQ(0, wait_waiters(self->fd, THREADS));
	for (i = 1; i <= THREADS; i++) {
		ASSERT_EQ(0, wsem_release(self->fd, 1));
		ASSERT_EQ(0, wait_waiters(self->fd, THREADS - i));
		ASSERT_EQ(0, wsem_stat(h, &st));
		EXPECT_EQ((uint64_t)i, st.held);
	}
	for (i = 0; i < THREADS; i++) {
		ASSERT_EQ(0, pthread_join(t[i], NULL));
		EXPECT_EQ(0, ta[i].ret);
	}
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(CAP, st.used);
	EXPECT_EQ(0, close(h));
}

/* Busy-wait @ns nanoseconds: a sleep would be far too coarse here. */
static void spin_ns(int64_t ns)
{
	int64_t until = now_ns() + ns;

	while (now_ns() < until)
		;
}

/*
 * Release the waited-for weight and signal the waiter: either first, with
 * or without a delay between them.
 */
static void race_release_and_signal(int fd, pthread_t t, int i)
{
	/* Each order sweeps its delay from 0 to 148 us in steps of 2 us. */
	int64_t delay = (i / 4) * 2000;

	switch (i % 4) {
	case 0:
		wsem_release(fd, CAP);
		pthread_kill(t, SIGUSR1);
		break;
	case 1:
		pthread_kill(t, SIGUSR1);
		wsem_release(fd, CAP);
		break;
	case 2:
		wsem_release(fd, CAP);
		spin_ns(delay);
		pthread_kill(t, SIGUSR1);
		break;
	default:
		pthread_kill(t, SIGUSR1);
		spin_ns(delay);
		wsem_release(fd, CAP);
		break;
	}
}

/*
 * Grant and signal race: the waiter either gets the weight (the call
 * succeeds) or EINTR with nothing held; weight is never lost, so after
 * each round the used weight is exactly what the handles hold and the
 * whole capacity can be taken again.
 */
TEST_F_TIMEOUT(wait, grant_signal_race_loses_no_weight, 180)
{
	struct sigaction sa = { .sa_handler = on_signal };
	int i, w, granted = 0, interrupted = 0;
	struct thread_arg ta;
	struct wsem_stat st;
	pthread_t t;

	if (!self->ready)
		return;
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	w = wsem_open(self->name, O_CLOEXEC, 0, 0);
	ASSERT_LE(0, w);
	ASSERT_EQ(0, wsem_acquire(self->fd, CAP));
	for (i = 0; i < RACE_LOOPS; i++) {
		ta = (struct thread_arg){ .fd = w, .weight = CAP,
			.timeout_ns = i % 2 ? 10 * NSEC : -1 };
		ASSERT_EQ(0, pthread_create(&t, NULL, acquire_thread, &ta));
		ASSERT_EQ(0, wait_waiters(self->fd, 1));
		race_release_and_signal(self->fd, t, i);
		ASSERT_EQ(0, pthread_join(t, NULL));

		ASSERT_EQ(0, wsem_stat(w, &st));
		if (ta.ret == 0) {
			granted++;
			ASSERT_EQ(CAP, st.held);
			ASSERT_EQ(0, wsem_release(w, CAP));
		} else {
			interrupted++;
			ASSERT_EQ(EINTR, ta.err) {
				TH_LOG("round %d: %s", i, strerror(ta.err));
			}
			ASSERT_EQ(0, st.held);
		}
		ASSERT_EQ(0, wsem_stat(self->fd, &st));
		ASSERT_EQ(0, st.used) {
			TH_LOG("round %d: weight lost", i);
		}
		ASSERT_EQ(0, st.waiters);
		ASSERT_EQ(0, wsem_tryacquire(self->fd, CAP)) {
			TH_LOG("round %d: %s", i, strerror(errno));
		}
	}
	TH_LOG("%d granted, %d interrupted", granted, interrupted);
	EXPECT_EQ(0, close(w));
}

TEST_HARNESS_MAIN
