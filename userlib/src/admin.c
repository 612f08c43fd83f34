// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Owner operations: change the capacity, lend capacity, remove a name.
 */
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "wsem.h"
#include "internal.h"

/**
 * wsem_set_capacity() - grow or shrink the semaphore of @fd
 * @fd: a bound handle
 * @capacity: its own capacity, 1..2^62 (0 too for a semaphore that
 *	takes its capacity from loans); what handles lend comes on top
 *
 * Return: 0, or -1 with errno (EPERM unless owner or CAP_IPC_OWNER, EINVAL).
 */
int wsem_set_capacity(int fd, uint64_t capacity)
{
	__u64 c = capacity;

	return ioctl(fd, WSEM_IOC_SET_CAPACITY, &c);
}

/**
 * wsem_lend() - set what @fd lends to its semaphore
 * @fd: a bound handle, open for reading and writing
 * @capacity: @fd's loan from now on; 0 withdraws it
 *
 * The capacity in force is the semaphore's own plus every open handle's
 * loan; @fd's loan is withdrawn when its file is released (the last
 * descriptor closed, its last process dead).  Less capacity is a shrink:
 * nothing held is taken back.
 *
 * Return: 0, or -1 with errno (EPERM: lending more, and neither owner nor
 * CAP_IPC_OWNER; EINVAL: unbound, or the capacity in force would pass
 * 2^62; EBADF: not open for writing).
 */
int wsem_lend(int fd, uint64_t capacity)
{
	struct wsem_lend_args args = {
		.size = sizeof(args),
		.capacity = capacity,
	};

	return ioctl(fd, WSEM_IOC_LEND, &args);
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
