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
 * waiter's handle and moves the waiter from the queue to a list on its own
 * stack, marked WSEM_HANDING.  The sleeper finds the weight already its
 * own: there is no thundering herd and no window for a newcomer to barge.
 *
 * The sleeper is told after sem->lock is dropped: the granter takes a
 * reference on its task, publishes the result with smp_store_release() and
 * wakes it.  The sleeper reads its status with smp_load_acquire() and never
 * takes the lock again after a grant, so a mass grant does not convoy on
 * it, and as many waiters as fit are granted in one pass with no wake-up
 * under the lock.  Until it is told, the waiter's stack frame must stay, so
 * a sleeper that sees WSEM_HANDING waits (uninterruptibly, briefly) for the
 * result.
 *
 * A waiter at the head of the queue polls its status for up to spin_ns
 * before it sleeps, while its CPU has nothing else to run (wsem_spin()): a
 * holder on another CPU that releases meanwhile hands over without a sleep
 * and without a wake-up, and the granter's wake_up_process() finds it
 * running.  The poll changes no order: the waiter is queued throughout.
 *
 * The sleeper checks its status before signals and timeouts, and leaves the
 * queue only under sem->lock while still WSEM_WAITING, so a grant that
 * races with a signal wins.  A sleeper that leaves without a grant (signal,
 * timeout) runs the grant walk again, since the waiters behind it may fit
 * now.
 *
 * Who holds and who waits: a handle that comes to hold weight for the
 * first time joins sem->holders, and stays there, holding or not, until it
 * is unbound (so that acquire and release touch no list); every grant
 * notes the acquirer (pid, command, cgroup, when); a
 * waiter notes when it queued.  The statistics are counters under
 * sem->lock.  Nothing of this allocates, and an acquirer that is the
 * handle's last one takes no reference on anything.
 */
#include <linux/capability.h>
#include <linux/cgroup.h>
#include <linux/cpumask.h>
#include <linux/cred.h>
#include <linux/hrtimer.h>
#include <linux/idr.h>
#include <linux/ipc_namespace.h>
#include <linux/jiffies.h>
#include <linux/ktime.h>
#include <linux/nsproxy.h>
#include <linux/overflow.h>
#include <linux/pid.h>
#include <linux/pid_namespace.h>
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

/* What to do once sem->lock is dropped. */
struct wsem_wake {
	struct list_head waiters;	/* WSEM_HANDING, to be told */
	struct wsem *poll;		/* wake its pollers ... */
	__poll_t events;		/* ... with these */
};

static DEFINE_IDA(wsem_ida);

static __always_inline void wsem_wake_init(struct wsem_wake *wake)
{
	INIT_LIST_HEAD(&wake->waiters);
	wake->poll = NULL;
}

/*
 * Tell a handle's asynchronous request how it ended and wake the handle's
 * pollers.  The file may be closing meanwhile: the handle is freed only
 * after a grace period (wsem_file_release()).
 */
static void wsem_tell_async(struct wsem_waiter *w)
{
	struct wsem_handle *h = w->handle;
	struct task_struct *task = w->task;

	rcu_read_lock();
	/* Pairs with wsem_async_end() and wsem_poll(). */
	smp_store_release(&w->status, w->result);
	wake_up_poll(&h->wqh, EPOLLIN | EPOLLRDNORM);
	rcu_read_unlock();
	put_task_struct(task);		/* the request's */
}

/* Tell each waiter on @list how its wait ended, and wake it. */
static void wsem_tell(struct list_head *list)
{
	struct wsem_waiter *w, *next;
	struct task_struct *task;

	/* The _safe walk reads @w's successor before @w may vanish. */
	list_for_each_entry_safe(w, next, list, node) {
		if (w->async) {
			wsem_tell_async(w);
			continue;
		}
		task = w->task;
		get_task_struct(task);
		/* Pairs with wsem_wait(); from here on @w may be gone. */
		smp_store_release(&w->status, w->result);
		wake_up_process(task);
		put_task_struct(task);
	}
}

static __always_inline void wsem_wake_up(struct wsem_wake *wake)
{
	if (!list_empty(&wake->waiters))
		wsem_tell(&wake->waiters);
	if (unlikely(wake->poll))
		wake_up_poll(&wake->poll->pollers, wake->events);
}

