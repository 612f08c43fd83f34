// SPDX-License-Identifier: GPL-2.0
/*
 * Binding handles: named open and create, anonymous create, reopen, stat,
 * unlink, list, and the per-namespace limit (SPEC.md, "Operations").
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>

#include <wsem.h>

#include "kselftest_harness.h"
#include "util.h"

#define DEV "/dev/wsem"
#define LIMIT_PARAM "/sys/module/wsem/parameters/max_sems_per_ns"
#define NOBODY 65534

/* A name of our own: the test name and our pid, cut to fit. */
static void test_sem_name(char *buf, const char *test)
{
	snprintf(buf, WSEM_NAME_MAX, "open.%d.%s", getpid(), test);
}

/* A child with its own handle on @name that blocks acquiring @weight. */
static pid_t spawn_waiter(const char *name, uint64_t weight)
{
	pid_t pid = fork();
	int fd;

	if (pid)
		return pid;
	fd = wsem_open(name, 0, 0, 0);
	if (fd < 0)
		_exit(1);
	_exit(wsem_acquire(fd, weight) ? 2 : 0);
}

/* Make this test process alone in a new IPC namespace; 0 or -1. */
static int fresh_ipc_ns(void)
{
	if (!unshare(CLONE_NEWIPC))
		return 0;
	return unshare(CLONE_NEWUSER | CLONE_NEWIPC);
}

FIXTURE(open) {
	bool skip;	/* no /dev/wsem; 6.1 runs the body anyway: it returns */
	char name[WSEM_NAME_MAX];	/* this test's semaphore name */
	int fd;		/* first handle, or -1 */
	int fd2;	/* second handle, or -1 */
};

FIXTURE_SETUP(open)
{
	self->fd = -1;
	self->fd2 = -1;
	test_sem_name(self->name, _metadata->name);
	if (access(DEV, R_OK | W_OK)) {
		self->skip = true;
		SKIP(return, DEV " is missing");
	}
}

FIXTURE_TEARDOWN(open)
{
	if (self->skip)
		return;
	if (self->fd >= 0)
		EXPECT_EQ(0, close(self->fd));
	if (self->fd2 >= 0)
		EXPECT_EQ(0, close(self->fd2));
	if (wsem_unlink(self->name))
		EXPECT_EQ(ENOENT, errno);
}

TEST_F(open, create_new)
{
	struct wsem_stat st;

	if (self->skip)
		return;
	self->fd = wsem_open(self->name, O_CREAT, 0600, 5);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(5, st.capacity);
	EXPECT_EQ(0, st.used);
	EXPECT_EQ(0, st.held);
	EXPECT_STREQ(self->name, st.name);
}

TEST_F(open, missing_enoent)
{
	if (self->skip)
		return;
	EXPECT_EQ(-1, wsem_open(self->name, 0, 0, 0));
	EXPECT_EQ(ENOENT, errno);
}

TEST_F(open, excl_existing_eexist)
{
	if (self->skip)
		return;
	self->fd = wsem_open(self->name, O_CREAT, 0600, 5);
	ASSERT_LE(0, self->fd);
	EXPECT_EQ(-1, wsem_open(self->name, O_CREAT | O_EXCL, 0600, 5));
	EXPECT_EQ(EEXIST, errno);
}

TEST_F(open, excl_new_creates)
{
	if (self->skip)
		return;
	self->fd = wsem_open(self->name, O_CREAT | O_EXCL, 0600, 5);
	EXPECT_LE(0, self->fd);
}

/* Opening needs no capacity and reaches the same semaphore. */
TEST_F(open, existing_same_semaphore)
{
	struct wsem_stat st;

	if (self->skip)
		return;
	self->fd = wsem_open(self->name, O_CREAT, 0600, 5);
	ASSERT_LE(0, self->fd);
	self->fd2 = wsem_open(self->name, 0, 0, 0);
	ASSERT_LE(0, self->fd2);
	ASSERT_EQ(0, wsem_acquire(self->fd, 2));
	ASSERT_EQ(0, wsem_stat(self->fd2, &st));
	EXPECT_EQ(2, st.used);
	EXPECT_EQ(0, st.held);
}

