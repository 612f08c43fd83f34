// SPDX-License-Identifier: GPL-2.0
/*
 * wsem: who holds, who waits, and the state, as the caller may see them.
 *
 * The views of a semaphore: its stat (WSEM_IOC_STAT, LIST, fdinfo), its
 * holders and waiters (WSEM_IOC_HOLDERS) and the text that read(2) of a
 * handle gives.  Each copies what it shows under sem->lock; the holders
 * view takes references there, a bounded batch of entries at a time, and
 * looks the processes up after the lock is dropped.  What a view shows
 * depends on who looks: a name only in its own IPC namespace, pids in the
 * caller's PID namespace, cgroup paths in its cgroup namespace, ids in its
 * user namespace.  The semaphore itself
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
	int child_id;			/* shown for a child named elsewhere */
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
		if (who->label[0])
			memcpy(out->label, who->label, sizeof(out->label));
		else
			snprintf(out->label, sizeof(out->label), "[%d]",
				 who->child_id);
		return;
	}
	if (who->task) {
		out->flags = WSEM_HOLDER_WAITING;
		out->pid = task_tgid_nr_ns(who->task, pidns);
		visible = out->pid;
		get_task_comm(out->comm, who->task);
		rcu_read_lock();
		cgrp = task_dfl_cgroup(who->task);
		if (!cgroup_tryget(cgrp))
			cgrp = NULL;
		rcu_read_unlock();
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
	if (cgrp) {
		/* Cut to fit, NUL-terminated, or empty on an error. */
		if (!visible ||
		    cgroup_path_ns(cgrp, out->cgroup, sizeof(out->cgroup),
				   current->nsproxy->cgroup_ns) < 0 ||
		    !strncmp(out->cgroup, "/..", 3))
			out->cgroup[0] = '\0';
		cgroup_put(cgrp);
	}
}

/*
 * How many entries a view looks at in one hold of a tree's lock: reading
 * the holders of a large tree, or of a semaphore behind a long queue,
 * never holds up acquires for longer than this many steps.
 */
#define WSEM_VIEW_BATCH	64

/*
 * A holders view in progress (wsem_holders()).  Between two holds of the
 * tree's lock it keeps its place in each list: in @sem->holders a handle
 * of its own that is bound to nothing (@place, wsem_is_view_place()), in
 * the tree's waiters a mark (@mark, wsem_is_mark()), and in @sem->children
 * a reference to the child it goes on from (@child), which keeps that
 * child on the list.
 */
struct wsem_view {
	struct wsem *sem;
	struct wsem_who *who;		/* the entries taken, @n of @room */
	u32 n;
	u32 room;
	u32 count;			/* the caller's room */
	u32 batch;			/* what this hold may look at */
	u32 holders;			/* holders and waiters listed, */
	u32 waiters;			/* or counted once @count was reached */
	u32 children;			/* children holding weight, counted */
	bool list_children;
	bool cut;			/* @count was reached */
	enum { WSEM_VIEW_HOLDERS, WSEM_VIEW_WAITERS, WSEM_VIEW_CHILDREN,
	       WSEM_VIEW_DONE } part;
	struct wsem_handle *place;
	struct wsem_waiter mark;
	struct wsem *child;
	struct wsem *child_done;	/* a reference to drop after the hold */
};

/* Is @h another holders view's place in a semaphore's holders? */
static bool wsem_is_view_place(const struct wsem_handle *h)
{
	return !h->sem;
}

/*
 * Look at up to *@budget of @v->sem's holders from @v's place on, taking
 * those that hold while there is room.  Return: true once the list is
 * done, false with @v's place moved to where it stopped.
 */
static bool wsem_view_holders(struct wsem_view *v, u32 *budget, u64 jnow)
{
	struct wsem *sem = v->sem;
	struct wsem_handle *h = v->place, *next;
	struct wsem_who *who;

	list_for_each_entry_safe_continue(h, next, &sem->holders, hold_node) {
		if (!*budget) {
			list_move_tail(&v->place->hold_node, &h->hold_node);
			return false;
		}
		--*budget;
		if (wsem_is_view_place(h))
			continue;
		if (!h->held) {
			/* Once it holds again, a grant puts it back. */
			list_del_init(&h->hold_node);
			continue;
		}
		if (v->n == v->count) {
			v->cut = true;
			v->holders = max_t(u64, v->holders + 1ULL,
					   sem->nr_holders);
			break;
		}
		who = &v->who[v->n++];
		v->holders++;
		who->pid = get_pid(h->pid);
		who->cgrp = h->cgrp;
		if (h->cgrp)
			cgroup_get(h->cgrp);
		memcpy(who->comm, h->comm, sizeof(who->comm));
		memcpy(who->label, h->label, sizeof(who->label));
		who->weight = h->held;
		who->age_ns = jiffies64_to_nsecs(jnow - h->since);
	}
	list_del_init(&v->place->hold_node);
	return true;
}

