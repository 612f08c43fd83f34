// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The device node and the small helpers every call shares.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "internal.h"

/*
 * A fresh, unbound handle, read-only for a watch; -1 with errno from
 * open(2) (ENOENT: no module).
 */
int libwsem_dev_open(int cloexec, int watch)
{
	return open(LIBWSEM_DEVICE, (watch ? O_RDONLY : O_RDWR) |
		    (cloexec ? O_CLOEXEC : 0));
}

/* Close a descriptor on an error path without losing the caller's errno. */
void libwsem_close_keep_errno(int fd)
{
	int err = errno;

	close(fd);
	errno = err;
}

/*
 * Copy a name into a zeroed WSEM_NAME_MAX buffer.  NULL and names that do
 * not fit are EINVAL here; the kernel checks the characters.
 */
int libwsem_name_copy(char dst[WSEM_NAME_MAX], const char *name)
{
	size_t len;

	if (!name)
		return libwsem_einval();
	len = strnlen(name, WSEM_NAME_MAX);
	if (len == WSEM_NAME_MAX)
		return libwsem_einval();
	memcpy(dst, name, len);
	dst[len] = '\0';
	return 0;
}

/*
 * Is @path a file of wsemfs?  0, or -1 with errno: what statfs(2) says, or
 * EINVAL for any other file, which the library must not open or remove
 * as if it were a semaphore.
 */
int libwsem_check_path(const char *path)
{
	struct statfs sf;

	if (statfs(path, &sf))
		return -1;
	if (sf.f_type != WSEM_FS_MAGIC)
		return libwsem_einval();
	return 0;
}

int libwsem_einval(void)
{
	errno = EINVAL;
	return -1;
}
