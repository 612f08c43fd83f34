// SPDX-License-Identifier: GPL-2.0
/*
 * wsem: the weighted, strictly FIFO semaphore.
 *
 * Some notes on the implementation:
 *
 * A semaphore has a capacity C and a used weight U.  acquire(w) is granted
 * at once only if nobody is queued and w fits (U + w <= C); otherwise the
 * caller queues a struct wsem_waiter on its own stack and sleeps.  Nobody
 * ever overtakes the queue: a try-acquire fails while anyone waits, even if
 * its weight would fit.
 *
 * Grants are hand-offs.  Whoever makes room (release, close, a grown
 * capacity, a waiter leaving the head) walks the queue from the head under
 * sem->lock and, while the head fits, adds its weight to U and to the
 * waiter's handle, takes it off the queue and publishes the end of its
 * wait with smp_store_release() on its status.  That is the granter's last
 * touch of the waiter: it keeps a reference on the sleeping task (or, for
 * an asynchronous request, on the handle) in a small batch on its own
 * stack, and wakes them after dropping the lock, as rwsem_mark_wake() does
 * with a wake_q (which modules cannot use).  A full batch is woken and the
 * walk goes on under the lock again.  The sleeper finds the weight already
 * its own: there is no thundering herd, no window for a newcomer to barge,
 * and nobody ever waits for a granter.
 *
 * Pollers and idle waiters are woken only with what a change made new:
 * each change notes the events before it (wsem_events()) and wakes with
 * those that hold after it and did not before, so a release that leaves
 * the semaphore as ready as it was wakes nobody.
 *
 * Semaphores nest.  A child semaphore has a parent, which may have one, up
 * to a root: a tree, which shares its root's lock.  Weight granted through
 * a handle bound to a child counts as used on the child and on every
 * ancestor of it (its line), and goes back to all of them at once.
 *
 * A request holds up its own semaphore from its arrival, and an ancestor
 * only once it fits on every semaphore of its line below that ancestor, so
 * that a child at its own limit never stops its siblings.  Each semaphore
 * has a queue ordered by the tree's arrival tickets, and each request is
 * in exactly one queue of its line, its level: it joins its own
 * semaphore's, and the grant walk moves the first of a queue up to the
 * parent's queue when it fits there (wsem_grant_at()): it stands in its
 * place at every level it has passed, where everyone after it came later
 * and must pass through the same queues.  At the root the first is
 * granted when it fits.  A request first in a queue that no longer fits a
 * semaphore below (one before it was granted there) goes back down to
 * the lowest of them, so it holds up nothing it would not; one that finds
 * an earlier request back in the queue of a semaphore below goes down
 * behind it, as it would have queued there had it come after the fall
 * (without that, a later request on the same child passed it).  Strict FIFO
 * in each queue keeps a large request from being overtaken once it has
 * reached that level, and a walk only ever looks at the first of a queue:
 * its work is bounded by the depth and the requests it moves, never by the
 * length of a queue.  A change in a tree may change what any of its
 * semaphores reports to poll(): all of them that have pollers look again.
 *
 * A gang's parts are queued, granted and ended by their own task, under
 * all their trees' locks (gang.c); a walk here, which holds one tree's
 * lock, only looks at whether the parts there fit together and pokes the
 * task (wsem_poke_gang()).
 *
 * The rest is in files of their own: how a request waits (wait.c:
 * sleeping, the poll before it, deadlines, signals, parking), asynchronous
 * requests (async.c), gangs (gang.c), resizes and the shrink's failing
 * walk (shrink.c), loans (loan.c) and a handle's close (handle.c) call
 * this one, never the other way round.  This one calls only holders.c
 * (what a grant notes of its acquirer) and params.c; who may do what is
 * perm.c's; wsem.h has the locking rules and the files' map.
 */
#include <linux/capability.h>
#include <linux/cgroup.h>
#include <linux/cpumask.h>
#include <linux/cred.h>
#include <linux/fdtable.h>
#include <linux/idr.h>
#include <linux/jiffies.h>
#include <linux/ktime.h>
#include <linux/overflow.h>
#include <linux/pid.h>
#include <linux/poll.h>
#include <linux/sched.h>
#include <linux/sched/debug.h>
#include <linux/sched/signal.h>
#include <linux/sched/stat.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <linux/user_namespace.h>
#include <linux/workqueue.h>

#include "wsem.h"

#define CREATE_TRACE_POINTS
#include "wsem_trace.h"

static DEFINE_IDA(wsem_ida);

/**
 * wsem_handle_put() - drop a reference to a handle
 * @h: the handle; the last reference frees it
 *
 * Context: Any context that may kfree().
 */
void wsem_handle_put(struct wsem_handle *h)
{
	if (refcount_dec_and_test(&h->ref))
		kfree(h);
}

/* Free a parked waiter that is off the queue and off its handle's list. */
void wsem_free_parked(struct wsem_waiter *w)
{
	wsem_test_count_parked(-1);
	put_task_struct(w->task);
	kfree(w);
}

/*
 * Wake the pollers and idle waiters of every semaphore of @root's tree that
 * was ever polled (@root->polled), with @events, under rcu_read_lock()
 * taken before the tree's lock was dropped: a semaphore that leaves the
 * tree meanwhile (wsem_free()) is still there to look at, with nobody
 * polling it.  A poller queues itself, then takes the tree's lock to note
 * its semaphore as polled (wsem_note_polled()) and to look, so one that
 * looked before the change is seen here.
 */
static void wsem_wake_tree(struct wsem *root, __poll_t events)
{
	struct wsem *s;

	list_for_each_entry_rcu(s, &root->polled, poll_node) {
		/* Ordered by the tree's lock, as said above. */
		if (waitqueue_active(&s->pollers))
			wake_up_poll(&s->pollers, events);
		/* Likewise. */
		if (waitqueue_active(&s->idle_waiters))
			wake_up_all(&s->idle_waiters);
	}
}

/*
 * Wake whom @wake's grants ended the wait of, then the pollers; free the
 * parked waiters that nobody comes back for.
 */
