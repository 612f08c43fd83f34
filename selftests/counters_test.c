// SPDX-License-Identifier: GPL-2.0
/*
 * The counters page (SPEC.md "Fast path within a process"): mmap(2) of a
 * handle shows its semaphore's struct wsem_counters, read-only, without a
 * system call.
 *
 *  - the page shows the capacity in force, the used weight, the waiters
 *    and the queued weight after acquires, releases, a queued request, a
 *    resize, a loan, and a child's grant on its parent's page;
 *  - every handle of a semaphore, a wsemfs file too, maps the same state;
 *  - a writable or executable mapping, an mprotect(2) to writable, an
 *    offset, a length over a page and an unbound handle are refused;
 *  - the page stays readable after the semaphore is freed, marked
 *    WSEM_COUNTERS_GONE, with its last values;
 *  - a reader in a tight loop never sees a torn state while a writer
 *    resizes, acquires and releases.
 *
 * Every test owns an anonymous semaphore but the one about its end, which
 * needs a name to unlink.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <unistd.h>

#include <wsem.h>

#include "kselftest_harness.h"
#include "util.h"

#define PAGE	4096

/* One consistent state of @c; all bits set if the read fails. */
static struct wsem_counters snap(const struct wsem_counters *c)
{
	struct wsem_counters out;

	if (wsem_read_counters(c, &out))
		memset(&out, 0xff, sizeof(out));
	return out;
}

FIXTURE(counters) {
	int fd;				/* a handle on a new semaphore of 10 */
	const struct wsem_counters *c;	/* its counters page */
};

FIXTURE_SETUP(counters)
{
	self->c = NULL;
	self->fd = wsem_open_anon(10, 0);
	ASSERT_LE(0, self->fd);
	self->c = wsem_map_counters(self->fd);
	ASSERT_NE(NULL, self->c) TH_LOG("mmap: %s", strerror(errno));
}

FIXTURE_TEARDOWN(counters)
{
	if (self->c)
		EXPECT_EQ(0, wsem_unmap_counters(self->c));
	EXPECT_EQ(0, close(self->fd));
}

/* The page shows the state at the mmap, then follows grants and releases. */
TEST_F(counters, acquire_release)
{
	struct wsem_counters s = snap(self->c);

	EXPECT_EQ(0, s.seq & 1);
	EXPECT_EQ(0, s.flags);
	EXPECT_EQ(WSEM_COUNTERS_SIZE_VER0, s.size);
	EXPECT_EQ(sizeof(struct wsem_counters), WSEM_COUNTERS_SIZE_VER0);
	EXPECT_EQ(10, s.capacity);
	EXPECT_EQ(0, s.used);
	EXPECT_EQ(0, s.waiters);
	EXPECT_EQ(0, s.queued_weight);
	ASSERT_EQ(0, wsem_acquire(self->fd, 3));
	ASSERT_EQ(0, wsem_tryacquire(self->fd, 4));
	s = snap(self->c);
	EXPECT_EQ(7, s.used);
	EXPECT_EQ(10, s.capacity);
	ASSERT_EQ(0, wsem_release(self->fd, 5));
	EXPECT_EQ(2, snap(self->c).used);
	ASSERT_EQ(0, wsem_release(self->fd, 2));
	EXPECT_EQ(0, snap(self->c).used);
}

/* A queued request shows as a waiter and its weight; its grant as used. */
TEST_F(counters, queued_waiter)
{
	struct wsem_counters s;
	int h2 = wsem_reopen(self->fd, 0);

	ASSERT_LE(0, h2);
	ASSERT_EQ(0, wsem_acquire(self->fd, 8));
	ASSERT_EQ(-1, wsem_acquire_async(h2, 4));
	ASSERT_EQ(EINPROGRESS, errno);
	ASSERT_EQ(0, wait_waiters(self->fd, 1));
	s = snap(self->c);
	EXPECT_EQ(8, s.used);
	EXPECT_EQ(1, s.waiters);
	EXPECT_EQ(4, s.queued_weight);
	ASSERT_EQ(0, wsem_release(self->fd, 8));
	s = snap(self->c);
	EXPECT_EQ(4, s.used);
	EXPECT_EQ(0, s.waiters);
	EXPECT_EQ(0, s.queued_weight);
	EXPECT_EQ(0, wsem_acquire_result(h2));
	EXPECT_EQ(0, close(h2));
	EXPECT_EQ(0, snap(self->c).used);
}

