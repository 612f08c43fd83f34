// SPDX-License-Identifier: GPL-2.0
/*
 * Scenario 6: kernel memory per semaphore, per handle and per waiter.
 *
 * /proc/slabinfo is read before and after making N of something; the
 * growth of each slab cache, divided by N and rounded, says how many
 * objects of that cache one of them costs ("by counting"), and their sizes
 * add up to its bytes.  The raw growth of all caches over N is reported
 * too: it includes what other activity allocated meanwhile.
 *
 * SLUB merges caches of one size, so a cache may show under the name of
 * another object of that size.
 *
 * Waiters are threads created first and parked on a futex, so that their
 * own stacks and task structs are already counted; then they enter the
 * blocking call, and the snapshot is taken once all of them sleep there.
 * Needs root (slabinfo is 0400); skipped otherwise.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/sem.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <wsem.h>

#include "bench.h"

#define N_OBJ		1000
#define N_WAIT		1000
#define MAX_CACHES	512

struct cache {
	char name[48];
	long active;
	long objsize;
};

struct snap {
	int n;
	struct cache c[MAX_CACHES];
};

struct cost {
	double bytes;		/* by counting */
	double raw;		/* all growth / N */
	char what[160];		/* "filp x1 + kmalloc-cg-32 x1" */
};

static int snapshot(struct snap *s)
{
	char line[512];
	FILE *f = fopen("/proc/slabinfo", "r");

	if (!f)
		return -1;
	s->n = 0;
	while (fgets(line, sizeof(line), f) && s->n < MAX_CACHES) {
		struct cache *c = &s->c[s->n];
		long num;

		if (line[0] == '#' || !strncmp(line, "slabinfo", 8))
			continue;
		if (sscanf(line, "%47s %ld %ld %ld", c->name, &c->active, &num,
			   &c->objsize) == 4)
			s->n++;
	}
	fclose(f);
	return 0;
}

static long active_in(const struct snap *s, const char *name)
{
	int i;

	for (i = 0; i < s->n; i++) {
		if (!strcmp(s->c[i].name, name))
			return s->c[i].active;
	}
	return 0;
}

static void cost_of(const struct snap *a, const struct snap *b, int n,
		    struct cost *c)
{
	double raw = 0;
	size_t len = 0;
	int i;

	memset(c, 0, sizeof(*c));
	for (i = 0; i < b->n; i++) {
		long d = b->c[i].active - active_in(a, b->c[i].name);
		long k = lround((double)d / n);

		raw += (double)d * b->c[i].objsize;
		if (k <= 0)
			continue;
		c->bytes += (double)k * b->c[i].objsize;
		len += (size_t)snprintf(c->what + len, sizeof(c->what) - len,
					"%s%s x%ld (%ld B)", len ? " + " : "",
					b->c[i].name, k, b->c[i].objsize);
		if (len >= sizeof(c->what))
			len = sizeof(c->what) - 1;
	}
	c->raw = raw / n;
	if (!len)
		snprintf(c->what, sizeof(c->what), "nothing");
}

/* Parked threads that enter one blocking acquire when told to. */
struct waiters {
	_Atomic int go;
	_Atomic int entered;
	const struct peer *peer;
	struct bhandle *shared;
	struct bhandle own[N_WAIT];
	pid_t tid[N_WAIT];
	pthread_t th[N_WAIT];
	int statfd[N_WAIT];
};

struct warg {
	struct waiters *w;
	int i;
};

static void *waiter_main(void *arg)
{
	struct warg *a = arg;
	struct waiters *w = a->w;
	struct bhandle *h = w->peer->flags & PEER_FD_EACH ? &w->own[a->i] :
							     w->shared;

	w->tid[a->i] = (pid_t)syscall(SYS_gettid);
	futex_wait_for(&w->go, 0);
	atomic_fetch_add(&w->entered, 1);
	if (w->peer->acquire(h, 1) == 0)
		w->peer->release(h, 1);
	return NULL;
}

/* Every waiter asleep in the kernel? */
static bool all_asleep(struct waiters *w)
{
	char path[64];
	int i;

	for (i = 0; i < N_WAIT; i++) {
		if (w->statfd[i] < 0) {
			snprintf(path, sizeof(path), "/proc/self/task/%d/stat",
				 (int)w->tid[i]);
			w->statfd[i] = open(path, O_RDONLY | O_CLOEXEC);
		}
		if (task_state(w->statfd[i]) != 'S')
			return false;
	}
	return true;
}

