/* SPDX-License-Identifier: GPL-2.0 */
/*
 * wsem internals: semaphores, handles, waiters and namespaces.
 *
 * Files, each calling only those listed after it (no file calls back into
 * one that calls it; make lint checks it on the objects, calls.sh):
 *
 *   main.c       /dev/wsem: the ioctls, the handles' file operations,
 *                module init and exit (gives fs.c the file operations)
 *   fs.c         wsemfs, the file system of the names
 *   jobserver.c  the jobserver endpoints of wsemfs
 *   handle.c     a handle's allocation and close: what it holds, asks
 *                and lends goes back (wsem_unbind())
 *   views.c      holders and text, as the caller may see them
 *   ns.c         names, namespaces, their limits and lifetimes; tells
 *                the watchers of a namespace's wsemfs of the names that
 *                come and go through the ioctls
 *   quota.c      how many semaphores each user has, whom a creator is
 *                counted as
 *   loan.c       loans: lending, withdrawing, their deadlines, the end of
 *                holders (WSEM_LEND_END_HOLDERS)
 *   shrink.c     resizes: the capacity set, the shrink's failing walk
 *   gang.c       gangs: queued, granted or ended under all their trees'
 *                locks; parked for task work
 *   wait.c       requests that sleep: acquire, wait for idle; the poll
 *                before sleeping, deadlines, signals, parking
 *   async.c      asynchronous requests
 *   sem.c        the core: the queue, grants, release, wake-ups,
 *                binding, stat; a gang as one tree's grant walk sees it
 *   holders.c    what a grant notes of its acquirer; labels
 *   perm.c       who may read, write, resize and unlink
 *   params.c     module parameters and test knobs
 *
 * Locking, outermost first.  Each line's lock may be taken while holding
 * those above it that the line names, never the other way round; the
 * kernel's own locks that wsem runs under or takes are named where they
 * meet ours.
 *
 *   s_umount, i_rwsem     the VFS's, held around wsemfs's mount, lookup,
 *                         unlink, setattr and readdir: taken before
 *                         wns->lock, never under it
 *   ep->mtx               epoll's, held around ->poll: taken before
 *                         js->lock (wsem_js_poll())
 *   wns->sb_lock (mutex)  which superblock is one namespace's wsemfs
 *                         (ns.c): taken under s_umount (mount, unmount)
 *                         and alone (wsem_ns_tell_watchers(), which
 *                         calls fsnotify under it), never with wns->lock
 *   wsem_ns_lock (mutex)  registering and forgetting namespaces (ns.c);
 *                         lookups take no lock (RCU)
 *   wns->lock (mutex)     one namespace: its names; charging to it;
 *                         taken before sem->lock (a name's link and
 *                         unlink set sem->linked under both), and before
 *                         sem->pollers.lock and h->wqh.lock (wsem_bind()
 *                         of a handle opened by name)
 *   wsem_js_lock (mutex)  which semaphores have an open jobserver
 *                         endpoint, and how many files each (jobserver.c)
 *   js->lock (mutex)      one semaphore's jobserver state: its processes,
 *                         the tokens each holds, their reservations; taken
 *                         before the semaphore's lock, an internal
 *                         handle's h->wqh.lock (wsem_js_release(),
 *                         wsem_js_arm()) and a pid's wait_pidfd.lock
 *   h->text_lock (mutex)  one handle's read(2) text; taken before the
 *                         semaphore's lock, cgroup_mutex (cgroup paths)
 *                         and mmap_lock (faults on the copy out)
 *   wns->users.lock (spin)  one namespace's per-user counts (quota.c):
 *                         taken under wns->lock to charge, alone to
 *                         uncharge (ns.c)
 *   wsem_child_users.lock (spin)  the per-user counts of children across
 *                         namespaces (quota.c): likewise, never together
 *                         with a wns->users.lock
 *   wsem_gang_park_mutex  the gangs parked for task work (gang.c): taken
 *                         before sem->lock, since a parked gang is taken
 *                         back, granted or ended under it
 *   sem->lock (spin)      one tree of semaphores (a root and its
 *                         descendants share the root's lock); a gang
 *                         request (wsem_acquire_many(); gang.c's
 *                         wsem_gang_lock()) alone holds
 *                         several trees' locks at once, taken in
 *                         increasing order of their roots' ids with
 *                         spin_lock_nested() (subclass = rank), dropped
 *                         in reverse; it protects the trees' counters,
 *                         the tree's wait queue, what
 *                         its handles hold and their parked waiters
 *   sem->pollers.lock,    the wait queues' own locks: woken after sem->lock
 *   sem->idle_waiters.lock  is dropped, never taken under it; a poller
 *                         queues itself before it takes sem->lock to look
 *   h->wqh.lock           a handle's pollers; taken under sem->pollers.lock
 *                         by the relay of early pollers (wsem_bind()), and
 *                         by itself when an asynchronous request is told
 *   js->buckets[].lock    the pollers of a semaphore's jobserver endpoint
 *                         files; taken under an internal handle's
 *                         h->wqh.lock by the relay of its request's end
 *                         (wsem_js_relay())
 *   tasklist_lock (read), the kernel's: kill_pgrp() takes both, kill_pid()
 *   sighand->siglock      the siglock alone, under sem->lock when a lender of
 *                         WSEM_LEND_END_HOLDERS closes or its loan's
 *                         deadline passes (wsem_kill_holders()): the
 *                         holders and their handles' kill groups; no lock
 *                         of ours under them
 *   hrtimer base lock     the kernel's, taken by hrtimer_start() and
 *                         hrtimer_try_to_cancel() under sem->lock to arm
 *                         a loan's deadline (wsem_lend()); its callback
 *                         takes no lock of ours, it queues a work item
 *   tasklist_lock,        the kernel's, held when a thread group's exit
 *   pid->wait_pidfd.lock  wakes its pidfd waiters: wsem_js_death() only
 *                         queues a work item under them
 *   task->alloc_lock,     task_lock() and the file table's lock, taken in
 *   files->file_lock      that order, under rcu_read_lock() and js->lock,
 *                         to look for a process's endpoint descriptors at
 *                         a close (wsem_js_flush()), and under
 *                         rcu_read_lock() alone by an end of holders'
 *                         look for the sharers of the holding handles
 *                         (wsem_kill_sharers(), after sem->lock is
 *                         dropped)
 *
 * A handle is bound once, with smp_store_release() on h->sem under
 * h->wqh.lock (wsem_bind(), against a poller queueing itself and another
 * bind), and read under no lock with wsem_handle_sem()'s acquire.
 * No user memory is touched and nothing is allocated under a spinlock.
 * A semaphore's counters page (@counters), and a root's page of its tree's
 * flags (@tree_counters), is allocated with no lock held, installed under
 * sem->lock, and written only under it (wsem_publish(),
 * wsem_publish_tree()), but for wsem_free()'s last write, when nothing
 * else can reach it.
 *
 * Lifetimes: a semaphore has a reference per bound handle (wsem_bind()),
 * one for its name and one per wsemfs inode, one for its jobserver state
 * while that exists, and one from each child (taken by wsem_alloc(),
 * dropped after the child is freed); each is dropped with wsem_put() (ns.c; a
 * handle's by its close, wsem_handle_close(), after wsem_unbind(): both in
 * handle.c), whose last one
 * uncharges the namespace and has sem.c free it (wsem_free()) after an
 * RCU grace period, since RCU-walk path lookups read it through its
 * wsemfs inode.  sem.c calls nothing of ns.c.
 * A counters page is the semaphore's, one reference, dropped by
 * wsem_free(), and each mapping's (vm_insert_page()): it outlives the
 * semaphore while mapped; so does a tree's page, the root's.  A mapping
 * holds no handle: wsem_file_mmap() gives the VMA a file of its own.
 * A handle is freed at its last reference: its file's, and one a granter
 * holds from granting its asynchronous request under sem->lock until it
 * has woken the handle's pollers after the lock is dropped.  A loan's
 * deadline (struct wsem_loan) is the handle's: its close stops the timer
 * and waits for the work item before it unbinds, so neither outlives the
 * handle or its semaphore.
 * The jobserver's internal handles (one per process that used an
 * endpoint) have no file: the process's entry holds the reference and
 * closes the handle, which gives back what it still holds, when the
 * entry's last reference goes (jobserver.c's struct wsem_js_proc: the
 * table of live entries, callers in a read, poll or write, and queued
 * work items each hold one).  An entry holds a reference to its
 * semaphore's jobserver state, which holds one to the semaphore, so a
 * work item that runs after the last endpoint file is closed finds both;
 * module exit drains those work items (wsem_js_exit()).
 *
 * The jobserver endpoint's choices (jobserver.c has the details):
 *  - Tokens are keyed by the reader's thread group (its struct pid), not
 *    by its file table as POSIX locks are: a clone(CLONE_FILES) child
 *    that reads and dies must give back its own tokens, not leave them
 *    to the parent that shares its table.
 *  - Death is told by the thread group's pidfd wait queue (struct pid's
 *    wait_pidfd, which the kernel wakes when the whole group has exited):
 *    no exit notifier is exported to modules, and a scan of every entry
 *    for pid_has_task() would be late by its period and cost O(entries).
 *  - ->poll() queues the polling process's request, so it allocates an
 *    entry on a process's first poll and takes js->lock (a mutex): SPEC
 *    wants a poller to keep its place in the queue, which a pure report
 *    (eventfd's ->poll()) cannot give.  A granted request not read within
 *    a second goes back, so a poll reserves, it does not hoard.
 */
