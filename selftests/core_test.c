// SPDX-License-Identifier: GPL-2.0
/*
 * The core's rules that issue 9 added or fixed:
 *
 *  - access modes: a handle not open for writing can watch (stat, poll)
 *    but not acquire, release or resize (EBADF), and REOPEN keeps the
 *    access mode of the handle it was called on;
 *  - epoll registered on a handle before it was bound hears the
 *    semaphore's wake-ups after the bind;
 *  - task work (io_uring's completions, TIF_NOTIFY_SIGNAL) that arrives
 *    while a waiter sleeps runs at once, and the waiter keeps its place
 *    in the queue; the place kept for a thread that then leaves through
 *    its signal handler instead of coming back is freed once the thread
 *    has ended (issue 29);
 *  - fdinfo has a stable id: the same for every handle of a semaphore;
 *  - a mass grant: 256 waiters granted by one release, each gets its
 *    weight exactly once.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <wsem.h>

#include "kselftest_harness.h"
#include "util.h"
#include "ring.h"

#define LONG_MS		5000	/* what must happen happens before this */
#define MASS		256	/* waiters granted by one release */

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* Bind a fresh handle of access mode @acc to @name (raw ioctls). */
static int open_raw(const char *name, int acc, uint64_t flags, uint64_t cap)
{
	struct wsem_open_args o = {
		.size = sizeof(o), .flags = flags, .capacity = cap,
		.mode = 0600,
	};
	int fd = open("/dev/wsem", acc | O_CLOEXEC);

	if (fd < 0)
		return -1;
	snprintf(o.name, sizeof(o.name), "%s", name);
	if (ioctl(fd, WSEM_IOC_OPEN, &o)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* chmod a semaphore through a wsemfs mount of our own; 0 or -1. */
static int chmod_sem(const char *name, mode_t mode)
{
	char dir[] = "/tmp/wsem-chmod.XXXXXX", path[96];
	int ret;

	if (!mkdtemp(dir))
		return -1;
	ret = mount("wsem", dir, "wsem", 0, NULL);
	if (!ret) {
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		ret = chmod(path, mode);
		umount2(dir, MNT_DETACH);
	}
	rmdir(dir);
	return ret;
}

FIXTURE(core) {
	/* a named semaphore of capacity 2 made by the setup, unlinked after */
	char name[WSEM_NAME_MAX];
	/* a read-write handle on it */
	int fd;
};

FIXTURE_SETUP(core)
{
	self->fd = -1;
	if (access("/dev/wsem", F_OK))
		SKIP(return, "/dev/wsem is missing (module not loaded)");
	snprintf(self->name, sizeof(self->name), "core.%d", getpid());
	self->fd = wsem_open(self->name, O_CREAT | O_EXCL, 0600, 2);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(core)
{
	park_pause_disarm();
	if (self->fd < 0)
		return;
	EXPECT_EQ(0, close(self->fd));
	EXPECT_EQ(0, wsem_unlink(self->name));
}

/* ---------------------------------------------------------------- */
/* Access modes                                                      */

TEST_F(core, read_only_handle_watches_only)
{
	struct pollfd p;
	struct wsem_stat st;
	int ro;

	if (self->fd < 0)
		return;
	ro = open_raw(self->name, O_RDONLY, 0, 0);
	ASSERT_LE(0, ro);

	errno = 0;
	EXPECT_EQ(-1, wsem_acquire(ro, 1));
	EXPECT_EQ(EBADF, errno);
	errno = 0;
	EXPECT_EQ(-1, wsem_tryacquire(ro, 1));
	EXPECT_EQ(EBADF, errno);
	errno = 0;
	EXPECT_EQ(-1, wsem_acquire_timeout(ro, 1, 1000));
	EXPECT_EQ(EBADF, errno);
	errno = 0;
	EXPECT_EQ(-1, wsem_release(ro, 1));
	EXPECT_EQ(EBADF, errno);
	errno = 0;
	EXPECT_EQ(-1, wsem_set_capacity(ro, 5));
	EXPECT_EQ(EBADF, errno);

	/* Nothing changed, and watching works. */
	ASSERT_EQ(0, wsem_stat(ro, &st));
	EXPECT_EQ(2, st.capacity);
	EXPECT_EQ(0, st.used);
	EXPECT_EQ(0, st.held);
	p = (struct pollfd){ .fd = ro, .events = POLLIN };
	EXPECT_EQ(1, poll(&p, 1, 0));
	EXPECT_EQ(POLLIN, p.revents & POLLIN);
	ASSERT_EQ(0, wsem_acquire(self->fd, 2));
	EXPECT_EQ(0, poll(&p, 1, 0));
	EXPECT_EQ(0, close(ro));
}

TEST_F(core, reopen_keeps_the_access_mode)
{
	int ro, ro2, rw2;

	if (self->fd < 0)
		return;
	ro = open_raw(self->name, O_RDONLY, 0, 0);
	ASSERT_LE(0, ro);
	ro2 = wsem_reopen(ro, O_CLOEXEC);
	ASSERT_LE(0, ro2);
	EXPECT_EQ(O_RDONLY, fcntl(ro2, F_GETFL) & O_ACCMODE);
	errno = 0;
	EXPECT_EQ(-1, wsem_acquire(ro2, 1));
	EXPECT_EQ(EBADF, errno);

	rw2 = wsem_reopen(self->fd, O_CLOEXEC);
	ASSERT_LE(0, rw2);
	EXPECT_EQ(O_RDWR, fcntl(rw2, F_GETFL) & O_ACCMODE);
	EXPECT_EQ(0, wsem_acquire(rw2, 1));
	EXPECT_EQ(0, close(rw2));
	EXPECT_EQ(0, close(ro2));
	EXPECT_EQ(0, close(ro));
}

/*
 * By name, a handle that only watches (opened O_RDONLY) needs only read
 * permission, as a wsemfs file opened O_RDONLY does; one that can acquire
 * needs read and write.
 */
TEST_F(core, watching_by_name_needs_read_permission_only)
{
	int status;
	pid_t pid;

	if (self->fd < 0)
		return;
	ASSERT_EQ(0, chmod_sem(self->name, 0644));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int ro, rw, err;

		if (setgid(65534) || setuid(65534))
			_exit(10);
		ro = open_raw(self->name, O_RDONLY, 0, 0);
		rw = open_raw(self->name, O_RDWR, 0, 0);
		err = errno;
		if (ro < 0)
			_exit(11);
		if (rw >= 0 || err != EACCES)
			_exit(12);
		if (wsem_stat(ro, &(struct wsem_stat){ 0 }))
			_exit(13);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status) {
		TH_LOG("child status %d", WEXITSTATUS(status));
	}
}

/* ---------------------------------------------------------------- */
/* epoll before bind                                                 */

TEST_F(core, epoll_added_before_bind_fires_after_it)
{
	struct wsem_open_args o = { .size = sizeof(o) };
	struct epoll_event ev = { .events = EPOLLIN }, out;
	int h, ep;

	if (self->fd < 0)
		return;
	h = open("/dev/wsem", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, h);
	ep = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, ep);
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, h, &ev));
	/* Unbound: in error. */
	ASSERT_EQ(1, epoll_wait(ep, &out, 1, 0));
	EXPECT_EQ(EPOLLERR, out.events & EPOLLERR);

	snprintf(o.name, sizeof(o.name), "%s", self->name);
	ASSERT_EQ(0, ioctl(h, WSEM_IOC_OPEN, &o));
	ASSERT_EQ(0, wsem_acquire(self->fd, 2));
	/* Bound, and nothing free. */
	EXPECT_EQ(0, epoll_wait(ep, &out, 1, 0));

	/* Only a wake-up puts the entry back on epoll's ready list. */
	ASSERT_EQ(0, wsem_release(self->fd, 1));
	ASSERT_EQ(1, epoll_wait(ep, &out, 1, LONG_MS));
	EXPECT_EQ(EPOLLIN, out.events);
	EXPECT_EQ(0, close(ep));
	EXPECT_EQ(0, close(h));
}

