// SPDX-License-Identifier: GPL-2.0
/*
 * Limits nest (SPEC.md): child semaphores.
 *
 *  - weight acquired on a child is acquired on every ancestor, at once, and
 *    given back to all of them by a release, a close or a SIGKILL;
 *  - a child's capacity bounds its holders and its children together, and
 *    the tree's never exceed the root's;
 *  - one arrival order for a whole tree: on the semaphore it asked for,
 *    nobody is granted before an earlier waiter; on an ancestor, only
 *    once it fits every semaphore below there (a child at its own limit
 *    never stops its siblings, a large request that fits its child is
 *    never overtaken at the parent);
 *  - a shrink anywhere on its line fails a waiter heavier than that;
 *  - depth is bounded (WSEM_DEPTH_MAX, ELOOP past it); a parent lives while
 *    it has children, unlinked or not;
 *  - stat shows depth and parent; the holders view of a parent shows what
 *    each child holds of it;
 *  - a poller of a parent hears a release made through a child;
 *  - bad calls fail with the errno that names the cause.
 *
 * Each test builds its own tree of anonymous semaphores through
 * WSEM_IOC_OPEN (WSEM_OPEN_CHILD), but where a name is the point.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <wsem.h>

#include "kselftest_harness.h"
#include "util.h"

/* An anonymous child of @parent's semaphore, of @capacity. */
static int child(int parent, uint64_t capacity)
{
	return open_with(NULL, WSEM_OPEN_ANON | WSEM_OPEN_CHILD, capacity,
			 parent);
}

static uint64_t used(int fd)
{
	return stat_of(fd).used;
}

FIXTURE(nest) {
	int root;	/* capacity 4 */
	int a, b;	/* its children, capacity 3 each */
};

FIXTURE_SETUP(nest)
{
	self->root = self->a = self->b = -1;
	if (access("/dev/wsem", F_OK))
		SKIP(return, "/dev/wsem is missing (module not loaded)");
	self->root = wsem_open_anon(4, 0);
	ASSERT_LE(0, self->root);
	self->a = child(self->root, 3);
	ASSERT_LE(0, self->a);
	self->b = child(self->root, 3);
	ASSERT_LE(0, self->b);
}

FIXTURE_TEARDOWN(nest)
{
	if (self->b >= 0)
		close(self->b);
	if (self->a >= 0)
		close(self->a);
	if (self->root >= 0)
		close(self->root);
}

/* A child's weight is the parent's too; siblings share the parent's. */
TEST_F(nest, a_child_takes_from_its_parent)
{
	struct wsem_stat st;

	st = stat_of(self->a);
	EXPECT_EQ(1, st.depth);
	EXPECT_EQ(fdinfo_num(self->root, "wsem-id"), (long long)st.parent_id);
	EXPECT_EQ(0, stat_of(self->root).depth);
	EXPECT_EQ(0, stat_of(self->root).parent_id);

	ASSERT_EQ(0, wsem_tryacquire(self->a, 3));
	EXPECT_EQ(3, used(self->a));
	EXPECT_EQ(3, used(self->root));
	/* The root has 1 left: b may take 1, not 2, though b has 3. */
	EXPECT_EQ(-1, wsem_tryacquire(self->b, 2));
	EXPECT_EQ(EAGAIN, errno);
	ASSERT_EQ(0, wsem_tryacquire(self->b, 1));
	EXPECT_EQ(4, used(self->root));
	EXPECT_EQ(1, used(self->b));
	/* a's own capacity bounds it: 4 > 3 can never be granted there. */
	EXPECT_EQ(-1, wsem_tryacquire(self->a, 4));
	EXPECT_EQ(EINVAL, errno);
	ASSERT_EQ(0, wsem_release(self->a, 2));
	EXPECT_EQ(1, used(self->a));
	EXPECT_EQ(2, used(self->root));
	ASSERT_EQ(0, wsem_release(self->a, 1));
	ASSERT_EQ(0, wsem_release(self->b, 1));
	EXPECT_EQ(0, used(self->root));
}

/* A grandchild's weight counts on each of its ancestors. */
TEST_F(nest, a_grandchild_counts_on_every_ancestor)
{
	int g = child(self->a, 2);

	ASSERT_LE(0, g);
	EXPECT_EQ(2, stat_of(g).depth);
	ASSERT_EQ(0, wsem_acquire(g, 2));
	EXPECT_EQ(2, used(g));
	EXPECT_EQ(2, used(self->a));
	EXPECT_EQ(2, used(self->root));
	EXPECT_EQ(0, used(self->b));
	/* a has 1 left, for its own holders and g's together. */
	EXPECT_EQ(-1, wsem_tryacquire(self->a, 2));
	EXPECT_EQ(EAGAIN, errno);
	/* Closing gives back on every level at once. */
	ASSERT_EQ(0, close(g));
	EXPECT_EQ(0, used(self->a));
	EXPECT_EQ(0, used(self->root));
}

