// SPDX-License-Identifier: GPL-2.0
/*
 * Scenario 11: hand-offs through the jobserver endpoint, a ring of P
 * processes on a capacity-1 semaphore (issue 29, point 4).
 *
 * A named semaphore of capacity 1 is made, and its endpoint is reached
 * through wsemfs: an existing mount of type "wsem", else the scenario
 * mounts one on /sys/fs/wsem for its run and unmounts it after (so that
 * the module can be unloaded: make bench BEFORE= swaps modules).  The
 * endpoint is MOUNT/@jobserver/NAME.
 *
 * Each of the P processes opens the endpoint itself (O_RDWR|O_NONBLOCK)
 * and loops as GNU make does around a job: poll(POLLIN) on it, a
 * non-blocking read of one byte (EAGAIN: poll again), the job, and a
 * write of the byte.  The job is only this: until another member's
 * request is queued (WSEM_IOC_STAT's waiters, through a handle of the
 * semaphore; sched_yield() between looks), so that every write hands
 * the unit on, as a real job, longer than a poll, lets the others queue.
 * The poll queues the process's request, so the processes take the unit
 * in FIFO order, one after the other: a ring.  Every process reads as soon as its poll says
 * readable (the endpoint gives back a granted unit that is not read
 * within a second).  P is 2, 102 and 402: 0, 100 and 400 processes more
 * that poll in the same ring.  A module that wakes every poller on each
 * grant (a herd) makes each hand-off cost O(P) wake-ups; one that wakes
 * only the granted process's pollers keeps it constant.
 *
 * Without that job, a member can be preempted between its write and its
 * next poll (by the member it woke, or at a tick), or its CPU stall there
 * (an emulated CPU on a busy host often does); another member that then
 * finds nobody queued reads, writes and polls again and is granted at
 * once, alone until its time slice ends.  With P = 2 most reads were
 * then not hand-offs (1 to 10 %), and the rate measured that luck more
 * than the hand-off; P > 2 nearly always has somebody queued.  "alt" (the
 * share of reads that were hand-offs) and "waited" (the share whose
 * holder found nobody queued at first) show how often it comes up.
 *
 * Beside each ring, peers run the same P processes with the same loop
 * (ppoll, a non-blocking read, one WSEM_IOC_STAT as the job, a write) but
 * hand the token round by name, with no jobserver: member i polls and
 * reads its own eventfd (the floor) or its own pipe (the pipe ring) and
 * writes the next member's, which wakes exactly that one.  What a
 * hand-off among P processes costs this machine without wsem: if the
 * peers slow down from P = 2 to 402 as the endpoint does, the cost is
 * the machine's, not the module's.
 *
 * Each of these rings runs twice more with its members sharing one
 * address space: made by clone(CLONE_VM | SIGCHLD) without CLONE_THREAD
 * or CLONE_FILES, they are still processes of their own (thread groups,
 * file tables), so the endpoint charges each as before, but a switch
 * from one member to another changes no page tables.  A ring of
 * processes switches address space at every hand-off unless each member
 * has a CPU of its own (P = 2, free, on 2 CPUs: a member sleeps into the
 * idle task, which keeps its address space loaded; pinned, even P = 2
 * switches): a CR3 write, which an emulated CPU (QEMU TCG) answers by
 * flushing its whole software TLB.
 * These members share errno too (glibc's, in the one thread's TLS): a
 * member takes EINTR and EAGAIN alike as "look again" (the stop flag
 * ends the loop), so that another member's EAGAIN cannot fail its row.
 *
 * Each P runs twice: free on all CPUs under the normal scheduler, as make
 * runs, the headline; then with every member pinned on one CPU as
 * SCHED_FIFO.  SCHED_FIFO tasks of one priority on one CPU are neither
 * preempted by the one they wake nor by the tick: the writer goes on
 * until it sleeps in its next poll, its request queued, before the woken
 * one runs, so the ring turns in strict FIFO order, every hand-off the
 * same sequence.  There a herd showed less (a module that wakes every
 * poller ran P = 102 as fast as P = 2): likely because pollers woken for
 * nothing queue behind the granted one and are still runnable at the
 * next grant, which then wakes nobody new.
 *
 * Each P runs WARM_SECONDS, then SECONDS are measured: a hand-off is a
 * read by another process than the last reader.  CPU = user + system
 * time of the P processes over the window (their CPU clocks, read at
 * its edges); guest = the whole machine's busy time from /proc/stat
 * (ticks), which adds the kernel's threads (a kworker expiring a
 * reservation, say) and this process.  Each row's rate is compared with
 * P = 2's of the same ring under the same scheduling, measured seconds
 * before in the same run; at each P, the rings run back to back.
 *
 * The ring stops on a flag and SIGUSR1: a member blocks the signal
 * except inside ppoll(), so none misses it.  Then every member must exit
 * by itself with status 0, and the semaphore must show used 0 and no
 * waiters (WSEM_IOC_STAT): a row that does not is marked failed, on the
 * console and in the table.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <wsem.h>

#include "bench.h"

#define MAX_P		402
#define WARM_SECONDS	1.0
#define SECONDS		3.0
#define READY_TIMEOUT	(60 * NSEC_PER_SEC)
#define REAP_TIMEOUT	(60 * NSEC_PER_SEC)
#define SETTLE_TIMEOUT	(2 * NSEC_PER_SEC)
#define FS_TYPE		"wsem"
#define FS_DIR		"/sys/fs/wsem"
#define MNT_MAX		1024	/* the mount's path, with its NUL */

