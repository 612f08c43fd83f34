// SPDX-License-Identifier: GPL-2.0
/*
 * Scenario 14: fairness with a gang.  Two semaphores A and B of capacity
 * CAP; SMALL processes loop acquire(1)/release(1), half on A and half on
 * B, while one more process loops a request for all of both (CAP on A and
 * CAP on B) and its release: how long does that request wait?
 *
 * Rows:
 *   wsem gang       wsem_acquire_many() of CAP on A and CAP on B, two
 *                   separate semaphores
 *   wsem gang, tree the same with A and B children of one root of
 *                   capacity 2 * CAP (one lock, one queue)
 *   wsem one by one acquire(CAP) on A, then acquire(CAP) on B: not atomic,
 *                   A stays full while the request waits for B
 *   SysV            one set of two semaphores; the small ones semop() one
 *                   of them, the big one semop()s -CAP on both in one call
 *                   (atomic), all with SEM_UNDO.  SysV keeps no order
 *                   among waiters: the small ones may pass it for ever.
 *
 * A request still waiting at the end of the window counts with the time
 * it had waited by then (a lower bound on its wait); if that is more than
 * half the window the row is marked "starved", and a row whose big request
 * never got through in the whole window says so.  CPU = the user + system
 * time of all SMALL + 1 processes over the window, per grant (small and
 * big alike).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/sem.h>
#include <unistd.h>

#include <wsem.h>

#include "bench.h"

#define CAP		4
#define SMALL		6
#define SECONDS		3.0
#define MAX_SAMPLES	(1u << 14)

enum mode { GANG, GANG_TREE, ONE_BY_ONE, SYSV, NMODES };

static const struct {
	const char *name;
	const char *label;
} modes[NMODES] = {
	[GANG] = { "wsem-gang", "wsem gang" },
	[GANG_TREE] = { "wsem-gang-tree", "wsem gang, one tree" },
	[ONE_BY_ONE] = { "wsem-one-by-one", "wsem one by one" },
	[SYSV] = { "sysv", "SysV semop, one set" },
};

struct gfair {
	_Atomic int go;
	_Atomic int stop;
	_Atomic uint64_t waiting_since;	/* of the big request, or 0 */
	enum mode mode;
	int fd[2];		/* wsem: A and B */
	int root;		/* wsem tree: their parent, or -1 */
	int semid;		/* SysV */
	uint64_t big_grants;
	uint64_t max_wait;
	uint64_t small_grants[SMALL];
	int failed;
	struct samples *wait;
};

static int sysv_op(int semid, struct sembuf *ops, size_t n)
{
	int r;

	do
		r = semop(semid, ops, n);
	while (r < 0 && errno == EINTR);
	return r;
}

/* Take (@take) or give back @w on the semaphores of @which (bit 0: A,
 * bit 1: B). */
static int op(struct gfair *x, const int *fd, int which, uint64_t w,
	      bool take)
{
	static const uint64_t both[2] = { CAP, CAP };
	struct sembuf ops[2];
	int n = 0, i;

	if (x->mode == SYSV) {
		for (i = 0; i < 2; i++) {
			if (!(which & (1 << i)))
				continue;
			ops[n].sem_num = (unsigned short)i;
			ops[n].sem_op = (short)(take ? -(int)w : (int)w);
			ops[n].sem_flg = SEM_UNDO;
			n++;
		}
		return sysv_op(x->semid, ops, (size_t)n);
	}
	if (take && which == 3 && x->mode != ONE_BY_ONE)
		return wsem_acquire_many(fd, both, 2, -1);
	for (i = 0; i < 2; i++) {
		if (!(which & (1 << i)))
			continue;
		if (take ? wsem_acquire(fd[i], w) : wsem_release(fd[i], w))
			return -1;
	}
	return 0;
}

