// SPDX-License-Identifier: GPL-2.0
/*
 * wsem's jobserver endpoints: a named semaphore shared token by token with
 * the build tools that speak the GNU make jobserver protocol.
 *
 *	MAKEFLAGS=" -j8 --jobserver-auth=fifo:/sys/fs/wsem/@jobserver/build"
 *	make				# or: wsem run build --jobserver -- make
 *
 * The endpoint of semaphore NAME is WSEM_JOBSERVER_DIR/NAME in wsemfs
 * (fs.c), a fifo to stat(2) with wsem's own file operations: read(2) of
 * one byte acquires one unit for the reading process, write(2) of a byte
 * gives one back.  Opening it in any mode needs read and write permission
 * on the semaphore, and a mount that is not read-only.
 *
 * Tokens belong to a process (a thread group) and a semaphore, not to an
 * open file: make reads from one descriptor and writes to another, and
 * its reads may come through epoll, io_uring's worker threads or a child
 * that shares its file table.  Per semaphore, a struct wsem_js shared by
 * its open endpoint files keeps one struct wsem_js_proc per process that
 * read or polled, in a hash table keyed by its thread group's struct pid.
 * Each owns an internal handle bound to the semaphore, so that its tokens
 * are the handle's held weight (counted in used, shown by the holders view
 * under the label "jobserver"), and each process has one request in the
 * semaphore's FIFO queue at most: the handle's asynchronous request.
 *
 * A blocking read waits for that request, so a read that a signal
 * handler restarts finds its place in the queue again; a non-blocking one
 * takes a granted request, or tries (no barging).  ->poll() queues the
 * request too: SPEC wants a poller to keep its place in the queue.  So it
 * is not a pure report as eventfd's is: on a process's first poll it
 * allocates the process's entry, and it takes js->lock, a mutex, which
 * nothing holds while it waits for epoll's ep->mtx.  A unit granted to a
 * request and not read within WSEM_JS_RESERVE, while no thread of the
 * process is blocked in a read for it, goes back (the next poll queues
 * anew), so readiness is a reservation, not a hoard.  A kernel
 * thread (aio's poll, re-polled from a kworker) is no process: its poll
 * only reports "readable" as a hint and queues nothing, and its read
 * fails with EOPNOTSUPP (mainline io_uring before 5.12 runs a blocking
 * read in such a thread).  Entries are made only for a process that has
 * a descriptor of the endpoints, which its last close then releases: one
 * with none (an epoll set or an io_uring fixed file kept after the close)
 * is answered as a kernel thread's poll is, and its read fails with
 * EBADF.
 *
 * Pollers sleep on one of WSEM_JS_BUCKETS wait queues, their process's
 * bucket: each entry takes a bucket no other entry uses while there is
 * one, else shares the one a hash of its process picks.  A grant wakes the
 * pollers of its process's bucket only, not the herd of every process,
 * and up to WSEM_JS_BUCKETS processes none but its own.  A poll registers on that one
 * queue alone: aio's poll takes no more than one.  A process whose request
 * a poll queued but which never registered a poller itself (it waits on
 * an epoll set that another process made) is woken through every bucket.
 *
 * What a process holds through the endpoint goes back (wsem_js_release())
 * when it closes its last descriptor of the semaphore's endpoint, in any
 * of its threads' file tables (->flush, which looks through them), or
 * when it dies, however it dies and whoever holds its file table: an
 * entry waits on its thread group's pidfd wait queue, woken when the
 * whole group has exited.  What is left goes back when the semaphore's
 * last endpoint file is released.
 */
#include <linux/bits.h>
#include <linux/err.h>
#include <linux/fdtable.h>
#include <linux/fs.h>
#include <linux/hash.h>
#include <linux/jiffies.h>
#include <linux/mount.h>
#include <linux/mutex.h>
#include <linux/list.h>
#include <linux/pid.h>
#include <linux/poll.h>
#include <linux/refcount.h>
#include <linux/sched/debug.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include "wsem.h"

/* The byte a read gives: GNU make's token.  Any byte written is one. */
#define WSEM_JS_TOKEN	'+'

/* How long a unit granted to a process's request waits to be read. */
#define WSEM_JS_RESERVE	HZ

#define WSEM_JS_HASH_BITS	10
#define WSEM_JS_BUCKETS		BIT(WSEM_JS_HASH_BITS)

