// SPDX-License-Identifier: GPL-2.0
/*
 * A kill storm (issue 5, item 4): 64 processes take and give back weight
 * on three semaphores (blocking, try and timed acquires, whole and partial
 * releases, releases by close) while the test SIGKILLs, SIGSTOPs and
 * SIGCONTs them and sends them signals they handle.  A monitor process
 * checks the semaphores all the time, and afterwards nothing may be held.
 *
 * What the monitor can prove, and how.  Every worker publishes, in shared
 * memory, the call it is in: a call number it bumps as the call begins, the
 * kind, semaphore and weight, and the weight it holds.  A global epoch
 * counter orders events: a worker reads it just before and just after each
 * acquire and logs every grant with both readings.  A snapshot of a
 * semaphore bumps the epoch, reads every worker's record, takes a STAT,
 * reads the records again and bumps the epoch again.  When both readings
 * agree the snapshot is *stable*: each worker stayed in one call, or out
 * of calls, all along, so at the instant of the STAT:
 *
 *  - used lies between what the workers say they hold, less what those in
 *    a release call give back, and that plus what those in an acquire call
 *    ask for (a worker being killed counts from 0 to what it holds);
 *  - waiters and queued_weight are at most the number and weight of the
 *    acquire calls in progress.  Each queue entry is one of those calls
 *    (one thread per worker, and nobody else uses these semaphores), so
 *    when waiters equals their number, *every* one of them is queued: the
 *    snapshot is *full*, and queued_weight must then be exactly their sum.
 *
 * No grant jumps the queue.  Take two full snapshots S1 and S2 of one
 * semaphore and a call A that is queued in both, in the same call, and was
 * not stopped in between (the test marks a worker's stop generation odd
 * before SIGSTOP and makes it even again after the SIGCONT that follows
 * the stop it saw; a stopped waiter leaves the queue and goes back at the
 * tail, SPEC.md).  A leaves the queue only when its call ends, or through a
 * stop, so A waited all the time from S1 to S2.  Then a grant C on that
 * semaphore whose call began after S1 ended (its first epoch reading is at
 * least S1's last) and which returned before S2 began (its second reading
 * is below S2's first) arrived behind A and was granted before A: a
 * violation, whatever the weights (strict FIFO; a try-acquire that gets
 * weight while A waits has barged).  The check never relies on the order
 * in which processes are scheduled or return from their calls.
 *
 * Beside the storm, a churn process races wsemfs against it: mounts,
 * unmounts, bind mounts, opens, unlinks and dying namespaces (see churn()),
 * while half of the workers' lives open their handles through a mount.
 *
 * Environment: WSEM_STORM_SECONDS (default 12), WSEM_STORM_SEED.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <wsem.h>

#include "kselftest_harness.h"
#include "util.h"

#define NPROC		64		/* workers */
#define NSEM		3
#define RING		32		/* grants a worker keeps for the monitor */
#define NHIST		8		/* full snapshots kept per semaphore */
#define HIST_SPACING	64		/* epochs between them, at least */
#define MSEC		1000000LL
#define DEF_SECONDS	12
#define MAX_NOTES	16
#define NOTE_LEN	240

static const uint64_t cap[NSEM] = { 1, 4, 10 };

/* What a worker is doing. */
enum kind { K_NONE, K_ACQ, K_TRY, K_TMO, K_REL };

/* One granted acquire, written by its worker under a sequence count. */
struct grant {
	uint64_t seq;		/* odd while being written */
	uint64_t life;		/* the worker's life (slot reuse) */
	uint64_t call;		/* its call number */
	uint64_t sem;
	uint64_t weight;
	uint64_t begin;		/* epoch read just before the call */
	uint64_t end;		/* epoch read just after it returned */
};

/* One worker's place; fields are read and written with __atomic. */
struct slot {
	/* written by the test (the controller) */
	uint64_t life;		/* bumped each time a worker takes the slot */
	int32_t pid;
	uint32_t killing;	/* SIGKILL sent, not reaped yet */
	uint64_t stop_gen;	/* odd from before SIGSTOP to after SIGCONT */
	/* written by the worker */
	uint64_t call;		/* bumped as each call begins */
	uint32_t kind;		/* enum kind of the call in progress */
	uint32_t sem;
	uint64_t weight;
	uint64_t held[NSEM];	/* what its handles hold, by its own count */
	uint64_t gnext;		/* grants written to ring[] */
	struct grant ring[RING];
	/* counts, by the worker */
	uint64_t acq[K_REL];	/* calls by kind */
	uint64_t granted, eagain, etimedout, eintr, sigs;
} __attribute__((aligned(64)));

/* A semaphore as one full snapshot saw it. */
struct snap {
	uint64_t a, b;		/* epochs: before the first reading, after */
	unsigned int n;		/* acquire calls in progress (all queued) */
	struct {
		unsigned int slot;
		uint64_t life, call, stop_gen, weight;
	} q[NPROC];
};

/* Full snapshots of one semaphore kept for the FIFO check. */
struct hist {
	struct snap h[NHIST];
	unsigned int n;		/* used entries */
	unsigned int newest;	/* index of the latest */
};

struct storm {
	uint64_t seed;
	uint64_t epoch;
	uint32_t stop;		/* workers: finish the job and leave */
	uint32_t mon_stop;
	/* monitor counts */
	uint64_t stats, stable, full, windows, checked;
	uint64_t violations;
	uint32_t nnotes;
	char notes[MAX_NOTES][NOTE_LEN];
	char names[NSEM][WSEM_NAME_MAX];
	/* wsemfs: a tmpfs with the points m0 (workers), m1 and m2 (churn) */
	char top[64];
	char mnt[3][80];
	int32_t churn_pid;
	uint64_t churn_life, path_workers;
	uint64_t churn_mounts, churn_reads, churn_unlinks, churn_deaths;
	struct slot slot[NPROC];
};

