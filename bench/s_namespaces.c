// SPDX-License-Identifier: GPL-2.0
/*
 * Scenario 8: opens in one IPC namespace beside many others (issue 9).
 *
 * wsem keeps per-namespace state; how an open finds its namespace, and
 * what it shares with the other namespaces' opens, decides whether a host
 * with many containers slows every container's opens.  A child process
 * (the scenario needs root: unshare and setns of IPC namespaces) makes a
 * namespace of its own with one name and measures wsem_open() + close()
 * of that name per second, in these settings:
 *
 *   alone     no other namespace has wsem state (the bench's namespace
 *             and the initial one aside);
 *   idle      NS_OTHERS more namespaces, each with a name, kept alive by
 *             nsfs descriptors of one keeper (the measuring process);
 *   spinning  the same, with BUSY processes burning CPU (a control: what
 *             sharing the CPUs alone costs);
 *   busy      the same, with BUSY processes each in one of the others,
 *             opening and closing a name there as fast as they can.
 *
 * idle / alone shows the cost of the others merely existing (a lookup
 * that walks all namespaces); busy / spinning shows what their opens cost
 * beyond the CPU they take (a lock that all namespaces share).  The three
 * settings with the others run in ROUNDS interleaved rounds; each figure
 * is the median.  CPU = the measuring process's user + system time per
 * open (the helpers' is theirs: they are the load, not the measured).
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

#define NS_OTHERS	1000
#define BUSY		2
#define ROUNDS		5
#define SECONDS		0.6		/* per round and setting */
#define NAME		"bench.ns"

enum { ALONE, IDLE, SPIN, BUSYOPEN, NSET };

static const char *const set_label[NSET] = {
	"alone", "1000 others idle", "+ 2 processes spinning",
	"+ 2 processes opening",
};

static const char *const set_key[NSET] = { "alone", "idle", "spin", "busy" };

/* Shared with the scenario's child and its helpers. */
struct nsb {
	_Atomic int stop;		/* helpers: stop */
	int failed;			/* errno of the first failure */
	double rate[NSET][ROUNDS];	/* opens per second */
	double cpu[NSET][ROUNDS];	/* ns per open */
	uint64_t helper_opens;
};

/* Open and close NAME for @ns; opens per second, or -1; CPU per open. */
static double measure(uint64_t ns, double *cpu)
{
	uint64_t t0 = now_ns(), t1, n = 0, c0 = thread_cpu_ns();
	int fd, i;

	do {
		for (i = 0; i < 64; i++) {
			fd = wsem_open(NAME, 0, 0, 0);
			if (fd < 0)
				return -1;
			close(fd);
		}
		n += 64;
		t1 = now_ns();
	} while (t1 - t0 < ns);
	*cpu = per_op(thread_cpu_ns() - c0, n);
	return n * (double)NSEC_PER_SEC / (t1 - t0);
}

static void spinner(struct nsb *x)
{
	volatile uint64_t k = 0;

	while (!atomic_load(&x->stop))
		k++;
	_exit(0);
}

/* In namespace @nsfd: open and close its name until told to stop. */
static void opener(struct nsb *x, int nsfd)
{
	uint64_t n = 0;
	int fd;

	if (setns(nsfd, CLONE_NEWIPC))
		_exit(1);
	while (!atomic_load(&x->stop)) {
		fd = wsem_open(NAME, 0, 0, 0);
		if (fd < 0)
			_exit(2);
		close(fd);
		n++;
	}
	__atomic_add_fetch(&x->helper_opens, n, __ATOMIC_RELAXED);
	_exit(0);
}

/* Start BUSY helpers (spinning or opening), measure, stop them. */
static double with_helpers(struct nsb *x, const int *nsfd, bool open,
			   uint64_t ns, double *cpu)
{
	pid_t pid[BUSY];
	double rate;
	int i, st, bad = 0;

	atomic_store(&x->stop, 0);
	for (i = 0; i < BUSY; i++) {
		fflush(NULL);
		pid[i] = fork();
		if (pid[i] == 0) {
			if (open)
				opener(x, nsfd[(i + 1) * NS_OTHERS / (BUSY + 1)]);
			spinner(x);
		}
	}
	sleep_ns(20 * NSEC_PER_MSEC);
	rate = measure(ns, cpu);
	atomic_store(&x->stop, 1);
	for (i = 0; i < BUSY; i++) {
		if (pid[i] < 0 || waitpid(pid[i], &st, 0) != pid[i] ||
		    !WIFEXITED(st) || WEXITSTATUS(st))
			bad = 1;
	}
	return bad ? -1 : rate;
}

/* One more namespace with a name in it, kept by an nsfs descriptor. */
static int other_namespace(void)
{
	int fd;

	if (unshare(CLONE_NEWIPC))
		return -1;
	fd = wsem_open(NAME, O_CREAT, 0600, 1);
	if (fd < 0)
		return -1;
	close(fd);
	return open("/proc/self/ns/ipc", O_RDONLY | O_CLOEXEC);
}

