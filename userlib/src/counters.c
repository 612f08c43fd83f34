// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The counters page: a semaphore's capacity, used weight and queue, read
 * without a system call from a read-only mapping of a handle, as the
 * kernel rewrites it under the semaphore's lock (struct wsem_counters in
 * <linux/wsem.h> has the layout and the reader's protocol).  Also the
 * page of a semaphore's tree (struct wsem_tree_counters), which libwsem
 * maps only for a pool over a child (pool.c).
 */
#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <sys/mman.h>
#include <unistd.h>

#include "wsem.h"
#include "internal.h"

/* Tries before a reader that keeps losing to the writer yields its CPU. */
#define LIBWSEM_COUNTERS_SPINS	64

/**
 * wsem_map_counters() - map the counters page of @fd's semaphore
 * @fd: a bound handle, open for reading
 *
 * Return: the page, read-only, to read with wsem_read_counters() and
 * unmap with wsem_unmap_counters(); or NULL with errno (EINVAL for an
 * unbound handle, EACCES for one not open for reading, ENODEV for a
 * module without the page, ENOMEM).
 */
const struct wsem_counters *wsem_map_counters(int fd)
{
	void *p = mmap(NULL, sizeof(struct wsem_counters), PROT_READ,
		       MAP_SHARED, fd, 0);

	return p == MAP_FAILED ? NULL : p;
}

/**
 * wsem_unmap_counters() - unmap what wsem_map_counters() mapped
 * @c: its page
 *
 * Return: 0, or -1 with errno (EINVAL).
 */
int wsem_unmap_counters(const struct wsem_counters *c)
{
	return munmap((void *)c, sizeof(*c));
}

/**
 * libwsem_map_tree() - map the page of @fd's semaphore's tree
 * @fd: a bound handle, open for reading
 *
 * Return: the page (struct wsem_tree_counters, at an offset of
 * WSEM_MMAP_TREE pages), read-only, to unmap with libwsem_unmap_tree();
 * or NULL, with errno from mmap(2) where it failed.
 */
const struct wsem_tree_counters *libwsem_map_tree(int fd)
{
	long page = sysconf(_SC_PAGESIZE);
	void *t;

	if (page <= 0)
		return NULL;
	t = mmap(NULL, sizeof(struct wsem_tree_counters), PROT_READ,
		 MAP_SHARED, fd, (off_t)WSEM_MMAP_TREE * page);
	return t == MAP_FAILED ? NULL : t;
}

/**
 * libwsem_unmap_tree() - unmap what libwsem_map_tree() mapped
 * @t: its page
 *
 * Return: 0, or -1 with errno (EINVAL).
 */
int libwsem_unmap_tree(const struct wsem_tree_counters *t)
{
	return munmap((void *)t, sizeof(*t));
}

/* A hint to the CPU that we spin, where it has one. */
static inline void libwsem_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

/* A __u64 of the page: a torn load (32-bit) is caught by the seq. */
static inline __u64 libwsem_load64(const __u64 *p)
{
	return *(const volatile __u64 *)p;
}

/**
 * wsem_read_counters() - one consistent snapshot of a counters page
 * @c: a page from wsem_map_counters()
 * @out: the snapshot: the fields of WSEM_COUNTERS_SIZE_VER0, @seq the
 *	even value they were read at, @size the size of the page's struct
 *
 * Retries while the kernel writes (@c->seq odd) or wrote meanwhile (@seq
 * changed), with a CPU pause hint, and yields the CPU every 64 tries.  It
 * never gives up: the kernel writes under a spinlock, a few stores.
 *
 * Return: 0, or -1 with errno EFAULT for a NULL @c or @out.
 */
int wsem_read_counters(const struct wsem_counters *c,
		       struct wsem_counters *out)
{
	unsigned int tries = 0;
	__u32 s1, s2;

	if (!c || !out) {
		errno = EFAULT;
		return -1;
	}
	for (;; tries++) {
		if (tries && !(tries % LIBWSEM_COUNTERS_SPINS))
			sched_yield();
		else if (tries)
			libwsem_cpu_relax();
		s1 = __atomic_load_n(&c->seq, __ATOMIC_ACQUIRE);
		if (s1 & 1)
			continue;
		out->flags = __atomic_load_n(&c->flags, __ATOMIC_RELAXED);
		out->size = __atomic_load_n(&c->size, __ATOMIC_RELAXED);
		out->capacity = libwsem_load64(&c->capacity);
		out->used = libwsem_load64(&c->used);
		out->waiters = libwsem_load64(&c->waiters);
		out->queued_weight = libwsem_load64(&c->queued_weight);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		s2 = __atomic_load_n(&c->seq, __ATOMIC_RELAXED);
		if (s1 == s2)
			break;
	}
	out->seq = s1;
	out->__pad = 0;
	return 0;
}
