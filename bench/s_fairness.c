// SPDX-License-Identifier: GPL-2.0
/*
 * Scenario 4: fairness under pressure.  On capacity CAP, SMALL processes
 * loop acquire(1)/release(1) while one more loops acquire(CAP)/release(CAP):
 * how long does the full-capacity request wait?
 *
 * sem_t and eventfd have no weights: the big request takes its CAP units
 * one by one.  flock has one slot: the small ones take LOCK_SH (shared by
 * any number, so its capacity is really unbounded) and the big one LOCK_EX.
 * A request still waiting at the end counts with the time it had waited
 * by then (a lower bound), and the peer is marked as starving it.  CPU =
 * the user + system time of all SMALL + 1 processes over the run, per
 * grant (small and big).
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

#define CAP		4
#define SMALL		6
#define SECONDS		2.0
#define MAX_SAMPLES	(1u << 14)

struct fair {
	_Atomic int go;
	_Atomic int stop;
	_Atomic uint64_t waiting_since;	/* of the big request, or 0 */
	uint64_t big_grants;
	uint64_t max_wait;
	uint64_t small_grants[SMALL];
	int failed;
	const struct peer *peer;
	struct bsem sem;
	struct samples *wait;
};

static void worker(void *arg, int idx)
{
	struct fair *x = arg;
	uint64_t w = idx == SMALL ? CAP : 1, t0;
	struct bhandle h;

	if (x->peer->attach(&x->sem, &h))
		goto fail;
	futex_wait_for(&x->go, 0);
	while (!atomic_load(&x->stop)) {
		t0 = now_ns();
		if (idx == SMALL)
			atomic_store(&x->waiting_since, t0);
		if (x->peer->acquire(&h, w))
			goto fail;
		if (idx == SMALL) {
			atomic_store(&x->waiting_since, 0);
			t0 = now_ns() - t0;
			if (!atomic_load(&x->stop)) {
				samples_add(x->wait, t0);
				x->big_grants++;
				if (t0 > x->max_wait)
					x->max_wait = t0;
			}
		} else {
			x->small_grants[idx]++;
		}
		if (x->peer->release(&h, w))
			goto fail;
	}
	x->peer->detach(&h);
	return;
fail:
	x->failed = 1;
	_exit(1);
}

struct result {
	const struct peer *peer;
	double median, p99, max, small_rate, cpu;	/* cpu: ns per grant */
	uint64_t big_grants;
	bool starved, ok;
};

static void run(const struct peer *peer, struct result *r)
{
	struct fair *x = shared_alloc(sizeof(*x));
	pid_t pids[SMALL + 1];
	uint64_t t0, t1, c0, c1, since, small = 0;
	int i;

	memset(r, 0, sizeof(*r));
	r->peer = peer;
	x->peer = peer;
	x->wait = samples_new(MAX_SAMPLES, true);
	if (peer->create(&x->sem, CAP)) {
		progress("fairness: %s: create failed", peer->name);
		goto out;
	}
	for (i = 0; i <= SMALL; i++)
		pids[i] = spawn(worker, x, i);
	c0 = cpu_ns_all(pids, SMALL + 1);
	t0 = now_ns();
	atomic_store(&x->go, 1);
	futex_wake_all(&x->go);
	sleep_ns(run_ns(SECONDS));
	atomic_store(&x->stop, 1);
	t1 = now_ns();
	c1 = cpu_ns_all(pids, SMALL + 1);
	since = atomic_load(&x->waiting_since);
	r->ok = !reap(pids, SMALL + 1, 60 * NSEC_PER_SEC) && !x->failed;
	peer->destroy(&x->sem);

	for (i = 0; i < SMALL; i++)
		small += x->small_grants[i];
	r->small_rate = (double)small * NSEC_PER_SEC / (double)(t1 - t0);
	r->big_grants = x->big_grants;
	r->cpu = per_op(c1 - c0, small + x->big_grants);
	r->median = samples_pct(x->wait, 50);
	r->p99 = samples_pct(x->wait, 99);
	r->max = (double)x->max_wait;
	/* Still waiting at the end: count what it waited by then. */
	if (since && t1 > since && (double)(t1 - since) > r->max) {
		r->max = (double)(t1 - since);
		r->starved = (double)(t1 - since) > SECONDS * opt.scale *
						      NSEC_PER_SEC / 2;
	}
out:
	shared_free(x->wait, sizeof(struct samples) +
		    MAX_SAMPLES * sizeof(uint64_t));
	shared_free(x, sizeof(*x));
}

void scenario_fairness(void)
{
	const struct peer *const *p;
	struct result res[8];
	int n = 0, i;

	for (p = peers; *p; p++) {
		run(*p, &res[n]);
		progress("fairness: %-7s big waits: %llu, max %.0f ns%s",
			 (*p)->name, (unsigned long long)res[n].big_grants,
			 res[n].max, res[n].starved ? " (starved)" : "");
		n++;
	}

	table("\n4. Fairness: %d processes loop acquire(1), one loops "
	      "acquire(%d), capacity %d\n", SMALL, CAP, CAP);
	table("   waits of the acquire(%d), ns; ratio = peer / wsem (largest "
	      "wait)\n", CAP);
	table("   small/s = grants/s of the acquire(1)s; CPU = user+system "
	      "time of all %d processes per grant, ns\n", SMALL + 1);
	table("   %-18s %8s %10s %10s %12s %8s %12s %8s\n", "", "grants",
	      "median", "p99", "largest", "ratio", "small/s", "CPU");
	plot("# fairness\n");
	json_begin("fairness");
	json_str("unit", "wait of the full-capacity request, ns");
	json_int("capacity", CAP);
	json_int("small_procs", SMALL);
	json_num("seconds", SECONDS * opt.scale);
	json_begin_array("rows");
	for (i = 0; i < n; i++) {
		struct result *r = &res[i];
		double q = ratio(r->max, res[0].max);

		table("   %-18s %8llu %10.0f %10.0f %12.0f %8.1f %12.0f %8.0f"
		      "%s%s\n", r->peer->label,
		      (unsigned long long)r->big_grants,
		      r->median, r->p99, r->max, q, r->small_rate, r->cpu,
		      r->starved ? "  starved" : "", r->ok ? "" : " (failed)");
		plot("%d \"%s\" %.1f %.1f %.1f %.4f\n", i, r->peer->name,
		     r->median, r->p99, r->max, q);
		json_begin(NULL);
		json_str("peer", r->peer->name);
		json_int("big_grants", (long long)r->big_grants);
		json_num("median_ns", r->median);
		json_num("p99_ns", r->p99);
		json_num("largest_ns", r->max);
		json_num("ratio_to_wsem", q);
		json_bool("starved", r->starved);
		json_num("small_grants_per_s", r->small_rate);
		json_num("cpu_ns_per_grant", r->cpu);
		json_num("cpu_ratio_to_wsem", ratio(r->cpu, res[0].cpu));
		json_bool("ok", r->ok);
		json_end();
	}
	json_end_array();
	json_end();
	plot("\n\n");
}
