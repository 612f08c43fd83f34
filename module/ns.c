// SPDX-License-Identifier: GPL-2.0
/*
 * wsem: names and IPC namespaces.
 *
 * Named semaphores live in the IPC namespace of their creator.  A module
 * cannot keep an IPC namespace alive (nor should it), and on older kernels
 * cannot even drop a reference to one, so wsem holds none.  Instead each
 * namespace's struct wsem_ns pins the namespace's internal mqueue mount:
 *
 *  - identity: namespaces are looked up by the address of their mq_mnt.
 *    The pinned mount cannot be freed, so a new namespace never has the
 *    mq_mnt of one we know, and never sees an old namespace's names.
 *  - liveness: when the last reference to the namespace goes, put_ipc_ns()
 *    clears the mount's superblock s_fs_info.  A reaper polls for that once
 *    a second while any namespace other than the initial one has wsem
 *    state, then drops the names and unpins the mount.  Semaphores that are
 *    still open elsewhere go on working, nameless.
 *
 * Each namespace has its own lock; finding one takes none (an RCU lookup in
 * a hash table), and only registering and forgetting namespaces serialize
 * on wsem_ns_lock.  Memory for a semaphore, or for a listing, is allocated
 * before the namespace's lock is taken.
 *
 * Limits: a namespace holds at most max_sems_per_ns semaphores, named or
 * anonymous, and of those one user at most max_sems_per_user, so that no
 * user can use up a namespace for the others.
 *
 * Each user is counted (quota.c's struct wsem_users) in the user namespace
 * that owns the IPC namespace, as wsem_charged_uid() says whom; a child is
 * counted once more, across every namespace (wsem_child_charge()).
 *
 * The administrator: callers without CAP_SYS_RESOURCE over that user
 * namespace stop short of max_sems_per_ns by an eighth of it, kept for
 * callers with it, who also pass the per-user limit; so however many
 * ordinary users fill a namespace together, its administrator can still
 * create.  max_sems_per_ns bounds everyone.
 *
 * Charging is done here, around the semaphore's life: when it is added
 * (wsem_ns_charge()), and at its last wsem_put(), before sem.c frees it.
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/fsnotify.h>
#include <linux/ipc_namespace.h>
#include <linux/moduleparam.h>
#include <linux/mount.h>
#include <linux/mutex.h>
#include <linux/nsproxy.h>
#include <linux/rbtree.h>
#include <linux/rhashtable.h>
#include <linux/sched.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/user_namespace.h>
#include <linux/workqueue.h>

#include "wsem.h"

#ifndef CONFIG_POSIX_MQUEUE
#error "wsem follows IPC namespace lifetimes through CONFIG_POSIX_MQUEUE"
#endif

/* Callers without CAP_SYS_RESOURCE leave this part of max_sems_per_ns. */
#define WSEM_RESERVE_PART	8

/**
 * struct wsem_ns - the wsem state of one IPC namespace
 * @hnode: in wsem_ns_table, by @mq_mnt, while registered
 * @node: in wsem_ns_others while registered, unless the initial namespace;
 *	protected by wsem_ns_lock
 * @mq_mnt: the namespace's mqueue mount, pinned while registered
 * @ipc_ns: the namespace's address, never dereferenced
 * @inum: the namespace's inode number in nsfs, as /proc/PID/ns/ipc shows it
 * @lock: protects @names and @nr_names, and serialises charging
 * @names: linked semaphores, by name
 * @nr_names: number of nodes in @names
 * @users: how many semaphores each user has here (quota.c); its lock is
 *	taken under @lock to charge, alone to uncharge (wsem_put() may run
 *	under @lock or not)
 * @nr_sems: semaphores charged here, named or anonymous, linked or not
 * @sb_lock: protects @sb
 * @sb: the superblock of the namespace's wsemfs while it is mounted (fs.c
 *	keys them by namespace: one at a time), whose watchers hear of the
 *	names that come and go other than through it (wsem_ns_tell_watchers())
 * @ref: one for the registry while registered, one per semaphore charged
 *	here, one for each caller working on it
 * @rcu: frees it after a grace period: lookups hold no reference
 */
