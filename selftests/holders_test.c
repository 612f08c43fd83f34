// SPDX-License-Identifier: GPL-2.0
/*
 * Who holds, who waits, and since when (issue 12): WSEM_IOC_HOLDERS, the
 * statistics of stat, the holder lines of the text and the tracepoints.
 *
 * Processes here name themselves (PR_SET_NAME) so that the command each
 * entry reports is checked, and report their pids through pipes; they
 * queue in a known order, waiting for the kernel's waiter count between
 * two arrivals.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <wsem.h>

#include "kselftest_harness.h"
#include "util.h"

#define CAP		4
#define MAX_WHO		16
#define NOBODY		65534
#define CGROOT		"/sys/fs/cgroup"
#define CGROUP2_MAGIC	0x63677270

/* WSEM_IOC_HOLDERS on @fd into @who (room for @n); the ioctl's result. */
static int holders(int fd, struct wsem_holder *who, unsigned int n,
		   struct wsem_holders_args *a)
{
	memset(a, 0, sizeof(*a));
	memset(who, 0xa5, n * sizeof(*who));
	a->size = sizeof(*a);
	a->entries = (uintptr_t)who;
	a->count = n;
	a->entry_size = sizeof(*who);
	return ioctl(fd, WSEM_IOC_HOLDERS, a);
}

/*
 * A child named @comm that acquires @weight through its own handle on
 * @name (or through @fd if >= 0), writes one byte to @ready after the
 * grant and holds until killed.
 */
static pid_t holder(const char *name, int fd, uint64_t weight,
		    const char *comm, int ready)
{
	pid_t pid = fork();

	if (pid)
		return pid;
	prctl(PR_SET_NAME, comm);
	if (fd < 0)
		fd = wsem_open(name, 0, 0, 0);
	if (fd < 0 || wsem_acquire(fd, weight))
		_exit(1);
	if (ready >= 0 && write(ready, "g", 1) != 1)
		_exit(1);
	for (;;)
		pause();
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

FIXTURE(who) {
	char name[WSEM_NAME_MAX];
	int fd;			/* the test's handle: capacity CAP */
	int pipe[2];
};

FIXTURE_SETUP(who)
{
	self->fd = -1;
	if (access("/dev/wsem", F_OK))
		SKIP(return, "/dev/wsem is missing (module not loaded)");
	snprintf(self->name, sizeof(self->name), "who.%d", getpid());
	self->fd = wsem_open(self->name, O_CREAT | O_EXCL, 0666, CAP);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, pipe2(self->pipe, O_CLOEXEC));
}

FIXTURE_TEARDOWN(who)
{
	if (self->fd < 0)
		return;
	EXPECT_EQ(0, close(self->fd));
	EXPECT_EQ(0, wsem_unlink(self->name));
}

/* Read a grant byte from a holder child; 0 or -1. */
static int granted(int rfd)
{
	char c;

	return read(rfd, &c, 1) == 1 ? 0 : -1;
}

/*
 * Holders first, in the order they first came to hold, with the last
 * acquirer's pid and command; then the waiters in queue order; a killed
 * waiter leaves the list and the one behind it moves up.
 */
TEST_F(who, holders_then_waiters_in_order)
{
	struct wsem_holder who[MAX_WHO];
	struct wsem_holders_args a;
	pid_t h1, w1, w2;
	int i;

	if (self->fd < 0)
		return;
	prctl(PR_SET_NAME, "who-test");
	ASSERT_EQ(0, wsem_acquire(self->fd, 1));
	h1 = holder(self->name, -1, 2, "who-h1", self->pipe[1]);
	ASSERT_EQ(0, granted(self->pipe[0]));
	w1 = holder(self->name, -1, 3, "who-w1", -1);
	ASSERT_EQ(0, wait_waiters(self->fd, 1));
	usleep(20000);
	w2 = holder(self->name, -1, 2, "who-w2", -1);
	ASSERT_EQ(0, wait_waiters(self->fd, 2));

	ASSERT_EQ(0, holders(self->fd, who, MAX_WHO, &a));
	EXPECT_EQ(2, a.holders);
	EXPECT_EQ(2, a.waiters);
	EXPECT_EQ(getpid(), who[0].pid);
	EXPECT_EQ(1, who[0].weight);
	EXPECT_STREQ("who-test", who[0].comm);
	EXPECT_EQ(0, who[0].flags);
	EXPECT_EQ(h1, who[1].pid);
	EXPECT_EQ(2, who[1].weight);
	EXPECT_STREQ("who-h1", who[1].comm);
	EXPECT_EQ(w1, who[2].pid);
	EXPECT_EQ(3, who[2].weight);
	EXPECT_STREQ("who-w1", who[2].comm);
	EXPECT_EQ(WSEM_HOLDER_WAITING, who[2].flags);
	EXPECT_EQ(w2, who[3].pid);
	EXPECT_EQ(2, who[3].weight);
	EXPECT_STREQ("who-w2", who[3].comm);
	EXPECT_EQ(WSEM_HOLDER_WAITING, who[3].flags);
	/* The first waiter has waited longer, by the 20 ms at least. */
	EXPECT_LE(who[3].age_ns + 20 * 1000000ULL, who[2].age_ns);
	for (i = 0; i < 4; i++)
		EXPECT_EQ(0, who[i].__pad);
	/* Entries past the ones written are left alone. */
	EXPECT_EQ(0xa5a5a5a5a5a5a5a5ULL, who[4].weight);

	/* Kill the first waiter: the second moves up. */
	reap(w1);
	ASSERT_EQ(0, wait_waiters(self->fd, 1));
	ASSERT_EQ(0, holders(self->fd, who, MAX_WHO, &a));
	EXPECT_EQ(2, a.holders);
	EXPECT_EQ(1, a.waiters);
	EXPECT_EQ(w2, who[2].pid);
	EXPECT_EQ(WSEM_HOLDER_WAITING, who[2].flags);
	/* 1 + 2 + 2 > 4: w2 waits until h1 goes, then holds. */
	reap(h1);
	ASSERT_EQ(0, wait_waiters(self->fd, 0));
	ASSERT_EQ(0, holders(self->fd, who, MAX_WHO, &a));
	EXPECT_EQ(2, a.holders);
	EXPECT_EQ(w2, who[1].pid);
	EXPECT_EQ(0, who[1].flags);
	reap(w2);
	ASSERT_EQ(0, holders(self->fd, who, MAX_WHO, &a));
	EXPECT_EQ(1, a.holders);
	EXPECT_EQ(0, a.waiters);
	EXPECT_EQ(0, wsem_release(self->fd, 1));
	ASSERT_EQ(0, holders(self->fd, who, MAX_WHO, &a));
	EXPECT_EQ(0, a.holders);
}

/*
 * A handle that gave back all it held is not listed, and is again once it
 * holds again; closing a holder takes it off the list.
 */
