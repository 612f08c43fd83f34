// SPDX-License-Identifier: GPL-2.0
/*
 * wsem: names and IPC namespaces.
 *
 * Named semaphores live in the IPC namespace of their creator.  A module
 * cannot keep an IPC namespace alive (nor should it), and on older kernels
 * cannot even drop a reference to one, so wsem holds none.  Instead each
 * namespace's struct wsem_ns pins the namespace's internal mqueue mount:
 *
 *  - identity: a namespace is ours if both its address and its mq_mnt
 *    match.  The pinned mount cannot be freed, so a new namespace that
 *    reuses a dead one's address still has another mq_mnt and never sees
 *    the old names.
 *  - liveness: when the last reference to the namespace goes, put_ipc_ns()
 *    clears the mount's superblock s_fs_info.  A reaper polls for that once
 *    a second while any namespace other than the initial one has wsem
 *    state, then drops the names and unpins the mount.  Semaphores that are
 *    still open elsewhere go on working, nameless.
 */
#include <linux/fs.h>
#include <linux/ipc_namespace.h>
#include <linux/mount.h>
#include <linux/nsproxy.h>
#include <linux/rbtree.h>
#include <linux/sched.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/workqueue.h>

#include "wsem.h"

#ifndef CONFIG_POSIX_MQUEUE
#error "wsem follows IPC namespace lifetimes through CONFIG_POSIX_MQUEUE"
#endif

/* Outermost lock: the registry, name trees, handle binding (see wsem.h). */
DEFINE_MUTEX(wsem_lock);

/**
 * struct wsem_ns - the wsem state of one IPC namespace
 * @node: in wsem_namespaces while the namespace lives
 * @names: linked semaphores, by name
 * @nr_names: number of nodes in @names
 * @ipc_ns: the namespace's address, for identity only: never dereferenced
 * @mq_mnt: the namespace's mqueue mount, pinned while registered
 * @nr_sems: semaphores charged here, named or anonymous, linked or not
 * @ref: one for the registry while the namespace lives, one per semaphore
 *
 * @node, @names, @nr_names and @mq_mnt are protected by wsem_lock.
 */
struct wsem_ns {
	struct list_head node;
	struct rb_root names;
	unsigned int nr_names;
	const struct ipc_namespace *ipc_ns;
	struct vfsmount *mq_mnt;
	atomic_t nr_sems;
	struct kref ref;
};

static LIST_HEAD(wsem_namespaces);

static void wsem_ns_reap(struct work_struct *work);
static DECLARE_DELAYED_WORK(wsem_reaper, wsem_ns_reap);

static bool wsem_ns_is_initial(const struct wsem_ns *wns)
{
	return wns->ipc_ns == init_task.nsproxy->ipc_ns;
}

static void wsem_ns_free(struct kref *ref)
{
	kfree(container_of(ref, struct wsem_ns, ref));
}

/**
 * wsem_ns_uncharge() - account for a freed semaphore
 * @wns: the namespace it was charged to
 *
 * Context: Any process context; takes no lock.
 */
void wsem_ns_uncharge(struct wsem_ns *wns)
{
	atomic_dec(&wns->nr_sems);
	kref_put(&wns->ref, wsem_ns_free);
}

/* The caller's namespace, created on demand; NULL if absent or no memory. */
static struct wsem_ns *wsem_ns_current(bool create)
{
	struct ipc_namespace *ipc_ns = current->nsproxy->ipc_ns;
	struct wsem_ns *wns;

	lockdep_assert_held(&wsem_lock);

	list_for_each_entry(wns, &wsem_namespaces, node) {
		if (wns->ipc_ns == ipc_ns && wns->mq_mnt == ipc_ns->mq_mnt)
			return wns;
	}
	if (!create)
		return NULL;

	wns = kzalloc(sizeof(*wns), GFP_KERNEL_ACCOUNT);
	if (!wns)
		return NULL;
	wns->names = RB_ROOT;
	wns->ipc_ns = ipc_ns;
	wns->mq_mnt = mntget(ipc_ns->mq_mnt);
	kref_init(&wns->ref);
	list_add(&wns->node, &wsem_namespaces);
	if (!wsem_ns_is_initial(wns))
		schedule_delayed_work(&wsem_reaper, HZ);
	return wns;
}

static int wsem_name_cmp(const void *name, const struct rb_node *node)
{
	return strcmp(name, rb_entry(node, struct wsem, node)->name);
}

