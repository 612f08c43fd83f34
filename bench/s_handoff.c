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
 *
 * The same variants then run in two more placements, where nobody looks
 * at the other's state and both run under the normal scheduler:
 *
 *   unpinned  both processes free-running on all CPUs, as two real
 *             processes sharing a lock would.  The scheduler often puts
 *             them on one CPU (wake-affine), where a woken holder
 *             preempts the releaser before it queues again, and a lock
 *             loop then runs alone for a time slice: "alt" (grants that
 *             changed hands) and "same CPU" (hand-offs where the releaser
 *             and the grantee ran on one CPU) show it.
 *   spread    one process pinned on each of two CPUs, normal scheduling:
 *             every hand-off crosses CPUs, so a grant is a remote wake-up
 *             while the releaser goes on to its next acquire, and a woken
 *             waiter that has to retake a lock the releaser holds stalls.
 *
 * These rates depend on how the emulator runs its vCPUs and vary more:
 * each round's ratio of wsem to the sem_t ping-pong (both measured in that
 * round) is reported too, with the median and range over the rounds.
 *
 * A waiter at the head of wsem's queue polls for its grant a moment before
 * it sleeps when its CPU has nothing else to run (module parameter
 * spin_ns); where the holder runs on another CPU, the hand-off then needs
 * no sleep and no wake-up.  The row "wsem, no poll" runs with spin_ns set
 * to 0, to show what that is worth; it is left out where the parameter
 * cannot be written (not root, or a module without it).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/sem.h>
#include <unistd.h>

#include "bench.h"

#define MAX_ROUNDS	5
#define MAX_VARIANTS	8
#define MAX_SAMPLES	(1u << 16)

enum kind { LOCK, PP_PSEM, PP_SYSV, PP_EFD };

enum placement { PINNED, UNPINNED, SPREAD, NPLACEMENTS };

static const struct place {
	const char *name;	/* metric keys */
	const char *key;	/* JSON and plot block */
	const char *label;
	int rounds;
	double seconds;		/* per variant, over all rounds */
} places[NPLACEMENTS] = {
	[PINNED] = { "pinned", "handoff",
		     "pinned: both on one CPU, SCHED_BATCH, strict turns",
		     3, 1.5 },
	[UNPINNED] = { "unpinned", "handoff_unpinned",
		       "unpinned: free-running, normal scheduling, all CPUs",
		       5, 2.0 },
	[SPREAD] = { "spread", "handoff_spread",
		     "spread: one process pinned on each of two CPUs, "
		     "normal scheduling", 5, 2.0 },
};

struct variant {
	const char *name;
	const char *label;
	enum kind kind;
	const struct peer *peer;	/* LOCK */
	bool no_poll;			/* with wsem's spin_ns at 0 */
};

/* Shared by the parent and both workers. */
struct ho {
	_Atomic int go;
	_Atomic int phase;		/* 0 warm-up, 1 measure, 2 stop */
	_Atomic int last;		/* last holder, or -1 */
	_Atomic uint64_t last_post;
	_Atomic int post_cpu;		/* where the last release ran */
	enum placement place;
	uint64_t handoffs[2];
	uint64_t same_cpu[2];		/* hand-offs within one CPU */
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

/* Pinned: wait until the other process sleeps in its acquire (or wait). */
static void wait_asleep(struct ho *x, int *statfd, int me)
{
	if (*statfd < 0)
		*statfd = open_task_stat(x->pid[!me]);
	while (task_state(*statfd) != 'S' && atomic_load(&x->phase) < 2)
		sched_yield();
}

static void worker(void *arg, int me)
{
	struct ho *x = arg;
	struct bhandle h = { 0 };
	int phase, other = -1;
	uint64_t t;

	if (x->place == PINNED && batch_sched())
		goto fail;
	if (x->place != UNPINNED)
		pin_cpu(x->place == SPREAD ? me : 0);
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
				x->same_cpu[me] += sched_getcpu() ==
						   atomic_load(&x->post_cpu);
				samples_add(x->lat[me],
					    t - atomic_load(&x->last_post));
			}
		}
		atomic_store(&x->last, me);
		if (x->place == PINNED)
			wait_asleep(x, &other, me);
		atomic_store(&x->post_cpu, sched_getcpu());
		atomic_store(&x->last_post, now_ns());
		if (post_other(x, &h, me))
			goto fail;
	}
	post_other(x, &h, me);
	if (other >= 0)
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
	uint64_t handoffs, grants, same_cpu, ns;
	uint64_t cpu;		/* both processes, ns */
	double round_rate[MAX_ROUNDS];
	struct samples *lat;
	bool failed;
};