TEST_F(open, existing_keeps_capacity)
{
	struct wsem_stat st;

	if (self->skip)
		return;
	self->fd = wsem_open(self->name, O_CREAT, 0600, 5);
	ASSERT_LE(0, self->fd);
	self->fd2 = wsem_open(self->name, O_CREAT, 0600, 9);
	ASSERT_LE(0, self->fd2);
	ASSERT_EQ(0, wsem_stat(self->fd2, &st));
	EXPECT_EQ(5, st.capacity);
}

TEST_F(open, cloexec)
{
	if (self->skip)
		return;
	self->fd = wsem_open(self->name, O_CREAT | O_CLOEXEC, 0600, 1);
	ASSERT_LE(0, self->fd);
	EXPECT_EQ(FD_CLOEXEC, fcntl(self->fd, F_GETFD) & FD_CLOEXEC);
	/* close-on-exec is the library's default; WSEM_INHERIT clears it */
	self->fd2 = wsem_open(self->name, WSEM_INHERIT, 0, 0);
	ASSERT_LE(0, self->fd2);
	EXPECT_EQ(0, fcntl(self->fd2, F_GETFD) & FD_CLOEXEC);
}

TEST_F(open, name_empty_einval)
{
	if (self->skip)
		return;
	EXPECT_EQ(-1, wsem_open("", O_CREAT, 0600, 1));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(open, name_64_bytes_einval)
{
	char name[65];

	if (self->skip)
		return;
	memset(name, 'a', 64);
	name[64] = '\0';
	EXPECT_EQ(-1, wsem_open(name, O_CREAT, 0600, 1));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(open, name_63_bytes_ok)
{
	struct wsem_stat st;

	size_t len;

	if (self->skip)
		return;
	len = strlen(self->name);
	memset(self->name + len, 'x', WSEM_NAME_MAX - 1 - len);
	self->name[WSEM_NAME_MAX - 1] = '\0';
	self->fd = wsem_open(self->name, O_CREAT | O_EXCL, 0600, 1);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_STREQ(self->name, st.name);
}

TEST_F(open, name_every_allowed_char)
{
	if (self->skip)
		return;
	snprintf(self->name, sizeof(self->name), "-.AZaz09_%d", getpid());
	self->fd = wsem_open(self->name, O_CREAT | O_EXCL, 0600, 1);
	EXPECT_LE(0, self->fd);
}

TEST_F(open, name_bad_chars_einval)
{
	static const char * const bad[] = {
		"a/b", "a b", "a:b", "a\\b", "a*", "a\n", "\x01", "caf\xc3\xa9",
		"/",
	};
	unsigned int i;

	if (self->skip)
		return;
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		errno = 0;
		EXPECT_EQ(-1, wsem_open(bad[i], O_CREAT, 0600, 1))
			TH_LOG("name #%u was accepted", i);
		EXPECT_EQ(EINVAL, errno) TH_LOG("name #%u", i);
	}
}

/* A name buffer with no NUL in it is rejected (raw ABI: libwsem can't). */
TEST_F(open, name_without_nul_einval)
{
	struct wsem_open_args args = {
		.size = sizeof(args),
		.flags = WSEM_OPEN_CREAT,
		.capacity = 1,
		.mode = 0600,
	};

	if (self->skip)
		return;
	memset(args.name, 'a', sizeof(args.name));
	self->fd = open(DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	EXPECT_EQ(-1, ioctl(self->fd, WSEM_IOC_OPEN, &args));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(open, capacity_zero_einval)
{
	if (self->skip)
		return;
	EXPECT_EQ(-1, wsem_open(self->name, O_CREAT, 0600, 0));
	EXPECT_EQ(EINVAL, errno);
	/* nothing was created */
	EXPECT_EQ(-1, wsem_open(self->name, 0, 0, 0));
	EXPECT_EQ(ENOENT, errno);
}

TEST_F(open, capacity_above_max_einval)
{
	if (self->skip)
		return;
	EXPECT_EQ(-1, wsem_open(self->name, O_CREAT, 0600,
				WSEM_CAPACITY_MAX + 1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, wsem_open(self->name, O_CREAT, 0600, UINT64_MAX));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, wsem_open(self->name, 0, 0, 0));
	EXPECT_EQ(ENOENT, errno);
}

TEST_F(open, capacity_max_ok)
{
	struct wsem_stat st;

	if (self->skip)
		return;
	self->fd = wsem_open(self->name, O_CREAT, 0600, WSEM_CAPACITY_MAX);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, wsem_acquire(self->fd, WSEM_CAPACITY_MAX - 1));
	ASSERT_EQ(0, wsem_acquire(self->fd, 1));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(WSEM_CAPACITY_MAX, st.capacity);
	EXPECT_EQ(WSEM_CAPACITY_MAX, st.used);
	EXPECT_EQ(WSEM_CAPACITY_MAX, st.held);
	EXPECT_EQ(0, st.available);
}

TEST_F(open, mode_masked_by_umask)
{
	struct wsem_stat st;
	mode_t old;

	if (self->skip)
		return;
	old = umask(027);
	self->fd = wsem_open(self->name, O_CREAT, 0666, 1);
	umask(old);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(0640, st.mode);
}

TEST_F(open, owner_is_caller)
{
	struct wsem_stat st;

	if (self->skip)
		return;
	self->fd = wsem_open(self->name, O_CREAT, 0600, 1);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(geteuid(), st.uid);
	EXPECT_EQ(getegid(), st.gid);
}

/* The owner is the effective, not the real, uid and gid. */
TEST_F(open, owner_is_effective_ids)
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
		int fd;

		if (setegid(NOBODY) || seteuid(NOBODY))
			_exit(1);
		fd = wsem_open(self->name, O_CREAT | O_EXCL, 0600, 1);
		_exit(fd < 0 ? 2 : 0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, status);
	self->fd = wsem_open(self->name, 0, 0, 0);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(NOBODY, st.uid);
	EXPECT_EQ(NOBODY, st.gid);
}

TEST_F(open, anon_create)
{
	struct wsem_stat st;

	if (self->skip)
		return;
	self->fd = wsem_open_anon(3, 0);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(3, st.capacity);
	EXPECT_EQ(0, st.used);
	EXPECT_EQ(3, st.available);
	EXPECT_EQ(0, st.held);
	EXPECT_STREQ("", st.name);
}

TEST_F(open, anon_capacity_out_of_range_einval)
{
	if (self->skip)
		return;
	EXPECT_EQ(-1, wsem_open_anon(0, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, wsem_open_anon(WSEM_CAPACITY_MAX + 1, 0));
	EXPECT_EQ(EINVAL, errno);
	self->fd = wsem_open_anon(WSEM_CAPACITY_MAX, 0);
	EXPECT_LE(0, self->fd);
}

TEST_F(open, anon_each_is_new)
{
	if (self->skip)
		return;
	self->fd = wsem_open_anon(1, 0);
	ASSERT_LE(0, self->fd);
	self->fd2 = wsem_open_anon(1, 0);
	ASSERT_LE(0, self->fd2);
	ASSERT_EQ(0, wsem_acquire(self->fd, 1));
	EXPECT_EQ(0, wsem_tryacquire(self->fd2, 1));
}

TEST_F(open, reopen_holds_zero)
{
	struct wsem_stat st;

	if (self->skip)
		return;
	self->fd = wsem_open(self->name, O_CREAT, 0600, 4);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, wsem_acquire(self->fd, 3));
	self->fd2 = wsem_reopen(self->fd, 0);
	ASSERT_LE(0, self->fd2);
	ASSERT_EQ(0, wsem_stat(self->fd2, &st));
	EXPECT_EQ(0, st.held);
	EXPECT_EQ(3, st.used);
	EXPECT_EQ(4, st.capacity);
	EXPECT_STREQ(self->name, st.name);
	EXPECT_EQ(-1, wsem_release(self->fd2, 1));
	EXPECT_EQ(EINVAL, errno);
}

/* Closing the reopened handle releases its weight, not the other's. */
TEST_F(open, reopen_independent_weight)
{
	struct wsem_stat st;

	if (self->skip)
		return;
	self->fd = wsem_open(self->name, O_CREAT, 0600, 4);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, wsem_acquire(self->fd, 2));
	self->fd2 = wsem_reopen(self->fd, 0);
	ASSERT_LE(0, self->fd2);
	ASSERT_EQ(0, wsem_acquire(self->fd2, 1));
	EXPECT_EQ(0, close(self->fd2));
	self->fd2 = -1;
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(2, st.used);
	EXPECT_EQ(2, st.held);
}