static struct storm *sm;

#define LD(p)		__atomic_load_n(p, __ATOMIC_SEQ_CST)
#define ST(p, v)	__atomic_store_n(p, v, __ATOMIC_SEQ_CST)
#define INC(p)		__atomic_add_fetch(p, 1, __ATOMIC_SEQ_CST)

/* Record a violation; the first MAX_NOTES different ones are kept. */
static void __attribute__((format(printf, 1, 2))) violation(const char *fmt, ...)
{
	char note[NOTE_LEN];
	uint32_t i, n;
	va_list ap;

	INC(&sm->violations);
	va_start(ap, fmt);
	vsnprintf(note, sizeof(note), fmt, ap);
	va_end(ap);
	n = LD(&sm->nnotes);
	for (i = 0; i < n && i < MAX_NOTES; i++)
		if (!strcmp(sm->notes[i], note))
			return;
	i = __atomic_fetch_add(&sm->nnotes, 1, __ATOMIC_SEQ_CST);
	if (i < MAX_NOTES)
		memcpy(sm->notes[i], note, sizeof(note));
}

/* ---------------------------------------------------------------- */
/* Workers                                                           */

static struct slot *me;
static volatile sig_atomic_t sigs;

static void on_signal(int sig)
{
	(void)sig;
	sigs++;
}

/* Announce a call; returns the epoch read just before it. */
static uint64_t begin(enum kind kind, unsigned int s, uint64_t w)
{
	ST(&me->weight, w);
	ST(&me->sem, s);
	ST(&me->kind, kind);
	INC(&me->call);
	return LD(&sm->epoch);
}

static void log_grant(unsigned int s, uint64_t w, uint64_t b, uint64_t e)
{
	struct grant *g = &me->ring[LD(&me->gnext) % RING];
	uint64_t seq = LD(&g->seq);

	ST(&g->seq, seq + 1);
	ST(&g->life, LD(&me->life));
	ST(&g->call, LD(&me->call));
	ST(&g->sem, s);
	ST(&g->weight, w);
	ST(&g->begin, b);
	ST(&g->end, e);
	ST(&g->seq, seq + 2);
	INC(&me->gnext);
}

/*
 * Acquire @w on semaphore @s through @fd in the way @kind says, with
 * everything the monitor needs published around it.  Returns 0 or errno.
 */
static int acquire(int fd, unsigned int s, uint64_t w, enum kind kind,
		   int64_t timeout)
{
	struct wsem_acquire_args a = { .size = sizeof(a), .weight = w };
	sig_atomic_t sigs0 = sigs;
	uint64_t b, e;
	int ret, err;

	if (kind == K_TRY)
		a.flags = WSEM_ACQUIRE_TRY;
	if (kind == K_TMO) {
		a.flags = WSEM_ACQUIRE_DEADLINE;
		a.deadline_ns = now_ns() + timeout;
	}
	INC(&me->acq[kind]);
	b = begin(kind, s, w);
	ret = ioctl(fd, WSEM_IOC_ACQUIRE, &a);
	err = ret ? errno : 0;
	e = LD(&sm->epoch);
	if (!ret) {
		ST(&me->held[s], LD(&me->held[s]) + w);
		log_grant(s, w, b, e);
		INC(&me->granted);
	}
	ST(&me->kind, K_NONE);

	switch (err) {
	case 0:
		break;
	case EAGAIN:
		INC(&me->eagain);
		if (kind != K_TRY)
			violation("acquire kind %d: EAGAIN", kind);
		break;
	case ETIMEDOUT:
		INC(&me->etimedout);
		if (kind != K_TMO)
			violation("acquire kind %d: ETIMEDOUT", kind);
		else if (now_ns() < (int64_t)a.deadline_ns)
			violation("ETIMEDOUT %lld ns before the deadline",
				  (long long)(a.deadline_ns - now_ns()));
		break;
	case EINTR:
		INC(&me->eintr);
		if (kind == K_TRY || sigs == sigs0)
			violation("acquire kind %d: EINTR without a handled "
				  "signal (a stop is not an interruption)",
				  kind);
		break;
	default:
		violation("acquire kind %d of %llu on sem %u: %s", kind,
			  (unsigned long long)w, s, strerror(err));
	}
	return err;
}

static void release(int fd, unsigned int s, uint64_t w)
{
	begin(K_REL, s, w);
	if (wsem_release(fd, w))
		violation("release %llu on sem %u holding %llu: %s",
			  (unsigned long long)w, s,
			  (unsigned long long)LD(&me->held[s]),
			  strerror(errno));
	else
		ST(&me->held[s], LD(&me->held[s]) - w);
	ST(&me->kind, K_NONE);
}

/* Give back all of semaphore @s: in steps, or by closing the handle. */
static void release_all(struct rng *r, int *fd, unsigned int s)
{
	uint64_t h = LD(&me->held[s]), part;

	if (!h)
		return;
	if (chance(r, 8)) {
		begin(K_REL, s, h);
		close(*fd);
		*fd = wsem_open(sm->names[s], O_CLOEXEC, 0, 0);
		if (*fd < 0)
			violation("reopen sem %u: %s", s, strerror(errno));
		ST(&me->held[s], 0);
		ST(&me->kind, K_NONE);
		return;
	}
	if (h > 1 && chance(r, 30)) {
		part = 1 + below(r, h - 1);
		release(*fd, s, part);
		h -= part;
	}
	release(*fd, s, h);
}