static void wsem_wake_up(struct wsem_wake *wake)
{
	struct wsem_waiter *w, *next;
	struct wsem_handle *h;
	unsigned int i;

	if (wake->nr_tasks || wake->nr_handles)
		wsem_test_pause();
	for (i = 0; i < wake->nr_tasks; i++) {
		wake_up_process(wake->tasks[i]);
		put_task_struct(wake->tasks[i]);
	}
	for (i = 0; i < wake->nr_handles; i++) {
		h = wake->handles[i];
		wake_up_poll(&h->wqh, EPOLLIN | EPOLLRDNORM);
		wsem_handle_put(h);
	}
	wake->nr_tasks = 0;
	wake->nr_handles = 0;
	list_for_each_entry_safe(w, next, &wake->parked, park_node)
		wsem_free_parked(w);
	INIT_LIST_HEAD(&wake->parked);
	if (unlikely(wake->events)) {
		wake_up_poll(&wake->sem->pollers, wake->events);
		if (wake->events & EPOLLPRI)
			wake_up_all(&wake->sem->idle_waiters);
		wake->events = 0;
	}
}

/*
 * What poll() reports without an asynchronous request: EPOLLIN while a
 * try-acquire of 1 would succeed (nobody queued in the tree, weight free
 * on the semaphore and its ancestors), EPOLLPRI while the semaphore is
 * idle (nothing held on it, nobody queued for it).
 */
__poll_t wsem_events(const struct wsem *sem)
{
	__poll_t events = 0;

	if (wsem_may_grant_now(sem, 1))
		events |= EPOLLIN | EPOLLRDNORM;
	if (!sem->used && !sem->nr_waiters)
		events |= EPOLLPRI;
	return events;
}

/* Put @w into @level's queue, in ticket order. */
static void wsem_queue_insert(struct wsem *level, struct wsem_waiter *w)
{
	struct rb_node **link = &level->queue.rb_root.rb_node, *up = NULL;
	bool leftmost = true;

	while (*link) {
		up = *link;
		if (w->ticket < rb_entry(up, struct wsem_waiter, qnode)->ticket) {
			link = &up->rb_left;
		} else {
			link = &up->rb_right;
			leftmost = false;
		}
	}
	rb_link_node(&w->qnode, up, link);
	rb_insert_color_cached(&w->qnode, &level->queue, leftmost);
	w->level = level;
}

/* Move @w from its level's queue to @level's: one up, or back down. */
static void wsem_queue_move(struct wsem_waiter *w, struct wsem *level)
{
	rb_erase_cached(&w->qnode, &w->level->queue);
	wsem_queue_insert(level, w);
}

/* @w takes @old's place in its queues (parking, and coming back). */
void wsem_replace_waiter(struct wsem_waiter *old, struct wsem_waiter *w)
{
	list_replace(&old->node, &w->node);
	rb_replace_node_cached(&old->qnode, &w->qnode, &old->level->queue);
	w->level = old->level;
	w->ticket = old->ticket;
}

/*
 * Queue @w, a request on @sem, with the tree's next ticket, in @sem's own
 * queue (the grant walk moves it up as it fits: wsem_grant_waiters()); it
 * counts as a waiter of @sem and of each of its ancestors.
 */
void wsem_enqueue(struct wsem *sem, struct wsem_waiter *w)
{
	struct wsem *s;

	w->head = RB_EMPTY_ROOT(&sem->queue.rb_root);
	w->ticket = sem->root->next_ticket++;
	list_add_tail(&w->node, &sem->root->waiters);
	wsem_queue_insert(sem, w);
	for (s = sem; s; s = s->parent) {
		s->nr_waiters++;
		if (s->nr_waiters > s->stats.queue_max)
			s->stats.queue_max = s->nr_waiters;
		if (check_add_overflow(s->queued_weight, w->weight,
				       &s->queued_weight))
			s->queued_carry++;
		wsem_note_demand(s);
	}
	wsem_note_tree(sem->root);
	trace_wsem_queue(sem->id, w->task->pid, w->weight, sem->nr_waiters);
}

/* Count a wait that ended at @now with @result. */
static void wsem_count_wait(struct wsem *sem, struct wsem_waiter *w,
			    int result, u64 now)
{
	u64 waited = now > w->since ? now - w->since : 0;

	sem->stats.wait_ns_total += waited;
	if (waited > sem->stats.wait_ns_max)
		sem->stats.wait_ns_max = waited;
	switch (result) {
	case 0:
		sem->stats.grants_waited++;
		trace_wsem_grant(sem->id, w->task->pid, w->weight, waited);
		return;
	case -EINVAL:
		sem->stats.shrunk++;
		break;
	case -ETIMEDOUT:
		sem->stats.timeouts++;
		break;
	default:
		sem->stats.interrupts++;
	}
	trace_wsem_wait_end(sem->id, w->task->pid, w->weight, result, waited);
}

/* Take @w, a request on @sem, off its tree's queue. */
static void wsem_dequeue(struct wsem *sem, struct wsem_waiter *w)
{
	struct wsem *s;

	list_del(&w->node);
	rb_erase_cached(&w->qnode, &w->level->queue);
	for (s = sem; s; s = s->parent) {
		s->nr_waiters--;
		if (s->queued_weight < w->weight)
			s->queued_carry--;
		s->queued_weight -= w->weight;
		wsem_note_demand(s);
	}
	wsem_note_tree(sem->root);
}

/*
 * Take @w off the queue, its wait ended at @now with @result (counted on
 * the semaphore it asked through, @sem: its handle's).
 */
void wsem_remove_waiter(struct wsem *sem, struct wsem_waiter *w, int result,
			u64 now)
{
	wsem_dequeue(sem, w);
	wsem_count_wait(sem, w, result, now);
}

/* A poll that would catch more than one grant is never shorter than this. */
#define WSEM_SPIN_START	2000

/*
 * A head waiter's wait is short up to this many times spin_ns: enough for
 * one sleep and the wake-up that ends it (tens of microseconds, more in a
 * guest), so that two waiters that both sleep, each waiting for the
 * other's wake-up, still count as short and start polling.
 */
#define WSEM_SPIN_SHORT	8

/*
 * Adapt @sem's poll to a head sleeper's wait of @waited ns that ended in a
 * grant, as KVM adapts a vCPU's halt polling: a short wait doubles the
 * budget (from WSEM_SPIN_START, up to spin_ns); a longer one ends the
 * polling until short waits come again, so that leases held for long
 * cost no poll at all.
 */
