// SPDX-License-Identifier: GPL-2.0
/*
 * Permissions (SPEC.md "Permissions" and the open, set capacity, unlink and
 * list rows): opening an existing semaphore needs read and write for the
 * caller's class, list needs read, unlink and set capacity need the owner or
 * CAP_IPC_OWNER, and CAP_IPC_OWNER in a user namespace of one's own does not
 * count for a semaphore of the host.
 *
 * The test process (root) creates the semaphore with an exact mode (umask
 * 0); the operation under test runs in a forked child that has dropped to
 * another uid/gid (65534 = nobody) and reports what it saw on a pipe.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <wsem.h>

#include "kselftest_harness.h"

#define CAP		4	/* capacity of every test's semaphore */
#define NOBODY		65534	/* the unprivileged uid and gid */
#define OTHER_UID	1234	/* an owner that is not nobody */
#define REPORT_WAIT_MS	10000	/* bound for a child to report */

/* What a child saw. */
struct outcome {
	int setup_err;		/* errno of a failed uid/gid switch, or 0 */
	int skip_err;		/* errno of an unavailable feature, or 0 */
	int userns_err;		/* errno of failing to be root of a userns */
	int prep_ret;		/* return value of a preparatory step */
	int prep_err;		/* errno right after it */
	int ret;		/* return value of the operation under test */
	int err;		/* errno right after it */
	int found;		/* list: 1 if the name was listed, -1 on error */
	struct wsem_stat st;	/* a stat the test wants to see */
};

/* The operation a child runs as another user, on semaphore @name. */
typedef void (*child_fn)(const char *name, struct outcome *o);

FIXTURE(perm) {
	/* this test's semaphore: "perm.<test>.<pid>" */
	char name[WSEM_NAME_MAX];
	/* root's handle from create_as_root(), or -1 */
	int fd;
	/* the name may exist and the teardown unlinks it (as root) */
	bool created;
	/* setup done: false after a SKIP, so body and teardown do nothing */
	bool ready;
};

/*
 * Fork, become @uid/@gid with no supplementary groups, run @fn and hand its
 * outcome back.  0, or -1 if the child did not report in time.
 */
static int run_as(const char *name, uid_t uid, gid_t gid, child_fn fn,
		  struct outcome *o)
{
	struct pollfd pfd = { .events = POLLIN };
	int p[2], i, ret = -1;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		struct outcome r;

		memset(&r, 0, sizeof(r));
		for (i = 3; i < 1024; i++)
			if (i != p[1])
				close(i);
		if (setgroups(0, NULL) || setgid(gid) || setuid(uid)) {
			r.setup_err = errno;
		} else {
			errno = 0;
			fn(name, &r);
		}
		_exit(write(p[1], &r, sizeof(r)) == sizeof(r) ? 0 : 1);
	}
	close(p[1]);
	pfd.fd = p[0];
	if (poll(&pfd, 1, REPORT_WAIT_MS) == 1 &&
	    read(p[0], o, sizeof(*o)) == sizeof(*o))
		ret = 0;
	else
		kill(pid, SIGKILL);
	close(p[0]);
	waitpid(pid, NULL, 0);
	return ret;
}

/* 1 if @name is in this namespace's list as the caller sees it, else 0. */
static int list_has(const char *name, struct wsem_stat *out)
{
	struct wsem_stat *buf;
	ssize_t n, m, i;
	int found = 0;

	n = wsem_list(NULL, 0);
	if (n < 0)
		return -1;
	n += 16;
	buf = calloc(n, sizeof(*buf));
	if (!buf)
		return -1;
	m = wsem_list(buf, n);
	if (m < 0) {
		free(buf);
		return -1;
	}
	for (i = 0; i < m && i < n; i++) {
		if (!strcmp(buf[i].name, name)) {
			*out = buf[i];
			found = 1;
		}
	}
	free(buf);
	return found;
}

/* Root creates the test's semaphore with exactly @mode. */
static int create_as_root(FIXTURE_DATA(perm) *self, mode_t mode)
{
	self->fd = wsem_open(self->name, O_CREAT | O_EXCL | O_CLOEXEC, mode,
			     CAP);
	if (self->fd < 0)
		return -1;
	self->created = true;
	return 0;
}

