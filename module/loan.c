// SPDX-License-Identifier: GPL-2.0
/*
 * wsem: loans.  A handle lends capacity to its semaphore (WSEM_IOC_LEND),
 * which counts in the capacity in force until it is withdrawn: by another
 * LEND, by the handle's close (wsem_unbind(), handle.c) or at the loan's
 * deadline (struct wsem_loan: an hrtimer on CLOCK_BOOTTIME queues a work
 * item, which withdraws the loan in process context).  A withdrawal is a
 * shrink (wsem_resize()); with WSEM_LEND_END_HOLDERS it also sends SIGKILL
 * to the holders in the same hold of the lock, and the wake-up after it
 * to the holding handles' sharers (wsem_kill_sharers(), sem.c).
 *
 * Locking: a loan changes under its semaphore's tree's lock, sem->lock.
 * Under it, kill_pid() takes the holder's sighand lock, kill_pgrp()
 * tasklist_lock for reading and each member's sighand lock, and
 * hrtimer_start() and hrtimer_try_to_cancel() the timer's base lock; the
 * timer's callback takes no lock of ours.  The loan is allocated before
 * the lock is taken, and wsem_loan_free() waits for the timer and the work
 * item without it.
 *
 * Calls sem.c (the shrink a withdrawal is, and the grants after it) and
 * params.c (a test knob).
 */
#include <linux/atomic.h>
#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/pid.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <linux/workqueue.h>

#include "wsem.h"
#include "wsem_trace.h"

/* Each end of holders' number (wsem_kill_holders()); 0 is none. */
static atomic64_t wsem_doom_seq = ATOMIC64_INIT(0);

/*
 * The semaphore after @s in a walk of @top's subtree, parents before their
 * children (@s is @top or below it); NULL after the last.  Under the
 * tree's lock, which keeps the children's lists as they are.
 */
static struct wsem *wsem_next_below(struct wsem *s, struct wsem *top)
{
	if (!list_empty(&s->children))
		return list_first_entry(&s->children, struct wsem, sibling);
	for (; s != top; s = s->parent) {
		if (!list_is_last(&s->sibling, &s->parent->children))
			return list_next_entry(s, sibling);
	}
	return NULL;
}

/*
 * The close of a lender of WSEM_LEND_END_HOLDERS, or its loan's deadline:
 * send SIGKILL to the thread group that last acquired through each handle
 * holding weight on @sem or on one of its descendants, and to the handle's
 * kill group (WSEM_IOC_SET_KILL: what `wsem run` holds for, which would
 * otherwise die only at the holder's close, after its death), with the
 * kernel's privilege (kill_pid()'s and kill_pgrp()'s priv: the lender had
 * CAP_KILL).  Called under the tree's lock in the same hold that withdraws
 * the loan, so that no holder is granted between the two and none is
 * granted from the loan being withdrawn; sending takes the targets'
 * sighand locks, and for a group tasklist_lock for reading, which nothing
 * holds while taking a tree's lock.  A holder dies, and gives its weight
 * back, when the signal is delivered.
 *
 * A handle is shared by every process that has its file: one that
 * inherited it (fork after the acquire) or received it (SCM_RIGHTS) holds
 * its weight too, without having acquired.  Each holding handle is marked
 * with this end's number in @wake, and once the lock is dropped every
 * process with a marked handle in its file table is sent SIGKILL too
 * (wsem_kill_sharers(), before the withdrawing call returns).
 */
static void wsem_kill_holders(struct wsem *sem, struct wsem_wake *wake)
{
	struct wsem_handle *holder;
	struct wsem *s;

	lockdep_assert_held(sem->lock);

	for (s = sem; s; s = wsem_next_below(s, sem)) {
		list_for_each_entry(holder, &s->holders, hold_node) {
			if (!holder->held)
				continue;
			if (holder->pid)
				kill_pid(holder->pid, SIGKILL, 1);
			if (holder->kill_pgrp)
				kill_pgrp(holder->kill_pgrp, SIGKILL, 1);
			if (!holder->file)
				continue;
			if (!wake->doomed) {
				wake->doomed =
					atomic64_inc_return(&wsem_doom_seq);
				wake->doomed_fops = holder->file->f_op;
			}
			WRITE_ONCE(holder->doomed_by, wake->doomed);
		}
	}
}

/*
 * Withdraw @h's loan as a shrink is, as its close does; with
 * WSEM_LEND_END_HOLDERS, the holders are sent SIGKILL in the same hold of
 * @sem->lock (wsem_kill_holders()).  The handle then lends nothing, with
 * no deadline, and ends no holders.
 */
void wsem_withdraw_loan(struct wsem *sem, struct wsem_handle *h,
			struct wsem_wake *wake)
{
	lockdep_assert_held(sem->lock);

	if (h->end_holders)
		wsem_kill_holders(sem, wake);
	h->end_holders = false;
	if (h->loan)
		h->loan->deadline = 0;
	if (!h->lent)
		return;
	sem->lent -= h->lent;
	wsem_resize(sem, sem->capacity - h->lent, wake);
	h->lent = 0;
}

