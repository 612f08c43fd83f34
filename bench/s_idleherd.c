// SPDX-License-Identifier: GPL-2.0
/*
 * Scenario 10: an acquire(1)+release(1) pair on one handle while N other
 * processes wait for the semaphore to become idle.
 *
 * The semaphore (capacity CAP) is kept busy throughout by a second handle
 * of the measuring process holding 1 unit, so it never becomes idle and
 * the idle waiters have nothing to wake for.  They are N processes, each
 * with its own handle (wsem_reopen()), either asleep in wsem_wait_idle()
 * (WSEM_IOC_WAIT_IDLE) or in poll() for POLLPRI (idle) on it.  Once all N
 * announced themselves and sleep (state S in /proc/PID/stat), the
 * measuring process times each pair on its third handle; the pair's cost
 * is its median (p99 and mean beside it).  CPU = the user + system time
 * of the measuring process and the N sleepers over the window, per pair:
 * what sleepers woken for nothing burn shows there.
 *
 * Before each N the same pairs are timed on the same semaphore with
 * nobody waiting ("alone"), and each row's ratio is its median over that
 * one, measured minutes apart at most, so that a drift of the machine's
 * speed between the rows does not enter it.  At the end the holder lets
 * go, the semaphore becomes idle, and every sleeper must return with
 * success (wsem_wait_idle() 0, or POLLPRI): a row whose sleepers did not
 * is marked failed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <wsem.h>

#include "bench.h"

#define CAP		4
#define MAX_N		400
#define SECONDS		1.0	/* each N, with the sleepers */
#define ALONE_SECONDS	0.5	/* each N, before them */
#define MAX_SAMPLES	(1u << 15)
#define ASLEEP_TIMEOUT	(120 * NSEC_PER_SEC)

enum kind { IDLE_WAIT, POLLER };

static const char *const kind_name[] = { "idle-wait", "poll" };
static const char *const kind_label[] = {
	"in WSEM_IOC_WAIT_IDLE", "in poll(POLLPRI)",
};

/* Shared with the sleepers. */
struct herd {
	_Atomic int ready;
	enum kind kind;
	struct bsem sem;
};

/* A pair's figures over one window. */
struct pairs {
	double median, p99, mean, cpu;	/* ns; cpu per pair */
	uint64_t n;
};

struct row {
	enum kind kind;
	int n;
	struct pairs alone, herd;
	bool ok;
};

/* A sleeper: its own handle, then one wait for idle; exits 0 if idle. */
static void sleeper(void *arg, int idx)
{
	struct herd *x = arg;
	struct pollfd pfd = { .events = POLLPRI };
	int fd = wsem_reopen(x->sem.fd, O_CLOEXEC), ret;

	(void)idx;
	if (fd < 0)
		_exit(1);
	pfd.fd = fd;
	atomic_fetch_add(&x->ready, 1);
	if (x->kind == IDLE_WAIT)
		_exit(wsem_wait_idle(fd, -1) ? 2 : 0);
	do
		ret = poll(&pfd, 1, -1);
	while (ret < 0 && errno == EINTR);
	_exit(ret == 1 && (pfd.revents & POLLPRI) ? 0 : 3);
}

/*
 * Time pairs on @fd for @ns into @p; the CPU of the caller and of the @n
 * processes @pids with it.  0, or -1.
 */
static int time_pairs(int fd, uint64_t ns, const pid_t *pids, int n,
		      struct pairs *p)
{
	struct samples *s = samples_new(MAX_SAMPLES, false);
	uint64_t c0, c1, t0, a, b, count = 0;
	int ret = -1;

	c0 = cpu_ns(0) + cpu_ns_all(pids, n);
	t0 = now_ns();
	do {
		a = now_ns();
		if (wsem_acquire(fd, 1) || wsem_release(fd, 1))
			goto out;
		b = now_ns();
		samples_add(s, b - a);
		count++;
	} while (b - t0 < ns);
	c1 = cpu_ns(0) + cpu_ns_all(pids, n);
	p->n = count;
	p->median = samples_pct(s, 50);
	p->p99 = samples_pct(s, 99);
	p->mean = per_op(b - t0, count);
	p->cpu = per_op(c1 - c0, count);
	ret = 0;
out:
	samples_free(s);
	return ret;
}

/* Wait until @n sleepers announced themselves and sleep. */
static int wait_asleep(struct herd *x, const pid_t *pids, int n)
{
	uint64_t end = now_ns() + ASLEEP_TIMEOUT;
	int i = 0, fd;

	while (atomic_load(&x->ready) < n) {
		if (now_ns() > end)
			return -1;
		sleep_ns(NSEC_PER_MSEC);
	}
	while (i < n) {
		fd = open_task_stat(pids[i]);
		if (fd < 0)
			return -1;
		while (task_state(fd) != 'S' && now_ns() < end)
			sleep_ns(NSEC_PER_MSEC);
		close(fd);
		if (now_ns() >= end)
			return -1;
		i++;
	}
	return 0;
}

/* Spawn @n sleepers of @x->kind into @pids; how many were made. */
static int spawn_herd(struct herd *x, pid_t *pids, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		pids[i] = spawn(sleeper, x, i);
		if (pids[i] < 0)
			break;
	}
	return i;
}