/**
 * struct wsem_js - the jobserver state of one semaphore
 * @sem: the semaphore (holds a reference)
 * @nr_files: its open endpoint files; protected by wsem_js_lock
 * @ref: one for the open files together, one per struct wsem_js_proc
 * @lock: protects @procs and the state of each entry on it
 * @procs: struct wsem_js_proc by a hash of its thread group, for each
 *	process that read or polled and has neither closed its last
 *	descriptor nor died: a lookup looks at one entry or two, however
 *	many processes there are
 * @bucket_used: the buckets taken by an entry on @procs as its own;
 *	protected by @lock
 * @buckets: every poller (wsem_js_poll()), by its process's entry
 * @wake_all: wakes every bucket that has a poller, for the grant of a
 *	process that registered no poller of its own (wsem_js_relay())
 */
struct wsem_js {
	struct wsem *sem;
	unsigned int nr_files;
	refcount_t ref;
	struct mutex lock;	/* see the kernel-doc above */
	struct hlist_head procs[WSEM_JS_BUCKETS];
	DECLARE_BITMAP(bucket_used, WSEM_JS_BUCKETS);
	wait_queue_head_t buckets[WSEM_JS_BUCKETS];
	struct work_struct wake_all;
};

/**
 * struct wsem_js_proc - what one process holds through the endpoint
 * @node: in @js->procs until released
 * @tgid: the process, its thread group's pid (holds a reference)
 * @js: the semaphore's jobserver state (holds a reference)
 * @h: the internal handle, bound to the semaphore: the process's tokens
 *	are its held weight, its request the handle's asynchronous request
 * @relay: on @h->wqh: the end of the request wakes the process's pollers
 *	and starts the reservation's clock
 * @death: on @tgid's pidfd wait queue until released: the process's death
 *	queues @reap
 * @reap: releases the entry once its process is dead
 * @expire: gives back a granted unit not read within WSEM_JS_RESERVE
 * @ref: one while on @js->procs, one for each caller using it, one for
 *	each of @reap and @expire while queued
 * @tokens: units read and not written back; protected by @js->lock
 * @ready: units granted to the request and taken by poll, not read yet
 *	(0 or 1); protected by @js->lock
 * @readers: threads blocked in a read, waiting for the request; protected
 *	by @js->lock
 * @granted: jiffies when the request was last granted
 * @bucket: where its pollers wait, in @js->buckets
 * @own_bucket: @bucket is its own, marked in @js->bucket_used
 * @registered: the process registered a poller on its bucket
 * @polled: its request was queued by a poll, not by a read
 * @closed: released: off @js->procs, holding nothing, its request
 *	cancelled; written under @js->lock and @h->wqh.lock
 * @fd_hint: the descriptor of the endpoint that the last close found it
 *	still had, where the next close starts looking; under @js->lock
 */
struct wsem_js_proc {
	struct hlist_node node;
	struct pid *tgid;
	struct wsem_js *js;
	struct wsem_handle *h;
	wait_queue_entry_t relay;
	wait_queue_entry_t death;
	struct work_struct reap;
	struct delayed_work expire;
	refcount_t ref;
	u64 tokens;
	u64 ready;
	unsigned int readers;
	unsigned long granted;
	unsigned int bucket;
	bool own_bucket;
	bool registered;
	bool polled;
	bool closed;
	unsigned int fd_hint;
};

/* The semaphores with an open endpoint file, by id: their struct wsem_js. */
static DEFINE_MUTEX(wsem_js_lock);
static DEFINE_XARRAY(wsem_js_sems);

/* Runs @reap, @expire and @wake_all; drained at module exit. */
static struct workqueue_struct *wsem_js_wq;

static void wsem_js_unref(struct wsem_js *js)
{
	if (!refcount_dec_and_test(&js->ref))
		return;
	mutex_destroy(&js->lock);
	wsem_put(js->sem);
	kvfree(js);
}

static wait_queue_head_t *wsem_js_bucket(struct wsem_js_proc *p)
{
	return &p->js->buckets[p->bucket];
}

/*
 * A bucket for a new entry @p: a free one, else the one of a hash of its
 * process.  A freed bucket may still hold pollers of the entry that had
 * it (an epoll set, a poll in progress): they are woken for nothing at
 * most, and a poll that comes back for its process finds its new entry.
 */
static void wsem_js_take_bucket(struct wsem_js *js, struct wsem_js_proc *p)
{
	lockdep_assert_held(&js->lock);

	p->bucket = find_first_zero_bit(js->bucket_used, WSEM_JS_BUCKETS);
	p->own_bucket = p->bucket < WSEM_JS_BUCKETS;
	if (p->own_bucket)
		__set_bit(p->bucket, js->bucket_used);
	else
		p->bucket = hash_ptr(p->tgid, WSEM_JS_HASH_BITS);
}

