// SPDX-License-Identifier: GPL-2.0
/*
 * Limits and isolation under attack (issue 5, item 5).
 *
 *  - An unprivileged user (nobody) fills an IPC namespace: named and
 *    anonymous semaphores count alike, the last it gets is an eighth short
 *    of max_sems_per_ns (the rest is the administrator's reserve),
 *    ENOSPC leaves nothing behind, freeing one makes room for exactly one,
 *    nobody cannot raise the limit, and other namespaces are unaffected.
 *    A limit lowered below what a namespace holds keeps what exists.
 *  - Kernel memory is charged to the creator's memory cgroup: it grows
 *    with what is created, and comes back when the namespace dies.  In a
 *    cgroup with a small limit creating fails with ENOMEM, nothing is
 *    half-created, and everything outside goes on working.  The test
 *    uses cgroup1 where the kernel has it (6.1), whose memory.oom_control
 *    fails the allocation quietly, else cgroup2's memory.max.  There the
 *    charge goes to the memcg OOM killer first; the only task in the
 *    cgroup has oom_score_adj -1000, so it finds nobody to kill and the
 *    allocation fails, without a report (the kernel dumps one only for a
 *    victim, or for a global OOM).  A report would fail the harness's
 *    dmesg check.
 *  - Root of a user namespace holding a handle to a host semaphore (by
 *    inheritance) is not its owner: CAP_IPC_OWNER counts in the
 *    semaphore's user namespace only, whether or not it also has an IPC
 *    namespace of its own.  The handle still works for what a handle is.
 *  - A namespace is alive while anything refers to it (here an nsfs file):
 *    its names stay, and a process that joins it sees them; when the last
 *    reference goes they go, and a new namespace sees nothing.
 *  - queued_weight is a sum of u64 weights: it must not wrap.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <wsem.h>

#include "kselftest_harness.h"
#include "util.h"

#define NOBODY		65534
#define MSEC		1000000LL
#define LIMIT_PARAM	"/sys/module/wsem/parameters/max_sems_per_ns"
#define USER_PARAM	"/sys/module/wsem/parameters/max_sems_per_user"
#define CG2		"/sys/fs/cgroup"
#define MEMCG_MARGIN	(1 << 20)	/* bytes a limited cgroup may use */
#define MEMCG_MAX_SEMS	200000		/* bound of the ENOMEM loop */
#define MEMCG_MAX_ANON	4000		/* ... and of the anonymous one */
#define MEMCG_POOL	3600		/* handles opened before the cgroup */
#define CHARGE_SEMS	800		/* named semaphores of the charge test */
#define CHARGE_ANON	100		/* ... and anonymous ones */

/* The value of "key N" in a cgroup's memory.stat, or -1. */
static long long memstat(const char *cg, const char *key)
{
	char path[256], buf[8192], *p;
	size_t klen = strlen(key);

	snprintf(path, sizeof(path), "%s/memory.stat", cg);
	if (read_file(path, buf, sizeof(buf)))
		return -1;
	for (p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (!strncmp(p, key, klen) && p[klen] == ' ')
			return strtoll(p + klen + 1, NULL, 10);
	}
	return -1;
}

static int become_nobody(void)
{
	if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY))
		return -1;
	return 0;
}

/* Create semaphore @name with raw ioctls: no library in between. */
static int create_on(int fd, const char *name, uint64_t flags)
{
	struct wsem_open_args o = {
		.size = sizeof(o), .flags = flags, .capacity = 1, .mode = 0600,
	};

	if (name)
		snprintf(o.name, sizeof(o.name), "%s", name);
	return ioctl(fd, WSEM_IOC_OPEN, &o);
}

/* Fork; the child runs @fn(@arg) and exits with its return value. */
static pid_t run(int (*fn)(void *), void *arg)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(fn(arg));
	return pid;
}

static int wait_exit(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Results a child leaves in shared memory. */
struct report {
	int step;		/* the first check that failed, 0 if none */
	int err;		/* errno there */
	long long n[8];		/* numbers for the log */
	char what[128];
};

static struct report *rep;

#define CHILD_CHECK(cond, stepno) do {					\
	if (!(cond)) {							\
		rep->step = (stepno);					\
		rep->err = errno;					\
		snprintf(rep->what, sizeof(rep->what), "%s", #cond);	\
		return 1;						\
	}								\
} while (0)

FIXTURE(limits) {
	/* max_sems_per_ns as found, restored by the teardown if changed */
	char old_limit[32];
	bool limit_changed;
	/* max_sems_per_user likewise */
	char old_user_limit[32];
	bool user_limit_changed;
	/* setup done: false after a SKIP, so body and teardown do nothing */
	bool ready;
};

static int set_limit(FIXTURE_DATA(limits) *self, long long limit)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%lld", limit);
	self->limit_changed = true;
	return write_file(LIMIT_PARAM, buf);
}

static int set_user_limit(FIXTURE_DATA(limits) *self, long long limit)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%lld", limit);
	self->user_limit_changed = true;
	return write_file(USER_PARAM, buf);
}

FIXTURE_SETUP(limits)
{
	if (access("/dev/wsem", F_OK))
		SKIP(return, "/dev/wsem is missing (module not loaded)");
	if (geteuid() != 0)
		SKIP(return, "needs root");
	ASSERT_EQ(0, read_file(LIMIT_PARAM, self->old_limit,
			       sizeof(self->old_limit)));
	ASSERT_EQ(0, read_file(USER_PARAM, self->old_user_limit,
			       sizeof(self->old_user_limit)));
	rep = mmap(NULL, sizeof(*rep), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, rep);
	memset(rep, 0, sizeof(*rep));
	self->ready = true;
}

FIXTURE_TEARDOWN(limits)
{
	if (self->limit_changed)
		EXPECT_EQ(0, write_file(LIMIT_PARAM, self->old_limit));
	if (self->user_limit_changed)
		EXPECT_EQ(0, write_file(USER_PARAM, self->old_user_limit));
}

/* ---------------------------------------------------------------- */
/* Namespace limit                                                   */

struct fill {
	long long limit;	/* max_sems_per_ns */
	int go[2];		/* the test closes go[1]: the child may exit */
	int ready[2];		/* the child closes ready[1] when full */
};

/*
 * As nobody, in a fresh IPC namespace: a quarter of the limit anonymous
 * (kept open), the rest named up to the unprivileged share of the limit,
 * then everything must be ENOSPC.
 */
static int nobody_fill(void *p)
{
	struct fill *f = p;
	long long anon = f->limit / 4, named = 0, i;
	struct rlimit rl = { f->limit + 64, f->limit + 64 };
	char name[WSEM_NAME_MAX];
	int *fds, fd, one;

	close(f->go[1]);
	close(f->ready[0]);
	fds = calloc(anon + 1, sizeof(*fds));
	CHILD_CHECK(fds, 1);
	CHILD_CHECK(!setrlimit(RLIMIT_NOFILE, &rl), 2);
	CHILD_CHECK(!unshare(CLONE_NEWIPC), 3);
	CHILD_CHECK(!become_nobody(), 4);

	/* nobody cannot raise the limit */
	errno = 0;
	CHILD_CHECK(write_file(LIMIT_PARAM, "100000") && errno == EACCES, 5);
	errno = 0;
	CHILD_CHECK(write_file(USER_PARAM, "100000") && errno == EACCES, 5);

	for (i = 0; i < anon; i++) {
		fds[i] = wsem_open_anon(1, O_CLOEXEC);
		CHILD_CHECK(fds[i] >= 0, 6);
	}
	for (;;) {
		snprintf(name, sizeof(name), "fill.%lld", named);
		fd = wsem_open(name, O_CREAT | O_EXCL | O_CLOEXEC, 0600, 1);
		if (fd < 0)
			break;
		close(fd);
		named++;
		CHILD_CHECK(named <= f->limit, 7);
	}
	rep->n[0] = anon;
	rep->n[1] = named;
	CHILD_CHECK(errno == ENOSPC, 8);
	CHILD_CHECK(anon + named == f->limit - f->limit / 8, 9);
	/* Nothing of the failed call is left. */
	errno = 0;
	CHILD_CHECK(wsem_open(name, O_CLOEXEC, 0, 0) < 0 && errno == ENOENT,
		    10);
	CHILD_CHECK(wsem_list(NULL, 0) == named, 11);
	errno = 0;
	CHILD_CHECK(wsem_open_anon(1, O_CLOEXEC) < 0 && errno == ENOSPC, 12);
	/* An existing one still opens: opening does not count. */
	fd = wsem_open("fill.0", O_CLOEXEC, 0, 0);
	CHILD_CHECK(fd >= 0, 13);
	CHILD_CHECK(!wsem_acquire(fd, 1) && !close(fd), 14);
	/* Unlinking one makes room for one. */
	CHILD_CHECK(!wsem_unlink("fill.0"), 15);
	one = wsem_open("again", O_CREAT | O_EXCL | O_CLOEXEC, 0600, 1);
	CHILD_CHECK(one >= 0 && !close(one), 16);
	errno = 0;
	CHILD_CHECK(wsem_open("again2", O_CREAT | O_CLOEXEC, 0600, 1) < 0 &&
		    errno == ENOSPC, 17);
	/* So does the last close of an anonymous one. */
	CHILD_CHECK(!close(fds[0]), 18);
	fds[0] = wsem_open_anon(1, O_CLOEXEC);
	CHILD_CHECK(fds[0] >= 0, 19);
	errno = 0;
	CHILD_CHECK(wsem_open_anon(1, O_CLOEXEC) < 0 && errno == ENOSPC, 20);

	/* Stay, full, while the test looks at other namespaces. */
	close(f->ready[1]);
	CHILD_CHECK(read(f->go[0], &one, 1) == 0, 21);
	return 0;
}

