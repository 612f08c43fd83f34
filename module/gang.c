// SPDX-License-Identifier: GPL-2.0
/*
 * wsem: gangs, requests for weight on several semaphores at once
 * (wsem_acquire_many(), wait.c; struct wsem_gang in wsem.h).  A gang's
 * parts are queued together, and the gang is granted or ended, by its own
 * task (or its work item while parked) under the locks of all its trees;
 * a grant walk of one tree only pokes it (wsem_poke_gang(), sem.c).
 *
 * Locking: every tree of the gang at once, in increasing order of the
 * roots' ids with spin_lock_nested() (wsem_gang_lock()); the grant walks
 * after a change take one tree's lock at a time.
 *
 * Calls sem.c (the queues, grants and wake-ups) and holders.c (what a
 * grant notes of its acquirer, wsem_add_held()).
 */
#include <linux/ktime.h>
#include <linux/overflow.h>
#include <linux/sched.h>

#include "wsem.h"
#include "wsem_trace.h"

/*
 * What @g asks of @sem, through its parts on it and on its descendants
 * together; U64_MAX if that does not fit in 64 bits.
 */
static u64 wsem_gang_need(const struct wsem_gang *g, const struct wsem *sem)
{
	const struct wsem_waiter *p;
	const struct wsem *s;
	unsigned int i;
	u64 need = 0;

	for (i = 0, p = g->part; i < g->nr; i++, p++) {
		for (s = p->handle->sem; s; s = s->parent) {
			if (s == sem && check_add_overflow(need, p->weight, &need))
				return U64_MAX;
		}
	}
	return need;
}

/*
 * Could @g ever be granted in @root's tree (in every tree, for a NULL
 * @root)?  Not if what it asks of one of its semaphores there, summed over
 * its parts, exceeds what that one can ever give (wsem_max_weight()), as a
 * single request fails that asks more than its line can give.  Under the
 * lock of that tree (of every tree).
 */
bool wsem_gang_can_fit(const struct wsem_gang *g, const struct wsem *root)
{
	const struct wsem_waiter *p;
	const struct wsem *s;
	unsigned int i;

	for (i = 0, p = g->part; i < g->nr; i++, p++) {
		if (root && p->handle->sem->root != root)
			continue;
		for (s = p->handle->sem; s; s = s->parent) {
			if (wsem_gang_need(g, s) > wsem_max_weight(s))
				return false;
		}
	}
	return true;
}

/*
 * Lock every tree of @g, in @g->roots order.  Sparse cannot count locks
 * taken in a loop: each one is told as released at once, and taken again
 * before wsem_gang_unlock() drops it.
 */
static void wsem_gang_lock(struct wsem_gang *g)
{
	unsigned int i;

	for (i = 0; i < g->nr_roots; i++) {
		spin_lock_nested(g->roots[i]->lock, i);
		__release(g->roots[i]->lock);
	}
}

static void wsem_gang_unlock(struct wsem_gang *g)
{
	unsigned int i = g->nr_roots;

	while (i--) {
		__acquire(g->roots[i]->lock);
		spin_unlock(g->roots[i]->lock);
	}
}

/*
 * After a gang changed its trees under wsem_gang_lock() and dropped the
 * locks (@before: each tree's root's events before the change): walk the
 * line of each of its parts, granting whoever fits now (its own parts
 * move up as they fit), and wake, tree by tree.  The walks need not
 * follow the change at once: whoever changes a tree in between walks it.
 */
static void wsem_gang_walk(struct wsem_gang *g, const __poll_t *before)
{
	struct wsem *root, *sem;
	struct wsem_wake wake;
	unsigned int i, j;

	for (i = 0; i < g->nr_roots; i++) {
		root = g->roots[i];
		wsem_wake_init(&wake);
		spin_lock(root->lock);
		for (j = 0; j < g->nr; j++) {
			sem = g->part[j].handle->sem;
			if (sem->root != root)
				continue;
			while (wsem_grant_waiters(sem, &wake))
				wsem_wake_batch(root, &wake);
		}
		wsem_unlock_and_wake(root, before[i], &wake);
	}
}

