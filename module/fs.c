// SPDX-License-Identifier: GPL-2.0
/*
 * wsemfs: the named semaphores of an IPC namespace as files.
 *
 *	mount -t wsem none /sys/fs/wsem/
 *	wsem run /sys/fs/wsem/gpu --weight 2 -- job	# or bind-mount the file
 *
 * One superblock per IPC namespace (keyed by its struct wsem_ns, which it
 * holds: that keeps no IPC namespace alive), as mqueue does.  Nothing of
 * the directory is kept: a lookup finds the name in the namespace and
 * makes an inode for it, whose i_private holds the semaphore; readdir
 * walks the names.  Dentries are dropped as soon as they are unused, and
 * one whose semaphore lost its name (unlink by any path, or the death of
 * the namespace) fails revalidation, so the directory always shows the
 * names as they are.  A file that is still pinned (bind-mounted elsewhere)
 * opens no more once its semaphore has lost its name.
 *
 * Opening a file is opening a handle bound to its semaphore: the handles'
 * file operations are main.c's.  The VFS checks the file's mode on open,
 * unlink (sticky directory), chmod and chown; the semaphore's owner and
 * mode are the inode's, copied to the semaphore under the namespace's lock
 * so that the ioctl path sees them at once.
 *
 * WSEM_JOBSERVER_DIR ("@jobserver", which no name can be) is found by
 * lookup in the root but not listed there; it holds each semaphore's
 * jobserver endpoint under the semaphore's name, a fifo inode with the
 * semaphore's owner and mode and jobserver.c's file operations.
 */
#include <linux/fs.h>
#include <linux/fs_context.h>
#include <linux/kobject.h>
#include <linux/namei.h>
#include <linux/nsproxy.h>
#include <linux/ipc_namespace.h>
#include <linux/pagemap.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include <linux/user_namespace.h>

#include "wsem.h"

#define WSEMFS_ROOT_INO	1
/* WSEM_JOBSERVER_DIR; above it the endpoints' (ida's ids stay small) */
#define WSEMFS_JS_INO	0x80000000UL

static const struct inode_operations wsemfs_dir_iops;
static const struct inode_operations wsemfs_js_dir_iops;
static const struct inode_operations wsemfs_file_iops;
static const struct file_operations wsemfs_dir_fops;

/* main.c's wsem_fops, given by wsem_fs_init() */
static const struct file_operations *wsem_fs_fops;

/*
 * The inode of @sem's file (@type S_IFREG) or of its jobserver endpoint
 * (S_IFIFO, in WSEM_JOBSERVER_DIR: jobserver.c); takes over the caller's
 * reference to @sem.  Both have the semaphore's owner and mode.
 */
static struct inode *wsemfs_sem_inode(struct super_block *sb,
				      struct wsem *sem, umode_t type)
{
	struct inode *inode = new_inode(sb);

	if (!inode) {
		wsem_put(sem);
		return NULL;
	}
	inode->i_ino = (type == S_IFIFO ? WSEMFS_JS_INO : WSEMFS_ROOT_INO) +
		       1 + sem->id;
	inode->i_mode = type | READ_ONCE(sem->mode);
	inode->i_uid = READ_ONCE(sem->uid);
	inode->i_gid = READ_ONCE(sem->gid);
	inode->i_op = &wsemfs_file_iops;
	inode->i_fop = type == S_IFIFO ? &wsem_js_fops : wsem_fs_fops;
	inode->i_private = sem;
	simple_inode_init_ts(inode);
	return inode;
}

/*
 * The inode of a file or endpoint whose semaphore lost its name has no
 * link left, as an unlinked file has.  Under i_lock: clear_nlink() counts
 * the inode once in the superblock's s_remove_count, which two refreshes
 * at once, or one and wsemfs_unlink(), would otherwise count twice.
 */