/* One run of @v for @ns nanoseconds, added to @res as round @round. */
static int run(const struct variant *v, enum placement place,
	       struct result *res, int round, uint64_t ns)
{
	size_t lsize = sizeof(struct samples) + MAX_SAMPLES * sizeof(uint64_t);
	struct ho *x = shared_alloc(sizeof(*x));
	uint64_t t0, t1, c0, c1;
	char spin[32];
	pid_t pids[2];
	int i, ret;

	x->v = v;
	x->place = place;
	atomic_store(&x->last, -1);
	for (i = 0; i < 2; i++)
		x->lat[i] = samples_new(MAX_SAMPLES, true);
	if (v->no_poll && (spin_read(spin, sizeof(spin)) || spin_set("0"))) {
		ret = -1;
		goto out;
	}
	ret = setup(x);
	if (ret) {
		progress("handoff: %s: setup failed", v->name);
		goto spin;
	}
	for (i = 0; i < 2; i++)
		x->pid[i] = pids[i] = spawn(worker, x, i);
	atomic_store(&x->go, 1);
	futex_wake_all(&x->go);
	sleep_ns(run_ns(0.05));
	c0 = cpu_ns_all(pids, 2);
	t0 = now_ns();
	atomic_store(&x->phase, 1);
	sleep_ns(ns);
	atomic_store(&x->phase, 2);
	t1 = now_ns();
	c1 = cpu_ns_all(pids, 2);
	ret = reap(pids, 2, 30 * NSEC_PER_SEC);
	if (!ret && x->failed)
		ret = -1;
	teardown(x);
	res->handoffs += x->handoffs[0] + x->handoffs[1];
	res->grants += x->grants[0] + x->grants[1];
	res->same_cpu += x->same_cpu[0] + x->same_cpu[1];
	res->ns += t1 - t0;
	res->cpu += c1 - c0;
	if (round >= 0 && round < MAX_ROUNDS)
		res->round_rate[round] = (double)(x->handoffs[0] +
			x->handoffs[1]) * NSEC_PER_SEC / (double)(t1 - t0);
	for (i = 0; i < 2; i++)
		samples_merge(res->lat, x->lat[i]);
spin:
	if (v->no_poll && spin_set(spin))
		ret = -1;
out:
	for (i = 0; i < 2; i++)
		shared_free(x->lat[i], lsize);
	shared_free(x, sizeof(*x));
	return ret;
}

/* The variants: wsem first, the sem_t ping-pong second; their number. */
static int variants(struct variant *vs)
{
	static const char *const lock_peers[] = { "sysv", "flock" };
	static const struct variant fixed[] = {
		{ .name = "wsem", .label = "wsem (capacity 1, lock loop)",
		  .kind = LOCK, .peer = &peer_wsem },
		{ .name = "sem_t-pingpong", .label = "sem_t ping-pong",
		  .kind = PP_PSEM },
		{ .name = "sysv-pingpong", .label = "SysV ping-pong (2 sems)",
		  .kind = PP_SYSV },
		{ .name = "eventfd-pingpong",
		  .label = "eventfd ping-pong (2 fds)", .kind = PP_EFD },
	};
	const struct peer *const *p;
	char spin[32];
	int n = 4, j;

	memcpy(vs, fixed, sizeof(fixed));
	/* Whether spin_ns can be written: write back the value it has. */
	if (!spin_read(spin, sizeof(spin)) && !spin_set(spin))
		vs[n++] = (struct variant){
			.name = "wsem-no-poll",
			.label = "wsem, no poll (spin_ns 0)",
			.kind = LOCK, .peer = &peer_wsem, .no_poll = true,
		};
	for (j = 0; j < 2; j++) {
		for (p = peers; *p; p++) {
			if (strcmp((*p)->name, lock_peers[j]))
				continue;
			vs[n++] = (struct variant){
				.name = j ? "flock-lock" : "sysv-lock",
				.label = j ? "flock (lock loop)" :
					     "SysV+UNDO (lock loop)",
				.kind = LOCK, .peer = *p,
			};
		}
	}
	return n;
}

