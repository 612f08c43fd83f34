/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * wsem: weighted, strictly FIFO counting semaphores enforced by the kernel.
 *
 * Every ioctl is issued on an open file of /dev/wsem (a "handle").  A fresh
 * handle is unbound; WSEM_IOC_OPEN binds it to a named or an anonymous
 * semaphore.  Weight acquired through a handle belongs to the open file
 * description and is released when its last reference goes away.
 *
 * Argument structs start with a __u64 @size that userspace sets to the size
 * of the struct it was compiled with.  The kernel accepts any size from the
 * first published version (WSEM_*_SIZE_VER0) up to a page: a shorter struct
 * is zero-extended, a longer one must have a zero tail (else E2BIG).  The
 * size bits of the command number are ignored, so a struct may grow without
 * changing the command.  Output structs are written up to the smaller of the
 * two sizes.  Unknown flags are rejected with EINVAL, unknown commands with
 * ENOTTY.
 */
#ifndef _UAPI_LINUX_WSEM_H
#define _UAPI_LINUX_WSEM_H

#include <linux/const.h>
#include <linux/ioctl.h>
#include <linux/types.h>

/*
 * statfs(2)'s f_type of wsemfs ("mount -t wsem"), where each named
 * semaphore of an IPC namespace is a file; open(2) of one gives a handle.
 */
#define WSEM_FS_MAGIC		0x7773656d	/* "wsem" */

/*
 * The directory of wsemfs that holds each named semaphore's jobserver
 * endpoint (the GNU make jobserver protocol): MOUNT/@jobserver/NAME, a
 * fifo-like file whose read(2) of one byte acquires one unit and whose
 * write(2) gives it back.  '@' is no name character: no semaphore has it.
 */
#define WSEM_JOBSERVER_DIR	"@jobserver"

/* A name is 1..63 bytes of [A-Za-z0-9._-], NUL-terminated in this buffer. */
#define WSEM_NAME_MAX		64
/* Capacities run from 1 to 2^62. */
#define WSEM_CAPACITY_MAX	_BITULL(62)

/* struct wsem_open_args.flags */
#define WSEM_OPEN_CREAT		_BITULL(0)	/* create if it does not exist */
#define WSEM_OPEN_EXCL		_BITULL(1)	/* with CREAT: fail if it exists */
#define WSEM_OPEN_ANON		_BITULL(2)	/* new anonymous semaphore */
/*
 * With CREAT or ANON: a semaphore created by this call takes its capacity
 * from loans (WSEM_IOC_LEND).  Its own capacity starts at 0 and may be set
 * to 0; @capacity is its ceiling, the largest weight a request may ask
 * for.  A waiter within the ceiling waits while the capacity is short,
 * loans withdrawn included; it never fails for a shrink.
 */
#define WSEM_OPEN_LOANS		_BITULL(3)
/*
 * With CREAT or ANON: a semaphore created by this call is a child of the
 * semaphore of the handle @parent_fd (open for reading and writing, with
 * read and write permission on that semaphore).  Weight acquired on a
 * child is acquired on each of its ancestors too, at once; the requests of
 * a whole tree queue in one arrival order.  A named semaphore that exists
 * already must have that parent (else EEXIST).  At most WSEM_DEPTH_MAX
 * levels below a root (else ELOOP).
 */
#define WSEM_OPEN_CHILD		_BITULL(4)

/* How many levels of children a root may have below it. */
#define WSEM_DEPTH_MAX		8

/**
 * struct wsem_open_args - bind a fresh handle (WSEM_IOC_OPEN)
 * @size: sizeof(struct wsem_open_args)
 * @flags: WSEM_OPEN_*; ANON excludes CREAT, EXCL and a name
 * @capacity: capacity of a semaphore this call creates (CREAT or ANON);
 *	with WSEM_OPEN_LOANS its ceiling
 * @mode: permission bits (0777 at most) of a created named semaphore,
 *	masked with the caller's umask
 * @__pad: must be zero
 * @name: the name, NUL-terminated; all zero for ANON
 * @parent_fd: with WSEM_OPEN_CHILD, a handle on the parent; else zero
 * @__pad2: must be zero
 */
struct wsem_open_args {
	__u64 size;
	__u64 flags;
	__u64 capacity;
	__u32 mode;
	__u32 __pad;
	char name[WSEM_NAME_MAX];
	__s32 parent_fd;
	__u32 __pad2;
};

