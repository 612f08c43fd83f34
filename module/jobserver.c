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
 * on the semaphore.
 *
 * Tokens belong to a process and a semaphore, not to an open file: make
 * reads from one descriptor and writes to another.  Per semaphore, a
 * struct wsem_js shared by its open endpoint files keeps one struct
 * wsem_js_proc per process that read or polled, keyed by its thread
 * group's struct pid.  Each owns an internal handle bound to the
 * semaphore, so that its tokens are the handle's held weight (counted in
 * used, shown by the holders view under the label "jobserver"), a blocking
 * read is the core's acquire, a non-blocking one its try-acquire (no
 * barging), and poll's request the handle's asynchronous request, in the
 * same FIFO queue as every other waiter.
 *
 * What a process holds through the endpoint goes back at each close of
 * any of its endpoint descriptors (->flush, as POSIX record locks are
 * dropped at each close), so also when it exits or is killed: the kernel
 * closes its descriptors.  What is left goes back when the semaphore's
 * last endpoint file is released.
 */
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/mutex.h>
#include <linux/pid.h>
#include <linux/poll.h>
#include <linux/refcount.h>
#include <linux/sched/debug.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/wait.h>
#include <linux/xarray.h>

#include "wsem.h"

/* The byte a read gives: GNU make's token.  Any byte written is one. */
#define WSEM_JS_TOKEN	'+'

/**
 * struct wsem_js - the jobserver state of one semaphore
 * @sem: the semaphore (holds a reference)
 * @nr_files: its open endpoint files; protected by wsem_js_lock
 * @lock: protects @procs and the counts of each process on it
 * @procs: struct wsem_js_proc, one per process that read or polled and
 *	has not closed an endpoint descriptor since
 * @wqh: poll() on the endpoint files; woken whenever a process's request
 *	ends (relayed from its handle: wsem_js_relay())
 */
struct wsem_js {
	struct wsem *sem;
	unsigned int nr_files;
	struct mutex lock;	/* see the kernel-doc above */
	struct list_head procs;
	wait_queue_head_t wqh;
};

/**
 * struct wsem_js_proc - what one process holds through the endpoint
 * @node: in @js->procs until the process closes an endpoint descriptor
 * @tgid: the process, its thread group's pid (holds a reference)
 * @js: the semaphore's jobserver state
 * @h: the internal handle, bound to the semaphore: the process's tokens
 *	are its held weight, poll's request its asynchronous request
 * @relay: on @h->wqh: the end of the request wakes @js->wqh
 * @ref: one for @js->procs, one for each caller using it
 * @tokens: units read and not written back; protected by @js->lock
 * @ready: units granted to poll's request and not read yet; protected by
 *	@js->lock
 * @closed: off @js->procs since the process closed an endpoint descriptor
 *	(a thread of it may still be inside a read); protected by @js->lock
 */
struct wsem_js_proc {
	struct list_head node;
	struct pid *tgid;
	struct wsem_js *js;
	struct wsem_handle *h;
	wait_queue_entry_t relay;
	refcount_t ref;
	u64 tokens;
	u64 ready;
	bool closed;
};

/* The semaphores with an open endpoint file, by id: their struct wsem_js. */
static DEFINE_MUTEX(wsem_js_lock);
static DEFINE_XARRAY(wsem_js_sems);

/* The end of a process's request wakes the pollers of every endpoint file. */
static int wsem_js_relay(struct wait_queue_entry *wq, unsigned int mode,
			 int sync, void *key)
{
	struct wsem_js_proc *p = container_of(wq, struct wsem_js_proc, relay);

	wake_up_poll(&p->js->wqh, key_to_poll(key));
	return 0;
}

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
	/* After the bind, which would relay the semaphore's pollers to us. */
	init_waitqueue_func_entry(&p->relay, wsem_js_relay);
	add_wait_queue(&p->h->wqh, &p->relay);
	p->tgid = get_pid(task_tgid(current));
	p->js = js;
	refcount_set(&p->ref, 1);
	return p;
}

/*
 * Drop a reference to @p; the last one gives back all its handle holds
 * (its request leaves the queue) and frees it.
 */
static void wsem_js_proc_put(struct wsem_js_proc *p)
{
	if (!refcount_dec_and_test(&p->ref))
		return;
	/* Under h->wqh.lock: no grant relays to @p->js after this. */
	remove_wait_queue(&p->h->wqh, &p->relay);
	wsem_handle_close(p->h);
	put_pid(p->tgid);
	kfree(p);
}

/* The calling process's entry in @js, or NULL. */
static struct wsem_js_proc *wsem_js_proc_find(struct wsem_js *js)
{
	struct pid *tgid = task_tgid(current);
	struct wsem_js_proc *p;

	lockdep_assert_held(&js->lock);

	list_for_each_entry(p, &js->procs, node)
		if (p->tgid == tgid)
			return p;
	return NULL;
}

/*
 * The calling process's entry in @js, with a reference; made if there is
 * none and @create.  Return: the entry, NULL (none, !@create) or
 * ERR_PTR(-ENOMEM).
 */