TEST_F(open, reopen_anon_same_semaphore)
{
	struct wsem_stat st;

	if (self->skip)
		return;
	self->fd = wsem_open_anon(2, 0);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, wsem_acquire(self->fd, 2));
	self->fd2 = wsem_reopen(self->fd, 0);
	ASSERT_LE(0, self->fd2);
	EXPECT_EQ(-1, wsem_tryacquire(self->fd2, 1));
	EXPECT_EQ(EAGAIN, errno);
	ASSERT_EQ(0, wsem_release(self->fd, 2));
	ASSERT_EQ(0, wsem_tryacquire(self->fd2, 2));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(2, st.used);
	EXPECT_EQ(0, st.held);
}

TEST_F(open, reopen_cloexec)
{
	if (self->skip)
		return;
	self->fd = wsem_open_anon(1, 0);
	ASSERT_LE(0, self->fd);
	self->fd2 = wsem_reopen(self->fd, O_CLOEXEC);
	ASSERT_LE(0, self->fd2);
	EXPECT_EQ(FD_CLOEXEC, fcntl(self->fd2, F_GETFD) & FD_CLOEXEC);
	EXPECT_EQ(0, close(self->fd2));
	self->fd2 = wsem_reopen(self->fd, WSEM_INHERIT);
	ASSERT_LE(0, self->fd2);
	EXPECT_EQ(0, fcntl(self->fd2, F_GETFD) & FD_CLOEXEC);
}

