// SPDX-License-Identifier: GPL-2.0
/*
 * wsem: gangs, requests for weight on several semaphores at once
 * (wsem_acquire_many(); struct wsem_gang in wsem.h).  A gang's parts are
 * queued together, and the gang is granted or ended, by its own task (or
 * its work item while parked) under the locks of all its trees; a grant
 * walk of one tree only pokes it (wsem_poke_gang(), sem.c, which also
 * holds the fit checks that walk makes: the core cannot call back here).
 * A gang sleeps as a single request sleeps (wait.c's wsem_wait_check()
 * and wsem_sleep()), and task work parks it whole: it stays queued, on a
 * list of parked gangs, and a work item grants it in its task's place
 * meanwhile (wsem_gang_park()).
 *
 * Locking: every tree of the gang at once, in increasing order of the
 * roots' ids with spin_lock_nested() (wsem_gang_lock()); the grant walks
 * after a change take one tree's lock at a time.
 *
 * Calls sem.c (the queues, grants and wake-ups), holders.c (what a
 * grant notes of its acquirer, wsem_add_held()), wait.c (the sleep) and
 * params.c (test knobs).
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
static int wsem_gang_look(struct wsem_gang *g)
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
static int wsem_gang_leave(struct wsem_gang *g, int why)
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
static int wsem_gang_try_at_once(struct wsem_gang *g, u64 flags,
				 clockid_t clock, const ktime_t *deadline)
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
static int wsem_gang_queue(struct wsem_gang *g, u64 flags, clockid_t clock,
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

/* Gangs parked for task work (struct wsem_gang @parked): at most one per thread. */
static DEFINE_MUTEX(wsem_gang_park_mutex);
static LIST_HEAD(wsem_parked_gangs);
/* How many: a gang call looks for its thread's only if some are. */
static unsigned int wsem_nr_parked_gangs;

/* Under wsem_gang_park_mutex; read with no lock by the handle's close. */
static void wsem_count_gang_part(struct wsem_handle *h, int delta)
{
	WRITE_ONCE(h->gang_parts, h->gang_parts + delta);
}

static void wsem_gang_put(struct wsem_gang *g)
{
	if (refcount_dec_and_test(&g->ref)) {
		put_task_struct(g->task);
		kfree(g);
	}
}

/*
 * Task work is pending for @g's task, which must return to run it: leave
 * @g queued, parked, for the restarted call to take back
 * (wsem_gang_unpark_mine()).  The call's reference to @g becomes the
 * parked list's.  Return: -ERESTARTNOINTR.
 */
static int wsem_gang_park(struct wsem_gang *g)
{
	unsigned int i;

	mutex_lock(&wsem_gang_park_mutex);
	list_add_tail(&g->park_node, &wsem_parked_gangs);
	WRITE_ONCE(wsem_nr_parked_gangs, wsem_nr_parked_gangs + 1);
	for (i = 0; i < g->nr; i++)
		wsem_count_gang_part(g->part[i].handle, 1);
	WRITE_ONCE(g->parked, true);
	wsem_test_count_parked(1);
	/* Pairs with wsem_poke_gang(): a look it asked for is not lost. */
	smp_mb();
	if (READ_ONCE(g->look))
		wsem_gang_look_later(g);
	mutex_unlock(&wsem_gang_park_mutex);
	wsem_test_park_pause();
	return -ERESTARTNOINTR;
}

/* Take @g off the parked list; the list's reference is the caller's now. */
static void wsem_gang_unpark(struct wsem_gang *g)
{
	unsigned int i;

	lockdep_assert_held(&wsem_gang_park_mutex);

	list_del(&g->park_node);
	WRITE_ONCE(wsem_nr_parked_gangs, wsem_nr_parked_gangs - 1);
	for (i = 0; i < g->nr; i++)
		wsem_count_gang_part(g->part[i].handle, -1);
	WRITE_ONCE(g->parked, false);
	wsem_test_count_parked(-1);
}

/*
 * A work item that takes the place of a parked gang's task, asked for by
 * a grant walk (wsem_poke_gang()): grant the gang if it fits everywhere,
 * or end it for a shrink; end it, and unpark it, if its task is exiting.
 * The task's restarted call finds how it ended.
 */
static void wsem_gang_look_parked(struct work_struct *work)
{
	struct wsem_gang *g = container_of(work, struct wsem_gang, park_work);

	mutex_lock(&wsem_gang_park_mutex);
	if (g->parked && (READ_ONCE(g->task->flags) & PF_EXITING)) {
		wsem_gang_unpark(g);
		wsem_gang_leave(g, -EINTR);
		wsem_gang_put(g);	/* the list's; ours is still held */
	} else if (g->parked) {
		wsem_gang_look(g);
	}
	mutex_unlock(&wsem_gang_park_mutex);
	wsem_gang_put(g);
}

