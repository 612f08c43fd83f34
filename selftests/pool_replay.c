// SPDX-License-Identifier: GPL-2.0
/*
 * pool_replay WORKER [ARG...]: pool_test's replayed run (pool_replay.h)
 * with the bindings' pools.  go_test.sh and python_test.sh reach it through
 * a test of each binding (TestPoolReplayed, t_pool_replayed), which names
 * the binding's worker as WORKER.
 *
 * It creates a semaphore of CAP named pool_replay.PID and a log file, then
 * starts two plain processes (forks running replay_plain(): requests of
 * the whole capacity, asynchronous, and small blocking ones, through
 * libwsem) and POOLED workers: WORKER run with the environment variable
 *
 *	WSEM_REPLAY="NAME LOGFD GEN THREADS MAXSPARE SEED"
 *
 * A worker opens semaphore NAME by the binding, enables the binding's pool
 * with MAXSPARE (1..CAP), and runs THREADS threads (goroutines) for ever,
 * each numbered t from 0: weight w = 1 or 2, then START, the binding's
 * acquire of w, DONE, up to 200 us asleep or busy, REL, the binding's
 * release of w, up to 200 us asleep (the times at random; the sleep after
 * the release is where a request queues while the pool keeps spare
 * weight); a failed call ends the worker with a non-zero status.
 *
 * The log: each step is one struct entry (pool_replay.h: kind, who = GEN
 * << 8 | t, weight; 16 bytes in host byte order) written with one write(2)
 * to the inherited descriptor LOGFD, a file opened with O_APPEND: the
 * kernel puts each write at the end of the file under the inode's lock,
 * within the call, so the file's order is one order of the steps that
 * every process agrees with, without atomics shared between languages
 * (Python has none).  Every writer here writes so, this program too.
 *
 * The workers are only ever killed: every so often one of them, at
 * random, is SIGKILLed (KILL written first) and another started with the
 * next GEN, from when the first workers are running (20 DONEs) for the
 * longer of WSEM_POOL_MS (4000) and twice as long as that start took;
 * the kills come at random intervals of 10 ms and up to that start's time
 * more, so some land while a worker is still starting.  Then the plain
 * processes stop and the last workers are killed at random moments.
 *
 * It fails (exit 1) if a worker or a plain process ended otherwise than
 * so, if anything is held or queued on the semaphore once all are gone,
 * or if the replay of the log finds more held than CAP, an acquire that
 * began after a full request queued granted before it, more acquires under
 * way across one than there are threads and plain processes, no full
 * request queued, or 100 pooled grants or fewer.  It prints what it saw;
 * WSEM_POOL_SEED=N replays a run's random choices (not its timing).  Exit
 * 2: it could not set up.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <wsem.h>

#include "util.h"
#include "pool_replay.h"

#define CAP		4
#define POOLED		3	/* workers at once */
#define THREADS		2	/* threads of each */
#define PLAIN		2	/* plain processes */
/* How long the first workers may take to start (TCG, a debug kernel). */
#define START_MS	60000

static int log_fd = -1;
static atomic_int *plain_stop;	/* shared with the plain processes */
static bool failed;

static void note(uint32_t kind, uint32_t who, uint64_t weight)
{
	struct entry e = { kind, who, weight };

	if (write(log_fd, &e, sizeof(e)) != sizeof(e))
		_exit(6);
}

static bool stopping(void)
{
	return atomic_load(plain_stop);
}

static void fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("FAIL: ");
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	va_end(ap);
	failed = true;
}

/* A worker of generation @gen: WORKER with WSEM_REPLAY set. */
static pid_t spawn_worker(char **argv, const char *name, uint32_t gen,
			  struct rng *r)
{
	char env[256];
	pid_t pid;

	snprintf(env, sizeof(env), "%s %d %u %d %llu %llu", name, log_fd, gen,
		 THREADS, (unsigned long long)(1 + below(r, CAP)),
		 (unsigned long long)rnd(r));
	pid = fork();
	if (pid < 0)
		fail("fork: %m");
	if (pid)
		return pid;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	setenv("WSEM_REPLAY", env, 1);
	execvp(argv[0], argv);
	perror(argv[0]);
	_exit(127);
}

/* SIGKILL worker @pid of generation @gen, KILL noted first. */
static void kill_worker(pid_t pid, uint32_t gen)
{
	int status;

	if (pid < 0)	/* not started: fork failed */
		return;
	note(KILL, gen, 0);
	kill(pid, SIGKILL);
	if (waitpid(pid, &status, 0) != pid)
		fail("waitpid %d: %m", pid);
	else if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
		fail("worker %u ended before its kill: status %#x", gen,
		     status);
}

/* The log as written so far: its entries, and their number in *@n. */
static struct entry *read_log(uint64_t *n)
{
	struct stat st;
	struct entry *log;

	if (fstat(log_fd, &st))
		return NULL;
	*n = st.st_size / sizeof(struct entry);
	log = malloc(*n * sizeof(*log) + 1);
	if (log && pread(log_fd, log, *n * sizeof(*log), 0) !=
		   (ssize_t)(*n * sizeof(*log))) {
		free(log);
		return NULL;
	}
	return log;
}

/* Pooled DONEs in the log so far. */
static uint64_t pooled_done(void)
{
	uint64_t n, i, k = 0;
	struct entry *log = read_log(&n);

	for (i = 0; log && i < n; i++)
		k += log[i].kind == DONE && log[i].who >> 8 < REPLAY_PLAIN;
	free(log);
	return k;
}