#ifndef _WSEM_INTERNAL_H
#define _WSEM_INTERNAL_H

#include <linux/gfp.h>
#include <linux/hrtimer.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/poll.h>
#include <linux/rbtree.h>
#include <linux/rcupdate.h>
#include <linux/refcount.h>
#include <linux/sched.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/uidgid.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/wsem.h>

#include "compat.h"

struct wsem_gang;
struct wsem_ns;
struct wsem_user;

/**
 * struct wsem_users - how many semaphores each user has, in one place
 *	(quota.c): a namespace (struct wsem_ns), or the children of all
 * @lock: protects @tree and the counts in it
 * @tree: struct wsem_user (private to quota.c), by uid
 */
struct wsem_users {
	spinlock_t lock;	/* see the kernel-doc above */
	struct rb_root tree;
};

/*
 * What a user may make us allocate is charged to its memory cgroup; at the
 * cgroup's limit the call fails with ENOMEM rather than calling the OOM
 * killer, which finds nobody to kill in a cgroup of OOM-immune tasks and
 * fills the kernel log saying so.
 */
#define WSEM_GFP	(GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL)

/**
 * struct wsem - one weighted, strictly FIFO counting semaphore
 * @lock: the lock of the semaphore's tree, its root's @own_lock; protects
 *	the fields up to and including @linked, @poll_node and the root's
 *	@polled
 * @own_lock: the lock a root lends its tree
 * @capacity: C, the capacity in force: the semaphore's own plus @lent
 * @lent: what the handles bound to it lend (struct wsem_handle @lent)
 * @ceiling: 0; or for a semaphore that takes its capacity from loans
 *	(WSEM_OPEN_LOANS), the largest weight a request may ask for: its own
 *	capacity may be 0, and its waiters never fail for a shrink
 * @demand_seq: counts the changes of @used, @nr_waiters and @queued_weight,
 *	for pollers of the demand event (wsem_poll())
 * @used: U, the sum of what every handle holds; above C only after a shrink
 * @queued_weight: sum of the weights in @waiters, modulo 2^64
 * @queued_carry: how many times @queued_weight has wrapped; weights are at
 *	most 2^62, so the exact sum is @queued_carry * 2^64 + @queued_weight
 * @nr_waiters: how many queued requests ask for weight on this semaphore
 *	(its own handles', and its descendants')
 * @waiters: in a root, every queued request of the whole tree (struct
 *	wsem_waiter, node) in arrival order, for the views and the shrink's
 *	failing walk; empty in a child.  Grants follow @queue, not this
 * @queue: the requests held up here (struct wsem_waiter, qnode), by
 *	ticket: those asked of this semaphore that are first in line, or
 *	not yet fitting, on it, and those of its descendants that fit every
 *	semaphore of their line below it; only the first may go on, up to
 *	the parent's queue or, at the root, to its grant (see sem.c)
 * @next_ticket: in a root, the ticket of the tree's next request
 * @regrants: in a root, the semaphores of the tree (regrant) whose queue
 *	a shrink took the first request of, that no grant walk moved the
 *	requests of up since (wsem_raise_regrants())
 * @regrant: in the root's @regrants, or empty
 * @linked: @name is in its namespace; written under the namespace's lock
 *	and @lock
 * @holders: struct wsem_handle (hold_node) that held weight since they
 *	were bound, in the order they first came to hold some; those that
 *	hold none now are skipped by readers, and so are the places of
 *	holders views read in pieces (handles bound to nothing, views.c)
 * @nr_holders: how many on @holders hold weight now
 * @stats: counters since creation, reported by stat (struct wsem_stat)
 * @pollers: poll() and epoll on the semaphore's handles; woken, after
 *	@lock is dropped, only with the events that a change made new: ready
 *	(EPOLLIN) when a try-acquire of 1 comes to succeed, idle (EPOLLPRI)
 *	when the semaphore comes to be idle (wsem_unlock_and_wake())
 * @idle_waiters: WSEM_IOC_WAIT_IDLE sleepers; woken only when the
 *	semaphore comes to be idle
 * @counters: the page that mmap(2) of its handles maps (struct
 *	wsem_counters, uapi), allocated by the first mmap and installed
 *	under @lock (wsem_counters_page()), freed by wsem_free(); or NULL.
 *	Rewritten under @lock at every change of what it shows
 *	(wsem_publish())
 * @spin_budget: how long a head waiter polls before it sleeps (ns, at
 *	most spin_ns); grown by short waits, set to 0 by a long one
 *	(wsem_adapt_spin()); written under @lock
 * @rcu: the semaphore is freed after a grace period (see the lifetimes
 *	above)
 * @parent: the semaphore whose capacity this one's weight counts against
 *	too (holds a reference, dropped when this one is freed), or NULL for a
 *	root
 * @root: the root of the tree, itself for a root
 * @depth: 0 for a root, a child's parent's + 1, at most WSEM_DEPTH_MAX
 * @nr_children: how many semaphores have this one for parent; under @lock
 * @children: those semaphores (sibling); under @lock
 * @sibling: in the parent's @children
 * @polled: in a root, the semaphores of the tree that were ever polled or
 *	waited idle on (poll_node), which a change in the tree wakes; added
 *	to under @lock (wsem_note_polled()), walked under RCU
 * @tree_size: in a root, how many semaphores the tree holds (at most
 *	max_tree_size); under @lock
 * @poll_node: in the root's @polled, or empty
 * @over: @used is above @capacity (wsem_note_tree()); under @lock
 * @nr_over: in a root, how many semaphores of the tree are @over; under
 *	@lock
 * @tree_flags: in a root, WSEM_TREE_WAITING while a request of the tree is
 *	queued, WSEM_TREE_OVER while @nr_over is not 0; under @lock
 * @tree_seq: in a root, changed with @tree_flags, for the children's
 *	pollers (wsem_poll()); under @lock
 * @tree_counters: in a root, the page of the tree's flags that mmap(2) of
 *	its semaphores' handles maps at WSEM_MMAP_TREE (struct
 *	wsem_tree_counters, uapi), allocated and freed as @counters, written
 *	under @lock when @tree_flags changes (wsem_note_tree()); or NULL
 * @node: in the name tree of @wns while @linked; protected by @wns->lock
 * @ref: one per bound handle, one for the name while @linked, one per
 *	wsemfs inode; dropped with wsem_put()
 * @wns: the namespace charged for this semaphore (holds a reference), or
 *	NULL before it is charged
 * @quota: the per-user count of @wns charged for it (freed by the last
 *	uncharge of its user, in wsem_put())
 * @child_quota: for a child, its creator's count of children across every
 *	namespace (quota.c's wsem_child_charge()), freed likewise; else NULL
 * @user_ns: where CAP_IPC_OWNER is checked (holds a reference, so the user
 *	namespace of its creator's IPC namespace lives as long as it does)
 * @id: a number no other live semaphore has, for fdinfo and wsemfs
 * @uid: owner
 * @gid: group
 * @mode: permission bits
 * @name: NUL-terminated name, empty for an anonymous semaphore
 *
 * Everything after @ref is set at creation and never changes, but for
 * @uid, @gid and @mode: wsemfs changes them (chown, chmod) under the
 * namespace's lock, and readers without it use READ_ONCE().
 */