/*
 * Start the reservation's clock: @expire runs WSEM_JS_RESERVE from now.
 * Called with @p->h->wqh.lock held, which orders it with @p->closed.
 */
static void __wsem_js_arm(struct wsem_js_proc *p)
{
	if (p->closed)
		return;
	WRITE_ONCE(p->granted, jiffies);
	/* Not 0: @p is on js->procs while not closed. */
	refcount_inc(&p->ref);
	/* Pending already: that one has its reference. */
	if (mod_delayed_work(wsem_js_wq, &p->expire, WSEM_JS_RESERVE))
		refcount_dec(&p->ref);
}

static void wsem_js_arm(struct wsem_js_proc *p)
{
	unsigned long flags;

	spin_lock_irqsave(&p->h->wqh.lock, flags);
	__wsem_js_arm(p);
	spin_unlock_irqrestore(&p->h->wqh.lock, flags);
}

/*
 * @wake_all: every bucket that has a poller, woken in process context, one
 * bucket's lock at a time with interrupts on.
 */
static void wsem_js_wake_all(struct work_struct *work)
{
	struct wsem_js *js = container_of(work, struct wsem_js, wake_all);
	unsigned int i;

	for (i = 0; i < WSEM_JS_BUCKETS; i++) {
		/*
		 * A poller queued itself on its bucket before it looked at
		 * its request under the semaphore's lock, which the granter
		 * took before queueing this work: ordered by that lock and
		 * the queueing, a bucket empty here had nobody to wake.
		 */
		if (waitqueue_active(&js->buckets[i]))
			wake_up_poll(&js->buckets[i], EPOLLIN | EPOLLRDNORM);
		cond_resched();
	}
	wsem_js_unref(js);
}

/*
 * The end of a process's request (or its release) wakes the pollers of its
 * bucket, or those of every bucket (@js->wake_all, a work item: this runs
 * under @p->h->wqh.lock with interrupts off) if a poll queued the request
 * of a process that registered none (see the top); a grant starts the
 * reservation's clock.  A blocked reader sleeps on @p->h->wqh itself.
 */
static int wsem_js_relay(struct wait_queue_entry *wq, unsigned int mode,
			 int sync, void *key)
{
	struct wsem_js_proc *p = container_of(wq, struct wsem_js_proc, relay);
	struct wsem_js *js = p->js;

	__wsem_js_arm(p);
	if (READ_ONCE(p->registered) || !READ_ONCE(p->polled)) {
		wake_up_poll(wsem_js_bucket(p), key_to_poll(key));
		return 0;
	}
	/* Not 0: @p holds a reference.  Pending already: that one has its. */
	refcount_inc(&js->ref);
	if (!queue_work(wsem_js_wq, &js->wake_all))
		refcount_dec(&js->ref);
	return 0;
}

/* Has the thread group of @tgid exited, every thread of it? */
static bool wsem_js_dead(struct pid *tgid)
{
	struct task_struct *leader;
	bool dead;

	rcu_read_lock();
	leader = pid_task(tgid, PIDTYPE_TGID);
	dead = !leader ||
	       (READ_ONCE(leader->exit_state) && thread_group_empty(leader));
	rcu_read_unlock();
	return dead;
}

/*
 * A wake-up of the pidfd wait queue: a thread group exited.  Called with
 * tasklist_lock held: only queues @reap, which looks.
 */
static int wsem_js_death(struct wait_queue_entry *wq, unsigned int mode,
			 int sync, void *key)
{
	struct wsem_js_proc *p = container_of(wq, struct wsem_js_proc, death);

	/* @death is off the queue before the last reference goes. */
	refcount_inc(&p->ref);
	if (!queue_work(wsem_js_wq, &p->reap))
		refcount_dec(&p->ref);
	return 0;
}

static void wsem_js_reap(struct work_struct *work);
static void wsem_js_expire(struct work_struct *work);

/* A new entry for the calling process, with its handle bound and labelled. */
static struct wsem_js_proc *wsem_js_proc_alloc(struct wsem_js *js)
{
	struct wsem_js_proc *p = kzalloc(sizeof(*p), WSEM_GFP);

