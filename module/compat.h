/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel interfaces that differ between the kernels wsem builds on
 * (Linux 5.10 to 7.2), so that the rest of the module is written for the
 * newest.  What the target kernel has is found by module/probes.sh, which
 * Kbuild runs first: compat-probes.h holds its WSEM_HAVE_* answers.  No
 * version number is tested here.
 *
 * Where an older kernel lacks a function that the newer one has under the
 * same meaning, the newer one is written here under its own name
 * (rb_find(), inode_just_drop(), ...).  Where the signature changed, a
 * wsem_ wrapper or adapter takes the newest form.
 *
 * Before 6.3 the VFS gave inode operations the mount's user namespace
 * where it now gives a struct mnt_idmap; before 5.12 it gave neither (no
 * idmapped mounts: the initial user namespace stands for "no mapping").
 * The name mnt_idmap means struct user_namespace on those kernels, so the
 * core passes along what the VFS gave, type-checked.
 */
#ifndef _WSEM_COMPAT_H
#define _WSEM_COMPAT_H

#include <linux/dcache.h>
#include <linux/file.h>		/* fput() (vma_set_file() before 5.11) */
#include <linux/fs.h>
#include <linux/fs_struct.h>	/* current_umask() (7.x: no longer in fs.h) */
#include <linux/fsnotify.h>
#include <linux/hrtimer.h>
#include <linux/mm.h>		/* kvmalloc() and kin (before 5.16) */
#include <linux/nsproxy.h>
#include <linux/rbtree.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/time_namespace.h>
#include <linux/user_namespace.h>

#include "compat-probes.h"

/* The file of a struct fd (6.12: the struct is one word). */
#ifndef fd_file
#define fd_file(f)	((f).file)
#endif

#ifndef TIF_NOTIFY_SIGNAL
#error "wsem needs TIF_NOTIFY_SIGNAL (Linux 5.11, or a backport as Debian's 5.10 has)"
#endif

/*
 * Configurations.  The holders view shows each holder's cgroup v2, which
 * every kernel that runs containers has.  Deadlines are taken in the
 * caller's time namespace where the kernel has them (CONFIG_TIME_NS):
 * wsem_timens_offset() is the offset of the caller's namespace on @clock,
 * 0 without them.
 */
#ifndef CONFIG_CGROUPS
#error "wsem shows the holders' cgroups: it needs CONFIG_CGROUPS"
#endif

#ifdef CONFIG_TIME_NS
static inline ktime_t wsem_timens_offset(clockid_t clock)
{
	const struct timens_offsets *o = &current->nsproxy->time_ns->offsets;

	if (clock == CLOCK_MONOTONIC)
		return timespec64_to_ktime(o->monotonic);
	if (clock == CLOCK_BOOTTIME)
		return timespec64_to_ktime(o->boottime);
	return 0;
}
#else
static inline ktime_t wsem_timens_offset(clockid_t clock)
{
	return 0;
}
#endif

/*
 * Idmapped mounts (mount_setattr(MOUNT_ATTR_IDMAP)) came in 5.12; without
 * FS_ALLOW_IDMAP the kernel refuses to idmap a mount of ours (EINVAL).
 */
#ifdef FS_ALLOW_IDMAP
#define WSEM_FS_ALLOW_IDMAP	FS_ALLOW_IDMAP
#else
#define WSEM_FS_ALLOW_IDMAP	0
#endif

#if !defined(WSEM_HAVE_IOP_MNT_IDMAP)
#define mnt_idmap user_namespace
#endif

/* setattr_prepare() and setattr_copy() with the mount's id mapping. */
#if defined(WSEM_HAVE_SETATTR_MNT_IDMAP) || defined(WSEM_HAVE_SETATTR_USERNS)
static inline int wsem_setattr_prepare(struct mnt_idmap *idmap,
				       struct dentry *dentry,
				       struct iattr *attr)
{
	return setattr_prepare(idmap, dentry, attr);
}

