// SPDX-License-Identifier: GPL-2.0
/*
 * Scenario 5: the cost of a grant with 1, 100, 1,000 and 10,000 queued
 * waiters.
 *
 * One child process runs N+1 threads that loop acquire(1)/release(1) on
 * capacity 1, so that while one holds, N wait.  Threads blocked in the
 * call are waiters like processes are; all threads of the child share one
 * wsem handle (flock needs an open file per thread).  As in the hand-off
 * test, all run on one CPU as SCHED_BATCH, and a holder that took over from
 * another thread waits until that one is asleep again (queued) before it
 * releases, so the queue really holds N waiters at every grant.
 *
 * The cost of a grant is the time from a release call to the return of
 * the next grant, whoever gets it; "hand-offs" says how many grants went to
 * another thread than the last holder (a peer that lets the releasing
 * thread take it again rarely hands off, and its cost is then that of an
 * uncontended pair).  For wsem and SysV the kernel's own count of waiters
 * is sampled too.  The child is killed at the end: tearing down N waiters
 * is timed as well.  CPU = the user + system time of all the child's
 * threads over the measuring window, per grant.
 *
 * The machine adds to that latency as N grows (N threads' stacks and task
 * structs go cold in caches and TLBs), whatever the peer: compare the
 * peers at the same N, and each with itself across N.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sem.h>
#include <sys/wait.h>
#include <unistd.h>

#include <wsem.h>

#include "bench.h"

#define SECONDS		1.0
#define STACK		(64 * 1024)
#define MAX_SAMPLES	(1u << 16)

enum { WARM, MEASURE, STOP };

struct sc {
	_Atomic int started;
	_Atomic int go;
	_Atomic int phase;
	int nthreads;
	int failed;
	const struct peer *peer;
	struct bsem sem;
	struct bhandle proc;		/* the child's handle, shared */
	/* Written by the holder only: capacity 1 serializes them. */
	int last;
	uint64_t last_release;
	uint64_t grants, handoffs;
	struct samples *gap;
};

struct thr {
	struct sc *x;
	int idx;
	int statfd;		/* /proc/self/task/TID/stat */
};

static struct thr *threads;

/* Wait until thread @idx sleeps (in its acquire), unless the run ends. */
static void wait_asleep(struct sc *x, int idx)
{
	while (task_state(threads[idx].statfd) != 'S' &&
	       atomic_load(&x->phase) != STOP)
		sched_yield();
}

static void *thread_main(void *arg)
{
	struct thr *t = arg;
	struct sc *x = t->x;
	struct bhandle own, *h = &x->proc;
	char path[64];
	uint64_t now;
	int prev;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", gettid());
	t->statfd = open(path, O_RDONLY | O_CLOEXEC);
	if (t->statfd < 0)
		goto fail;
	if (x->peer->flags & PEER_FD_EACH) {
		if (x->peer->attach(&x->sem, &own))
			goto fail;
		h = &own;
	}
	atomic_fetch_add(&x->started, 1);
	futex_wait_for(&x->go, 0);
	for (;;) {
		if (x->peer->acquire(h, 1))
			goto fail;
		now = now_ns();
		prev = x->last;
		if (atomic_load(&x->phase) == MEASURE) {
			x->grants++;
			if (prev != t->idx) {
				x->handoffs++;
				samples_add(x->gap, now - x->last_release);
			}
		}
		x->last = t->idx;
		if (prev >= 0 && prev != t->idx)
			wait_asleep(x, prev);
		x->last_release = now_ns();
		if (x->peer->release(h, 1))
			goto fail;
	}
fail:
	x->failed = errno ? errno : -1;
	return NULL;
}