/* ---------------------------------------------------------------- */
/* Task work while waiting                                           */

/* The waiters of the task-work test: each a thread with a handle. */
struct tw {
	int fd[2];		/* handles: [0] has the ring, [1] none */
	int pipe[2];		/* [0] is polled through the ring */
	_Atomic int order;	/* grants so far */
	int granted_as[2];	/* which grant each got: 1 or 2 */
	int ret[2];
	int err[2];
	_Atomic pid_t tid0;	/* waiter 0's thread id, once its ring is up */
	struct ring ring;	/* waiter 0's, polling pipe[0] */
	unsigned int cqes;	/* waiter 0's completions once granted */
	int ring_err;		/* io_uring_setup's errno, or 0 */
};

static void *tw_waiter(void *p, int me)
{
	struct tw *t = p;
	struct ring *r = &t->ring;

	if (me == 0) {
		t->ring_err = ring_poll_start(r, t->pipe[0]);
		if (t->ring_err) {
			atomic_store(&t->tid0, -1);
			return NULL;
		}
		atomic_store(&t->tid0, gettid());
	}
	t->ret[me] = wsem_acquire(t->fd[me], 1);
	t->err[me] = errno;
	t->granted_as[me] = atomic_fetch_add(&t->order, 1) + 1;
	if (me == 0) {
		t->cqes = ring_completions(r);
		ring_close(r);
	}
	if (!t->ret[me])
		wsem_release(t->fd[me], 1);
	return NULL;
}