/* Bytes per waiter of @peer: N_WAIT threads blocked on a held semaphore. */
static int waiter_cost(const struct peer *peer, struct cost *c)
{
	struct waiters *w = calloc(1, sizeof(*w));
	struct warg *args = calloc(N_WAIT, sizeof(*args));
	pthread_attr_t attr;
	struct bsem sem;
	struct bhandle h;
	struct snap *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));
	uint64_t end;
	int i, ret = -1, made = 0;

	if (!w || !args || !a || !b || peer->create(&sem, 1) ||
	    peer->attach(&sem, &h) || peer->acquire(&h, 1))
		goto out;
	w->peer = peer;
	w->shared = &h;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	for (i = 0; i < N_WAIT; i++) {
		w->statfd[i] = -1;
		if ((peer->flags & PEER_FD_EACH) &&
		    peer->attach(&sem, &w->own[i]))
			goto release;
		args[i].w = w;
		args[i].i = i;
		if (pthread_create(&w->th[i], &attr, waiter_main, &args[i]))
			goto release;
		made++;
	}
	while (!all_asleep(w))		/* parked on the futex */
		sleep_ns(10 * NSEC_PER_MSEC);
	snapshot(a);
	atomic_store(&w->go, 1);
	futex_wake_all(&w->go);
	end = now_ns() + 60 * NSEC_PER_SEC;
	while (atomic_load(&w->entered) < N_WAIT && now_ns() < end)
		sleep_ns(10 * NSEC_PER_MSEC);
	sleep_ns(50 * NSEC_PER_MSEC);
	while (!all_asleep(w) && now_ns() < end)	/* now in acquire */
		sleep_ns(10 * NSEC_PER_MSEC);
	snapshot(b);
	cost_of(a, b, N_WAIT, c);
	ret = 0;
release:
	atomic_store(&w->go, 1);
	futex_wake_all(&w->go);
	peer->release(&h, 1);
	for (i = 0; i < made; i++)
		pthread_join(w->th[i], NULL);
	for (i = 0; i < N_WAIT; i++) {
		if (w->statfd[i] >= 0)
			close(w->statfd[i]);
		if ((peer->flags & PEER_FD_EACH) && w->own[i].sem)
			peer->detach(&w->own[i]);
	}
	peer->detach(&h);
	peer->destroy(&sem);
out:
	free(a);
	free(b);
	free(args);
	free(w);
	return ret;
}

struct row {
	const char *peer;
	struct cost sem, handle, waiter, lock;
	bool has_handle, has_lock;
	const char *sem_note, *handle_note;
};

/* wsem: N handles, then bind each to a new anonymous semaphore. */
static int wsem_costs(struct row *r)
{
	struct wsem_open_args o = {
		.size = sizeof(o), .flags = WSEM_OPEN_ANON, .capacity = 1,
	};
	static int fd[N_OBJ];
	struct snap *s = malloc(3 * sizeof(*s));
	int i;

	if (!s)
		return -1;
	snapshot(&s[0]);
	for (i = 0; i < N_OBJ; i++) {
		fd[i] = open("/dev/wsem", O_RDWR | O_CLOEXEC);
		if (fd[i] < 0)
			return -1;
	}
	snapshot(&s[1]);
	for (i = 0; i < N_OBJ; i++) {
		if (ioctl(fd[i], WSEM_IOC_OPEN, &o))
			return -1;
	}
	snapshot(&s[2]);
	for (i = 0; i < N_OBJ; i++)
		close(fd[i]);
	cost_of(&s[0], &s[1], N_OBJ, &r->handle);
	cost_of(&s[1], &s[2], N_OBJ, &r->sem);
	r->has_handle = true;
	r->handle_note = "open file of /dev/wsem";
	r->sem_note = "bound to a new anonymous semaphore";
	free(s);
	return waiter_cost(&peer_wsem, &r->waiter);
}

/* SysV: N one-semaphore sets; then one SEM_UNDO operation on each. */
static int sysv_costs(struct row *r, const struct peer *peer)
{
	static int id[N_OBJ];
	struct sembuf up = { .sem_op = 1, .sem_flg = SEM_UNDO };
	struct snap *s = malloc(3 * sizeof(*s));
	int i;

	if (!s)
		return -1;
	snapshot(&s[0]);
	for (i = 0; i < N_OBJ; i++) {
		id[i] = semget(IPC_PRIVATE, 1, IPC_CREAT | 0600);
		if (id[i] < 0)
			return -1;
	}
	snapshot(&s[1]);
	for (i = 0; i < N_OBJ; i++) {
		if (semop(id[i], &up, 1))
			return -1;
	}
	snapshot(&s[2]);
	for (i = 0; i < N_OBJ; i++)
		semctl(id[i], 0, IPC_RMID);
	cost_of(&s[0], &s[1], N_OBJ, &r->sem);
	cost_of(&s[1], &s[2], N_OBJ, &r->handle);
	r->has_handle = true;
	r->sem_note = "semget of one semaphore";
	r->handle_note = "SEM_UNDO record of a process";
	free(s);
	return waiter_cost(peer, &r->waiter);
}

