// SPDX-License-Identifier: GPL-2.0
/*
 * Scenario 17 (pool): the uncontended acquire(1)+release(1) pair of one
 * thread through a pool (wsem_pool_open(3), max_spare 1), beside sem_t,
 * the plain wsem pair, eventfd and SysV; timed as scenario 1 (batches of
 * BATCH pairs, the rows taking turns in ROUNDS rounds), with the thread's
 * CPU time (user + system) per pair beside each.  Ratios are to the pool.
 *
 * Then THREADS threads of one process on a capacity of CAP, each taking
 * acquire(1), a hold of HOLD_NS on the clock, release(1), in a loop for
 * CONTENDED seconds: through a pool (max_spare CAP), on sem_t and on the
 * plain wsem pair (a handle per thread).  Pairs per second, and the
 * process's CPU time (every thread's, the pool's own included) per pair.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <wsem.h>

#include "bench.h"

#define BATCH		16
#define ROUNDS		5
#define SECONDS		1.5	/* per row, over all rounds */
#define MAX_SAMPLES	(1u << 16)
#define ROWS		6
#define THREADS		8
#define CAP		4
#define HOLD_NS		2000
#define CONTENDED	1.0	/* seconds per row */

struct prow {
	const char *name;
	const char *label;
	const struct peer *peer;	/* NULL: the pool */
	struct bsem sem;
	struct bhandle h;
	struct wsem_pool *pool;
	struct samples *s;
	double median, p99;
	uint64_t cpu, pairs;
};

static int pool_pair(struct prow *r)
{
	if (!r->peer)
		return wsem_pool_acquire(r->pool, 1, -1) ||
		       wsem_pool_release(r->pool, 1) ? -1 : 0;
	return r->peer->acquire(&r->h, 1) || r->peer->release(&r->h, 1) ?
	       -1 : 0;
}

static int pool_measure(struct prow *r, uint64_t ns)
{
	uint64_t t0 = now_ns(), end = t0 + ns, t1, c0 = thread_cpu_ns();
	int i;

	do {
		for (i = 0; i < BATCH; i++) {
			if (pool_pair(r))
				return -1;
		}
		t1 = now_ns();
		samples_add(r->s, (t1 - t0) / BATCH);
		r->pairs += BATCH;
		t0 = t1;
	} while (t1 < end);
	r->cpu += thread_cpu_ns() - c0;
	return 0;
}

static int pool_setup(struct prow *r)
{
	const struct peer *p = r->peer ? r->peer : &peer_wsem;

	r->s = samples_new(MAX_SAMPLES, false);
	if (p->create(&r->sem, 1) || p->attach(&r->sem, &r->h))
		return -1;
	if (r->peer)
		return 0;
	r->pool = wsem_pool_open(r->h.fd, 1, 0);
	return r->pool ? 0 : -1;
}

static void pool_teardown(struct prow *r)
{
	const struct peer *p = r->peer ? r->peer : &peer_wsem;

	wsem_pool_close(r->pool);
	p->detach(&r->h);
	p->destroy(&r->sem);
	samples_free(r->s);
}

static void pool_print(struct prow *rows, int n)
{
	struct prow *pool = &rows[0];
	int i;

	table("\n17. The pool: uncontended acquire(1)+release(1), one thread\n");
	table("   ns per pair; ratio = peer / pool (median); CPU = user+system "
	      "time per pair, ns\n");
	table("   %-28s %10s %10s %8s %8s\n", "", "median", "p99", "ratio",
	      "CPU");
	plot("# pool\n");
	json_begin("pool");
	json_str("unit", "ns per acquire(1)+release(1) pair");
	json_int("batch", BATCH);
	json_begin_array("rows");
	for (i = 0; i < n; i++) {
		struct prow *r = &rows[i];
		double q = ratio(r->median, pool->median);

		table("   %-28s %10.1f %10.1f %8.2f %8.1f\n", r->label,
		      r->median, r->p99, q, per_op(r->cpu, r->pairs));
		plot("%d \"%s\" %.1f %.1f %.4f\n", i, r->name, r->median,
		     r->p99, q);
		json_begin(NULL);
		json_str("peer", r->name);
		json_num("median_ns", r->median);
		json_num("p99_ns", r->p99);
		json_num("ratio_to_pool", q);
		json_num("cpu_ns_per_pair", per_op(r->cpu, r->pairs));
		json_int("samples", r->s->n);
		json_end();
		if (r->peer) {
			char key[64], label[96];

			snprintf(key, sizeof(key), "pool.per_%s", r->name);
			snprintf(label, sizeof(label), "pool: pool / %s",
				 r->name);
			metric(key, label, ratio(pool->median, r->median));
		}
	}
	json_end_array();
	json_end();
	plot("\n\n");
	metric("pool.median", "pool: pool pair, median ns", pool->median);
}

static void scenario_pool_contended(void);

