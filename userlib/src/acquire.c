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

static int acquire(int fd, uint64_t weight, __u64 flags, __u64 deadline_ns)
{
	struct wsem_acquire_args args = {
		.size = sizeof(args),
		.weight = weight,
		.flags = flags,
		.deadline_ns = deadline_ns,
	};

	return ioctl(fd, WSEM_IOC_ACQUIRE, &args);
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