static void wsem_adapt_spin(struct wsem *sem, u64 waited)
{
	u64 max = READ_ONCE(spin_ns);
	u64 budget = sem->spin_budget;

	lockdep_assert_held(sem->lock);

	if (waited > max * WSEM_SPIN_SHORT)
		budget = 0;
	else
		budget = clamp_t(u64, budget * 2, WSEM_SPIN_START, max);
	WRITE_ONCE(sem->spin_budget, budget);
}

/*
 * End @w's wait at @now with @result, 0 (granted) or a negative errno, and
 * note in @wake whom to wake; @wake must have room.  From the status store
 * on, @w belongs to its sleeper (or its handle) again: not touched here.
 */
void wsem_end_wait(struct wsem *sem, struct wsem_waiter *w, int result,
		   u64 now, struct wsem_wake *wake)
{
	lockdep_assert_held(sem->lock);

	wsem_remove_waiter(sem, w, result, now);
	if (!result)
		wsem_add_held(sem, w->handle, w->weight, w->task);
	if (!result && w->head && !w->async && !w->gang)
		wsem_adapt_spin(sem, now > w->since ? now - w->since : 0);
	if (w->async) {
		refcount_inc(&w->handle->ref);
		wake->handles[wake->nr_handles++] = w->handle;
	} else if (!w->parked && !w->gang) {
		wake->tasks[wake->nr_tasks++] = get_task_struct(w->task);
	}
	/* Pairs with wsem_wait(), wsem_async_end() and wsem_poll(). */
	smp_store_release(&w->status, result);
}

/*
 * A parked waiter whose task is exiting never comes back for its place:
 * it leaves the queue instead of being granted, and is freed then.
 */
bool wsem_abandoned(const struct wsem_waiter *w)
{
	return w->parked && (READ_ONCE(w->task->flags) & PF_EXITING);
}

/*
 * Do the parts of @g in @root's tree fit there together (a part on a child
 * counts on its ancestors too, and two parts on one line add up)?  The
 * weights are added for the look and taken off again; u64 arithmetic
 * wraps back exactly.
 */
bool wsem_gang_weights_fit(struct wsem_gang *g, struct wsem *root)
{
	bool fits = true, wrapped = false;
	struct wsem_waiter *p;
	struct wsem *s;
	unsigned int i;

	lockdep_assert_held(root->lock);

	for (i = 0, p = g->part; i < g->nr; i++, p++) {
		if (p->handle->sem->root != root)
			continue;
		for (s = p->handle->sem; s; s = s->parent)
			wrapped |= check_add_overflow(s->used, p->weight,
						      &s->used);
	}
	for (i = 0, p = g->part; i < g->nr; i++, p++) {
		if (p->handle->sem->root != root)
			continue;
		for (s = p->handle->sem; s; s = s->parent)
			fits &= s->used <= s->capacity;
	}
	for (i = 0, p = g->part; i < g->nr; i++, p++) {
		if (p->handle->sem->root != root)
			continue;
		for (s = p->handle->sem; s; s = s->parent)
			s->used -= p->weight;
	}
	return fits && !wrapped;
}

/*
 * Do the parts of @g in @root's tree stand first in the root's queue (they
 * hold consecutive tickets there: nothing comes between them), and fit
 * there together?
 */
bool wsem_gang_fits(struct wsem_gang *g, struct wsem *root)
{
	struct rb_node *pos = rb_first_cached(&root->queue);
	unsigned int i;

	for (i = 0; i < g->nr; i++) {
		if (g->part[i].handle->sem->root != root)
			continue;
		if (!pos || rb_entry(pos, struct wsem_waiter, qnode)->gang != g)
			return false;
		pos = rb_next(pos);
	}
	return wsem_gang_weights_fit(g, root);
}

static struct workqueue_struct *wsem_gang_wq;

/*
 * Queue @g's park_work (parked gangs: wsem_gang_look_parked() in gang.c)
 * with a reference of its own.  Its caller holds another one: a queued
 * part of @g under its tree's lock, or the parked list's.
 */
void wsem_gang_look_later(struct wsem_gang *g)
{
	refcount_inc(&g->ref);
	if (!queue_work(wsem_gang_wq, &g->park_work))
		refcount_dec(&g->ref);
}

/*
 * Have @g's task look at its trees (and end with @fail, if not 0), woken
 * once @wake is; @wake must have room.  A parked gang's work item looks
 * in its place.  Under one of its trees' locks.
 */
void wsem_poke_gang(struct wsem_gang *g, int fail, struct wsem_wake *wake)
{
	if (fail)
		WRITE_ONCE(g->fail, fail);
	if (READ_ONCE(g->look))
		return;
	WRITE_ONCE(g->look, true);
	/* Pairs with wsem_gang_park(): it or we see the other's store. */
	smp_mb();
	if (READ_ONCE(g->parked))
		wsem_gang_look_later(g);
	else
		wake->tasks[wake->nr_tasks++] = get_task_struct(g->task);
}

/*
 * A parked gang whose task is exiting never comes back for its place: it
 * is ended (wsem_gang_look_parked()) instead of granted.
 */
static bool wsem_gang_abandoned(const struct wsem_gang *g)
{
	return READ_ONCE(g->parked) &&
	       (READ_ONCE(g->task->flags) & PF_EXITING);
}

/*
 * The lowest semaphore of @w's line below @level that holds @w up, or
 * NULL: one @w no longer fits (a request before it was granted there
 * since @w passed), or one whose queue holds a request that came before
 * @w (it went back down there, and stands in its place: @w, later, may
 * not pass it).
 */
static struct wsem *wsem_held_below(const struct wsem_waiter *w,
				    const struct wsem *level)
{
	struct wsem_waiter *first;
	struct wsem *s;

	for (s = wsem_waiter_sem(w); s != level; s = s->parent) {
		if (!wsem_fits(s, w->weight))
			return s;
		first = wsem_queue_first(s);
		if (first && first->ticket < w->ticket)
			return s;
	}
	return NULL;
}