#define STACK_SIZE	(256 * 1024)	/* a CLONE_VM member's stack */

static const int sizes[] = { 2, 102, MAX_P };
#define NSIZES	((int)(sizeof(sizes) / sizeof(sizes[0])))

/* How the token goes round. */
enum kind { K_ENDPOINT, K_EVENTFD, K_PIPE, NKINDS };

static const char *const kind_name[] = { "endpoint", "floor", "pipe" };
static const char *const kind_label[] = {
	"endpoint", "floor (eventfd ring)", "pipe ring",
};
/* Keys: "" for the endpoint's, as before the peers came. */
static const char *const kind_key[] = { "", "floor.", "pipe." };

/* A group of rows: a ring, in own address spaces or one shared. */
#define NVARIANTS	(2 * NKINDS)
#define NSCHED		2

/* One member's counters, written by it alone. */
struct slot {
	_Atomic uint64_t reads;
	_Atomic uint64_t handoffs;	/* reads after another's */
	_Atomic uint64_t eagain;	/* readable, then EAGAIN */
	_Atomic uint64_t waited;	/* nobody queued at first */
} __attribute__((aligned(64)));

/* Shared by the parent and the members. */
struct ring {
	_Atomic int ready;		/* members with the endpoint open */
	_Atomic int go;
	_Atomic int queued;		/* members whose request is queued */
	_Atomic int start;
	_Atomic int stop;
	_Atomic int last;		/* the last reader, or -1 */
	_Atomic int err;		/* a member's first errno */
	_Atomic int err_at;		/* where: enum step */
	bool pinned;			/* members on CPU 0, SCHED_FIFO */
	enum kind kind;
	bool shared;			/* one address space (CLONE_VM) */
	int members;			/* P */
	int semfd;			/* a handle of the semaphore */
	int rfd[MAX_P];			/* a peer's: member i reads this */
	int wfd[MAX_P];			/* and the one before writes this */
	char path[MNT_MAX + 128];
	struct slot slot[MAX_P];
};

enum step {
	S_NONE, S_SCHED, S_OPEN, S_POLL, S_REVENTS, S_READ, S_STAT, S_WRITE
};

static const char *const step_name[] = {
	"", "sched_setscheduler", "open", "poll", "poll's revents", "read",
	"stat", "write",
};

static const char *const sched_name[] = { "free", "pinned" };
static const char *const sched_label[] = {
	"free on all CPUs, normal scheduling, as make runs",
	"pinned on one CPU, SCHED_FIFO: strict turns",
};

struct row {
	int p;
	bool pinned;
	enum kind kind;
	bool shared;
	double rate;
	uint64_t reads, handoffs, eagain, waited, ns;
	uint64_t cpu, busy;		/* ns: the members; the guest */
	uint64_t used, waiters;		/* after the ring ended */
	bool ok;
};

static void on_usr1(int sig)
{
	(void)sig;
}

static void member_fail(struct ring *r, enum step at)
{
	int none = 0;

	if (atomic_compare_exchange_strong(&r->err, &none, errno ? errno : -1))
		atomic_store(&r->err_at, at);
	_exit(1);
}

/*
 * The holder's "job": it lasts until another member's request is queued
 * (stat's waiters), so that the write hands the unit on.  0, or -1.
 */
static int others_queued(struct ring *r, struct slot *s)
{
	struct wsem_stat st;
	bool waited = false;

	for (;;) {
		if (wsem_stat(r->semfd, &st))
			return -1;
		if (st.waiters || atomic_load(&r->stop))
			break;
		waited = true;
		sched_yield();
	}
	if (waited)
		atomic_fetch_add_explicit(&s->waited, 1, memory_order_relaxed);
	return 0;
}

/*
 * A failed ppoll or read that only says "look again": EINTR (SIGUSR1 at
 * the stop) or EAGAIN.  Either, as members that share an address space
 * share errno, and one's may be another's.
 */
static bool again(void)
{
	return errno == EINTR || errno == EAGAIN;
}

