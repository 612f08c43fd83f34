// SPDX-License-Identifier: GPL-2.0
/*
 * Scenario 3: free-for-all contention.  2, 4 and 8 processes loop
 * acquire(1)/release(1) on capacity 1 and 4 (flock: capacity 1 only).
 *
 * Each run has two measuring phases of equal length.
 *
 * Phase 1 (throughput) counts grants per process and times each acquire;
 * nothing else is done, so no peer pays for the bookkeeping of phase 2.
 * The CPU time (user + system) of all N processes over phase 1, divided
 * by its grants, is what a grant cost in CPU.
 *
 * Phase 2 (order) counts the grants that jumped the arrival order.  Each
 * process posts a ticket from a shared counter in its slot right before
 * its blocking call and clears it once granted.  Right before taking its
 * own ticket, a process notes which others are asleep (state S in
 * /proc/PID/stat) with a ticket posted: those are queued in the semaphore
 * already, before this request arrives.  When it is granted, it counts a
 * jump if one of them still sleeps with the same ticket posted, i.e. has
 * not been granted.  A waiter granted just before may not be awake yet,
 * though: its wake-up is an IPI to another CPU, while the later request
 * may need none (granted at once after the earlier one left the queue, or
 * while wsem's head waiter polls).  So one that seems skipped is looked at
 * again for up to RECHECK_NS: only one that sleeps on with its ticket
 * through that counts.  So two requests that reach the kernel at nearly
 * the same time, whose order user space cannot see, never count; a request
 * that comes later and is served while an earlier one sleeps on does,
 * whatever the peer (at capacity 4, unless another release grants the
 * earlier one within RECHECK_NS).  The /proc reads cost time, which is why
 * phase 1 does without them.
 */
#define _GNU_SOURCE
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

#define MAX_PROCS	8
#define SECONDS		1.0	/* each phase */
#define MAX_SAMPLES	(1u << 15)
#define RECHECK_NS	500000	/* a granted waiter is awake by then */
#define NO_TICKET	UINT64_MAX

enum { WARM, THROUGHPUT, ORDER, STOP };

struct slot {
	_Atomic uint64_t ticket;	/* posted while in acquire (ORDER) */
	pid_t pid;
	uint64_t grants;		/* THROUGHPUT */
	uint64_t order_grants;		/* ORDER */
	uint64_t jumps;
	struct samples *wait;
	char pad[64];
};

struct ct {
	_Atomic int go;
	_Atomic int phase;
	_Atomic uint64_t next_ticket;
	int nprocs;
	int failed;
	const struct peer *peer;
	struct bsem sem;
	struct slot slot[MAX_PROCS];
};

/* Before a request in ORDER: note who is asleep in the queue already. */
static void note_sleepers(struct ct *x, int me, uint64_t *asleep,
			  int *statfd)
{
	uint64_t t;
	int i;

	for (i = 0; i < x->nprocs; i++) {
		asleep[i] = NO_TICKET;
		t = atomic_load(&x->slot[i].ticket);
		if (i == me || t == NO_TICKET)
			continue;
		if (statfd[i] < 0)
			statfd[i] = open_task_stat(x->slot[i].pid);
		if (task_state(statfd[i]) == 'S' &&
		    atomic_load(&x->slot[i].ticket) == t)
			asleep[i] = t;
	}
}

/* Does process @i sleep with ticket @t posted? */
static bool sleeps_on(struct ct *x, int i, uint64_t t, int statfd)
{
	return atomic_load(&x->slot[i].ticket) == t &&
	       task_state(statfd) == 'S' &&
	       atomic_load(&x->slot[i].ticket) == t;
}

/* After the grant: does one of them still sleep, not granted? */
static bool jumped(struct ct *x, const uint64_t *asleep, const int *statfd)
{
	uint64_t end;
	int i;

	for (i = 0; i < x->nprocs; i++) {
		if (asleep[i] == NO_TICKET)
			continue;
		end = now_ns() + RECHECK_NS;
		while (sleeps_on(x, i, asleep[i], statfd[i])) {
			if (now_ns() > end)
				return true;
			sched_yield();
		}
	}
	return false;
}

