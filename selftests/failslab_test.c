// SPDX-License-Identifier: GPL-2.0
/*
 * Allocation failure injection (issue 5, item 2), on a kernel with
 * CONFIG_FAILSLAB and CONFIG_FAULT_INJECTION_DEBUG_FS (the debug kernel);
 * everywhere else every test SKIPs.
 *
 * Failures are confined to the test's own task.  Most tests sweep a call
 * with /proc/thread-self/fail-nth: writing N there makes the N-th slab
 * allocation of this task fail, and reading 0 back afterwards says that it
 * did.  N = 1, 2, ... fails every allocation the call makes, one per run,
 * until a run makes fewer than N and nothing was injected.  Each failed run
 * must be ENOMEM and change nothing (no semaphore, no name, no descriptor,
 * no weight, no count against max_sems_per_ns); a run that got through an
 * injected failure (some allocations have fallbacks) must have fully
 * worked; the last run must work.  That covers every allocation of the
 * module's paths: opening /dev/wsem, named and anonymous creation, the
 * namespace's state on its first semaphore, the LIST buffer and REOPEN;
 * and shows that acquire, release, stat, set capacity and unlink allocate
 * nothing (they cannot fail with ENOMEM).  One more test uses failslab's
 * task filter: with /proc/self/make-it-fail set, every allocation of this
 * task fails while another process goes on unharmed.
 *
 * failslab's settings are global: the fixture sets verbose 0 (a failure
 * report would dump a stack into the kernel log), ignore-gfp-wait N (the
 * module allocates with GFP_KERNEL), probability 0 (fail-nth alone), and
 * puts back what it found.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <wsem.h>

#include "kselftest_harness.h"
#include "util.h"

#define FAILSLAB	"/sys/kernel/debug/failslab"
#define USERCOPY	"/sys/kernel/debug/fail_usercopy"
#define LIMIT_PARAM	"/sys/module/wsem/parameters/max_sems_per_ns"
#define MAX_SITES	200		/* bound of a sweep */
#define NLIST		3

/* The failslab settings the fixture changes, in the order it sets them. */
static const char *const knobs[] = {
	"verbose", "ignore-gfp-wait", "cache-filter", "probability",
	"interval", "times", "space", "task-filter",
};

#define NKNOBS	ARRAY_SIZE(knobs)

static int knob(const char *name, const char *val)
{
	char path[128];

	snprintf(path, sizeof(path), FAILSLAB "/%s", name);
	return write_file(path, val);
}

/* Fault the stack in now: a fault under injection could fail. */
static void touch_stack(void)
{
	volatile char buf[64 * 1024];
	size_t i;

	for (i = 0; i < sizeof(buf); i += 4096)
		buf[i] = 1;
}

FIXTURE(fs) {
	/* failslab's settings as found */
	char saved[NKNOBS][32];
	/* how many of them were changed (the teardown puts them back) */
	unsigned int nset;
	/* /proc/thread-self/fail-nth, open */
	int nth;
	/* max_sems_per_ns as found, and whether a test changed it */
	char old_limit[32];
	bool limit_changed;
	/* EFAULT is a possible injected failure too (fail_usercopy) */
	bool usercopy;
	/* setup done: false after a SKIP, so body and teardown do nothing */
	bool ready;
};