	if (!p)
		return NULL;
	p->h = wsem_handle_alloc();
	if (!p->h) {
		kfree(p);
		return NULL;
	}
	wsem_bind(p->h, js->sem);	/* fresh: cannot be bound */
	wsem_set_label(p->h, "jobserver");
	p->tgid = get_pid(task_tgid(current));
	p->js = js;
	refcount_inc(&js->ref);
	refcount_set(&p->ref, 1);
	INIT_WORK(&p->reap, wsem_js_reap);
	INIT_DELAYED_WORK(&p->expire, wsem_js_expire);
	/* After the bind, which would relay the semaphore's pollers to us. */
	init_waitqueue_func_entry(&p->relay, wsem_js_relay);
	add_wait_queue(&p->h->wqh, &p->relay);
	init_waitqueue_func_entry(&p->death, wsem_js_death);
	add_wait_queue(&p->tgid->wait_pidfd, &p->death);
	return p;
}

/*
 * Drop a reference to @p; the last one closes its handle (which gives back
 * anything left) and frees it.  Nothing can queue @reap or @expire by
 * then: a queued one holds a reference, and @p was released.
 */
static void wsem_js_proc_put(struct wsem_js_proc *p)
{
	struct wsem_js *js = p->js;

	if (!refcount_dec_and_test(&p->ref))
		return;
	/* Under h->wqh.lock: no wake-up relays to @p after this. */
	remove_wait_queue(&p->h->wqh, &p->relay);
	wsem_handle_close(p->h);
	put_pid(p->tgid);
	kfree(p);
	wsem_js_unref(js);
}

static struct hlist_head *wsem_js_procs(struct wsem_js *js, struct pid *tgid)
{
	return &js->procs[hash_ptr(tgid, WSEM_JS_HASH_BITS)];
}

/* The calling process's entry in @js, or NULL. */
static struct wsem_js_proc *wsem_js_proc_find(struct wsem_js *js)
{
	struct pid *tgid = task_tgid(current);
	struct wsem_js_proc *p;

	lockdep_assert_held(&js->lock);

	hlist_for_each_entry(p, wsem_js_procs(js, tgid), node)
		if (p->tgid == tgid)
			return p;
	return NULL;
}

/* iterate_fd(): if @file is an endpoint file of @js, its descriptor + 1. */
static int wsem_js_match(const void *js, struct file *file, unsigned int fd)
{
	return file->f_op == &wsem_js_fops && file->private_data == js ?
	       fd + 1 : 0;
}

/*
 * Is there a descriptor of @js's endpoints in @files?  Looked for from
 * @hint on, then from 0: a process that closes its descriptors in turn,
 * as an exit does, finds the next one at once instead of walking past
 * every slot it closed before.  A descriptor found is the new @hint.
 */
static bool wsem_js_find_fd(struct files_struct *files, struct wsem_js *js,
			    unsigned int *hint)
{
	int fd = iterate_fd(files, *hint, wsem_js_match, js);

	if (!fd && *hint)
		fd = iterate_fd(files, 0, wsem_js_match, js);
	if (fd)
		*hint = fd - 1;
	return fd;
}

/*
 * Does the calling process keep a descriptor of @js's endpoints, in
 * @closing (the table a close is on, which an exiting task no longer
 * points at; NULL outside a close) or in the file table of any of its
 * threads?  Looked for from @hint on, as wsem_js_find_fd().
 */
static bool wsem_js_has_descriptor(struct wsem_js *js, unsigned int *hint,
				   struct files_struct *closing)
{
	struct task_struct *t;
	bool found = false;

	lockdep_assert_held(&js->lock);

	if (closing && wsem_js_find_fd(closing, js, hint))
		return true;
	rcu_read_lock();
	for_each_thread(current, t) {
		task_lock(t);
		if (t->files && t->files != closing)
			found = wsem_js_find_fd(t->files, js, hint);
		task_unlock(t);
		if (found)
			break;
	}
	rcu_read_unlock();
	return found;
}

/*
 * The calling process's entry in @js, with a reference; made if there is
 * none and @create, for a process that has a descriptor of @js's
 * endpoints: one that has none (it reads through an io_uring fixed file,
 * or polls through an epoll set, after closing its descriptor) would hold
 * its tokens under an entry that no close gives back.  Return: the entry,
 * NULL (none, !@create), ERR_PTR(-EBADF) (no descriptor) or
 * ERR_PTR(-ENOMEM).
 */
static struct wsem_js_proc *wsem_js_proc_get(struct wsem_js *js, bool create)
{
	struct wsem_js_proc *p;
	unsigned int hint = 0;

