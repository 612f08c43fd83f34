// SPDX-License-Identifier: GPL-2.0
/*
 * wsemfs (SPEC.md "Semaphores as files"): the named semaphores of an IPC
 * namespace as the regular files of a small file system, one per name, with
 * the semaphore's owner and mode.  open(2) of a file is a handle, read(2)
 * gives the state as text, unlink, chmod and chown act on the semaphore,
 * and nothing can be created there.  A file bind-mounted elsewhere opens no
 * more once its semaphore lost its name; a name shows only inside its own
 * namespace; a mount keeps the module loaded but no namespace alive.
 *
 * Each test runs in a mount namespace of its own (so that whatever it
 * mounts goes away with it, even if it crashes) with umask 0, mounts the
 * init IPC namespace's wsemfs on a fresh directory under /tmp and works on
 * a semaphore named "fs<pid>.<n>".  What another user or another IPC
 * namespace sees is looked at by a forked child that reports on a pipe.
 */
#define _GNU_SOURCE
#include <dirent.h>
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
#include <sys/mman.h>
#include <sys/fsuid.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <wsem.h>

#include "kselftest_harness.h"
#include "util.h"

#define CAP		4	/* capacity of the test's semaphore */
#define NOBODY		65534	/* a user that owns nothing */
#define OWNER_UID	1234	/* a user that owns a semaphore */
#define OWNER_GID	2345
#define VANISH_NS	(5 * NSEC)	/* bound for a dead namespace's end */
#define REPORT_WAIT_MS	10000	/* bound for a child to report */
#define TEXT_MAX	1024	/* the read(2) text fits easily */
#define RACE_WORKERS	6	/* processes of the race test */
#define UNUSED		__attribute__((unused))

/* What a child saw. */
struct outcome {
	int setup_err;		/* errno of a failed setuid or unshare */
	int ret;		/* return value of the operation under test */
	int err;		/* errno right after it */
	int ret2;		/* return value of a second operation */
	int err2;		/* errno right after it */
	int count;		/* how many of something it saw */
	struct wsem_stat st;	/* a stat it made */
	char fdinfo_name[WSEM_NAME_MAX + 8];	/* "wsem-name:" of fdinfo */
	char text_name[WSEM_NAME_MAX + 8];	/* "name:" of the read text */
	char link[160];		/* readlink of its /proc/self/fd/N */
	char mroot[160];	/* mountinfo's root of a bind-mounted file */
};

FIXTURE(wsemfs) {
	/* the test's semaphore: "fs<pid>.<n>" */
	char name[WSEM_NAME_MAX];
	/* the mount of the init IPC namespace's wsemfs, a fresh directory */
	char dir[64];
	/* dir/name */
	char path[160];
	/* more directories (mount points, bind targets) the test made */
	char extra[4][128];
	/* root's /dev/wsem handle on the test's semaphore, or -1 */
	int fd;
	/* the names the teardown unlinks (ENOENT is fine) */
	char made[4][WSEM_NAME_MAX];
	/* setup done: false after a SKIP, so body and teardown do nothing */
	bool ready;
};

/*
 * The whole read(2) text of @fd, NUL-terminated: from offset 0 (pread) on
 * a wsemfs file; a /dev/wsem handle is not seekable, so from where it is.
 */
static ssize_t read_text(int fd, char *buf, size_t len)
{
	bool seekable = true;
	ssize_t n, got = 0;

	do {
		n = -1;
		if (seekable)
			n = pread(fd, buf + got, len - 1 - got, got);
		if (n < 0 && errno == ESPIPE) {
			seekable = false;
			n = read(fd, buf + got, len - 1 - got);
		}
		if (n < 0)
			return -1;
		got += n;
	} while (n > 0 && (size_t)got < len - 1);
	buf[got] = 0;
	return got;
}

/* "wsem-name:" of @fd's fdinfo as the caller sees it; 0 or -1. */
static int fdinfo_name(int fd, char *val, size_t len)
{
	return fdinfo_get(fd, "wsem-name", val, len);
}

/*
 * Is @name in directory @dir?  1 (with its d_ino and d_type), 0, or -1 if
 * the directory cannot be read.
 */
static int dir_has(const char *dir, const char *name, ino_t *ino,
		   unsigned char *type)
{
	struct dirent *de;
	int found = 0;
	DIR *d = opendir(dir);

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, name))
			continue;
		found = 1;
		if (ino)
			*ino = de->d_ino;
		if (type)
			*type = de->d_type;
	}
	closedir(d);
	return found;
}

