// SPDX-License-Identifier: GPL-2.0
/*
 * wsem: how many semaphores each user has: the counts that ns.c's limits
 * are checked against (struct wsem_users), and whom a creator is charged
 * as.
 *
 * One user, as mqueue charges RLIMIT_MSGQUEUE (inc_rlimit_ucounts()): what
 * is created from inside a user namespace counts, in the user namespace
 * above, against the user who owns it, and so on up the chain; else a user
 * with a range of subordinate ids (a rootless container's 65,536) would
 * have a limit per id.  The limit is the same at every level, and what a
 * level counts for a user is part of what the level above counts for the
 * owner, so only the top level can refuse: only it is kept
 * (wsem_charged_uid()).  A count lives while its user has semaphores
 * counted there: the last wsem_users_drop() frees it.
 *
 * Children are counted once more, per user of the initial user namespace,
 * across every IPC namespace (wsem_child_charge()): every IPC namespace a
 * user makes (with a user namespace of its own, unshare(CLONE_NEWUSER |
 * CLONE_NEWIPC)) brings fresh per-namespace limits, but children under a
 * host's semaphore, seen through a bind mount or a passed handle, all
 * count here: at most max_children_per_user, but with CAP_SYS_RESOURCE in
 * the initial user namespace.
 *
 * Calls params.c (max_children_per_user, test knobs).
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/err.h>
#include <linux/moduleparam.h>
#include <linux/rbtree.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/user_namespace.h>

#include "wsem.h"

/**
 * struct wsem_user - how many semaphores one user has in one place
 * @node: in struct wsem_users @tree
 * @uid: the user counted (wsem_charged_uid())
 * @nr: semaphores counted for it that still exist, at least 1: the last
 *	wsem_users_drop() frees it
 *
 * Protected by its struct wsem_users @lock.
 */
struct wsem_user {
	struct rb_node node;
	kuid_t uid;
	unsigned int nr;
};

/* Children by the user of the initial user namespace they count for. */
static struct wsem_users wsem_child_users = {
	.lock = __SPIN_LOCK_UNLOCKED(wsem_child_users.lock),
	.tree = RB_ROOT,
};

#ifdef WSEM_TEST_KNOBS
/* Test builds only: how many per-user counts exist, in all places. */
static atomic_t wsem_test_users = ATOMIC_INIT(0);

module_param_cb(test_quota_nodes, &wsem_test_counter_ops, &wsem_test_users,
		0400);
MODULE_PARM_DESC(test_quota_nodes,
		 "Test builds only: per-user counts in memory, in all namespaces and of children");

static void wsem_test_count_users(int delta)
{
	atomic_add(delta, &wsem_test_users);
}
#else
static inline void wsem_test_count_users(int delta)
{
}
#endif

static int wsem_user_cmp(const void *uid, const struct rb_node *node)
{
	uid_t a = __kuid_val(*(const kuid_t *)uid);
	uid_t b = __kuid_val(rb_entry(node, struct wsem_user, node)->uid);

	return a < b ? -1 : a > b;
}

static bool wsem_user_less(struct rb_node *a, const struct rb_node *b)
{
	return wsem_user_cmp(&rb_entry(a, struct wsem_user, node)->uid, b) < 0;
}

/* @uid's count in @users, or NULL if it has none. */
static struct wsem_user *wsem_user_find(struct wsem_users *users, kuid_t uid)
{
	struct rb_node *node;

	lockdep_assert_held(&users->lock);

	node = rb_find(&uid, &users->tree, wsem_user_cmp);
	return node ? rb_entry(node, struct wsem_user, node) : NULL;
}

/**
 * wsem_users_init() - no user counted yet
 * @users: the counts
 */
void wsem_users_init(struct wsem_users *users)
{
	spin_lock_init(&users->lock);
	users->tree = RB_ROOT;
}

/**
 * wsem_users_count() - how many semaphores are counted for a user
 * @users: the counts
 * @uid: the user
 *
 * Context: Any context; takes @users->lock.
 * Return: the count, which may change as soon as the lock is dropped.
 */
unsigned int wsem_users_count(struct wsem_users *users, kuid_t uid)
{
	struct wsem_user *u;
	unsigned int nr;

	spin_lock(&users->lock);
	u = wsem_user_find(users, uid);
	nr = u ? u->nr : 0;
	spin_unlock(&users->lock);
	return nr;
}

