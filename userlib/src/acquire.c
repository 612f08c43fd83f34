// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Acquire and release weight.  One ioctl each: no allocation, no threads,
 * no retry.  A signal ends a wait with EINTR, which reaches the caller.
 * Timeouts become an absolute CLOCK_MONOTONIC deadline, so the kernel can
 * restart a wait after a stop without stretching it.
 */
#include <stdint.h>
#include <sys/ioctl.h>
#include <time.h>

#include "wsem.h"
#include "internal.h"

#define NSEC_PER_SEC	1000000000ULL

/* WSEM_IOC_ACQUIRE or WSEM_IOC_WAIT_IDLE with these arguments. */
static int wait_ioctl(int fd, unsigned long cmd, uint64_t weight,
		      __u64 flags, clockid_t clockid, __u64 deadline_ns)
{
	struct wsem_acquire_args args = {
		.size = sizeof(args),
		.weight = weight,
		.flags = flags,
		.deadline_ns = deadline_ns,
		.clockid = (__u32)clockid,
	};

	return ioctl(fd, cmd, &args);
}

static int acquire(int fd, uint64_t weight, __u64 flags, __u64 deadline_ns)
{
	return wait_ioctl(fd, WSEM_IOC_ACQUIRE, weight, flags, 0, deadline_ns);
}

/* Now + @timeout_ns on CLOCK_MONOTONIC, saturating instead of wrapping. */
static int deadline_after(int64_t timeout_ns, __u64 *deadline_ns)
{
	struct timespec now;
	__u64 now_ns;

	if (clock_gettime(CLOCK_MONOTONIC, &now))
		return -1;
	now_ns = (__u64)now.tv_sec * NSEC_PER_SEC + (__u64)now.tv_nsec;
	if ((__u64)timeout_ns > UINT64_MAX - now_ns)
		*deadline_ns = UINT64_MAX;
	else
		*deadline_ns = now_ns + (__u64)timeout_ns;
	return 0;
}

/*
 * @abs in nanoseconds, as sem_clockwait(3) checks it: EINVAL for a
 * tv_nsec out of range or a clock the kernel does not take; a time before
 * the clock's zero is simply past.
 */
static int deadline_at(clockid_t clockid, const struct timespec *abs,
		       __u64 *deadline_ns)
{
	if (!abs || abs->tv_nsec < 0 || abs->tv_nsec >= (long)NSEC_PER_SEC ||
	    (clockid != CLOCK_MONOTONIC && clockid != CLOCK_BOOTTIME &&
	     clockid != CLOCK_REALTIME))
		return libwsem_einval();
	if (abs->tv_sec < 0)
		*deadline_ns = 0;
	else if ((__u64)abs->tv_sec > (UINT64_MAX - (__u64)abs->tv_nsec) /
		 NSEC_PER_SEC)
		*deadline_ns = UINT64_MAX;
	else
		*deadline_ns = (__u64)abs->tv_sec * NSEC_PER_SEC +
			       (__u64)abs->tv_nsec;
	return 0;
}

/**
 * wsem_acquire() - wait, in FIFO order, until @weight is granted
 * @fd: a bound handle
 * @weight: 1..capacity
 *
 * Return: 0, or -1 with errno (EINTR, EINVAL, ...).
 */
int wsem_acquire(int fd, uint64_t weight)
{
	return acquire(fd, weight, 0, 0);
}

/**
 * wsem_acquire_timeout() - wsem_acquire(), giving up after @timeout_ns
 * @fd: a bound handle
 * @weight: 1..capacity
 * @timeout_ns: relative timeout, >= 0; 0 only takes what is free right now
 *
 * Return: 0, or -1 with errno (ETIMEDOUT, EINTR, EINVAL, ...).
 */
int wsem_acquire_timeout(int fd, uint64_t weight, int64_t timeout_ns)
{
	__u64 deadline_ns;

	if (timeout_ns < 0)
		return libwsem_einval();
	if (deadline_after(timeout_ns, &deadline_ns))
		return -1;
	return acquire(fd, weight, WSEM_ACQUIRE_DEADLINE, deadline_ns);
}

/**
 * wsem_acquire_clock() - wsem_acquire(), giving up at an absolute time
 * @fd: a bound handle
 * @weight: 1..capacity
 * @clockid: CLOCK_MONOTONIC, CLOCK_BOOTTIME or CLOCK_REALTIME
 * @abs: the deadline on @clockid; one already past only takes what is free
 *	right now
 *
 * A call retried after EINTR keeps its deadline.  A CLOCK_REALTIME
 * deadline follows changes of the clock.
 *
 * Return: 0, or -1 with errno (ETIMEDOUT, EINTR, EINVAL, ...).
 */
