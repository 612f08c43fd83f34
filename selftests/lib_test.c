// SPDX-License-Identifier: GPL-2.0
/*
 * libwsem's choices of its own, over the unchanged ABI: every handle it
 * returns is close-on-exec unless WSEM_INHERIT asks otherwise, for each
 * call that makes one (wsem_open by name and by path, wsem_open_anon,
 * wsem_reopen); O_CLOEXEC is still accepted, and with WSEM_INHERIT it is
 * EINVAL.  And what that is for: a handle does not reach a program that
 * system(3) starts.  A watching handle (wsem_open_watch()) by name and by
 * path, with read permission alone; O_RDWR in wsem_open()'s oflag; and
 * path opens that never take another file for a handle, even one swapped
 * in under the path while it is opened.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <wsem.h>

#include "kselftest_harness.h"

/* 1 if @fd is close-on-exec, 0 if not, -1 if it is no descriptor. */
static int is_cloexec(int fd)
{
	int fl = fcntl(fd, F_GETFD);

	return fl < 0 ? -1 : !!(fl & FD_CLOEXEC);
}

FIXTURE(lib) {
	char name[32];		/* a named semaphore of this test */
	int fd;			/* a handle on it, for reopen */
};

FIXTURE_SETUP(lib)
{
	snprintf(self->name, sizeof(self->name), "libt%d", getpid());
	self->fd = wsem_open(self->name, O_CREAT | O_EXCL, 0600, 4);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(lib)
{
	EXPECT_EQ(0, close(self->fd));
	EXPECT_EQ(0, wsem_unlink(self->name));
}

TEST_F(lib, open_is_cloexec_by_default)
{
	int fd;

	EXPECT_EQ(1, is_cloexec(self->fd));
	fd = wsem_open(self->name, 0, 0, 0);
	ASSERT_LE(0, fd);
	EXPECT_EQ(1, is_cloexec(fd));
	EXPECT_EQ(0, close(fd));
	fd = wsem_open(self->name, O_CLOEXEC, 0, 0);
	ASSERT_LE(0, fd);
	EXPECT_EQ(1, is_cloexec(fd));
	EXPECT_EQ(0, close(fd));
}

TEST_F(lib, open_inherit)
{
	int fd = wsem_open(self->name, WSEM_INHERIT, 0, 0);

	ASSERT_LE(0, fd);
	EXPECT_EQ(0, is_cloexec(fd));
	EXPECT_EQ(0, close(fd));
	fd = wsem_open(self->name, O_CREAT | WSEM_INHERIT, 0600, 4);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, is_cloexec(fd));
	EXPECT_EQ(0, close(fd));
}

TEST_F(lib, anon_and_reopen)
{
	int fd;

	fd = wsem_open_anon(2, 0);
	ASSERT_LE(0, fd);
	EXPECT_EQ(1, is_cloexec(fd));
	EXPECT_EQ(0, close(fd));
	fd = wsem_open_anon(2, WSEM_INHERIT);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, is_cloexec(fd));
	EXPECT_EQ(0, close(fd));
	fd = wsem_reopen(self->fd, 0);
	ASSERT_LE(0, fd);
	EXPECT_EQ(1, is_cloexec(fd));
	EXPECT_EQ(0, close(fd));
	fd = wsem_reopen(self->fd, O_CLOEXEC);
	ASSERT_LE(0, fd);
	EXPECT_EQ(1, is_cloexec(fd));
	EXPECT_EQ(0, close(fd));
	fd = wsem_reopen(self->fd, WSEM_INHERIT);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, is_cloexec(fd));
	EXPECT_EQ(0, close(fd));
}

TEST_F(lib, inherit_with_cloexec_is_einval)
{
	errno = 0;
	EXPECT_EQ(-1, wsem_open(self->name, O_CLOEXEC | WSEM_INHERIT, 0, 0));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(-1, wsem_open_anon(2, O_CLOEXEC | WSEM_INHERIT));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(-1, wsem_reopen(self->fd, O_CLOEXEC | WSEM_INHERIT));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(-1, wsem_open_anon(2, O_CREAT));	/* still checked */
	EXPECT_EQ(EINVAL, errno);
}

