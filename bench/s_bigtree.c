// SPDX-License-Identifier: GPL-2.0
/*
 * Scenarios 15 and 16: what a large tree and a long queue cost the
 * operations that change them.
 *
 * Scenario 15 (bigtree): does reading a large tree hold up its acquires?
 *
 * A root of capacity NKIDS + CAP has NKIDS anonymous children, each held
 * at 1 by its own handle (max_tree_size raised for the run, as root), so
 * the root's holders view (wsem_holders_children()) has NKIDS entries.
 * One process, pinned to CPU 0, times the uncontended acquire(1) +
 * release(1) pair on the root, one pair a sample; a second process,
 * pinned to CPU 1, reads that view in a loop or waits.  The rows take
 * turns in ROUNDS rounds: no reader, then the reader reading.  A view
 * that held the tree's lock for all its entries would hold up every pair
 * that came meanwhile (the tail of the second row); the module reads 64
 * entries in each hold of the lock.  CPU = the timing process's user +
 * system time per pair; the reader's reads per second beside it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <wsem.h>

#include "bench.h"

#define NKIDS		10000
#define CAP		4
#define ROUNDS		5
#define SECONDS		2.0	/* per row, over all rounds */
#define MAX_SAMPLES	(1u << 16)
/* The limits the tree needs raised for the run, and their values before. */
static const char *const limits[] = {
	"max_tree_size", "max_sems_per_ns", "max_sems_per_user",
	"max_children_per_user",
};
static char saved[4][32];

struct reader {
	_Atomic int reading;	/* 1: read; 0: wait; -1: leave */
	_Atomic uint64_t reads;
};

struct tree_row {
	const char *name;
	const char *label;
	bool reading;
	struct samples *s;
	uint64_t cpu, ops, reads, ns;
	bool failed;
};

/* Raise each limit to NKIDS + 16, keeping what it was; 0, or -1. */
static int raise_wsem_limits(void)
{
	char val[32];
	size_t i;

	snprintf(val, sizeof(val), "%d", NKIDS + 16);
	for (i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		if (param_read(limits[i], saved[i], sizeof(saved[i])) ||
		    param_set(limits[i], val))
			return -1;
	}
	return 0;
}

static void restore_wsem_limits(void)
{
	size_t i;

	for (i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		if (saved[i][0])
			param_set(limits[i], saved[i]);
	}
}

/* The reading process: the root's holders view, in a loop while asked. */
static void reader_main(struct reader *r, int root)
{
	size_t size = (NKIDS + 16) * sizeof(struct wsem_holder);
	struct wsem_holder *buf = malloc(size);
	int state;

	pin_cpu(1);
	if (!buf)
		_exit(1);
	for (;;) {
		state = atomic_load(&r->reading);
		if (state < 0)
			_exit(0);
		if (!state) {
			futex_wait_for(&r->reading, 0);
			continue;
		}
		if (wsem_holders_children(root, buf, NKIDS + 16, NULL,
					  NULL) < NKIDS)
			_exit(1);
		atomic_fetch_add(&r->reads, 1);
	}
}

/* Time pairs on @fd for @ns, one pair a sample. */
static int measure(struct tree_row *row, int fd, uint64_t ns)
{
	uint64_t t0 = now_ns(), end = t0 + ns, t1, c0 = thread_cpu_ns();

	do {
		if (wsem_acquire(fd, 1) || wsem_release(fd, 1))
			return -1;
		t1 = now_ns();
		samples_add(row->s, t1 - t0);
		row->ops++;
		t0 = t1;
	} while (t1 < end);
	row->cpu += thread_cpu_ns() - c0;
	row->ns += ns;
	return 0;
}

static void run_row(struct tree_row *row, struct reader *r, int fd,
		    uint64_t ns)
{
	uint64_t reads = atomic_load(&r->reads);

	if (row->reading) {
		atomic_store(&r->reading, 1);
		futex_wake_all(&r->reading);
		/* Let the reader be well into a view first. */
		sleep_ns(NSEC_PER_MSEC);
	}
	if (measure(row, fd, ns))
		row->failed = true;
	atomic_store(&r->reading, 0);
	row->reads += atomic_load(&r->reads) - reads;
}

