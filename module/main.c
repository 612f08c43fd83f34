// SPDX-License-Identifier: GPL-2.0
/*
 * wsem: weighted, strictly FIFO counting semaphores, through /dev/wsem.
 *
 * Each open file of /dev/wsem is a handle.  Bind it, then acquire and
 * release weight through it; what it holds goes back when it is closed:
 *
 *	int fd = open("/dev/wsem", O_RDWR | O_CLOEXEC);
 *	struct wsem_open_args o = { .size = sizeof(o), .capacity = 8,
 *		.flags = WSEM_OPEN_CREAT, .mode = 0600, .name = "jobs" };
 *	struct wsem_acquire_args a = { .size = sizeof(a), .weight = 3 };
 *	ioctl(fd, WSEM_IOC_OPEN, &o);
 *	ioctl(fd, WSEM_IOC_ACQUIRE, &a);	// ... work ...; close(fd)
 *
 * This file turns ioctls into calls of sem.c (the semaphore), wait.c and
 * async.c (its requests), views.c and holders.c (what a caller may see of
 * it and what it notes of holders), perm.c (permission), handle.c (the
 * handles) and ns.c (names and namespaces); see include file wsem.h for the
 * files' map, who may call whom, and the locking rules.
 */
#include <linux/anon_inodes.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/pid.h>
#include <linux/sched/signal.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/time_namespace.h>
#include <linux/uaccess.h>

#include "wsem.h"

/* The command without its size bits: structs grow, the command stays. */
#define WSEM_CMD(cmd)	((cmd) & ~IOCSIZE_MASK)

/*
 * Copy a versioned struct whose first field is its __u64 size: at least
 * @ver0 bytes, zero-extended; a longer one must have a zero tail.
 */
static int wsem_copy_args(void *karg, size_t ksize, size_t ver0,
			  const void __user *uarg)
{
	u64 usize;

	if (get_user(usize, (const u64 __user *)uarg))
		return -EFAULT;
	if (usize < ver0)
		return -EINVAL;
	if (usize > PAGE_SIZE)
		return -E2BIG;
	return copy_struct_from_user(karg, ksize, uarg, usize);
}

/* Write a struct wsem_stat into a user buffer of @usize bytes. */
static int wsem_copy_stat(void __user *ustat, u64 usize, struct wsem_stat *st)
{
	size_t n = min_t(u64, usize, sizeof(*st));

	st->size = n;
	if (copy_to_user(ustat, st, n))
		return -EFAULT;
	if (usize > n && clear_user(ustat + n, usize - n))
		return -EFAULT;
	return 0;
}

static int wsem_stat_size(const void __user *uarg, u64 *usize)
{
	if (get_user(*usize, (const u64 __user *)uarg))
		return -EFAULT;
	if (*usize < WSEM_STAT_SIZE_VER0)
		return -EINVAL;
	if (*usize > PAGE_SIZE)
		return -E2BIG;
	return 0;
}

/*
 * The portable filename characters, as plain ASCII ranges: the kernel's
 * isalnum() also accepts the Latin-1 letters 0xc0-0xff.
 */
static bool wsem_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

/* Names are 1..WSEM_NAME_MAX-1 bytes of [A-Za-z0-9._-], NUL-terminated. */
static bool wsem_name_valid(const char *name)
{
	size_t len = strnlen(name, WSEM_NAME_MAX);
	size_t i;

	if (!len || len == WSEM_NAME_MAX)
		return false;
	for (i = 0; i < len; i++) {
		if (!wsem_name_char(name[i]))
			return false;
	}
	return true;
}

static bool wsem_capacity_valid(u64 capacity)
{
	return capacity && capacity <= WSEM_CAPACITY_MAX;
}

/* Is @file open for reading and writing, as a change needs? */
static bool wsem_file_rw(const struct file *file)
{
	return (file->f_mode & (FMODE_READ | FMODE_WRITE)) ==
	       (FMODE_READ | FMODE_WRITE);
}

/*
 * The handle of @file, another file than the ioctl's (a parent, a gang's
 * entry), which must be a bound handle of wsem open for reading and
 * writing: the handle, or ERR_PTR(-EINVAL) (no bound handle of wsem) or
 * ERR_PTR(-EBADF) (not open for both).
 */
static struct wsem_handle *wsem_rw_handle(struct file *file)
{
	struct wsem_handle *h = file->private_data;

	if (file->f_op != &wsem_fops || !wsem_handle_sem(h))
		return ERR_PTR(-EINVAL);
	return wsem_file_rw(file) ? h : ERR_PTR(-EBADF);
}

/*
 * The semaphore of handle @fd, for a child of it: a reference for the
 * caller (wsem_put()), or an ERR_PTR(): -EBADF (no such descriptor, or not
 * open for reading and writing), -EINVAL (not a bound handle of wsem),
 * -EACCES (no read and write permission on it), -ELOOP (as deep as a
 * semaphore may be).
 */
static struct wsem *wsem_get_parent(int fd)
{
	struct file *file = fget(fd);
	struct wsem_handle *h;
	struct wsem *sem;
	int ret;

	if (!file)
		return ERR_PTR(-EBADF);
	h = wsem_rw_handle(file);
	sem = IS_ERR(h) ? NULL : h->sem;
	if (!sem)
		ret = PTR_ERR(h);
	else if (sem->depth >= WSEM_DEPTH_MAX)
		ret = -ELOOP;
	else
		ret = wsem_permission(sem, MAY_READ | MAY_WRITE, true);
	if (!ret)
		kref_get(&sem->ref);
	fput(file);
	return ret ? ERR_PTR(ret) : sem;
}

/**
 * wsem_ioctl_open() - WSEM_IOC_OPEN: bind a fresh handle
 * @file: the handle's file: one not open for writing needs only read
 *	permission on an existing name (it can watch, not acquire)
 * @h: the handle
 * @uarg: struct wsem_open_args
 *
 * Context: Process context.
 * Return: 0; -EINVAL for bad flags, name, capacity or mode; -EBUSY for a
 * bound handle; for a child, as wsem_get_parent(); else as wsem_ns_open()
 * or wsem_ns_open_anon().
 */
