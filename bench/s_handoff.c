// SPDX-License-Identifier: GPL-2.0
/*
 * Scenario 2: strict hand-off between two processes.
 *
 * wsem needs nothing special: with capacity 1 and both processes looping
 * acquire/release, FIFO makes them alternate.  sem_t, SysV and eventfd get
 * the classic two-semaphore ping-pong (each waits on its own, posts the
 * other's); SysV and flock also run the plain lock loop, where only the
 * grants that change hands count.
 *
 * Both processes run on one CPU as SCHED_BATCH (no wake-up preemption), and
 * before it releases (or posts) a process makes sure the other is asleep in
 * its acquire (or wait): state S in /proc/PID/stat, else it yields the CPU
 * and looks again.  So every hand-off is the same sequence for every peer:
 * the release wakes the other, the releaser blocks in its next acquire, the
 * CPU switches to the other, which returns granted.  Without that, a lock
 * loop alternates only by luck: on one CPU a releaser preempted before its
 * next acquire is not queued, and the other takes the lock again and again
 * alone; on two CPUs the lock is often free and the rate mostly measures
 * how the emulator wakes an idle CPU; rates varied severalfold between
 * identical runs.  The /proc read is not part of the measured latency.
 *
 * A hand-off is a grant to the other process than the last holder; its
 * latency runs from the holder's call to release (or post) to the other's
 * return from acquire (or wait).
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/sem.h>
#include <unistd.h>

#include "bench.h"

#define SECONDS		1.5	/* per variant, over all rounds */
#define ROUNDS		3
#define MAX_SAMPLES	(1u << 16)

enum kind { LOCK, PP_PSEM, PP_SYSV, PP_EFD };

struct variant {
	const char *name;
	const char *label;
	enum kind kind;
	const struct peer *peer;	/* LOCK */
};

/* Shared by the parent and both workers. */
struct ho {
	_Atomic int go;
	_Atomic int phase;		/* 0 warm-up, 1 measure, 2 stop */
	_Atomic int last;		/* last holder, or -1 */
	_Atomic uint64_t last_post;
	uint64_t handoffs[2];
	uint64_t grants[2];
	int failed;
	pid_t pid[2];
	const struct variant *v;
	struct bsem sem;
	sem_t ps[2];
	int semid;
	int efd[2];
	struct samples *lat[2];
};

static int wait_mine(struct ho *x, struct bhandle *h, int me)
{
	struct sembuf op = { .sem_num = (unsigned short)me, .sem_op = -1 };
	uint64_t v;

	switch (x->v->kind) {
	case LOCK:
		return x->v->peer->acquire(h, 1);
	case PP_PSEM:
		return sem_wait(&x->ps[me]);
	case PP_SYSV:
		return semop(x->semid, &op, 1);
	case PP_EFD:
		return read(x->efd[me], &v, sizeof(v)) == sizeof(v) ? 0 : -1;
	}
	return -1;
}

static int post_other(struct ho *x, struct bhandle *h, int me)
{
	struct sembuf op = { .sem_num = (unsigned short)!me, .sem_op = 1 };
	uint64_t v = 1;

	switch (x->v->kind) {
	case LOCK:
		return x->v->peer->release(h, 1);
	case PP_PSEM:
		return sem_post(&x->ps[!me]);
	case PP_SYSV:
		return semop(x->semid, &op, 1);
	case PP_EFD:
		return write(x->efd[!me], &v, sizeof(v)) == sizeof(v) ? 0 : -1;
	}
	return -1;
}

