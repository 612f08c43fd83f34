// SPDX-License-Identifier: GPL-2.0
/*
 * Lifetime of handles and weight (SPEC.md "Objects"): weight goes back when
 * the last reference to a handle goes away (close, exit, SIGKILL), a killed
 * waiter leaves the queue, fork/dup/SCM_RIGHTS share a handle and its weight,
 * reopen does not, and an anonymous semaphore lives as long as a handle.
 *
 * Other processes are "helpers": forked children that keep no descriptor
 * but the ones a test gives them and run one request at a time from a pipe
 * (open, acquire, release, stat, close, ...), answering each on another
 * pipe.  That orders every step without sleeping; a blocking acquire is
 * seen queued through wsem_stat().waiters before the test goes on.
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
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <wsem.h>

#include "kselftest_harness.h"
#include "util.h"

#define CAP		4	/* capacity of the fixture's semaphore */
#define MAX_KIDS	3	/* helpers per test */
#define WAIT_NS		(5 * NSEC)	/* bound for anything to show up */
#define REPLY_WAIT_MS	10000		/* bound for a helper to answer */
#define LIMIT_PARAM	"/sys/module/wsem/parameters/max_sems_per_ns"

/* What a helper is asked to do, on its current handle unless told. */
enum op {
	OP_OPEN,	/* open the test's semaphore: a handle of its own */
	OP_ACQUIRE,	/* wsem_acquire(arg) */
	OP_RELEASE,	/* wsem_release(arg) */
	OP_STAT,	/* wsem_stat() */
	OP_CLOSE,	/* close() its current handle */
	OP_RECV,	/* take a handle sent with SCM_RIGHTS as its current one */
	OP_REOPEN,	/* wsem_reopen(): the new handle becomes current */
	OP_EXIT,	/* _exit(0) at once, leaving its handles open */
};

/* One request to a helper. */
struct request {
	int op;			/* enum op */
	uint64_t arg;		/* weight for OP_ACQUIRE and OP_RELEASE */
};

/* A helper's answer to one request. */
struct reply {
	int ret;		/* the call's return value */
	int err;		/* errno right after it */
	int stat_ret;		/* wsem_stat() on the current handle after it */
	struct wsem_stat st;	/* that stat, if stat_ret is 0 */
};

/* The parent's view of a helper process. */
struct helper {
	pid_t pid;		/* 0: free slot, or already reaped */
	int req;		/* write end of the request pipe */
	int rep;		/* read end of the reply pipe */
	int sock;		/* our end of a socketpair for SCM_RIGHTS */
};

FIXTURE(life) {
	/* this test's semaphore: "life.<test>.<pid>" */
	char name[WSEM_NAME_MAX];
	/* the test's handle, created with capacity CAP; -1 once closed */
	int fd;
	/* helper processes, killed and reaped by the teardown */
	struct helper kid[MAX_KIDS];
	/* setup done: false after a SKIP, so body and teardown do nothing */
	bool ready;
};

/* Weight used on @fd's semaphore, or -1 if stat fails. */
static int64_t used_of(int fd)
{
	struct wsem_stat st;

	memset(&st, 0, sizeof(st));
	if (wsem_stat(fd, &st))
		return -1;
	return st.used;
}

static void __attribute__((noreturn))
helper_main(const char *name, int fd, int req, int rep, int sock)
{
	struct request q;
	struct reply r;

	while (read(req, &q, sizeof(q)) == sizeof(q)) {
		memset(&r, 0, sizeof(r));
		errno = 0;
		switch (q.op) {
		case OP_OPEN:
			fd = wsem_open(name, O_CLOEXEC, 0, 0);
			r.ret = fd;
			break;
		case OP_ACQUIRE:
			r.ret = wsem_acquire(fd, q.arg);
			break;
		case OP_RELEASE:
			r.ret = wsem_release(fd, q.arg);
			break;
		case OP_STAT:
			r.ret = 0;
			break;
		case OP_CLOSE:
			r.ret = close(fd);
			fd = -1;
			break;
		case OP_RECV:
			fd = recv_fd(sock);
			r.ret = fd;
			break;
		case OP_REOPEN:
			fd = wsem_reopen(fd, O_CLOEXEC);
			r.ret = fd;
			break;
		default:
			_exit(0);
		}
		r.err = errno;
		r.stat_ret = fd < 0 ? -1 : wsem_stat(fd, &r.st);
		if (write(rep, &r, sizeof(r)) != sizeof(r))
			_exit(1);
	}
	_exit(0);
}

