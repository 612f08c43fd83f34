// SPDX-License-Identifier: GPL-2.0
/*
 * Scenario 19 (poolwait): what a pool costs a request that waits in the
 * kernel, and the bound it keeps (wsem_pool_open(3): a pool gets ahead of
 * a queued request by at most one acquire per thread).
 *
 * One semaphore of capacity CAP, two processes.  Process A runs 1 or
 * MAX_THREADS threads, each looping acquire(1), HOLD_NS held on the clock,
 * release(1): through a pool (max_spare CAP), or on a plain handle per
 * thread; four rows.  Process B (this one), every GAP_NS, asks for all CAP units
 * on a handle of its own with wsem_acquire_async() (queued when the call
 * returns), asks wsem_acquire_result() until it is granted (spinning, so
 * that its wait is the grant's and not the scheduler's wake-up of a
 * sleeper among A's busy threads), holds for HOLD_NS and releases.  B's
 * wait is from its call to the grant seen.  Every acquire of A is logged
 * (its start and its grant, CLOCK_MONOTONIC); an A acquire that started
 * after B's request was queued and was granted before B was is an
 * overtake: strict FIFO allows none (the plain row), the pool's bound at
 * most one per A thread per request.  A's pairs per second and CPU time per pair
 * (the whole process's, the pool's watcher thread included) are beside
 * them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <wsem.h>

#include "bench.h"

#define MAX_THREADS	4
#define CAP		4
#define HOLD_NS		2000
#define GAP_NS		(200 * 1000)
#define SECONDS		1.0	/* per row */
#define LOG_MAX		(1u << 21)
#define REQ_MAX		(1u << 16)

struct alog {
	uint64_t start, grant;
};

/* Shared between B (the bench) and A (its child). */
struct poolwait {
	int fd;				/* the semaphore, inherited by A */
	int threads;			/* A's */
	atomic_int ready, stop, failed;
	atomic_uint nlog;		/* A's acquires; the log keeps LOG_MAX */
	uint64_t pairs, cpu;
	struct alog log[LOG_MAX];
};

struct athread {
	struct poolwait *pw;
	struct wsem_pool *pool;	/* or NULL: the plain handle fd */
	int fd;
};

static void *a_run(void *arg)
{
	struct athread *t = arg;
	struct poolwait *pw = t->pw;

	while (!atomic_load_explicit(&pw->stop, memory_order_relaxed)) {
		uint64_t s = now_ns(), g;
		unsigned int i;
		int err = t->pool ? wsem_pool_acquire(t->pool, 1, -1) :
				    wsem_acquire(t->fd, 1);

		g = now_ns();
		if (err) {
			atomic_store(&pw->failed, 1);
			break;
		}
		busy_for_ns(HOLD_NS);
		err = t->pool ? wsem_pool_release(t->pool, 1) :
				wsem_release(t->fd, 1);
		if (err) {
			atomic_store(&pw->failed, 1);
			break;
		}
		i = atomic_fetch_add_explicit(&pw->nlog, 1,
					      memory_order_relaxed);
		if (i >= LOG_MAX) {
			/* the log is full: the row ends here */
			atomic_store(&pw->stop, 1);
			break;
		}
		pw->log[i] = (struct alog){ s, g };
	}
	return NULL;
}

/* Process A: @idx 1 through a pool, 0 on plain handles. */
static void a_main(void *arg, int idx)
{
	struct poolwait *pw = arg;
	struct athread t[MAX_THREADS];
	pthread_t th[MAX_THREADS];
	struct wsem_pool *pool = NULL;
	uint64_t c0 = cpu_ns(getpid());
	int i;

	if (idx) {
		pool = wsem_pool_open(pw->fd, CAP, 0);
		if (!pool)
			_exit(1);
	}
	for (i = 0; i < pw->threads; i++) {
		t[i] = (struct athread){ .pw = pw, .pool = pool,
			.fd = pool ? -1 : wsem_reopen(pw->fd, O_CLOEXEC) };
		if (!pool && t[i].fd < 0)
			_exit(1);
	}
	for (i = 0; i < pw->threads; i++)
		pthread_create(&th[i], NULL, a_run, &t[i]);
	atomic_store(&pw->ready, 1);
	for (i = 0; i < pw->threads; i++)
		pthread_join(th[i], NULL);
	pw->cpu = cpu_ns(getpid()) - c0;
	wsem_pool_close(pool);
	_exit(atomic_load(&pw->failed));
}