/* A resize and a loan change the capacity in force on the page. */
TEST_F(counters, resize_and_loan)
{
	int h2 = wsem_reopen(self->fd, 0);

	ASSERT_LE(0, h2);
	ASSERT_EQ(0, wsem_set_capacity(self->fd, 20));
	EXPECT_EQ(20, snap(self->c).capacity);
	ASSERT_EQ(0, wsem_lend(h2, 5));
	EXPECT_EQ(25, snap(self->c).capacity);
	EXPECT_EQ(stat_of(self->fd).capacity, snap(self->c).capacity);
	ASSERT_EQ(0, wsem_set_capacity(self->fd, 2));
	EXPECT_EQ(7, snap(self->c).capacity);
	EXPECT_EQ(0, close(h2));	/* withdraws the loan */
	EXPECT_EQ(2, snap(self->c).capacity);
}

/* A child's grant shows on its own page and on its parent's. */
TEST_F(counters, child_grant_on_parent)
{
	const struct wsem_counters *cc;
	int child = wsem_open_child(self->fd, NULL, 0, 0600, 4);

	ASSERT_LE(0, child);
	cc = wsem_map_counters(child);
	ASSERT_NE(NULL, cc);
	EXPECT_EQ(4, snap(cc).capacity);
	ASSERT_EQ(0, wsem_acquire(child, 3));
	EXPECT_EQ(3, snap(cc).used);
	EXPECT_EQ(3, snap(self->c).used);
	ASSERT_EQ(0, wsem_acquire(self->fd, 7));
	EXPECT_EQ(10, snap(self->c).used);
	EXPECT_EQ(3, snap(cc).used);
	EXPECT_EQ(0, close(child));	/* its mapping keeps no handle */
	EXPECT_EQ(7, snap(self->c).used);
	EXPECT_EQ(0, snap(cc).used);
	EXPECT_EQ(0, wsem_unmap_counters(cc));
}

/* Every handle maps the same page: a second one and a mapping of it. */
TEST_F(counters, one_page_per_semaphore)
{
	const struct wsem_counters *c2;
	int h2 = wsem_reopen(self->fd, 0);

	ASSERT_LE(0, h2);
	c2 = wsem_map_counters(h2);
	ASSERT_NE(NULL, c2);
	ASSERT_EQ(0, wsem_acquire(h2, 6));
	EXPECT_EQ(6, snap(self->c).used);
	EXPECT_EQ(6, snap(c2).used);
	EXPECT_EQ(0, wsem_unmap_counters(c2));
	EXPECT_EQ(0, close(h2));
	EXPECT_EQ(0, snap(self->c).used);
}

/* A wsemfs file is a handle: its mapping shows the same semaphore. */
TEST(wsemfs_file)
{
	char dir[] = "/tmp/counters_test.XXXXXX", name[48], path[96];
	const struct wsem_counters *c;
	int fd, ffd;

	snprintf(name, sizeof(name), "counters_fs.%d", getpid());
	fd = wsem_open(name, O_CREAT | O_EXCL, 0600, 5);
	ASSERT_LE(0, fd);
	ASSERT_NE(NULL, mkdtemp(dir));
	if (mount("wsem", dir, "wsem", 0, NULL)) {
		rmdir(dir);
		wsem_unlink(name);
		close(fd);
		SKIP(return, "cannot mount wsemfs: %s", strerror(errno));
	}
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	ffd = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, ffd);
	c = wsem_map_counters(ffd);
	ASSERT_NE(NULL, c) TH_LOG("mmap: %s", strerror(errno));
	ASSERT_EQ(0, wsem_acquire(fd, 2));
	EXPECT_EQ(2, snap(c).used);
	EXPECT_EQ(5, snap(c).capacity);
	EXPECT_EQ(0, wsem_unmap_counters(c));
	EXPECT_EQ(0, close(ffd));
	EXPECT_EQ(0, umount(dir));
	EXPECT_EQ(0, rmdir(dir));
	EXPECT_EQ(0, wsem_unlink(name));
	EXPECT_EQ(0, close(fd));
}

/* The tree's page of handle @fd (WSEM_MMAP_TREE), or NULL. */
static const struct wsem_tree_counters *map_tree(int fd)
{
	void *t = mmap(NULL, sizeof(struct wsem_tree_counters), PROT_READ,
		       MAP_SHARED, fd, WSEM_MMAP_TREE * PAGE);

	return t == MAP_FAILED ? NULL : t;
}

static __u32 tree_flags(const struct wsem_tree_counters *t)
{
	return __atomic_load_n(&t->flags, __ATOMIC_ACQUIRE);
}