TEST_F(who, a_handle_that_holds_nothing_is_not_listed)
{
	const uint64_t untouched = 0xa5a5a5a5a5a5a5a5ULL;
	struct wsem_holder who[MAX_WHO];
	struct wsem_holders_args a;
	int other;

	if (self->fd < 0)
		return;
	other = wsem_reopen(self->fd, O_CLOEXEC);
	ASSERT_LE(0, other);
	ASSERT_EQ(0, wsem_acquire(self->fd, 1));
	ASSERT_EQ(0, wsem_acquire(other, 2));
	ASSERT_EQ(0, wsem_release(self->fd, 1));
	ASSERT_EQ(0, holders(self->fd, who, MAX_WHO, &a));
	EXPECT_EQ(1, a.holders);
	EXPECT_EQ(2, who[0].weight);
	EXPECT_EQ(untouched, who[1].weight);

	ASSERT_EQ(0, wsem_acquire(self->fd, 1));
	ASSERT_EQ(0, holders(self->fd, who, MAX_WHO, &a));
	EXPECT_EQ(2, a.holders);
	EXPECT_EQ(3, who[0].weight + who[1].weight);
	EXPECT_EQ(untouched, who[2].weight);

	EXPECT_EQ(0, close(other));
	ASSERT_EQ(0, holders(self->fd, who, MAX_WHO, &a));
	EXPECT_EQ(1, a.holders);
	EXPECT_EQ(1, who[0].weight);
	EXPECT_EQ(untouched, who[1].weight);
	EXPECT_EQ(0, wsem_release(self->fd, 1));
	ASSERT_EQ(0, holders(self->fd, who, MAX_WHO, &a));
	EXPECT_EQ(0, a.holders);
	EXPECT_EQ(untouched, who[0].weight);
}

/*
 * One handle is one holder, whoever acquires through it: a forked child
 * and a process that received it over SCM_RIGHTS become its last acquirer;
 * dup() is the same handle; a reopen is another.
 */
TEST_F(who, one_holder_per_handle_across_fork_dup_pass_reopen)
{
	struct wsem_holder who[MAX_WHO];
	struct wsem_holders_args a;
	int sk[2], dupfd, re, status;
	pid_t pid;

	if (self->fd < 0)
		return;
	ASSERT_EQ(0, wsem_acquire(self->fd, 1));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		prctl(PR_SET_NAME, "who-fork");
		_exit(wsem_acquire(self->fd, 1) ? 1 : 0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, status);
	ASSERT_EQ(0, holders(self->fd, who, MAX_WHO, &a));
	EXPECT_EQ(1, a.holders);
	EXPECT_EQ(2, who[0].weight);
	/* The child is gone: not visible, 0. */
	EXPECT_EQ(0, who[0].pid);
	EXPECT_STREQ("who-fork", who[0].comm);

	dupfd = dup(self->fd);
	ASSERT_LE(0, dupfd);
	ASSERT_EQ(0, wsem_acquire(dupfd, 1));
	ASSERT_EQ(0, holders(self->fd, who, MAX_WHO, &a));
	EXPECT_EQ(1, a.holders);
	EXPECT_EQ(3, who[0].weight);
	EXPECT_EQ(getpid(), who[0].pid);

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sk));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int fd = recv_fd(sk[1]);

		prctl(PR_SET_NAME, "who-pass");
		if (fd < 0 || wsem_release(fd, 3) || wsem_acquire(fd, 1))
			_exit(1);
		if (write(sk[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	ASSERT_EQ(0, send_fd(sk[0], self->fd, 0));
	ASSERT_EQ(1, read(sk[0], &status, 1));
	ASSERT_EQ(0, holders(self->fd, who, MAX_WHO, &a));
	EXPECT_EQ(1, a.holders);
	EXPECT_EQ(1, who[0].weight);
	EXPECT_EQ(pid, who[0].pid);
	EXPECT_STREQ("who-pass", who[0].comm);

	re = wsem_reopen(self->fd, O_CLOEXEC);
	ASSERT_LE(0, re);
	ASSERT_EQ(0, wsem_acquire(re, 2));
	ASSERT_EQ(0, holders(self->fd, who, MAX_WHO, &a));
	EXPECT_EQ(2, a.holders);
	EXPECT_EQ(pid, who[0].pid);
	EXPECT_EQ(getpid(), who[1].pid);
	EXPECT_EQ(2, who[1].weight);
	EXPECT_EQ(0, close(re));
	ASSERT_EQ(0, holders(self->fd, who, MAX_WHO, &a));
	EXPECT_EQ(1, a.holders);
	reap(pid);
	EXPECT_EQ(0, wsem_release(self->fd, 1));
	EXPECT_EQ(0, close(dupfd));
	EXPECT_EQ(0, close(sk[0]));
	EXPECT_EQ(0, close(sk[1]));
}

/*
 * From a child PID namespace: the host's pids are 0, its own are its; of
 * a process it cannot see, neither the command nor the cgroup is shown.
 */
TEST_F(who, pids_as_the_caller_sees_them)
{
	struct wsem_holder who[MAX_WHO];
	struct wsem_holders_args a;
	int p[2], status;
	pid_t h1, outer;
	int32_t got[6];

	if (self->fd < 0)
		return;
	ASSERT_EQ(0, wsem_acquire(self->fd, 1));
	ASSERT_EQ(0, pipe(p));
	outer = fork();
	ASSERT_LE(0, outer);
	if (outer == 0) {
		pid_t inner;

		if (unshare(CLONE_NEWPID))
			_exit(1);
		inner = fork();
		if (inner < 0)
			_exit(1);
		if (inner == 0) {
			/* PID 1 of the new namespace: looks, holds, looks. */
			if (holders(self->fd, who, MAX_WHO, &a))
				_exit(1);
			got[3] = who[0].pid;
			got[4] = who[0].comm[0];
			got[5] = who[0].cgroup[0];
			if (wsem_acquire(self->fd, 1) ||
			    holders(self->fd, who, MAX_WHO, &a))
				_exit(1);
			got[0] = a.holders;
			got[1] = who[0].pid;
			got[2] = getpid();
			if (write(p[1], got, sizeof(got)) != sizeof(got))
				_exit(1);
			pause();
			_exit(0);
		}
		waitpid(inner, &status, 0);
		_exit(0);
	}
	ASSERT_EQ(sizeof(got), read(p[0], got, sizeof(got)));
	EXPECT_EQ(1, got[0]);		/* one handle, last acquirer inner */
	EXPECT_EQ(1, got[2]);		/* the inner child is PID 1 ... */
	EXPECT_EQ(1, got[1]);		/* ... and sees itself as 1 */
	EXPECT_EQ(0, got[3]);		/* the host's process: invisible */
	EXPECT_EQ(0, got[4]);		/* ... its command too */
	EXPECT_EQ(0, got[5]);		/* ... and its cgroup */
	/* The host sees the inner child under its host pid. */
	ASSERT_EQ(0, holders(self->fd, who, MAX_WHO, &a));
	h1 = who[0].pid;
	EXPECT_LT(outer, h1);
	EXPECT_EQ(2, who[0].weight);
	EXPECT_EQ(0, wsem_release(self->fd, 2));
	kill(outer, SIGKILL);
	kill(h1, SIGKILL);
	waitpid(outer, NULL, 0);
	close(p[0]);
	close(p[1]);
}

/* Cgroup paths, from the host and from inside a cgroup namespace. */
TEST_F(who, cgroups_as_the_caller_sees_them)
{
	struct wsem_holder who[MAX_WHO];
	struct wsem_holders_args a;
	char cg[128], procs[160], pid_s[16], seen[2][WSEM_CGROUP_MAX];
	struct statfs sfs;
	int p[2], q[2];
	pid_t pid;

	if (self->fd < 0)
		return;
	if (statfs(CGROOT, &sfs) || sfs.f_type != CGROUP2_MAGIC)
		SKIP(return, "%s is not a cgroup2 mount", CGROOT);
	snprintf(cg, sizeof(cg), "%s/who%d", CGROOT, getpid());
	ASSERT_EQ(0, mkdir(cg, 0755));
	ASSERT_EQ(0, pipe(p));
	ASSERT_EQ(0, pipe(q));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		char c;

		/* Wait to be moved, then hold, look from a cgroup ns. */
		if (read(p[0], &c, 1) != 1 || wsem_acquire(self->fd, 1) ||
		    unshare(CLONE_NEWCGROUP) ||
		    holders(self->fd, who, MAX_WHO, &a) || a.holders != 1)
			_exit(1);
		memcpy(seen[0], who[0].cgroup, sizeof(seen[0]));
		if (write(q[1], seen[0], sizeof(seen[0])) != sizeof(seen[0]))
			_exit(1);
		pause();
		_exit(0);
	}
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg);
	snprintf(pid_s, sizeof(pid_s), "%d", pid);
	ASSERT_EQ(0, write_file(procs, pid_s));
	ASSERT_EQ(1, write(p[1], "m", 1));
	ASSERT_EQ(sizeof(seen[1]), read(q[0], seen[1], sizeof(seen[1])));
	ASSERT_EQ(0, holders(self->fd, who, MAX_WHO, &a));
	ASSERT_EQ(1, a.holders);
	snprintf(procs, sizeof(procs), "/who%d", getpid());
	EXPECT_STREQ(procs, who[0].cgroup);
	/* Inside its own cgroup namespace, its cgroup is the root. */
	EXPECT_STREQ("/", seen[1]);
	reap(pid);
	close(p[0]);
	close(p[1]);
	close(q[0]);
	close(q[1]);
	EXPECT_EQ(0, rmdir(cg));
}