static int fresh_ns_creates(void *p)
{
	int fd;

	(void)p;
	CHILD_CHECK(!unshare(CLONE_NEWIPC), 1);
	CHILD_CHECK(!become_nobody(), 2);
	fd = wsem_open("other", O_CREAT | O_EXCL | O_CLOEXEC, 0600, 1);
	CHILD_CHECK(fd >= 0, 3);
	CHILD_CHECK(wsem_list(NULL, 0) == 1, 4);
	return 0;
}

TEST_F(limits, nobody_fills_a_namespace)
{
	struct fill f;
	char name[WSEM_NAME_MAX], c;
	long long limit;
	pid_t pid, other;
	int fd;

	if (!self->ready)
		return;
	limit = strtoll(self->old_limit, NULL, 10);
	if (limit < 8 || limit > 4096) {
		/* Something else set it: use the default for this test. */
		limit = 1024;
		ASSERT_EQ(0, set_limit(self, limit));
	}
	/* The namespace's limit, not nobody's own, is what this fills. */
	ASSERT_EQ(0, set_user_limit(self, limit));
	f.limit = limit;
	ASSERT_EQ(0, pipe2(f.go, O_CLOEXEC));
	ASSERT_EQ(0, pipe2(f.ready, O_CLOEXEC));
	pid = run(nobody_fill, &f);
	ASSERT_LT(0, pid);
	close(f.go[0]);
	close(f.ready[1]);
	/* EOF: the child is full (or failed and exited). */
	EXPECT_EQ(0, read(f.ready[0], &c, 1));

	/* Meanwhile: this namespace and a new one are not affected. */
	snprintf(name, sizeof(name), "limits.host.%d", getpid());
	fd = wsem_open(name, O_CREAT | O_EXCL | O_CLOEXEC, 0600, 1);
	EXPECT_LE(0, fd);
	EXPECT_EQ(0, wsem_acquire(fd, 1));
	EXPECT_EQ(0, close(fd));
	EXPECT_EQ(0, wsem_unlink(name));
	other = run(fresh_ns_creates, NULL);
	ASSERT_LT(0, other);
	EXPECT_EQ(0, wait_exit(other));

	close(f.go[1]);
	EXPECT_EQ(0, wait_exit(pid)) {
		TH_LOG("child check %d (%s) failed: %s", rep->step, rep->what,
		       strerror(rep->err));
	}
	TH_LOG("nobody: %lld anonymous + %lld named = limit %lld less an "
	       "eighth, then ENOSPC", rep->n[0], rep->n[1], limit);
	EXPECT_EQ(0, close(f.ready[0]));
}

/* ---------------------------------------------------------------- */
/* Per-user limit                                                    */

#define USER_LIMIT	8

/* As uid *@p: create named "u.UID.N" until ENOSPC; how many in rep->n[0]. */
static int user_fill(void *p)
{
	uid_t uid = *(uid_t *)p;
	char name[WSEM_NAME_MAX];
	long long n = 0;
	int fd;

	CHILD_CHECK(!setgroups(0, NULL) && !setgid(uid) && !setuid(uid), 1);
	for (;;) {
		snprintf(name, sizeof(name), "u.%u.%lld", uid, n);
		fd = wsem_open(name, O_CREAT | O_EXCL | O_CLOEXEC, 0600, 1);
		if (fd < 0)
			break;
		close(fd);
		CHILD_CHECK(++n <= USER_LIMIT, 2);
	}
	rep->n[0] = n;
	CHILD_CHECK(errno == ENOSPC, 3);
	/* Anonymous ones count alike. */
	errno = 0;
	CHILD_CHECK(wsem_open_anon(1, O_CLOEXEC) < 0 && errno == ENOSPC, 4);
	return 0;
}

/* As uid *@p, full: unlinking one of its own makes room for one. */
static int user_room(void *p)
{
	uid_t uid = *(uid_t *)p;
	char name[WSEM_NAME_MAX];
	int fd;

	CHILD_CHECK(!setgroups(0, NULL) && !setgid(uid) && !setuid(uid), 1);
	snprintf(name, sizeof(name), "u.%u.0", uid);
	CHILD_CHECK(!wsem_unlink(name), 2);
	fd = wsem_open_anon(1, O_CLOEXEC);
	CHILD_CHECK(fd >= 0, 3);
	errno = 0;
	CHILD_CHECK(wsem_open_anon(1, O_CLOEXEC) < 0 && errno == ENOSPC, 4);
	return 0;
}

/*
 * One user cannot use up a namespace: it stops at max_sems_per_user, while
 * another user, and root (CAP_SYS_RESOURCE passes), go on creating.
 */
TEST_F(limits, one_user_cannot_use_up_a_namespace)
{
	uid_t nobody = NOBODY, other = NOBODY - 1;
	char name[WSEM_NAME_MAX];
	int i, fd;

	if (!self->ready)
		return;
	ASSERT_EQ(0, set_limit(self, 4 * USER_LIMIT));
	ASSERT_EQ(0, set_user_limit(self, USER_LIMIT));
	ASSERT_EQ(0, unshare(CLONE_NEWIPC));

	EXPECT_EQ(0, wait_exit(run(user_fill, &nobody))) {
		TH_LOG("nobody: check %d (%s): %s", rep->step, rep->what,
		       strerror(rep->err));
	}
	EXPECT_EQ(USER_LIMIT, rep->n[0]);
	memset(rep, 0, sizeof(*rep));
	EXPECT_EQ(0, wait_exit(run(user_fill, &other)));
	EXPECT_EQ(USER_LIMIT, rep->n[0]);

	/* Root passes its own limit (not the namespace's). */
	for (i = 0; i < USER_LIMIT + 2; i++) {
		snprintf(name, sizeof(name), "root.%d", i);
		fd = wsem_open(name, O_CREAT | O_EXCL | O_CLOEXEC, 0600, 1);
		ASSERT_LE(0, fd);
		EXPECT_EQ(0, close(fd));
	}
	fd = wsem_open_anon(1, O_CLOEXEC);
	EXPECT_LE(0, fd);
	EXPECT_EQ(0, close(fd));

	memset(rep, 0, sizeof(*rep));
	EXPECT_EQ(0, wait_exit(run(user_room, &nobody))) {
		TH_LOG("nobody: check %d (%s): %s", rep->step, rep->what,
		       strerror(rep->err));
	}
	EXPECT_EQ(3 * USER_LIMIT + 1, wsem_list(NULL, 0));
}

