// SPDX-License-Identifier: GPL-2.0
/*
 * wsem: how a request waits: acquire sleeps until sem.c's grant walk ends
 * its wait, with a deadline, a signal, a stop or task work ending it
 * early; and the wait for idle.  A gang (gang.c) sleeps through the same
 * wsem_wait_check() and wsem_sleep().
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
 * place back (wsem_park(), wsem_acquire_parked()).  A gang is parked
 * whole (gang.c).
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
int wsem_wait_check(bool timed_out)
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
bool __sched wsem_sleep(clockid_t clock, ktime_t *deadline)
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

/*
 * The acquire itself, with @sem->lock held and @h's parked waiters settled:
 * the uncontended grant, or a try's, a passed deadline's or an
 * asynchronous request's answer, or the wait.  Drops the lock.
 */
static int wsem_acquire_locked(struct wsem *sem, struct wsem_handle *h,
			       u64 weight, u64 flags, clockid_t clock,
			       ktime_t *until)
	__releases(sem->lock)
{
	u32 tell = 0;
	int ret = 0;

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
	} else if (until && ktime_compare(*until, wsem_now(clock)) <= 0) {
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
 * An acquire through @h while @h has parked waiters (wsem_park()): those of
 * exited tasks are freed first; the caller's own is taken back when this
 * call is its restart (same weight, still queued, a call that sleeps), is
 * the answer when its wait ended for this very weight, and is otherwise
 * dropped; then the acquire goes on as any other.  Entered with
 * @sem->lock held, which it drops.
 */
static int wsem_acquire_parked(struct wsem *sem, struct wsem_handle *h,
			       u64 weight, u64 flags, clockid_t clock,
			       ktime_t *until)
	__releases(sem->lock)
{
	bool restart = !(flags & (WSEM_ACQUIRE_TRY | WSEM_ACQUIRE_ASYNC));
	struct wsem_waiter *p;
	struct wsem_wake wake;
	__poll_t before;
	u64 parked_weight;
	int ret;

	for (;;) {
		wsem_wake_init(&wake);
		before = wsem_events(sem);
		p = wsem_find_parked(sem, h, &wake);
		if (!list_empty(&wake.parked)) {
			/* Freed, and those behind a queued one may fit. */
			wsem_unlock_and_wake(sem, before, &wake);
			spin_lock(sem->lock);
			continue;
		}
		if (!p)
			return wsem_acquire_locked(sem, h, weight, flags,
						   clock, until);
		if (restart && p->weight == weight &&
		    p->status == WSEM_WAITING)
			return wsem_wait(sem, h, p, weight, clock, until);
		parked_weight = p->weight;
		ret = wsem_drop_parked(sem, p);
		/* One that ended for this very call is its answer. */
		if (ret != WSEM_WAITING && parked_weight == weight)
			return ret;
		spin_lock(sem->lock);
	}
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
 * sleeper left to run task work takes its parked place back
 * (wsem_acquire_parked()).
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

	spin_lock(sem->lock);
	if (unlikely(!list_empty(&h->parked)))
		return wsem_acquire_parked(sem, h, weight, flags, clock, until);
	return wsem_acquire_locked(sem, h, weight, flags, clock, until);
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