/* A wsemfs file opened through the library follows the same rule. */
TEST_F(lib, path_is_cloexec_by_default)
{
	char dir[] = "/tmp/lib_test.XXXXXX", path[96];
	int fd;

	ASSERT_NE(NULL, mkdtemp(dir));
	if (mount("wsem", dir, "wsem", 0, NULL)) {
		rmdir(dir);
		SKIP(return, "cannot mount wsemfs: %s", strerror(errno));
	}
	snprintf(path, sizeof(path), "%s/%s", dir, self->name);
	fd = wsem_open(path, 0, 0, 0);
	EXPECT_LE(0, fd);
	EXPECT_EQ(1, is_cloexec(fd));
	EXPECT_EQ(0, close(fd));
	fd = wsem_open(path, WSEM_INHERIT, 0, 0);
	EXPECT_LE(0, fd);
	EXPECT_EQ(0, is_cloexec(fd));
	EXPECT_EQ(0, close(fd));
	EXPECT_EQ(0, umount(dir));
	EXPECT_EQ(0, rmdir(dir));
}

/*
 * A path that does not exist is ENOENT, as open(2) says, in a wsemfs
 * mount and elsewhere; an existing file of another file system is EINVAL.
 */
TEST_F(lib, missing_path_is_enoent)
{
	char dir[] = "/tmp/lib_test.XXXXXX", path[96];

	ASSERT_NE(NULL, mkdtemp(dir));
	errno = 0;
	EXPECT_EQ(-1, wsem_open("/nonexistent/wsem/gpu", 0, 0, 0));
	EXPECT_EQ(ENOENT, errno);
	errno = 0;
	EXPECT_EQ(-1, wsem_open(dir, 0, 0, 0));
	EXPECT_EQ(EINVAL, errno);
	if (mount("wsem", dir, "wsem", 0, NULL)) {
		rmdir(dir);
		SKIP(return, "cannot mount wsemfs: %s", strerror(errno));
	}
	snprintf(path, sizeof(path), "%s/no-such-sem", dir);
	errno = 0;
	EXPECT_EQ(-1, wsem_open(path, 0, 0, 0));
	EXPECT_EQ(ENOENT, errno);
	errno = 0;
	EXPECT_EQ(-1, wsem_unlink(path));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(0, umount(dir));
	EXPECT_EQ(0, rmdir(dir));
}

/*
 * What the default is for: a shell that system(3) starts finds no handle
 * at the number (it would hold the weight while it runs); an inherited
 * one it does find.
 */
TEST_F(lib, system_child_gets_no_handle)
{
	char cmd[64];
	int fd;

	fd = wsem_open(self->name, 0, 0, 0);
	ASSERT_LE(0, fd);
	snprintf(cmd, sizeof(cmd), "test -e /proc/self/fd/%d", fd);
	EXPECT_NE(0, system(cmd));
	EXPECT_EQ(0, close(fd));
	fd = wsem_open(self->name, WSEM_INHERIT, 0, 0);
	ASSERT_LE(0, fd);
	snprintf(cmd, sizeof(cmd), "test -e /proc/self/fd/%d", fd);
	EXPECT_EQ(0, system(cmd));
	EXPECT_EQ(0, close(fd));
}

/* O_RDWR, as mq_open(3) callers pass it: a handle for reading and writing. */
TEST_F(lib, open_takes_o_rdwr)
{
	int fd;

	fd = wsem_open(self->name, O_RDWR, 0, 0);
	ASSERT_LE(0, fd);
	EXPECT_EQ(O_RDWR, fcntl(fd, F_GETFL) & O_ACCMODE);
	EXPECT_EQ(1, is_cloexec(fd));
	EXPECT_EQ(0, wsem_acquire(fd, 1));
	EXPECT_EQ(0, wsem_release(fd, 1));
	EXPECT_EQ(0, close(fd));
	fd = wsem_open(self->name, O_RDWR | O_CREAT, 0600, 9);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, close(fd));
	errno = 0;
	EXPECT_EQ(-1, wsem_open(self->name, O_WRONLY, 0, 0));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(-1, wsem_open_anon(1, O_RDWR));
	EXPECT_EQ(EINVAL, errno);
}

