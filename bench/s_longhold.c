// SPDX-License-Identifier: GPL-2.0
/*
 * Scenario 9: long holds, as leases held for the length of a command.
 *
 * PROCS processes share a semaphore of capacity CAP (= PROCS - 1): each
 * loops acquire(1), keeps the unit for 10 to 20 ms (asleep, as a holder
 * waiting for its command is), releases it and asks again at once.  So
 * while CAP processes hold, the third waits; the releaser's next request
 * finds the others holding everything and nobody queued: it blocks at the
 * head of the queue, where wsem's waiter polls (spin_ns) before it
 * sleeps, and the poll never sees a grant, since the next release is
 * milliseconds away.  (With a longer queue only the requests that find
 * it empty would poll.)
 *
 * An acquire counts as blocking if it returned BLOCKED_NS or more after
 * the call: far more than a call that finds room takes, or a poll, and far
 * less than a hold, so it counts the waits for a release and no others.  A
 * peer that lets the releaser take its unit back before the woken waiter
 * runs (eventfd) has fewer.  The CPU time (user + system) of all PROCS
 * processes over the measuring window, divided by its blocking acquires,
 * is the figure (and per grant beside it): it holds the holders' sleeps
 * too, alike for every peer, and for wsem the poll.  Beside it, "in call"
 * is the acquiring thread's own CPU time inside its blocking acquires
 * (CLOCK_THREAD_CPUTIME_ID around the call), per blocking acquire: the
 * poll without the holders' sleeps around it.  "wsem, no poll" is the same module with spin_ns set to 0 for its
 * runs (left out where the parameter cannot be written); the headline is
 * wsem / wsem no poll, which the issue wants at most 1.05.  flock has one
 * slot (capacity 1) and is left out.  The variants take turns in ROUNDS
 * rounds.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

#define CAP		2
#define PROCS		(CAP + 1)
#define HOLD_MIN_NS	(10 * NSEC_PER_MSEC)
#define HOLD_SPAN_NS	(10 * NSEC_PER_MSEC)
#define ROUNDS		3
#define SECONDS		1.5	/* per variant and round */
#define MAX_VARIANTS	8
#define MAX_SAMPLES	(1u << 12)
#define BLOCKED_NS	(100 * 1000)

enum { WARM, MEASURE, STOP };

struct variant {
	const char *name;
	const char *label;
	const struct peer *peer;
	bool no_poll;		/* with wsem's spin_ns at 0 */
};

/* Shared by the parent and the workers. */
struct lh {
	_Atomic int go;
	_Atomic int phase;
	uint64_t grants[PROCS];		/* MEASURE */
	uint64_t blocking[PROCS];
	uint64_t call_cpu[PROCS];	/* inside blocking acquires */
	int failed;
	const struct peer *peer;
	struct bsem sem;
	struct samples *wait[PROCS];
};

/* 10 to 20 ms, from the worker's own sequence. */
static uint64_t hold_ns(uint64_t *rng)
{
	*rng ^= *rng << 13;
	*rng ^= *rng >> 7;
	*rng ^= *rng << 17;
	return HOLD_MIN_NS + *rng % HOLD_SPAN_NS;
}

static void worker(void *arg, int me)
{
	struct lh *x = arg;
	uint64_t rng = 0x9e3779b97f4a7c15ULL * (uint64_t)(me + 1), t0, t1;
	uint64_t c0, c1;
	struct bhandle h;

	if (x->peer->attach(&x->sem, &h))
		goto fail;
	futex_wait_for(&x->go, 0);
	while (atomic_load(&x->phase) != STOP) {
		c0 = thread_cpu_ns();
		t0 = now_ns();
		if (x->peer->acquire(&h, 1))
			goto fail;
		t1 = now_ns();
		c1 = thread_cpu_ns();
		if (atomic_load(&x->phase) == MEASURE) {
			x->grants[me]++;
			if (t1 - t0 >= BLOCKED_NS) {
				x->blocking[me]++;
				x->call_cpu[me] += c1 - c0;
			}
			samples_add(x->wait[me], t1 - t0);
		}
		sleep_ns(hold_ns(&rng));
		if (x->peer->release(&h, 1))
			goto fail;
	}
	x->peer->detach(&h);
	return;
fail:
	x->failed = 1;
	_exit(1);
}

/* Accumulated over the rounds. */
struct result {
	uint64_t grants, blocking, cpu, ns, call_cpu;
	struct samples *wait;
	double rate, cpu_per_block, median, call;
	bool failed;
};