/*
 * One arrival order for the tree: a waiter that fits its own child holds
 * up the parent, and nobody overtakes it there.
 */
TEST_F(nest, one_order_for_the_whole_tree)
{
	int w = wsem_reopen(self->a, 0);
	struct wsem_stat st;

	ASSERT_LE(0, w);
	ASSERT_EQ(0, wsem_acquire(self->root, 2));
	/* a's waiter of 3 does not fit on the root (2 held of 4). */
	ASSERT_EQ(-1, wsem_acquire_async(w, 3));
	ASSERT_EQ(EINPROGRESS, errno);
	st = stat_of(self->root);
	EXPECT_EQ(1, st.waiters);
	EXPECT_EQ(3, st.queued_weight);
	EXPECT_EQ(1, stat_of(self->a).waiters);
	EXPECT_EQ(0, stat_of(self->b).waiters);
	/* b's 1 would fit, but it came later: no barging, on any level. */
	EXPECT_EQ(-1, wsem_tryacquire(self->b, 1));
	EXPECT_EQ(EAGAIN, errno);
	EXPECT_EQ(-1, wsem_tryacquire(self->root, 1));
	EXPECT_EQ(EAGAIN, errno);
	ASSERT_EQ(0, wsem_release(self->root, 1));
	EXPECT_EQ(0, wsem_acquire_result(w));
	EXPECT_EQ(3, stat_of(w).held);
	EXPECT_EQ(4, used(self->root));
	ASSERT_EQ(0, close(w));
	ASSERT_EQ(0, wsem_release(self->root, 1));
	EXPECT_EQ(0, used(self->root));
}

/*
 * A child at its own limit, with a waiter queued that only its own
 * capacity holds back, never stops its sibling while the parent has room
 * (issue 42's containers: a on gpu-a, b on gpu-b).
 */
TEST_F(nest, a_full_child_never_stops_its_siblings)
{
	int w = wsem_reopen(self->a, 0), late = wsem_reopen(self->b, 0);

	ASSERT_LE(0, w);
	ASSERT_LE(0, late);
	ASSERT_EQ(0, wsem_acquire(self->a, 3));
	/* a is full: this waits for a, not for the root (1 of 4 free). */
	ASSERT_EQ(-1, wsem_acquire_async(w, 1));
	ASSERT_EQ(EINPROGRESS, errno);
	EXPECT_EQ(1, stat_of(self->root).waiters);
	/* b is granted at once, by a try and by a plain acquire. */
	EXPECT_EQ(0, wsem_tryacquire(self->b, 1));
	EXPECT_EQ(0, wsem_release(self->b, 1));
	EXPECT_EQ(0, wsem_acquire_timeout(self->b, 1, 0));
	EXPECT_EQ(4, used(self->root));
	/* A later waiter on b queues behind nobody of a's: b's release ... */
	ASSERT_EQ(-1, wsem_acquire_async(late, 1));
	ASSERT_EQ(EINPROGRESS, errno);
	ASSERT_EQ(0, wsem_release(self->b, 1));
	/* ... grants it, though a's waiter came first. */
	EXPECT_EQ(0, wsem_acquire_result(late));
	EXPECT_EQ(-1, wsem_acquire_result(w));
	EXPECT_EQ(EINPROGRESS, errno);
	/* a gives back: its waiter fits a and the root (3 held of 4). */
	ASSERT_EQ(0, wsem_release(self->a, 1));
	EXPECT_EQ(0, wsem_acquire_result(w));
	EXPECT_EQ(3, used(self->a));
	EXPECT_EQ(4, used(self->root));
	ASSERT_EQ(0, close(w));
	ASSERT_EQ(0, close(late));
	ASSERT_EQ(0, wsem_release(self->a, 2));
	EXPECT_EQ(0, used(self->root));
	EXPECT_EQ(0, stat_of(self->root).waiters);
}

/*
 * A waiter holds up its parent from the moment it fits its own child, not
 * before: then a stream of small requests from a sibling never overtakes
 * it at the parent, however large it is.
 */