static inline void wsem_setattr_copy(struct mnt_idmap *idmap,
				     struct inode *inode,
				     const struct iattr *attr)
{
	setattr_copy(idmap, inode, attr);
}
#else
static inline int wsem_setattr_prepare(struct mnt_idmap *idmap,
				       struct dentry *dentry,
				       struct iattr *attr)
{
	return setattr_prepare(dentry, attr);
}

static inline void wsem_setattr_copy(struct mnt_idmap *idmap,
				     struct inode *inode,
				     const struct iattr *attr)
{
	setattr_copy(inode, attr);
}
#endif

/* The new owner and group a chown of @inode asks for, as the fs's ids. */
#ifdef WSEM_HAVE_IATTR_VFSUID
static inline kuid_t wsem_attr_uid(struct mnt_idmap *idmap,
				   const struct inode *inode,
				   const struct iattr *attr)
{
	return from_vfsuid(idmap, i_user_ns(inode), attr->ia_vfsuid);
}

static inline kgid_t wsem_attr_gid(struct mnt_idmap *idmap,
				   const struct inode *inode,
				   const struct iattr *attr)
{
	return from_vfsgid(idmap, i_user_ns(inode), attr->ia_vfsgid);
}
#else
static inline kuid_t wsem_attr_uid(struct mnt_idmap *idmap,
				   const struct inode *inode,
				   const struct iattr *attr)
{
	return attr->ia_uid;
}

static inline kgid_t wsem_attr_gid(struct mnt_idmap *idmap,
				   const struct inode *inode,
				   const struct iattr *attr)
{
	return attr->ia_gid;
}
#endif

/*
 * The VFS's permission check of @file's inode for @mask (MAY_READ,
 * MAY_WRITE), through the id mapping of the mount it was opened on.
 */
static inline int wsem_file_permission(struct file *file, int mask)
{
#if defined(WSEM_HAVE_INODE_PERMISSION_MNT_IDMAP)
	return inode_permission(file_mnt_idmap(file), file_inode(file), mask);
#elif defined(WSEM_HAVE_INODE_PERMISSION_USERNS)
	return inode_permission(file_mnt_user_ns(file), file_inode(file), mask);
#else
	return inode_permission(file_inode(file), mask);
#endif
}

/* stat(2)'s answer from @inode: with the request mask since 6.6. */
#if defined(WSEM_HAVE_GENERIC_FILLATTR_MASK)
static inline void wsem_generic_fillattr(struct mnt_idmap *idmap,
					 u32 request_mask,
					 struct inode *inode,
					 struct kstat *stat)
{
	generic_fillattr(idmap, request_mask, inode, stat);
}
#elif defined(WSEM_HAVE_IOP_MNT_IDMAP) || defined(WSEM_HAVE_IOP_USERNS)
static inline void wsem_generic_fillattr(struct mnt_idmap *idmap,
					 u32 request_mask,
					 struct inode *inode,
					 struct kstat *stat)
{
	generic_fillattr(idmap, inode, stat);
}
#else
static inline void wsem_generic_fillattr(struct mnt_idmap *idmap,
					 u32 request_mask,
					 struct inode *inode,
					 struct kstat *stat)
{
	generic_fillattr(inode, stat);
}
#endif

/*
 * fs.c's setattr, getattr, permission and d_revalidate, typed as the
 * newest kernel types them; wsem_iop_setattr, wsem_iop_getattr,
 * wsem_iop_permission and wsem_d_revalidate are what the target kernel's
 * operations tables take.
 */
int wsemfs_setattr(struct mnt_idmap *idmap, struct dentry *dentry,
		   struct iattr *attr);
int wsemfs_getattr(struct mnt_idmap *idmap, const struct path *path,
		   struct kstat *stat, u32 request_mask,
		   unsigned int query_flags);
int wsemfs_d_revalidate(struct inode *dir, const struct qstr *name,
			struct dentry *dentry, unsigned int flags);
int wsemfs_permission(struct mnt_idmap *idmap, struct inode *inode, int mask);

#if defined(WSEM_HAVE_IOP_MNT_IDMAP) || defined(WSEM_HAVE_IOP_USERNS)
#define wsem_iop_setattr	wsemfs_setattr
#define wsem_iop_getattr	wsemfs_getattr
#define wsem_iop_permission	wsemfs_permission

