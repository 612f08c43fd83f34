// SPDX-License-Identifier: GPL-2.0
/*
 * The jobserver endpoint (SPEC.md "Jobserver"): MOUNT/@jobserver/NAME is a
 * fifo to stat(2) whose read(2) of a byte acquires one unit of semaphore
 * NAME for the reading process, in the semaphore's FIFO queue, and whose
 * write(2) gives back units that process holds through it.  What a process
 * holds goes back when it closes an endpoint descriptor or dies.
 *
 * Each test runs in a mount namespace of its own with umask 0, mounts the
 * init IPC namespace's wsemfs on a fresh directory under /tmp, and works
 * on a semaphore "js<pid>.<n>" of capacity CAP, through a /dev/wsem handle
 * (to stat it, see its holders, and fill it) and through its endpoint.
 * Other acquirers are threads with handles of their own; other processes
 * are forked children that report on a pipe.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <wsem.h>

#include "kselftest_harness.h"
#include "util.h"

#define CAP		4	/* capacity of the test's semaphore */
#define NOBODY		65534	/* a user that owns nothing */
#define WAIT_MS		5000	/* bound for something that must happen */
#define QUIET_MS	200	/* something that must not happen has not */

FIXTURE(js) {
	/* the test's semaphore: "js<pid>.<n>" */
	char name[WSEM_NAME_MAX];
	/* the mount of the init IPC namespace's wsemfs, a fresh directory */
	char dir[64];
	/* its endpoint: dir/@jobserver/name */
	char path[160];
	/* root's /dev/wsem handle on the semaphore */
	int fd;
	/* setup done: false after a SKIP, so body and teardown do nothing */
	bool ready;
};