	mutex_lock(&js->lock);
	p = wsem_js_proc_find(js);
	if (!p && create) {
		if (!wsem_js_has_descriptor(js, &hint, NULL)) {
			mutex_unlock(&js->lock);
			return ERR_PTR(-EBADF);
		}
		p = wsem_js_proc_alloc(js);
		if (!p) {
			mutex_unlock(&js->lock);
			return ERR_PTR(-ENOMEM);
		}
		p->fd_hint = hint;
		wsem_js_take_bucket(js, p);
		hlist_add_head(&p->node, wsem_js_procs(js, p->tgid));
	}
	if (p)
		refcount_inc(&p->ref);
	mutex_unlock(&js->lock);
	return p;
}

/*
 * Release @p: off @js->procs, everything it holds given back, its request
 * out of the queue.  The caller then wakes @p's readers and pollers
 * (wsem_js_wake_released()) and drops the reference of @js->procs, which
 * is now its own.  Return: false if @p was released already.
 */
static bool wsem_js_release(struct wsem_js *js, struct wsem_js_proc *p)
{
	u64 n;

	lockdep_assert_held(&js->lock);

	if (p->closed)
		return false;
	hlist_del(&p->node);
	if (p->own_bucket)
		__clear_bit(p->bucket, js->bucket_used);
	spin_lock_irq(&p->h->wqh.lock);
	p->closed = true;
	spin_unlock_irq(&p->h->wqh.lock);
	n = p->tokens + p->ready;
	p->tokens = 0;
	p->ready = 0;
	/* Granted meanwhile: the handle holds that one too. */
	if (wsem_async_end(p->h, true) == -EALREADY)
		n++;
	if (n)
		WARN_ON_ONCE(wsem_release(p->h, n));
	remove_wait_queue(&p->tgid->wait_pidfd, &p->death);
	/* A pending one has a reference; @js->procs's is not dropped yet. */
	if (cancel_delayed_work(&p->expire))
		refcount_dec(&p->ref);
	return true;
}

/*
 * After wsem_js_release(): a thread of the process blocked in a read
 * starts again with a new entry, a poller polls again; then the
 * reference of @js->procs goes.
 */
static void wsem_js_wake_released(struct wsem_js_proc *p)
{
	wake_up_poll(&p->h->wqh, EPOLLIN | EPOLLRDNORM);
	wsem_js_proc_put(p);
}

/* @reap: the process of @p may have died; if it has, release @p. */
static void wsem_js_reap(struct work_struct *work)
{
	struct wsem_js_proc *p = container_of(work, struct wsem_js_proc, reap);
	struct wsem_js *js = p->js;
	bool released = false;

	if (wsem_js_dead(p->tgid)) {
		mutex_lock(&js->lock);
		released = wsem_js_release(js, p);
		mutex_unlock(&js->lock);
	}
	if (released)
		wsem_js_wake_released(p);
	wsem_js_proc_put(p);
}

/* @expire: a unit granted WSEM_JS_RESERVE ago and not read goes back. */
static void wsem_js_expire(struct work_struct *work)
{
	struct wsem_js_proc *p = container_of(to_delayed_work(work),
					      struct wsem_js_proc, expire);
	struct wsem_js *js = p->js;
	unsigned long due;

	mutex_lock(&js->lock);
	if (!p->closed && !p->ready && !wsem_async_end(p->h, false))
		p->ready = 1;
	due = READ_ONCE(p->granted) + WSEM_JS_RESERVE;
	/* A blocked reader is on its way to it: look again later. */
	if (p->readers)
		due = jiffies + WSEM_JS_RESERVE;
	if (!p->closed && p->ready) {
		if (time_after_eq(jiffies, due)) {
			p->ready = 0;
			WARN_ON_ONCE(wsem_release(p->h, 1));
		} else {
			/* Granted again since this was queued, or read soon. */
			refcount_inc(&p->ref);
			if (!queue_delayed_work(wsem_js_wq, &p->expire,
						due - jiffies))
				refcount_dec(&p->ref);
		}
	}
	mutex_unlock(&js->lock);
	wsem_js_proc_put(p);
}

/* Is the request of @p no longer waiting in the queue (or @p released)? */
static bool wsem_js_request_done(struct wsem_js_proc *p)
{
	if (READ_ONCE(p->closed) || !READ_ONCE(p->h->requested))
		return true;
	/* Pairs with wsem_end_wait()'s release: the grant is seen whole. */
	return smp_load_acquire(&p->h->async.status) != WSEM_WAITING;
}