/*
 * Withdraw @h's loan if its deadline has passed, whether or not its timer
 * has run: what is past its deadline is never lent again, nor renewed.
 */
static void wsem_end_loan_if_due(struct wsem *sem, struct wsem_handle *h,
				 struct wsem_wake *wake)
{
	struct wsem_loan *loan = h->loan;

	lockdep_assert_held(sem->lock);

	if (loan && loan->deadline && ktime_get_boottime_ns() >= loan->deadline) {
		trace_wsem_loan_expired(sem->id, h->lent);
		wsem_withdraw_loan(sem, h, wake);
	}
}

static void wsem_loan_expire(struct work_struct *work)
{
	struct wsem_loan *loan = container_of(work, struct wsem_loan, expiry);
	struct wsem_handle *h = loan->h;
	struct wsem *sem = h->sem;
	struct wsem_wake wake;
	__poll_t before;

	wsem_test_loan_expiry_pause();
	wsem_wake_init(&wake);
	spin_lock(sem->lock);
	before = wsem_events(sem);
	wsem_end_loan_if_due(sem, h, &wake);
	wsem_unlock_and_wake(sem, before, &wake);
}

static enum hrtimer_restart wsem_loan_timer(struct hrtimer *timer)
{
	struct wsem_loan *loan = container_of(timer, struct wsem_loan, timer);

	queue_work(system_highpri_wq, &loan->expiry);
	return HRTIMER_NORESTART;
}

/**
 * wsem_loan_free() - stop and free a closing handle's loan deadline
 * @h: the handle, with no caller left inside an ioctl on it
 *
 * Called before wsem_unbind(), which withdraws what is still lent: after
 * it, no timer or work item of @h's can run.
 *
 * Context: Process context, may sleep.
 */
void wsem_loan_free(struct wsem_handle *h)
{
	struct wsem_loan *loan = h->loan;

	if (!loan)
		return;
	hrtimer_cancel(&loan->timer);
	cancel_work_sync(&loan->expiry);
	h->loan = NULL;
	kfree(loan);
}

/**
 * wsem_lend() - set the capacity a handle lends to its semaphore
 * @h: the bound handle
 * @capacity: what @h lends from now on; 0 withdraws its loan
 * @end_holders: @h's close is to kill the holders (WSEM_LEND_END_HOLDERS,
 *	checked for CAP_KILL by the caller)
 * @deadline: when the loan ends unless lent again (CLOCK_BOOTTIME ns, the
 *	host's, in the future), or 0 for no deadline
 * @may_raise: the caller may lend more than @h does now (it owns the
 *	semaphore or has CAP_IPC_OWNER)
 *
 * The capacity in force changes by the difference, as a resize does
 * (wsem_set_capacity()).  wsem_unbind() withdraws what is still lent, and
 * so does the deadline's work item when it passes (wsem_loan_expire()).
 * A loan whose deadline passed before this call is withdrawn first, as
 * the work item would have: this call lends anew.
 *
 * Context: Process context, may sleep.
 * Return: 0; -EPERM to lend more without @may_raise; -EINVAL if the
 * capacity in force would exceed WSEM_CAPACITY_MAX; -ENOMEM.  Nothing
 * changes on an error, but for a loan whose deadline had passed: it is
 * withdrawn even when -EPERM or -EINVAL follow.
 */
int wsem_lend(struct wsem_handle *h, u64 capacity, bool end_holders,
	      u64 deadline, bool may_raise)
{
	struct wsem_loan *loan = NULL;
	struct wsem *sem = h->sem;
	struct wsem_wake wake;
	__poll_t before;
	u64 others;
	int ret = 0;

	if (deadline && !READ_ONCE(h->loan)) {
		loan = kzalloc(sizeof(*loan), WSEM_GFP);
		if (!loan)
			return -ENOMEM;
		hrtimer_setup(&loan->timer, wsem_loan_timer, CLOCK_BOOTTIME,
			      HRTIMER_MODE_ABS);
		INIT_WORK(&loan->expiry, wsem_loan_expire);
		loan->h = h;
	}
	wsem_wake_init(&wake);
	spin_lock(sem->lock);
	before = wsem_events(sem);
	wsem_end_loan_if_due(sem, h, &wake);
	others = sem->capacity - h->lent;
	if (capacity > h->lent && !may_raise)
		ret = -EPERM;
	else if (capacity > WSEM_CAPACITY_MAX - others)
		ret = -EINVAL;
	if (ret)
		goto out;
	if (loan && !h->loan) {
		WRITE_ONCE(h->loan, loan);
		loan = NULL;
	}
	sem->lent = sem->lent - h->lent + capacity;
	h->lent = capacity;
	h->end_holders = end_holders;
	wsem_resize(sem, others + capacity, &wake);
	if (h->loan) {
		h->loan->deadline = capacity ? deadline : 0;
		if (h->loan->deadline)
			hrtimer_start(&h->loan->timer, ns_to_ktime(deadline),
				      HRTIMER_MODE_ABS);
		else
			hrtimer_try_to_cancel(&h->loan->timer);
	}
out:
	wsem_unlock_and_wake(sem, before, &wake);
	kfree(loan);
	return ret;
}