struct wsem_ns {
	struct rhash_head hnode;
	struct list_head node;
	struct vfsmount *mq_mnt;
	const struct ipc_namespace *ipc_ns;
	unsigned int inum;
	struct mutex lock;	/* see the kernel-doc above */
	struct rb_root names;
	unsigned int nr_names;
	struct wsem_users users;
	atomic_t nr_sems;
	struct mutex sb_lock;	/* see the kernel-doc above */
	struct super_block *sb;
	struct kref ref;
	struct rcu_head rcu;
};

static const struct rhashtable_params wsem_ns_params = {
	.key_len = sizeof(struct vfsmount *),
	.key_offset = offsetof(struct wsem_ns, mq_mnt),
	.head_offset = offsetof(struct wsem_ns, hnode),
	.automatic_shrinking = true,
};

/* Registering and forgetting namespaces; see wsem.h. */
static DEFINE_MUTEX(wsem_ns_lock);
static struct rhashtable wsem_ns_table;
static LIST_HEAD(wsem_ns_others);

static void wsem_ns_reap(struct work_struct *work);
static DECLARE_DELAYED_WORK(wsem_reaper, wsem_ns_reap);

static bool wsem_ns_is_initial(const struct wsem_ns *wns)
{
	return wns->ipc_ns == init_task.nsproxy->ipc_ns;
}

static void wsem_ns_free(struct kref *ref)
{
	struct wsem_ns *wns = container_of(ref, struct wsem_ns, ref);

	/* Each charged semaphore holds a reference: all were uncharged. */
	WARN_ON_ONCE(!RB_EMPTY_ROOT(&wns->users.tree));
	kfree_rcu(wns, rcu);
}

/**
 * wsem_ns_put() - drop a reference to a namespace's wsem state
 * @wns: the namespace
 *
 * Context: Any process context; takes no lock.
 */
void wsem_ns_put(struct wsem_ns *wns)
{
	kref_put(&wns->ref, wsem_ns_free);
}

/*
 * Account for a semaphore charged to its namespace that is being freed;
 * its user's count goes with its last semaphore there, and a child's
 * count of its creator's children likewise.
 */
static void wsem_ns_uncharge(struct wsem *sem)
{
	struct wsem_ns *wns = sem->wns;

	if (sem->child_quota)
		wsem_child_uncharge(sem->child_quota);
	sem->child_quota = NULL;
	wsem_users_drop(&wns->users, sem->quota);
	sem->quota = NULL;
	atomic_dec(&wns->nr_sems);
	wsem_ns_put(wns);
}

static void wsem_ns_free_sem(struct kref *ref)
{
	struct wsem *sem = container_of(ref, struct wsem, ref);
	struct wsem *parent = sem->parent;

	if (sem->wns)
		wsem_ns_uncharge(sem);
	wsem_free(sem);
	/* A parent lives while it has children (at most WSEM_DEPTH_MAX). */
	if (parent)
		wsem_put(parent);
}

/**
 * wsem_put() - drop a reference to a semaphore
 * @sem: the semaphore
 *
 * The last one uncharges the semaphore's namespace, if it was charged
 * (wsem_ns_add()), and then has the core free it (wsem_free()): charging
 * is done here, around sem.c's wsem_alloc() and wsem_free().
 *
 * Context: Process context; freeing takes no lock of ours.
 */
void wsem_put(struct wsem *sem)
{
	kref_put(&sem->ref, wsem_ns_free_sem);
}

static struct wsem_ns *wsem_ns_lookup(struct vfsmount *mq_mnt)
{
	struct wsem_ns *wns;

	rcu_read_lock();
	wns = rhashtable_lookup(&wsem_ns_table, &mq_mnt, wsem_ns_params);
	if (wns && !kref_get_unless_zero(&wns->ref))
		wns = NULL;
	rcu_read_unlock();
	return wns;
}

/* Register @wns, or find who was first; either way with a reference. */
static struct wsem_ns *wsem_ns_register(struct wsem_ns *wns)
{
	struct wsem_ns *old;

	mutex_lock(&wsem_ns_lock);
	old = rhashtable_lookup_get_insert_fast(&wsem_ns_table, &wns->hnode,
						wsem_ns_params);
	if (!old && !wsem_ns_is_initial(wns)) {
		list_add(&wns->node, &wsem_ns_others);
		schedule_delayed_work(&wsem_reaper, HZ);
	} else if (!IS_ERR_OR_NULL(old)) {
		kref_get(&old->ref);	/* the registry's keeps it */
	}
	mutex_unlock(&wsem_ns_lock);
	if (!old)
		return wns;

