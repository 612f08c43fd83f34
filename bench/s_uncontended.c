// SPDX-License-Identifier: GPL-2.0
/*
 * Scenario 1: an uncontended acquire(1)+release(1) pair in one process.
 *
 * Two getppid() calls are the floor for anything the kernel enforces, the
 * eventfd read+write pair the floor for an fd-based kernel object.  A
 * sample is the mean of BATCH pairs timed together (so the clock costs
 * little); the peers take turns in ROUNDS rounds so that a drift of the
 * machine's speed hits them all alike.  Where make bench BEFORE=REV loaded
 * REV's module beside ours (/dev/wsem_before), it is one more row, and
 * batches of the two, back to back, give the before/after ratio that the
 * drift cannot reach (paired()).  CPU = the process's user + system time
 * per pair over the measured batches: one process, busy throughout, so it
 * stays near the mean wall time, unlike the median.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bench.h"

#define BATCH		16
#define ROUNDS		5
#define SECONDS		1.5	/* per peer, over all rounds */
#define MAX_SAMPLES	(1u << 16)

struct row {
	const char *name;
	const char *label;
	const struct peer *peer;	/* NULL: the getppid floor */
	struct bsem sem;
	struct bhandle h;
	struct samples *s;
	double median, p99;
	uint64_t cpu, pairs;	/* measured batches */
};

static int pair(struct row *r)
{
	if (!r->peer) {
		syscall(SYS_getppid);
		syscall(SYS_getppid);
		return 0;
	}
	if (r->peer->acquire(&r->h, 1) || r->peer->release(&r->h, 1))
		return -1;
	return 0;
}

/* BATCH pairs of @r, untimed. */
static int batch(struct row *r)
{
	int i;

	for (i = 0; i < BATCH; i++) {
		if (pair(r))
			return -1;
	}
	return 0;
}

/* Collect samples for @ns nanoseconds. */
static int measure(struct row *r, uint64_t ns)
{
	uint64_t t0 = now_ns(), end = t0 + ns, t1, c0 = thread_cpu_ns();

	do {
		if (batch(r))
			return -1;
		t1 = now_ns();
		samples_add(r->s, (t1 - t0) / BATCH);
		r->pairs += BATCH;
		t0 = t1;
	} while (t1 < end);
	r->cpu += thread_cpu_ns() - c0;
	return 0;
}

/* Time one batch of @r's pairs into *@ns. */
static int batch_ns(struct row *r, uint64_t *ns)
{
	uint64_t t0 = now_ns();

	if (batch(r))
		return -1;
	*ns = now_ns() - t0;
	return 0;
}

/*
 * wsem / the before module's twin, paired: a batch of each, back to back
 * (in turn which goes first), is one sample of their ratio, so that no
 * drift of the machine's speed lies between the two sides of a sample.
 * The median over @ns nanoseconds, or -1.
 */
static double paired(struct row *wsem, struct row *before, uint64_t ns)
{
	struct samples *s = samples_new(MAX_SAMPLES, false);
	uint64_t end = now_ns() + ns, ta, tb;
	double q = -1;
	int k, err;

	for (k = 0; now_ns() < end; k++) {
		if (k & 1)
			err = batch_ns(before, &tb) || batch_ns(wsem, &ta);
		else
			err = batch_ns(wsem, &ta) || batch_ns(before, &tb);
		if (err)
			goto out;
		if (tb)
			samples_add(s, ta * 1000000 / tb);
	}
	q = samples_pct(s, 50) / 1e6;
out:
	samples_free(s);
	return q;
}

static int setup(struct row *r)
{
	r->s = samples_new(MAX_SAMPLES, false);
	if (!r->peer)
		return 0;
	if (r->peer->create(&r->sem, 1))
		return -1;
	return r->peer->attach(&r->sem, &r->h);
}

