// SPDX-License-Identifier: GPL-2.0
/*
 * Scenario 7: mass grant: one release that lets N queued waiters through.
 *
 * A child process holds the whole capacity N of a semaphore and runs N
 * waiter threads, each with its own handle where the peer has handles,
 * that call acquire(1) and block.  Once all N are queued -- for wsem the
 * kernel's own count (WSEM_IOC_STAT's waiters), for SysV GETNCNT, for
 * eventfd every waiter announced and asleep (state S) -- and a short
 * settling pause has passed, the holder gives back all N units in one
 * call and times:
 *
 *   release  the release call itself (wsem_release(N), semop(+N),
 *            write(N) on an EFD_SEMAPHORE eventfd);
 *   first,   from the start of that call to the first and to the last
 *   last     waiter's return from acquire (each takes a CLOCK_MONOTONIC
 *            timestamp as soon as its call returns).
 *
 * The waiters give their units back only after all N are through, so
 * nothing but the wake-ups runs while they are measured; then the holder
 * takes the capacity again for the next repetition.  Nothing is pinned:
 * the threads run on all CPUs, so a woken waiter that retakes a lock the
 * waker still holds is seen here.  The waiters are SCHED_BATCH, so that
 * one woken on the holder's CPU does not preempt the holder inside its
 * release call: the call's time is the release path's own (with its
 * wake-ups and whatever waits for its lock), not that of waiters run in
 * its place.  The first repetition only warms up; the table shows medians
 * of REPS.  CPU = the user + system time of all the child's threads (the
 * holder and the N waiters) from the start of the release call until the
 * last waiter is through, per waiter granted.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sem.h>
#include <sys/wait.h>
#include <unistd.h>

#include <wsem.h>

#include "bench.h"

#define REPS		7
#define STACK		(64 * 1024)
#define SETTLE_NS	(20 * NSEC_PER_MSEC)
#define QUEUE_TIMEOUT	(60 * NSEC_PER_SEC)
#define MAX_N		1024

/* Shared between the parent and the child's threads. */
struct mg {
	_Atomic int started;	/* waiters ready */
	_Atomic int round;	/* the holder opened repetition k */
	_Atomic int entering;	/* waiters about to call acquire */
	_Atomic int done;	/* waiters through, this repetition */
	_Atomic int all_done;	/* set by the last one through */
	_Atomic int back;	/* waiters may release after repetition k */
	int n;
	int failed;		/* errno of the first failure, or -1 */
	const struct peer *peer;
	struct bsem sem;
	struct bhandle holder;
	int statfd[MAX_N];	/* eventfd: /proc/self/task/TID/stat */
	uint64_t ts[MAX_N];	/* each waiter's return, this repetition */
	/* Per measured repetition. */
	int reps;
	uint64_t release_ns[REPS], first_ns[REPS], last_ns[REPS];
	uint64_t cpu_ns[REPS];		/* all threads, per waiter granted */
	long queued[REPS];
};

struct waiter {
	struct mg *x;
	int idx;
};

static void mark_failed(struct mg *x)
{
	if (!x->failed)
		x->failed = errno ? errno : -1;
	atomic_store(&x->all_done, -1);
	futex_wake_all(&x->all_done);
}

/* One repetition of a waiter: acquire(1), stamp, wait, release(1). */
static int waiter_rep(struct mg *x, struct bhandle *h, int idx, int k)
{
	atomic_fetch_add(&x->entering, 1);
	if (x->peer->acquire(h, 1))
		return -1;
	x->ts[idx] = now_ns();
	if (atomic_fetch_add(&x->done, 1) + 1 == x->n) {
		atomic_store(&x->all_done, 1);
		futex_wake_all(&x->all_done);
	}
	futex_wait_for(&x->back, k - 1);
	return x->peer->release(h, 1);
}

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;
	struct mg *x = w->x;
	struct bhandle h;
	char path[64];
	int k = 0;

	if (batch_sched() || x->peer->attach(&x->sem, &h))
		goto fail;
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", gettid());
	x->statfd[w->idx] = open(path, O_RDONLY | O_CLOEXEC);
	if (x->statfd[w->idx] < 0)
		goto fail;
	atomic_fetch_add(&x->started, 1);
	for (;;) {
		futex_wait_for(&x->round, k);
		k = atomic_load(&x->round);
		if (waiter_rep(x, &h, w->idx, k))
			goto fail;
	}
fail:
	mark_failed(x);
	return NULL;
}