/* A limit lowered below what a namespace has keeps what it has. */
TEST_F(limits, lowered_limit_keeps_what_exists)
{
	char name[WSEM_NAME_MAX];
	int fd[5], i, extra;

	if (!self->ready)
		return;
	ASSERT_EQ(0, unshare(CLONE_NEWIPC));
	for (i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "low.%d", i);
		fd[i] = wsem_open(name, O_CREAT | O_EXCL | O_CLOEXEC, 0600, 2);
		ASSERT_LE(0, fd[i]);
	}
	ASSERT_EQ(0, set_limit(self, 3));
	errno = 0;
	EXPECT_EQ(-1, wsem_open("low.x", O_CREAT | O_CLOEXEC, 0600, 1));
	EXPECT_EQ(ENOSPC, errno);
	errno = 0;
	EXPECT_EQ(-1, wsem_open_anon(1, O_CLOEXEC));
	EXPECT_EQ(ENOSPC, errno);
	/* What exists works, and opens again by name. */
	for (i = 0; i < 5; i++) {
		EXPECT_EQ(0, wsem_acquire(fd[i], 2));
		EXPECT_EQ(0, close(fd[i]));
	}
	fd[0] = wsem_open("low.4", O_CLOEXEC, 0, 0);
	EXPECT_LE(0, fd[0]);
	EXPECT_EQ(0, close(fd[0]));
	/* Room comes back only below the new limit. */
	EXPECT_EQ(0, wsem_unlink("low.0"));
	EXPECT_EQ(0, wsem_unlink("low.1"));
	errno = 0;
	EXPECT_EQ(-1, wsem_open_anon(1, O_CLOEXEC));
	EXPECT_EQ(ENOSPC, errno);
	EXPECT_EQ(0, wsem_unlink("low.2"));
	extra = wsem_open_anon(1, O_CLOEXEC);
	EXPECT_LE(0, extra);
	EXPECT_EQ(0, close(extra));
	EXPECT_EQ(2, wsem_list(NULL, 0));
}

/* ---------------------------------------------------------------- */
/* Per-user limit across user namespaces                             */

#define SUB_NS_LIMIT	40	/* max_sems_per_ns of the tests below */
#define SUB_USER_LIMIT	10	/* max_sems_per_user */
#define SUB_RESERVE	(SUB_NS_LIMIT / 8)	/* kept for the administrator */
#define SUB_OWNER	1000	/* owns the user namespace */
#define SUB_BASE	100000	/* its subordinate ids, as /etc/subuid's */
#define SUB_IDS		4	/* ids 1.. of the namespace that create */
#define OTHER_USER	2000

/* Create named "q.TAG.N" until one fails; how many. */
static long long create_until_refused(const char *tag)
{
	char name[WSEM_NAME_MAX];
	long long n = 0;
	int fd;

	for (;;) {
		snprintf(name, sizeof(name), "q.%s.%lld", tag, n);
		fd = wsem_open(name, O_CREAT | O_EXCL | O_CLOEXEC, 0600, 1);
		if (fd < 0)
			return n;
		close(fd);
		if (++n > SUB_NS_LIMIT)
			return n;
	}
}

/* As uid *@p: create until refused, into rep->n[0]; refused with ENOSPC. */
static int fill_as(void *p)
{
	uid_t uid = *(uid_t *)p;
	char tag[32];

	CHILD_CHECK(!setgroups(0, NULL) && !setgid(uid) && !setuid(uid), 1);
	snprintf(tag, sizeof(tag), "u%u", uid);
	errno = 0;
	rep->n[0] = create_until_refused(tag);
	CHILD_CHECK(errno == ENOSPC, 2);
	errno = 0;
	CHILD_CHECK(wsem_open_anon(1, O_CLOEXEC) < 0 && errno == ENOSPC, 3);
	return 0;
}

struct subids {
	int ready[2];		/* the child writes a byte once unshared */
	int mapped[2];		/* the test writes a byte once it mapped it */
};

/*
 * Inside the user namespace: ids 1..SUB_IDS, each in a process of its
 * own, create until refused; rep->n[id] is how many each got.
 */
static int subid_creates(void *p)
{
	unsigned int id = *(unsigned int *)p;
	char tag[32];

	CHILD_CHECK(!setresgid(id, id, id) && !setresuid(id, id, id), 20);
	snprintf(tag, sizeof(tag), "sub%u", id);
	errno = 0;
	rep->n[id] = create_until_refused(tag);
	CHILD_CHECK(errno == ENOSPC, 21);
	errno = 0;
	CHILD_CHECK(wsem_open_anon(1, O_CLOEXEC) < 0 && errno == ENOSPC, 22);
	return 0;
}

/*
 * As SUB_OWNER: a user namespace of its own, which the test (privileged,
 * as newuidmap is) maps to SUB_BASE.. as a rootless container's is; then
 * its ids 1..SUB_IDS create in the test's IPC namespace.
 */
static int subid_owner(void *p)
{
	struct subids *s = p;
	unsigned int id;
	char c = 0;

	close(s->ready[0]);
	close(s->mapped[1]);
	CHILD_CHECK(!setgroups(0, NULL) && !setgid(SUB_OWNER) &&
		    !setuid(SUB_OWNER), 1);
	CHILD_CHECK(!prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), 2);
	if (unshare(CLONE_NEWUSER)) {
		rep->step = -1;		/* no user namespaces: skip */
		rep->err = errno;
		return 0;
	}
	CHILD_CHECK(write(s->ready[1], &c, 1) == 1, 3);
	CHILD_CHECK(read(s->mapped[0], &c, 1) == 1, 4);
	for (id = 1; id <= SUB_IDS; id++)
		if (wait_exit(run(subid_creates, &id)))
			return 1;	/* its check is in rep */
	return 0;
}

static int map_ids(pid_t pid)
{
	static const char *const files[] = { "uid_map", "gid_map" };
	char path[64], map[64];
	unsigned int i;

	snprintf(map, sizeof(map), "0 %d 65536", SUB_BASE);
	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "/proc/%d/%s", pid, files[i]);
		if (write_file(path, map))
			return -1;
	}
	return 0;
}

/*
 * A user with subordinate ids (a rootless container's 65,536) cannot
 * multiply its per-user limit by them: what the ids of a user namespace
 * it owns create counts against it, there and in the namespace above.
 * So the ids together get max_sems_per_user, the owner itself then gets
 * nothing more, and another user still gets its full share.
 */
TEST_F(limits, subordinate_ids_count_against_their_owner)
{
	uid_t owner = SUB_OWNER, other = OTHER_USER;
	struct subids s;
	long long sum = 0;
	unsigned int id;
	pid_t pid;
	char c;

	if (!self->ready)
		return;
	ASSERT_EQ(0, set_limit(self, SUB_NS_LIMIT));
	ASSERT_EQ(0, set_user_limit(self, SUB_USER_LIMIT));
	ASSERT_EQ(0, unshare(CLONE_NEWIPC));
	ASSERT_EQ(0, pipe2(s.ready, O_CLOEXEC));
	ASSERT_EQ(0, pipe2(s.mapped, O_CLOEXEC));
	pid = run(subid_owner, &s);
	ASSERT_LT(0, pid);
	close(s.ready[1]);
	close(s.mapped[0]);
	if (read(s.ready[0], &c, 1) == 1) {
		EXPECT_EQ(0, map_ids(pid));
		EXPECT_EQ(1, write(s.mapped[1], &c, 1));
	}
	EXPECT_EQ(0, wait_exit(pid)) {
		TH_LOG("check %d (%s): %s", rep->step, rep->what,
		       strerror(rep->err));
	}
	if (rep->step < 0)
		SKIP(return, "user namespaces: %s", strerror(rep->err));
	for (id = 1; id <= SUB_IDS; id++)
		sum += rep->n[id];
	TH_LOG("ids 1-%d of uid %d's user namespace: %lld, %lld, %lld, %lld",
	       SUB_IDS, SUB_OWNER, rep->n[1], rep->n[2], rep->n[3], rep->n[4]);
	EXPECT_EQ(SUB_USER_LIMIT, rep->n[1]);
	EXPECT_EQ(SUB_USER_LIMIT, sum);

	/* The owner, outside, has used up its share through them. */
	memset(rep, 0, sizeof(*rep));
	EXPECT_EQ(0, wait_exit(run(fill_as, &owner))) {
		TH_LOG("uid %d: check %d (%s): %s", owner, rep->step, rep->what,
		       strerror(rep->err));
	}
	EXPECT_EQ(0, rep->n[0]);

	/* Another user is not affected. */
	memset(rep, 0, sizeof(*rep));
	EXPECT_EQ(0, wait_exit(run(fill_as, &other))) {
		TH_LOG("uid %d: check %d (%s): %s", other, rep->step, rep->what,
		       strerror(rep->err));
	}
	EXPECT_EQ(SUB_USER_LIMIT, rep->n[0]);
	EXPECT_EQ(2 * SUB_USER_LIMIT, wsem_list(NULL, 0));
}