TEST_F(open, reopen_unbound_einval)
{
	if (self->skip)
		return;
	self->fd = open(DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	EXPECT_EQ(-1, wsem_reopen(self->fd, 0));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(open, stat_fields)
{
	struct wsem_stat st;
	mode_t old;

	if (self->skip)
		return;
	old = umask(0);
	self->fd = wsem_open(self->name, O_CREAT, 0640, 10);
	umask(old);
	ASSERT_LE(0, self->fd);
	self->fd2 = wsem_open(self->name, 0, 0, 0);
	ASSERT_LE(0, self->fd2);
	ASSERT_EQ(0, wsem_acquire(self->fd, 3));
	ASSERT_EQ(0, wsem_acquire(self->fd2, 2));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(10, st.capacity);
	EXPECT_EQ(5, st.used);
	EXPECT_EQ(5, st.available);
	EXPECT_EQ(3, st.held);
	EXPECT_EQ(0, st.waiters);
	EXPECT_EQ(0, st.queued_weight);
	EXPECT_EQ(geteuid(), st.uid);
	EXPECT_EQ(getegid(), st.gid);
	EXPECT_EQ(0640, st.mode);
	EXPECT_STREQ(self->name, st.name);
	ASSERT_EQ(0, wsem_stat(self->fd2, &st));
	EXPECT_EQ(2, st.held);
}

TEST_F(open, stat_waiters)
{
	struct wsem_stat st;
	int status;
	pid_t pid;

	if (self->skip)
		return;
	self->fd = wsem_open(self->name, O_CREAT, 0600, 10);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, wsem_acquire(self->fd, 8));
	pid = spawn_waiter(self->name, 4);
	ASSERT_LE(0, pid);
	EXPECT_EQ(0, wait_waiters(self->fd, 1));
	EXPECT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(1, st.waiters);
	EXPECT_EQ(4, st.queued_weight);
	EXPECT_EQ(8, st.used);
	EXPECT_EQ(2, st.available);
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
}

TEST_F(open, stat_unbound_einval)
{
	struct wsem_stat st;

	if (self->skip)
		return;
	self->fd = open(DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	EXPECT_EQ(-1, wsem_stat(self->fd, &st));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(open, unlink_missing_enoent)
{
	if (self->skip)
		return;
	EXPECT_EQ(-1, wsem_unlink(self->name));
	EXPECT_EQ(ENOENT, errno);
}

TEST_F(open, unlink_twice_enoent)
{
	if (self->skip)
		return;
	self->fd = wsem_open(self->name, O_CREAT, 0600, 1);
	ASSERT_LE(0, self->fd);
	EXPECT_EQ(0, wsem_unlink(self->name));
	EXPECT_EQ(-1, wsem_unlink(self->name));
	EXPECT_EQ(ENOENT, errno);
}

TEST_F(open, unlink_name_gone_at_once)
{
	if (self->skip)
		return;
	self->fd = wsem_open(self->name, O_CREAT, 0600, 3);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, wsem_unlink(self->name));
	EXPECT_EQ(-1, wsem_open(self->name, 0, 0, 0));
	EXPECT_EQ(ENOENT, errno);
}

/* The name can be created again, and that is a different semaphore. */
TEST_F(open, unlink_then_create_is_new)
{
	struct wsem_stat st;

	if (self->skip)
		return;
	self->fd = wsem_open(self->name, O_CREAT, 0600, 3);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, wsem_acquire(self->fd, 3));
	ASSERT_EQ(0, wsem_unlink(self->name));
	self->fd2 = wsem_open(self->name, O_CREAT | O_EXCL, 0600, 7);
	ASSERT_LE(0, self->fd2);
	ASSERT_EQ(0, wsem_stat(self->fd2, &st));
	EXPECT_EQ(7, st.capacity);
	EXPECT_EQ(0, st.used);
	EXPECT_STREQ(self->name, st.name);
}

TEST_F(open, unlink_bound_handles_keep_working)
{
	struct wsem_stat st;

	if (self->skip)
		return;
	self->fd = wsem_open(self->name, O_CREAT, 0600, 2);
	ASSERT_LE(0, self->fd);
	self->fd2 = wsem_open(self->name, 0, 0, 0);
	ASSERT_LE(0, self->fd2);
	ASSERT_EQ(0, wsem_unlink(self->name));
	EXPECT_EQ(0, wsem_acquire(self->fd, 1));
	EXPECT_EQ(0, wsem_acquire(self->fd2, 1));
	EXPECT_EQ(-1, wsem_tryacquire(self->fd, 1));
	EXPECT_EQ(EAGAIN, errno);
	EXPECT_EQ(0, wsem_release(self->fd, 1));
	EXPECT_EQ(0, wsem_tryacquire(self->fd2, 1));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(2, st.used);
	EXPECT_EQ(0, st.held);
}

TEST_F(open, unlink_stat_name_empty)
{
	struct wsem_stat st;

	if (self->skip)
		return;
	self->fd = wsem_open(self->name, O_CREAT, 0600, 2);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, wsem_unlink(self->name));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_STREQ("", st.name);
	EXPECT_EQ(2, st.capacity);
}