static void worker(void *arg, int me)
{
	struct ho *x = arg;
	struct bhandle h = { 0 };
	int phase, other = -1;
	uint64_t t;

	pin_cpu(0);
	if (batch_sched())
		goto fail;
	if (x->v->kind == LOCK && x->v->peer->attach(&x->sem, &h))
		goto fail;
	futex_wait_for(&x->go, 0);
	for (;;) {
		if (wait_mine(x, &h, me))
			goto fail;
		t = now_ns();
		phase = atomic_load(&x->phase);
		if (phase == 2)
			break;
		if (phase == 1) {
			x->grants[me]++;
			if (atomic_load(&x->last) != me) {
				x->handoffs[me]++;
				samples_add(x->lat[me],
					    t - atomic_load(&x->last_post));
			}
		}
		atomic_store(&x->last, me);
		if (other < 0)
			other = open_task_stat(x->pid[!me]);
		while (task_state(other) != 'S' && atomic_load(&x->phase) < 2)
			sched_yield();
		atomic_store(&x->last_post, now_ns());
		if (post_other(x, &h, me))
			goto fail;
	}
	post_other(x, &h, me);
	close(other);
	if (x->v->kind == LOCK)
		x->v->peer->detach(&h);
	return;
fail:
	x->failed = 1;
	_exit(1);
}

static int setup(struct ho *x)
{
	switch (x->v->kind) {
	case LOCK:
		return x->v->peer->create(&x->sem, 1);
	case PP_PSEM:
		return sem_init(&x->ps[0], 1, 1) || sem_init(&x->ps[1], 1, 0);
	case PP_SYSV:
		x->semid = semget(IPC_PRIVATE, 2, IPC_CREAT | 0600);
		return x->semid < 0 || semctl(x->semid, 0, SETVAL, 1);
	case PP_EFD:
		x->efd[0] = eventfd(1, EFD_SEMAPHORE);
		x->efd[1] = eventfd(0, EFD_SEMAPHORE);
		return x->efd[0] < 0 || x->efd[1] < 0;
	}
	return -1;
}

static void teardown(struct ho *x)
{
	switch (x->v->kind) {
	case LOCK:
		x->v->peer->destroy(&x->sem);
		break;
	case PP_PSEM:
		sem_destroy(&x->ps[0]);
		sem_destroy(&x->ps[1]);
		break;
	case PP_SYSV:
		semctl(x->semid, 0, IPC_RMID);
		break;
	case PP_EFD:
		close(x->efd[0]);
		close(x->efd[1]);
		break;
	}
}

/* Accumulated over the rounds. */
struct result {
	double rate, median, p99;
	uint64_t handoffs, grants, ns;
	struct samples *lat;
	bool failed;
};

/* One run of @v for @ns nanoseconds, added to @res. */
static int run(const struct variant *v, struct result *res, uint64_t ns)
{
	size_t lsize = sizeof(struct samples) + MAX_SAMPLES * sizeof(uint64_t);
	struct ho *x = shared_alloc(sizeof(*x));
	uint64_t t0, t1;
	pid_t pids[2];
	int i, ret;

	x->v = v;
	atomic_store(&x->last, -1);
	for (i = 0; i < 2; i++)
		x->lat[i] = samples_new(MAX_SAMPLES, true);
	ret = setup(x);
	if (ret) {
		progress("handoff: %s: setup failed", v->name);
		goto out;
	}
	for (i = 0; i < 2; i++)
		x->pid[i] = pids[i] = spawn(worker, x, i);
	atomic_store(&x->go, 1);
	futex_wake_all(&x->go);
	sleep_ns(run_ns(0.05));
	t0 = now_ns();
	atomic_store(&x->phase, 1);
	sleep_ns(ns);
	atomic_store(&x->phase, 2);
	t1 = now_ns();
	ret = reap(pids, 2, 30 * NSEC_PER_SEC);
	if (!ret && x->failed)
		ret = -1;
	teardown(x);
	res->handoffs += x->handoffs[0] + x->handoffs[1];
	res->grants += x->grants[0] + x->grants[1];
	res->ns += t1 - t0;
	for (i = 0; i < 2; i++)
		samples_merge(res->lat, x->lat[i]);
out:
	for (i = 0; i < 2; i++)
		shared_free(x->lat[i], lsize);
	shared_free(x, sizeof(*x));
	return ret;
}

