// SPDX-License-Identifier: GPL-2.0
/*
 * Scenarios 12 and 13: what nesting and gangs cost when nobody waits.
 *
 * 12 (nest): the uncontended acquire(1)+release(1) pair of scenario 1 on
 * a plain semaphore, on an anonymous child of it (depth 1) and on the end
 * of a chain of anonymous children (depth 2 and 4; wsem_open_child() with
 * a NULL name on the previous one), with the eventfd pair beside them:
 * a grant on a child is a grant on every ancestor too, so the chain's cost
 * is what this shows.
 *
 * 13 (gang): wsem_acquire_many() of weight 1 on each of 1, 2 and 4
 * semaphores, then wsem_release() on each handle, against the same
 * acquires one by one (wsem_acquire() on each, then the releases): once
 * on separate anonymous semaphores (each its own lock and queue) and once
 * on sibling children of one root (one tree: one lock, one queue).
 *
 * As in scenario 1: one process, a sample is the mean of BATCH operations
 * timed together, the rows take turns in ROUNDS rounds, and CPU = the
 * process's user + system time per operation over the measured batches.
 * Every semaphore has capacity 4 (a root of capacity 4 * its children in
 * the tree rows), so nothing ever waits.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <wsem.h>

#include "bench.h"

#define BATCH		16
#define ROUNDS		5
#define SECONDS		1.0	/* per row, over all rounds */
#define MAX_SAMPLES	(1u << 16)
#define CAP		4
#define MAX_FDS		8	/* handles of a row: a chain of 4 + root */
#define MAX_ROWS	12

enum kind {
	EVENTFD,	/* read + write on an EFD_SEMAPHORE eventfd */
	PAIR,		/* acquire(1) + release(1) on fds[n - 1] */
	GANG,		/* wsem_acquire_many() on fds[0..n), then releases */
	ONE_BY_ONE,	/* wsem_acquire() on each of fds[0..n), then releases */
};

struct row {
	const char *name;
	const char *label;
	enum kind kind;
	int nfds;		/* fds used by the operation */
	int nopen;		/* fds to close: the operation's and others */
	int fds[MAX_FDS];	/* what the operation uses, first */
	int ref;		/* the row its ratio is against */
	struct samples *s;
	double median, p99;
	uint64_t cpu, ops;
	bool failed;
};

static const uint64_t ones[MAX_FDS] = { 1, 1, 1, 1, 1, 1, 1, 1 };

static int op(struct row *r)
{
	uint64_t v = 1;
	int i;

	switch (r->kind) {
	case EVENTFD:
		if (read(r->fds[0], &v, sizeof(v)) != sizeof(v) ||
		    write(r->fds[0], &v, sizeof(v)) != sizeof(v))
			return -1;
		return 0;
	case PAIR:
		if (wsem_acquire(r->fds[r->nfds - 1], 1) ||
		    wsem_release(r->fds[r->nfds - 1], 1))
			return -1;
		return 0;
	case GANG:
		if (wsem_acquire_many(r->fds, ones, r->nfds, -1))
			return -1;
		break;
	case ONE_BY_ONE:
		for (i = 0; i < r->nfds; i++) {
			if (wsem_acquire(r->fds[i], 1))
				return -1;
		}
		break;
	}
	for (i = 0; i < r->nfds; i++) {
		if (wsem_release(r->fds[i], 1))
			return -1;
	}
	return 0;
}

/* Collect samples for @ns nanoseconds. */
static int measure(struct row *r, uint64_t ns)
{
	uint64_t t0 = now_ns(), end = t0 + ns, t1, c0 = thread_cpu_ns();
	int i;

	do {
		for (i = 0; i < BATCH; i++) {
			if (op(r))
				return -1;
		}
		t1 = now_ns();
		samples_add(r->s, (t1 - t0) / BATCH);
		r->ops += BATCH;
		t0 = t1;
	} while (t1 < end);
	r->cpu += thread_cpu_ns() - c0;
	return 0;
}

static void close_row(struct row *r)
{
	int i;

	for (i = r->nopen - 1; i >= 0; i--)
		close(r->fds[i]);
	r->nopen = 0;
}

/* An eventfd with CAP units. */
static int setup_eventfd(struct row *r)
{
	r->kind = EVENTFD;
	r->fds[0] = eventfd(CAP, EFD_SEMAPHORE | EFD_CLOEXEC);
	if (r->fds[0] < 0)
		return -1;
	r->nfds = r->nopen = 1;
	return 0;
}

/* A root and a chain of @depth anonymous children below it: the pair on
 * the last. */
static int setup_chain(struct row *r, int depth)
{
	int i;

	r->kind = PAIR;
	r->fds[0] = wsem_open_anon(CAP, O_CLOEXEC);
	if (r->fds[0] < 0)
		return -1;
	r->nopen = 1;
	for (i = 1; i <= depth; i++) {
		r->fds[i] = wsem_open_child(r->fds[i - 1], NULL,
					    O_RDWR | O_CLOEXEC, 0, CAP);
		if (r->fds[i] < 0)
			return -1;
		r->nopen++;
	}
	r->nfds = depth + 1;
	return 0;
}