FIXTURE(ns) {
	bool skip;	/* no /dev/wsem or new IPC ns; the body returns */
	int fds[4];	/* handles the test opened, or -1 */
};

FIXTURE_SETUP(ns)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(self->fds); i++)
		self->fds[i] = -1;
	if (access(DEV, R_OK | W_OK)) {
		self->skip = true;
		SKIP(return, DEV " is missing");
	}
	/* Alone in the namespace, the list holds only what we create. */
	if (fresh_ipc_ns()) {
		self->skip = true;
		SKIP(return, "cannot unshare the IPC namespace");
	}
}

/* The names die with the namespace when this test process exits. */
FIXTURE_TEARDOWN(ns)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(self->fds); i++)
		if (self->fds[i] >= 0)
			EXPECT_EQ(0, close(self->fds[i]));
}

TEST_F(ns, list_empty)
{
	if (self->skip)
		return;
	EXPECT_EQ(0, wsem_list(NULL, 0));
}

TEST_F(ns, list_returns_total)
{
	static const char * const names[] = { "one", "two", "three" };
	unsigned int i;

	if (self->skip)
		return;
	for (i = 0; i < ARRAY_SIZE(names); i++) {
		self->fds[i] = wsem_open(names[i], O_CREAT, 0600, 1);
		ASSERT_LE(0, self->fds[i]);
	}
	EXPECT_EQ(3, wsem_list(NULL, 0));
}

