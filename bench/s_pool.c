// SPDX-License-Identifier: GPL-2.0
/*
 * Scenario 17 (pool): the uncontended acquire(1)+release(1) pair of one
 * thread through a pool (wsem_pool_open(3), max_spare 1), beside sem_t,
 * the plain wsem pair, eventfd and SysV; timed as scenario 1 (batches of
 * BATCH pairs, the rows taking turns in ROUNDS rounds), with the thread's
 * CPU time (user + system) per pair beside each.  Ratios are to the pool.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <wsem.h>

#include "bench.h"

#define BATCH		16
#define ROUNDS		5
#define SECONDS		1.5	/* per row, over all rounds */
#define MAX_SAMPLES	(1u << 16)
#define ROWS		6

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
	json_begin("pool");
	json_str("unit", "ns per acquire(1)+release(1) pair");
	json_int("batch", BATCH);
	json_begin_array("rows");
	for (i = 0; i < n; i++) {
		struct prow *r = &rows[i];
		double q = ratio(r->median, pool->median);

		table("   %-28s %10.1f %10.1f %8.2f %8.1f\n", r->label,
		      r->median, r->p99, q, per_op(r->cpu, r->pairs));
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
	metric("pool.median", "pool: pool pair, median ns", pool->median);
}

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
}