/*
 * Fork helper @slot.  It keeps only @keep (a handle it then shares with the
 * test, or -1 for none) and its pipes: no stray copy of another handle.
 */
static int start_helper(FIXTURE_DATA(life) *self, int slot, int keep)
{
	struct helper *h = &self->kid[slot];
	int req[2], rep[2], sk[2], i;

	if (pipe2(req, O_CLOEXEC))
		return -1;
	if (pipe2(rep, O_CLOEXEC))
		return -1;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sk))
		return -1;
	h->pid = fork();
	if (h->pid < 0)
		return -1;
	if (h->pid == 0) {
		for (i = 3; i < 1024; i++)
			if (i != keep && i != req[0] && i != rep[1] &&
			    i != sk[1])
				close(i);
		helper_main(self->name, keep, req[0], rep[1], sk[1]);
	}
	close(req[0]);
	close(rep[1]);
	close(sk[1]);
	h->req = req[1];
	h->rep = rep[0];
	h->sock = sk[0];
	return 0;
}

static int send_req(FIXTURE_DATA(life) *self, int slot, int op, uint64_t arg)
{
	struct request q = { .op = op, .arg = arg };

	return write(self->kid[slot].req, &q, sizeof(q)) == sizeof(q) ? 0 : -1;
}

/* The helper's next answer; -1 if none within REPLY_WAIT_MS. */
static int get_reply(FIXTURE_DATA(life) *self, int slot, struct reply *r)
{
	struct pollfd pfd = { .fd = self->kid[slot].rep, .events = POLLIN };

	if (poll(&pfd, 1, REPLY_WAIT_MS) != 1)
		return -1;
	return read(self->kid[slot].rep, r, sizeof(*r)) == sizeof(*r) ? 0 : -1;
}

/* Ask and wait for the answer. */
static int ask(FIXTURE_DATA(life) *self, int slot, int op, uint64_t arg,
	       struct reply *r)
{
	if (send_req(self, slot, op, arg))
		return -1;
	return get_reply(self, slot, r);
}

/* Kill helper @slot and reap it. */
static int kill_helper(FIXTURE_DATA(life) *self, int slot)
{
	pid_t pid = self->kid[slot].pid;

	self->kid[slot].pid = 0;
	if (kill(pid, SIGKILL))
		return -1;
	return waitpid(pid, NULL, 0) == pid ? 0 : -1;
}