FIXTURE_SETUP(fs)
{
	static const char *const want[NKNOBS] = {
		"0", "N", "N", "0", "1", "-1", "0", "Y",
	};
	char path[128];
	unsigned int i;

	self->nth = -1;
	if (access("/dev/wsem", F_OK))
		SKIP(return, "/dev/wsem is missing (module not loaded)");
	if (access(FAILSLAB, F_OK))
		SKIP(return, "no " FAILSLAB ": needs CONFIG_FAILSLAB and "
		     "CONFIG_FAULT_INJECTION_DEBUG_FS (the debug kernel)");
	if (geteuid() != 0)
		SKIP(return, "needs root");
	self->nth = open("/proc/thread-self/fail-nth", O_RDWR | O_CLOEXEC);
	if (self->nth < 0)
		SKIP(return, "/proc/thread-self/fail-nth: %s", strerror(errno));
	self->usercopy = !access(USERCOPY, F_OK);
	ASSERT_EQ(0, read_file(LIMIT_PARAM, self->old_limit,
			       sizeof(self->old_limit)));
	for (i = 0; i < NKNOBS; i++) {
		snprintf(path, sizeof(path), FAILSLAB "/%s", knobs[i]);
		ASSERT_EQ(0, read_file(path, self->saved[i],
				       sizeof(self->saved[i]))) {
			TH_LOG("%s: %s", path, strerror(errno));
		}
	}
	for (i = 0; i < NKNOBS; i++) {
		self->nset = i + 1;
		ASSERT_EQ(0, knob(knobs[i], want[i])) {
			TH_LOG("%s = %s: %s", knobs[i], want[i],
			       strerror(errno));
		}
	}
	/* No page fault while a failure may be injected. */
	ASSERT_EQ(0, mlockall(MCL_CURRENT | MCL_FUTURE));
	touch_stack();
	self->ready = true;
}

FIXTURE_TEARDOWN(fs)
{
	unsigned int i;

	if (self->nth >= 0) {
		EXPECT_EQ(1, pwrite(self->nth, "0", 1, 0));
		EXPECT_EQ(0, close(self->nth));
	}
	write_file("/proc/self/make-it-fail", "0");
	for (i = self->nset; i > 0; i--)
		EXPECT_EQ(0, knob(knobs[i - 1], self->saved[i - 1]));
	if (self->limit_changed)
		EXPECT_EQ(0, write_file(LIMIT_PARAM, self->old_limit));
	munlockall();
}

/* Fail this task's @n-th slab allocation from now on. */
static void arm(FIXTURE_DATA(fs) *self, unsigned int n)
{
	char buf[16];
	int len = snprintf(buf, sizeof(buf), "%u", n);

	if (pwrite(self->nth, buf, len, 0) != len)
		abort();
}

/* Stop injecting; was the failure injected? */
static bool disarm(FIXTURE_DATA(fs) *self)
{
	char buf[16] = "";
	bool injected;
	int err = errno;

	if (pread(self->nth, buf, sizeof(buf) - 1, 0) <= 0)
		abort();
	injected = atoi(buf) == 0;
	if (pwrite(self->nth, "0", 1, 0) != 1)
		abort();
	errno = err;
	return injected;
}

static int set_limit(FIXTURE_DATA(fs) *self, const char *val)
{
	self->limit_changed = true;
	return write_file(LIMIT_PARAM, val);
}

/* The lowest free descriptor: a leaked one shows as a change. */
static int lowest_free_fd(void)
{
	int fd = dup(0);

	if (fd >= 0)
		close(fd);
	return fd;
}

static int bind_named(int fd, const char *name, uint64_t flags)
{
	struct wsem_open_args o = {
		.size = sizeof(o), .flags = flags, .capacity = 2, .mode = 0600,
	};

	snprintf(o.name, sizeof(o.name), "%s", name);
	return ioctl(fd, WSEM_IOC_OPEN, &o);
}

static int bind_anon(int fd)
{
	struct wsem_open_args o = {
		.size = sizeof(o), .flags = WSEM_OPEN_ANON, .capacity = 2,
	};

	return ioctl(fd, WSEM_IOC_OPEN, &o);
}

/* Is @fd still an unbound handle? */
static bool unbound(int fd)
{
	struct wsem_stat st = { .size = sizeof(st) };

	return ioctl(fd, WSEM_IOC_STAT, &st) < 0 && errno == EINVAL;
}

/* The outcome of a sweep. */
struct sweep {
	unsigned int injected;	/* runs with an injected failure */
	unsigned int enomem;	/* ... that failed with ENOMEM */
	unsigned int survived;	/* ... that succeeded all the same */
	int last_ret;		/* the run without injection */
	int last_err;
};

/* An injected failure must be ENOMEM (or EFAULT, from fail_usercopy). */
static bool injected_errno(FIXTURE_DATA(fs) *self, int err)
{
	return err == ENOMEM || (self->usercopy && err == EFAULT);
}