/*
 * Look at up to *@budget of the tree's waiters from @v's mark on, taking
 * those that wait for @v->sem while there is room, in queue order.
 * Return: true once the list is done, false with the mark moved to where
 * it stopped.
 */
static bool wsem_view_waiters(struct wsem_view *v, u32 *budget, u64 now)
{
	struct wsem *sem = v->sem;
	struct wsem_waiter *w = &v->mark, *next;
	struct wsem_who *who;

	list_for_each_entry_safe_continue(w, next, &sem->root->waiters, node) {
		if (!*budget) {
			list_move_tail(&v->mark.node, &w->node);
			return false;
		}
		--*budget;
		if (wsem_is_mark(w) || !wsem_is_below(w->handle->sem, sem))
			continue;
		if (v->n == v->count) {
			v->cut = true;
			v->waiters = min_t(u64, U32_MAX,
					   max_t(u64, v->waiters + 1ULL,
						 sem->nr_waiters));
			break;
		}
		who = &v->who[v->n++];
		v->waiters++;
		get_task_struct(w->task);
		who->task = w->task;
		memcpy(who->label, w->handle->label, sizeof(who->label));
		who->weight = w->weight;
		who->age_ns = now > w->since ? now - w->since : 0;
	}
	list_del(&v->mark.node);
	return true;
}

/*
 * Look at up to *@budget of @v->sem's children from @v's child on,
 * counting those that hold weight and taking them while there is room.
 * Return: true once the list is done, false with a reference to the
 * child to go on from in @v->child.
 */
static bool wsem_view_children(struct wsem_view *v, u32 *budget)
{
	struct wsem *sem = v->sem, *c = v->child;
	struct wsem_who *who;

	v->child_done = c;
	c = c ? c : list_first_entry(&sem->children, struct wsem, sibling);
	for (; &c->sibling != &sem->children;
	     c = list_next_entry(c, sibling)) {
		if (!*budget) {
			/* One that is being freed holds nothing: pass it. */
			if (!kref_get_unless_zero(&c->ref))
				continue;
			v->child = c;
			return false;
		}
		--*budget;
		if (!c->used)
			continue;
		v->children++;
		if (v->n == v->count) {
			v->cut = true;
			continue;
		}
		who = &v->who[v->n++];
		who->child = true;
		who->weight = c->used;
		/* Its name where the caller names it, else its id (later). */
		if (c->linked && wsem_ns_is_current(c->wns))
			memcpy(who->label, c->name, sizeof(who->label));
		who->child_id = c->id;
	}
	v->child = NULL;
	return true;
}

/* Go on with @v's current part.  Return: true once it is done. */
static bool wsem_view_part(struct wsem_view *v, u32 *budget, u64 now,
			   u64 jnow)
{
	switch (v->part) {
	case WSEM_VIEW_HOLDERS:
		if (list_empty(&v->place->hold_node))
			list_add(&v->place->hold_node, &v->sem->holders);
		if (!wsem_view_holders(v, budget, jnow))
			return false;
		v->part = WSEM_VIEW_WAITERS;
		if (v->cut) {
			/* No room for them: just say how many. */
			v->waiters = min_t(u64, v->sem->nr_waiters, U32_MAX);
			v->part = WSEM_VIEW_CHILDREN;
		} else {
			list_add(&v->mark.node, &v->sem->root->waiters);
		}
		return true;
	case WSEM_VIEW_WAITERS:
		if (!wsem_view_waiters(v, budget, now))
			return false;
		v->part = WSEM_VIEW_CHILDREN;
		return true;
	case WSEM_VIEW_CHILDREN:
		if (v->list_children && !wsem_view_children(v, budget))
			return false;
		v->part = WSEM_VIEW_DONE;
		return true;
	default:
		return false;
	}
}

/*
 * One hold of the tree's lock: look at @v->batch entries at most,
 * going on where the last hold stopped, then drop the reference to the
 * child the last hold went on from.
 */