/* Let helper @slot exit on its own, its handles still open; reap it. */
static int exit_helper(FIXTURE_DATA(life) *self, int slot)
{
	pid_t pid = self->kid[slot].pid;
	int status;

	self->kid[slot].pid = 0;
	if (send_req(self, slot, OP_EXIT, 0))
		return -1;
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

FIXTURE_SETUP(life)
{
	if (access("/dev/wsem", F_OK))
		SKIP(return, "/dev/wsem is missing (module not loaded)");
	snprintf(self->name, sizeof(self->name), "life.%s.%d",
		 _metadata->name, getpid());
	self->fd = wsem_open(self->name, O_CREAT | O_EXCL | O_CLOEXEC,
			     0600, CAP);
	ASSERT_LE(0, self->fd) {
		TH_LOG("create %s: %s", self->name, strerror(errno));
	}
	self->ready = true;
}

FIXTURE_TEARDOWN(life)
{
	struct helper *h;
	int i;

	if (!self->ready)
		return;
	for (i = 0; i < MAX_KIDS; i++) {
		h = &self->kid[i];
		if (h->pid > 0)
			EXPECT_EQ(0, kill_helper(self, i));
		if (h->req > 0) {
			EXPECT_EQ(0, close(h->req));
			EXPECT_EQ(0, close(h->rep));
			EXPECT_EQ(0, close(h->sock));
		}
	}
	if (self->fd >= 0)
		EXPECT_EQ(0, close(self->fd));
	EXPECT_EQ(0, wsem_unlink(self->name));
}

/* close() of the only reference gives the handle's weight back. */
TEST_F(life, close_returns_weight)
{
	struct wsem_stat st;
	int h;

	if (!self->ready)
		return;
	h = wsem_open(self->name, O_CLOEXEC, 0, 0);
	ASSERT_LE(0, h);
	ASSERT_EQ(0, wsem_acquire(h, 3));
	ASSERT_EQ(3, used_of(self->fd));
	ASSERT_EQ(0, close(h));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(0, st.used);
	EXPECT_EQ(CAP, st.available);
}

/* The weight a close gives back goes to the waiters at once. */
TEST_F(life, close_grants_waiter)
{
	struct reply r;
	int h;

	if (!self->ready)
		return;
	h = wsem_open(self->name, O_CLOEXEC, 0, 0);
	ASSERT_LE(0, h);
	ASSERT_EQ(0, wsem_acquire(h, CAP));
	ASSERT_EQ(0, start_helper(self, 0, -1));
	ASSERT_EQ(0, ask(self, 0, OP_OPEN, 0, &r));
	ASSERT_LE(0, r.ret);
	ASSERT_EQ(0, send_req(self, 0, OP_ACQUIRE, 2));
	ASSERT_EQ(0, wait_waiters(self->fd, 1));
	ASSERT_EQ(0, close(h));
	ASSERT_EQ(0, get_reply(self, 0, &r)) {
		TH_LOG("the waiter was not granted after the close");
	}
	EXPECT_EQ(0, r.ret);
	EXPECT_EQ(2, r.st.held);
	EXPECT_EQ(2, used_of(self->fd));
}

/* A holder that exits without closing gives its weight back. */
TEST_F(life, exit_returns_weight)
{
	struct reply r;

	if (!self->ready)
		return;
	ASSERT_EQ(0, start_helper(self, 0, -1));
	ASSERT_EQ(0, ask(self, 0, OP_OPEN, 0, &r));
	ASSERT_LE(0, r.ret);
	ASSERT_EQ(0, ask(self, 0, OP_ACQUIRE, 3, &r));
	ASSERT_EQ(0, r.ret);
	ASSERT_EQ(3, used_of(self->fd));
	ASSERT_EQ(0, exit_helper(self, 0));
	EXPECT_EQ(0, used_of(self->fd));
}

/* A holder killed with SIGKILL gives its weight back. */
TEST_F(life, sigkill_holder_returns_weight)
{
	struct reply r;

	if (!self->ready)
		return;
	ASSERT_EQ(0, start_helper(self, 0, -1));
	ASSERT_EQ(0, ask(self, 0, OP_OPEN, 0, &r));
	ASSERT_LE(0, r.ret);
	ASSERT_EQ(0, ask(self, 0, OP_ACQUIRE, 3, &r));
	ASSERT_EQ(0, r.ret);
	ASSERT_EQ(3, used_of(self->fd));
	ASSERT_EQ(0, kill_helper(self, 0));
	EXPECT_EQ(0, used_of(self->fd));
}

/* The weight of a killed holder goes to the waiters. */
TEST_F(life, sigkill_holder_grants_waiter)
{
	struct reply r;

	if (!self->ready)
		return;
	ASSERT_EQ(0, start_helper(self, 0, -1));
	ASSERT_EQ(0, ask(self, 0, OP_OPEN, 0, &r));
	ASSERT_LE(0, r.ret);
	ASSERT_EQ(0, ask(self, 0, OP_ACQUIRE, CAP, &r));
	ASSERT_EQ(0, r.ret);
	ASSERT_EQ(0, start_helper(self, 1, -1));
	ASSERT_EQ(0, ask(self, 1, OP_OPEN, 0, &r));
	ASSERT_LE(0, r.ret);
	ASSERT_EQ(0, send_req(self, 1, OP_ACQUIRE, 1));
	ASSERT_EQ(0, wait_waiters(self->fd, 1));
	ASSERT_EQ(0, kill_helper(self, 0));
	ASSERT_EQ(0, get_reply(self, 1, &r)) {
		TH_LOG("the waiter was not granted after the holder died");
	}
	EXPECT_EQ(0, r.ret);
	EXPECT_EQ(1, r.st.held);
	EXPECT_EQ(1, used_of(self->fd));
}

/*
 * A waiter killed with SIGKILL leaves the queue; when it was the head, the
 * ones behind it that fit now are granted.  The killed waiter waits on a
 * handle the test shares with it, so its death closes nothing: only its
 * leaving the queue can grant the follower.
 */
TEST_F(life, sigkill_waiter_grants_followers)
{
	struct wsem_stat st;
	struct reply r;
	int h;

	if (!self->ready)
		return;
	h = wsem_open(self->name, O_CLOEXEC, 0, 0);
	ASSERT_LE(0, h);
	ASSERT_EQ(0, wsem_acquire(self->fd, CAP - 1));
	ASSERT_EQ(0, start_helper(self, 0, h));
	ASSERT_EQ(0, start_helper(self, 1, -1));
	ASSERT_EQ(0, ask(self, 1, OP_OPEN, 0, &r));
	ASSERT_LE(0, r.ret);
	ASSERT_EQ(0, send_req(self, 0, OP_ACQUIRE, CAP));
	ASSERT_EQ(0, wait_waiters(self->fd, 1));
	ASSERT_EQ(0, send_req(self, 1, OP_ACQUIRE, 1));
	ASSERT_EQ(0, wait_waiters(self->fd, 2));

	ASSERT_EQ(0, kill_helper(self, 0));
	ASSERT_EQ(0, get_reply(self, 1, &r)) {
		TH_LOG("the follower was not granted after the head died");
	}
	EXPECT_EQ(0, r.ret);
	EXPECT_EQ(1, r.st.held);
	ASSERT_EQ(0, wsem_stat(h, &st));
	EXPECT_EQ(0, st.held);
	EXPECT_EQ(0, st.waiters);
	EXPECT_EQ(0, st.queued_weight);
	EXPECT_EQ(CAP, st.used);
	EXPECT_EQ(0, close(h));
}

/* fork() shares the handle: the child sees and can release our weight. */
TEST_F(life, fork_shares_held_weight)
{
	struct wsem_stat st;
	struct reply r;

	if (!self->ready)
		return;
	ASSERT_EQ(0, wsem_acquire(self->fd, 2));
	ASSERT_EQ(0, start_helper(self, 0, self->fd));
	ASSERT_EQ(0, ask(self, 0, OP_STAT, 0, &r));
	ASSERT_EQ(0, r.stat_ret);
	EXPECT_EQ(2, r.st.held);
	ASSERT_EQ(0, ask(self, 0, OP_RELEASE, 2, &r));
	EXPECT_EQ(0, r.ret);
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(0, st.held);
	EXPECT_EQ(0, st.used);
}

/* After fork() the weight goes back only when the last process closes. */
TEST_F(life, fork_weight_returns_on_last_close)
{
	struct reply r;
	int o;

	if (!self->ready)
		return;
	o = wsem_open(self->name, O_CLOEXEC, 0, 0);
	ASSERT_LE(0, o);
	ASSERT_EQ(0, wsem_acquire(self->fd, 2));
	ASSERT_EQ(0, start_helper(self, 0, self->fd));
	ASSERT_EQ(0, close(self->fd));
	self->fd = -1;
	EXPECT_EQ(2, used_of(o)) {
		TH_LOG("weight went back while the child still has the handle");
	}
	ASSERT_EQ(0, ask(self, 0, OP_CLOSE, 0, &r));
	EXPECT_EQ(0, r.ret);
	EXPECT_EQ(0, used_of(o));
	EXPECT_EQ(0, close(o));
}

/* dup() shares the handle: weight taken through one is held by both. */
TEST_F(life, dup_shares_held_weight)
{
	struct wsem_stat st;
	int d;

	if (!self->ready)
		return;
	d = dup(self->fd);
	ASSERT_LE(0, d);
	ASSERT_EQ(0, wsem_acquire(d, 2));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(2, st.held);
	ASSERT_EQ(0, wsem_release(self->fd, 2));
	ASSERT_EQ(0, wsem_stat(d, &st));
	EXPECT_EQ(0, st.held);
	EXPECT_EQ(0, st.used);
	EXPECT_EQ(0, close(d));
}

/* After dup() the weight goes back only when the last descriptor closes. */
TEST_F(life, dup_weight_returns_on_last_close)
{
	int d, o;

	if (!self->ready)
		return;
	o = wsem_open(self->name, O_CLOEXEC, 0, 0);
	ASSERT_LE(0, o);
	d = dup(self->fd);
	ASSERT_LE(0, d);
	ASSERT_EQ(0, wsem_acquire(d, 2));
	ASSERT_EQ(0, close(d));
	EXPECT_EQ(2, used_of(o)) {
		TH_LOG("weight went back while a duplicate is still open");
	}
	ASSERT_EQ(0, close(self->fd));
	self->fd = -1;
	EXPECT_EQ(0, used_of(o));
	EXPECT_EQ(0, close(o));
}

/* SCM_RIGHTS shares the handle: the receiver can release our weight. */
TEST_F(life, scm_rights_shares_held_weight)
{
	struct wsem_stat st;
	struct reply r;

	if (!self->ready)
		return;
	ASSERT_EQ(0, wsem_acquire(self->fd, 2));
	ASSERT_EQ(0, start_helper(self, 0, -1));
	ASSERT_EQ(0, send_req(self, 0, OP_RECV, 0));
	ASSERT_EQ(0, send_fd(self->kid[0].sock, self->fd, 0));
	ASSERT_EQ(0, get_reply(self, 0, &r));
	ASSERT_LE(0, r.ret);
	ASSERT_EQ(0, r.stat_ret);
	EXPECT_EQ(2, r.st.held);
	ASSERT_EQ(0, ask(self, 0, OP_RELEASE, 2, &r));
	EXPECT_EQ(0, r.ret);
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(0, st.held);
	EXPECT_EQ(0, st.used);
}

/* A handle passed with SCM_RIGHTS keeps its weight after the sender closes. */
TEST_F(life, scm_rights_weight_returns_on_last_close)
{
	struct reply r;
	int o;

	if (!self->ready)
		return;
	o = wsem_open(self->name, O_CLOEXEC, 0, 0);
	ASSERT_LE(0, o);
	ASSERT_EQ(0, wsem_acquire(self->fd, 2));
	ASSERT_EQ(0, start_helper(self, 0, -1));
	ASSERT_EQ(0, send_req(self, 0, OP_RECV, 0));
	ASSERT_EQ(0, send_fd(self->kid[0].sock, self->fd, 0));
	ASSERT_EQ(0, get_reply(self, 0, &r));
	ASSERT_LE(0, r.ret);
	ASSERT_EQ(0, close(self->fd));
	self->fd = -1;
	EXPECT_EQ(2, used_of(o)) {
		TH_LOG("weight went back while the receiver has the handle");
	}
	ASSERT_EQ(0, ask(self, 0, OP_CLOSE, 0, &r));
	EXPECT_EQ(0, r.ret);
	EXPECT_EQ(0, used_of(o));
	EXPECT_EQ(0, close(o));
}

/* reopen gives a handle of its own: it holds none of the original's weight. */
TEST_F(life, reopen_holds_nothing)
{
	struct wsem_stat st;
	int h;

	if (!self->ready)
		return;
	ASSERT_EQ(0, wsem_acquire(self->fd, 2));
	h = wsem_reopen(self->fd, O_CLOEXEC);
	ASSERT_LE(0, h);
	ASSERT_EQ(0, wsem_stat(h, &st));
	EXPECT_EQ(0, st.held);
	EXPECT_EQ(2, st.used);
	EXPECT_EQ(-1, wsem_release(h, 1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(2, used_of(self->fd));
	EXPECT_EQ(0, close(h));
}

/* Closing a reopened handle gives back its own weight, not the original's. */
TEST_F(life, reopen_close_returns_only_its_weight)
{
	struct wsem_stat st;
	int h;

	if (!self->ready)
		return;
	h = wsem_reopen(self->fd, O_CLOEXEC);
	ASSERT_LE(0, h);
	ASSERT_EQ(0, wsem_acquire(self->fd, 2));
	ASSERT_EQ(0, wsem_acquire(h, 1));
	ASSERT_EQ(0, wsem_stat(h, &st));
	EXPECT_EQ(1, st.held);
	EXPECT_EQ(3, st.used);
	ASSERT_EQ(0, close(h));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(2, st.held);
	EXPECT_EQ(2, st.used);
}

/*
 * An anonymous semaphore is shared by fork: the child reopens the inherited
 * handle to get one of its own, waits on it, and is granted when we release.
 */
TEST_F(life, anon_shared_by_fork)
{
	struct wsem_stat st;
	struct reply r;
	int a;

	if (!self->ready)
		return;
	a = wsem_open_anon(2, O_CLOEXEC);
	ASSERT_LE(0, a);
	ASSERT_EQ(0, wsem_stat(a, &st));
	EXPECT_STREQ("", st.name);
	ASSERT_EQ(0, wsem_acquire(a, 2));
	ASSERT_EQ(0, start_helper(self, 0, a));
	ASSERT_EQ(0, ask(self, 0, OP_REOPEN, 0, &r));
	ASSERT_LE(0, r.ret);
	EXPECT_EQ(0, r.st.held);
	EXPECT_EQ(2, r.st.used);
	ASSERT_EQ(0, send_req(self, 0, OP_ACQUIRE, 1));
	ASSERT_EQ(0, wait_waiters(a, 1));
	ASSERT_EQ(0, wsem_release(a, 2));
	ASSERT_EQ(0, get_reply(self, 0, &r)) {
		TH_LOG("the child was not granted on the anonymous semaphore");
	}
	EXPECT_EQ(0, r.ret);
	EXPECT_EQ(1, r.st.held);
	EXPECT_EQ(1, used_of(a));
	EXPECT_EQ(0, close(a));
}

FIXTURE(anon_limit) {
	/* max_sems_per_ns before the test, written back by the teardown */
	char old_limit[32];
	/* setup done: false after a SKIP, so body and teardown do nothing */
	bool ready;
};

static int write_limit(const char *val)
{
	int fd = open(LIMIT_PARAM, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, val, strlen(val));
	close(fd);
	return n == (ssize_t)strlen(val) ? 0 : -1;
}

FIXTURE_SETUP(anon_limit)
{
	ssize_t n;
	int fd;

	if (access("/dev/wsem", F_OK))
		SKIP(return, "/dev/wsem is missing (module not loaded)");
	fd = open(LIMIT_PARAM, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		SKIP(return, "%s: %s", LIMIT_PARAM, strerror(errno));
	n = read(fd, self->old_limit, sizeof(self->old_limit) - 1);
	ASSERT_EQ(0, close(fd));
	ASSERT_LT(0, n);
	/* A namespace of our own, where the count starts at zero. */
	ASSERT_EQ(0, unshare(CLONE_NEWIPC));
	ASSERT_EQ(0, write_limit("2"));
	self->ready = true;
}

FIXTURE_TEARDOWN(anon_limit)
{
	if (!self->ready)
		return;
	EXPECT_EQ(0, write_limit(self->old_limit));
}

/*
 * An anonymous semaphore lives while any handle does and goes away with
 * the last one.  Seen through the namespace limit (2 here): it still counts
 * while a forked child keeps the handle, and no longer once the child is
 * gone.
 */
TEST_F(anon_limit, anon_goes_away_with_last_handle)
{
	int a, b, c, p[2], status;
	int64_t end;
	char byte;
	pid_t pid;

	if (!self->ready)
		return;
	a = wsem_open_anon(1, O_CLOEXEC);
	ASSERT_LE(0, a);
	b = wsem_open_anon(1, O_CLOEXEC);
	ASSERT_LE(0, b);
	EXPECT_EQ(-1, wsem_open_anon(1, O_CLOEXEC));
	EXPECT_EQ(ENOSPC, errno);

	ASSERT_EQ(0, pipe2(p, O_CLOEXEC));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		/* Keep @a until the test closes the pipe. */
		close(b);
		close(p[1]);
		_exit(read(p[0], &byte, 1) == 0 ? 0 : 1);
	}
	EXPECT_EQ(0, close(p[0]));
	EXPECT_EQ(0, close(a));
	EXPECT_EQ(-1, wsem_open_anon(1, O_CLOEXEC)) {
		TH_LOG("the semaphore went away while the child had it");
	}
	EXPECT_EQ(ENOSPC, errno);

	EXPECT_EQ(0, close(p[1]));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	end = now_ns() + WAIT_NS;
	do {
		c = wsem_open_anon(1, O_CLOEXEC);
		if (c >= 0 || errno != ENOSPC)
			break;
		usleep(10000);
	} while (now_ns() < end);
	EXPECT_LE(0, c) {
		TH_LOG("still counted after its last handle: %s",
		       strerror(errno));
	}
	if (c >= 0)
		EXPECT_EQ(0, close(c));
	EXPECT_EQ(0, close(b));
}

TEST_HARNESS_MAIN