/* How many entries besides "." and ".." @dir has, or -1. */
static int dir_count(const char *dir)
{
	struct dirent *de;
	int n = 0;
	DIR *d = opendir(dir);

	if (!d)
		return -1;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

/* A fresh directory under /tmp in self->extra[@i]; 0 or -1. */
static int make_extra(FIXTURE_DATA(wsemfs) *self, int i)
{
	snprintf(self->extra[i], sizeof(self->extra[i]),
		 "/tmp/wsemfs_test.XXXXXX");
	if (!mkdtemp(self->extra[i])) {
		self->extra[i][0] = 0;
		return -1;
	}
	return 0;
}

/* Create the name @name (remembered for the teardown); a handle or -1. */
static int create_name(FIXTURE_DATA(wsemfs) *self, const char *name,
		       mode_t mode, uint64_t cap)
{
	int i;

	for (i = 0; i < 4; i++) {
		if (!self->made[i][0]) {
			snprintf(self->made[i], WSEM_NAME_MAX, "%s", name);
			break;
		}
	}
	return wsem_open(name, O_CREAT | O_EXCL | O_CLOEXEC, mode, cap);
}

/* Create the test's semaphore with exactly @mode, root's handle in fd. */
static int create_main(FIXTURE_DATA(wsemfs) *self, mode_t mode)
{
	self->fd = create_name(self, self->name, mode, CAP);
	return self->fd < 0 ? -1 : 0;
}

/* What a child runs: @self is the test's, @arg the test's own. */
typedef void (*child_fn)(FIXTURE_DATA(wsemfs) *self, void *arg,
			 struct outcome *o);

/*
 * Fork a child that becomes @uid (and @gid, no supplementary groups) if
 * @uid is not -1, unshares @flags if not 0, runs @fn and reports.  The
 * child keeps the test's descriptors.  0, or -1 if it did not report.
 */
static int run_child(FIXTURE_DATA(wsemfs) *self, int uid, int gid, int flags,
		     child_fn fn, void *arg, struct outcome *o)
{
	struct pollfd pfd = { .events = POLLIN };
	int p[2], ret = -1;
	pid_t pid;

	memset(o, 0, sizeof(*o));
	if (pipe2(p, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		struct outcome r;

		memset(&r, 0, sizeof(r));
		close(p[0]);
		if (uid >= 0 && (setgroups(0, NULL) || setgid(gid) ||
				 setuid(uid)))
			r.setup_err = errno;
		else if (flags && unshare(flags))
			r.setup_err = errno;
		else
			fn(self, arg, &r);
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

FIXTURE_SETUP(wsemfs)
{
	static int seq;

	self->fd = -1;
	if (access("/dev/wsem", F_OK))
		SKIP(return, "/dev/wsem is missing (module not loaded)");
	umask(0);
	/* Whatever the test mounts goes with its mount namespace. */
	ASSERT_EQ(0, unshare(CLONE_NEWNS));
	ASSERT_EQ(0, mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
	snprintf(self->name, sizeof(self->name), "fs%d.%d", getpid(), seq++);
	snprintf(self->dir, sizeof(self->dir), "/tmp/wsemfs_test.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	if (mount("wsem", self->dir, "wsem", 0, NULL)) {
		int err = errno;

		rmdir(self->dir);
		self->dir[0] = 0;
		if (err == ENODEV)
			SKIP(return, "no file system type wsem");
		ASSERT_EQ(0, err);
	}
	snprintf(self->path, sizeof(self->path), "%s/%s", self->dir,
		 self->name);
	self->ready = true;
}

/*
 * Unmount and remove @path, a directory or a file bind target; 0 or -1.
 * A process that a killed race worker had forked may still mount on a
 * directory a moment after the kill (it is not killed with its parent):
 * a busy directory is unmounted again, for up to 2 s.
 */
static int remove_extra(const char *path)
{
	int i;

	for (i = 0; i < 200; i++) {
		umount2(path, MNT_DETACH);
		if (!rmdir(path))
			return 0;
		if (errno != EBUSY)
			return unlink(path);
		usleep(10000);
	}
	return -1;
}

FIXTURE_TEARDOWN(wsemfs)
{
	int i;

	if (self->fd >= 0)
		EXPECT_EQ(0, close(self->fd));
	for (i = 3; i >= 0; i--) {
		if (self->extra[i][0])
			EXPECT_EQ(0, remove_extra(self->extra[i]));
	}
	if (self->dir[0]) {
		EXPECT_EQ(0, umount2(self->dir, MNT_DETACH));
		EXPECT_EQ(0, rmdir(self->dir));
	}
	for (i = 0; i < 4; i++)
		if (self->made[i][0] && wsem_unlink(self->made[i]))
			EXPECT_EQ(ENOENT, errno);
}

/*
 * The root directory: 01777, and /sys/fs/wsem exists as an empty directory
 * to mount it on.
 */
TEST_F(wsemfs, root_directory)
{
	struct stat st;

	if (!self->ready)
		return;
	ASSERT_EQ(0, stat(self->dir, &st));
	EXPECT_TRUE(S_ISDIR(st.st_mode));
	EXPECT_EQ(01777, st.st_mode & 07777);
	EXPECT_EQ(0, st.st_uid);
	ASSERT_EQ(0, stat("/sys/fs/wsem", &st));
	EXPECT_TRUE(S_ISDIR(st.st_mode));
	EXPECT_EQ(0, dir_count("/sys/fs/wsem"));
	ASSERT_EQ(0, mount("wsem", "/sys/fs/wsem", "wsem", 0, NULL));
	EXPECT_EQ(0, stat("/sys/fs/wsem", &st));
	EXPECT_EQ(01777, st.st_mode & 07777);
	EXPECT_EQ(0, umount("/sys/fs/wsem"));
}

static void create_as_owner(FIXTURE_DATA(wsemfs) *self, void *arg UNUSED,
			    struct outcome *o)
{
	o->ret = wsem_open(self->name, O_CREAT | O_EXCL | O_CLOEXEC, 0640,
			   CAP);
	o->err = errno;
}

/*
 * A semaphore that existed before the mount shows as a regular file of its
 * owner, group and mode, in readdir too, with an inode number that stays.
 */
TEST_F(wsemfs, existing_name_shows_with_owner_and_mode)
{
	struct outcome o;
	struct stat st, st2;
	unsigned char type = 0;
	ino_t ino = 0;

	if (!self->ready)
		return;
	/* Remount so that the name exists first. */
	ASSERT_EQ(0, umount(self->dir));
	snprintf(self->made[0], WSEM_NAME_MAX, "%s", self->name);
	ASSERT_EQ(0, run_child(self, OWNER_UID, OWNER_GID, 0, create_as_owner,
			       NULL, &o));
	ASSERT_EQ(0, o.setup_err);
	ASSERT_LE(0, o.ret) {
		TH_LOG("create as %d: %s", OWNER_UID, strerror(o.err));
	}
	ASSERT_EQ(0, mount("wsem", self->dir, "wsem", 0, NULL));

	ASSERT_EQ(0, stat(self->path, &st));
	EXPECT_TRUE(S_ISREG(st.st_mode));
	EXPECT_EQ(0640, st.st_mode & 07777);
	EXPECT_EQ(OWNER_UID, st.st_uid);
	EXPECT_EQ(OWNER_GID, st.st_gid);
	ASSERT_EQ(1, dir_has(self->dir, self->name, &ino, &type));
	EXPECT_EQ(DT_REG, type);
	EXPECT_EQ(st.st_ino, ino);
	/* The dentry is gone between the calls; the number stays. */
	ASSERT_EQ(0, stat(self->path, &st2));
	EXPECT_EQ(st.st_ino, st2.st_ino);
	EXPECT_EQ(st.st_dev, st2.st_dev);
}

/* A name created by wsem_open() shows at once, and goes at once. */
TEST_F(wsemfs, create_and_unlink_by_ioctl_show_at_once)
{
	struct stat st;

	if (!self->ready)
		return;
	ASSERT_EQ(-1, stat(self->path, &st));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(0, dir_has(self->dir, self->name, NULL, NULL));
	ASSERT_EQ(0, create_main(self, 0604));
	ASSERT_EQ(0, stat(self->path, &st));
	EXPECT_EQ(0604, st.st_mode & 07777);
	EXPECT_EQ(1, dir_has(self->dir, self->name, NULL, NULL));
	ASSERT_EQ(0, wsem_unlink(self->name));
	EXPECT_EQ(-1, stat(self->path, &st));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(0, dir_has(self->dir, self->name, NULL, NULL));
	/* And again: a negative dentry is not kept either. */
	EXPECT_EQ(0, close(self->fd));
	self->fd = -1;
	ASSERT_EQ(0, create_main(self, 0600));
	EXPECT_EQ(0, stat(self->path, &st));
	EXPECT_EQ(0600, st.st_mode & 07777);
}

/*
 * open(O_RDWR) of the file is a handle bound to the semaphore, holding 0,
 * that acquires and releases as a /dev/wsem handle does.
 */
TEST_F(wsemfs, open_rdwr_is_a_working_handle)
{
	struct wsem_stat st;
	int fd, fd2;

	if (!self->ready)
		return;
	ASSERT_EQ(0, create_main(self, 0600));
	fd = open(self->path, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, wsem_stat(fd, &st));
	EXPECT_EQ(CAP, st.capacity);
	EXPECT_EQ(0, st.held);
	EXPECT_STREQ(self->name, st.name);
	ASSERT_EQ(0, wsem_acquire(fd, 3));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(3, st.used);
	EXPECT_EQ(0, st.held);
	EXPECT_EQ(-1, wsem_tryacquire(self->fd, 2));
	EXPECT_EQ(EAGAIN, errno);
	/* A second open is a second handle. */
	fd2 = open(self->path, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd2);
	EXPECT_EQ(0, wsem_tryacquire(fd2, 1));
	EXPECT_EQ(0, wsem_release(fd, 1));
	ASSERT_EQ(0, wsem_stat(fd, &st));
	EXPECT_EQ(2, st.held);
	EXPECT_EQ(3, st.used);
	/* Closing gives the weight back. */
	EXPECT_EQ(0, close(fd));
	EXPECT_EQ(0, close(fd2));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(0, st.used);
	EXPECT_EQ(0, wsem_acquire(self->fd, CAP));
}

/* O_RDONLY watches only: stat, poll, read; no acquire, release, resize, loan. */
TEST_F(wsemfs, open_rdonly_watches_only)
{
	struct wsem_lend_args lend = { .size = sizeof(lend), .capacity = 1 };
	struct pollfd pfd = { .events = POLLIN };
	char text[TEXT_MAX];
	struct wsem_stat st;
	int fd;

	if (!self->ready)
		return;
	ASSERT_EQ(0, create_main(self, 0600));
	ASSERT_EQ(0, wsem_acquire(self->fd, 1));
	fd = open(self->path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, wsem_stat(fd, &st));
	EXPECT_EQ(1, st.used);
	EXPECT_EQ(-1, wsem_acquire(fd, 1));
	EXPECT_EQ(EBADF, errno);
	EXPECT_EQ(-1, wsem_tryacquire(fd, 1));
	EXPECT_EQ(EBADF, errno);
	EXPECT_EQ(-1, wsem_release(fd, 1));
	EXPECT_EQ(EBADF, errno);
	EXPECT_EQ(-1, wsem_set_capacity(fd, CAP + 1));
	EXPECT_EQ(EBADF, errno);
	EXPECT_EQ(-1, ioctl(fd, WSEM_IOC_LEND, &lend));
	EXPECT_EQ(EBADF, errno);
	pfd.fd = fd;
	EXPECT_LE(0, poll(&pfd, 1, 0));
	EXPECT_EQ(0, pfd.revents & (POLLERR | POLLNVAL));
	EXPECT_LT(0, read_text(fd, text, sizeof(text)));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(CAP, st.capacity);
	EXPECT_EQ(1, st.used);
	EXPECT_EQ(0, close(fd));
}

/*
 * O_WRONLY (all that a class with "w" alone may open) shows nothing of the
 * state, which needs read permission: stat and the idle wait fail with
 * EBADF, as acquiring through an O_RDONLY file does, poll reports POLLERR
 * alone, read fails, and fdinfo names the semaphore by its id only.  A
 * REOPEN of it is as write-only.
 */
TEST_F(wsemfs, open_wronly_shows_no_state)
{
	struct pollfd pfd = { .events = POLLIN | POLLPRI };
	char text[TEXT_MAX], val[80];
	struct wsem_stat st;
	int fd, fd2;

	if (!self->ready)
		return;
	ASSERT_EQ(0, create_main(self, 0600));
	fd = open(self->path, O_WRONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	EXPECT_EQ(-1, wsem_stat(fd, &st));
	EXPECT_EQ(EBADF, errno);
	EXPECT_EQ(-1, wsem_wait_idle(fd, 0));
	EXPECT_EQ(EBADF, errno);
	pfd.fd = fd;
	EXPECT_EQ(1, poll(&pfd, 1, 0));
	EXPECT_EQ(POLLERR, pfd.revents);
	EXPECT_EQ(-1, read(fd, text, sizeof(text)));
	EXPECT_EQ(EBADF, errno);
	ASSERT_EQ(0, fdinfo_get(fd, "wsem-id", val, sizeof(val)));
	EXPECT_EQ(fdinfo_num(self->fd, "wsem-id"), atoll(val));
	EXPECT_EQ(-1, fdinfo_get(fd, "wsem-name", val, sizeof(val)));
	EXPECT_EQ(-1, fdinfo_get(fd, "wsem-capacity", val, sizeof(val)));
	EXPECT_EQ(-1, fdinfo_get(fd, "wsem-used", val, sizeof(val)));
	EXPECT_EQ(-1, fdinfo_get(fd, "wsem-waiters", val, sizeof(val)));
	fd2 = wsem_reopen(fd, O_CLOEXEC);
	ASSERT_LE(0, fd2);
	EXPECT_EQ(-1, wsem_stat(fd2, &st));
	EXPECT_EQ(EBADF, errno);
	EXPECT_EQ(0, close(fd2));
	EXPECT_EQ(0, close(fd));
	/* The read-write handle still sees it all. */
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(CAP, st.capacity);
}

/*
 * read(2) gives one "key: value" line per field, as the handle's caller
 * sees them, and a read from offset 0 describes the state anew.
 */
TEST_F(wsemfs, read_gives_the_state_as_text)
{
	char text[TEXT_MAX], val[80];
	uint64_t weight = 3;
	pid_t pid;
	int fd, status;

	if (!self->ready)
		return;
	ASSERT_EQ(0, create_main(self, 0640));
	ASSERT_EQ(0, wsem_acquire(self->fd, 2));
	/* A waiter for 3: a child blocked on root's handle. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(wsem_acquire(self->fd, weight) ? 1 : 0);
	ASSERT_EQ(0, wait_waiters(self->fd, 1));

	fd = open(self->path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_LT(0, read_text(fd, text, sizeof(text)));
	TH_LOG("text:\n%s", text);
	EXPECT_EQ('\n', text[strlen(text) - 1]);
	ASSERT_EQ(0, line_get(text, "name", val, sizeof(val)));
	EXPECT_STREQ(self->name, val);
	ASSERT_EQ(0, line_get(text, "capacity", val, sizeof(val)));
	EXPECT_STREQ("4", val);
	ASSERT_EQ(0, line_get(text, "used", val, sizeof(val)));
	EXPECT_STREQ("2", val);
	ASSERT_EQ(0, line_get(text, "available", val, sizeof(val)));
	EXPECT_STREQ("2", val);
	ASSERT_EQ(0, line_get(text, "held", val, sizeof(val)));
	EXPECT_STREQ("0", val);
	ASSERT_EQ(0, line_get(text, "waiters", val, sizeof(val)));
	EXPECT_STREQ("1", val);
	ASSERT_EQ(0, line_get(text, "queued_weight", val, sizeof(val)));
	EXPECT_STREQ("3", val);
	ASSERT_EQ(0, line_get(text, "uid", val, sizeof(val)));
	EXPECT_STREQ("0", val);
	ASSERT_EQ(0, line_get(text, "gid", val, sizeof(val)));
	EXPECT_STREQ("0", val);
	ASSERT_EQ(0, line_get(text, "mode", val, sizeof(val)));
	EXPECT_STREQ("0640", val);

	/* The waiter is granted; a new read from 0 says so. */
	ASSERT_EQ(0, wsem_release(self->fd, 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ASSERT_LT(0, read_text(fd, text, sizeof(text)));
	ASSERT_EQ(0, line_get(text, "used", val, sizeof(val)));
	EXPECT_STREQ("4", val);
	ASSERT_EQ(0, line_get(text, "waiters", val, sizeof(val)));
	EXPECT_STREQ("0", val);
	EXPECT_EQ(0, close(fd));

	/* A /dev/wsem handle reads the same way, with what it holds. */
	ASSERT_LT(0, read_text(self->fd, text, sizeof(text)));
	ASSERT_EQ(0, line_get(text, "held", val, sizeof(val)));
	EXPECT_STREQ("4", val);
	ASSERT_EQ(0, line_get(text, "name", val, sizeof(val)));
	EXPECT_STREQ(self->name, val);
}

/* unlink(2) of the file unlinks the semaphore; open handles go on. */
TEST_F(wsemfs, unlink_file_unlinks_the_semaphore)
{
	struct wsem_stat st;
	int fd;

	if (!self->ready)
		return;
	ASSERT_EQ(0, create_main(self, 0600));
	fd = open(self->path, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, wsem_acquire(fd, 1));
	ASSERT_EQ(0, unlink(self->path));
	EXPECT_EQ(-1, wsem_open(self->name, O_CLOEXEC, 0, 0));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(-1, open(self->path, O_RDWR));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(0, dir_has(self->dir, self->name, NULL, NULL));
	EXPECT_EQ(-1, wsem_unlink(self->name));
	EXPECT_EQ(ENOENT, errno);
	/* Both handles still work, nameless. */
	ASSERT_EQ(0, wsem_stat(fd, &st));
	EXPECT_STREQ("", st.name);
	EXPECT_EQ(1, st.used);
	EXPECT_EQ(0, wsem_acquire(self->fd, CAP - 1));
	EXPECT_EQ(0, wsem_release(fd, 1));
	EXPECT_EQ(0, close(fd));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(CAP - 1, st.used);
}

static void unlink_path(FIXTURE_DATA(wsemfs) *self, void *arg UNUSED,
			struct outcome *o)
{
	o->ret = unlink(self->path);
	o->err = errno;
}

/*
 * The directory is sticky: a user that owns neither the file nor the
 * directory cannot unlink, whatever the mode; the owner can.
 */
TEST_F(wsemfs, unlink_file_needs_the_owner)
{
	struct outcome o;

	if (!self->ready)
		return;
	ASSERT_EQ(0, create_main(self, 0666));
	ASSERT_EQ(0, run_child(self, NOBODY, NOBODY, 0, unlink_path, NULL,
			       &o));
	ASSERT_EQ(0, o.setup_err);
	EXPECT_EQ(-1, o.ret);
	EXPECT_EQ(EPERM, o.err);
	EXPECT_EQ(0, access(self->path, F_OK));
	ASSERT_EQ(0, chown(self->path, NOBODY, NOBODY));
	ASSERT_EQ(0, run_child(self, NOBODY, NOBODY, 0, unlink_path, NULL,
			       &o));
	EXPECT_EQ(0, o.ret) {
		TH_LOG("the owner's unlink: %s", strerror(o.err));
	}
	EXPECT_EQ(-1, wsem_open(self->name, O_CLOEXEC, 0, 0));
	EXPECT_EQ(ENOENT, errno);
}

static void open_by_name(FIXTURE_DATA(wsemfs) *self, void *arg UNUSED,
			 struct outcome *o)
{
	int fd;

	o->ret = fd = wsem_open(self->name, O_CLOEXEC, 0, 0);
	o->err = errno;
	if (fd >= 0)
		close(fd);
	fd = open(self->path, O_RDWR | O_CLOEXEC);
	o->ret2 = fd;
	o->err2 = errno;
	if (fd >= 0)
		close(fd);
}

/*
 * chmod(2) of the file is the semaphore's new mode at once: for stat by
 * handle, and for who may open it, by name or by file.
 */
TEST_F(wsemfs, chmod_is_seen_by_every_path)
{
	struct wsem_stat st;
	struct outcome o;
	struct stat sb;

	if (!self->ready)
		return;
	ASSERT_EQ(0, create_main(self, 0600));
	ASSERT_EQ(0, run_child(self, NOBODY, NOBODY, 0, open_by_name, NULL,
			       &o));
	ASSERT_EQ(0, o.setup_err);
	EXPECT_EQ(-1, o.ret);
	EXPECT_EQ(EACCES, o.err);
	EXPECT_EQ(-1, o.ret2);
	EXPECT_EQ(EACCES, o.err2);

	ASSERT_EQ(0, chmod(self->path, 0606));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(0606, st.mode);
	ASSERT_EQ(0, stat(self->path, &sb));
	EXPECT_EQ(0606, sb.st_mode & 07777);
	ASSERT_EQ(0, run_child(self, NOBODY, NOBODY, 0, open_by_name, NULL,
			       &o));
	EXPECT_LE(0, o.ret) {
		TH_LOG("open by name after chmod 0606: %s", strerror(o.err));
	}
	EXPECT_LE(0, o.ret2) {
		TH_LOG("open by file after chmod 0606: %s", strerror(o.err2));
	}

	/* Back: access goes at once. */
	ASSERT_EQ(0, chmod(self->path, 0640));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(0640, st.mode);
	ASSERT_EQ(0, run_child(self, NOBODY, NOBODY, 0, open_by_name, NULL,
			       &o));
	EXPECT_EQ(-1, o.ret);
	EXPECT_EQ(EACCES, o.err);
	EXPECT_EQ(-1, o.ret2);
	EXPECT_EQ(EACCES, o.err2);
	/* A semaphore has no set-id or sticky bits. */
	EXPECT_EQ(0, chmod(self->path, 07640));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(0, st.mode & ~0777);
}

static void open_write_only(FIXTURE_DATA(wsemfs) *self, void *arg UNUSED,
			    struct outcome *o)
{
	int fd = open(self->path, O_WRONLY | O_CLOEXEC);

	o->ret = fd;
	o->err = errno;
	if (fd < 0)
		return;
	o->ret2 = wsem_tryacquire(fd, 1);
	o->err2 = errno;
	close(fd);
}

/*
 * Taking weight needs read and write permission, as by name: a user whose
 * class has only "w" (mode 0602) gets no handle that acquires, whatever
 * the open mode.
 */
TEST_F(wsemfs, write_only_mode_bits_acquire_nothing)
{
	struct wsem_stat st;
	struct outcome o;

	if (!self->ready)
		return;
	ASSERT_EQ(0, create_main(self, 0602));
	ASSERT_EQ(0, run_child(self, NOBODY, NOBODY, 0, open_by_name, NULL,
			       &o));
	ASSERT_EQ(0, o.setup_err);
	EXPECT_EQ(-1, o.ret);
	EXPECT_EQ(EACCES, o.err);
	EXPECT_EQ(-1, o.ret2);
	EXPECT_EQ(EACCES, o.err2);
	ASSERT_EQ(0, run_child(self, NOBODY, NOBODY, 0, open_write_only, NULL,
			       &o));
	if (o.ret >= 0) {
		EXPECT_EQ(-1, o.ret2) {
			TH_LOG("an O_WRONLY open acquired with mode 0602");
		}
	} else {
		EXPECT_EQ(EACCES, o.err);
	}
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(0, st.used);
}

static void chmod_path(FIXTURE_DATA(wsemfs) *self, void *arg UNUSED,
		       struct outcome *o)
{
	o->ret = chmod(self->path, 0666);
	o->err = errno;
	o->ret2 = chown(self->path, NOBODY, NOBODY);
	o->err2 = errno;
}

static void set_capacity_by_file(FIXTURE_DATA(wsemfs) *self,
				 void *arg UNUSED, struct outcome *o)
{
	int fd = open(self->path, O_RDWR | O_CLOEXEC);

	o->ret = fd;
	o->err = errno;
	if (fd < 0)
		return;
	o->ret2 = wsem_set_capacity(fd, CAP + 2);
	o->err2 = errno;
	close(fd);
}

/*
 * chown(2) gives the semaphore a new owner and group, seen by stat at
 * once; the new owner may open it, resize it and chmod it, the old
 * "other" may not.  Nobody but the owner (or root) may chmod or chown.
 */
TEST_F(wsemfs, chown_is_seen_by_every_path)
{
	struct wsem_stat st;
	struct outcome o;

	if (!self->ready)
		return;
	ASSERT_EQ(0, create_main(self, 0600));
	ASSERT_EQ(0, run_child(self, OWNER_UID, OWNER_GID, 0, chmod_path, NULL,
			       &o));
	ASSERT_EQ(0, o.setup_err);
	EXPECT_EQ(-1, o.ret);
	EXPECT_EQ(EPERM, o.err);
	EXPECT_EQ(-1, o.ret2);
	EXPECT_EQ(EPERM, o.err2);
	ASSERT_EQ(0, run_child(self, OWNER_UID, OWNER_GID, 0,
			       set_capacity_by_file, NULL, &o));
	EXPECT_EQ(-1, o.ret);
	EXPECT_EQ(EACCES, o.err);

	ASSERT_EQ(0, chown(self->path, OWNER_UID, OWNER_GID));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(OWNER_UID, st.uid);
	EXPECT_EQ(OWNER_GID, st.gid);
	EXPECT_EQ(0600, st.mode);
	ASSERT_EQ(0, run_child(self, OWNER_UID, OWNER_GID, 0,
			       set_capacity_by_file, NULL, &o));
	EXPECT_LE(0, o.ret) {
		TH_LOG("the new owner's open: %s", strerror(o.err));
	}
	EXPECT_EQ(0, o.ret2) {
		TH_LOG("the new owner's resize: %s", strerror(o.err2));
	}
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(CAP + 2, st.capacity);
	/* The owner may chmod; chown to another user is root's. */
	ASSERT_EQ(0, run_child(self, OWNER_UID, OWNER_GID, 0, chmod_path, NULL,
			       &o));
	EXPECT_EQ(0, o.ret);
	EXPECT_EQ(-1, o.ret2);
	EXPECT_EQ(EPERM, o.err2);
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(0666, st.mode);
	EXPECT_EQ(OWNER_UID, st.uid);
	/* Root's handle and by-name open still see the same semaphore. */
	ASSERT_EQ(0, run_child(self, NOBODY, NOBODY, 0, open_by_name, NULL,
			       &o));
	EXPECT_LE(0, o.ret);
	EXPECT_LE(0, o.ret2);
}

/* Nothing can be created in the directory: EPERM for every way. */
TEST_F(wsemfs, creation_is_refused)
{
	char other[200], other2[200];
	struct stat st;

	if (!self->ready)
		return;
	ASSERT_EQ(0, create_main(self, 0600));
	snprintf(other, sizeof(other), "%s/%s.new", self->dir, self->name);
	snprintf(other2, sizeof(other2), "%s/%s.x", self->dir, self->name);
	EXPECT_EQ(-1, open(other, O_CREAT | O_RDWR | O_CLOEXEC, 0600));
	EXPECT_EQ(EPERM, errno);
	EXPECT_EQ(-1, open(other, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC,
			   0600));
	EXPECT_EQ(EPERM, errno);
	EXPECT_EQ(-1, mkdir(other, 0700));
	EXPECT_EQ(EPERM, errno);
	EXPECT_EQ(-1, mknod(other, S_IFREG | 0600, 0));
	EXPECT_EQ(EPERM, errno);
	EXPECT_EQ(-1, mknod(other, S_IFIFO | 0600, 0));
	EXPECT_EQ(EPERM, errno);
	EXPECT_EQ(-1, symlink(self->name, other));
	EXPECT_EQ(EPERM, errno);
	EXPECT_EQ(-1, link(self->path, other));
	EXPECT_EQ(EPERM, errno);
	EXPECT_EQ(-1, rename(self->path, other2));
	EXPECT_EQ(EPERM, errno);
	EXPECT_EQ(-1, stat(other, &st));
	EXPECT_EQ(ENOENT, errno);
	/*
	 * The directory lists the IPC namespace's names, another test's
	 * too: neither refused name is there, the main one is.
	 */
	EXPECT_EQ(0, dir_has(self->dir, strrchr(other, '/') + 1, NULL, NULL));
	EXPECT_EQ(0, dir_has(self->dir, strrchr(other2, '/') + 1, NULL,
			     NULL));
	EXPECT_EQ(1, dir_has(self->dir, self->name, NULL, NULL));
	/* O_CREAT of an existing name just opens it; O_EXCL refuses. */
	EXPECT_EQ(-1, open(self->path, O_CREAT | O_EXCL | O_RDWR, 0600));
	EXPECT_EQ(EEXIST, errno);
	/* Nor does truncating change anything. */
	EXPECT_EQ(-1, truncate(self->path, 0));
	EXPECT_EQ(0, access(self->path, F_OK));
}

/*
 * A bind mount of the file opens the semaphore while it has its name; once
 * unlinked, the file opens no more (even after the name is made again: the
 * bind mount holds the old file), and handles go on working, nameless.
 */
TEST_F(wsemfs, bind_mounted_file_after_unlink)
{
	struct wsem_stat st;
	char *bind;
	int fd, fd2, fd3;

	if (!self->ready)
		return;
	ASSERT_EQ(0, create_main(self, 0600));
	snprintf(self->extra[0], sizeof(self->extra[0]), "/tmp/%s.bind",
		 self->name);
	bind = self->extra[0];
	fd = open(bind, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, close(fd));
	ASSERT_EQ(0, mount(self->path, bind, NULL, MS_BIND, NULL));

	fd = open(bind, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, wsem_acquire(fd, 1));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(1, st.used);

	ASSERT_EQ(0, wsem_unlink(self->name));
	EXPECT_EQ(-1, open(bind, O_RDWR | O_CLOEXEC));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(-1, open(bind, O_RDONLY | O_CLOEXEC));
	EXPECT_EQ(ENOENT, errno);
	/* A new semaphore of the same name is not the bound file's. */
	fd3 = create_name(self, self->name, 0600, CAP);
	ASSERT_LE(0, fd3);
	EXPECT_EQ(-1, open(bind, O_RDWR | O_CLOEXEC));
	EXPECT_EQ(ENOENT, errno);

	/* The open handle goes on, nameless; so does a reopen of it. */
	ASSERT_EQ(0, wsem_stat(fd, &st));
	EXPECT_STREQ("", st.name);
	EXPECT_EQ(1, st.held);
	fd2 = wsem_reopen(fd, O_CLOEXEC);
	ASSERT_LE(0, fd2);
	EXPECT_EQ(0, wsem_acquire(fd2, CAP - 1));
	EXPECT_EQ(-1, wsem_tryacquire(fd, 1));
	EXPECT_EQ(EAGAIN, errno);
	EXPECT_EQ(0, close(fd2));
	EXPECT_EQ(0, wsem_release(fd, 1));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(0, st.used);
	EXPECT_EQ(0, close(fd));
	EXPECT_EQ(0, close(fd3));
}

/*
 * In a fresh IPC namespace, list NAMES names through getdents64 with a
 * buffer of @bufsize bytes; the child's exit status says what was wrong.
 */
#define NAMES	40
static int list_in_batches(size_t bufsize)
{
	char dir[] = "/tmp/wsem-ls.XXXXXX", name[WSEM_NAME_MAX], buf[4096];
	char prev[256] = "";
	int i, fd, seen = 0, dots = 0;
	long n, off;

	if (unshare(CLONE_NEWIPC | CLONE_NEWNS) ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    !mkdtemp(dir) || mount("wsem", dir, "wsem", 0, NULL))
		return 10;
	for (i = 0; i < NAMES; i++) {
		snprintf(name, sizeof(name), "ls.%02d", i);
		if (wsem_open(name, O_CREAT | O_EXCL, 0600, 1) < 0)
			return 11;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return 12;
	while ((n = syscall(SYS_getdents64, fd, buf, bufsize)) > 0) {
		for (off = 0; off < n;) {
			struct dirent64 *d = (struct dirent64 *)(buf + off);

			off += d->d_reclen;
			if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, "..")) {
				dots++;
				continue;
			}
			/* In name order, each once. */
			if (strcmp(prev, d->d_name) >= 0)
				return 13;
			snprintf(prev, sizeof(prev), "%s", d->d_name);
			seen++;
		}
	}
	if (n < 0)
		return 14;
	return seen == NAMES && dots == 2 ? 0 : 15;
}

/*
 * A directory of many names lists each once, in order, whatever the size
 * of the caller's buffer (the kernel copies names in batches).
 */
TEST_F(wsemfs, readdir_lists_every_name_once)
{
	static const size_t sizes[] = { 4096, 200, 64 };
	int status;
	unsigned int i;
	pid_t pid;

	if (!self->ready)
		return;
	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		pid = fork();
		ASSERT_LE(0, pid);
		if (pid == 0)
			_exit(list_in_batches(sizes[i]));
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		EXPECT_EQ(0, status) {
			TH_LOG("buffer of %zu bytes: status %d", sizes[i],
			       WEXITSTATUS(status));
		}
	}
}

#define REVALIDATE_HOLD	"/sys/module/wsem/parameters/test_revalidate_hold"

/*
 * The walker of walk_meets_a_destroyed_inode(): stat @path until a walk
 * is held.  A path walk may leave RCU-walk before it reaches the file
 * (the mount table changed meanwhile, or a dentry on its path, or a step
 * needs to block) and finish in a ref-walk, which is never held: it finds
 * the file, the hold is still armed (1), and it walks again.  0 once a
 * held walk found the name gone; 1 to 4 say what failed.
 */
static int walk_until_held(int fd, const char *path)
{
	struct stat st;
	int i;

	if (close(fd))
		return 1;
	for (i = 0; i < 1000; i++) {
		if (stat(path, &st))
			return errno == ENOENT ? 0 : 2;
		if (read_num(REVALIDATE_HOLD) != 1)
			return 3;
	}
	return 4;
}

/*
 * In a fresh IPC namespace (a file system instance of its own): a path
 * walk of a semaphore's file is held in its RCU-walk revalidation (a test
 * build's knob) while the semaphore loses its name and the last descriptor
 * of the file closes, which destroys the inode the walk looks at.  The
 * walk must change nothing in that inode: a link count it cleared would
 * count in the super block's s_remove_count for ever, and a remount
 * read-only fail with EBUSY.  The child's exit status says what failed.
 */
static int walk_meets_a_destroyed_inode(void)
{
	char dir[] = "/tmp/wsem-rv.XXXXXX", path[64];
	int fd, i, status;
	pid_t walker;

	if (unshare(CLONE_NEWIPC | CLONE_NEWNS) ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    !mkdtemp(dir) || mount("wsem", dir, "wsem", 0, NULL))
		return 10;
	fd = wsem_open("rv", O_CREAT | O_EXCL, 0600, 1);
	if (fd < 0 || close(fd))
		return 11;
	snprintf(path, sizeof(path), "%s/rv", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || write_file(REVALIDATE_HOLD, "1"))
		return 12;
	walker = fork();
	if (walker < 0)
		return 13;
	if (walker == 0)
		_exit(walk_until_held(fd, path));
	for (i = 0; i < 1000 && read_num(REVALIDATE_HOLD) != 2; i++)
		usleep(10 * 1000);
	if (i == 1000)
		return waitpid(walker, &status, WNOHANG) == walker ? 19 : 14;
	if (wsem_unlink("rv") || close(fd))
		return 15;
	write_file(REVALIDATE_HOLD, "0");
	if (waitpid(walker, &status, 0) != walker || status)
		return 16;
	if (mount(NULL, dir, NULL, MS_REMOUNT | MS_RDONLY, NULL))
		return errno == EBUSY ? 17 : 18;
	return 0;
}

/*
 * A path walk that meets an inode on its way out (its last dentry killed
 * on another CPU) leaves it as it is: the RCU-walk only reads, and the
 * refresh of a changed semaphore's owner, mode or link count is done in a
 * ref-walk, which holds the inode.
 */
TEST_F(wsemfs, rcu_walk_changes_no_inode_it_does_not_hold)
{
	int status;
	pid_t pid;

	if (!self->ready)
		return;
	if (write_file(REVALIDATE_HOLD, "0"))
		SKIP(return, "not a test build (no test_revalidate_hold)");
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(walk_meets_a_destroyed_inode());
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	write_file(REVALIDATE_HOLD, "0");
	EXPECT_EQ(0, status) {
		TH_LOG("exit status %d (14: no walk held in 10 s; 19: the walker ended, never held; 16: the walker failed; 17: the remount failed with EBUSY)",
		       WEXITSTATUS(status));
	}
}

/* WSEM_IOC_REOPEN of a wsemfs handle works, even after the unlink. */
TEST_F(wsemfs, reopen_of_a_file_handle)
{
	struct wsem_stat st;
	int fd, fd2;

	if (!self->ready)
		return;
	ASSERT_EQ(0, create_main(self, 0600));
	fd = open(self->path, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	fd2 = wsem_reopen(fd, O_CLOEXEC);
	ASSERT_LE(0, fd2);
	EXPECT_EQ(0, wsem_acquire(fd2, 2));
	ASSERT_EQ(0, wsem_stat(fd, &st));
	EXPECT_EQ(0, st.held);
	EXPECT_EQ(2, st.used);
	EXPECT_EQ(0, close(fd2));
	ASSERT_EQ(0, unlink(self->path));
	fd2 = wsem_reopen(fd, O_CLOEXEC);
	ASSERT_LE(0, fd2) {
		TH_LOG("reopen after unlink: %s", strerror(errno));
	}
	EXPECT_EQ(0, wsem_acquire(fd2, CAP));
	EXPECT_EQ(0, close(fd2));
	EXPECT_EQ(0, close(fd));
}

/* A read-only file handle begets read-only handles. */
TEST_F(wsemfs, reopen_of_a_read_only_file_handle)
{
	struct wsem_stat st;
	int fd, fd2;

	if (!self->ready)
		return;
	ASSERT_EQ(0, create_main(self, 0600));
	fd = open(self->path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	fd2 = wsem_reopen(fd, O_CLOEXEC);
	ASSERT_LE(0, fd2);
	EXPECT_EQ(0, wsem_stat(fd2, &st));
	EXPECT_EQ(-1, wsem_acquire(fd2, 1));
	EXPECT_EQ(EBADF, errno);
	EXPECT_EQ(0, close(fd2));
	EXPECT_EQ(0, close(fd));
}

/* Two mounts in one IPC namespace are one file system instance. */
TEST_F(wsemfs, two_mounts_show_the_same)
{
	char path2[200];
	struct stat a, b;

	if (!self->ready)
		return;
	ASSERT_EQ(0, make_extra(self, 0));
	ASSERT_EQ(0, mount("wsem", self->extra[0], "wsem", 0, NULL));
	ASSERT_EQ(0, create_main(self, 0600));
	snprintf(path2, sizeof(path2), "%s/%s", self->extra[0], self->name);
	ASSERT_EQ(0, stat(self->path, &a));
	ASSERT_EQ(0, stat(path2, &b));
	EXPECT_EQ(a.st_dev, b.st_dev);
	EXPECT_EQ(a.st_ino, b.st_ino);
	ASSERT_EQ(0, chmod(path2, 0640));
	ASSERT_EQ(0, stat(self->path, &a));
	EXPECT_EQ(0640, a.st_mode & 07777);
	ASSERT_EQ(0, unlink(path2));
	EXPECT_EQ(-1, stat(self->path, &a));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(dir_count(self->dir), dir_count(self->extra[0]));
}

/*
 * In a new IPC namespace: mount on extra[0], create one name of its own;
 * count what the mount shows and try the test's name there.
 */
static void mount_in_new_ns(FIXTURE_DATA(wsemfs) *self, void *arg,
			    struct outcome *o)
{
	const char *own = arg;
	char path[200];
	int fd;

	fd = wsem_open(own, O_CREAT | O_EXCL | O_CLOEXEC, 0600, 2);
	if (fd < 0) {
		o->setup_err = errno;
		return;
	}
	if (mount("wsem", self->extra[0], "wsem", 0, NULL)) {
		o->setup_err = errno;
		return;
	}
	o->count = dir_count(self->extra[0]);
	snprintf(path, sizeof(path), "%s/%s", self->extra[0], self->name);
	o->ret = open(path, O_RDWR | O_CLOEXEC);
	o->err = errno;
	snprintf(path, sizeof(path), "%s/%s", self->extra[0], own);
	o->ret2 = open(path, O_RDWR | O_CLOEXEC);
	o->err2 = errno;
	/* Leave: the namespace dies, its mount stays on extra[0]. */
}

/*
 * A mount made in another IPC namespace shows that namespace's names only;
 * it keeps nothing alive: when that namespace has ended, its names go from
 * the mount and its files open no more.
 */
TEST_F(wsemfs, other_ipc_namespace_mount)
{
	char own[WSEM_NAME_MAX], path[200];
	struct outcome o;
	int64_t end;
	int fd, ret;

	if (!self->ready)
		return;
	ASSERT_EQ(0, create_main(self, 0600));
	ASSERT_EQ(0, make_extra(self, 0));
	snprintf(own, sizeof(own), "%.50s.own", self->name);
	ASSERT_EQ(0, run_child(self, -1, -1, CLONE_NEWIPC, mount_in_new_ns,
			       own, &o));
	ASSERT_EQ(0, o.setup_err) {
		TH_LOG("create and mount in a new namespace: %s",
		       strerror(o.setup_err));
	}
	EXPECT_EQ(1, o.count);
	EXPECT_EQ(-1, o.ret);
	EXPECT_EQ(ENOENT, o.err);
	EXPECT_LE(0, o.ret2);

	/* That namespace's name is nowhere in ours. */
	EXPECT_EQ(-1, wsem_open(own, O_CLOEXEC, 0, 0));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(0, dir_has(self->dir, own, NULL, NULL));
	/* Its mount is gone empty within seconds: its namespace died. */
	snprintf(path, sizeof(path), "%s/%s", self->extra[0], own);
	end = now_ns() + VANISH_NS;
	do {
		fd = open(path, O_RDWR | O_CLOEXEC);
		ret = fd < 0 ? errno : 0;
		if (fd >= 0)
			close(fd);
		if (ret == ENOENT)
			break;
		usleep(20000);
	} while (now_ns() < end);
	EXPECT_EQ(ENOENT, ret) {
		TH_LOG("%s still opens 5 s after its namespace died", path);
	}
	EXPECT_EQ(0, dir_count(self->extra[0]));
	/* It never showed the init namespace's names. */
	EXPECT_EQ(0, dir_has(self->extra[0], self->name, NULL, NULL));
}

/*
 * In a new user and mount namespace, still in the init IPC namespace:
 * mount on extra[0] (refused), then again in a new IPC namespace of that
 * user namespace (allowed), and count what it shows.
 */
static void mount_as_userns_root(FIXTURE_DATA(wsemfs) *self,
				 void *arg UNUSED, struct outcome *o)
{
	o->ret = mount("wsem", self->extra[0], "wsem", 0, NULL);
	o->err = errno;
	if (!o->ret)
		umount2(self->extra[0], MNT_DETACH);
	o->ret2 = unshare(CLONE_NEWIPC) ?:
		  mount("wsem", self->extra[0], "wsem", 0, NULL);
	o->err2 = errno;
	o->count = o->ret2 ? -1 : dir_count(self->extra[0]);
}

/*
 * Mounting needs CAP_SYS_ADMIN over the user namespace that owns the
 * mounter's IPC namespace: root of a new user namespace (with its own
 * mount namespace) may not mount the host's semaphores, and may mount
 * those of an IPC namespace of its own, which has none.
 */
TEST_F(wsemfs, mount_needs_admin_over_the_ipc_namespace_owner)
{
	struct outcome o;

	if (!self->ready)
		return;
	ASSERT_EQ(0, create_main(self, 0666));
	ASSERT_EQ(0, make_extra(self, 0));
	ASSERT_EQ(0, run_child(self, -1, -1, CLONE_NEWUSER | CLONE_NEWNS,
			       mount_as_userns_root, NULL, &o));
	if (o.setup_err == EINVAL || o.setup_err == EPERM)
		SKIP(return, "no user namespace here: %s",
		     strerror(o.setup_err));
	ASSERT_EQ(0, o.setup_err);
	EXPECT_EQ(-1, o.ret);
	EXPECT_EQ(EPERM, o.err);
	EXPECT_EQ(0, o.ret2) {
		TH_LOG("unshare or mount in its own IPC namespace: %s",
		       strerror(o.err2));
	}
	EXPECT_EQ(0, o.count);
}

/* A mount keeps the module loaded. */
TEST_F(wsemfs, rmmod_refused_while_mounted)
{
	if (!self->ready)
		return;
	/* No handle is open in this process; the mount is what pins it. */
	ASSERT_EQ(-1, syscall(SYS_delete_module, "wsem", O_NONBLOCK));
	EXPECT_TRUE(errno == EBUSY || errno == EAGAIN) {
		TH_LOG("delete_module: %s", strerror(errno));
	}
	EXPECT_EQ(0, access("/sys/module/wsem", F_OK));
	EXPECT_EQ(0, access("/dev/wsem", F_OK));
}

/*
 * The root field of /proc/self/mountinfo (the fourth) for the mount at
 * @point, into @buf; 0, or -1 if there is none.
 */
static int mount_root(const char *point, char *buf, size_t len)
{
	char line[512], root[256], at[256];
	int ret = -1;
	FILE *f = fopen("/proc/self/mountinfo", "re");

	if (!f)
		return -1;
	while (ret && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%*s %*s %*s %255s %255s", root, at) == 2 &&
		    !strcmp(at, point)) {
			snprintf(buf, len, "%s", root);
			ret = 0;
		}
	}
	fclose(f);
	return ret;
}

/* The readlink(2) of @fd's /proc/self/fd entry, into @buf; 0 or -1. */
static int fd_link(int fd, char *buf, size_t len)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, buf, len - 1);
	if (n < 0)
		return -1;
	buf[n] = 0;
	return 0;
}

/* In another IPC namespace: stat, fdinfo and the text of a passed handle. */
static void look_at_passed(FIXTURE_DATA(wsemfs) *self, void *arg,
			   struct outcome *o)
{
	char text[TEXT_MAX];
	int sock = *(int *)arg;
	int fd = recv_fd(sock);

	o->ret = fd;
	o->err = errno;
	if (fd < 0)
		return;
	o->ret2 = wsem_stat(fd, &o->st);
	o->err2 = errno;
	if (fdinfo_name(fd, o->fdinfo_name, sizeof(o->fdinfo_name)))
		snprintf(o->fdinfo_name, sizeof(o->fdinfo_name), "?");
	if (read_text(fd, text, sizeof(text)) < 0 ||
	    line_get(text, "name", o->text_name, sizeof(o->text_name)))
		snprintf(o->text_name, sizeof(o->text_name), "?");
	snprintf(text, sizeof(text), "/proc/self/fd/%d", fd);
	if (readlink(text, o->link, sizeof(o->link) - 1) < 0)
		snprintf(o->link, sizeof(o->link), "?");
	if (self->extra[0][0] &&
	    mount_root(self->extra[0], o->mroot, sizeof(o->mroot)))
		snprintf(o->mroot, sizeof(o->mroot), "?");
	/* A file of the host's mount, opened from here: the same. */
	fd = open(self->path, O_RDWR | O_CLOEXEC);
	o->count = -1;
	if (fd >= 0) {
		struct wsem_stat st;

		o->count = wsem_stat(fd, &st) ? -1 : (int)strlen(st.name);
		close(fd);
	}
}

/*
 * A name shows in stat, fdinfo and the text only to a caller in its own
 * IPC namespace: a handle passed (SCM_RIGHTS) into another namespace, or a
 * file opened from there, tells nothing of it.
 */
TEST_F(wsemfs, name_hidden_from_other_namespaces)
{
	char text[TEXT_MAX], val[WSEM_NAME_MAX + 8], link[160], hidden[32];
	struct wsem_stat st;
	struct outcome o;
	int sk[2], fd;

	if (!self->ready)
		return;
	ASSERT_EQ(0, create_main(self, 0600));
	/* A bind mount of the file, as a container would have. */
	snprintf(self->extra[0], sizeof(self->extra[0]), "/tmp/%s.bind",
		 self->name);
	fd = open(self->extra[0], O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC,
		  0600);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, close(fd));
	ASSERT_EQ(0, mount(self->path, self->extra[0], NULL, MS_BIND, NULL));
	fd = open(self->path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	/* Here, everything names it. */
	ASSERT_EQ(0, wsem_stat(fd, &st));
	EXPECT_STREQ(self->name, st.name);
	ASSERT_EQ(0, fdinfo_name(fd, val, sizeof(val)));
	EXPECT_STREQ(self->name, val);
	ASSERT_LT(0, read_text(fd, text, sizeof(text)));
	ASSERT_EQ(0, line_get(text, "name", val, sizeof(val)));
	EXPECT_STREQ(self->name, val);
	ASSERT_EQ(0, fd_link(fd, link, sizeof(link)));
	EXPECT_STREQ(self->path, link);
	ASSERT_EQ(0, mount_root(self->extra[0], link, sizeof(link)));
	snprintf(val, sizeof(val), "/%s", self->name);
	EXPECT_STREQ(val, link);
	/* Elsewhere it is the number fdinfo shows as wsem-id. */
	ASSERT_LE(0, fdinfo_num(fd, "wsem-id"));
	snprintf(hidden, sizeof(hidden), "[%lld]", fdinfo_num(fd, "wsem-id"));

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sk));
	ASSERT_EQ(0, send_fd(sk[0], fd, 0));
	ASSERT_EQ(0, send_fd(sk[0], self->fd, 0));
	ASSERT_EQ(0, run_child(self, -1, -1, CLONE_NEWIPC, look_at_passed,
			       &sk[1], &o));
	ASSERT_EQ(0, o.setup_err);
	ASSERT_LE(0, o.ret);
	ASSERT_EQ(0, o.ret2);
	EXPECT_STREQ("", o.st.name);
	EXPECT_EQ(CAP, o.st.capacity);
	EXPECT_STREQ("", o.fdinfo_name);
	EXPECT_STREQ("", o.text_name);
	EXPECT_EQ(0, o.count);
	/* Nor mountinfo's root of a bind mount of it. */
	snprintf(val, sizeof(val), "/%s", hidden);
	EXPECT_STREQ(val, o.mroot);
	/*
	 * /proc/self/fd is a path, as for any file passed from the host:
	 * bubblewrap finds its bind mounts through it.  For the record.
	 */
	TH_LOG("/proc/self/fd of the passed file there: %s", o.link);
	/* The /dev/wsem handle, too. */
	ASSERT_EQ(0, run_child(self, -1, -1, CLONE_NEWIPC, look_at_passed,
			       &sk[1], &o));
	ASSERT_LE(0, o.ret);
	EXPECT_STREQ("", o.st.name);
	EXPECT_STREQ("", o.fdinfo_name);
	EXPECT_STREQ("", o.text_name);
	EXPECT_EQ(0, close(sk[0]));
	EXPECT_EQ(0, close(sk[1]));
	EXPECT_EQ(0, close(fd));
}

/*
 * A user namespace whose 0 is @id outside (uid and gid), kept by a child
 * that lives until this returns; its fd, or -1.
 */
static int userns_of(int id)
{
	char path[64], map[32], byte;
	int up[2], down[2], fd = -1;
	pid_t pid;

	if (pipe2(up, O_CLOEXEC) || pipe2(down, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		close(up[0]);
		close(down[1]);
		if (unshare(CLONE_NEWUSER))
			_exit(1);
		if (write(up[1], "u", 1) != 1)
			_exit(1);
		read(down[0], &byte, 1);
		_exit(0);
	}
	close(up[1]);
	close(down[0]);
	snprintf(map, sizeof(map), "0 %d 1", id);
	if (read(up[0], &byte, 1) == 1) {
		snprintf(path, sizeof(path), "/proc/%d/uid_map", pid);
		if (!write_file(path, map)) {
			snprintf(path, sizeof(path), "/proc/%d/gid_map", pid);
			if (!write_file(path, map)) {
				snprintf(path, sizeof(path), "/proc/%d/ns/user",
					 pid);
				fd = open(path, O_RDONLY | O_CLOEXEC);
			}
		}
	}
	close(up[0]);
	close(down[1]);
	waitpid(pid, NULL, 0);
	return fd;
}

static void open_paths(FIXTURE_DATA(wsemfs) *self, void *arg,
		       struct outcome *o)
{
	const char *idmapped = arg;
	int fd;

	fd = open(idmapped, O_RDWR | O_CLOEXEC);
	o->ret = fd;
	o->err = errno;
	if (fd >= 0)
		close(fd);
	fd = open(self->path, O_RDWR | O_CLOEXEC);
	o->ret2 = fd;
	o->err2 = errno;
	if (fd >= 0)
		close(fd);
	o->count = chmod(idmapped, 0660) ? -errno : 0;
}

/*
 * An idmapped mount (podman's :idmap, Kubernetes' hostUsers: false): root's
 * 0600 semaphore, seen through a mount that maps 0 to OWNER_UID, is
 * OWNER_UID's there: it opens and chmods it there, not through the plain
 * mount; the semaphore's owner stays 0.
 */
TEST_F(wsemfs, idmapped_mount)
{
	struct mount_attr attr = { .attr_set = MOUNT_ATTR_IDMAP };
	char idmapped[200];
	struct wsem_stat st;
	struct outcome o;
	struct stat sb;
	int tree, ret;

	if (!self->ready)
		return;
	ASSERT_EQ(0, create_main(self, 0600));
	attr.userns_fd = userns_of(OWNER_UID);
	ASSERT_LE(0, (int)attr.userns_fd);
	tree = open_tree(AT_FDCWD, self->dir, OPEN_TREE_CLONE |
			 OPEN_TREE_CLOEXEC);
	ASSERT_LE(0, tree);
	ret = mount_setattr(tree, "", AT_EMPTY_PATH, &attr, sizeof(attr));
	if (ret && errno == ENOSYS) {
		/* docs/kernels.md: idmapped mounts need Linux 5.12. */
		EXPECT_EQ(0, close(tree));
		EXPECT_EQ(0, close(attr.userns_fd));
		SKIP(return, "no idmapped mounts before Linux 5.12 (mount_setattr: ENOSYS)");
	}
	ASSERT_EQ(0, ret) {
		TH_LOG("idmap the mount: %s", strerror(errno));
	}
	ASSERT_EQ(0, make_extra(self, 0));
	ASSERT_EQ(0, move_mount(tree, "", AT_FDCWD, self->extra[0],
				MOVE_MOUNT_F_EMPTY_PATH));
	EXPECT_EQ(0, close(tree));
	EXPECT_EQ(0, close(attr.userns_fd));
	snprintf(idmapped, sizeof(idmapped), "%s/%s", self->extra[0],
		 self->name);

	ASSERT_EQ(0, stat(idmapped, &sb));
	EXPECT_EQ(OWNER_UID, sb.st_uid);
	EXPECT_EQ(OWNER_UID, sb.st_gid);
	ASSERT_EQ(0, stat(self->path, &sb));
	EXPECT_EQ(0, sb.st_uid);
	ASSERT_EQ(0, run_child(self, OWNER_UID, OWNER_UID, 0, open_paths,
			       idmapped, &o));
	ASSERT_EQ(0, o.setup_err);
	EXPECT_LE(0, o.ret) {
		TH_LOG("open through the idmapped mount: %s",
		       strerror(o.err));
	}
	EXPECT_EQ(-1, o.ret2);
	EXPECT_EQ(EACCES, o.err2);
	EXPECT_EQ(0, o.count) {
		TH_LOG("chmod through the idmapped mount: %s",
		       strerror(-o.count));
	}
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(0660, st.mode);
	EXPECT_EQ(0, st.uid);
	EXPECT_EQ(0, st.gid);
}

/* What the race test's workers did, in shared memory. */
struct race_counts {
	int opens;		/* opens of a file that gave a handle */
	int grants;		/* acquires that were granted */
	int mounts;		/* mounts made */
	int churns;		/* names made and unlinked */
	int deaths;		/* namespaces that ended with a mount */
	int passed;		/* handles out of a dead namespace used */
};

/* Open files of @dir, take some weight, and let go (or keep it). */
static void race_opener(const char *dir, const char *base,
			struct race_counts *c, struct rng *r)
{
	char path[200];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, base);
	fd = open(path, chance(r, 80) ? O_RDWR : O_RDONLY);
	if (fd < 0)
		return;
	__atomic_add_fetch(&c->opens, 1, __ATOMIC_RELAXED);
	if (!wsem_acquire_timeout(fd, 1 + below(r, 2), 1000000))
		__atomic_add_fetch(&c->grants, 1, __ATOMIC_RELAXED);
	if (chance(r, 30))
		dir_count(dir);
	close(fd);
}

/* Mount and unmount @dir, over and over. */
static void race_mounter(const char *dir, struct race_counts *c)
{
	if (!mount("wsem", dir, "wsem", 0, NULL)) {
		__atomic_add_fetch(&c->mounts, 1, __ATOMIC_RELAXED);
		umount2(dir, MNT_DETACH);
	}
}

/* Make a name, open it as a file, unlink it by file or by name. */
static void race_churn(const char *dir, const char *churn,
		       struct race_counts *c, struct rng *r)
{
	char path[200];
	int fd, fd2;

	fd = wsem_open(churn, O_CREAT | O_CLOEXEC, 0666, 2);
	if (fd < 0)
		return;
	snprintf(path, sizeof(path), "%s/%s", dir, churn);
	fd2 = open(path, O_RDWR | O_CLOEXEC);
	if (fd2 >= 0)
		wsem_tryacquire(fd2, 1);
	if (chance(r, 50) ? !unlink(path) : !wsem_unlink(churn))
		__atomic_add_fetch(&c->churns, 1, __ATOMIC_RELAXED);
	if (fd2 >= 0)
		close(fd2);
	close(fd);
}

/*
 * A namespace that mounts its wsemfs on @dir, passes out a handle opened
 * by file and ends; the handle is used afterwards, the dead mount is
 * looked at and taken down.
 */
static void race_death(const char *dir, struct race_counts *c, struct rng *r)
{
	char path[200];
	int sk[2], fd;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sk))
		return;
	rnd(r);		/* the child takes the next choice */
	pid = fork();
	if (pid == 0) {
		if (unshare(CLONE_NEWIPC))
			_exit(1);
		fd = wsem_open("d", O_CREAT | O_CLOEXEC, 0600, 2);
		if (fd < 0 || mount("wsem", dir, "wsem", 0, NULL))
			_exit(1);
		close(fd);
		snprintf(path, sizeof(path), "%s/d", dir);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd >= 0 && wsem_acquire(fd, 1 + chance(r, 50)) == 0)
			send_fd(sk[1], fd, 0);
		_exit(0);
	}
	close(sk[1]);
	fd = pid > 0 ? recv_fd(sk[0]) : -1;
	close(sk[0]);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	__atomic_add_fetch(&c->deaths, 1, __ATOMIC_RELAXED);
	snprintf(path, sizeof(path), "%s/d", dir);
	close(open(path, O_RDWR | O_CLOEXEC));
	if (fd >= 0) {
		struct wsem_stat st;

		/* It holds 1 or 2 of 2: give all back, take all. */
		if (!wsem_stat(fd, &st) && !wsem_release(fd, st.held) &&
		    !wsem_acquire(fd, 2))
			__atomic_add_fetch(&c->passed, 1, __ATOMIC_RELAXED);
		close(fd);
	}
	umount2(dir, MNT_DETACH);
}