/* How a walk of one queue ended (wsem_grant_at()). */
enum wsem_walk_end {
	WSEM_WALK_HELD,		/* its first is held up here, or it is empty */
	WSEM_WALK_FULL,		/* @wake has no room left */
	WSEM_WALK_GRANTED,	/* at the root, a grant: its line to look at */
};

/*
 * Move the first requests of @level's queue on while they fit on @level:
 * up to the parent's queue or, at the root, to their grant (a gang's to
 * its task, wsem_poke_gang()); one held up below goes back down
 * (wsem_held_below()).  At the root it returns after each grant,
 * with the semaphore the grantee asked through in *@granted, whose line
 * may now hold requests that fit no more; with @granted NULL it grants
 * nothing, and stops at the root's first request that fits.
 */
static enum wsem_walk_end wsem_grant_at(struct wsem *level, u64 *now,
					struct wsem_wake *wake,
					struct wsem **granted)
{
	struct wsem_waiter *w;
	struct wsem *low;

	while ((w = wsem_queue_first(level))) {
		if (wsem_wake_full(wake))
			return WSEM_WALK_FULL;
		if (!*now)
			*now = ktime_get_ns();
		if (unlikely(wsem_abandoned(w))) {
			wsem_end_wait(wsem_waiter_sem(w), w, -EINTR, *now, wake);
			list_move(&w->park_node, &wake->parked);
			continue;
		}
		if (unlikely(w->gang && wsem_gang_abandoned(w->gang))) {
			/* Its work item ends it, under all its trees' locks. */
			wsem_poke_gang(w->gang, -EINTR, wake);
			break;
		}
		low = wsem_held_below(w, level);
		if (unlikely(low)) {
			wsem_queue_move(w, low);
			continue;
		}
		if (!wsem_fits(level, w->weight))
			break;
		if (level->parent) {
			wsem_queue_move(w, level->parent);
			continue;
		}
		/* At the root, a walk that only moves requests up ends. */
		if (!granted)
			break;
		if (unlikely(w->gang)) {
			/* A gang grants itself, under all its trees' locks. */
			if (wsem_gang_fits(w->gang, level))
				wsem_poke_gang(w->gang, 0, wake);
			break;
		}
		*granted = wsem_waiter_sem(w);
		wsem_end_wait(*granted, w, 0, *now, wake);
		return WSEM_WALK_GRANTED;
	}
	return WSEM_WALK_HELD;
}

/*
 * Walk the queues of @sem's line from @sem up (wsem_grant_at()), granting
 * at the root whoever fits, while @wake has room; after each grant, the
 * grantee's line again, where what it took may send requests back down.
 * Return: true if it stopped for room.
 */
static bool wsem_grant_line(struct wsem *sem, u64 *now,
			    struct wsem_wake *wake)
{
	struct wsem *level = sem, *granted;

	while (level) {
		switch (wsem_grant_at(level, now, wake, &granted)) {
		case WSEM_WALK_FULL:
			return true;
		case WSEM_WALK_GRANTED:
			level = granted;
			break;
		default:
			level = level->parent;
		}
	}
	return false;
}

/*
 * Move the requests of the queues a shrink took the first of (@root's
 * regrants) up their lines as far as they fit, granting none: they meet
 * in the queues above, in ticket order, and the root's walk grants them
 * in that order (two such queues walked to their grants one after the
 * other would grant the later request of the first before the earlier
 * one of the second).  Return: true if it stopped for room; a queue
 * stays on the regrants until its walk ends.
 */
static bool wsem_raise_regrants(struct wsem *root, u64 *now,
				struct wsem_wake *wake)
{
	struct wsem *s, *level;

	while ((s = list_first_entry_or_null(&root->regrants, struct wsem,
					     regrant))) {
		for (level = s; level; level = level->parent)
			if (wsem_grant_at(level, now, wake, NULL) ==
			    WSEM_WALK_FULL)
				return true;
		list_del_init(&s->regrant);
	}
	return false;
}

/*
 * After a change on @sem's line (weight back, a request queued or gone, a
 * resize): grant whoever fits now, first moving up the requests of the
 * queues a shrink took the first of (wsem_raise_regrants()), then walking
 * @sem's line to the root (wsem_grant_line()).  Return: true if it
 * stopped for room.
 */
bool wsem_grant_waiters(struct wsem *sem, struct wsem_wake *wake)
{
	u64 now = 0;

	lockdep_assert_held(sem->lock);

	/* Nobody queued in the tree: the uncontended release's case. */
	if (likely(list_empty(&sem->root->waiters)))
		return false;
	if (unlikely(wsem_raise_regrants(sem->root, &now, wake)))
		return true;
	return wsem_grant_line(sem, &now, wake);
}

/*
 * Does anyone poll for @events, or wait for idle if EPOLLPRI is among them?
 * Looked at under @sem->lock, without the queues' locks: a poller queues
 * itself before it takes @sem->lock to look (wsem_poll(),
 * wsem_wait_idle()), so one that looked before us is seen here, and one
 * that looks after us sees the new state.
 */
static bool wsem_has_pollers(struct wsem *sem, __poll_t events)
{
	lockdep_assert_held(sem->lock);

	/* Ordered by @sem->lock, as said above. */
	if (waitqueue_active(&sem->pollers))
		return true;
	/* Likewise. */
	return (events & EPOLLPRI) && waitqueue_active(&sem->idle_waiters);
}

/* Tell the pollers that wsem_demand_pollers() found in @mask. */
void wsem_tell_demand(struct wsem *sem, u32 mask)
{
	struct wsem *s;

	for (s = sem; s; s = s->parent) {
		if (mask & 1)
			wake_up_poll(&s->pollers, EPOLLRDBAND);
		mask >>= 1;
	}
}

/*
 * The events of @sem before a change, for wsem_unlock_and_wake() to tell
 * the new ones; with nobody polling, every event, so that none is new: a
 * poller that queues itself meanwhile looks at the state once it has
 * @sem->lock, as wsem_has_pollers() says, and need not be told it.
 */
static __poll_t wsem_events_before(struct wsem *sem)
{
	if (!wsem_has_pollers(sem, EPOLLPRI))
		return EPOLLIN | EPOLLRDNORM | EPOLLPRI;
	return wsem_events(sem);
}