static bool wsem_fits(const struct wsem *sem, u64 weight)
{
	return sem->used <= sem->capacity &&
	       weight <= sem->capacity - sem->used;
}

/*
 * Note @task as the last acquirer through @h, under @h->sem->lock: a
 * spinlock is an RCU read-side section (preemption off, or on PREEMPT_RT
 * rcu_read_lock() taken by the lock), which is what task_dfl_cgroup()
 * needs.  References are taken only when the process or the cgroup
 * differs from the last one's.  This runs on every grant: no call out of
 * the module on the path where nothing changed.
 */
static void wsem_note_holder(struct wsem_handle *h, struct task_struct *task)
{
	struct pid *pid = task_tgid(task);
#ifdef CONFIG_CGROUPS
	struct cgroup *cgrp = task_dfl_cgroup(task);
#endif

	lockdep_assert_held(&h->sem->lock);
	h->since = get_jiffies_64();
	/* A racing prctl(PR_SET_NAME) tears the name at worst. */
	memcpy(h->comm, task->comm, sizeof(h->comm));
	h->comm[sizeof(h->comm) - 1] = '\0';
	if (unlikely(pid != h->pid)) {
		put_pid(h->pid);
		h->pid = get_pid(pid);
	}
#ifdef CONFIG_CGROUPS
	if (unlikely(cgrp != h->cgrp) && cgroup_tryget(cgrp)) {
		if (h->cgrp)
			cgroup_put(h->cgrp);
		h->cgrp = cgrp;
	}
#endif
}

