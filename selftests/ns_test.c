// SPDX-License-Identifier: GPL-2.0
/*
 * IPC namespaces (SPEC.md "Names" and "Namespaces end"): a named semaphore
 * lives in the IPC namespace of its creator, the same name can exist in two
 * namespaces, and when a namespace dies its names go within seconds while
 * handles passed out of it keep working, nameless.  A new namespace never
 * sees the names of an old one.
 *
 * Each namespace here is a forked child that unshare(CLONE_NEWIPC)s, does
 * one job (create or open the test's name, maybe take weight and pass its
 * handle out with SCM_RIGHTS), reports on a pipe and then either exits at
 * once (its namespace dies) or lingers until the test lets it go.
 *
 * A name shows only inside its own namespace (a handle passed out tells
 * nothing of it), so the test watches a dying namespace's names through a
 * wsemfs mount of it, which the child makes and which keeps nothing alive.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <wsem.h>

#include "kselftest_harness.h"
#include "util.h"

#define MAX_KIDS	2		/* namespace children per test */
#define VANISH_NS	(5 * NSEC)	/* bound for a dead namespace's names */
#define REPORT_WAIT_MS	10000		/* bound for a child to report */
#define REUSE_ROUNDS	20

/* What a namespace child does, in a new IPC namespace. */
struct ns_job {
	uint64_t create;	/* O_CREAT|O_EXCL with this capacity; 0: open */
	uint64_t acquire;	/* weight to take once it has a handle, or 0 */
	bool send;		/* pass the handle to the test (SCM_RIGHTS) */
	bool linger;		/* stay until the test lets it go */
	bool mount;		/* mount its namespace's wsemfs on the test's dir */
};

/* What a namespace child reports. */
struct ns_report {
	int unshare_err;	/* errno of a failed unshare(), or 0 */
	int ret;		/* the create or open call's return value */
	int err;		/* errno right after it */
	int acq_ret;		/* return value of the acquire, if any */
	int acq_err;		/* errno right after it */
	int send_ret;		/* return value of passing the handle, if asked */
	int64_t total;		/* what wsem_list() said exists, or -1 */
	int listed;		/* 1 if the test's name was in that list */
	struct wsem_stat st;	/* stat of its handle, if it has one */
	int mount_err;		/* errno of a failed mount, or 0 */
};

FIXTURE(ns) {
	/* this test's name: "ns.<test>.<pid>" */
	char name[WSEM_NAME_MAX];
	/* a handle of the test: its own or one passed out of a namespace */
	int fd;
	/* the test created the name in its own namespace: unlink it */
	bool created;
	/* namespace children not yet reaped, 0 if none */
	pid_t kids[MAX_KIDS];
	/* read end of each child's report pipe, 0 if none */
	int res[MAX_KIDS];
	/* write end of each child's "go" pipe: closing it lets it exit */
	int go[MAX_KIDS];
	/* our end of each child's socketpair for SCM_RIGHTS */
	int sock[MAX_KIDS];
	/* a directory where a child mounts its namespace's wsemfs */
	char mnt[64];
	/* the test's name in it */
	char path[128];
	/* setup done: false after a SKIP, so body and teardown do nothing */
	bool ready;
};

/* How many semaphores the caller's namespace lists; *@has: @name among them. */
static int64_t list_names(const char *name, int *has)
{
	struct wsem_stat *buf;
	ssize_t n, m, i;

	*has = 0;
	n = wsem_list(NULL, 0);
	if (n < 0)
		return -1;
	buf = calloc(n + 16, sizeof(*buf));
	if (!buf)
		return -1;
	m = wsem_list(buf, n + 16);
	for (i = 0; i < m && i < n + 16; i++)
		if (!strcmp(buf[i].name, name))
			*has = 1;
	free(buf);
	return m;
}

/* recv_fd(), giving up after REPORT_WAIT_MS without a message. */
static int recv_fd_wait(int sock)
{
	struct pollfd pfd = { .fd = sock, .events = POLLIN };

	if (poll(&pfd, 1, REPORT_WAIT_MS) != 1)
		return -1;
	return recv_fd(sock);
}