TEST_F(ns, list_fills_up_to_n)
{
	struct wsem_stat buf[3], untouched;

	if (self->skip)
		return;
	self->fds[0] = wsem_open("a", O_CREAT, 0600, 5);
	ASSERT_LE(0, self->fds[0]);
	self->fds[1] = wsem_open("b", O_CREAT, 0600, 6);
	ASSERT_LE(0, self->fds[1]);
	self->fds[2] = wsem_open("c", O_CREAT, 0600, 7);
	ASSERT_LE(0, self->fds[2]);
	ASSERT_EQ(0, wsem_acquire(self->fds[1], 2));
	memset(buf, 0xa5, sizeof(buf));
	memset(&untouched, 0xa5, sizeof(untouched));
	ASSERT_EQ(3, wsem_list(buf, 2));
	EXPECT_STREQ("a", buf[0].name);
	EXPECT_EQ(5, buf[0].capacity);
	EXPECT_STREQ("b", buf[1].name);
	EXPECT_EQ(6, buf[1].capacity);
	EXPECT_EQ(2, buf[1].used);
	EXPECT_EQ(0, buf[1].held);
	EXPECT_EQ(0, memcmp(&buf[2], &untouched, sizeof(untouched)));
}

TEST_F(ns, list_name_order)
{
	static const char * const created[] = { "p.c", "p.a", "p.b", "p.ab" };
	static const char * const sorted[] = { "p.a", "p.ab", "p.b", "p.c" };
	struct wsem_stat buf[4];
	unsigned int i;

	if (self->skip)
		return;
	for (i = 0; i < ARRAY_SIZE(created); i++) {
		self->fds[i] = wsem_open(created[i], O_CREAT, 0600, 1);
		ASSERT_LE(0, self->fds[i]);
	}
	ASSERT_EQ(4, wsem_list(buf, 4));
	for (i = 0; i < ARRAY_SIZE(sorted); i++)
		EXPECT_STREQ(sorted[i], buf[i].name);
}

TEST_F(ns, list_only_named)
{
	struct wsem_stat buf[2];

	if (self->skip)
		return;
	self->fds[0] = wsem_open_anon(1, 0);
	ASSERT_LE(0, self->fds[0]);
	self->fds[1] = wsem_open("named", O_CREAT, 0600, 1);
	ASSERT_LE(0, self->fds[1]);
	self->fds[2] = wsem_open("gone", O_CREAT, 0600, 1);
	ASSERT_LE(0, self->fds[2]);
	ASSERT_EQ(0, wsem_unlink("gone"));
	ASSERT_EQ(1, wsem_list(buf, 2));
	EXPECT_STREQ("named", buf[0].name);
}