static bool wsem_name_less(struct rb_node *a, const struct rb_node *b)
{
	return wsem_name_cmp(rb_entry(a, struct wsem, node)->name, b) < 0;
}

static struct wsem *wsem_ns_find(struct wsem_ns *wns, const char *name)
{
	struct rb_node *node;

	lockdep_assert_held(&wsem_lock);

	if (!wns)
		return NULL;
	node = rb_find(name, &wns->names, wsem_name_cmp);
	return node ? rb_entry(node, struct wsem, node) : NULL;
}

/* Take @sem's name away; the caller drops the name's reference. */
static void wsem_ns_unlink_one(struct wsem_ns *wns, struct wsem *sem)
{
	lockdep_assert_held(&wsem_lock);

	rb_erase(&sem->node, &wns->names);
	wns->nr_names--;
	spin_lock(&sem->lock);
	sem->linked = false;
	spin_unlock(&sem->lock);
}

/* A new semaphore charged to @wns, or an ERR_PTR(). */
static struct wsem *wsem_ns_create(struct wsem_ns *wns, u64 capacity,
				   umode_t mode, const char *name)
{
	struct wsem *sem;

	lockdep_assert_held(&wsem_lock);

	if (!wns)
		return ERR_PTR(-ENOMEM);
	if (atomic_read(&wns->nr_sems) >= READ_ONCE(max_sems_per_ns))
		return ERR_PTR(-ENOSPC);
	sem = wsem_alloc(wns, capacity, mode, name);
	if (!sem)
		return ERR_PTR(-ENOMEM);
	atomic_inc(&wns->nr_sems);
	kref_get(&wns->ref);
	return sem;
}

/**
 * wsem_ns_open() - bind a handle to a named semaphore
 * @h: an open handle
 * @name: a valid name
 * @flags: WSEM_OPEN_CREAT and WSEM_OPEN_EXCL
 * @capacity: capacity if created, already checked
 * @mode: permission bits if created, umask applied
 *
 * Context: Process context; takes wsem_lock.
 * Return: 0; -EBUSY if @h is bound; -EEXIST, -ENOENT, -EACCES, -ENOSPC or
 * -ENOMEM, and then nothing changed.
 */
int wsem_ns_open(struct wsem_handle *h, const char *name, u64 flags,
		 u64 capacity, umode_t mode)
{
	bool create = flags & WSEM_OPEN_CREAT;
	struct wsem_ns *wns;
	struct wsem *sem;
	int ret = 0;

	mutex_lock(&wsem_lock);
	if (h->sem) {
		ret = -EBUSY;
		goto out;
	}
	wns = wsem_ns_current(create);
	sem = wsem_ns_find(wns, name);
	if (sem) {
		if (create && (flags & WSEM_OPEN_EXCL))
			ret = -EEXIST;
		else if (!wsem_may(sem, MAY_READ | MAY_WRITE))
			ret = -EACCES;
		else
			kref_get(&sem->ref);
	} else if (!create) {
		ret = -ENOENT;
	} else {
		sem = wsem_ns_create(wns, capacity, mode, name);
		if (IS_ERR(sem)) {
			ret = PTR_ERR(sem);
		} else {
			sem->linked = true;
			rb_add(&sem->node, &wns->names, wsem_name_less);
			wns->nr_names++;
			kref_get(&sem->ref);	/* the name's */
		}
	}
	if (!ret)
		wsem_bind(h, sem);
out:
	mutex_unlock(&wsem_lock);
	return ret;
}

/**
 * wsem_ns_open_anon() - bind a handle to a new anonymous semaphore
 * @h: an open handle
 * @capacity: its capacity, already checked
 *
 * The semaphore is charged to the caller's namespace, owned by the caller,
 * mode 0600.
 *
 * Context: Process context; takes wsem_lock.
 * Return: 0; -EBUSY if @h is bound; -ENOSPC or -ENOMEM.
 */
int wsem_ns_open_anon(struct wsem_handle *h, u64 capacity)
{
	struct wsem *sem;
	int ret = 0;

	mutex_lock(&wsem_lock);
	if (h->sem) {
		ret = -EBUSY;
	} else {
		sem = wsem_ns_create(wsem_ns_current(true), capacity, 0600,
				     NULL);
		if (IS_ERR(sem))
			ret = PTR_ERR(sem);
		else
			wsem_bind(h, sem);
	}
	mutex_unlock(&wsem_lock);
	return ret;
}

