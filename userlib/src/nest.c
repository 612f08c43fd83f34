// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Limits that nest: a child semaphore under a parent, and one request for
 * weight on several semaphores at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>

#include "wsem.h"
#include "internal.h"

#define NSEC_PER_SEC	1000000000ULL

/**
 * wsem_open_child() - create, or open, a child semaphore
 * @parent_fd: a handle on the parent, open for reading and writing
 * @name: the child's name, or NULL for an anonymous child
 * @oflag: as wsem_open()'s (O_EXCL, O_CLOEXEC, WSEM_INHERIT, O_RDWR);
 *	O_CREAT is implied.  A named child that exists already is opened
 *	(with O_EXCL: EEXIST), if its parent is @parent_fd's (else EEXIST).
 * @mode: permission bits of a named child, masked by the umask
 * @capacity: its own capacity (1..2^62); an existing one keeps its own
 *
 * Weight acquired on the child is acquired on the parent and every
 * ancestor too, at once.
 *
 * Return: a handle fd on the child, or -1 with errno (EBADF, EINVAL,
 * EACCES, EEXIST, ELOOP, ENOSPC).
 */
int wsem_open_child(int parent_fd, const char *name, int oflag, mode_t mode,
		    uint64_t capacity)
{
	struct wsem_open_args args = {
		.size = sizeof(args),
		.flags = WSEM_OPEN_CREAT | WSEM_OPEN_CHILD,
		.capacity = capacity,
		.mode = mode,
		.parent_fd = parent_fd,
	};
	int allowed = O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC | WSEM_INHERIT;
	int fd;

	if ((oflag & ~allowed) ||
	    ((oflag & O_CLOEXEC) && (oflag & WSEM_INHERIT)))
		return libwsem_einval();
	if (!name) {
		args.flags = WSEM_OPEN_ANON | WSEM_OPEN_CHILD;
		args.mode = 0;
		if (oflag & O_EXCL)
			return libwsem_einval();
	} else if (libwsem_name_copy(args.name, name)) {
		return -1;
	} else if (oflag & O_EXCL) {
		args.flags |= WSEM_OPEN_EXCL;
	}
	fd = libwsem_dev_open(!(oflag & WSEM_INHERIT), 0);
	if (fd < 0)
		return -1;
	if (ioctl(fd, WSEM_IOC_OPEN, &args) < 0) {
		libwsem_close_keep_errno(fd);
		return -1;
	}
	return fd;
}

/**
 * wsem_acquire_many() - weight on several semaphores, all or nothing
 * @fds: @n handles, each on another semaphore, open for reading and
 *	writing
 * @weights: @weights[i] is asked of @fds[i]'s semaphore and, once granted,
 *	held by @fds[i]
 * @n: 1..WSEM_MANY_MAX
 * @timeout_ns: < 0 waits for ever; 0 only tries (EAGAIN); else gives up
 *	after that long (ETIMEDOUT)
 *
 * The request takes one place in the arrival order, and on each of its
 * semaphores no later request is granted before it: nothing deadlocks and
 * nothing starves it.  Nothing is held unless all is.
 *
 * Return: 0, or -1 with errno (EAGAIN, ETIMEDOUT, EINTR, EINVAL, EBADF).
 */
int wsem_acquire_many(const int *fds, const uint64_t *weights, size_t n,
		      int64_t timeout_ns)
{
	struct wsem_many_entry e[WSEM_MANY_MAX];
	struct wsem_many_args args = {
		.size = sizeof(args),
		.entries = (uintptr_t)e,
	};
	struct timespec now;
	size_t i;

	if (!n || n > WSEM_MANY_MAX)
		return libwsem_einval();
	if (!fds || !weights) {
		errno = EFAULT;
		return -1;
	}
	memset(e, 0, sizeof(e));
	for (i = 0; i < n; i++) {
		e[i].fd = fds[i];
		e[i].weight = weights[i];
	}
	args.count = (__u32)n;
	if (!timeout_ns) {
		args.flags = WSEM_ACQUIRE_TRY;
	} else if (timeout_ns > 0) {
		__u64 now_ns;

		if (clock_gettime(CLOCK_MONOTONIC, &now))
			return -1;
		now_ns = (__u64)now.tv_sec * NSEC_PER_SEC + (__u64)now.tv_nsec;
		args.flags = WSEM_ACQUIRE_DEADLINE;
		args.deadline_ns = (__u64)timeout_ns > UINT64_MAX - now_ns ?
				   UINT64_MAX : now_ns + (__u64)timeout_ns;
	}
	return ioctl(fds[0], WSEM_IOC_ACQUIRE_MANY, &args);
}
