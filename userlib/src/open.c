// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Getting a handle: bind a fresh /dev/wsem file to a named or an anonymous
 * semaphore, or reopen an existing one.
 */
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>

#include "wsem.h"
#include "internal.h"

/* Open /dev/wsem and bind it as @args says; close it again on failure. */
static int bind_new_handle(struct wsem_open_args *args, int cloexec)
{
	int fd = libwsem_dev_open(cloexec);

	if (fd < 0)
		return -1;
	if (ioctl(fd, WSEM_IOC_OPEN, args) < 0) {
		libwsem_close_keep_errno(fd);
		return -1;
	}
	return fd;
}

/*
 * A wsemfs file (a bind-mounted one, say): opening it is opening a handle
 * bound to its semaphore.  Files are not created there, so no O_CREAT.
 */
static int open_path(const char *path, int oflag)
{
	if (oflag & (O_CREAT | O_EXCL) || libwsem_check_path(path))
		return libwsem_einval();
	return open(path, O_RDWR | O_NOCTTY | (oflag & O_CLOEXEC));
}

/**
 * wsem_open() - open, or create, a named semaphore
 * @name: 1..63 bytes of [A-Za-z0-9._-], or a path to a wsemfs file
 *	(anything with a '/')
 * @oflag: O_CREAT, O_EXCL, O_CLOEXEC (a path takes O_CLOEXEC only)
 * @mode: permission bits for O_CREAT, masked by the umask
 * @capacity: capacity for O_CREAT (1..2^62); an existing one keeps its own
 *
 * Return: a handle fd, or -1 with errno.
 */
int wsem_open(const char *name, int oflag, mode_t mode, uint64_t capacity)
{
	struct wsem_open_args args = { .size = sizeof(args) };

	if (oflag & ~(O_CREAT | O_EXCL | O_CLOEXEC))
		return libwsem_einval();
	if (name && strchr(name, '/'))
		return open_path(name, oflag);
	if (libwsem_name_copy(args.name, name))
		return -1;
	if (oflag & O_CREAT) {
		args.flags |= WSEM_OPEN_CREAT;
		args.capacity = capacity;
		args.mode = mode;
	}
	if (oflag & O_EXCL)
		args.flags |= WSEM_OPEN_EXCL;
	return bind_new_handle(&args, oflag & O_CLOEXEC);
}

/**
 * wsem_open_anon() - create an anonymous semaphore
 * @capacity: 1..2^62
 * @oflag: O_CLOEXEC or 0
 *
 * Return: a handle fd, or -1 with errno.
 */
int wsem_open_anon(uint64_t capacity, int oflag)
{
	struct wsem_open_args args = {
		.size = sizeof(args),
		.flags = WSEM_OPEN_ANON,
		.capacity = capacity,
	};

	if (oflag & ~O_CLOEXEC)
		return libwsem_einval();
	return bind_new_handle(&args, oflag & O_CLOEXEC);
}

/**
 * wsem_reopen() - a new, independent handle on the semaphore of @fd
 * @fd: a bound handle
 * @oflag: O_CLOEXEC or 0
 *
 * Return: the new handle fd (holding 0), or -1 with errno.
 */
int wsem_reopen(int fd, int oflag)
{
	__u64 flags = 0;

	if (oflag & ~O_CLOEXEC)
		return libwsem_einval();
	if (oflag & O_CLOEXEC)
		flags |= WSEM_REOPEN_CLOEXEC;
	return ioctl(fd, WSEM_IOC_REOPEN, &flags);
}