/*
 * A holder whose cgroup takes no reference (cgroup_tryget() fails: one
 * that is being freed) shows no cgroup, not the previous holder's.  The
 * window is too narrow to hit by chance: a test build's knob makes the
 * next try fail.  The handle's previous acquirer is this process; the new
 * one a child in a cgroup of its own.
 */
#define CGROUP_FAIL	"/sys/module/wsem/parameters/test_cgroup_tryget_fail"

TEST_F(who, a_cgroup_that_takes_no_reference_is_shown_as_none)
{
	struct wsem_holder who[MAX_WHO];
	struct wsem_holders_args a;
	char cg[128], procs[160], pid_s[16], c;
	int h, p[2], q[2];
	struct statfs sfs;
	pid_t pid;

	if (self->fd < 0)
		return;
	if (statfs(CGROOT, &sfs) || sfs.f_type != CGROUP2_MAGIC)
		SKIP(return, "%s is not a cgroup2 mount", CGROOT);
	if (access(CGROUP_FAIL, W_OK))
		SKIP(return, "not a test build of the module");
	h = wsem_reopen(self->fd, O_CLOEXEC);
	ASSERT_LE(0, h);
	ASSERT_EQ(0, wsem_acquire(h, 1));
	ASSERT_EQ(0, wsem_release(h, 1));
	snprintf(cg, sizeof(cg), "%s/none%d", CGROOT, getpid());
	ASSERT_EQ(0, mkdir(cg, 0755));
	ASSERT_EQ(0, pipe(p));
	ASSERT_EQ(0, pipe(q));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		/* Moved, acquire through @h and hold. */
		if (read(p[0], &c, 1) != 1 || wsem_acquire(h, 1) ||
		    write(q[1], "g", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg);
	snprintf(pid_s, sizeof(pid_s), "%d", pid);
	ASSERT_EQ(0, write_file(procs, pid_s));
	ASSERT_EQ(0, write_file(CGROUP_FAIL, "1"));
	ASSERT_EQ(1, write(p[1], "m", 1));
	ASSERT_EQ(1, read(q[0], &c, 1));
	ASSERT_EQ(0, holders(self->fd, who, MAX_WHO, &a));
	ASSERT_EQ(1, a.holders);
	EXPECT_EQ(1, who[0].weight);
	EXPECT_EQ(pid, who[0].pid);
	EXPECT_STREQ("", who[0].cgroup) {
		TH_LOG("shown with the previous holder's cgroup");
	}
	reap(pid);
	write_file(CGROUP_FAIL, "0");
	EXPECT_EQ(0, close(h));
	close(p[0]);
	close(p[1]);
	close(q[0]);
	close(q[1]);
	EXPECT_EQ(0, rmdir(cg));
}

/*
 * HOLDERS needs a handle open for reading: a write-only handle of a wsemfs
 * file (mode -w- for others) gets EACCES; a user without read permission
 * has no handle in the first place.
 */
TEST_F(who, holders_need_read_permission)
{
	struct wsem_holder who[MAX_WHO];
	struct wsem_holders_args a;
	char dir[] = "/tmp/wsem-who.XXXXXX", path[128];
	int status;
	pid_t pid;

	if (self->fd < 0)
		return;
	ASSERT_NE(NULL, mkdtemp(dir));
	ASSERT_EQ(0, chmod(dir, 0755));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int fd, e1, e2;

		if (unshare(CLONE_NEWNS) ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
		    mount("wsem", dir, "wsem", 0, NULL))
			_exit(10);
		snprintf(path, sizeof(path), "%s/%s", dir, self->name);
		if (chmod(path, 0622))
			_exit(11);
		if (setgid(NOBODY) || setuid(NOBODY))
			_exit(12);
		fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd < 0)
			_exit(13);
		e1 = holders(fd, who, MAX_WHO, &a) ? errno : 0;
		/* ... and by name: no read permission, no handle. */
		e2 = wsem_open(self->name, 0, 0, 0) < 0 ? errno : 0;
		_exit(e1 == EACCES && e2 == EACCES ? 0 : 20);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(0, rmdir(dir));
}