struct breq {
	uint64_t queued, granted;	/* queued 0: granted at once */
};

static int cmp_start(const void *a, const void *b)
{
	const struct alog *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* A's acquires that began after @r was queued and were granted before it. */
static unsigned int overtakes(const struct alog *log, unsigned int n,
			      const struct breq *r)
{
	unsigned int lo = 0, hi = n, k = 0;

	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;

		if (log[mid].start <= r->queued)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < n && log[lo].start < r->granted; lo++)
		k += log[lo].grant < r->granted;
	return k;
}

struct pwrow {
	const char *name, *label;
	int pooled, threads;
	struct samples *wait;
	double rate, cpu_pair;
	unsigned int reqs, queued, over_total, over_max;
};

/* B's side of one row: its requests while A runs. */
static int b_requests(int fd, struct poolwait *pw, struct breq *req,
		      unsigned int *nreq, struct samples *wait)
{
	uint64_t end = now_ns() + run_ns(SECONDS);

	while (now_ns() < end && *nreq < REQ_MAX &&
	       !atomic_load(&pw->stop)) {
		struct breq *r = &req[(*nreq)++];
		uint64_t t0;
		int ret;

		sleep_ns(GAP_NS);
		t0 = now_ns();
		if (wsem_acquire_async(fd, CAP) == 0) {
			r->queued = 0;
		} else {
			r->queued = now_ns();
			/* Spin: the grant's time, not the scheduler's wake-up. */
			do {
				ret = wsem_acquire_result(fd);
			} while (ret < 0 && errno == EINPROGRESS);
			if (ret)
				return -1;
		}
		r->granted = now_ns();
		samples_add(wait, r->granted - t0);
		busy_for_ns(HOLD_NS);
		if (wsem_release(fd, CAP))
			return -1;
	}
	return 0;
}

static int poolwait_row(struct pwrow *row, struct poolwait *pw,
			struct breq *req)
{
	unsigned int nreq = 0, n, i;
	uint64_t t0, ns;
	int sem, b, err;
	pid_t pid;

	memset(pw, 0, offsetof(struct poolwait, log));
	sem = wsem_open_anon(CAP, 0);
	b = sem < 0 ? -1 : wsem_reopen(sem, O_CLOEXEC);
	if (b < 0)
		return -1;
	pw->fd = sem;
	pw->threads = row->threads;
	pid = spawn(a_main, pw, row->pooled);
	while (pid > 0 && !atomic_load(&pw->ready))
		sleep_ns(NSEC_PER_MSEC);
	t0 = now_ns();
	err = pid > 0 ? b_requests(b, pw, req, &nreq, row->wait) : -1;
	atomic_store(&pw->stop, 1);
	ns = now_ns() - t0;
	err |= reap(&pid, 1, 10 * NSEC_PER_SEC);
	close(b);
	close(sem);
	n = atomic_load(&pw->nlog);
	n = n < LOG_MAX ? n : LOG_MAX;
	if (err)
		return -1;
	qsort(pw->log, n, sizeof(pw->log[0]), cmp_start);
	row->reqs = nreq;
	for (i = 0; i < nreq; i++) {
		unsigned int k;

		if (!req[i].queued)
			continue;
		row->queued++;
		k = overtakes(pw->log, n, &req[i]);
		row->over_total += k;
		if (k > row->over_max)
			row->over_max = k;
	}
	row->rate = (double)n * NSEC_PER_SEC / (double)(ns ? ns : 1);
	row->cpu_pair = per_op(pw->cpu, n);
	return 0;
}