FIXTURE(limit) {
	bool skip;	/* no /dev/wsem, parameter or new IPC ns; body returns */
	char saved[32];	/* the parameter's value before the test */
	int fds[4];	/* handles the test opened, or -1 */
};

static int write_param(const char *val)
{
	int fd = open(LIMIT_PARAM, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, val, strlen(val));
	close(fd);
	return n == (ssize_t)strlen(val) ? 0 : -1;
}

FIXTURE_SETUP(limit)
{
	unsigned int i;
	ssize_t n;
	int fd;

	for (i = 0; i < ARRAY_SIZE(self->fds); i++)
		self->fds[i] = -1;
	fd = open(LIMIT_PARAM, O_RDONLY | O_CLOEXEC);
	if (access(DEV, R_OK | W_OK) || fd < 0 || fresh_ipc_ns()) {
		if (fd >= 0)
			close(fd);
		self->skip = true;
		SKIP(return, "needs " DEV ", " LIMIT_PARAM " and a new IPC ns");
	}
	n = read(fd, self->saved, sizeof(self->saved) - 1);
	EXPECT_EQ(0, close(fd));
	ASSERT_LT(0, n);
	self->saved[n] = '\0';
	ASSERT_EQ(0, write_param("3"));
}

FIXTURE_TEARDOWN(limit)
{
	unsigned int i;

	if (self->skip)
		return;
	for (i = 0; i < ARRAY_SIZE(self->fds); i++)
		if (self->fds[i] >= 0)
			EXPECT_EQ(0, close(self->fds[i]));
	EXPECT_EQ(0, write_param(self->saved));
}

/* Named and anonymous semaphores both count against the limit. */
TEST_F(limit, enospc_counts_named_and_anon)
{
	if (self->skip)
		return;
	self->fds[0] = wsem_open("n1", O_CREAT, 0600, 1);
	ASSERT_LE(0, self->fds[0]);
	self->fds[1] = wsem_open_anon(1, 0);
	ASSERT_LE(0, self->fds[1]);
	self->fds[2] = wsem_open("n2", O_CREAT, 0600, 1);
	ASSERT_LE(0, self->fds[2]);
	EXPECT_EQ(-1, wsem_open("n3", O_CREAT, 0600, 1));
	EXPECT_EQ(ENOSPC, errno);
	EXPECT_EQ(-1, wsem_open_anon(1, 0));
	EXPECT_EQ(ENOSPC, errno);
	/* opening an existing one or reopening creates nothing */
	self->fds[3] = wsem_open("n1", O_CREAT, 0600, 1);
	ASSERT_LE(0, self->fds[3]);
	EXPECT_EQ(0, close(self->fds[3]));
	self->fds[3] = wsem_reopen(self->fds[1], O_CLOEXEC);
	EXPECT_LE(0, self->fds[3]);
	EXPECT_EQ(2, wsem_list(NULL, 0));
}

/* Closing the last handle of an anonymous one, or unlinking an unused
 * named one, gives its slot back.
 */
TEST_F(limit, enospc_slot_freed)
{
	int fd;

	if (self->skip)
		return;
	self->fds[0] = wsem_open_anon(1, 0);
	ASSERT_LE(0, self->fds[0]);
	fd = wsem_open("n1", O_CREAT, 0600, 1);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, close(fd));
	self->fds[1] = wsem_open_anon(1, 0);
	ASSERT_LE(0, self->fds[1]);
	EXPECT_EQ(-1, wsem_open_anon(1, 0));
	EXPECT_EQ(ENOSPC, errno);
	EXPECT_EQ(0, close(self->fds[0]));
	self->fds[0] = wsem_open("n2", O_CREAT, 0600, 1);
	ASSERT_LE(0, self->fds[0]);
	EXPECT_EQ(0, wsem_unlink("n1"));
	self->fds[2] = wsem_open_anon(1, 0);
	EXPECT_LE(0, self->fds[2]);
}

TEST_HARNESS_MAIN