void scenario_handoff(void)
{
	static const char *const lock_peers[] = { "sysv", "flock" };
	struct variant vs[8] = {
		{ "wsem", "wsem (capacity 1, lock loop)", LOCK, &peer_wsem },
		{ "sem_t-pingpong", "sem_t ping-pong", PP_PSEM, NULL },
		{ "sysv-pingpong", "SysV ping-pong (2 sems)", PP_SYSV, NULL },
		{ "eventfd-pingpong", "eventfd ping-pong (2 fds)", PP_EFD,
		  NULL },
	};
	struct result res[8], warm = { 0 };
	const struct peer *const *p;
	int n = 4, i, j, k;

	for (j = 0; j < 2; j++) {
		for (p = peers; *p; p++) {
			if (strcmp((*p)->name, lock_peers[j]))
				continue;
			vs[n].kind = LOCK;
			vs[n].peer = *p;
			vs[n].name = j ? "flock-lock" : "sysv-lock";
			vs[n].label = j ? "flock (lock loop)" :
					  "SysV+UNDO (lock loop)";
			n++;
		}
	}
	/*
	 * The variants take turns in ROUNDS rounds, after one run that only
	 * warms up (whatever ran first was often slower).
	 */
	memset(res, 0, sizeof(res));
	warm.lat = samples_new(MAX_SAMPLES, false);
	run(&vs[0], &warm, run_ns(SECONDS / ROUNDS));
	samples_free(warm.lat);
	for (i = 0; i < n; i++)
		res[i].lat = samples_new(MAX_SAMPLES, false);
	for (k = 0; k < ROUNDS; k++) {
		for (i = 0; i < n; i++) {
			if (run(&vs[i], &res[i], run_ns(SECONDS / ROUNDS)))
				res[i].failed = true;
		}
	}
	for (i = 0; i < n; i++) {
		struct result *r = &res[i];

		r->rate = r->ns ? (double)r->handoffs * NSEC_PER_SEC /
				  (double)r->ns : 0;
		r->median = samples_pct(r->lat, 50);
		r->p99 = samples_pct(r->lat, 99);
		progress("handoff: %-16s %.0f hand-offs/s, median %.0f ns%s",
			 vs[i].name, r->rate, r->median,
			 r->failed ? " (failed)" : "");
	}

	table("\n2. Strict hand-off between two processes (one CPU, "
	      "SCHED_BATCH)\n");
	table("   hand-offs/s; latency = release -> other's grant, ns; "
	      "ratio = peer / wsem (rate)\n");
	table("   %-28s %10s %10s %10s %8s %9s\n", "", "handoff/s", "median",
	      "p99", "ratio", "alternate");
	plot("# handoff\n");
	json_begin("handoff");
	json_str("unit", "hand-offs per second; latency ns");
	json_str("placement", "both processes on one CPU, SCHED_BATCH");
	json_begin_array("rows");
	for (i = 0; i < n; i++) {
		struct result *r = &res[i];
		double q = ratio(r->rate, res[0].rate);
		double alt = r->grants ? (double)r->handoffs / r->grants : 0;

		table("   %-28s %10.0f %10.0f %10.0f %8.2f %8.0f%%%s\n",
		      vs[i].label, r->rate, r->median, r->p99, q, 100 * alt,
		      r->failed ? "  (failed)" : "");
		plot("%d \"%s\" %.1f %.1f %.1f %.4f\n", i, vs[i].name,
		     r->rate, r->median, r->p99, q);
		json_begin(NULL);
		json_str("peer", vs[i].name);
		json_num("handoffs_per_s", r->rate);
		json_num("median_ns", r->median);
		json_num("p99_ns", r->p99);
		json_num("ratio_to_wsem", q);
		json_int("handoffs", (long long)r->handoffs);
		json_int("grants", (long long)r->grants);
		json_bool("ok", !r->failed);
		json_end();
	}
	json_end_array();
	json_end();
	plot("\n\n");
	for (i = 0; i < n; i++)
		samples_free(res[i].lat);
}