static void report(struct tree_row *rows, int n)
{
	const struct tree_row *ref = &rows[0];
	double m0 = samples_pct(rows[0].s, 50), p0 = samples_pct(rows[0].s, 99);
	double t0 = samples_pct(rows[0].s, 99.9);
	int i;

	table("\n15. A large tree's holders view beside its acquires: one "
	      "process times acquire(1)+release(1)\n    on the root of a tree "
	      "of %d children, each holding 1, while another reads the "
	      "root's\n    holders view (%d entries) in a loop, or does "
	      "nothing\n", NKIDS, NKIDS);
	table("   ns per pair; ratio = row / no reader (same percentile); "
	      "CPU = the timing process's\n   user+system time per pair, ns; "
	      "views/s = the reader's complete views per second\n");
	table("   %-34s %9s %9s %9s %7s %7s %8s %8s %8s\n", "", "median",
	      "p99", "p99.9", "ratio", "p99 rat", "CPU", "CPU rat",
	      "views/s");
	plot("# bigtree\n");
	json_begin("bigtree");
	json_int("children", NKIDS);
	json_begin_array("rows");
	for (i = 0; i < n; i++) {
		struct tree_row *row = &rows[i];
		double med = samples_pct(row->s, 50);
		double p99 = samples_pct(row->s, 99);
		double p999 = samples_pct(row->s, 99.9);
		double cpu = per_op(row->cpu, row->ops);
		double views = row->ns ? row->reads * 1e9 / row->ns : 0;

		table("   %-34s %9.0f %9.0f %9.0f %7.2f %7.2f %8.0f %8.2f "
		      "%8.0f%s\n", row->label, med, p99, p999,
		      ratio(med, m0), ratio(p99, p0), cpu,
		      ratio(cpu, per_op(ref->cpu, ref->ops)), views,
		      row->failed ? "  (failed)" : "");
		plot("%d \"%s\" %.1f %.1f %.4f\n", i, row->name, med, p99,
		     ratio(med, m0));
		json_begin(NULL);
		json_str("row", row->name);
		json_num("median_ns", med);
		json_num("p99_ns", p99);
		json_num("p999_ns", p999);
		json_num("median_ratio_to_no_reader", ratio(med, m0));
		json_num("p99_ratio_to_no_reader", ratio(p99, p0));
		json_num("p999_ratio_to_no_reader", ratio(p999, t0));
		json_num("cpu_ns_per_op", cpu);
		json_num("views_per_second", views);
		json_bool("ok", !row->failed);
		json_end();
	}
	json_end_array();
	json_end();
	plot("\n\n");
	metric("bigtree.reader.median", "bigtree: pair with a reader / "
	       "without, median", ratio(samples_pct(rows[1].s, 50), m0));
	metric("bigtree.reader.p99", "bigtree: pair with a reader / "
	       "without, p99", ratio(samples_pct(rows[1].s, 99), p0));
}

/* Make the tree: NKIDS children of @root, each held at 1. */
static int make_tree(int root, int *kids)
{
	int i;

	for (i = 0; i < NKIDS; i++) {
		kids[i] = wsem_open_child(root, NULL, O_RDWR | O_CLOEXEC, 0,
					  1);
		if (kids[i] < 0 || wsem_acquire(kids[i], 1))
			return -1;
	}
	return 0;
}

void scenario_bigtree(void)
{
	struct tree_row rows[2] = {
		{ .name = "no-reader", .label = "no reader" },
		{ .name = "reader", .label = "a reader of the whole view",
		  .reading = true },
	};
	uint64_t slice = run_ns(SECONDS / ROUNDS);
	int *kids, root, fd, i, k;
	struct reader *r;
	cpu_set_t cpus;
	pid_t pid;

	raise_limits(0, NKIDS + 256);
	kids = calloc(NKIDS, sizeof(*kids));
	r = shared_alloc(sizeof(*r));
	if (!kids || !r) {
		table("\n15. A large tree's holders view: skipped (no "
		      "memory)\n");
		goto out;
	}
	root = wsem_open_anon(NKIDS + CAP, O_CLOEXEC);
	fd = root >= 0 ? wsem_reopen(root, O_CLOEXEC) : -1;
	if (fd < 0 || raise_wsem_limits() || make_tree(root, kids)) {
		progress("bigtree: setup failed (root's module parameters "
			 "writable?)");
		table("\n15. A large tree's holders view: skipped (setup "
		      "failed)\n");
		goto close;
	}
	pid = fork();
	if (!pid)
		reader_main(r, root);
	if (pid < 0 || sched_getaffinity(0, sizeof(cpus), &cpus)) {
		table("\n15. A large tree's holders view: skipped (no "
		      "reader)\n");
		goto close;
	}
	pin_cpu(0);
	for (i = 0; i < 2; i++)
		rows[i].s = samples_new(MAX_SAMPLES, false);
	measure(&rows[0], fd, slice / 4);	/* warm-up */
	rows[0].s->n = rows[0].s->seen = 0;
	rows[0].cpu = rows[0].ops = rows[0].ns = 0;
	for (k = 0; k < ROUNDS; k++)
		for (i = 0; i < 2; i++)
			run_row(&rows[i], r, fd, slice);
	atomic_store(&r->reading, -1);
	futex_wake_all(&r->reading);
	reap(&pid, 1, 10 * NSEC_PER_SEC);
	for (i = 0; i < 2; i++)
		progress("bigtree: %-10s median %.0f ns, p99 %.0f ns",
			 rows[i].name, samples_pct(rows[i].s, 50),
			 samples_pct(rows[i].s, 99));
	report(rows, 2);
	for (i = 0; i < 2; i++)
		samples_free(rows[i].s);
	sched_setaffinity(0, sizeof(cpus), &cpus);
close:
	for (i = 0; i < NKIDS && kids[i] > 0; i++)
		close(kids[i]);
	if (fd >= 0)
		close(fd);
	if (root >= 0)
		close(root);
	restore_wsem_limits();
out:
	free(kids);
	if (r)
		shared_free(r, sizeof(*r));
}