/* @n semaphores: separate roots, or children of one root (@tree). */
static int setup_set(struct row *r, enum kind kind, int n, bool tree)
{
	int i, root = -1;

	r->kind = kind;
	r->nfds = n;
	if (tree) {
		root = wsem_open_anon((uint64_t)CAP * n, O_CLOEXEC);
		if (root < 0)
			return -1;
	}
	for (i = 0; i < n; i++) {
		if (tree)
			r->fds[i] = wsem_open_child(root, NULL,
						    O_RDWR | O_CLOEXEC, 0, CAP);
		else
			r->fds[i] = wsem_open_anon(CAP, O_CLOEXEC);
		if (r->fds[i] < 0) {
			if (root >= 0)
				close(root);
			return -1;
		}
		r->nopen++;
	}
	if (tree)
		r->fds[r->nopen++] = root;	/* kept open, never used */
	return 0;
}

/*
 * Warm every row up, then let them take turns in ROUNDS rounds; a row
 * that fails is marked and left out of the later rounds.
 */
static void run_rows(const char *scen, struct row *rows, int n)
{
	uint64_t slice = run_ns(SECONDS / ROUNDS);
	int i, k;

	for (i = 0; i < n; i++) {
		rows[i].s = samples_new(MAX_SAMPLES, false);
		if (rows[i].failed)
			continue;
		if (measure(&rows[i], slice / 4)) {
			progress("%s: %s failed", scen, rows[i].name);
			rows[i].failed = true;
		}
		rows[i].s->n = 0;
		rows[i].s->seen = 0;
		rows[i].cpu = 0;
		rows[i].ops = 0;
	}
	for (k = 0; k < ROUNDS; k++) {
		for (i = 0; i < n; i++) {
			if (rows[i].failed)
				continue;
			if (measure(&rows[i], slice)) {
				progress("%s: %s failed", scen,
					 rows[i].name);
				rows[i].failed = true;
			}
		}
	}
	for (i = 0; i < n; i++) {
		struct row *r = &rows[i];

		r->median = rows[i].failed ? __builtin_nan("") :
			    samples_pct(r->s, 50);
		r->p99 = rows[i].failed ? __builtin_nan("") :
			 samples_pct(r->s, 99);
		progress("%s: %-14s median %.0f ns, p99 %.0f ns", scen,
			 r->name, r->median, r->p99);
		close_row(r);
	}
}

/* @alt: a second reference for every row (its own column), or -1 */
static void print_rows(const char *key, const char *unit, struct row *rows,
		       int n, int alt)
{
	int i;

	table("   %-40s %10s %10s %8s %8s %8s%s\n", "", "median", "p99",
	      "ratio", "CPU", "CPU rat", alt < 0 ? "" : "  / eventfd");
	plot("# %s\n", key);
	json_begin(key);
	json_str("unit", unit);
	json_int("batch", BATCH);
	json_int("capacity", CAP);
	json_begin_array("rows");
	for (i = 0; i < n; i++) {
		struct row *r = &rows[i], *ref = &rows[r->ref];
		double cpu = per_op(r->cpu, r->ops);
		double rcpu = per_op(ref->cpu, ref->ops);
		double q = ratio(r->median, ref->median);

		table("   %-40s %10.0f %10.0f %8.2f %8.0f %8.2f", r->label,
		      r->median, r->p99, q, cpu, ratio(cpu, rcpu));
		if (alt >= 0)
			table(" %11.2f", ratio(r->median, rows[alt].median));
		table("%s\n", r->failed ? "  (failed)" : "");
		plot("%d \"%s\" %.1f %.1f %.4f\n", i, r->name, r->median,
		     r->p99, q);
		json_begin(NULL);
		json_str("row", r->name);
		json_str("reference", ref->name);
		json_num("median_ns", r->median);
		json_num("p99_ns", r->p99);
		json_num("time_ratio_to_reference", q);
		json_num("cpu_ns_per_op", cpu);
		json_num("cpu_ratio_to_reference", ratio(cpu, rcpu));
		if (alt >= 0)
			json_num("time_ratio_to_eventfd",
				 ratio(r->median, rows[alt].median));
		json_int("samples", r->s->n);
		json_bool("ok", !r->failed);
		json_end();
		samples_free(r->s);
	}
	json_end_array();
	json_end();
	plot("\n\n");
}