#define WSEM_OPEN_SIZE_VER0	96
#define WSEM_OPEN_SIZE_VER1	104	/* @parent_fd */

/* struct wsem_acquire_args.flags */
#define WSEM_ACQUIRE_TRY	_BITULL(0)	/* never sleep: EAGAIN */
#define WSEM_ACQUIRE_DEADLINE	_BITULL(1)	/* @deadline_ns is set: ETIMEDOUT */
#define WSEM_ACQUIRE_CLOCK	_BITULL(2)	/* with DEADLINE: on @clockid */
#define WSEM_ACQUIRE_ASYNC	_BITULL(3)	/* queue and return: EINPROGRESS */

/**
 * struct wsem_acquire_args - acquire weight (WSEM_IOC_ACQUIRE), or wait
 *	until a semaphore is idle (WSEM_IOC_WAIT_IDLE, @weight 0)
 * @size: sizeof(struct wsem_acquire_args)
 * @weight: 1 .. capacity; 0 for WSEM_IOC_WAIT_IDLE
 * @flags: WSEM_ACQUIRE_*; ASYNC goes with none of the others
 * @deadline_ns: with WSEM_ACQUIRE_DEADLINE, the absolute time in
 *	nanoseconds at which the wait ends with ETIMEDOUT; a deadline already
 *	past never sleeps.  It is absolute so that a wait restarted after a
 *	stop, or retried after EINTR, keeps its deadline.
 * @clockid: with WSEM_ACQUIRE_CLOCK, the clock of @deadline_ns:
 *	CLOCK_MONOTONIC, CLOCK_BOOTTIME or CLOCK_REALTIME (whose deadline
 *	follows changes of the clock, as sem_clockwait(3)'s does); without
 *	it, CLOCK_MONOTONIC
 * @__pad: zero
 *
 * WSEM_ACQUIRE_ASYNC takes the request's place at the tail of the queue
 * and returns at once: 0 if it was granted at once, else EINPROGRESS.  The
 * handle then polls readable (EPOLLIN) once the request has ended, which
 * WSEM_IOC_ASYNC tells.  A handle has at most one request (EBUSY); closing
 * it cancels the request.
 */
struct wsem_acquire_args {
	__u64 size;
	__u64 weight;
	__u64 flags;
	__u64 deadline_ns;
	__u32 clockid;
	__u32 __pad;
};

#define WSEM_ACQUIRE_SIZE_VER0	32
#define WSEM_ACQUIRE_SIZE_VER1	40	/* @clockid */

/**
 * struct wsem_stat - the state of a semaphore (WSEM_IOC_STAT, WSEM_IOC_LIST)
 * @size: in: the caller's sizeof(struct wsem_stat); out: bytes written
 * @capacity: capacity C
 * @used: weight held by all handles, U
 * @available: C - U, or 0 while U > C after a shrink
 * @held: weight held by this handle (0 in a list)
 * @waiters: number of queued waiters
 * @queued_weight: sum of the weights they wait for, or UINT64_MAX if larger
 * @uid: owner, as seen from the caller's user namespace
 * @gid: group, as seen from the caller's user namespace
 * @mode: permission bits
 * @__pad: zero
 * @name: the name, or empty for an anonymous or unlinked semaphore
 * @grants_at_once: acquires granted without waiting, since creation
 * @grants_waited: acquires granted after waiting in the queue
 * @timeouts: acquires that failed with ETIMEDOUT
 * @interrupts: waits that a signal or a stop ended (EINTR, or restarted)
 * @shrunk: waits that a capacity below their weight ended (EINVAL)
 * @wait_ns_total: time spent in the queue by every wait, however it ended
 * @wait_ns_max: the longest of those waits
 * @queue_max: the longest the queue has been
 * @lent: the capacity that open handles lend (WSEM_IOC_LEND), part of
 *	@capacity; the semaphore's own capacity is @capacity - @lent
 * @lent_here: what this handle lends (0 in a list)
 * @ceiling: 0, or for a semaphore that takes its capacity from loans
 *	(WSEM_OPEN_LOANS) the largest weight a request may ask for
 * @depth: 0 for a root, else how many levels below its root (a child's)
 * @parent_id: the parent's id (fdinfo's wsem-id), or 0 for a root
 *
 * The statistics (from @grants_at_once on) came with size
 * WSEM_STAT_SIZE_VER1, the loans (from @lent on) with WSEM_STAT_SIZE_VER2,
 * the tree (from @depth on) with WSEM_STAT_SIZE_VER3;
 * a caller of an older size gets the fields its size holds.
 */
