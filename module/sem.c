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
 * A waiter at the head of the queue polls its status a moment before it
 * sleeps, while its CPU has nothing else to run (wsem_spin()): a holder on
 * another CPU that releases meanwhile hands over without a sleep and
 * without a wake-up, and the granter's wake_up_process() finds it running.
 * The poll changes no order: the waiter is queued throughout.  How long it
 * polls adapts to the semaphore (wsem_adapt_spin()): while its head waits
 * are short (a few times spin_ns) the budget grows up to spin_ns, and one
 * long wait ends the polling, so that a semaphore whose leases last for
 * long spends no CPU on it.
 *
 * The sleeper checks its status before signals and timeouts, and leaves the
 * queue only under sem->lock while still WSEM_WAITING, so a grant that
 * races with a signal wins.  A sleeper that leaves without a grant (signal,
 * timeout) runs the grant walk again, since the waiters behind it may fit
 * now.  Task work (io_uring's completions) must run in user-return context,
 * which a module cannot enter: the sleeper leaves a copy of its waiter in
 * its place (parked), returns to run it, and the restarted call takes the
 * place back (wsem_park()).
 *
 * Pollers and idle waiters are woken only with what a change made new:
 * each change notes the events before it (wsem_events()) and wakes with
 * those that hold after it and did not before, so a release that leaves
 * the semaphore as ready as it was wakes nobody.
 *
 * Semaphores nest.  A child semaphore has a parent, which may have one, up
 * to a root: a tree, which shares its root's lock and its root's queue.
 * Weight granted through a handle bound to a child counts as used on the
 * child and on every ancestor of it, and goes back to all of them at once.
 * Every request in a tree needs the root, so the one arrival order of the
 * tree's queue is the FIFO order of each of its semaphores: the head is
 * granted when it fits on its semaphore and on each ancestor, and nobody
 * behind it is granted before it.  A waiter that its own child's capacity
 * holds back so holds back its whole tree, the price of strict FIFO that
 * one semaphore pays too.  A change in a tree may change what any of its
 * semaphores reports to poll(): all of them that have pollers look again.
 *
 * Who holds and who waits: a handle that comes to hold weight for the
 * first time joins sem->holders, and stays there, holding or not, until it
 * is unbound (so that acquire and release touch no list); every grant
 * notes the acquirer (pid, command, cgroup, when); a waiter notes when it
 * queued.  The statistics are counters under sem->lock.  Nothing of this
 * allocates, and an acquirer that is the handle's last one takes no
 * reference on anything.  What a caller sees of it is views.c's.
 */
#include <linux/capability.h>
#include <linux/cgroup.h>
#include <linux/cpumask.h>
#include <linux/cred.h>
#include <linux/hrtimer.h>
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

#include "wsem.h"

#define CREATE_TRACE_POINTS
#include "wsem_trace.h"

/* Grants told per pass under the lock; a full batch is woken, then more. */
#define WSEM_WAKE_BATCH	8

/* What to do once sem->lock is dropped. */
struct wsem_wake {
	unsigned int nr_tasks;		/* sleepers to wake ... */
	unsigned int nr_handles;	/* ... asynchronous requests' handles */
	struct task_struct *tasks[WSEM_WAKE_BATCH];	/* with a reference */
	struct wsem_handle *handles[WSEM_WAKE_BATCH];	/* with a reference */
	struct wsem *sem;		/* wake its pollers ... */
	__poll_t events;		/* ... with these, new since the change */
	struct list_head parked;	/* parked waiters to free (park_node) */
};

static DEFINE_IDA(wsem_ida);

static __always_inline void wsem_wake_init(struct wsem_wake *wake)
{
	wake->nr_tasks = 0;
	wake->nr_handles = 0;
	wake->events = 0;
	INIT_LIST_HEAD(&wake->parked);
}

static bool wsem_wake_full(const struct wsem_wake *wake)
{
	return wake->nr_tasks == WSEM_WAKE_BATCH ||
	       wake->nr_handles == WSEM_WAKE_BATCH;
}

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
static void wsem_free_parked(struct wsem_waiter *w)
{
	wsem_test_count_parked(-1);
	put_task_struct(w->task);
	kfree(w);
}

/*
 * Wake the pollers and idle waiters of every semaphore of @root's tree,
 * with @events, under rcu_read_lock() taken before the tree's lock was
 * dropped: a semaphore that leaves the tree meanwhile (wsem_free()) is
 * still there to look at, with nobody polling it.  A poller queues itself
 * before it takes the tree's lock to look, so one that looked before the
 * change is seen here.
 */
static void wsem_wake_tree(struct wsem *root, __poll_t events)
{
	struct wsem *s;

	list_for_each_entry_rcu(s, &root->tree, tree_node) {
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

/* The largest weight a request may ask for: its ceiling, or its capacity. */
static u64 wsem_max_weight(const struct wsem *sem)
{
	return sem->ceiling ?: sem->capacity;
}

/* The used weight or the queue changed: the demand event is new. */
static void wsem_note_demand(struct wsem *sem)
{
	WRITE_ONCE(sem->demand_seq, sem->demand_seq + 1);
}

static bool wsem_fits(const struct wsem *sem, u64 weight)
{
	return sem->used <= sem->capacity &&
	       weight <= sem->capacity - sem->used;
}

/* Does @weight fit on @sem and on each of its ancestors (its line)? */
static bool wsem_fits_up(const struct wsem *sem, u64 weight)
{
	const struct wsem *s;

	for (s = sem; s; s = s->parent) {
		if (!wsem_fits(s, weight))
			return false;
	}
	return true;
}

/* The largest weight a request on @sem may ask for: the least of its line. */
static u64 wsem_max_weight_up(const struct wsem *sem)
{
	const struct wsem *s;
	u64 max = U64_MAX;

	for (s = sem; s; s = s->parent)
		max = min(max, wsem_max_weight(s));
	return max;
}

/*
 * What poll() reports without an asynchronous request: EPOLLIN while a
 * try-acquire of 1 would succeed (nobody queued in the tree, weight free
 * on the semaphore and its ancestors), EPOLLPRI while the semaphore is
 * idle (nothing held on it, nobody queued for it).
 */
static __poll_t wsem_events(const struct wsem *sem)
{
	__poll_t events = 0;

	if (list_empty(&sem->root->waiters) && wsem_fits_up(sem, 1))
		events |= EPOLLIN | EPOLLRDNORM;
	if (!sem->used && !sem->nr_waiters)
		events |= EPOLLPRI;
	return events;
}

/*
 * Note @task as the last acquirer through @h, under @h->sem->lock: a
 * spinlock is an RCU read-side section (preemption off, or on PREEMPT_RT
 * rcu_read_lock() taken by the lock), which is what task_dfl_cgroup()
 * needs.  References are taken only when the process or the cgroup
 * differs from the last one's; a cgroup that takes none is noted as none.
 * This runs on every grant: no call out of the module on the path where
 * nothing changed.
 */
static void wsem_note_holder(struct wsem_handle *h, struct task_struct *task)
{
	struct pid *pid = task_tgid(task);
#ifdef CONFIG_CGROUPS
	struct cgroup *cgrp = task_dfl_cgroup(task);
#endif

	lockdep_assert_held(h->sem->lock);
	h->since = get_jiffies_64();
	/* A racing prctl(PR_SET_NAME) tears the name at worst. */
	memcpy(h->comm, task->comm, sizeof(h->comm));
	h->comm[sizeof(h->comm) - 1] = '\0';
	if (unlikely(pid != h->pid)) {
		put_pid(h->pid);
		h->pid = get_pid(pid);
	}
#ifdef CONFIG_CGROUPS
	if (unlikely(cgrp != h->cgrp)) {
		if (h->cgrp)
			cgroup_put(h->cgrp);
		/*
		 * A cgroup whose last reference is gone takes none: one that
		 * @task has just left (a migration racing with us, seen
		 * through its old css_set under RCU) and that was removed
		 * meanwhile.  @task is then shown with no cgroup, not with
		 * the last acquirer's.  Too narrow a window to reach by
		 * chance: test builds can make the next try fail.
		 */
		h->cgrp = !wsem_test_cgroup_fail() && cgroup_tryget(cgrp) ?
			  cgrp : NULL;
	}
#endif
}

/* @task, acquiring through @h, is granted @weight, on @sem and above. */
static void wsem_add_held(struct wsem *sem, struct wsem_handle *h, u64 weight,
			  struct task_struct *task)
{
	struct wsem *s;

	for (s = sem; s; s = s->parent) {
		s->used += weight;
		wsem_note_demand(s);
	}
	if (!h->held) {
		/* Once on @sem->holders, a handle stays there until unbound. */
		if (unlikely(list_empty(&h->hold_node)))
			list_add_tail(&h->hold_node, &sem->holders);
		sem->nr_holders++;
	}
	h->held += weight;
	wsem_note_holder(h, task);
}

/* @h gives back @weight of what it holds. */
static void wsem_sub_held(struct wsem *sem, struct wsem_handle *h, u64 weight)
{
	struct wsem *s;

	if (!weight)
		return;
	for (s = sem; s; s = s->parent) {
		s->used -= weight;
		wsem_note_demand(s);
	}
	h->held -= weight;
	if (!h->held)
		sem->nr_holders--;
}

/*
 * Queue @w, a request on @sem, at the tail of the tree's queue; it counts
 * as a waiter of @sem and of each of its ancestors.
 */
static void wsem_enqueue(struct wsem *sem, struct wsem_waiter *w)
{
	struct list_head *queue = &sem->root->waiters;
	struct wsem *s;

	w->head = list_empty(queue);
	list_add_tail(&w->node, queue);
	for (s = sem; s; s = s->parent) {
		s->nr_waiters++;
		wsem_note_demand(s);
		if (s->nr_waiters > s->stats.queue_max)
			s->stats.queue_max = s->nr_waiters;
		if (check_add_overflow(s->queued_weight, w->weight,
				       &s->queued_weight))
			s->queued_carry++;
	}
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
	for (s = sem; s; s = s->parent) {
		s->nr_waiters--;
		wsem_note_demand(s);
		if (s->queued_weight < w->weight)
			s->queued_carry--;
		s->queued_weight -= w->weight;
	}
}

/*
 * Take @w off the queue, its wait ended at @now with @result (counted on
 * the semaphore it asked through, @sem: its handle's).
 */
static void wsem_remove_waiter(struct wsem *sem, struct wsem_waiter *w,
			       int result, u64 now)
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
static void wsem_end_wait(struct wsem *sem, struct wsem_waiter *w, int result,
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
static bool wsem_abandoned(const struct wsem_waiter *w)
{
	return w->parked && (READ_ONCE(w->task->flags) & PF_EXITING);
}

/**
 * struct wsem_gang - one request for weight on several semaphores at once
 * @task: the requester, who sleeps in wsem_acquire_many()
 * @nr: how many semaphores
 * @nr_roots: how many trees they are in
 * @look: set by a grant walk that found the gang's first part in its tree
 *	at the head and fitting there (wsem_poke_gang()), under that tree's
 *	lock; cleared by @task under every tree's lock, when it looks
 * @fail: 0, or the errno a shrink made its lot (-EINVAL), set like @look
 * @roots: the roots of the trees, in lock order: by increasing id
 * @part: one queue entry per semaphore, in its tree's queue; the parts of
 *	one tree follow each other there, queued at once
 *
 * A gang is granted by its own task alone, under the locks of all its
 * trees, taken in @roots order (spin_lock_nested(), a subclass per tree):
 * a grant walk of one tree, which holds that tree's lock only, stops at a
 * gang and, if the gang fits in its tree, wakes the task to look at every
 * tree (wsem_gang_look()).  All its parts were queued at once under all
 * those locks, so two gangs are in the same order in every tree they
 * share, and a wait only ever points at an earlier arrival: no deadlock.
 */
struct wsem_gang {
	struct task_struct *task;
	unsigned int nr;
	unsigned int nr_roots;
	bool look;
	int fail;
	struct wsem *roots[WSEM_MANY_MAX];
	struct wsem_waiter part[WSEM_MANY_MAX];
};

/*
 * Do the parts of @g in @root's tree stand first in its queue, and fit
 * there together (a part on a child counts on its ancestors too, and two
 * parts on one line add up)?  The weights are added for the look and
 * taken off again; u64 arithmetic wraps back exactly.
 */
static bool wsem_gang_fits(struct wsem_gang *g, struct wsem *root)
{
	struct list_head *pos = &root->waiters;
	bool fits = true, wrapped = false;
	struct wsem_waiter *p;
	struct wsem *s;
	unsigned int i;

	lockdep_assert_held(root->lock);

	for (i = 0; i < g->nr; i++) {
		if (g->part[i].handle->sem->root != root)
			continue;
		pos = pos->next;
		if (pos != &g->part[i].node)
			return false;
	}
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
 * Have @g's task look at its trees (and end with @fail, if not 0), woken
 * once @wake is; @wake must have room.  Under one of its trees' locks.
 */
static void wsem_poke_gang(struct wsem_gang *g, int fail,
			   struct wsem_wake *wake)
{
	if (fail)
		WRITE_ONCE(g->fail, fail);
	if (READ_ONCE(g->look))
		return;
	WRITE_ONCE(g->look, true);
	wake->tasks[wake->nr_tasks++] = get_task_struct(g->task);
}

/* The semaphore a waiter asked through: its handle's. */
static struct wsem *wsem_waiter_sem(const struct wsem_waiter *w)
{
	return w->handle->sem;
}

/*
 * Grant the head of @sem's tree's queue, and the next, while each fits on
 * the semaphore it asked through and on every ancestor of that one, and
 * @wake has room.  Return: true if it stopped for room, with a head that
 * may fit.
 */
static bool wsem_grant_waiters(struct wsem *sem, struct wsem_wake *wake)
{
	struct wsem_waiter *w, *next;
	u64 now = 0;

	lockdep_assert_held(sem->lock);

	list_for_each_entry_safe(w, next, &sem->root->waiters, node) {
		if (wsem_wake_full(wake))
			return true;
		if (unlikely(w->gang)) {
			/* A gang grants itself, under all its trees' locks. */
			if (wsem_gang_fits(w->gang, sem->root))
				wsem_poke_gang(w->gang, 0, wake);
			break;
		}
		if (!now)
			now = ktime_get_ns();
		if (unlikely(wsem_abandoned(w))) {
			wsem_end_wait(wsem_waiter_sem(w), w, -EINTR, now, wake);
			list_move(&w->park_node, &wake->parked);
			continue;
		}
		if (!wsem_fits_up(wsem_waiter_sem(w), w->weight))
			break;
		wsem_end_wait(wsem_waiter_sem(w), w, 0, now, wake);
	}
	return false;
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

/*
 * Which of @sem and its ancestors have pollers, looked at as
 * wsem_has_pollers() does: bit i for the one i levels up.  Their demand
 * changed (a grant at once, a request queued) and wsem_tell_demand()
 * tells them once @sem->lock is dropped.
 */
static u32 wsem_demand_pollers(struct wsem *sem)
{
	struct wsem *s;
	u32 mask = 0;
	int i = 0;

	lockdep_assert_held(sem->lock);

	for (s = sem; s; s = s->parent) {
		/* Ordered by @sem->lock, as wsem_has_pollers() says. */
		if (waitqueue_active(&s->pollers))
			mask |= BIT(i);
		i++;
	}
	return mask;
}

/* Tell the pollers that wsem_demand_pollers() found in @mask. */
static void wsem_tell_demand(struct wsem *sem, u32 mask)
{
	struct wsem *s;

	for (s = sem; s; s = s->parent) {
		if (mask & 1)
			wake_up_poll(&s->pollers, EPOLLRDBAND);
		mask >>= 1;
	}
}

/*
 * A walk that ends waits stopped with @wake full: wake that batch without
 * @sem->lock, then take the lock again for the walk to go on.
 */
static void wsem_wake_batch(struct wsem *sem, struct wsem_wake *wake)
	__releases(sem->lock) __acquires(sem->lock)
{
	spin_unlock(sem->lock);
	wsem_wake_up(wake);
	spin_lock(sem->lock);
}

/*
 * After weight came back or a waiter left (@before: wsem_events() before
 * the change): grant the waiters that fit now, drop @sem->lock, and wake
 * the grantees, then the pollers with the events that are new and with
 * the demand event (EPOLLRDBAND), which a poller that did not ask for it
 * filters out by the wake-up's key.  A full batch of grantees is woken
 * before the walk goes on, under the lock again.
 */
static void wsem_unlock_and_wake(struct wsem *sem, __poll_t before,
				 struct wsem_wake *wake)
	__releases(sem->lock)
{
	lockdep_assert_held(sem->lock);

	while (wsem_grant_waiters(sem, wake))
		wsem_wake_batch(sem, wake);
	if (unlikely(!list_is_singular(&sem->root->tree))) {
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
		return;
	}
	/* Demand changed with all but a resize: worth no look of its own. */
	wake->events = (wsem_events(sem) & ~before) | EPOLLRDBAND;
	if (!wsem_has_pollers(sem, wake->events))
		wake->events = 0;
	wake->sem = sem;
	spin_unlock(sem->lock);
	wsem_wake_up(wake);
}

/*
 * After a shrink in @sem's tree: end with -EINVAL the waits of the waiters
 * heavier than the capacity of the semaphore they asked through or of one
 * of its ancestors (never one with a ceiling, whose waiters are all within
 * it), at *@now (taken at the first of them), while @wake has
 * room.  Return: true if it stopped for room, with more of them left.
 */
static bool wsem_fail_overweight(struct wsem *sem, u64 *now,
				 struct wsem_wake *wake)
{
	struct wsem_waiter *w, *next;

	lockdep_assert_held(sem->lock);

	list_for_each_entry_safe(w, next, &sem->root->waiters, node) {
		if (w->weight <= wsem_max_weight_up(wsem_waiter_sem(w)))
			continue;
		if (wsem_wake_full(wake))
			return true;
		if (unlikely(w->gang)) {
			wsem_poke_gang(w->gang, -EINVAL, wake);
			continue;
		}
		if (!*now)
			*now = ktime_get_ns();
		wsem_end_wait(wsem_waiter_sem(w), w, -EINVAL, *now, wake);
	}
	return false;
}

/*
 * Set the capacity in force of @sem to @capacity.  A shrink fails the
 * waiters heavier than it (wsem_fail_overweight()); the caller grants those
 * that fit (wsem_unlock_and_wake()).
 */
static void wsem_resize(struct wsem *sem, u64 capacity, struct wsem_wake *wake)
{
	u64 now = 0;

	lockdep_assert_held(sem->lock);

	trace_wsem_capacity(sem->id, sem->capacity, capacity);
	sem->capacity = capacity;
	while (wsem_fail_overweight(sem, &now, wake))
		wsem_wake_batch(sem, wake);
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
 * and its requests queue in the root's queue.
 *
 * Context: Process context, may sleep.
 * Return: the semaphore with one reference (wsem_put()), or NULL when out
 * of memory.
 */
struct wsem *wsem_alloc(u64 capacity, u64 ceiling, umode_t mode,
			const char *name, struct user_namespace *user_ns,
			struct wsem *parent)
{
	struct wsem *sem;

	sem = kzalloc(sizeof(*sem), WSEM_GFP);
	if (!sem)
		return NULL;
	sem->id = ida_alloc_min(&wsem_ida, 1, GFP_KERNEL);
	if (sem->id < 0) {
		kfree(sem);
		return NULL;
	}

	spin_lock_init(&sem->own_lock);
	sem->lock = &sem->own_lock;
	sem->root = sem;
	INIT_LIST_HEAD(&sem->tree);
	list_add(&sem->tree_node, &sem->tree);
	sem->capacity = capacity;
	sem->ceiling = ceiling;
	INIT_LIST_HEAD(&sem->waiters);
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
		kref_get(&parent->ref);
		sem->parent = parent;
		sem->root = parent->root;
		sem->depth = parent->depth + 1;
		sem->lock = parent->lock;
		spin_lock(sem->lock);
		list_add_tail_rcu(&sem->tree_node, &sem->root->tree);
		parent->nr_children++;
		spin_unlock(sem->lock);
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
		     sem->nr_waiters);
	if (sem->parent) {
		/* Its tree's walkers may see it until a grace period ends. */
		spin_lock(sem->lock);
		list_del_rcu(&sem->tree_node);
		sem->parent->nr_children--;
		spin_unlock(sem->lock);
	}
	put_user_ns(sem->user_ns);
	ida_free(&wsem_ida, sem->id);
	/* RCU-walk lookups read it through its inode (wsemfs). */
	kfree_rcu(sem, rcu);
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
		wake_up_poll(&h->wqh, EPOLLIN | EPOLLRDNORM);
	}
	return 0;
}

/**
 * wsem_unbind() - give back what a closing handle holds
 * @h: the handle, bound, with no caller left inside an ioctl on it
 *
 * The handle's weight returns to the semaphore and the waiters that now fit
 * are granted; its queued request and its parked waiters leave the queue.
 * The handle's reference to the semaphore is left to the caller to drop
 * (wsem_put()), since the last one is its namespace's to uncharge.
 *
 * Context: Process context.
 */
void wsem_unbind(struct wsem_handle *h)
{
	struct wsem *sem = h->sem;
	struct task_struct *requester = NULL;
	struct wsem_waiter *w, *next;
	struct wsem_wake wake;
	LIST_HEAD(parked);
	__poll_t before;
	u64 now;

	if (h->relay.func)
		remove_wait_queue(&sem->pollers, &h->relay);
	wsem_wake_init(&wake);
	spin_lock(sem->lock);
	before = wsem_events(sem);
	now = ktime_get_ns();
	/* Closing cancels a queued request; a granted one is in @h->held. */
	if (h->requested) {
		if (h->async.status == WSEM_WAITING)
			wsem_remove_waiter(sem, &h->async, -ECANCELED, now);
		requester = h->async.task;
		h->requested = false;
	}
	/* A parked sleeper cannot come back through a closed file. */
	list_for_each_entry(w, &h->parked, park_node) {
		if (w->status != WSEM_WAITING)
			continue;
		wsem_remove_waiter(sem, w, -ECANCELED, now);
	}
	list_splice_init(&h->parked, &parked);
	if (h->held)
		trace_wsem_release(sem->id, h->held, sem->used - h->held);
	wsem_sub_held(sem, h, h->held);
	list_del_init(&h->hold_node);
	if (h->lent) {
		/* Its loan is withdrawn as a shrink is. */
		sem->lent -= h->lent;
		wsem_resize(sem, sem->capacity - h->lent, &wake);
		h->lent = 0;
	}
	wsem_unlock_and_wake(sem, before, &wake);
	if (requester)
		put_task_struct(requester);
	list_for_each_entry_safe(w, next, &parked, park_node)
		wsem_free_parked(w);
}

/**
 * wsem_handle_forget() - drop what a closed handle noted of its acquirers
 * @h: the handle, unbound or past wsem_unbind()
 *
 * Context: Process context.
 */
void wsem_handle_forget(struct wsem_handle *h)
{
	put_pid(h->pid);
#ifdef CONFIG_CGROUPS
	if (h->cgrp)
		cgroup_put(h->cgrp);
#endif
}

/*
 * Leave the queue for @why unless the wait ended meanwhile; true if it
 * left.  The waiters behind may fit now: they are granted.
 */
static bool wsem_leave(struct wsem *sem, struct wsem_waiter *w, int why)
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

/*
 * Must the wait end now?  -EINTR for a fatal signal; -ERESTARTNOHAND for
 * any other signal or a stop (the call fails with EINTR if a handler runs,
 * and is restarted, at the tail of the queue, if none does);
 * -ERESTARTNOINTR for task work alone (TIF_NOTIFY_SIGNAL, as io_uring
 * queues it: see wsem_park()); -ETIMEDOUT once @timed_out; else 0.
 */
static int wsem_wait_check(bool timed_out)
{
	if (fatal_signal_pending(current))
		return -EINTR;
	if (task_sigpending(current))
		return -ERESTARTNOHAND;
	if (test_thread_flag(TIF_NOTIFY_SIGNAL))
		return -ERESTARTNOINTR;
	return timed_out ? -ETIMEDOUT : 0;
}

/*
 * Task work is pending, and only the way back to user space runs it: a
 * module cannot.  Leave a copy of @w in its place in the queue, parked on
 * its handle, and restart the call, which takes the place back
 * (wsem_acquire()).  Should the memory for the copy be missing, the wait
 * is left and the restarted call queues at the tail, as after a stop.
 *
 * Return: -ERESTARTNOINTR, or how the wait ended if it ended meanwhile.
 */
static int wsem_park(struct wsem *sem, struct wsem_waiter *w)
{
	struct wsem_waiter *p = kmalloc(sizeof(*p), WSEM_GFP);
	int ret = -ERESTARTNOINTR;

	if (!p)
		return wsem_leave(sem, w, ret) ? ret : READ_ONCE(w->status);
	spin_lock(sem->lock);
	if (w->status == WSEM_WAITING) {
		*p = *w;
		p->parked = true;
		get_task_struct(p->task);
		list_replace(&w->node, &p->node);
		list_add_tail(&p->park_node, &w->handle->parked);
		wsem_test_count_parked(1);
		p = NULL;
	} else {
		ret = w->status;
	}
	spin_unlock(sem->lock);
	if (!p)
		wsem_test_park_pause();
	kfree(p);
	return ret;
}

/*
 * The caller's parked waiter on @h (wsem_park()), or NULL; the waiters of
 * tasks that are exiting go to @wake->parked, to be freed.
 *
 * A parked sleeper normally comes back at once, when its task work has
 * run, and its restarted call collects its waiter.  One whose signal
 * handler does not return (siglongjmp(), thread exit) never restarts, and
 * nothing tells us: its waiter, queued or ended, stays on @h->parked with
 * a reference to its task.  It cannot be freed when it ends (granted, or
 * left), since a sleeper that is merely slow to come back (a handler that
 * runs long, preemption) must still find how its wait ended, or it would
 * queue anew and be granted twice.  It is freed when that task acquires
 * through @h again (wsem_acquire() collects it), when the task has exited
 * (here, at any acquire through @h, and by the grant walk that ends a
 * queued one: wsem_abandoned()), or at close.  So @h->parked holds at
 * most one waiter per live thread that parked through @h and left
 * through a handler, and none of a thread that has ended.
 */
static struct wsem_waiter *wsem_find_parked(struct wsem *sem,
					    struct wsem_handle *h,
					    struct wsem_wake *wake)
{
	struct wsem_waiter *w, *next, *mine = NULL;
	u64 now = 0;

	lockdep_assert_held(sem->lock);

	list_for_each_entry_safe(w, next, &h->parked, park_node) {
		if (w->task == current) {
			mine = w;
		} else if (unlikely(wsem_abandoned(w))) {
			if (w->status == WSEM_WAITING) {
				if (!now)
					now = ktime_get_ns();
				wsem_remove_waiter(sem, w, -EINTR, now);
			}
			list_move(&w->park_node, &wake->parked);
		}
	}
	return mine;
}

/*
 * A parked waiter the restarted call cannot take back (another weight, a
 * try): off the queue if still on it, and freed.  Entered with @sem->lock
 * held, which it drops.  Return: how its wait had ended, or WSEM_WAITING
 * if it was still queued.
 */
static int wsem_drop_parked(struct wsem *sem, struct wsem_waiter *p)
	__releases(sem->lock)
{
	int status = p->status;
	struct wsem_wake wake;
	__poll_t before;

	wsem_wake_init(&wake);
	list_del(&p->park_node);
	if (status == WSEM_WAITING) {
		before = wsem_events(sem);
		wsem_remove_waiter(sem, p, -ECANCELED, ktime_get_ns());
		wsem_unlock_and_wake(sem, before, &wake);
	} else {
		spin_unlock(sem->lock);
	}
	wsem_free_parked(p);
	return status;
}

/* Sleep until woken or @deadline on @clock; false once it has passed. */
static bool __sched wsem_sleep(clockid_t clock, ktime_t *deadline)
{
	if (!deadline) {
		schedule();
		return true;
	}
	return schedule_hrtimeout_range_clock(deadline, current->timer_slack_ns,
					      HRTIMER_MODE_ABS, clock) != 0;
}

/* Now on @clock: CLOCK_MONOTONIC, CLOCK_BOOTTIME or CLOCK_REALTIME. */
static ktime_t wsem_now(clockid_t clock)
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

/*
 * Poll for the end of @w's wait on @sem for up to its poll budget (at most
 * spin_ns, see wsem_adapt_spin(); not past @deadline on @clock) before
 * sleeping, while this CPU has nothing else to run.  A holder running on
 * another CPU that releases meanwhile then hands over without the waiter's
 * sleep and without a wake-up IPI, the cost that dominates a hand-off
 * between CPUs.  KVM polls a halted vCPU the same way.
 * Anything else to do, a signal included, ends the poll early: the caller's
 * loop then handles it as after a sleep.
 */
static void wsem_spin(struct wsem *sem, struct wsem_waiter *w,
		      clockid_t clock, const ktime_t *deadline)
{
	u64 budget = min_t(u64, READ_ONCE(sem->spin_budget), READ_ONCE(spin_ns));
	u64 start, now;
	int end = WSEM_SPIN_BUDGET;
	s64 left;

	if (!budget || num_online_cpus() < 2 || !single_task_running())
		return;
	if (deadline) {
		left = ktime_to_ns(ktime_sub(*deadline, wsem_now(clock)));
		if (left <= 0)
			return;
		if (left < budget) {
			budget = left;
			end = WSEM_SPIN_DEADLINE;
		}
	}
	start = ktime_get_ns();
	for (now = start; now - start < budget; now = ktime_get_ns()) {
		/* Not WSEM_WAITING: ended, the caller reads how. */
		if (READ_ONCE(w->status) <= 0) {
			end = WSEM_SPIN_TOLD;
			break;
		}
		if (signal_pending(current)) {
			end = WSEM_SPIN_SIGNAL;
			break;
		}
		if (need_resched() || !single_task_running()) {
			end = WSEM_SPIN_BUSY;
			break;
		}
		cpu_relax();
	}
	trace_wsem_spin(sem->id, current->pid, now - start, end);
}

/*
 * Queue @h's request for @weight at the tail, or take the place of the
 * caller's @parked waiter, and sleep until it is granted, a signal arrives
 * or @deadline (if any) on @clock passes; at the head of the queue, poll a
 * moment first (wsem_spin()).  Entered with @sem->lock held, which it
 * drops.
 */
static int __sched wsem_wait(struct wsem *sem, struct wsem_handle *h,
			     struct wsem_waiter *parked, u64 weight,
			     clockid_t clock, ktime_t *deadline)
	__releases(sem->lock)
{
	struct wsem_waiter w = {
		.task = current,
		.handle = h,
		.weight = weight,
		.since = ktime_get_ns(),
		.status = WSEM_WAITING,
	};
	bool timed_out = false, head;
	u32 tell = 0;
	int ret;

	if (parked) {
		w.since = parked->since;
		w.head = parked->head;
		list_replace(&parked->node, &w.node);
		list_del(&parked->park_node);
	} else {
		wsem_enqueue(sem, &w);
		tell = wsem_demand_pollers(sem);
	}
	head = list_is_first(&w.node, &sem->root->waiters);
	spin_unlock(sem->lock);
	if (tell)
		wsem_tell_demand(sem, tell);

	if (parked)
		wsem_free_parked(parked);
	else if (head)
		wsem_spin(sem, &w, clock, deadline);

	for (;;) {
		set_current_state(TASK_INTERRUPTIBLE);
		/* Pairs with wsem_end_wait(): the grant's accounting is seen. */
		ret = smp_load_acquire(&w.status);
		if (ret != WSEM_WAITING)
			break;
		ret = wsem_wait_check(timed_out);
		if (ret) {
			__set_current_state(TASK_RUNNING);
			if (ret == -ERESTARTNOINTR)
				return wsem_park(sem, &w);
			if (wsem_leave(sem, &w, ret))
				return ret;
			/* It ended meanwhile, under the lock: a grant wins. */
			return READ_ONCE(w.status);
		}
		timed_out = !wsem_sleep(clock, deadline);
	}
	__set_current_state(TASK_RUNNING);
	return ret;
}

/* Queue @h's asynchronous request for @weight; the caller checked it. */
static void wsem_queue_async(struct wsem *sem, struct wsem_handle *h,
			     u64 weight)
{
	struct wsem_waiter *w = &h->async;

	lockdep_assert_held(sem->lock);

	w->task = get_task_struct(current);
	w->handle = h;
	w->weight = weight;
	w->since = ktime_get_ns();
	w->status = WSEM_WAITING;
	w->async = true;
	h->requested = true;
	wsem_enqueue(sem, w);
}

/**
 * wsem_acquire() - acquire weight through a bound handle
 * @h: the handle
 * @weight: 1 .. capacity
 * @flags: WSEM_ACQUIRE_TRY, _DEADLINE or _ASYNC, validated by the caller
 * @clock: the clock of @deadline
 * @deadline: absolute deadline on @clock, with WSEM_ACQUIRE_DEADLINE
 *
 * WSEM_ACQUIRE_ASYNC queues the handle's request (struct wsem_handle
 * @async) at the tail instead of sleeping; its end wakes the handle's
 * pollers, and wsem_async_end() collects it.  A call restarted after its
 * sleeper left to run task work takes its parked place back.
 *
 * Context: Process context, may sleep unless WSEM_ACQUIRE_TRY or _ASYNC.
 * Return: 0 when granted; -EINVAL for a weight of 0 or above the capacity
 * (also when a shrink makes it so while waiting); -EAGAIN for a try that
 * cannot be granted at once; -ETIMEDOUT at the deadline; -EINTR or
 * -ERESTARTNOHAND on a signal; -ERESTARTNOINTR to run task work;
 * -EINPROGRESS for a queued asynchronous request, -EBUSY if the handle has
 * one already.
 */
int wsem_acquire(struct wsem_handle *h, u64 weight, u64 flags,
		 clockid_t clock, ktime_t deadline)
{
	ktime_t *until = flags & WSEM_ACQUIRE_DEADLINE ? &deadline : NULL;
	struct wsem *sem = h->sem;
	struct wsem_waiter *p;
	struct wsem_wake wake;
	__poll_t before;
	u32 tell;
	int ret = 0;

again:
	spin_lock(sem->lock);
	p = NULL;
	if (unlikely(!list_empty(&h->parked))) {
		wsem_wake_init(&wake);
		before = wsem_events(sem);
		p = wsem_find_parked(sem, h, &wake);
		if (!list_empty(&wake.parked)) {
			/* Freed, and those behind a queued one may fit. */
			wsem_unlock_and_wake(sem, before, &wake);
			goto again;
		}
	}
	if (p && p->weight == weight && p->status == WSEM_WAITING &&
	    !(flags & (WSEM_ACQUIRE_TRY | WSEM_ACQUIRE_ASYNC)))
		return wsem_wait(sem, h, p, weight, clock, until);
	if (p) {
		u64 parked_weight = p->weight;

		/* One that ended for this very call is its answer. */
		ret = wsem_drop_parked(sem, p);
		if (ret != WSEM_WAITING && parked_weight == weight)
			return ret;
		goto again;
	}
	tell = 0;
	if (!weight || weight > wsem_max_weight_up(sem)) {
		ret = -EINVAL;
	} else if ((flags & WSEM_ACQUIRE_ASYNC) && h->requested) {
		ret = -EBUSY;
	} else if (list_empty(&sem->root->waiters) &&
		   wsem_fits_up(sem, weight)) {
		wsem_add_held(sem, h, weight, current);
		sem->stats.grants_at_once++;
		trace_wsem_grant(sem->id, current->pid, weight, 0);
		tell = wsem_demand_pollers(sem);
	} else if (flags & WSEM_ACQUIRE_TRY) {
		ret = -EAGAIN;
	} else if (flags & WSEM_ACQUIRE_ASYNC) {
		wsem_queue_async(sem, h, weight);
		tell = wsem_demand_pollers(sem);
		ret = -EINPROGRESS;
	} else if (until && ktime_compare(deadline, wsem_now(clock)) <= 0) {
		sem->stats.timeouts++;
		trace_wsem_wait_end(sem->id, current->pid, weight, -ETIMEDOUT,
				    0);
		ret = -ETIMEDOUT;
	} else {
		return wsem_wait(sem, h, NULL, weight, clock, until);
	}
	spin_unlock(sem->lock);
	if (tell)
		wsem_tell_demand(sem, tell);
	return ret;
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
 * locks (@before: each tree's root's events before the change): grant in
 * each tree whoever fits now, and wake, tree by tree.  The walks need not
 * follow the change at once: whoever changes a tree in between walks it.
 */
static void wsem_gang_walk(struct wsem_gang *g, const __poll_t *before)
{
	struct wsem_wake wake;
	unsigned int i;

	for (i = 0; i < g->nr_roots; i++) {
		wsem_wake_init(&wake);
		spin_lock(g->roots[i]->lock);
		wsem_unlock_and_wake(g->roots[i], before[i], &wake);
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
 * Could @g ever be granted?  Not if what it asks of one of its semaphores
 * exceeds what that one can ever give (wsem_max_weight()), as a single
 * request fails that asks more than its line can give.  Under every
 * tree's lock.
 */
static bool wsem_gang_can_fit(const struct wsem_gang *g)
{
	const struct wsem_waiter *p;
	const struct wsem *s;
	unsigned int i;

	for (i = 0, p = g->part; i < g->nr; i++, p++) {
		for (s = p->handle->sem; s; s = s->parent) {
			if (wsem_gang_need(g, s) > wsem_max_weight(s))
				return false;
		}
	}
	return true;
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
 * Queue @g's parts at the tails of their trees' queues, or grant it at
 * once if every tree's queue is empty and it fits; with WSEM_ACQUIRE_TRY
 * or a deadline passed, neither.  Return: 0 when granted, -EAGAIN,
 * -ETIMEDOUT, -EINVAL (more than a semaphore can ever give), or
 * WSEM_WAITING when queued.
 */
static int wsem_gang_queue(struct wsem_gang *g, u64 flags, clockid_t clock,
			   const ktime_t *deadline)
{
	__poll_t before[WSEM_MANY_MAX];
	bool empty = true;
	unsigned int i;
	int ret;

	wsem_gang_lock(g);
	if (!wsem_gang_can_fit(g)) {
		wsem_gang_unlock(g);
		return -EINVAL;
	}
	for (i = 0; i < g->nr_roots; i++) {
		before[i] = wsem_events(g->roots[i]);
		empty &= list_empty(&g->roots[i]->waiters);
	}
	/* Queued for the look: granted at once, or taken off again. */
	for (i = 0; i < g->nr; i++)
		wsem_enqueue(g->part[i].handle->sem, &g->part[i]);
	ret = WSEM_WAITING;
	if (empty && wsem_gang_fits_all(g)) {
		for (i = 0; i < g->nr; i++) {
			struct wsem_waiter *p = &g->part[i];
			struct wsem *sem = p->handle->sem;

			wsem_dequeue(sem, p);
			wsem_add_held(sem, p->handle, p->weight, current);
			sem->stats.grants_at_once++;
			trace_wsem_grant(sem->id, current->pid, p->weight, 0);
		}
		ret = 0;
	}
	if (ret == WSEM_WAITING &&
	    ((flags & WSEM_ACQUIRE_TRY) ||
	     (deadline && ktime_compare(*deadline, wsem_now(clock)) <= 0))) {
		/* It never waited: no wait to count, as for one. */
		for (i = 0; i < g->nr; i++)
			wsem_dequeue(g->part[i].handle->sem, &g->part[i]);
		ret = flags & WSEM_ACQUIRE_TRY ? -EAGAIN : -ETIMEDOUT;
	}
	wsem_gang_unlock(g);
	wsem_gang_walk(g, before);
	return ret;
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
 * A signal, a stop or task work ends the wait (the call restarts at the
 * tails if no handler runs); a shrink that leaves a semaphore of it too
 * small fails it.
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
	unsigned int i, j;
	int ret;

	g = kzalloc(sizeof(*g), WSEM_GFP);
	if (!g)
		return -ENOMEM;
	g->task = current;
	g->nr = n;
	for (i = 0; i < n; i++) {
		struct wsem *root = hs[i]->sem->root;

		g->part[i] = (struct wsem_waiter) {
			.task = current,
			.handle = hs[i],
			.weight = weights[i],
			.since = ktime_get_ns(),
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

	ret = wsem_gang_queue(g, flags, clock, until);
	while (ret == WSEM_WAITING) {
		set_current_state(TASK_INTERRUPTIBLE);
		if (READ_ONCE(g->look)) {
			__set_current_state(TASK_RUNNING);
			ret = wsem_gang_look(g);
			continue;
		}
		ret = wsem_wait_check(timed_out);
		if (ret) {
			__set_current_state(TASK_RUNNING);
			ret = wsem_gang_leave(g, ret);
			break;
		}
		timed_out = !wsem_sleep(clock, until);
		ret = WSEM_WAITING;
	}
	kfree(g);
	return ret;
}

/**
 * wsem_async_end() - how the handle's asynchronous request ended
 * @h: the bound handle
 * @cancel: leave the queue if still in it
 *
 * An ended request is collected: the handle may make another.  The end of
 * a request is final once published (wsem_end_wait()): nothing here waits.
 *
 * Context: Process context.
 * Return: 0 when it was granted (the weight is @h's) or, with @cancel, when
 * it left the queue; -EALREADY with @cancel for one granted meanwhile;
 * -EINPROGRESS while it is queued, without @cancel; the error it ended with
 * (-EINVAL: a shrink); -ENOENT without a request.
 */
int wsem_async_end(struct wsem_handle *h, bool cancel)
{
	struct wsem_waiter *w = &h->async;
	struct wsem *sem = h->sem;
	struct task_struct *requester;
	struct wsem_wake wake;
	__poll_t before;
	int ret;

	wsem_wake_init(&wake);
	spin_lock(sem->lock);
	if (!h->requested || (w->status == WSEM_WAITING && !cancel)) {
		ret = h->requested ? -EINPROGRESS : -ENOENT;
		spin_unlock(sem->lock);
		return ret;
	}
	requester = w->task;
	h->requested = false;
	if (w->status == WSEM_WAITING) {
		before = wsem_events(sem);
		wsem_remove_waiter(sem, w, -ECANCELED, ktime_get_ns());
		wsem_unlock_and_wake(sem, before, &wake);
		ret = 0;
	} else {
		ret = cancel && !w->status ? -EALREADY : w->status;
		spin_unlock(sem->lock);
	}
	put_task_struct(requester);
	return ret;
}

/**
 * wsem_wait_idle() - sleep until nothing is held and nobody is queued
 * @h: the bound handle
 * @flags: WSEM_ACQUIRE_TRY or _DEADLINE, validated by the caller
 * @clock: the clock of @deadline
 * @deadline: absolute deadline on @clock, with WSEM_ACQUIRE_DEADLINE
 *
 * The waiter sleeps on the semaphore's idle_waiters, which are woken only
 * when it comes to be idle (wsem_unlock_and_wake()).  It takes no place in
 * the queue: a signal restarts the call, with its deadline.
 *
 * Context: Process context, may sleep unless WSEM_ACQUIRE_TRY.
 * Return: 0 when idle; -EDEADLK while @h itself holds weight or has a
 * request; -EAGAIN for a try that finds it busy; -ETIMEDOUT at the
 * deadline; -EINTR or -ERESTARTNOHAND on a signal.
 */
int __sched wsem_wait_idle(struct wsem_handle *h, u64 flags, clockid_t clock,
			   ktime_t deadline)
{
	struct wsem *sem = h->sem;
	bool timed_out = false;
	DEFINE_WAIT(wait);
	int ret;

	for (;;) {
		/* Queued before looking: see wsem_unlock_and_wake(). */
		prepare_to_wait(&sem->idle_waiters, &wait, TASK_INTERRUPTIBLE);
		spin_lock(sem->lock);
		if (h->held || h->requested)
			ret = -EDEADLK;
		else if (wsem_events(sem) & EPOLLPRI)
			ret = 0;
		else if (flags & WSEM_ACQUIRE_TRY)
			ret = -EAGAIN;
		else
			ret = -EBUSY;
		spin_unlock(sem->lock);
		if (ret != -EBUSY)
			break;
		if (fatal_signal_pending(current))
			ret = -EINTR;
		else if (signal_pending(current))
			ret = -ERESTARTNOHAND;
		else if (timed_out)
			ret = -ETIMEDOUT;
		if (ret != -EBUSY)
			break;
		timed_out = !wsem_sleep(clock, flags & WSEM_ACQUIRE_DEADLINE ?
					&deadline : NULL);
	}
	finish_wait(&sem->idle_waiters, &wait);
	return ret;
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
	before = wsem_events(sem);
	wsem_sub_held(sem, h, weight);
	trace_wsem_release(sem->id, weight, sem->used);
	wsem_unlock_and_wake(sem, before, &wake);
	return 0;
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

/**
 * wsem_lend() - set the capacity a handle lends to its semaphore
 * @h: the bound handle
 * @capacity: what @h lends from now on; 0 withdraws its loan
 * @may_raise: the caller may lend more than @h does now (it owns the
 *	semaphore or has CAP_IPC_OWNER)
 *
 * The capacity in force changes by the difference, as a resize does
 * (wsem_set_capacity()).  wsem_unbind() withdraws what is still lent.
 *
 * Context: Process context.
 * Return: 0; -EPERM to lend more without @may_raise; -EINVAL if the
 * capacity in force would exceed WSEM_CAPACITY_MAX.  Nothing changes on an
 * error.
 */
int wsem_lend(struct wsem_handle *h, u64 capacity, bool may_raise)
{
	struct wsem *sem = h->sem;
	struct wsem_wake wake;
	__poll_t before;
	u64 others;

	wsem_wake_init(&wake);
	spin_lock(sem->lock);
	others = sem->capacity - h->lent;
	if (capacity > h->lent && !may_raise) {
		spin_unlock(sem->lock);
		return -EPERM;
	}
	if (capacity > WSEM_CAPACITY_MAX - others) {
		spin_unlock(sem->lock);
		return -EINVAL;
	}
	before = wsem_events(sem);
	sem->lent = sem->lent - h->lent + capacity;
	h->lent = capacity;
	wsem_resize(sem, others + capacity, &wake);
	wsem_unlock_and_wake(sem, before, &wake);
	return 0;
}

/**
 * wsem_set_label() - set the label the holders view shows for a handle
 * @h: a bound handle
 * @label: the new label, checked by the caller: printable, NUL-terminated
 *	in WSEM_LABEL_MAX bytes; empty clears it
 *
 * Context: Process context; takes the semaphore's lock.
 */
void wsem_set_label(struct wsem_handle *h, const char *label)
{
	struct wsem *sem = wsem_handle_sem(h);

	spin_lock(sem->lock);
	strscpy_pad(h->label, label, sizeof(h->label));
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
 * changed since @h last read the semaphore's state (wsem_fill_stat()).
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
	events = wsem_events(sem);
	if (h->demand_seen != sem->demand_seq)
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
 * wsem_permission() - check the caller's access to a semaphore, as
 *	ipcperms() does for SysV IPC
 * @sem: the semaphore
 * @mask: MAY_READ and/or MAY_WRITE
 * @audit: whether a use of CAP_IPC_OWNER is audited (and marks the task
 *	PF_SUPERPRIV); a listing that merely skips what it may not read
 *	passes false
 *
 * The caller's class (owner, group, other) is chosen with its effective ids;
 * CAP_IPC_OWNER in the semaphore's user namespace overrides the mode.
 *
 * Return: 0 if every bit of @mask is granted, else -EACCES.
 */
int wsem_permission(const struct wsem *sem, int mask, bool audit)
{
	umode_t mode = READ_ONCE(sem->mode);
	bool capable;

	if (uid_eq(current_euid(), READ_ONCE(sem->uid)))
		mode >>= 6;
	else if (in_egroup_p(READ_ONCE(sem->gid)))
		mode >>= 3;
	if (!(mask & ~mode & 0007))
		return 0;
	if (!audit)
		capable = ns_capable_noaudit(sem->user_ns, CAP_IPC_OWNER);
	else
		capable = ns_capable(sem->user_ns, CAP_IPC_OWNER);
	return capable ? 0 : -EACCES;
}

/**
 * wsem_owner_or_capable() - may the caller resize or unlink a semaphore?
 * @sem: the semaphore
 *
 * Return: true for its owner or a holder of CAP_IPC_OWNER in its user
 * namespace.
 */
bool wsem_owner_or_capable(const struct wsem *sem)
{
	return uid_eq(current_euid(), READ_ONCE(sem->uid)) ||
	       ns_capable(sem->user_ns, CAP_IPC_OWNER);
}

/**
 * wsem_sem_exit() - at module unload, once every semaphore is gone
 */
void wsem_sem_exit(void)
{
	ida_destroy(&wsem_ida);
}