struct wsem {
	spinlock_t *lock;	/* see the kernel-doc above */
	spinlock_t own_lock;	/* see the kernel-doc above */
	u64 capacity;
	u64 lent;
	u64 ceiling;
	struct wsem_counters *counters;	/* beside @used: tested per change */
	u32 demand_seq;
	u64 used;
	u64 queued_weight;
	u64 queued_carry;
	u64 nr_waiters;
	struct list_head waiters;
	struct rb_root_cached queue;
	u64 next_ticket;
	struct list_head regrants;
	struct list_head regrant;
	bool linked;
	struct list_head holders;
	u32 nr_holders;
	struct {
		u64 grants_at_once;
		u64 grants_waited;
		u64 timeouts;
		u64 interrupts;
		u64 shrunk;
		u64 wait_ns_total;
		u64 wait_ns_max;
		u64 queue_max;
	} stats;
	wait_queue_head_t pollers;
	wait_queue_head_t idle_waiters;
	u32 spin_budget;
	struct rcu_head rcu;
	struct wsem *parent;
	struct wsem *root;
	u32 depth;
	u32 nr_children;
	struct list_head children;
	struct list_head sibling;
	struct list_head polled;
	u32 tree_size;
	struct list_head poll_node;
	bool over;
	u32 nr_over;
	u32 tree_flags;
	u32 tree_seq;
	struct wsem_tree_counters *tree_counters;

	struct rb_node node;
	struct kref ref;
	struct wsem_ns *wns;
	struct wsem_user *quota;
	struct wsem_user *child_quota;
	struct user_namespace *user_ns;
	int id;
	kuid_t uid;
	kgid_t gid;
	umode_t mode;
	char name[WSEM_NAME_MAX];
};