/*
 * Become root of a new user namespace: uid and gid 0 there, mapped to
 * nobody outside, with every capability (CAP_IPC_OWNER included) in that
 * namespace only.  Sets o->skip_err if user namespaces are unavailable,
 * o->userns_err if the ids could not be mapped.
 */
static int enter_userns(struct outcome *o)
{
	static const char *const maps[][2] = {
		{ "/proc/self/setgroups", "deny" },
		{ "/proc/self/uid_map", "0 65534 1" },
		{ "/proc/self/gid_map", "0 65534 1" },
	};
	unsigned int i;
	int fd;

	/* setuid() made us non-dumpable: /proc/self would be root's. */
	if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0))
		goto fail;
	if (unshare(CLONE_NEWUSER)) {
		o->skip_err = errno;
		return -1;
	}
	for (i = 0; i < ARRAY_SIZE(maps); i++) {
		fd = open(maps[i][0], O_WRONLY | O_CLOEXEC);
		if (fd < 0)
			goto fail;
		if (write(fd, maps[i][1], strlen(maps[i][1])) < 0) {
			close(fd);
			goto fail;
		}
		close(fd);
	}
	if (getuid() != 0 || getgid() != 0) {
		errno = EPERM;
		goto fail;
	}
	return 0;
fail:
	o->userns_err = errno ?: EINVAL;
	return -1;
}

static void do_open(const char *name, struct outcome *o)
{
	o->ret = wsem_open(name, O_CLOEXEC, 0, 0);
	o->err = errno;
}

/* Open and take weight: both reading and writing are allowed. */
static void do_open_acquire(const char *name, struct outcome *o)
{
	int fd = wsem_open(name, O_CLOEXEC, 0, 0);

	o->prep_ret = fd;
	o->prep_err = errno;
	if (fd < 0)
		return;
	o->ret = wsem_acquire(fd, 1);
	o->err = errno;
	wsem_stat(fd, &o->st);
	close(fd);
}

static void do_list(const char *name, struct outcome *o)
{
	o->found = list_has(name, &o->st);
	o->err = errno;
}

static void do_unlink(const char *name, struct outcome *o)
{
	o->ret = wsem_unlink(name);
	o->err = errno;
}

/* Open (allowed by the mode), then try to set the capacity. */
static void do_set_capacity(const char *name, struct outcome *o)
{
	int fd = wsem_open(name, O_CLOEXEC, 0, 0);

	o->prep_ret = fd;
	o->prep_err = errno;
	if (fd < 0)
		return;
	o->ret = wsem_set_capacity(fd, CAP * 2);
	o->err = errno;
	close(fd);
}

/* Create with mode 0066 (owner: nothing, others: rw), then reopen by name. */
static void do_create_0066_and_open(const char *name, struct outcome *o)
{
	int fd = wsem_open(name, O_CREAT | O_EXCL | O_CLOEXEC, 0066, CAP);

	o->prep_ret = fd;
	o->prep_err = errno;
	if (fd < 0)
		return;
	wsem_stat(fd, &o->st);
	close(fd);
	o->ret = wsem_open(name, O_CLOEXEC, 0, 0);
	o->err = errno;
}

/* Create with mode 0606 (group: nothing, owner and others: rw). */
static void do_create_0606(const char *name, struct outcome *o)
{
	int fd = wsem_open(name, O_CREAT | O_EXCL | O_CLOEXEC, 0606, CAP);

	o->ret = fd;
	o->err = errno;
	if (fd >= 0)
		close(fd);
}

/* Create with mode 0600, then change its capacity as its owner. */
static void do_create_and_set_capacity(const char *name, struct outcome *o)
{
	int fd = wsem_open(name, O_CREAT | O_EXCL | O_CLOEXEC, 0600, CAP);

	o->prep_ret = fd;
	o->prep_err = errno;
	if (fd < 0)
		return;
	o->ret = wsem_set_capacity(fd, CAP * 2);
	o->err = errno;
	wsem_stat(fd, &o->st);
	close(fd);
}

/* Create with mode 0600, then unlink it as its owner. */
static void do_create_and_unlink(const char *name, struct outcome *o)
{
	int fd = wsem_open(name, O_CREAT | O_EXCL | O_CLOEXEC, 0600, CAP);

	o->prep_ret = fd;
	o->prep_err = errno;
	if (fd < 0)
		return;
	close(fd);
	o->ret = wsem_unlink(name);
	o->err = errno;
}