/*
 * Scenario 16 (shrink): a shrink under a long queue.  A semaphore of
 * capacity 2 is held whole; behind it wait N requests of weight 1 and N
 * of weight 2, taking turns, each an asynchronous request of its own
 * handle; then the capacity goes to 1, which fails the N of weight 2
 * (EINVAL) and leaves the others queued.  The time of that one call and
 * the CPU it took (the caller's, which does the walk), for N = SMALL_N and
 * 10 times that: a walk that looks at each waiter once costs about 10
 * times more for 10 times the waiters, one that restarts from the head
 * after each batch it wakes about 100 times more.
 */
#define SMALL_N		1000

static int queue_one(int sem, uint64_t weight)
{
	int fd = wsem_reopen(sem, O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (wsem_acquire_async(fd, weight) == -1 && errno == EINPROGRESS)
		return fd;
	close(fd);
	return -1;
}

/* One shrink under @n + @n waiters: its time and CPU, ns; 0, or -1. */
static int shrink_once(int n, uint64_t *ns, uint64_t *cpu)
{
	int *fds = calloc(2 * (size_t)n, sizeof(*fds));
	int sem, i, made = 0, ret = -1;
	uint64_t t0, c0;

	sem = wsem_open_anon(2, O_CLOEXEC);
	if (!fds || sem < 0 || wsem_acquire(sem, 2))
		goto out;
	for (i = 0; i < 2 * n; i++, made++) {
		fds[i] = queue_one(sem, 1 + (i & 1));
		if (fds[i] < 0)
			goto out;
	}
	c0 = thread_cpu_ns();
	t0 = now_ns();
	if (wsem_set_capacity(sem, 1))
		goto out;
	*ns = now_ns() - t0;
	*cpu = thread_cpu_ns() - c0;
	ret = 0;
out:
	for (i = 0; i < made; i++)
		close(fds[i]);
	if (sem >= 0)
		close(sem);
	free(fds);
	return ret;
}

void scenario_shrink(void)
{
	static const int sizes[] = { SMALL_N, 10 * SMALL_N };
	uint64_t ns[2], cpu[2];
	char key[64];
	size_t i;

	raise_limits(0, 20 * SMALL_N + 256);
	for (i = 0; i < 2; i++) {
		if (shrink_once(sizes[i], &ns[i], &cpu[i])) {
			progress("shrink: %d + %d waiters failed", sizes[i],
				 sizes[i]);
			table("\n16. A shrink under a long queue: skipped "
			      "(setup failed)\n");
			return;
		}
		progress("shrink: %d + %d waiters: %.3f ms, CPU %.3f ms",
			 sizes[i], sizes[i], ns[i] / 1e6, cpu[i] / 1e6);
	}
	table("\n16. A shrink under a long queue: capacity 2 held, N "
	      "requests of weight 1 and N of weight 2\n    queued in turn "
	      "(asynchronous), then the capacity set to 1, which fails the "
	      "N of weight 2\n");
	table("   ms for that call; CPU = the caller's user+system time in "
	      "it, ms; ratio = over N = %d's\n", SMALL_N);
	table("   %-34s %10s %10s %8s %8s\n", "", "ms", "CPU ms", "ratio",
	      "CPU rat");
	plot("# shrink\n");
	json_begin("shrink");
	json_begin_array("rows");
	for (i = 0; i < 2; i++) {
		snprintf(key, sizeof(key), "N = %d", sizes[i]);
		table("   %-34s %10.3f %10.3f %8.2f %8.2f\n", key, ns[i] / 1e6,
		      cpu[i] / 1e6, ratio(ns[i], ns[0]), ratio(cpu[i], cpu[0]));
		plot("%zu \"%d\" %.3f %.3f %.4f\n", i, sizes[i], ns[i] / 1e6,
		     cpu[i] / 1e6, ratio(ns[i], ns[0]));
		json_begin(NULL);
		json_int("waiters_each", sizes[i]);
		json_num("ms", ns[i] / 1e6);
		json_num("cpu_ms", cpu[i] / 1e6);
		json_end();
	}
	json_end_array();
	json_end();
	plot("\n\n");
	metric("shrink.10x_waiters", "shrink: 10 times the waiters / N, time",
	       ratio(ns[1], ns[0]));
}