/**
 * struct wsem_waiter - one queue entry: on the stack of a sleeper, in a
 *	handle for an asynchronous request, or parked (see below)
 * @node: in its root's waiters while WSEM_WAITING
 * @qnode: in @level->queue while WSEM_WAITING
 * @level: the semaphore of its line whose queue holds it: where it is held
 *	up (see sem.c)
 * @ticket: its place in the arrival order of its tree
 * @task: the sleeper, or the requester (an asynchronous or parked waiter
 *	holds a reference)
 * @handle: where a granted weight is accounted
 * @weight: what it waits for
 * @since: when it queued, ktime_get_ns()
 * @status: WSEM_WAITING while queued, then how the wait ended: 0
 *	(granted) or a negative errno.  The granter publishes the end under
 *	sem->lock with smp_store_release() and never touches the waiter
 *	after that: a sleeper's waiter may vanish at once, an asynchronous
 *	one be collected and reused
 * @async: the handle's asynchronous request (@handle->async)
 * @parked: a sleeper's place kept while it returned to run task work
 *	(kmalloc()ed, on @handle->parked: wsem_park())
 * @head: a sleeper that was the head of the queue when it queued: the one
 *	that polls, whose wait adapts the semaphore's poll
 * @park_node: in @handle->parked
 * @gang: the gang request (struct wsem_gang) this is one part of,
 *	or NULL
 *
 * Protected by the lock of the semaphore it waits on.
 */
struct wsem_waiter {
	struct list_head node;
	struct rb_node qnode;
	struct wsem *level;
	u64 ticket;
	struct task_struct *task;
	struct wsem_handle *handle;
	u64 weight;
	u64 since;
	int status;
	bool async;
	bool parked;
	bool head;
	struct list_head park_node;
	struct wsem_gang *gang;
};

/*
 * A shrink's place in the tree's waiters while it wakes without the lock
 * (wsem_resize()), or a holders view's between two holds of it
 * (wsem_holders()): on the list, not a request; walkers skip it.
 */
static inline bool wsem_is_mark(const struct wsem_waiter *w)
{
	return !w->task;
}

/* The first request of @sem's queue, or NULL. */
static inline struct wsem_waiter *wsem_queue_first(struct wsem *sem)
{
	struct rb_node *first = rb_first_cached(&sem->queue);

	return first ? rb_entry(first, struct wsem_waiter, qnode) : NULL;
}

/* struct wsem_waiter.status until its wait ends (then 0 or -errno) */
#define WSEM_WAITING	1

/* Why a waiter's poll before sleeping ended (tracepoint wsem_spin) */
enum wsem_spin_end {
	WSEM_SPIN_TOLD,		/* its wait ended: it need not sleep */
	WSEM_SPIN_BUDGET,	/* spin_ns ran out */
	WSEM_SPIN_DEADLINE,	/* its deadline came first */
	WSEM_SPIN_BUSY,		/* its CPU has something else to run */
	WSEM_SPIN_SIGNAL,	/* a signal (or task work) is pending */
};

/**
 * struct wsem_handle - the state of one open file of /dev/wsem
 * @sem: the bound semaphore; set once with smp_store_release() (wsem_bind()),
 *	read with wsem_handle_sem()
 * @held: weight this handle holds; protected by @sem->lock
 * @lent: capacity this handle lends to @sem (WSEM_IOC_LEND), withdrawn when
 *	it is unbound; protected by @sem->lock
 * @end_holders: its last WSEM_IOC_LEND had WSEM_LEND_END_HOLDERS: its close
 *	kills the holders (wsem_kill_holders()); written under @sem->lock,
 *	read without it at the close, when no LEND can run any more
 * @demand_seen: @sem->demand_seq when the handle last read the state of
 *	@sem (wsem_fill_stat()), or was bound; set by wsem_bind() before @sem
 *	is published, then protected by @sem->lock
 * @tree_seen: likewise, its root's @tree_seq
 * @hold_node: in @sem->holders from the first grant until unbound;
 *	protected by @sem->lock
 * @pid: the thread group that last acquired through the handle (holds a
 *	reference), or NULL; protected by @sem->lock, like the three below
 * @cgrp: its cgroup v2 then (holds a reference), or NULL
 * @comm: its command name then
 * @since: when that grant happened, get_jiffies_64() (a tick is the
 *	precision of a holder's age)
 * @label: what the handle's user calls it (WSEM_IOC_SET_LABEL): printable
 *	ASCII, NUL-terminated, empty if none; protected by @sem->lock
 * @requested: @async is the handle's request, queued or ended but not yet
 *	collected (WSEM_IOC_ASYNC); protected by @sem->lock
 * @async: the asynchronous request; see struct wsem_waiter
 * @wqh: poll() and epoll on the handle; woken when @async ends.  Waiters
 *	that came before the handle was bound hear the semaphore's wake-ups
 *	through @relay
 * @relay: on @sem->pollers from binding on, if @wqh had waiters then
 * @parked: struct wsem_waiter (park_node) of sleepers that left to run
 *	task work and have not come back yet; protected by @sem->lock
 * @gang_parts: parked gangs with a part through it (under
 *	wsem_gang_park_mutex; its close reads it with no lock, after the
 *	last call on it ended)
 * @ref: the file's, and a granter's while it tells @async (see wsem.h's
 *	lifetimes); the last one frees the handle
 * @text_lock: serialises read(2) on the handle, for the two below
 * @text: what read(2) reads: taken at offset 0, kept for reads further
 *	on, so that a text read in pieces is one state (kvmalloc()ed)
 * @text_len: its length
 * @kill_pgrp: the process group its close kills, and an end of holders
 *	that finds it holding weight (WSEM_IOC_SET_KILL; holds a reference),
 *	or NULL; set only on a bound handle, under @sem->lock
 *	(wsem_swap_kill_pgrp()), so that it stays alive while an end of
 *	holders sends to it under that lock
 * @loan: the deadline of its loan, allocated by its first WSEM_IOC_LEND with
 *	WSEM_LEND_DEADLINE and set under @sem->lock, freed at its close; or
 *	NULL
 * @file: its file (no reference: the handle is freed at the file's
 *	release), or NULL for the jobserver's internal handles; set once
 * @doomed_by: the number of the last end of holders that found it holding
 *	weight (wsem_kill_holders()); set under @sem->lock, read with no
 *	lock by the scan for its sharers
 */