static void child(void *arg, int idx)
{
	struct sc *x = arg;
	struct thr *t = calloc((size_t)x->nthreads, sizeof(*t));
	pthread_attr_t attr;
	pthread_t tid;
	int i;

	(void)idx;
	threads = t;
	raise_limits(x->nthreads, 2 * x->nthreads + 256);
	pin_cpu(0);
	if (!t || batch_sched() || x->peer->attach(&x->sem, &x->proc))
		goto fail;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, STACK);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	for (i = 0; i < x->nthreads; i++) {
		t[i].x = x;
		t[i].idx = i;
		errno = pthread_create(&tid, &attr, thread_main, &t[i]);
		if (errno)
			goto fail;
	}
	for (;;)
		pause();
fail:
	x->failed = errno ? errno : -1;
	_exit(1);
}

/* The kernel's count of waiters, where the peer has one; else -1. */
static long kernel_waiters(struct sc *x)
{
	struct wsem_stat st = { .size = sizeof(st) };

	if (x->peer == &peer_wsem)
		return wsem_stat(x->sem.fd, &st) ? -1 : (long)st.waiters;
	if (!strcmp(x->peer->name, "sysv"))
		return semctl(x->sem.semid, 0, GETNCNT);
	return -1;
}

struct result {
	const struct peer *peer;
	int waiters;
	double cost, rate, median, p99, handoff, setup_s, teardown_s;
	double cpu;			/* ns per grant */
	long queued;			/* largest kernel count seen */
	bool ok;
};

static void run(const struct peer *peer, int waiters, struct result *r)
{
	size_t gsize = sizeof(struct samples) + MAX_SAMPLES * sizeof(uint64_t);
	struct sc *x = shared_alloc(sizeof(*x));
	uint64_t t0, t1, c0, c1, end;
	long q;
	pid_t pid;
	int st;

	memset(r, 0, sizeof(*r));
	r->peer = peer;
	r->waiters = waiters;
	r->queued = -1;
	r->cpu = NAN;
	x->peer = peer;
	x->nthreads = waiters + 1;
	x->last = -1;
	x->gap = samples_new(MAX_SAMPLES, true);
	if (peer->create(&x->sem, 1))
		goto out;
	t0 = now_ns();
	pid = spawn(child, x, 0);
	end = t0 + 300 * NSEC_PER_SEC;
	while (atomic_load(&x->started) < x->nthreads && !x->failed &&
	       now_ns() < end)
		sleep_ns(5 * NSEC_PER_MSEC);
	r->setup_s = (double)(now_ns() - t0) / NSEC_PER_SEC;
	if (atomic_load(&x->started) == x->nthreads && !x->failed) {
		atomic_store(&x->go, 1);
		futex_wake_all(&x->go);
		sleep_ns(run_ns(0.3));
		c0 = cpu_ns(pid);
		atomic_store(&x->phase, MEASURE);
		t0 = now_ns();
		end = t0 + run_ns(SECONDS);
		while (now_ns() < end) {
			q = kernel_waiters(x);
			r->queued = q > r->queued ? q : r->queued;
			sleep_ns(run_ns(SECONDS) / 10);
		}
		atomic_store(&x->phase, STOP);
		t1 = now_ns();
		c1 = cpu_ns(pid);
		r->cpu = per_op(c1 - c0, x->grants);
		r->ok = !x->failed;
		if (x->failed)
			progress("scale: %s N=%d: a thread failed (error %d)",
				 peer->name, waiters, x->failed);
		r->cost = x->grants ? (double)(t1 - t0) / (double)x->grants :
				      NAN;
		r->rate = (double)x->grants * NSEC_PER_SEC / (double)(t1 - t0);
		r->handoff = x->grants ? (double)x->handoffs / x->grants : 0;
		r->median = samples_pct(x->gap, 50);
		r->p99 = samples_pct(x->gap, 99);
	} else {
		progress("scale: %s: %d of %d threads started (error %d)",
			 peer->name, atomic_load(&x->started), x->nthreads,
			 x->failed);
	}
	t0 = now_ns();
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	r->teardown_s = (double)(now_ns() - t0) / NSEC_PER_SEC;
	peer->destroy(&x->sem);
out:
	shared_free(x->gap, gsize);
	shared_free(x, sizeof(*x));
}

