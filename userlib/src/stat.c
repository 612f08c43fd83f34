// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Reading state: of one handle's semaphore, or of the whole namespace, and
 * who holds and waits.  Every struct goes to the kernel with the caller's
 * size, so that a program built against an older wsem.h (a smaller struct)
 * is never written past its end by a newer library.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>

#include "wsem.h"
#include "internal.h"

/**
 * wsem_stat_sized() - describe the semaphore of @fd
 * @fd: a bound handle
 * @st: filled in; @st->held is what this handle holds
 * @size: the caller's sizeof(struct wsem_stat), WSEM_STAT_SIZE_VER0 or more
 *
 * Return: 0, or -1 with errno (EINVAL for an unbound handle or a size
 * below WSEM_STAT_SIZE_VER0).
 */
int wsem_stat_sized(int fd, struct wsem_stat *st, size_t size)
{
	if (!st) {
		errno = EFAULT;
		return -1;
	}
	if (size < WSEM_STAT_SIZE_VER0) {
		errno = EINVAL;
		return -1;
	}
	memset(st, 0, size);
	st->size = size;
	return ioctl(fd, WSEM_IOC_STAT, st);
}

/* What programs built against the first wsem.h call: its size. */
int (wsem_stat)(int fd, struct wsem_stat *st)
{
	return wsem_stat_sized(fd, st, WSEM_STAT_SIZE_VER0);
}

/**
 * wsem_list_sized() - describe the named semaphores of the caller's namespace
 * @buf: room for @n entries of @size bytes, in name order; may be NULL
 *	when @n is 0
 * @n: entries in @buf
 * @size: the caller's sizeof(struct wsem_stat)
 *
 * Only semaphores the caller may read are listed; each entry's held is 0.
 *
 * Return: how many there are (more than @n means @buf was too small),
 * or -1 with errno.
 */
ssize_t wsem_list_sized(struct wsem_stat *buf, size_t n, size_t size)
{
	struct wsem_list_args args = {
		.size = sizeof(args),
		.stats = (uintptr_t)buf,
		.count = n > UINT32_MAX ? UINT32_MAX : (__u32)n,
		.stat_size = (__u32)size,
	};
	int fd, ret;

	if (!buf && n) {
		errno = EFAULT;
		return -1;
	}
	if (size < WSEM_STAT_SIZE_VER0 || size > UINT32_MAX) {
		errno = EINVAL;
		return -1;
	}
	fd = libwsem_dev_open(1, 1);
	if (fd < 0)
		return -1;
	ret = ioctl(fd, WSEM_IOC_LIST, &args);
	libwsem_close_keep_errno(fd);
	if (ret < 0)
		return -1;
	if (args.total > SSIZE_MAX) {
		errno = EOVERFLOW;
		return -1;
	}
	return (ssize_t)args.total;
}

/* What programs built against the first wsem.h call: its size. */
ssize_t (wsem_list)(struct wsem_stat *buf, size_t n)
{
	return wsem_list_sized(buf, n, WSEM_STAT_SIZE_VER0);
}

/*
 * WSEM_IOC_HOLDERS into @buf (@n entries of @size bytes), its counts in
 * *@args; 0, or -1 with errno.
 */
static int holders_ioctl(int fd, struct wsem_holder *buf, size_t n,
			 size_t size, struct wsem_holders_args *args)
{
	*args = (struct wsem_holders_args) {
		.size = sizeof(*args),
		.entries = (uintptr_t)buf,
		.count = n > UINT32_MAX ? UINT32_MAX : (__u32)n,
		.entry_size = (__u32)size,
	};
	if (!buf && n) {
		errno = EFAULT;
		return -1;
	}
	if (size < WSEM_HOLDER_SIZE_VER0 || size > UINT32_MAX) {
		errno = EINVAL;
		return -1;
	}
	return ioctl(fd, WSEM_IOC_HOLDERS, args) ? -1 : 0;
}

/**
 * wsem_holders_sized() - who holds weight, then who waits, in queue order
 * @fd: a bound handle, open for reading
 * @buf: room for @n entries of @size bytes; may be NULL when @n is 0
 * @n: entries in @buf
 * @size: the caller's sizeof(struct wsem_holder)
 * @nholders: set to how many hold (may be NULL)
 *
 * Entries that fit after the waiters are children holding weight
 * (WSEM_HOLDER_CHILD), which the count leaves out: see
 * wsem_holders_children_sized() for a count of them.
 *
 * Return: how many hold and wait in all, or -1 with errno.
 */
ssize_t wsem_holders_sized(int fd, struct wsem_holder *buf, size_t n,
			   size_t size, size_t *nholders)
{
	struct wsem_holders_args args;

	if (holders_ioctl(fd, buf, n, size, &args))
		return -1;
	if (nholders)
		*nholders = args.holders;
	return (ssize_t)args.holders + args.waiters;
}

/**
 * wsem_holders_children_sized() - the holders, the waiters, and the
 *	children that hold weight
 * @fd: a bound handle, open for reading
 * @buf: room for @n entries of @size bytes; may be NULL when @n is 0
 * @n: entries in @buf
 * @size: the caller's sizeof(struct wsem_holder)
 * @nholders: set to how many hold (may be NULL)
 * @nchildren: set to how many children hold weight (may be NULL)
 *
 * As wsem_holders_sized(), and then one entry per child semaphore that
 * holds weight (WSEM_HOLDER_CHILD: what it and its own children hold of
 * @fd's semaphore, and its name in @label), counted.
 *
 * Return: how many entries in all, or -1 with errno.
 */
ssize_t wsem_holders_children_sized(int fd, struct wsem_holder *buf,
				    size_t n, size_t size, size_t *nholders,
				    size_t *nchildren)
{
	struct wsem_holders_args args;

	if (holders_ioctl(fd, buf, n, size, &args))
		return -1;
	if (nholders)
		*nholders = args.holders;
	if (nchildren)
		*nchildren = args.children;
	return (ssize_t)args.holders + args.waiters + args.children;
}

/**
 * wsem_set_label() - name what @fd is held for, in the holders view
 * @fd: a bound handle, open for reading and writing
 * @label: up to WSEM_LABEL_MAX - 1 bytes of printable ASCII; NULL or ""
 *	clears the label
 *
 * Return: 0, or -1 with errno (EINVAL: unbound, too long, not printable;
 * EBADF: not open for writing).
 */
int wsem_set_label(int fd, const char *label)
{
	struct wsem_label_args args = { .size = sizeof(args) };
	size_t len = label ? strlen(label) : 0;

	if (len >= sizeof(args.label)) {
		errno = EINVAL;
		return -1;
	}
	if (len)
		memcpy(args.label, label, len);
	return ioctl(fd, WSEM_IOC_SET_LABEL, &args);
}