struct wsem_handle {
	struct wsem *sem;
	u64 held;
	u64 lent;
	bool end_holders;
	u32 demand_seen;
	u32 tree_seen;
	struct list_head hold_node;
	struct pid *pid;
	struct cgroup *cgrp;
	char comm[TASK_COMM_LEN];
	u64 since;
	char label[WSEM_LABEL_MAX];
	bool requested;
	struct wsem_waiter async;
	wait_queue_head_t wqh;
	wait_queue_entry_t relay;
	struct list_head parked;
	unsigned int gang_parts;
	refcount_t ref;
	struct mutex text_lock;	/* see the kernel-doc above */
	char *text;
	size_t text_len;
	struct pid *kill_pgrp;
	struct wsem_loan *loan;
	struct file *file;
	u64 doomed_by;
};

/**
 * struct wsem_loan - the deadline of a handle's loan (WSEM_LEND_DEADLINE)
 * @timer: fires at @deadline on CLOCK_BOOTTIME (which counts suspend)
 * @expiry: queued by @timer, withdraws the loan in process context
 *	(wsem_end_loan_if_due()): a timer cannot take @h->sem->lock, which
 *	is taken with interrupts on
 * @h: the lending handle, bound
 * @deadline: when the loan ends unless lent again, in the host's
 *	CLOCK_BOOTTIME ns, or 0 for none; protected by @h->sem->lock
 */
struct wsem_loan {
	struct hrtimer timer;
	struct work_struct expiry;
	struct wsem_handle *h;
	u64 deadline;
};

/* Grants told per pass under the lock; a full batch is woken, then more. */
#define WSEM_WAKE_BATCH	8

/* What to do once sem->lock is dropped. */
struct wsem_wake {
	unsigned int nr_tasks;		/* sleepers to wake ... */
	unsigned int nr_handles;	/* ... asynchronous requests' handles */
	struct task_struct *tasks[WSEM_WAKE_BATCH];	/* with a reference */
	struct wsem_handle *handles[WSEM_WAKE_BATCH];	/* with a reference */
	struct wsem *sem;		/* wake its pollers ... */
	__poll_t events;		/* ... with these, new since the change */
	struct list_head parked;	/* parked waiters to free (park_node) */
	u64 doomed;			/* an end of holders: its number ... */
	const struct file_operations *doomed_fops; /* ... and handles' f_op */
};

static inline bool wsem_wake_full(const struct wsem_wake *wake)
{
	return wake->nr_tasks == WSEM_WAKE_BATCH ||
	       wake->nr_handles == WSEM_WAKE_BATCH;
}

static __always_inline void wsem_wake_init(struct wsem_wake *wake)
{
	wake->nr_tasks = 0;
	wake->nr_handles = 0;
	wake->events = 0;
	wake->doomed = 0;
	INIT_LIST_HEAD(&wake->parked);
}

/**
 * struct wsem_gang - one request for weight on several semaphores at once
 * @task: the requester, who sleeps in wsem_acquire_many()
 * @nr: how many semaphores
 * @nr_roots: how many trees they are in
 * @look: set by a grant walk that found the gang's parts in its tree first
 *	in the root's queue and fitting there together (wsem_poke_gang()),
 *	or that failed it, under that tree's lock; cleared by @task under
 *	every tree's lock, when it looks
 * @fail: 0, or the errno a shrink made its lot (-EINVAL), set like @look
 * @roots: the roots of the trees, in lock order: by increasing id
 * @ref: the call's (or, while parked, the parked list's) and one per
 *	queued @park_work; the last frees it, and its reference to @task
 * @parked: on wsem_parked_gangs while @task returned to run task work
 *	(set and cleared under wsem_gang_park_mutex, read by grant walks
 *	with no lock of it)
 * @park_node: in wsem_parked_gangs
 * @park_work: grants or ends it in place of its task while parked
 *	(queued by wsem_poke_gang(), runs wsem_gang_look_parked())
 * @part: @nr requests, one per semaphore, each queued and moved up its
 *	line as a plain one is; the parts of one tree take consecutive
 *	tickets, queued at once, so they stand together once at the root
 *	(allocated for @nr: a gang of two is a third of a gang of eight)
 *
 * A gang is granted by its own task alone, under the locks of all its
 * trees, taken in @roots order (spin_lock_nested(), a subclass per tree):
 * a grant walk of one tree, which holds that tree's lock only, stops at a
 * gang's part first in the root's queue and, if the gang's parts there
 * fit together, wakes the task to look at every tree (wsem_gang_look()).
 * All its parts were queued at once under all those locks, so two gangs
 * are in the same order in every tree they share, and a wait only ever
 * points at an earlier arrival or at held weight: no deadlock.
 *
 * A new request of up to WSEM_GANG_ON_STACK parts first looks for a grant
 * at once through a copy on its caller's stack (gang.c), which takes the
 * trees' locks but is never queued nor pointed at; only a request that
 * must wait is allocated.
 *
 * Task work parks a gang as it parks a single sleeper (gang.c): it stays
 * queued, on wsem_parked_gangs, while its task returns to run the work;
 * the restarted call takes it back.  Meanwhile a grant walk that would
 * wake the task queues @park_work instead, which grants it (or ends it,
 * for a shrink or an exiting task) under the trees' locks, as the task
 * would.  Every handle of a parked gang is bound: a handle's close ends
 * and unparks the gangs it is part of first (wsem_gang_unpark_handle()),
 * so the work never finds a tree that is gone.
 */
struct wsem_gang {
	struct task_struct *task;
	unsigned int nr;
	unsigned int nr_roots;
	bool look;
	int fail;
	struct wsem *roots[WSEM_MANY_MAX];
	refcount_t ref;
	bool parked;
	struct list_head park_node;
	struct work_struct park_work;
	struct wsem_waiter part[];
};

/* The largest weight a request may ask for: its ceiling, or its capacity. */
static inline u64 wsem_max_weight(const struct wsem *sem)
{
	return sem->ceiling ?: sem->capacity;
}

static inline bool wsem_fits(const struct wsem *sem, u64 weight)
{
	return sem->used <= sem->capacity &&
	       weight <= sem->capacity - sem->used;
}