static int wsem_ioctl_open(struct file *file, struct wsem_handle *h,
			   void __user *uarg)
{
	const u64 known = WSEM_OPEN_CREAT | WSEM_OPEN_EXCL | WSEM_OPEN_ANON |
			  WSEM_OPEN_LOANS | WSEM_OPEN_CHILD;
	const u64 made = WSEM_OPEN_LOANS | WSEM_OPEN_CHILD;
	struct wsem_open_args args;
	struct wsem *parent = NULL;
	int ret;

	ret = wsem_copy_args(&args, sizeof(args), WSEM_OPEN_SIZE_VER0, uarg);
	if (ret)
		return ret;
	if ((args.flags & ~known) || args.__pad || args.__pad2 ||
	    (args.mode & ~0777))
		return -EINVAL;
	if (!(args.flags & WSEM_OPEN_CHILD) && args.parent_fd)
		return -EINVAL;

	if (args.flags & WSEM_OPEN_ANON) {
		if ((args.flags & ~made) != WSEM_OPEN_ANON || args.name[0] ||
		    !wsem_capacity_valid(args.capacity))
			return -EINVAL;
	} else {
		if (!wsem_name_valid(args.name))
			return -EINVAL;
		/* The ceiling and the parent are the creator's to set. */
		if ((args.flags & made) && !(args.flags & WSEM_OPEN_CREAT))
			return -EINVAL;
		if ((args.flags & WSEM_OPEN_CREAT) &&
		    !wsem_capacity_valid(args.capacity))
			return -EINVAL;
	}
	if (args.flags & WSEM_OPEN_CHILD) {
		parent = wsem_get_parent(args.parent_fd);
		if (IS_ERR(parent))
			return PTR_ERR(parent);
	}
	if (args.flags & WSEM_OPEN_ANON)
		ret = wsem_ns_open_anon(h, args.flags, args.capacity, parent);
	else
		ret = wsem_ns_open(h, args.name, args.flags, args.capacity,
				   args.mode & ~current_umask(),
				   file->f_mode & FMODE_WRITE ?
				   MAY_READ | MAY_WRITE : MAY_READ, parent);
	if (parent)
		wsem_put(parent);
	return ret;
}

/**
 * wsem_ioctl_reopen() - WSEM_IOC_REOPEN: a new handle on the same semaphore
 * @file: the bound handle's file
 * @uflags: __u64 WSEM_REOPEN_* flags
 *
 * The new handle is a new open file description, an anonymous inode's,
 * holding 0, with the access mode of @file: a read-only handle begets
 * read-only ones.  It needs no path, so it works where /dev/wsem is not
 * visible and after a wsemfs file's semaphore lost its name.
 *
 * Context: Process context.
 * Return: the new file descriptor, or -EINVAL (unbound handle, bad flags),
 * -EFAULT, -EMFILE, -ENFILE, -ENOMEM.
 */
static int wsem_ioctl_reopen(struct file *file, u64 __user *uflags)
{
	struct wsem *sem = wsem_handle_sem(file->private_data);
	struct wsem_handle *h;
	struct file *nfile;
	u64 flags;
	int fd;

	if (!sem)
		return -EINVAL;
	if (get_user(flags, uflags))
		return -EFAULT;
	if (flags & ~WSEM_REOPEN_CLOEXEC)
		return -EINVAL;

	h = wsem_handle_alloc();
	if (!h)
		return -ENOMEM;
	fd = get_unused_fd_flags(flags & WSEM_REOPEN_CLOEXEC ? O_CLOEXEC : 0);
	if (fd < 0)
		goto err_free;
	nfile = anon_inode_getfile("[wsem]", &wsem_fops, h,
				   file->f_flags & O_ACCMODE);
	if (IS_ERR(nfile)) {
		put_unused_fd(fd);
		fd = PTR_ERR(nfile);
		goto err_free;
	}
	/*
	 * As for an opened handle: the text can be re-read (kvm's stats fd)
	 * and sought.  FMODE_LSEEK too: 5.10's anon_inode_getfile() does not
	 * set it from ->llseek as later kernels do.
	 */
	nfile->f_mode |= FMODE_PREAD | FMODE_LSEEK;
	h->file = nfile;
	wsem_bind(h, sem);	/* fresh: cannot be bound */
	fd_install(fd, nfile);
	return fd;

err_free:
	kfree(h);
	return fd;
}

/*
 * @ns on @clock in the caller's time namespace, as the host's timers take
 * it (the namespace's offset taken off, as clock_nanosleep(2) does),
 * within 0 .. KTIME_MAX.
 */
static ktime_t wsem_host_time(clockid_t clock, u64 ns)
{
	ktime_t t = min_t(u64, ns, KTIME_MAX), off;

	off = wsem_timens_offset(clock);
	if (off > 0 && t < off)
		return 0;
	if (off < 0 && t > KTIME_MAX + off)
		return KTIME_MAX;
	return t - off;
}

/*
 * The clock and deadline of @args, as the host's timers take them: a
 * deadline is read on CLOCK_MONOTONIC unless WSEM_ACQUIRE_CLOCK names
 * another, in the caller's time namespace (whose offset is taken off, as
 * clock_nanosleep(2) does); KTIME_MAX without WSEM_ACQUIRE_DEADLINE.  0,
 * or -EINVAL for another clock.
 */
static int wsem_deadline(const struct wsem_acquire_args *args,
			 clockid_t *clock, ktime_t *deadline)
{
	*clock = CLOCK_MONOTONIC;
	*deadline = KTIME_MAX;
	if (args->flags & WSEM_ACQUIRE_CLOCK)
		*clock = args->clockid;
	else if (args->clockid)
		return -EINVAL;
	if (*clock != CLOCK_MONOTONIC && *clock != CLOCK_BOOTTIME &&
	    *clock != CLOCK_REALTIME)
		return -EINVAL;
	if (!(args->flags & WSEM_ACQUIRE_DEADLINE))
		return 0;	/* no time namespace to look at */
	*deadline = wsem_host_time(*clock, args->deadline_ns);
	return 0;
}

/*
 * The common case of wsem_acquire_args(), a struct of our size, read field
 * by field in one window of user access: one check of the range, no call
 * out of line, on the path of every acquire.  Return: 1 when read; 0 when
 * it is another size, or its range is not ours to read at our size (the
 * general way decides: a shorter struct may still be readable); -EFAULT.
 */
static int wsem_acquire_args_ours(struct wsem_acquire_args *args,
				  const struct wsem_acquire_args __user *u)
{
	if (!user_read_access_begin(u, sizeof(*u)))
		return 0;
	unsafe_get_user(args->size, &u->size, fault);
	if (args->size != sizeof(*args)) {
		user_read_access_end();
		return 0;
	}
	unsafe_get_user(args->weight, &u->weight, fault);
	unsafe_get_user(args->flags, &u->flags, fault);
	unsafe_get_user(args->deadline_ns, &u->deadline_ns, fault);
	unsafe_get_user(args->clockid, &u->clockid, fault);
	unsafe_get_user(args->__pad, &u->__pad, fault);
	user_read_access_end();
	return 1;
fault:
	user_read_access_end();
	return -EFAULT;
}