static void check_held(int fd, unsigned int s)
{
	struct wsem_stat st;

	memset(&st, 0, sizeof(st));
	if (wsem_stat(fd, &st))
		violation("stat sem %u: %s", s, strerror(errno));
	else if (st.held != LD(&me->held[s]))
		violation("sem %u: stat says held %llu, the worker %llu", s,
			  (unsigned long long)st.held,
			  (unsigned long long)LD(&me->held[s]));
}

/* One job: weight on one or two semaphores, in order, held a while. */
static void job(struct rng *r, int *fd)
{
	unsigned int first = below(r, NSEM), s, n = chance(r, 30) ? 2 : 1;
	enum kind kind;
	int64_t timeout;
	uint64_t w;
	bool ok = true;

	for (s = first; s < NSEM && n && ok; s++, n--) {
		if (s != first && chance(r, 50))
			continue;
		if (chance(r, 45))
			w = 1;
		else if (chance(r, 25))
			w = cap[s];
		else
			w = 1 + below(r, cap[s]);
		switch (below(r, 20)) {
		case 0 ... 6:
			kind = K_ACQ;
			break;
		case 7 ... 11:
			kind = K_TRY;
			break;
		default:
			kind = K_TMO;
		}
		timeout = chance(r, 10) ? 0 : (int64_t)below(r, 30 * MSEC);
		ok = !acquire(fd[s], s, w, kind, timeout);
		if (ok && chance(r, 10))
			check_held(fd[s], s);
	}
	if (ok && chance(r, 80))
		usleep(below(r, 2000));
	for (s = 0; s < NSEM; s++)
		release_all(r, &fd[s], s);
}

static void __attribute__((noreturn)) worker(unsigned int i)
{
	struct rng r;
	char path[160];
	int fd[NSEM];
	unsigned int s;
	bool bypath;

	me = &sm->slot[i];
	r.s = sm->seed ^ (i + 1) * 0xd1b54a32d192ed03ULL ^
	      LD(&me->life) * 0xabc98388fb8fac03ULL;
	/* Every other life opens through the mount, churned beside it. */
	bypath = LD(&me->life) & 1;
	if (bypath)
		INC(&sm->path_workers);
	for (s = 0; s < NSEM; s++) {
		snprintf(path, sizeof(path), "%s/%s", sm->mnt[0], sm->names[s]);
		fd[s] = bypath ? open(path, O_RDWR | O_CLOEXEC) :
			wsem_open(sm->names[s], O_CLOEXEC, 0, 0);
		if (fd[s] < 0) {
			violation("worker open %s: %s", sm->names[s],
				  strerror(errno));
			_exit(1);
		}
	}
	while (!LD(&sm->stop)) {
		job(&r, fd);
		ST(&me->sigs, sigs);
		if (chance(&r, 30))
			usleep(below(&r, 500));
	}
	_exit(0);
}

/* ---------------------------------------------------------------- */
/* wsemfs churn beside the storm                                     */

/*
 * One process (SIGKILLed and restarted by the controller now and then)
 * mounts and unmounts the storm's namespace on a second point, opens its
 * files there and through bind mounts, reads them, makes and unlinks
 * names of its own, and forks children whose IPC namespaces die with a
 * mount of their own on a third point, all while the workers, half of
 * which opened their handles through the first mount, are killed.  It
 * takes no weight on the storm's semaphores (the monitor counts every
 * holder); what the workers hold must add up all the same.
 */
static void churn_open(struct rng *r, const char *path)
{
	char text[512];
	ssize_t n;
	int fd;

	fd = open(path, (chance(r, 50) ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	if (fd < 0) {
		if (errno != ENOENT)
			violation("churn open %s: %s", path, strerror(errno));
		return;
	}
	n = read(fd, text, sizeof(text) - 1);
	if (n <= 0 || strncmp(text, "name: ", 6))
		violation("churn read %s: %zd", path, n);
	else
		INC(&sm->churn_reads);
	close(fd);
}

static void churn_names(struct rng *r, const char *dir)
{
	char name[WSEM_NAME_MAX], path[160];
	int fd;

	snprintf(name, sizeof(name), "churn.%u", (unsigned int)below(r, 4));
	fd = wsem_open(name, O_CREAT | O_CLOEXEC, 0600, 1 + below(r, 8));
	if (fd >= 0)
		close(fd);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (chance(r, 50) ? unlink(path) : wsem_unlink(name)) {
		if (errno != ENOENT)
			violation("churn unlink %s: %s", name, strerror(errno));
	} else {
		INC(&sm->churn_unlinks);
	}
}

/* A child whose IPC namespace dies, mounted on @point, under opens. */
static void churn_ns_death(struct rng *r, const char *point)
{
	char path[160];
	pid_t pid = fork();
	int fd;

	if (pid) {
		if (pid > 0 && waitpid(pid, NULL, 0) == pid)
			INC(&sm->churn_deaths);
		/*
		 * ... and open through the mount it left, as its namespace
		 * goes (names go at once, or when the reaper sees it dead).
		 */
		snprintf(path, sizeof(path), "%s/nd", point);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd >= 0)
			close(fd);
		umount2(point, MNT_DETACH);
		return;
	}
	if (unshare(CLONE_NEWIPC) || mount("wsem", point, "wsem", 0, NULL))
		_exit(1);
	fd = wsem_open("nd", O_CREAT | O_CLOEXEC, 0600, 2);
	if (fd < 0 || wsem_acquire(fd, 1 + below(r, 2)))
		_exit(1);
	snprintf(path, sizeof(path), "%s/nd", point);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd >= 0)
		wsem_tryacquire(fd, 1);	/* capacity 2: may be full */
	if (chance(r, 50))
		raise(SIGKILL);
	_exit(0);
}