struct wsem_stat {
	__u64 size;
	__u64 capacity;
	__u64 used;
	__u64 available;
	__u64 held;
	__u64 waiters;
	__u64 queued_weight;
	__u32 uid;
	__u32 gid;
	__u32 mode;
	__u32 __pad;
	char name[WSEM_NAME_MAX];
	__u64 grants_at_once;
	__u64 grants_waited;
	__u64 timeouts;
	__u64 interrupts;
	__u64 shrunk;
	__u64 wait_ns_total;
	__u64 wait_ns_max;
	__u64 queue_max;
	__u64 lent;
	__u64 lent_here;
	__u64 ceiling;
	__u64 depth;
	__u64 parent_id;
};

#define WSEM_STAT_SIZE_VER0	136
#define WSEM_STAT_SIZE_VER1	200
#define WSEM_STAT_SIZE_VER2	224
#define WSEM_STAT_SIZE_VER3	240	/* @depth, @parent_id */

/**
 * struct wsem_list_args - list the caller's namespace (WSEM_IOC_LIST)
 * @size: sizeof(struct wsem_list_args)
 * @stats: user pointer to an array of @count entries of @stat_size bytes
 * @count: number of entries @stats has room for
 * @stat_size: the caller's sizeof(struct wsem_stat)
 * @total: out: how many semaphores the caller may read, in name order;
 *	the first min(@count, @total) of them were written
 */
struct wsem_list_args {
	__u64 size;
	__u64 stats;
	__u32 count;
	__u32 stat_size;
	__u64 total;
};

#define WSEM_LIST_SIZE_VER0	32

/**
 * struct wsem_unlink_args - remove a name (WSEM_IOC_UNLINK)
 * @size: sizeof(struct wsem_unlink_args)
 * @flags: zero
 * @name: the name, NUL-terminated
 */
struct wsem_unlink_args {
	__u64 size;
	__u64 flags;
	char name[WSEM_NAME_MAX];
};

#define WSEM_UNLINK_SIZE_VER0	80

/*
 * A handle's label (WSEM_IOC_SET_LABEL) is 0..63 bytes of printable ASCII
 * (0x20..0x7e), NUL-terminated in this buffer.
 */
#define WSEM_LABEL_MAX		64

/* Room for a cgroup path in struct wsem_holder; longer ones are cut. */
#define WSEM_CGROUP_MAX		256

/* struct wsem_holder.flags */
#define WSEM_HOLDER_WAITING	_BITULL(0)	/* a waiter, not a holder */
/*
 * A child semaphore, not a handle: @weight is what it and its own children
 * hold, @label its name (as the caller's namespace names it) or "[ID]"
 * (its wsem-id), and no pid, command or cgroup.
 */
#define WSEM_HOLDER_CHILD	_BITULL(1)

/**
 * struct wsem_holder - who holds or waits (WSEM_IOC_HOLDERS)
 * @weight: the weight held (by one handle) or waited for
 * @age_ns: how long ago the handle's last grant happened, or how long the
 *	waiter has been queued
 * @flags: WSEM_HOLDER_WAITING for a waiter
 * @pid: the process (thread group) that last acquired through the handle,
 *	or that waits, in the caller's PID namespace; 0 where not visible
 * @__pad: zero
 * @comm: its command name, NUL-terminated
 * @cgroup: its cgroup v2 path relative to the caller's cgroup namespace,
 *	NUL-terminated, cut to fit; empty if unknown
 * @label: the handle's label (WSEM_IOC_SET_LABEL), NUL-terminated; empty
 *	if it has none or where the pid is not visible
 *
 * @label came with size WSEM_HOLDER_SIZE_VER1; a caller of size
 * WSEM_HOLDER_SIZE_VER0 gets the rest.
 */
struct wsem_holder {
	__u64 weight;
	__u64 age_ns;
	__u64 flags;
	__s32 pid;
	__u32 __pad;
	char comm[16];
	char cgroup[WSEM_CGROUP_MAX];
	char label[WSEM_LABEL_MAX];
};

#define WSEM_HOLDER_SIZE_VER0	304
#define WSEM_HOLDER_SIZE_VER1	368	/* @label */