/*
 * Mounting, unmounting, unlinking (by file and by name) and namespace
 * death raced against opens from many processes, for a few seconds
 * (WSEMFS_RACE_SECS, default 3), some killed while they hold weight: then
 * nothing is held and nobody waits.  The debug kernel's kmemleak and
 * lockdep check the rest (runtests.sh).
 */
TEST_F(wsemfs, race_mounts_unlinks_deaths_and_opens)
{
	uint64_t secs = env_u64("WSEMFS_RACE_SECS", 3);
	char churn[WSEM_NAME_MAX];
	pid_t kids[RACE_WORKERS];
	struct race_counts *c;
	struct wsem_stat st;
	int i, status;

	if (!self->ready)
		return;
	ASSERT_EQ(0, create_main(self, 0666));
	snprintf(churn, sizeof(churn), "%.50s.churn", self->name);
	snprintf(self->made[1], WSEM_NAME_MAX, "%s", churn);
	ASSERT_EQ(0, make_extra(self, 0));	/* mounted and unmounted */
	ASSERT_EQ(0, make_extra(self, 1));	/* dying namespaces' mounts */
	c = mmap(NULL, sizeof(*c), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, c);
	memset(c, 0, sizeof(*c));

	for (i = 0; i < RACE_WORKERS; i++) {
		kids[i] = fork();
		ASSERT_LE(0, kids[i]);
		if (kids[i] == 0) {
			struct rng r = { .s = getpid() };

			for (;;) {
				switch (i) {
				case 0:
					race_mounter(self->extra[0], c);
					break;
				case 1:
					race_churn(self->dir, churn, c, &r);
					break;
				case 2:
					race_death(self->extra[1], c, &r);
					break;
				default:
					race_opener(chance(&r, 50) ?
						    self->dir : self->extra[0],
						    self->name, c, &r);
					if (chance(&r, 20))
						race_opener(self->dir, churn,
							    c, &r);
					break;
				}
			}
		}
	}
	usleep(secs * 1000000);
	/* Kill them where they are: holding, waiting, mounting. */
	for (i = 0; i < RACE_WORKERS; i++)
		kill(kids[i], SIGKILL);
	for (i = 0; i < RACE_WORKERS; i++) {
		ASSERT_EQ(kids[i], waitpid(kids[i], &status, 0));
		EXPECT_TRUE(WIFSIGNALED(status)) {
			TH_LOG("worker %d ended on its own: %#x", i, status);
		}
	}
	TH_LOG("opens %d grants %d mounts %d churns %d deaths %d passed %d",
	       c->opens, c->grants, c->mounts, c->churns, c->deaths,
	       c->passed);
	EXPECT_LT(0, c->opens);
	EXPECT_LT(0, c->grants);
	EXPECT_LT(0, c->mounts);
	EXPECT_LT(0, c->churns);
	EXPECT_LT(0, c->deaths);
	EXPECT_LT(0, c->passed);

	/* Weight goes back as the killed die: wait for it, bounded. */
	for (i = 0; i < 500; i++) {
		ASSERT_EQ(0, wsem_stat(self->fd, &st));
		if (!st.used && !st.waiters)
			break;
		usleep(10000);
	}
	EXPECT_EQ(0, st.used);
	EXPECT_EQ(0, st.waiters);
	EXPECT_EQ(0, wsem_tryacquire(self->fd, CAP));
	/* The mounts still work. */
	EXPECT_EQ(1, dir_has(self->dir, self->name, NULL, NULL));
	munmap(c, sizeof(*c));
}