/* Create with mode 0000: nobody but CAP_IPC_OWNER may open it again. */
static void do_create_0000(const char *name, struct outcome *o)
{
	int fd = wsem_open(name, O_CREAT | O_EXCL | O_CLOEXEC, 0, CAP);

	o->ret = fd;
	o->err = errno;
	if (fd >= 0)
		close(fd);
}

static void userns_open(const char *name, struct outcome *o)
{
	if (!enter_userns(o))
		do_open(name, o);
}

static void userns_unlink(const char *name, struct outcome *o)
{
	if (!enter_userns(o))
		do_unlink(name, o);
}

static void userns_set_capacity(const char *name, struct outcome *o)
{
	if (!enter_userns(o))
		do_set_capacity(name, o);
}

FIXTURE_SETUP(perm)
{
	self->fd = -1;
	if (access("/dev/wsem", F_OK))
		SKIP(return, "/dev/wsem is missing (module not loaded)");
	if (geteuid() != 0)
		SKIP(return, "needs root to switch users");
	snprintf(self->name, sizeof(self->name), "perm.%s.%d",
		 _metadata->name, getpid());
	/* Modes are exactly what the tests ask for. */
	umask(0);
	self->ready = true;
}

FIXTURE_TEARDOWN(perm)
{
	if (!self->ready)
		return;
	if (self->fd >= 0)
		EXPECT_EQ(0, close(self->fd));
	if (self->created)
		EXPECT_EQ(0, wsem_unlink(self->name));
}

/* "other" without rw (0600): EACCES. */
TEST_F(perm, other_cannot_open_0600)
{
	struct outcome o;

	if (!self->ready)
		return;
	ASSERT_EQ(0, create_as_root(self, 0600));
	ASSERT_EQ(0, run_as(self->name, NOBODY, NOBODY, do_open, &o));
	ASSERT_EQ(0, o.setup_err);
	EXPECT_EQ(-1, o.ret);
	EXPECT_EQ(EACCES, o.err);
}

/* "other" with rw (0666): opens and takes weight. */
TEST_F(perm, other_can_open_0666)
{
	struct outcome o;

	if (!self->ready)
		return;
	ASSERT_EQ(0, create_as_root(self, 0666));
	ASSERT_EQ(0, run_as(self->name, NOBODY, NOBODY, do_open_acquire, &o));
	ASSERT_EQ(0, o.setup_err);
	ASSERT_LE(0, o.prep_ret) {
		TH_LOG("open: %s", strerror(o.prep_err));
	}
	EXPECT_EQ(0, o.ret);
	EXPECT_EQ(1, o.st.held);
}

/* Read without write (0644) is not enough to open: EACCES. */
TEST_F(perm, other_cannot_open_0644)
{
	struct outcome o;

	if (!self->ready)
		return;
	ASSERT_EQ(0, create_as_root(self, 0644));
	ASSERT_EQ(0, run_as(self->name, NOBODY, NOBODY, do_open, &o));
	ASSERT_EQ(0, o.setup_err);
	EXPECT_EQ(-1, o.ret);
	EXPECT_EQ(EACCES, o.err);
}

/* Read (0644) is enough to see it in the list. */
TEST_F(perm, other_lists_0644)
{
	struct outcome o;

	if (!self->ready)
		return;
	ASSERT_EQ(0, create_as_root(self, 0644));
	ASSERT_EQ(0, run_as(self->name, NOBODY, NOBODY, do_list, &o));
	ASSERT_EQ(0, o.setup_err);
	ASSERT_EQ(1, o.found) {
		TH_LOG("not listed (%s)", strerror(o.err));
	}
	EXPECT_EQ(0644, o.st.mode);
	EXPECT_EQ(0, o.st.uid);
	EXPECT_EQ(CAP, o.st.capacity);
}

/* Without read (0600) it is not listed for "other". */
TEST_F(perm, other_does_not_list_0600)
{
	struct outcome o;

	if (!self->ready)
		return;
	ASSERT_EQ(0, create_as_root(self, 0600));
	ASSERT_EQ(0, run_as(self->name, NOBODY, NOBODY, do_list, &o));
	ASSERT_EQ(0, o.setup_err);
	EXPECT_EQ(0, o.found);
}