/*
 * Ordinary users together fill a namespace only up to max_sems_per_ns
 * less an eighth of it: the rest is kept for callers with CAP_SYS_RESOURCE
 * over the namespace, so that an administrator can always still create.
 * max_sems_per_ns bounds the administrator too.
 */
TEST_F(limits, administrator_keeps_a_reserve)
{
	long long got = 0, root;
	unsigned int i;
	uid_t uid;
	int fd;

	if (!self->ready)
		return;
	ASSERT_EQ(0, set_limit(self, SUB_NS_LIMIT));
	ASSERT_EQ(0, set_user_limit(self, SUB_USER_LIMIT));
	ASSERT_EQ(0, unshare(CLONE_NEWIPC));
	for (i = 0; got < SUB_NS_LIMIT && i < SUB_NS_LIMIT; i++) {
		uid = OTHER_USER + i;
		memset(rep, 0, sizeof(*rep));
		EXPECT_EQ(0, wait_exit(run(fill_as, &uid))) {
			TH_LOG("uid %d: check %d (%s): %s", uid, rep->step,
			       rep->what, strerror(rep->err));
		}
		got += rep->n[0];
		if (!rep->n[0])
			break;
	}
	TH_LOG("%u users created %lld of %d", i, got, SUB_NS_LIMIT);
	EXPECT_EQ(SUB_NS_LIMIT - SUB_RESERVE, got);
	EXPECT_EQ(0, rep->n[0]);

	/* Root still can, up to max_sems_per_ns and no further. */
	root = create_until_refused("root");
	EXPECT_EQ(ENOSPC, errno);
	EXPECT_EQ(SUB_RESERVE, root);
	errno = 0;
	fd = wsem_open_anon(1, O_CLOEXEC);
	EXPECT_EQ(-1, fd);
	EXPECT_EQ(ENOSPC, errno);
	EXPECT_EQ(SUB_NS_LIMIT, wsem_list(NULL, 0));
}

/* ---------------------------------------------------------------- */
/* Per-user counts are freed                                         */

#define NODES_PARAM	"/sys/module/wsem/parameters/test_quota_nodes"
#define NODE_USERS	50	/* distinct euids */
#define NODE_UID	30000	/* the first */

/*
 * Per-user counts in memory, all namespaces (a test build's knob), once
 * nothing else changes them for a second: a dying namespace of a test
 * before may still be letting go of its names.
 */
static long long settled_nodes(void)
{
	long long n = read_num(NODES_PARAM), was;
	int i;

	for (i = 0; i < 10; i++) {
		usleep(1200000);
		was = n;
		n = read_num(NODES_PARAM);
		if (n == was)
			break;
	}
	return n;
}

/*
 * A user's count in a namespace is freed when the last semaphore charged
 * to it goes, named or anonymous: users that come and go (a subuid range)
 * leave no memory behind.
 */
TEST_F(limits, user_counts_freed_at_zero)
{
	long long before, n;
	int fd[NODE_USERS], named, i;

	if (!self->ready)
		return;
	ASSERT_EQ(0, access(NODES_PARAM, R_OK)) {
		TH_LOG("%s: a make check build has it", NODES_PARAM);
	}
	ASSERT_EQ(0, unshare(CLONE_NEWIPC));
	before = settled_nodes();
	ASSERT_LE(0, before);
	for (i = 0; i < NODE_USERS; i++) {
		ASSERT_EQ(0, seteuid(NODE_UID + i));
		fd[i] = wsem_open_anon(1, O_CLOEXEC);
		ASSERT_EQ(0, seteuid(0));
		ASSERT_LE(0, fd[i]);
	}
	/* One more, named, by the first user. */
	ASSERT_EQ(0, seteuid(NODE_UID));
	named = wsem_open("nodes", O_CREAT | O_EXCL | O_CLOEXEC, 0600, 1);
	ASSERT_EQ(0, seteuid(0));
	ASSERT_LE(0, named);
	n = read_num(NODES_PARAM);
	EXPECT_LE(before + NODE_USERS, n);

	for (i = 0; i < NODE_USERS; i++)
		EXPECT_EQ(0, close(fd[i]));
	/* The first user still has its named one: its count stays. */
	n = read_num(NODES_PARAM);
	EXPECT_GE(before + 1, n) {
		TH_LOG("%lld counts before, %lld after %d users closed all "
		       "but one semaphore", before, n, NODE_USERS);
	}
	EXPECT_LE(before + 1, n);
	/* Unlinked, open: still charged. */
	EXPECT_EQ(0, wsem_unlink("nodes"));
	EXPECT_EQ(before + 1, read_num(NODES_PARAM));
	EXPECT_EQ(0, close(named));
	n = read_num(NODES_PARAM);
	EXPECT_GE(before, n) {
		TH_LOG("%lld counts before, %lld after", before, n);
	}
}

/* ---------------------------------------------------------------- */
/* Memory cgroups                                                    */

/* Pin everything this process has, so that it never faults again. */
static void touch_stack(void)
{
	volatile char buf[128 * 1024];
	size_t i;

	for (i = 0; i < sizeof(buf); i += 4096)
		buf[i] = 1;
}

struct memcg {
	char dir[256];		/* the limited cgroup */
	bool v1;		/* a cgroup1 hierarchy (else cgroup2) */
};

/* What a child in the limited cgroup did, attempt by attempt. */
struct fill_log {
	uint32_t done;			/* the child is through: check now */
	long long tries;		/* named creations attempted */
	long long first;		/* index of the first failure */
	long long in_ioctl;		/* ENOMEM from the ioctl */
	long long anon_tries, anon_enomem;
	long long other;		/* any other failure */
	int other_err;
	uint8_t ok[MEMCG_MAX_SEMS / 8];	/* bit i: "mem.i" was created */
};

static struct fill_log *flog;

static bool made(long long i)
{
	return flog->ok[i / 8] & (1 << (i % 8));
}

/*
 * The filler's handles, opened before it joins the limited cgroup.  At
 * the limit an open(2) of /dev/wsem would fail in the VFS's own file
 * allocation, which (cgroup2 has no oom_control) runs the memcg OOM killer
 * and logs a report (seen in the debug lane, now and then); what is
 * tested is wsem's allocations, which must fail with ENOMEM quietly.
 */
static int memcg_pool[MEMCG_POOL];
static int memcg_pool_left;

static int pool_fd(void)
{
	if (!memcg_pool_left) {
		errno = EMFILE;
		return -1;
	}
	return memcg_pool[--memcg_pool_left];
}

/* One named creation, "mem.@i", on a handle of the pool; 0, or the errno. */
static int fill_one(long long i)
{
	char name[WSEM_NAME_MAX];
	int fd, err = 0;

	snprintf(name, sizeof(name), "mem.%lld", i);
	fd = pool_fd();
	if (fd < 0) {
		err = errno;
	} else {
		if (create_on(fd, name, WSEM_OPEN_CREAT | WSEM_OPEN_EXCL)) {
			err = errno;
			flog->in_ioctl += err == ENOMEM;
		} else {
			flog->ok[i / 8] |= 1 << (i % 8);
		}
		close(fd);
	}
	if (err && err != ENOMEM) {
		flog->other++;
		flog->other_err = err;
	}
	return err;
}

struct filler {
	struct memcg *m;
	int go[2];		/* EOF on go[0]: exit */
};

/*
 * In the limited cgroup and an IPC namespace of its own: create named
 * semaphores until one fails, go on for a while at the limit (memory that
 * RCU frees lets some through), try anonymous ones, then wait to be let
 * go.  Must fault no page once in: at a cgroup1 limit with the OOM killer
 * off, a faulting task sleeps until memory is freed.
 */