/* How long the first workers took to start: until 20 pooled DONEs. */
static int64_t first_steps_ns(void)
{
	int64_t t0 = now_ns();

	while (pooled_done() < 20) {
		if (now_ns() - t0 > START_MS * 1000000LL) {
			fail("the workers did not run within %d s",
			     START_MS / 1000);
			break;
		}
		usleep(10000);
	}
	return now_ns() - t0;
}

/* Replay the log and check what it says. */
static void check_log(int kills)
{
	struct replay rp;
	struct entry *log;
	uint64_t n, i, pooled = 0;

	log = read_log(&n);
	if (!log) {
		fail("cannot read the log: %m");
		return;
	}
	for (i = 0; i < n; i++)
		pooled += log[i].kind == DONE &&
			  log[i].who >> 8 < REPLAY_PLAIN;
	replay(&rp, log, n, CAP, THREADS);
	free(log);
	printf("%llu entries, %llu grants (%llu pooled), %d kills, %llu full "
	       "requests queued and checked, at most %llu acquires under way "
	       "across one\n", (unsigned long long)rp.entries,
	       (unsigned long long)rp.ops, (unsigned long long)pooled, kills,
	       (unsigned long long)rp.checked,
	       (unsigned long long)rp.ahead_max);
	if (rp.over)
		fail("%llu times more held than %d, first at entry %lld",
		     (unsigned long long)rp.over, CAP, (long long)rp.first_bad);
	if (rp.overtaken)
		fail("%llu acquires that began after a full request queued "
		     "were granted before it, first at entry %lld",
		     (unsigned long long)rp.overtaken,
		     (long long)rp.first_bad);
	if (rp.ahead_max > POOLED * THREADS + PLAIN)
		fail("%llu acquires under way across one request, at most %d "
		     "expected", (unsigned long long)rp.ahead_max,
		     POOLED * THREADS + PLAIN);
	if (!rp.checked)
		fail("no full request queued: nothing checked");
	if (pooled <= 100)
		fail("%llu pooled grants: too few to tell",
		     (unsigned long long)pooled);
}

int main(int argc, char **argv)
{
	uint64_t seed = env_u64("WSEM_POOL_SEED", (uint64_t)now_ns());
	int64_t run_ns = env_u64("WSEM_POOL_MS", 4000) * 1000000LL;
	int64_t start_ns, end;
	char name[64], path[] = "/tmp/pool_replay.XXXXXX";
	pid_t worker[POOLED], plain[PLAIN];
	uint32_t gen[POOLED], next_gen = 1;
	struct rng r = { seed };
	struct wsem_stat st;
	int fd, i, status, kills = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: pool_replay WORKER [ARG...]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("WSEM_POOL_SEED=%llu\n", (unsigned long long)seed);
	plain_stop = mmap(NULL, sizeof(*plain_stop), PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	log_fd = mkstemp(path);
	if (plain_stop == MAP_FAILED || log_fd < 0 || unlink(path) ||
	    fcntl(log_fd, F_SETFL, O_APPEND)) {
		perror("pool_replay: setting up");
		return 2;
	}
	snprintf(name, sizeof(name), "pool_replay.%d", getpid());
	fd = wsem_open(name, O_CREAT | O_EXCL, 0600, CAP);
	if (fd < 0 || fcntl(fd, F_SETFD, FD_CLOEXEC)) {
		perror("pool_replay: wsem_open");
		return 2;
	}
	for (i = 0; i < PLAIN; i++) {
		uint64_t s = rnd(&r);

		plain[i] = fork();
		if (plain[i] < 0)
			fail("fork: %m");
		if (!plain[i])
			replay_plain(fd, (REPLAY_PLAIN + i) << 8, s, CAP, note,
				     stopping);
	}
	for (i = 0; i < POOLED; i++) {
		gen[i] = next_gen++;
		worker[i] = spawn_worker(argv + 1, name, gen[i], &r);
	}
	start_ns = first_steps_ns();
	printf("the first workers ran in %lld ms\n",
	       (long long)(start_ns / 1000000));
	if (run_ns < 2 * start_ns)
		run_ns = 2 * start_ns;
	end = now_ns() + run_ns;
	while (now_ns() < end && !failed) {
		usleep(10000 + below(&r, start_ns / 1000));
		i = below(&r, POOLED);
		kill_worker(worker[i], gen[i]);
		kills++;
		gen[i] = next_gen++;
		worker[i] = spawn_worker(argv + 1, name, gen[i], &r);
	}
	atomic_store(plain_stop, 1);
	for (i = 0; i < PLAIN; i++)
		if (plain[i] > 0 && (waitpid(plain[i], &status, 0) != plain[i] ||
				     status))
			fail("plain process %d: status %#x", i, status);
	for (i = 0; i < POOLED; i++) {
		if (!failed)
			usleep(below(&r, start_ns / 1000 / POOLED + 1));
		kill_worker(worker[i], gen[i]);
		kills++;
	}
	if (wsem_stat(fd, &st))
		fail("wsem_stat: %m");
	else if (st.used || st.waiters)
		fail("used %llu, waiters %llu once all are gone",
		     (unsigned long long)st.used,
		     (unsigned long long)st.waiters);
	check_log(kills);
	wsem_unlink(name);
	close(fd);
	printf("%s\n", failed ? "failed" : "passed");
	return failed ? 1 : 0;
}