/* ---------------------------------------------------------------- */

/* Opening /dev/wsem: every allocation of it, the module's included. */
TEST_F(fs, open_handle)
{
	const char *const dev[] = { "/dev/null", "/dev/wsem" };
	unsigned int sites[2], d, n;
	int before, fd, err;
	bool inj;

	if (!self->ready)
		return;
	for (d = 0; d < 2; d++) {
		before = lowest_free_fd();
		for (n = 1; n <= MAX_SITES; n++) {
			arm(self, n);
			fd = open(dev[d], O_RDWR | O_CLOEXEC);
			err = errno;
			inj = disarm(self);
			if (fd >= 0) {
				EXPECT_EQ(0, close(fd));
				if (!inj)
					break;
				continue;
			}
			EXPECT_TRUE(inj) {
				TH_LOG("%s: %s without injection", dev[d],
				       strerror(err));
			}
			EXPECT_TRUE(injected_errno(self, err)) {
				TH_LOG("%s, failure %u: %s", dev[d], n,
				       strerror(err));
			}
			EXPECT_EQ(before, lowest_free_fd());
		}
		sites[d] = n - 1;
		ASSERT_GE(MAX_SITES, n);
	}
	TH_LOG("open(): %u allocations for /dev/null, %u for /dev/wsem, each "
	       "failed once", sites[0], sites[1]);
	/* The module's own allocation is among them. */
	EXPECT_LT(sites[0], sites[1]);
}

/*
 * Named creation, in a new IPC namespace: the first one also creates the
 * namespace's state, the second only the semaphore.  Then the count
 * against max_sems_per_ns is exactly what exists.
 */
TEST_F(fs, named_create_and_namespace)
{
	const char *const names[] = { "fs.first", "fs.second" };
	unsigned int round, n, injected[2];
	int fd, ret, err, cfd;
	bool inj;

	if (!self->ready)
		return;
	ASSERT_EQ(0, unshare(CLONE_NEWIPC));
	for (round = 0; round < 2; round++) {
		fd = open("/dev/wsem", O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, fd);
		injected[round] = 0;
		for (n = 1; n <= MAX_SITES; n++) {
			arm(self, n);
			ret = bind_named(fd, names[round],
					 WSEM_OPEN_CREAT | WSEM_OPEN_EXCL);
			err = errno;
			inj = disarm(self);
			if (!inj) {
				ASSERT_EQ(0, ret) {
					TH_LOG("without injection: %s",
					       strerror(err));
				}
				break;
			}
			injected[round]++;
			if (!ret) {
				/* It coped: undo, go on. */
				EXPECT_EQ(0, wsem_unlink(names[round]));
				EXPECT_EQ(0, close(fd));
				fd = open("/dev/wsem", O_RDWR | O_CLOEXEC);
				ASSERT_LE(0, fd);
				continue;
			}
			EXPECT_TRUE(injected_errno(self, err)) {
				TH_LOG("failure %u: %s", n, strerror(err));
			}
			/* Nothing was made, and the handle is still free. */
			EXPECT_EQ(round, wsem_list(NULL, 0));
			errno = 0;
			EXPECT_EQ(-1, wsem_open(names[round], O_CLOEXEC, 0, 0));
			EXPECT_EQ(ENOENT, errno);
			EXPECT_TRUE(unbound(fd));
		}
		ASSERT_GE(MAX_SITES, n);
		EXPECT_EQ(0, close(fd));
	}
	TH_LOG("first semaphore of a namespace: %u allocations failed; "
	       "the next: %u", injected[0], injected[1]);
	EXPECT_LE(2, injected[0]);
	EXPECT_LE(1, injected[1]);
	EXPECT_EQ(2, wsem_list(NULL, 0));
	/* The failures charged nothing against the limit. */
	ASSERT_EQ(0, set_limit(self, "3"));
	cfd = wsem_open("fs.third", O_CREAT | O_EXCL | O_CLOEXEC, 0600, 1);
	EXPECT_LE(0, cfd);
	errno = 0;
	EXPECT_EQ(-1, wsem_open("fs.fourth", O_CREAT | O_CLOEXEC, 0600, 1));
	EXPECT_EQ(ENOSPC, errno);
	EXPECT_EQ(0, close(cfd));
}