/* Wait for @g's work item, which a walk may have queued, and drop it. */
static void wsem_gang_cancel_look(struct wsem_gang *g)
{
	if (cancel_work_sync(&g->park_work))
		wsem_gang_put(g);
}

/* The calling thread's parked gang, taken off the list, or NULL. */
static struct wsem_gang *wsem_gang_unpark_mine(void)
{
	struct wsem_gang *g, *mine = NULL;

	/* Its own park's store, if it parked one, is seen (program order). */
	if (!READ_ONCE(wsem_nr_parked_gangs))
		return NULL;
	mutex_lock(&wsem_gang_park_mutex);
	list_for_each_entry(g, &wsem_parked_gangs, park_node) {
		if (g->task == current) {
			mine = g;
			wsem_gang_unpark(g);
			break;
		}
	}
	mutex_unlock(&wsem_gang_park_mutex);
	if (mine)
		wsem_gang_cancel_look(mine);
	return mine;
}

/* Does @g ask for @weights through @hs, in that order? */
static bool wsem_gang_is(const struct wsem_gang *g, struct wsem_handle **hs,
			 const u64 *weights, unsigned int n)
{
	unsigned int i;

	if (g->nr != n)
		return false;
	for (i = 0; i < n; i++) {
		if (g->part[i].handle != hs[i] ||
		    g->part[i].weight != weights[i])
			return false;
	}
	return true;
}

/**
 * wsem_gang_unpark_handle() - end the parked gangs a closing handle is in
 * @h: the handle, with nobody left inside a call on it
 *
 * A parked gang can be granted only through all its handles: one that
 * has a part through @h leaves its queues (if it is still queued) and
 * the parked list, before @h is unbound.  Its task's restarted call, if
 * it comes, finds nothing parked and queues anew.
 *
 * Context: Process context, may sleep.
 */
void wsem_gang_unpark_handle(struct wsem_handle *h)
{
	struct wsem_gang *g, *next;
	LIST_HEAD(gone);
	unsigned int i;

	if (!READ_ONCE(h->gang_parts))
		return;
	mutex_lock(&wsem_gang_park_mutex);
	list_for_each_entry_safe(g, next, &wsem_parked_gangs, park_node) {
		for (i = 0; i < g->nr && g->part[i].handle != h; i++)
			;
		if (i == g->nr)
			continue;
		wsem_gang_unpark(g);
		wsem_gang_leave(g, -ECANCELED);
		list_add(&g->park_node, &gone);
	}
	mutex_unlock(&wsem_gang_park_mutex);
	list_for_each_entry_safe(g, next, &gone, park_node) {
		wsem_gang_cancel_look(g);
		wsem_gang_put(g);	/* the list's */
	}
}

/*
 * Take back the caller's parked gang for the request @hs, @weights, @n,
 * or leave it if the restarted call asks for something else.
 * Return: the gang taken back (queued, or ended with its answer in its
 * parts' status), or NULL.
 */
static struct wsem_gang *wsem_gang_take_back(struct wsem_handle **hs,
					     const u64 *weights,
					     unsigned int n)
{
	struct wsem_gang *g = wsem_gang_unpark_mine();

	if (!g || wsem_gang_is(g, hs, weights, n))
		return g;
	/* A grant it had meanwhile stays with its handles, as for one. */
	wsem_gang_leave(g, -ECANCELED);
	wsem_gang_put(g);
	return NULL;
}

/* @g: the caller's request for @weights through @hs, its roots sorted. */
static void wsem_gang_init(struct wsem_gang *g, struct wsem_handle **hs,
			   const u64 *weights, unsigned int n)
{
	unsigned int i, j;

	g->task = current;
	g->nr = n;
	g->nr_roots = 0;
	for (i = 0; i < n; i++) {
		struct wsem *root = hs[i]->sem->root;

		g->part[i] = (struct wsem_waiter) {
			.task = current,
			.handle = hs[i],
			.weight = weights[i],
			.status = WSEM_WAITING,
			.gang = g,
		};
		/* Insert @root into the sorted roots, once. */
		for (j = 0; j < g->nr_roots && g->roots[j]->id < root->id; j++)
			;
		if (j < g->nr_roots && g->roots[j] == root)
			continue;
		memmove(&g->roots[j + 1], &g->roots[j],
			(g->nr_roots - j) * sizeof(g->roots[0]));
		g->roots[j] = root;
		g->nr_roots++;
	}
}