/*
 * A file unlinked while open has no links left (fstat shows it gone), and
 * open(O_TRUNC) of a file is an open like any other: a semaphore has no
 * size to cut (truncate(2) stays EINVAL: see creation_is_refused).
 */
TEST_F(wsemfs, unlink_drops_the_link_and_o_trunc_opens)
{
	struct stat st;
	int fd;

	if (!self->ready)
		return;
	ASSERT_EQ(0, create_main(self, 0600));
	fd = open(self->path, O_RDWR | O_TRUNC | O_CLOEXEC);
	ASSERT_LE(0, fd) {
		TH_LOG("open(O_TRUNC): %s", strerror(errno));
	}
	EXPECT_EQ(0, wsem_acquire(fd, 1));
	ASSERT_EQ(0, fstat(fd, &st));
	EXPECT_EQ(1, st.st_nlink);
	ASSERT_EQ(0, unlink(self->path));
	ASSERT_EQ(0, fstat(fd, &st));
	EXPECT_EQ(0, st.st_nlink);
	EXPECT_EQ(0, wsem_release(fd, 1));
	EXPECT_EQ(0, close(fd));
}

static void mount_as_fsuid(FIXTURE_DATA(wsemfs) *self, void *arg UNUSED,
			   struct outcome *o)
{
	struct stat st;