static void wsem_view_batch(struct wsem_view *v)
{
	u32 budget = v->batch;
	u64 now = ktime_get_ns(), jnow = get_jiffies_64();

	spin_lock(v->sem->lock);
	while (wsem_view_part(v, &budget, now, jnow))
		;
	wsem_test_note_view_hold(v->batch - budget);
	spin_unlock(v->sem->lock);
	if (v->child_done) {
		wsem_put(v->child_done);
		v->child_done = NULL;
	}
}

/* Drop the references that @v's first @n entries hold. */
static void wsem_view_forget(struct wsem_who *who, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++) {
		if (who[i].task)
			put_task_struct(who[i].task);
		put_pid(who[i].pid);
		if (who[i].cgrp)
			cgroup_put(who[i].cgrp);
	}
}

/*
 * Make room in @v->who for what one hold (@v->batch) can take, as far as
 * the caller's room goes.  Return: 0, or -ENOMEM.
 */
static int wsem_view_grow(struct wsem_view *v)
{
	u32 want = min_t(u64, v->count, (u64)v->n + v->batch);
	struct wsem_who *who;

	if (want <= v->room)
		return 0;
	want = min_t(u64, v->count, max(want, 2 * v->room));
	who = kvcalloc(want, sizeof(*who), WSEM_GFP);
	if (!who)
		return -ENOMEM;
	if (v->n)
		memcpy(who, v->who, v->n * sizeof(*who));
	kvfree(v->who);
	v->who = who;
	v->room = want;
	return 0;
}

/* Leave every list @v has a place in: it ends before it is done. */
static void wsem_view_abandon(struct wsem_view *v)
{
	spin_lock(v->sem->lock);
	list_del_init(&v->place->hold_node);
	if (v->part == WSEM_VIEW_WAITERS)
		list_del(&v->mark.node);
	spin_unlock(v->sem->lock);
	if (v->child)
		wsem_put(v->child);
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
 * Taken under @sem->lock, WSEM_VIEW_BATCH entries looked at in each hold
 * of it, with references on the processes and a copy of the handles'
 * labels; pids, commands, labels and cgroup paths are given after the
 * lock is dropped, as the caller sees them (its PID and cgroup
 * namespaces; wsem_describe()).  A view of more entries than a batch is
 * read in pieces: each entry is as it was at some moment of the call, one
 * that stays throughout is listed once and in its order, one that comes
 * or goes meanwhile may or may not be.  When all fit in @count, the three
 * counts are the entries written; when they do not, each count that was
 * cut is at least one more than was written.  The walk takes the handles
 * that hold nothing any more off @sem->holders (a grant puts them back),
 * so that it covers the holders, not every handle that ever held.  The
 * arrays are charged to the caller's memory cgroup.
 *
 * Context: Process context, may sleep.
 * Return: the number of entries in *@out, or -ENOMEM.
 */
int wsem_holders(struct wsem *sem, u32 count, struct wsem_holder **out,
		 u32 *holders, u32 *waiters, u32 *children)
{
	struct wsem_view v = {
		.sem = sem,
		.count = count,
		.list_children = !!children,
	};
	u32 i;

	*out = NULL;
	/* Bound to nothing: the walkers of @sem->holders skip it. */
	v.place = kzalloc(sizeof(*v.place), WSEM_GFP);
	if (!v.place)
		return -ENOMEM;
	INIT_LIST_HEAD(&v.place->hold_node);
	while (v.part != WSEM_VIEW_DONE) {
		v.batch = wsem_test_view_batch(WSEM_VIEW_BATCH);
		if (wsem_view_grow(&v)) {
			wsem_view_abandon(&v);
			wsem_view_forget(v.who, v.n);
			v.n = 0;
			break;
		}
		wsem_view_batch(&v);
		wsem_test_view_pause();
		cond_resched();
	}
	kfree(v.place);
	if (v.part != WSEM_VIEW_DONE) {
		kvfree(v.who);
		return -ENOMEM;
	}
	*holders = v.holders;
	*waiters = v.waiters;
	if (children)
		*children = v.children;
	if (v.n) {
		*out = kvcalloc(v.n, sizeof(**out), WSEM_GFP);
		if (!*out)
			wsem_view_forget(v.who, v.n);
		for (i = 0; i < v.n && *out; i++)
			wsem_describe(&v.who[i], &(*out)[i]);
	}
	kvfree(v.who);
	if (v.n && !*out)
		return -ENOMEM;
	return v.n;
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

	wsem_fill_stat(sem, h, &st, true, wsem_ns_is_current(sem->wns));
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