/*
 * A member of a peer ring: P processes that hand a token round by name,
 * each polling its own eventfd or pipe and writing the next member's,
 * with the endpoint ring's syscalls otherwise (ppoll, read, one
 * WSEM_IOC_STAT as the job, write).  It wakes exactly the next one: what
 * a hand-off among P processes costs the machine without any jobserver.
 */
static void chain_member(struct ring *r, struct slot *s, int me, int p,
			 const sigset_t *inside)
{
	struct pollfd pfd = { .fd = r->rfd[me], .events = POLLIN };
	size_t len = r->kind == K_EVENTFD ? sizeof(uint64_t) : 1;
	uint64_t token = 1;
	struct wsem_stat st;

	atomic_fetch_add(&r->ready, 1);
	futex_wait_for(&r->go, 0);
	atomic_fetch_add(&r->queued, 1);
	futex_wait_for(&r->start, 0);
	while (!atomic_load(&r->stop)) {
		if (ppoll(&pfd, 1, NULL, inside) < 0) {
			if (again())
				continue;
			member_fail(r, S_POLL);
		}
		if (!(pfd.revents & POLLIN))
			continue;
		if (read(pfd.fd, &token, len) != (ssize_t)len) {
			if (again())
				continue;
			member_fail(r, S_READ);
		}
		atomic_fetch_add_explicit(&s->reads, 1, memory_order_relaxed);
		if (atomic_exchange(&r->last, me) != me)
			atomic_fetch_add_explicit(&s->handoffs, 1,
						  memory_order_relaxed);
		if (wsem_stat(r->semfd, &st))
			member_fail(r, S_STAT);
		token = 1;
		if (write(r->wfd[(me + 1) % p], &token, len) != (ssize_t)len)
			member_fail(r, S_WRITE);
	}
}

static void member(void *arg, int me)
{
	struct ring *r = arg;
	struct slot *s = &r->slot[me];
	struct sigaction sa = { .sa_handler = on_usr1 };
	struct pollfd pfd = { .events = POLLIN };
	struct sched_param fifo = { .sched_priority = 1 };
	sigset_t usr1, inside;
	ssize_t n;
	char c;

	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, &inside);
	sigdelset(&inside, SIGUSR1);
	sigaction(SIGUSR1, &sa, NULL);
	if (r->pinned) {
		pin_cpu(0);
		if (sched_setscheduler(0, SCHED_FIFO, &fifo))
			member_fail(r, S_SCHED);
	}
	if (r->kind != K_ENDPOINT) {
		chain_member(r, s, me, r->members, &inside);
		return;
	}
	pfd.fd = open(r->path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (pfd.fd < 0)
		member_fail(r, S_OPEN);
	atomic_fetch_add(&r->ready, 1);
	futex_wait_for(&r->go, 0);
	/*
	 * Queue the request before the ring turns (one is granted at once):
	 * else the first member to run, finding nobody queued, could keep
	 * the unit to itself, and pinned as SCHED_FIFO it would run alone.
	 */
	if (poll(&pfd, 1, 0) < 0)
		member_fail(r, S_POLL);
	atomic_fetch_add(&r->queued, 1);
	futex_wait_for(&r->start, 0);
	while (!atomic_load(&r->stop)) {
		if (ppoll(&pfd, 1, NULL, &inside) < 0) {
			if (again())
				continue;
			member_fail(r, S_POLL);
		}
		if (pfd.revents & (POLLERR | POLLNVAL)) {
			errno = EIO;
			member_fail(r, S_REVENTS);
		}
		if (!(pfd.revents & POLLIN))
			continue;
		n = read(pfd.fd, &c, 1);
		if (n < 0 && again()) {
			atomic_fetch_add_explicit(&s->eagain, 1,
						  memory_order_relaxed);
			continue;
		}
		if (n != 1)
			member_fail(r, S_READ);
		atomic_fetch_add_explicit(&s->reads, 1, memory_order_relaxed);
		if (atomic_exchange(&r->last, me) != me)
			atomic_fetch_add_explicit(&s->handoffs, 1,
						  memory_order_relaxed);
		if (others_queued(r, s))
			member_fail(r, S_STAT);
		if (write(pfd.fd, &c, 1) != 1)
			member_fail(r, S_WRITE);
	}
	close(pfd.fd);
}

/* The counters of the @p members, summed: reads, hand-offs, EAGAIN, waited. */
static void sum(const struct ring *r, int p, uint64_t *v)
{
	int i;

	v[0] = v[1] = v[2] = v[3] = 0;
	for (i = 0; i < p; i++) {
		v[0] += atomic_load(&r->slot[i].reads);
		v[1] += atomic_load(&r->slot[i].handoffs);
		v[2] += atomic_load(&r->slot[i].eagain);
		v[3] += atomic_load(&r->slot[i].waited);
	}
}

