// SPDX-License-Identifier: GPL-2.0
/*
 * wsem: resizes.  A semaphore's capacity in force changes with its own
 * (WSEM_IOC_SET_CAPACITY) and with what its handles lend (loan.c).  A
 * shrink revokes nothing: it fails the waiters, and the gangs, that ask
 * more than the tree can ever give them, and puts the queues it took the
 * first of on the root's regrants, whose requests the grant walk after it
 * moves up first (wsem_raise_regrants(), sem.c).
 *
 * Locking: under the semaphore's tree's lock, sem->lock, which
 * wsem_set_capacity() takes and wsem_resize()'s other callers hold; the
 * failing walk drops it to wake a full batch, keeping its place in the
 * tree's waiters with a mark (wsem_resize()).
 *
 * Calls gang.c (can a gang ever fit), sem.c (ending waits, the grants
 * after) and params.c (test knobs).
 */
#include <linux/ktime.h>
#include <linux/list.h>

#include "wsem.h"
#include "wsem_trace.h"

/*
 * @w, which a shrink of @sem fails, may be the first of a queue that holds
 * up the requests behind it, a queue the walk of @sem's line may not
 * reach (below @sem; or anywhere, when another shrink made @w too heavy):
 * put that queue on the root's regrants, for the walk that follows the
 * shrink (wsem_grant_waiters()).
 */
static void wsem_note_regrant(struct wsem *sem, struct wsem_waiter *w)
{
	struct wsem *level = w->level;

	if (wsem_queue_first(level) == w && list_empty(&level->regrant)) {
		list_add_tail(&level->regrant, &sem->root->regrants);
		wsem_test_count_regrant();
	}
}

/*
 * After a shrink in @sem's tree: end with -EINVAL the waits of the waiters
 * heavier than the capacity of the semaphore they asked through or of one
 * of its ancestors (never one with a ceiling, whose waiters are all within
 * it), and fail the gangs whose parts in the tree together ask more than
 * one of its semaphores can give, at *@now (taken at the first of them),
 * from @mark on, while @wake has room.  Return: true if it stopped for
 * room, with @mark moved to just before the first waiter not looked at.
 */
static bool wsem_fail_overweight(struct wsem *sem, struct wsem_waiter *mark,
				 u64 *now, struct wsem_wake *wake)
{
	struct wsem_waiter *w = mark, *next;

	lockdep_assert_held(sem->lock);

	list_for_each_entry_safe_continue(w, next, &sem->root->waiters, node) {
		if (unlikely(wsem_is_mark(w)))
			continue;
		wsem_test_count_walked();
		if (unlikely(w->gang)) {
			if (READ_ONCE(w->gang->fail) ||
			    wsem_gang_can_fit(w->gang, sem->root))
				continue;
		} else if (w->weight <= wsem_max_weight_up(wsem_waiter_sem(w))) {
			continue;
		}
		if (wsem_wake_full(wake)) {
			list_move_tail(&mark->node, &w->node);
			return true;
		}
		if (unlikely(w->gang)) {
			wsem_poke_gang(w->gang, -EINVAL, wake);
			continue;
		}
		if (!*now)
			*now = ktime_get_ns();
		wsem_note_regrant(sem, w);
		wsem_end_wait(wsem_waiter_sem(w), w, -EINVAL, *now, wake);
	}
	list_del(&mark->node);
	return false;
}

/*
 * Set the capacity in force of @sem to @capacity.  A shrink fails the
 * waiters heavier than it (wsem_fail_overweight()); the caller grants those
 * that fit (wsem_unlock_and_wake()).  The walk keeps its place in the
 * tree's waiters with a mark (a waiter without a task) while it wakes a
 * full batch without the lock, so it looks at each waiter once.
 */
void wsem_resize(struct wsem *sem, u64 capacity, struct wsem_wake *wake)
{
	struct wsem_waiter mark = { };
	u64 now = 0;

	lockdep_assert_held(sem->lock);

	trace_wsem_capacity(sem->id, sem->capacity, capacity);
	sem->capacity = capacity;
	wsem_publish(sem);
	wsem_note_tree(sem);
	list_add(&mark.node, &sem->root->waiters);
	while (wsem_fail_overweight(sem, &mark, &now, wake))
		wsem_wake_batch(sem, wake);
}

/**
 * wsem_set_capacity() - grow or shrink a semaphore
 * @sem: the semaphore; the caller checked ownership
 * @capacity: the semaphore's own capacity; the capacity in force is that
 *	plus what its handles lend
 *
 * Growing grants the waiters that now fit.  Shrinking revokes nothing: no
 * grant happens until the used weight is low enough again, and a waiter
 * whose weight exceeds the new capacity fails with -EINVAL, but for a
 * semaphore with a ceiling (WSEM_OPEN_LOANS), whose own capacity may be 0
 * and whose waiters wait on.
 *
 * Context: Process context.
 * Return: 0, or -EINVAL for a capacity of 0 (without a ceiling) or one that
 * makes the capacity in force exceed WSEM_CAPACITY_MAX.
 */
int wsem_set_capacity(struct wsem *sem, u64 capacity)
{
	struct wsem_wake wake;
	__poll_t before;

	if (capacity > WSEM_CAPACITY_MAX)
		return -EINVAL;

	wsem_wake_init(&wake);
	spin_lock(sem->lock);
	if ((!capacity && !sem->ceiling) ||
	    capacity > WSEM_CAPACITY_MAX - sem->lent) {
		spin_unlock(sem->lock);
		return -EINVAL;
	}
	before = wsem_events(sem);
	wsem_resize(sem, capacity + sem->lent, &wake);
	wsem_unlock_and_wake(sem, before, &wake);
	return 0;
}
