// SPDX-License-Identifier: GPL-2.0
/*
 * Processes, threads and what the kernel says about them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

/* Fork a child that runs @fn(@arg, @idx) and exits; its pid, or -1. */
int spawn(void (*fn)(void *arg, int idx), void *arg, int idx)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		fn(arg, idx);
		_exit(0);
	}
	return pid;
}

/*
 * Wait for @n children, killing those still there after @timeout_ns.
 * Return: 0 if all exited by themselves with status 0, else -1.
 */
int reap(const pid_t *pids, int n, uint64_t timeout_ns)
{
	uint64_t end = now_ns() + timeout_ns;
	int left = n, ret = 0, i, st;
	bool done[n];

	memset(done, 0, sizeof(done));
	while (left) {
		for (i = 0; i < n; i++) {
			if (done[i] || waitpid(pids[i], &st, WNOHANG) <= 0)
				continue;
			done[i] = true;
			left--;
			if (!WIFEXITED(st) || WEXITSTATUS(st))
				ret = -1;
		}
		if (!left)
			break;
		if (now_ns() > end) {
			for (i = 0; i < n; i++) {
				if (!done[i]) {
					kill(pids[i], SIGKILL);
					waitpid(pids[i], &st, 0);
				}
			}
			progress("a worker did not finish in time: killed");
			return -1;
		}
		sleep_ns(NSEC_PER_MSEC);
	}
	return ret;
}

/* Sleep while *@word == @val; works across processes (shared memory). */
void futex_wait_for(_Atomic int *word, int val)
{
	while (atomic_load(word) == val)
		syscall(SYS_futex, word, FUTEX_WAIT, val, NULL, NULL, 0);
}

void futex_wake_all(_Atomic int *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* Run on the @idx-th CPU this process may use (modulo their number). */
void pin_cpu(int idx)
{
	cpu_set_t allowed, one;
	int cpu, n = 0;

	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		return;
	idx %= CPU_COUNT(&allowed);
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &allowed) || n++ != idx)
			continue;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		sched_setaffinity(0, sizeof(one), &one);
		return;
	}
}

/* SCHED_BATCH: a woken task does not preempt the one that woke it. */
int batch_sched(void)
{
	struct sched_param sp = { 0 };

	return sched_setscheduler(0, SCHED_BATCH, &sp);
}

int open_task_stat(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	return open(path, O_RDONLY | O_CLOEXEC);
}

/* The state letter of /proc/PID/stat ('S' asleep, 'R' runnable...). */
char task_state(int statfd)
{
	char buf[512], *p;
	ssize_t n;

	n = pread(statfd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return '?';
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

/* Room for @threads more threads and @files open files, where we may. */
void raise_limits(int threads, int files)
{
	struct rlimit rl;
	long max = 0;
	FILE *f;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)files) {
		rl.rlim_cur = (rlim_t)files;
		if (rl.rlim_max < (rlim_t)files)
			rl.rlim_max = (rlim_t)files;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (getrlimit(RLIMIT_NPROC, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NPROC, &rl);
	}
	f = fopen("/proc/sys/kernel/threads-max", "r");
	if (f) {
		if (fscanf(f, "%ld", &max) != 1)
			max = 0;
		fclose(f);
	}
	if (max && max < 2L * threads) {
		f = fopen("/proc/sys/kernel/threads-max", "w");
		if (f) {
			fprintf(f, "%ld\n", 2L * threads);
			fclose(f);
		}
	}
}

/*
 * CPU time, user + system, of every thread of process @pid so far (0: the
 * caller's), in ns; 0 once it is gone.  The kernel's process CPU clock
 * sums the threads' scheduler run time, the part of a running one's slice
 * included, so that a scenario's cost is read at the edges of its
 * measuring window, exactly, while every participant still runs: what
 * wait4()'s rusage cannot (it counts set-up and warm-up too) and
 * /proc/PID/stat cannot (whole ticks).
 */
uint64_t cpu_ns(pid_t pid)
{
	struct timespec ts;
	clockid_t clk;

	if (clock_getcpuclockid(pid, &clk) || clock_gettime(clk, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* The sum of cpu_ns() over @n processes. */
uint64_t cpu_ns_all(const pid_t *pids, int n)
{
	uint64_t sum = 0;
	int i;

	for (i = 0; i < n; i++)
		sum += cpu_ns(pids[i]);
	return sum;
}

/* CPU time of the calling thread, ns. */
uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/*
 * The whole machine's busy CPU time so far, ns: user, nice, system, irq
 * and softirq of every CPU from /proc/stat's "cpu" line (whole ticks);
 * 0 if it cannot be read.  Beside cpu_ns(), it also counts the kernel's
 * own threads (kworkers, softirq), whichever process they work for.
 */
uint64_t busy_ns(void)
{
	unsigned long long v[7] = { 0 };
	long hz = sysconf(_SC_CLK_TCK);
	FILE *f = fopen("/proc/stat", "r");
	int n;

	if (!f)
		return 0;
	n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
		   &v[2], &v[3], &v[4], &v[5], &v[6]);
	fclose(f);
	if (n != 7 || hz <= 0)
		return 0;
	/* user nice system (idle iowait) irq softirq */
	return (v[0] + v[1] + v[2] + v[5] + v[6]) *
	       (NSEC_PER_SEC / (uint64_t)hz);
}

/* @cpu ns spread over @ops operations; NaN without any. */
double per_op(uint64_t cpu, uint64_t ops)
{
	return ops ? (double)cpu / (double)ops : __builtin_nan("");
}

#define PARAMS	"/sys/module/wsem/parameters/"

/* wsem's parameter @name, as text in @buf of @len bytes; 0, or -1. */
int param_read(const char *name, char *buf, size_t len)
{
	char path[128];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), PARAMS "%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	return 0;
}

/* Set wsem's parameter @name to @val; 0, or -1. */
int param_set(const char *name, const char *val)
{
	ssize_t n = (ssize_t)strlen(val);
	char path[128];
	int fd;

	snprintf(path, sizeof(path), PARAMS "%s", name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (write(fd, val, (size_t)n) != n) {
		close(fd);
		return -1;
	}
	return close(fd);
}

/* wsem's spin_ns, as text in @buf of @len bytes; 0, or -1. */
int spin_read(char *buf, size_t len)
{
	return param_read("spin_ns", buf, len);
}

/* Set wsem's spin_ns to @val; 0, or -1. */
int spin_set(const char *val)
{
	return param_set("spin_ns", val);
}