	mntput(wns->mq_mnt);
	kfree(wns);
	return IS_ERR(old) ? ERR_PTR(-ENOMEM) : old;
}

/**
 * wsem_ns_get() - the wsem state of the caller's IPC namespace
 * @create: register it if it has none yet
 *
 * Context: Process context, may sleep.
 * Return: the namespace with a reference for the caller (wsem_ns_put()),
 * NULL if it has no wsem state and !@create, or an ERR_PTR().
 */
struct wsem_ns *wsem_ns_get(bool create)
{
	struct ipc_namespace *ipc_ns = current->nsproxy->ipc_ns;
	struct wsem_ns *wns;

	wns = wsem_ns_lookup(ipc_ns->mq_mnt);
	if (wns || !create)
		return wns;

	wns = kzalloc(sizeof(*wns), WSEM_GFP);
	if (!wns)
		return ERR_PTR(-ENOMEM);
	mutex_init(&wns->lock);
	mutex_init(&wns->sb_lock);
	wns->names = RB_ROOT;
	wsem_users_init(&wns->users);
	wns->ipc_ns = ipc_ns;
	wns->inum = ipc_ns->ns.inum;
	wns->mq_mnt = mntget(ipc_ns->mq_mnt);
	kref_init(&wns->ref);		/* the registry's */
	kref_get(&wns->ref);		/* the caller's */
	return wsem_ns_register(wns);
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

	lockdep_assert_held(&wns->lock);

	node = rb_find(name, &wns->names, wsem_name_cmp);
	return node ? rb_entry(node, struct wsem, node) : NULL;
}

/* Give @sem its name in @wns; the caller's reference becomes the name's. */
static void wsem_ns_link(struct wsem_ns *wns, struct wsem *sem)
{
	lockdep_assert_held(&wns->lock);

	spin_lock(sem->lock);
	sem->linked = true;
	spin_unlock(sem->lock);
	rb_add(&sem->node, &wns->names, wsem_name_less);
	wns->nr_names++;
}

/* Take @sem's name away; the caller drops the name's reference. */
static void wsem_ns_unlink_one(struct wsem_ns *wns, struct wsem *sem)
{
	lockdep_assert_held(&wns->lock);

	rb_erase(&sem->node, &wns->names);
	wns->nr_names--;
	spin_lock(sem->lock);
	sem->linked = false;
	spin_unlock(sem->lock);
}

/*
 * Charge a new semaphore to @wns and to its user there (see "Limits" at
 * the top), within the namespace's limit; without CAP_SYS_RESOURCE over
 * the namespace (checked last: only a use of it is audited), within the
 * user's limit and short of the administrator's reserve.  A user's count
 * is made only for a charge that passes the limits, so that failed
 * attempts leave nothing behind.
 */
static int wsem_ns_charge(struct wsem_ns *wns, struct wsem *sem)
{
	struct user_namespace *owner = current->nsproxy->ipc_ns->user_ns;
	unsigned int max = READ_ONCE(max_sems_per_ns);
	unsigned int nr = atomic_read(&wns->nr_sems);
	kuid_t uid = wsem_charged_uid(owner, sem->uid);
	struct wsem_user *u, *child = NULL;

	lockdep_assert_held(&wns->lock);

	if (nr >= max)
		return -ENOSPC;
	if ((nr >= max - max / WSEM_RESERVE_PART ||
	     wsem_users_count(&wns->users, uid) >=
	     READ_ONCE(max_sems_per_user)) &&
	    !ns_capable(owner, CAP_SYS_RESOURCE))
		return -ENOSPC;

	/* Only charging (under @wns->lock) adds a count: no limit here. */
	u = wsem_users_add(&wns->users, uid, UINT_MAX);
	if (IS_ERR(u))
		return PTR_ERR(u);
	if (sem->parent) {
		child = wsem_child_charge(sem->uid);
		if (IS_ERR(child)) {
			wsem_users_drop(&wns->users, u);
			return PTR_ERR(child);
		}
	}
	atomic_inc(&wns->nr_sems);
	kref_get(&wns->ref);
	sem->quota = u;
	sem->child_quota = child;
	sem->wns = wns;
	return 0;
}

/*
 * Bind @h to @sem, created by the caller (its reference passed here), after
 * charging it, and name it if it has a name.  On failure nothing changed
 * (@sem is freed).
 */