static void *tw_first(void *p)
{
	return tw_waiter(p, 0);
}

static void *tw_second(void *p)
{
	return tw_waiter(p, 1);
}

TEST_F(core, task_work_keeps_the_place_in_the_queue)
{
	struct tw t = { 0 };
	pthread_t th[2];
	long long before;
	int64_t end;
	pid_t tid;

	if (self->fd < 0)
		return;
	ASSERT_EQ(0, pipe2(t.pipe, O_CLOEXEC));
	t.fd[0] = wsem_reopen(self->fd, O_CLOEXEC);
	t.fd[1] = wsem_reopen(self->fd, O_CLOEXEC);
	ASSERT_LE(0, t.fd[0]);
	ASSERT_LE(0, t.fd[1]);
	ASSERT_EQ(0, wsem_acquire(self->fd, 2));

	/* Waiter 0, with a poll pending in its ring, then waiter 1. */
	ASSERT_EQ(0, pthread_create(&th[0], NULL, tw_first, &t));
	while (!(tid = atomic_load(&t.tid0)))
		usleep(1000);
	if (tid < 0) {
		pthread_join(th[0], NULL);
		SKIP(goto out, "io_uring: %s", strerror(t.ring_err));
	}
	ASSERT_EQ(0, wait_waiters(self->fd, 1));
	ASSERT_EQ(0, pthread_create(&th[1], NULL, tw_second, &t));
	ASSERT_EQ(0, wait_waiters(self->fd, 2));

	/*
	 * Readable pipe: the ring's poll completes as task work for waiter
	 * 0 (TIF_NOTIFY_SIGNAL), which runs only on its way back to user
	 * space.  The completion must come while waiter 0 still waits (a
	 * wait that held the task work back could deadlock with whoever
	 * waits for that completion), and it must keep its place.
	 */
	before = nvcsw(tid);
	ASSERT_LE(0, before);
	ASSERT_EQ(1, write(t.pipe[1], "x", 1));
	end = now_ms() + LONG_MS;
	while (!ring_completions(&t.ring) && now_ms() < end)
		usleep(1000);
	EXPECT_EQ(1, ring_completions(&t.ring))
		TH_LOG("the task work did not run while the waiter waited");
	while (nvcsw(tid) == before && now_ms() < end)
		usleep(1000);
	EXPECT_LT(before, nvcsw(tid));
	EXPECT_EQ(0, wait_waiters(self->fd, 2));

	/* One unit: it goes to the head, which must still be waiter 0. */
	ASSERT_EQ(0, wsem_release(self->fd, 1));
	pthread_join(th[0], NULL);
	pthread_join(th[1], NULL);
	EXPECT_EQ(0, t.ret[0]);
	EXPECT_EQ(0, t.ret[1]);
	EXPECT_EQ(1, t.granted_as[0]);
	EXPECT_EQ(2, t.granted_as[1]);
	EXPECT_EQ(1, t.cqes);
out:
	close(t.fd[0]);
	close(t.fd[1]);
	close(t.pipe[0]);
	close(t.pipe[1]);
}

/*
 * A thread parked for its task work that leaves through its signal
 * handler (siglongjmp) instead of restarting its call, and then ends:
 * the place it kept (a parked waiter, with a reference to its task) is
 * freed, without closing the handle.  Test builds count parked waiters
 * (test_parked) and can hold a parked sleeper before it returns
 * (test_park_delay_ms) until a signal is sent to it: the window in which
 * the signal is sent, up to 30 s (it was 3 s: a busy machine could miss
 * it), and it ends when the signal comes.
 */