FIXTURE_SETUP(js)
{
	static int seq;

	self->fd = -1;
	if (access("/dev/wsem", F_OK))
		SKIP(return, "/dev/wsem is missing (module not loaded)");
	umask(0);
	ASSERT_EQ(0, unshare(CLONE_NEWNS));
	ASSERT_EQ(0, mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
	snprintf(self->name, sizeof(self->name), "js%d.%d", getpid(), seq++);
	snprintf(self->dir, sizeof(self->dir), "/tmp/jobserver_test.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	ASSERT_EQ(0, mount("wsem", self->dir, "wsem", 0, NULL));
	snprintf(self->path, sizeof(self->path), "%s/%s/%s", self->dir,
		 WSEM_JOBSERVER_DIR, self->name);
	self->fd = wsem_open(self->name, O_CREAT | O_EXCL, 0666, CAP);
	ASSERT_LE(0, self->fd);
	self->ready = true;
}

FIXTURE_TEARDOWN(js)
{
	if (!self->dir[0])
		return;
	if (self->fd >= 0)
		EXPECT_EQ(0, close(self->fd));
	EXPECT_EQ(0, umount2(self->dir, MNT_DETACH));
	EXPECT_EQ(0, rmdir(self->dir));
	if (self->ready && wsem_unlink(self->name))
		EXPECT_EQ(ENOENT, errno);
}

static uint64_t used_of(int fd)
{
	struct wsem_stat st;

	if (wsem_stat(fd, &st))
		return UINT64_MAX;
	return st.used;
}

static uint64_t waiters_of(int fd)
{
	struct wsem_stat st;

	if (wsem_stat(fd, &st))
		return UINT64_MAX;
	return st.waiters;
}

/* Wait up to WAIT_MS for @fd's semaphore to have a used weight of @n. */
static int wait_used(int fd, uint64_t n)
{
	int64_t end = now_ns() + WAIT_MS * 1000000LL;

	while (used_of(fd) != n) {
		if (now_ns() > end)
			return -1;
		usleep(1000);
	}
	return 0;
}

/* One byte read from @fd: 1 with the byte in *@c, or -1 and errno. */
static ssize_t read1(int fd, char *c)
{
	return read(fd, c, 1);
}

/* A child's report on a pipe: a return value and errno. */
struct report {
	long ret;
	int err;
};

static void report(int wfd, long ret, int err)
{
	struct report r = { .ret = ret, .err = err };

	if (write(wfd, &r, sizeof(r)) != sizeof(r))
		_exit(3);
}

/* Read a child's report within WAIT_MS; 0 or -1. */
static int get_report(int rfd, struct report *r)
{
	struct pollfd p = { .fd = rfd, .events = POLLIN };

	if (poll(&p, 1, WAIT_MS) != 1)
		return -1;
	return read(rfd, r, sizeof(*r)) == sizeof(*r) ? 0 : -1;
}

/* Reap @pid; its exit status, or -1. */
static int reap(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/*
 * The endpoint is a fifo to stat(2), on its path and its descriptor, with
 * the semaphore's mode and owner; the root lists the semaphores only, the
 * endpoint directory one endpoint per semaphore.
 */
TEST_F(js, is_a_fifo)
{
	struct stat st, fst;
	char dir[128];
	struct dirent *d;
	bool seen = false;
	DIR *dp;
	int fd;

	if (!self->ready)
		return;
	ASSERT_EQ(0, stat(self->path, &st));
	EXPECT_TRUE(S_ISFIFO(st.st_mode));
	EXPECT_EQ(0666, st.st_mode & 07777);
	EXPECT_EQ(0, st.st_uid);
	fd = open(self->path, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, fstat(fd, &fst));
	EXPECT_TRUE(S_ISFIFO(fst.st_mode));
	EXPECT_EQ(st.st_ino, fst.st_ino);
	EXPECT_EQ(ESPIPE, lseek(fd, 0, SEEK_SET) < 0 ? errno : 0);
	EXPECT_EQ(0, close(fd));

	dp = opendir(self->dir);
	ASSERT_NE(NULL, dp);
	while ((d = readdir(dp)))
		EXPECT_NE(0, strcmp(d->d_name, WSEM_JOBSERVER_DIR));
	closedir(dp);
	snprintf(dir, sizeof(dir), "%s/%s", self->dir, WSEM_JOBSERVER_DIR);
	dp = opendir(dir);
	ASSERT_NE(NULL, dp);
	while ((d = readdir(dp))) {
		if (strcmp(d->d_name, self->name))
			continue;
		seen = true;
		EXPECT_EQ(DT_FIFO, d->d_type);
	}
	closedir(dp);
	EXPECT_TRUE(seen);
}

/*
 * A read acquires one unit for the reader: used goes up, the holders view
 * shows the process, labelled "jobserver"; a write gives it back.
 */
TEST_F(js, read_acquires_write_releases)
{
	struct wsem_holder who[4];
	char c = 0, buf[8];
	size_t nholders;
	int fd;

	if (!self->ready)
		return;
	fd = open(self->path, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, read(fd, &c, 0));
	EXPECT_EQ(0, used_of(self->fd));
	ASSERT_EQ(1, read(fd, buf, sizeof(buf)));
	EXPECT_EQ('+', buf[0]);
	EXPECT_EQ(1, used_of(self->fd));
	ASSERT_EQ(1, wsem_holders(self->fd, who, 4, &nholders));
	EXPECT_EQ(1, nholders);
	EXPECT_EQ(getpid(), who[0].pid);
	EXPECT_EQ(1, who[0].weight);
	EXPECT_STREQ("jobserver", who[0].label);
	ASSERT_EQ(1, read1(fd, &c));
	EXPECT_EQ(2, used_of(self->fd));

	EXPECT_EQ(1, write(fd, "+", 1));
	EXPECT_EQ(1, used_of(self->fd));
	/* One held, three written: two are discarded. */
	EXPECT_EQ(3, write(fd, "+++", 3));
	EXPECT_EQ(0, used_of(self->fd));
	EXPECT_EQ(1, write(fd, "+", 1));
	EXPECT_EQ(0, used_of(self->fd));
	EXPECT_EQ(0, close(fd));
}

/* Tokens are the process's: read on one descriptor, written on another. */
TEST_F(js, read_and_write_on_two_descriptors)
{
	int rfd, wfd;
	char c;

	if (!self->ready)
		return;
	rfd = open(self->path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, rfd);
	wfd = open(self->path, O_WRONLY | O_CLOEXEC);
	ASSERT_LE(0, wfd);
	ASSERT_EQ(1, read1(rfd, &c));
	ASSERT_EQ(1, read1(rfd, &c));
	EXPECT_EQ(2, used_of(self->fd));
	EXPECT_EQ(1, write(wfd, &c, 1));
	EXPECT_EQ(1, used_of(self->fd));
	EXPECT_EQ(-1, write(rfd, &c, 1));
	EXPECT_EQ(EBADF, errno);
	EXPECT_EQ(1, write(wfd, &c, 1));
	EXPECT_EQ(0, used_of(self->fd));
	EXPECT_EQ(0, close(rfd));
	EXPECT_EQ(0, close(wfd));
}

/*
 * A write from a process that holds nothing changes nothing; one of more
 * bytes than the process holds gives back what it holds and no more: the
 * other process's token stays held.
 */
TEST_F(js, write_from_another_process_is_discarded)
{
	struct report r;
	int fd, p[2];
	pid_t pid;
	char c;

	if (!self->ready)
		return;
	fd = open(self->path, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(1, read1(fd, &c));
	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		long n = write(fd, "++", 2);

		report(p[1], n, errno);
		n = read1(fd, &c) == 1 && used_of(self->fd) == 2 ?
			write(fd, "+++", 3) : -1;
		report(p[1], n == 3 ? (long)used_of(self->fd) : -1, errno);
		_exit(0);
	}
	ASSERT_EQ(0, get_report(p[0], &r));
	EXPECT_EQ(2, r.ret);
	ASSERT_EQ(0, get_report(p[0], &r));
	EXPECT_EQ(1, r.ret);
	EXPECT_EQ(0, reap(pid));
	EXPECT_EQ(1, used_of(self->fd));
	EXPECT_EQ(1, write(fd, &c, 1));
	EXPECT_EQ(0, used_of(self->fd));
	EXPECT_EQ(0, close(fd));
	close(p[0]);
	close(p[1]);
}

/*
 * A close of any endpoint descriptor gives back what the process holds
 * through the endpoint, as POSIX record locks go at each close; and a
 * close in another process (a child that inherited the descriptor) gives
 * back only the child's.
 */
TEST_F(js, close_releases)
{
	int fd, fd2;
	pid_t pid;
	char c;

	if (!self->ready)
		return;
	fd = open(self->path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	fd2 = open(self->path, O_WRONLY | O_CLOEXEC);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(1, read1(fd, &c));
	ASSERT_EQ(1, read1(fd, &c));
	EXPECT_EQ(2, used_of(self->fd));

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		close(fd2);
		_exit(0);
	}
	EXPECT_EQ(0, reap(pid));
	EXPECT_EQ(2, used_of(self->fd));

	EXPECT_EQ(0, close(fd2));
	EXPECT_EQ(0, used_of(self->fd));
	/* The other descriptor goes on: a new token, back at its close. */
	ASSERT_EQ(1, read1(fd, &c));
	EXPECT_EQ(1, used_of(self->fd));
	EXPECT_EQ(0, close(fd));
	EXPECT_EQ(0, used_of(self->fd));
}

/*
 * A holder killed with SIGKILL gives its tokens back, and its request
 * leaves the queue, at once: not only when the endpoint's last file goes
 * (another stays open here).
 */
TEST_F(js, sigkill_releases)
{
	struct report r;
	int fd, keep, p[2], i;
	pid_t pid;

	if (!self->ready)
		return;
	keep = open(self->path, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, keep);
	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct pollfd pf;
		char c;

		fd = open(self->path, O_RDONLY);
		for (i = 0; i < CAP; i++)
			if (read1(fd, &c) != 1)
				_exit(1);
		/* and a request in the queue */
		pf.fd = fd;
		pf.events = POLLIN;
		poll(&pf, 1, 0);
		report(p[1], 0, 0);
		pause();
		_exit(0);
	}
	ASSERT_EQ(0, get_report(p[0], &r));
	EXPECT_EQ(CAP, used_of(self->fd));
	EXPECT_EQ(1, waiters_of(self->fd));
	ASSERT_EQ(0, kill(pid, SIGKILL));
	EXPECT_EQ(128 + SIGKILL, reap(pid));
	EXPECT_EQ(0, used_of(self->fd));
	EXPECT_EQ(0, waiters_of(self->fd));
	EXPECT_EQ(0, close(keep));
	close(p[0]);
	close(p[1]);
}

/* A non-blocking read fails with EAGAIN when nothing is free. */
TEST_F(js, nonblock_full)
{
	char c;
	int fd, i;

	if (!self->ready)
		return;
	fd = open(self->path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	ASSERT_LE(0, fd);
	for (i = 0; i < CAP; i++)
		ASSERT_EQ(1, read1(fd, &c));
	EXPECT_EQ(-1, read1(fd, &c));
	EXPECT_EQ(EAGAIN, errno);
	EXPECT_EQ(CAP, used_of(self->fd));
	EXPECT_EQ(0, close(fd));
	EXPECT_EQ(0, used_of(self->fd));
}

/* A thread that acquires @weight through a handle of its own. */
struct acquirer {
	int fd;			/* its handle */
	uint64_t weight;
	int ret;		/* what wsem_acquire() returned */
	int *order;		/* where it writes its place in grant order */
	int *next;		/* the shared counter of grants */
	pthread_t thread;
};

static void *acquire_thread(void *arg)
{
	struct acquirer *a = arg;

	a->ret = wsem_acquire(a->fd, a->weight);
	if (!a->ret && a->order)
		*a->order = __atomic_add_fetch(a->next, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static int start_acquirer(struct acquirer *a, int fd, uint64_t weight)
{
	a->fd = wsem_reopen(fd, 0);
	a->weight = weight;
	if (a->fd < 0)
		return -1;
	return pthread_create(&a->thread, NULL, acquire_thread, a) ? -1 : 0;
}

/*
 * No barging: a non-blocking read fails with EAGAIN while someone is
 * queued, even with room for it.
 */
TEST_F(js, nonblock_no_barging)
{
	struct acquirer a = { 0 };
	char c;
	int fd;

	if (!self->ready)
		return;
	fd = open(self->path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, wsem_acquire(self->fd, CAP));
	ASSERT_EQ(0, start_acquirer(&a, self->fd, 2));
	ASSERT_EQ(0, wait_waiters(self->fd, 1));
	ASSERT_EQ(0, wsem_release(self->fd, 1));
	/* 1 free, the head wants 2. */
	EXPECT_EQ(-1, read1(fd, &c));
	EXPECT_EQ(EAGAIN, errno);
	EXPECT_EQ(CAP - 1, used_of(self->fd));
	ASSERT_EQ(0, wsem_release(self->fd, CAP - 1));
	pthread_join(a.thread, NULL);
	EXPECT_EQ(0, a.ret);
	EXPECT_EQ(0, close(a.fd));
	EXPECT_EQ(1, read1(fd, &c));
	EXPECT_EQ(0, close(fd));
	EXPECT_EQ(0, used_of(self->fd));
}

/* poll() for POLLIN, @ms at most; the revents, 0 on a timeout. */
static short poll_in(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (poll(&p, 1, ms) < 0)
		return -1;
	return p.revents;
}

/*
 * A poller takes its place at the tail of the queue: granted after the
 * blocking acquirer queued before it, before the one queued after it.
 * While its request waits, it is not readable and a non-blocking read
 * fails; once granted, it is readable and the next read takes the unit.
 * Always writable.
 */
TEST_F(js, poller_keeps_its_place)
{
	struct acquirer before = { 0 }, after = { 0 };
	int order_before = 0, order_after = 0, next = 0;
	struct pollfd pw;
	char c;
	int fd;

	if (!self->ready)
		return;
	fd = open(self->path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	ASSERT_LE(0, fd);
	pw.fd = fd;
	pw.events = POLLOUT;
	EXPECT_EQ(1, poll(&pw, 1, 0));
	EXPECT_EQ(POLLOUT, pw.revents);
	EXPECT_EQ(0, waiters_of(self->fd));

	ASSERT_EQ(0, wsem_acquire(self->fd, CAP));
	before.order = &order_before;
	before.next = &next;
	ASSERT_EQ(0, start_acquirer(&before, self->fd, 1));
	ASSERT_EQ(0, wait_waiters(self->fd, 1));
	EXPECT_EQ(0, poll_in(fd, 0));
	EXPECT_EQ(2, waiters_of(self->fd));
	after.order = &order_after;
	after.next = &next;
	ASSERT_EQ(0, start_acquirer(&after, self->fd, 1));
	ASSERT_EQ(0, wait_waiters(self->fd, 3));
	/* Polling again keeps the one request. */
	EXPECT_EQ(0, poll_in(fd, 0));
	EXPECT_EQ(3, waiters_of(self->fd));
	EXPECT_EQ(-1, read1(fd, &c));
	EXPECT_EQ(EAGAIN, errno);

	ASSERT_EQ(0, wsem_release(self->fd, 1));
	pthread_join(before.thread, NULL);
	EXPECT_EQ(1, order_before);
	EXPECT_EQ(0, poll_in(fd, QUIET_MS));

	ASSERT_EQ(0, wsem_release(self->fd, 1));
	EXPECT_EQ(POLLIN, poll_in(fd, WAIT_MS));
	EXPECT_EQ(1, waiters_of(self->fd));
	EXPECT_EQ(0, order_after);
	ASSERT_EQ(1, read1(fd, &c));
	EXPECT_EQ(CAP, used_of(self->fd));

	ASSERT_EQ(0, wsem_release(self->fd, 1));
	pthread_join(after.thread, NULL);
	EXPECT_EQ(2, order_after);
	EXPECT_EQ(1, write(fd, &c, 1));
	ASSERT_EQ(0, wsem_release(self->fd, CAP - 3));
	EXPECT_EQ(0, close(before.fd));
	EXPECT_EQ(0, close(after.fd));
	EXPECT_EQ(0, close(fd));
	EXPECT_EQ(0, used_of(self->fd));
}

/* A blocking read waits for the process's own request, made by poll. */
TEST_F(js, blocking_read_takes_the_polled_request)
{
	pid_t pid;
	int fd;
	char c;

	if (!self->ready)
		return;
	fd = open(self->path, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, wsem_acquire(self->fd, CAP));
	EXPECT_EQ(0, poll_in(fd, 0));
	EXPECT_EQ(1, waiters_of(self->fd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		usleep(QUIET_MS * 1000);
		wsem_release(self->fd, 1);
		_exit(0);
	}
	/* Not a second request: the one that is queued. */
	EXPECT_EQ(1, read1(fd, &c));
	EXPECT_EQ(0, waiters_of(self->fd));
	EXPECT_EQ(CAP, used_of(self->fd));
	EXPECT_EQ(0, reap(pid));
	EXPECT_EQ(0, close(fd));
	EXPECT_EQ(CAP - 1, used_of(self->fd));
	ASSERT_EQ(0, wsem_release(self->fd, CAP - 1));
}

/* A thread blocked in a read of the endpoint. */
struct reader {
	int fd;
	pid_t tid;		/* its thread id, once it runs */
	long ret;		/* what read() returned ... */
	int err;		/* ... and errno */
	int done;		/* set when read() returned */
	pthread_t thread;
};

static void *read_thread(void *arg)
{
	struct reader *r = arg;
	char c;

	__atomic_store_n(&r->tid, gettid(), __ATOMIC_SEQ_CST);
	r->ret = read(r->fd, &c, 1);
	r->err = errno;
	__atomic_store_n(&r->done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

/* Wait up to WAIT_MS for @r's read to return; 0 or -1. */
static int wait_done(struct reader *r)
{
	int64_t end = now_ns() + WAIT_MS * 1000000LL;

	while (!__atomic_load_n(&r->done, __ATOMIC_SEQ_CST)) {
		if (now_ns() > end)
			return -1;
		usleep(1000);
	}
	return 0;
}

/*
 * Fill the semaphore (through handle @hfd), open @path twice (*@fd2 is the
 * second), poll the first for a request if @polled, and start @r reading
 * it in a thread.  0 once the thread runs, or the line that failed.
 */
static int full_with_reader(const char *path, int hfd, bool polled,
			    struct reader *r, int *fd2)
{
	r->fd = open(path, O_RDWR | O_CLOEXEC);
	*fd2 = open(path, O_RDONLY | O_CLOEXEC);
	if (r->fd < 0 || *fd2 < 0 || wsem_acquire(hfd, CAP))
		return __LINE__;
	if (polled && (poll_in(r->fd, 0) || waiters_of(hfd) != 1))
		return __LINE__;
	if (pthread_create(&r->thread, NULL, read_thread, r))
		return __LINE__;
	while (!__atomic_load_n(&r->tid, __ATOMIC_SEQ_CST))
		usleep(1000);
	return 0;
}

/*
 * @r's read returns 1 and the token is the process's own: the semaphore
 * (of handle @hfd, which holds CAP - 1) is full, and a write on @fd gives
 * the token back.  0, or the line of the first check that failed.
 */
static int reader_holds_its_token(struct reader *r, int fd, int hfd)
{
	if (wait_done(r))
		return __LINE__;
	pthread_join(r->thread, NULL);
	if (r->ret != 1)
		return __LINE__;
	if (used_of(hfd) != CAP)
		return __LINE__;
	if (write(fd, "+", 1) != 1 || used_of(hfd) != CAP - 1)
		return __LINE__;
	return 0;
}

/*
 * A thread that waits in a blocking read for the process's polled request
 * while another thread closes an endpoint descriptor: the close takes the
 * request out of the queue and the read goes on waiting with a new place
 * at the tail; the token it then gets is the process's own (a write gives
 * it back).
 */
TEST_F(js, close_while_another_thread_reads)
{
	struct reader r = { 0 };
	int fd, fd2;

	if (!self->ready)
		return;
	ASSERT_EQ(0, full_with_reader(self->path, self->fd, true, &r, &fd2));
	fd = r.fd;
	while (!thread_sleeping(r.tid))
		usleep(1000);
	EXPECT_EQ(1, waiters_of(self->fd));

	EXPECT_EQ(0, close(fd2));
	EXPECT_EQ(0, wait_waiters(self->fd, 1));
	EXPECT_EQ(0, r.done);
	ASSERT_EQ(0, wsem_release(self->fd, 1));
	EXPECT_EQ(0, reader_holds_its_token(&r, fd, self->fd));
	ASSERT_EQ(0, wsem_release(self->fd, CAP - 1));
	EXPECT_EQ(0, close(fd));
	EXPECT_EQ(0, used_of(self->fd));
}

/*
 * Likewise for a thread blocked in a read that acquires (no request): the
 * unit it is granted through the closed entry goes back, it takes one
 * through a new entry, and returns holding that one.
 */
TEST_F(js, close_while_another_thread_acquires)
{
	struct reader r = { 0 };
	int fd, fd2;

	if (!self->ready)
		return;
	ASSERT_EQ(0, full_with_reader(self->path, self->fd, false, &r, &fd2));
	fd = r.fd;
	ASSERT_EQ(0, wait_waiters(self->fd, 1));
	EXPECT_EQ(0, close(fd2));
	ASSERT_EQ(0, wsem_release(self->fd, 1));
	EXPECT_EQ(0, reader_holds_its_token(&r, fd, self->fd));
	ASSERT_EQ(0, wsem_release(self->fd, CAP - 1));
	EXPECT_EQ(0, close(fd));
	EXPECT_EQ(0, used_of(self->fd));
}

static void on_signal(int sig)
{
	(void)sig;
}

/*
 * A signal ends a blocking read (EINTR where the handler does not ask for
 * restarts): the reader leaves the queue and holds nothing from it.
 */
TEST_F(js, signal_ends_blocking_read)
{
	struct report r;
	int p[2];
	pid_t pid;

	if (!self->ready)
		return;
	ASSERT_EQ(0, wsem_acquire(self->fd, CAP));
	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct sigaction sa = { .sa_handler = on_signal };
		int fd = open(self->path, O_RDONLY);
		char c;
		long n;

		sigemptyset(&sa.sa_mask);
		sigaction(SIGUSR1, &sa, NULL);
		n = read1(fd, &c);
		report(p[1], n, errno);
		pause();
		_exit(0);
	}
	ASSERT_EQ(0, wait_waiters(self->fd, 1));
	ASSERT_EQ(0, kill(pid, SIGUSR1));
	ASSERT_EQ(0, get_report(p[0], &r));
	EXPECT_EQ(-1, r.ret);
	EXPECT_EQ(EINTR, r.err);
	EXPECT_EQ(0, waiters_of(self->fd));
	ASSERT_EQ(0, wsem_release(self->fd, CAP));
	EXPECT_EQ(0, used_of(self->fd));
	kill(pid, SIGKILL);
	reap(pid);
	close(p[0]);
	close(p[1]);
}

/*
 * Once the semaphore is unlinked, its endpoint opens no more, by path or
 * through a pinned dentry; an open one goes on.
 */
TEST_F(js, unlinked_enoent)
{
	char proc[64], c;
	int fd, pfd;

	if (!self->ready)
		return;
	fd = open(self->path, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	pfd = open(self->path, O_PATH | O_CLOEXEC);
	ASSERT_LE(0, pfd);
	ASSERT_EQ(0, wsem_unlink(self->name));
	EXPECT_EQ(-1, open(self->path, O_RDWR | O_CLOEXEC));
	EXPECT_EQ(ENOENT, errno);
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
	EXPECT_EQ(-1, open(proc, O_RDWR | O_CLOEXEC));
	EXPECT_EQ(ENOENT, errno);
	ASSERT_EQ(1, read1(fd, &c));
	EXPECT_EQ(1, used_of(self->fd));
	EXPECT_EQ(0, close(fd));
	EXPECT_EQ(0, used_of(self->fd));
	EXPECT_EQ(0, close(pfd));
}

/*
 * Opening the endpoint in any mode needs read and write permission on the
 * semaphore: with read alone, not even O_RDONLY.
 */
TEST_F(js, permission)
{
	struct report r;
	int p[2];
	pid_t pid;

	if (!self->ready)
		return;
	ASSERT_EQ(0, chmod(self->path, 0644));
	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int fd;

		if (setgid(NOBODY) || setuid(NOBODY))
			_exit(2);
		fd = open(self->path, O_RDONLY);
		report(p[1], fd, errno);
		fd = open(self->path, O_WRONLY);
		report(p[1], fd, errno);
		_exit(0);
	}
	ASSERT_EQ(0, get_report(p[0], &r));
	EXPECT_EQ(-1, r.ret);
	EXPECT_EQ(EACCES, r.err);
	ASSERT_EQ(0, get_report(p[0], &r));
	EXPECT_EQ(-1, r.ret);
	EXPECT_EQ(EACCES, r.err);
	EXPECT_EQ(0, reap(pid));

	/* chmod of the endpoint is the semaphore's, and now it opens. */
	ASSERT_EQ(0, chmod(self->path, 0666));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int fd;

		if (setgid(NOBODY) || setuid(NOBODY))
			_exit(2);
		fd = open(self->path, O_RDONLY);
		report(p[1], fd >= 0 ? 0 : -1, errno);
		_exit(0);
	}
	ASSERT_EQ(0, get_report(p[0], &r));
	EXPECT_EQ(0, r.ret);
	EXPECT_EQ(0, reap(pid));
	close(p[0]);
	close(p[1]);
}

/* What a child as nobody does to a semaphore (as_nobody()). */
enum nobody_does { NOBODY_OPENS, NOBODY_FCHMODS, NOBODY_UNLINKS };

/*
 * In a child as nobody: open(@path, O_RDWR), fchmod(@fd, 0600) or
 * unlink(@path), as report() tells it.  Its pid.
 */
static pid_t as_nobody(int wfd, enum nobody_does what, const char *path,
		       int fd)
{
	pid_t pid = fork();
	int ret = -1;

	if (pid)
		return pid;
	if (setgid(NOBODY) || setuid(NOBODY))
		_exit(2);
	switch (what) {
	case NOBODY_OPENS:
		ret = open(path, O_RDWR) >= 0 ? 0 : -1;
		break;
	case NOBODY_FCHMODS:
		ret = fchmod(fd, 0600);
		break;
	case NOBODY_UNLINKS:
		ret = unlink(path);
		break;
	}
	report(wfd, ret, errno);
	_exit(0);
}

/* What nobody got doing @what: 0, or the errno. */
static int nobody_got(struct __test_metadata *_metadata, enum nobody_does what,
		      const char *path, int fd)
{
	struct report r = { .ret = -1, .err = EPROTO };
	int p[2];
	pid_t pid;

	if (pipe(p))
		return EPROTO;
	pid = as_nobody(p[1], what, path, fd);
	if (pid > 0) {
		if (get_report(p[0], &r))
			r.err = EPROTO;
		EXPECT_EQ(0, reap(pid));
	}
	close(p[0]);
	close(p[1]);
	return r.ret ? r.err : 0;
}

/*
 * The file and the endpoint are two inodes of one semaphore.  With both
 * kept (open, so never looked up anew), a chmod or chown of one is the
 * other's too.  Each step changes one and then first uses the other,
 * stale until refreshed, in one way: opened through a bind mount (as a
 * container has it; a path walk does not look it up anew either),
 * fstat(2), fchmod(2) by the new owner, unlink(2) by the old owner (the
 * directory is sticky).
 */
TEST_F(js, chmod_reaches_a_kept_endpoint)
{
	char file[160], bound[] = "/tmp/jobserver_test.bound.XXXXXX";
	struct stat st;
	int kept_file, kept_ep, fd;

	if (!self->ready)
		return;
	snprintf(file, sizeof(file), "%s/%s", self->dir, self->name);
	kept_file = open(file, O_RDWR);
	ASSERT_LE(0, kept_file);
	kept_ep = open(self->path, O_RDWR);
	ASSERT_LE(0, kept_ep);
	fd = mkstemp(bound);
	ASSERT_LE(0, fd);
	close(fd);
	ASSERT_EQ(0, mount(self->path, bound, NULL, MS_BIND, NULL));

	/* wsemfs_permission() */
	ASSERT_EQ(0, chmod(file, 0600));
	EXPECT_EQ(EACCES, nobody_got(_metadata, NOBODY_OPENS, bound, -1));
	EXPECT_EQ(EACCES, nobody_got(_metadata, NOBODY_OPENS, self->path, -1));

	/* wsemfs_getattr() */
	ASSERT_EQ(0, chmod(self->path, 0666));
	ASSERT_EQ(0, fstat(kept_file, &st));
	EXPECT_EQ(0666, st.st_mode & 07777);
	EXPECT_EQ(0, nobody_got(_metadata, NOBODY_OPENS, file, -1));

	/* wsemfs_setattr() */
	ASSERT_EQ(0, chown(file, NOBODY, NOBODY));
	EXPECT_EQ(0, nobody_got(_metadata, NOBODY_FCHMODS, NULL, kept_ep));
	ASSERT_EQ(0, fstat(kept_ep, &st));
	EXPECT_EQ(NOBODY, st.st_uid);
	EXPECT_EQ(0600, st.st_mode & 07777);

	/* wsemfs_d_revalidate() */
	ASSERT_EQ(0, chown(self->path, 0, 0));
	EXPECT_EQ(EPERM, nobody_got(_metadata, NOBODY_UNLINKS, file, -1));
	ASSERT_EQ(0, stat(file, &st));
	EXPECT_EQ(0, st.st_uid);

	EXPECT_EQ(0, close(kept_ep));
	EXPECT_EQ(0, close(kept_file));
	EXPECT_EQ(0, umount2(bound, 0));
	EXPECT_EQ(0, unlink(bound));
}

/* epoll: readable once the process's request is granted. */
TEST_F(js, epoll)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int fd, ep;
	char c;

	if (!self->ready)
		return;
	fd = open(self->path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ep = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, ep);
	ASSERT_EQ(0, wsem_acquire(self->fd, CAP));
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev));
	EXPECT_EQ(0, epoll_wait(ep, &ev, 1, 0));
	EXPECT_EQ(1, waiters_of(self->fd));
	ASSERT_EQ(0, wsem_release(self->fd, 1));
	ASSERT_EQ(1, epoll_wait(ep, &ev, 1, WAIT_MS));
	EXPECT_TRUE(ev.events & EPOLLIN);
	ASSERT_EQ(1, read1(fd, &c));
	EXPECT_EQ(CAP, used_of(self->fd));
	EXPECT_EQ(0, close(ep));
	EXPECT_EQ(0, close(fd));
	EXPECT_EQ(CAP - 1, used_of(self->fd));
	ASSERT_EQ(0, wsem_release(self->fd, CAP - 1));
	EXPECT_EQ(0, wait_used(self->fd, 0));
}

TEST_HARNESS_MAIN
