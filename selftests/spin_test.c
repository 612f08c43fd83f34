// SPDX-License-Identifier: GPL-2.0
/*
 * The poll before the sleep (module parameter spin_ns): a waiter at the
 * head of the queue whose CPU has nothing else to run polls for its grant
 * a moment before it sleeps.
 *
 *  - a grant that comes while it polls is taken without a sleep: no
 *    voluntary context switch in the acquire call;
 *  - a signal ends the poll at once, and so does the deadline: neither
 *    waits for the poll's budget to run out.
 *
 *  - the poll adapts to the semaphore: short waits grow its budget up to
 *    spin_ns, one long wait ends the polling (a lease held for long costs
 *    no CPU in polls);
 *  - spin_ns has an upper bound.
 *
 * Every test sets spin_ns to SPIN_MAX (1 ms, the bound that users have
 * too: a test build accepts no more), grows its semaphore's budget to that
 * with short waits (train()), and puts the old value back.  What a test
 * does while the waiter polls takes a fraction of that, and the test's
 * thread busy-waits instead of sleeping (a sleep of 1 ms lasts longer in
 * a guest): it waits for the waiter to queue by polling its stat
 * (queued()), then for HOLD_NS on the clock.  The signal comes from a
 * timer of the waiter's own (SIG_AFTER_NS after it starts to acquire,
 * later on each try whose signal came before the call: a CI run saw a
 * guest take more than 100 us from the timer to the call, seven tries in
 * a row), so that only the waiter's CPU need run in that millisecond.  The waiter
 * is a thread pinned to CPU 1 with its own handle; the test's thread,
 * pinned to CPU 0, holds the semaphore's one unit.
 *
 * The event wsem_spin is switched on once for the program and off at its
 * end, not around each test: each switch is live code patching on every
 * CPU, and a 6.12 guest under TCG once died of an int3 that such a patch
 * left behind, in the scheduler's ttwu_do_activate().  wsem's events are
 * not patched there: the tracing core's saving of command names was, which
 * hooks sched_wakeup when the first event is enabled; tracefs() (util.h)
 * now turns that off, so only wsem's own code is patched.  An int3 still
 * hit after the patching ended is, as far as we can tell, the emulator
 * running code translated before the patch on another vCPU.
 *
 * Why a poll ended is read from the tracepoint wsem_spin ("end=..."), not
 * from how long it took: any other task that wants the waiter's CPU (a
 * kernel thread, RCU asking for a quiescent state) ends a poll as well,
 * after 10 ms to 0.5 s here, so timing cannot tell a poll that heeded the
 * signal from one that did not.  That same early end can come before what
 * a try waits for, so each test passes on the first of its tries that
 * shows it, and no try can show it without the code under test.  On a
 * loaded host the early ends come often (a CI run once saw 20 tries of a
 * 5 ms poll all end "busy"): hence short polls and many tries, which cost
 * only the first try when the code is right.  The tests of the signal and
 * the deadline take no chances in a test build: there its knob
 * test_spin_to_deadline makes a poll with a deadline run to it, ended
 * only by its grant or a signal (poll_to_deadline()).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <wsem.h>

#include "kselftest_harness.h"
#include "util.h"

#define SPIN_PARAM	"/sys/module/wsem/parameters/spin_ns"
#define SPIN_MAX	"1000000"	/* spin_ns's bound, 1 ms */
#define SPIN_EVENT	TRACEFS "/events/wsem/wsem_spin/enable"
#define TO_DEADLINE	"/sys/module/wsem/parameters/test_spin_to_deadline"
#define MSEC		1000000LL
#define USEC		1000LL
#define HOLD_NS		(20 * USEC)	/* the waiter polls this long first */
#define TIMEOUT_NS	(300 * USEC)	/* shorter than SPIN_MAX */
#define SIG_AFTER_NS	(100 * USEC)	/* ... and so is this, */
#define SIG_AFTER_MAX	(800 * USEC)	/* ... and this, its latest */
#define TRIES		400
#define TRIES_NS	(10 * NSEC)	/* at most this long trying */
#define GRANT_TRIES_NS	(60 * NSEC)	/* ... for a grant while polling */
#define LATE_NS		(2 * NSEC)	/* the wait of a signal come too early */
#define HELD_LATE_NS	(20 * MSEC)	/* ... when polls run to their deadline */
#define TRAIN		24

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id	_sigev_un._tid
#endif