static int wsem_ns_add(struct wsem_ns *wns, struct wsem_handle *h,
		       struct wsem *sem)
{
	int ret;

	lockdep_assert_held(&wns->lock);

	ret = wsem_ns_charge(wns, sem);
	if (!ret)
		ret = wsem_bind(h, sem);
	if (!ret && sem->name[0])
		wsem_ns_link(wns, sem);
	else
		wsem_put(sem);	/* the caller's; wns is pinned by it too */
	return ret;
}

/* A new semaphore for the caller's namespace, as WSEM_IOC_OPEN's @flags say. */
static struct wsem *wsem_ns_alloc(u64 flags, u64 capacity, umode_t mode,
				  const char *name, struct wsem *parent)
{
	struct user_namespace *user_ns = current->nsproxy->ipc_ns->user_ns;

	if (flags & WSEM_OPEN_LOANS)
		return wsem_alloc(0, capacity, mode, name, user_ns, parent);
	return wsem_alloc(capacity, 0, mode, name, user_ns, parent);
}

/*
 * Tell the watchers of @wns's wsemfs that @name came or went (@mask:
 * FS_CREATE or FS_DELETE) through the ioctls, or with a dead namespace:
 * what goes through the file system (unlink(2) of a file) the VFS tells
 * itself.  Only the root is told: WSEM_JOBSERVER_DIR has no inode that
 * lasts (each lookup makes one), so none that a watch could be on.  Called
 * without @wns->lock; @wns->sb_lock keeps the superblock's root alive.
 */
static void wsem_ns_tell_watchers(struct wsem_ns *wns, const char *name,
				  u32 mask)
{
	const struct qstr qname = QSTR_INIT(name, strlen(name));
	struct inode *dir;

	mutex_lock(&wns->sb_lock);
	if (wns->sb) {
		dir = d_inode(wns->sb->s_root);
		wsem_fsnotify_name(mask, dir, dir, &qname);
	}
	mutex_unlock(&wns->sb_lock);
}

/**
 * wsem_ns_mounted() - note the superblock of @wns's wsemfs, made with its
 *	root, whose watchers are told of the names that come and go
 * @wns: the namespace
 * @sb: the superblock
 *
 * Context: Process context, under @sb->s_umount; takes @wns->sb_lock.
 */
void wsem_ns_mounted(struct wsem_ns *wns, struct super_block *sb)
{
	mutex_lock(&wns->sb_lock);
	wns->sb = sb;
	mutex_unlock(&wns->sb_lock);
}

/**
 * wsem_ns_unmounting() - forget the superblock of @wns's wsemfs, before it
 *	is shut down
 * @wns: the namespace
 * @sb: the superblock, noted by wsem_ns_mounted() or not (a mount that
 *	failed)
 *
 * Context: Process context, under @sb->s_umount; takes @wns->sb_lock.
 */
void wsem_ns_unmounting(struct wsem_ns *wns, struct super_block *sb)
{
	mutex_lock(&wns->sb_lock);
	if (wns->sb == sb)
		wns->sb = NULL;
	mutex_unlock(&wns->sb_lock);
}

/**
 * wsem_ns_open() - bind a handle to a named semaphore
 * @h: an open handle
 * @name: a valid name
 * @flags: WSEM_OPEN_CREAT, WSEM_OPEN_EXCL and WSEM_OPEN_LOANS
 * @capacity: capacity if created (with WSEM_OPEN_LOANS its ceiling, and its
 *	own capacity 0), already checked
 * @mode: permission bits if created, umask applied
 * @mask: MAY_READ | MAY_WRITE, or MAY_READ for a handle that only watches:
 *	what an existing semaphore's mode must grant (wsem_permission())
 * @parent: the parent of a semaphore this call creates (the caller checked
 *	it may have children), or NULL; an existing semaphore of that name
 *	must have that parent
 *
 * Context: Process context; takes the namespace's lock.
 * Return: 0; -EBUSY if @h is bound; -EEXIST, -ENOENT, -EACCES, -ENOSPC or
 * -ENOMEM, and then nothing changed.
 */