/**
 * struct wsem_holders_args - the holders, then the waiters in queue order
 * @size: sizeof(struct wsem_holders_args)
 * @flags: zero
 * @entries: user pointer to an array of @count entries of @entry_size bytes
 * @count: number of entries @entries has room for
 * @entry_size: the caller's sizeof(struct wsem_holder)
 * @holders: out: handles holding weight
 * @waiters: out: waiters queued, the semaphore's and its descendants'; the
 *	first min(@count, @holders + @waiters + @children) entries were
 *	written, holders first, then waiters, then children
 * @children: out: child semaphores that hold weight (WSEM_HOLDER_CHILD);
 *	none are listed to a caller whose @size ends before this field
 * @__pad: zero
 */
struct wsem_holders_args {
	__u64 size;
	__u64 flags;
	__u64 entries;
	__u32 count;
	__u32 entry_size;
	__u32 holders;
	__u32 waiters;
	__u32 children;
	__u32 __pad;
};

#define WSEM_HOLDERS_SIZE_VER0	40
#define WSEM_HOLDERS_SIZE_VER1	48	/* @children */

/**
 * struct wsem_label_args - label a handle (WSEM_IOC_SET_LABEL)
 * @size: sizeof(struct wsem_label_args)
 * @flags: zero
 * @label: 0..63 bytes of printable ASCII (0x20..0x7e), NUL-terminated;
 *	empty clears the label
 */
struct wsem_label_args {
	__u64 size;
	__u64 flags;
	char label[WSEM_LABEL_MAX];
};

#define WSEM_LABEL_SIZE_VER0	80

/**
 * struct wsem_kill_args - a process group that ends with the handle's
 *	lease (WSEM_IOC_SET_KILL)
 * @size: sizeof(struct wsem_kill_args)
 * @flags: zero
 * @pgid: the process group, in the caller's PID namespace, or 0 for none
 * @__pad: zero
 */
struct wsem_kill_args {
	__u64 size;
	__u64 flags;
	__s32 pgid;
	__u32 __pad;
};

#define WSEM_KILL_SIZE_VER0	24

/**
 * struct wsem_lend_args - capacity lent by a handle (WSEM_IOC_LEND)
 * @size: sizeof(struct wsem_lend_args)
 * @flags: 0, or WSEM_LEND_END_HOLDERS and WSEM_LEND_DEADLINE
 * @capacity: what the handle lends from now on; 0 withdraws its loan
 * @deadline_ns: with WSEM_LEND_DEADLINE, when the loan ends unless lent
 *	again: an absolute time on CLOCK_BOOTTIME, in the caller's time
 *	namespace (not in the struct of size WSEM_LEND_SIZE_VER0)
 */
struct wsem_lend_args {
	__u64 size;
	__u64 flags;
	__u64 capacity;
	__u64 deadline_ns;
};

#define WSEM_LEND_SIZE_VER0	24
#define WSEM_LEND_SIZE_VER1	32

/*
 * WSEM_IOC_LEND flags.  WSEM_LEND_END_HOLDERS: when the handle's file is
 * released (however its process dies), SIGKILL goes first to the thread
 * group that last acquired through each handle that holds weight on the
 * semaphore or on one of its descendants, and to that handle's process
 * group of WSEM_IOC_SET_KILL, then to every other process that has such
 * a handle open (fork after the acquire, SCM_RIGHTS); a call without it
 * forgets it.
 * For an agent whose loan is only good while it lives (a cluster share
 * under its etcd lease).  Needs CAP_KILL.
 *
 * WSEM_LEND_DEADLINE: the loan ends at @deadline_ns on CLOCK_BOOTTIME
 * (which counts suspend) unless the handle lends again first: the kernel
 * withdraws it as the handle's close would, and with
 * WSEM_LEND_END_HOLDERS sends the holders SIGKILL in the same step; the
 * handle stays open and lends nothing.  A call without the flag lends
 * with no deadline; a deadline not in the future is ETIMEDOUT.
 */
#define WSEM_LEND_END_HOLDERS	_BITULL(0)
#define WSEM_LEND_DEADLINE	_BITULL(1)

/* How many semaphores one gang request (WSEM_IOC_ACQUIRE_MANY) may ask. */
#define WSEM_MANY_MAX		8

/**
 * struct wsem_many_entry - one semaphore of a gang request
 * @fd: a handle on it, open for reading and writing
 * @__pad: zero
 * @weight: what the request asks of it, granted to that handle
 */