TEST_F(nest, a_waiter_holds_the_parent_once_it_fits_its_child)
{
	int w = wsem_reopen(self->a, 0), h = wsem_reopen(self->a, 0);
	int i;

	ASSERT_LE(0, w);
	ASSERT_LE(0, h);
	ASSERT_EQ(0, wsem_acquire(h, 1));
	ASSERT_EQ(0, wsem_acquire(self->b, 1));
	/* 3 on a does not fit a (1 of 3 held): the root is not held up. */
	ASSERT_EQ(-1, wsem_acquire_async(w, 3));
	ASSERT_EQ(EINPROGRESS, errno);
	EXPECT_EQ(0, wsem_tryacquire(self->b, 1));
	/* b holds 2, the root 3 of 4. */
	ASSERT_EQ(0, close(h));
	/* Now 3 fits a, not the root (2 held): it holds the root up. */
	EXPECT_EQ(-1, wsem_acquire_result(w));
	EXPECT_EQ(EINPROGRESS, errno);
	for (i = 0; i < 3; i++) {
		EXPECT_EQ(-1, wsem_tryacquire(self->b, 1));
		EXPECT_EQ(EAGAIN, errno);
		EXPECT_EQ(-1, wsem_tryacquire(self->root, 1));
		EXPECT_EQ(EAGAIN, errno);
	}
	EXPECT_EQ(2, used(self->root));
	ASSERT_EQ(0, wsem_release(self->b, 1));
	EXPECT_EQ(0, wsem_acquire_result(w));
	EXPECT_EQ(4, used(self->root));
	ASSERT_EQ(0, close(w));
	ASSERT_EQ(0, wsem_release(self->b, 1));
	EXPECT_EQ(0, used(self->root));
}

/*
 * A waiter that fit its child, and so held up the parent, but fits the
 * child no more (an earlier request took the child's room first) holds up
 * the parent no more either.
 */
TEST_F(nest, a_waiter_that_no_longer_fits_its_child_lets_go)
{
	int g = child(self->a, 2), h, early, w, late;

	ASSERT_LE(0, g);
	h = wsem_reopen(g, 0);
	early = wsem_reopen(g, 0);
	w = wsem_reopen(self->a, 0);
	late = wsem_reopen(self->b, 0);
	ASSERT_LE(0, h);
	ASSERT_LE(0, early);
	ASSERT_LE(0, w);
	ASSERT_LE(0, late);
	/* g: 1 of 2 held, a: 1 of 3, the root 3 of 4 (b holds 2). */
	ASSERT_EQ(0, wsem_acquire(h, 1));
	ASSERT_EQ(0, wsem_acquire(self->b, 2));
	/* early (2 on g) waits for g; w (2 on a) fits a, not the root. */
	ASSERT_EQ(-1, wsem_acquire_async(early, 2));
	ASSERT_EQ(EINPROGRESS, errno);
	ASSERT_EQ(-1, wsem_acquire_async(w, 2));
	ASSERT_EQ(EINPROGRESS, errno);
	EXPECT_EQ(-1, wsem_tryacquire(self->b, 1));
	EXPECT_EQ(EAGAIN, errno);
	/* g has room: early, first in line, takes a's room and the root's. */
	ASSERT_EQ(0, close(h));
	EXPECT_EQ(0, wsem_acquire_result(early));
	EXPECT_EQ(2, used(self->a));
	EXPECT_EQ(4, used(self->root));
	/* w no longer fits a (2 + 2 > 3): a later request on b goes first. */
	ASSERT_EQ(-1, wsem_acquire_async(late, 1));
	ASSERT_EQ(EINPROGRESS, errno);
	ASSERT_EQ(0, wsem_release(self->b, 1));
	EXPECT_EQ(0, wsem_acquire_result(late));
	EXPECT_EQ(-1, wsem_acquire_result(w));
	EXPECT_EQ(EINPROGRESS, errno);
	/* a has room again: w, held up by the root no more, is granted. */
	ASSERT_EQ(0, close(early));
	EXPECT_EQ(0, wsem_acquire_result(w));
	EXPECT_EQ(4, used(self->root));
	ASSERT_EQ(0, close(w));
	ASSERT_EQ(0, close(late));
	ASSERT_EQ(0, wsem_release(self->b, 1));
	ASSERT_EQ(0, close(g));
	EXPECT_EQ(0, used(self->root));
	EXPECT_EQ(0, stat_of(self->root).waiters);
}

/*
 * A request that stopped fitting its child (one before it was granted
 * there) is never passed on that child by a later one: the later one goes
 * back down behind it, as it would have queued had it come after.
 */