/* Does @g stand first and fit in each of its trees?  Under their locks. */
static bool wsem_gang_fits_all(struct wsem_gang *g)
{
	unsigned int i;

	for (i = 0; i < g->nr_roots; i++) {
		if (!wsem_gang_fits(g, g->roots[i]))
			return false;
	}
	return true;
}

/*
 * Under every tree's lock: grant @g if it stands first and fits in each
 * of its trees, or take it off the queues for @why (a negative errno) if
 * @why is not 0.  Return: 0 when granted, @why when it left, else
 * WSEM_WAITING.
 */
static int wsem_gang_end(struct wsem_gang *g, int why)
{
	struct wsem_wake wake;
	unsigned int i;
	u64 now;

	/* Its parts end together: ended once (granted or left), ended. */
	if (g->part[0].status != WSEM_WAITING)
		return g->part[0].status;
	if (!why && !wsem_gang_fits_all(g))
		return WSEM_WAITING;
	/* A gang's parts wake nobody: it is its own task that ends it. */
	wsem_wake_init(&wake);
	now = ktime_get_ns();
	for (i = 0; i < g->nr; i++) {
		struct wsem_waiter *p = &g->part[i];

		wsem_end_wait(p->handle->sem, p, why, now, &wake);
	}
	return why;
}

/*
 * Look at every tree of @g (after a grant walk asked, wsem_poke_gang()):
 * grant it if it fits everywhere, or end it if a shrink failed it.
 * Return: 0, the failure, or WSEM_WAITING.
 */
int wsem_gang_look(struct wsem_gang *g)
{
	__poll_t before[WSEM_MANY_MAX];
	unsigned int i;
	int ret;

	wsem_gang_lock(g);
	for (i = 0; i < g->nr_roots; i++)
		before[i] = wsem_events(g->roots[i]);
	WRITE_ONCE(g->look, false);
	ret = wsem_gang_end(g, READ_ONCE(g->fail));
	wsem_gang_unlock(g);
	if (ret != WSEM_WAITING)
		wsem_gang_walk(g, before);
	return ret;
}

/* Take @g off its queues for @why, a negative errno; return @why. */
int wsem_gang_leave(struct wsem_gang *g, int why)
{
	__poll_t before[WSEM_MANY_MAX];
	unsigned int i;

	wsem_gang_lock(g);
	for (i = 0; i < g->nr_roots; i++)
		before[i] = wsem_events(g->roots[i]);
	wsem_gang_end(g, why);
	wsem_gang_unlock(g);
	wsem_gang_walk(g, before);
	return why;
}

/*
 * Grant @g at once, under wsem_gang_lock(), which this drops: as a single
 * request granted at once, it took only room, so no walk can grant anyone
 * more and no poll event is new but demand, told to the pollers of each
 * part's line as wsem_acquire() tells them.
 */
static void wsem_gang_grant_at_once(struct wsem_gang *g)
{
	u32 tell[WSEM_MANY_MAX];
	struct wsem_waiter *p;
	struct wsem *sem;
	unsigned int i;

	for (i = 0, p = g->part; i < g->nr; i++, p++) {
		sem = p->handle->sem;
		wsem_add_held(sem, p->handle, p->weight, current);
		sem->stats.grants_at_once++;
		trace_wsem_grant(sem->id, current->pid, p->weight, 0);
	}
	for (i = 0, p = g->part; i < g->nr; i++, p++)
		tell[i] = wsem_demand_pollers(p->handle->sem);
	wsem_gang_unlock(g);
	for (i = 0, p = g->part; i < g->nr; i++, p++) {
		if (tell[i])
			wsem_tell_demand(p->handle->sem, tell[i]);
	}
}

/*
 * Under wsem_gang_lock(): may @g be granted at once?  Only if nobody is
 * held up on any line it asks of, and it fits in each of its trees.
 */