struct wsem_many_entry {
	__s32 fd;
	__u32 __pad;
	__u64 weight;
};

/**
 * struct wsem_many_args - a gang request (WSEM_IOC_ACQUIRE_MANY)
 * @size: sizeof(struct wsem_many_args)
 * @flags: WSEM_ACQUIRE_TRY, or _DEADLINE and _CLOCK, as for
 *	WSEM_IOC_ACQUIRE (no _ASYNC)
 * @deadline_ns: as struct wsem_acquire_args's
 * @clockid: as struct wsem_acquire_args's
 * @count: 1 .. WSEM_MANY_MAX entries
 * @entries: user pointer to @count struct wsem_many_entry, each naming
 *	another semaphore
 */
struct wsem_many_args {
	__u64 size;
	__u64 flags;
	__u64 deadline_ns;
	__u32 clockid;
	__u32 count;
	__u64 entries;
};

#define WSEM_MANY_SIZE_VER0	40

/* WSEM_IOC_REOPEN flags */
#define WSEM_REOPEN_CLOEXEC	_BITULL(0)

/* WSEM_IOC_ASYNC flags */
#define WSEM_ASYNC_CANCEL	_BITULL(0)	/* leave the queue if still in it */

#define WSEM_IOC_MAGIC		0xB9

/* Bind this handle; 0 or -1 with EEXIST, ENOENT, EACCES, EINVAL, ENOSPC. */
#define WSEM_IOC_OPEN		_IOW(WSEM_IOC_MAGIC, 0x01, struct wsem_open_args)
/* A new handle (returned fd) on the same semaphore; arg: __u64 flags. */
#define WSEM_IOC_REOPEN		_IOW(WSEM_IOC_MAGIC, 0x02, __u64)
#define WSEM_IOC_ACQUIRE	_IOW(WSEM_IOC_MAGIC, 0x03, struct wsem_acquire_args)
/* arg: __u64 weight */
#define WSEM_IOC_RELEASE	_IOW(WSEM_IOC_MAGIC, 0x04, __u64)
/* arg: __u64 capacity */
#define WSEM_IOC_SET_CAPACITY	_IOW(WSEM_IOC_MAGIC, 0x05, __u64)
#define WSEM_IOC_STAT		_IOWR(WSEM_IOC_MAGIC, 0x06, struct wsem_stat)
#define WSEM_IOC_UNLINK		_IOW(WSEM_IOC_MAGIC, 0x07, struct wsem_unlink_args)
#define WSEM_IOC_LIST		_IOWR(WSEM_IOC_MAGIC, 0x08, struct wsem_list_args)
/* Needs a handle open for reading; 0 or -1 with EACCES, EINVAL, EFAULT. */
#define WSEM_IOC_HOLDERS	_IOWR(WSEM_IOC_MAGIC, 0x09, struct wsem_holders_args)
/*
 * The handle's asynchronous request; arg: __u64 flags.  Without flags: 0
 * once granted (the weight is the handle's), EINPROGRESS while queued, or
 * the error it ended with (EINVAL: a shrink); an ended request is then
 * forgotten.  With WSEM_ASYNC_CANCEL a queued request leaves the queue
 * and the call returns 0; one granted meanwhile fails with EALREADY and
 * its weight stays held.  ENOENT: no request.
 */
#define WSEM_IOC_ASYNC		_IOW(WSEM_IOC_MAGIC, 0x0a, __u64)
/*
 * Sleep until the semaphore is idle: nothing held, nobody queued.  Takes
 * struct wsem_acquire_args with @weight 0 and the flags TRY, DEADLINE and
 * CLOCK.  0, or -1 with EAGAIN (TRY), ETIMEDOUT, EINTR, or EDEADLK when
 * this handle itself holds weight or has a request.  Needs a handle open
 * for reading; poll(2) reports idle as EPOLLPRI.
 */
#define WSEM_IOC_WAIT_IDLE	_IOW(WSEM_IOC_MAGIC, 0x0b, struct wsem_acquire_args)
/*
 * Label the handle: the holders view (WSEM_IOC_HOLDERS, read(2)) shows
 * the label with the pid and command of its holder or waiter, to callers
 * who see that pid.  Needs a bound handle open for reading and writing;
 * 0 or -1 with EINVAL (unbound, bad label or flags), EBADF, EFAULT.
 */
#define WSEM_IOC_SET_LABEL	_IOW(WSEM_IOC_MAGIC, 0x0c, struct wsem_label_args)