/* Time the pairs alone, then with @r->n sleepers of @r->kind. */
static int run(struct row *r)
{
	static pid_t pids[MAX_N];
	struct herd *x = shared_alloc(sizeof(*x));
	int keep = -1, fd = -1, made = 0, ret = -1;

	x->kind = r->kind;
	if (peer_wsem.create(&x->sem, CAP))
		goto out;
	keep = wsem_reopen(x->sem.fd, O_CLOEXEC);
	fd = wsem_reopen(x->sem.fd, O_CLOEXEC);
	if (keep < 0 || fd < 0 || wsem_acquire(keep, 1))
		goto close;
	if (time_pairs(fd, run_ns(ALONE_SECONDS) / 4, NULL, 0, &r->alone) ||
	    time_pairs(fd, run_ns(ALONE_SECONDS), NULL, 0, &r->alone))
		goto release;
	made = spawn_herd(x, pids, r->n);
	if (made < r->n || wait_asleep(x, pids, r->n))
		goto release;
	if (r->n && time_pairs(fd, run_ns(SECONDS), pids, r->n, &r->herd))
		goto release;
	ret = 0;
release:
	/* Idle now: every sleeper wakes and exits. */
	wsem_release(keep, 1);
	if (reap(pids, made, 60 * NSEC_PER_SEC))
		ret = -1;
close:
	if (keep >= 0)
		close(keep);
	if (fd >= 0)
		close(fd);
	peer_wsem.destroy(&x->sem);
out:
	shared_free(x, sizeof(*x));
	return ret;
}

static void print_row(const char *what, int n, const struct pairs *p,
		      const struct pairs *alone, bool ok)
{
	double q = ratio(p->median, alone->median);

	table("   %-24s %5d %10.0f %10.0f %10.0f %10.0f %10.0f %8.2f%s\n",
	      what, n, p->median, p->p99, p->mean, p->cpu, alone->median, q,
	      ok ? "" : "  (failed)");
}

static void print_json(const struct row *r)
{
	json_begin(NULL);
	json_str("sleepers", kind_name[r->kind]);
	json_int("n", r->n);
	json_num("median_ns", r->herd.median);
	json_num("p99_ns", r->herd.p99);
	json_num("mean_ns", r->herd.mean);
	json_num("cpu_ns_per_pair", r->herd.cpu);
	json_int("pairs", (long long)r->herd.n);
	json_num("alone_median_ns", r->alone.median);
	json_num("alone_cpu_ns_per_pair", r->alone.cpu);
	json_num("ratio_to_alone", ratio(r->herd.median, r->alone.median));
	json_bool("ok", r->ok);
	json_end();
}

/* The row of @kind with @n sleepers, or NULL. */
static const struct row *find(const struct row *rows, int nrows,
			      enum kind kind, int n)
{
	int i;

	for (i = 0; i < nrows; i++) {
		if (rows[i].kind == kind && rows[i].n == n && rows[i].ok)
			return &rows[i];
	}
	return NULL;
}

static void headline(const struct row *rows, int nrows)
{
	const struct row *w = find(rows, nrows, IDLE_WAIT, MAX_N);
	const struct row *p = find(rows, nrows, POLLER, MAX_N);
	double qw = w ? ratio(w->herd.median, w->alone.median) : NAN;
	double qp = p ? ratio(p->herd.median, p->alone.median) : NAN;

	table("   idle herd: pair with %d idle waiters / none = %.2f "
	      "(target <= 1.5)\n", MAX_N, qw);
	table("   idle herd: pair with %d pollers / none = %.2f\n", MAX_N, qp);
	metric("idleherd.wait_idle", "idle herd: pair with 400 idle waiters "
	       "/ none", qw);
	metric("idleherd.poll", "idle herd: pair with 400 pollers / none", qp);
	if (w)
		metric("idleherd.wait_idle_cpu", "idle herd: CPU per pair "
		       "with 400 idle waiters, ns", w->herd.cpu);
}

static void print(const struct row *rows, int nrows)
{
	int i;

	table("\n10. Idle herd: acquire(1)+release(1) on one handle while N "
	      "processes wait for idle on their own\n    handles; capacity %d, "
	      "1 unit held throughout by another handle (never idle)\n", CAP);
	table("   ns per pair (median, p99, mean); CPU = user+system time of "
	      "the pairing process and the N\n   sleepers per pair, ns; "
	      "alone = median with nobody waiting, just before; ratio = "
	      "median / alone\n");
	table("   %-24s %5s %10s %10s %10s %10s %10s %8s\n", "sleepers", "N",
	      "median", "p99", "mean", "CPU", "alone", "ratio");
	json_begin("idleherd");
	json_str("unit", "ns per acquire(1)+release(1) pair");
	json_int("capacity", CAP);
	json_begin_array("rows");
	if (nrows)
		print_row("none", 0, &rows[0].alone, &rows[0].alone, true);
	for (i = 0; i < nrows; i++) {
		print_row(kind_label[rows[i].kind], rows[i].n, &rows[i].herd,
			  &rows[i].alone, rows[i].ok);
		print_json(&rows[i]);
	}
	json_end_array();
	json_end();
	headline(rows, nrows);
}

void scenario_idleherd(void)
{
	static const int sizes[] = { 100, MAX_N };
	struct row rows[4];
	int n = 0, k, s;

	raise_limits(MAX_N + 16, MAX_N + 256);
	for (k = IDLE_WAIT; k <= POLLER; k++) {
		for (s = 0; s < 2; s++) {
			struct row *r = &rows[n++];

			memset(r, 0, sizeof(*r));
			r->kind = k;
			r->n = sizes[s];
			r->ok = !run(r);
			progress("idleherd: %-9s N=%3d: pair %.0f ns (alone %.0f),"
				 " CPU %.0f ns per pair%s", kind_name[k], r->n,
				 r->herd.median, r->alone.median, r->herd.cpu,
				 r->ok ? "" : " (failed)");
		}
	}
	print(rows, n);
}