/*
 * Copy struct wsem_acquire_args and check what WSEM_IOC_ACQUIRE and
 * WSEM_IOC_WAIT_IDLE have in common: known flags, TRY or DEADLINE, CLOCK
 * only with DEADLINE, ASYNC alone, zero padding.
 */
static int wsem_acquire_args(struct wsem_acquire_args *args,
			     const void __user *uarg)
{
	const u64 known = WSEM_ACQUIRE_TRY | WSEM_ACQUIRE_DEADLINE |
			  WSEM_ACQUIRE_CLOCK | WSEM_ACQUIRE_ASYNC;
	u64 flags;
	int ret;

	ret = wsem_acquire_args_ours(args, uarg);
	if (ret < 0)
		return ret;
	if (!ret) {
		ret = wsem_copy_args(args, sizeof(*args),
				     WSEM_ACQUIRE_SIZE_VER0, uarg);
		if (ret)
			return ret;
	}
	flags = args->flags;
	if ((flags & ~known) || args->__pad ||
	    ((flags & WSEM_ACQUIRE_TRY) && (flags & WSEM_ACQUIRE_DEADLINE)) ||
	    ((flags & WSEM_ACQUIRE_CLOCK) && !(flags & WSEM_ACQUIRE_DEADLINE)) ||
	    ((flags & WSEM_ACQUIRE_ASYNC) && flags != WSEM_ACQUIRE_ASYNC))
		return -EINVAL;
	return 0;
}

/* An acquire's or idle wait's arguments, clock and deadline, on @h. */
static int wsem_wait_args(struct wsem_handle *h, const void __user *uarg,
			  struct wsem_acquire_args *args, clockid_t *clock,
			  ktime_t *deadline)
{
	int ret;

	if (!wsem_handle_sem(h))
		return -EINVAL;
	ret = wsem_acquire_args(args, uarg);
	return ret ? ret : wsem_deadline(args, clock, deadline);
}

/**
 * wsem_ioctl_acquire() - WSEM_IOC_ACQUIRE
 * @h: the bound handle
 * @uarg: struct wsem_acquire_args
 *
 * Context: Process context, may sleep.
 * Return: 0, -EINVAL for an unbound handle, bad flags or clock, else as
 * wsem_acquire().
 */
static int wsem_ioctl_acquire(struct wsem_handle *h, void __user *uarg)
{
	struct wsem_acquire_args args;
	ktime_t deadline;
	clockid_t clock;
	int ret;

	ret = wsem_wait_args(h, uarg, &args, &clock, &deadline);
	if (ret)
		return ret;
	return wsem_acquire(h, args.weight, args.flags, clock, deadline);
}

/*
 * struct wsem_many_args at our size, read as wsem_acquire_args_ours()
 * reads an acquire's: 1 when read, 0 for the general way, or -EFAULT.
 */
static int wsem_many_args_ours(struct wsem_many_args *args,
			       const struct wsem_many_args __user *u)
{
	if (!user_read_access_begin(u, sizeof(*u)))
		return 0;
	unsafe_get_user(args->size, &u->size, fault);
	if (args->size != sizeof(*args)) {
		user_read_access_end();
		return 0;
	}
	unsafe_get_user(args->flags, &u->flags, fault);
	unsafe_get_user(args->deadline_ns, &u->deadline_ns, fault);
	unsafe_get_user(args->clockid, &u->clockid, fault);
	unsafe_get_user(args->count, &u->count, fault);
	unsafe_get_user(args->entries, &u->entries, fault);
	user_read_access_end();
	return 1;
fault:
	user_read_access_end();
	return -EFAULT;
}

/*
 * The @n entries of a gang at @uptr, field by field in one window of user
 * access (a gang's call is a plain pair's cost plus its entries', not a
 * copy routine's per struct).  Return: 0 or -EFAULT.
 */
static int wsem_many_entries(struct wsem_many_entry *e, u64 uptr,
			     unsigned int n)
{
	const struct wsem_many_entry __user *u = u64_to_user_ptr(uptr);
	unsigned int i;

	if (!user_read_access_begin(u, n * sizeof(*u)))
		return -EFAULT;
	for (i = 0; i < n; i++) {
		unsafe_get_user(e[i].fd, &u[i].fd, fault);
		unsafe_get_user(e[i].__pad, &u[i].__pad, fault);
		unsafe_get_user(e[i].weight, &u[i].weight, fault);
	}
	user_read_access_end();
	return 0;
fault:
	user_read_access_end();
	return -EFAULT;
}

/*
 * The handle of one gang entry, for wsem_ioctl_acquire_many(), with its
 * descriptor in *@f (fdput() it if its file is not NULL): fdget()'s
 * reference, which costs no atomic while the caller's descriptor table
 * is its own, holds the file for the call as the syscall's own does.  An
 * ERR_PTR() as that function returns.
 */
static struct wsem_handle *wsem_many_handle(const struct wsem_many_entry *e,
					    struct fd *f)
{
	*f = (struct fd){};
	if (e->__pad || !e->weight)
		return ERR_PTR(-EINVAL);
	*f = fdget(e->fd);
	if (!fd_file(*f))
		return ERR_PTR(-EBADF);
	return wsem_rw_handle(fd_file(*f));
}

/**
 * wsem_ioctl_acquire_many() - WSEM_IOC_ACQUIRE_MANY
 * @uarg: struct wsem_many_args
 *
 * Each entry's file is held for the call, so its handle stays bound and
 * nothing of it is released meanwhile.
 *
 * Context: Process context, may sleep.
 * Return: 0; -EINVAL (flags, count, padding, an entry that is no bound
 * handle, a weight of 0 or too large, a semaphore twice); -EBADF; -E2BIG,
 * -EFAULT; else as wsem_acquire_many().
 */