/*
 * Kill a process group with SIGKILL when the handle's lease ends: when its
 * file is released (its last descriptor closed, or the last process that
 * has it dies, however it dies), before what it holds goes back.  The
 * group's leader, whose pid is @pgid, must be a child of the caller in the
 * caller's session; its members are reached whatever their credentials
 * (set-uid ones too).  A new call replaces the group, @pgid 0 forgets it.
 * Needs a bound handle open for reading and writing; 0 or -1 with EINVAL
 * (unbound, flags, padding, @pgid < 0), ESRCH (no such group leader),
 * EPERM (not the caller's child, or in another session), EBADF, EFAULT.
 */
#define WSEM_IOC_SET_KILL	_IOW(WSEM_IOC_MAGIC, 0x0d, struct wsem_kill_args)

/*
 * Lend capacity to the semaphore: its capacity in force is its own plus
 * what every open handle lends.  The call sets what this handle lends;
 * when its file is released (the last descriptor closed, or the last
 * process that has it dies, however it dies) the loan is withdrawn.  Less
 * capacity, by this call or by a withdrawal, is a shrink: nothing held is
 * taken back, and new grants wait until they fit; a waiter heavier than
 * the new capacity fails with EINVAL, unless the semaphore takes its
 * capacity from loans (WSEM_OPEN_LOANS), whose waiters within its ceiling
 * wait on.  Lending more needs what WSEM_IOC_SET_CAPACITY needs (owner or
 * CAP_IPC_OWNER); lending less never does.  Needs a bound handle open for
 * reading and writing; 0 or -1 with EINVAL (unbound, flags, capacity in
 * force above WSEM_CAPACITY_MAX, WSEM_LEND_DEADLINE in a struct without
 * @deadline_ns), ETIMEDOUT (a deadline that has passed), EPERM (also
 * WSEM_LEND_END_HOLDERS without CAP_KILL), ENOMEM, EBADF, EFAULT.  Nothing
 * changes on an error.
 *
 * poll(2) on a handle reports POLLRDBAND (EPOLLRDBAND) while the demand on
 * its semaphore (waiters, queued weight, held weight) has changed since the
 * handle last read its state (WSEM_IOC_STAT, read(2)): an agent that lends
 * capacity follows demand without polling.
 */
#define WSEM_IOC_LEND		_IOW(WSEM_IOC_MAGIC, 0x0e, struct wsem_lend_args)

/*
 * One request for weight on several semaphores at once, granted all at
 * once or not at all; the weight granted on each belongs to the handle it
 * was asked through.  It takes one place in the arrival order of each
 * semaphore's tree, and no later request that needs one of them is granted
 * before it.  Issued on any handle.  0, or -1 with EINVAL (bad flags,
 * count, entry, weight of 0 or above what a semaphore or its line can
 * ever give, the same semaphore twice, a handle that is no bound handle),
 * EBADF (an entry's fd not open, or not open for reading and writing),
 * EAGAIN (TRY), ETIMEDOUT, EINTR (a signal: nothing is held from the
 * call), EFAULT.
 */
#define WSEM_IOC_ACQUIRE_MANY	_IOW(WSEM_IOC_MAGIC, 0x0f, struct wsem_many_args)

