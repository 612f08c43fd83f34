// SPDX-License-Identifier: GPL-2.0
/*
 * wsem: who holds, who waits, and the state, as the caller may see them.
 *
 * The views of a semaphore: its stat (WSEM_IOC_STAT, LIST, fdinfo), its
 * holders and waiters (WSEM_IOC_HOLDERS) and the text that read(2) of a
 * handle gives.  Each copies what it shows under sem->lock; the holders
 * view takes references there and looks the processes up after the lock
 * is dropped.  What a view shows depends on who looks: a name only in its
 * own IPC namespace, pids in the caller's PID namespace, cgroup paths in
 * its cgroup namespace, ids in its user namespace.  The semaphore itself
 * (sem.c) knows no namespace; the views do.
 */
#include <linux/cgroup.h>
#include <linux/cred.h>
#include <linux/jiffies.h>
#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/nsproxy.h>
#include <linux/pid.h>
#include <linux/pid_namespace.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/user_namespace.h>

#include "wsem.h"

/**
 * wsem_fill_stat() - describe a semaphore as its caller sees it
 * @sem: the semaphore, charged to a namespace
 * @h: the handle whose weight is reported as held and lent, or NULL
 * @st: filled in, apart from @st->size
 * @seen: @h's user reads this (stat, read(2)): the demand that @h's pollers
 *	hear of is news only from now on (wsem_poll())
 *
 * Context: Process context; takes @sem->lock.
 */
void wsem_fill_stat(struct wsem *sem, struct wsem_handle *h,
		    struct wsem_stat *st, bool seen)
{
	struct user_namespace *ns = current_user_ns();
	bool here = wsem_ns_is_current(sem->wns);

	st->uid = from_kuid_munged(ns, READ_ONCE(sem->uid));
	st->gid = from_kgid_munged(ns, READ_ONCE(sem->gid));
	st->mode = READ_ONCE(sem->mode);

	spin_lock(sem->lock);
	st->capacity = sem->capacity;
	st->used = sem->used;
	st->available = sem->used <= sem->capacity ?
			sem->capacity - sem->used : 0;
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
	st->lent = sem->lent;
	st->lent_here = h ? h->lent : 0;
	st->ceiling = sem->ceiling;
	st->depth = sem->depth;
	st->parent_id = sem->parent ? sem->parent->id : 0;
	if (seen)
		h->demand_seen = sem->demand_seq;
	/* Names are for their namespace: none leaks to a container. */
	if (sem->linked && here)
		memcpy(st->name, sem->name, sizeof(st->name));
	spin_unlock(sem->lock);
}

/* One holder or waiter, as wsem_holders() takes it under the lock. */
struct wsem_who {
	struct pid *pid;		/* a holder's, with a reference */
	struct task_struct *task;	/* a waiter, with a reference */
	struct cgroup *cgrp;		/* a holder's, with a reference */
	u64 weight;
	u64 age_ns;
	char comm[TASK_COMM_LEN];
	char label[WSEM_LABEL_MAX];	/* its handle's, or a child's name */
	bool child;			/* a child semaphore, not a handle */
};

/*
 * Fill @out from @who for the caller, and drop @who's references.  What
 * the caller's namespaces cannot see stays empty: the pid, command, label
 * and cgroup of a process its PID namespace does not hold (a host's
 * process, seen from a container), and a cgroup outside its cgroup
 * namespace.
 */