TEST_F(nest, a_later_request_never_passes_one_that_went_back_down)
{
	int x = wsem_reopen(self->a, 0), w = wsem_reopen(self->a, 0);
	int v = wsem_reopen(self->a, 0);

	ASSERT_LE(0, x);
	ASSERT_LE(0, w);
	ASSERT_LE(0, v);
	/* The root full: x (2), w (2) and v (1), each fitting a, wait. */
	ASSERT_EQ(0, wsem_acquire(self->root, 4));
	ASSERT_EQ(-1, wsem_acquire_async(x, 2));
	ASSERT_EQ(EINPROGRESS, errno);
	ASSERT_EQ(-1, wsem_acquire_async(w, 2));
	ASSERT_EQ(EINPROGRESS, errno);
	ASSERT_EQ(-1, wsem_acquire_async(v, 1));
	ASSERT_EQ(EINPROGRESS, errno);
	/* x takes 2 of a's 3: w no longer fits, v would but came later. */
	ASSERT_EQ(0, wsem_release(self->root, 4));
	EXPECT_EQ(0, wsem_acquire_result(x));
	EXPECT_EQ(-1, wsem_acquire_result(w));
	EXPECT_EQ(EINPROGRESS, errno);
	EXPECT_EQ(-1, wsem_acquire_result(v));
	EXPECT_EQ(EINPROGRESS, errno);
	EXPECT_EQ(2, used(self->a));
	/* x gone: w first, then v beside it (2 + 1 = 3). */
	ASSERT_EQ(0, wsem_release(x, 2));
	EXPECT_EQ(0, wsem_acquire_result(w));
	EXPECT_EQ(0, wsem_acquire_result(v));
	EXPECT_EQ(3, used(self->a));
	ASSERT_EQ(0, close(v));
	ASSERT_EQ(0, close(w));
	ASSERT_EQ(0, close(x));
	EXPECT_EQ(0, used(self->root));
	EXPECT_EQ(0, stat_of(self->root).waiters);
}

/* A shrink on a waiter's line fails it if it can no longer fit. */
TEST_F(nest, a_shrink_above_fails_a_heavier_waiter)
{
	int w = wsem_reopen(self->a, 0);

	ASSERT_LE(0, w);
	ASSERT_EQ(0, wsem_acquire(self->root, 4));
	ASSERT_EQ(-1, wsem_acquire_async(w, 3));
	ASSERT_EQ(EINPROGRESS, errno);
	/* The root shrinks below 3: a's waiter can never fit. */
	ASSERT_EQ(0, wsem_set_capacity(self->root, 2));
	EXPECT_EQ(-1, wsem_acquire_result(w));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, stat_of(self->a).waiters);
	EXPECT_EQ(0, stat_of(self->root).waiters);
	close(w);
}

/*
 * A shrink above fails the first waiter of a child's queue: the one
 * behind it, which fits the line, is granted by the same shrink.
 */
TEST_F(nest, a_shrink_that_fails_a_childs_first_waiter_grants_the_next)
{
	int h = wsem_reopen(self->a, 0), x = wsem_reopen(self->a, 0);
	int y = wsem_reopen(self->a, 0);

	ASSERT_LE(0, h);
	ASSERT_LE(0, x);
	ASSERT_LE(0, y);
	/* a holds 1 of its 3: x (3) waits in a's queue, y (1) behind it. */
	ASSERT_EQ(0, wsem_acquire(h, 1));
	ASSERT_EQ(-1, wsem_acquire_async(x, 3));
	ASSERT_EQ(EINPROGRESS, errno);
	ASSERT_EQ(-1, wsem_acquire_async(y, 1));
	ASSERT_EQ(EINPROGRESS, errno);
	/* The root shrinks to 2: x can never fit; y fits a and the root. */
	ASSERT_EQ(0, wsem_set_capacity(self->root, 2));
	EXPECT_EQ(-1, wsem_acquire_result(x));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, wsem_acquire_result(y));
	EXPECT_EQ(2, used(self->root));
	EXPECT_EQ(0, stat_of(self->root).waiters);
	ASSERT_EQ(0, close(y));
	ASSERT_EQ(0, close(x));
	ASSERT_EQ(0, close(h));
	EXPECT_EQ(0, used(self->root));
}

/*
 * One shrink fails the first waiters of two sibling queues: the requests
 * behind them are granted in their order, not queue by queue (e2 came
 * before e1 and takes the room of s they both want).
 */
TEST(one_shrink_frees_two_queues_in_ticket_order)
{
	int r = wsem_open_anon(10, 0), s, c1, c2, h1, h2, d1, d2, e1, e2;

	ASSERT_LE(0, r);
	s = child(r, 10);
	ASSERT_LE(0, s);
	c1 = child(s, 8);
	c2 = child(s, 8);
	ASSERT_LE(0, c1);
	ASSERT_LE(0, c2);
	h1 = wsem_reopen(c1, 0);
	h2 = wsem_reopen(c2, 0);
	d1 = wsem_reopen(c1, 0);
	d2 = wsem_reopen(c2, 0);
	e1 = wsem_reopen(c1, 0);
	e2 = wsem_reopen(c2, 0);
	ASSERT_LE(0, h1 | h2 | d1 | d2 | e1 | e2);
	ASSERT_EQ(0, wsem_acquire(h1, 2));
	ASSERT_EQ(0, wsem_acquire(h2, 2));
	/* d1, d2 (7 each) wait in their queues; e2, then e1 (2), behind. */
	ASSERT_EQ(-1, wsem_acquire_async(d1, 7));
	ASSERT_EQ(-1, wsem_acquire_async(d2, 7));
	ASSERT_EQ(-1, wsem_acquire_async(e2, 2));
	ASSERT_EQ(-1, wsem_acquire_async(e1, 2));
	ASSERT_EQ(EINPROGRESS, errno);
	/* s to 6: d1 and d2 fail; s has room for one of e2 and e1. */
	ASSERT_EQ(0, wsem_set_capacity(s, 6));
	EXPECT_EQ(-1, wsem_acquire_result(d1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, wsem_acquire_result(d2));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, wsem_acquire_result(e2));
	EXPECT_EQ(-1, wsem_acquire_result(e1));
	EXPECT_EQ(EINPROGRESS, errno);
	EXPECT_EQ(6, used(s));
	close(e1);
	close(e2);
	close(d1);
	close(d2);
	close(h1);
	close(h2);
	close(c1);
	close(c2);
	close(s);
	EXPECT_EQ(0, used(r));
	close(r);
}