static int start(struct lh *x, pid_t *pids)
{
	int i;

	if (x->peer->create(&x->sem, CAP))
		return -1;
	for (i = 0; i < PROCS; i++)
		pids[i] = spawn(worker, x, i);
	atomic_store(&x->go, 1);
	futex_wake_all(&x->go);
	return 0;
}

/* One run of @v for @ns nanoseconds, added to @res. */
static int run(const struct variant *v, struct result *res, uint64_t ns)
{
	size_t wsize = sizeof(struct samples) + MAX_SAMPLES * sizeof(uint64_t);
	struct lh *x = shared_alloc(sizeof(*x));
	uint64_t t0, t1, c0, c1;
	pid_t pids[PROCS];
	char spin[32];
	int i, ret = -1;

	x->peer = v->peer;
	for (i = 0; i < PROCS; i++)
		x->wait[i] = samples_new(MAX_SAMPLES, true);
	if (v->no_poll && (spin_read(spin, sizeof(spin)) || spin_set("0")))
		goto out;
	if (start(x, pids)) {
		progress("longhold: %s: create failed", v->name);
		goto spin;
	}
	sleep_ns(3 * (HOLD_MIN_NS + HOLD_SPAN_NS));	/* every one has held */
	c0 = cpu_ns_all(pids, PROCS);
	t0 = now_ns();
	atomic_store(&x->phase, MEASURE);
	sleep_ns(ns);
	atomic_store(&x->phase, STOP);
	t1 = now_ns();
	c1 = cpu_ns_all(pids, PROCS);
	ret = reap(pids, PROCS, 30 * NSEC_PER_SEC) || x->failed ? -1 : 0;
	x->peer->destroy(&x->sem);
	res->ns += t1 - t0;
	res->cpu += c1 - c0;
	for (i = 0; i < PROCS; i++) {
		res->grants += x->grants[i];
		res->blocking += x->blocking[i];
		res->call_cpu += x->call_cpu[i];
		samples_merge(res->wait, x->wait[i]);
	}
spin:
	if (v->no_poll && spin_set(spin))
		ret = -1;
out:
	for (i = 0; i < PROCS; i++)
		shared_free(x->wait[i], wsize);
	shared_free(x, sizeof(*x));
	return ret;
}

/* wsem first, then wsem without the poll (if it can be set), the peers. */
static int variants(struct variant *vs)
{
	const struct peer *const *p;
	char spin[32];
	int n = 0;

	vs[n++] = (struct variant){ "wsem", "wsem", &peer_wsem, false };
	if (!spin_read(spin, sizeof(spin)) && !spin_set(spin))
		vs[n++] = (struct variant){ "wsem-no-poll",
					    "wsem, no poll (spin_ns 0)",
					    &peer_wsem, true };
	for (p = peers; *p && n < MAX_VARIANTS; p++) {
		if (*p == &peer_wsem || !((*p)->flags & PEER_CAPACITY))
			continue;
		vs[n++] = (struct variant){ (*p)->name, (*p)->label, *p, false };
	}
	return n;
}

static void measure(const struct variant *vs, int n, struct result *res)
{
	uint64_t slice = run_ns(SECONDS);
	int i, k;

	memset(res, 0, sizeof(*res) * (size_t)n);
	for (i = 0; i < n; i++)
		res[i].wait = samples_new(MAX_SAMPLES, false);
	for (k = 0; k < ROUNDS; k++) {
		for (i = 0; i < n; i++) {
			if (run(&vs[i], &res[i], slice))
				res[i].failed = true;
		}
	}
	for (i = 0; i < n; i++) {
		struct result *r = &res[i];

		r->rate = r->ns ? (double)r->grants * NSEC_PER_SEC /
				  (double)r->ns : 0;
		r->cpu_per_block = per_op(r->cpu, r->blocking);
		r->call = per_op(r->call_cpu, r->blocking);
		r->median = samples_pct(r->wait, 50);
		progress("longhold: %-13s %.0f grants/s, %llu of %llu blocking, "
			 "CPU %.0f ns per blocking acquire%s", vs[i].name,
			 r->rate, (unsigned long long)r->blocking,
			 (unsigned long long)r->grants, r->cpu_per_block,
			 r->failed ? " (failed)" : "");
	}
}