/* Until *@count is @n, a member failed, or the time is up: 0, or -1. */
static int wait_count(struct ring *r, _Atomic int *count, int n)
{
	uint64_t end = now_ns() + READY_TIMEOUT;

	while (atomic_load(count) < n) {
		if (atomic_load(&r->err) || now_ns() > end)
			return -1;
		sleep_ns(NSEC_PER_MSEC);
	}
	return 0;
}

/* used and waiters of @fd's semaphore, once both are 0 or time is up. */
static int settle(int fd, struct row *row)
{
	uint64_t end = now_ns() + SETTLE_TIMEOUT, t0 = now_ns();
	struct wsem_stat st;
	int looks = 0;

	for (;;) {
		if (wsem_stat(fd, &st))
			return -1;
		if (!looks++ && (st.used || st.waiters))
			progress("jobserver: P=%d: used %llu, %llu waiters as "
				 "the last member was reaped", row->p,
				 (unsigned long long)st.used,
				 (unsigned long long)st.waiters);
		row->used = st.used;
		row->waiters = st.waiters;
		if (!st.used && !st.waiters) {
			if (looks > 1)
				progress("jobserver: P=%d: used 0, no waiters "
					 "%.1f ms later", row->p,
					 (double)(now_ns() - t0) / 1e6);
			return 0;
		}
		if (now_ns() > end)
			return -1;
		sleep_ns(NSEC_PER_MSEC);
	}
}

/* A member made by clone(CLONE_VM): what it runs. */
struct start {
	struct ring *r;
	int me;
};

static int shared_start(void *arg)
{
	struct start *st = arg;

	member(st->r, st->me);
	_exit(0);
}

/*
 * A member @me of @r that shares this address space, on @stack (STACK_SIZE
 * bytes): its own process still, with its own file table and signal
 * handlers.  Its pid, or -1.
 */
static pid_t spawn_shared(struct ring *r, int me, struct start *st,
			  char *stack)
{
	st->r = r;
	st->me = me;
	fflush(NULL);
	return clone(shared_start, stack + STACK_SIZE, CLONE_VM | SIGCHLD, st);
}

/* Open @r's peer ring's descriptors, @row->p of each: 0, or -1. */
static int open_peers(struct ring *r, int p, int *nfd)
{
	int fds[2];

	for (; *nfd < p; ++*nfd) {
		if (r->kind == K_EVENTFD) {
			fds[0] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
			fds[1] = fds[0];
			if (fds[0] < 0) {
				progress("jobserver: eventfd: %s",
					 strerror(errno));
				return -1;
			}
		} else if (pipe2(fds, O_NONBLOCK | O_CLOEXEC)) {
			progress("jobserver: pipe2: %s", strerror(errno));
			return -1;
		}
		r->rfd[*nfd] = fds[0];
		r->wfd[*nfd] = fds[1];
	}
	return 0;
}

static void close_peers(struct ring *r, int nfd)
{
	while (nfd-- > 0) {
		if (r->wfd[nfd] != r->rfd[nfd])
			close(r->wfd[nfd]);
		close(r->rfd[nfd]);
	}
}