/* Waiters that shrinks' failing walks looked at, in a test build; or -1. */
static long long shrink_walked(void)
{
	return read_num("/sys/module/wsem/parameters/test_shrink_walked");
}

/*
 * A shrink that fails many waiters looks at each waiter once, not again
 * from the head after every batch it wakes: N that fit, then N that no
 * longer do, cost about 2N looks, not N/8 times N.
 */
TEST(a_shrink_looks_at_each_waiter_once)
{
	enum { N = 64 };
	long long before, looked;
	int root, fds[2 * N];
	int i;

	if (access("/dev/wsem", F_OK))
		SKIP(return, "/dev/wsem is missing (module not loaded)");
	before = shrink_walked();
	if (before < 0)
		SKIP(return, "not a test build (no test_shrink_walked)");
	root = wsem_open_anon(10, 0);
	ASSERT_LE(0, root);
	ASSERT_EQ(0, wsem_acquire(root, 10));
	for (i = 0; i < 2 * N; i++) {
		fds[i] = wsem_reopen(root, 0);
		ASSERT_LE(0, fds[i]);
		ASSERT_EQ(-1, wsem_acquire_async(fds[i], i < N ? 1 : 8));
		ASSERT_EQ(EINPROGRESS, errno);
	}
	ASSERT_EQ(0, wsem_set_capacity(root, 5));
	looked = shrink_walked() - before;
	/* Each once, and the one it stopped at once more per batch of 8. */
	EXPECT_LE(2 * N, looked);
	EXPECT_GE(2 * N + N / 8, looked);
	for (i = 0; i < 2 * N; i++) {
		if (i < N) {
			EXPECT_EQ(-1, wsem_acquire_result(fds[i]));
			EXPECT_EQ(EINPROGRESS, errno);
		} else {
			EXPECT_EQ(-1, wsem_acquire_result(fds[i]));
			EXPECT_EQ(EINVAL, errno);
		}
	}
	EXPECT_EQ(N, stat_of(root).waiters);
	for (i = 0; i < 2 * N; i++)
		close(fds[i]);
	EXPECT_EQ(0, stat_of(root).waiters);
	close(root);
}