static void worker(void *arg, int me)
{
	struct ct *x = arg;
	struct slot *s = &x->slot[me];
	int statfd[MAX_PROCS];
	struct bhandle h;
	uint64_t t0, t1, asleep[MAX_PROCS];
	int phase, i;

	for (i = 0; i < MAX_PROCS; i++)
		statfd[i] = -1;
	if (x->peer->attach(&x->sem, &h))
		goto fail;
	futex_wait_for(&x->go, 0);
	while ((phase = atomic_load(&x->phase)) != STOP) {
		if (phase == ORDER) {
			note_sleepers(x, me, asleep, statfd);
			atomic_store(&s->ticket,
				     atomic_fetch_add(&x->next_ticket, 1));
		}
		t0 = now_ns();
		if (x->peer->acquire(&h, 1))
			goto fail;
		t1 = now_ns();
		if (phase == ORDER) {
			s->jumps += jumped(x, asleep, statfd);
			atomic_store(&s->ticket, NO_TICKET);
			s->order_grants++;
		} else if (phase == THROUGHPUT) {
			s->grants++;
			samples_add(s->wait, t1 - t0);
		}
		if (x->peer->release(&h, 1))
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
	int nprocs;
	uint64_t capacity;
	double rate, share, median, p99, cpu;	/* cpu: ns per grant */
	uint64_t grants, order_grants, jumps;
	bool ok;
};

static void run(const struct peer *peer, int nprocs, uint64_t capacity,
		struct result *r)
{
	size_t ssize = sizeof(struct samples) + MAX_SAMPLES * sizeof(uint64_t);
	struct ct *x = shared_alloc(sizeof(*x));
	struct samples *all = samples_new(MAX_SAMPLES, false);
	uint64_t t0, t1, c0, c1, lo = UINT64_MAX, hi = 0;
	pid_t pids[MAX_PROCS];
	int i;

	memset(r, 0, sizeof(*r));
	r->peer = peer;
	r->nprocs = nprocs;
	r->capacity = capacity;
	x->peer = peer;
	x->nprocs = nprocs;
	for (i = 0; i < nprocs; i++) {
		atomic_store(&x->slot[i].ticket, NO_TICKET);
		x->slot[i].wait = samples_new(MAX_SAMPLES, true);
	}
	if (peer->create(&x->sem, capacity)) {
		progress("contention: %s: create failed", peer->name);
		goto out;
	}
	for (i = 0; i < nprocs; i++) {
		pids[i] = spawn(worker, x, i);
		x->slot[i].pid = pids[i];
	}
	atomic_store(&x->go, 1);
	futex_wake_all(&x->go);
	sleep_ns(run_ns(0.1));
	c0 = cpu_ns_all(pids, nprocs);
	t0 = now_ns();
	atomic_store(&x->phase, THROUGHPUT);
	sleep_ns(run_ns(SECONDS));
	atomic_store(&x->phase, ORDER);
	t1 = now_ns();
	c1 = cpu_ns_all(pids, nprocs);
	sleep_ns(run_ns(SECONDS));
	atomic_store(&x->phase, STOP);
	r->ok = !reap(pids, nprocs, 60 * NSEC_PER_SEC) && !x->failed;
	peer->destroy(&x->sem);

	for (i = 0; i < nprocs; i++) {
		struct slot *s = &x->slot[i];

		r->grants += s->grants;
		r->order_grants += s->order_grants;
		r->jumps += s->jumps;
		lo = s->grants < lo ? s->grants : lo;
		hi = s->grants > hi ? s->grants : hi;
		samples_merge(all, s->wait);
	}
	r->rate = (double)r->grants * NSEC_PER_SEC / (double)(t1 - t0);
	r->cpu = per_op(c1 - c0, r->grants);
	r->share = lo ? (double)hi / (double)lo : INFINITY;
	r->median = samples_pct(all, 50);
	r->p99 = samples_pct(all, 99);
	progress("contention: %-7s C=%llu N=%d: %.0f grants/s, CPU %.0f ns "
		 "per grant, jumps %llu/%llu",
		 peer->name, (unsigned long long)capacity, nprocs, r->rate, r->cpu,
		 (unsigned long long)r->jumps,
		 (unsigned long long)r->order_grants);
out:
	for (i = 0; i < nprocs; i++)
		shared_free(x->slot[i].wait, ssize);
	shared_free(x, sizeof(*x));
	samples_free(all);
}

static const struct result *wsem_row(const struct result *res, int n,
				     const struct result *r)
{
	int i;

	for (i = 0; i < n; i++) {
		if (res[i].peer == &peer_wsem &&
		    res[i].capacity == r->capacity &&
		    res[i].nprocs == r->nprocs)
			return &res[i];
	}
	return NULL;
}

static void print(struct result *res, int n)
{
	const struct result *w;
	int i, c;

	table("\n3. Free-for-all contention: N processes loop "
	      "acquire(1)/release(1)\n");
	table("   grants/s; ratio = wsem's grants/s / the row's (above 1: the "
	      "row is slower); share = most /\n   fewest grants of one "
	      "process;\n");
	table("   CPU = user+system time of all N processes per grant, ns; "
	      "wait = one acquire, ns;\n   jumps = grants that overtook an "
	      "older sleeping request\n");
	table("   %-18s %2s %2s %10s %7s %8s %7s %10s %10s %16s\n", "", "C",
	      "N", "grants/s", "ratio", "CPU", "share", "wait med",
	      "wait p99", "jumps/grants");
	json_begin("contention");
	json_str("unit", "grants per second; wait ns");
	json_begin_array("rows");
	for (i = 0; i < n; i++) {
		struct result *r = &res[i];
		char jumps[40];
		double q;

		w = wsem_row(res, n, r);
		q = w ? ratio(w->rate, r->rate) : NAN;
		snprintf(jumps, sizeof(jumps), "%llu/%llu",
			 (unsigned long long)r->jumps,
			 (unsigned long long)r->order_grants);
		table("   %-18s %2llu %2d %10.0f %7.2f %8.0f %7.2f %10.0f "
		      "%10.0f %16s%s\n", r->peer->label,
		      (unsigned long long)r->capacity,
		      r->nprocs, r->rate, q, r->cpu, r->share, r->median,
		      r->p99,
		      jumps, r->ok ? "" : "  (failed)");
		json_begin(NULL);
		json_str("peer", r->peer->name);
		json_int("capacity", (long long)r->capacity);
		json_int("procs", r->nprocs);
		json_num("grants_per_s", r->rate);
		json_num("time_ratio_to_wsem", q);
		json_num("cpu_ns_per_grant", r->cpu);
		json_num("cpu_ratio_to_wsem", w ? ratio(r->cpu, w->cpu) : NAN);
		json_num("max_min_share", r->share);
		json_num("wait_median_ns", r->median);
		json_num("wait_p99_ns", r->p99);
		json_int("order_grants", (long long)r->order_grants);
		json_int("jumps", (long long)r->jumps);
		json_bool("ok", r->ok);
		json_end();
	}
	json_end_array();
	json_end();

	/* One block per capacity: N, then grants/s of each peer. */
	for (c = 1; c <= 4; c += 3) {
		plot("# contention-c%d\n", c);
		for (i = 0; i < n; i++) {
			if (res[i].capacity != (uint64_t)c)
				continue;
			plot("%d \"%s\" %.1f %llu\n", res[i].nprocs,
			     res[i].peer->name, res[i].rate,
			     (unsigned long long)res[i].jumps);
		}
		plot("\n\n");
	}
}

void scenario_contention(void)
{
	static const int procs[] = { 2, 4, 8 };
	static const uint64_t caps[] = { 1, 4 };
	const struct peer *const *p;
	struct result res[64];
	int n = 0, c, k;

	for (c = 0; c < 2; c++) {
		for (p = peers; *p; p++) {
			if (caps[c] > 1 && !((*p)->flags & PEER_CAPACITY))
				continue;
			for (k = 0; k < 3; k++) {
				run(*p, procs[k], caps[c], &res[n++]);
			}
		}
	}
	print(res, n);
}