static int wsem_ioctl_acquire_many(void __user *uarg)
{
	const u64 known = WSEM_ACQUIRE_TRY | WSEM_ACQUIRE_DEADLINE |
			  WSEM_ACQUIRE_CLOCK;
	struct wsem_handle *hs[WSEM_MANY_MAX];
	struct wsem_many_entry e[WSEM_MANY_MAX];
	struct fd files[WSEM_MANY_MAX];
	struct wsem_acquire_args times;
	u64 weights[WSEM_MANY_MAX];
	struct wsem_many_args args;
	unsigned int i, j, n = 0;
	ktime_t deadline;
	clockid_t clock;
	int ret;

	ret = wsem_many_args_ours(&args, uarg);
	if (ret < 0)
		return ret;
	if (!ret) {
		ret = wsem_copy_args(&args, sizeof(args), WSEM_MANY_SIZE_VER0,
				     uarg);
		if (ret)
			return ret;
	}
	if ((args.flags & ~known) || !args.count ||
	    args.count > WSEM_MANY_MAX ||
	    ((args.flags & WSEM_ACQUIRE_TRY) &&
	     (args.flags & WSEM_ACQUIRE_DEADLINE)) ||
	    ((args.flags & WSEM_ACQUIRE_CLOCK) &&
	     !(args.flags & WSEM_ACQUIRE_DEADLINE)))
		return -EINVAL;
	times = (struct wsem_acquire_args) {
		.flags = args.flags,
		.deadline_ns = args.deadline_ns,
		.clockid = args.clockid,
	};
	ret = wsem_deadline(&times, &clock, &deadline);
	if (ret)
		return ret;
	ret = wsem_many_entries(e, args.entries, args.count);
	if (ret)
		return ret;

	for (n = 0; n < args.count; n++) {
		hs[n] = wsem_many_handle(&e[n], &files[n]);
		if (IS_ERR(hs[n]))
			ret = PTR_ERR(hs[n]);
		for (j = 0; !ret && j < n; j++) {
			if (hs[j]->sem == hs[n]->sem)
				ret = -EINVAL;
		}
		if (ret) {
			if (fd_file(files[n]))
				n++;
			break;
		}
		weights[n] = e[n].weight;
	}
	/* A gang of one is a request on one semaphore: the plain path. */
	if (!ret && n == 1)
		ret = wsem_acquire(hs[0], weights[0], args.flags, clock,
				   deadline);
	else if (!ret)
		ret = wsem_acquire_many(hs, weights, n, args.flags, clock,
					deadline);
	for (i = 0; i < n; i++)
		fdput(files[i]);
	return ret;
}

/**
 * wsem_ioctl_async() - WSEM_IOC_ASYNC: collect or cancel a request
 * @h: the bound handle
 * @uflags: __u64 flags, WSEM_ASYNC_CANCEL or 0
 *
 * Context: Process context.
 * Return: -EINVAL for an unbound handle or unknown flags, -EFAULT, else
 * as wsem_async_end().
 */
static int wsem_ioctl_async(struct wsem_handle *h, u64 __user *uflags)
{
	u64 flags;

	if (!wsem_handle_sem(h))
		return -EINVAL;
	if (get_user(flags, uflags))
		return -EFAULT;
	if (flags & ~WSEM_ASYNC_CANCEL)
		return -EINVAL;
	return wsem_async_end(h, flags & WSEM_ASYNC_CANCEL);
}

/**
 * wsem_ioctl_wait_idle() - WSEM_IOC_WAIT_IDLE
 * @file: the bound handle's file
 * @uarg: struct wsem_acquire_args, @weight 0, no ASYNC
 *
 * Waiting for idle watches, as poll does: a handle open for reading will
 * do.
 *
 * Context: Process context, may sleep.
 * Return: 0, -EBADF (a handle not open for reading), -EINVAL (unbound
 * handle, bad arguments), else as wsem_wait_idle().
 */
static int wsem_ioctl_wait_idle(struct file *file, void __user *uarg)
{
	struct wsem_handle *h = file->private_data;
	struct wsem_acquire_args args;
	ktime_t deadline;
	clockid_t clock;
	int ret;

	if (!(file->f_mode & FMODE_READ))
		return -EBADF;
	ret = wsem_wait_args(h, uarg, &args, &clock, &deadline);
	if (ret)
		return ret;
	if (args.weight || (args.flags & WSEM_ACQUIRE_ASYNC))
		return -EINVAL;
	return wsem_wait_idle(h, args.flags, clock, deadline);
}

/**
 * wsem_ioctl_release() - WSEM_IOC_RELEASE
 * @h: the bound handle
 * @uweight: __u64 weight
 *
 * Context: Process context.
 * Return: 0, -EINVAL for an unbound handle, -EFAULT, else as wsem_release().
 */
static int wsem_ioctl_release(struct wsem_handle *h, u64 __user *uweight)
{
	u64 weight;

	if (!wsem_handle_sem(h))
		return -EINVAL;
	if (get_user(weight, uweight))
		return -EFAULT;
	return wsem_release(h, weight);
}

/**
 * wsem_ioctl_set_capacity() - WSEM_IOC_SET_CAPACITY
 * @h: the bound handle
 * @ucapacity: __u64 capacity
 *
 * Context: Process context.
 * Return: 0, -EINVAL (unbound handle, bad capacity), -EFAULT, or -EPERM
 * unless the caller owns the semaphore or has CAP_IPC_OWNER.
 */
static int wsem_ioctl_set_capacity(struct wsem_handle *h,
				   u64 __user *ucapacity)
{
	struct wsem *sem = wsem_handle_sem(h);
	u64 capacity;

	if (!sem)
		return -EINVAL;
	if (get_user(capacity, ucapacity))
		return -EFAULT;
	if (!wsem_owner_or_capable(sem))
		return -EPERM;
	return wsem_set_capacity(sem, capacity);
}

/**
 * wsem_ioctl_stat() - WSEM_IOC_STAT
 * @file: the handle's file
 * @ustat: struct wsem_stat, with its size set
 *
 * The state is what read permission shows (SPEC.md): a handle not open for
 * reading (a wsemfs file opened O_WRONLY) gets none, as one not open for
 * writing acquires nothing.
 *
 * Context: Process context.
 * Return: 0, -EBADF (a handle not open for reading), -EINVAL (unbound
 * handle, short struct), -E2BIG, -EFAULT.
 */
static int wsem_ioctl_stat(struct file *file, void __user *ustat)
{
	struct wsem_handle *h = file->private_data;
	struct wsem *sem = wsem_handle_sem(h);
	struct wsem_stat st = { 0 };
	u64 usize;
	int ret;

	if (!(file->f_mode & FMODE_READ))
		return -EBADF;
	if (!sem)
		return -EINVAL;
	ret = wsem_stat_size(ustat, &usize);
	if (ret)
		return ret;
	wsem_fill_stat(sem, h, &st, true, wsem_ns_is_current(sem->wns));
	return wsem_copy_stat(ustat, usize, &st);
}

/**
 * wsem_ioctl_unlink() - WSEM_IOC_UNLINK, on any handle
 * @uarg: struct wsem_unlink_args
 *
 * Context: Process context.
 * Return: 0, -EINVAL (bad name or flags), else as wsem_ns_unlink().
 */