int wsem_ns_open(struct wsem_handle *h, const char *name, u64 flags,
		 u64 capacity, umode_t mode, int mask, struct wsem *parent)
{
	bool create = flags & WSEM_OPEN_CREAT, created = false;
	struct wsem *sem, *new = NULL;
	struct wsem_ns *wns;
	int absent = -ENOENT;	/* what a name not found is */
	int ret;

	if (READ_ONCE(h->sem))
		return -EBUSY;
	wns = wsem_ns_get(create);
	if (IS_ERR_OR_NULL(wns))
		return wns ? PTR_ERR(wns) : -ENOENT;
	if (create) {
		new = wsem_ns_alloc(flags, capacity, mode, name, parent);
		if (IS_ERR(new)) {
			ret = PTR_ERR(new);
			new = NULL;
			/* A full tree may still open a child that exists. */
			if (ret != -ENOSPC)
				goto out;
			absent = ret;
		}
	}

	mutex_lock(&wns->lock);
	sem = wsem_ns_find(wns, name);
	if (!sem) {
		ret = new ? wsem_ns_add(wns, h, new) : absent;
		created = new && !ret;
		new = NULL;
	} else if ((create && (flags & WSEM_OPEN_EXCL)) ||
		   (parent && sem->parent != parent)) {
		ret = -EEXIST;
	} else {
		ret = wsem_permission(sem, mask, true);
		if (!ret)
			ret = wsem_bind(h, sem);
	}
	mutex_unlock(&wns->lock);
	if (created)
		wsem_ns_tell_watchers(wns, name, FS_CREATE);
	if (new)
		wsem_put(new);	/* not needed: never charged */
out:
	wsem_ns_put(wns);
	return ret;
}

/**
 * wsem_ns_open_anon() - bind a handle to a new anonymous semaphore
 * @h: an open handle
 * @flags: WSEM_OPEN_ANON, and WSEM_OPEN_LOANS
 * @parent: its parent, checked by the caller, or NULL
 * @capacity: its capacity (with WSEM_OPEN_LOANS its ceiling, and its own
 *	capacity 0), already checked
 *
 * The semaphore is charged to the caller's namespace, owned by the caller,
 * mode 0600.
 *
 * Context: Process context; takes the namespace's lock.
 * Return: 0; -EBUSY if @h is bound; -ENOSPC or -ENOMEM.
 */
int wsem_ns_open_anon(struct wsem_handle *h, u64 flags, u64 capacity,
		      struct wsem *parent)
{
	struct wsem_ns *wns;
	struct wsem *sem;
	int ret;

	if (READ_ONCE(h->sem))
		return -EBUSY;
	wns = wsem_ns_get(true);
	if (IS_ERR(wns))
		return PTR_ERR(wns);
	sem = wsem_ns_alloc(flags, capacity, 0600, NULL, parent);
	if (!IS_ERR(sem)) {
		mutex_lock(&wns->lock);
		ret = wsem_ns_add(wns, h, sem);
		mutex_unlock(&wns->lock);
	} else {
		ret = PTR_ERR(sem);
	}
	wsem_ns_put(wns);
	return ret;
}

/**
 * wsem_ns_unlink() - remove a name from the caller's namespace
 * @name: a valid name
 *
 * Handles bound to the semaphore keep working; it is freed with the last.
 *
 * Context: Process context; takes the namespace's lock.
 * Return: 0, -ENOENT, or -EPERM unless the caller owns it or has
 * CAP_IPC_OWNER.
 */
int wsem_ns_unlink(const char *name)
{
	struct wsem_ns *wns;
	struct wsem *sem;
	int ret = 0;

	wns = wsem_ns_get(false);
	if (!wns)
		return -ENOENT;
	mutex_lock(&wns->lock);
	sem = wsem_ns_find(wns, name);
	if (!sem)
		ret = -ENOENT;
	else if (!wsem_owner_or_capable(sem))
		ret = -EPERM;
	else
		wsem_ns_unlink_one(wns, sem);
	mutex_unlock(&wns->lock);
	if (!ret) {
		wsem_ns_tell_watchers(wns, name, FS_DELETE);
		wsem_put(sem);
	}
	wsem_ns_put(wns);
	return ret;
}

/**
 * wsem_ns_find_get() - look a name up in a namespace
 * @wns: the namespace
 * @name: NUL-terminated, of any length and bytes
 *
 * Context: Process context; takes @wns->lock.
 * Return: the semaphore with a reference for the caller, or NULL.
 */
struct wsem *wsem_ns_find_get(struct wsem_ns *wns, const char *name)
{
	struct wsem *sem;

	mutex_lock(&wns->lock);
	sem = wsem_ns_find(wns, name);
	if (sem)
		kref_get(&sem->ref);
	mutex_unlock(&wns->lock);
	return sem;
}