/* Sizes: short entries, longer ones with a zero tail, bad arguments. */
TEST_F(who, entry_sizes_and_bad_arguments)
{
	struct wsem_holders_args a;
	unsigned char buf[2 * 512];
	size_t i;

	if (self->fd < 0)
		return;
	ASSERT_EQ(0, wsem_acquire(self->fd, 1));
	memset(buf, 0xa5, sizeof(buf));
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.entries = (uintptr_t)buf;
	a.count = 2;
	a.entry_size = 512;
	ASSERT_EQ(0, ioctl(self->fd, WSEM_IOC_HOLDERS, &a));
	EXPECT_EQ(1, a.holders);
	for (i = sizeof(struct wsem_holder); i < 512; i++)
		ASSERT_EQ(0, buf[i]);
	EXPECT_EQ(0xa5, buf[512]);	/* the second entry: untouched */

	/* Short entries or struct, flags, an unbound handle. */
	a.entry_size = WSEM_HOLDER_SIZE_VER0 - 8;
	EXPECT_EQ(-1, ioctl(self->fd, WSEM_IOC_HOLDERS, &a));
	EXPECT_EQ(EINVAL, errno);
	a.entry_size = WSEM_HOLDER_SIZE_VER0;
	a.flags = 1;
	EXPECT_EQ(-1, ioctl(self->fd, WSEM_IOC_HOLDERS, &a));
	EXPECT_EQ(EINVAL, errno);
	a.flags = 0;
	a.size = 16;
	EXPECT_EQ(-1, ioctl(self->fd, WSEM_IOC_HOLDERS, &a));
	EXPECT_EQ(EINVAL, errno);
	a.size = sizeof(a);
	a.entries = 8;
	EXPECT_EQ(-1, ioctl(self->fd, WSEM_IOC_HOLDERS, &a));
	EXPECT_EQ(EFAULT, errno);
	/* Counting only: no room, the totals still come back. */
	a.count = 0;
	a.holders = 77;
	EXPECT_EQ(0, ioctl(self->fd, WSEM_IOC_HOLDERS, &a));
	EXPECT_EQ(1, a.holders);
	EXPECT_EQ(0, wsem_release(self->fd, 1));
}

static void on_signal(int sig)
{
	(void)sig;
}

/* The statistics of a scripted run, exactly. */
TEST_F(who, statistics_exact)
{
	struct wsem_stat st, before, after;
	uint64_t timed_out;
	pid_t w;
	int status;

	if (self->fd < 0)
		return;
	ASSERT_EQ(0, wsem_acquire(self->fd, CAP));		/* at once */
	EXPECT_EQ(-1, wsem_tryacquire(self->fd, 1));		/* nothing */
	/*
	 * The timed-out wait is counted from its enqueue, the 30 ms from the
	 * call: a loaded guest can put milliseconds between the two (ci51:
	 * three waits counted 26.6 ms together), so what it added is read
	 * here, not assumed to be 30 ms.
	 */
	ASSERT_EQ(0, wsem_stat(self->fd, &before));
	EXPECT_EQ(-1, wsem_acquire_timeout(self->fd, 1, 30000000));
	EXPECT_EQ(ETIMEDOUT, errno);				/* timeout */
	ASSERT_EQ(0, wsem_stat(self->fd, &after));
	timed_out = after.wait_ns_total - before.wait_ns_total;
	EXPECT_LT(0, timed_out);
	/*
	 * At most the 30 ms and a second of a loaded guest's lateness: a
	 * wait counted past its end (to the stat, say) or from long before
	 * its enqueue (the handle's open, say) fails here.
	 */
	EXPECT_GE(30000000ULL + 1000000000ULL, timed_out);
	EXPECT_EQ(timed_out, after.wait_ns_max);
	/* A waiter for 2, granted after 50 ms. */
	w = fork();
	ASSERT_LE(0, w);
	if (w == 0)
		_exit(wsem_acquire(self->fd, 2) ? 1 : 0);
	ASSERT_EQ(0, wait_waiters(self->fd, 1));
	usleep(50000);
	ASSERT_EQ(0, wsem_release(self->fd, 2));
	ASSERT_EQ(w, waitpid(w, &status, 0));
	EXPECT_EQ(0, status);
	/* A waiter for 3 that a shrink to 2 ends, one a signal ends. */
	w = fork();
	ASSERT_LE(0, w);
	if (w == 0)
		_exit(wsem_acquire(self->fd, 3) ? errno : 0);
	ASSERT_EQ(0, wait_waiters(self->fd, 1));
	ASSERT_EQ(0, wsem_set_capacity(self->fd, 2));
	ASSERT_EQ(w, waitpid(w, &status, 0));
	EXPECT_EQ(EINVAL, WEXITSTATUS(status));
	w = fork();
	ASSERT_LE(0, w);
	if (w == 0) {
		struct sigaction sa = { .sa_handler = on_signal };

		sigaction(SIGUSR1, &sa, NULL);
		_exit(wsem_acquire(self->fd, 1) ? errno : 0);
	}
	ASSERT_EQ(0, wait_waiters(self->fd, 1));
	kill(w, SIGUSR1);
	ASSERT_EQ(w, waitpid(w, &status, 0));
	EXPECT_EQ(EINTR, WEXITSTATUS(status));

	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(1, st.grants_at_once);
	EXPECT_EQ(1, st.grants_waited);
	EXPECT_EQ(1, st.timeouts);
	EXPECT_EQ(1, st.interrupts);
	EXPECT_EQ(1, st.shrunk);
	EXPECT_EQ(1, st.queue_max);
	EXPECT_LE(50000000ULL, st.wait_ns_max);
	/* the longest wait (the grant's) and the timed-out one, both in */
	EXPECT_LE(st.wait_ns_max + timed_out, st.wait_ns_total);
	EXPECT_EQ(0, wsem_release(self->fd, CAP));
	EXPECT_EQ(0, wsem_set_capacity(self->fd, CAP));
}

/* An old caller of stat (size VER0) gets VER0 bytes, nothing beyond. */
TEST_F(who, old_size_stat_gets_the_old_struct)
{
	unsigned char buf[WSEM_STAT_SIZE_VER1 + 16];
	struct wsem_stat *st = (struct wsem_stat *)buf;
	size_t i;

	if (self->fd < 0)
		return;
	memset(buf, 0xa5, sizeof(buf));
	st->size = WSEM_STAT_SIZE_VER0;
	ASSERT_EQ(0, ioctl(self->fd, WSEM_IOC_STAT, st));
	EXPECT_EQ(WSEM_STAT_SIZE_VER0, st->size);
	EXPECT_EQ(CAP, st->capacity);
	for (i = WSEM_STAT_SIZE_VER0; i < sizeof(buf); i++)
		ASSERT_EQ(0xa5, buf[i]);
}

/*
 * A program built against the first wsem.h calls the functions wsem_stat
 * and wsem_list with a 136-byte struct: the library must not write past
 * it.  The parenthesized names call those functions, as such a program
 * does; the macros of today's header pass today's size.
 */