void scenario_pool(void)
{
	struct prow rows[ROWS] = {
		{ .name = "pool", .label = "wsem pool (max_spare 1)" },
	};
	const struct peer *const *p;
	uint64_t slice = run_ns(SECONDS / ROUNDS);
	int n = 1, i, k;

	for (p = peers; *p && n < ROWS; p++) {
		if (!strcmp((*p)->name, "flock"))
			continue;
		rows[n].name = (*p)->name;
		rows[n].label = (*p)->label;
		rows[n].peer = *p;
		n++;
	}
	for (i = 0; i < n; i++) {
		if (pool_setup(&rows[i]) || pool_measure(&rows[i], slice / 4)) {
			progress("pool: %s: setup failed", rows[i].name);
			exit(1);
		}
		rows[i].s->n = 0;
		rows[i].s->seen = 0;
		rows[i].cpu = 0;
		rows[i].pairs = 0;
	}
	for (k = 0; k < ROUNDS; k++) {
		for (i = 0; i < n; i++) {
			if (pool_measure(&rows[i], slice)) {
				progress("pool: %s failed", rows[i].name);
				exit(1);
			}
		}
	}
	for (i = 0; i < n; i++) {
		rows[i].median = samples_pct(rows[i].s, 50);
		rows[i].p99 = samples_pct(rows[i].s, 99);
		progress("pool: %-8s median %.1f ns, p99 %.1f ns", rows[i].name,
			 rows[i].median, rows[i].p99);
	}
	pool_print(rows, n);
	for (i = 0; i < n; i++)
		pool_teardown(&rows[i]);
	scenario_pool_contended();
}

/* The contended rows: one kind of semaphore, THREADS threads on it. */
struct crow {
	const char *label;
	const struct peer *peer;	/* NULL: the pool */
	struct bsem sem;
	struct wsem_pool *pool;
	atomic_int stop;
	atomic_uint_fast64_t pairs;
	uint64_t ns, cpu;
	int failed;
};

struct cthread {
	struct crow *r;
	struct bhandle h;
};

static void *contended_run(void *arg)
{
	struct cthread *t = arg;
	struct crow *r = t->r;
	uint64_t n = 0;

	while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
		int err = r->peer ? r->peer->acquire(&t->h, 1) :
				    wsem_pool_acquire(r->pool, 1, -1);

		if (err) {
			r->failed = 1;
			break;
		}
		busy_for_ns(HOLD_NS);
		err = r->peer ? r->peer->release(&t->h, 1) :
				wsem_pool_release(r->pool, 1);
		if (err) {
			r->failed = 1;
			break;
		}
		n++;
	}
	atomic_fetch_add(&r->pairs, n);
	return NULL;
}

static int contended(struct crow *r)
{
	const struct peer *p = r->peer ? r->peer : &peer_wsem;
	struct cthread t[THREADS];
	pthread_t th[THREADS];
	uint64_t t0, c0;
	int i;

	if (p->create(&r->sem, CAP))
		return -1;
	if (!r->peer) {
		r->pool = wsem_pool_open(r->sem.fd, CAP, 0);
		if (!r->pool)
			return -1;
	}
	for (i = 0; i < THREADS; i++) {
		t[i].r = r;
		if (p->attach(&r->sem, &t[i].h))
			return -1;
	}
	c0 = cpu_ns(getpid());
	t0 = now_ns();
	for (i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, contended_run, &t[i]);
	sleep_ns(run_ns(CONTENDED));
	atomic_store(&r->stop, 1);
	for (i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	r->ns = now_ns() - t0;
	r->cpu = cpu_ns(getpid()) - c0;
	for (i = 0; i < THREADS; i++)
		p->detach(&t[i].h);
	wsem_pool_close(r->pool);
	p->destroy(&r->sem);
	return r->failed ? -1 : 0;
}

static void scenario_pool_contended(void)
{
	struct crow rows[3] = {
		{ .label = "wsem pool (max_spare 4)" },
		{ .label = "sem_t (futex)" },
		{ .label = "wsem" },
	};
	const struct peer *const *p;
	int i;

	for (p = peers; *p; p++) {
		if (!strcmp((*p)->name, "sem_t"))
			rows[1].peer = *p;
	}
	rows[2].peer = &peer_wsem;
	table("\n18. The pool, contended: %d threads of one process on a capacity "
	      "of %d,\n    acquire(1), %d ns held, release(1)\n", THREADS, CAP,
	      HOLD_NS);
	table("   %-28s %12s %8s %10s\n", "", "pairs/s", "ratio", "CPU/pair");
	json_begin("pool_contended");
	json_begin_array("rows");
	for (i = 0; i < 3; i++) {
		struct crow *r = &rows[i];
		double rate;

		if (!r->peer && i) {
			progress("pool: contended: no %s", r->label);
			continue;
		}
		if (contended(r)) {
			progress("pool: contended: %s failed", r->label);
			exit(1);
		}
		r->ns = r->ns ? r->ns : 1;
		rate = (double)r->pairs * NSEC_PER_SEC / (double)r->ns;
		table("   %-28s %12.0f %8.2f %10.0f\n", r->label, rate,
		      ratio((double)rows[0].pairs / (double)rows[0].ns,
			    (double)r->pairs / (double)r->ns),
		      per_op(r->cpu, r->pairs));
		json_begin(NULL);
		json_str("peer", r->label);
		json_num("pairs_per_s", rate);
		json_num("cpu_ns_per_pair", per_op(r->cpu, r->pairs));
		json_end();
	}
	json_end_array();
	json_end();
}
