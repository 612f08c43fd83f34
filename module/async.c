// SPDX-License-Identifier: GPL-2.0
/*
 * wsem: asynchronous requests (WSEM_ACQUIRE_ASYNC).  A handle has at most
 * one, struct wsem_handle @async, queued like a sleeper's waiter; its end
 * (sem.c's grant walk, or a shrink) wakes the handle's pollers, and
 * WSEM_IOC_ASYNC collects it (wsem_async_end()).  Closing the handle
 * cancels it (wsem_unbind()).
 *
 * Calls only sem.c; wait.c's wsem_acquire() queues the request.
 */
#include <linux/ktime.h>
#include <linux/sched/task.h>
#include <linux/spinlock.h>

#include "wsem.h"

/*
 * Queue @h's asynchronous request for @weight; the caller checked it.
 * Entered with @sem->lock held, which it drops.
 */
void wsem_queue_async(struct wsem *sem, struct wsem_handle *h, u64 weight)
	__releases(sem->lock)
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
	wsem_queue_and_unlock(sem, w);
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