TEST_F(who, library_old_size_callers)
{
	unsigned char buf[WSEM_STAT_SIZE_VER1 + 16];
	unsigned char lb[3 * WSEM_STAT_SIZE_VER0 + 16];
	struct wsem_stat st, *e;
	struct wsem_holder who[4];
	size_t i, nh = 99;
	ssize_t n;

	if (self->fd < 0)
		return;
	memset(buf, 0xa5, sizeof(buf));
	ASSERT_EQ(0, (wsem_stat)(self->fd, (struct wsem_stat *)buf));
	e = (struct wsem_stat *)buf;
	EXPECT_EQ(WSEM_STAT_SIZE_VER0, e->size);
	EXPECT_EQ(CAP, e->capacity);
	for (i = WSEM_STAT_SIZE_VER0; i < sizeof(buf); i++)
		ASSERT_EQ(0xa5, buf[i]);

	memset(lb, 0xa5, sizeof(lb));
	n = (wsem_list)((struct wsem_stat *)lb, 3);
	ASSERT_LE(1, n);
	for (i = 0; i < (size_t)n && i < 3; i++) {
		e = (struct wsem_stat *)(lb + i * WSEM_STAT_SIZE_VER0);
		EXPECT_EQ(WSEM_STAT_SIZE_VER0, e->size);
	}
	for (i = 3 * WSEM_STAT_SIZE_VER0; i < sizeof(lb); i++)
		ASSERT_EQ(0xa5, lb[i]);

	/* Today's callers get today's struct, statistics included. */
	ASSERT_EQ(0, wsem_acquire(self->fd, 1));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(sizeof(st), st.size);
	EXPECT_EQ(1, st.grants_at_once);
	EXPECT_EQ(1, wsem_holders(self->fd, who, 4, &nh));
	EXPECT_EQ(1, nh);
	EXPECT_EQ(getpid(), who[0].pid);
	EXPECT_EQ(-1, wsem_stat_sized(self->fd, &st, WSEM_STAT_SIZE_VER0 - 8));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, wsem_release(self->fd, 1));
}

/* The text of a handle lists the holders and the waiters. */
TEST_F(who, text_lists_holders_and_waiters)
{
	char text[4096], want[128];
	pid_t w;
	ssize_t n;

	if (self->fd < 0)
		return;
	ASSERT_EQ(0, wsem_acquire(self->fd, CAP));
	w = holder(self->name, -1, 2, "who-tw", -1);
	ASSERT_EQ(0, wait_waiters(self->fd, 1));
	n = pread(self->fd, text, sizeof(text) - 1, 0);
	ASSERT_LT(0, n);
	text[n] = 0;
	snprintf(want, sizeof(want), "holders: 1\nholder: pid %d weight %d ",
		 getpid(), CAP);
	EXPECT_NE(NULL, strstr(text, want)) {
		TH_LOG("%s", text);
	}
	snprintf(want, sizeof(want), "\nwaiter: pid %d weight 2 waiting_ns ",
		 w);
	EXPECT_NE(NULL, strstr(text, want));
	EXPECT_NE(NULL, strstr(text, " comm who-tw "));
	EXPECT_NE(NULL, strstr(text, "\ngrants_at_once: 1\n"));
	reap(w);
	EXPECT_EQ(0, wsem_release(self->fd, CAP));
}

/* WSEM_IOC_SET_LABEL of @label (up to 64 bytes, as given) with @flags. */
static int set_label(int fd, const char *label, size_t len, uint64_t flags)
{
	struct wsem_label_args a = { .size = sizeof(a), .flags = flags };

	memcpy(a.label, label, len);
	return ioctl(fd, WSEM_IOC_SET_LABEL, &a);
}

/* The label of the first entry of @fd's holders view, into @label. */
static int first_label(int fd, char *label)
{
	struct wsem_holder who[MAX_WHO];
	struct wsem_holders_args a;

	if (holders(fd, who, MAX_WHO, &a) || !a.holders)
		return -1;
	memcpy(label, who[0].label, WSEM_LABEL_MAX);
	return 0;
}

/*
 * A labelled holder and a labelled waiter: the label comes with each
 * entry of WSEM_IOC_HOLDERS and at the end of each line of the text;
 * "" clears it (the text says "-"), and a reopen starts without one.
 */
TEST_F(who, labels_in_holders_and_text)
{
	struct wsem_holder who[MAX_WHO];
	struct wsem_holders_args a;
	char text[4096], want[160];
	int ready[2], fd2;
	pid_t w;
	ssize_t n;

	if (self->fd < 0)
		return;
	ASSERT_EQ(0, set_label(self->fd, "make -j8 all", 13, 0));
	ASSERT_EQ(0, wsem_acquire(self->fd, CAP));
	ASSERT_EQ(0, pipe(ready));
	w = fork();
	ASSERT_LE(0, w);
	if (w == 0) {
		int fd = wsem_open(self->name, 0, 0, 0);

		if (fd < 0 || wsem_set_label(fd, "cargo build ~!\"'\\") ||
		    write(ready[1], "l", 1) != 1)
			_exit(1);
		wsem_acquire(fd, 2);
		_exit(2);
	}
	ASSERT_EQ(1, read(ready[0], text, 1));
	ASSERT_EQ(0, wait_waiters(self->fd, 1));

	ASSERT_EQ(0, holders(self->fd, who, MAX_WHO, &a));
	EXPECT_EQ(1, a.holders);
	EXPECT_EQ(1, a.waiters);
	EXPECT_STREQ("make -j8 all", who[0].label);
	EXPECT_STREQ("cargo build ~!\"'\\", who[1].label);
	EXPECT_EQ(w, who[1].pid);

	n = pread(self->fd, text, sizeof(text) - 1, 0);
	ASSERT_LT(0, n);
	text[n] = 0;
	snprintf(want, sizeof(want), "\nholder: pid %d weight %d ", getpid(),
		 CAP);
	EXPECT_NE(NULL, strstr(text, want));
	EXPECT_NE(NULL, strstr(text, " label make -j8 all\n")) {
		TH_LOG("%s", text);
	}
	EXPECT_NE(NULL, strstr(text, " label cargo build ~!\"'\\\n"));

	/* Cleared: empty in the entry, "-" in the text. */
	EXPECT_EQ(0, set_label(self->fd, "", 0, 0));
	ASSERT_EQ(0, holders(self->fd, who, MAX_WHO, &a));
	EXPECT_EQ(0, who[0].label[0]);
	n = pread(self->fd, text, sizeof(text) - 1, 0);
	ASSERT_LT(0, n);
	text[n] = 0;
	EXPECT_NE(NULL, strstr(text, " label -\n"));
	/* NULL clears too; 63 bytes is the most a label holds. */
	memset(want, 'x', 63);
	want[63] = 0;
	EXPECT_EQ(0, wsem_set_label(self->fd, want));
	ASSERT_EQ(0, holders(self->fd, who, MAX_WHO, &a));
	EXPECT_STREQ(want, who[0].label);
	EXPECT_EQ(0, wsem_set_label(self->fd, NULL));
	ASSERT_EQ(0, holders(self->fd, who, MAX_WHO, &a));
	EXPECT_EQ(0, who[0].label[0]);

	/* A reopen is a handle of its own: no label. */
	EXPECT_EQ(0, wsem_set_label(self->fd, "first"));
	fd2 = wsem_reopen(self->fd, 0);
	ASSERT_LE(0, fd2);
	EXPECT_EQ(0, wsem_release(self->fd, CAP));
	reap(w);
	ASSERT_EQ(0, wsem_acquire(fd2, 1));
	ASSERT_EQ(0, first_label(self->fd, want));
	EXPECT_EQ(0, want[0]);
	EXPECT_EQ(0, close(fd2));
	close(ready[0]);
	close(ready[1]);
}