static void wsemfs_drop_link(struct inode *inode)
{
	spin_lock(&inode->i_lock);
	if (inode->i_nlink)
		clear_nlink(inode);
	spin_unlock(&inode->i_lock);
}

/*
 * A semaphore's file and its endpoint are two inodes of one semaphore, and
 * chmod or chown of either goes to the semaphore (wsemfs_setattr()).  An
 * inode whose dentry is kept (open, bind-mounted) is not looked up anew,
 * so each takes the owner, mode and link count (0 once the semaphore lost
 * its name, by any path: wsemfs_drop_link()) from the semaphore again
 * before it is
 * checked (wsemfs_permission(), wsemfs_setattr()), stat'ed
 * (wsemfs_getattr()) or found by a path walk (wsemfs_d_revalidate()), as
 * procfs does for its pid inodes.  Under no lock: each field is the old
 * or the new one, as readers of @sem see it, and a refresh that read the
 * old ones may store them after a newer one did; the next refresh mends
 * it, and every use of the fields refreshes first.  The semaphore alone
 * holds the truth: nothing reads it back from an inode.
 */
static void wsemfs_refresh_inode(struct inode *inode)
{
	const struct wsem *sem = inode->i_private;

	WRITE_ONCE(inode->i_mode,
		   (inode->i_mode & S_IFMT) | READ_ONCE(sem->mode));
	WRITE_ONCE(inode->i_uid, READ_ONCE(sem->uid));
	WRITE_ONCE(inode->i_gid, READ_ONCE(sem->gid));
	if (!READ_ONCE(sem->linked) && READ_ONCE(inode->i_nlink))
		wsemfs_drop_link(inode);
}

/*
 * Whether @inode has what wsemfs_refresh_inode() would give it: what an
 * RCU-walk asks, which must not change an inode it holds no reference to.
 * A link count cleared while __destroy_inode() looks at it (clear_nlink()
 * stores 0 before it counts the inode in s_remove_count) warns there, and
 * one cleared after counts for ever: remount read-only fails with EBUSY.
 */
static bool wsemfs_inode_is_current(const struct inode *inode)
{
	const struct wsem *sem = inode->i_private;

	return (READ_ONCE(inode->i_mode) & ~S_IFMT) == READ_ONCE(sem->mode) &&
	       uid_eq(READ_ONCE(inode->i_uid), READ_ONCE(sem->uid)) &&
	       gid_eq(READ_ONCE(inode->i_gid), READ_ONCE(sem->gid)) &&
	       (READ_ONCE(sem->linked) || !READ_ONCE(inode->i_nlink));
}

/*
 * Give @inode its semaphore's owner, mode and link count, in a ref-walk;
 * in an RCU-walk (@rcu) only look: -ECHILD if it lacks them, for the
 * ref-walk to give them.  0 otherwise.
 */
static int wsemfs_update_inode(struct inode *inode, bool rcu)
{
	if (!rcu) {
		wsemfs_refresh_inode(inode);
		return 0;
	}
	return wsemfs_inode_is_current(inode) ? 0 : -ECHILD;
}

/*
 * WSEM_JOBSERVER_DIR, the directory of the jobserver endpoints: found by
 * lookup in the root, never listed there (SPEC.md: the root holds the
 * semaphores' files and nothing else); the root's owner's, read-only.
 */
static struct inode *wsemfs_js_dir_inode(struct inode *root)
{
	struct inode *inode = new_inode(root->i_sb);

	if (!inode)
		return NULL;
	inode->i_ino = WSEMFS_JS_INO;
	inode->i_mode = S_IFDIR | 0555;
	inode->i_uid = root->i_uid;
	inode->i_gid = root->i_gid;
	inode->i_op = &wsemfs_js_dir_iops;
	inode->i_fop = &wsemfs_dir_fops;
	set_nlink(inode, 2);
	simple_inode_init_ts(inode);
	return inode;
}

