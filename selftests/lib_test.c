// SPDX-License-Identifier: GPL-2.0
/*
 * libwsem's choices of its own, over the unchanged ABI: every handle it
 * returns is close-on-exec unless WSEM_INHERIT asks otherwise, for each
 * call that makes one (wsem_open by name and by path, wsem_open_anon,
 * wsem_reopen); O_CLOEXEC is still accepted, and with WSEM_INHERIT it is
 * EINVAL.  And what that is for: a handle does not reach a program that
 * system(3) starts.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
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

TEST_HARNESS_MAIN
