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
 * waiter's handle, takes it off the queue and sets its status.  The sleeper
 * finds the weight already its own: there is no thundering herd and no
 * window for a newcomer to barge.
 *
 * The sleeper reads its status under sem->lock and checks it before signals
 * and timeouts, so a grant that races with a signal wins.  A sleeper that
 * leaves without a grant (signal, timeout) runs the grant walk again, since
 * the waiters behind it may fit now.
 *
 * Wake-ups happen after sem->lock is dropped; the granter holds a reference
 * on each task it is about to wake, because a granted sleeper may return
 * (and its stack frame vanish) as soon as the lock is free.
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/hrtimer.h>
#include <linux/ipc_namespace.h>
#include <linux/ktime.h>
#include <linux/nsproxy.h>
#include <linux/overflow.h>
#include <linux/poll.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/user_namespace.h>

#include "wsem.h"

/* struct wsem_waiter.status while it sits in the queue */
#define WSEM_WAITING	1

/**
 * struct wsem_waiter - one queue entry, on the stack of its sleeper
 * @node: in sem->waiters
 * @task: the sleeper
 * @handle: where a granted weight is accounted
 * @weight: what it waits for
 * @status: WSEM_WAITING, 0 once granted, or a negative errno
 *
 * All fields are protected by the lock of the semaphore it waits on.
 */
struct wsem_waiter {
	struct list_head node;
	struct task_struct *task;
	struct wsem_handle *handle;
	u64 weight;
	int status;
};

/* Tasks to wake once the lock is dropped. */
#define WSEM_WAKE_BATCH	16

struct wsem_wake {
	unsigned int nr;
	struct wsem *poll;	/* wake its pollers too */
	struct task_struct *tasks[WSEM_WAKE_BATCH];
};

static void wsem_wake_add(struct wsem_wake *wake, struct task_struct *task)
{
	if (wake->nr < WSEM_WAKE_BATCH) {
		get_task_struct(task);
		wake->tasks[wake->nr++] = task;
	} else {
		/* Safe under the lock: the sleeper reads its status under it. */
		wake_up_process(task);
	}
}

static void __wsem_wake_up(struct wsem_wake *wake)
{
	unsigned int i;

	for (i = 0; i < wake->nr; i++) {
		wake_up_process(wake->tasks[i]);
		put_task_struct(wake->tasks[i]);
	}
	wake->nr = 0;
}

/* The task slots need no value: they are written before use. */
static __always_inline void wsem_wake_init(struct wsem_wake *wake)
{
	wake->nr = 0;
	wake->poll = NULL;
}

static __always_inline void wsem_wake_up(struct wsem_wake *wake)
{
	if (wake->nr)
		__wsem_wake_up(wake);
	if (unlikely(wake->poll))
		wake_up_poll(&wake->poll->pollers, EPOLLIN | EPOLLRDNORM);
}

static bool wsem_fits(const struct wsem *sem, u64 weight)
{
	return sem->used <= sem->capacity &&
	       weight <= sem->capacity - sem->used;
}

static void wsem_take(struct wsem *sem, struct wsem_handle *h, u64 weight)
{
	sem->used += weight;
	h->held += weight;
}

static void wsem_dequeue(struct wsem *sem, struct wsem_waiter *w)
{
	list_del(&w->node);
	sem->nr_waiters--;
	if (sem->queued_weight < w->weight)
		sem->queued_carry--;
	sem->queued_weight -= w->weight;
}

/* End @w's wait with @status: 0 (granted) or a negative errno. */
static void wsem_finish(struct wsem *sem, struct wsem_waiter *w, int status,
			struct wsem_wake *wake)
{
	lockdep_assert_held(&sem->lock);

	wsem_dequeue(sem, w);
	if (!status)
		wsem_take(sem, w->handle, w->weight);
	wsem_wake_add(wake, w->task);
	w->status = status;
}

/* Grant the head of the queue, and the next, while each fits. */
static void wsem_grant(struct wsem *sem, struct wsem_wake *wake)
{
	struct wsem_waiter *w, *next;

	lockdep_assert_held(&sem->lock);

	list_for_each_entry_safe(w, next, &sem->waiters, node) {
		if (!wsem_fits(sem, w->weight))
			break;
		wsem_finish(sem, w, 0, wake);
	}
}

/* Would a try-acquire of 1 succeed now?  What poll() reports as EPOLLIN. */
static bool wsem_ready(const struct wsem *sem)
{
	return list_empty(&sem->waiters) && wsem_fits(sem, 1);
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
	 */
	if (unlikely(waitqueue_active(&sem->pollers)) && wsem_ready(sem))
		wake->poll = sem;
}