/**
 * wsem_ns_reopen() - bind a fresh handle to an existing semaphore
 * @h: a handle nobody else can see yet
 * @sem: the semaphore
 *
 * Context: Process context; takes wsem_lock.
 * Return: 0.
 */
int wsem_ns_reopen(struct wsem_handle *h, struct wsem *sem)
{
	mutex_lock(&wsem_lock);
	kref_get(&sem->ref);
	wsem_bind(h, sem);
	mutex_unlock(&wsem_lock);
	return 0;
}

/**
 * wsem_ns_unlink() - remove a name from the caller's namespace
 * @name: a valid name
 *
 * Handles bound to the semaphore keep working; it is freed with the last.
 *
 * Context: Process context; takes wsem_lock.
 * Return: 0, -ENOENT, or -EPERM unless the caller owns it or has
 * CAP_IPC_OWNER.
 */
int wsem_ns_unlink(const char *name)
{
	struct wsem_ns *wns;
	struct wsem *sem;
	int ret = 0;

	mutex_lock(&wsem_lock);
	wns = wsem_ns_current(false);
	sem = wsem_ns_find(wns, name);
	if (!sem)
		ret = -ENOENT;
	else if (!wsem_is_owner(sem))
		ret = -EPERM;
	else
		wsem_ns_unlink_one(wns, sem);
	mutex_unlock(&wsem_lock);
	if (!ret)
		wsem_put(sem);
	return ret;
}

/**
 * wsem_ns_list() - describe the named semaphores the caller may read
 * @stats: set to a kvmalloc()ed array, or NULL; the caller kvfree()s it
 * @count: room the caller has
 * @total: set to how many there are, in name order
 *
 * Context: Process context; takes wsem_lock.
 * Return: how many of them were described in @stats (at most @count), or
 * -ENOMEM.
 */
int wsem_ns_list(struct wsem_stat **stats, u32 count, u64 *total)
{
	struct wsem_stat *st = NULL;
	struct wsem_ns *wns;
	struct rb_node *node;
	u32 n = 0;
	int ret = 0;

	*total = 0;
	mutex_lock(&wsem_lock);
	wns = wsem_ns_current(false);
	if (!wns)
		goto out;
	count = min(count, wns->nr_names);
	if (count) {
		st = kvcalloc(count, sizeof(*st), GFP_KERNEL_ACCOUNT);
		if (!st) {
			ret = -ENOMEM;
			goto out;
		}
	}
	for (node = rb_first(&wns->names); node; node = rb_next(node)) {
		struct wsem *sem = rb_entry(node, struct wsem, node);

		if (!wsem_may(sem, MAY_READ))
			continue;
		if (n < count)
			wsem_fill_stat(sem, NULL, &st[n++]);
		(*total)++;
	}
out:
	mutex_unlock(&wsem_lock);
	*stats = st;
	return ret ?: n;
}

/* Drop every name of @wns, unpin its namespace's mount, unregister it. */
static void wsem_ns_forget(struct wsem_ns *wns)
{
	struct rb_node *node;

	lockdep_assert_held(&wsem_lock);

	while ((node = rb_first(&wns->names))) {
		struct wsem *sem = rb_entry(node, struct wsem, node);

		wsem_ns_unlink_one(wns, sem);
		wsem_put(sem);
	}
	list_del(&wns->node);
	mntput(wns->mq_mnt);
	kref_put(&wns->ref, wsem_ns_free);
}

/* Forget every namespace that has died since the last pass. */
static void wsem_ns_reap(struct work_struct *work)
{
	struct wsem_ns *wns, *next;
	bool others = false;

	mutex_lock(&wsem_lock);
	list_for_each_entry_safe(wns, next, &wsem_namespaces, node) {
		if (READ_ONCE(wns->mq_mnt->mnt_sb->s_fs_info) == wns->ipc_ns)
			others |= !wsem_ns_is_initial(wns);
		else
			wsem_ns_forget(wns);
	}
	if (others)
		schedule_delayed_work(&wsem_reaper, HZ);
	mutex_unlock(&wsem_lock);
}

/**
 * wsem_ns_exit() - forget every namespace at module unload
 *
 * Context: Process context, no handle open any more.
 */
void wsem_ns_exit(void)
{
	struct wsem_ns *wns, *next;

	cancel_delayed_work_sync(&wsem_reaper);
	mutex_lock(&wsem_lock);
	list_for_each_entry_safe(wns, next, &wsem_namespaces, node)
		wsem_ns_forget(wns);
	mutex_unlock(&wsem_lock);
}