static void __attribute__((noreturn)) churn(uint64_t life)
{
	struct rng r = { .s = sm->seed ^ life * 0x9fb21c651e98df25ULL };
	char bind[160], src[160];
	unsigned int s;

	snprintf(bind, sizeof(bind), "%s/b", sm->top);
	while (!LD(&sm->stop)) {
		s = below(&r, NSEM);
		switch (below(&r, 6)) {
		case 0:
			if (!mount("wsem", sm->mnt[1], "wsem", 0, NULL))
				INC(&sm->churn_mounts);
			break;
		case 1:
			umount2(sm->mnt[1], MNT_DETACH);
			break;
		case 2:
			snprintf(src, sizeof(src), "%s/%s",
				 sm->mnt[chance(&r, 50)], sm->names[s]);
			churn_open(&r, src);
			break;
		case 3:
			snprintf(src, sizeof(src), "%s/%s", sm->mnt[0],
				 sm->names[s]);
			if (!mount(src, bind, NULL, MS_BIND, NULL)) {
				churn_open(&r, bind);
				umount2(bind, MNT_DETACH);
			}
			break;
		case 4:
			churn_names(&r, sm->mnt[0]);
			break;
		default:
			churn_ns_death(&r, sm->mnt[2]);
		}
		if (chance(&r, 50))
			usleep(below(&r, 1000));
	}
	_exit(0);
}

/* ---------------------------------------------------------------- */
/* The monitor                                                       */

/* What a snapshot reads of one worker. */
struct view {
	uint64_t life, stop_gen, call, weight, held;
	uint32_t killing, kind, sem;
};

static void read_views(struct view *v, unsigned int s)
{
	unsigned int i;

	for (i = 0; i < NPROC; i++) {
		struct slot *sl = &sm->slot[i];

		v[i].life = LD(&sl->life);
		v[i].stop_gen = LD(&sl->stop_gen);
		v[i].killing = LD(&sl->killing);
		v[i].call = LD(&sl->call);
		v[i].kind = LD(&sl->kind);
		v[i].sem = LD(&sl->sem);
		v[i].weight = LD(&sl->weight);
		v[i].held = LD(&sl->held[s]);
	}
}

static bool queued_kind(const struct view *v, unsigned int s)
{
	return (v->kind == K_ACQ || v->kind == K_TMO) && v->sem == s;
}

/* Was a call queued in both @h and @cur, with no stop in between? */
static bool persists(const struct snap *h, const struct snap *cur,
		     unsigned int *who)
{
	unsigned int i, j;

	for (i = 0; i < cur->n; i++) {
		if (cur->q[i].stop_gen & 1)
			continue;
		for (j = 0; j < h->n; j++) {
			if (h->q[j].slot == cur->q[i].slot &&
			    h->q[j].life == cur->q[i].life &&
			    h->q[j].call == cur->q[i].call &&
			    h->q[j].stop_gen == cur->q[i].stop_gen) {
				*who = i;
				return true;
			}
		}
	}
	return false;
}

/*
 * The FIFO check of a full snapshot @cur of semaphore @s against earlier
 * ones, @hist: a grant that began after one of them ended and returned
 * before @cur began, while a call queued in both waited all along, jumped
 * the queue.  Each grant that returned in such a window without having
 * begun in it is a check passed.  Returns the violations found.
 */
static unsigned int fifo_check(const struct snap *hist, unsigned int nh,
			       const struct snap *cur, unsigned int s)
{
	unsigned int h, j, k, found = 0, who[NHIST];
	bool live[NHIST], any = false;

	for (h = 0; h < nh; h++) {
		live[h] = persists(&hist[h], cur, &who[h]);
		if (live[h]) {
			any = true;
			INC(&sm->windows);
		}
	}
	if (!any)
		return 0;
	for (j = 0; j < NPROC; j++) {
		struct slot *sl = &sm->slot[j];

		for (k = 0; k < RING; k++) {
			struct grant *g = &sl->ring[k], c;
			uint64_t seq = LD(&g->seq);

			if (!seq || seq & 1)
				continue;
			c.call = LD(&g->call);
			c.sem = LD(&g->sem);
			c.weight = LD(&g->weight);
			c.begin = LD(&g->begin);
			c.end = LD(&g->end);
			if (LD(&g->seq) != seq || c.sem != s ||
			    c.end >= cur->a)
				continue;
			for (h = 0; h < nh; h++) {
				const struct snap *p = &hist[h];

				if (!live[h] || c.end < p->b)
					continue;
				if (c.begin < p->b) {
					INC(&sm->checked);
					continue;
				}
				found++;
				violation("sem %u: worker %u call %llu got %llu "
					  "at epochs %llu..%llu while worker "
					  "%u call %llu (weight %llu) waited "
					  "in the queue from epoch %llu to "
					  "%llu", s, j,
					  (unsigned long long)c.call,
					  (unsigned long long)c.weight,
					  (unsigned long long)c.begin,
					  (unsigned long long)c.end,
					  cur->q[who[h]].slot,
					  (unsigned long long)cur->q[who[h]].call,
					  (unsigned long long)cur->q[who[h]].weight,
					  (unsigned long long)p->b,
					  (unsigned long long)cur->a);
			}
		}
	}
	return found;
}