/* Is POLLRDBAND up on @fd now? */
static bool rdband(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLRDBAND };

	return poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLRDBAND);
}

/*
 * The tree's page, the same through every semaphore of the tree: a
 * request queued anywhere in it (here a child's, held up by the root,
 * which a sibling's page does not show), and a semaphore of it over its
 * capacity; a child's handle reports POLLRDBAND when they change; and
 * once the root is freed, GONE.
 */
TEST(tree_page)
{
	const struct wsem_tree_counters *t[3];
	int root = wsem_open_anon(4, 0), a, b, i, ms;
	struct wsem_stat st;

	ASSERT_LE(0, root);
	a = wsem_open_child(root, NULL, 0, 0600, 2);
	b = wsem_open_child(root, NULL, 0, 0600, 4);
	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	t[0] = map_tree(root);
	t[1] = map_tree(a);
	ASSERT_EQ(0, wsem_acquire(b, 4));
	t[2] = map_tree(b);
	for (i = 0; i < 3; i++) {
		ASSERT_NE(NULL, t[i]) TH_LOG("mmap: %s", strerror(errno));
		EXPECT_EQ(WSEM_TREE_COUNTERS_SIZE_VER0, t[i]->size);
		EXPECT_EQ(0, tree_flags(t[i]));
	}
	EXPECT_EQ(t[0]->seq, t[2]->seq);
	EXPECT_EQ(sizeof(struct wsem_tree_counters),
		  WSEM_TREE_COUNTERS_SIZE_VER0);

	/* a's request fits a but waits for the root: b's page sees it. */
	ASSERT_EQ(0, wsem_stat(b, &st));
	EXPECT_FALSE(rdband(b));
	ASSERT_EQ(-1, wsem_acquire_async(a, 1));
	ASSERT_EQ(EINPROGRESS, errno);
	for (i = 0; i < 3; i++)
		EXPECT_EQ(WSEM_TREE_WAITING, tree_flags(t[i]));
	EXPECT_TRUE(rdband(b));
	ASSERT_EQ(0, wsem_stat(b, &st));
	EXPECT_EQ(0, st.waiters);
	EXPECT_FALSE(rdband(b));
	ASSERT_EQ(0, wsem_release(b, 4));
	ASSERT_EQ(0, wsem_acquire_result(a));
	EXPECT_EQ(0, tree_flags(t[2]));
	EXPECT_TRUE(rdband(b));

	/* a holds 2 of 2, shrunk to 1: over its capacity. */
	ASSERT_EQ(0, wsem_acquire(a, 1));
	ASSERT_EQ(0, wsem_set_capacity(a, 1));
	EXPECT_EQ(WSEM_TREE_OVER, tree_flags(t[2]));
	ASSERT_EQ(0, wsem_stat(b, &st));
	ASSERT_EQ(0, wsem_release(a, 1));
	EXPECT_EQ(0, tree_flags(t[2]));
	EXPECT_TRUE(rdband(b));
	ASSERT_EQ(0, wsem_release(a, 1));

	EXPECT_EQ(0, close(a));
	EXPECT_EQ(0, close(b));
	EXPECT_EQ(0, close(root));
	for (ms = 0; ms < 5000; ms++) {
		if (tree_flags(t[1]) & WSEM_COUNTERS_GONE)
			break;
		usleep(1000);
	}
	EXPECT_EQ(WSEM_COUNTERS_GONE, tree_flags(t[1]));
	for (i = 0; i < 3; i++)
		EXPECT_EQ(0, munmap((void *)t[i], sizeof(*t[i])));
}

/* Write and execute are refused, now and later by mprotect(2). */
TEST_F(counters, read_only)
{
	void *p;

	p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EACCES, errno);
	p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, self->fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EACCES, errno);
	p = mmap(NULL, PAGE, PROT_READ | PROT_EXEC, MAP_SHARED, self->fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(-1, mprotect((void *)self->c, PAGE, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	p = mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, self->fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(-1, mprotect(p, PAGE, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(0, munmap(p, PAGE));
	EXPECT_EQ(0, snap(self->c).used);
}

/*
 * An offset but 0 and the tree's, a length over a page and an unbound
 * handle are EINVAL.
 */
TEST_F(counters, bad_maps)
{
	int unbound = open("/dev/wsem", O_RDWR | O_CLOEXEC);
	void *p;

	p = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, self->fd,
		 (WSEM_MMAP_TREE + 1) * PAGE);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, 2 * PAGE, PROT_READ, MAP_SHARED, self->fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, 2 * PAGE, PROT_READ, MAP_SHARED, self->fd,
		 WSEM_MMAP_TREE * PAGE);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		 WSEM_MMAP_TREE * PAGE);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EACCES, errno);
	ASSERT_LE(0, unbound);
	p = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, unbound, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, close(unbound));
	p = mremap((void *)self->c, PAGE, 2 * PAGE, MREMAP_MAYMOVE);
	EXPECT_EQ(MAP_FAILED, p);
}

