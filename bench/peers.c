// SPDX-License-Identifier: GPL-2.0
/*
 * The peers: wsem and the semaphores people use today.
 *
 *   wsem     libwsem: an anonymous semaphore; every process (or thread of
 *            the scale test) reaches it through its own reopened handle.
 *   sem_t    POSIX sem_wait/sem_post on a process-shared sem_t (futex).
 *   SysV     semop() with SEM_UNDO on a one-semaphore set.
 *   eventfd  EFD_SEMAPHORE: read() takes one unit, write(n) gives back n.
 *   flock    flock(2) on a tmpfs file, each user with its own open file.
 *
 * Peers without weights (sem_t, eventfd) take w units one at a time: that
 * is how they are used for weights, and it is not atomic.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/ipc.h>
#include <sys/sem.h>
#include <unistd.h>

#include <wsem.h>

#include "bench.h"

/* Repeat a call that a signal interrupted: none is expected here. */
#define RETRY(expr) ({ int __r; do __r = (expr); \
			while (__r < 0 && errno == EINTR); __r; })

static int share_fd(struct bsem *s, struct bhandle *h)
{
	h->sem = s;
	h->fd = s->fd;
	return 0;
}

static void no_detach(struct bhandle *h)
{
	(void)h;
}

/* wsem */

static int wsem_create(struct bsem *s, uint64_t capacity)
{
	s->capacity = capacity;
	s->fd = wsem_open_anon(capacity, 0);
	return s->fd < 0 ? -1 : 0;
}

static int wsem_attach(struct bsem *s, struct bhandle *h)
{
	h->sem = s;
	h->fd = wsem_reopen(s->fd, O_CLOEXEC);
	return h->fd < 0 ? -1 : 0;
}

static int wsem_acq(struct bhandle *h, uint64_t w)
{
	return wsem_acquire(h->fd, w);
}

static int wsem_rel(struct bhandle *h, uint64_t w)
{
	return wsem_release(h->fd, w);
}

static void close_fd(struct bhandle *h)
{
	close(h->fd);
}

static void close_sem_fd(struct bsem *s)
{
	close(s->fd);
}

const struct peer peer_wsem = {
	.name = "wsem", .label = "wsem",
	.flags = PEER_WEIGHTS | PEER_CAPACITY,
	.create = wsem_create, .attach = wsem_attach,
	.acquire = wsem_acq, .release = wsem_rel,
	.detach = close_fd, .destroy = close_sem_fd,
};

/*
 * The "before" module's twin, when make bench BEFORE=REV loaded it beside
 * ours (bench/run.sh): the same calls on a semaphore made through its own
 * device.  Handles of either module take the same ioctls.
 */
static int wsem_before_create(struct bsem *s, uint64_t capacity)
{
	struct wsem_open_args args = {
		.size = sizeof(args),
		.flags = WSEM_OPEN_ANON,
		.capacity = capacity,
	};

	s->capacity = capacity;
	s->fd = open(WSEM_BEFORE_DEVICE, O_RDWR | O_CLOEXEC);
	if (s->fd < 0)
		return -1;
	if (ioctl(s->fd, WSEM_IOC_OPEN, &args)) {
		close(s->fd);
		s->fd = -1;
		return -1;
	}
	return 0;
}

const struct peer peer_wsem_before = {
	.name = "wsem-before", .label = "wsem, the before module",
	.flags = PEER_WEIGHTS | PEER_CAPACITY,
	.create = wsem_before_create, .attach = wsem_attach,
	.acquire = wsem_acq, .release = wsem_rel,
	.detach = close_fd, .destroy = close_sem_fd,
};

/* POSIX sem_t */

static int psem_create(struct bsem *s, uint64_t capacity)
{
	s->capacity = capacity;
	s->fd = -1;
	return sem_init(&s->psem, 1, (unsigned int)capacity);
}

static int psem_acq(struct bhandle *h, uint64_t w)
{
	for (; w; w--) {
		if (RETRY(sem_wait(&h->sem->psem)))
			return -1;
	}
	return 0;
}

static int psem_rel(struct bhandle *h, uint64_t w)
{
	for (; w; w--) {
		if (sem_post(&h->sem->psem))
			return -1;
	}
	return 0;
}