static void __attribute__((noreturn))
ns_child_main(const char *name, const char *mnt, const struct ns_job *job,
	      int out, int go, int sock)
{
	struct ns_report r;
	char byte;
	int fd = -1;

	memset(&r, 0, sizeof(r));
	r.total = -1;
	if (unshare(CLONE_NEWIPC)) {
		r.unshare_err = errno;
		goto report;
	}
	errno = 0;
	if (job->create)
		fd = wsem_open(name, O_CREAT | O_EXCL | O_CLOEXEC, 0600,
			       job->create);
	else
		fd = wsem_open(name, O_CLOEXEC, 0, 0);
	r.ret = fd;
	r.err = errno;
	if (fd >= 0 && job->acquire) {
		r.acq_ret = wsem_acquire(fd, job->acquire);
		r.acq_err = errno;
	}
	if (fd >= 0)
		wsem_stat(fd, &r.st);
	if (fd >= 0 && job->send)
		r.send_ret = send_fd(sock, fd, 0);
	if (job->mount && mount("wsem", mnt, "wsem", 0, NULL))
		r.mount_err = errno;
	r.total = list_names(name, &r.listed);
report:
	if (write(out, &r, sizeof(r)) != sizeof(r))
		_exit(1);
	if (job->linger)
		while (read(go, &byte, 1) > 0)
			;
	/* Leave the name behind: the namespace takes it along. */
	_exit(0);
}

/* Fork namespace child @slot running @job. */
static pid_t spawn_ns_child(FIXTURE_DATA(ns) *self, int slot,
			    const struct ns_job *job)
{
	int res[2], go[2], sk[2], i;
	pid_t pid;

	if (pipe2(res, O_CLOEXEC) || pipe2(go, O_CLOEXEC) ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sk))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		/* Keep nothing of the test's: no handle, no other pipes. */
		for (i = 3; i < 1024; i++)
			if (i != res[1] && i != go[0] && i != sk[1])
				close(i);
		ns_child_main(self->name, self->mnt, job, res[1], go[0],
			      sk[1]);
	}
	close(res[1]);
	close(go[0]);
	close(sk[1]);
	self->kids[slot] = pid;
	self->res[slot] = res[0];
	self->go[slot] = go[1];
	self->sock[slot] = sk[0];
	return pid;
}

static int read_report(FIXTURE_DATA(ns) *self, int slot, struct ns_report *r)
{
	struct pollfd pfd = { .fd = self->res[slot], .events = POLLIN };

	if (poll(&pfd, 1, REPORT_WAIT_MS) != 1)
		return -1;
	return read(self->res[slot], r, sizeof(*r)) == sizeof(*r) ? 0 : -1;
}

/* Let child @slot go and reap it: its namespace then has no process left. */
static int end_ns_child(FIXTURE_DATA(ns) *self, int slot)
{
	pid_t pid = self->kids[slot];
	int status;

	self->kids[slot] = 0;
	close(self->go[slot]);
	self->go[slot] = 0;
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* Run @job in a new namespace to its end; 0 and its report, or -1. */
static int run_ns_job(FIXTURE_DATA(ns) *self, int slot,
		      const struct ns_job *job, struct ns_report *r)
{
	if (spawn_ns_child(self, slot, job) < 0)
		return -1;
	if (read_report(self, slot, r))
		return -1;
	return end_ns_child(self, slot);
}

/*
 * Poll until the test's name is gone from the wsemfs mount of a dead
 * namespace; 0, or -1 after VANISH_NS.
 */
static int wait_nameless(FIXTURE_DATA(ns) *self)
{
	int64_t end = now_ns() + VANISH_NS;
	struct stat st;

	do {
		if (stat(self->path, &st) && errno == ENOENT)
			return 0;
		usleep(20000);
	} while (now_ns() < end);
	return -1;
}

FIXTURE_SETUP(ns)
{
	self->fd = -1;
	if (access("/dev/wsem", F_OK))
		SKIP(return, "/dev/wsem is missing (module not loaded)");
	snprintf(self->name, sizeof(self->name), "ns.%s.%d",
		 _metadata->name, getpid());
	snprintf(self->mnt, sizeof(self->mnt), "/tmp/wsem-ns.%d", getpid());
	snprintf(self->path, sizeof(self->path), "%s/%s", self->mnt,
		 self->name);
	ASSERT_EQ(0, mkdir(self->mnt, 0700));
	self->ready = true;
}

FIXTURE_TEARDOWN(ns)
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
		if (self->go[i] > 0)
			EXPECT_EQ(0, close(self->go[i]));
		if (self->sock[i] > 0)
			EXPECT_EQ(0, close(self->sock[i]));
	}
	if (self->fd >= 0)
		EXPECT_EQ(0, close(self->fd));
	if (self->created)
		EXPECT_EQ(0, wsem_unlink(self->name));
	umount2(self->mnt, MNT_DETACH);
	EXPECT_EQ(0, rmdir(self->mnt));
}

/* A name created in a new namespace is invisible from the parent's. */
TEST_F(ns, new_ns_name_invisible_from_parent)
{
	struct ns_job job = { .create = 2, .linger = true };
	struct ns_report r;
	int has;

	if (!self->ready)
		return;
	ASSERT_LT(0, spawn_ns_child(self, 0, &job));
	ASSERT_EQ(0, read_report(self, 0, &r));
	ASSERT_EQ(0, r.unshare_err);
	ASSERT_LE(0, r.ret) {
		TH_LOG("create in the new namespace: %s", strerror(r.err));
	}
	EXPECT_EQ(1, r.listed);

	EXPECT_EQ(-1, wsem_open(self->name, O_CLOEXEC, 0, 0));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_LE(0, list_names(self->name, &has));
	EXPECT_EQ(0, has);
	EXPECT_EQ(0, end_ns_child(self, 0));
}

