// SPDX-License-Identifier: GPL-2.0
/*
 * wsem: a handle's life: allocated unbound, closed at its file's release
 * (main.c) or its jobserver process's end (jobserver.c).
 *
 * Calls sem.c (unbinding) and ns.c (the semaphore's reference).
 */
#include <linux/mm.h>
#include <linux/pid.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>

#include "wsem.h"

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
	struct pid *pgrp = xchg(&h->kill_pgrp, NULL);
	struct wsem *sem = h->sem;

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