/* One ring of @row->p members on a fresh semaphore under @mnt. */
static int run(struct row *row, const char *mnt)
{
	static pid_t pids[MAX_P];
	static struct start starts[MAX_P];
	struct ring *r = shared_alloc(sizeof(*r));
	size_t stacks_len = row->shared ? (size_t)row->p * STACK_SIZE : 0;
	char *stacks = NULL;
	uint64_t v0[4], v1[4], c0, c1, b0, b1, t0, t1, one = 1;
	int fd, made = 0, nefd = 0, i, ret = -1;
	char name[64];

	if (!r)
		return -1;
	if (stacks_len) {
		stacks = mmap(NULL, stacks_len, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
		if (stacks == MAP_FAILED) {
			progress("jobserver: mmap: %s", strerror(errno));
			shared_free(r, sizeof(*r));
			return -1;
		}
	}
	snprintf(name, sizeof(name), "bench-js-%d-%d", (int)getpid(), row->p);
	fd = wsem_open(name, O_CREAT | O_EXCL, 0600, 1);
	if (fd < 0) {
		progress("jobserver: wsem_open %s: %s", name, strerror(errno));
		goto out;
	}
	snprintf(r->path, sizeof(r->path), "%s/@jobserver/%s", mnt, name);
	atomic_store(&r->last, -1);
	r->members = row->p;
	r->pinned = row->pinned;
	r->kind = row->kind;
	r->shared = row->shared;
	r->semfd = fd;
	if (r->kind != K_ENDPOINT && open_peers(r, row->p, &nefd))
		goto close_efd;
	for (; made < row->p; made++) {
		pids[made] = row->shared ?
			spawn_shared(r, made, &starts[made],
				     stacks + (size_t)made * STACK_SIZE) :
			spawn(member, r, made);
		if (pids[made] < 0)
			break;
	}
	if (made < row->p || wait_count(r, &r->ready, row->p)) {
		progress("jobserver: P=%d: %d of them started, %d ready",
			 row->p, made, atomic_load(&r->ready));
		goto stop;
	}
	atomic_store(&r->go, 1);
	futex_wake_all(&r->go);
	if (wait_count(r, &r->queued, row->p)) {
		progress("jobserver: P=%d: %d of them queued", row->p,
			 atomic_load(&r->queued));
		goto stop;
	}
	if (r->kind != K_ENDPOINT &&
	    write(r->wfd[0], &one, r->kind == K_EVENTFD ? sizeof(one) : 1) < 0) {
		progress("jobserver: the first token: %s", strerror(errno));
		goto stop;
	}
	atomic_store(&r->start, 1);
	futex_wake_all(&r->start);
	sleep_ns(run_ns(WARM_SECONDS));
	t0 = now_ns();
	b0 = busy_ns();
	c0 = cpu_ns_all(pids, made);
	sum(r, made, v0);
	sleep_ns(run_ns(SECONDS));
	sum(r, made, v1);
	c1 = cpu_ns_all(pids, made);
	b1 = busy_ns();
	t1 = now_ns();
	row->reads = v1[0] - v0[0];
	row->handoffs = v1[1] - v0[1];
	row->eagain = v1[2] - v0[2];
	row->waited = v1[3] - v0[3];
	row->ns = t1 - t0;
	row->cpu = c1 - c0;
	row->busy = b1 - b0;
	row->rate = (double)row->handoffs * NSEC_PER_SEC / (double)row->ns;
	ret = 0;
stop:
	atomic_store(&r->stop, 1);
	atomic_store(&r->go, 1);
	futex_wake_all(&r->go);
	atomic_store(&r->start, 1);
	futex_wake_all(&r->start);
	for (i = 0; i < made; i++)
		kill(pids[i], SIGUSR1);
	if (reap(pids, made, REAP_TIMEOUT)) {
		progress("jobserver: P=%d: a member failed or hung", row->p);
		ret = -1;
	}
	if (atomic_load(&r->err)) {
		progress("jobserver: P=%d: a member's %s failed: %s", row->p,
			 step_name[atomic_load(&r->err_at)],
			 strerror(atomic_load(&r->err)));
		ret = -1;
	}
	if (settle(fd, row)) {
		progress("jobserver: P=%d: FAILED: after every member ended, "
			 "used %llu and %llu waiters (want 0 and 0)", row->p,
			 (unsigned long long)row->used,
			 (unsigned long long)row->waiters);
		ret = -1;
	}
close_efd:
	close_peers(r, nefd);
	close(fd);
	if (wsem_unlink(name))
		ret = -1;
out:
	if (stacks)
		munmap(stacks, stacks_len);
	shared_free(r, sizeof(*r));
	return ret;
}

/*
 * The directory of a mount of wsemfs into @dir; *@mounted if this call
 * mounted it (on FS_DIR).  0, or -1.
 */
static int find_mount(char *dir, size_t len, bool *mounted)
{
	char src[256], where[MNT_MAX], type[64], line[3 * MNT_MAX];
	FILE *f = fopen("/proc/self/mounts", "r");

	*mounted = false;
	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%255s %1023s %63s", src, where, type) != 3)
			continue;
		if (!strcmp(type, FS_TYPE)) {
			fclose(f);
			snprintf(dir, len, "%s", where);
			return 0;
		}
	}
	if (f)
		fclose(f);
	if (mount(FS_TYPE, FS_DIR, FS_TYPE, 0, NULL)) {
		progress("jobserver: mount -t %s %s: %s", FS_TYPE, FS_DIR,
			 strerror(errno));
		return -1;
	}
	*mounted = true;
	snprintf(dir, len, "%s", FS_DIR);
	return 0;
}

/* Row @i (of sizes[]) of variant @v under scheduling @k. */
static size_t at(int k, int v, int i)
{
	return ((size_t)k * NVARIANTS + (size_t)v) * NSIZES + (size_t)i;
}

/* The prefix of a group's metric keys: "vm." if shared, the kind's. */
static void key_prefix(char *buf, size_t len, const struct row *g)
{
	snprintf(buf, len, "%s%s", g->shared ? "vm." : "", kind_key[g->kind]);
}

static const char *space_label(const struct row *g)
{
	return g->shared ? ", one address space (CLONE_VM)" : "";
}