#define PARK_DELAY_MS	"30000"

/* The thread that leaves, and what it did. */
struct leaver {
	int fd;			/* its handle */
	int pipe[2];		/* [0] is polled through its ring */
	struct ring ring;	/* its ring */
	int ring_err;		/* io_uring_setup's errno, or 0 */
	_Atomic pid_t tid;	/* its id once its ring is up, -1 if not */
	_Atomic int left;	/* it left through the handler */
};

static __thread sigjmp_buf *leave_to;

static void leave_handler(int sig __attribute__((unused)))
{
	siglongjmp(*leave_to, 1);
}

static void *leaver_thread(void *p)
{
	struct leaver *l = p;
	sigjmp_buf jb;

	l->ring_err = ring_poll_start(&l->ring, l->pipe[0]);
	if (l->ring_err) {
		atomic_store(&l->tid, -1);
		return NULL;
	}
	leave_to = &jb;
	if (sigsetjmp(jb, 1))
		atomic_store(&l->left, 1);
	else {
		atomic_store(&l->tid, gettid());
		wsem_acquire(l->fd, 1);
	}
	ring_close(&l->ring);
	return NULL;
}

/*
 * Start @l's thread waiting for 1 through @l->fd, park it (its ring's
 * poll completes) and hold it there; with @grant, release 1 of @fd's
 * while it is away, so that its place is granted.  Then signal it: it
 * leaves through the handler, and ends.  0, or a SKIP reason.
 */
static const char *park_and_leave(struct __test_metadata *_metadata,
				  struct leaver *l, int fd, int base,
				  bool grant)
{
	struct sigaction sa = { .sa_handler = leave_handler };
	int64_t end, signalled;
	pthread_t th;
	pid_t tid;

	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	ASSERT_EQ(0, pthread_create(&th, NULL, leaver_thread, l));
	while (!(tid = atomic_load(&l->tid)))
		usleep(1000);
	if (tid < 0) {
		pthread_join(th, NULL);
		return "io_uring unavailable";
	}
	ASSERT_EQ(0, wait_waiters(fd, 1));
	ASSERT_EQ(0, write_file(PARK_DELAY, PARK_DELAY_MS));
	ASSERT_EQ(1, write(l->pipe[1], "x", 1));
	end = now_ms() + LONG_MS;
	while (parked_count() != base + 1 && now_ms() < end)
		usleep(1000);
	ASSERT_EQ(base + 1, parked_count()) {
		TH_LOG("the waiter did not park");
	}
	if (grant)
		ASSERT_EQ(0, wsem_release(fd, 1));
	signalled = now_ms();
	ASSERT_EQ(0, syscall(SYS_tgkill, getpid(), tid, SIGUSR1));
	ASSERT_EQ(0, pthread_join(th, NULL));
	EXPECT_EQ(1, atomic_load(&l->left)) {
		TH_LOG("it restarted instead of leaving through the handler");
	}
	/* the signal ended the pause, not its 30 s */
	EXPECT_GT(15000, now_ms() - signalled);
	return NULL;
}

static void leaver_init(struct __test_metadata *_metadata, struct leaver *l,
			int fd)
{
	memset(l, 0, sizeof(*l));
	ASSERT_EQ(0, pipe2(l->pipe, O_CLOEXEC));
	l->fd = wsem_reopen(fd, O_CLOEXEC);
	ASSERT_LE(0, l->fd);
}

static void leaver_close(struct leaver *l)
{
	close(l->fd);
	close(l->pipe[0]);
	close(l->pipe[1]);
	signal(SIGUSR1, SIG_DFL);
}

/*
 * Granted while away: the weight is the handle's (SPEC.md), and the
 * place is freed at the next acquire through the handle.
 */