static void psem_destroy(struct bsem *s)
{
	sem_destroy(&s->psem);
}

static const struct peer peer_psem = {
	.name = "sem_t", .label = "sem_t (futex)",
	.flags = PEER_CAPACITY,
	.create = psem_create, .attach = share_fd,
	.acquire = psem_acq, .release = psem_rel,
	.detach = no_detach, .destroy = psem_destroy,
};

/* SysV semop + SEM_UNDO */

static int sysv_create(struct bsem *s, uint64_t capacity)
{
	s->capacity = capacity;
	s->fd = -1;
	s->semid = semget(IPC_PRIVATE, 1, IPC_CREAT | 0600);
	if (s->semid < 0)
		return -1;
	return semctl(s->semid, 0, SETVAL, (int)capacity);
}

static int sysv_op(struct bhandle *h, int delta)
{
	struct sembuf op = { .sem_num = 0, .sem_op = (short)delta,
			     .sem_flg = SEM_UNDO };

	return RETRY(semop(h->sem->semid, &op, 1));
}

static int sysv_acq(struct bhandle *h, uint64_t w)
{
	return sysv_op(h, -(int)w);
}

static int sysv_rel(struct bhandle *h, uint64_t w)
{
	return sysv_op(h, (int)w);
}

static void sysv_destroy(struct bsem *s)
{
	semctl(s->semid, 0, IPC_RMID);
}

static const struct peer peer_sysv = {
	.name = "sysv", .label = "SysV semop+UNDO",
	.flags = PEER_WEIGHTS | PEER_CAPACITY,
	.create = sysv_create, .attach = share_fd,
	.acquire = sysv_acq, .release = sysv_rel,
	.detach = no_detach, .destroy = sysv_destroy,
};

/* eventfd, EFD_SEMAPHORE */

static int efd_create(struct bsem *s, uint64_t capacity)
{
	s->capacity = capacity;
	s->fd = eventfd((unsigned int)capacity, EFD_SEMAPHORE);
	return s->fd < 0 ? -1 : 0;
}

static int efd_acq(struct bhandle *h, uint64_t w)
{
	uint64_t v;

	for (; w; w--) {
		if (RETRY(read(h->fd, &v, sizeof(v))) != sizeof(v))
			return -1;
	}
	return 0;
}

static int efd_rel(struct bhandle *h, uint64_t w)
{
	return RETRY(write(h->fd, &w, sizeof(w))) == sizeof(w) ? 0 : -1;
}

static const struct peer peer_efd = {
	.name = "eventfd", .label = "eventfd SEMAPHORE",
	.flags = PEER_CAPACITY,
	.create = efd_create, .attach = share_fd,
	.acquire = efd_acq, .release = efd_rel,
	.detach = no_detach, .destroy = close_sem_fd,
};

/* flock: one slot; the full capacity is LOCK_EX, less is LOCK_SH */

static int flock_create(struct bsem *s, uint64_t capacity)
{
	static unsigned int seq;
	int fd;

	s->capacity = capacity;
	s->fd = -1;
	snprintf(s->path, sizeof(s->path), "/tmp/wsem-bench.%d.%u",
		 (int)getpid(), seq++);
	fd = open(s->path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static int flock_attach(struct bsem *s, struct bhandle *h)
{
	h->sem = s;
	h->fd = open(s->path, O_RDWR | O_CLOEXEC);
	return h->fd < 0 ? -1 : 0;
}

static int flock_acq(struct bhandle *h, uint64_t w)
{
	int how = w >= h->sem->capacity ? LOCK_EX : LOCK_SH;

	return RETRY(flock(h->fd, how));
}

static int flock_rel(struct bhandle *h, uint64_t w)
{
	(void)w;
	return flock(h->fd, LOCK_UN);
}

static void flock_destroy(struct bsem *s)
{
	unlink(s->path);
}

static const struct peer peer_flock = {
	.name = "flock", .label = "flock",
	.flags = PEER_FD_EACH,
	.create = flock_create, .attach = flock_attach,
	.acquire = flock_acq, .release = flock_rel,
	.detach = close_fd, .destroy = flock_destroy,
};

const struct peer *const peers[] = {
	&peer_wsem, &peer_psem, &peer_sysv, &peer_efd, &peer_flock, NULL,
};