/* The rows of one ring under one scheduling, @rows[0] with P = 2. */
static void print_group(const struct row *rows, int n)
{
	const struct row *base = rows[0].ok ? &rows[0] : NULL;
	const char *sn = sched_name[rows[0].pinned];
	double cpu, busy, cpu0 = NAN, busy0 = NAN;
	char key[96], label[192], kind[16];
	int i;

	key_prefix(kind, sizeof(kind), &rows[0]);
	if (base) {
		cpu0 = per_op(base->cpu, base->handoffs);
		busy0 = per_op(base->busy, base->handoffs);
	}
	table("   %s%s, %s\n", kind_label[rows[0].kind], space_label(rows),
	      sched_label[rows[0].pinned]);
	plot("# jobserver-%s%s\n", kind, sn);
	for (i = 0; i < n; i++) {
		const struct row *r = &rows[i];
		double q = base && r->ok ? ratio(base->rate, r->rate) : NAN;

		cpu = per_op(r->cpu, r->handoffs);
		busy = per_op(r->busy, r->handoffs);
		table("   %5d %5d %10.0f %7.2f %10.0f %10.0f %9.2f %5.2f "
		      "%5.1f%% %6.1f%% %7llu%s\n", r->p, r->p - 2, r->rate, q,
		      cpu, busy, ratio(cpu, cpu0),
		      r->ns ? (double)r->busy / (double)r->ns : 0,
		      r->reads ? 100.0 * (double)r->handoffs /
				 (double)r->reads : 0,
		      r->reads ? 100.0 * (double)r->waited /
				 (double)r->reads : 0,
		      (unsigned long long)r->eagain,
		      r->ok ? "" : "  (FAILED)");
		plot("%d %.1f %.4f %.1f %.1f\n", r->p, r->rate, q, cpu, busy);
		json_begin(NULL);
		json_str("ring", kind_name[rows[0].kind]);
		json_str("address_space", rows[0].shared ? "shared" : "own");
		json_str("scheduling", sn);
		json_int("processes", r->p);
		json_num("handoffs_per_s", r->rate);
		json_num("time_ratio_to_p2", q);
		json_num("cpu_ns_per_handoff", cpu);
		json_num("guest_cpu_ns_per_handoff", busy);
		json_num("cpu_ratio_to_p2", ratio(cpu, cpu0));
		json_num("guest_cpu_ratio_to_p2", ratio(busy, busy0));
		json_int("handoffs", (long long)r->handoffs);
		json_int("reads", (long long)r->reads);
		json_int("eagain", (long long)r->eagain);
		json_int("waited", (long long)r->waited);
		json_int("used_after", (long long)r->used);
		json_int("waiters_after", (long long)r->waiters);
		json_bool("ok", r->ok);
		json_end();
		if (!r->ok)
			continue;
		snprintf(key, sizeof(key), "jobserver.%s%s.p%d.rate", kind, sn,
			 r->p);
		snprintf(label, sizeof(label), "jobserver %s%s P=%d: "
			 "hand-offs/s", kind, sn, r->p);
		metric(key, label, r->rate);
		snprintf(key, sizeof(key), "jobserver.%s%s.p%d.cpu", kind, sn,
			 r->p);
		snprintf(label, sizeof(label), "jobserver %s%s P=%d: CPU per "
			 "hand-off, ns (the P)", kind, sn, r->p);
		metric(key, label, cpu);
		snprintf(key, sizeof(key), "jobserver.%s%s.p%d.guest_cpu", kind,
			 sn, r->p);
		snprintf(label, sizeof(label), "jobserver %s%s P=%d: guest "
			 "CPU per hand-off, ns", kind, sn, r->p);
		metric(key, label, busy);
		if (r == base)
			continue;
		snprintf(key, sizeof(key), "jobserver.%s%s.p%d.ratio", kind, sn,
			 r->p);
		snprintf(label, sizeof(label), "jobserver %s%s P=%d: time per "
			 "hand-off / P=2's", kind, sn, r->p);
		metric(key, label, q);
	}
	plot("\n\n");
}

/*
 * The endpoint against the pipe ring at each size (issue 42's measure:
 * the peer with the same scheduling cost, a hand-off waking one process):
 * time per hand-off over the pipe ring's, with each ring's CPU per
 * hand-off beside it.  @ep and @fl: their rows, P = 2 first.
 */
static void print_each_size(const struct row *ep, const struct row *fl,
			    const char *sn, const char *pre, const char *what)
{
	char key[96], label[192];
	double q;
	int i;

	table("   jobserver, %s: time per hand-off, endpoint / %s (CPU per "
	      "hand-off, endpoint / %s, us):", sn, what, what);
	for (i = 0; i < NSIZES; i++) {
		q = ep[i].ok && fl[i].ok ? ratio(fl[i].rate, ep[i].rate) : NAN;
		table("%s %.2f at P=%d (%.0f / %.0f)", i ? "," : "", q,
		      sizes[i], per_op(ep[i].cpu, ep[i].handoffs) / 1000,
		      per_op(fl[i].cpu, fl[i].handoffs) / 1000);
		snprintf(key, sizeof(key), "jobserver.%s%s.p%d.over_peer", pre,
			 sn, sizes[i]);
		snprintf(label, sizeof(label), "jobserver %s P=%d: time per "
			 "hand-off, endpoint / %s", sn, sizes[i], what);
		metric(key, label, q);
	}
	table("\n");
}

