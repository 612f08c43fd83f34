// SPDX-License-Identifier: GPL-2.0
/*
 * wsem-cluster-bench: the measuring programs of make bench-cluster
 * (bench/cluster.sh boots the guest, bench/cluster-guest.sh runs there and
 * calls this).  Each mode prints lines "@@MODE ..." for the host's script.
 *
 * pair CLUSTER PLAIN AGENT ETCD
 *	Run in a host's IPC namespace whose cluster semaphore CLUSTER already
 *	has a loan (the host's share suffices), next to PLAIN, a plain
 *	semaphore of the same namespace: acquire(1)+release(1) pairs, timed
 *	in batches of BATCH (a sample is a batch's time / BATCH), the two
 *	taking turns in ROUNDS rounds; then batches of the two back to back,
 *	whose ratio no drift of the machine's speed reaches.  CPU per pair:
 *	this process's, and the agent's (pid AGENT) and etcd's (pid ETCD)
 *	during the same rounds, from the kernel's per-process CPU clocks.
 *	Also: how many of CLUSTER's grants waited (must be 0: the share
 *	sufficed throughout).
 *
 * fetch CLUSTER AGENT ETCD
 *	One acquire(1) on CLUSTER, which has no loan, timed from the call to
 *	its return (the agent asks etcd for a share and lends it), with the
 *	CPU this process, the agent and etcd spent meanwhile; then release.
 *
 * shift NAME CAPACITY PHASE_S DIR ANCHORS AGENTS ETCD
 *	The job script of shifting demand on three hosts (ANCHORS: a pid in
 *	each host's IPC namespace, comma-separated; DIR/hI/NAME its semaphore
 *	through wsemfs): phase 1 jobs on host 1, phase 2 on host 2, phase 3
 *	on all three, PHASE_S seconds each.  A job loop ("worker") per
 *	weight in WEIGHTS on each active host: acquire(w), hold 200-500 ms
 *	(a fixed pseudo-random sequence per worker), release, again until its
 *	phase ends.  The observer sleeps in poll() on a watch handle of each
 *	host's semaphore (POLLRDBAND: waiters, queued or held weight
 *	changed) and reads them all at each change: the sum of used is
 *	constant between changes, so its integral over time is exact.  It
 *	prints per phase: the utilisation while some host has waiters
 *	(integral of sum(used) over that time / (CAPACITY x that time)), the
 *	time some host waited, the jobs done, their mean and largest wait
 *	(acquire's call to return, measured by the workers); the largest sum
 *	of used seen; the CPU of the workers, of the agents (AGENTS, or "-")
 *	and of etcd (ETCD, or 0) over the run, and the observer's own.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <wsem.h>

#define BATCH		16
#define ROUNDS		5
#define ROUND_NS	400000000ull	/* per semaphore and round */
#define MAX_SAMPLES	(1 << 20)

#define HOSTS		3
#define PHASES		3
static const int weights[] = { 2, 1, 2, 1, 2 };
#define WORKERS		(sizeof(weights) / sizeof(weights[0]))
#define HOLD_MIN_MS	200
#define HOLD_SPAN_MS	300
#define JOB_TIMEOUT_NS	(120 * 1000000000ll)

