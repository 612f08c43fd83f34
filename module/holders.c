// SPDX-License-Identifier: GPL-2.0
/*
 * wsem: what a grant notes of who holds, and a handle's label, for the
 * holders view (views.c shows them).
 *
 * Who holds and who waits: a handle that comes to hold weight for the
 * first time joins sem->holders, and stays there, holding or not, until it
 * is unbound (so that acquire and release touch no list); every grant
 * notes the acquirer (pid, command, cgroup, when); a waiter notes when it
 * queued.  The statistics are counters under sem->lock.  Nothing of this
 * allocates, and an acquirer that is the handle's last one takes no
 * reference on anything.  What a caller sees of it is views.c's.
 *
 * Calls only params.c (a test knob); sem.c calls wsem_note_holder() at
 * every grant.
 */
#include <linux/cgroup.h>
#include <linux/jiffies.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/spinlock.h>
#include <linux/string.h>

#include "wsem.h"

/*
 * Note @task as the last acquirer through @h, under @h->sem->lock: a
 * spinlock is an RCU read-side section (preemption off, or on PREEMPT_RT
 * rcu_read_lock() taken by the lock), which is what task_dfl_cgroup()
 * needs.  References are taken only when the process or the cgroup
 * differs from the last one's; a cgroup that takes none is noted as none.
 * This runs on every grant: no call out of the module on the path where
 * nothing changed.
 */
void wsem_note_holder(struct wsem_handle *h, struct task_struct *task)
{
	struct pid *pid = task_tgid(task);
	struct cgroup *cgrp = task_dfl_cgroup(task);

	lockdep_assert_held(h->sem->lock);
	h->since = get_jiffies_64();
	/* A racing prctl(PR_SET_NAME) tears the name at worst. */
	memcpy(h->comm, task->comm, sizeof(h->comm));
	h->comm[sizeof(h->comm) - 1] = '\0';
	if (unlikely(pid != h->pid)) {
		put_pid(h->pid);
		h->pid = get_pid(pid);
	}
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
	if (h->cgrp)
		cgroup_put(h->cgrp);
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