static void print_rows(struct row *rows, int n, const struct row *wsem)
{
	int i;

	table("\n1. Uncontended acquire(1)+release(1), one process\n");
	table("   ns per pair; ratio = peer / wsem (median); CPU = user+system "
	      "time per pair, ns\n");
	table("   %-28s %10s %10s %8s %8s\n", "", "median", "p99", "ratio",
	      "CPU");
	plot("# uncontended\n");
	json_begin("uncontended");
	json_str("unit", "ns per acquire(1)+release(1) pair");
	json_int("batch", BATCH);
	json_begin_array("rows");
	for (i = 0; i < n; i++) {
		struct row *r = &rows[i];
		double q = ratio(r->median, wsem->median);

		table("   %-28s %10.0f %10.0f %8.2f %8.0f\n", r->label,
		      r->median, r->p99, q, per_op(r->cpu, r->pairs));
		plot("%d \"%s\" %.1f %.1f %.4f\n", i, r->name, r->median,
		     r->p99, q);
		json_begin(NULL);
		json_str("peer", r->name);
		json_num("median_ns", r->median);
		json_num("p99_ns", r->p99);
		json_num("ratio_to_wsem", q);
		json_num("p99_ratio_to_wsem", ratio(r->p99, wsem->p99));
		json_num("cpu_ns_per_pair", per_op(r->cpu, r->pairs));
		json_int("samples", r->s->n);
		json_end();
	}
	json_end_array();
	json_end();
	plot("\n\n");
}

/* wsem's figure and its ratios to the kernel peers, for before/after. */
static void headline(const struct row *rows, int n, const struct row *wsem)
{
	char key[64], label[96];
	int i;

	metric("uncontended.wsem", "uncontended: wsem pair, median ns",
	       wsem->median);
	for (i = 0; i < n; i++) {
		if (!rows[i].peer || rows[i].peer == &peer_wsem ||
		    rows[i].peer == &peer_wsem_before)
			continue;
		snprintf(key, sizeof(key), "uncontended.per_%s", rows[i].name);
		snprintf(label, sizeof(label), "uncontended: wsem / %s",
			 rows[i].name);
		metric(key, label, ratio(wsem->median, rows[i].median));
	}
}

void scenario_uncontended(void)
{
	struct row rows[8] = {
		{ .name = "getppid", .label = "getppid x2 (syscall floor)" },
	};
	const struct peer *const *p;
	uint64_t slice = run_ns(SECONDS / ROUNDS);
	struct row *wsem = NULL, *before = NULL;
	double q = -1;
	int n = 1, i, k;

	for (p = peers; *p; p++) {
		rows[n].name = (*p)->name;
		rows[n].label = (*p)->label;
		rows[n].peer = *p;
		if (*p == &peer_wsem)
			wsem = &rows[n];
		n++;
	}
	if (!access(WSEM_BEFORE_DEVICE, F_OK)) {
		rows[n].name = peer_wsem_before.name;
		rows[n].label = peer_wsem_before.label;
		rows[n].peer = &peer_wsem_before;
		before = &rows[n];
		n++;
	}
	for (i = 0; i < n; i++) {
		if (setup(&rows[i])) {
			progress("uncontended: %s: setup failed", rows[i].name);
			exit(1);
		}
		measure(&rows[i], slice / 4);	/* warm up */
		rows[i].s->n = 0;
		rows[i].s->seen = 0;
		rows[i].cpu = 0;
		rows[i].pairs = 0;
	}
	for (k = 0; k < ROUNDS; k++) {
		for (i = 0; i < n; i++) {
			if (measure(&rows[i], slice)) {
				progress("uncontended: %s failed",
					 rows[i].name);
				exit(1);
			}
		}
	}
	if (before) {
		q = paired(wsem, before, run_ns(SECONDS));
		if (q < 0) {
			progress("uncontended: paired batches failed");
			exit(1);
		}
	}
	for (i = 0; i < n; i++) {
		struct row *r = &rows[i];

		r->median = samples_pct(r->s, 50);
		r->p99 = samples_pct(r->s, 99);
		progress("uncontended: %-8s median %.0f ns, p99 %.0f ns",
			 r->name, r->median, r->p99);
		if (r->peer) {
			r->peer->detach(&r->h);
			r->peer->destroy(&r->sem);
		}
	}
	print_rows(rows, n, wsem);
	headline(rows, n, wsem);
	if (before) {
		table("   wsem / the before module, batches paired: %.3f\n", q);
		metric("uncontended.paired_before",
		       "uncontended: wsem / before module, paired batches", q);
	}
	for (i = 0; i < n; i++)
		samples_free(rows[i].s);
}