/*
 * May a new request for @weight on @sem be granted at once: nobody held up
 * on it or an ancestor (their queues are empty), and room on each?
 */
static inline bool wsem_may_grant_now(const struct wsem *sem, u64 weight)
{
	const struct wsem *s;

	for (s = sem; s; s = s->parent) {
		if (!RB_EMPTY_ROOT(&s->queue.rb_root) || !wsem_fits(s, weight))
			return false;
	}
	return true;
}

/* The largest weight a request on @sem may ask for: the least of its line. */
static inline u64 wsem_max_weight_up(const struct wsem *sem)
{
	const struct wsem *s;
	u64 max = U64_MAX;

	for (s = sem; s; s = s->parent)
		max = min(max, wsem_max_weight(s));
	return max;
}

/* Is @sem @top, or one of its descendants? */
static inline bool wsem_is_below(const struct wsem *sem,
				 const struct wsem *top)
{
	for (; sem; sem = sem->parent) {
		if (sem == top)
			return true;
	}
	return false;
}

static inline struct wsem *wsem_handle_sem(struct wsem_handle *h)
{
	/* Pairs with wsem_bind(): a bound handle is seen complete. */
	return smp_load_acquire(&h->sem);
}

/* The semaphore a waiter asked through: its handle's. */
static inline struct wsem *wsem_waiter_sem(const struct wsem_waiter *w)
{
	return w->handle->sem;
}

/* handle.c: handles */
struct wsem_handle *wsem_handle_alloc(void);
void wsem_handle_close(struct wsem_handle *h);
struct pid *wsem_swap_kill_pgrp(struct wsem_handle *h, struct pid *pgrp);

/* main.c: /dev/wsem and its ioctls */
extern const struct file_operations wsem_fops;

/* jobserver.c: the endpoints of WSEM_JOBSERVER_DIR */
extern const struct file_operations wsem_js_fops;
int wsem_js_init(void);
void wsem_js_exit(void);

/* sem.c: the semaphore itself */
struct wsem *wsem_alloc(u64 capacity, u64 ceiling, umode_t mode,
			const char *name, struct user_namespace *user_ns,
			struct wsem *parent);
void wsem_free(struct wsem *sem);
struct page *wsem_counters_page(struct wsem *sem);
struct page *wsem_tree_counters_page(struct wsem *sem);
void wsem_fill_stat(struct wsem *sem, struct wsem_handle *h,
		    struct wsem_stat *st, bool seen, bool named);
int wsem_bind(struct wsem_handle *h, struct wsem *sem);
int wsem_release(struct wsem_handle *h, u64 weight);
void wsem_handle_put(struct wsem_handle *h);
void wsem_note_polled(struct wsem *sem);
__poll_t wsem_poll(struct wsem *sem, struct wsem_handle *h, struct file *file,
		   poll_table *wait);
int wsem_sem_init(void);
void wsem_sem_exit(void);
/* ... its queue, grants and wake-ups, for the files that call it */
__poll_t wsem_events(const struct wsem *sem);
void wsem_enqueue(struct wsem *sem, struct wsem_waiter *w);
bool wsem_queue_and_unlock(struct wsem *sem, struct wsem_waiter *w)
	__releases(sem->lock);
void wsem_replace_waiter(struct wsem_waiter *old, struct wsem_waiter *w);
void wsem_remove_waiter(struct wsem *sem, struct wsem_waiter *w, int result,
			u64 now);
void wsem_end_wait(struct wsem *sem, struct wsem_waiter *w, int result,
		   u64 now, struct wsem_wake *wake);
bool wsem_abandoned(const struct wsem_waiter *w);
void wsem_free_parked(struct wsem_waiter *w);
void wsem_tell_demand(struct wsem *sem, u32 mask);
void wsem_unlock_and_wake(struct wsem *sem, __poll_t before,
			  struct wsem_wake *wake) __releases(sem->lock);
bool wsem_leave(struct wsem *sem, struct wsem_waiter *w, int why);
ktime_t wsem_now(clockid_t clock);
bool wsem_grant_waiters(struct wsem *sem, struct wsem_wake *wake);
void wsem_wake_batch(struct wsem *sem, struct wsem_wake *wake)
	__releases(sem->lock) __acquires(sem->lock);
/* ... and a gang as one tree's grant walk sees it */
bool wsem_gang_weights_fit(struct wsem_gang *g, struct wsem *root);
bool wsem_gang_fits(struct wsem_gang *g, struct wsem *root);
void wsem_poke_gang(struct wsem_gang *g, int fail, struct wsem_wake *wake);
void wsem_gang_look_later(struct wsem_gang *g);

/* wait.c: requests that may sleep */
int wsem_acquire(struct wsem_handle *h, u64 weight, u64 flags,
		 clockid_t clock, ktime_t deadline);
int wsem_wait_idle(struct wsem_handle *h, u64 flags, clockid_t clock,
		   ktime_t deadline);
/* ... and how a sleeper sleeps and learns that it must stop */
int wsem_wait_check(bool timed_out);
bool wsem_sleep(clockid_t clock, ktime_t *deadline);

/* gang.c: gangs, under all their trees' locks; parked gangs */
int wsem_acquire_many(struct wsem_handle **hs, const u64 *weights,
		      unsigned int n, u64 flags, clockid_t clock,
		      ktime_t deadline);
bool wsem_gang_can_fit(const struct wsem_gang *g, const struct wsem *root);
void wsem_gang_unpark_handle(struct wsem_handle *h);

/* shrink.c: resizes */
int wsem_set_capacity(struct wsem *sem, u64 capacity);
void wsem_resize(struct wsem *sem, u64 capacity, struct wsem_wake *wake);

/* loan.c: what handles lend, until when */
int wsem_lend(struct wsem_handle *h, u64 capacity, bool end_holders,
	      u64 deadline, bool may_raise);
void wsem_withdraw_loan(struct wsem *sem, struct wsem_handle *h,
			struct wsem_wake *wake);
void wsem_loan_free(struct wsem_handle *h);

/* async.c: asynchronous requests */
void wsem_queue_async(struct wsem *sem, struct wsem_handle *h, u64 weight)
	__releases(sem->lock);
