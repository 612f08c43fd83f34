// SPDX-License-Identifier: GPL-2.0
/*
 * wsem: who may do what to a semaphore: its mode for reading and writing,
 * its owner for resizing and unlinking, and CAP_IPC_OWNER in its user
 * namespace over both, as SysV IPC decides (ipcperms()).
 *
 * Calls no other file of wsem.
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/user_namespace.h>

#include "wsem.h"

/**
 * wsem_permission() - check the caller's access to a semaphore, as
 *	ipcperms() does for SysV IPC
 * @sem: the semaphore
 * @mask: MAY_READ and/or MAY_WRITE
 * @audit: whether a use of CAP_IPC_OWNER is audited (and marks the task
 *	PF_SUPERPRIV); a listing that merely skips what it may not read
 *	passes false
 *
 * The caller's class (owner, group, other) is chosen with its effective ids;
 * CAP_IPC_OWNER in the semaphore's user namespace overrides the mode.
 *
 * Return: 0 if every bit of @mask is granted, else -EACCES.
 */
int wsem_permission(const struct wsem *sem, int mask, bool audit)
{
	umode_t mode = READ_ONCE(sem->mode);
	bool capable;

	if (uid_eq(current_euid(), READ_ONCE(sem->uid)))
		mode >>= 6;
	else if (in_egroup_p(READ_ONCE(sem->gid)))
		mode >>= 3;
	if (!(mask & ~mode & 0007))
		return 0;
	if (!audit)
		capable = ns_capable_noaudit(sem->user_ns, CAP_IPC_OWNER);
	else
		capable = ns_capable(sem->user_ns, CAP_IPC_OWNER);
	return capable ? 0 : -EACCES;
}

/**
 * wsem_owner_or_capable() - may the caller resize or unlink a semaphore?
 * @sem: the semaphore
 *
 * Return: true for its owner or a holder of CAP_IPC_OWNER in its user
 * namespace.
 */
bool wsem_owner_or_capable(const struct wsem *sem)
{
	return uid_eq(current_euid(), READ_ONCE(sem->uid)) ||
	       ns_capable(sem->user_ns, CAP_IPC_OWNER);
}