/* One snapshot of semaphore @s through handle @fd. */
static void snapshot(int fd, unsigned int s, struct hist *hist)
{
	static struct view v1[NPROC], v2[NPROC];
	uint64_t lo = 0, hi = 0, nq = 0, wq = 0, a, b;
	struct wsem_stat st;
	struct snap cur;
	unsigned int i;

	a = INC(&sm->epoch);
	read_views(v1, s);
	memset(&st, 0, sizeof(st));
	if (wsem_stat(fd, &st)) {
		violation("monitor stat: %s", strerror(errno));
		return;
	}
	read_views(v2, s);
	b = INC(&sm->epoch);
	INC(&sm->stats);

	if (st.used > st.capacity || st.capacity != cap[s] ||
	    st.available != st.capacity - st.used)
		violation("sem %u: capacity %llu used %llu available %llu", s,
			  (unsigned long long)st.capacity,
			  (unsigned long long)st.used,
			  (unsigned long long)st.available);
	if (!st.waiters != !st.queued_weight ||
	    st.queued_weight < st.waiters || st.held)
		violation("sem %u: %llu waiters, queued weight %llu, held %llu",
			  s, (unsigned long long)st.waiters,
			  (unsigned long long)st.queued_weight,
			  (unsigned long long)st.held);
	if (memcmp(v1, v2, sizeof(v1)))
		return;
	INC(&sm->stable);

	/*
	 * What a worker holds in the kernel, given what it says: its held
	 * count, plus up to the weight of an acquire in progress (granted,
	 * not counted yet), less up to that of a release in progress (done
	 * or not, counted or not: at least 0); anything from 0 if it is
	 * being killed.
	 */
	for (i = 0; i < NPROC; i++) {
		const struct view *v = &v1[i];
		uint64_t min = v->killing ? 0 : v->held, max = v->held;

		if (v->sem == s && v->kind == K_REL)
			min = min > v->weight ? min - v->weight : 0;
		if (v->sem == s && (v->kind == K_ACQ || v->kind == K_TMO ||
				    v->kind == K_TRY))
			max += v->weight;
		lo += min;
		hi += max;
		if (queued_kind(v, s)) {
			nq++;
			wq += v->weight;
		}
	}
	if (st.used < lo || st.used > hi)
		violation("sem %u: used %llu, the workers account for %llu..%llu",
			  s, (unsigned long long)st.used,
			  (unsigned long long)lo, (unsigned long long)hi);
	if (st.waiters > nq || st.queued_weight > wq)
		violation("sem %u: %llu waiters (weight %llu) but only %llu "
			  "acquire calls (weight %llu) in progress", s,
			  (unsigned long long)st.waiters,
			  (unsigned long long)st.queued_weight,
			  (unsigned long long)nq, (unsigned long long)wq);
	if (st.waiters != nq)
		return;

	/* Full: every acquire call in progress is queued right now. */
	INC(&sm->full);
	if (st.queued_weight != wq)
		violation("sem %u: all %llu waiters known, queued weight %llu, "
			  "not %llu", s, (unsigned long long)nq,
			  (unsigned long long)st.queued_weight,
			  (unsigned long long)wq);
	cur.a = a;
	cur.b = b;
	cur.n = 0;
	for (i = 0; i < NPROC; i++) {
		if (!queued_kind(&v1[i], s) || v1[i].killing)
			continue;
		cur.q[cur.n].slot = i;
		cur.q[cur.n].life = v1[i].life;
		cur.q[cur.n].call = v1[i].call;
		cur.q[cur.n].stop_gen = v1[i].stop_gen;
		cur.q[cur.n].weight = v1[i].weight;
		cur.n++;
	}
	fifo_check(hist->h, hist->n, &cur, s);
	/* Keep a few older ones, spread out, for longer windows. */
	if (!hist->n || cur.a - hist->h[hist->newest].a >= HIST_SPACING) {
		hist->newest = hist->n < NHIST ? hist->n++ :
			       (hist->newest + 1) % NHIST;
		hist->h[hist->newest] = cur;
	}
}

static void __attribute__((noreturn)) monitor(void)
{
	static struct hist hist[NSEM];
	int fd[NSEM];
	unsigned int s;

	for (s = 0; s < NSEM; s++) {
		fd[s] = wsem_open(sm->names[s], O_CLOEXEC, 0, 0);
		if (fd[s] < 0)
			_exit(1);
	}
	while (!LD(&sm->mon_stop))
		for (s = 0; s < NSEM; s++)
			snapshot(fd[s], s, &hist[s]);
	_exit(0);
}

/* ---------------------------------------------------------------- */
/* The test: the controller                                          */

FIXTURE(storm) {
	/* the test's own handles on the semaphores, for the end */
	int fd[NSEM];
	/* the monitor process, 0 once reaped */
	pid_t monitor;
	/* setup done: false after a SKIP, so body and teardown do nothing */
	bool ready;
};

static pid_t spawn(unsigned int i)
{
	struct slot *sl = &sm->slot[i];
	pid_t pid;

	INC(&sl->life);
	pid = fork();
	if (pid == 0)
		worker(i);
	ST(&sl->pid, pid);
	return pid;
}

static pid_t spawn_churn(void)
{
	uint64_t life = INC(&sm->churn_life);
	pid_t pid = fork();

	if (pid == 0)
		churn(life);
	ST(&sm->churn_pid, pid);
	return pid;
}

/*
 * The storm's mount points: in a mount namespace of our own, a tmpfs with
 * m0 (the storm's wsemfs), m1, m2 and a file b; 0, or -1 and errno.
 */
static int make_mounts(void)
{
	unsigned int i;
	char path[96];
	int fd;

	if (unshare(CLONE_NEWNS) ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return -1;
	snprintf(sm->top, sizeof(sm->top), "/tmp/wsem-storm.%d", getpid());
	if (mkdir(sm->top, 0700) ||
	    mount("tmpfs", sm->top, "tmpfs", 0, "size=64k,mode=0700"))
		return -1;
	for (i = 0; i < 3; i++) {
		snprintf(sm->mnt[i], sizeof(sm->mnt[i]), "%s/m%u", sm->top, i);
		if (mkdir(sm->mnt[i], 0700))
			return -1;
	}
	snprintf(path, sizeof(path), "%s/b", sm->top);
	fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0 || close(fd))
		return -1;
	return mount("wsem", sm->mnt[0], "wsem", 0, NULL);
}