/*
 * The endpoint against a peer ring under one scheduling: @ep and @fl are
 * their rows (P = 2 first), in the same kind of address space.  The
 * endpoint's own share of a hand-off is its time per hand-off over the
 * peer's at the same P, and its CPU above the peer's; "flat" is that
 * quotient at P = 402 over the one at P = 2: 1 when 400 more pollers cost
 * the endpoint nothing more than they cost the machine, above 1 when they
 * cost it more.
 */
static void print_floor(const struct row *ep, const struct row *fl)
{
	const int last = NSIZES - 1;
	const char *sn = sched_name[ep->pinned];
	double f0 = NAN, f1 = NAN, over0 = NAN, over1 = NAN;
	char key[96], label[192], pre[16], what[64];

	if (ep[0].ok && fl[0].ok) {
		f0 = ratio(fl[0].rate, ep[0].rate);
		over0 = per_op(ep[0].cpu, ep[0].handoffs) -
			per_op(fl[0].cpu, fl[0].handoffs);
	}
	if (ep[last].ok && fl[last].ok) {
		f1 = ratio(fl[last].rate, ep[last].rate);
		over1 = per_op(ep[last].cpu, ep[last].handoffs) -
			per_op(fl[last].cpu, fl[last].handoffs);
	}
	/* The keys of the eventfd floor in own spaces, as before the pipes. */
	snprintf(pre, sizeof(pre), "%s%s", ep->shared ? "vm." : "",
		 fl->kind == K_PIPE ? "pipe." : "");
	snprintf(what, sizeof(what), "%s%s", fl->kind == K_PIPE ? "pipe ring" :
		 "floor", ep->shared ? ", one space" : "");
	table("   jobserver, %s: time per hand-off, endpoint / %s = %.2f at "
	      "P=2, %.2f at P=%d: flat = %.2f\n", sn, what, f0, f1, MAX_P,
	      ratio(f1, f0));
	table("   jobserver, %s: the endpoint's CPU above the %s's per "
	      "hand-off = %.0f ns at P=2, %.0f ns at P=%d (%.2f times)\n",
	      sn, what, over0, over1, MAX_P, ratio(over1, over0));
	snprintf(key, sizeof(key), "jobserver.%s%s.flat", pre, sn);
	snprintf(label, sizeof(label), "jobserver %s (%s): time per hand-off, "
		 "(endpoint / peer at P=%d) / (at P=2)", sn, what, MAX_P);
	metric(key, label, ratio(f1, f0));
	snprintf(key, sizeof(key), "jobserver.%s%s.over_floor_cpu_ratio", pre,
		 sn);
	snprintf(label, sizeof(label), "jobserver %s (%s): CPU above the "
		 "peer's per hand-off, P=%d / P=2", sn, what, MAX_P);
	metric(key, label, ratio(over1, over0));
	if (fl->kind == K_PIPE)
		print_each_size(ep, fl, sn, pre, what);
}

/* One cell of the summary: time ratio (CPU ratio) of row @i to P=2's. */
static void summary_cell(const struct row *g, int i)
{
	double c0 = per_op(g[0].cpu, g[0].handoffs);
	double ci = per_op(g[i].cpu, g[i].handoffs);

	if (!g[0].ok || !g[i].ok) {
		table(" %13s", "-");
		return;
	}
	table(" %6.2f (%4.2f)", ratio(g[0].rate, g[i].rate), ratio(ci, c0));
}