static int memcg_fill(void *p)
{
	struct rlimit rl = { MEMCG_MAX_ANON + 128, MEMCG_MAX_ANON + 128 };
	struct filler *f = p;
	char path[300], c;
	long long i;
	int fd;

	close(f->go[1]);
	/* A file table big enough already: growing it would allocate. */
	CHILD_CHECK(!setrlimit(RLIMIT_NOFILE, &rl), 6);
	CHILD_CHECK(dup2(0, MEMCG_MAX_ANON + 64) > 0, 7);
	close(MEMCG_MAX_ANON + 64);
	CHILD_CHECK(!mlockall(MCL_CURRENT | MCL_FUTURE), 1);
	touch_stack();
	for (i = 0; i < MEMCG_POOL; i++) {
		memcg_pool[i] = open("/dev/wsem", O_RDWR | O_CLOEXEC);
		CHILD_CHECK(memcg_pool[i] >= 0, 8);
	}
	memcg_pool_left = MEMCG_POOL;
	if (!f->m->v1)
		CHILD_CHECK(!write_file("/proc/self/oom_score_adj", "-1000"), 2);
	snprintf(path, sizeof(path), "%s/cgroup.procs", f->m->dir);
	CHILD_CHECK(!write_file(path, "0"), 3);
	CHILD_CHECK(!unshare(CLONE_NEWIPC), 4);

	flog->first = -1;
	for (i = 0; i < MEMCG_MAX_SEMS; i++) {
		if (flog->first >= 0 && i - flog->first > 300)
			break;
		if (fill_one(i) && flog->first < 0)
			flog->first = i;
	}
	flog->tries = i;
	/* Anonymous ones, kept open, until they fail too (and a bit more). */
	for (i = 0; i < MEMCG_MAX_ANON && flog->anon_enomem < 20; i++) {
		flog->anon_tries++;
		fd = pool_fd();
		if (fd >= 0 && !create_on(fd, NULL, WSEM_OPEN_ANON))
			continue;
		flog->anon_enomem += errno == ENOMEM;
		if (errno != ENOMEM) {
			flog->other++;
			flog->other_err = errno;
		}
		if (fd >= 0)
			close(fd);
	}
	__atomic_store_n(&flog->done, 1, __ATOMIC_SEQ_CST);
	CHILD_CHECK(read(f->go[0], &c, 1) == 0, 5);
	return 0;
}

/*
 * Outside the cgroup, in the filler's namespace: exactly the names it
 * created exist.  Returns how many are missing or extra.
 */
static int check_filled(void *p)
{
	char name[WSEM_NAME_MAX];
	long long i, n = 0, bad = 0;
	int fd;

	CHILD_CHECK(!setns(*(int *)p, CLONE_NEWIPC), 1);
	for (i = 0; i < flog->tries; i++) {
		snprintf(name, sizeof(name), "mem.%lld", i);
		fd = wsem_open(name, O_CLOEXEC, 0, 0);
		if ((fd >= 0) != made(i) && bad++ < 3)
			snprintf(rep->what, sizeof(rep->what),
				 "\"%s\": %s, but %s", name,
				 made(i) ? "created" : "failed",
				 fd >= 0 ? "exists" : strerror(errno));
		if (fd >= 0)
			close(fd);
		n += made(i);
	}
	rep->n[0] = n;
	rep->n[1] = wsem_list(NULL, 0);
	return bad || rep->n[1] != n;
}

/* Mount a cgroup1 memory hierarchy at @mnt; 0 or errno. */
static int mount_v1(const char *mnt)
{
	if (mkdir(mnt, 0700) && errno != EEXIST)
		return errno;
	if (mount("wsem-memcg", mnt, "cgroup", 0, "memory")) {
		int err = errno;

		rmdir(mnt);
		return err;
	}
	return 0;
}

/* Set up the limited cgroup: cgroup1 if possible, else cgroup2. */
static int memcg_setup(struct memcg *m, const char *mnt, char *why,
		       size_t whylen)
{
	char path[300], buf[64];
	long long usage;
	int err;

	err = mount_v1(mnt);
	if (!err) {
		m->v1 = true;
		snprintf(m->dir, sizeof(m->dir), "%s/limited", mnt);
		if (mkdir(m->dir, 0700))
			return -1;
		snprintf(path, sizeof(path), "%s/memory.oom_control", m->dir);
		if (write_file(path, "1"))
			return -1;
		snprintf(path, sizeof(path), "%s/memory.usage_in_bytes", m->dir);
		usage = read_num(path);
		snprintf(path, sizeof(path), "%s/memory.limit_in_bytes", m->dir);
		snprintf(buf, sizeof(buf), "%lld", usage + MEMCG_MARGIN);
		return write_file(path, buf);
	}
	if (access(CG2 "/cgroup.subtree_control", W_OK)) {
		snprintf(why, whylen, "no cgroup1 memory controller (%s), and "
			 "no cgroup2 hierarchy at " CG2, strerror(err));
		return 1;
	}
	m->v1 = false;
	if (write_file(CG2 "/cgroup.subtree_control", "+memory"))
		return -1;
	snprintf(m->dir, sizeof(m->dir), CG2 "/wsem-limits-%d", getpid());
	if (mkdir(m->dir, 0700))
		return -1;
	snprintf(path, sizeof(path), "%s/memory.swap.max", m->dir);
	write_file(path, "0");
	snprintf(path, sizeof(path), "%s/memory.current", m->dir);
	usage = read_num(path);
	snprintf(path, sizeof(path), "%s/memory.max", m->dir);
	snprintf(buf, sizeof(buf), "%lld", usage + MEMCG_MARGIN);
	return write_file(path, buf);
}

/* Kernel memory charged to the limited cgroup, in bytes; -1 if unknown. */
static long long kmem_of(const struct memcg *m)
{
	char path[300];

	if (!m->v1)
		return memstat(m->dir, "slab_unreclaimable");
	snprintf(path, sizeof(path), "%s/memory.kmem.usage_in_bytes", m->dir);
	return read_num(path);
}

/*
 * A cgroup with 1 MiB to spare: creating runs into ENOMEM, named and
 * anonymous alike, nothing half-made is left, the host is fine, and when
 * the namespace dies the kernel memory comes back.
 */