/*
 * A walk that ends waits stopped with @wake full: wake that batch without
 * @sem->lock, then take the lock again for the walk to go on.
 */
void wsem_wake_batch(struct wsem *sem, struct wsem_wake *wake)
	__releases(sem->lock) __acquires(sem->lock)
{
	spin_unlock(sem->lock);
	wsem_wake_up(wake);
	spin_lock(sem->lock);
}

/* iterate_fd(): is @file a handle that the end of holders @doomed marked? */
static int wsem_match_doomed(const void *wake, struct file *file,
			     unsigned int fd)
{
	const struct wsem_wake *w = wake;
	struct wsem_handle *h = file->private_data;

	return file->f_op == w->doomed_fops &&
	       READ_ONCE(h->doomed_by) == w->doomed;
}

/*
 * Send SIGKILL to every process that has a handle marked by @wake's end
 * of holders (wsem_kill_holders()) in its file table: the sharers of a
 * holding handle.  A look at each process's descriptors, as the kernel's
 * own lookups of a process's files do (task_lock(), then iterate_fd()'s
 * file_lock), under no lock of ours; it runs once per end of holders
 * that found a holder.
 */
static void wsem_kill_sharers(struct wsem_wake *wake)
{
	struct task_struct *p;
	bool marked;

	rcu_read_lock();
	for_each_process(p) {
		if (p->flags & PF_KTHREAD)
			continue;
		task_lock(p);
		marked = p->files &&
			 iterate_fd(p->files, 0, wsem_match_doomed, wake);
		task_unlock(p);
		if (marked)
			send_sig(SIGKILL, p, 1);
	}
	rcu_read_unlock();
	wake->doomed = 0;
}

/*
 * After weight came back or a waiter left (@before: wsem_events() before
 * the change): grant the waiters that fit now, drop @sem->lock, and wake
 * the grantees, then the pollers with the events that are new and with
 * the demand event (EPOLLRDBAND), which a poller that did not ask for it
 * filters out by the wake-up's key.  A full batch of grantees is woken
 * before the walk goes on, under the lock again.
 */
void wsem_unlock_and_wake(struct wsem *sem, __poll_t before,
			  struct wsem_wake *wake)
	__releases(sem->lock)
{
	lockdep_assert_held(sem->lock);

	while (wsem_grant_waiters(sem, wake))
		wsem_wake_batch(sem, wake);
	if (unlikely(sem->root->tree_size > 1)) {
		struct wsem *root = sem->root;

		/*
		 * What changed may change what any semaphore of the tree
		 * reports: its pollers look again.  The tree's semaphores
		 * are freed after a grace period, so the walk holds the RCU
		 * read lock from before the tree's lock is dropped; the
		 * grantees are woken after it, where sleeping is allowed.
		 */
		rcu_read_lock();
		spin_unlock(sem->lock);
		wsem_wake_tree(root, EPOLLIN | EPOLLRDNORM | EPOLLPRI |
				     EPOLLRDBAND);
		rcu_read_unlock();
		wsem_wake_up(wake);
		if (unlikely(wake->doomed))
			wsem_kill_sharers(wake);
		return;
	}
	/*
	 * Demand changed with all but a resize: worth no look of its own.
	 * Without pollers of any event, nothing is worth the look.
	 */
	wake->events = 0;
	if (wsem_has_pollers(sem, EPOLLPRI)) {
		wake->events = (wsem_events(sem) & ~before) | EPOLLRDBAND;
		if (!wsem_has_pollers(sem, wake->events))
			wake->events = 0;
	}
	wake->sem = sem;
	spin_unlock(sem->lock);
	wsem_wake_up(wake);
	if (unlikely(wake->doomed))
		wsem_kill_sharers(wake);
}

/**
 * wsem_queue_and_unlock() - queue a request and let it take its place
 * @sem: the semaphore it asks of, locked
 * @w: the request, not granted at once (wsem_may_grant_now())
 *
 * In a tree, the request moves up its line at once as far as it fits
 * (wsem_grant_waiters()), so that it holds up the ancestors it should
 * from its arrival on; such a walk may grant it, or others, at once.
 * The demand pollers are told.
 *
 * Context: Process context; drops @sem->lock.
 * Return: whether @w was queued first in its root's queue (it polls).
 */
bool wsem_queue_and_unlock(struct wsem *sem, struct wsem_waiter *w)
	__releases(sem->lock)
{
	struct wsem_wake wake;
	__poll_t before;
	bool first;
	u32 tell;

	/*
	 * wsem_enqueue() notes in @w->head whether @w came first; read under
	 * the lock, since an asynchronous @w is the handle's once it is
	 * dropped.
	 */
	if (likely(sem->root->tree_size == 1)) {
		wsem_enqueue(sem, w);
		first = w->head;
		tell = wsem_demand_pollers(sem);
		spin_unlock(sem->lock);
		if (tell)
			wsem_tell_demand(sem, tell);
		return first;
	}
	wsem_wake_init(&wake);
	before = wsem_events_before(sem);
	wsem_enqueue(sem, w);
	first = !sem->parent && w->head;
	wsem_unlock_and_wake(sem, before, &wake);
	return first;
}

/**
 * wsem_alloc() - a new semaphore owned by the caller, not yet charged
 * @capacity: 1 .. WSEM_CAPACITY_MAX, checked by the caller; 0 with a
 *	@ceiling
 * @ceiling: 0; or 1 .. WSEM_CAPACITY_MAX, checked by the caller, for a
 *	semaphore that takes its capacity from loans
 * @mode: permission bits
 * @name: its name, or NULL for an anonymous semaphore
 * @user_ns: where CAP_IPC_OWNER over it is checked; it takes a reference
 * @parent: NULL for a root; else the parent, less than WSEM_DEPTH_MAX deep
 *	(checked by the caller), which the new semaphore holds a reference to
 *	until it is freed (wsem_put() drops it after wsem_free())
 *
 * A child joins its parent's tree: it takes the root's lock for its own,
 * and counts against the tree's bound (max_tree_size).
 *
 * Context: Process context, may sleep.
 * Return: the semaphore with one reference (wsem_put()), or
 * ERR_PTR(-ENOMEM), or ERR_PTR(-ENOSPC) for a child of a tree that holds
 * max_tree_size semaphores already.
 */