/**
 * wsem_alloc() - create a semaphore owned by the caller
 * @wns: the namespace it is charged to; its reference passes to the semaphore
 * @capacity: 1 .. WSEM_CAPACITY_MAX, checked by the caller
 * @mode: permission bits
 * @name: its name, or NULL for an anonymous semaphore
 *
 * Context: Process context, may sleep.
 * Return: the semaphore with one reference, or NULL when out of memory.
 */
struct wsem *wsem_alloc(struct wsem_ns *wns, u64 capacity, umode_t mode,
			const char *name)
{
	struct wsem *sem;

	sem = kzalloc(sizeof(*sem), GFP_KERNEL_ACCOUNT);
	if (!sem)
		return NULL;

	spin_lock_init(&sem->lock);
	sem->capacity = capacity;
	INIT_LIST_HEAD(&sem->waiters);
	INIT_LIST_HEAD(&sem->handles);
	init_waitqueue_head(&sem->pollers);
	RB_CLEAR_NODE(&sem->node);
	kref_init(&sem->ref);
	sem->wns = wns;
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
	wsem_ns_uncharge(sem->wns);
	put_user_ns(sem->user_ns);
	kfree(sem);
}

/**
 * wsem_put() - drop a reference to a semaphore
 * @sem: the semaphore
 *
 * Context: Any context that may take wsem_lock is fine; freeing takes none.
 */
void wsem_put(struct wsem *sem)
{
	kref_put(&sem->ref, wsem_free);
}

/**
 * wsem_bind() - bind an unbound handle to a semaphore
 * @h: the handle
 * @sem: the semaphore; the caller's reference passes to @h
 *
 * Context: Holds wsem_lock, which serializes every bind.
 */
void wsem_bind(struct wsem_handle *h, struct wsem *sem)
{
	lockdep_assert_held(&wsem_lock);

	spin_lock(&sem->lock);
	list_add_tail(&h->node, &sem->handles);
	spin_unlock(&sem->lock);
	/* Pairs with wsem_handle_sem(): the handle is complete when seen. */
	smp_store_release(&h->sem, sem);
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
	struct wsem_wake wake;

	wsem_wake_init(&wake);
	spin_lock(&sem->lock);
	sem->used -= h->held;
	h->held = 0;
	list_del(&h->node);
	wsem_settle(sem, &wake);
	spin_unlock(&sem->lock);
	wsem_wake_up(&wake);
	wsem_put(sem);
}

/*
 * Queue @h's request for @weight and sleep until it is granted, a signal
 * arrives or @deadline (if any) passes.  A signal returns -ERESTARTNOHAND:
 * the call fails with EINTR if a handler runs, and is restarted if none did
 * (a stop, the freezer), which puts it back at the tail of the queue.
 */
static int wsem_wait(struct wsem *sem, struct wsem_handle *h, u64 weight,
		     ktime_t *deadline, struct wsem_wake *wake)
	__must_hold(&sem->lock)
{
	struct wsem_waiter w = {
		.task = current,
		.handle = h,
		.weight = weight,
		.status = WSEM_WAITING,
	};
	bool timed_out = false;
	int ret;

	list_add_tail(&w.node, &sem->waiters);
	sem->nr_waiters++;
	if (check_add_overflow(sem->queued_weight, weight, &sem->queued_weight))
		sem->queued_carry++;

	for (;;) {
		if (w.status != WSEM_WAITING)
			return w.status;
		if (signal_pending(current)) {
			ret = fatal_signal_pending(current) ? -EINTR :
							      -ERESTARTNOHAND;
			break;
		}
		if (timed_out) {
			ret = -ETIMEDOUT;
			break;
		}
		set_current_state(TASK_INTERRUPTIBLE);
		spin_unlock(&sem->lock);
		if (deadline)
			timed_out = !schedule_hrtimeout_range(deadline,
						current->timer_slack_ns,
						HRTIMER_MODE_ABS);
		else
			schedule();
		spin_lock(&sem->lock);
	}

	/* Leaving without a grant: the waiters behind may fit now. */
	wsem_dequeue(sem, &w);
	wsem_settle(sem, wake);
	return ret;
}

/**
 * wsem_acquire() - acquire weight through a bound handle
 * @h: the handle
 * @weight: 1 .. capacity
 * @flags: WSEM_ACQUIRE_TRY or WSEM_ACQUIRE_DEADLINE, validated by the caller
 * @deadline: absolute CLOCK_MONOTONIC deadline, with WSEM_ACQUIRE_DEADLINE
 *
 * Context: Process context, may sleep unless WSEM_ACQUIRE_TRY.
 * Return: 0 when granted; -EINVAL for a weight of 0 or above the capacity
 * (also when a shrink makes it so while waiting); -EAGAIN for a try that
 * cannot be granted at once; -ETIMEDOUT at the deadline; -EINTR or
 * -ERESTARTNOHAND on a signal.
 */