/* A name of the parent's namespace is invisible from a new one. */
TEST_F(ns, parent_name_invisible_from_new_ns)
{
	struct ns_job job = { .create = 0 };
	struct ns_report r;

	if (!self->ready)
		return;
	self->fd = wsem_open(self->name, O_CREAT | O_EXCL | O_CLOEXEC, 0600, 2);
	ASSERT_LE(0, self->fd);
	self->created = true;
	ASSERT_EQ(0, run_ns_job(self, 0, &job, &r));
	ASSERT_EQ(0, r.unshare_err);
	EXPECT_EQ(-1, r.ret);
	EXPECT_EQ(ENOENT, r.err);
	EXPECT_EQ(0, r.listed);
	/* A brand-new namespace has no names at all. */
	EXPECT_EQ(0, r.total);
}

/* Two new namespaces do not see each other's names. */
TEST_F(ns, sibling_namespaces_isolated)
{
	struct ns_job create = { .create = 2, .linger = true };
	struct ns_job open = { .create = 0 };
	struct ns_report r;

	if (!self->ready)
		return;
	ASSERT_LT(0, spawn_ns_child(self, 0, &create));
	ASSERT_EQ(0, read_report(self, 0, &r));
	ASSERT_EQ(0, r.unshare_err);
	ASSERT_LE(0, r.ret) {
		TH_LOG("create in the first namespace: %s", strerror(r.err));
	}
	ASSERT_EQ(0, run_ns_job(self, 1, &open, &r));
	ASSERT_EQ(0, r.unshare_err);
	EXPECT_EQ(-1, r.ret);
	EXPECT_EQ(ENOENT, r.err);
	EXPECT_EQ(0, r.listed);
	EXPECT_EQ(0, r.total);
	EXPECT_EQ(0, end_ns_child(self, 0));
}

/* The same name exists independently in two namespaces. */
TEST_F(ns, same_name_in_two_namespaces)
{
	struct ns_job job = { .create = 5, .acquire = 5, .linger = true };
	struct ns_report r;
	struct wsem_stat st;
	int fd;

	if (!self->ready)
		return;
	self->fd = wsem_open(self->name, O_CREAT | O_EXCL | O_CLOEXEC, 0600, 3);
	ASSERT_LE(0, self->fd);
	self->created = true;
	ASSERT_LT(0, spawn_ns_child(self, 0, &job));
	ASSERT_EQ(0, read_report(self, 0, &r));
	ASSERT_EQ(0, r.unshare_err);
	ASSERT_LE(0, r.ret) {
		TH_LOG("O_EXCL create of the same name: %s", strerror(r.err));
	}
	EXPECT_EQ(0, r.acq_ret);
	EXPECT_EQ(5, r.st.capacity);
	EXPECT_EQ(5, r.st.used);

	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(3, st.capacity);
	EXPECT_EQ(0, st.used);
	fd = wsem_open(self->name, O_CLOEXEC, 0, 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, wsem_stat(fd, &st));
	EXPECT_EQ(3, st.capacity);
	EXPECT_EQ(0, close(fd));
	EXPECT_EQ(0, end_ns_child(self, 0));
}

/*
 * A handle passed out of a namespace keeps working after the namespace
 * died: right away, and once its name is gone.
 */
TEST_F(ns, dead_ns_handle_keeps_working)
{
	struct ns_job job = { .create = 2, .acquire = 1, .send = true,
			      .mount = true };
	struct ns_report r;
	struct wsem_stat st;
	int round;

	if (!self->ready)
		return;
	ASSERT_LT(0, spawn_ns_child(self, 0, &job));
	ASSERT_EQ(0, read_report(self, 0, &r));
	ASSERT_EQ(0, r.unshare_err);
	ASSERT_LE(0, r.ret);
	ASSERT_EQ(0, r.send_ret);
	self->fd = recv_fd_wait(self->sock[0]);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, end_ns_child(self, 0));

	for (round = 0; round < 2; round++) {
		if (round == 1)
			EXPECT_EQ(0, wait_nameless(self));
		/* The weight the child took is held by the shared handle. */
		ASSERT_EQ(0, wsem_stat(self->fd, &st));
		EXPECT_EQ(2, st.capacity);
		EXPECT_EQ(1, st.held);
		EXPECT_EQ(1, st.used);
		EXPECT_EQ(-1, wsem_tryacquire(self->fd, 2));
		EXPECT_EQ(EAGAIN, errno);
		EXPECT_EQ(0, wsem_release(self->fd, 1));
		EXPECT_EQ(0, wsem_acquire(self->fd, 2));
		EXPECT_EQ(0, wsem_release(self->fd, 1));
		ASSERT_EQ(0, wsem_stat(self->fd, &st));
		EXPECT_EQ(1, st.held);
		EXPECT_EQ(1, st.used);
	}
}