TEST_F(core, granted_place_of_a_thread_that_left_is_freed)
{
	const char *skip;
	struct wsem_stat st;
	struct leaver l;
	int base;

	if (self->fd < 0)
		return;
	base = parked_count();
	if (base < 0 || access(PARK_DELAY, W_OK))
		SKIP(return, "not a test build of the module");
	leaver_init(_metadata, &l, self->fd);
	ASSERT_EQ(0, wsem_acquire(self->fd, 2));
	skip = park_and_leave(_metadata, &l, self->fd, base, true);
	if (skip) {
		leaver_close(&l);
		SKIP(return, "%s", skip);
	}
	ASSERT_EQ(0, wsem_stat(l.fd, &st));
	EXPECT_EQ(1, st.held);
	EXPECT_EQ(0, st.waiters);
	EXPECT_EQ(base + 1, parked_count());
	/* Anyone's acquire through the handle frees it. */
	EXPECT_EQ(-1, wsem_tryacquire(l.fd, 1));
	EXPECT_EQ(EAGAIN, errno);
	EXPECT_EQ(base, parked_count()) {
		TH_LOG("the parked waiter of an ended thread is still there");
	}
	ASSERT_EQ(0, wsem_stat(l.fd, &st));
	EXPECT_EQ(1, st.held);
	EXPECT_EQ(0, wsem_release(l.fd, 1));
	EXPECT_EQ(0, wsem_release(self->fd, 1));
	leaver_close(&l);
}

/*
 * Still queued when it ended: the grant walk that reaches it ends it and
 * frees it, and the weight goes on to whoever is next.
 */
TEST_F(core, queued_place_of_a_thread_that_left_is_freed)
{
	const char *skip;
	struct wsem_stat st;
	struct leaver l;
	int base;

	if (self->fd < 0)
		return;
	base = parked_count();
	if (base < 0 || access(PARK_DELAY, W_OK))
		SKIP(return, "not a test build of the module");
	leaver_init(_metadata, &l, self->fd);
	ASSERT_EQ(0, wsem_acquire(self->fd, 2));
	skip = park_and_leave(_metadata, &l, self->fd, base, false);
	if (skip) {
		leaver_close(&l);
		SKIP(return, "%s", skip);
	}
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(1, st.waiters);
	EXPECT_EQ(0, wsem_release(self->fd, 1));
	EXPECT_EQ(base, parked_count()) {
		TH_LOG("the parked waiter of an ended thread is still there");
	}
	ASSERT_EQ(0, wsem_stat(l.fd, &st));
	EXPECT_EQ(0, st.held);
	EXPECT_EQ(0, st.waiters);
	EXPECT_EQ(1, st.used);
	EXPECT_EQ(0, wsem_release(self->fd, 1));
	leaver_close(&l);
}

/* ---------------------------------------------------------------- */
/* fdinfo                                                            */

TEST_F(core, fdinfo_id_names_the_semaphore)
{
	long long id, id2, other;
	int fd2, anon;

	if (self->fd < 0)
		return;
	fd2 = wsem_open(self->name, 0, 0, 0);
	ASSERT_LE(0, fd2);
	anon = wsem_open_anon(1, 0);
	ASSERT_LE(0, anon);
	id = fdinfo_num(self->fd, "wsem-id");
	id2 = fdinfo_num(fd2, "wsem-id");
	other = fdinfo_num(anon, "wsem-id");
	EXPECT_LE(0, id);
	EXPECT_EQ(id, id2);
	EXPECT_LE(0, other);
	EXPECT_NE(id, other);
	EXPECT_EQ(0, close(anon));
	EXPECT_EQ(0, close(fd2));
}

/* ---------------------------------------------------------------- */
/* One release, many grants                                          */

struct mass {
	int fd[MASS];
	_Atomic int granted;
	int failed;
};

struct mass_arg {
	struct mass *m;
	int i;
};

static void *mass_waiter(void *p)
{
	struct mass_arg *a = p;

	if (wsem_acquire(a->m->fd[a->i], 1))
		a->m->failed++;
	else
		atomic_fetch_add(&a->m->granted, 1);
	return NULL;
}

TEST_F(core, one_release_grants_many)
{
	static struct mass m;
	static struct mass_arg args[MASS];
	pthread_t th[MASS];
	struct wsem_stat st;
	int anon, i;

	if (self->fd < 0)
		return;
	anon = wsem_open_anon(MASS, O_CLOEXEC);
	ASSERT_LE(0, anon);
	ASSERT_EQ(0, wsem_acquire(anon, MASS));
	memset(&m, 0, sizeof(m));
	for (i = 0; i < MASS; i++) {
		m.fd[i] = wsem_reopen(anon, O_CLOEXEC);
		ASSERT_LE(0, m.fd[i]);
		args[i] = (struct mass_arg){ &m, i };
		ASSERT_EQ(0, pthread_create(&th[i], NULL, mass_waiter,
					    &args[i]));
	}
	ASSERT_EQ(0, wait_waiters(anon, MASS));
	ASSERT_EQ(0, wsem_release(anon, MASS));
	for (i = 0; i < MASS; i++)
		pthread_join(th[i], NULL);
	EXPECT_EQ(MASS, atomic_load(&m.granted));
	EXPECT_EQ(0, m.failed);
	ASSERT_EQ(0, wsem_stat(anon, &st));
	EXPECT_EQ(MASS, st.used);
	EXPECT_EQ(0, st.held);
	EXPECT_EQ(0, st.waiters);
	for (i = 0; i < MASS; i++) {
		ASSERT_EQ(0, wsem_stat(m.fd[i], &st));
		EXPECT_EQ(1, st.held);
		EXPECT_EQ(0, close(m.fd[i]));
	}
	ASSERT_EQ(0, wsem_stat(anon, &st));
	EXPECT_EQ(0, st.used);
	EXPECT_EQ(0, close(anon));
}