int wsem_acquire(struct wsem_handle *h, u64 weight, u64 flags,
		 ktime_t deadline)
{
	struct wsem *sem = h->sem;
	struct wsem_wake wake;
	int ret = 0;

	wsem_wake_init(&wake);
	spin_lock(&sem->lock);
	if (!weight || weight > sem->capacity)
		ret = -EINVAL;
	else if (list_empty(&sem->waiters) && wsem_fits(sem, weight))
		wsem_take(sem, h, weight);
	else if (flags & WSEM_ACQUIRE_TRY)
		ret = -EAGAIN;
	else if (!(flags & WSEM_ACQUIRE_DEADLINE))
		ret = wsem_wait(sem, h, weight, NULL, &wake);
	else if (ktime_compare(deadline, ktime_get()) <= 0)
		ret = -ETIMEDOUT;
	else
		ret = wsem_wait(sem, h, weight, &deadline, &wake);
	spin_unlock(&sem->lock);
	wsem_wake_up(&wake);
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
		h->held -= weight;
		sem->used -= weight;
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

	if (!capacity || capacity > WSEM_CAPACITY_MAX)
		return -EINVAL;

	wsem_wake_init(&wake);
	spin_lock(&sem->lock);
	sem->capacity = capacity;
	list_for_each_entry_safe(w, next, &sem->waiters, node) {
		if (w->weight > capacity)
			wsem_finish(sem, w, -EINVAL, &wake);
	}
	wsem_settle(sem, &wake);
	spin_unlock(&sem->lock);
	wsem_wake_up(&wake);
	return 0;
}

/**
 * wsem_fill_stat() - describe a semaphore as its caller sees it
 * @sem: the semaphore
 * @h: the handle whose weight is reported as held, or NULL
 * @st: filled in, apart from @st->size
 *
 * Context: Process context; takes @sem->lock.
 */
void wsem_fill_stat(struct wsem *sem, struct wsem_handle *h,
		    struct wsem_stat *st)
{
	struct user_namespace *ns = current_user_ns();

	st->uid = from_kuid_munged(ns, sem->uid);
	st->gid = from_kgid_munged(ns, sem->gid);
	st->mode = sem->mode;

	spin_lock(&sem->lock);
	st->capacity = sem->capacity;
	st->used = sem->used;
	st->available = wsem_fits(sem, 0) ? sem->capacity - sem->used : 0;
	st->held = h ? h->held : 0;
	st->waiters = sem->nr_waiters;
	/* Past 2^64 - 1 the sum is reported as U64_MAX, never wrapped. */
	st->queued_weight = sem->queued_carry ? U64_MAX : sem->queued_weight;
	if (sem->linked)
		memcpy(st->name, sem->name, sizeof(st->name));
	spin_unlock(&sem->lock);
}

/**
 * wsem_poll() - poll() and epoll on a handle bound to @sem
 * @sem: the semaphore
 * @file: the handle's file
 * @wait: the poll table
 *
 * Readable (EPOLLIN) while a try-acquire of 1 would succeed: nobody is
 * queued and some weight is free.  Polling takes nothing: the weight may
 * be gone again before the caller's acquire.
 *
 * Context: Process context; takes @sem->lock.
 * Return: EPOLLIN | EPOLLRDNORM, or 0.
 */
__poll_t wsem_poll(struct wsem *sem, struct file *file, poll_table *wait)
{
	__poll_t events = 0;

	poll_wait(file, &sem->pollers, wait);
	spin_lock(&sem->lock);
	if (wsem_ready(sem))
		events = EPOLLIN | EPOLLRDNORM;
	spin_unlock(&sem->lock);
	return events;
}

/**
 * wsem_may() - may the caller access a semaphore?
 * @sem: the semaphore
 * @mask: MAY_READ and/or MAY_WRITE
 *
 * The caller's class (owner, group, other) is chosen with its effective ids;
 * CAP_IPC_OWNER in the semaphore's user namespace overrides the mode.
 *
 * Return: true if every bit of @mask is granted.
 */
bool wsem_may(const struct wsem *sem, int mask)
{
	umode_t mode = sem->mode;

	if (uid_eq(current_euid(), sem->uid))
		mode >>= 6;
	else if (in_egroup_p(sem->gid))
		mode >>= 3;
	if (!(mask & ~mode & 0007))
		return true;
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
	return uid_eq(current_euid(), sem->uid) ||
	       ns_capable(sem->user_ns, CAP_IPC_OWNER);
}
