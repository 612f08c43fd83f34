// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Getting a handle: bind a fresh /dev/wsem file to a named or an anonymous
 * semaphore, or reopen an existing one.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/vfs.h>

#include "wsem.h"
#include "internal.h"

/*
 * Close-on-exec unless the caller asked for an inheritable handle: a handle
 * leaked into an exec()ed child (system(3), popen(3)) would hold weight
 * there.  1 for close-on-exec, 0 for inheritable, -1 (EINVAL) for flags
 * outside @allowed or for both O_CLOEXEC and WSEM_INHERIT.
 */
static int want_cloexec(int oflag, int allowed)
{
	allowed |= O_CLOEXEC | WSEM_INHERIT;
	if (oflag & ~allowed)
		return libwsem_einval();
	if ((oflag & O_CLOEXEC) && (oflag & WSEM_INHERIT))
		return libwsem_einval();
	return !(oflag & WSEM_INHERIT);
}

/*
 * Open /dev/wsem (read-only for a watch) and bind it as @args says; close
 * it again on failure.
 */
static int bind_new_handle(struct wsem_open_args *args, int cloexec,
			   int watch)
{
	int fd = libwsem_dev_open(cloexec, watch);

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
 * A path that is not there is ENOENT, as open(2) says; another file than
 * a wsemfs one is EINVAL.  The file is opened first and its descriptor
 * asked which file system it is on (no statfs()-then-open() race), with
 * O_NONBLOCK so that a FIFO or a device swapped in cannot block the open,
 * and O_NOCTTY so that a terminal cannot become ours; O_NONBLOCK is
 * cleared again once the file is known to be a handle.
 */
static int open_path(const char *path, int oflag, int cloexec, int watch)
{
	struct statfs sf;
	int fd, fl;

	if (oflag & (O_CREAT | O_EXCL))
		return libwsem_einval();
	fd = open(path, (watch ? O_RDONLY : O_RDWR) | O_NONBLOCK | O_NOCTTY |
		  (cloexec ? O_CLOEXEC : 0));
	if (fd < 0) {
		/*
		 * A file that cannot be opened so (a directory, one not
		 * writable) is still EINVAL when it is not wsemfs's; that
		 * says nothing about what the path names next.
		 */
		int err = errno;

		if (err != ENOENT && !statfs(path, &sf) &&
		    sf.f_type != WSEM_FS_MAGIC)
			err = EINVAL;
		errno = err;
		return -1;
	}
	if (fstatfs(fd, &sf))
		goto fail;
	if (sf.f_type != WSEM_FS_MAGIC) {
		errno = EINVAL;
		goto fail;
	}
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK))
		goto fail;
	return fd;

fail:
	libwsem_close_keep_errno(fd);
	return -1;
}

/* A name's handle, or a path's (anything with a '/'). */
static int open_name(const char *name, int oflag, mode_t mode,
		     uint64_t capacity, int cloexec, int watch)
{
	struct wsem_open_args args = { .size = sizeof(args) };

	if (name && strchr(name, '/'))
		return open_path(name, oflag, cloexec, watch);
	if (libwsem_name_copy(args.name, name))
		return -1;
	if (oflag & O_CREAT) {
		args.flags |= WSEM_OPEN_CREAT;
		args.capacity = capacity;
		args.mode = mode;
	}
	if (oflag & WSEM_LOANS)
		args.flags |= WSEM_OPEN_LOANS;
	if (oflag & O_EXCL)
		args.flags |= WSEM_OPEN_EXCL;
	return bind_new_handle(&args, cloexec, watch);
}

/**
 * wsem_open() - open, or create, a named semaphore
 * @name: 1..63 bytes of [A-Za-z0-9._-], or a path to a wsemfs file
 *	(anything with a '/')
 * @oflag: O_CREAT, O_EXCL, O_CLOEXEC, WSEM_INHERIT, WSEM_LOANS (with
 *	O_CREAT only; a path takes no O_CREAT or O_EXCL); close-on-exec
 *	unless WSEM_INHERIT.  O_RDWR, as
 *	mq_open(3) callers pass it, is accepted and changes nothing: the
 *	handle is open for reading and writing (wsem_open_watch() opens one
 *	for reading only); O_WRONLY is EINVAL.
 * @mode: permission bits for O_CREAT, masked by the umask
 * @capacity: capacity for O_CREAT (1..2^62), with WSEM_LOANS the ceiling
 *	of a semaphore whose own capacity is 0; an existing one keeps its own
 *
 * Return: a handle fd, or -1 with errno.
 */
int wsem_open(const char *name, int oflag, mode_t mode, uint64_t capacity)
{
	int cloexec = want_cloexec(oflag,
				   O_CREAT | O_EXCL | O_RDWR | WSEM_LOANS);

	if (cloexec < 0)
		return -1;
	/* Only a semaphore this call creates can take its capacity from loans. */
	if ((oflag & WSEM_LOANS) && !(oflag & O_CREAT))
		return libwsem_einval();
	return open_name(name, oflag, mode, capacity, cloexec, 0);
}

/**
 * wsem_open_watch() - a handle that watches an existing semaphore
 * @name: a name, or the path of a wsemfs file (anything with a '/')
 * @oflag: 0, O_CLOEXEC (the default anyway) or WSEM_INHERIT
 *
 * The handle is open for reading only, so opening it needs read
 * permission alone: it can stat, list the holders, wait until idle, poll
 * and read(2), and every call that would change the semaphore (acquire,
 * release, set_capacity, set_label) fails with EBADF.  wsem_reopen() of
 * it gives another watching handle.
 *
 * Return: a handle fd, or -1 with errno (ENOENT, EACCES, EINVAL).
 */
int wsem_open_watch(const char *name, int oflag)
{
	int cloexec = want_cloexec(oflag, 0);

	if (cloexec < 0)
		return -1;
	return open_name(name, 0, 0, 0, cloexec, 1);
}

/**
 * wsem_open_anon() - create an anonymous semaphore
 * @capacity: 1..2^62; with WSEM_LOANS the ceiling of a semaphore whose own
 *	capacity is 0
 * @oflag: 0, O_CLOEXEC (the default anyway) or WSEM_INHERIT, and
 *	WSEM_LOANS
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
	int cloexec = want_cloexec(oflag, WSEM_LOANS);

	if (cloexec < 0)
		return -1;
	if (oflag & WSEM_LOANS)
		args.flags |= WSEM_OPEN_LOANS;
	return bind_new_handle(&args, cloexec, 0);
}

/**
 * wsem_reopen() - a new, independent handle on the semaphore of @fd
 * @fd: a bound handle
 * @oflag: 0, O_CLOEXEC (the default anyway) or WSEM_INHERIT
 *
 * Return: the new handle fd (holding 0), or -1 with errno.
 */
int wsem_reopen(int fd, int oflag)
{
	int cloexec = want_cloexec(oflag, 0);
	__u64 flags = 0;

	if (cloexec < 0)
		return -1;
	if (cloexec)
		flags |= WSEM_REOPEN_CLOEXEC;
	return ioctl(fd, WSEM_IOC_REOPEN, &flags);
}