struct wsem *wsem_alloc(u64 capacity, u64 ceiling, umode_t mode,
			const char *name, struct user_namespace *user_ns,
			struct wsem *parent)
{
	struct wsem *sem;

	sem = kzalloc(sizeof(*sem), WSEM_GFP);
	if (!sem)
		return ERR_PTR(-ENOMEM);
	sem->id = ida_alloc_min(&wsem_ida, 1, GFP_KERNEL);
	if (sem->id < 0) {
		kfree(sem);
		return ERR_PTR(-ENOMEM);
	}

	spin_lock_init(&sem->own_lock);
	sem->lock = &sem->own_lock;
	sem->root = sem;
	INIT_LIST_HEAD(&sem->polled);
	INIT_LIST_HEAD(&sem->poll_node);
	sem->tree_size = 1;
	INIT_LIST_HEAD(&sem->children);
	sem->capacity = capacity;
	sem->ceiling = ceiling;
	INIT_LIST_HEAD(&sem->waiters);
	sem->queue = RB_ROOT_CACHED;
	INIT_LIST_HEAD(&sem->regrants);
	INIT_LIST_HEAD(&sem->regrant);
	INIT_LIST_HEAD(&sem->holders);
	init_waitqueue_head(&sem->pollers);
	init_waitqueue_head(&sem->idle_waiters);
	RB_CLEAR_NODE(&sem->node);
	kref_init(&sem->ref);
	sem->user_ns = get_user_ns(user_ns);
	sem->uid = current_euid();
	sem->gid = current_egid();
	sem->mode = mode;
	if (name)
		strscpy(sem->name, name, sizeof(sem->name));
	if (parent) {
		spin_lock(parent->lock);
		if (parent->root->tree_size >= READ_ONCE(max_tree_size)) {
			spin_unlock(parent->lock);
			put_user_ns(sem->user_ns);
			ida_free(&wsem_ida, sem->id);
			kfree(sem);
			return ERR_PTR(-ENOSPC);
		}
		kref_get(&parent->ref);
		sem->parent = parent;
		sem->root = parent->root;
		sem->depth = parent->depth + 1;
		sem->lock = parent->lock;
		list_add_tail(&sem->sibling, &parent->children);
		parent->nr_children++;
		sem->root->tree_size++;
		spin_unlock(parent->lock);
	}
	return sem;
}

/**
 * wsem_free() - free a semaphore whose last reference is gone
 * @sem: the semaphore, uncharged (wsem_put() does both); the caller drops
 *	its reference to @sem->parent after this
 *
 * Context: Process context; takes the tree's lock for a child.
 */
void wsem_free(struct wsem *sem)
{
	WARN_ON_ONCE(!list_empty(&sem->waiters) || sem->used ||
		     sem->nr_waiters || !RB_EMPTY_ROOT(&sem->queue.rb_root));
	if (sem->parent) {
		/* Its tree's walkers may see it until a grace period ends. */
		spin_lock(sem->lock);
		if (!list_empty(&sem->poll_node))
			list_del_rcu(&sem->poll_node);
		list_del(&sem->regrant);
		list_del(&sem->sibling);
		sem->parent->nr_children--;
		sem->root->tree_size--;
		spin_unlock(sem->lock);
	}
	if (sem->counters) {
		/*
		 * No handle is left to change it: the mappings keep the page,
		 * with its last values, marked.
		 */
		struct wsem_counters *c = sem->counters;

		wsem_page_write_begin(&c->seq);
		WRITE_ONCE(c->flags, WSEM_COUNTERS_GONE);
		wsem_page_write_end(&c->seq);
		free_page((unsigned long)c);
	}
	/* Likewise the tree's page: the root goes last, with nobody queued. */
	if (sem->tree_counters) {
		wsem_publish_tree(sem, WSEM_COUNTERS_GONE);
		free_page((unsigned long)sem->tree_counters);
	}
	put_user_ns(sem->user_ns);
	ida_free(&wsem_ida, sem->id);
	/* RCU-walk lookups read it through its inode (wsemfs). */
	kfree_rcu(sem, rcu);
}

/**
 * wsem_install_page() - allocate and install a page that mmap(2) maps
 * @sem: the semaphore of a bound handle
 * @install: wsem_install_counters() or wsem_install_tree_counters()
 *
 * Allocates a zeroed page with no lock held and has @install install it
 * under the tree's lock; when @install finds a page installed already (a
 * race lost to another call), the new one is freed.
 *
 * Context: Process context; takes the tree's lock.
 * Return: the installed page, or NULL when no memory could be had.
 */
static struct page *wsem_install_page(struct wsem *sem,
				      void *(*install)(struct wsem *sem,
						       void *page))
{
	void *page, *installed;

	page = (void *)get_zeroed_page(WSEM_GFP);
	if (!page)
		return NULL;
	spin_lock(sem->lock);
	installed = install(sem, page);
	spin_unlock(sem->lock);
	if (installed != page)
		free_page((unsigned long)page);
	return virt_to_page(installed);
}

/*
 * Under the tree's lock: @page, zeroed, becomes @sem's counters page,
 * showing the counters now, unless it has one already.  Return: the page
 * it has now.
 */
static void *wsem_install_counters(struct wsem *sem, void *page)
{
	struct wsem_counters *c = page;

	lockdep_assert_held(sem->lock);

	if (sem->counters)
		return sem->counters;
	c->size = sizeof(*c);
	WRITE_ONCE(sem->counters, c);
	wsem_publish(sem);
	return c;
}

/**
 * wsem_counters_page() - the page of a semaphore's counters, for mmap(2)
 * @sem: the semaphore of a bound handle
 *
 * The first call allocates the page, with no lock held, and installs it
 * under the tree's lock, showing the counters then; a call that loses the
 * race to install frees its own.  From then on every change of the
 * counters rewrites it (wsem_publish()).  The caller maps the page, which
 * takes a reference of its own: the page outlives the semaphore while
 * mapped.
 *
 * Context: Process context; takes the tree's lock.
 * Return: the page, or NULL when no memory could be had.
 */
struct page *wsem_counters_page(struct wsem *sem)
{
	struct wsem_counters *c = READ_ONCE(sem->counters);