/* @task, acquiring through @h, is granted @weight. */
static void wsem_take(struct wsem *sem, struct wsem_handle *h, u64 weight,
		      struct task_struct *task)
{
	sem->used += weight;
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
static void wsem_give(struct wsem *sem, struct wsem_handle *h, u64 weight)
{
	sem->used -= weight;
	h->held -= weight;
	if (!h->held && weight)
		sem->nr_holders--;
}

static void wsem_enqueue(struct wsem *sem, struct wsem_waiter *w)
{
	list_add_tail(&w->node, &sem->waiters);
	sem->nr_waiters++;
	if (sem->nr_waiters > sem->stats.queue_max)
		sem->stats.queue_max = sem->nr_waiters;
	if (check_add_overflow(sem->queued_weight, w->weight,
			       &sem->queued_weight))
		sem->queued_carry++;
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

static void wsem_dequeue(struct wsem *sem, struct wsem_waiter *w)
{
	list_del(&w->node);
	sem->nr_waiters--;
	if (sem->queued_weight < w->weight)
		sem->queued_carry--;
	sem->queued_weight -= w->weight;
}

/* End @w's wait at @now with @result: 0 (granted) or a negative errno. */
static void wsem_finish(struct wsem *sem, struct wsem_waiter *w, int result,
			u64 now, struct wsem_wake *wake)
{
	lockdep_assert_held(&sem->lock);

	wsem_dequeue(sem, w);
	wsem_count_wait(sem, w, result, now);
	if (!result)
		wsem_take(sem, w->handle, w->weight, w->task);
	w->result = result;
	WRITE_ONCE(w->status, WSEM_HANDING);
	list_add_tail(&w->node, &wake->waiters);
}

/* Grant the head of the queue, and the next, while each fits. */
static void wsem_grant(struct wsem *sem, struct wsem_wake *wake)
{
	struct wsem_waiter *w, *next;
	u64 now = 0;

	lockdep_assert_held(&sem->lock);

	list_for_each_entry_safe(w, next, &sem->waiters, node) {
		if (!wsem_fits(sem, w->weight))
			break;
		if (!now)
			now = ktime_get_ns();
		wsem_finish(sem, w, 0, now, wake);
	}
}

/* Would a try-acquire of 1 succeed now?  What poll() reports as EPOLLIN. */
static bool wsem_ready(const struct wsem *sem)
{
	return list_empty(&sem->waiters) && wsem_fits(sem, 1);
}

/* Nothing held, nobody queued: what poll() reports as EPOLLPRI. */
static bool wsem_idle(const struct wsem *sem)
{
	return list_empty(&sem->waiters) && !sem->used;
}

/*
 * After weight came back or a waiter left: grant the waiters that fit now,
 * then, if weight is still free, note the pollers for @wake.
 */
static void wsem_settle(struct wsem *sem, struct wsem_wake *wake)
{
	lockdep_assert_held(&sem->lock);

	if (!list_empty(&sem->waiters))
		wsem_grant(sem, wake);
	/*
	 * No barrier needed: a poller adds itself to @sem->pollers before it
	 * takes @sem->lock to look (wsem_poll()), so one that looked before
	 * us is seen here, and one that looks after us sees the free weight.
	 * Idle implies free weight, so idle waiters are seen too.
	 */
	if (unlikely(waitqueue_active(&sem->pollers)) && wsem_ready(sem)) {
		wake->poll = sem;
		wake->events = EPOLLIN | EPOLLRDNORM;
		if (wsem_idle(sem))
			wake->events |= EPOLLPRI;
	}
}

/**
 * wsem_alloc() - a new semaphore owned by the caller, not yet charged
 * @capacity: 1 .. WSEM_CAPACITY_MAX, checked by the caller
 * @mode: permission bits
 * @name: its name, or NULL for an anonymous semaphore
 *
 * Context: Process context, may sleep.
 * Return: the semaphore with one reference, or NULL when out of memory.
 */
struct wsem *wsem_alloc(u64 capacity, umode_t mode, const char *name)
{
	struct wsem *sem;

	sem = kzalloc(sizeof(*sem), WSEM_GFP);
	if (!sem)
		return NULL;
	sem->id = ida_alloc(&wsem_ida, GFP_KERNEL);
	if (sem->id < 0) {
		kfree(sem);
		return NULL;
	}

	spin_lock_init(&sem->lock);
	sem->capacity = capacity;
	INIT_LIST_HEAD(&sem->waiters);
	INIT_LIST_HEAD(&sem->holders);
	init_waitqueue_head(&sem->pollers);
	RB_CLEAR_NODE(&sem->node);
	kref_init(&sem->ref);
	sem->user_ns = get_user_ns(current->nsproxy->ipc_ns->user_ns);
	sem->uid = current_euid();
	sem->gid = current_egid();
	sem->mode = mode;
	if (name)
		strscpy(sem->name, name, sizeof(sem->name));
	return sem;
}

static void wsem_free(struct kref *ref)
{
	struct wsem *sem = container_of(ref, struct wsem, ref);

	WARN_ON_ONCE(!list_empty(&sem->waiters) || sem->used);
	if (sem->wns)
		wsem_ns_uncharge(sem);
	put_user_ns(sem->user_ns);
	ida_free(&wsem_ida, sem->id);
	kfree(sem);
}

/**
 * wsem_put() - drop a reference to a semaphore
 * @sem: the semaphore
 *
 * Context: Process context; freeing takes no lock of ours.
 */
void wsem_put(struct wsem *sem)
{
	kref_put(&sem->ref, wsem_free);
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
 * Takes a reference to @sem for @h.  Whoever polled @h before this (epoll
 * registers only once) is relayed the semaphore's wake-ups from now on, and
 * is woken once, since @h is no longer in error.
 *
 * Context: Process context.
 * Return: 0, or -EBUSY (and nothing changes) if @h is bound already.
 */
int wsem_bind(struct wsem_handle *h, struct wsem *sem)
{
	bool polled;

	kref_get(&sem->ref);
	/*
	 * Under @h->wqh.lock, against wsem_poll_file(): a poller that queued
	 * itself before this is seen here, and one after sees @h->sem.
	 */
	spin_lock_irq(&h->wqh.lock);
	if (cmpxchg_release(&h->sem, NULL, sem)) {
		spin_unlock_irq(&h->wqh.lock);
		wsem_put(sem);		/* never the last: the caller's is left */
		return -EBUSY;
	}
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
 * are granted.  Drops the handle's reference to the semaphore.
 *
 * Context: Process context.
 */
void wsem_unbind(struct wsem_handle *h)
{
	struct wsem *sem = h->sem;
	struct task_struct *requester = NULL;
	struct wsem_wake wake;

	if (h->relay.func)
		remove_wait_queue(&sem->pollers, &h->relay);
	wsem_wake_init(&wake);
	spin_lock(&sem->lock);
	/* Closing cancels a queued request; a granted one is in @h->held. */
	if (h->requested && h->async.status == WSEM_WAITING) {
		wsem_dequeue(sem, &h->async);
		wsem_count_wait(sem, &h->async, -ECANCELED, ktime_get_ns());
		requester = h->async.task;
		h->requested = false;
	}
	if (h->held)
		trace_wsem_release(sem->id, h->held, sem->used - h->held);
	wsem_give(sem, h, h->held);
	list_del_init(&h->hold_node);
	wsem_settle(sem, &wake);
	spin_unlock(&sem->lock);
	wsem_wake_up(&wake);
	if (requester)
		put_task_struct(requester);
	wsem_put(sem);
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

/* Leave the queue for @why unless granted meanwhile; true if it left. */
static bool wsem_leave(struct wsem *sem, struct wsem_waiter *w, int why)
{
	struct wsem_wake wake;
	bool left = false;

	wsem_wake_init(&wake);
	spin_lock(&sem->lock);
	if (w->status == WSEM_WAITING) {
		wsem_dequeue(sem, w);
		wsem_count_wait(sem, w, why, ktime_get_ns());
		/* The waiters behind may fit now. */
		wsem_settle(sem, &wake);
		left = true;
	}
	spin_unlock(&sem->lock);
	wsem_wake_up(&wake);
	return left;
}

/*
 * Must the wait end now?  -EINTR for a fatal signal; -ERESTARTNOHAND for
 * any other signal or a stop (the call fails with EINTR if a handler runs,
 * and is restarted, at the tail of the queue, if none does); -ETIMEDOUT
 * once @timed_out; else 0.
 *
 * Task work alone (TIF_NOTIFY_SIGNAL, as io_uring queues it) is no reason
 * to lose our place: the flag is cleared, *@notify remembers it, and the
 * caller sets it again when the wait ends, so the work runs then, on the
 * way back to user space.
 */
static int wsem_wait_check(bool timed_out, bool *notify)
{
	if (fatal_signal_pending(current))
		return -EINTR;
	if (task_sigpending(current))
		return -ERESTARTNOHAND;
	if (test_thread_flag(TIF_NOTIFY_SIGNAL)) {
		clear_notify_signal();
		*notify = true;
	}
	return timed_out ? -ETIMEDOUT : 0;
}

/* Off the queue: wait until the granter has said how the wait ended. */
static int wsem_wait_told(struct wsem_waiter *w)
{
	int status;

	for (;;) {
		set_current_state(TASK_UNINTERRUPTIBLE);
		/* Pairs with wsem_tell(). */
		status = smp_load_acquire(&w->status);
		if (status <= 0)
			break;
		schedule();
	}
	__set_current_state(TASK_RUNNING);
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
 * Poll for the end of @w's wait on @sem for up to spin_ns (and not past
 * @deadline on @clock) before sleeping, while this CPU has nothing else to
 * run.  A holder running on another CPU that releases meanwhile then hands
 * over without the waiter's sleep and without a wake-up IPI, the cost that
 * dominates a hand-off between CPUs.  KVM polls a halted vCPU the same way.
 * Anything else to do, a signal included, ends the poll early: the caller's
 * loop then handles it as after a sleep.
 */
static void wsem_spin(struct wsem *sem, struct wsem_waiter *w,
		      clockid_t clock, const ktime_t *deadline)
{
	u64 budget = READ_ONCE(spin_ns), start, now;
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
		/* Not WSEM_WAITING nor WSEM_HANDING: the caller reads it. */
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
 * Queue @h's request for @weight at the tail and sleep until it is granted,
 * a signal arrives or @deadline (if any) on @clock passes; at the head of
 * the queue, poll a moment first (wsem_spin()).  Entered with @sem->lock
 * held, which it drops.
 */
static int __sched wsem_wait(struct wsem *sem, struct wsem_handle *h,
			     u64 weight, clockid_t clock, ktime_t *deadline)
	__releases(&sem->lock)
{
	struct wsem_waiter w = {
		.task = current,
		.handle = h,
		.weight = weight,
		.since = ktime_get_ns(),
		.status = WSEM_WAITING,
	};
	bool timed_out = false, notify = false, head;
	int ret;

	wsem_enqueue(sem, &w);
	head = list_is_first(&w.node, &sem->waiters);
	spin_unlock(&sem->lock);

	if (head)
		wsem_spin(sem, &w, clock, deadline);

	for (;;) {
		set_current_state(TASK_INTERRUPTIBLE);
		/* Pairs with wsem_tell(): the grant's accounting is seen. */
		ret = smp_load_acquire(&w.status);
		if (ret != WSEM_WAITING)
			break;
		ret = wsem_wait_check(timed_out, &notify);
		if (ret) {
			__set_current_state(TASK_RUNNING);
			if (wsem_leave(sem, &w, ret))
				goto out;
			break;		/* granted meanwhile: the grant wins */
		}
		timed_out = !wsem_sleep(clock, deadline);
	}
	ret = wsem_wait_told(&w);
out:
	if (notify)
		set_thread_flag(TIF_NOTIFY_SIGNAL);
	return ret;
}

/* Queue @h's asynchronous request for @weight; the caller checked it. */
static void wsem_queue_async(struct wsem *sem, struct wsem_handle *h,
			     u64 weight)
{
	struct wsem_waiter *w = &h->async;

	lockdep_assert_held(&sem->lock);

	w->task = get_task_struct(current);
	w->handle = h;
	w->weight = weight;
	w->since = ktime_get_ns();
	w->result = 0;
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
 * pollers, and wsem_async_end() collects it.
 *
 * Context: Process context, may sleep unless WSEM_ACQUIRE_TRY or _ASYNC.
 * Return: 0 when granted; -EINVAL for a weight of 0 or above the capacity
 * (also when a shrink makes it so while waiting); -EAGAIN for a try that
 * cannot be granted at once; -ETIMEDOUT at the deadline; -EINTR or
 * -ERESTARTNOHAND on a signal; -EINPROGRESS for a queued asynchronous
 * request, -EBUSY if the handle has one already.
 */
int wsem_acquire(struct wsem_handle *h, u64 weight, u64 flags,
		 clockid_t clock, ktime_t deadline)
{
	struct wsem *sem = h->sem;
	int ret = 0;

	spin_lock(&sem->lock);
	if (!weight || weight > sem->capacity) {
		ret = -EINVAL;
	} else if ((flags & WSEM_ACQUIRE_ASYNC) && h->requested) {
		ret = -EBUSY;
	} else if (list_empty(&sem->waiters) && wsem_fits(sem, weight)) {
		wsem_take(sem, h, weight, current);
		sem->stats.grants_at_once++;
		trace_wsem_grant(sem->id, current->pid, weight, 0);
	} else if (flags & WSEM_ACQUIRE_TRY) {
		ret = -EAGAIN;
	} else if (flags & WSEM_ACQUIRE_ASYNC) {
		wsem_queue_async(sem, h, weight);
		ret = -EINPROGRESS;
	} else if (!(flags & WSEM_ACQUIRE_DEADLINE)) {
		return wsem_wait(sem, h, weight, clock, NULL);
	} else if (ktime_compare(deadline, wsem_now(clock)) <= 0) {
		sem->stats.timeouts++;
		ret = -ETIMEDOUT;
	} else {
		return wsem_wait(sem, h, weight, clock, &deadline);
	}
	spin_unlock(&sem->lock);
	return ret;
}

/**
 * wsem_async_end() - how the handle's asynchronous request ended
 * @h: the bound handle
 * @cancel: leave the queue if still in it
 *
 * An ended request is collected: the handle may make another.  One whose
 * end is being told (WSEM_HANDING) is waited for, briefly, so that the
 * answer is final.
 *
 * Context: Process context, may sleep (briefly, uninterruptibly).
 * Return: 0 when it was granted (the weight is @h's) or, with @cancel, when
 * it left the queue; -EALREADY with @cancel for one granted meanwhile;
 * -EINPROGRESS while it is queued, without @cancel; the error it ended with
 * (-EINVAL: a shrink); -ENOENT without a request.
 */
int wsem_async_end(struct wsem_handle *h, bool cancel)
{
	struct wsem_waiter *w = &h->async;
	struct wsem *sem = h->sem;
	struct task_struct *requester = NULL;
	struct wsem_wake wake;
	int ret, status;

	wsem_wake_init(&wake);
again:
	spin_lock(&sem->lock);
	/* Pairs with wsem_tell_async(): the grant's accounting is seen. */
	status = smp_load_acquire(&w->status);
	if (!h->requested) {
		ret = -ENOENT;
	} else if (status == WSEM_HANDING) {
		spin_unlock(&sem->lock);
		/* Pairs with wsem_tell_async(), which wakes h->wqh after. */
		wait_event(h->wqh, smp_load_acquire(&w->status) <= 0);
		goto again;
	} else if (status == WSEM_WAITING && !cancel) {
		ret = -EINPROGRESS;
	} else if (status == WSEM_WAITING) {
		wsem_dequeue(sem, w);
		wsem_count_wait(sem, w, -ECANCELED, ktime_get_ns());
		wsem_settle(sem, &wake);
		requester = w->task;
		h->requested = false;
		ret = 0;
	} else {
		h->requested = false;
		ret = cancel && !status ? -EALREADY : status;
	}
	spin_unlock(&sem->lock);
	wsem_wake_up(&wake);
	if (requester)
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
 * The waiter sleeps among the semaphore's pollers, which wsem_settle()
 * wakes whenever weight is free, and so whenever it becomes idle.  It takes
 * no place in the queue: a signal restarts the call, with its deadline.
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
		/* Queued before looking: see wsem_settle(). */
		prepare_to_wait(&sem->pollers, &wait, TASK_INTERRUPTIBLE);
		spin_lock(&sem->lock);
		if (h->held || h->requested)
			ret = -EDEADLK;
		else if (wsem_idle(sem))
			ret = 0;
		else if (flags & WSEM_ACQUIRE_TRY)
			ret = -EAGAIN;
		else
			ret = -EBUSY;
		spin_unlock(&sem->lock);
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
	finish_wait(&sem->pollers, &wait);
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
	int ret = 0;

	wsem_wake_init(&wake);
	spin_lock(&sem->lock);
	if (!weight || weight > h->held) {
		ret = -EINVAL;
	} else {
		wsem_give(sem, h, weight);
		trace_wsem_release(sem->id, weight, sem->used);
		wsem_settle(sem, &wake);
	}
	spin_unlock(&sem->lock);
	wsem_wake_up(&wake);
	return ret;
}

/**
 * wsem_set_capacity() - grow or shrink a semaphore
 * @sem: the semaphore; the caller checked ownership
 * @capacity: the new capacity
 *
 * Growing grants the waiters that now fit.  Shrinking revokes nothing: no
 * grant happens until the used weight is low enough again, and a waiter
 * whose weight exceeds the new capacity fails with -EINVAL.
 *
 * Context: Process context.
 * Return: 0, or -EINVAL for a capacity of 0 or above WSEM_CAPACITY_MAX.
 */
int wsem_set_capacity(struct wsem *sem, u64 capacity)
{
	struct wsem_waiter *w, *next;
	struct wsem_wake wake;
	u64 now = 0;

	if (!capacity || capacity > WSEM_CAPACITY_MAX)
		return -EINVAL;

	wsem_wake_init(&wake);
	spin_lock(&sem->lock);
	trace_wsem_capacity(sem->id, sem->capacity, capacity);
	sem->capacity = capacity;
	list_for_each_entry_safe(w, next, &sem->waiters, node) {
		if (w->weight <= capacity)
			continue;
		if (!now)
			now = ktime_get_ns();
		wsem_finish(sem, w, -EINVAL, now, &wake);
	}
	wsem_settle(sem, &wake);
	spin_unlock(&sem->lock);
	wsem_wake_up(&wake);
	return 0;
}

/**
 * wsem_fill_stat() - describe a semaphore as its caller sees it
 * @sem: the semaphore, charged to a namespace
 * @h: the handle whose weight is reported as held, or NULL
 * @st: filled in, apart from @st->size
 *
 * Context: Process context; takes @sem->lock.
 */
void wsem_fill_stat(struct wsem *sem, struct wsem_handle *h,
		    struct wsem_stat *st)
{
	struct user_namespace *ns = current_user_ns();
	bool here = wsem_ns_is_current(sem->wns);

	st->uid = from_kuid_munged(ns, READ_ONCE(sem->uid));
	st->gid = from_kgid_munged(ns, READ_ONCE(sem->gid));
	st->mode = READ_ONCE(sem->mode);

	spin_lock(&sem->lock);
	st->capacity = sem->capacity;
	st->used = sem->used;
	st->available = wsem_fits(sem, 0) ? sem->capacity - sem->used : 0;
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
	/* Names are for their namespace: none leaks to a container. */
	if (sem->linked && here)
		memcpy(st->name, sem->name, sizeof(st->name));
	spin_unlock(&sem->lock);
}

/* One holder or waiter, as wsem_holders() takes it under the lock. */
struct wsem_who {
	struct pid *pid;		/* a holder's, with a reference */
	struct task_struct *task;	/* a waiter, with a reference */
	struct cgroup *cgrp;		/* a holder's, with a reference */
	u64 weight;
	u64 age_ns;
	char comm[TASK_COMM_LEN];
};

/* Fill @out from @who for the caller, and drop @who's references. */
static void wsem_describe(struct wsem_who *who, struct wsem_holder *out)
{
	struct pid_namespace *pidns = task_active_pid_ns(current);
	struct cgroup *cgrp = who->cgrp;

	out->weight = who->weight;
	out->age_ns = who->age_ns;
	if (who->task) {
		out->flags = WSEM_HOLDER_WAITING;
		out->pid = task_tgid_nr_ns(who->task, pidns);
		get_task_comm(out->comm, who->task);
#ifdef CONFIG_CGROUPS
		rcu_read_lock();
		cgrp = task_dfl_cgroup(who->task);
		if (!cgroup_tryget(cgrp))
			cgrp = NULL;
		rcu_read_unlock();
#endif
		put_task_struct(who->task);
	} else {
		/* A process that is gone has no pid any more. */
		rcu_read_lock();
		if (who->pid && pid_has_task(who->pid, PIDTYPE_TGID))
			out->pid = pid_nr_ns(who->pid, pidns);
		rcu_read_unlock();
		memcpy(out->comm, who->comm, sizeof(out->comm));
		put_pid(who->pid);
	}
#ifdef CONFIG_CGROUPS
	if (cgrp) {
		/* Cut to fit, NUL-terminated, or empty on an error. */
		if (cgroup_path_ns(cgrp, out->cgroup, sizeof(out->cgroup),
				   current->nsproxy->cgroup_ns) < 0)
			out->cgroup[0] = '\0';
		cgroup_put(cgrp);
	}
#endif
}

/**
 * wsem_holders() - who holds weight, and who waits, in queue order
 * @sem: the semaphore
 * @count: at most this many entries
 * @out: set to a kvmalloc()ed array of the entries written (kvfree() it),
 *	or NULL if none were
 * @holders: set to the number of handles holding weight
 * @waiters: set to the number of waiters (at most U32_MAX)
 *
 * A snapshot under @sem->lock, with references on the processes; pids,
 * commands and cgroup paths are read after the lock is dropped, as the
 * caller sees them (its PID and cgroup namespaces).
 *
 * Context: Process context, may sleep.
 * Return: the number of entries in *@out, or -ENOMEM.
 */
int wsem_holders(struct wsem *sem, u32 count, struct wsem_holder **out,
		 u32 *holders, u32 *waiters)
{
	struct wsem_handle *h;
	struct wsem_waiter *w;
	struct wsem_who *who;
	u64 now, jnow;
	u32 n = 0, i, room;

	*out = NULL;
	/*
	 * Room for what is there now and some more; if even more came
	 * meanwhile, and the caller has room for it, try again: whoever is
	 * counted is written, as far as @count goes.
	 */
	for (;;) {
		room = min_t(u64, count, READ_ONCE(sem->nr_holders) +
			     READ_ONCE(sem->nr_waiters) + 16);
		who = kvcalloc(room, sizeof(*who), GFP_KERNEL);
		if (room && !who)
			return -ENOMEM;
		spin_lock(&sem->lock);
		if (room == count ||
		    sem->nr_holders + sem->nr_waiters <= room)
			break;
		spin_unlock(&sem->lock);
		kvfree(who);
	}
	count = room;
	now = ktime_get_ns();
	jnow = get_jiffies_64();
	*holders = sem->nr_holders;
	*waiters = min_t(u64, sem->nr_waiters, U32_MAX);
	list_for_each_entry(h, &sem->holders, hold_node) {
		if (n == count)
			break;
		if (!h->held)
			continue;
		who[n].pid = get_pid(h->pid);
#ifdef CONFIG_CGROUPS
		who[n].cgrp = h->cgrp;
		if (h->cgrp)
			cgroup_get(h->cgrp);
#endif
		memcpy(who[n].comm, h->comm, sizeof(who[n].comm));
		who[n].weight = h->held;
		who[n].age_ns = jiffies64_to_nsecs(jnow - h->since);
		n++;
	}
	list_for_each_entry(w, &sem->waiters, node) {
		if (n == count)
			break;
		get_task_struct(w->task);
		who[n].task = w->task;
		who[n].weight = w->weight;
		who[n].age_ns = now > w->since ? now - w->since : 0;
		n++;
	}
	spin_unlock(&sem->lock);

	if (n) {
		*out = kvcalloc(n, sizeof(**out), GFP_KERNEL);
		for (i = 0; i < n; i++) {
			if (*out) {
				wsem_describe(&who[i], &(*out)[i]);
				continue;
			}
			/* No room to say it: just let go. */
			if (who[i].task)
				put_task_struct(who[i].task);
			put_pid(who[i].pid);
#ifdef CONFIG_CGROUPS
			if (who[i].cgrp)
				cgroup_put(who[i].cgrp);
#endif
		}
	}
	kvfree(who);
	if (n && !*out)
		return -ENOMEM;
	return n;
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
 *
 * Context: Process context; takes @sem->lock.
 * Return: EPOLLIN | EPOLLRDNORM, EPOLLPRI, both or 0.
 */
__poll_t wsem_poll(struct wsem *sem, struct wsem_handle *h, struct file *file,
		   poll_table *wait)
{
	__poll_t events = 0;

	poll_wait(file, &sem->pollers, wait);
	spin_lock(&sem->lock);
	if (h->requested) {
		/* Pairs with wsem_tell_async(). */
		if (smp_load_acquire(&h->async.status) <= 0)
			events = EPOLLIN | EPOLLRDNORM;
	} else if (wsem_ready(sem)) {
		events = EPOLLIN | EPOLLRDNORM;
	}
	if (wsem_idle(sem))
		events |= EPOLLPRI;
	spin_unlock(&sem->lock);
	return events;
}

/**
 * wsem_may() - may the caller access a semaphore?
 * @sem: the semaphore
 * @mask: MAY_READ and/or MAY_WRITE
 * @audit: whether a use of CAP_IPC_OWNER is audited (and marks the task
 *	PF_SUPERPRIV); a listing that merely skips what it may not read
 *	passes false
 *
 * The caller's class (owner, group, other) is chosen with its effective ids;
 * CAP_IPC_OWNER in the semaphore's user namespace overrides the mode.
 *
 * Return: true if every bit of @mask is granted.
 */
bool wsem_may(const struct wsem *sem, int mask, bool audit)
{
	umode_t mode = READ_ONCE(sem->mode);

	if (uid_eq(current_euid(), READ_ONCE(sem->uid)))
		mode >>= 6;
	else if (in_egroup_p(READ_ONCE(sem->gid)))
		mode >>= 3;
	if (!(mask & ~mode & 0007))
		return true;
	if (!audit)
		return ns_capable_noaudit(sem->user_ns, CAP_IPC_OWNER);
	return ns_capable(sem->user_ns, CAP_IPC_OWNER);
}

/**
 * wsem_is_owner() - may the caller resize or unlink a semaphore?
 * @sem: the semaphore
 *
 * Return: true for its owner or a holder of CAP_IPC_OWNER in its user
 * namespace.
 */
bool wsem_is_owner(const struct wsem *sem)
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