/* The index of the "wsem, no poll" variant, or -1. */
static int no_poll_row(const struct variant *vs, const struct result *res,
		       int n)
{
	int i;

	for (i = 0; i < n; i++) {
		if (vs[i].no_poll && !res[i].failed)
			return i;
	}
	return -1;
}

static void print_rows(const struct variant *vs, const struct result *res,
		       int n)
{
	const struct result *r;
	int i;

	for (i = 0; i < n; i++) {
		r = &res[i];
		table("   %-26s %8.1f %7llu %8llu %9.0f %9.0f %9.0f %7.2f %8.0f"
		      "%s\n", vs[i].label, r->rate,
		      (unsigned long long)r->grants,
		      (unsigned long long)r->blocking, r->median / 1e3,
		      per_op(r->cpu, r->grants), r->cpu_per_block,
		      ratio(r->cpu_per_block, res[0].cpu_per_block), r->call,
		      r->failed ? "  (failed)" : "");
		json_begin(NULL);
		json_str("peer", vs[i].name);
		json_num("grants_per_s", r->rate);
		json_int("grants", (long long)r->grants);
		json_int("blocking_acquires", (long long)r->blocking);
		json_num("wait_median_ns", r->median);
		json_num("cpu_ns", (double)r->cpu);
		json_num("cpu_ns_per_grant", per_op(r->cpu, r->grants));
		json_num("cpu_ns_per_blocking_acquire", r->cpu_per_block);
		json_num("cpu_ratio_to_wsem",
			 ratio(r->cpu_per_block, res[0].cpu_per_block));
		json_num("in_call_cpu_ns_per_blocking_acquire", r->call);
		json_bool("ok", !r->failed);
		json_end();
	}
}

static void print(const struct variant *vs, const struct result *res, int n)
{
	int k = no_poll_row(vs, res, n);
	double q = k < 0 ? NAN : ratio(res[0].cpu_per_block,
				       res[k].cpu_per_block);

	table("\n9. Long holds: %d processes loop acquire(1), hold 10-20 ms "
	      "asleep, release; capacity %d\n", PROCS, CAP);
	table("   grants/s; blocking = acquires that waited %d us or more; "
	      "wait = one acquire, median us;\n   CPU = user+system time of "
	      "all %d processes per grant and per blocking acquire, ns;\n"
	      "   ratio = peer / wsem (CPU per blocking acquire); in call = "
	      "the acquiring thread's CPU inside\n   its blocking acquire, "
	      "ns\n", (int)(BLOCKED_NS / 1000), PROCS);
	table("   %-26s %8s %7s %8s %9s %9s %9s %7s %8s\n", "", "grants/s",
	      "grants", "blocking", "wait med", "CPU/grant", "CPU/block",
	      "ratio", "in call");
	json_begin("longhold");
	json_str("unit", "CPU ns (user + system, all processes) per blocking "
		 "acquire");
	json_int("capacity", CAP);
	json_int("procs", PROCS);
	json_num("hold_min_ns", (double)HOLD_MIN_NS);
	json_num("hold_max_ns", (double)(HOLD_MIN_NS + HOLD_SPAN_NS));
	json_num("wsem_per_no_poll_cpu", q);
	json_begin_array("rows");
	print_rows(vs, res, n);
	json_end_array();
	json_end();
	table("   long-hold: CPU per blocking acquire, wsem / wsem no poll = "
	      "%.2f (target <= 1.05)\n", q);
	if (k >= 0)
		table("   long-hold: CPU inside a blocking acquire, wsem / wsem "
		      "no poll = %.2f\n", ratio(res[0].call, res[k].call));
	metric("longhold.wsem_cpu", "long-hold: wsem CPU per blocking "
	       "acquire, ns", res[0].cpu_per_block);
	if (k < 0)
		return;
	metric("longhold.no_poll_cpu", "long-hold: wsem no poll CPU per "
	       "blocking acquire, ns", res[k].cpu_per_block);
	metric("longhold.cpu_ratio", "long-hold: CPU per blocking acquire, "
	       "wsem / no poll", q);
	metric("longhold.call_cpu_ratio", "long-hold: CPU inside a blocking "
	       "acquire, wsem / no poll", ratio(res[0].call, res[k].call));
}

void scenario_longhold(void)
{
	struct variant vs[MAX_VARIANTS];
	struct result res[MAX_VARIANTS];
	int n = variants(vs), i;

	measure(vs, n, res);
	print(vs, res, n);
	for (i = 0; i < n; i++)
		samples_free(res[i].wait);
}