	setfsgid(OWNER_UID);
	setfsuid(OWNER_UID);
	if (mount("wsem", self->extra[0], "wsem", 0, NULL)) {
		o->setup_err = errno;
		return;
	}
	o->ret = stat(self->extra[0], &st);
	o->err = errno;
	o->count = st.st_uid;
	o->ret2 = st.st_gid;
}

/*
 * The sticky root directory belongs to the IPC namespace's root, not to
 * whoever mounted first: a directory's owner may unlink any file in it,
 * and the first mounter must not gain that over others' semaphores.
 */
TEST_F(wsemfs, root_is_not_the_first_mounters)
{
	struct outcome o;

	if (!self->ready)
		return;
	ASSERT_EQ(0, make_extra(self, 0));
	ASSERT_EQ(0, run_child(self, -1, -1, CLONE_NEWIPC, mount_as_fsuid,
			       NULL, &o));
	ASSERT_EQ(0, o.setup_err) {
		TH_LOG("mount: %s", strerror(o.setup_err));
	}
	ASSERT_EQ(0, o.ret);
	EXPECT_EQ(0, o.count);
	EXPECT_EQ(0, o.ret2);
}

/*
 * The next inotify event on @ifd within 5 s: its mask into *@mask and its
 * name into @name; 0, or -1 if none came.
 */