void scenario_poolwait(void)
{
	struct pwrow rows[4] = {
		{ .name = "plain-1", .label = "A: 1 thread, plain handle",
		  .threads = 1 },
		{ .name = "pool-1", .label = "A: 1 thread, pool (max_spare 4)",
		  .pooled = 1, .threads = 1 },
		{ .name = "plain-4", .label = "A: 4 threads, plain handles",
		  .threads = MAX_THREADS },
		{ .name = "pool-4", .label = "A: 4 threads, pool (max_spare 4)",
		  .pooled = 1, .threads = MAX_THREADS },
	};
	struct poolwait *pw = shared_alloc(sizeof(*pw));
	struct breq *req = calloc(REQ_MAX, sizeof(*req));
	int i;

	if (!pw || !req) {
		progress("poolwait: out of memory");
		exit(1);
	}
	for (i = 0; i < 4; i++) {
		rows[i].wait = samples_new(REQ_MAX, false);
		if (poolwait_row(&rows[i], pw, req)) {
			progress("poolwait: %s failed", rows[i].name);
			exit(1);
		}
		progress("poolwait: %-8s B waits median %.0f ns, overtakes "
			 "%u (max %u per request)", rows[i].name,
			 samples_pct(rows[i].wait, 50), rows[i].over_total,
			 rows[i].over_max);
	}
	table("\n19. A pool and a waiter: process A, 1 or %d threads of "
	      "acquire(1), %d ns held, release(1);\n    process B asks for "
	      "all %d units every %d us (async, queued at the call's return, "
	      "then spins on\n    the result); 2 vCPUs: 4 threads of A and B "
	      "overcommit them\n", MAX_THREADS, HOLD_NS, CAP, GAP_NS / 1000);
	table("   B's wait, ns (call to grant); ratio = pool / plain of as many "
	      "threads; overtakes = A's\n   acquires begun after B queued and "
	      "granted before B (FIFO: 0; the pool's bound: one per\n   A "
	      "thread per request); A's pairs per second and CPU per pair, "
	      "ns\n");
	table("   %-30s %9s %9s %7s %6s %9s %7s %10s %8s\n", "", "median",
	      "p99", "ratio", "reqs", "overtakes", "max/req", "A pairs/s",
	      "A CPU");
	plot("# poolwait\n");
	json_begin("poolwait");
	json_int("capacity", CAP);
	json_begin_array("rows");
	for (i = 0; i < 4; i++) {
		struct pwrow *r = &rows[i];
		double med = samples_pct(r->wait, 50);
		double q = ratio(med, samples_pct(rows[i & ~1].wait, 50));

		table("   %-30s %9.0f %9.0f %7.2f %6u %9u %7u %10.0f %8.0f\n",
		      r->label, med, samples_pct(r->wait, 99), q, r->queued,
		      r->over_total, r->over_max, r->rate, r->cpu_pair);
		plot("%d \"%s\" %.1f %.1f %.4f\n", i, r->name, med,
		     samples_pct(r->wait, 99), q);
		json_begin(NULL);
		json_str("row", r->name);
		json_int("threads", r->threads);
		json_bool("pool", r->pooled);
		json_num("wait_median_ns", med);
		json_num("wait_p99_ns", samples_pct(r->wait, 99));
		json_num("ratio_to_plain", q);
		json_int("requests_queued", r->queued);
		json_int("overtakes", r->over_total);
		json_int("overtakes_max_per_request", r->over_max);
		json_bool("within_bound", r->over_max <=
			  (unsigned int)(r->pooled ? r->threads : 0));
		json_num("a_pairs_per_s", r->rate);
		json_num("a_cpu_ns_per_pair", r->cpu_pair);
		json_end();
	}
	json_end_array();
	json_end();
	plot("\n\n");
	metric("poolwait.wait_pool_per_plain_1",
	       "poolwait: B's wait, pool / plain, A of 1 thread",
	       ratio(samples_pct(rows[1].wait, 50),
		     samples_pct(rows[0].wait, 50)));
	metric("poolwait.wait_pool_per_plain_4",
	       "poolwait: B's wait, pool / plain, A of 4 threads",
	       ratio(samples_pct(rows[3].wait, 50),
		     samples_pct(rows[2].wait, 50)));
	metric("poolwait.overtakes_max", "poolwait: the pool's overtakes, "
	       "largest per request",
	       rows[1].over_max > rows[3].over_max ? rows[1].over_max :
						      rows[3].over_max);
	for (i = 0; i < 4; i++)
		samples_free(rows[i].wait);
	free(req);
	shared_free(pw, sizeof(*pw));
}