int wsem_async_end(struct wsem_handle *h, bool cancel);

/* holders.c: what is noted of holders */
void wsem_note_holder(struct wsem_handle *h, struct task_struct *task);
void wsem_handle_forget(struct wsem_handle *h);
void wsem_set_label(struct wsem_handle *h, const char *label);

/*
 * Test builds only (Kbuild: WSEM_TEST_KNOBS=y, as make check builds the
 * module; params.c): a granter pauses once, when armed through the test_tell_delay_ms
 * parameter, between dropping sem->lock and telling whom it granted, so
 * that tests reach the races of that window every run.  Likewise a sleeper
 * that parked (wsem_park()), armed through test_park_delay_ms, before it
 * returns to run its task work (ended early by a signal sent to it); and
 * the parameter test_parked counts the parked waiters not yet freed.
 * test_cgroup_tryget_fail makes the next reference to a new holder's
 * cgroup fail (wsem_note_holder()).
 * test_shrink_walked counts the waiters that shrinks' failing walks looked
 * at (wsem_fail_overweight()), and test_regrants the queues whose first
 * waiter a shrink failed (wsem_note_regrant());
 * test_view_most_looked, the most entries a
 * holders view looked at in one hold of a tree's lock (wsem_holders()),
 * and test_view_delay_ms holds the next view that long after its first
 * hold, so that the lists change under a view in pieces every run;
 * test_view_batch makes views go in smaller pieces (the fuzzer's).
 * test_js_flush_delay_ms holds the next close of a jobserver endpoint
 * descriptor that long before it looks for the process's other
 * descriptors (wsem_js_flush()).
 * test_loan_expiry_delay_ms holds the next work item of a loan's deadline
 * that long before it looks (wsem_loan_expire()), so that a LEND comes
 * after the deadline and before the withdrawal every run.
 * test_revalidate_hold holds the next RCU-walk revalidation of a
 * semaphore's file (wsemfs_d_revalidate()) while the test ends the
 * inode it looks at, so that the walk meets an inode on its way to
 * destroy_inode() every run.
 * test_publish_delay_us pauses every rewrite of a counters page
 * (wsem_publish()) between two of its fields, its @seq odd, so that a
 * reader meets a page in the middle of a write every run.
 * test_spin_to_deadline makes a head waiter with a deadline poll until it
 * (WSEM_TEST_SPIN_MAX_NS at most), ending only for its grant or a signal,
 * not for its budget or another task that wants its CPU (wsem_spin()): a
 * loaded host ends most polls that way, and tests of the other ends
 * would pass only now and then.
 */
#define WSEM_TEST_SPIN_MAX_NS	(100 * NSEC_PER_MSEC)
#ifdef WSEM_TEST_KNOBS
extern const struct kernel_param_ops wsem_test_counter_ops;
void wsem_test_pause(void);
void wsem_test_park_pause(void);
void wsem_test_count_parked(int delta);
bool wsem_test_cgroup_fail(void);
void wsem_test_count_walked(void);
void wsem_test_count_regrant(void);
void wsem_test_note_view_hold(unsigned int looked);
void wsem_test_view_pause(void);
unsigned int wsem_test_view_batch(unsigned int batch);
void wsem_test_js_flush_pause(void);
bool wsem_test_spin_to_deadline(void);
void wsem_test_loan_expiry_pause(void);
void wsem_test_revalidate_hold(void);
void wsem_test_publish_pause(void);
#else
static inline void wsem_test_pause(void)
{
}

static inline void wsem_test_park_pause(void)
{
}

static inline void wsem_test_count_parked(int delta)
{
}

static inline bool wsem_test_cgroup_fail(void)
{
	return false;
}

static inline void wsem_test_count_walked(void)
{
}

static inline void wsem_test_count_regrant(void)
{
}

static inline void wsem_test_note_view_hold(unsigned int looked)
{
}

static inline void wsem_test_view_pause(void)
{
}

static inline unsigned int wsem_test_view_batch(unsigned int batch)
{
	return batch;
}

static inline void wsem_test_js_flush_pause(void)
{
}

static inline bool wsem_test_spin_to_deadline(void)
{
	return false;
}

static inline void wsem_test_loan_expiry_pause(void)
{
}

static inline void wsem_test_revalidate_hold(void)
{
}

static inline void wsem_test_publish_pause(void)
{
}
#endif

/*
 * The grant's, the uncontended acquire's and the release's steps, inline
 * in sem.c, wait.c and handle.c: on the path of every acquire and release,
 * where a call costs what the step does.
 */

/*
 * A page that mmap(2) shows userspace (struct wsem_counters, struct
 * wsem_tree_counters, uapi) is written as raw_write_seqcount_begin() and
 * raw_write_seqcount_end() write, but on the page's own @seq, since its
 * reader is userspace, not read_seqcount_begin(): @seq odd, the fields,
 * @seq even again.  The caller is the only writer: it holds the tree's
 * lock, or nothing else can reach the page any more (wsem_free()).
 *
 * The reader (uapi's example, libwsem's wsem_read_counters()) loads @seq
 * with acquire, then the fields, then an acquire fence and @seq again, and
 * retries while @seq is odd or has changed.  The begin's barrier orders
 * @seq odd before the fields: a reader that sees one of the new fields
 * sees @seq changed after its fence.  The end's orders the fields before
 * @seq even: a reader that loads the new even @seq sees every new field.
 */
static inline void wsem_page_write_begin(u32 *seq)
{
	WRITE_ONCE(*seq, *seq + 1);
	smp_wmb();	/* pairs with the reader's fence before its second load */
}

static inline void wsem_page_write_end(u32 *seq)
{
	smp_wmb();	/* pairs with the reader's acquire load of @seq */
	WRITE_ONCE(*seq, *seq + 1);
}

/*
 * Rewrite @sem's counters page, if it has one (struct wsem_counters,
 * uapi).  sem->lock makes us the only writer; userspace readers retry.
 */
static inline void wsem_publish(struct wsem *sem)
{
	struct wsem_counters *c = sem->counters;

	lockdep_assert_held(sem->lock);

	if (likely(!c))
		return;
	wsem_page_write_begin(&c->seq);
	WRITE_ONCE(c->capacity, sem->capacity);
	wsem_test_publish_pause();
	WRITE_ONCE(c->used, sem->used);
	WRITE_ONCE(c->waiters, sem->nr_waiters);
	WRITE_ONCE(c->queued_weight, sem->queued_weight);
	wsem_page_write_end(&c->seq);
}

