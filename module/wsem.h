/* SPDX-License-Identifier: GPL-2.0 */
/*
 * wsem internals: semaphores, handles, waiters and namespaces.
 *
 * Locking, outermost first:
 *
 *   wsem_lock (mutex)   the namespace registry, every name tree, and the
 *                       binding of handles to semaphores.
 *   wsem->lock (spin)   the counters, the wait queue and the handle list of
 *                       one semaphore.
 *
 * wsem_lock is never taken with a semaphore lock held, and no user memory is
 * touched under either.
 */
#ifndef _WSEM_INTERNAL_H
#define _WSEM_INTERNAL_H

#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/poll.h>
#include <linux/rbtree.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/uidgid.h>
#include <linux/wsem.h>

struct wsem_ns;

extern struct mutex wsem_lock;

/**
 * struct wsem - one weighted, strictly FIFO counting semaphore
 * @lock: protects the fields up to and including @linked
 * @capacity: C
 * @used: U, the sum of @held over all handles; above C only after a shrink
 * @queued_weight: sum of the weights in @waiters, modulo 2^64
 * @queued_carry: how many times @queued_weight has wrapped; weights are at
 *	most 2^62, so the exact sum is @queued_carry * 2^64 + @queued_weight
 * @nr_waiters: length of @waiters
 * @waiters: struct wsem_waiter, in arrival order; only the head may be granted
 * @handles: every struct wsem_handle bound here
 * @linked: @name is in its namespace; written under wsem_lock and @lock
 * @pollers: poll() and epoll waiting for weight to become free; woken,
 *	after @lock is dropped, by whoever makes a try-acquire of 1 succeed
 *	(see wsem_settle())
 * @node: in the name tree of @wns while @linked; protected by wsem_lock
 * @ref: one per bound handle, one for the name while @linked
 * @wns: the namespace charged for this semaphore (holds a reference)
 * @user_ns: where CAP_IPC_OWNER is checked (holds a reference)
 * @uid: owner
 * @gid: group
 * @mode: permission bits
 * @name: NUL-terminated name, empty for an anonymous semaphore
 *
 * Everything after @ref is set at creation and never changes.
 */
struct wsem {
	spinlock_t lock;	/* see the kernel-doc above */
	u64 capacity;
	u64 used;
	u64 queued_weight;
	u64 queued_carry;
	u64 nr_waiters;
	struct list_head waiters;
	struct list_head handles;
	bool linked;
	wait_queue_head_t pollers;

	struct rb_node node;
	struct kref ref;
	struct wsem_ns *wns;
	struct user_namespace *user_ns;
	kuid_t uid;
	kgid_t gid;
	umode_t mode;
	char name[WSEM_NAME_MAX];
};

/**
 * struct wsem_handle - the state of one open file of /dev/wsem
 * @sem: the bound semaphore; written once under wsem_lock with
 *	smp_store_release(), read with wsem_handle_sem()
 * @held: weight this handle holds; protected by @sem->lock
 * @node: in @sem->handles; protected by @sem->lock
 */
struct wsem_handle {
	struct wsem *sem;
	u64 held;
	struct list_head node;
};

static inline struct wsem *wsem_handle_sem(struct wsem_handle *h)
{
	/* Pairs with wsem_bind(): a bound handle is seen complete. */
	return smp_load_acquire(&h->sem);
}

/* sem.c: the semaphore itself */
struct wsem *wsem_alloc(struct wsem_ns *wns, u64 capacity, umode_t mode,
			const char *name);
void wsem_put(struct wsem *sem);
void wsem_bind(struct wsem_handle *h, struct wsem *sem);
void wsem_unbind(struct wsem_handle *h);
int wsem_acquire(struct wsem_handle *h, u64 weight, u64 flags,
		 ktime_t deadline);
int wsem_release(struct wsem_handle *h, u64 weight);
int wsem_set_capacity(struct wsem *sem, u64 capacity);
void wsem_fill_stat(struct wsem *sem, struct wsem_handle *h,
		    struct wsem_stat *st);
__poll_t wsem_poll(struct wsem *sem, struct file *file, poll_table *wait);
bool wsem_may(const struct wsem *sem, int mask);
bool wsem_is_owner(const struct wsem *sem);

/* ns.c: names, namespaces and their lifetime */
int wsem_ns_open(struct wsem_handle *h, const char *name, u64 flags,
		 u64 capacity, umode_t mode);
int wsem_ns_open_anon(struct wsem_handle *h, u64 capacity);
int wsem_ns_reopen(struct wsem_handle *h, struct wsem *sem);
int wsem_ns_unlink(const char *name);
int wsem_ns_list(struct wsem_stat **stats, u32 count, u64 *total);
void wsem_ns_uncharge(struct wsem_ns *wns);
void wsem_ns_exit(void);

extern unsigned int max_sems_per_ns;

#endif /* _WSEM_INTERNAL_H */