/* After the semaphore is freed the page keeps its last state, marked. */
TEST(gone)
{
	const struct wsem_counters *c;
	struct wsem_counters s;
	char name[48];
	int fd, h2, ms;

	snprintf(name, sizeof(name), "counters_gone.%d", getpid());
	fd = wsem_open(name, O_CREAT | O_EXCL, 0600, 9);
	ASSERT_LE(0, fd);
	h2 = wsem_reopen(fd, 0);
	ASSERT_LE(0, h2);
	c = wsem_map_counters(fd);
	ASSERT_NE(NULL, c);
	ASSERT_EQ(0, wsem_acquire(h2, 4));
	ASSERT_EQ(0, wsem_lend(fd, 3));
	ASSERT_EQ(0, wsem_unlink(name));
	EXPECT_EQ(0, close(fd));
	s = snap(c);
	EXPECT_EQ(0, s.flags);	/* h2 still has it */
	EXPECT_EQ(9, s.capacity);
	EXPECT_EQ(4, s.used);
	EXPECT_EQ(0, close(h2));
	for (ms = 0; ms < 5000; ms++) {
		s = snap(c);
		if (s.flags & WSEM_COUNTERS_GONE)
			break;
		usleep(1000);
	}
	EXPECT_EQ(WSEM_COUNTERS_GONE, s.flags);
	EXPECT_EQ(0, s.used);
	EXPECT_EQ(9, s.capacity);
	EXPECT_EQ(0, s.waiters);
	EXPECT_EQ(0, wsem_unmap_counters(c));
}

/* The weights the writer of no_torn_state uses, its capacity each time. */
static const uint64_t weights[] = { 1, 3, 7, 12, 30, 64 };
#define NR_WEIGHTS	(sizeof(weights) / sizeof(weights[0]))

struct writer {
	int fd;			/* the handle it works through */
	volatile bool stop;	/* set by the reader when it is done */
	int err;		/* the errno of a call that failed, or 0 */
	uint64_t rounds;	/* how many resize-acquire-release rounds */
};

/*
 * Sets the capacity to a weight, acquires all of it, releases it: every
 * state it leaves has used 0 or used == capacity, and capacity a weight.
 */
