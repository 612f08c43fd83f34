/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The smallest io_uring, for tests of task work while a request waits: a
 * POLL_ADD on a pipe completes as task work for the thread that submitted
 * it (TIF_NOTIFY_SIGNAL), which runs only on its way back to user space.
 */
#ifndef WSEM_SELFTESTS_RING_H
#define WSEM_SELFTESTS_RING_H

#include <errno.h>
#include <linux/io_uring.h>
#include <poll.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The smallest io_uring: one POLL_ADD, and its completion count. */
struct ring {
	int fd;
	void *sq, *cq;
	size_t sq_len, cq_len;
	struct io_uring_sqe *sqes;
	size_t sqes_len;
	struct io_uring_params p;
};

static inline int ring_setup(struct ring *r)
{
	memset(r, 0, sizeof(*r));
	r->fd = syscall(__NR_io_uring_setup, 4, &r->p);
	if (r->fd < 0)
		return -1;
	r->sq_len = r->p.sq_off.array + r->p.sq_entries * sizeof(__u32);
	r->cq_len = r->p.cq_off.cqes +
		    r->p.cq_entries * sizeof(struct io_uring_cqe);
	r->sqes_len = r->p.sq_entries * sizeof(struct io_uring_sqe);
	r->sq = mmap(NULL, r->sq_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		     r->fd, IORING_OFF_SQ_RING);
	r->cq = mmap(NULL, r->cq_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		     r->fd, IORING_OFF_CQ_RING);
	r->sqes = mmap(NULL, r->sqes_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		       r->fd, IORING_OFF_SQES);
	if (r->sq == MAP_FAILED || r->cq == MAP_FAILED ||
	    r->sqes == MAP_FAILED)
		return -1;
	return 0;
}

/* Submit a poll for POLLIN on @fd; 0 or -1. */
static inline int ring_poll_add(struct ring *r, int fd)
{
	_Atomic __u32 *tail = (void *)((char *)r->sq + r->p.sq_off.tail);
	__u32 *mask = (void *)((char *)r->sq + r->p.sq_off.ring_mask);
	__u32 *array = (void *)((char *)r->sq + r->p.sq_off.array);
	__u32 t = atomic_load(tail), i = t & *mask;

	memset(&r->sqes[i], 0, sizeof(r->sqes[i]));
	r->sqes[i].opcode = IORING_OP_POLL_ADD;
	r->sqes[i].fd = fd;
	r->sqes[i].poll32_events = POLLIN;
	r->sqes[i].user_data = 42;
	array[i] = i;
	atomic_store(tail, t + 1);
	return syscall(__NR_io_uring_enter, r->fd, 1, 0, 0, NULL, 0) == 1 ?
	       0 : -1;
}

/*
 * A ring with a poll for POLLIN on @fd pending: 0, or the errno of what
 * failed (EIO if it left none: the kernel has no io_uring).
 */
static inline int ring_poll_start(struct ring *r, int fd)
{
	if (ring_setup(r) || ring_poll_add(r, fd))
		return errno ? errno : EIO;
	return 0;
}

static inline unsigned int ring_completions(struct ring *r)
{
	_Atomic __u32 *tail = (void *)((char *)r->cq + r->p.cq_off.tail);

	return atomic_load(tail);
}

/* Completions not yet taken off the ring (ring_reap()). */
static inline unsigned int ring_unreaped(struct ring *r)
{
	_Atomic __u32 *head = (void *)((char *)r->cq + r->p.cq_off.head);

	return ring_completions(r) - atomic_load(head);
}

/* Take every completion off the ring (its head to its tail). */
static inline void ring_reap(struct ring *r)
{
	_Atomic __u32 *head = (void *)((char *)r->cq + r->p.cq_off.head);

	atomic_store(head, ring_completions(r));
}

static inline void ring_close(struct ring *r)
{
	munmap(r->sq, r->sq_len);
	munmap(r->cq, r->cq_len);
	munmap(r->sqes, r->sqes_len);
	close(r->fd);
}

#endif