/* What a watching handle @fd can do, and what it cannot (EBADF). */
static void check_watch(struct __test_metadata *_metadata, int fd)
{
	struct wsem_holder who[2];
	struct wsem_stat st;
	size_t nholders = 9;
	char text[256];
	int rfd;

	EXPECT_EQ(O_RDONLY, fcntl(fd, F_GETFL) & O_ACCMODE);
	EXPECT_EQ(0, fcntl(fd, F_GETFL) & O_NONBLOCK);
	EXPECT_EQ(0, wsem_stat(fd, &st));
	EXPECT_EQ(4, st.capacity);
	EXPECT_EQ(0, wsem_holders(fd, who, 2, &nholders));
	EXPECT_EQ(0, nholders);
	EXPECT_EQ(0, wsem_wait_idle(fd, 0));
	EXPECT_LT(0, read(fd, text, sizeof(text)));
	errno = 0;
	EXPECT_EQ(-1, wsem_acquire(fd, 1));
	EXPECT_EQ(EBADF, errno);
	errno = 0;
	EXPECT_EQ(-1, wsem_tryacquire(fd, 1));
	EXPECT_EQ(EBADF, errno);
	errno = 0;
	EXPECT_EQ(-1, wsem_release(fd, 1));
	EXPECT_EQ(EBADF, errno);
	errno = 0;
	EXPECT_EQ(-1, wsem_set_capacity(fd, 5));
	EXPECT_EQ(EBADF, errno);
	errno = 0;
	EXPECT_EQ(-1, wsem_set_label(fd, "x"));
	EXPECT_EQ(EBADF, errno);
	rfd = wsem_reopen(fd, 0);
	ASSERT_LE(0, rfd);
	EXPECT_EQ(O_RDONLY, fcntl(rfd, F_GETFL) & O_ACCMODE);
	EXPECT_EQ(0, close(rfd));
}

TEST_F(lib, watch_by_name)
{
	int fd;

	fd = wsem_open_watch(self->name, 0);
	ASSERT_LE(0, fd);
	EXPECT_EQ(1, is_cloexec(fd));
	check_watch(_metadata, fd);
	EXPECT_EQ(0, close(fd));
	fd = wsem_open_watch(self->name, WSEM_INHERIT);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, is_cloexec(fd));
	EXPECT_EQ(0, close(fd));
	errno = 0;
	EXPECT_EQ(-1, wsem_open_watch(self->name, O_CREAT));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(-1, wsem_open_watch(self->name, O_RDWR));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(-1, wsem_open_watch("libt-none", 0));
	EXPECT_EQ(ENOENT, errno);
	errno = 0;
	EXPECT_EQ(-1, wsem_open_watch(NULL, 0));
	EXPECT_EQ(EINVAL, errno);
}