static inline int wsem_generic_permission(struct mnt_idmap *idmap,
					  struct inode *inode, int mask)
{
	return generic_permission(idmap, inode, mask);
}
#else
static inline int wsem_iop_setattr(struct dentry *dentry, struct iattr *attr)
{
	return wsemfs_setattr(&init_user_ns, dentry, attr);
}

static inline int wsem_iop_getattr(const struct path *path,
				   struct kstat *stat, u32 request_mask,
				   unsigned int query_flags)
{
	return wsemfs_getattr(&init_user_ns, path, stat, request_mask,
			      query_flags);
}

static inline int wsem_iop_permission(struct inode *inode, int mask)
{
	return wsemfs_permission(&init_user_ns, inode, mask);
}

static inline int wsem_generic_permission(struct mnt_idmap *idmap,
					  struct inode *inode, int mask)
{
	return generic_permission(inode, mask);
}
#endif

/* Before 6.14 the VFS did not say the parent: NULL, and the own name. */
#ifdef WSEM_HAVE_D_REVALIDATE_NAME
#define wsem_d_revalidate	wsemfs_d_revalidate
#else
static inline int wsem_d_revalidate(struct dentry *dentry, unsigned int flags)
{
	return wsemfs_d_revalidate(NULL, &dentry->d_name, dentry, flags);
}
#endif

/*
 * Inode operations that refuse with -EPERM (wsemfs makes nothing through
 * them), typed for the target kernel.
 */
#if defined(WSEM_HAVE_IOP_MNT_IDMAP) || defined(WSEM_HAVE_IOP_USERNS)
static inline int wsem_refuse_create(struct mnt_idmap *idmap,
				     struct inode *dir, struct dentry *dentry,
				     umode_t mode, bool excl)
{
	return -EPERM;
}

static inline int wsem_refuse_mknod(struct mnt_idmap *idmap,
				    struct inode *dir, struct dentry *dentry,
				    umode_t mode, dev_t dev)
{
	return -EPERM;
}

static inline int wsem_refuse_symlink(struct mnt_idmap *idmap,
				      struct inode *dir,
				      struct dentry *dentry,
				      const char *target)
{
	return -EPERM;
}

static inline int wsem_refuse_rename(struct mnt_idmap *idmap,
				     struct inode *old_dir,
				     struct dentry *old, struct inode *new_dir,
				     struct dentry *new, unsigned int flags)
{
	return -EPERM;
}
#else
static inline int wsem_refuse_create(struct inode *dir, struct dentry *dentry,
				     umode_t mode, bool excl)
{
	return -EPERM;
}

static inline int wsem_refuse_mknod(struct inode *dir, struct dentry *dentry,
				    umode_t mode, dev_t dev)
{
	return -EPERM;
}

static inline int wsem_refuse_symlink(struct inode *dir,
				      struct dentry *dentry,
				      const char *target)
{
	return -EPERM;
}

static inline int wsem_refuse_rename(struct inode *old_dir,
				     struct dentry *old, struct inode *new_dir,
				     struct dentry *new, unsigned int flags)
{
	return -EPERM;
}
#endif

/* 6.15: mkdir returns the dentry it made. */
#if defined(WSEM_HAVE_MKDIR_DENTRY)
static inline struct dentry *wsem_refuse_mkdir(struct mnt_idmap *idmap,
					       struct inode *dir,
					       struct dentry *dentry,
					       umode_t mode)
{
	return ERR_PTR(-EPERM);
}
#elif defined(WSEM_HAVE_IOP_MNT_IDMAP) || defined(WSEM_HAVE_IOP_USERNS)
static inline int wsem_refuse_mkdir(struct mnt_idmap *idmap,
				    struct inode *dir, struct dentry *dentry,
				    umode_t mode)
{
	return -EPERM;
}
#else
static inline int wsem_refuse_mkdir(struct inode *dir, struct dentry *dentry,
				    umode_t mode)
{
	return -EPERM;
}
#endif