/* In the root, the semaphores' files; in WSEM_JOBSERVER_DIR, endpoints. */
static struct dentry *wsemfs_lookup(struct inode *dir, struct dentry *dentry,
				    unsigned int flags)
{
	bool root = dir->i_ino == WSEMFS_ROOT_INO;
	struct inode *inode = NULL;
	struct wsem *sem;

	if (dentry->d_name.len >= WSEM_NAME_MAX)
		return ERR_PTR(-ENAMETOOLONG);
	if (root && !strcmp(dentry->d_name.name, WSEM_JOBSERVER_DIR)) {
		inode = wsemfs_js_dir_inode(dir);
		if (!inode)
			return ERR_PTR(-ENOMEM);
		return d_splice_alias(inode, dentry);
	}
	sem = wsem_ns_find_get(dir->i_sb->s_fs_info, dentry->d_name.name);
	if (sem) {
		inode = wsemfs_sem_inode(dir->i_sb, sem,
					 root ? S_IFREG : S_IFIFO);
		if (!inode)
			return ERR_PTR(-ENOMEM);
	}
	return d_splice_alias(inode, dentry);
}

/**
 * wsemfs_d_revalidate() - whether a dentry of wsemfs is still valid
 * @dir: its parent (NULL on kernels before 6.14)
 * @name: its name
 * @dentry: the dentry
 * @flags: the lookup's flags
 *
 * A name is still there while its semaphore is linked; a miss never is.
 * A file's or endpoint's inode takes its semaphore's owner and mode anew,
 * in a ref-walk: an RCU-walk holds no reference to the inode, which may
 * be on its way to destroy_inode() (its last dentry killed on another
 * CPU), so it only reads, and asks for a ref-walk if anything changed.
 *
 * Return: 1 if valid, 0 if not, -ECHILD to leave RCU-walk.
 */
int wsemfs_d_revalidate(struct inode *dir, const struct qstr *name,
			struct dentry *dentry, unsigned int flags)
{
	struct inode *inode = d_inode_rcu(dentry);
	const struct wsem *sem;
	int ret;

	if (!inode)
		return 0;
	if (S_ISDIR(inode->i_mode))
		return 1;
	sem = inode->i_private;
	if (flags & LOOKUP_RCU)
		wsem_test_revalidate_hold();
	ret = wsemfs_update_inode(inode, flags & LOOKUP_RCU);
	return ret ?: READ_ONCE(sem->linked);
}

/*
 * How a file is named where its path is not the point: in the caller's IPC
 * namespace by its name, elsewhere by the id fdinfo shows as wsem-id.  A
 * bind mount given to a container does not tell it the host's names
 * (SPEC.md) through the root field of its mountinfo.  There is no d_dname:
 * readlink of /proc/PID/fd must stay a path, since container tools
 * (bubblewrap) find their bind mounts through it.
 */
static int wsemfs_show_name(struct dentry *dentry, char *buf, size_t len)
{
	struct wsem *sem = d_inode(dentry)->i_private;

	if (wsem_ns_is_current(dentry->d_sb->s_fs_info))
		return snprintf(buf, len, "%s", dentry->d_name.name);
	return snprintf(buf, len, "[%d]", sem->id);
}

static const struct dentry_operations wsemfs_dops = {
	.d_revalidate	= wsem_d_revalidate,
	.d_delete	= always_delete_dentry,
};

static int wsemfs_unlink(struct inode *dir, struct dentry *dentry)
{
	struct inode *inode = d_inode(dentry);
	int ret;

	ret = wsem_ns_unlink_sem(dir->i_sb->s_fs_info, inode->i_private);
	if (!ret)
		wsemfs_drop_link(inode);
	return ret;
}

/* Endpoints are neither made nor removed here: that is the semaphores'. */
static const struct inode_operations wsemfs_js_dir_iops = {
	.lookup		= wsemfs_lookup,
};