/**
 * wsem_js_take() - one unit for the calling process
 * @js: the semaphore's jobserver state
 * @p: the calling process's entry
 * @nonblock: never sleep
 *
 * A unit taken by poll, or the one granted to the process's request,
 * else, if it has none queued: with @nonblock, a try-acquire (no
 * barging); blocking, the request, queued at the tail.  Blocking, it then
 * waits for the request; a signal leaves the request in its place, where
 * the restarted read finds it.
 *
 * Context: Process context, may sleep unless @nonblock.
 * Return: 0 (counted in @p->tokens); -EAGAIN with @nonblock;
 * -ERESTARTSYS on a signal; -ESTALE if @p was released meanwhile: try
 * again with a new entry.
 */
static int __sched wsem_js_take(struct wsem_js *js, struct wsem_js_proc *p,
				bool nonblock)
{
	int ret;

	for (;;) {
		mutex_lock(&js->lock);
		if (p->closed) {
			ret = -ESTALE;
		} else if (p->ready) {
			p->ready--;
			ret = 0;
		} else {
			ret = wsem_async_end(p->h, false);
			if (ret == -ENOENT) {
				WRITE_ONCE(p->polled, false);
				ret = wsem_acquire(p->h, 1, nonblock ?
						   WSEM_ACQUIRE_TRY :
						   WSEM_ACQUIRE_ASYNC,
						   CLOCK_MONOTONIC, KTIME_MAX);
			}
		}
		if (!ret)
			p->tokens++;
		if (ret == -EINPROGRESS && !nonblock)
			p->readers++;
		mutex_unlock(&js->lock);
		if (ret != -EINPROGRESS)
			return ret;
		if (nonblock)
			return -EAGAIN;
		ret = wait_event_interruptible(p->h->wqh,
					       wsem_js_request_done(p));
		mutex_lock(&js->lock);
		p->readers--;
		mutex_unlock(&js->lock);
		if (ret)
			return ret;
	}
}

/* Can the caller own tokens?  A kernel thread is nobody's process. */
static bool wsem_js_caller_is_process(void)
{
	return !(current->flags & PF_KTHREAD);
}

/**
 * wsem_js_read() - read(2): one token
 * @file: an endpoint file
 * @buf: where the token byte goes
 * @count: 0 reads nothing; more than 1 reads one byte all the same
 * @ppos: unused (a stream)
 *
 * A token taken through an entry released meanwhile (its process closed
 * its last descriptor in another thread) is not the process's: it went
 * back with that entry, and the read starts again with a new one.
 *
 * A process with no descriptor of the semaphore's endpoints (it reads
 * through an io_uring fixed file after closing its descriptor) gets no
 * token: nothing it read would go back at a close.
 *
 * Context: Process context, may sleep unless O_NONBLOCK.
 * Return: 1; 0 for a @count of 0; -EOPNOTSUPP from a kernel thread;
 * -EBADF from a process with no descriptor of the endpoints; -EFAULT,
 * -ENOMEM, or as wsem_js_take().
 */
static ssize_t wsem_js_read(struct file *file, char __user *buf, size_t count,
			    loff_t *ppos)
{
	struct wsem_js *js = file->private_data;
	struct wsem_js_proc *p;
	int ret;

	if (!count)
		return 0;
	if (!wsem_js_caller_is_process())
		return -EOPNOTSUPP;
	if (put_user(WSEM_JS_TOKEN, buf))
		return -EFAULT;
	do {
		p = wsem_js_proc_get(js, true);
		if (IS_ERR(p))
			return PTR_ERR(p);
		ret = wsem_js_take(js, p, file->f_flags & O_NONBLOCK);
		wsem_js_proc_put(p);
	} while (ret == -ESTALE);
	return ret ? ret : 1;
}

/**
 * wsem_js_write() - write(2): give tokens back
 * @file: an endpoint file
 * @buf: the bytes, whose values do not matter
 * @count: how many
 * @ppos: unused (a stream)
 *
 * Each byte gives back one unit the calling process read through an
 * endpoint of the semaphore; bytes beyond those are discarded, so that a
 * process cannot make up tokens.
 *
 * Context: Process context.
 * Return: @count.
 */
static ssize_t wsem_js_write(struct file *file, const char __user *buf,
			     size_t count, loff_t *ppos)
{
	struct wsem_js *js = file->private_data;
	struct wsem_js_proc *p;
	u64 n;

	if (!wsem_js_caller_is_process())
		return count;
	p = wsem_js_proc_get(js, false);
	if (!p)
		return count;
	mutex_lock(&js->lock);
	n = min_t(u64, count, p->tokens);
	p->tokens -= n;
	/* The handle holds at least @p's tokens: this cannot fail. */
	if (n)
		WARN_ON_ONCE(wsem_release(p->h, n));
	mutex_unlock(&js->lock);
	wsem_js_proc_put(p);
	return count;
}