/*
 * The @n variants take turns in the rounds of @place, after one run that
 * only warms up (whatever ran first was often slower).
 */
static void measure(const struct variant *vs, int n, enum placement place,
		    struct result *res)
{
	const struct place *pl = &places[place];
	uint64_t slice = run_ns(pl->seconds / pl->rounds);
	struct result warm = { 0 };
	int i, k;

	memset(res, 0, sizeof(*res) * (size_t)n);
	warm.lat = samples_new(MAX_SAMPLES, false);
	run(&vs[0], place, &warm, -1, slice);
	samples_free(warm.lat);
	for (i = 0; i < n; i++)
		res[i].lat = samples_new(MAX_SAMPLES, false);
	for (k = 0; k < pl->rounds; k++) {
		for (i = 0; i < n; i++) {
			if (run(&vs[i], place, &res[i], k, slice))
				res[i].failed = true;
		}
	}
	for (i = 0; i < n; i++) {
		struct result *r = &res[i];

		r->rate = r->ns ? (double)r->handoffs * NSEC_PER_SEC /
				  (double)r->ns : 0;
		r->median = samples_pct(r->lat, 50);
		r->p99 = samples_pct(r->lat, 99);
		progress("handoff %-8s %-16s %.0f hand-offs/s, median %.0f ns, "
			 "CPU %.0f ns per hand-off%s", pl->name, vs[i].name,
			 r->rate, r->median, per_op(r->cpu, r->handoffs),
			 r->failed ? " (failed)" : "");
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/*
 * wsem's time per hand-off over the sem_t ping-pong's (its rate over
 * wsem's), round by round: the median and
 * range in @q[0..2]; the ratio of the totals is returned.
 */
static double wsem_per_psem(const struct result *res, int rounds, double *q)
{
	double r[MAX_ROUNDS];
	int k;

	for (k = 0; k < rounds; k++)
		r[k] = ratio(res[1].round_rate[k], res[0].round_rate[k]);
	qsort(r, (size_t)rounds, sizeof(r[0]), cmp_double);
	q[0] = rounds % 2 ? r[rounds / 2] :
			    (r[rounds / 2 - 1] + r[rounds / 2]) / 2;
	q[1] = r[0];
	q[2] = r[rounds - 1];
	return ratio(res[1].rate, res[0].rate);
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0;
}

static void print_json(const struct variant *vs, const struct result *res,
		       int n, enum placement place, const double *q,
		       double total)
{
	int i;

	json_begin(places[place].key);
	json_str("unit", "hand-offs per second; latency ns");
	json_str("placement", places[place].label);
	json_num("time_wsem_per_sem_t_pingpong", total);
	json_num("time_wsem_per_sem_t_pingpong_round_median", q[0]);
	json_num("time_wsem_per_sem_t_pingpong_round_min", q[1]);
	json_num("time_wsem_per_sem_t_pingpong_round_max", q[2]);
	json_begin_array("rows");
	for (i = 0; i < n; i++) {
		const struct result *r = &res[i];

		json_begin(NULL);
		json_str("peer", vs[i].name);
		json_num("handoffs_per_s", r->rate);
		json_num("median_ns", r->median);
		json_num("p99_ns", r->p99);
		json_num("time_ratio_to_wsem", ratio(res[0].rate, r->rate));
		json_num("cpu_ns_per_handoff", per_op(r->cpu, r->handoffs));
		json_num("cpu_ratio_to_wsem",
			 ratio(per_op(r->cpu, r->handoffs),
			       per_op(res[0].cpu, res[0].handoffs)));
		json_num("cpus_busy", (double)r->cpu / (double)r->ns);
		json_int("handoffs", (long long)r->handoffs);
		json_int("grants", (long long)r->grants);
		json_int("same_cpu_handoffs", (long long)r->same_cpu);
		json_bool("ok", !r->failed);
		json_end();
	}
	json_end_array();
	json_end();
}

/* The plot data: the pinned block is plot.gp's "handoff". */
static void print_plot(const struct variant *vs, const struct result *res,
		       int n, enum placement place)
{
	int i;

	plot("# %s\n", place == PINNED ? "handoff" : places[place].name);
	for (i = 0; i < n; i++) {
		const struct result *r = &res[i];

		plot("%d \"%s\" %.1f %.1f %.1f %.4f\n", i, vs[i].name,
		     r->rate, r->median, r->p99, ratio(res[0].rate, r->rate));
	}
	plot("\n\n");
}

static void print_table(const struct variant *vs, const struct result *res,
			int n, enum placement place)
{
	int i;

	table("   %s\n", places[place].label);
	for (i = 0; i < n; i++) {
		const struct result *r = &res[i];

		table("   %-28s %10.0f %10.0f %10.0f %7.2f %8.0f %5.2f "
		      "%6.0f%% %6.0f%%%s\n",
		      vs[i].label, r->rate, r->median, r->p99,
		      ratio(res[0].rate, r->rate),
		      per_op(r->cpu, r->handoffs),
		      r->ns ? (double)r->cpu / (double)r->ns : 0,
		      pct(r->handoffs, r->grants),
		      pct(r->same_cpu, r->handoffs),
		      r->failed ? "  (failed)" : "");
	}
}

/* The "wsem, no poll" row, or -1. */
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

static void headline(const struct variant *vs, const struct result *res,
		     int n, enum placement place, double total)
{
	const char *name = places[place].name;
	char key[64], label[96];
	int i;

	snprintf(key, sizeof(key), "handoff.%s.wsem", name);
	snprintf(label, sizeof(label), "hand-off %s: wsem hand-offs/s", name);
	metric(key, label, res[0].rate);
	snprintf(key, sizeof(key), "handoff.%s.sem_t", name);
	snprintf(label, sizeof(label), "hand-off %s: sem_t ping-pong "
		 "hand-offs/s", name);
	metric(key, label, res[1].rate);
	snprintf(key, sizeof(key), "handoff.%s.ratio", name);
	snprintf(label, sizeof(label), "hand-off %s: wsem / sem_t ping-pong, "
		 "time per hand-off", name);
	metric(key, label, total);
	snprintf(key, sizeof(key), "handoff.%s.latency", name);
	snprintf(label, sizeof(label), "hand-off %s: wsem latency, median ns",
		 name);
	metric(key, label, res[0].median);
	snprintf(key, sizeof(key), "handoff.%s.cpu", name);
	snprintf(label, sizeof(label), "hand-off %s: wsem CPU per hand-off, ns",
		 name);
	metric(key, label, per_op(res[0].cpu, res[0].handoffs));
	snprintf(key, sizeof(key), "handoff.%s.cpu_per_sem_t", name);
	snprintf(label, sizeof(label), "hand-off %s: wsem / sem_t ping-pong, "
		 "CPU per hand-off", name);
	metric(key, label, ratio(per_op(res[0].cpu, res[0].handoffs),
				 per_op(res[1].cpu, res[1].handoffs)));
	i = no_poll_row(vs, res, n);
	if (i < 0)
		return;
	snprintf(key, sizeof(key), "handoff.%s.no_poll_ratio", name);
	snprintf(label, sizeof(label), "hand-off %s: wsem without the "
		 "poll / sem_t ping-pong, time", name);
	metric(key, label, ratio(res[1].rate, res[i].rate));
	snprintf(key, sizeof(key), "handoff.%s.poll_cpu", name);
	snprintf(label, sizeof(label), "hand-off %s: wsem / wsem no poll, "
		 "CPU per hand-off", name);
	metric(key, label, ratio(per_op(res[0].cpu, res[0].handoffs),
				 per_op(res[i].cpu, res[i].handoffs)));
}

/*
 * The comparison that does not lean on the poll: wsem without it against
 * the sem_t ping-pong; beside it what the poll buys (wsem / no poll, rate)
 * and what it costs (wsem / no poll, CPU per hand-off).
 */
static void print_no_poll(const struct variant *vs,
			  struct result (*res)[MAX_VARIANTS], int n)
{
	const struct result *w, *np;
	int p, k = no_poll_row(vs, res[0], n);

	if (k < 0)
		return;
	table("   without the poll: %-19s %10s %10s %10s\n", "",
	      "no poll /", "poll's", "poll's");
	table("   %-38s %10s %10s %10s\n", "", "sem_t", "time", "CPU");
	for (p = 0; p < NPLACEMENTS; p++) {
		w = &res[p][0];
		np = &res[p][k];
		table("   %-38s %10.2f %10.2f %10.2f\n", places[p].name,
		      ratio(res[p][1].rate, np->rate), ratio(np->rate, w->rate),
		      ratio(per_op(w->cpu, w->handoffs),
			    per_op(np->cpu, np->handoffs)));
	}
	table("   (no poll / sem_t: time per hand-off, wsem with spin_ns 0 / "
	      "sem_t ping-pong; poll's time:\n    wsem / no poll, time per "
	      "hand-off; poll's CPU: wsem / no poll, CPU per hand-off)\n");
}

void scenario_handoff(void)
{
	struct variant vs[MAX_VARIANTS];
	struct result res[NPLACEMENTS][MAX_VARIANTS];
	double q[NPLACEMENTS][3], total[NPLACEMENTS];
	int n = variants(vs), i, p;

	for (p = 0; p < NPLACEMENTS; p++) {
		measure(vs, n, p, res[p]);
		total[p] = wsem_per_psem(res[p], places[p].rounds, q[p]);
	}
	table("\n2. Strict hand-off between two processes, in three "
	      "placements\n");
	table("   hand-offs/s; latency = release -> other's grant, ns; ratio = "
	      "wsem's rate / the row's\n   (above 1: the row is slower); CPU = user+system time of both "
	      "processes per hand-off, ns; busy = CPUs they kept busy;\n"
	      "   alt = grants that changed hands; "
	      "same CPU = hand-offs within one CPU\n");
	table("   %-28s %10s %10s %10s %7s %8s %5s %7s %7s\n", "", "handoff/s",
	      "median", "p99", "ratio", "CPU", "busy", "alt", "sameCPU");
	for (p = 0; p < NPLACEMENTS; p++)
		print_table(vs, res[p], n, p);
	table("   wsem / sem_t ping-pong, time per hand-off: %5s %10s %10s "
	      "%10s\n", "all rounds", "round med", "round min", "round max");
	for (p = 0; p < NPLACEMENTS; p++)
		table("   %-38s %10.2f %10.2f %10.2f %10.2f\n", places[p].name,
		      total[p], q[p][0], q[p][1], q[p][2]);
	print_no_poll(vs, res, n);
	for (p = 0; p < NPLACEMENTS; p++) {
		print_plot(vs, res[p], n, p);
		print_json(vs, res[p], n, p, q[p], total[p]);
		headline(vs, res[p], n, p, total[p]);
	}
	for (p = 0; p < NPLACEMENTS; p++) {
		for (i = 0; i < n; i++)
			samples_free(res[p][i].lat);
	}
}