/* Anonymous creation, first in a new namespace, then once more. */
TEST_F(fs, anon_create_and_namespace)
{
	unsigned int round, n, injected[2];
	int fd[2], ret, err, extra;
	bool inj;

	if (!self->ready)
		return;
	ASSERT_EQ(0, unshare(CLONE_NEWIPC));
	for (round = 0; round < 2; round++) {
		fd[round] = open("/dev/wsem", O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, fd[round]);
		injected[round] = 0;
		for (n = 1; n <= MAX_SITES; n++) {
			arm(self, n);
			ret = bind_anon(fd[round]);
			err = errno;
			inj = disarm(self);
			if (!inj) {
				ASSERT_EQ(0, ret) {
					TH_LOG("without injection: %s",
					       strerror(err));
				}
				break;
			}
			injected[round]++;
			if (!ret) {
				EXPECT_EQ(0, close(fd[round]));
				fd[round] = open("/dev/wsem",
						 O_RDWR | O_CLOEXEC);
				ASSERT_LE(0, fd[round]);
				continue;
			}
			EXPECT_TRUE(injected_errno(self, err)) {
				TH_LOG("failure %u: %s", n, strerror(err));
			}
			EXPECT_TRUE(unbound(fd[round]));
		}
		ASSERT_GE(MAX_SITES, n);
	}
	TH_LOG("first semaphore of a namespace: %u allocations failed; "
	       "the next: %u", injected[0], injected[1]);
	EXPECT_LE(2, injected[0]);
	EXPECT_LE(1, injected[1]);
	/* Exactly two count against the limit: a third fits in three. */
	ASSERT_EQ(0, set_limit(self, "3"));
	extra = wsem_open_anon(1, O_CLOEXEC);
	EXPECT_LE(0, extra);
	errno = 0;
	EXPECT_EQ(-1, wsem_open_anon(1, O_CLOEXEC));
	EXPECT_EQ(ENOSPC, errno);
	EXPECT_EQ(0, close(extra));
	EXPECT_EQ(0, close(fd[0]));
	EXPECT_EQ(0, close(fd[1]));
}

/* LIST's buffer: a failure writes nothing, not even the total. */
TEST_F(fs, list_buffer)
{
	struct wsem_stat st[NLIST], zero[NLIST];
	struct wsem_list_args l;
	char name[WSEM_NAME_MAX];
	unsigned int i, n, injected = 0;
	int fd[NLIST], ret, err;
	bool inj;

	if (!self->ready)
		return;
	ASSERT_EQ(0, unshare(CLONE_NEWIPC));
	for (i = 0; i < NLIST; i++) {
		snprintf(name, sizeof(name), "fs.list.%u", i);
		fd[i] = wsem_open(name, O_CREAT | O_EXCL | O_CLOEXEC, 0600, 1);
		ASSERT_LE(0, fd[i]);
	}
	memset(zero, 0x5a, sizeof(zero));
	for (n = 1; n <= MAX_SITES; n++) {
		memset(st, 0x5a, sizeof(st));
		l = (struct wsem_list_args){
			.size = sizeof(l), .stats = (uintptr_t)st,
			.count = NLIST, .stat_size = sizeof(st[0]),
			.total = 12345,
		};
		arm(self, n);
		ret = ioctl(fd[0], WSEM_IOC_LIST, &l);
		err = errno;
		inj = disarm(self);
		if (!inj || !ret) {
			ASSERT_EQ(0, ret) {
				TH_LOG("without injection: %s", strerror(err));
			}
			EXPECT_EQ(NLIST, l.total);
			EXPECT_STREQ("fs.list.2", st[2].name);
			injected += inj;
			if (!inj)
				break;
			continue;
		}
		injected++;
		EXPECT_TRUE(injected_errno(self, err)) {
			TH_LOG("failure %u: %s", n, strerror(err));
		}
		EXPECT_EQ(12345, l.total);
		EXPECT_EQ(0, memcmp(st, zero, sizeof(st)));
	}
	ASSERT_GE(MAX_SITES, n);
	TH_LOG("LIST of %d: %u allocations failed", NLIST, injected);
	EXPECT_LE(1, injected);
	for (i = 0; i < NLIST; i++)
		EXPECT_EQ(0, close(fd[i]));
}