static int next_event(int ifd, uint32_t *mask, char *name, size_t len)
{
	char buf[sizeof(struct inotify_event) + NAME_MAX + 1]
		__attribute__((aligned(__alignof__(struct inotify_event))));
	struct pollfd p = { .fd = ifd, .events = POLLIN };
	struct inotify_event *ev = (struct inotify_event *)buf;

	if (poll(&p, 1, 5000) != 1 ||
	    read(ifd, buf, sizeof(buf)) < (ssize_t)sizeof(*ev))
		return -1;
	*mask = ev->mask;
	snprintf(name, len, "%s", ev->len ? ev->name : "");
	return 0;
}

/*
 * Creating and unlinking through the ioctls (wsem_open(), wsem_unlink())
 * raise IN_CREATE and IN_DELETE on the mount's root, as creating and
 * unlinking any file does, so that inotify on /sys/fs/wsem sees them.
 */
TEST_F(wsemfs, ioctl_create_and_unlink_notify_watchers)
{
	char name[NAME_MAX + 1];
	uint32_t mask;
	int ifd;

	if (!self->ready)
		return;
	ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (ifd < 0)
		SKIP(return, "inotify: %s", strerror(errno));
	ASSERT_LE(0, inotify_add_watch(ifd, self->dir, IN_CREATE | IN_DELETE));
	ASSERT_EQ(0, create_main(self, 0600));
	ASSERT_EQ(0, next_event(ifd, &mask, name, sizeof(name))) {
		TH_LOG("no event for a create by ioctl");
	}
	EXPECT_EQ(IN_CREATE, mask & (IN_CREATE | IN_DELETE));
	EXPECT_STREQ(self->name, name);
	ASSERT_EQ(0, wsem_unlink(self->name));
	ASSERT_EQ(0, next_event(ifd, &mask, name, sizeof(name))) {
		TH_LOG("no event for an unlink by ioctl");
	}
	EXPECT_EQ(IN_DELETE, mask & (IN_CREATE | IN_DELETE));
	EXPECT_STREQ(self->name, name);
	EXPECT_EQ(0, close(ifd));
}