static struct wsem_js_proc *wsem_js_proc_get(struct wsem_js *js, bool create)
{
	struct wsem_js_proc *p;

	mutex_lock(&js->lock);
	p = wsem_js_proc_find(js);
	if (!p && create) {
		p = wsem_js_proc_alloc(js);
		if (!p) {
			mutex_unlock(&js->lock);
			return ERR_PTR(-ENOMEM);
		}
		list_add(&p->node, &js->procs);
	}
	if (p)
		refcount_inc(&p->ref);
	mutex_unlock(&js->lock);
	return p;
}

/*
 * Count a unit @p's handle was granted as a token: -ESTALE instead if @p
 * was closed meanwhile (the unit stays with its handle, which gives it
 * back at its last reference).
 */
static int wsem_js_count(struct wsem_js *js, struct wsem_js_proc *p)
{
	int ret = -ESTALE;

	mutex_lock(&js->lock);
	if (!p->closed) {
		p->tokens++;
		ret = 0;
	}
	mutex_unlock(&js->lock);
	return ret;
}

/*
 * A unit for @p without sleeping: the one granted to its request (taken
 * by poll, or seen now), else, with @nonblock and no request, a
 * try-acquire.  Return: 0 (counted in @p->tokens); -EINPROGRESS while
 * @p's request waits in the queue; -ENOENT (no request, blocking: acquire
 * then); -EAGAIN; -ESTALE once @p was closed (wsem_js_flush()).
 */
static int wsem_js_take_now(struct wsem_js *js, struct wsem_js_proc *p,
			    bool nonblock)
{
	int ret;

	mutex_lock(&js->lock);
	if (p->closed) {
		ret = -ESTALE;
	} else if (p->ready) {
		p->ready--;
		ret = 0;
	} else {
		ret = wsem_async_end(p->h, false);
		if (ret == -ENOENT && nonblock)
			ret = wsem_acquire(p->h, 1, WSEM_ACQUIRE_TRY,
					   CLOCK_MONOTONIC, KTIME_MAX);
	}
	if (!ret)
		p->tokens++;
	mutex_unlock(&js->lock);
	return ret;
}

/* Has @p's request left the queue?  Collected if so: *@got says how. */
static bool wsem_js_request_ended(struct wsem_js_proc *p, int *got)
{
	*got = wsem_async_end(p->h, false);
	return *got != -EINPROGRESS;
}

/**
 * wsem_js_take() - one unit for the calling process
 * @js: the semaphore's jobserver state
 * @p: the calling process's entry
 * @nonblock: never sleep
 *
 * Without sleeping as wsem_js_take_now() says.  Then, blocking: wait for
 * the process's request if it has one in the queue, else acquire 1 at the
 * tail of the queue, as the core's acquire does (a call restarted to run
 * task work takes its place back there).
 *
 * Context: Process context, may sleep unless @nonblock.
 * Return: 0; -EAGAIN with @nonblock; -ERESTARTSYS on a signal (nothing is
 * held from that call; a request made by poll stays queued); -ESTALE if
 * @p was closed meanwhile: try again with a new entry; else as
 * wsem_acquire() (-EINTR for a fatal signal, -ERESTARTNOINTR to run task
 * work).
 */
static int __sched wsem_js_take(struct wsem_js *js, struct wsem_js_proc *p,
				bool nonblock)
{
	int ret, got;

	for (;;) {
		ret = wsem_js_take_now(js, p, nonblock);
		if (ret != -EINPROGRESS || nonblock)
			break;
		/* The grant wins over a signal: looked at first. */
		ret = wait_event_interruptible(p->h->wqh,
					       wsem_js_request_ended(p, &got));
		if (ret)
			return ret;
		if (!got)
			return wsem_js_count(js, p);
		/* Taken by another thread, or cancelled by a close: again. */
	}
	if (ret == -EINPROGRESS)
		return -EAGAIN;
	if (ret != -ENOENT)
		return ret;
	ret = wsem_acquire(p->h, 1, 0, CLOCK_MONOTONIC, KTIME_MAX);
	/* A pipe's read is restarted after a handler with SA_RESTART. */
	if (ret == -ERESTARTNOHAND)
		return -ERESTARTSYS;
	return ret ? ret : wsem_js_count(js, p);
}

/**
 * wsem_js_read() - read(2): one token
 * @file: an endpoint file
 * @buf: where the token byte goes
 * @count: 0 reads nothing; more than 1 reads one byte all the same
 * @ppos: unused (a stream)
 *
 * A token taken through an entry that a close of another thread of the
 * process ended meanwhile is not the process's: it goes back with that
 * entry, and the read starts again with a new one.
 *
 * Context: Process context, may sleep unless O_NONBLOCK.
 * Return: 1; 0 for a @count of 0; -EFAULT, -ENOMEM, or as wsem_js_take().
 */