/* The holder's SIGKILL gives its child weight back on every level. */
TEST_F(nest, sigkill_gives_back_on_every_level)
{
	int ready[2], status;
	pid_t pid;
	char c;

	ASSERT_EQ(0, pipe(ready));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int mine = wsem_reopen(self->a, 0);

		if (mine < 0 || wsem_acquire(mine, 3) ||
		    write(ready[1], "x", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(ready[1]);
	ASSERT_EQ(1, read(ready[0], &c, 1));
	close(ready[0]);
	EXPECT_EQ(3, used(self->root));
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, used(self->a));
	EXPECT_EQ(0, used(self->root));
}

/* The holders view of a parent: what each child holds of it. */
TEST_F(nest, the_parent_shows_what_each_child_holds)
{
	struct wsem_holder h[8];
	size_t nholders, nchildren;
	char text[4096];
	ssize_t n;
	int i, kids = 0;

	ASSERT_EQ(0, wsem_acquire(self->a, 2));
	ASSERT_EQ(0, wsem_acquire(self->b, 1));
	ASSERT_EQ(0, wsem_acquire(self->root, 1));
	memset(h, 0, sizeof(h));
	n = wsem_holders(self->root, h, 8, &nholders);
	ASSERT_LE(1, n);
	EXPECT_EQ(1, nholders);
	for (i = 0; i < 8; i++) {
		if (!(h[i].flags & WSEM_HOLDER_CHILD))
			continue;
		kids++;
		EXPECT_TRUE(h[i].weight == 2 || h[i].weight == 1);
		EXPECT_EQ('[', h[i].label[0]);
	}
	EXPECT_EQ(2, kids);
	/* wsem_holders_children() counts them, and says there are two */
	memset(h, 0, sizeof(h));
	nholders = nchildren = 9;
	EXPECT_EQ(3, wsem_holders_children(self->root, h, 8, &nholders,
					   &nchildren));
	EXPECT_EQ(1, nholders);
	EXPECT_EQ(2, nchildren);
	EXPECT_EQ(0, h[0].flags);
	EXPECT_EQ(WSEM_HOLDER_CHILD, h[1].flags);
	EXPECT_EQ(WSEM_HOLDER_CHILD, h[2].flags);
	EXPECT_EQ(3, h[1].weight + h[2].weight);
	EXPECT_EQ(3, wsem_holders_children(self->root, NULL, 0, NULL, NULL));
	memset(text, 0, sizeof(text));
	ASSERT_LT(0, pread(self->root, text, sizeof(text) - 1, 0));
	EXPECT_NE(NULL, strstr(text, " weight 2\n"));
	EXPECT_NE(NULL, strstr(text, "\nchild: ["));
	memset(text, 0, sizeof(text));
	ASSERT_LT(0, pread(self->a, text, sizeof(text) - 1, 0));
	EXPECT_NE(NULL, strstr(text, "\ndepth: 1\n"));
}

static void *release_later(void *p)
{
	int fd = *(int *)p;

	usleep(100 * 1000);
	wsem_release(fd, 1);
	return NULL;
}

/*
 * poll(2) @fd for POLLIN while a thread releases 1 through *@releaser
 * 100 ms from now.  Return: whether the poll was woken by it, not ended
 * by its timeout (after which poll looks once more, and would report
 * POLLIN all the same).
 */
static bool poll_woken_by_release(int fd, int *releaser)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int64_t start = clock_ns(CLOCK_MONOTONIC);
	pthread_t th;
	int n;

	if (pthread_create(&th, NULL, release_later, releaser))
		return false;
	n = poll(&p, 1, 20000);
	pthread_join(th, NULL);
	return n == 1 && (p.revents & POLLIN) &&
	       clock_ns(CLOCK_MONOTONIC) - start < 10 * 1000000000LL;
}

/* A poller of the root hears a release made through a child. */
TEST_F(nest, a_parent_poller_hears_a_child_release)
{
	struct pollfd p = { .fd = self->root, .events = POLLIN };

	ASSERT_EQ(0, wsem_acquire(self->a, 3));
	ASSERT_EQ(0, wsem_acquire(self->root, 1));
	EXPECT_EQ(0, poll(&p, 1, 0));
	EXPECT_TRUE(poll_woken_by_release(self->root, &self->a));
}

/*
 * A poller of a sibling hears a release made through its sibling (the
 * parent had no room), and an idle waiter of a child hears its last
 * holder go: a change wakes every semaphore of the tree that is polled.
 */
TEST_F(nest, a_sibling_poller_and_an_idle_waiter_hear_the_tree)
{
	struct pollfd p = { .fd = self->b, .events = POLLIN };
	int idle = wsem_reopen(self->a, 0);
	int64_t start;
	pthread_t th;

	ASSERT_LE(0, idle);
	ASSERT_EQ(0, wsem_acquire(self->a, 3));
	ASSERT_EQ(0, wsem_acquire(self->root, 1));
	EXPECT_EQ(0, poll(&p, 1, 0));
	EXPECT_TRUE(poll_woken_by_release(self->b, &self->a));

	EXPECT_EQ(-1, wsem_wait_idle(idle, 0));
	ASSERT_EQ(0, wsem_release(self->a, 1));
	/* Woken by the release, not at its timeout (which looks again). */
	start = clock_ns(CLOCK_MONOTONIC);
	ASSERT_EQ(0, pthread_create(&th, NULL, release_later, &self->a));
	EXPECT_EQ(0, wsem_wait_idle(idle, 20000000000LL));
	EXPECT_GT(10 * 1000000000LL, clock_ns(CLOCK_MONOTONIC) - start);
	ASSERT_EQ(0, pthread_join(th, NULL));
	EXPECT_EQ(0, stat_of(self->a).used);
	EXPECT_EQ(0, close(idle));
}

/* Depth is bounded; a parent lives while it has children. */
#define TREE_PARAM	"/sys/module/wsem/parameters/max_tree_size"

/*
 * A tree holds at most max_tree_size semaphores, root included: the next
 * child is ENOSPC, from this IPC namespace or from a new one (a tree's
 * bound is not a namespace's); a child that exists still opens.
 */