static int wsem_ioctl_unlink(void __user *uarg)
{
	struct wsem_unlink_args args;
	int ret;

	ret = wsem_copy_args(&args, sizeof(args), WSEM_UNLINK_SIZE_VER0, uarg);
	if (ret)
		return ret;
	if (args.flags || !wsem_name_valid(args.name))
		return -EINVAL;
	return wsem_ns_unlink(args.name);
}

/**
 * wsem_ioctl_list() - WSEM_IOC_LIST, on any handle
 * @uarg: struct wsem_list_args
 *
 * Context: Process context.
 * Return: 0, -EINVAL (short structs), -E2BIG, -EFAULT, -ENOMEM.
 */
static int wsem_ioctl_list(void __user *uarg)
{
	struct wsem_list_args __user *ulist = uarg;
	struct wsem_list_args args;
	struct wsem_stat *stats;
	void __user *ustats;
	int i, n, ret;

	ret = wsem_copy_args(&args, sizeof(args), WSEM_LIST_SIZE_VER0, uarg);
	if (ret)
		return ret;
	if (args.count && args.stat_size < WSEM_STAT_SIZE_VER0)
		return -EINVAL;
	if (args.stat_size > PAGE_SIZE)
		return -E2BIG;

	n = wsem_ns_list(&stats, args.count, &args.total);
	if (n < 0)
		return n;
	ustats = u64_to_user_ptr(args.stats);
	for (i = 0; i < n && !ret; i++)
		ret = wsem_copy_stat(ustats + (u64)i * args.stat_size,
				     args.stat_size, &stats[i]);
	kvfree(stats);
	if (!ret && put_user(args.total, &ulist->total))
		ret = -EFAULT;
	return ret;
}

/**
 * wsem_ioctl_holders() - WSEM_IOC_HOLDERS: who holds, who waits
 * @file: the bound handle's file
 * @uarg: struct wsem_holders_args
 *
 * Needs a handle open for reading, as stat by name needs read permission.
 * Entries are written at @entry_size strides: a longer one gets a zero
 * tail, a shorter one what fits.
 *
 * Context: Process context.
 * Return: 0; -EINVAL (unbound handle, short structs, flags); -EACCES (a
 * handle not open for reading); -E2BIG, -EFAULT, -ENOMEM.
 */
static int wsem_ioctl_holders(struct file *file, void __user *uarg)
{
	struct wsem_holders_args __user *uargs = uarg;
	struct wsem_handle *h = file->private_data;
	struct wsem *sem = wsem_handle_sem(h);
	struct wsem_holders_args args;
	struct wsem_holder *out;
	void __user *uent;
	size_t n1;
	int i, n, ret;

	if (!sem)
		return -EINVAL;
	if (!(file->f_mode & FMODE_READ))
		return -EACCES;
	ret = wsem_copy_args(&args, sizeof(args), WSEM_HOLDERS_SIZE_VER0, uarg);
	if (ret)
		return ret;
	if (args.flags || args.__pad ||
	    (args.count && args.entry_size < WSEM_HOLDER_SIZE_VER0))
		return -EINVAL;
	if (args.entry_size > PAGE_SIZE)
		return -E2BIG;

	/* Child entries only for a caller that can tell them apart. */
	n = wsem_holders(sem, args.count, &out, &args.holders, &args.waiters,
			 args.size >= WSEM_HOLDERS_SIZE_VER1 ? &args.children :
			 NULL);
	if (n < 0)
		return n;
	uent = u64_to_user_ptr(args.entries);
	n1 = min_t(size_t, args.entry_size, sizeof(*out));
	for (i = 0; i < n && !ret; i++) {
		void __user *p = uent + (u64)i * args.entry_size;

		if (copy_to_user(p, &out[i], n1) ||
		    (args.entry_size > n1 &&
		     clear_user(p + n1, args.entry_size - n1)))
			ret = -EFAULT;
	}
	kvfree(out);
	if (!ret && (put_user(args.holders, &uargs->holders) ||
		     put_user(args.waiters, &uargs->waiters) ||
		     (args.size >= WSEM_HOLDERS_SIZE_VER1 &&
		      put_user(args.children, &uargs->children))))
		ret = -EFAULT;
	return ret;
}

/* A label is 0..WSEM_LABEL_MAX-1 bytes of printable ASCII, NUL-terminated. */
static bool wsem_label_valid(const char *label)
{
	size_t len = strnlen(label, WSEM_LABEL_MAX);
	size_t i;

	if (len == WSEM_LABEL_MAX)
		return false;
	for (i = 0; i < len; i++) {
		if (label[i] < 0x20 || label[i] > 0x7e)
			return false;
	}
	return true;
}

/**
 * wsem_ioctl_set_label() - WSEM_IOC_SET_LABEL: label the handle
 * @h: the bound handle
 * @uarg: struct wsem_label_args
 *
 * The label is shown with the handle's holder or waiter, to callers who
 * see its pid.  It changes what others see of the holder, so it needs a
 * handle open for reading and writing, as acquire does (wsem_cmd_writes()).
 *
 * Context: Process context.
 * Return: 0; -EINVAL (unbound handle, short struct, flags, a label that is
 * not printable ASCII or not NUL-terminated); -E2BIG, -EFAULT.
 */
static int wsem_ioctl_set_label(struct wsem_handle *h, void __user *uarg)
{
	struct wsem_label_args args;
	int ret;

	if (!wsem_handle_sem(h))
		return -EINVAL;
	ret = wsem_copy_args(&args, sizeof(args), WSEM_LABEL_SIZE_VER0, uarg);
	if (ret)
		return ret;
	if (args.flags || !wsem_label_valid(args.label))
		return -EINVAL;
	wsem_set_label(h, args.label);
	return 0;
}

/*
 * May the caller name @pgrp as the group its handle's close kills?  Only a
 * group led by one of its own children (the leader's pid is the group's),
 * in its own session: what it started and could have asked to die with it
 * (PR_SET_PDEATHSIG) but for the set-uid programs that clear that request.
 * A SIGKILL at a moment of the caller's choosing is no more than such a
 * child's RLIMIT_CPU, which the caller sets, can send.
 */
static int wsem_kill_allowed(struct pid *pgrp)
{
	struct task_struct *leader;
	int ret = -ESRCH;

	rcu_read_lock();
	leader = pid_task(pgrp, PIDTYPE_PID);
	if (leader && task_pgrp(leader) == pgrp) {
		ret = -EPERM;
		if (same_thread_group(rcu_dereference(leader->real_parent),
				      current) &&
		    task_session(leader) == task_session(current))
			ret = 0;
	}
	rcu_read_unlock();
	return ret;
}