static int run(struct nsb *x)
{
	uint64_t slice = run_ns(SECONDS);
	static int nsfd[NS_OTHERS];
	double warm;
	int home, i, k;

	home = other_namespace();	/* the one measured */
	if (home < 0)
		return -1;
	measure(slice / 4, &warm);	/* warm up */
	for (k = 0; k < ROUNDS; k++) {
		x->rate[ALONE][k] = measure(slice, &x->cpu[ALONE][k]);
		if (x->rate[ALONE][k] < 0)
			return -1;
	}
	for (i = 0; i < NS_OTHERS; i++) {
		nsfd[i] = other_namespace();
		if (nsfd[i] < 0)
			return -1;
	}
	if (setns(home, CLONE_NEWIPC))
		return -1;
	for (k = 0; k < ROUNDS; k++) {
		x->rate[IDLE][k] = measure(slice, &x->cpu[IDLE][k]);
		x->rate[SPIN][k] = with_helpers(x, nsfd, false, slice,
						&x->cpu[SPIN][k]);
		x->rate[BUSYOPEN][k] = with_helpers(x, nsfd, true, slice,
						    &x->cpu[BUSYOPEN][k]);
		for (i = IDLE; i < NSET; i++)
			if (x->rate[i][k] < 0)
				return -1;
	}
	return 0;
}

static void child(void *arg, int idx)
{
	struct nsb *x = arg;

	(void)idx;
	raise_limits(0, NS_OTHERS + 64);
	if (run(x)) {
		x->failed = errno ? errno : -1;
		_exit(1);
	}
	_exit(0);
}

static double median(const double *v)
{
	double s[ROUNDS], t;
	int i, j;

	memcpy(s, v, sizeof(s));
	for (i = 1; i < ROUNDS; i++)
		for (j = i; j > 0 && s[j - 1] > s[j]; j--) {
			t = s[j];
			s[j] = s[j - 1];
			s[j - 1] = t;
		}
	return s[ROUNDS / 2];
}

static void print(const struct nsb *x)
{
	double m[NSET], c[NSET];
	int i;

	for (i = 0; i < NSET; i++) {
		m[i] = median(x->rate[i]);
		c[i] = median(x->cpu[i]);
	}
	table("\n8. Opens in one IPC namespace beside %d others\n", NS_OTHERS);
	table("   wsem_open(name) + close() per second, median of %d; "
	      "ratio = time per open\n   over alone's (above 1: slower); CPU = the measuring process's "
	      "user+system time per open, ns (median)\n", ROUNDS);
	table("   %-28s %10s %8s %8s\n", "", "opens/s", "ratio", "CPU");
	json_begin("namespaces");
	json_int("others", NS_OTHERS);
	json_int("helpers", BUSY);
	json_begin_array("rows");
	for (i = 0; i < NSET; i++) {
		table("   %-28s %10.0f %8.2f %8.0f\n", set_label[i], m[i],
		      ratio(m[ALONE], m[i]), c[i]);
		json_begin(NULL);
		json_str("setting", set_key[i]);
		json_num("opens_per_s", m[i]);
		json_num("time_ratio_to_alone", ratio(m[ALONE], m[i]));
		json_num("cpu_ns_per_open", c[i]);
		json_end();
	}
	json_end_array();
	json_num("time_busy_per_spinning", ratio(m[SPIN], m[BUSYOPEN]));
	json_end();
	table("   busy / spinning %.2f (time per open): what the others' opens "
	      "cost beyond the CPU\n   (1.00: nothing)\n",
	      ratio(m[SPIN], m[BUSYOPEN]));
	metric("namespaces.idle", "namespaces: time per open with 1000 idle "
	       "/ alone", ratio(m[ALONE], m[IDLE]));
	metric("namespaces.busy", "namespaces: time per open with 2 busy / "
	       "2 spinning", ratio(m[SPIN], m[BUSYOPEN]));
}

void scenario_namespaces(void)
{
	struct nsb *x;
	pid_t pid;

	if (geteuid()) {
		progress("namespaces: needs root (unshare, setns): skipped");
		table("\n8. Opens beside other namespaces: skipped (needs "
		      "root)\n");
		return;
	}
	x = shared_alloc(sizeof(*x));
	pid = spawn(child, x, 0);
	if (pid < 0 || reap(&pid, 1, 600 * NSEC_PER_SEC) || x->failed) {
		progress("namespaces: failed: %s",
			 x->failed > 0 ? strerror(x->failed) : "?");
		exit(1);
	}
	progress("namespaces: alone %.0f/s, idle %.0f/s, spinning %.0f/s, "
		 "busy %.0f/s", median(x->rate[ALONE]), median(x->rate[IDLE]),
		 median(x->rate[SPIN]), median(x->rate[BUSYOPEN]));
	print(x);
	shared_free(x, sizeof(*x));
}