void scenario_nest(void)
{
	static const int depths[] = { 1, 2, 4 };
	struct row rows[MAX_ROWS] = {
		{ .name = "plain", .label = "wsem, plain semaphore" },
		{ .name = "eventfd", .label = "eventfd SEMAPHORE" },
	};
	char key[32], label[96];
	int n = 2, i, err;
	size_t d;

	err = setup_chain(&rows[0], 0);
	err = err ?: setup_eventfd(&rows[1]);
	for (d = 0; !err && d < sizeof(depths) / sizeof(depths[0]); d++) {
		snprintf(key, sizeof(key), "depth-%d", depths[d]);
		snprintf(label, sizeof(label), "wsem, child at depth %d",
			 depths[d]);
		rows[n].name = strdup(key);
		rows[n].label = strdup(label);
		err = setup_chain(&rows[n], depths[d]);
		n++;
	}
	if (err) {
		progress("nest: setup failed (does the module have child "
			 "semaphores?)");
		for (i = 0; i < n; i++)
			close_row(&rows[i]);
		table("\n12. Nesting, uncontended: skipped (no child "
		      "semaphores)\n");
		goto out;
	}
	run_rows("nest", rows, n);

	table("\n12. Nesting: uncontended acquire(1)+release(1), one process, "
	      "on a plain semaphore and on a\n    child at the end of a "
	      "chain of anonymous children (each level capacity %d)\n", CAP);
	table("   ns per pair; ratio = row / plain (median); CPU = user+system "
	      "time per pair, ns;\n   CPU rat = row's CPU / plain's; / eventfd "
	      "= row / the eventfd pair (median)\n");
	print_rows("nest", "ns per acquire(1)+release(1) pair", rows, n, 1);
	for (i = 1; i < n; i++) {
		snprintf(key, sizeof(key), "nest.per_plain.%s", rows[i].name);
		snprintf(label, sizeof(label), "nest: %s / plain, median",
			 rows[i].name);
		metric(key, label, ratio(rows[i].median, rows[0].median));
	}
out:
	for (i = 2; i < n; i++) {
		free((char *)rows[i].name);
		free((char *)rows[i].label);
	}
}

void scenario_gang(void)
{
	static const int sizes[] = { 1, 2, 4 };
	struct row rows[MAX_ROWS] = {
		{ .name = "pair", .label = "wsem_acquire+release, one semaphore" },
	};
	char key[48], label[96], name[48];
	int n = 1, i, t, err;
	size_t k;

	err = setup_chain(&rows[0], 0);
	for (t = 0; !err && t < 2; t++) {
		for (k = 0; !err && k < sizeof(sizes) / sizeof(sizes[0]);
		     k++) {
			int m = sizes[k];
			const char *where = t ? "children of one root" :
					    "separate semaphores";

			if (m == 1 && t)
				continue;	/* a lone child: scenario 12 */
			if (m > 1) {
				snprintf(name, sizeof(name), "one-by-one-%d%s",
					 m, t ? "-tree" : "");
				snprintf(label, sizeof(label),
					 "one by one, %d %s", m, where);
				rows[n].name = strdup(name);
				rows[n].label = strdup(label);
				rows[n].ref = n;
				err = setup_set(&rows[n], ONE_BY_ONE, m, t);
				n++;
				if (err)
					break;
			}
			snprintf(name, sizeof(name), "gang-%d%s", m,
				 t ? "-tree" : "");
			snprintf(label, sizeof(label), "gang of %d, %s", m,
				 m == 1 ? "one semaphore" : where);
			rows[n].name = strdup(name);
			rows[n].label = strdup(label);
			rows[n].ref = m == 1 ? 0 : n - 1;
			err = setup_set(&rows[n], GANG, m, t);
			n++;
		}
	}
	if (err) {
		progress("gang: setup failed (does the module have gangs?)");
		for (i = 0; i < n; i++)
			close_row(&rows[i]);
		table("\n13. Gang acquire, uncontended: skipped (no child "
		      "semaphores or gangs)\n");
		goto out;
	}
	run_rows("gang", rows, n);

	table("\n13. Gang acquire, uncontended: wsem_acquire_many() of weight 1 "
	      "on each of M semaphores,\n    then a release on each, vs "
	      "wsem_acquire() on each in turn, then the releases; one process\n");
	table("   ns per operation (all M acquired and released); ratio = gang "
	      "/ one by one of the same M\n   (median; the gang of 1 against "
	      "the plain pair); CPU = user+system time per\n   operation, ns; "
	      "CPU rat = the row's CPU / its reference's\n");
	print_rows("gang", "ns per acquire of M semaphores and M releases",
		   rows, n, -1);
	for (i = 1; i < n; i++) {
		if (strncmp(rows[i].name, "gang-", 5))
			continue;
		snprintf(key, sizeof(key), "gang.per_one_by_one.%s",
			 rows[i].name + 5);
		snprintf(label, sizeof(label), "gang: %s / %s, median",
			 rows[i].name, rows[rows[i].ref].name);
		metric(key, label, ratio(rows[i].median,
					 rows[rows[i].ref].median));
	}
out:
	for (i = 1; i < n; i++) {
		free((char *)rows[i].name);
		free((char *)rows[i].label);
	}
}