/* ---------------------------------------------------------------- */
/* The text of a handle                                              */

/*
 * Every kind of handle (of /dev/wsem, a reopen, a wsemfs file) reads its
 * text at any offset and again from the start, with the state of the
 * moment: a monitor keeps one handle and re-reads it.  A text read in
 * pieces is the state of its first piece.
 */
TEST_F(core, text_rereads_on_every_kind_of_handle)
{
	char a[4096], b[4096], val[32], dir[] = "/tmp/wsem-core.XXXXXX";
	char path[96];
	int fds[3], i;
	ssize_t n;

	if (self->fd < 0)
		return;
	fds[0] = self->fd;
	fds[1] = wsem_reopen(self->fd, O_CLOEXEC);
	ASSERT_LE(0, fds[1]);
	ASSERT_NE(NULL, mkdtemp(dir));
	fds[2] = -1;
	/* A mount namespace of our own: the mount goes when we do. */
	if (!unshare(CLONE_NEWNS) &&
	    !mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) &&
	    !mount("wsem", dir, "wsem", 0, NULL)) {
		snprintf(path, sizeof(path), "%s/%s", dir, self->name);
		fds[2] = open(path, O_RDONLY | O_CLOEXEC);
		EXPECT_LE(0, fds[2]);
	}
	for (i = 0; i < 3; i++) {
		if (fds[i] < 0)
			continue;
		memset(a, 0, sizeof(a));
		memset(b, 0, sizeof(b));
		n = pread(fds[i], a, sizeof(a) - 1, 0);
		ASSERT_LT(0, n) {
			TH_LOG("handle %d: pread: %s", i, strerror(errno));
		}
		EXPECT_EQ(0, line_get(a, "used", val, sizeof(val)));
		EXPECT_STREQ("0", val);
		/* The same again, from an offset, with read(2) after lseek. */
		EXPECT_EQ(n - 6, pread(fds[i], b, sizeof(b) - 1, 6));
		EXPECT_STREQ(a + 6, b);
		ASSERT_EQ(0, wsem_acquire(self->fd, 1));
		EXPECT_EQ(0, lseek(fds[i], 0, SEEK_SET)) {
			TH_LOG("handle %d: lseek: %s", i, strerror(errno));
		}
		memset(b, 0, sizeof(b));
		EXPECT_LT(0, read(fds[i], b, sizeof(b) - 1));
		EXPECT_EQ(0, line_get(b, "used", val, sizeof(val)));
		EXPECT_STREQ("1", val);
		/* ... and at the end, nothing. */
		EXPECT_EQ(0, read(fds[i], b, sizeof(b) - 1));
		/* Read in pieces: the state changes between them, not the text. */
		memset(b, 0, sizeof(b));
		EXPECT_EQ(0, lseek(fds[i], 0, SEEK_SET));
		EXPECT_EQ(8, read(fds[i], b, 8));
		ASSERT_EQ(0, wsem_acquire(self->fd, 1));
		EXPECT_LT(0, read(fds[i], b + 8, sizeof(b) - 9));
		EXPECT_EQ(0, line_get(b, "used", val, sizeof(val)));
		EXPECT_STREQ("1", val);
		ASSERT_EQ(0, wsem_release(self->fd, 2));
	}
	EXPECT_EQ(0, close(fds[1]));
	if (fds[2] >= 0)
		EXPECT_EQ(0, close(fds[2]));
	umount2(dir, MNT_DETACH);
	EXPECT_EQ(0, rmdir(dir));
}

TEST_HARNESS_MAIN