static ssize_t wsem_js_read(struct file *file, char __user *buf, size_t count,
			    loff_t *ppos)
{
	struct wsem_js *js = file->private_data;
	struct wsem_js_proc *p;
	int ret;

	if (!count)
		return 0;
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

/**
 * wsem_js_poll() - poll(2), select(2), epoll
 * @file: an endpoint file
 * @wait: the poll table
 *
 * Always writable.  Polled for reading, the calling process's request of
 * one unit takes its place at the tail of the queue if it has none (so a
 * poller keeps its place and takes no one else's); readable once it is
 * granted, until a read takes the unit.
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

	poll_wait(file, &js->wqh, wait);
	if (!(poll_requested_events(wait) & (EPOLLIN | EPOLLRDNORM)))
		return events;
	p = wsem_js_proc_get(js, true);
	if (IS_ERR(p))
		return events | EPOLLERR;
	mutex_lock(&js->lock);
	if (!p->ready) {
		ret = wsem_async_end(p->h, false);
		if (ret == -ENOENT)
			ret = wsem_acquire(p->h, 1, WSEM_ACQUIRE_ASYNC,
					   CLOCK_MONOTONIC, KTIME_MAX);
		if (!ret)
			p->ready++;
	}
	if (p->ready)
		events |= EPOLLIN | EPOLLRDNORM;
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
 * or is killed, in the closing process: what it holds through the
 * semaphore's endpoints goes back, and its request leaves the queue.  A
 * thread of it still inside a blocking read is woken if it waits for
 * that request, and starts again with a new entry (wsem_js_read()).
 *
 * Context: Process context.
 * Return: 0.
 */
static int wsem_js_flush(struct file *file, fl_owner_t id)
{
	struct wsem_js *js = file->private_data;
	struct wsem_js_proc *p;
	u64 n;

	mutex_lock(&js->lock);
	p = wsem_js_proc_find(js);
	if (p) {
		list_del(&p->node);
		p->closed = true;
		n = p->tokens + p->ready;
		p->tokens = 0;
		p->ready = 0;
		/* Granted meanwhile: the handle holds that one too. */
		if (wsem_async_end(p->h, true) == -EALREADY)
			n++;
		if (n)
			WARN_ON_ONCE(wsem_release(p->h, n));
	}
	mutex_unlock(&js->lock);
	if (p) {
		/* A read waiting for the request sees it is gone. */
		wake_up_poll(&p->h->wqh, EPOLLIN | EPOLLRDNORM);
		wsem_js_proc_put(p);
	}
	return 0;
}

/* A reference to @sem's jobserver state for a new endpoint file. */
static struct wsem_js *wsem_js_get(struct wsem *sem)
{
	struct wsem_js *js;
	int ret;

	mutex_lock(&wsem_js_lock);
	js = xa_load(&wsem_js_sems, sem->id);
	if (!js) {
		js = kzalloc(sizeof(*js), WSEM_GFP);
		if (!js) {
			js = ERR_PTR(-ENOMEM);
			goto out;
		}
		ret = xa_insert(&wsem_js_sems, sem->id, js, WSEM_GFP);
		if (ret) {
			kfree(js);
			js = ERR_PTR(ret);
			goto out;
		}
		kref_get(&sem->ref);
		js->sem = sem;
		mutex_init(&js->lock);
		INIT_LIST_HEAD(&js->procs);
		init_waitqueue_head(&js->wqh);
	}
	js->nr_files++;
out:
	mutex_unlock(&wsem_js_lock);
	return js;
}

/* An endpoint file is released; the last gives back what is left. */
static void wsem_js_put(struct wsem_js *js)
{
	struct wsem_js_proc *p, *next;

	mutex_lock(&wsem_js_lock);
	if (--js->nr_files) {
		mutex_unlock(&wsem_js_lock);
		return;
	}
	xa_erase(&wsem_js_sems, js->sem->id);
	mutex_unlock(&wsem_js_lock);

	/* No file is left, so nobody is inside a call: each ref is 1. */
	list_for_each_entry_safe(p, next, &js->procs, node) {
		list_del(&p->node);
		wsem_js_proc_put(p);
	}
	mutex_destroy(&js->lock);
	wsem_put(js->sem);
	kfree(js);
}

/**
 * wsem_js_open() - open(2) of a semaphore's endpoint
 * @inode: the endpoint's inode; i_private is the semaphore
 * @file: the new file
 *
 * Reading acquires and writing releases whatever the access mode: any
 * mode needs read and write permission on the semaphore, by the VFS's
 * rules on the endpoint, which has the semaphore's owner and mode.
 *
 * Context: Process context.
 * Return: 0; -ENOENT once the semaphore lost its name; -EACCES; -ENOMEM.
 */
static int wsem_js_open(struct inode *inode, struct file *file)
{
	struct wsem *sem = inode->i_private;
	struct wsem_js *js;
	int ret;

	if (!READ_ONCE(sem->linked))
		return -ENOENT;
	ret = wsem_file_permission(file, MAY_READ | MAY_WRITE);
	if (ret)
		return ret;
	js = wsem_js_get(sem);
	if (IS_ERR(js))
		return PTR_ERR(js);
	file->private_data = js;
	return stream_open(inode, file);
}

static int wsem_js_release(struct inode *inode, struct file *file)
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
	.release	= wsem_js_release,
};