/* When its namespace dies, a semaphore's name goes within seconds. */
TEST_F(ns, dead_ns_name_vanishes)
{
	struct ns_job job = { .create = 2, .send = true, .mount = true,
			      .linger = true };
	struct ns_report r;
	struct wsem_stat st;
	struct stat sb;

	if (!self->ready)
		return;
	ASSERT_LT(0, spawn_ns_child(self, 0, &job));
	ASSERT_EQ(0, read_report(self, 0, &r));
	ASSERT_EQ(0, r.unshare_err);
	ASSERT_LE(0, r.ret);
	ASSERT_EQ(0, r.send_ret);
	ASSERT_EQ(0, r.mount_err);
	/* Named in its namespace, nameless outside, a file in its wsemfs. */
	EXPECT_STREQ(self->name, r.st.name);
	self->fd = recv_fd_wait(self->sock[0]);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_STREQ("", st.name);
	EXPECT_EQ(0, stat(self->path, &sb));
	ASSERT_EQ(0, end_ns_child(self, 0));
	EXPECT_EQ(0, wait_nameless(self)) {
		TH_LOG("%s still there 5 s after its namespace died",
		       self->path);
	}
	/* The handle goes on; the file opens no more. */
	EXPECT_EQ(0, wsem_acquire(self->fd, 2));
	EXPECT_EQ(-1, open(self->path, O_RDWR));
	EXPECT_EQ(ENOENT, errno);
}

/*
 * A new namespace never sees a dead one's names, even while the dead one's
 * semaphore lives on through a handle: right after the death, and after
 * the name has gone.
 */
TEST_F(ns, new_ns_does_not_see_dead_ns_name)
{
	struct ns_job create = { .create = 2, .send = true, .mount = true };
	struct ns_job open = { .create = 0 };
	struct ns_report r;
	int round;

	if (!self->ready)
		return;
	ASSERT_LT(0, spawn_ns_child(self, 0, &create));
	ASSERT_EQ(0, read_report(self, 0, &r));
	ASSERT_EQ(0, r.unshare_err);
	ASSERT_LE(0, r.ret);
	ASSERT_EQ(0, r.send_ret);
	self->fd = recv_fd_wait(self->sock[0]);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, end_ns_child(self, 0));

	for (round = 0; round < 2; round++) {
		if (round == 1)
			EXPECT_EQ(0, wait_nameless(self));
		ASSERT_EQ(0, run_ns_job(self, 1, &open, &r));
		ASSERT_EQ(0, r.unshare_err);
		EXPECT_EQ(-1, r.ret);
		EXPECT_EQ(ENOENT, r.err);
		EXPECT_EQ(0, r.total);
		EXPECT_EQ(0, close(self->res[1]));
		EXPECT_EQ(0, close(self->sock[1]));
		self->res[1] = 0;
		self->sock[1] = 0;
	}
}

/*
 * Namespaces that die one after another (their memory is likely reused)
 * never hand their names to the next one.
 */
TEST_F(ns, dying_namespaces_never_leak_names)
{
	struct ns_job create = { .create = 1 };
	struct ns_job open = { .create = 0 };
	struct ns_report r;
	int round;

	if (!self->ready)
		return;
	for (round = 0; round < REUSE_ROUNDS; round++) {
		ASSERT_EQ(0, run_ns_job(self, 0, &create, &r));
		ASSERT_EQ(0, r.unshare_err);
		ASSERT_LE(0, r.ret) {
			TH_LOG("round %d: create: %s", round, strerror(r.err));
		}
		ASSERT_EQ(0, run_ns_job(self, 1, &open, &r));
		ASSERT_EQ(0, r.unshare_err);
		EXPECT_EQ(-1, r.ret) {
			TH_LOG("round %d: a new namespace saw the old name",
			       round);
		}
		EXPECT_EQ(ENOENT, r.err);
		EXPECT_EQ(0, r.total);
		EXPECT_EQ(0, close(self->res[0]));
		EXPECT_EQ(0, close(self->sock[0]));
		EXPECT_EQ(0, close(self->res[1]));
		EXPECT_EQ(0, close(self->sock[1]));
		self->res[0] = 0;
		self->sock[0] = 0;
		self->res[1] = 0;
		self->sock[1] = 0;
	}
}

TEST_HARNESS_MAIN