TEST(a_tree_is_bounded)
{
	int root, kid, grandkid, named, again, extra, status;
	char old[32], name[WSEM_NAME_MAX];
	pid_t pid;

	if (access("/dev/wsem", F_OK))
		SKIP(return, "/dev/wsem is missing (module not loaded)");
	if (geteuid() || read_file(TREE_PARAM, old, sizeof(old)))
		SKIP(return, "needs root and the max_tree_size parameter");
	ASSERT_EQ(0, write_file(TREE_PARAM, "4"));
	snprintf(name, sizeof(name), "nest.bounded.%d", getpid());
	root = wsem_open_anon(8, 0);
	kid = child(root, 4);
	grandkid = child(kid, 2);
	named = wsem_open_child(root, name, O_EXCL, 0600, 1);
	EXPECT_LE(0, root);
	EXPECT_LE(0, kid);
	EXPECT_LE(0, grandkid);
	EXPECT_LE(0, named);
	extra = child(root, 1);
	EXPECT_EQ(-1, extra);
	EXPECT_EQ(ENOSPC, errno);
	EXPECT_EQ(-1, child(grandkid, 1));
	EXPECT_EQ(ENOSPC, errno);
	/* The named child exists: opening it again needs no room. */
	again = wsem_open_child(root, name, 0, 0600, 1);
	EXPECT_LE(0, again);
	/* From another IPC namespace, through the same parent: no room. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (unshare(CLONE_NEWIPC))
			_exit(10);
		if (child(root, 1) != -1 || errno != ENOSPC)
			_exit(11);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	/* A child gone makes room for one. */
	ASSERT_EQ(0, close(grandkid));
	extra = child(kid, 1);
	EXPECT_LE(0, extra);
	ASSERT_EQ(0, write_file(TREE_PARAM, old));
	close(extra);
	close(again);
	ASSERT_EQ(0, wsem_unlink(name));
	close(named);
	close(kid);
	close(root);
}

#define KIDS_PARAM	"/sys/module/wsem/parameters/max_children_per_user"
#define KIDS_USER	65534	/* nobody */

/*
 * As KIDS_USER: in each of 3 new user and IPC namespaces in turn (each
 * with fresh per-namespace limits), up to 4 children of @parent, all
 * kept open; exits with how many were made, or 100 + a step that failed
 * (110 + errno for a child refused but with ENOSPC), 99 if user
 * namespaces are not allowed.
 */
static int kids_in_new_namespaces(int parent)
{
	int made = 0, round, i;

	if (setgroups(0, NULL) || setgid(KIDS_USER) || setuid(KIDS_USER) ||
	    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0))
		return 101;
	for (round = 0; round < 3; round++) {
		if (unshare(CLONE_NEWUSER | CLONE_NEWIPC))
			return round ? 102 : 99;
		/* The same ids inside, as a rootless container maps its own. */
		if (write_file("/proc/self/setgroups", "deny") ||
		    write_file("/proc/self/uid_map", "65534 65534 1") ||
		    write_file("/proc/self/gid_map", "65534 65534 1"))
			return 104;
		for (i = 0; i < 4; i++) {
			if (child(parent, 1) >= 0)
				made++;
			else if (errno != ENOSPC)
				return 110 + errno % 100;
		}
	}
	return made;
}

/*
 * A child counts against its creator however many namespaces it makes:
 * max_children_per_user (here 3) bounds what one user creates under a
 * host's semaphore from 3 user and IPC namespaces of its own (12 without
 * the bound), and the count goes with the children; a bound of 0 admits
 * no child at all.
 */
TEST(children_count_against_their_creator_in_every_namespace)
{
	char old[32], name[WSEM_NAME_MAX];
	int parent, status, i;
	mode_t mask;
	pid_t pid;

	if (access("/dev/wsem", F_OK))
		SKIP(return, "/dev/wsem is missing (module not loaded)");
	if (geteuid() || read_file(KIDS_PARAM, old, sizeof(old)))
		SKIP(return, "needs root and the max_children_per_user parameter");
	snprintf(name, sizeof(name), "nest.kids.%d", getpid());
	mask = umask(0);
	parent = wsem_open(name, O_CREAT | O_EXCL, 0666, 8);
	umask(mask);
	ASSERT_LE(0, parent);
	ASSERT_EQ(0, write_file(KIDS_PARAM, "3"));
	for (i = 0; i < 2; i++) {
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid)
			_exit(kids_in_new_namespaces(parent));
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(WIFEXITED(status));
		if (WEXITSTATUS(status) == 99)
			break;
		/* The second time: the first one's children are gone. */
		EXPECT_EQ(3, WEXITSTATUS(status));
	}
	/* A bound of 0: not even a user's first child. */
	ASSERT_EQ(0, write_file(KIDS_PARAM, "0"));
	pid = WEXITSTATUS(status) == 99 ? -1 : fork();
	if (!pid)
		_exit(kids_in_new_namespaces(parent));
	if (pid > 0) {
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		EXPECT_EQ(0, WEXITSTATUS(status));
	}
	/* Root, with CAP_SYS_RESOURCE, is not bound by it. */
	for (i = 0; i < 5; i++)
		EXPECT_LE(0, child(parent, 1));
	ASSERT_EQ(0, write_file(KIDS_PARAM, old));
	ASSERT_EQ(0, wsem_unlink(name));
	close(parent);
	if (WEXITSTATUS(status) == 99)
		SKIP(return, "unprivileged user namespaces are not allowed");
}