void wsem_publish_tree(struct wsem *root, u32 flags);

/*
 * The capacity of @sem, a release on it, or its tree's queue changed: keep
 * the tree's flags true (struct wsem_tree_counters, uapi), @sem's overhang
 * counted in its root's @nr_over, and the waiters of the tree read from
 * the root's count, which takes in every queued request of the tree.
 * Called where a flag can change: wsem_resize(), a release on a semaphore
 * that is over (wsem_sub_held()), and for the root by wsem_enqueue() and
 * wsem_dequeue().  Not by a grant, which fits every semaphore of its line
 * (wsem_fits()): it never puts one over its capacity, nor changes the
 * queue.
 */
static inline void wsem_note_tree(struct wsem *sem)
{
	struct wsem *root = sem->root;
	bool over = sem->used > sem->capacity;
	u32 flags;

	lockdep_assert_held(sem->lock);

	if (unlikely(over != sem->over)) {
		sem->over = over;
		if (over)
			root->nr_over++;
		else
			root->nr_over--;
	}
	flags = (root->nr_waiters ? WSEM_TREE_WAITING : 0) |
		(root->nr_over ? WSEM_TREE_OVER : 0);
	if (unlikely(flags != root->tree_flags))
		wsem_publish_tree(root, flags);
}

/*
 * The used weight or the queue changed: the demand event is new, and the
 * counters page shows it.  Called after each change is whole.
 */
static inline void wsem_note_demand(struct wsem *sem)
{
	WRITE_ONCE(sem->demand_seq, sem->demand_seq + 1);
	wsem_publish(sem);
}

/* @task, acquiring through @h, is granted @weight, on @sem and above. */
static inline void wsem_add_held(struct wsem *sem, struct wsem_handle *h,
				 u64 weight, struct task_struct *task)
{
	struct wsem *s;

	for (s = sem; s; s = s->parent) {
		s->used += weight;
		wsem_note_demand(s);
	}
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
static inline void wsem_sub_held(struct wsem *sem, struct wsem_handle *h,
				 u64 weight)
{
	struct wsem *s;

	if (!weight)
		return;
	for (s = sem; s; s = s->parent) {
		s->used -= weight;
		wsem_note_demand(s);
		if (unlikely(s->over))
			wsem_note_tree(s);
	}
	h->held -= weight;
	if (!h->held)
		sem->nr_holders--;
}

/*
 * Which of @sem and its ancestors have pollers, looked at as sem.c's
 * wsem_has_pollers() does: bit i for the one i levels up.  Their demand
 * changed (a grant at once, a request queued) and wsem_tell_demand()
 * tells them once @sem->lock is dropped.
 */
static inline u32 wsem_demand_pollers(struct wsem *sem)
{
	struct wsem *s;
	u32 mask = 0;
	int i = 0;

	lockdep_assert_held(sem->lock);

	for (s = sem; s; s = s->parent) {
		/* Ordered by @sem->lock, as wsem_has_pollers() says. */
		if (waitqueue_active(&s->pollers))
			mask |= BIT(i);
		i++;
	}
	return mask;
}

/* perm.c: permission */
int wsem_permission(const struct wsem *sem, int mask, bool audit);
bool wsem_owner_or_capable(const struct wsem *sem);

/* views.c: holders and text, as the caller may see them */
int wsem_holders(struct wsem *sem, u32 count, struct wsem_holder **out,
		 u32 *holders, u32 *waiters, u32 *children);
ssize_t wsem_text(struct wsem *sem, struct wsem_handle *h, char **text);

/* ns.c: names, namespaces and their lifetime */
int wsem_ns_open(struct wsem_handle *h, const char *name, u64 flags,
		 u64 capacity, umode_t mode, int mask, struct wsem *parent);
int wsem_ns_open_anon(struct wsem_handle *h, u64 flags, u64 capacity,
		      struct wsem *parent);
int wsem_ns_unlink(const char *name);
int wsem_ns_list(struct wsem_stat **stats, u32 count, u64 *total);
void wsem_put(struct wsem *sem);
int wsem_ns_init(void);
void wsem_ns_mounted(struct wsem_ns *wns, struct super_block *sb);
void wsem_ns_unmounting(struct wsem_ns *wns, struct super_block *sb);
void wsem_ns_exit(void);
struct wsem_ns *wsem_ns_get(bool create);
void wsem_ns_put(struct wsem_ns *wns);
struct wsem *wsem_ns_find_get(struct wsem_ns *wns, const char *name);
int wsem_ns_unlink_sem(struct wsem_ns *wns, struct wsem *sem);
void wsem_ns_set_owner(struct wsem_ns *wns, struct wsem *sem,
		       unsigned int valid, kuid_t uid, kgid_t gid,
		       umode_t mode);
int wsem_ns_names_at(struct wsem_ns *wns, loff_t pos, char *names, int *ids,
		     int max);
bool wsem_ns_is_current(const struct wsem_ns *wns);
unsigned int wsem_ns_inum(const struct wsem_ns *wns);

/* quota.c: how many semaphores each user has */
void wsem_users_init(struct wsem_users *users);
unsigned int wsem_users_count(struct wsem_users *users, kuid_t uid);
struct wsem_user *wsem_users_add(struct wsem_users *users, kuid_t uid,
				 unsigned int max);
void wsem_users_drop(struct wsem_users *users, struct wsem_user *u);
struct wsem_user *wsem_child_charge(kuid_t euid);
void wsem_child_uncharge(struct wsem_user *u);
kuid_t wsem_charged_uid(const struct user_namespace *owner, kuid_t euid);

/* fs.c: wsemfs */
int wsem_fs_init(const struct file_operations *fops);
void wsem_fs_exit(void);

/* params.c: module parameters */
extern unsigned int max_sems_per_ns;
extern unsigned int max_sems_per_user;
extern unsigned int max_tree_size;
extern unsigned int max_children_per_user;
extern unsigned int spin_ns;

#endif /* _WSEM_INTERNAL_H */