/**
 * wsem_ioctl_set_kill() - WSEM_IOC_SET_KILL: a process group to kill when
 *	the handle's lease ends
 * @h: the bound handle
 * @uarg: struct wsem_kill_args
 *
 * The group is held by its struct pid, not its number: once its last
 * member is gone the number may be another group's, and a kill of the
 * held struct pid then reaches nobody.  wsem_handle_close() sends the
 * SIGKILL, with the kernel's privilege (kill_pgrp()'s priv), before the
 * handle gives back what it holds: no member runs on without the lease
 * but for the moment the kill takes to be delivered.  So does an end of
 * holders that finds the handle holding weight (wsem_kill_holders()), in
 * the hold of the lock that withdraws the loan, not at the holder's
 * close after its death.  A fork racing with
 * the kill fails (copy_process() checks for a pending fatal signal under
 * the lock kill_pgrp() takes), so a member cannot leave a child behind.
 * It changes what happens to others when the lease ends, so it needs a
 * handle open for reading and writing (wsem_cmd_writes()).
 *
 * Context: Process context.
 * Return: 0; -EINVAL (unbound handle, short struct, flags, padding, a
 * negative @pgid); -ESRCH (no process leads group @pgid), -EPERM (its
 * leader is not the caller's child, or is in another session); -E2BIG,
 * -EFAULT.
 */
static int wsem_ioctl_set_kill(struct wsem_handle *h, void __user *uarg)
{
	struct pid *pgrp = NULL;
	struct wsem_kill_args args;
	int ret;

	if (!wsem_handle_sem(h))
		return -EINVAL;
	ret = wsem_copy_args(&args, sizeof(args), WSEM_KILL_SIZE_VER0, uarg);
	if (ret)
		return ret;
	if (args.flags || args.__pad || args.pgid < 0)
		return -EINVAL;
	if (args.pgid) {
		pgrp = find_get_pid(args.pgid);
		if (!pgrp)
			return -ESRCH;
		ret = wsem_kill_allowed(pgrp);
		if (ret) {
			put_pid(pgrp);
			return ret;
		}
	}
	put_pid(wsem_swap_kill_pgrp(h, pgrp));
	return 0;
}

/**
 * wsem_ioctl_lend() - WSEM_IOC_LEND
 * @h: the handle
 * @uarg: struct wsem_lend_args
 *
 * Lending more than the handle does needs what a resize needs: the
 * semaphore's owner or CAP_IPC_OWNER, asked only then.  Lending less needs
 * nothing: whoever has the handle may withdraw its loan, as closing it
 * would.  WSEM_LEND_END_HOLDERS, with which the handle's close kills the
 * semaphore's holders whoever they are (wsem_kill_holders()), needs
 * CAP_KILL in the initial user namespace.  WSEM_LEND_DEADLINE's deadline
 * is on CLOCK_BOOTTIME in the caller's time namespace, taken to the
 * host's as an acquire's is (wsem_deadline()).
 *
 * Context: Process context.
 * Return: 0; -EINVAL (unbound handle, short struct, unknown flags, a
 * deadline flag in a struct without its field, a capacity in force above
 * WSEM_CAPACITY_MAX); -ETIMEDOUT (a deadline not in the future); -EPERM;
 * -ENOMEM; -E2BIG, -EFAULT.
 */
static int wsem_ioctl_lend(struct wsem_handle *h, void __user *uarg)
{
	const u64 known = WSEM_LEND_END_HOLDERS | WSEM_LEND_DEADLINE;
	struct wsem *sem = wsem_handle_sem(h);
	struct wsem_lend_args args;
	u64 deadline = 0;
	bool end;
	int ret;

	if (!sem)
		return -EINVAL;
	ret = wsem_copy_args(&args, sizeof(args), WSEM_LEND_SIZE_VER0, uarg);
	if (ret)
		return ret;
	if (args.flags & ~known)
		return -EINVAL;
	if (args.flags & WSEM_LEND_DEADLINE) {
		if (args.size < WSEM_LEND_SIZE_VER1)
			return -EINVAL;
		deadline = wsem_host_time(CLOCK_BOOTTIME, args.deadline_ns);
		if (deadline <= ktime_get_boottime_ns())
			return -ETIMEDOUT;
	}
	end = args.flags & WSEM_LEND_END_HOLDERS;
	if (end && !capable(CAP_KILL))
		return -EPERM;
	ret = wsem_lend(h, args.capacity, end, deadline, false);
	if (ret == -EPERM && wsem_owner_or_capable(sem))
		ret = wsem_lend(h, args.capacity, end, deadline, true);
	return ret;
}

/*
 * Acquire, release, resize, labelling and a kill target change the
 * semaphore, what others see of its holders or what becomes of them: they
 * need a handle open for reading and writing (O_RDWR), as opening by name
 * needs read and write permission.
 * A read-only handle watches; a write-only one, which a wsemfs file of
 * mode -w- could give, does nothing more.
 */
static bool wsem_cmd_writes(unsigned int cmd)
{
	return cmd == WSEM_CMD(WSEM_IOC_ACQUIRE) ||
	       cmd == WSEM_CMD(WSEM_IOC_ASYNC) ||
	       cmd == WSEM_CMD(WSEM_IOC_RELEASE) ||
	       cmd == WSEM_CMD(WSEM_IOC_SET_CAPACITY) ||
	       cmd == WSEM_CMD(WSEM_IOC_LEND) ||
	       cmd == WSEM_CMD(WSEM_IOC_SET_LABEL) ||
	       cmd == WSEM_CMD(WSEM_IOC_SET_KILL);
}

/**
 * wsem_file_ioctl() - every ioctl of a handle
 * @file: the handle's file
 * @cmd: WSEM_IOC_*, whatever its size bits
 * @arg: the argument, a user pointer
 *
 * Context: Process context, may sleep.
 * Return: as the command's function; -EBADF for acquire, release, resize,
 * labelling and a kill target through a handle not open for both reading
 * and writing, and for stat and the idle wait through one not open for
 * reading;
 * -ENOTTY for an unknown command.
 */