TEST_F_TIMEOUT(limits, memcg_limit_enomem, 180)
{
	char mnt[] = "/tmp/wsem-memcg.XXXXXX", why[200] = "", path[300];
	long long peak, after = -1;
	struct filler f;
	struct memcg m;
	int fd, ret, i, status, nsfd;
	int64_t deadline;
	pid_t pid, chk;

	if (!self->ready)
		return;
	ASSERT_NE(NULL, mkdtemp(mnt));
	ret = memcg_setup(&m, mnt, why, sizeof(why));
	if (ret > 0)
		SKIP(return, "%s", why);
	ASSERT_EQ(0, ret) {
		TH_LOG("setting up the cgroup: %s", strerror(errno));
	}
	/* Memory must run out first, not the namespace's quota. */
	ASSERT_EQ(0, set_limit(self, 1 << 20));
	flog = mmap(NULL, sizeof(*flog), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, flog);
	memset(flog, 0, sizeof(*flog));

	f.m = &m;
	ASSERT_EQ(0, pipe2(f.go, O_CLOEXEC));
	pid = run(memcg_fill, &f);
	ASSERT_LT(0, pid);
	close(f.go[0]);
	deadline = now_ns() + 60 * NSEC;
	while (!__atomic_load_n(&flog->done, __ATOMIC_SEQ_CST)) {
		ASSERT_EQ(0, waitpid(pid, &status, WNOHANG)) {
			TH_LOG("filler status %#x, check %d (%s): %s", status,
			       rep->step, rep->what, strerror(rep->err));
		}
		if (now_ns() > deadline) {
			/* Stuck at the limit: let it through, then fail. */
			snprintf(path, sizeof(path), "%s/%s", m.dir,
				 m.v1 ? "memory.limit_in_bytes" : "memory.max");
			write_file(path, m.v1 ? "-1" : "max");
			TH_LOG("the filler made no progress at the limit");
			deadline = INT64_MAX;
		}
		usleep(20000);
	}
	peak = kmem_of(&m);
	TH_LOG("cgroup%s, %d KiB: first failure after %lld semaphores; of "
	       "%lld named creations, %lld ENOMEM; then %lld anonymous "
	       "ones, %lld ENOMEM",
	       m.v1 ? "1" : "2", MEMCG_MARGIN >> 10, flog->first,
	       flog->tries, flog->in_ioctl, flog->anon_tries,
	       flog->anon_enomem);
	EXPECT_LT(0, flog->first);
	EXPECT_EQ(0, flog->other) {
		TH_LOG("a creation failed with %s", strerror(flog->other_err));
	}
	EXPECT_LT(0, flog->in_ioctl);
	EXPECT_LT(0, flog->anon_enomem);

	/* From outside the cgroup: exactly what succeeded exists. */
	snprintf(path, sizeof(path), "/proc/%d/ns/ipc", pid);
	nsfd = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, nsfd);
	chk = run(check_filled, &nsfd);
	EXPECT_EQ(0, wait_exit(chk)) {
		TH_LOG("%lld created, %lld listed; %s", rep->n[0], rep->n[1],
		       rep->what);
	}

	/* Outside the cgroup all is well, even now. */
	fd = wsem_open_anon(2, O_CLOEXEC);
	EXPECT_LE(0, fd);
	EXPECT_EQ(0, wsem_acquire(fd, 2));
	EXPECT_EQ(0, close(fd));

	/* Let the filler go: its namespace dies, its memory comes back. */
	EXPECT_EQ(0, close(f.go[1]));
	EXPECT_EQ(0, wait_exit(pid));
	EXPECT_EQ(0, close(nsfd));
	deadline = now_ns() + 8 * NSEC;
	do {
		usleep(200000);
		after = kmem_of(&m);
	} while (after > peak / 8 && now_ns() < deadline);
	TH_LOG("kernel memory of the cgroup: %lld at the limit, %lld after "
	       "the namespace died", peak, after);
	EXPECT_LT(0, peak);
	EXPECT_GE(peak / 8, after);

	for (i = 0; i < 50 && rmdir(m.dir); i++)
		usleep(100000);
	EXPECT_NE(0, access(m.dir, F_OK));
	if (m.v1)
		EXPECT_EQ(0, umount2(mnt, MNT_DETACH));
	rmdir(mnt);
	EXPECT_EQ(0, munmap(flog, sizeof(*flog)));
}

struct charge {
	char dir[256];
	int go[2];
	int ready[2];
};

/* In the cgroup, in a new namespace: named and anonymous semaphores. */
static int charge_fill(void *p)
{
	struct charge *c = p;
	char path[300], name[WSEM_NAME_MAX];
	int i, fd;

	close(c->go[1]);
	close(c->ready[0]);
	snprintf(path, sizeof(path), "%s/cgroup.procs", c->dir);
	CHILD_CHECK(!write_file(path, "0"), 1);
	CHILD_CHECK(!unshare(CLONE_NEWIPC), 2);
	for (i = 0; i < CHARGE_SEMS; i++) {
		snprintf(name, sizeof(name), "charged.%d", i);
		fd = wsem_open(name, O_CREAT | O_EXCL | O_CLOEXEC, 0600, 1);
		CHILD_CHECK(fd >= 0 && !close(fd), 3);
	}
	for (i = 0; i < CHARGE_ANON; i++)
		CHILD_CHECK(wsem_open_anon(1, O_CLOEXEC) >= 0, 4);
	close(c->ready[1]);
	CHILD_CHECK(read(c->go[0], &i, 1) == 0, 5);
	/* Exit: the namespace dies, and its semaphores with it. */
	return 0;
}

/* Poll memory.stat's @key until @ok says so; the last value read. */
static long long memstat_until(const char *cg, const char *key,
			       bool (*ok)(long long, long long), long long ref,
			       int64_t ns)
{
	int64_t end = now_ns() + ns;
	long long v;

	do {
		v = memstat(cg, key);
		if (v >= 0 && ok(v, ref))
			break;
		usleep(100000);
	} while (now_ns() < end);
	return v;
}

static bool at_least(long long v, long long ref)
{
	return v >= ref;
}

static bool at_most(long long v, long long ref)
{
	return v <= ref;
}

/*
 * Semaphores and handles are charged to their creator's memory cgroup,
 * and a dead namespace gives its semaphores' memory back.
 */
TEST_F_TIMEOUT(limits, memcg_charges_and_dead_ns_returns, 60)
{
	char path[300], buf[256], c;
	const long long need = CHARGE_SEMS * 128;
	long long base, full, after;
	bool enabled = false;
	struct charge ch;
	pid_t pid;
	int i;

	if (!self->ready)
		return;
	/* A cgroup1 hierarchy (the test before) may still be letting go. */
	for (i = 0; i < 20; i++) {
		if (read_file(CG2 "/cgroup.controllers", buf, sizeof(buf)))
			SKIP(return, "no cgroup2 hierarchy at " CG2);
		if (strstr(buf, "memory"))
			break;
		usleep(100000);
	}
	if (i == 20)
		SKIP(return, "no cgroup2 memory controller at " CG2 " (on a "
		     "kernel with cgroup1, memcg_limit_enomem's dying memcg "
		     "keeps it; that test checks charging there)");
	if (read_file(CG2 "/cgroup.subtree_control", buf, sizeof(buf)))
		SKIP(return, "no " CG2 "/cgroup.subtree_control");
	if (!strstr(buf, "memory")) {
		ASSERT_EQ(0, write_file(CG2 "/cgroup.subtree_control",
					"+memory")) {
			TH_LOG("enabling memory: %s", strerror(errno));
		}
		enabled = true;
	}
	snprintf(ch.dir, sizeof(ch.dir), CG2 "/wsem-charge-%d", getpid());
	ASSERT_EQ(0, mkdir(ch.dir, 0700));
	base = memstat(ch.dir, "slab_unreclaimable");
	ASSERT_LE(0, base);
	ASSERT_EQ(0, pipe2(ch.go, O_CLOEXEC));
	ASSERT_EQ(0, pipe2(ch.ready, O_CLOEXEC));
	pid = run(charge_fill, &ch);
	ASSERT_LT(0, pid);
	close(ch.go[0]);
	close(ch.ready[1]);
	EXPECT_EQ(0, read(ch.ready[0], &c, 1));

	full = memstat_until(ch.dir, "slab_unreclaimable", at_least,
			     base + need, 5 * NSEC);
	EXPECT_LE(base + need, full) {
		TH_LOG("%d semaphores and %d handles: slab %lld -> %lld",
		       CHARGE_SEMS, CHARGE_ANON, base, full);
	}
	close(ch.go[1]);
	EXPECT_EQ(0, wait_exit(pid)) {
		TH_LOG("child check %d (%s): %s", rep->step, rep->what,
		       strerror(rep->err));
	}
	/* The namespace is dead: within seconds its memory is back. */
	after = memstat_until(ch.dir, "slab_unreclaimable", at_most,
			      base + (full - base) / 4, 8 * NSEC);
	EXPECT_GE(base + (full - base) / 4, after);
	TH_LOG("slab of the cgroup: %lld, %lld with %d semaphores, "
	       "%lld after their namespace died", base, full,
	       CHARGE_SEMS + CHARGE_ANON, after);
	snprintf(path, sizeof(path), "%s/memory.events", ch.dir);
	EXPECT_EQ(0, read_file(path, buf, sizeof(buf)));
	EXPECT_NE(NULL, strstr(buf, "oom_kill 0"));

	for (i = 0; i < 50 && rmdir(ch.dir); i++)
		usleep(100000);
	EXPECT_NE(0, access(ch.dir, F_OK));
	if (enabled)
		write_file(CG2 "/cgroup.subtree_control", "-memory");
	EXPECT_EQ(0, close(ch.ready[0]));
}

/* ---------------------------------------------------------------- */
/* User namespaces                                                   */

/*
 * Become root of a new user namespace mapped to nobody outside, with
 * every capability there; with @ipc, of a new IPC namespace too.
 */