static void *writer_run(void *arg)
{
	struct writer *w = arg;
	unsigned int i = 0;
	uint64_t wt;

	while (!w->stop) {
		wt = weights[i++ % NR_WEIGHTS];
		if (wsem_set_capacity(w->fd, wt) || wsem_acquire(w->fd, wt) ||
		    wsem_release(w->fd, wt)) {
			__atomic_store_n(&w->err, errno, __ATOMIC_RELAXED);
			break;
		}
		__atomic_store_n(&w->rounds, w->rounds + 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static bool is_weight(uint64_t v)
{
	unsigned int i;

	for (i = 0; i < NR_WEIGHTS; i++) {
		if (weights[i] == v)
			return true;
	}
	return false;
}

/*
 * The reader's protocol of struct wsem_counters done slowly, a pause
 * between the capacity and the used weight, so that the writer often
 * writes in between: the seq must catch it.  Counts the retries in @retries.
 */
static struct wsem_counters slow_snap(const struct wsem_counters *c,
				      uint64_t *retries)
{
	struct wsem_counters out;
	volatile unsigned int i;
	uint32_t s1;

	for (;; ++*retries) {
		s1 = __atomic_load_n(&c->seq, __ATOMIC_ACQUIRE);
		if (s1 & 1)
			continue;
		out.capacity = *(volatile const uint64_t *)&c->capacity;
		for (i = 0; i < 2000; i++)
			;
		out.used = *(volatile const uint64_t *)&c->used;
		out.waiters = *(volatile const uint64_t *)&c->waiters;
		out.queued_weight = *(volatile const uint64_t *)&c->queued_weight;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&c->seq, __ATOMIC_RELAXED) == s1)
			break;
	}
	out.seq = s1;
	return out;
}

/*
 * A reader that follows the seq protocol never sees a mixed state: the
 * library's, and a slow one (every other read) that the writer often
 * overtakes.
 */
TEST_F(counters, no_torn_state)
{
	int64_t end = now_ns() + (int64_t)env_u64("COUNTERS_NS", 2 * NSEC);
	struct writer w = { .fd = self->fd };
	uint64_t reads = 0, bad = 0, changes = 0, retries = 0;
	struct wsem_counters s;
	uint32_t last = 0;
	pthread_t t;

	ASSERT_EQ(0, wsem_set_capacity(self->fd, weights[0]));
	ASSERT_EQ(0, pthread_create(&t, NULL, writer_run, &w));
	/* a writer slowed down (a busy host) is given 20 s more */
	while (now_ns() < end ||
	       (__atomic_load_n(&w.rounds, __ATOMIC_RELAXED) <= 1000 &&
		!__atomic_load_n(&w.err, __ATOMIC_RELAXED) &&
		now_ns() < end + 20 * NSEC)) {
		s = reads++ & 1 ? slow_snap(self->c, &retries) : snap(self->c);
		if ((s.seq & 1) || !is_weight(s.capacity) ||
		    (s.used && s.used != s.capacity) || s.waiters ||
		    s.queued_weight) {
			if (!bad++)
				TH_LOG("torn: seq %u capacity %llu used %llu",
				       s.seq, (unsigned long long)s.capacity,
				       (unsigned long long)s.used);
		}
		if (s.seq != last)
			changes++;
		last = s.seq;
	}
	w.stop = true;
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(0, w.err);
	EXPECT_EQ(0, bad);
	EXPECT_LT(1000, w.rounds);
	EXPECT_LT(0, changes);
	TH_LOG("%llu reads, %llu changes seen, %llu slow retries, %llu writer rounds",
	       (unsigned long long)reads, (unsigned long long)changes,
	       (unsigned long long)retries, (unsigned long long)w.rounds);
}

/* The knob of a test build of wsem.ko (make check builds one). */
#define PUBLISH_DELAY	"/sys/module/wsem/parameters/test_publish_delay_us"

/*
 * The page in the middle of a write: with the module's pause between the
 * capacity and the used weight (test_publish_delay_us), a reader meets
 * the writer there every run.  Its seq is odd then, and a capacity that
 * changes between two loads of a reader finds the seq odd or changed
 * around them: a writer that left the seq even while it wrote would let a
 * reader take the half-written page for a whole one.
 */
TEST_F(counters, write_in_progress_is_odd)
{
	int64_t end = now_ns() + (int64_t)env_u64("COUNTERS_NS", 2 * NSEC);
	struct writer w = { .fd = self->fd };
	uint64_t reads = 0, odd = 0, unmarked = 0, moved = 0;
	uint64_t cap1, cap2;
	volatile unsigned int i;
	uint32_t s1, s2;
	pthread_t t;

	if (access(PUBLISH_DELAY, F_OK))
		SKIP(return, "not a test build of wsem.ko (no %s)", PUBLISH_DELAY);
	ASSERT_EQ(0, wsem_set_capacity(self->fd, weights[0]));
	ASSERT_EQ(0, write_file(PUBLISH_DELAY, "200"));
	ASSERT_EQ(0, pthread_create(&t, NULL, writer_run, &w));
	while (now_ns() < end || (moved < 10 && now_ns() < end + 4 * NSEC)) {
		reads++;
		s1 = __atomic_load_n(&self->c->seq, __ATOMIC_ACQUIRE);
		cap1 = *(volatile const uint64_t *)&self->c->capacity;
		for (i = 0; i < 2000; i++)
			;
		cap2 = *(volatile const uint64_t *)&self->c->capacity;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		s2 = __atomic_load_n(&self->c->seq, __ATOMIC_RELAXED);
		if (s1 & 1)
			odd++;
		if (cap1 != cap2) {
			moved++;
			/* Within one write the seq stays odd: marked. */
			if (s1 == s2 && !(s1 & 1) && !unmarked++)
				TH_LOG("capacity %llu -> %llu under seq %u",
				       (unsigned long long)cap1,
				       (unsigned long long)cap2, s1);
		}
	}
	w.stop = true;
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(0, write_file(PUBLISH_DELAY, "0"));
	EXPECT_EQ(0, w.err);
	EXPECT_LT(0, odd);
	EXPECT_LT(0, moved);
	EXPECT_EQ(0, unmarked);
	TH_LOG("%llu reads, %llu with seq odd, %llu saw the capacity move, %llu writer rounds",
	       (unsigned long long)reads, (unsigned long long)odd,
	       (unsigned long long)moved, (unsigned long long)w.rounds);
}

TEST_HARNESS_MAIN