static const struct result *find(const struct result *res, int n,
				 const struct peer *peer, int waiters)
{
	int i;

	for (i = 0; i < n; i++) {
		if (res[i].peer == peer && res[i].waiters == waiters)
			return &res[i];
	}
	return NULL;
}

static void print(const struct result *res, int n)
{
	const struct peer *const *p;
	int i;

	table("\n5. Scale: one grant with N queued waiters (N+1 threads loop "
	      "acquire(1)/release(1), capacity 1, one CPU)\n");
	table("   ns from a release to the next thread's grant (median, p99); "
	      "growth = median / median at N=1;\n");
	table("   ratio = peer / wsem (median); hand-off = grants that went to "
	      "another thread; queued = kernel's count\n");
	table("   CPU = user+system time of all threads per grant, ns\n");
	table("   %-18s %6s %10s %10s %10s %8s %7s %7s %8s %7s\n", "", "N",
	      "median", "p99", "grants/s", "CPU", "growth", "ratio",
	      "handoff", "queued");
	json_begin("scale");
	json_str("unit", "ns from a release to the next grant");
	json_begin_array("rows");
	for (i = 0; i < n; i++) {
		const struct result *r = &res[i];
		const struct result *one = find(res, n, r->peer, 1);
		const struct result *w = find(res, n, &peer_wsem, r->waiters);
		double g = one ? ratio(r->median, one->median) : NAN;
		double q = w ? ratio(r->median, w->median) : NAN;
		char queued[24] = "-";

		if (r->queued >= 0)
			snprintf(queued, sizeof(queued), "%ld", r->queued);
		table("   %-18s %6d %10.0f %10.0f %10.0f %8.0f %7.2f %7.2f "
		      "%7.0f%% %7s%s\n", r->peer->label, r->waiters, r->median,
		      r->p99, r->rate, r->cpu, g, q, 100 * r->handoff, queued,
		      r->ok ? "" : "  (failed)");
		json_begin(NULL);
		json_str("peer", r->peer->name);
		json_int("waiters", r->waiters);
		json_num("median_ns", r->median);
		json_num("p99_ns", r->p99);
		json_num("grants_per_s", r->rate);
		json_num("mean_ns_per_grant", r->cost);
		json_num("cpu_ns_per_grant", r->cpu);
		json_num("growth_vs_1", g);
		json_num("ratio_to_wsem", q);
		json_num("handoff_fraction", r->handoff);
		if (r->queued >= 0)
			json_int("kernel_waiters_seen", r->queued);
		else
			json_null("kernel_waiters_seen");
		json_num("setup_s", r->setup_s);
		json_num("teardown_s", r->teardown_s);
		json_bool("ok", r->ok);
		json_end();
	}
	json_end_array();
	json_end();

	for (p = peers; *p; p++) {
		plot("# scale-%s\n", (*p)->name);
		for (i = 0; i < n; i++) {
			if (res[i].peer == *p)
				plot("%d %.1f %.1f\n", res[i].waiters,
				     res[i].median, res[i].p99);
		}
		plot("\n\n");
	}
}

void scenario_scale(void)
{
	static const int sizes[] = { 1, 100, 1000, 10000 };
	const struct peer *const *p;
	struct result res[32];
	int n = 0, k;

	raise_limits(sizes[3] + 1, 2 * sizes[3] + 256);
	for (p = peers; *p; p++) {
		for (k = 0; k < 4; k++) {
			run(*p, sizes[k], &res[n]);
			progress("scale: %-7s N=%5d: median %.0f ns, "
				 "hand-offs %.0f%%, queued %ld, setup %.1f s, "
				 "teardown %.1f s", (*p)->name, sizes[k],
				 res[n].median, 100 * res[n].handoff,
				 res[n].queued, res[n].setup_s,
				 res[n].teardown_s);
			n++;
		}
	}
	print(res, n);
}