FIXTURE(spin) {
	/* a named semaphore of capacity 1, unlinked at once */
	int fd;
	/* spin_ns before the test, put back by the teardown */
	char old[32];
	/* the event wsem_spin is on (tracefs) */
	bool traced;
	/* test_spin_to_deadline was set (a test build), put back by the teardown */
	bool to_deadline;
	bool ready;
};

/* Pin the calling thread to @cpu; 0 or -1. */
static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

/* One waiter thread: what it does and what came of it. */
struct waiter {
	int fd;			/* its own handle */
	int64_t timeout_ns;	/* < 0: wsem_acquire(), else the timeout */
	int64_t signal_ns;	/* > 0: SIGUSR1 to itself this long after */
	_Atomic pid_t tid;
	int ret, err;
	long nvcsw;		/* voluntary context switches in the call */
	int64_t call_ns;	/* when the acquire call began */
};

/* When SIGUSR1's handler last ran (now_ns()), 0 if not since reset. */
static _Atomic int64_t signalled_ns;

static void on_signal(int sig)
{
	(void)sig;
	signalled_ns = now_ns();
}

/* A timer that sends SIGUSR1 to the calling thread in @ns; 0 or -1. */
static int signal_me(timer_t *t, int64_t ns)
{
	struct sigevent sev = {
		.sigev_notify = SIGEV_THREAD_ID,
		.sigev_signo = SIGUSR1,
	};
	struct itimerspec its = { .it_value = { .tv_nsec = ns } };

	sev.sigev_notify_thread_id = gettid();
	if (timer_create(CLOCK_MONOTONIC, &sev, t))
		return -1;
	return timer_settime(*t, 0, &its, NULL);
}

static void *waiter_main(void *p)
{
	struct waiter *w = p;
	struct rusage before, after;
	timer_t t;

	w->tid = gettid();
	if (pin(1) || (w->signal_ns && signal_me(&t, w->signal_ns))) {
		w->ret = -1;
		w->err = errno;
		return NULL;
	}
	getrusage(RUSAGE_THREAD, &before);
	w->call_ns = now_ns();
	if (w->timeout_ns < 0)
		w->ret = wsem_acquire(w->fd, 1);
	else
		w->ret = wsem_acquire_timeout(w->fd, 1, w->timeout_ns);
	w->err = errno;
	getrusage(RUSAGE_THREAD, &after);
	w->nvcsw = after.ru_nvcsw - before.ru_nvcsw;
	if (w->signal_ns)
		timer_delete(t);
	if (!w->ret)
		wsem_release(w->fd, 1);
	return NULL;
}

/* Empty the trace, then start a waiter thread with a handle of its own. */
static int start(FIXTURE_DATA(spin) *self, struct waiter *w, pthread_t *th,
		 int64_t timeout_ns, int64_t signal_ns)
{
	memset(w, 0, sizeof(*w));
	if (self->traced && write_file(TRACEFS "/trace", ""))
		return -1;
	w->timeout_ns = timeout_ns;
	w->signal_ns = signal_ns;
	w->fd = wsem_reopen(self->fd, O_CLOEXEC);
	if (w->fd < 0)
		return -1;
	errno = pthread_create(th, NULL, waiter_main, w);
	return errno ? -1 : 0;
}

/* Busy-wait @ns: a sleep that short lasts much longer in a guest. */
static void spin_for(int64_t ns)
{
	int64_t end = now_ns() + ns;

	while (now_ns() < end)
		;
}

/*
 * Wait (10 s at most) until the semaphore of @fd has one waiter, without
 * sleeping between looks: the waiter polls for 1 ms at most.  0 or -1.
 */
static int queued(int fd)
{
	int64_t end = now_ns() + 10 * NSEC;
	struct wsem_stat st;

	do {
		if (wsem_stat(fd, &st))
			return -1;
		if (st.waiters == 1)
			return 0;
	} while (now_ns() < end);
	return -1;
}

/*
 * One hand-over: a waiter thread queues, the unit goes to it after
 * @hold_ns, it gives it back and @self->fd takes it again.  0, or -1 if any
 * step failed (the waiter's acquire included); @w tells how it went.
 */
static int hand_over(FIXTURE_DATA(spin) *self, struct waiter *w,
		     int64_t hold_ns)
{
	pthread_t th;

	if (start(self, w, &th, -1, 0) || queued(self->fd))
		return -1;
	spin_for(hold_ns);
	if (wsem_release(self->fd, 1) || pthread_join(th, NULL))
		return -1;
	return w->ret || close(w->fd) || wsem_acquire(self->fd, 1) ? -1 : 0;
}