static const struct inode_operations wsemfs_dir_iops = {
	.lookup		= wsemfs_lookup,
	.unlink		= wsemfs_unlink,
	/*
	 * Creating needs a capacity, which no file system call carries:
	 * every way to make something here fails with EPERM (wsem_open(),
	 * wsem create).
	 */
	.create		= wsem_refuse_create,
	.mkdir		= wsem_refuse_mkdir,
	.mknod		= wsem_refuse_mknod,
	.symlink	= wsem_refuse_symlink,
	.link		= wsem_refuse_link,
	.rename		= wsem_refuse_rename,
};

/**
 * wsemfs_setattr() - chmod and chown of a semaphore's file
 * @idmap: the mount's id mapping
 * @dentry: the file
 * @attr: what changes
 *
 * Checked by the VFS (the owner, CAP_FOWNER, CAP_CHOWN, through the
 * mount's id mapping); the new owner and mode go to the semaphore, from
 * @attr, and the inode takes them from there: never read back from the
 * inode, which a check of the semaphore's other inode, or of this one,
 * may be refreshing meanwhile (wsemfs_refresh_inode()).  A semaphore has
 * no size and no set-id bits: open(O_TRUNC) changes nothing, truncate(2)
 * is EINVAL.
 *
 * Return: 0 or a negative errno.
 */
int wsemfs_setattr(struct mnt_idmap *idmap, struct dentry *dentry,
		   struct iattr *attr)
{
	struct inode *inode = d_inode(dentry);
	kuid_t uid = INVALID_UID;
	kgid_t gid = INVALID_GID;
	umode_t mode = 0;
	int ret;

	if ((attr->ia_valid & ATTR_SIZE) &&
	    (attr->ia_size || !(attr->ia_valid & ATTR_OPEN)))
		return -EINVAL;
	attr->ia_valid &= ~ATTR_SIZE;
	wsemfs_refresh_inode(inode);
	ret = wsem_setattr_prepare(idmap, dentry, attr);
	if (ret)
		return ret;
	if (attr->ia_valid & ATTR_UID)
		uid = wsem_attr_uid(idmap, inode, attr);
	if (attr->ia_valid & ATTR_GID)
		gid = wsem_attr_gid(idmap, inode, attr);
	if (attr->ia_valid & ATTR_MODE)
		mode = attr->ia_mode;
	wsem_ns_set_owner(dentry->d_sb->s_fs_info, inode->i_private,
			  attr->ia_valid, uid, gid, mode);
	wsemfs_refresh_inode(inode);
	/* The times alone: the owner and mode are the semaphore's. */
	attr->ia_valid &= ATTR_ATIME | ATTR_MTIME | ATTR_CTIME;
	wsem_setattr_copy(idmap, inode, attr);
	return 0;
}

/**
 * wsemfs_getattr() - stat(2) of a semaphore's file or endpoint
 * @idmap: the mount's id mapping
 * @path: the file
 * @stat: filled in
 * @request_mask: what statx(2) asks for
 * @query_flags: AT_STATX_* of statx(2)
 *
 * The inode's attributes, with the semaphore's owner and mode as they are
 * now: also on a descriptor kept open while the other inode was changed.
 *
 * Return: 0.
 */
int wsemfs_getattr(struct mnt_idmap *idmap, const struct path *path,
		   struct kstat *stat, u32 request_mask,
		   unsigned int query_flags)
{
	struct inode *inode = d_inode(path->dentry);

	wsemfs_refresh_inode(inode);
	wsem_generic_fillattr(idmap, request_mask, inode, stat);
	return 0;
}

/**
 * wsemfs_permission() - may the caller open a semaphore's file or endpoint
 * @idmap: the mount's id mapping
 * @inode: the file's inode
 * @mask: MAY_READ, MAY_WRITE, ... (MAY_NOT_BLOCK in an RCU-walk)
 *
 * The VFS's rules, on the semaphore's owner and mode as they are now.
 *
 * Return: 0 or a negative errno (-EACCES, or -ECHILD to leave RCU-walk).
 */