static void worker(void *arg, int idx)
{
	struct gfair *x = arg;
	bool big = idx == SMALL;
	int which = big ? 3 : 1 << (idx & 1), fd[2] = { -1, -1 }, i;
	uint64_t w = big ? CAP : 1, t0;

	if (x->mode != SYSV) {
		for (i = 0; i < 2; i++) {
			fd[i] = wsem_reopen(x->fd[i], O_CLOEXEC);
			if (fd[i] < 0)
				goto fail;
		}
	}
	futex_wait_for(&x->go, 0);
	while (!atomic_load(&x->stop)) {
		t0 = now_ns();
		if (big)
			atomic_store(&x->waiting_since, t0);
		if (op(x, fd, which, w, true))
			goto fail;
		if (big) {
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
		if (op(x, fd, which, w, false))
			goto fail;
	}
	for (i = 0; i < 2; i++) {
		if (fd[i] >= 0)
			close(fd[i]);
	}
	return;
fail:
	x->failed = 1;
	_exit(1);
}

struct result {
	enum mode mode;
	double median, p99, max, small_rate, cpu;	/* cpu: ns per grant */
	uint64_t big_grants;
	bool starved, never, ok, skipped;
};

static int create(struct gfair *x)
{
	int i;

	x->fd[0] = x->fd[1] = x->root = x->semid = -1;
	if (x->mode == SYSV) {
		x->semid = semget(IPC_PRIVATE, 2, IPC_CREAT | 0600);
		if (x->semid < 0)
			return -1;
		for (i = 0; i < 2; i++) {
			if (semctl(x->semid, i, SETVAL, CAP))
				return -1;
		}
		return 0;
	}
	if (x->mode == GANG_TREE) {
		x->root = wsem_open_anon(2 * CAP, O_CLOEXEC);
		if (x->root < 0)
			return -1;
	}
	for (i = 0; i < 2; i++) {
		if (x->root >= 0)
			x->fd[i] = wsem_open_child(x->root, NULL,
						   O_RDWR | O_CLOEXEC, 0, CAP);
		else
			x->fd[i] = wsem_open_anon(CAP, O_CLOEXEC);
		if (x->fd[i] < 0)
			return -1;
	}
	return 0;
}

static void destroy(struct gfair *x)
{
	int i;

	if (x->semid >= 0)
		semctl(x->semid, 0, IPC_RMID);
	for (i = 0; i < 2; i++) {
		if (x->fd[i] >= 0)
			close(x->fd[i]);
	}
	if (x->root >= 0)
		close(x->root);
}

static void run(enum mode mode, struct result *r)
{
	struct gfair *x = shared_alloc(sizeof(*x));
	pid_t pids[SMALL + 1];
	uint64_t t0, t1, c0, c1, since, small = 0, window = run_ns(SECONDS);
	int i;

	memset(r, 0, sizeof(*r));
	r->mode = mode;
	x->mode = mode;
	x->wait = samples_new(MAX_SAMPLES, true);
	if (create(x)) {
		progress("gangfair: %s: create failed", modes[mode].name);
		destroy(x);
		r->skipped = true;
		goto out;
	}
	for (i = 0; i <= SMALL; i++)
		pids[i] = spawn(worker, x, i);
	c0 = cpu_ns_all(pids, SMALL + 1);
	t0 = now_ns();
	atomic_store(&x->go, 1);
	futex_wake_all(&x->go);
	sleep_ns(window);
	atomic_store(&x->stop, 1);
	t1 = now_ns();
	c1 = cpu_ns_all(pids, SMALL + 1);
	since = atomic_load(&x->waiting_since);
	r->ok = !reap(pids, SMALL + 1, 60 * NSEC_PER_SEC) && !x->failed;
	destroy(x);

	for (i = 0; i < SMALL; i++)
		small += x->small_grants[i];
	r->small_rate = (double)small * NSEC_PER_SEC / (double)(t1 - t0);
	r->big_grants = x->big_grants;
	r->never = !x->big_grants;
	r->cpu = per_op(c1 - c0, small + x->big_grants);
	r->median = samples_pct(x->wait, 50);
	r->p99 = samples_pct(x->wait, 99);
	r->max = (double)x->max_wait;
	/* Still waiting at the end: count what it waited by then. */
	if (since && t1 > since && (double)(t1 - since) > r->max) {
		r->max = (double)(t1 - since);
		r->starved = t1 - since > window / 2;
	}
	if (r->never)
		r->median = r->p99 = __builtin_nan("");
out:
	shared_free(x->wait, sizeof(struct samples) +
		    MAX_SAMPLES * sizeof(uint64_t));
	shared_free(x, sizeof(*x));
}

void scenario_gangfair(void)
{
	struct result res[NMODES];
	int i;

	for (i = 0; i < NMODES; i++) {
		run((enum mode)i, &res[i]);
		progress("gangfair: %-16s big grants: %llu, max %.0f ns%s%s",
			 modes[i].name, (unsigned long long)res[i].big_grants,
			 res[i].max, res[i].starved ? " (starved)" : "",
			 res[i].never ? " (never granted)" : "");
	}
	if (res[GANG].skipped) {
		table("\n14. Fairness with a gang: skipped (no gangs)\n");
		return;
	}

	table("\n14. Fairness with a gang: %d processes loop acquire(1), half "
	      "on A, half on B (capacity %d\n    each), one loops a request "
	      "for all of both (%d on A and %d on B); window %.1f s\n",
	      SMALL, CAP, CAP, CAP, SECONDS * opt.scale);
	table("   waits of the big request, ns; ratio = row / wsem gang "
	      "(largest wait); small/s = grants/s of\n   the acquire(1)s; "
	      "CPU = user+system time of all %d processes per grant, ns; "
	      "CPU rat = row's / gang's\n", SMALL + 1);
	table("   %-20s %7s %10s %10s %12s %8s %10s %8s %7s\n", "", "grants",
	      "median", "p99", "largest", "ratio", "small/s", "CPU",
	      "CPU rat");
	plot("# gangfair\n");
	json_begin("gangfair");
	json_str("unit", "wait of the request for all of A and B, ns");
	json_int("capacity", CAP);
	json_int("small_procs", SMALL);
	json_num("seconds", SECONDS * opt.scale);
	json_begin_array("rows");
	for (i = 0; i < NMODES; i++) {
		struct result *r = &res[i];
		double q = ratio(r->max, res[GANG].max);
		double qc = ratio(r->cpu, res[GANG].cpu);

		if (r->skipped) {
			table("   %-20s skipped (create failed)\n",
			      modes[i].label);
			continue;
		}
		table("   %-20s %7llu %10.0f %10.0f %12.0f %8.1f %10.0f %8.0f "
		      "%7.2f%s%s\n", modes[i].label,
		      (unsigned long long)r->big_grants, r->median, r->p99,
		      r->max, q, r->small_rate, r->cpu, qc,
		      r->never ? "  never got through in the window "
				 "(largest = the window, a lower bound)" :
		      r->starved ? "  starved (still waiting at the end)" : "",
		      r->ok ? "" : " (failed)");
		plot("%d \"%s\" %.1f %.1f %.1f %.4f\n", i, modes[i].name,
		     r->median, r->p99, r->max, q);
		json_begin(NULL);
		json_str("row", modes[i].name);
		json_int("big_grants", (long long)r->big_grants);
		json_num("median_ns", r->median);
		json_num("p99_ns", r->p99);
		json_num("largest_ns", r->max);
		json_num("ratio_to_wsem_gang", q);
		json_bool("starved", r->starved);
		json_bool("never_granted", r->never);
		json_num("small_grants_per_s", r->small_rate);
		json_num("cpu_ns_per_grant", r->cpu);
		json_num("cpu_ratio_to_wsem_gang", qc);
		json_bool("ok", r->ok);
		json_end();
	}
	json_end_array();
	json_end();
	plot("\n\n");
	metric("gangfair.largest_wait_ms", "gangfair: wsem gang, largest wait, ms",
	       res[GANG].max / 1e6);
	metric("gangfair.sysv_per_gang", "gangfair: SysV / wsem gang, largest wait",
	       ratio(res[SYSV].max, res[GANG].max));
}