/*
 * Grow the poll budget of @self's semaphore to spin_ns: only short waits
 * that end in a grant grow it, doubling it from 2 us (wsem_adapt_spin()),
 * so TRAIN of them reach spin_ns's bound.  @self->fd holds the unit before
 * and after.  0 or -1.
 */
static int train(FIXTURE_DATA(spin) *self)
{
	struct waiter w;
	int i;

	for (i = 0; i < TRAIN; i++)
		if (hand_over(self, &w, 0))
			return -1;
	return 0;
}

static int spin_end(pid_t tid, char *end, size_t len,
		    unsigned long long *ns);

/*
 * Before a try: a wait longer than 8 x spin_ns (8 ms, which a loaded host
 * makes of a short one now and then) ends the polling
 * (wsem_adapt_spin()), so grow the budget again if the last try, of
 * thread @tid (0: none yet), did not poll, or nobody can tell (no trace).
 * 0 or -1.
 */
static int retrain(FIXTURE_DATA(spin) *self, pid_t tid)
{
	char end[32];

	if (!tid || (self->traced && !spin_end(tid, end, sizeof(end), NULL)))
		return 0;
	return train(self);
}

/* The event wsem_spin, on from the start of the program to its end. */
static bool traced;

static void __attribute__((constructor)) trace_on(void)
{
	if (!tracefs() && !write_file(TRACEFS "/tracing_on", "0") &&
	    !write_file(TRACEFS "/trace", "") &&
	    !write_file(SPIN_EVENT, "1"))
		traced = !write_file(TRACEFS "/tracing_on", "1");
}

static void __attribute__((destructor)) trace_off(void)
{
	if (!traced)
		return;
	write_file(TRACEFS "/tracing_on", "0");
	write_file(SPIN_EVENT, "0");
	write_file(TRACEFS "/trace", "");
	traced = false;
}

FIXTURE_SETUP(spin)
{
	char name[WSEM_NAME_MAX];

	self->fd = -1;
	if (access("/dev/wsem", F_OK))
		SKIP(return, "/dev/wsem is missing (module not loaded)");
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		SKIP(return, "one CPU: nobody polls");
	if (read_file(SPIN_PARAM, self->old, sizeof(self->old)))
		SKIP(return, "%s: %s", SPIN_PARAM, strerror(errno));
	ASSERT_EQ(0, write_file(SPIN_PARAM, SPIN_MAX)) {
		TH_LOG("spin_ns %s: %s", SPIN_MAX, strerror(errno));
	}
	self->ready = true;
	self->traced = traced;
	ASSERT_EQ(0, pin(0));
	snprintf(name, sizeof(name), "spin.%d", getpid());
	self->fd = wsem_open(name, O_CREAT | O_EXCL | O_CLOEXEC, 0600, 1);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, wsem_unlink(name));
	ASSERT_EQ(0, wsem_acquire(self->fd, 1));
	ASSERT_EQ(0, train(self));
}

FIXTURE_TEARDOWN(spin)
{
	if (self->to_deadline)
		EXPECT_EQ(0, write_file(TO_DEADLINE, "0"));
	if (self->fd >= 0)
		EXPECT_EQ(0, close(self->fd));
	if (self->ready)
		EXPECT_EQ(0, write_file(SPIN_PARAM, self->old));
}

/*
 * How the last poll of thread @tid in the trace ended ("told", "signal",
 * ...) into @end of @len bytes, and after how many ns into *@ns (if not
 * NULL); 0, or -1 if it did not poll.
 */
static int spin_end(pid_t tid, char *end, size_t len, unsigned long long *ns)
{
	char line[512], want[64], *p;
	FILE *f = fopen(TRACEFS "/trace", "re");
	unsigned long long polled;
	int ret = -1;

	if (!f)
		return -1;
	snprintf(want, sizeof(want), " pid=%d spin_ns=", tid);
	while (fgets(line, sizeof(line), f)) {
		p = strstr(line, " wsem_spin: ");
		if (!p)
			continue;
		p = strstr(p, want);
		if (!p || sscanf(p + strlen(want), "%llu", &polled) != 1)
			continue;
		p = strstr(p, " end=");
		if (!p)
			continue;
		snprintf(end, len, "%s", p + 5);
		end[strcspn(end, "\n")] = 0;
		if (ns)
			*ns = polled;
		ret = 0;
	}
	fclose(f);
	return ret;
}