static long wsem_file_ioctl(struct file *file, unsigned int cmd,
			    unsigned long arg)
{
	struct wsem_handle *h = file->private_data;
	void __user *uarg = (void __user *)arg;

	cmd = WSEM_CMD(cmd);
	if (wsem_cmd_writes(cmd) && !wsem_file_rw(file))
		return -EBADF;

	switch (cmd) {
	case WSEM_CMD(WSEM_IOC_OPEN):
		return wsem_ioctl_open(file, h, uarg);
	case WSEM_CMD(WSEM_IOC_REOPEN):
		return wsem_ioctl_reopen(file, uarg);
	case WSEM_CMD(WSEM_IOC_ACQUIRE):
		return wsem_ioctl_acquire(h, uarg);
	case WSEM_CMD(WSEM_IOC_RELEASE):
		return wsem_ioctl_release(h, uarg);
	case WSEM_CMD(WSEM_IOC_SET_CAPACITY):
		return wsem_ioctl_set_capacity(h, uarg);
	case WSEM_CMD(WSEM_IOC_STAT):
		return wsem_ioctl_stat(file, uarg);
	case WSEM_CMD(WSEM_IOC_UNLINK):
		return wsem_ioctl_unlink(uarg);
	case WSEM_CMD(WSEM_IOC_LIST):
		return wsem_ioctl_list(uarg);
	case WSEM_CMD(WSEM_IOC_HOLDERS):
		return wsem_ioctl_holders(file, uarg);
	case WSEM_CMD(WSEM_IOC_ASYNC):
		return wsem_ioctl_async(h, uarg);
	case WSEM_CMD(WSEM_IOC_WAIT_IDLE):
		return wsem_ioctl_wait_idle(file, uarg);
	case WSEM_CMD(WSEM_IOC_SET_LABEL):
		return wsem_ioctl_set_label(h, uarg);
	case WSEM_CMD(WSEM_IOC_LEND):
		return wsem_ioctl_lend(h, uarg);
	case WSEM_CMD(WSEM_IOC_ACQUIRE_MANY):
		return wsem_ioctl_acquire_many(uarg);
	case WSEM_CMD(WSEM_IOC_SET_KILL):
		return wsem_ioctl_set_kill(h, uarg);
	default:
		return -ENOTTY;
	}
}

/*
 * /dev/wsem gives an unbound handle; a wsemfs file (a regular file) one
 * bound to its semaphore, as long as that still has its name.  Both can
 * pread(2) and seek, so that a monitor re-reads the text of one handle.
 */
static int wsem_file_open(struct inode *inode, struct file *file)
{
	struct wsem *sem = inode->i_private;
	struct wsem_handle *h;

	if (S_ISREG(inode->i_mode) && !READ_ONCE(sem->linked))
		return -ENOENT;
	h = wsem_handle_alloc();
	if (!h)
		return -ENOMEM;
	file->private_data = h;
	h->file = file;
	if (S_ISREG(inode->i_mode))
		wsem_bind(h, sem);	/* fresh: cannot be bound */
	return 0;
}

/**
 * wsem_file_read() - the state of the bound semaphore as text
 * @file: the handle's file
 * @buf: user buffer
 * @count: its size
 * @ppos: position in the text
 *
 * One "key: value" line per field of struct wsem_stat, so that cat(1) of a
 * wsemfs file shows the state, then the number of holders and a line per
 * holder and per waiter in queue order (the first WSEM_TEXT_WHO of them):
 * "holder: pid P weight W held_ns N comm C cgroup G label L" or "waiter:
 * ... waiting_ns N ...", as WSEM_IOC_HOLDERS gives them (L is the rest of
 * the line, which may hold spaces; "-" for none).  A read at offset 0
 * describes the state anew; reads further on go on with that text, as
 * seq_file's do, so that a text read in pieces is one state.
 *
 * Context: Process context.
 * Return: bytes read, 0 at the end, -EINVAL for an unbound handle, -EFAULT,
 * -ENOMEM.
 */
static ssize_t wsem_file_read(struct file *file, char __user *buf,
			      size_t count, loff_t *ppos)
{
	struct wsem_handle *h = file->private_data;
	struct wsem *sem = wsem_handle_sem(h);
	ssize_t len, ret;
	char *text;

	if (!sem)
		return -EINVAL;
	mutex_lock(&h->text_lock);
	if (!*ppos || !h->text) {
		len = wsem_text(sem, h, &text);
		if (len < 0) {
			mutex_unlock(&h->text_lock);
			return len;
		}
		kvfree(h->text);
		h->text = text;
		h->text_len = len;
	}
	ret = simple_read_from_buffer(buf, count, ppos, h->text, h->text_len);
	mutex_unlock(&h->text_lock);
	return ret;
}

static int wsem_file_release(struct inode *inode, struct file *file)
{
	wsem_handle_close(file->private_data);
	return 0;
}

/*
 * An unbound handle has nothing to wait for: EPOLLERR, like a bad fd.  So
 * has a handle not open for reading: what poll reports is the state, which
 * needs read permission (SPEC.md), and such a handle can neither acquire
 * nor wait for idle; it is never woken.
 * Pollers wait on the handle's own queue, where the end of its
 * asynchronous request is told, and on the semaphore's; epoll registers
 * only at the first poll, perhaps before the bind, so binding relays the
 * semaphore's wake-ups to the handle's queue if anyone waits there.
 */
static __poll_t wsem_file_poll(struct file *file, poll_table *wait)
{
	struct wsem_handle *h = file->private_data;
	struct wsem *sem;

	if (!(file->f_mode & FMODE_READ))
		return EPOLLERR;
	poll_wait(file, &h->wqh, wait);
	sem = wsem_handle_sem(h);
	if (!sem) {
		/*
		 * Pairs with wsem_bind(), which looks at h->wqh under its
		 * lock: if it did so before we queued, it is bound now.
		 */
		spin_lock_irq(&h->wqh.lock);
		sem = h->sem;
		spin_unlock_irq(&h->wqh.lock);
	}
	return sem ? wsem_poll(sem, h, file, wait) : EPOLLERR;
}

/*
 * Snapshot under the semaphore's lock (wsem_fill_stat()), print after.  A
 * handle not open for reading shows which semaphore it is bound to (its
 * id and namespace) and nothing of its state, which needs read permission.
 */
static void wsem_file_fdinfo(struct seq_file *m, struct file *file)
{
	struct wsem_handle *h = file->private_data;
	struct wsem *sem = wsem_handle_sem(h);
	struct wsem_stat st = { 0 };

	if (!sem)
		return;
	seq_printf(m, "wsem-id:\t%d\n", sem->id);
	if (!(file->f_mode & FMODE_READ)) {
		seq_printf(m, "wsem-ipc-ns:\t%u\n", wsem_ns_inum(sem->wns));
		return;
	}
	wsem_fill_stat(sem, h, &st, false, wsem_ns_is_current(sem->wns));
	seq_printf(m, "wsem-name:\t%s\n", st.name);
	seq_printf(m, "wsem-capacity:\t%llu\n", st.capacity);
	seq_printf(m, "wsem-used:\t%llu\n", st.used);
	seq_printf(m, "wsem-held:\t%llu\n", st.held);
	seq_printf(m, "wsem-waiters:\t%llu\n", st.waiters);
	seq_printf(m, "wsem-ipc-ns:\t%u\n", wsem_ns_inum(sem->wns));
}