/*
 * Bad labels and arguments: EINVAL, and the label stays as it was; a
 * read-only handle gets EBADF, an unbound one EINVAL.
 */
TEST_F(who, bad_labels_change_nothing)
{
	struct wsem_label_args la;
	char label[WSEM_LABEL_MAX + 8], x64[WSEM_LABEL_MAX];
	const char *bad[] = { "tab\there", "nl\n", "del\x7f", "hi\x80",
			      "\xff", "\x1b[31m" };
	struct wsem_open_args o = { .size = sizeof(o) };
	unsigned int i;
	int ro, raw;

	if (self->fd < 0)
		return;
	ASSERT_EQ(0, wsem_acquire(self->fd, 1));
	ASSERT_EQ(0, set_label(self->fd, "good", 4, 0));
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		EXPECT_EQ(-1, set_label(self->fd, bad[i], strlen(bad[i]), 0));
		EXPECT_EQ(EINVAL, errno) TH_LOG("label %u", i);
		EXPECT_EQ(-1, wsem_set_label(self->fd, bad[i]));
		EXPECT_EQ(EINVAL, errno);
	}
	/* 64 bytes and no NUL. */
	memset(x64, 'x', sizeof(x64));
	EXPECT_EQ(-1, set_label(self->fd, x64, sizeof(x64), 0));
	EXPECT_EQ(EINVAL, errno);
	memset(label, 'x', sizeof(label));
	label[WSEM_LABEL_MAX] = 0;
	EXPECT_EQ(-1, wsem_set_label(self->fd, label));
	EXPECT_EQ(EINVAL, errno);
	/* Flags, a short struct, a non-zero tail. */
	EXPECT_EQ(-1, set_label(self->fd, "new", 3, 1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, set_label(self->fd, "new", 3, 1ULL << 63));
	EXPECT_EQ(EINVAL, errno);
	memset(&la, 0, sizeof(la));
	la.size = 16;
	EXPECT_EQ(-1, ioctl(self->fd, WSEM_IOC_SET_LABEL, &la));
	EXPECT_EQ(EINVAL, errno);
	{
		unsigned char big[sizeof(la) + 8] = { 0 };

		la.size = sizeof(big);
		memcpy(big, &la, sizeof(la));
		big[sizeof(la)] = 1;
		EXPECT_EQ(-1, ioctl(self->fd, WSEM_IOC_SET_LABEL, big));
		EXPECT_EQ(E2BIG, errno);
	}
	ASSERT_EQ(0, first_label(self->fd, label));
	EXPECT_STREQ("good", label);

	/* A read-only handle watches: it may not label. */
	ro = open("/dev/wsem", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, ro);
	snprintf(o.name, sizeof(o.name), "%s", self->name);
	ASSERT_EQ(0, ioctl(ro, WSEM_IOC_OPEN, &o));
	EXPECT_EQ(-1, set_label(ro, "ro", 2, 0));
	EXPECT_EQ(EBADF, errno);
	EXPECT_EQ(-1, wsem_set_label(ro, "ro"));
	EXPECT_EQ(EBADF, errno);
	/* An unbound handle has nobody to label. */
	raw = open("/dev/wsem", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, raw);
	EXPECT_EQ(-1, set_label(raw, "raw", 3, 0));
	EXPECT_EQ(EINVAL, errno);
	ASSERT_EQ(0, first_label(self->fd, label));
	EXPECT_STREQ("good", label);
	EXPECT_EQ(0, close(ro));
	EXPECT_EQ(0, close(raw));
	EXPECT_EQ(0, wsem_release(self->fd, 1));
}

/*
 * From a child PID namespace the host holder's label is not shown, in the
 * entries or the text; its own is, to itself and to the host.
 */
TEST_F(who, labels_hidden_from_a_child_pid_namespace)
{
	struct wsem_holder who[MAX_WHO];
	struct wsem_holders_args a;
	int p[2], status;
	pid_t outer;
	char got[3][WSEM_LABEL_MAX + 32];

	if (self->fd < 0)
		return;
	ASSERT_EQ(0, wsem_set_label(self->fd, "host job"));
	ASSERT_EQ(0, wsem_acquire(self->fd, 1));
	ASSERT_EQ(0, pipe(p));
	outer = fork();
	ASSERT_LE(0, outer);
	if (outer == 0) {
		pid_t inner;

		if (unshare(CLONE_NEWPID))
			_exit(1);
		inner = fork();
		if (inner < 0)
			_exit(1);
		if (inner == 0) {
			char text[4096], *l;
			ssize_t n;
			int fd;

			memset(got, 0, sizeof(got));
			if (holders(self->fd, who, MAX_WHO, &a) || !a.holders)
				_exit(1);
			memcpy(got[0], who[0].label, WSEM_LABEL_MAX);
			n = pread(self->fd, text, sizeof(text) - 1, 0);
			if (n < 0)
				_exit(1);
			text[n] = 0;
			l = strstr(text, "\nholder: ");
			if (l)
				snprintf(got[1], sizeof(got[1]), "%s",
					 strstr(l, " label ") ?: "");
			fd = wsem_open(self->name, 0, 0, 0);
			if (fd < 0 || wsem_set_label(fd, "inner job") ||
			    wsem_acquire(fd, 1) ||
			    holders(fd, who, MAX_WHO, &a) || a.holders != 2)
				_exit(1);
			memcpy(got[2], who[1].label, WSEM_LABEL_MAX);
			if (write(p[1], got, sizeof(got)) != sizeof(got))
				_exit(1);
			pause();
			_exit(0);
		}
		waitpid(inner, &status, 0);
		_exit(0);
	}
	ASSERT_EQ(sizeof(got), read(p[0], got, sizeof(got)));
	EXPECT_STREQ("", got[0]);
	EXPECT_EQ(0, strncmp(got[1], " label -\n", 9)) TH_LOG("%s", got[1]);
	EXPECT_STREQ("inner job", got[2]);
	/* The host sees both labels. */
	ASSERT_EQ(0, holders(self->fd, who, MAX_WHO, &a));
	EXPECT_EQ(2, a.holders);
	EXPECT_STREQ("host job", who[0].label);
	EXPECT_STREQ("inner job", who[1].label);
	EXPECT_EQ(0, wsem_release(self->fd, 1));
	kill(who[1].pid, SIGKILL);
	kill(outer, SIGKILL);
	waitpid(outer, NULL, 0);
	close(p[0]);
	close(p[1]);
}