/*
 * Note waiter @w's try in @seen of @len bytes ("end@us/switches", end "-"
 * for no poll) and tell whether its poll ended @want (always true
 * untraced).
 */
static bool ended(bool traced, const struct waiter *w, const char *want,
		  char *seen, size_t len)
{
	char end[32] = "-";
	unsigned long long ns = 0;
	size_t n = strlen(seen);
	bool ok = !traced || (!spin_end(w->tid, end, sizeof(end), &ns) &&
			      !strcmp(end, want));

	snprintf(seen + n, len - n, " %s@%llu/%ld", end, ns / 1000, w->nvcsw);
	return ok;
}

/*
 * In a test build, polls with a deadline run to it (test_spin_to_deadline):
 * only the signal or the deadline under test can end them, so the first
 * try shows what it tests, however loaded the host (a CI run once saw
 * every try of 10 s end "busy" or "budget").  Elsewhere the tries go on
 * until one happens to show it.  0 or -1.
 */
static int poll_to_deadline(FIXTURE_DATA(spin) *self)
{
	if (access(TO_DEADLINE, F_OK))
		return 0;
	if (write_file(TO_DEADLINE, "1"))
		return -1;
	self->to_deadline = true;
	return 0;
}

/*
 * A release while the head waiter polls hands it the weight, and it never
 * sleeps: the poll ends "told" and the call made no voluntary context
 * switch.  Without the poll no try can pass, as the waiter is asleep for
 * HOLD_NS before the release.  (Without tracefs, the switches alone.)
 * Its poll has no deadline, so no knob keeps a loaded host from ending it:
 * the releasing thread's vCPU, descheduled by the host for longer than the
 * 1 ms budget, makes a try end "budget".  A CI run on the debug kernel,
 * beside check-distro's DKMS build, saw every try of 10 s end so: the
 * tries go on for up to a minute (they end at the first that shows it).
 */
TEST_F_TIMEOUT(spin, a_grant_while_polling_costs_no_sleep, 90)
{
	int64_t end = now_ns() + GRANT_TRIES_NS;
	char seen[24 * TRIES] = "";
	bool shown = false;
	struct waiter w;
	pthread_t th;
	int i;

	if (!self->ready)
		return;
	for (i = 0; i < TRIES && !shown && now_ns() < end; i++) {
		ASSERT_EQ(0, retrain(self, i ? w.tid : 0));
		ASSERT_EQ(0, start(self, &w, &th, -1, 0));
		ASSERT_EQ(0, queued(self->fd));
		spin_for(HOLD_NS);
		ASSERT_EQ(0, wsem_release(self->fd, 1));
		ASSERT_EQ(0, pthread_join(th, NULL));
		EXPECT_EQ(0, w.ret) {
			TH_LOG("acquire: %s", strerror(w.err));
		}
		EXPECT_EQ(0, close(w.fd));
		ASSERT_EQ(0, wsem_acquire(self->fd, 1));
		shown = ended(self->traced, &w, "told", seen, sizeof(seen)) &&
			!w.nvcsw;
	}
	EXPECT_TRUE(shown) {
		TH_LOG("no try was granted while polling (end@us/switches):%s",
		       seen);
	}
}