/**
 * struct wsem_counters - a semaphore's counters, mapped read-only
 * @seq: even when the fields below are whole; odd while the kernel writes
 *	them.  It changes at every write, so a reader that sees the same
 *	even value before and after reading the fields has one state
 * @flags: WSEM_COUNTERS_*
 * @size: how many bytes of this struct the kernel writes, at least
 *	WSEM_COUNTERS_SIZE_VER0; a field beyond it is 0
 * @__pad: 0
 * @capacity: the capacity in force: the semaphore's own plus every open
 *	loan, as struct wsem_stat's @capacity
 * @used: the weight held on the semaphore and its children together, as
 *	struct wsem_stat's @used
 * @waiters: queued requests on the semaphore and its children
 * @queued_weight: the sum of their weights, modulo 2^64 (as struct
 *	wsem_stat's @queued_weight)
 *
 * mmap(2) of a handle bound to a semaphore (a /dev/wsem handle, or a
 * semaphore's file in wsemfs), PROT_READ and offset 0, of at most one page,
 * maps this struct at the start of the mapping; the rest of the page is 0.
 * Every handle of the semaphore maps the same page.  The kernel rewrites it
 * under the semaphore's lock at every change of a field; userspace only
 * reads it, without a system call:
 *
 *	const struct wsem_counters *c = mmap(NULL, sizeof(*c), PROT_READ,
 *					     MAP_SHARED, fd, 0);
 *	struct wsem_counters out;
 *	__u32 s1, s2;
 *
 *	for (;;) {
 *		s1 = __atomic_load_n(&c->seq, __ATOMIC_ACQUIRE);
 *		if (s1 & 1)
 *			continue;			// or pause, yield
 *		out.flags = __atomic_load_n(&c->flags, __ATOMIC_RELAXED);
 *		out.capacity = __atomic_load_n(&c->capacity,
 *					       __ATOMIC_RELAXED);
 *		...					// each field likewise
 *		__atomic_thread_fence(__ATOMIC_ACQUIRE); // the read barrier
 *		s2 = __atomic_load_n(&c->seq, __ATOMIC_RELAXED);
 *		if (s1 == s2)
 *			break;				// out is one state
 *	}
 *
 * (A 32-bit program may read the __u64 fields with plain volatile loads: a
 * torn one is caught by @seq.)  libwsem's wsem_read_counters() does this.
 *
 * A mapping keeps the page: once the semaphore is freed (its last handle
 * closed, its name unlinked), the page keeps its last values, with
 * WSEM_COUNTERS_GONE set, until the last mapping of it goes.
 *
 * At an offset of WSEM_MMAP_TREE pages, mmap(2) maps the page of the
 * semaphore's tree instead (struct wsem_tree_counters).
 *
 * mmap fails with EINVAL for an unbound handle, an offset other than 0 or
 * WSEM_MMAP_TREE pages or a length over one page; with EACCES for
 * PROT_WRITE or PROT_EXEC, shared or private, and for a handle not open
 * for reading.  The mapping can never be made writable or executable
 * (mprotect(2): EACCES) nor grow (mremap(2)).
 */
struct wsem_counters {
	__u32 seq;
	__u32 flags;
	__u32 size;
	__u32 __pad;
	__u64 capacity;
	__u64 used;
	__u64 waiters;
	__u64 queued_weight;
};

#define WSEM_COUNTERS_SIZE_VER0	48

/* struct wsem_counters.flags, struct wsem_tree_counters.flags */
#define WSEM_COUNTERS_GONE	_BITUL(0)	/* the semaphore was freed */

/**
 * struct wsem_tree_counters - what a child's counters page cannot show
 * @seq: as struct wsem_counters' @seq; a reader of @flags alone needs
 *	no @seq (one aligned __u32)
 * @flags: WSEM_TREE_WAITING, WSEM_TREE_OVER; WSEM_COUNTERS_GONE once the
 *	tree's root was freed
 * @size: how many bytes of this struct the kernel writes, at least
 *	WSEM_TREE_COUNTERS_SIZE_VER0
 * @__pad: 0
 *
 * Weight held on a child is held on each of its ancestors, but a child's
 * counters page shows only its own semaphore and its descendants.  Every
 * semaphore of a tree maps one page more, at an offset of WSEM_MMAP_TREE
 * pages, the same for the whole tree: whether a request is queued anywhere
 * in the tree and whether any semaphore of it holds more than its
 * capacity (after a shrink or a loan's withdrawal).  Only these two facts:
 * a child's handle learns nothing of its ancestors' numbers (its poll's
 * POLLIN already says whether a try of 1 would succeed).  The kernel
 * rewrites the page under the tree's lock when a flag changes; a handle of
 * a child polled for POLLRDBAND reports it also while the flags changed
 * since it last read its state.  A pool over a child keeps weight spare
 * only while its own page shows no waiter nor overhang and this page
 * neither flag (wsem_pool_open(3)).
 */
struct wsem_tree_counters {
	__u32 seq;
	__u32 flags;
	__u32 size;
	__u32 __pad;
};

#define WSEM_TREE_COUNTERS_SIZE_VER0	16

/* The offset, in pages, of the tree's page in a handle's mmap(2) */
#define WSEM_MMAP_TREE		1

/* struct wsem_tree_counters.flags */
#define WSEM_TREE_WAITING	_BITUL(1)	/* a request is queued in the tree */
#define WSEM_TREE_OVER		_BITUL(2)	/* one holds more than its capacity */

#endif /* _UAPI_LINUX_WSEM_H */