/* @rows: NSCHED * NVARIANTS groups of NSIZES (at()). */
static void print(const struct row *rows, const char *mnt)
{
	const struct row *g;
	char name[64];
	int k, v;

	table("\n11. Jobserver endpoint: a ring of P processes hands one token "
	      "round, capacity 1\n    (%s/@jobserver/NAME; each: poll(POLLIN), "
	      "non-blocking read of 1 byte,\n    a job lasting until another "
	      "request is queued, write the byte back);\n    peers, a hand-off "
	      "among P processes without a jobserver: the same P hand a\n    "
	      "token round through an eventfd each (the floor) or a pipe each "
	      "(the pipe ring),\n    each writing the next one's (poll, read, "
	      "one WSEM_IOC_STAT, write);\n    each ring again with its members "
	      "in one address space (clone(CLONE_VM), still\n    processes of "
	      "their own): a switch between members changes no page tables\n",
	      mnt);
	table("   hand-offs/s (a read by another process than the last "
	      "reader), %.1f s after %.1f s warm-up;\n   ratio = time per "
	      "hand-off at P / at P=2: above 1 is slower than with 2;\n"
	      "   CPU = user+system time of the P processes per hand-off, ns; "
	      "guest = the guest's busy\n   CPU (/proc/stat, all CPUs) per "
	      "hand-off, ns; CPU ratio = CPU at P / at P=2: above 1\n   is "
	      "costlier; busy = guest CPUs kept busy; alt = reads that were "
	      "hand-offs;\n   waited = reads whose holder found no other "
	      "request queued at first (and yielded)\n",
	      SECONDS * opt.scale, WARM_SECONDS * opt.scale);
	table("   %5s %5s %10s %7s %10s %10s %9s %5s %6s %7s %7s\n", "P",
	      "extra", "handoff/s", "ratio", "CPU", "guest", "CPU ratio",
	      "busy", "alt", "waited", "EAGAIN");
	json_begin("jobserver");
	json_str("unit", "hand-offs per second; CPU ns per hand-off");
	json_str("endpoint_dir", mnt);
	json_num("seconds", SECONDS * opt.scale);
	json_begin_array("rows");
	for (k = 0; k < NSCHED; k++)
		for (v = 0; v < NVARIANTS; v++)
			print_group(&rows[at(k, v, 0)], NSIZES);
	json_end_array();
	json_end();
	table("   summary: time per hand-off at P / at P=2 (CPU per hand-off "
	      "at P / at P=2)\n");
	table("   %-38s %13s %13s %13s %13s\n", "", "free P=102", "free P=402",
	      "pinned P=102", "pinned P=402");
	for (v = 0; v < NVARIANTS; v++) {
		g = &rows[at(0, v, 0)];
		snprintf(name, sizeof(name), "%s%s", kind_label[g->kind],
			 g->shared ? ", one space" : "");
		table("   %-38s", name);
		for (k = 0; k < NSCHED; k++) {
			summary_cell(&rows[at(k, v, 0)], 1);
			summary_cell(&rows[at(k, v, 0)], NSIZES - 1);
		}
		table("\n");
	}
	for (k = 0; k < NSCHED; k++) {
		g = &rows[at(k, K_ENDPOINT, 0)];
		table("   jobserver, %s: time per hand-off with %d processes "
		      "/ with 2 = %.2f\n", sched_name[k], MAX_P,
		      g[0].ok && g[NSIZES - 1].ok ?
		      ratio(g[0].rate, g[NSIZES - 1].rate) : NAN);
	}
	for (k = 0; k < NSCHED; k++) {
		for (v = 0; v < NVARIANTS; v += NKINDS) {
			print_floor(&rows[at(k, v + K_ENDPOINT, 0)],
				    &rows[at(k, v + K_EVENTFD, 0)]);
			print_floor(&rows[at(k, v + K_ENDPOINT, 0)],
				    &rows[at(k, v + K_PIPE, 0)]);
		}
	}
}

void scenario_jobserver(void)
{
	struct row rows[NSCHED * NVARIANTS * NSIZES], *r;
	char mnt[MNT_MAX];
	bool mounted;
	int i, k, v, failed = 0;

	memset(rows, 0, sizeof(rows));
	raise_limits(MAX_P + 16, 2 * MAX_P + 256);
	if (find_mount(mnt, sizeof(mnt), &mounted)) {
		table("\n11. Jobserver endpoint: skipped (no wsemfs mount)\n");
		return;
	}
	/*
	 * Free first: the headline.  At each P, every ring right after the
	 * endpoint's, so that they see the same machine.
	 */
	for (k = 0; k < NSCHED; k++) {
		for (i = 0; i < NSIZES; i++) {
			for (v = 0; v < NVARIANTS; v++) {
				r = &rows[at(k, v, i)];
				r->p = sizes[i];
				r->pinned = k;
				r->kind = (enum kind)(v % NKINDS);
				r->shared = v >= NKINDS;
				r->ok = !run(r, mnt);
				failed += !r->ok;
				progress("jobserver %s%s %-6s P=%3d: %.0f "
					 "hand-offs/s, CPU %.0f ns per "
					 "hand-off (guest %.0f), alt %.1f%%, "
					 "used after %llu%s",
					 kind_name[r->kind],
					 r->shared ? " vm" : "",
					 sched_name[r->pinned], r->p, r->rate,
					 per_op(r->cpu, r->handoffs),
					 per_op(r->busy, r->handoffs),
					 r->reads ? 100.0 *
						(double)r->handoffs /
						(double)r->reads : 0,
					 (unsigned long long)r->used,
					 r->ok ? "" : " (FAILED)");
			}
		}
	}
	if (mounted && umount2(FS_DIR, 0))
		progress("jobserver: umount %s: %s (the module stays pinned)",
			 FS_DIR, strerror(errno));
	if (failed)
		progress("jobserver: FAILED: %d of %d rows", failed,
			 NSCHED * NVARIANTS * NSIZES);
	print(rows, mnt);
}