static int slot_of(pid_t pid)
{
	unsigned int i;

	for (i = 0; i < NPROC; i++)
		if (LD(&sm->slot[i].pid) == pid)
			return i;
	return -1;
}

FIXTURE_SETUP(storm)
{
	unsigned int s;

	for (s = 0; s < NSEM; s++)
		self->fd[s] = -1;
	if (access("/dev/wsem", F_OK))
		SKIP(return, "/dev/wsem is missing (module not loaded)");
	/* Our own IPC namespace: nobody else can queue on these. */
	ASSERT_EQ(0, unshare(CLONE_NEWIPC));
	sm = mmap(NULL, sizeof(*sm), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sm);
	for (s = 0; s < NSEM; s++) {
		snprintf(sm->names[s], WSEM_NAME_MAX, "storm.%u", s);
		self->fd[s] = wsem_open(sm->names[s],
					O_CREAT | O_EXCL | O_CLOEXEC, 0600,
					cap[s]);
		ASSERT_LE(0, self->fd[s]);
	}
	ASSERT_EQ(0, make_mounts()) {
		TH_LOG("wsemfs mount points: %s", strerror(errno));
	}
	self->ready = true;
}

FIXTURE_TEARDOWN(storm)
{
	unsigned int s, i;

	if (!self->ready)
		return;
	if (self->monitor > 0) {
		kill(self->monitor, SIGKILL);
		waitpid(self->monitor, NULL, 0);
	}
	for (i = 0; i < NPROC; i++) {
		pid_t pid = LD(&sm->slot[i].pid);

		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
	}
	if (LD(&sm->churn_pid) > 0) {
		kill(sm->churn_pid, SIGKILL);
		waitpid(sm->churn_pid, NULL, 0);
	}
	for (s = 0; s < NSEM; s++)
		if (self->fd[s] >= 0)
			EXPECT_EQ(0, close(self->fd[s]));
	EXPECT_EQ(0, umount2(sm->top, MNT_DETACH));
	EXPECT_EQ(0, rmdir(sm->top));
}

/* Workers the controller saw stopped and has not continued yet. */
static bool stopped[NPROC];

/* Signals the controller sent, by kind. */
struct sent {
	uint64_t kill, stop, cont, usr1, usr2, killed;
	uint64_t killed_in_acquire;	/* killed inside an acquire call */
};

/*
 * Reap whatever changed: a stopped worker gets its SIGCONT scheduled, a
 * killed one is replaced (unless @respawn is false).
 */
static void reap(int64_t *cont_at, struct sent *n, bool respawn,
		 struct rng *r)
{
	unsigned int s;
	int status, i;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG | WUNTRACED)) > 0) {
		if (pid == LD(&sm->churn_pid)) {
			if (!(WIFSIGNALED(status) &&
			      WTERMSIG(status) == SIGKILL) &&
			    !(WIFEXITED(status) && !WEXITSTATUS(status)))
				violation("churn ended with status %#x",
					  status);
			ST(&sm->churn_pid, 0);
			if (respawn)
				spawn_churn();
			continue;
		}
		i = slot_of(pid);
		if (i < 0)
			continue;
		if (WIFSTOPPED(status)) {
			stopped[i] = true;
			cont_at[i] = now_ns() + (int64_t)below(r, 15 * MSEC);
			continue;
		}
		if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL &&
		    LD(&sm->slot[i].killing)) {
			n->killed++;
			/* A grant it got may not have been counted. */
			if (LD(&sm->slot[i].kind) != K_NONE &&
			    LD(&sm->slot[i].kind) != K_REL)
				n->killed_in_acquire++;
		} else if (!WIFEXITED(status) || WEXITSTATUS(status) ||
			   !LD(&sm->stop)) {
			violation("worker %d ended with status %#x", i, status);
		}
		/*
		 * Dead and reaped: nothing of it is queued or held any more.
		 * Clear what it said before the killing mark that covered it.
		 */
		ST(&sm->slot[i].pid, 0);
		ST(&sm->slot[i].kind, K_NONE);
		for (s = 0; s < NSEM; s++)
			ST(&sm->slot[i].held[s], 0);
		if (LD(&sm->slot[i].stop_gen) & 1)
			INC(&sm->slot[i].stop_gen);
		cont_at[i] = 0;
		stopped[i] = false;
		ST(&sm->slot[i].killing, 0);
		if (respawn)
			spawn(i);
	}
}

/*
 * Continue the stopped workers whose time has come; with @all, every
 * worker a SIGSTOP was sent to.  The stop generation becomes even again
 * only for a worker seen stopped: it left the queue before it stopped and
 * goes back to its tail after the SIGCONT.  One not seen stopped yet may
 * still leave and come back after the SIGCONT (its signal wake-up is
 * pending): it stays odd, out of the FIFO check, for the rest of its life.
 */
static void cont(int64_t *cont_at, struct sent *n, bool all)
{
	unsigned int i;
	pid_t pid;

	for (i = 0; i < NPROC; i++) {
		pid = LD(&sm->slot[i].pid);
		if (pid <= 0 || !(LD(&sm->slot[i].stop_gen) & 1))
			continue;
		if (!all && (!stopped[i] || now_ns() < cont_at[i]))
			continue;
		if (!stopped[i] && cont_at[i] < 0)
			continue;		/* already continued */
		kill(pid, SIGCONT);
		n->cont++;
		if (stopped[i]) {
			stopped[i] = false;
			cont_at[i] = 0;
			INC(&sm->slot[i].stop_gen);	/* even: over */
		} else {
			cont_at[i] = -1;
		}
	}
}

