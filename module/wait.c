// SPDX-License-Identifier: GPL-2.0
/*
 * wsem: how a request waits: acquire (one semaphore) and acquire_many (a
 * gang) sleep until sem.c's grant walk ends their wait, with a deadline,
 * a signal, a stop or task work ending it early; and the wait for idle.
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
 * place back (wsem_park()).  A gang is parked whole: it stays queued, on
 * a list of parked gangs, and a work item grants it in its task's place
 * meanwhile (wsem_gang_park()).
 *
 * Calls sem.c (queues, grants, leaving), async.c (an asynchronous
 * request is queued by wsem_acquire()) and params.c (spin_ns, test knobs).
 */
#include <linux/cpumask.h>
#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/sched.h>
#include <linux/sched/debug.h>
#include <linux/sched/signal.h>
#include <linux/sched/stat.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/wait.h>

#include "wsem.h"
#include "wsem_trace.h"

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
		wsem_replace_waiter(w, p);
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
	bool to_deadline = deadline && wsem_test_spin_to_deadline();
	int end = WSEM_SPIN_BUDGET;
	u64 start, now;
	s64 left;

	/* Granted before the poll began: nothing to poll for, or to trace. */
	if (READ_ONCE(w->status) <= 0)
		return;
	if (!to_deadline &&
	    (!budget || num_online_cpus() < 2 || !single_task_running()))
		return;
	if (deadline) {
		left = ktime_to_ns(ktime_sub(*deadline, wsem_now(clock)));
		if (left <= 0)
			return;
		if (left < budget || to_deadline) {
			budget = min_t(u64, left, WSEM_TEST_SPIN_MAX_NS);
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
		if (!to_deadline && (need_resched() || !single_task_running())) {
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
	bool timed_out = false;
	int ret;

	if (parked) {
		w.since = parked->since;
		w.head = parked->head;
		wsem_replace_waiter(parked, &w);
		list_del(&parked->park_node);
		spin_unlock(sem->lock);
		wsem_free_parked(parked);
	} else if (wsem_queue_and_unlock(sem, &w)) {
		wsem_spin(sem, &w, clock, deadline);
	}

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
	} else if (wsem_may_grant_now(sem, weight)) {
		wsem_add_held(sem, h, weight, current);
		sem->stats.grants_at_once++;
		trace_wsem_grant(sem->id, current->pid, weight, 0);
		tell = wsem_demand_pollers(sem);
	} else if (flags & WSEM_ACQUIRE_TRY) {
		ret = -EAGAIN;
	} else if (flags & WSEM_ACQUIRE_ASYNC) {
		wsem_queue_async(sem, h, weight);
		return -EINPROGRESS;
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
		wsem_note_polled(sem);
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