/* The kernel's count of waiters; for eventfd, N if all N sleep, else 0. */
static long queued(struct mg *x)
{
	struct wsem_stat st = { .size = sizeof(st) };
	int i;

	if (x->peer == &peer_wsem)
		return wsem_stat(x->holder.fd, &st) ? -1 : (long)st.waiters;
	if (!strcmp(x->peer->name, "sysv"))
		return semctl(x->sem.semid, 0, GETNCNT);
	if (atomic_load(&x->entering) < x->n)
		return 0;
	for (i = 0; i < x->n; i++) {
		if (task_state(x->statfd[i]) != 'S')
			return 0;
	}
	return x->n;
}

/* Wait until all N waiters are queued; the count seen, or -1. */
static long wait_queued(struct mg *x)
{
	uint64_t end = now_ns() + QUEUE_TIMEOUT;
	long q;

	while ((q = queued(x)) < x->n) {
		if (q < 0 || x->failed || now_ns() > end)
			return -1;
		sleep_ns(NSEC_PER_MSEC);
	}
	sleep_ns(SETTLE_NS);
	return q;
}

/* Repetition @k (0 only warms up), run by the holder. */
static int holder_rep(struct mg *x, int k)
{
	uint64_t t0, t1, c0, c1, first = UINT64_MAX, last = 0;
	long q;
	int i;

	if (x->peer->acquire(&x->holder, (uint64_t)x->n))
		return -1;
	atomic_store(&x->entering, 0);
	atomic_store(&x->done, 0);
	atomic_store(&x->all_done, 0);
	atomic_store(&x->round, k + 1);
	futex_wake_all(&x->round);
	q = wait_queued(x);
	if (q < 0)
		return -1;
	c0 = cpu_ns(0);
	t0 = now_ns();
	if (x->peer->release(&x->holder, (uint64_t)x->n))
		return -1;
	t1 = now_ns();
	futex_wait_for(&x->all_done, 0);
	c1 = cpu_ns(0);
	if (x->failed)
		return -1;
	for (i = 0; i < x->n; i++) {
		first = x->ts[i] < first ? x->ts[i] : first;
		last = x->ts[i] > last ? x->ts[i] : last;
	}
	atomic_store(&x->back, k + 1);
	futex_wake_all(&x->back);
	if (k == 0)
		return 0;
	x->release_ns[x->reps] = t1 - t0;
	x->first_ns[x->reps] = first - t0;
	x->last_ns[x->reps] = last - t0;
	x->cpu_ns[x->reps] = (c1 - c0) / (uint64_t)x->n;
	x->queued[x->reps] = q;
	x->reps++;
	return 0;
}

static void child(void *arg, int idx)
{
	struct mg *x = arg;
	struct waiter *w = calloc((size_t)x->n, sizeof(*w));
	pthread_attr_t attr;
	pthread_t tid;
	int i;

	(void)idx;
	if (!w || x->peer->attach(&x->sem, &x->holder))
		goto fail;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, STACK);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	for (i = 0; i < x->n; i++) {
		w[i].x = x;
		w[i].idx = i;
		errno = pthread_create(&tid, &attr, waiter_main, &w[i]);
		if (errno)
			goto fail;
	}
	while (atomic_load(&x->started) < x->n && !x->failed)
		sleep_ns(NSEC_PER_MSEC);
	for (i = 0; i <= REPS && !x->failed; i++) {
		if (holder_rep(x, i))
			goto fail;
	}
	_exit(x->failed ? 1 : 0);
fail:
	mark_failed(x);
	_exit(1);
}

struct result {
	const struct peer *peer;
	int n;
	double release, first, last, last_min, last_max, cpu;
	long queued;		/* smallest count seen before a release */
	bool ok;
};