int wsemfs_permission(struct mnt_idmap *idmap, struct inode *inode, int mask)
{
	int ret = wsemfs_update_inode(inode, mask & MAY_NOT_BLOCK);

	return ret ?: wsem_generic_permission(idmap, inode, mask);
}

static const struct inode_operations wsemfs_file_iops = {
	.permission	= wsem_iop_permission,
	.getattr	= wsem_iop_getattr,
	.setattr	= wsem_iop_setattr,
};

/* Names copied per visit of the namespace: a walk to the position each. */
#define WSEMFS_BATCH	16

struct wsemfs_batch {
	char names[WSEMFS_BATCH][WSEM_NAME_MAX];
	int ids[WSEMFS_BATCH];
};

/*
 * Positions: 0 and 1 are the dots, 2 + n the n-th name in name order: the
 * semaphores' files in the root, their endpoints in WSEM_JOBSERVER_DIR.
 */
static int wsemfs_readdir(struct file *file, struct dir_context *ctx)
{
	struct inode *dir = file_inode(file);
	struct wsem_ns *wns = dir->i_sb->s_fs_info;
	bool root = dir->i_ino == WSEMFS_ROOT_INO;
	unsigned long ino = root ? WSEMFS_ROOT_INO : WSEMFS_JS_INO;
	struct wsemfs_batch *b;
	int i, n;

	if (!dir_emit_dots(file, ctx))
		return 0;
	b = kmalloc(sizeof(*b), GFP_KERNEL);
	if (!b)
		return -ENOMEM;
	do {
		n = wsem_ns_names_at(wns, ctx->pos - 2, b->names[0], b->ids,
				     WSEMFS_BATCH);
		for (i = 0; i < n; i++) {
			if (!dir_emit(ctx, b->names[i], strlen(b->names[i]),
				      ino + 1 + b->ids[i],
				      root ? DT_REG : DT_FIFO))
				goto out;
			ctx->pos++;
		}
	} while (n == WSEMFS_BATCH);
out:
	kfree(b);
	return 0;
}

static const struct file_operations wsemfs_dir_fops = {
	.read		= generic_read_dir,
	.iterate_shared	= wsemfs_readdir,
	.llseek		= generic_file_llseek,
};

static void wsemfs_evict_inode(struct inode *inode)
{
	truncate_inode_pages_final(&inode->i_data);
	clear_inode(inode);
	if (!S_ISDIR(inode->i_mode))
		wsem_put(inode->i_private);
}

/* The root of a mount in /proc/PID/mountinfo: a bind-mounted file's too. */
static int wsemfs_show_path(struct seq_file *m, struct dentry *root)
{
	char name[WSEM_NAME_MAX + 16];

	if (IS_ROOT(root)) {
		seq_putc(m, '/');
		return 0;
	}
	if (d_is_dir(root)) {
		seq_puts(m, "/" WSEM_JOBSERVER_DIR);
		return 0;
	}
	wsemfs_show_name(root, name, sizeof(name));
	seq_printf(m, "%s/%s",
		   S_ISFIFO(d_inode(root)->i_mode) ? "/" WSEM_JOBSERVER_DIR : "",
		   name);
	return 0;
}

static const struct super_operations wsemfs_sops = {
	.statfs		= simple_statfs,
	.show_path	= wsemfs_show_path,
	.drop_inode	= inode_just_drop,
	.evict_inode	= wsemfs_evict_inode,
};

