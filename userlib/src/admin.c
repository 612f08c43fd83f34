// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Owner operations: change the capacity, remove a name.
 */
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "wsem.h"
#include "internal.h"

/**
 * wsem_set_capacity() - grow or shrink the semaphore of @fd
 * @fd: a bound handle
 * @capacity: 1..2^62
 *
 * Return: 0, or -1 with errno (EPERM unless owner or CAP_IPC_OWNER, EINVAL).
 */
int wsem_set_capacity(int fd, uint64_t capacity)
{
	__u64 c = capacity;

	return ioctl(fd, WSEM_IOC_SET_CAPACITY, &c);
}

/**
 * wsem_unlink() - remove a name from the caller's IPC namespace
 * @name: the name, or the path of a wsemfs file (anything with a '/'),
 *	which is then unlink(2)ed, with the file system's rules
 *
 * Handles already bound to it keep working until they are closed.
 *
 * Return: 0, or -1 with errno (ENOENT, EPERM, EINVAL; for a path also
 * what unlink(2) says, as EBUSY for a bind-mounted file).
 */
int wsem_unlink(const char *name)
{
	struct wsem_unlink_args args = { .size = sizeof(args) };
	int fd, ret;

	if (name && strchr(name, '/'))
		return libwsem_check_path(name) ? -1 : unlink(name);
	if (libwsem_name_copy(args.name, name))
		return -1;
	fd = libwsem_dev_open(1, 0);
	if (fd < 0)
		return -1;
	ret = ioctl(fd, WSEM_IOC_UNLINK, &args);
	libwsem_close_keep_errno(fd);
	return ret;
}
