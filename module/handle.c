// SPDX-License-Identifier: GPL-2.0
/*
 * wsem: a handle's life: allocated unbound, closed at its file's release
 * (main.c) or its jobserver process's end (jobserver.c).  A close gives
 * back, in one hold of the semaphore's tree's lock, what the handle holds,
 * its queued requests and its loan (wsem_unbind()).
 *
 * Calls sem.c (the queue and the grants after the close), gang.c (its
 * parked gangs), holders.c and ns.c (the semaphore's reference).
 */
#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/pid.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/slab.h>

#include "wsem.h"
#include "wsem_trace.h"

/**
 * wsem_handle_alloc() - a new, unbound handle
 *
 * Context: Process context, may sleep.
 * Return: the handle with one reference (wsem_handle_close() drops it),
 * or NULL when out of memory.
 */
struct wsem_handle *wsem_handle_alloc(void)
{
	struct wsem_handle *h = kzalloc(sizeof(*h), WSEM_GFP);

	if (h) {
		INIT_LIST_HEAD(&h->hold_node);
		INIT_LIST_HEAD(&h->parked);
		refcount_set(&h->ref, 1);
		init_waitqueue_head(&h->wqh);
		mutex_init(&h->text_lock);
	}
	return h;
}

/**
 * wsem_unbind() - give back what a closing handle holds
 * @h: the handle, bound, with no caller left inside an ioctl on it
 *
 * The handle's weight returns to the semaphore and the waiters that now fit
 * are granted; its queued request and its parked waiters leave the queue.
 * Its loan is withdrawn, and if it lends with WSEM_LEND_END_HOLDERS the
 * holders are sent SIGKILL in the same hold of the lock
 * (wsem_kill_holders()).
 * The handle's reference to the semaphore is left to the caller to drop
 * (wsem_put()), since the last one is its namespace's to uncharge.
 *
 * Context: Process context.
 */
static void wsem_unbind(struct wsem_handle *h)
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
	/* No LEND of @h can run any more; grants wait for the unlock. */
	wsem_withdraw_loan(sem, h, &wake);
	wsem_unlock_and_wake(sem, before, &wake);
	if (requester)
		put_task_struct(requester);
	list_for_each_entry_safe(w, next, &parked, park_node)
		wsem_free_parked(w);
}

/**
 * wsem_swap_kill_pgrp() - set the process group a bound handle's lease kills
 * @h: the bound handle
 * @pgrp: the new group (its reference passes to @h), or NULL
 *
 * Under the tree's lock, against an end of holders sending to the group
 * it reads there (wsem_kill_holders()).
 *
 * Context: Process context.
 * Return: the group @h had, whose reference passes to the caller, or NULL.
 */
struct pid *wsem_swap_kill_pgrp(struct wsem_handle *h, struct pid *pgrp)
{
	struct wsem *sem = wsem_handle_sem(h);
	struct pid *old;

	spin_lock(sem->lock);
	old = h->kill_pgrp;
	h->kill_pgrp = pgrp;
	spin_unlock(sem->lock);
	return old;
}

/**
 * wsem_handle_close() - give back all a handle holds and drop it
 * @h: the handle, bound or not, with nobody left inside a call on it
 *
 * The process group of WSEM_IOC_SET_KILL is sent SIGKILL first, so that
 * the lease ends no earlier than the kill of what it was for; then, for a
 * handle that lends with WSEM_LEND_END_HOLDERS, the semaphore's holders.
 *
 * Context: Process context.
 */
void wsem_handle_close(struct wsem_handle *h)
{
	struct wsem *sem = h->sem;
	/* Only a bound handle has one; no call on @h can set it now. */
	struct pid *pgrp = h->kill_pgrp ? wsem_swap_kill_pgrp(h, NULL) : NULL;

	if (pgrp) {
		kill_pgrp(pgrp, SIGKILL, 1);
		put_pid(pgrp);
	}
	if (sem) {
		wsem_gang_unpark_handle(h);
		wsem_loan_free(h);
		wsem_unbind(h);
		wsem_put(sem);		/* the handle's */
	}
	wsem_handle_forget(h);
	kvfree(h->text);
	mutex_destroy(&h->text_lock);
	/* A granter still waking h->wqh holds the handle a moment longer. */
	wsem_handle_put(h);
}