/* The link count of what @fd is open on (fstat), or -1. */
static long nlink_of(int fd)
{
	struct stat st;

	return fstat(fd, &st) ? -1 : (long)st.st_nlink;
}

/*
 * An unlink through the ioctl takes the link away too: from a file kept
 * open, from one bind-mounted elsewhere (stat of the bind path) and from
 * the semaphore's jobserver endpoint (an O_PATH descriptor of it).
 */
TEST_F(wsemfs, ioctl_unlink_drops_every_link)
{
	char js[200];
	struct stat st;
	int fd, ep;

	if (!self->ready)
		return;
	ASSERT_EQ(0, create_main(self, 0600));
	snprintf(self->extra[0], sizeof(self->extra[0]), "/tmp/%s.bind",
		 self->name);
	fd = open(self->extra[0], O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC,
		  0600);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, close(fd));
	ASSERT_EQ(0, mount(self->path, self->extra[0], NULL, MS_BIND, NULL));
	snprintf(js, sizeof(js), "%s/%s/%s", self->dir, WSEM_JOBSERVER_DIR,
		 self->name);
	fd = open(self->path, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ep = open(js, O_PATH | O_CLOEXEC);
	ASSERT_LE(0, ep) {
		TH_LOG("%s: %s", js, strerror(errno));
	}
	EXPECT_EQ(1, nlink_of(fd));
	EXPECT_EQ(1, nlink_of(ep));
	ASSERT_EQ(0, stat(self->extra[0], &st));
	EXPECT_EQ(1, st.st_nlink);

	ASSERT_EQ(0, wsem_unlink(self->name));
	EXPECT_EQ(0, nlink_of(fd));
	EXPECT_EQ(0, nlink_of(ep)) {
		TH_LOG("the endpoint still has its link");
	}
	ASSERT_EQ(0, stat(self->extra[0], &st));
	EXPECT_EQ(0, st.st_nlink);
	EXPECT_EQ(0, close(ep));
	EXPECT_EQ(0, close(fd));
}