/* Unlink by a non-owner: EPERM, and the name stays. */
TEST_F(perm, non_owner_cannot_unlink)
{
	struct wsem_stat st;
	struct outcome o;

	if (!self->ready)
		return;
	ASSERT_EQ(0, create_as_root(self, 0666));
	ASSERT_EQ(0, run_as(self->name, NOBODY, NOBODY, do_unlink, &o));
	ASSERT_EQ(0, o.setup_err);
	EXPECT_EQ(-1, o.ret);
	EXPECT_EQ(EPERM, o.err);
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_STREQ(self->name, st.name);
}

/* Set capacity by a non-owner (who may open it): EPERM, nothing changes. */
TEST_F(perm, non_owner_cannot_set_capacity)
{
	struct wsem_stat st;
	struct outcome o;

	if (!self->ready)
		return;
	ASSERT_EQ(0, create_as_root(self, 0666));
	ASSERT_EQ(0, run_as(self->name, NOBODY, NOBODY, do_set_capacity,
			    &o));
	ASSERT_EQ(0, o.setup_err);
	ASSERT_LE(0, o.prep_ret) {
		TH_LOG("open: %s", strerror(o.prep_err));
	}
	EXPECT_EQ(-1, o.ret);
	EXPECT_EQ(EPERM, o.err);
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(CAP, st.capacity);
}

/* The creator is the owner: its euid and egid. */
TEST_F(perm, creator_is_owner)
{
	struct wsem_stat st;
	struct outcome o;
	int fd;

	if (!self->ready)
		return;
	self->created = true;
	ASSERT_EQ(0, run_as(self->name, NOBODY, NOBODY, do_create_0606, &o));
	ASSERT_EQ(0, o.setup_err);
	ASSERT_LE(0, o.ret) {
		TH_LOG("create: %s", strerror(o.err));
	}
	fd = wsem_open(self->name, O_CLOEXEC, 0, 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, wsem_stat(fd, &st));
	EXPECT_EQ(NOBODY, st.uid);
	EXPECT_EQ(NOBODY, st.gid);
	EXPECT_EQ(0606, st.mode);
	EXPECT_EQ(0, close(fd));
}

/* The owner gets the owner bits even when "other" has more: 0066. */
TEST_F(perm, owner_class_bits_apply_to_owner)
{
	struct outcome o;

	if (!self->ready)
		return;
	self->created = true;
	ASSERT_EQ(0, run_as(self->name, NOBODY, NOBODY,
			    do_create_0066_and_open, &o));
	ASSERT_EQ(0, o.setup_err);
	ASSERT_LE(0, o.prep_ret) {
		TH_LOG("create: %s", strerror(o.prep_err));
	}
	EXPECT_EQ(NOBODY, o.st.uid);
	EXPECT_EQ(-1, o.ret);
	EXPECT_EQ(EACCES, o.err);
}

/* A group member gets the group bits even when "other" has more: 0606. */
TEST_F(perm, group_class_bits_apply_to_group)
{
	struct outcome o;

	if (!self->ready)
		return;
	self->created = true;
	ASSERT_EQ(0, run_as(self->name, OTHER_UID, NOBODY, do_create_0606,
			    &o));
	ASSERT_EQ(0, o.setup_err);
	ASSERT_LE(0, o.ret) {
		TH_LOG("create: %s", strerror(o.err));
	}
	ASSERT_EQ(0, run_as(self->name, NOBODY, NOBODY, do_open, &o));
	ASSERT_EQ(0, o.setup_err);
	EXPECT_EQ(-1, o.ret);
	EXPECT_EQ(EACCES, o.err);
}

/* The owner may set the capacity (the control for the EPERM test). */
TEST_F(perm, owner_can_set_capacity)
{
	struct outcome o;

	if (!self->ready)
		return;
	self->created = true;
	ASSERT_EQ(0, run_as(self->name, NOBODY, NOBODY,
			    do_create_and_set_capacity, &o));
	ASSERT_EQ(0, o.setup_err);
	ASSERT_LE(0, o.prep_ret) {
		TH_LOG("create: %s", strerror(o.prep_err));
	}
	EXPECT_EQ(0, o.ret) {
		TH_LOG("set capacity: %s", strerror(o.err));
	}
	EXPECT_EQ(CAP * 2, o.st.capacity);
}