/* Read permission is enough to watch; a read-write open needs write too. */
TEST_F(lib, watch_needs_read_permission_only)
{
	char name[40];
	int fd, status;
	pid_t pid;

	if (geteuid())
		SKIP(return, "needs root to become another user");
	snprintf(name, sizeof(name), "%s-ro", self->name);
	fd = wsem_open(name, O_CREAT | O_EXCL, 0644, 2);
	ASSERT_LE(0, fd);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int wfd;

		if (setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(10);
		if (wsem_open(name, 0, 0, 0) >= 0 || errno != EACCES)
			_exit(11);
		wfd = wsem_open_watch(name, 0);
		if (wfd < 0)
			_exit(12);
		if (wsem_acquire(wfd, 1) == 0 || errno != EBADF)
			_exit(13);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(0, close(fd));
	EXPECT_EQ(0, wsem_unlink(name));
}

/*
 * wsemfs mounted on a new temporary directory, in a mount namespace of
 * this test's own, so that a test that dies leaves no mount behind (one
 * would keep the module from unloading); -1 with errno.
 */
static int mount_wsemfs(char *dir)
{
	if (unshare(CLONE_NEWNS) ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return -1;
	if (!mkdtemp(dir))
		return -1;
	if (mount("wsem", dir, "wsem", 0, NULL)) {
		rmdir(dir);
		return -1;
	}
	return 0;
}

TEST_F(lib, watch_by_path)
{
	char dir[] = "/tmp/lib_test.XXXXXX", path[96];
	char other[] = "/tmp/lib_test_f.XXXXXX";
	int fd;

	if (mount_wsemfs(dir))
		SKIP(return, "cannot mount wsemfs: %s", strerror(errno));
	snprintf(path, sizeof(path), "%s/%s", dir, self->name);
	fd = wsem_open_watch(path, 0);
	ASSERT_LE(0, fd);
	EXPECT_EQ(1, is_cloexec(fd));
	check_watch(_metadata, fd);
	EXPECT_EQ(0, close(fd));
	snprintf(path, sizeof(path), "%s/no-such-sem", dir);
	errno = 0;
	EXPECT_EQ(-1, wsem_open_watch(path, 0));
	EXPECT_EQ(ENOENT, errno);
	fd = mkstemp(other);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, close(fd));
	errno = 0;
	EXPECT_EQ(-1, wsem_open_watch(other, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, unlink(other));
	EXPECT_EQ(0, umount(dir));
	EXPECT_EQ(0, rmdir(dir));
}

/*
 * A FIFO given as the path is EINVAL at once, not an open that blocks
 * until a writer comes (a watch opens for reading) nor a FIFO descriptor
 * taken for a handle.
 */
TEST_F(lib, fifo_path_is_einval_at_once)
{
	char dir[] = "/tmp/lib_test.XXXXXX", fifo[64];

	ASSERT_NE(NULL, mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	ASSERT_EQ(0, mkfifo(fifo, 0600));
	alarm(10);
	errno = 0;
	EXPECT_EQ(-1, wsem_open_watch(fifo, 0));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(-1, wsem_open(fifo, 0, 0, 0));
	EXPECT_EQ(EINVAL, errno);
	alarm(0);
	EXPECT_EQ(0, unlink(fifo));
	EXPECT_EQ(0, rmdir(dir));
}

struct flipper {
	const char *link, *tmp, *targets[2];
	atomic_bool stop;
};

/* Points @link at each target in turn, atomically (rename), until stop. */
static void *flip(void *arg)
{
	struct flipper *f = arg;
	unsigned int i = 0;

	while (!atomic_load(&f->stop)) {
		unlink(f->tmp);
		if (symlink(f->targets[i++ & 1], f->tmp) ||
		    rename(f->tmp, f->link))
			break;
	}
	return NULL;
}

/*
 * The file a path names is asked which file system it is on after it is
 * opened, through its descriptor: a FIFO swapped in under the path
 * between a check and the open is never taken for a handle, and a watch
 * (read-only) never blocks on it.  A symlink flips between the wsemfs
 * file and a FIFO for two seconds while the library opens it.
 */
TEST_F(lib, path_swapped_to_fifo_is_never_a_handle)
{
	char dir[] = "/tmp/lib_test.XXXXXX", tmpd[] = "/tmp/lib_test_s.XXXXXX";
	char path[96], fifo[64], link[64], tmp[64];
	struct flipper f = { 0 };
	unsigned long opened = 0, refused = 0, wrong = 0;
	struct timespec t0, t;
	pthread_t th;
	struct stat sb;

	if (mount_wsemfs(dir))
		SKIP(return, "cannot mount wsemfs: %s", strerror(errno));
	ASSERT_NE(NULL, mkdtemp(tmpd));
	snprintf(path, sizeof(path), "%s/%s", dir, self->name);
	snprintf(fifo, sizeof(fifo), "%s/fifo", tmpd);
	snprintf(link, sizeof(link), "%s/link", tmpd);
	snprintf(tmp, sizeof(tmp), "%s/link.new", tmpd);
	ASSERT_EQ(0, mkfifo(fifo, 0600));
	ASSERT_EQ(0, symlink(path, link));
	f.link = link;
	f.tmp = tmp;
	f.targets[0] = fifo;
	f.targets[1] = path;
	ASSERT_EQ(0, pthread_create(&th, NULL, flip, &f));
	alarm(20);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int watch = (opened + refused) & 1, fd;

		clock_gettime(CLOCK_MONOTONIC, &t);
		/* 2000 opens, or 200 on a host so loaded that 10 s pass */
		if ((t.tv_sec - t0.tv_sec >= 2 && opened + refused >= 2000) ||
		    (t.tv_sec - t0.tv_sec >= 10 && opened + refused >= 200))
			break;
		fd = watch ? wsem_open_watch(link, 0) : wsem_open(link, 0, 0, 0);
		if (fd < 0) {
			if (errno != EINVAL && errno != ENOENT)
				wrong++;
			refused++;
			continue;
		}
		opened++;
		if (fstat(fd, &sb) || !S_ISREG(sb.st_mode))
			wrong++;
		close(fd);
	}
	alarm(0);
	atomic_store(&f.stop, true);
	pthread_join(th, NULL);
	TH_LOG("%lu opened, %lu refused, %lu not a handle", opened, refused,
	       wrong);
	EXPECT_EQ(0, wrong);
	unlink(link);
	unlink(tmp);
	EXPECT_EQ(0, unlink(fifo));
	EXPECT_EQ(0, rmdir(tmpd));
	EXPECT_EQ(0, umount(dir));
	EXPECT_EQ(0, rmdir(dir));
}

TEST_HARNESS_MAIN