/* A counters mapping's file: nothing to do, no handle behind it. */
static const struct file_operations wsem_counters_fops = {
	.owner		= THIS_MODULE,
};

/**
 * wsem_file_mmap() - map the counters page of a handle's semaphore
 * @file: a handle, /dev/wsem's or a wsemfs file
 * @vma: one page at most, at offset 0 or WSEM_MMAP_TREE pages, neither
 *	writable nor executable
 *
 * Maps struct wsem_counters (uapi), the same page for every handle of the
 * semaphore, or at WSEM_MMAP_TREE struct wsem_tree_counters, the same for
 * every handle of the tree; read-only for good: VM_MAYWRITE and VM_MAYEXEC
 * are cleared, so mprotect(2) cannot add them; VM_DONTEXPAND keeps
 * mremap(2) from growing it.  The mapping holds a reference on the page
 * (vm_insert_page()), which therefore outlives the semaphore, and not on
 * the handle: its file is swapped for one of its own, with no handle
 * behind it, so that a mapping never keeps a handle open, nor the weight
 * it holds or lends, after its last descriptor is closed.
 *
 * Context: Process context, mmap_lock held for writing.
 * Return: 0; -EINVAL for an unbound handle, another offset or a length
 * over a page; -EACCES for a writable or executable mapping or a handle
 * not open for reading (its state needs read permission); -ENOMEM.
 */
static int wsem_file_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct wsem_handle *h = file->private_data;
	struct wsem *sem = wsem_handle_sem(h);
	struct file *counters;
	struct page *page;

	if (!sem || (vma->vm_pgoff && vma->vm_pgoff != WSEM_MMAP_TREE) ||
	    vma->vm_end - vma->vm_start > PAGE_SIZE)
		return -EINVAL;
	if (!(file->f_mode & FMODE_READ) ||
	    (vma->vm_flags & (VM_WRITE | VM_EXEC)))
		return -EACCES;
	if (vma->vm_pgoff == WSEM_MMAP_TREE)
		page = wsem_tree_counters_page(sem);
	else
		page = wsem_counters_page(sem);
	if (!page)
		return -ENOMEM;
	counters = anon_inode_getfile("[wsem-counters]", &wsem_counters_fops,
				      NULL, O_RDONLY);
	if (IS_ERR(counters))
		return PTR_ERR(counters);
	vma_set_file(vma, counters);
	fput(counters);
	vm_flags_clear(vma, VM_MAYWRITE | VM_MAYEXEC);
	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	return vm_insert_page(vma, vma->vm_start, page);
}

/* The handles' file operations: /dev/wsem, wsemfs files, REOPEN's. */
const struct file_operations wsem_fops = {
	.owner		= THIS_MODULE,
	.open		= wsem_file_open,
	.read		= wsem_file_read,
	.llseek		= default_llseek,
	.release	= wsem_file_release,
	.poll		= wsem_file_poll,
	.unlocked_ioctl	= wsem_file_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.show_fdinfo	= wsem_file_fdinfo,
	.mmap		= wsem_file_mmap,
};

static struct miscdevice wsem_dev = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= "wsem",
	.fops	= &wsem_fops,
	.mode	= 0666,
};

static int __init wsem_init(void)
{
	int ret;

	BUILD_BUG_ON(offsetof(struct wsem_open_args, parent_fd) !=
		     WSEM_OPEN_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct wsem_open_args) != WSEM_OPEN_SIZE_VER1);
	BUILD_BUG_ON(offsetof(struct wsem_acquire_args, clockid) !=
		     WSEM_ACQUIRE_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct wsem_acquire_args) !=
		     WSEM_ACQUIRE_SIZE_VER1);
	BUILD_BUG_ON(offsetof(struct wsem_stat, grants_at_once) !=
		     WSEM_STAT_SIZE_VER0);
	BUILD_BUG_ON(offsetof(struct wsem_stat, lent) != WSEM_STAT_SIZE_VER1);
	BUILD_BUG_ON(offsetof(struct wsem_stat, depth) != WSEM_STAT_SIZE_VER2);
	BUILD_BUG_ON(sizeof(struct wsem_stat) != WSEM_STAT_SIZE_VER3);
	BUILD_BUG_ON(sizeof(struct wsem_lend_args) != WSEM_LEND_SIZE_VER1);
	BUILD_BUG_ON(sizeof(struct wsem_many_args) != WSEM_MANY_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct wsem_list_args) != WSEM_LIST_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct wsem_unlink_args) != WSEM_UNLINK_SIZE_VER0);
	BUILD_BUG_ON(offsetof(struct wsem_holder, label) !=
		     WSEM_HOLDER_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct wsem_holder) != WSEM_HOLDER_SIZE_VER1);
	BUILD_BUG_ON(sizeof(struct wsem_label_args) != WSEM_LABEL_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct wsem_kill_args) != WSEM_KILL_SIZE_VER0);
	BUILD_BUG_ON(offsetof(struct wsem_holders_args, children) !=
		     WSEM_HOLDERS_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct wsem_holders_args) !=
		     WSEM_HOLDERS_SIZE_VER1);

	ret = wsem_sem_init();
	if (ret)
		return ret;
	ret = wsem_ns_init();
	if (ret)
		goto err_sem_exit;
	ret = wsem_js_init();
	if (ret)
		goto err_ns_exit;
	ret = wsem_fs_init(&wsem_fops);
	if (ret)
		goto err_js_exit;
	ret = misc_register(&wsem_dev);
	if (ret)
		goto err_fs_exit;
	return 0;

err_fs_exit:
	wsem_fs_exit();
err_js_exit:
	wsem_js_exit();
err_ns_exit:
	wsem_ns_exit();
err_sem_exit:
	wsem_sem_exit();
	return ret;
}

static void __exit wsem_exit(void)
{
	misc_deregister(&wsem_dev);
	wsem_fs_exit();
	wsem_js_exit();
	wsem_ns_exit();
	wsem_sem_exit();
}

module_init(wsem_init);
module_exit(wsem_exit);

MODULE_DESCRIPTION("Weighted, strictly FIFO counting semaphores (/dev/wsem)");
MODULE_AUTHOR("The wsem developers");
MODULE_LICENSE("GPL");