static bool wsem_gang_fits_now(struct wsem_gang *g)
{
	bool now = true;
	unsigned int i;

	for (i = 0; i < g->nr; i++)
		now &= wsem_may_grant_now(g->part[i].handle->sem, 0);
	for (i = 0; i < g->nr_roots; i++)
		now &= wsem_gang_weights_fit(g, g->roots[i]);
	return now;
}

/*
 * Under wsem_gang_lock(): grant @g at once if it can be (0), or fail it
 * if it never can (-EINVAL), dropping the locks; else WSEM_WAITING, the
 * locks still held.
 */
static int wsem_gang_grant_if_fits(struct wsem_gang *g)
{
	if (!wsem_gang_can_fit(g, NULL)) {
		wsem_gang_unlock(g);
		return -EINVAL;
	}
	if (!wsem_gang_fits_now(g))
		return WSEM_WAITING;
	wsem_gang_grant_at_once(g);
	return 0;
}

/* Why a gang not granted at once must not wait: -EAGAIN, -ETIMEDOUT, or 0. */
static int wsem_gang_no_wait(u64 flags, clockid_t clock,
			     const ktime_t *deadline)
{
	if (flags & WSEM_ACQUIRE_TRY)
		return -EAGAIN;
	if (deadline && ktime_compare(*deadline, wsem_now(clock)) <= 0)
		return -ETIMEDOUT;
	return 0;
}

/**
 * wsem_gang_try_at_once() - grant a gang at once, queueing nothing
 * @g: the gang, not queued (it may live on its caller's stack: nothing
 *	keeps a pointer to it)
 * @flags: WSEM_ACQUIRE_TRY or _DEADLINE, validated by the caller
 * @clock: the clock of @deadline
 * @deadline: absolute deadline, or NULL
 *
 * Context: Process context; takes and drops every tree's lock of @g.
 * Return: 0 when granted; -EINVAL (more than a semaphore can ever give);
 * -EAGAIN for a try and -ETIMEDOUT past the deadline, having changed
 * nothing; WSEM_WAITING when it must queue (wsem_gang_queue()).
 */
int wsem_gang_try_at_once(struct wsem_gang *g, u64 flags, clockid_t clock,
			  const ktime_t *deadline)
{
	int ret;

	wsem_gang_lock(g);
	ret = wsem_gang_grant_if_fits(g);
	if (ret != WSEM_WAITING)
		return ret;
	wsem_gang_unlock(g);
	return wsem_gang_no_wait(flags, clock, deadline) ?: WSEM_WAITING;
}

/*
 * Queue @g's parts at the tails of their trees' queues, or grant it at
 * once if every tree's queue is empty and it fits; with WSEM_ACQUIRE_TRY
 * or a deadline passed, neither (it never waited and changed nothing, as
 * for one).  Return: 0 when granted, -EAGAIN, -ETIMEDOUT, -EINVAL (more
 * than a semaphore can ever give), or WSEM_WAITING when queued.
 */
int wsem_gang_queue(struct wsem_gang *g, u64 flags, clockid_t clock,
		    const ktime_t *deadline)
{
	__poll_t before[WSEM_MANY_MAX];
	unsigned int i;
	u64 since;
	int ret;

	wsem_gang_lock(g);
	ret = wsem_gang_grant_if_fits(g);
	if (ret != WSEM_WAITING)
		return ret;
	ret = wsem_gang_no_wait(flags, clock, deadline);
	if (ret) {
		wsem_gang_unlock(g);
		return ret;
	}
	for (i = 0; i < g->nr_roots; i++)
		before[i] = wsem_events(g->roots[i]);
	/* Its wait starts here, one time for all parts: read only when queued. */
	since = ktime_get_ns();
	for (i = 0; i < g->nr; i++) {
		g->part[i].since = since;
		wsem_enqueue(g->part[i].handle->sem, &g->part[i]);
	}
	wsem_gang_unlock(g);
	wsem_gang_walk(g, before);
	return WSEM_WAITING;
}