/* REOPEN: a new file and a new handle, or nothing at all. */
TEST_F(fs, reopen)
{
	struct wsem_stat st;
	unsigned int n, injected = 0;
	uint64_t flags = WSEM_REOPEN_CLOEXEC;
	int fd, nfd, before, err;
	bool inj;

	if (!self->ready)
		return;
	fd = wsem_open_anon(4, O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, wsem_acquire(fd, 2));
	before = lowest_free_fd();
	for (n = 1; n <= MAX_SITES; n++) {
		arm(self, n);
		nfd = ioctl(fd, WSEM_IOC_REOPEN, &flags);
		err = errno;
		inj = disarm(self);
		if (nfd >= 0) {
			memset(&st, 0, sizeof(st));
			EXPECT_EQ(0, wsem_stat(nfd, &st));
			EXPECT_EQ(0, st.held);
			EXPECT_EQ(2, st.used);
			EXPECT_EQ(0, close(nfd));
			injected += inj;
			if (!inj)
				break;
			continue;
		}
		injected++;
		EXPECT_TRUE(inj);
		EXPECT_TRUE(injected_errno(self, err)) {
			TH_LOG("failure %u: %s", n, strerror(err));
		}
		EXPECT_EQ(before, lowest_free_fd());
		memset(&st, 0, sizeof(st));
		ASSERT_EQ(0, wsem_stat(fd, &st));
		EXPECT_EQ(2, st.held);
		EXPECT_EQ(2, st.used);
	}
	ASSERT_GE(MAX_SITES, n);
	TH_LOG("REOPEN: %u allocations failed", injected);
	EXPECT_LE(2, injected);
	EXPECT_EQ(0, close(fd));
}

/*
 * acquire, release, stat, set capacity, unlink and an empty LIST
 * allocate nothing: none of them may ever fail with ENOMEM.
 */
TEST_F(fs, hot_paths_allocate_nothing)
{
	struct wsem_acquire_args try = {
		.size = sizeof(try), .weight = 1, .flags = WSEM_ACQUIRE_TRY,
	};
	struct wsem_acquire_args block = { .size = sizeof(block), .weight = 1 };
	struct wsem_unlink_args u = { .size = sizeof(u), .name = "fs.hot" };
	struct wsem_list_args l = { .size = sizeof(l) };
	struct wsem_stat st = { .size = sizeof(st) };
	uint64_t one = 1, cap = 5;
	struct {
		const char *what;
		unsigned int cmd;
		void *arg;
	} calls[] = {
		{ "try-acquire", WSEM_IOC_ACQUIRE, &try },
		{ "acquire", WSEM_IOC_ACQUIRE, &block },
		{ "release", WSEM_IOC_RELEASE, &one },
		{ "release", WSEM_IOC_RELEASE, &one },
		{ "stat", WSEM_IOC_STAT, &st },
		{ "set capacity", WSEM_IOC_SET_CAPACITY, &cap },
		{ "list (none)", WSEM_IOC_LIST, &l },
		{ "unlink", WSEM_IOC_UNLINK, &u },
	};
	unsigned int i;
	bool inj;
	int fd, ret, err;

	if (!self->ready)
		return;
	ASSERT_EQ(0, unshare(CLONE_NEWIPC));
	fd = wsem_open("fs.hot", O_CREAT | O_EXCL | O_CLOEXEC, 0600, 4);
	ASSERT_LE(0, fd);
	for (i = 0; i < ARRAY_SIZE(calls); i++) {
		arm(self, 1);
		ret = ioctl(fd, calls[i].cmd, calls[i].arg);
		err = errno;
		inj = disarm(self);
		EXPECT_EQ(0, ret) {
			TH_LOG("%s: %s", calls[i].what, strerror(err));
		}
		EXPECT_FALSE(inj) {
			TH_LOG("%s allocated", calls[i].what);
		}
	}
	EXPECT_EQ(0, close(fd));
}