/*
 * Does this poll call add its caller to the wait queues it names?  The
 * first pass of poll() and select(), and epoll's EPOLL_CTL_ADD, do; their
 * later passes and epoll_wait()'s do not (7.x dropped
 * poll_does_not_wait(), which said the opposite).
 */
static bool wsem_js_poll_registers(const poll_table *wait)
{
	return wait && wait->_qproc;
}

/**
 * wsem_js_poll() - poll(2), select(2), epoll
 * @file: an endpoint file
 * @wait: the poll table
 *
 * Always writable.  Polled for reading by a process, that process's
 * request of one unit takes its place at the tail of the queue if it has
 * none (so a poller keeps its place and takes no one else's); readable
 * once it is granted, until a read takes the unit or WSEM_JS_RESERVE
 * passes.  Polled by a kernel thread, or by a process with no descriptor
 * of the endpoints (through an epoll set or an io_uring poll after its
 * close), it is a pure report that queues nothing: always readable, as a
 * hint (such a process's read returns at once, with EBADF).
 *
 * Context: Process context.
 * Return: EPOLLOUT | EPOLLWRNORM, with EPOLLIN | EPOLLRDNORM when a read
 * has a unit waiting; EPOLLERR too when out of memory.
 */
static __poll_t wsem_js_poll(struct file *file, poll_table *wait)
{
	struct wsem_js *js = file->private_data;
	__poll_t events = EPOLLOUT | EPOLLWRNORM;
	struct wsem_js_proc *p;
	int ret;

	if (!(poll_requested_events(wait) & (EPOLLIN | EPOLLRDNORM)))
		return events;
	/* Always readable to a kernel thread: it need not wait. */
	if (!wsem_js_caller_is_process())
		return events | EPOLLIN | EPOLLRDNORM;
	p = wsem_js_proc_get(js, true);
	if (PTR_ERR(p) == -EBADF)
		return events | EPOLLIN | EPOLLRDNORM;
	if (IS_ERR(p))
		return events | EPOLLERR;
	poll_wait(file, wsem_js_bucket(p), wait);
	mutex_lock(&js->lock);
	if (!p->closed) {
		if (wsem_js_poll_registers(wait))
			WRITE_ONCE(p->registered, true);
		if (!p->ready) {
			ret = wsem_async_end(p->h, false);
			if (ret == -ENOENT) {
				WRITE_ONCE(p->polled, true);
				ret = wsem_acquire(p->h, 1, WSEM_ACQUIRE_ASYNC,
						   CLOCK_MONOTONIC, KTIME_MAX);
				/* Granted at once: no relay starts the clock. */
				if (!ret)
					wsem_js_arm(p);
			}
			if (!ret)
				p->ready = 1;
		}
		if (p->ready)
			events |= EPOLLIN | EPOLLRDNORM;
	}
	mutex_unlock(&js->lock);
	wsem_js_proc_put(p);
	return events;
}

/**
 * wsem_js_flush() - close(2) of an endpoint descriptor
 * @file: the endpoint file
 * @id: the closing descriptor table
 *
 * Called at every close, also of the descriptors of a process that exits
 * or is killed, in the closing process.  If that was its last descriptor
 * of the semaphore's endpoints (looked at under @js->lock, which every
 * read takes), what it holds through them goes back and
 * its request leaves the queue; a thread of it still inside a blocking
 * read starts again with a new entry (wsem_js_read()).  A close that
 * leaves the process another descriptor releases nothing.
 *
 * Context: Process context.
 * Return: 0.
 */
static int wsem_js_flush(struct file *file, fl_owner_t id)
{
	struct wsem_js *js = file->private_data;
	struct wsem_js_proc *p;
	bool released = false;

	if (!wsem_js_caller_is_process())
		return 0;
	/*
	 * Under @js->lock: a read through a descriptor opened before the
	 * look is seen by it (the descriptor is), one opened after it reads
	 * after the release; neither's token is taken back.
	 */
	mutex_lock(&js->lock);
	wsem_test_js_flush_pause();
	/* A process with no entry holds nothing: no need to look. */
	p = wsem_js_proc_find(js);
	if (p && !wsem_js_has_descriptor(js, &p->fd_hint, id))
		released = wsem_js_release(js, p);
	mutex_unlock(&js->lock);
	if (released)
		wsem_js_wake_released(p);
	return 0;
}