int wsem_acquire_clock(int fd, uint64_t weight, clockid_t clockid,
		       const struct timespec *abs)
{
	__u64 deadline_ns;

	if (deadline_at(clockid, abs, &deadline_ns))
		return -1;
	return wait_ioctl(fd, WSEM_IOC_ACQUIRE, weight,
			  WSEM_ACQUIRE_DEADLINE | WSEM_ACQUIRE_CLOCK, clockid,
			  deadline_ns);
}

/**
 * wsem_tryacquire() - take @weight only if it is granted at once
 * @fd: a bound handle
 * @weight: 1..capacity
 *
 * Fails with EAGAIN when the weight is not free or anyone is queued.
 *
 * Return: 0, or -1 with errno.
 */
int wsem_tryacquire(int fd, uint64_t weight)
{
	return acquire(fd, weight, WSEM_ACQUIRE_TRY, 0);
}

/**
 * wsem_release() - give back @weight held by this handle
 * @fd: a bound handle
 * @weight: 1..held
 *
 * Return: 0, or -1 with errno (EINVAL: nothing changed).
 */
int wsem_release(int fd, uint64_t weight)
{
	__u64 w = weight;

	return ioctl(fd, WSEM_IOC_RELEASE, &w);
}

/**
 * wsem_acquire_async() - queue for @weight without waiting
 * @fd: a bound handle without a request
 * @weight: 1..capacity
 *
 * Return: 0 if granted at once; -1 with EINPROGRESS once queued: @fd polls
 * readable when the request has ended (wsem_acquire_result()); -1 with
 * EBUSY (a request already), EINVAL, ...
 */
int wsem_acquire_async(int fd, uint64_t weight)
{
	return acquire(fd, weight, WSEM_ACQUIRE_ASYNC, 0);
}

static int async_end(int fd, __u64 flags)
{
	return ioctl(fd, WSEM_IOC_ASYNC, &flags);
}

/**
 * wsem_acquire_result() - how the handle's request ended
 * @fd: a bound handle
 *
 * An ended request is collected: the handle may make another.
 *
 * Return: 0 when granted (the handle holds the weight); -1 with
 * EINPROGRESS while queued, ENOENT without a request, or the error the
 * request ended with (EINVAL: the capacity shrank below its weight).
 */
int wsem_acquire_result(int fd)
{
	return async_end(fd, 0);
}

/**
 * wsem_acquire_cancel() - leave the queue
 * @fd: a bound handle
 *
 * Return: 0 when the request left the queue (followers that now fit are
 * granted); -1 with EALREADY when it was granted meanwhile (the handle
 * holds the weight), ENOENT without a request, or the error the request
 * ended with.
 */
int wsem_acquire_cancel(int fd)
{
	return async_end(fd, WSEM_ASYNC_CANCEL);
}

/**
 * wsem_wait_idle() - wait until nothing is held and nobody is queued
 * @fd: a bound handle, holding nothing, without a request
 * @timeout_ns: relative, on CLOCK_MONOTONIC; < 0 waits as long as it takes,
 *	0 only looks
 *
 * Return: 0, or -1 with errno (ETIMEDOUT, EINTR, EDEADLK: this handle
 * holds weight or has a request).
 */
int wsem_wait_idle(int fd, int64_t timeout_ns)
{
	__u64 deadline_ns;

	if (timeout_ns < 0)
		return wait_ioctl(fd, WSEM_IOC_WAIT_IDLE, 0, 0, 0, 0);
	if (deadline_after(timeout_ns, &deadline_ns))
		return -1;
	return wait_ioctl(fd, WSEM_IOC_WAIT_IDLE, 0, WSEM_ACQUIRE_DEADLINE, 0,
			  deadline_ns);
}

/**
 * wsem_wait_idle_clock() - wsem_wait_idle() until an absolute time
 * @fd: a bound handle, holding nothing, without a request
 * @clockid: CLOCK_MONOTONIC, CLOCK_BOOTTIME or CLOCK_REALTIME
 * @abs: the deadline on @clockid
 *
 * Return: 0, or -1 with errno (ETIMEDOUT, EINTR, EDEADLK, EINVAL).
 */
int wsem_wait_idle_clock(int fd, clockid_t clockid, const struct timespec *abs)
{
	__u64 deadline_ns;

	if (deadline_at(clockid, abs, &deadline_ns))
		return -1;
	return wait_ioctl(fd, WSEM_IOC_WAIT_IDLE, 0,
			  WSEM_ACQUIRE_DEADLINE | WSEM_ACQUIRE_CLOCK, clockid,
			  deadline_ns);
}