static int enter_userns(bool ipc)
{
	static const char *const maps[][2] = {
		{ "/proc/self/setgroups", "deny" },
		{ "/proc/self/uid_map", "0 65534 1" },
		{ "/proc/self/gid_map", "0 65534 1" },
	};
	unsigned int i;

	/* setuid() made us non-dumpable: /proc/self would be root's. */
	if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) || unshare(CLONE_NEWUSER))
		return -1;
	for (i = 0; i < 3; i++)
		if (write_file(maps[i][0], maps[i][1]))
			return -1;
	if (getuid() != 0 || (ipc && unshare(CLONE_NEWIPC)))
		return -1;
	return 0;
}

struct userns_job {
	int fd;			/* a handle on the host's semaphore */
	char name[WSEM_NAME_MAX];
	bool ipc;		/* also a new IPC namespace */
	int sock;		/* to pass a handle of its own back */
};

static int userns_root(void *p)
{
	struct userns_job *j = p;
	struct wsem_stat st;
	uint64_t cap = 8;
	int fd, own;

	CHILD_CHECK(!become_nobody(), 1);
	if (enter_userns(j->ipc)) {
		rep->step = -1;		/* no user namespaces: skip */
		rep->err = errno;
		return 0;
	}
	/* Not the owner, whatever its capabilities here. */
	errno = 0;
	CHILD_CHECK(ioctl(j->fd, WSEM_IOC_SET_CAPACITY, &cap) && errno == EPERM,
		    2);
	errno = 0;
	CHILD_CHECK(wsem_unlink(j->name) && errno == (j->ipc ? ENOENT : EPERM),
		    3);
	errno = 0;
	CHILD_CHECK(wsem_open(j->name, O_CLOEXEC, 0, 0) < 0 &&
		    errno == (j->ipc ? ENOENT : EACCES), 4);
	CHILD_CHECK(wsem_list(NULL, 0) == 0, 5);
	/* The owner is root, unmapped here. */
	memset(&st, 0, sizeof(st));
	CHILD_CHECK(!wsem_stat(j->fd, &st), 6);
	CHILD_CHECK(st.uid == NOBODY && st.gid == NOBODY, 7);
	CHILD_CHECK(st.capacity == 4 && st.mode == 0600, 8);
	/* The handle works as a handle: acquire, release, reopen. */
	CHILD_CHECK(!wsem_acquire(j->fd, 4) && !wsem_release(j->fd, 4), 9);
	fd = wsem_reopen(j->fd, O_CLOEXEC);
	CHILD_CHECK(fd >= 0 && !wsem_tryacquire(fd, 1) && !close(fd), 10);
	/* What it creates itself, it owns: CAP_IPC_OWNER or not. */
	own = wsem_open_anon(2, O_CLOEXEC);
	CHILD_CHECK(own >= 0, 11);
	CHILD_CHECK(!wsem_set_capacity(own, 3), 12);
	CHILD_CHECK(!send_fd(j->sock, own, 0), 13);
	return 0;
}

static void userns_case(struct __test_metadata *_metadata, bool ipc)
{
	struct userns_job j = { .ipc = ipc };
	struct wsem_stat st;
	int sk[2], own;
	pid_t pid;

	ASSERT_EQ(0, unshare(CLONE_NEWIPC));
	snprintf(j.name, sizeof(j.name), "host.%d", getpid());
	j.fd = wsem_open(j.name, O_CREAT | O_EXCL | O_CLOEXEC, 0600, 4);
	ASSERT_LE(0, j.fd);
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sk));
	j.sock = sk[1];
	pid = run(userns_root, &j);
	ASSERT_LT(0, pid);
	EXPECT_EQ(0, wait_exit(pid)) {
		TH_LOG("child check %d (%s): %s", rep->step, rep->what,
		       strerror(rep->err));
	}
	if (rep->step < 0)
		SKIP(return, "user namespaces: %s", strerror(rep->err));
	/*
	 * The host semaphore is as it was; the 1 the reopened handle took
	 * went back when the child exited.
	 */
	ASSERT_EQ(0, wsem_stat(j.fd, &st));
	EXPECT_EQ(4, st.capacity);
	EXPECT_EQ(0, st.used);
	EXPECT_STREQ(j.name, st.name);
	/*
	 * Its own semaphore: host root may manage it (CAP_IPC_OWNER over
	 * every user namespace below); its owner shows as nobody.
	 */
	own = recv_fd(sk[0]);
	ASSERT_LE(0, own);
	ASSERT_EQ(0, wsem_stat(own, &st));
	EXPECT_EQ(3, st.capacity);
	EXPECT_EQ(NOBODY, st.uid);
	EXPECT_EQ(0, wsem_set_capacity(own, 5));
	EXPECT_EQ(0, close(own));
	EXPECT_EQ(0, close(j.fd));
	EXPECT_EQ(0, wsem_unlink(j.name));
	EXPECT_EQ(0, close(sk[0]));
	EXPECT_EQ(0, close(sk[1]));
}

/* Root of a user namespace with a host handle: no owner's rights. */
TEST_F(limits, userns_root_with_host_handle)
{
	if (!self->ready)
		return;
	userns_case(_metadata, false);
}

/* ... nor with an IPC namespace of its own, where it owns everything. */
TEST_F(limits, userns_and_ipcns_root_with_host_handle)
{
	if (!self->ready)
		return;
	userns_case(_metadata, true);
}

/* ---------------------------------------------------------------- */
/* Namespace lifetime                                                */

struct keeper {
	char name[WSEM_NAME_MAX];
	int sock;		/* handle out */
	int go[2];		/* EOF on go[0]: exit */
	int nsfd;		/* for the joiner: the namespace to join */
	int fd;			/* the test's handle, inherited by the joiner */
	char mnt[64];		/* where the joiner mounts the namespace's wsemfs */
};

static int keeper_main(void *p)
{
	struct keeper *k = p;
	int fd;
	char c;

	close(k->go[1]);
	CHILD_CHECK(!unshare(CLONE_NEWIPC), 1);
	fd = wsem_open(k->name, O_CREAT | O_EXCL | O_CLOEXEC, 0600, 2);
	CHILD_CHECK(fd >= 0, 2);
	CHILD_CHECK(!send_fd(k->sock, fd, 0), 3);
	CHILD_CHECK(read(k->go[0], &c, 1) == 0, 4);
	return 0;
}

static int name_of(int fd, char *name);

static int joiner_main(void *p)
{
	struct keeper *k = p;
	int fd;

	char name[WSEM_NAME_MAX];

	CHILD_CHECK(!setns(k->nsfd, CLONE_NEWIPC), 1);
	CHILD_CHECK(wsem_list(NULL, 0) == 1, 2);
	fd = wsem_open(k->name, O_CLOEXEC, 0, 0);
	CHILD_CHECK(fd >= 0 && !close(fd), 3);
	/* The name shows in its own namespace only. */
	CHILD_CHECK(!name_of(k->fd, name) && !strcmp(name, k->name), 4);
	/* A mount to watch the names by; it keeps the namespace not alive. */
	CHILD_CHECK(!mount("wsem", k->mnt, "wsem", 0, NULL), 5);
	return 0;
}

static int newcomer_main(void *p)
{
	struct keeper *k = p;

	CHILD_CHECK(!unshare(CLONE_NEWIPC), 1);
	CHILD_CHECK(wsem_list(NULL, 0) == 0, 2);
	errno = 0;
	CHILD_CHECK(wsem_open(k->name, O_CLOEXEC, 0, 0) < 0 &&
		    errno == ENOENT, 3);
	return 0;
}

static int name_of(int fd, char *name)
{
	struct wsem_stat st;

	memset(&st, 0, sizeof(st));
	if (wsem_stat(fd, &st))
		return -1;
	memcpy(name, st.name, WSEM_NAME_MAX);
	return 0;
}

/*
 * A namespace with no process left but an nsfs file open is alive: its
 * names stay and a process joining it sees them.  When the file closes,
 * the names go within seconds (a wsemfs mount of it shows them go; names
 * do not show outside their namespace), and a new namespace sees none.
 */