	if (c)
		return virt_to_page(c);
	return wsem_install_page(sem, wsem_install_counters);
}

/**
 * wsem_publish_tree() - set the flags of @root's tree
 * @root: a root
 * @flags: WSEM_TREE_WAITING, WSEM_TREE_OVER (wsem_note_tree()), or
 *	WSEM_COUNTERS_GONE as it is freed
 *
 * Rewrites the tree's page, if it has one, as wsem_publish() rewrites a
 * counters page, and tells the pollers of the tree's children, whom the
 * change of the tree wakes (wsem_unlock_and_wake()), that it is news.
 *
 * Context: Under @root->lock, or in wsem_free() when nothing else can
 * reach @root.
 */
void wsem_publish_tree(struct wsem *root, u32 flags)
{
	struct wsem_tree_counters *t = root->tree_counters;

	root->tree_flags = flags;
	/* Read by wsem_bind() without the lock. */
	WRITE_ONCE(root->tree_seq, root->tree_seq + 1);
	if (!t)
		return;
	wsem_page_write_begin(&t->seq);
	WRITE_ONCE(t->flags, flags);
	wsem_page_write_end(&t->seq);
}

/*
 * Under the tree's lock: @page, zeroed, becomes the page of @sem's tree's
 * flags, showing the flags now, unless the tree has one already.  Return:
 * the page the tree has now.
 */
static void *wsem_install_tree_counters(struct wsem *sem, void *page)
{
	struct wsem *root = sem->root;
	struct wsem_tree_counters *t = page;

	lockdep_assert_held(sem->lock);

	if (root->tree_counters)
		return root->tree_counters;
	t->size = sizeof(*t);
	t->flags = root->tree_flags;
	WRITE_ONCE(root->tree_counters, t);
	return t;
}

/**
 * wsem_tree_counters_page() - the page of a tree's flags, for mmap(2)
 * @sem: the semaphore of a bound handle
 *
 * As wsem_counters_page(), for @sem's root's page of the tree's flags
 * (struct wsem_tree_counters).
 *
 * Context: Process context; takes the tree's lock.
 * Return: the page, or NULL when no memory could be had.
 */
struct page *wsem_tree_counters_page(struct wsem *sem)
{
	struct wsem_tree_counters *t = READ_ONCE(sem->root->tree_counters);

	if (t)
		return virt_to_page(t);
	return wsem_install_page(sem, wsem_install_tree_counters);
}

/* @h's early pollers hear what the semaphore's pollers hear. */
static int wsem_relay_wake(struct wait_queue_entry *wq, unsigned int mode,
			   int sync, void *key)
{
	struct wsem_handle *h = container_of(wq, struct wsem_handle, relay);

	wake_up_poll(&h->wqh, key_to_poll(key));
	return 0;
}

/**
 * wsem_bind() - bind an unbound handle to a semaphore
 * @h: the handle
 * @sem: the semaphore, which the caller keeps alive meanwhile
 *
 * Takes a reference to @sem for @h (wsem_put() after wsem_unbind() drops
 * it).  Whoever polled @h before this (epoll registers only once) is
 * relayed the semaphore's wake-ups from now on, and is woken once, since
 * @h is no longer in error.
 *
 * Context: Process context.
 * Return: 0, or -EBUSY (and nothing changes) if @h is bound already.
 */
int wsem_bind(struct wsem_handle *h, struct wsem *sem)
{
	bool polled;

	/*
	 * Under @h->wqh.lock, against wsem_poll_file(): a poller that queued
	 * itself before this is seen here, and one after sees @h->sem.
	 */
	spin_lock_irq(&h->wqh.lock);
	/* Binds take this lock: one that finds @h unbound is the one. */
	if (h->sem) {
		spin_unlock_irq(&h->wqh.lock);
		return -EBUSY;
	}
	/*
	 * Demand changes from now on are news to @h; noted before @h->sem
	 * is published, so that no poller sees @h bound and this unset.
	 */
	h->demand_seen = READ_ONCE(sem->demand_seq);
	h->tree_seen = READ_ONCE(sem->root->tree_seq);
	/* Pairs with wsem_handle_sem(): a bound handle is seen complete. */
	smp_store_release(&h->sem, sem);
	/* @h's; the caller's keeps @sem until then. */
	kref_get(&sem->ref);
	/* Under the lock that poll_wait() takes: no barrier needed. */
	polled = waitqueue_active(&h->wqh);
	spin_unlock_irq(&h->wqh.lock);

	if (polled) {
		init_waitqueue_func_entry(&h->relay, wsem_relay_wake);
		add_wait_queue(&sem->pollers, &h->relay);
		spin_lock(sem->lock);
		wsem_note_polled(sem);
		spin_unlock(sem->lock);
		wake_up_poll(&h->wqh, EPOLLIN | EPOLLRDNORM);
	}
	return 0;
}

/*
 * Leave the queue for @why unless the wait ended meanwhile; true if it
 * left.  The waiters behind may fit now: they are granted.
 */
bool wsem_leave(struct wsem *sem, struct wsem_waiter *w, int why)
{
	struct wsem_wake wake;
	__poll_t before;

	wsem_wake_init(&wake);
	spin_lock(sem->lock);
	if (w->status != WSEM_WAITING) {
		spin_unlock(sem->lock);
		return false;
	}
	before = wsem_events(sem);
	wsem_remove_waiter(sem, w, why, ktime_get_ns());
	wsem_unlock_and_wake(sem, before, &wake);
	return true;
}

/* Now on @clock: CLOCK_MONOTONIC, CLOCK_BOOTTIME or CLOCK_REALTIME. */
ktime_t wsem_now(clockid_t clock)
{
	switch (clock) {
	case CLOCK_REALTIME:
		return ktime_get_real();
	case CLOCK_BOOTTIME:
		return ktime_get_boottime();
	default:
		return ktime_get();
	}
}

/**
 * wsem_release() - give back weight held by a handle
 * @h: the bound handle
 * @weight: 1 .. what @h holds
 *
 * Context: Process context.
 * Return: 0, or -EINVAL (and nothing changes) for a weight of 0 or more
 * than @h holds.
 */