static inline int wsem_refuse_link(struct dentry *old, struct inode *dir,
				   struct dentry *dentry)
{
	return -EPERM;
}

/*
 * Tell the watchers of directory @dir that @name in it had event @mask,
 * with @data, an inode, as the event's data.  5.16 (and Debian's 5.10)
 * give fsnotify_name() the data and its type; before, it took the child
 * inode first, and fsnotify() itself takes what the newer one passes on.
 */
#ifdef WSEM_HAVE_FSNOTIFY_NAME_DATA
static inline void wsem_fsnotify_name(u32 mask, struct inode *data,
				      struct inode *dir,
				      const struct qstr *name)
{
	fsnotify_name(mask, data, FSNOTIFY_EVENT_INODE, dir, name, 0);
}
#else
static inline void wsem_fsnotify_name(u32 mask, struct inode *data,
				      struct inode *dir,
				      const struct qstr *name)
{
	fsnotify(mask, data, FSNOTIFY_EVENT_INODE, dir, name, NULL, 0);
}
#endif

/* 6.17: a superblock's default dentry operations are set by a call. */
#ifndef WSEM_HAVE_SET_DEFAULT_D_OP
static inline void set_default_d_op(struct super_block *sb,
				    const struct dentry_operations *ops)
{
	sb->s_d_op = ops;
}
#endif

/* 6.18 renamed generic_delete_inode(). */
#ifndef WSEM_HAVE_INODE_JUST_DROP
#define inode_just_drop	generic_delete_inode
#endif

/* 6.6: a new inode's times, set together. */
#ifndef WSEM_HAVE_INODE_INIT_TS
static inline struct timespec64 simple_inode_init_ts(struct inode *inode)
{
	struct timespec64 now = current_time(inode);

	inode->i_atime = now;
	inode->i_mtime = now;
	inode->i_ctime = now;
	return now;
}
#endif

/* 5.12: searching and inserting by a comparison function. */
#ifndef WSEM_HAVE_RB_FIND_ADD
static inline struct rb_node *
rb_find(const void *key, const struct rb_root *tree,
	int (*cmp)(const void *key, const struct rb_node *node))
{
	struct rb_node *node = tree->rb_node;
	int c;

	while (node) {
		c = cmp(key, node);
		if (!c)
			return node;
		node = c < 0 ? node->rb_left : node->rb_right;
	}
	return NULL;
}

static inline void rb_add(struct rb_node *node, struct rb_root *tree,
			  bool (*less)(struct rb_node *a,
				       const struct rb_node *b))
{
	struct rb_node **link = &tree->rb_node, *parent = NULL;

	while (*link) {
		parent = *link;
		link = less(node, parent) ? &parent->rb_left :
					    &parent->rb_right;
	}
	rb_link_node(node, parent, link);
	rb_insert_color(node, tree);
}
#endif

#if !defined(WSEM_HAVE_HRTIMER_SETUP)
static inline void hrtimer_setup(struct hrtimer *timer,
				 enum hrtimer_restart (*fn)(struct hrtimer *),
				 clockid_t clock_id, enum hrtimer_mode mode)
{
	hrtimer_init(timer, clock_id, mode);
	timer->function = fn;
}
#endif

/* 6.3: a VMA's flags are set and cleared by calls. */
#ifndef WSEM_HAVE_VM_FLAGS_SET
static inline void vm_flags_set(struct vm_area_struct *vma, vm_flags_t flags)
{
	vma->vm_flags |= flags;
}

static inline void vm_flags_clear(struct vm_area_struct *vma,
				  vm_flags_t flags)
{
	vma->vm_flags &= ~flags;
}
#endif

/* 5.11: a mapping's file is swapped by a call, in ->mmap only. */
#ifndef WSEM_HAVE_VMA_SET_FILE
static inline void vma_set_file(struct vm_area_struct *vma, struct file *file)
{
	get_file(file);
	swap(vma->vm_file, file);
	fput(file);
}
#endif

#endif /* _WSEM_COMPAT_H */