/* A new gang of the caller's for @weights through @hs, not queued yet. */
static struct wsem_gang *wsem_gang_alloc(struct wsem_handle **hs,
					 const u64 *weights, unsigned int n)
{
	struct wsem_gang *g = kzalloc(struct_size(g, part, n), WSEM_GFP);

	if (!g)
		return NULL;
	wsem_gang_init(g, hs, weights, n);
	get_task_struct(current);
	refcount_set(&g->ref, 1);
	INIT_WORK(&g->park_work, wsem_gang_look_parked);
	return g;
}

/*
 * Gangs of up to this many parts look first for a grant at once through
 * a gang on the stack: granted so (the usual case), or failed as a try,
 * they cost no allocation (and no task reference).
 */
#define WSEM_GANG_ON_STACK	2

/*
 * The first look of a new request (wsem_gang_try_at_once()) for a small
 * gang; WSEM_WAITING also for a larger one, which has its look in
 * wsem_gang_queue().
 */
static int wsem_gang_try_on_stack(struct wsem_handle **hs, const u64 *weights,
				  unsigned int n, u64 flags, clockid_t clock,
				  const ktime_t *until)
{
	union {
		struct wsem_gang g;
		u8 room[sizeof(struct wsem_gang) +
			WSEM_GANG_ON_STACK * sizeof(struct wsem_waiter)];
	} small;

	if (n > WSEM_GANG_ON_STACK)
		return WSEM_WAITING;
	wsem_gang_init(&small.g, hs, weights, n);
	return wsem_gang_try_at_once(&small.g, flags, clock, until);
}

/**
 * wsem_acquire_many() - one request for weight on several semaphores
 * @hs: @n bound handles, each on another semaphore, which the caller keeps
 *	open meanwhile
 * @weights: what to ask of each, checked by the caller against what its
 *	semaphore's line can ever give
 * @n: 1 .. WSEM_MANY_MAX
 * @flags: WSEM_ACQUIRE_TRY or _DEADLINE, validated by the caller
 * @clock: the clock of @deadline
 * @deadline: absolute deadline on @clock, with WSEM_ACQUIRE_DEADLINE
 *
 * The request takes a place at the tail of each of its trees' queues at
 * once, and is granted all at once, by its own task (struct wsem_gang).
 * A signal or a stop ends the wait (the call restarts at the tails if no
 * handler runs); task work parks it in its place (wsem_gang_park()), and
 * the restarted call takes it back; a shrink that leaves a semaphore of
 * it too small fails it.
 *
 * Context: Process context, may sleep unless WSEM_ACQUIRE_TRY.
 * Return: 0 when granted; -EAGAIN, -ETIMEDOUT, -EINTR, -ERESTARTNOHAND,
 * -ERESTARTNOINTR, -EINVAL (a shrink), -ENOMEM.
 */
int wsem_acquire_many(struct wsem_handle **hs, const u64 *weights,
		      unsigned int n, u64 flags, clockid_t clock,
		      ktime_t deadline)
{
	ktime_t *until = flags & WSEM_ACQUIRE_DEADLINE ? &deadline : NULL;
	bool timed_out = false;
	struct wsem_gang *g;
	int ret;

	g = wsem_gang_take_back(hs, weights, n);
	if (g) {
		ret = READ_ONCE(g->part[0].status);
		if (ret == WSEM_WAITING && (flags & WSEM_ACQUIRE_TRY))
			ret = wsem_gang_leave(g, -EAGAIN);
	} else {
		ret = wsem_gang_try_on_stack(hs, weights, n, flags, clock,
					     until);
		if (ret != WSEM_WAITING)
			return ret;
		g = wsem_gang_alloc(hs, weights, n);
		if (!g)
			return -ENOMEM;
		ret = wsem_gang_queue(g, flags, clock, until);
	}
	while (ret == WSEM_WAITING) {
		set_current_state(TASK_INTERRUPTIBLE);
		if (READ_ONCE(g->look)) {
			__set_current_state(TASK_RUNNING);
			ret = wsem_gang_look(g);
			continue;
		}
		ret = wsem_wait_check(timed_out);
		if (ret == -ERESTARTNOINTR) {
			__set_current_state(TASK_RUNNING);
			return wsem_gang_park(g);
		}
		if (ret) {
			__set_current_state(TASK_RUNNING);
			ret = wsem_gang_leave(g, ret);
			break;
		}
		timed_out = !wsem_sleep(clock, until);
		ret = WSEM_WAITING;
	}
	wsem_gang_put(g);
	return ret;
}