/*
 * A caller of the first struct wsem_holder (entry_size VER0) is written
 * no label: the entries stay VER0 bytes apart and nothing past them moves.
 */
TEST_F(who, old_entry_size_gets_no_label)
{
	struct wsem_holders_args a = { .size = sizeof(a) };
	unsigned char buf[2 * WSEM_HOLDER_SIZE_VER0 + 8];
	struct wsem_holder *e = (struct wsem_holder *)buf;
	size_t i;

	if (self->fd < 0)
		return;
	ASSERT_EQ(0, wsem_set_label(self->fd, "label"));
	ASSERT_EQ(0, wsem_acquire(self->fd, 1));
	memset(buf, 0xa5, sizeof(buf));
	a.entries = (uintptr_t)buf;
	a.count = 2;
	a.entry_size = WSEM_HOLDER_SIZE_VER0;
	ASSERT_EQ(0, ioctl(self->fd, WSEM_IOC_HOLDERS, &a));
	EXPECT_EQ(1, a.holders);
	EXPECT_EQ(getpid(), e->pid);
	for (i = WSEM_HOLDER_SIZE_VER0; i < sizeof(buf); i++)
		ASSERT_EQ(0xa5, buf[i]);
	EXPECT_EQ(WSEM_HOLDER_SIZE_VER0 + WSEM_LABEL_MAX,
		  sizeof(struct wsem_holder));
	EXPECT_EQ(WSEM_HOLDER_SIZE_VER1, sizeof(struct wsem_holder));
	EXPECT_EQ(0, wsem_release(self->fd, 1));
}

/*
 * The tracepoints, enabled through tracefs, against a scripted run: a
 * grant at once, a queued waiter granted on release, a timeout and a
 * capacity change, each event with this semaphore's id.
 */
TEST_F(who, tracepoints_follow_a_scripted_run)
{
	char path[160], line[512], want[160];
	static const char *const ev[] = {
		"wsem_queue", "wsem_grant", "wsem_release", "wsem_wait_end",
		"wsem_capacity",
	};
	unsigned int i, seen[5] = { 0 };
	long long id;
	bool waited = false;
	FILE *f;
	pid_t w;
	int status;

	if (self->fd < 0)
		return;
	if (tracefs() || access(TRACEFS "/events/wsem/enable", W_OK))
		SKIP(return, "no tracefs with wsem's events");
	id = fdinfo_num(self->fd, "wsem-id");
	ASSERT_LE(0, id);
	ASSERT_EQ(0, write_file(TRACEFS "/tracing_on", "0"));
	ASSERT_EQ(0, write_file(TRACEFS "/trace", ""));
	ASSERT_EQ(0, write_file(TRACEFS "/events/wsem/enable", "1"));
	ASSERT_EQ(0, write_file(TRACEFS "/tracing_on", "1"));

	ASSERT_EQ(0, wsem_acquire(self->fd, CAP));
	w = fork();
	ASSERT_LE(0, w);
	if (w == 0)
		_exit(wsem_acquire(self->fd, 1) ? 1 : 0);
	ASSERT_EQ(0, wait_waiters(self->fd, 1));
	usleep(10000);
	ASSERT_EQ(0, wsem_release(self->fd, 1));
	ASSERT_EQ(w, waitpid(w, &status, 0));
	/*
	 * 200 ms: it queues before its deadline however slow the guest (with
	 * 1 ms, a preempted TCG guest once found it past and did not queue).
	 */
	EXPECT_EQ(-1, wsem_acquire_timeout(self->fd, 2, 200000000));
	/* A deadline already past: no queueing, but a timeout all the same. */
	EXPECT_EQ(-1, wsem_acquire_timeout(self->fd, 2, 0));
	EXPECT_EQ(ETIMEDOUT, errno);
	EXPECT_EQ(0, wsem_set_capacity(self->fd, CAP + 1));
	EXPECT_EQ(0, wsem_release(self->fd, CAP - 1));

	ASSERT_EQ(0, write_file(TRACEFS "/tracing_on", "0"));
	EXPECT_EQ(0, write_file(TRACEFS "/events/wsem/enable", "0"));
	f = fopen(TRACEFS "/trace", "re");
	ASSERT_NE(NULL, f);
	snprintf(want, sizeof(want), "id=%lld ", id);
	while (fgets(line, sizeof(line), f)) {
		if (!strstr(line, want))
			continue;
		for (i = 0; i < 5; i++) {
			snprintf(path, sizeof(path), " %s: ", ev[i]);
			if (strstr(line, path))
				seen[i]++;
		}
		snprintf(path, sizeof(path), "pid=%d weight=1 wait_ns=", w);
		if (strstr(line, " wsem_grant: ") && strstr(line, path) &&
		    !strstr(line, "wait_ns=0\n"))
			waited = true;
		if (strstr(line, " wsem_wait_end: "))
			EXPECT_NE(NULL, strstr(line, "error=-110 "));
		if (strstr(line, " wsem_capacity: "))
			EXPECT_NE(NULL, strstr(line, "old=4 capacity=5"));
	}
	fclose(f);
	EXPECT_EQ(2, seen[0]);		/* the waiter, the timed acquire */
	EXPECT_EQ(2, seen[1]);		/* at once, and the hand-off */
	EXPECT_EQ(2, seen[2]);		/* release 1, release 3 */
	EXPECT_EQ(2, seen[3]);		/* the timeouts, late and at once */
	EXPECT_EQ(1, seen[4]);
	EXPECT_TRUE(waited);
	ASSERT_EQ(0, write_file(TRACEFS "/trace", ""));
}

/*
 * A view longer than one hold of the lock (issue 42, point 5): NH handles
 * hold 1 each, NC children 1 each, and NW requests for the whole capacity
 * wait behind them, labelled in order; a holder or waiter's label says
 * which it is.
 */
#define NH	150
#define NC	80
#define NW	120
#define PARAMS	"/sys/module/wsem/parameters/"

struct big_view {
	int root;
	int held[NH];
	int kids[NC];
	int waiting[NW + 5];
	struct wsem_holder who[NH + NC + NW + 16];
	struct wsem_holders_args a;
	int ret;
};