static int wsemfs_fill_super(struct super_block *sb, struct fs_context *fc)
{
	struct inode *root;

	sb->s_blocksize = PAGE_SIZE;
	sb->s_blocksize_bits = PAGE_SHIFT;
	sb->s_magic = WSEM_FS_MAGIC;
	sb->s_op = &wsemfs_sops;
	set_default_d_op(sb, &wsemfs_dops);
	sb->s_time_gran = 1;

	root = new_inode(sb);
	if (!root)
		return -ENOMEM;
	root->i_ino = WSEMFS_ROOT_INO;
	/*
	 * Sticky and open to all, as /dev/shm: unlinking is the owner's.  The
	 * directory is the namespace's root's, not its first mounter's, who
	 * would otherwise unlink what others own.
	 */
	root->i_mode = S_IFDIR | S_ISVTX | 0777;
	root->i_uid = make_kuid(sb->s_user_ns, 0);
	root->i_gid = make_kgid(sb->s_user_ns, 0);
	if (!uid_valid(root->i_uid) || !gid_valid(root->i_gid)) {
		root->i_uid = GLOBAL_ROOT_UID;
		root->i_gid = GLOBAL_ROOT_GID;
	}
	root->i_op = &wsemfs_dir_iops;
	root->i_fop = &wsemfs_dir_fops;
	set_nlink(root, 2);
	simple_inode_init_ts(root);
	sb->s_root = d_make_root(root);
	if (!sb->s_root)
		return -ENOMEM;
	wsem_ns_mounted(sb->s_fs_info, sb);
	return 0;
}

static int wsemfs_get_tree(struct fs_context *fc)
{
	return get_tree_keyed(fc, wsemfs_fill_super, fc->s_fs_info);
}

/* A superblock that already existed left us our namespace reference. */
static void wsemfs_free_fc(struct fs_context *fc)
{
	if (fc->s_fs_info)
		wsem_ns_put(fc->s_fs_info);
}

static const struct fs_context_operations wsemfs_context_ops = {
	.get_tree	= wsemfs_get_tree,
	.free		= wsemfs_free_fc,
};

/*
 * The mounter's IPC namespace; mounting needs CAP_SYS_ADMIN over the user
 * namespace that owns it, so a container's root may mount its own.
 */
static int wsemfs_init_fs_context(struct fs_context *fc)
{
	struct wsem_ns *wns = wsem_ns_get(true);

	if (IS_ERR(wns))
		return PTR_ERR(wns);
	fc->s_fs_info = wns;
	put_user_ns(fc->user_ns);
	fc->user_ns = get_user_ns(current->nsproxy->ipc_ns->user_ns);
	fc->ops = &wsemfs_context_ops;
	return 0;
}

static void wsemfs_kill_sb(struct super_block *sb)
{
	struct wsem_ns *wns = sb->s_fs_info;

	if (wns)
		wsem_ns_unmounting(wns, sb);
	kill_anon_super(sb);
	if (wns)
		wsem_ns_put(wns);
}

static struct file_system_type wsemfs_type = {
	.owner			= THIS_MODULE,
	.name			= "wsem",
	.init_fs_context	= wsemfs_init_fs_context,
	.kill_sb		= wsemfs_kill_sb,
	.fs_flags		= FS_USERNS_MOUNT | WSEM_FS_ALLOW_IDMAP,
};

/**
 * wsem_fs_init() - register the file system and /sys/fs/wsem
 * @fops: the file operations of a semaphore's file (main.c's wsem_fops,
 *	passed by main.c: fs.c calls nothing of main.c, which calls fs.c)
 *
 * Return: 0 or a negative errno.
 */
int wsem_fs_init(const struct file_operations *fops)
{
	int ret;

	wsem_fs_fops = fops;
	ret = sysfs_create_mount_point(fs_kobj, "wsem");
	if (ret)
		return ret;
	ret = register_filesystem(&wsemfs_type);
	if (ret)
		sysfs_remove_mount_point(fs_kobj, "wsem");
	return ret;
}

/**
 * wsem_fs_exit() - unregister them; nothing is mounted any more
 */
void wsem_fs_exit(void)
{
	unregister_filesystem(&wsemfs_type);
	sysfs_remove_mount_point(fs_kobj, "wsem");
}