/*
 * A gang of two granted at once, and a gang try of two that cannot be,
 * allocate nothing (they look through a gang on the stack); a gang of
 * three granted at once, or a gang of two that must wait, allocates its
 * request (ENOMEM under injection, and nothing held or queued after).
 */
TEST_F(fs, small_gang_at_once_allocates_nothing)
{
	const uint64_t one[3] = { 1, 1, 1 }, two[2] = { 2, 1 };
	struct wsem_stat st = { .size = sizeof(st) };
	int fds[3], i, ret, err;
	bool inj;

	if (!self->ready)
		return;
	for (i = 0; i < 3; i++) {
		fds[i] = wsem_open_anon(2, O_CLOEXEC);
		ASSERT_LE(0, fds[i]);
	}
	arm(self, 1);
	ret = wsem_acquire_many(fds, one, 2, -1);
	err = errno;
	inj = disarm(self);
	EXPECT_EQ(0, ret) {
		TH_LOG("a gang of two at once: %s", strerror(err));
	}
	EXPECT_FALSE(inj);
	/* fds[0] holds 1 of 2: a try of 2 on it cannot be granted. */
	arm(self, 1);
	ret = wsem_acquire_many(fds, two, 2, 0);
	err = errno;
	inj = disarm(self);
	EXPECT_EQ(-1, ret);
	EXPECT_EQ(EAGAIN, err);
	EXPECT_FALSE(inj);
	/* Three parts, or a wait: the request is allocated. */
	arm(self, 1);
	ret = wsem_acquire_many(fds, one, 3, -1);
	err = errno;
	inj = disarm(self);
	EXPECT_TRUE(inj);
	EXPECT_EQ(-1, ret);
	EXPECT_EQ(ENOMEM, err);
	arm(self, 1);
	ret = wsem_acquire_many(fds, two, 2, 50 * 1000 * 1000);
	err = errno;
	inj = disarm(self);
	EXPECT_TRUE(inj);
	EXPECT_EQ(-1, ret);
	EXPECT_EQ(ENOMEM, err);
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, wsem_stat(fds[i], &st));
		EXPECT_EQ(i < 2 ? 1 : 0, st.used);
		EXPECT_EQ(0, st.waiters);
		EXPECT_EQ(0, close(fds[i]));
	}
}

/*
 * failslab's task filter: with make-it-fail set on this task and
 * probability 100, every allocation here fails, the module's included,
 * while another process works as usual.  Then everything works again.
 */