int wsem_release(struct wsem_handle *h, u64 weight)
{
	struct wsem *sem = h->sem;
	struct wsem_wake wake;
	__poll_t before;

	wsem_wake_init(&wake);
	spin_lock(sem->lock);
	if (!weight || weight > h->held) {
		spin_unlock(sem->lock);
		return -EINVAL;
	}
	before = wsem_events_before(sem);
	wsem_sub_held(sem, h, weight);
	trace_wsem_release(sem->id, weight, sem->used);
	wsem_unlock_and_wake(sem, before, &wake);
	return 0;
}

/**
 * wsem_note_polled() - from now on, changes anywhere in @sem's tree wake
 *	@sem's pollers and idle waiters (wsem_wake_tree())
 * @sem: a semaphore whose pollers or idle waiters queued themselves
 *	before the caller took the tree's lock
 *
 * A semaphore stays noted until it is freed: a tree's change wakes only
 * the semaphores that anyone polls, not the whole tree.
 *
 * Context: Under @sem->lock.
 */
void wsem_note_polled(struct wsem *sem)
{
	lockdep_assert_held(sem->lock);

	if (unlikely(list_empty(&sem->poll_node)))
		list_add_tail_rcu(&sem->poll_node, &sem->root->polled);
}

/**
 * wsem_fill_stat() - describe a semaphore as its caller sees it
 * @sem: the semaphore, charged to a namespace
 * @h: the handle whose weight is reported as held and lent, or NULL
 * @st: filled in, apart from @st->size
 * @seen: @h's user reads this (stat, read(2)): the demand that @h's pollers
 *	hear of is news only from now on (wsem_poll())
 * @named: the caller is in @sem's namespace: @st gets the name while it is
 *	linked (names are for their namespace: none leaks to a container)
 *
 * Context: Process context; takes @sem->lock.
 */
void wsem_fill_stat(struct wsem *sem, struct wsem_handle *h,
		    struct wsem_stat *st, bool seen, bool named)
{
	struct user_namespace *ns = current_user_ns();

	st->uid = from_kuid_munged(ns, READ_ONCE(sem->uid));
	st->gid = from_kgid_munged(ns, READ_ONCE(sem->gid));
	st->mode = READ_ONCE(sem->mode);

	spin_lock(sem->lock);
	st->capacity = sem->capacity;
	st->used = sem->used;
	st->available = sem->used <= sem->capacity ?
			sem->capacity - sem->used : 0;
	st->held = h ? h->held : 0;
	st->waiters = sem->nr_waiters;
	/* Past 2^64 - 1 the sum is reported as U64_MAX, never wrapped. */
	st->queued_weight = sem->queued_carry ? U64_MAX : sem->queued_weight;
	st->grants_at_once = sem->stats.grants_at_once;
	st->grants_waited = sem->stats.grants_waited;
	st->timeouts = sem->stats.timeouts;
	st->interrupts = sem->stats.interrupts;
	st->shrunk = sem->stats.shrunk;
	st->wait_ns_total = sem->stats.wait_ns_total;
	st->wait_ns_max = sem->stats.wait_ns_max;
	st->queue_max = sem->stats.queue_max;
	st->lent = sem->lent;
	st->lent_here = h ? h->lent : 0;
	st->ceiling = sem->ceiling;
	st->depth = sem->depth;
	st->parent_id = sem->parent ? sem->parent->id : 0;
	if (seen) {
		h->demand_seen = sem->demand_seq;
		h->tree_seen = sem->root->tree_seq;
	}
	if (sem->linked && named)
		memcpy(st->name, sem->name, sizeof(st->name));
	spin_unlock(sem->lock);
}

/**
 * wsem_poll() - poll() and epoll on a handle bound to @sem
 * @sem: the semaphore
 * @h: the handle, whose own queue the caller polls already
 * @file: the handle's file
 * @wait: the poll table
 *
 * With an asynchronous request, readable (EPOLLIN) once it has ended, until
 * it is collected.  Without one, readable while a try-acquire of 1 would
 * succeed: nobody is queued and some weight is free; polling takes
 * nothing, and the weight may be gone again before the caller's acquire.
 * EPOLLPRI while the semaphore is idle: nothing held, nobody queued.
 * EPOLLRDBAND while the demand (used weight, waiters, queued weight) has
 * changed since @h last read the semaphore's state (wsem_fill_stat()),
 * and for a child also while its tree's flags have (wsem_publish_tree()).
 * Pollers are woken when one of these comes to hold, not while it holds
 * (wsem_unlock_and_wake()): an edge-triggered poller of EPOLLIN hears a
 * semaphore that was full come to have room, not each release after that;
 * a weight above 1 is waited for with an asynchronous request.
 *
 * Context: Process context; takes @sem->lock.
 * Return: any of EPOLLIN | EPOLLRDNORM, EPOLLPRI and EPOLLRDBAND, or 0.
 */
__poll_t wsem_poll(struct wsem *sem, struct wsem_handle *h, struct file *file,
		   poll_table *wait)
{
	__poll_t events;

	poll_wait(file, &sem->pollers, wait);
	spin_lock(sem->lock);
	wsem_note_polled(sem);
	events = wsem_events(sem);
	if (h->demand_seen != sem->demand_seq ||
	    (sem->parent && h->tree_seen != sem->root->tree_seq))
		events |= EPOLLRDBAND;
	if (h->requested) {
		events &= ~(EPOLLIN | EPOLLRDNORM);
		/* Pairs with wsem_end_wait(). */
		if (smp_load_acquire(&h->async.status) <= 0)
			events |= EPOLLIN | EPOLLRDNORM;
	}
	spin_unlock(sem->lock);
	return events;
}

/**
 * wsem_sem_init() - at module load: the parked gangs' work queue
 *
 * Return: 0 or -ENOMEM.
 */
int wsem_sem_init(void)
{
	wsem_gang_wq = alloc_workqueue("wsem_gang", WQ_UNBOUND, 0);
	return wsem_gang_wq ? 0 : -ENOMEM;
}

/**
 * wsem_sem_exit() - at module unload, once every semaphore is gone: the
 * parked gangs' work items that are still queued run first
 */
void wsem_sem_exit(void)
{
	destroy_workqueue(wsem_gang_wq);
	ida_destroy(&wsem_ida);
}
