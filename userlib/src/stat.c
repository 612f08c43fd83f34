// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Reading state: of one handle's semaphore, or of the whole namespace.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>

#include "wsem.h"
#include "internal.h"

/**
 * wsem_stat() - describe the semaphore of @fd
 * @fd: a bound handle
 * @st: filled in; @st->held is what this handle holds
 *
 * Return: 0, or -1 with errno (EINVAL for an unbound handle).
 */
int wsem_stat(int fd, struct wsem_stat *st)
{
	if (!st) {
		errno = EFAULT;
		return -1;
	}
	memset(st, 0, sizeof(*st));
	st->size = sizeof(*st);
	return ioctl(fd, WSEM_IOC_STAT, st);
}

/**
 * wsem_list() - describe the named semaphores of the caller's namespace
 * @buf: room for @n entries, in name order; may be NULL when @n is 0
 * @n: entries in @buf
 *
 * Only semaphores the caller may read are listed; @buf[i].held is 0.
 *
 * Return: how many there are (more than @n means @buf was too small),
 * or -1 with errno.
 */
ssize_t wsem_list(struct wsem_stat *buf, size_t n)
{
	struct wsem_list_args args = {
		.size = sizeof(args),
		.stats = (uintptr_t)buf,
		.count = n > UINT32_MAX ? UINT32_MAX : (__u32)n,
		.stat_size = sizeof(*buf),
	};
	int fd, ret;

	if (!buf && n) {
		errno = EFAULT;
		return -1;
	}
	fd = libwsem_dev_open(1);
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