TEST_F(fs, task_filter_confines_failures)
{
	struct wsem_list_args l;
	struct wsem_stat st[NLIST + 1], one;
	uint64_t flags = 0;
	char name[WSEM_NAME_MAX], c;
	int fd[NLIST], a, b, go[2], done[2];
	int r_named, e_named, r_anon, e_anon, r_list, e_list, r_reopen;
	int e_reopen, r_open, e_open, r_acq, r_rel, r_off, mif;
	unsigned int i;
	pid_t pid;

	if (!self->ready)
		return;
	ASSERT_EQ(0, unshare(CLONE_NEWIPC));
	for (i = 0; i < NLIST; i++) {
		snprintf(name, sizeof(name), "fs.tf.%u", i);
		fd[i] = wsem_open(name, O_CREAT | O_EXCL | O_CLOEXEC, 0600, 2);
		ASSERT_LE(0, fd[i]);
	}
	a = open("/dev/wsem", O_RDWR | O_CLOEXEC);
	b = open("/dev/wsem", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	/* Another process, forked before the filter is on. */
	ASSERT_EQ(0, pipe2(go, O_CLOEXEC));
	ASSERT_EQ(0, pipe2(done, O_CLOEXEC));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int ok;

		if (read(go[0], &c, 1) != 1)
			_exit(1);
		ok = wsem_open("fs.tf.other", O_CREAT | O_EXCL | O_CLOEXEC,
			       0600, 1) >= 0;
		_exit(ok && write(done[1], "y", 1) == 1 ? 0 : 1);
	}
	memset(st, 0x5a, sizeof(st));
	l = (struct wsem_list_args){
		.size = sizeof(l), .stats = (uintptr_t)st, .count = NLIST + 1,
		.stat_size = sizeof(st[0]), .total = 12345,
	};

	/* Opened now: opening it later would allocate, and fail. */
	mif = open("/proc/self/make-it-fail", O_WRONLY | O_CLOEXEC);
	ASSERT_LE(0, mif);
	ASSERT_EQ(0, knob("probability", "100"));
	ASSERT_EQ(1, write(mif, "1", 1));
	/* From here to make-it-fail 0: no output, no assertion. */
	r_named = bind_named(a, "fs.tf.new", WSEM_OPEN_CREAT);
	e_named = errno;
	r_anon = bind_anon(b);
	e_anon = errno;
	r_list = ioctl(fd[0], WSEM_IOC_LIST, &l);
	e_list = errno;
	r_reopen = ioctl(fd[0], WSEM_IOC_REOPEN, &flags);
	e_reopen = errno;
	r_open = open("/dev/wsem", O_RDWR | O_CLOEXEC);
	e_open = errno;
	r_acq = wsem_tryacquire(fd[1], 2);
	r_rel = wsem_release(fd[1], 2);
	/* The other process, meanwhile, creates a semaphore. */
	c = write(go[1], "g", 1) == 1 && read(done[0], &c, 1) == 1;
	r_off = pwrite(mif, "0", 1, 0);
	ASSERT_EQ(1, r_off);
	ASSERT_EQ(0, knob("probability", "0"));
	EXPECT_EQ(0, close(mif));

	EXPECT_EQ(-1, r_named);
	EXPECT_TRUE(injected_errno(self, e_named));
	EXPECT_EQ(-1, r_anon);
	EXPECT_TRUE(injected_errno(self, e_anon));
	EXPECT_EQ(-1, r_list);
	EXPECT_TRUE(injected_errno(self, e_list));
	EXPECT_EQ(12345, l.total);
	EXPECT_EQ(-1, r_reopen);
	EXPECT_TRUE(injected_errno(self, e_reopen));
	EXPECT_EQ(-1, r_open);
	EXPECT_TRUE(injected_errno(self, e_open));
	EXPECT_EQ(0, r_acq);
	EXPECT_EQ(0, r_rel);
	EXPECT_TRUE(c) {
		TH_LOG("the other process could not create");
	}
	EXPECT_EQ(0, waitpid(pid, NULL, 0) == pid ? 0 : -1);

	/* Nothing was made; now everything works. */
	EXPECT_TRUE(unbound(a));
	EXPECT_TRUE(unbound(b));
	EXPECT_EQ(NLIST + 1, wsem_list(NULL, 0));
	EXPECT_EQ(0, bind_named(a, "fs.tf.new", WSEM_OPEN_CREAT));
	EXPECT_EQ(0, bind_anon(b));
	l.total = 12345;
	EXPECT_EQ(0, ioctl(fd[0], WSEM_IOC_LIST, &l));
	EXPECT_EQ(NLIST + 2, l.total);
	r_reopen = ioctl(fd[0], WSEM_IOC_REOPEN, &flags);
	EXPECT_LE(0, r_reopen);
	memset(&one, 0, sizeof(one));
	EXPECT_EQ(0, wsem_stat(r_reopen, &one));
	EXPECT_EQ(0, one.held);
	EXPECT_EQ(0, close(r_reopen));
	for (i = 0; i < NLIST; i++)
		EXPECT_EQ(0, close(fd[i]));
	EXPECT_EQ(0, close(a));
	EXPECT_EQ(0, close(b));
	EXPECT_EQ(0, close(go[0]));
	EXPECT_EQ(0, close(go[1]));
	EXPECT_EQ(0, close(done[0]));
	EXPECT_EQ(0, close(done[1]));
}

TEST_HARNESS_MAIN