static double median_u64(uint64_t *v, int n, double *min, double *max)
{
	uint64_t t;
	int i, j;

	for (i = 1; i < n; i++) {
		for (j = i; j > 0 && v[j - 1] > v[j]; j--) {
			t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	}
	if (min)
		*min = (double)v[0];
	if (max)
		*max = (double)v[n - 1];
	return n % 2 ? (double)v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

static void run(const struct peer *peer, int n, struct result *r)
{
	struct mg *x = shared_alloc(sizeof(*x));
	pid_t pid;
	int i;

	memset(r, 0, sizeof(*r));
	r->peer = peer;
	r->n = n;
	r->queued = -1;
	x->n = n;
	x->peer = peer;
	if (peer->create(&x->sem, (uint64_t)n))
		goto out;
	pid = spawn(child, x, 0);
	r->ok = !reap(&pid, 1, 600 * NSEC_PER_SEC) && !x->failed &&
		x->reps == REPS;
	peer->destroy(&x->sem);
	if (!r->ok) {
		progress("massgrant: %s N=%d failed (error %d, %d repetitions)",
			 peer->name, n, x->failed, x->reps);
		goto out;
	}
	r->release = median_u64(x->release_ns, REPS, NULL, NULL);
	r->first = median_u64(x->first_ns, REPS, NULL, NULL);
	r->last = median_u64(x->last_ns, REPS, &r->last_min, &r->last_max);
	r->cpu = median_u64(x->cpu_ns, REPS, NULL, NULL);
	for (i = 0; i < REPS; i++) {
		if (r->queued < 0 || x->queued[i] < r->queued)
			r->queued = x->queued[i];
	}
out:
	shared_free(x, sizeof(*x));
}

static const struct result *find(const struct result *res, int n,
				 const struct peer *peer, int waiters)
{
	int i;

	for (i = 0; i < n; i++) {
		if (res[i].peer == peer && res[i].n == waiters)
			return &res[i];
	}
	return NULL;
}

static void print_row(const struct result *r, const struct result *w)
{
	table("   %-18s %5d %7ld %10.1f %10.1f %10.1f %10.1f %10.1f %7.2f"
	      " %8.1f%s\n", r->peer->label, r->n, r->queued, r->release / 1e3,
	      r->first / 1e3, r->last / 1e3, r->last_min / 1e3,
	      r->last_max / 1e3, w ? ratio(r->last, w->last) : NAN,
	      r->cpu / 1e3,
	      r->ok ? "" : "  (failed)");
	json_begin(NULL);
	json_str("peer", r->peer->name);
	json_int("waiters", r->n);
	json_int("queued_seen", r->queued);
	json_num("release_call_ns", r->release);
	json_num("first_wake_ns", r->first);
	json_num("last_wake_ns", r->last);
	json_num("last_wake_min_ns", r->last_min);
	json_num("last_wake_max_ns", r->last_max);
	json_num("last_ratio_to_wsem", w ? ratio(r->last, w->last) : NAN);
	json_num("cpu_ns_per_waiter", r->cpu);
	json_bool("ok", r->ok);
	json_end();
}

static void print(const struct result *res, int n)
{
	const struct peer *const *p;
	char key[64], label[96];
	int i;

	table("\n7. Mass grant: N waiters queued in acquire(1), capacity N "
	      "held, then one release(N); unpinned\n");
	table("   us, median of %d; release = the call itself; first/last = "
	      "release -> first/last waiter back;\n   queued = kernel's count"
	      " (eventfd: waiters asleep); ratio = peer / wsem (last);\n"
	      "   CPU = user+system time of holder and waiters, release -> "
	      "last back, per waiter, us\n", REPS);
	table("   %-18s %5s %7s %10s %10s %10s %10s %10s %7s %8s\n", "", "N",
	      "queued", "release", "first", "last", "last min", "last max",
	      "ratio", "CPU");
	json_begin("massgrant");
	json_str("unit", "ns from the start of the release call");
	json_int("repetitions", REPS);
	json_begin_array("rows");
	for (i = 0; i < n; i++)
		print_row(&res[i], find(res, n, &peer_wsem, res[i].n));
	json_end_array();
	json_end();
	for (p = peers; *p; p++) {
		plot("# massgrant-%s\n", (*p)->name);
		for (i = 0; i < n; i++) {
			if (res[i].peer == *p)
				plot("%d %.1f %.1f\n", res[i].n,
				     res[i].release, res[i].last);
		}
		plot("\n\n");
	}
	for (i = 0; i < n; i++) {
		if (res[i].peer != &peer_wsem)
			continue;
		snprintf(key, sizeof(key), "massgrant.%d.release", res[i].n);
		snprintf(label, sizeof(label), "mass grant N=%d: release "
			 "call, median us", res[i].n);
		metric(key, label, res[i].release / 1e3);
		snprintf(key, sizeof(key), "massgrant.%d.last", res[i].n);
		snprintf(label, sizeof(label), "mass grant N=%d: release -> "
			 "last waiter, median us", res[i].n);
		metric(key, label, res[i].last / 1e3);
	}
}

void scenario_massgrant(void)
{
	static const int sizes[] = { 1, 16, 256, MAX_N };
	static const char *const names[] = { "wsem", "sysv", "eventfd" };
	struct result res[12];
	const struct peer *const *p;
	int n = 0, j, k;

	raise_limits(MAX_N + 1, 3 * MAX_N + 256);
	for (k = 0; k < 4; k++) {
		for (j = 0; j < 3; j++) {
			for (p = peers; *p; p++) {
				if (strcmp((*p)->name, names[j]))
					continue;
				run(*p, sizes[k], &res[n]);
				progress("massgrant: %-7s N=%4d: release %.1f us, "
					 "last %.1f us, queued %ld",
					 (*p)->name, sizes[k],
					 res[n].release / 1e3,
					 res[n].last / 1e3, res[n].queued);
				n++;
			}
		}
	}
	print(res, n);
}