static int eventfd_costs(struct row *r, const struct peer *peer)
{
	static int fd[N_OBJ];
	struct snap *s = malloc(2 * sizeof(*s));
	int i;

	if (!s)
		return -1;
	snapshot(&s[0]);
	for (i = 0; i < N_OBJ; i++) {
		fd[i] = eventfd(1, EFD_SEMAPHORE | EFD_CLOEXEC);
		if (fd[i] < 0)
			return -1;
	}
	snapshot(&s[1]);
	for (i = 0; i < N_OBJ; i++)
		close(fd[i]);
	cost_of(&s[0], &s[1], N_OBJ, &r->sem);
	r->sem_note = "eventfd (file and context)";
	free(s);
	return waiter_cost(peer, &r->waiter);
}

/* flock: N opens of one file; then a LOCK_SH through each. */
static int flock_costs(struct row *r, const struct peer *peer)
{
	static int fd[N_OBJ];
	struct snap *s = malloc(3 * sizeof(*s));
	char path[64];
	int i;

	if (!s)
		return -1;
	snprintf(path, sizeof(path), "/tmp/wsem-bench-mem.%d", (int)getpid());
	close(open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600));
	snapshot(&s[0]);
	for (i = 0; i < N_OBJ; i++) {
		fd[i] = open(path, O_RDWR | O_CLOEXEC);
		if (fd[i] < 0)
			return -1;
	}
	snapshot(&s[1]);
	for (i = 0; i < N_OBJ; i++) {
		if (flock(fd[i], LOCK_SH))
			return -1;
	}
	snapshot(&s[2]);
	for (i = 0; i < N_OBJ; i++)
		close(fd[i]);
	unlink(path);
	cost_of(&s[0], &s[1], N_OBJ, &r->handle);
	cost_of(&s[1], &s[2], N_OBJ, &r->lock);
	r->has_handle = r->has_lock = true;
	r->handle_note = "open file";
	free(s);
	return waiter_cost(peer, &r->waiter);
}

static void print_cost(const char *key, const struct cost *c)
{
	json_begin(key);
	json_num("bytes", c->bytes);
	json_num("raw_bytes", c->raw);
	json_str("objects", c->what);
	json_end();
}

static void print(struct row *rows, int n)
{
	int i;

	table("\n6. Kernel memory (slab objects), bytes: per semaphore, per "
	      "handle, per waiter (N=%d each)\n", N_OBJ);
	json_begin("memory");
	json_str("unit", "bytes of slab objects, counted per object");
	json_int("n", N_OBJ);
	json_begin_array("rows");
	for (i = 0; i < n; i++) {
		struct row *r = &rows[i];

		table("   %-10s semaphore %6.0f  [%s]\n", r->peer, r->sem.bytes,
		      r->sem.what);
		if (r->has_handle)
			table("   %-10s handle    %6.0f  [%s: %s]\n", "",
			      r->handle.bytes, r->handle_note, r->handle.what);
		if (r->has_lock)
			table("   %-10s held lock %6.0f  [%s]\n", "",
			      r->lock.bytes, r->lock.what);
		table("   %-10s waiter    %6.0f  [%s]\n", "", r->waiter.bytes,
		      r->waiter.what);
		json_begin(NULL);
		json_str("peer", r->peer);
		print_cost("semaphore", &r->sem);
		if (r->has_handle)
			print_cost("handle", &r->handle);
		if (r->has_lock)
			print_cost("held_lock", &r->lock);
		print_cost("waiter", &r->waiter);
		json_end();
	}
	json_end_array();
	json_end();
}

void scenario_memory(void)
{
	const struct peer *const *p;
	struct row rows[8];
	struct snap probe;
	int n = 0, ret;

	if (snapshot(&probe) || !probe.n) {
		progress("memory: /proc/slabinfo unreadable (not root?): "
			 "skipped");
		json_null("memory");
		return;
	}
	raise_limits(N_WAIT + 16, 4 * N_OBJ);
	memset(rows, 0, sizeof(rows));
	for (p = peers; *p; p++) {
		struct row *r = &rows[n];

		r->peer = (*p)->name;
		if (*p == &peer_wsem)
			ret = wsem_costs(r);
		else if (!strcmp((*p)->name, "sysv"))
			ret = sysv_costs(r, *p);
		else if (!strcmp((*p)->name, "eventfd"))
			ret = eventfd_costs(r, *p);
		else if (!strcmp((*p)->name, "flock"))
			ret = flock_costs(r, *p);
		else
			ret = waiter_cost(*p, &r->waiter);
		if (!strcmp((*p)->name, "sem_t"))
			snprintf(r->sem.what, sizeof(r->sem.what),
				 "user memory only");
		if (!strcmp((*p)->name, "flock"))
			snprintf(r->sem.what, sizeof(r->sem.what),
				 "any existing file");
		if (ret)
			progress("memory: %s: failed: %s", r->peer,
				 strerror(errno));
		progress("memory: %-7s semaphore %.0f B, handle %.0f B, "
			 "waiter %.0f B", r->peer, r->sem.bytes,
			 r->handle.bytes, r->waiter.bytes);
		n++;
	}
	print(rows, n);
}