TEST_F_TIMEOUT(storm, kill_stop_signal, 900)
{
	struct sigaction intr = { .sa_handler = on_signal };
	struct sigaction restart = { .sa_handler = on_signal,
				     .sa_flags = SA_RESTART };
	int64_t cont_at[NPROC] = { 0 }, end, deadline;
	uint64_t seconds, calls[K_REL] = { 0 }, granted = 0, eagain = 0;
	uint64_t etimedout = 0, eintr = 0;
	struct sent n = { 0 };
	struct wsem_stat st, tot;
	struct rng r;
	unsigned int i, s, alive;
	pid_t pid;
	int status;

	if (!self->ready)
		return;
	sm->seed = env_u64("WSEM_STORM_SEED", 0);
	if (!sm->seed)
		sm->seed = (uint64_t)now_ns() ^ ((uint64_t)getpid() << 32);
	seconds = env_u64("WSEM_STORM_SECONDS", DEF_SECONDS);
	r.s = sm->seed;
	TH_LOG("%d processes, %llu s, seed %#llx (WSEM_STORM_SEED)", NPROC,
	       (unsigned long long)seconds, (unsigned long long)sm->seed);

	/*
	 * The workers' handlers, inherited from the start: SIGUSR2's has
	 * SA_RESTART, which changes nothing (wsem's waits end with EINTR).
	 */
	ASSERT_EQ(0, sigaction(SIGUSR1, &intr, NULL));
	ASSERT_EQ(0, sigaction(SIGUSR2, &restart, NULL));
	self->monitor = fork();
	ASSERT_LE(0, self->monitor);
	if (!self->monitor)
		monitor();
	for (i = 0; i < NPROC; i++)
		ASSERT_LT(0, spawn(i));
	ASSERT_LT(0, spawn_churn());

	end = now_ns() + (int64_t)seconds * NSEC;
	while (now_ns() < end) {
		reap(cont_at, &n, true, &r);
		cont(cont_at, &n, false);
		usleep(500 + below(&r, 2000));
		pid = LD(&sm->churn_pid);
		if (pid > 0 && !below(&r, 200))
			kill(pid, SIGKILL);	/* mid-mount, mid-open */
		i = below(&r, NPROC);
		pid = LD(&sm->slot[i].pid);
		if (pid <= 0 || LD(&sm->slot[i].killing))
			continue;
		switch (below(&r, 10)) {
		case 0:
			ST(&sm->slot[i].killing, 1);
			kill(pid, SIGKILL);
			n.kill++;
			break;
		case 1 ... 3:
			if (LD(&sm->slot[i].stop_gen) & 1)
				break;
			INC(&sm->slot[i].stop_gen);	/* odd: stopping */
			kill(pid, SIGSTOP);
			n.stop++;
			break;
		case 4 ... 6:
			kill(pid, SIGUSR1);
			n.usr1++;
			break;
		default:
			kill(pid, SIGUSR2);
			n.usr2++;
		}
	}

	/* Let everyone finish: continue them all, then stop. */
	cont(cont_at, &n, true);
	ST(&sm->stop, 1);
	deadline = now_ns() + 30 * NSEC;
	do {
		reap(cont_at, &n, false, &r);
		cont(cont_at, &n, true);
		alive = LD(&sm->churn_pid) > 0;
		for (i = 0; i < NPROC; i++)
			alive += LD(&sm->slot[i].pid) > 0;
		if (alive)
			usleep(10000);
	} while (alive && now_ns() < deadline);
	EXPECT_EQ(0, alive) {
		for (s = 0; s < NSEM; s++) {
			memset(&st, 0, sizeof(st));
			wsem_stat(self->fd[s], &st);
			TH_LOG("%u workers still running after 30 s; sem %u: "
			       "used %llu, %llu waiters", alive, s,
			       (unsigned long long)st.used,
			       (unsigned long long)st.waiters);
		}
	}
	ST(&sm->mon_stop, 1);
	ASSERT_EQ(self->monitor, waitpid(self->monitor, &status, 0));
	self->monitor = 0;
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));

	for (i = 0; i < NPROC; i++) {
		struct slot *sl = &sm->slot[i];

		for (s = 0; s < K_REL; s++)
			calls[s] += sl->acq[s];
		granted += sl->granted;
		eagain += sl->eagain;
		etimedout += sl->etimedout;
		eintr += sl->eintr;
	}
	TH_LOG("acquires: %llu blocking, %llu try, %llu timed: %llu granted, "
	       "%llu EAGAIN, %llu ETIMEDOUT, %llu EINTR",
	       (unsigned long long)calls[K_ACQ],
	       (unsigned long long)calls[K_TRY],
	       (unsigned long long)calls[K_TMO], (unsigned long long)granted,
	       (unsigned long long)eagain, (unsigned long long)etimedout,
	       (unsigned long long)eintr);
	TH_LOG("signals: %llu SIGKILL (%llu processes killed), %llu SIGSTOP, "
	       "%llu SIGCONT, %llu SIGUSR1, %llu SIGUSR2",
	       (unsigned long long)n.kill, (unsigned long long)n.killed,
	       (unsigned long long)n.stop, (unsigned long long)n.cont,
	       (unsigned long long)n.usr1, (unsigned long long)n.usr2);
	TH_LOG("monitor: %llu stats, %llu stable, %llu full; FIFO: %llu "
	       "windows with a waiter queued throughout, %llu grants in "
	       "them, none begun after the waiter was seen queued",
	       (unsigned long long)sm->stats, (unsigned long long)sm->stable,
	       (unsigned long long)sm->full, (unsigned long long)sm->windows,
	       (unsigned long long)sm->checked);
	for (i = 0; i < sm->nnotes && i < MAX_NOTES; i++)
		TH_LOG("violation: %s", sm->notes[i]);
	EXPECT_EQ(0, sm->violations) {
		TH_LOG("seed %#llx", (unsigned long long)sm->seed);
	}
	TH_LOG("wsemfs: %llu worker lives opened by path; churn: %llu lives, "
	       "%llu mounts, %llu texts read, %llu unlinks, %llu namespaces "
	       "died", (unsigned long long)sm->path_workers,
	       (unsigned long long)sm->churn_life,
	       (unsigned long long)sm->churn_mounts,
	       (unsigned long long)sm->churn_reads,
	       (unsigned long long)sm->churn_unlinks,
	       (unsigned long long)sm->churn_deaths);
	EXPECT_LT(0, sm->path_workers);
	EXPECT_LT(0, sm->churn_mounts);
	EXPECT_LT(0, sm->churn_reads);
	EXPECT_LT(0, sm->churn_unlinks);
	EXPECT_LT(0, sm->churn_deaths);
	EXPECT_LT(0, n.killed);
	/* The FIFO check must have had something to check. */
	EXPECT_LT(0, sm->checked);

	/*
	 * The module's statistics against the workers' counts: exact but
	 * for the calls a SIGKILL cut short, whose result nobody counted.
	 * Interruptions include the waits a stop restarted.
	 */
	memset(&tot, 0, sizeof(tot));
	for (s = 0; s < NSEM; s++) {
		memset(&st, 0, sizeof(st));
		ASSERT_EQ(0, wsem_stat(self->fd[s], &st));
		tot.grants_at_once += st.grants_at_once;
		tot.grants_waited += st.grants_waited;
		tot.timeouts += st.timeouts;
		tot.interrupts += st.interrupts;
	}
	TH_LOG("module: %llu grants at once, %llu after waiting, %llu "
	       "timeouts, %llu interruptions; %llu workers killed in an "
	       "acquire", (unsigned long long)tot.grants_at_once,
	       (unsigned long long)tot.grants_waited,
	       (unsigned long long)tot.timeouts,
	       (unsigned long long)tot.interrupts,
	       (unsigned long long)n.killed_in_acquire);
	EXPECT_LE(granted, tot.grants_at_once + tot.grants_waited);
	EXPECT_GE(granted + n.killed_in_acquire,
		  tot.grants_at_once + tot.grants_waited);
	EXPECT_LE(etimedout, tot.timeouts);
	EXPECT_GE(etimedout + n.killed_in_acquire, tot.timeouts);
	EXPECT_LE(eintr, tot.interrupts);
	EXPECT_LT(0, tot.grants_waited);

	/* Afterwards nothing is held, nobody waits, all of it is free. */
	for (s = 0; s < NSEM; s++) {
		memset(&st, 0, sizeof(st));
		ASSERT_EQ(0, wsem_stat(self->fd[s], &st));
		EXPECT_EQ(0, st.used);
		EXPECT_EQ(0, st.waiters);
		EXPECT_EQ(0, st.queued_weight);
		EXPECT_EQ(0, wsem_tryacquire(self->fd[s], cap[s]));
		EXPECT_EQ(0, wsem_release(self->fd[s], cap[s]));
	}
}