static void wsem_describe(struct wsem_who *who, struct wsem_holder *out)
{
	struct pid_namespace *pidns = task_active_pid_ns(current);
	struct cgroup *cgrp = who->cgrp;
	bool visible;

	out->weight = who->weight;
	out->age_ns = who->age_ns;
	if (who->child) {
		out->flags = WSEM_HOLDER_CHILD;
		memcpy(out->label, who->label, sizeof(out->label));
		return;
	}
	if (who->task) {
		out->flags = WSEM_HOLDER_WAITING;
		out->pid = task_tgid_nr_ns(who->task, pidns);
		visible = out->pid;
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
		/* A struct pid keeps its numbers after its process is gone. */
		visible = who->pid && pid_nr_ns(who->pid, pidns);
		/* A process that is gone has no pid any more. */
		rcu_read_lock();
		if (visible && pid_has_task(who->pid, PIDTYPE_TGID))
			out->pid = pid_nr_ns(who->pid, pidns);
		rcu_read_unlock();
		memcpy(out->comm, who->comm, sizeof(out->comm));
		put_pid(who->pid);
	}
	if (visible)
		memcpy(out->label, who->label, sizeof(out->label));
	else
		memset(out->comm, 0, sizeof(out->comm));
#ifdef CONFIG_CGROUPS
	if (cgrp) {
		/* Cut to fit, NUL-terminated, or empty on an error. */
		if (!visible ||
		    cgroup_path_ns(cgrp, out->cgroup, sizeof(out->cgroup),
				   current->nsproxy->cgroup_ns) < 0 ||
		    !strncmp(out->cgroup, "/..", 3))
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
 * @children: set to the number of children that hold weight; NULL to list
 *	none (a caller that does not know of them)
 *
 * The entries: the handles that hold weight, then the waiters for @sem,
 * its own and its descendants', in the order of its tree's queue, then
 * the children that hold weight (WSEM_HOLDER_CHILD, what each holds of
 * @sem, its own holders' and its children's).
 *
 * A snapshot under @sem->lock, with references on the processes and a
 * copy of the handles' labels; pids, commands, labels and cgroup paths
 * are given after the lock is dropped, as the
 * caller sees them (its PID and cgroup namespaces; wsem_describe()).  The
 * walk takes the handles that hold nothing any more off @sem->holders (a
 * grant puts them back), so that it covers the holders, not every handle
 * that ever held.  The arrays are charged to the caller's memory cgroup.
 *
 * Context: Process context, may sleep.
 * Return: the number of entries in *@out, or -ENOMEM.
 */
int wsem_holders(struct wsem *sem, u32 count, struct wsem_holder **out,
		 u32 *holders, u32 *waiters, u32 *children)
{
	struct wsem_handle *h, *hnext;
	struct wsem_waiter *w;
	struct wsem_who *who;
	struct wsem *c;
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
			     READ_ONCE(sem->nr_waiters) +
			     READ_ONCE(sem->nr_children) + 16);
		who = kvcalloc(room, sizeof(*who), WSEM_GFP);
		if (room && !who)
			return -ENOMEM;
		spin_lock(sem->lock);
		if (room == count || sem->nr_holders + sem->nr_waiters +
				     sem->nr_children <= room)
			break;
		spin_unlock(sem->lock);
		kvfree(who);
	}
	count = room;
	now = ktime_get_ns();
	jnow = get_jiffies_64();
	*holders = sem->nr_holders;
	*waiters = min_t(u64, sem->nr_waiters, U32_MAX);
	list_for_each_entry_safe(h, hnext, &sem->holders, hold_node) {
		if (n == count)
			break;
		if (!h->held) {
			list_del_init(&h->hold_node);
			continue;
		}
		who[n].pid = get_pid(h->pid);
#ifdef CONFIG_CGROUPS
		who[n].cgrp = h->cgrp;
		if (h->cgrp)
			cgroup_get(h->cgrp);
#endif
		memcpy(who[n].comm, h->comm, sizeof(who[n].comm));
		memcpy(who[n].label, h->label, sizeof(who[n].label));
		who[n].weight = h->held;
		who[n].age_ns = jiffies64_to_nsecs(jnow - h->since);
		n++;
	}
	list_for_each_entry(w, &sem->root->waiters, node) {
		if (n == count)
			break;
		if (wsem_is_mark(w) || !wsem_is_below(w->handle->sem, sem))
			continue;
		get_task_struct(w->task);
		who[n].task = w->task;
		memcpy(who[n].label, w->handle->label, sizeof(who[n].label));
		who[n].weight = w->weight;
		who[n].age_ns = now > w->since ? now - w->since : 0;
		n++;
	}
	if (children)
		*children = 0;
	list_for_each_entry(c, &sem->children, sibling) {
		if (!children)
			break;
		if (!c->used)
			continue;
		++*children;
		if (n == count)
			continue;
		who[n].child = true;
		who[n].weight = c->used;
		if (c->linked && wsem_ns_is_current(c->wns))
			memcpy(who[n].label, c->name, sizeof(who[n].label));
		else
			snprintf(who[n].label, sizeof(who[n].label), "[%d]",
				 c->id);
		n++;
	}
	spin_unlock(sem->lock);

	if (n) {
		*out = kvcalloc(n, sizeof(**out), WSEM_GFP);
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

/* At most this many holders and waiters are listed in the text. */
#define WSEM_TEXT_WHO	64

/**
 * wsem_text() - the text that read(2) of a handle gives
 * @sem: the semaphore @h is bound to
 * @h: the handle, whose weight is reported as held
 * @text: set to the text, kvmalloc()ed (the caller kvfree()s it)
 *
 * Its stat, one "key: value" line a field, then a line per holder and per
 * waiter, the first WSEM_TEXT_WHO of them, as the caller may see them
 * (wsem_holders()); the format is wsem_file_read()'s.
 *
 * Context: Process context, may sleep; takes @sem->lock.
 * Return: the length of the text, or -ENOMEM.
 */
ssize_t wsem_text(struct wsem *sem, struct wsem_handle *h, char **text)
{
	struct wsem_holder *who;
	struct wsem_stat st = { 0 };
	u32 holders, waiters, children;
	size_t size, len;
	char *buf;
	int i, n;

	wsem_fill_stat(sem, h, &st, true);
	n = wsem_holders(sem, WSEM_TEXT_WHO, &who, &holders, &waiters,
			 &children);
	if (n < 0)
		return n;
	size = 768 + (size_t)n * (WSEM_CGROUP_MAX + WSEM_LABEL_MAX + 128);
	buf = kvmalloc(size, WSEM_GFP);
	if (!buf) {
		kvfree(who);
		return -ENOMEM;
	}
	len = scnprintf(buf, size,
			"name: %s\ncapacity: %llu\nused: %llu\navailable: %llu\n"
			"held: %llu\nwaiters: %llu\nqueued_weight: %llu\n"
			"uid: %u\ngid: %u\nmode: %04o\n"
			"grants_at_once: %llu\ngrants_waited: %llu\n"
			"timeouts: %llu\ninterrupts: %llu\nshrunk: %llu\n"
			"wait_ns_total: %llu\nwait_ns_max: %llu\n"
			"queue_max: %llu\nlent: %llu\nlent_here: %llu\n"
			"ceiling: %llu\ndepth: %llu\nparent_id: %llu\n"
			"holders: %u\n",
			st.name, st.capacity, st.used, st.available, st.held,
			st.waiters, st.queued_weight, st.uid, st.gid, st.mode,
			st.grants_at_once, st.grants_waited, st.timeouts,
			st.interrupts, st.shrunk, st.wait_ns_total,
			st.wait_ns_max, st.queue_max, st.lent, st.lent_here,
			st.ceiling, st.depth, st.parent_id, holders);
	for (i = 0; i < n; i++) {
		struct wsem_holder *w = &who[i];

		if (w->flags & WSEM_HOLDER_CHILD) {
			len += scnprintf(buf + len, size - len,
					 "child: %s weight %llu\n", w->label,
					 w->weight);
			continue;
		}
		len += scnprintf(buf + len, size - len,
				 "%s: pid %d weight %llu %s_ns %llu comm %s cgroup %s label %s\n",
				 w->flags & WSEM_HOLDER_WAITING ? "waiter" :
				 "holder", w->pid, w->weight,
				 w->flags & WSEM_HOLDER_WAITING ? "waiting" :
				 "held", w->age_ns, w->comm,
				 w->cgroup[0] ? w->cgroup : "-",
				 w->label[0] ? w->label : "-");
	}
	kvfree(who);
	*text = buf;
	return len;
}