static void die(const char *what)
{
	fprintf(stderr, "wsem-cluster-bench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	if (clock_gettime(c, &ts))
		return 0;
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* CPU time (user + system, all threads) of process @pid; 0 for pid 0. */
static uint64_t cpu_of(pid_t pid)
{
	clockid_t c;

	if (pid <= 0)
		return 0;
	if (clock_getcpuclockid(pid, &c))
		return 0;
	return clock_ns(c);
}

static uint64_t self_cpu(void)
{
	return clock_ns(CLOCK_PROCESS_CPUTIME_ID);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile @p of @n sorted values. */
static uint64_t pct(const uint64_t *v, size_t n, double p)
{
	size_t k = (size_t)(p / 100.0 * n + 0.999999);

	if (!n)
		return 0;
	if (k < 1)
		k = 1;
	if (k > n)
		k = n;
	return v[k - 1];
}

static int open_name(const char *name)
{
	int fd = wsem_open(name, O_RDWR, 0, 0);

	if (fd < 0)
		die(name);
	return fd;
}

/* ---- pair ---- */

struct side {
	const char *name;
	int fd;
	uint64_t *s;
	size_t n;
	uint64_t pairs, wall, self, agent, etcd;
};

static void batch(int fd)
{
	int i;

	for (i = 0; i < BATCH; i++) {
		if (wsem_acquire(fd, 1) || wsem_release(fd, 1))
			die("acquire/release");
	}
}

static void round_of(struct side *s, pid_t agent, pid_t etcd)
{
	uint64_t c0 = self_cpu(), a0 = cpu_of(agent), e0 = cpu_of(etcd);
	uint64_t t0 = now_ns(), end = t0 + ROUND_NS, t1, start = t0;

	do {
		batch(s->fd);
		t1 = now_ns();
		if (s->n < MAX_SAMPLES)
			s->s[s->n++] = (t1 - t0) / BATCH;
		s->pairs += BATCH;
		t0 = t1;
	} while (t1 < end);
	s->wall += t1 - start;
	s->self += self_cpu() - c0;
	s->agent += cpu_of(agent) - a0;
	s->etcd += cpu_of(etcd) - e0;
}

static uint64_t batch_ns(int fd)
{
	uint64_t t0 = now_ns();

	batch(fd);
	return now_ns() - t0;
}

static int do_pair(char **argv)
{
	struct side sd[2] = { { .name = "plain" }, { .name = "cluster" } };
	pid_t agent = atoi(argv[2]), etcd = atoi(argv[3]);
	uint64_t *q, end, a, b, w0;
	struct wsem_stat st;
	size_t nq = 0;
	int r, i, k;

	sd[1].fd = open_name(argv[0]);
	sd[0].fd = open_name(argv[1]);
	if (wsem_stat(sd[1].fd, &st))
		die("stat");
	if (st.capacity < 1) {
		fprintf(stderr, "wsem-cluster-bench: %s has no loan: the "
			"host's share does not suffice\n", argv[0]);
		return 1;
	}
	w0 = st.grants_waited;
	for (i = 0; i < 2; i++) {
		sd[i].s = malloc(MAX_SAMPLES * sizeof(uint64_t));
		if (!sd[i].s)
			die("malloc");
		batch(sd[i].fd);	/* warm-up */
	}
	for (r = 0; r < ROUNDS; r++) {
		for (i = 0; i < 2; i++)
			round_of(&sd[(r + i) & 1], agent, etcd);
	}
	/* Paired: a batch of each back to back, in turn which first. */
	q = malloc(MAX_SAMPLES * sizeof(uint64_t));
	if (!q)
		die("malloc");
	end = now_ns() + ROUND_NS * 2;
	for (k = 0; now_ns() < end && nq < MAX_SAMPLES; k++) {
		if (k & 1) {
			a = batch_ns(sd[0].fd);
			b = batch_ns(sd[1].fd);
		} else {
			b = batch_ns(sd[1].fd);
			a = batch_ns(sd[0].fd);
		}
		if (a)
			q[nq++] = b * 1000000 / a;
	}
	qsort(q, nq, sizeof(*q), cmp_u64);
	if (wsem_stat(sd[1].fd, &st))
		die("stat");
	for (i = 0; i < 2; i++) {
		struct side *s = &sd[i];

		qsort(s->s, s->n, sizeof(uint64_t), cmp_u64);
		/* name median p99 mean self agent etcd (ns per pair) pairs */
		printf("@@pair %s %llu %llu %llu %llu %llu %llu %llu\n",
		       s->name, (unsigned long long)pct(s->s, s->n, 50),
		       (unsigned long long)pct(s->s, s->n, 99),
		       (unsigned long long)(s->wall / s->pairs),
		       (unsigned long long)(s->self / s->pairs),
		       (unsigned long long)(s->agent / s->pairs),
		       (unsigned long long)(s->etcd / s->pairs),
		       (unsigned long long)s->pairs);
	}
	printf("@@pair paired %.3f %zu\n", pct(q, nq, 50) / 1e6, nq);
	printf("@@pair waited %llu\n",
	       (unsigned long long)(st.grants_waited - w0));
	return 0;
}

/* ---- fetch ---- */

static int do_fetch(char **argv)
{
	pid_t agent = atoi(argv[1]), etcd = atoi(argv[2]);
	int fd = open_name(argv[0]);
	uint64_t c0, a0, e0, t0, t;
	struct wsem_stat st;

	if (wsem_stat(fd, &st))
		die("stat");
	if (st.capacity != 0) {
		fprintf(stderr, "wsem-cluster-bench: %s is lent %llu: not a "
			"host without a share\n", argv[0],
			(unsigned long long)st.capacity);
		return 1;
	}
	c0 = self_cpu();
	a0 = cpu_of(agent);
	e0 = cpu_of(etcd);
	t0 = now_ns();
	if (wsem_acquire_timeout(fd, 1, JOB_TIMEOUT_NS))
		die("acquire");
	t = now_ns() - t0;
	/* ns self agent etcd */
	printf("@@fetch %llu %llu %llu %llu\n", (unsigned long long)t,
	       (unsigned long long)(self_cpu() - c0),
	       (unsigned long long)(cpu_of(agent) - a0),
	       (unsigned long long)(cpu_of(etcd) - e0));
	if (wsem_release(fd, 1))
		die("release");
	return 0;
}

/* ---- shift ---- */

struct wres {
	int host, phase, weight, seed, err;
	uint64_t jobs, wait_sum, wait_max, cpu;
};

static const int active[PHASES][HOSTS] = {
	{ 1, 0, 0 }, { 0, 1, 0 }, { 1, 1, 1 },
};

static void sleep_until(uint64_t t)
{
	struct timespec ts = { t / 1000000000ull, t % 1000000000ull };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	       EINTR)
		;
}

static void worker(struct wres *w, pid_t anchor, const char *name,
		   uint64_t start, uint64_t end)
{
	uint32_t x = 2463534242u ^ (w->phase * 131 + w->host * 17 +
				    w->seed * 7);
	char ns[64];
	uint64_t t0, d, c0;
	int fd, nfd;

	snprintf(ns, sizeof(ns), "/proc/%d/ns/ipc", anchor);
	nfd = open(ns, O_RDONLY | O_CLOEXEC);
	if (nfd < 0 || setns(nfd, CLONE_NEWIPC)) {
		w->err = errno;
		return;
	}
	fd = wsem_open(name, O_RDWR, 0, 0);
	if (fd < 0) {
		w->err = errno;
		return;
	}
	sleep_until(start);
	c0 = self_cpu();
	while (now_ns() < end) {
		t0 = now_ns();
		if (wsem_acquire_timeout(fd, w->weight, JOB_TIMEOUT_NS)) {
			w->err = errno;
			break;
		}
		d = now_ns() - t0;
		w->jobs++;
		w->wait_sum += d;
		if (d > w->wait_max)
			w->wait_max = d;
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		usleep((HOLD_MIN_MS + x % HOLD_SPAN_MS) * 1000);
		if (wsem_release(fd, w->weight)) {
			w->err = errno;
			break;
		}
	}
	w->cpu = self_cpu() - c0;
}

/* Integrals over time, per phase. */
struct acc {
	double t, t_wait, used, used_wait;
};

static void account(struct acc *acc, uint64_t t0, uint64_t phase_ns,
		    uint64_t a, uint64_t b, uint64_t used, int waiting)
{
	int p;

	for (p = 0; p < PHASES; p++) {
		uint64_t lo = t0 + p * phase_ns, hi = lo + phase_ns;
		uint64_t x = a > lo ? a : lo, y = b < hi ? b : hi;
		double dt;

		if (y <= x)
			continue;
		dt = (y - x) / 1e9;
		acc[p].t += dt;
		acc[p].used += used * dt;
		if (waiting) {
			acc[p].t_wait += dt;
			acc[p].used_wait += used * dt;
		}
	}
}

static int parse_pids(char *s, pid_t *pids, int max)
{
	int n = 0;
	char *tok;

	if (!strcmp(s, "-"))
		return 0;
	for (tok = strtok(s, ","); tok && n < max; tok = strtok(NULL, ","))
		pids[n++] = atoi(tok);
	return n;
}

static int do_shift(char **argv)
{
	const char *name = argv[0], *dir = argv[3];
	uint64_t cap = strtoull(argv[1], NULL, 10), phase_ns;
	pid_t anchors[HOSTS], agents[HOSTS], etcd = atoi(argv[6]);
	pid_t pids[PHASES * HOSTS * WORKERS];
	uint64_t a0[HOSTS], a1, e0, o0, t0, tend, prev, now, max_used = 0;
	uint64_t prev_used = 0, changes = 0;
	int nagents, fds[HOSTS], np = 0, i, p, h, st, bad = 0, prev_wait = 0;
	struct pollfd pfd[HOSTS];
	struct acc acc[PHASES];
	struct wres *res;
	char path[512];
	size_t w;

	phase_ns = (uint64_t)(atof(argv[2]) * 1e9);
	if (parse_pids(argv[4], anchors, HOSTS) != HOSTS) {
		fprintf(stderr, "wsem-cluster-bench: %d hosts' anchors\n",
			HOSTS);
		return 2;
	}
	nagents = parse_pids(argv[5], agents, HOSTS);
	memset(acc, 0, sizeof(acc));
	res = mmap(NULL, sizeof(*res) * PHASES * HOSTS * WORKERS,
		   PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (res == MAP_FAILED)
		die("mmap");
	for (h = 0; h < HOSTS; h++) {
		snprintf(path, sizeof(path), "%s/h%d/%s", dir, h + 1, name);
		fds[h] = wsem_open_watch(path, O_CLOEXEC);
		if (fds[h] < 0)
			die(path);
		pfd[h].fd = fds[h];
		pfd[h].events = POLLRDBAND;
	}
	t0 = now_ns() + 500000000ull;	/* the workers are ready by then */
	tend = t0 + PHASES * phase_ns;
	for (p = 0; p < PHASES; p++) {
		for (h = 0; h < HOSTS; h++) {
			if (!active[p][h])
				continue;
			for (w = 0; w < WORKERS; w++) {
				struct wres *r = &res[np];
				pid_t pid;

				r->host = h;
				r->phase = p;
				r->weight = weights[w];
				r->seed = w;
				fflush(NULL);
				pid = fork();
				if (pid < 0)
					die("fork");
				if (!pid) {
					worker(r, anchors[h], name,
					       t0 + p * phase_ns,
					       t0 + (p + 1) * phase_ns);
					_exit(0);
				}
				pids[np++] = pid;
			}
		}
	}
	sleep_until(t0);
	for (i = 0; i < nagents; i++)
		a0[i] = cpu_of(agents[i]);
	e0 = cpu_of(etcd);
	o0 = self_cpu();
	prev = t0;
	while ((now = now_ns()) < tend) {
		struct wsem_stat s;
		uint64_t used = 0;
		int waiting = 0, left = (int)((tend - now) / 1000000) + 1;

		if (poll(pfd, HOSTS, left > 100 ? 100 : left) < 0 &&
		    errno != EINTR)
			die("poll");
		now = now_ns();
		for (h = 0; h < HOSTS; h++) {
			if (wsem_stat(fds[h], &s))
				die("stat");
			used += s.used;
			waiting |= s.waiters > 0;
		}
		account(acc, t0, phase_ns, prev, now, prev_used, prev_wait);
		if (used > max_used)
			max_used = used;
		if (used != prev_used || waiting != prev_wait)
			changes++;
		prev = now;
		prev_used = used;
		prev_wait = waiting;
	}
	account(acc, t0, phase_ns, prev, tend, prev_used, prev_wait);
	o0 = self_cpu() - o0;
	for (i = 0; i < np; i++) {
		if (waitpid(pids[i], &st, 0) < 0 || !WIFEXITED(st) ||
		    WEXITSTATUS(st))
			bad++;
	}
	a1 = 0;
	for (i = 0; i < nagents; i++)
		a1 += cpu_of(agents[i]) - a0[i];
	e0 = cpu_of(etcd) - e0;
	{
		uint64_t jobs_all = 0, wmax_all = 0, wsum_all = 0, cpu_w = 0;
		double t = 0, tw = 0, u = 0, uw = 0;

		for (p = 0; p < PHASES; p++) {
			uint64_t jobs = 0, wmax = 0, wsum = 0;

			for (i = 0; i < np; i++) {
				if (res[i].phase != p)
					continue;
				jobs += res[i].jobs;
				wsum += res[i].wait_sum;
				if (res[i].wait_max > wmax)
					wmax = res[i].wait_max;
			}
			/* phase util_wait util_all t_wait jobs mean max */
			printf("@@shift phase%d %.1f %.1f %.2f %llu %.1f %.1f\n",
			       p + 1,
			       acc[p].t_wait ? 100 * acc[p].used_wait /
			       (cap * acc[p].t_wait) : 0,
			       100 * acc[p].used / (cap * acc[p].t),
			       acc[p].t_wait, (unsigned long long)jobs,
			       jobs ? wsum / 1e6 / jobs : 0, wmax / 1e6);
			jobs_all += jobs;
			wsum_all += wsum;
			if (wmax > wmax_all)
				wmax_all = wmax;
			t += acc[p].t;
			tw += acc[p].t_wait;
			u += acc[p].used;
			uw += acc[p].used_wait;
		}
		printf("@@shift all %.1f %.1f %.2f %llu %.1f %.1f\n",
		       tw ? 100 * uw / (cap * tw) : 0, 100 * u / (cap * t), tw,
		       (unsigned long long)jobs_all,
		       jobs_all ? wsum_all / 1e6 / jobs_all : 0,
		       wmax_all / 1e6);
		for (i = 0; i < np; i++) {
			cpu_w += res[i].cpu;
			if (res[i].err) {
				fprintf(stderr, "wsem-cluster-bench: worker "
					"h%d phase %d weight %d: %s\n",
					res[i].host + 1, res[i].phase + 1,
					res[i].weight, strerror(res[i].err));
				bad++;
			}
		}
		/* workers agents etcd observer (ns), changes, max used */
		printf("@@shift cpu %llu %llu %llu %llu\n",
		       (unsigned long long)cpu_w, (unsigned long long)a1,
		       (unsigned long long)e0, (unsigned long long)o0);
		printf("@@shift seen %llu %llu\n", (unsigned long long)changes,
		       (unsigned long long)max_used);
	}
	if (max_used > cap) {
		fprintf(stderr, "wsem-cluster-bench: %llu held at once, above "
			"the capacity %llu\n", (unsigned long long)max_used,
			(unsigned long long)cap);
		bad++;
	}
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 6 && !strcmp(argv[1], "pair"))
		return do_pair(argv + 2);
	if (argc == 5 && !strcmp(argv[1], "fetch"))
		return do_fetch(argv + 2);
	if (argc == 9 && !strcmp(argv[1], "shift"))
		return do_shift(argv + 2);
	fprintf(stderr, "usage: wsem-cluster-bench pair CLUSTER PLAIN AGENT ETCD\n"
		"       wsem-cluster-bench fetch CLUSTER AGENT ETCD\n"
		"       wsem-cluster-bench shift NAME CAPACITY PHASE_S DIR "
		"ANCHORS AGENTS ETCD\n");
	return 2;
}