/**
 * wsem_ns_unlink_sem() - take a semaphore's name away, if it still has it
 * @wns: the namespace that the caller found it in
 * @sem: the semaphore; the caller decided it may
 *
 * Context: Process context; takes @wns->lock.
 * Return: 0, or -ENOENT if it has no name in @wns any more.
 */
int wsem_ns_unlink_sem(struct wsem_ns *wns, struct wsem *sem)
{
	bool linked;

	mutex_lock(&wns->lock);
	linked = sem->wns == wns && sem->linked;
	if (linked)
		wsem_ns_unlink_one(wns, sem);
	mutex_unlock(&wns->lock);
	if (!linked)
		return -ENOENT;
	wsem_put(sem);		/* the name's; the caller has its own */
	return 0;
}

/**
 * wsem_ns_set_owner() - give a semaphore a new owner, group or mode
 * @wns: its namespace
 * @sem: the semaphore; the caller checked that this may be done
 * @valid: which of the three change: ATTR_UID, ATTR_GID, ATTR_MODE
 * @uid: the new owner
 * @gid: the new group
 * @mode: the new permission bits
 *
 * Under @wns->lock, so that an open by name checks either the old or the
 * new ones, and two changes at once each keep what the other did not
 * change; readers without that lock see each field old or new.
 *
 * Context: Process context; takes @wns->lock.
 */
void wsem_ns_set_owner(struct wsem_ns *wns, struct wsem *sem,
		       unsigned int valid, kuid_t uid, kgid_t gid,
		       umode_t mode)
{
	mutex_lock(&wns->lock);
	if (valid & ATTR_UID)
		WRITE_ONCE(sem->uid, uid);
	if (valid & ATTR_GID)
		WRITE_ONCE(sem->gid, gid);
	if (valid & ATTR_MODE)
		WRITE_ONCE(sem->mode, mode & 0777);
	mutex_unlock(&wns->lock);
}

/**
 * wsem_ns_names_at() - names of a namespace from the @pos-th, in name order
 * @wns: the namespace
 * @pos: from 0
 * @names: room for @max names, WSEM_NAME_MAX bytes each
 * @ids: room for their semaphores' ids
 * @max: at most this many
 *
 * A directory listing calls it batch after batch: names coming and going
 * meanwhile may be missed or seen twice, as in any directory.
 *
 * Context: Process context; takes @wns->lock.
 * Return: how many names were copied; 0 past the last one.
 */
int wsem_ns_names_at(struct wsem_ns *wns, loff_t pos, char *names, int *ids,
		     int max)
{
	struct rb_node *node;
	struct wsem *sem;
	int n = 0;

	mutex_lock(&wns->lock);
	if (pos >= 0 && pos < wns->nr_names) {
		for (node = rb_first(&wns->names); pos--; )
			node = rb_next(node);
		for (; node && n < max; node = rb_next(node), n++) {
			sem = rb_entry(node, struct wsem, node);
			memcpy(names + n * WSEM_NAME_MAX, sem->name, WSEM_NAME_MAX);
			ids[n] = sem->id;
		}
	}
	mutex_unlock(&wns->lock);
	return n;
}

/**
 * wsem_ns_inum() - which IPC namespace @wns is, for user space
 * @wns: a namespace
 *
 * Return: its nsfs inode number (the N of "ipc:[N]").
 */
unsigned int wsem_ns_inum(const struct wsem_ns *wns)
{
	return wns->inum;
}

/**
 * wsem_ns_is_current() - is @wns the caller's IPC namespace?
 * @wns: a namespace
 *
 * Return: true if the caller's IPC namespace is @wns's.
 */
bool wsem_ns_is_current(const struct wsem_ns *wns)
{
	return wns->mq_mnt == current->nsproxy->ipc_ns->mq_mnt;
}

/* Describe into @st, up to @count, the names of @wns the caller may read. */
static u32 wsem_ns_fill(struct wsem_ns *wns, struct wsem_stat *st, u32 count,
			u64 *total)
{
	struct rb_node *node;
	u32 n = 0;

	lockdep_assert_held(&wns->lock);

	*total = 0;
	for (node = rb_first(&wns->names); node; node = rb_next(node)) {
		struct wsem *sem = rb_entry(node, struct wsem, node);

		if (wsem_permission(sem, MAY_READ, false))
			continue;
		if (n < count)
			wsem_fill_stat(sem, NULL, &st[n++], false, true);
		(*total)++;
	}
	return n;
}