/* A reference to @sem's jobserver state for a new endpoint file. */
static struct wsem_js *wsem_js_get(struct wsem *sem)
{
	struct wsem_js *js;
	unsigned int i;
	int ret;

	mutex_lock(&wsem_js_lock);
	js = xa_load(&wsem_js_sems, sem->id);
	if (!js) {
		js = kvzalloc(sizeof(*js), WSEM_GFP);
		if (!js) {
			js = ERR_PTR(-ENOMEM);
			goto out;
		}
		ret = xa_insert(&wsem_js_sems, sem->id, js, WSEM_GFP);
		if (ret) {
			kvfree(js);
			js = ERR_PTR(ret);
			goto out;
		}
		kref_get(&sem->ref);
		js->sem = sem;
		refcount_set(&js->ref, 1);
		mutex_init(&js->lock);
		INIT_WORK(&js->wake_all, wsem_js_wake_all);
		for (i = 0; i < WSEM_JS_BUCKETS; i++) {
			INIT_HLIST_HEAD(&js->procs[i]);
			init_waitqueue_head(&js->buckets[i]);
		}
	}
	js->nr_files++;
out:
	mutex_unlock(&wsem_js_lock);
	return js;
}

/* An endpoint file is released; the last releases every process. */
static void wsem_js_put(struct wsem_js *js)
{
	struct wsem_js_proc *p;
	unsigned int i = 0;

	mutex_lock(&wsem_js_lock);
	if (--js->nr_files) {
		mutex_unlock(&wsem_js_lock);
		return;
	}
	xa_erase(&wsem_js_sems, js->sem->id);
	mutex_unlock(&wsem_js_lock);

	/*
	 * Works of its entries may still run: they take @js->lock.  The
	 * empty heads are skipped under one hold of it, not one each.
	 */
	for (;;) {
		mutex_lock(&js->lock);
		while (i < WSEM_JS_BUCKETS && hlist_empty(&js->procs[i]))
			i++;
		p = NULL;
		if (i < WSEM_JS_BUCKETS) {
			p = hlist_entry(js->procs[i].first, struct wsem_js_proc,
					node);
			wsem_js_release(js, p);
		}
		mutex_unlock(&js->lock);
		if (!p)
			break;
		wsem_js_wake_released(p);
	}
	wsem_js_unref(js);
}

/**
 * wsem_js_open() - open(2) of a semaphore's endpoint
 * @inode: the endpoint's inode; i_private is the semaphore
 * @file: the new file
 *
 * Reading acquires and writing releases whatever the access mode: any
 * mode needs read and write permission on the semaphore, by the VFS's
 * rules on the endpoint, which has the semaphore's owner and mode, and a
 * mount that is not read-only (the VFS does not check that for a fifo).
 *
 * Context: Process context.
 * Return: 0; -ENOENT once the semaphore lost its name; -EROFS; -EACCES;
 * -ENOMEM.
 */
static int wsem_js_open(struct inode *inode, struct file *file)
{
	struct wsem *sem = inode->i_private;
	struct wsem_js *js;
	int ret;

	if (!READ_ONCE(sem->linked))
		return -ENOENT;
	if (__mnt_is_readonly(file->f_path.mnt))
		return -EROFS;
	ret = wsem_file_permission(file, MAY_READ | MAY_WRITE);
	if (ret)
		return ret;
	js = wsem_js_get(sem);
	if (IS_ERR(js))
		return PTR_ERR(js);
	file->private_data = js;
	return stream_open(inode, file);
}

static int wsem_js_release_file(struct inode *inode, struct file *file)
{
	wsem_js_put(file->private_data);
	return 0;
}

/* The endpoints' file operations (fs.c gives them to the fifo inodes). */
const struct file_operations wsem_js_fops = {
	.owner		= THIS_MODULE,
	.open		= wsem_js_open,
	.read		= wsem_js_read,
	.write		= wsem_js_write,
	.poll		= wsem_js_poll,
	.flush		= wsem_js_flush,
	.release	= wsem_js_release_file,
};

int wsem_js_init(void)
{
	/* Unbound: 7.x warns at a queue that names no CPU affinity. */
	wsem_js_wq = alloc_workqueue("wsem_js", WQ_UNBOUND, 0);
	return wsem_js_wq ? 0 : -ENOMEM;
}

/* After the last endpoint file: what is queued or running ends here. */
void wsem_js_exit(void)
{
	destroy_workqueue(wsem_js_wq);
}