/* The owner may unlink (the control for the EPERM test). */
TEST_F(perm, owner_can_unlink)
{
	struct outcome o;

	if (!self->ready)
		return;
	self->created = true;
	ASSERT_EQ(0, run_as(self->name, NOBODY, NOBODY, do_create_and_unlink,
			    &o));
	ASSERT_EQ(0, o.setup_err);
	ASSERT_LE(0, o.prep_ret) {
		TH_LOG("create: %s", strerror(o.prep_err));
	}
	EXPECT_EQ(0, o.ret) {
		TH_LOG("unlink: %s", strerror(o.err));
	}
	if (o.ret == 0)
		self->created = false;
	EXPECT_EQ(-1, wsem_open(self->name, O_CLOEXEC, 0, 0));
	EXPECT_EQ(ENOENT, errno);
}

/* CAP_IPC_OWNER (root here) opens whatever the mode says: 0000. */
TEST_F(perm, ipc_owner_ignores_mode)
{
	struct outcome o;
	int fd;

	if (!self->ready)
		return;
	self->created = true;
	ASSERT_EQ(0, run_as(self->name, NOBODY, NOBODY, do_create_0000, &o));
	ASSERT_EQ(0, o.setup_err);
	ASSERT_LE(0, o.ret) {
		TH_LOG("create: %s", strerror(o.err));
	}
	fd = wsem_open(self->name, O_CLOEXEC, 0, 0);
	ASSERT_LE(0, fd) {
		TH_LOG("open as root: %s", strerror(errno));
	}
	EXPECT_EQ(0, close(fd));
}

/* Root of a user namespace of its own is not CAP_IPC_OWNER here: open. */
TEST_F(perm, userns_root_cannot_open)
{
	struct outcome o;

	if (!self->ready)
		return;
	ASSERT_EQ(0, create_as_root(self, 0600));
	ASSERT_EQ(0, run_as(self->name, NOBODY, NOBODY, userns_open, &o));
	ASSERT_EQ(0, o.setup_err);
	if (o.skip_err)
		SKIP(return, "unshare(CLONE_NEWUSER): %s",
		     strerror(o.skip_err));
	ASSERT_EQ(0, o.userns_err) {
		TH_LOG("becoming root of the user namespace: %s",
		       strerror(o.userns_err));
	}
	EXPECT_EQ(-1, o.ret);
	EXPECT_EQ(EACCES, o.err);
}

/* ... nor for unlink. */
TEST_F(perm, userns_root_cannot_unlink)
{
	struct wsem_stat st;
	struct outcome o;

	if (!self->ready)
		return;
	ASSERT_EQ(0, create_as_root(self, 0666));
	ASSERT_EQ(0, run_as(self->name, NOBODY, NOBODY, userns_unlink, &o));
	ASSERT_EQ(0, o.setup_err);
	if (o.skip_err)
		SKIP(return, "unshare(CLONE_NEWUSER): %s",
		     strerror(o.skip_err));
	ASSERT_EQ(0, o.userns_err) {
		TH_LOG("becoming root of the user namespace: %s",
		       strerror(o.userns_err));
	}
	EXPECT_EQ(-1, o.ret);
	EXPECT_EQ(EPERM, o.err);
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_STREQ(self->name, st.name);
}

/* ... nor for set capacity. */
TEST_F(perm, userns_root_cannot_set_capacity)
{
	struct wsem_stat st;
	struct outcome o;

	if (!self->ready)
		return;
	ASSERT_EQ(0, create_as_root(self, 0666));
	ASSERT_EQ(0, run_as(self->name, NOBODY, NOBODY, userns_set_capacity,
			    &o));
	ASSERT_EQ(0, o.setup_err);
	if (o.skip_err)
		SKIP(return, "unshare(CLONE_NEWUSER): %s",
		     strerror(o.skip_err));
	ASSERT_EQ(0, o.userns_err) {
		TH_LOG("becoming root of the user namespace: %s",
		       strerror(o.userns_err));
	}
	ASSERT_LE(0, o.prep_ret) {
		TH_LOG("open: %s", strerror(o.prep_err));
	}
	EXPECT_EQ(-1, o.ret);
	EXPECT_EQ(EPERM, o.err);
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(CAP, st.capacity);
}

TEST_HARNESS_MAIN