/*
 * The FIFO check itself, on made-up snapshots: it must see a grant that
 * overtook a waiter, and nothing else.
 */
TEST(fifo_check_sees_a_jump)
{
	struct snap s1 = { .a = 10, .b = 11, .n = 1 };
	struct snap s2 = { .a = 20, .b = 21, .n = 1 };
	struct grant *g;

	sm = mmap(NULL, sizeof(*sm), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sm);
	s1.q[0].slot = s2.q[0].slot = 5;
	s1.q[0].life = s2.q[0].life = 1;
	s1.q[0].call = s2.q[0].call = 7;
	s1.q[0].stop_gen = s2.q[0].stop_gen = 2;
	g = &sm->slot[9].ring[0];
	*g = (struct grant){ .seq = 2, .life = 1, .call = 3, .sem = 1,
			     .weight = 1, .begin = 11, .end = 19 };

	/* Began after S1, returned before S2, while slot 5 waited: caught. */
	EXPECT_EQ(1, fifo_check(&s1, 1, &s2, 1));
	/* Another semaphore: nothing. */
	EXPECT_EQ(0, fifo_check(&s1, 1, &s2, 2));
	/* Began before S1 ended: it may have been ahead of slot 5. */
	g->begin = 10;
	EXPECT_EQ(0, fifo_check(&s1, 1, &s2, 1));
	EXPECT_EQ(1, sm->checked);
	/* Returned after S2 began: slot 5 may have had its grant first. */
	g->begin = 11;
	g->end = 20;
	EXPECT_EQ(0, fifo_check(&s1, 1, &s2, 1));
	/* Slot 5 was stopped in between: it went back to the tail. */
	g->end = 19;
	s2.q[0].stop_gen = 4;
	EXPECT_EQ(0, fifo_check(&s1, 1, &s2, 1));
	/* ... or is being stopped now. */
	s2.q[0].stop_gen = 3;
	EXPECT_EQ(0, fifo_check(&s1, 1, &s2, 1));
	/* Another call of slot 5 (its first one ended). */
	s2.q[0].stop_gen = 2;
	s2.q[0].call = 8;
	EXPECT_EQ(0, fifo_check(&s1, 1, &s2, 1));
	/* Another life of slot 5 (it was killed). */
	s2.q[0].call = 7;
	s2.q[0].life = 2;
	EXPECT_EQ(0, fifo_check(&s1, 1, &s2, 1));
	/* Being written: skipped. */
	s2.q[0].life = 1;
	g->seq = 3;
	EXPECT_EQ(0, fifo_check(&s1, 1, &s2, 1));
	EXPECT_EQ(1, sm->violations);
	EXPECT_EQ(0, munmap(sm, sizeof(*sm)));
}

TEST_HARNESS_MAIN