/**
 * wsem_users_add() - count one more semaphore for a user, within a bound
 * @users: the counts
 * @uid: the user
 * @max: the most it may have counted (0 admits none)
 *
 * The user's count is made if it has none, and only for a charge that
 * passes @max: a failed attempt leaves nothing behind.
 *
 * Context: Process context, may sleep (allocates with no lock held).
 * Return: the user's count, to give wsem_users_drop() later, or an
 * ERR_PTR(): -ENOSPC at @max, -ENOMEM.
 */
struct wsem_user *wsem_users_add(struct wsem_users *users, kuid_t uid,
				 unsigned int max)
{
	struct wsem_user *u, *new = NULL;

	/* A drop may free a count while the lock is dropped. */
	for (;;) {
		spin_lock(&users->lock);
		u = wsem_user_find(users, uid);
		if (u || new)
			break;
		spin_unlock(&users->lock);
		new = kzalloc(sizeof(*new), WSEM_GFP);
		if (!new)
			return ERR_PTR(-ENOMEM);
	}
	if ((u ? u->nr : 0) >= max) {
		u = ERR_PTR(-ENOSPC);
	} else {
		if (!u) {
			u = new;
			new = NULL;
			u->uid = uid;
			rb_add(&u->node, &users->tree, wsem_user_less);
			wsem_test_count_users(1);
		}
		u->nr++;
	}
	spin_unlock(&users->lock);
	kfree(new);
	return u;
}

/**
 * wsem_users_drop() - count one semaphore less for a user
 * @users: the counts @u is in
 * @u: what wsem_users_add() returned; freed with its last semaphore
 *
 * Context: Any context that may kfree(); takes @users->lock.
 */
void wsem_users_drop(struct wsem_users *users, struct wsem_user *u)
{
	spin_lock(&users->lock);
	if (--u->nr)
		u = NULL;
	else
		rb_erase(&u->node, &users->tree);
	spin_unlock(&users->lock);
	if (u) {
		wsem_test_count_users(-1);
		kfree(u);
	}
}

/**
 * wsem_child_charge() - count one more child for its creator
 * @euid: the creator's effective uid
 *
 * Counted for the user of the initial user namespace that @euid is or is
 * below (wsem_charged_uid()), across every IPC namespace, within
 * max_children_per_user unless the caller has CAP_SYS_RESOURCE in the
 * initial user namespace (checked only past the limit: only a use of it
 * is audited).
 *
 * Context: Process context, may sleep.
 * Return: the count, to give wsem_child_uncharge(), or an ERR_PTR():
 * -ENOSPC, -ENOMEM.
 */
struct wsem_user *wsem_child_charge(kuid_t euid)
{
	kuid_t uid = wsem_charged_uid(&init_user_ns, euid);
	struct wsem_user *u;

	u = wsem_users_add(&wsem_child_users, uid,
			   READ_ONCE(max_children_per_user));
	if (u == ERR_PTR(-ENOSPC) && capable(CAP_SYS_RESOURCE))
		u = wsem_users_add(&wsem_child_users, uid, UINT_MAX);
	return u;
}

/**
 * wsem_child_uncharge() - a child counted by wsem_child_charge() is gone
 * @u: its count
 *
 * Context: Any context that may kfree().
 */
void wsem_child_uncharge(struct wsem_user *u)
{
	wsem_users_drop(&wsem_child_users, u);
}

/**
 * wsem_charged_uid() - whom a creator is counted as
 * @owner: the user namespace whose users are counted
 * @euid: the caller's effective uid
 *
 * @euid if the caller is in @owner itself; from a user namespace below
 * @owner, the owner of the one of its ancestors (or itself) that is a
 * child of @owner; of init_user_ns for a caller not below @owner.  See
 * "One user" at the top.
 *
 * Context: Process context (the caller's user namespace).
 * Return: the uid to count.
 */
kuid_t wsem_charged_uid(const struct user_namespace *owner, kuid_t euid)
{
	const struct user_namespace *ns = current_user_ns();

	for (; ns != owner && ns->parent; ns = ns->parent)
		euid = ns->owner;
	return euid;
}