/* What the child of names_of_a_dead_namespace_go did. */
struct dying {
	char own[WSEM_NAME_MAX];	/* the name it made */
	int err;			/* its errno, or 0 */
};

/*
 * In a new IPC namespace: make @d->own, mount that namespace's wsemfs on
 * @point, report (on pipe @rep), then wait (for pipe @go's end) and leave,
 * ending the namespace.
 */
static void dying_ns_child(const char *point, struct dying *d, int rep[2],
			   int go[2])
{
	char c;

	close(rep[0]);
	close(go[1]);
	if (unshare(CLONE_NEWIPC) ||
	    wsem_open(d->own, O_CREAT | O_EXCL, 0600, CAP) < 0 ||
	    mount("wsem", point, "wsem", 0, NULL))
		d->err = errno;
	if (write(rep[1], d, sizeof(*d)) != sizeof(*d))
		_exit(1);
	_exit(read(go[0], &c, 1) < 0);
}

/*
 * The names a namespace drops when it dies go as an unlink does: watchers
 * of its mount hear IN_DELETE for each, and a file of it kept open (here
 * by O_PATH) has no link left.
 */
TEST_F(wsemfs, names_of_a_dead_namespace_go)
{
	char name[NAME_MAX + 1], path[200];
	int rep[2], go[2], ifd, fd, status, i;
	struct dying d = { 0 };
	uint32_t mask = 0;
	pid_t pid;

	if (!self->ready)
		return;
	ASSERT_EQ(0, make_extra(self, 0));
	snprintf(d.own, sizeof(d.own), "%.50s.own", self->name);
	ASSERT_EQ(0, pipe2(rep, O_CLOEXEC));
	ASSERT_EQ(0, pipe2(go, O_CLOEXEC));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		dying_ns_child(self->extra[0], &d, rep, go);
	close(rep[1]);
	close(go[0]);
	ASSERT_EQ(sizeof(d), read(rep[0], &d, sizeof(d)));
	ASSERT_EQ(0, d.err) {
		TH_LOG("create and mount in a new namespace: %s",
		       strerror(d.err));
	}
	ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	ASSERT_LE(0, ifd);
	ASSERT_LE(0, inotify_add_watch(ifd, self->extra[0], IN_DELETE));
	snprintf(path, sizeof(path), "%s/%s", self->extra[0], d.own);
	fd = open(path, O_PATH | O_CLOEXEC);
	ASSERT_LE(0, fd);
	EXPECT_EQ(1, nlink_of(fd));

	/* The namespace dies with its only process. */
	close(go[1]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	/* Its death is seen within seconds (VANISH_NS, 5 s a try here). */
	for (i = 0; i < 3 && next_event(ifd, &mask, name, sizeof(name)); i++)
		;
	ASSERT_GT(3, i) {
		TH_LOG("no IN_DELETE when the namespace died");
	}
	EXPECT_EQ(IN_DELETE, mask & IN_DELETE);
	EXPECT_STREQ(d.own, name);
	EXPECT_EQ(0, nlink_of(fd));
	EXPECT_EQ(0, dir_count(self->extra[0]));
	EXPECT_EQ(0, close(fd));
	EXPECT_EQ(0, close(ifd));
	close(rep[0]);
}

TEST_HARNESS_MAIN