/* A signal ends the poll ("signal"), and the wait with EINTR. */
TEST_F(spin, a_signal_ends_the_poll)
{
	struct sigaction sa = { .sa_handler = on_signal };
	int64_t end = now_ns() + TRIES_NS, after = SIG_AFTER_NS;
	char seen[24 * TRIES] = "";
	int early = 0;
	struct wsem_stat st;
	bool shown = false;
	struct waiter w;
	pthread_t th;
	int i;

	if (!self->ready)
		return;
	if (!self->traced)
		SKIP(return, "no tracefs with the event wsem_spin");
	ASSERT_EQ(0, poll_to_deadline(self));
	sigemptyset(&sa.sa_mask);
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	for (i = 0; i < TRIES && !shown && now_ns() < end; i++) {
		ASSERT_EQ(0, retrain(self, i ? w.tid : 0));
		/*
		 * A slow CPU may take the signal before the call: the wait
		 * then ends at LATE_NS, the try shows nothing, and the next
		 * one's signal comes later.
		 */
		signalled_ns = 0;
		ASSERT_EQ(0, start(self, &w, &th,
				   self->to_deadline ? HELD_LATE_NS : LATE_NS,
				   after));
		ASSERT_EQ(0, pthread_join(th, NULL));
		if (signalled_ns && signalled_ns < w.call_ns) {
			early++;
			after = after * 2 < SIG_AFTER_MAX ? after * 2 :
							    SIG_AFTER_MAX;
		}
		EXPECT_EQ(-1, w.ret);
		EXPECT_TRUE(w.err == EINTR || w.err == ETIMEDOUT) {
			TH_LOG("acquire: %s", strerror(w.err));
		}
		ASSERT_EQ(0, wsem_stat(self->fd, &st));
		EXPECT_EQ(0, st.waiters);
		EXPECT_EQ(1, st.held);
		EXPECT_EQ(0, close(w.fd));
		shown = ended(true, &w, "signal", seen, sizeof(seen));
	}
	EXPECT_TRUE(shown) {
		TH_LOG("no poll ended for the signal (end@us/switches; %d of the signals came before the call):%s",
		       early, seen);
	}
}

/* The deadline ends the poll ("deadline"), and the wait with ETIMEDOUT. */
TEST_F(spin, the_deadline_ends_the_poll)
{
	int64_t end = now_ns() + TRIES_NS;
	char seen[24 * TRIES] = "";
	bool shown = false;
	struct waiter w;
	pthread_t th;
	int i;

	if (!self->ready)
		return;
	if (!self->traced)
		SKIP(return, "no tracefs with the event wsem_spin");
	ASSERT_EQ(0, poll_to_deadline(self));
	for (i = 0; i < TRIES && !shown && now_ns() < end; i++) {
		ASSERT_EQ(0, start(self, &w, &th, TIMEOUT_NS, 0));
		ASSERT_EQ(0, pthread_join(th, NULL));
		EXPECT_EQ(-1, w.ret);
		EXPECT_EQ(ETIMEDOUT, w.err);
		EXPECT_EQ(0, close(w.fd));
		shown = ended(true, &w, "deadline", seen, sizeof(seen));
	}
	EXPECT_TRUE(shown) {
		TH_LOG("no poll ended at the deadline (end@us/switches):%s",
		       seen);
	}
}

/*
 * The poll adapts: a wait longer than spin_ns ends the polling on its
 * semaphore, and the next head waiter sleeps without a poll; short waits
 * bring the poll back.
 */
TEST_F(spin, a_long_wait_ends_the_polling)
{
	bool polled = false;
	struct waiter w;
	char end[32];
	int i;

	if (!self->ready)
		return;
	if (!self->traced)
		SKIP(return, "no tracefs with the event wsem_spin");
	/*
	 * 1 ms of poll at most, so a wait of 20 ms is long: each time, the
	 * next waiter does not poll at all.  Three times, so that a poll
	 * that did not start for a busy CPU cannot pass for a budget of 0.
	 */
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, hand_over(self, &w, 20 * MSEC));
		ASSERT_EQ(0, hand_over(self, &w, 0));
		EXPECT_EQ(-1, spin_end(w.tid, end, sizeof(end), NULL)) {
			TH_LOG("it polled after a long wait (end=%s)", end);
		}
	}
	/* Short waits grow it again: some try polls. */
	ASSERT_EQ(0, train(self));
	for (i = 0; i < TRIES && !polled; i++) {
		ASSERT_EQ(0, hand_over(self, &w, 0));
		polled = !spin_end(w.tid, end, sizeof(end), NULL);
	}
	EXPECT_TRUE(polled) {
		TH_LOG("short waits did not bring the poll back");
	}
}

/*
 * spin_ns is bounded, at 1 ms in every build (a test build too): a value
 * above the bound is refused, nothing changes.
 */
TEST_F(spin, spin_ns_has_an_upper_bound)
{
	char now[32];

	if (!self->ready)
		return;
	EXPECT_EQ(-1, write_file(SPIN_PARAM, "1000001"));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, write_file(SPIN_PARAM, "4000000000"));
	EXPECT_EQ(EINVAL, errno);
	ASSERT_EQ(0, read_file(SPIN_PARAM, now, sizeof(now)));
	EXPECT_EQ(0, strncmp(now, SPIN_MAX, strlen(SPIN_MAX)));
}

TEST_HARNESS_MAIN