static int labelled(int root, const char *fmt, int i)
{
	char label[WSEM_LABEL_MAX];
	int fd = wsem_reopen(root, 0);

	snprintf(label, sizeof(label), fmt, i);
	if (fd >= 0 && wsem_set_label(fd, label)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Queue a request for @weight through @fd: 0, or -1 if it did not wait. */
static int queue_async(int fd, uint64_t weight)
{
	return wsem_acquire_async(fd, weight) == -1 && errno == EINPROGRESS ?
	       0 : -1;
}

static int big_view_make(struct big_view *v)
{
	int i;

	v->root = wsem_open_anon(NH + NC, 0);
	if (v->root < 0)
		return -1;
	for (i = 0; i < NH; i++) {
		v->held[i] = labelled(v->root, "h%03d", i);
		if (v->held[i] < 0 || wsem_acquire(v->held[i], 1))
			return -1;
	}
	for (i = 0; i < NC; i++) {
		v->kids[i] = wsem_open_child(v->root, NULL, 0, 0600, 1);
		if (v->kids[i] < 0 || wsem_acquire(v->kids[i], 1))
			return -1;
	}
	for (i = 0; i < NW; i++) {
		v->waiting[i] = labelled(v->root, "w%03d", i);
		if (v->waiting[i] < 0 ||
		    queue_async(v->waiting[i], NH + NC) ||
		    wait_waiters(v->root, i + 1))
			return -1;
	}
	return 0;
}

static void big_view_close(struct big_view *v, int nwaiting)
{
	int i;

	for (i = 0; i < nwaiting; i++)
		close(v->waiting[i]);
	for (i = 0; i < NC; i++)
		close(v->kids[i]);
	for (i = 0; i < NH; i++)
		close(v->held[i]);
	close(v->root);
}

/* The view's entries in order, as "h000 h001 ... w000 ... c c ...". */
static void big_view_text(struct big_view *v, int n, char *out, size_t len)
{
	size_t at = 0;
	int i;

	out[0] = '\0';
	for (i = 0; i < n && at < len; i++)
		at += snprintf(out + at, len - at, "%s ",
			       v->who[i].flags & WSEM_HOLDER_CHILD ? "c" :
			       v->who[i].label);
}

/*
 * Every entry is listed, in order, though more than one hold of the lock
 * is needed; no hold looked at more than a batch (the test build's
 * counter); and a caller without room for all is told how many there are.
 */
TEST(a_long_view_is_read_in_batches)
{
	static struct big_view v;
	char want[4096], got[4096];
	size_t at = 0;
	int i, n;

	if (access("/dev/wsem", F_OK))
		SKIP(return, "/dev/wsem is missing (module not loaded)");
	ASSERT_EQ(0, big_view_make(&v));
	for (i = 0; i < NH; i++)
		at += snprintf(want + at, sizeof(want) - at, "h%03d ", i);
	for (i = 0; i < NW; i++)
		at += snprintf(want + at, sizeof(want) - at, "w%03d ", i);
	for (i = 0; i < NC; i++)
		at += snprintf(want + at, sizeof(want) - at, "c ");

	n = wsem_holders_children(v.root, v.who, NH + NC + NW + 16, NULL,
				  NULL);
	ASSERT_EQ(NH + NW + NC, n);
	ASSERT_EQ(0, holders(v.root, v.who, NH + NC + NW + 16, &v.a));
	EXPECT_EQ(NH, v.a.holders);
	EXPECT_EQ(NW, v.a.waiters);
	EXPECT_EQ(NC, v.a.children);
	big_view_text(&v, n, got, sizeof(got));
	EXPECT_STREQ(want, got);
	for (i = NH + NW; i < n; i++)
		EXPECT_EQ(1, v.who[i].weight);
	if (read_num(PARAMS "test_view_most_looked") >= 0) {
		EXPECT_GE(64, read_num(PARAMS "test_view_most_looked"));
		EXPECT_LT(0, read_num(PARAMS "test_view_most_looked"));
	}

	/* Room for the holders and ten waiters: the rest is counted. */
	ASSERT_EQ(0, holders(v.root, v.who, NH + 10, &v.a));
	EXPECT_EQ(NH, v.a.holders);
	EXPECT_EQ(NW, v.a.waiters);
	EXPECT_EQ(NC, v.a.children);
	EXPECT_STREQ("w009", v.who[NH + 9].label);
	/* No room at all: counts only. */
	ASSERT_EQ(0, holders(v.root, v.who, 0, &v.a));
	EXPECT_EQ(NH, v.a.holders);
	EXPECT_EQ(NW, v.a.waiters);
	EXPECT_EQ(NC, v.a.children);
	big_view_close(&v, NW);
}

static void *big_view_read(void *arg)
{
	struct big_view *v = arg;

	v->ret = holders(v->root, v->who, NH + NC + NW + 16, &v->a);
	return NULL;
}

/*
 * The lists change between two holds of a view's lock (the test build
 * holds the view after its first hold, which took h000..h063): holders
 * and waiters that stay are listed once and in order, those that went
 * before the view reached them are not, waiters that came are, and the
 * counts say what was listed.
 */
TEST(a_view_read_in_pieces_lists_who_stays_once_in_order)
{
	static struct big_view v;
	char want[4096], got[4096];
	size_t at = 0;
	pthread_t reader;
	int i, n;

	if (access("/dev/wsem", F_OK))
		SKIP(return, "/dev/wsem is missing (module not loaded)");
	if (access(PARAMS "test_view_delay_ms", F_OK))
		SKIP(return, "not a test build (no test_view_delay_ms)");
	ASSERT_EQ(0, big_view_make(&v));
	ASSERT_EQ(0, write_file(PARAMS "test_view_delay_ms", "1000"));
	ASSERT_EQ(0, pthread_create(&reader, NULL, big_view_read, &v));
	/* The knob reads 0 once the view sleeps after its first hold. */
	while (read_num(PARAMS "test_view_delay_ms"))
		usleep(1000);

	EXPECT_EQ(0, wsem_release(v.held[10], 1));	/* listed already */
	for (i = 100; i < 110; i++)			/* not yet: gone */
		EXPECT_EQ(0, wsem_release(v.held[i], 1));
	for (i = 10; i < 15; i++)			/* gone */
		EXPECT_EQ(0, close(v.waiting[i]));
	for (i = NW; i < NW + 5; i++) {			/* came */
		v.waiting[i] = labelled(v.root, "w%03d", i + 80);
		ASSERT_LE(0, v.waiting[i]);
		ASSERT_EQ(0, queue_async(v.waiting[i], NH + NC));
	}
	ASSERT_EQ(0, pthread_join(reader, NULL));
	ASSERT_EQ(0, v.ret);

	for (i = 0; i < NH; i++)
		if (i < 100 || i >= 110)
			at += snprintf(want + at, sizeof(want) - at,
				       "h%03d ", i);
	for (i = 0; i < NW + 5; i++)
		if (i < 10 || i >= 15)
			at += snprintf(want + at, sizeof(want) - at,
				       "w%03d ", i < NW ? i : i + 80);
	for (i = 0; i < NC; i++)
		at += snprintf(want + at, sizeof(want) - at, "c ");
	n = v.a.holders + v.a.waiters + v.a.children;
	EXPECT_EQ(NH - 10, v.a.holders);
	EXPECT_EQ(NW, v.a.waiters);
	EXPECT_EQ(NC, v.a.children);
	big_view_text(&v, n, got, sizeof(got));
	EXPECT_STREQ(want, got);

	for (i = 10; i < 15; i++)
		v.waiting[i] = dup(v.root);
	big_view_close(&v, NW + 5);
}

TEST_HARNESS_MAIN