TEST(depth_is_bounded_and_parents_live_on)
{
	int fds[WSEM_DEPTH_MAX + 1], i, last, g;
	char name[WSEM_NAME_MAX];

	if (access("/dev/wsem", F_OK))
		SKIP(return, "/dev/wsem is missing (module not loaded)");
	snprintf(name, sizeof(name), "nest.%d", getpid());
	fds[0] = wsem_open(name, O_CREAT | O_EXCL, 0600, 5);
	ASSERT_LE(0, fds[0]);
	for (i = 1; i <= WSEM_DEPTH_MAX; i++) {
		fds[i] = child(fds[i - 1], 5);
		ASSERT_LE(0, fds[i]) {
			TH_LOG("depth %d: %s", i, strerror(errno));
		}
	}
	EXPECT_EQ(WSEM_DEPTH_MAX, stat_of(fds[WSEM_DEPTH_MAX]).depth);
	EXPECT_EQ(-1, child(fds[WSEM_DEPTH_MAX], 5));
	EXPECT_EQ(ELOOP, errno);
	/* Unlink the root and close every handle but the deepest's. */
	ASSERT_EQ(0, wsem_unlink(name));
	last = fds[WSEM_DEPTH_MAX];
	for (i = 0; i < WSEM_DEPTH_MAX; i++)
		close(fds[i]);
	ASSERT_EQ(0, wsem_acquire(last, 5));
	g = child(last, 1);
	EXPECT_EQ(-1, g);
	EXPECT_EQ(ELOOP, errno);
	EXPECT_EQ(-1, wsem_tryacquire(last, 1));
	EXPECT_EQ(EAGAIN, errno);
	ASSERT_EQ(0, wsem_release(last, 5));
	close(last);
}

/* Bad calls fail with the errno that names the cause. */
TEST_F(nest, bad_calls_say_why)
{
	int efd = eventfd(0, EFD_CLOEXEC), unbound, ro, fd;
	char name[WSEM_NAME_MAX];

	ASSERT_LE(0, efd);
	unbound = open("/dev/wsem", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, unbound);
	EXPECT_EQ(-1, child(efd, 1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, child(unbound, 1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, child(-1, 1));
	EXPECT_EQ(EBADF, errno);
	EXPECT_EQ(-1, child(self->a, 0));
	EXPECT_EQ(EINVAL, errno);
	/* parent_fd without WSEM_OPEN_CHILD. */
	EXPECT_EQ(-1, open_with(NULL, WSEM_OPEN_ANON, 1, self->a));
	EXPECT_EQ(EINVAL, errno);
	snprintf(name, sizeof(name), "nest.bad.%d", getpid());
	fd = wsem_open(name, O_CREAT | O_EXCL, 0600, 2);
	ASSERT_LE(0, fd);
	/* A named child needs CREAT, and a name taken by another parent's. */
	EXPECT_EQ(-1, open_with(name, WSEM_OPEN_CHILD, 1, self->a));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, open_with(name, WSEM_OPEN_CREAT | WSEM_OPEN_CHILD, 1,
				self->a));
	EXPECT_EQ(EEXIST, errno);
	/* A parent through a handle that is not open for writing. */
	ro = wsem_open_watch(name, 0);
	ASSERT_LE(0, ro);
	EXPECT_EQ(-1, child(ro, 1));
	EXPECT_EQ(EBADF, errno);
	close(ro);
	EXPECT_EQ(0, wsem_unlink(name));
	close(fd);
	/* Nothing was made: the parents have no children but a and b. */
	EXPECT_EQ(0, stat_of(self->a).waiters);
	close(unbound);
	close(efd);
}

/* The same named child opened again is the same one. */
TEST_F(nest, a_named_child_opens_again)
{
	char name[WSEM_NAME_MAX];
	int c1, c2;

	snprintf(name, sizeof(name), "nest.again.%d", getpid());
	c1 = open_with(name, WSEM_OPEN_CREAT | WSEM_OPEN_CHILD, 2, self->a);
	ASSERT_LE(0, c1);
	c2 = open_with(name, WSEM_OPEN_CREAT | WSEM_OPEN_CHILD, 9, self->a);
	ASSERT_LE(0, c2);
	ASSERT_EQ(0, wsem_acquire(c1, 2));
	EXPECT_EQ(2, stat_of(c2).used);
	EXPECT_EQ(2, stat_of(c2).capacity);
	EXPECT_EQ(2, used(self->root));
	EXPECT_EQ(0, wsem_unlink(name));
	close(c1);
	close(c2);
	EXPECT_EQ(0, used(self->root));
}

TEST_HARNESS_MAIN