/**
 * wsem_ns_list() - describe the named semaphores the caller may read
 * @stats: set to a kvmalloc()ed array, or NULL; the caller kvfree()s it
 * @count: room the caller has
 * @total: set to how many there are, in name order
 *
 * Context: Process context; takes the namespace's lock.
 * Return: how many of them were described in @stats (at most @count), or
 * -ENOMEM.
 */
int wsem_ns_list(struct wsem_stat **stats, u32 count, u64 *total)
{
	struct wsem_stat *st = NULL;
	struct wsem_ns *wns;
	u32 room, n = 0;

	*stats = NULL;
	*total = 0;
	wns = wsem_ns_get(false);
	if (!wns)
		return 0;
	for (;;) {
		/* Room for what is there now; more names mean another go. */
		room = min(count, READ_ONCE(wns->nr_names));
		if (room) {
			st = kvcalloc(room, sizeof(*st), WSEM_GFP);
			if (!st) {
				wsem_ns_put(wns);
				return -ENOMEM;
			}
		}
		mutex_lock(&wns->lock);
		if (room >= min(count, wns->nr_names))
			break;
		mutex_unlock(&wns->lock);
		kvfree(st);
		st = NULL;
	}
	n = wsem_ns_fill(wns, st, room, total);
	mutex_unlock(&wns->lock);
	wsem_ns_put(wns);
	*stats = st;
	return n;
}

/*
 * Drop every name of @wns, each told to wsemfs's watchers (without the
 * lock, as wsem_ns_tell_watchers() needs), unpin its mount and the registry's
 * reference.
 */
static void wsem_ns_forget(struct wsem_ns *wns)
{
	struct rb_node *node;
	struct wsem *sem;

	for (;;) {
		mutex_lock(&wns->lock);
		node = rb_first(&wns->names);
		sem = node ? rb_entry(node, struct wsem, node) : NULL;
		if (sem)
			wsem_ns_unlink_one(wns, sem);
		mutex_unlock(&wns->lock);
		if (!sem)
			break;
		wsem_ns_tell_watchers(wns, sem->name, FS_DELETE);
		/* The name's: the registry's reference holds @wns. */
		wsem_put(sem);
	}
	mntput(wns->mq_mnt);
	wsem_ns_put(wns);
}

static bool wsem_ns_dead(const struct wsem_ns *wns)
{
	return READ_ONCE(wns->mq_mnt->mnt_sb->s_fs_info) != wns->ipc_ns;
}

/*
 * Forget every namespace that has died since the last pass.  It holds
 * wsem_ns_lock only to look and to unregister; nobody working in a live
 * namespace waits for it.
 */
static void wsem_ns_reap(struct work_struct *work)
{
	struct wsem_ns *wns, *next;
	LIST_HEAD(dead);

	mutex_lock(&wsem_ns_lock);
	list_for_each_entry_safe(wns, next, &wsem_ns_others, node) {
		if (!wsem_ns_dead(wns))
			continue;
		rhashtable_remove_fast(&wsem_ns_table, &wns->hnode,
				       wsem_ns_params);
		list_move(&wns->node, &dead);
	}
	if (!list_empty(&wsem_ns_others))
		schedule_delayed_work(&wsem_reaper, HZ);
	mutex_unlock(&wsem_ns_lock);

	list_for_each_entry_safe(wns, next, &dead, node)
		wsem_ns_forget(wns);
}

/**
 * wsem_ns_init() - set up the namespace registry at module load
 *
 * Return: 0 or -ENOMEM.
 */
int wsem_ns_init(void)
{
	return rhashtable_init(&wsem_ns_table, &wsem_ns_params);
}

static void wsem_ns_forget_one(void *ptr, void *arg)
{
	wsem_ns_forget(ptr);
}

/**
 * wsem_ns_exit() - forget every namespace at module unload
 *
 * Context: Process context, no handle open any more.
 */
void wsem_ns_exit(void)
{
	cancel_delayed_work_sync(&wsem_reaper);
	rhashtable_free_and_destroy(&wsem_ns_table, wsem_ns_forget_one, NULL);
	/* The namespaces are freed after a grace period, by kfree_rcu(). */
	rcu_barrier();
}