TEST_F(limits, nsfs_reference_keeps_names)
{
	struct keeper k;
	char path[128], name[WSEM_NAME_MAX];
	struct stat sb;
	int sk[2], fd;
	int64_t end;
	pid_t pid;

	if (!self->ready)
		return;
	snprintf(k.name, sizeof(k.name), "kept.%d", getpid());
	snprintf(k.mnt, sizeof(k.mnt), "/tmp/wsem-kept.%d", getpid());
	ASSERT_EQ(0, mkdir(k.mnt, 0700));
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sk));
	ASSERT_EQ(0, pipe2(k.go, O_CLOEXEC));
	k.sock = sk[1];
	pid = run(keeper_main, &k);
	ASSERT_LT(0, pid);
	fd = recv_fd(sk[0]);
	ASSERT_LE(0, fd);
	snprintf(path, sizeof(path), "/proc/%d/ns/ipc", pid);
	k.nsfd = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, k.nsfd);
	EXPECT_EQ(0, close(k.go[1]));
	EXPECT_EQ(0, wait_exit(pid));

	/* No process in it, but alive: the reaper (1 s) must leave it. */
	usleep(2500000);
	ASSERT_EQ(0, name_of(fd, name));
	EXPECT_STREQ("", name);
	k.fd = fd;
	pid = run(joiner_main, &k);
	ASSERT_LT(0, pid);
	EXPECT_EQ(0, wait_exit(pid)) {
		TH_LOG("joiner check %d (%s): %s", rep->step, rep->what,
		       strerror(rep->err));
	}

	/* The last reference goes: so do the names, within seconds. */
	snprintf(path, sizeof(path), "%s/%s", k.mnt, k.name);
	EXPECT_EQ(0, stat(path, &sb));
	EXPECT_EQ(0, close(k.nsfd));
	end = now_ns() + 5 * NSEC;
	while (!stat(path, &sb) && now_ns() < end)
		usleep(50000);
	EXPECT_EQ(-1, stat(path, &sb));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(0, umount(k.mnt));
	EXPECT_EQ(0, rmdir(k.mnt));
	pid = run(newcomer_main, &k);
	ASSERT_LT(0, pid);
	EXPECT_EQ(0, wait_exit(pid));
	/* The semaphore itself lives on through the handle. */
	EXPECT_EQ(0, wsem_acquire(fd, 2));
	EXPECT_EQ(0, close(fd));
	EXPECT_EQ(0, close(sk[0]));
	EXPECT_EQ(0, close(sk[1]));
	EXPECT_EQ(0, close(k.go[0]));
}

/* ---------------------------------------------------------------- */
/* Weights at the top of the range                                   */

struct waiter {
	int fd;
	int ret, err;
};

static void on_usr1(int sig)
{
	(void)sig;
}

static void *wait_all(void *p)
{
	struct waiter *w = p;

	w->ret = wsem_acquire(w->fd, WSEM_CAPACITY_MAX);
	w->err = errno;
	return NULL;
}

/*
 * queued_weight is a sum over the waiters: with four waiting for 2^62
 * each it is 2^64, which a __u64 cannot hold.  It must not wrap around to
 * 0 (next to waiters = 4); saturating at UINT64_MAX is the honest answer.
 */
TEST_F(limits, queued_weight_never_wraps)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	struct waiter w[4];
	pthread_t t[4];
	struct wsem_stat st;
	int fd, i, n;
	int64_t end;

	if (!self->ready)
		return;
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	fd = wsem_open_anon(WSEM_CAPACITY_MAX, O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, wsem_acquire(fd, 1));
	for (n = 1; n <= 4; n++) {
		w[n - 1].fd = wsem_reopen(fd, O_CLOEXEC);
		ASSERT_LE(0, w[n - 1].fd);
		ASSERT_EQ(0, pthread_create(&t[n - 1], NULL, wait_all,
					    &w[n - 1]));
		end = now_ns() + 5 * NSEC;
		do {
			memset(&st, 0, sizeof(st));
			ASSERT_EQ(0, wsem_stat(fd, &st));
			if (st.waiters == (uint64_t)n)
				break;
			usleep(1000);
		} while (now_ns() < end);
		ASSERT_EQ(n, st.waiters);
		if (n < 4) {
			/* Still representable: exact. */
			EXPECT_EQ((uint64_t)n << 62, st.queued_weight);
		} else {
			EXPECT_LE((uint64_t)3 << 62, st.queued_weight) {
				TH_LOG("4 waiters for 2^62 each: queued_weight "
				       "%llu (2^64 wrapped)",
				       (unsigned long long)st.queued_weight);
			}
		}
	}
	for (i = 0; i < 4; i++) {
		pthread_kill(t[i], SIGUSR1);
		pthread_join(t[i], NULL);
		EXPECT_EQ(-1, w[i].ret);
		EXPECT_EQ(EINTR, w[i].err);
		EXPECT_EQ(0, close(w[i].fd));
	}
	ASSERT_EQ(0, wsem_stat(fd, &st));
	EXPECT_EQ(0, st.waiters);
	EXPECT_EQ(0, st.queued_weight);
	EXPECT_EQ(0, close(fd));
}

/* How many refused creates, each by a user new to the namespace. */
#define REFUSED		10000

/*
 * Objects in use in the 32-byte kmalloc caches (accounted or not), where
 * a user's count in a namespace lives, from /proc/slabinfo; -1 if it
 * cannot be read.  What each seteuid() makes and RCU frees later (the
 * credentials, their LSM blobs) lives in other caches.
 */
static long long kmalloc_objects(void)
{
	char line[512], name[64];
	long long n, sum = -1;
	FILE *f = fopen("/proc/slabinfo", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %lld", name, &n) == 2 &&
		    (!strcmp(name, "kmalloc-32") ||
		     !strcmp(name, "kmalloc-cg-32")))
			sum = (sum < 0 ? 0 : sum) + n;
	fclose(f);
	return sum;
}

/*
 * In an IPC namespace of its own with no room (the namespace limit is 0):
 * REFUSED creates, each as another euid; rep->n[0] is how many more
 * kmalloc objects are in use after them.
 */
static int refused_creates(void *p)
{
	long long before, after;
	int fd, i;

	(void)p;
	fd = open("/dev/wsem", O_RDWR | O_CLOEXEC);
	CHILD_CHECK(fd >= 0, 1);
	CHILD_CHECK(!unshare(CLONE_NEWIPC), 2);
	/* The namespace's own state comes with its first create. */
	CHILD_CHECK(create_on(fd, "refused", WSEM_OPEN_CREAT) == -1, 3);
	before = kmalloc_objects();
	for (i = 0; i < REFUSED; i++) {
		CHILD_CHECK(!seteuid(20000 + i), 4);
		CHILD_CHECK(create_on(fd, "refused", WSEM_OPEN_CREAT) == -1 &&
			    errno == ENOSPC, 5);
		CHILD_CHECK(!seteuid(0), 6);
	}
	/*
	 * The old creds of REFUSED seteuid() calls, and what they own, are
	 * freed after RCU grace periods; on a loaded machine many can still
	 * be waiting for theirs (a 7.2 guest once counted 3180): count again
	 * for up to 5 s before calling it a leak.
	 */
	for (i = 0; i < 50; i++) {
		after = kmalloc_objects();
		if (after - before < REFUSED / 4)
			break;
		usleep(100000);
	}
	rep->n[0] = after - before;
	CHILD_CHECK(after - before < REFUSED / 4, 7);
	return 0;
}

/*
 * A create refused at a limit leaves nothing behind: a user's count in a
 * namespace is made only for a create that passes, so that no stream of
 * refused attempts (a subuid range) grows kernel memory.  (Slow on the
 * debug kernel: its own timeout, so that the teardown puts the limit back.)
 */
TEST_F_TIMEOUT(limits, refused_creates_leave_nothing, 180)
{
	pid_t pid;

	if (!self->ready)
		return;
	if (kmalloc_objects() < 0)
		SKIP(return, "no kmalloc-32 in /proc/slabinfo");
	ASSERT_EQ(0, set_limit(self, 0));
	pid = run(refused_creates, NULL);
	ASSERT_LT(0, pid);
	EXPECT_EQ(0, wait_exit(pid)) {
		TH_LOG("step %d (%s): %s; %lld more kmalloc objects after %d refused creates",
		       rep->step, rep->what, strerror(rep->err), rep->n[0],
		       REFUSED);
	}
}

TEST_HARNESS_MAIN
