// SPDX-License-Identifier: GPL-2.0
/*
 * An ioctl fuzzer for /dev/wsem (issue 5, item 3), plus regression tests
 * for what it found.
 *
 * Eight worker processes, half of them root and half nobody, each run two
 * threads that issue random requests with hostile arguments: command
 * numbers around ours, struct sizes too small, too large and with a
 * non-zero tail, NULL, unmapped, read-only, kernel and page-straddling
 * pointers, weights 0, 1, capacity, capacity + 1, 2^62 + 1, 2^63 and
 * UINT64_MAX, names at and over the length limit, with control and 8-bit
 * bytes and without a terminator.  Every so often a request SIGKILLs a
 * worker instead (another one, or its own).  A third thread in each worker
 * closes, dup()s and dup2()s its descriptors, forks children that fuzz
 * with copies of them (and read their fdinfo and counters page), passes
 * them to the other workers over SCM_RIGHTS and interrupts its own waiters
 * with a signal; it acts about once per CHAOS_EVERY requests of its
 * worker, so that the mix is the same on a fast kernel and on a slow one
 * (PREEMPT_RT).  The fuzzing threads map and read a counters page now and
 * then, and the forked children make a pool over a handle (issue 45).
 *
 * Some fresh handles are opened read-only: then acquire, release and
 * resize must fail with EBADF, and what REOPEN makes of a bound one must
 * be read-only too.  Some fresh handles join the worker's epoll set before
 * anything binds them, and the chaos thread drains that set now and then.
 *
 * The chaos thread also goes through wsemfs (issue 11): it opens the
 * files of the fuzz's namespace with random flags (the handles join the
 * pool), reads their text, chmods, chowns, unlinks, renames, links and
 * truncates them, lists the directory, mounts and unmounts it (and
 * bind-mounts single files) while the others open through those mounts,
 * and forks children that make an IPC namespace of their own, mount it,
 * pass its handles to the workers and die, so that namespaces die under
 * opens.  It also opens the semaphores' jobserver endpoints
 * (MOUNT/@jobserver/NAME), keeps a few open, and reads (without blocking),
 * writes, polls and closes them, so that workers killed at any moment hold
 * tokens and requests through them; and it goes around the descriptors:
 * it leaves endpoints in its epoll set under descriptors it closes (the
 * set's drains poll them), lets children that share its descriptor table
 * (clone(CLONE_FILES)) poll and read them and exit or be killed, and reads
 * them through io_uring's fixed files after closing the descriptor.  Every result of those calls must be one the VFS or the spec
 * allows.  The mount points are directories of a read-only tmpfs in a
 * mount namespace of the test's own: an unmounted point creates nothing.
 *
 * Everything runs in an IPC namespace and a PID namespace of the test's
 * own: the names cannot meet another test's, and a stale PID can only ever
 * name another fuzz process.  The namespace's init respawns killed workers
 * until enough requests were made; when it exits the kernel kills every
 * process left.  Then the test empties the mailboxes (descriptors still in
 * flight hold weight too) and checks, through LIST and through handles it
 * kept on the base semaphores, that no weight is used and nobody waits.
 *
 * Each result is checked against the contract: the errno must be one the
 * command can return, unknown commands give ENOTTY, and a success must
 * make sense (a name created must be valid, a stat must add up, a list
 * must be in name order).
 *
 * Loans (issue 31): the workers lend through their handles (WSEM_IOC_LEND:
 * 0, a little, the edges of WSEM_CAPACITY_MAX and past it, flags now and
 * then, WSEM_LEND_END_HOLDERS among them: such a lender's close SIGKILLs
 * the workers that hold weight on its semaphore, which are respawned like
 * any killed worker), raising and lowering what each handle lends, and some semaphores
 * they create take their capacity from loans (WSEM_OPEN_LOANS: own
 * capacity 0 and a ceiling; SET_CAPACITY 0 is taken there).  The lending
 * handles are closed, passed, dup()ed and their workers killed like any
 * other.  The errors that the arguments decide are checked exactly:
 * unknown flags, or LOANS without CREAT or ANON, are EINVAL; root gets
 * nothing but EINVAL from LEND; nobody may get EPERM, for a raise or for
 * WSEM_LEND_END_HOLDERS (CAP_KILL), but not for a plain withdrawal (0),
 * which fails only as an unbound handle does (EINVAL).  Every stat of the new
 * size must add up: a capacity of 0 only with a ceiling, the loans part of
 * the capacity, what a handle lends part of them, and 0 in a list.
 *
 * One chaos action in a hundred forks a lender round: a child alone with
 * an anonymous semaphore (with or without LOANS) lends through handles of
 * its own, resizes, withdraws by LEND 0 and by close, has a forked lender
 * SIGKILLed, a nobody child try to raise (EPERM) and lower a loan, takes
 * and gives back a unit, and queues, releases and cancels an asynchronous
 * request.  After each step the capacity must be the model's own plus its
 * loans exactly, the request granted when it fits, a waiter of a LOANS
 * semaphore within its ceiling never failed (EINVAL), and poll(2) says
 * POLLRDBAND exactly when used, waiters or queued weight changed since the
 * last stat (and wakes a poller that sleeps for it).  At the end nothing
 * is lent anywhere: every capacity is the own one again.
 *
 * Trees and gangs (issue 31): some OPENs make children (WSEM_OPEN_CHILD,
 * ANON or CREAT) of a pool handle, so that trees grow a few levels deep
 * as children join the pool, or name a hostile parent_fd that each worker
 * keeps outside its pool: -1 and a read-only handle (EBADF), the epoll set
 * and an unbound handle (EINVAL), the deepest child a tree may have
 * (ELOOP); others give a parent_fd without CHILD, CHILD without CREAT or
 * ANON, or a non-zero __pad2 (EINVAL).  ACQUIRE_MANY takes 1..8 entries
 * from the pool and those descriptors, with hostile counts, paddings,
 * weights, clocks and entry pointers, an entry twice, TRY or deadlines
 * within 2 ms (a wait without one seldom: SIGUSR1 ends it).  Where a fresh
 * handle issued it, the error the arguments decide is checked exactly: a
 * hostile first entry's, the deepest child twice or asked more than its
 * line can ever give (EINVAL).  Each worker starts by building its chain
 * down to WSEM_DEPTH_MAX, closing the handles above as it goes, and
 * checks every level's depth and parent_id (the parent's wsem-id), ELOOP
 * one level further, and a gang on the deepest child counted on the root
 * and given back there.  Every stat of size VER3 must have depth <= 8 and
 * a parent_id exactly when it has a depth; HOLDERS of size VER1 lists
 * children last, and only they are WSEM_HOLDER_CHILD.  The children made,
 * chains checked, ELOOPs and gangs granted are counted, with no minimum.
 *
 * The chaos threads of root workers also set the module parameter spin_ns
 * now and then (0, 1 us, 20 us, 1 ms), so that waiters poll for their grant
 * (or do not) while the rest goes on; the test puts the old value back.
 * With a test build of the module they also arm test_tell_delay_ms (1 to
 * 5 ms): the next granter pauses between publishing its grants and waking
 * the grantees, while closes, collects and new requests go on.
 *
 * Environment: WSEM_FUZZ_SEED replays the random choices of a run (the
 * interleaving of the processes is the scheduler's); WSEM_FUZZ_OPS is the
 * number of requests (default 600000); WSEM_FUZZ_SECONDS bounds the run
 * (default 100, under the VM harness's 120 s per test).  A run that ends
 * at its time with fewer requests says so, and fails only below a tenth.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <dirent.h>
#include <unistd.h>

#include <liburing.h>
#include <wsem.h>

#include "kselftest_harness.h"
#include "util.h"

#define NWORKERS	8		/* fuzz processes alive at once */
#define OP_THREADS	2		/* fuzzing threads per worker */
#define NPOOL		16		/* descriptors a worker juggles */
#define NBASE		5		/* semaphores created before the run */
#define NRANDOM		16		/* names "fr.N" the fuzzers create */
#define MAX_CHILDREN	2		/* forked children per worker at once */
#define CHAOS_EVERY	16		/* requests per chaos action, about */
#define CHAOS_WAIT	(10 * MSEC)	/* ... or this long at most */
#define KILL_EVERY	2500		/* requests per SIGKILL, about */
#define MSEC		1000000LL
#define PAGE		4096
#define NOBODY		65534
#define DEF_OPS		600000
#define DEF_SECONDS	100
#define MAX_NOTES	16		/* violations described in full */
#define NOTE_LEN	200
#define STAT_SIZE	sizeof(struct wsem_stat)
#define NMNT		4		/* wsemfs mount points */
#define NBIND		2		/* file bind-mount targets */
#define NNSNAMES	3		/* names a dying namespace makes */
#define SPIN_PARAM	"/sys/module/wsem/parameters/spin_ns"
#define TELL_DELAY	"/sys/module/wsem/parameters/test_tell_delay_ms"
#define VIEW_BATCH	"/sys/module/wsem/parameters/test_view_batch"

/* The base semaphores: the workers find them by name. */
static const struct {
	const char *name;
	uint64_t capacity;
	mode_t mode;
} base[NBASE] = {
	{ "fz.0", 1, 0666 },
	{ "fz.1", 3, 0666 },
	{ "fz.2", 64, 0600 },			/* nobody: EACCES */
	{ "fz.3", 1000, 0644 },			/* nobody: EACCES */
	{ "fz.4", WSEM_CAPACITY_MAX, 0666 },
};

/* What the processes of a run share, in a MAP_SHARED mapping. */
struct shared {
	uint64_t seed;			/* the run's seed */
	uint64_t target;		/* requests to make */
	uint64_t ops;			/* requests made (ioctl calls) */
	uint64_t ok;			/* ... that succeeded */
	uint64_t chaos;			/* close/dup/fork/pass/kill actions */
	uint64_t forks;			/* children forked by workers */
	uint64_t passed;		/* descriptors sent over SCM_RIGHTS */
	uint64_t received;		/* ... and received */
	uint64_t kills;			/* SIGKILLs sent by workers */
	uint64_t killed;		/* workers that died of SIGKILL */
	uint64_t spawned;		/* workers started */
	uint64_t created;		/* handles bound by OPEN */
	uint64_t granted;		/* acquires granted */
	uint64_t interrupted;		/* acquires ended by EINTR */
	uint64_t queued;		/* asynchronous requests queued */
	uint64_t ended;			/* ... collected or cancelled */
	uint64_t idle;			/* idle waits that found it idle */
	uint64_t readonly;		/* read-only handles bound and checked */
	uint64_t pools;			/* pools opened by forked children */
	uint64_t maps;			/* random mmap(2)s of handles */
	uint64_t maps_made;		/* ... that made a mapping */
	uint64_t fs_calls;		/* wsemfs path and mount calls */
	uint64_t fs_opened;		/* ... handles opened by path */
	uint64_t fs_read;		/* ... texts read and checked */
	uint64_t js_opened;		/* jobserver endpoints opened */
	uint64_t js_tokens;		/* ... tokens read from them */
	uint64_t js_epoll;		/* ... left in an epoll set, closed */
	uint64_t js_shared;		/* ... read by CLONE_FILES children */
	uint64_t js_uring;		/* ... read through io_uring, fixed */
	uint64_t js_nodesc;		/* ... refused there: no descriptor */
	uint64_t mounts;		/* ... successful mounts */
	uint64_t umounts;		/* ... and unmounts */
	uint64_t ns_deaths;		/* namespaces made to die */
	uint64_t lends;			/* LENDs of more than 0 */
	uint64_t withdrawn;		/* ... and of 0 */
	uint64_t end_lends;		/* ... with WSEM_LEND_END_HOLDERS */
	uint64_t deadline_lends;	/* LENDs with WSEM_LEND_DEADLINE */
	uint64_t loans_opened;		/* OPENs with WSEM_OPEN_LOANS */
	uint64_t rounds;		/* lender rounds finished */
	uint64_t round_kills;		/* ... lenders SIGKILLed */
	uint64_t kill_groups;		/* ... holders' kill groups ended */
	uint64_t kill_group_max_ns;	/* ... the longest until both reaped */
	uint64_t rdband;		/* ... POLLRDBANDs, as modelled */
	uint64_t woken;			/* ... sleeping pollers woken */
	uint64_t woken_max_ns;		/* ... the longest such sleep */
	uint64_t children;		/* OPENs with WSEM_OPEN_CHILD */
	uint64_t chains;		/* chains WSEM_DEPTH_MAX deep, checked */
	uint64_t eloops;		/* ELOOPs below depth WSEM_DEPTH_MAX */
	uint64_t gangs;			/* ACQUIRE_MANYs granted */
	uint64_t gang_parts;		/* ... their entries */
	uint64_t violations;		/* results against the contract */
	uint32_t stop;			/* set by the namespace's init */
	uint32_t nnotes;
	int pids[NWORKERS];		/* workers, PIDs of our PID namespace */
	char top[64];			/* the read-only tmpfs */
	char mnt[NMNT][80];		/* top/mN: wsemfs mount points */
	char bind[NBIND][80];		/* top/bN: files to bind-mount onto */
	char notes[MAX_NOTES][NOTE_LEN];
	int64_t start_ns, end_ns;
};

static struct shared *sh;
/* The mailboxes: workers send to box[i][1], worker i reads box[i][0]. */
static int box[NWORKERS][2];

static uint64_t add(uint64_t *p, uint64_t n)
{
	return __atomic_add_fetch(p, n, __ATOMIC_RELAXED);
}

static struct rng rng_for(uint64_t a, uint64_t b, uint64_t c)
{
	struct rng r = { .s = sh->seed ^ (a * 0xd1b54a32d192ed03ULL) };

	r.s ^= b * 0xabc98388fb8fac03ULL;
	r.s ^= c * 0x8cb92ba72f3d8dd7ULL;
	rnd(&r);
	return r;
}

/*
 * Record a result that breaks the contract; the test prints the first
 * MAX_NOTES different ones (racy, so a repeat may slip in).
 */
static void __attribute__((format(printf, 1, 2))) violation(const char *fmt, ...)
{
	char note[NOTE_LEN];
	uint32_t i, n;
	va_list ap;

	add(&sh->violations, 1);
	va_start(ap, fmt);
	vsnprintf(note, sizeof(note), fmt, ap);
	va_end(ap);
	n = __atomic_load_n(&sh->nnotes, __ATOMIC_ACQUIRE);
	for (i = 0; i < n && i < MAX_NOTES; i++)
		if (!strcmp(sh->notes[i], note))
			return;
	i = __atomic_fetch_add(&sh->nnotes, 1, __ATOMIC_RELAXED);
	if (i < MAX_NOTES)
		memcpy(sh->notes[i], note, sizeof(note));
}

/* SPEC.md: 1..63 bytes of [A-Za-z0-9._-]. */
static bool spec_name(const char *name)
{
	size_t len = strnlen(name, WSEM_NAME_MAX), i;

	if (!len || len == WSEM_NAME_MAX)
		return false;
	for (i = 0; i < len; i++) {
		unsigned char c = name[i];

		if (!(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') &&
		    !(c >= '0' && c <= '9') && c != '.' && c != '_' &&
		    c != '-')
			return false;
	}
	return true;
}

/* A printable copy of a name buffer, for the notes. */
static const char *show(const char *name, char *buf, size_t len)
{
	size_t i, o = 0;

	for (i = 0; i < WSEM_NAME_MAX && name[i] && o + 5 < len; i++) {
		unsigned char c = name[i];

		if (c > ' ' && c < 0x7f)
			buf[o++] = c;
		else
			o += snprintf(buf + o, len - o, "\\x%02x", c);
	}
	buf[o] = 0;
	return buf;
}

/* ---------------------------------------------------------------- */
/* Hostile arguments                                                 */

/*
 * Per thread: two read-write pages, a PROT_NONE guard after them and a
 * read-only page holding a plausible struct.
 */
struct arena {
	char *rw;		/* 2 * PAGE bytes */
	char *none;		/* PAGE bytes, no access */
	char *ro;		/* PAGE bytes, read-only */
};

enum ptr_kind { P_GOOD, P_STRADDLE, P_NONE, P_RO, P_NULL, P_KERNEL, P_LOW };

static int arena_init(struct arena *a)
{
	struct wsem_open_args o = {
		.size = sizeof(o), .flags = WSEM_OPEN_CREAT, .capacity = 1,
		.mode = 0600, .name = "fz.ro",
	};
	char *p = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return -1;
	a->rw = p;
	a->none = p + 2 * PAGE;
	a->ro = p + 3 * PAGE;
	memcpy(a->ro, &o, sizeof(o));
	if (mprotect(a->none, PAGE, PROT_NONE) ||
	    mprotect(a->ro, PAGE, PROT_READ))
		return -1;
	return 0;
}

/*
 * Where the argument of a request goes.  @len bytes of @src are copied
 * there when it is writable (only the part before the guard page when it
 * straddles it); @kind tells which it was.
 */
static void *place(struct rng *r, struct arena *a, const void *src,
		   size_t len, enum ptr_kind *kind)
{
	unsigned int k = below(r, 100);
	char *p;

	if (k < 72) {
		size_t off = chance(r, 10) ? below(r, 8) : 0;

		/*
		 * Within the first page: the second holds a gang's entries,
		 * which a long struct's tail must not overwrite.
		 */
		*kind = P_GOOD;
		p = a->rw + (len + off <= PAGE ? off : 0);
		memcpy(p, src, len);
		return p;
	}
	if (k < 80 && len > 1) {
		size_t cut = 1 + below(r, len - 1);

		*kind = P_STRADDLE;
		p = a->none - cut;
		memcpy(p, src, cut);
		return p;
	}
	if (k < 85) {
		*kind = P_NONE;
		return a->none;
	}
	if (k < 91) {
		*kind = P_RO;
		return a->ro;
	}
	if (k < 95) {
		*kind = P_NULL;
		return NULL;
	}
	if (k < 98) {
		*kind = P_KERNEL;
		return (void *)0xffffffff81000000UL;
	}
	*kind = P_LOW;
	return (void *)0x1000UL;
}

/* A struct size field: mostly right, often wrong. */
static uint64_t pick_size(struct rng *r, uint64_t ver0)
{
	switch (below(r, 20)) {
	case 0:
		return 0;
	case 1:
		return 1 + below(r, ver0 - 1);
	case 2:
	case 3:
		return ver0 + 8 * (1 + below(r, 16));
	case 4:
		return PAGE;
	case 5:
		return PAGE + 1 + below(r, PAGE);
	case 6:
		return UINT64_MAX;
	case 7:
		return rnd(r);
	default:
		return ver0;
	}
}

/* Weights and capacities: the edges of every base semaphore, and worse. */
static uint64_t pick_weight(struct rng *r)
{
	static const uint64_t edge[] = {
		0, 1, 2, 3, 4, 63, 64, 65, 999, 1000, 1001,
		WSEM_CAPACITY_MAX - 1, WSEM_CAPACITY_MAX,
		WSEM_CAPACITY_MAX + 1, 1ULL << 63, UINT64_MAX,
	};

	if (chance(r, 55))
		return 1 + below(r, 3);
	if (chance(r, 90))
		return edge[below(r, ARRAY_SIZE(edge))];
	return rnd(r);
}

/* A name buffer: valid, at the limit, over it, or full of junk. */
static void pick_name(struct rng *r, char *name)
{
	static const char *const junk[] = {
		"", "a/b", "a b", "*", "a\nb", "\x01", "\x7f", "a\x1b[0m",
		"\xc0", "caf\xe9", "\xff\xfe", "\xc3\xa9t\xc3\xa9", "..",
		"fz.0\x01", "-", "_",
	};
	unsigned int k = below(r, 100);
	size_t i;

	memset(name, 0, WSEM_NAME_MAX);
	if (k < 40) {
		snprintf(name, WSEM_NAME_MAX, "%s", base[below(r, NBASE)].name);
	} else if (k < 70) {
		snprintf(name, WSEM_NAME_MAX, "fr.%u",
			 (unsigned int)below(r, NRANDOM));
	} else if (k < 76) {
		/* 63 bytes: the longest valid name */
		memset(name, 'L', WSEM_NAME_MAX - 1);
		name[0] = '0' + below(r, 3);
	} else if (k < 82) {
		/* 64 bytes and no terminator */
		memset(name, 'M', WSEM_NAME_MAX);
	} else if (k < 95) {
		snprintf(name, WSEM_NAME_MAX, "%s",
			 junk[below(r, ARRAY_SIZE(junk))]);
	} else {
		for (i = 0; i < WSEM_NAME_MAX; i++)
			name[i] = rnd(r);
	}
	/* Bytes after the terminator never matter. */
	if (chance(r, 5) && strnlen(name, WSEM_NAME_MAX) < WSEM_NAME_MAX - 2)
		name[WSEM_NAME_MAX - 1] = 'z';
}

/*
 * The bytes after a struct of @ksize bytes whose size field says @usize:
 * zero, or with one non-zero byte (true).  Sets *@len to what must be
 * copied to the arena.
 */
static bool tail(struct rng *r, char *buf, size_t ksize, uint64_t usize,
		 size_t *len)
{
	size_t end = usize < PAGE ? usize : PAGE;

	*len = ksize;
	if (usize > PAGE || end <= ksize)
		return false;
	*len = end;
	memset(buf + ksize, 0, end - ksize);
	if (!chance(r, 35))
		return false;
	buf[ksize + below(r, end - ksize)] = 1 + below(r, 255);
	return true;
}

/* ---------------------------------------------------------------- */
/* One worker                                                        */

/* Descriptors of one worker, shared by its threads, racily on purpose. */
static int pool[NPOOL];
static int epfd = -1;		/* the worker's epoll set */
static unsigned int my_slot;
static uint64_t my_ops;		/* requests made by this process */

/* SIGUSR1 only interrupts a sleeping acquire (EINTR). */
static void on_usr1(int sig)
{
	(void)sig;
}

static int pool_get(struct rng *r)
{
	return __atomic_load_n(&pool[below(r, NPOOL)], __ATOMIC_RELAXED);
}

static void pool_put(struct rng *r, int fd)
{
	int old = __atomic_exchange_n(&pool[below(r, NPOOL)], fd,
				      __ATOMIC_RELAXED);

	if (old >= 0)
		close(old);
}

static void pool_close(struct rng *r)
{
	int old = __atomic_exchange_n(&pool[below(r, NPOOL)], -1,
				      __ATOMIC_RELAXED);

	if (old >= 0)
		close(old);
}

/*
 * Trees (issue 31): descriptors a worker keeps for itself, outside the
 * pool, so that the error a child's parent_fd or a gang's entry makes is
 * known: none at all (-1), one that is no handle (the epoll set), an
 * unbound handle, a read-only bound one, and the deepest child a tree may
 * have (depth WSEM_DEPTH_MAX, capacity DEEP_CAP on every level).
 */
enum hostile { H_ANY, H_NEG, H_NOTWSEM, H_UNBOUND, H_RDONLY, H_DEEP };
#define DEEP_CAP	4
static int unbound_fd = -1, rdonly_fd = -1, deep_fd = -1;

static int hostile_fd(int h)
{
	switch (h) {
	case H_NEG:
		return -1;
	case H_NOTWSEM:
		return epfd;
	case H_UNBOUND:
		return unbound_fd;
	case H_RDONLY:
		return rdonly_fd;
	default:
		return deep_fd;
	}
}

/*
 * A parent_fd or gang entry: mostly one of the pool (H_ANY), else one of
 * the worker's own, in *@h (H_ANY too if that one could not be made).
 */
static int pick_tree_fd(struct rng *r, int *h)
{
	unsigned int k = below(r, 100);
	int fd;

	if (k < 66) {
		*h = H_ANY;
		return pool_get(r);
	}
	*h = k < 74 ? H_DEEP : k < 81 ? H_NEG : k < 88 ? H_NOTWSEM :
	     k < 94 ? H_UNBOUND : H_RDONLY;
	fd = hostile_fd(*h);
	if (fd < 0 && *h != H_NEG)
		*h = H_ANY;
	return fd;
}

/* The semaphore id that fdinfo shows for @fd, or -1. */
static long long fd_sem_id(int fd)
{
	char path[64], buf[1024], *p;
	long long id = -1;
	ssize_t n;
	int f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = open(path, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return -1;
	n = read(f, buf, sizeof(buf) - 1);
	close(f);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	p = strstr(buf, "wsem-id:");
	if (!p || sscanf(p, "wsem-id: %lld", &id) != 1)
		return -1;
	return id;
}

/* OPEN ANON (a child of @parent if >= 0) on a new handle: fd or -errno. */
static int open_anon(int parent, uint64_t capacity, int rdflags)
{
	struct wsem_open_args o = {
		.size = sizeof(o), .flags = WSEM_OPEN_ANON,
		.capacity = capacity,
	};
	int fd = open("/dev/wsem", rdflags | O_CLOEXEC), err;

	if (fd < 0)
		return -errno;
	if (parent >= 0) {
		o.flags |= WSEM_OPEN_CHILD;
		o.parent_fd = parent;
	}
	if (!ioctl(fd, WSEM_IOC_OPEN, &o))
		return fd;
	err = errno;
	close(fd);
	return -err;
}

static int gang(const struct wsem_many_entry *e, uint32_t count,
		uint64_t flags)
{
	struct wsem_many_args m = {
		.size = sizeof(m), .flags = flags, .count = count,
		.entries = (uintptr_t)e,
	};

	return ioctl(unbound_fd, WSEM_IOC_ACQUIRE_MANY, &m) ? errno : 0;
}

/*
 * The worker's own descriptors, before its threads start.  The chain of
 * anonymous children down to WSEM_DEPTH_MAX is checked level by level
 * (depth, parent_id = the parent's wsem-id, the handles above closed as
 * it goes: the children keep them), then one more level must be ELOOP,
 * and gangs on the deepest one: granted across all nine levels, the same
 * semaphore twice and more than DEEP_CAP are EINVAL.
 */
static void tree_fds(void)
{
	struct wsem_many_entry e[2] = {
		{ .weight = 1 }, { .weight = 1 },
	};
	struct wsem_open_args o = {
		.size = sizeof(o), .mode = 0666,
	};
	struct wsem_stat st;
	long long id, pid;
	unsigned int d, i;
	int fd, prev, err, root;

	unbound_fd = open("/dev/wsem", O_RDWR | O_CLOEXEC);
	for (i = 0; i < NBASE && rdonly_fd < 0; i++) {
		rdonly_fd = open("/dev/wsem", O_RDONLY | O_CLOEXEC);
		snprintf(o.name, sizeof(o.name), "%s", base[i].name);
		if (rdonly_fd >= 0 && ioctl(rdonly_fd, WSEM_IOC_OPEN, &o)) {
			close(rdonly_fd);
			rdonly_fd = -1;
		}
	}
	root = prev = open_anon(-1, DEEP_CAP, O_RDWR);
	if (root < 0)
		return;
	for (d = 1; d <= WSEM_DEPTH_MAX; d++) {
		fd = open_anon(prev, DEEP_CAP, O_RDWR);
		pid = fd_sem_id(prev);
		if (prev != root)
			close(prev);
		if (fd < 0) {
			close(root);
			violation("a child at depth %u: %s", d, strerror(-fd));
			return;
		}
		memset(&st, 0, sizeof(st));
		st.size = sizeof(st);
		id = fd_sem_id(fd);
		/* fdinfo shows no wsem-id on old kernels (5.10): -1 */
		if (ioctl(fd, WSEM_IOC_STAT, &st) || st.depth != d ||
		    !st.parent_id || st.capacity != DEEP_CAP ||
		    (pid >= 0 && (long long)st.parent_id != pid) ||
		    (id >= 0 && id == pid))
			violation("a child at depth %u (id %lld, parent %lld): "
				  "stat depth %llu parent_id %llu capacity "
				  "%llu", d, id, pid,
				  (unsigned long long)st.depth,
				  (unsigned long long)st.parent_id,
				  (unsigned long long)st.capacity);
		prev = fd;
	}
	deep_fd = prev;
	fd = open_anon(deep_fd, 1, O_RDWR);
	if (fd != -ELOOP) {
		violation("a child below depth %u: %s", WSEM_DEPTH_MAX,
			  fd < 0 ? strerror(-fd) : "made");
		if (fd >= 0)
			close(fd);
	}
	/* Nobody else has the chain yet: a gang on it is granted now. */
	e[0].fd = e[1].fd = deep_fd;
	err = gang(e, 1, WSEM_ACQUIRE_TRY);
	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	if (err || ioctl(deep_fd, WSEM_IOC_STAT, &st) || st.used != 1 ||
	    st.held != 1)
		violation("a gang of the deepest child: %s, used %llu held "
			  "%llu", strerror(err), (unsigned long long)st.used,
			  (unsigned long long)st.held);
	/* ... counted on the root, and given back there too */
	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	if (!err && (ioctl(root, WSEM_IOC_STAT, &st) || st.used != 1 ||
		     st.held || wsem_release(deep_fd, 1)))
		violation("the root of a gang's child: used %llu held %llu",
			  (unsigned long long)st.used,
			  (unsigned long long)st.held);
	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	if (ioctl(root, WSEM_IOC_STAT, &st) || st.used || st.waiters)
		violation("the root after the release: used %llu, %llu "
			  "waiters", (unsigned long long)st.used,
			  (unsigned long long)st.waiters);
	close(root);
	err = gang(e, 2, WSEM_ACQUIRE_TRY);
	if (err != EINVAL)
		violation("a gang with one semaphore twice: %s", strerror(err));
	e[0].weight = DEEP_CAP + 1;
	err = gang(e, 1, WSEM_ACQUIRE_TRY);
	if (err != EINVAL)
		violation("a gang of %u on a line of capacity %u: %s",
			  DEEP_CAP + 1, DEEP_CAP, strerror(err));
	add(&sh->chains, 1);
}

/*
 * A shrink of a root that fails the first waiter of its child's queue,
 * with random capacities: the one behind it, which fits, is granted by
 * the same shrink (the walk looks at the queue the shrink took the first
 * of: test_regrants).  The worker may be SIGKILLed anywhere in it.
 */
static void shrink_round(struct rng *r)
{
	uint64_t c = 3 + below(r, 6), h = 1 + below(r, c - 2);
	uint64_t s = h + 1 + below(r, c - 1 - h);
	int root, child, fd[3] = { -1, -1, -1 }, ex = -1, ey = -1, i;

	root = open_anon(-1, c + below(r, 3), O_RDWR);
	if (root < 0)
		return;
	child = open_anon(root, c, O_RDWR);
	for (i = 0; i < 3 && child >= 0; i++)
		fd[i] = wsem_reopen(child, O_CLOEXEC);
	/* The child holds h of c: c waits in its queue, 1 behind it. */
	if (child >= 0 && fd[0] >= 0 && fd[1] >= 0 && fd[2] >= 0 &&
	    !wsem_acquire(fd[0], h) &&
	    wsem_acquire_async(fd[1], c) && errno == EINPROGRESS &&
	    wsem_acquire_async(fd[2], 1) && errno == EINPROGRESS &&
	    !wsem_set_capacity(root, s)) {
		ex = wsem_acquire_result(fd[1]) ? errno : 0;
		ey = wsem_acquire_result(fd[2]) ? errno : 0;
		if (ex != EINVAL || ey)
			violation("a shrink of a root to %llu (child %llu, "
				  "%llu held): the child's first waiter of "
				  "%llu %s, the next of 1 %s",
				  (unsigned long long)s, (unsigned long long)c,
				  (unsigned long long)h, (unsigned long long)c,
				  strerror(ex), ey ? strerror(ey) : "granted");
	}
	for (i = 0; i < 3; i++)
		if (fd[i] >= 0)
			close(fd[i]);
	if (child >= 0)
		close(child);
	close(root);
}

enum req {
	R_OPEN, R_REOPEN, R_ACQUIRE, R_RELEASE, R_SETCAP, R_STAT, R_UNLINK,
	R_LIST, R_HOLDERS, R_ASYNC, R_IDLE, R_LABEL, R_KILL, R_LEND, R_MANY,
	R_UNKNOWN, R_GENERIC, R_COUNT
};

static const char *const req_name[R_COUNT] = {
	"OPEN", "REOPEN", "ACQUIRE", "RELEASE", "SET_CAPACITY", "STAT",
	"UNLINK", "LIST", "HOLDERS", "ASYNC", "WAIT_IDLE", "SET_LABEL", "SET_KILL",
	"LEND", "ACQUIRE_MANY", "unknown",
	"generic",
};

/* errnos each request may fail with (besides EBADF for a stale fd) */
static bool allowed(enum req q, int err)
{
	switch (q) {
	case R_OPEN:
		/* ELOOP (and EBADF): a child's parent */
		return err == EINVAL || err == EFAULT || err == E2BIG ||
		       err == EBUSY || err == EEXIST || err == ENOENT ||
		       err == ENOSPC || err == ENOMEM || err == EACCES ||
		       err == ELOOP;
	case R_REOPEN:
		return err == EINVAL || err == EFAULT || err == EMFILE ||
		       err == ENFILE || err == ENOMEM;
	case R_ACQUIRE:
		return err == EINVAL || err == EFAULT || err == E2BIG ||
		       err == EAGAIN || err == ETIMEDOUT || err == EINTR ||
		       err == EINPROGRESS || err == EBUSY;
	case R_RELEASE:
		return err == EINVAL || err == EFAULT;
	case R_SETCAP:
		return err == EINVAL || err == EFAULT || err == EPERM;
	case R_STAT:
		return err == EINVAL || err == EFAULT || err == E2BIG;
	case R_UNLINK:
		return err == EINVAL || err == EFAULT || err == E2BIG ||
		       err == ENOENT || err == EPERM;
	case R_LIST:
		return err == EINVAL || err == EFAULT || err == E2BIG ||
		       err == ENOMEM;
	case R_HOLDERS:
		/* EACCES: a write-only handle (of a wsemfs file) */
		return err == EINVAL || err == EFAULT || err == E2BIG ||
		       err == ENOMEM || err == EACCES;
	case R_ASYNC:
		return err == EINVAL || err == EFAULT || err == ENOENT ||
		       err == EINPROGRESS || err == EALREADY;
	case R_IDLE:
		return err == EINVAL || err == EFAULT || err == E2BIG ||
		       err == EAGAIN || err == ETIMEDOUT || err == EINTR ||
		       err == EDEADLK;
	case R_LABEL:
		return err == EINVAL || err == EFAULT || err == E2BIG;
	case R_KILL:
		return err == EINVAL || err == EFAULT || err == E2BIG ||
		       err == ESRCH || err == EPERM;
	case R_LEND:
		/* ETIMEDOUT, ENOMEM: WSEM_LEND_DEADLINE's (check_loan_err()) */
		return err == EINVAL || err == EFAULT || err == E2BIG ||
		       err == EPERM || err == ETIMEDOUT || err == ENOMEM;
	case R_MANY:
		/* EBADF (an entry's) is taken before */
		return err == EINVAL || err == EFAULT || err == E2BIG ||
		       err == EAGAIN || err == ETIMEDOUT || err == EINTR ||
		       err == ENOMEM;
	case R_UNKNOWN:
		return err == ENOTTY;
	case R_GENERIC:
		return err == ENOTTY || err == EFAULT || err == EINVAL;
	default:
		return false;
	}
}

/*
 * Does a stat (of a handle, or a list entry: @list) of @size bytes add up?
 * Only one of WSEM_STAT_SIZE_VER2 shows the loans and the ceiling: a
 * capacity of 0 is an older caller's to take on trust.
 */
static void check_stat(const struct wsem_stat *st, const char *what,
		       uint64_t size, bool list)
{
	bool v2 = size >= WSEM_STAT_SIZE_VER2;
	char nb[NOTE_LEN];

	if ((v2 && !st->capacity && !st->ceiling) ||
	    st->capacity > WSEM_CAPACITY_MAX)
		violation("%s: capacity %llu", what,
			  (unsigned long long)st->capacity);
	/* The own capacity is 0 only where loans make the capacity. */
	if (v2 && (st->lent > st->capacity || st->lent_here > st->lent ||
		   (list && st->lent_here) ||
		   st->ceiling > WSEM_CAPACITY_MAX ||
		   (st->capacity == st->lent && !st->ceiling)))
		violation("%s: capacity %llu lent %llu (%llu here) "
			  "ceiling %llu", what,
			  (unsigned long long)st->capacity,
			  (unsigned long long)st->lent,
			  (unsigned long long)st->lent_here,
			  (unsigned long long)st->ceiling);
	if (st->available != (st->used <= st->capacity ?
			      st->capacity - st->used : 0))
		violation("%s: available %llu with capacity %llu used %llu",
			  what, (unsigned long long)st->available,
			  (unsigned long long)st->capacity,
			  (unsigned long long)st->used);
	if (st->held > st->used)
		violation("%s: held %llu > used %llu", what,
			  (unsigned long long)st->held,
			  (unsigned long long)st->used);
	if (!st->waiters != !st->queued_weight ||
	    st->queued_weight < st->waiters)
		violation("%s: %llu waiters, queued weight %llu", what,
			  (unsigned long long)st->waiters,
			  (unsigned long long)st->queued_weight);
	if (st->mode & ~0777 || st->__pad)
		violation("%s: mode %o pad %u", what, st->mode, st->__pad);
	if (st->name[0] && !spec_name(st->name))
		violation("%s: name \"%s\"", what,
			  show(st->name, nb, sizeof(nb)));
	/* A tree: a root has no parent, a child is at most 8 below one. */
	if (size >= WSEM_STAT_SIZE_VER3 &&
	    (st->depth > WSEM_DEPTH_MAX || !st->depth != !st->parent_id))
		violation("%s: depth %llu parent_id %llu", what,
			  (unsigned long long)st->depth,
			  (unsigned long long)st->parent_id);
}

/* One fuzz step: what was asked, for the checks. */
struct step {
	enum req q;
	unsigned int cmd;
	enum ptr_kind kind;		/* where the argument pointed */
	int fd;
	bool fresh;			/* fd is a new, unbound handle */
	bool rdonly;			/* ... opened O_RDONLY */
	bool bypath;			/* fd was opened through wsemfs */
	uint64_t usize;			/* the struct's size field */
	bool bad_tail;			/* a non-zero byte past our struct */
	union {
		struct wsem_open_args open;
		struct wsem_acquire_args acq;
		struct wsem_list_args list;
		struct wsem_unlink_args unlink;
		struct wsem_holders_args who;
		struct wsem_label_args label;
		struct wsem_kill_args kill;
		struct wsem_lend_args lend;
		struct wsem_many_args many;
		uint64_t val;
	} a;
	/*
	 * What a child's parent_fd or a gang's first entry is, where the
	 * error it makes is known: one of enum hostile, or H_ANY.
	 */
	int hostile;
	bool dup_deep;			/* a gang with the deep handle twice */
	bool too_much;			/* ... asking more than it can give */
	enum ptr_kind entries_kind;	/* where a gang's entries were */
	char *out;			/* the argument, where the kernel wrote */
};

static const uint64_t ver0[R_COUNT] = {
	[R_OPEN] = WSEM_OPEN_SIZE_VER0,
	[R_ACQUIRE] = WSEM_ACQUIRE_SIZE_VER0,
	[R_STAT] = WSEM_STAT_SIZE_VER0,
	[R_UNLINK] = WSEM_UNLINK_SIZE_VER0,
	[R_LIST] = WSEM_LIST_SIZE_VER0,
	[R_HOLDERS] = WSEM_HOLDERS_SIZE_VER0,
	[R_IDLE] = WSEM_ACQUIRE_SIZE_VER0,
	[R_LABEL] = WSEM_LABEL_SIZE_VER0,
	[R_KILL] = WSEM_KILL_SIZE_VER0,
	[R_LEND] = WSEM_LEND_SIZE_VER0,
	[R_MANY] = WSEM_MANY_SIZE_VER0,
};

/* Could the kernel take these acquire (or idle wait) arguments? */
static bool acquire_flags_ok(const struct wsem_acquire_args *q, bool idle)
{
	const uint64_t known = WSEM_ACQUIRE_TRY | WSEM_ACQUIRE_DEADLINE |
			       WSEM_ACQUIRE_CLOCK | WSEM_ACQUIRE_ASYNC;
	uint64_t f = q->flags;

	if (f & ~known || (f & WSEM_ACQUIRE_TRY && f & WSEM_ACQUIRE_DEADLINE) ||
	    (f & WSEM_ACQUIRE_CLOCK && !(f & WSEM_ACQUIRE_DEADLINE)) ||
	    (f & WSEM_ACQUIRE_ASYNC && (idle || f != WSEM_ACQUIRE_ASYNC)))
		return false;
	if (idle)
		return !q->weight;
	return q->weight && q->weight <= WSEM_CAPACITY_MAX;
}

/*
 * The one error a failure must be, when the arguments alone decide it
 * (0: anything allowed() takes).  Commands that need a bound handle may
 * say EINVAL first for an unbound one: @alt.
 */
static int expected_err(const struct step *s, int *alt)
{
	bool bound_first = s->q == R_ACQUIRE || s->q == R_STAT ||
			   s->q == R_REOPEN || s->q == R_RELEASE ||
			   s->q == R_SETCAP || s->q == R_HOLDERS ||
			   s->q == R_ASYNC || s->q == R_IDLE ||
			   s->q == R_LABEL || s->q == R_KILL ||
			   s->q == R_LEND;
	bool has_size = ver0[s->q] != 0;

	*alt = bound_first ? EINVAL : 0;
	if (s->q == R_UNKNOWN)
		return ENOTTY;
	if (s->kind == P_NULL || s->kind == P_NONE || s->kind == P_KERNEL ||
	    s->kind == P_LOW)
		return s->q < R_UNKNOWN ? EFAULT : 0;
	if (s->kind != P_GOOD || !has_size)
		return 0;
	if (s->usize < ver0[s->q])
		return EINVAL;
	if (s->usize > PAGE)
		return E2BIG;
	if (s->bad_tail && s->q != R_STAT)
		return E2BIG;
	return 0;
}

/*
 * A LEND or an OPEN whose own arguments reached the kernel failed with
 * @err: what the arguments decide.  Root may always raise a loan and has
 * CAP_KILL, so only EINVAL is left to it (unbound, flags, a capacity in
 * force too large); nobody may also meet EPERM, for a raise or for
 * WSEM_LEND_END_HOLDERS, but never for a plain withdrawal (0).  LOANS
 * without CREAT or ANON is EINVAL.
 */
static void check_loan_err(const struct step *s, int err)
{
	const struct wsem_lend_args *l = &s->a.lend;
	const uint64_t creat = WSEM_OPEN_CREAT | WSEM_OPEN_ANON;

	if (s->q == R_OPEN && s->a.open.flags & WSEM_OPEN_LOANS &&
	    !(s->a.open.flags & creat) && err != EINVAL)
		violation("OPEN flags %llx (LOANS alone): %s, not EINVAL",
			  (unsigned long long)s->a.open.flags, strerror(err));
	if (s->q != R_LEND || err == EINVAL)
		return;
	/* A deadline that passed, and the allocation of its timer. */
	if (l->flags & WSEM_LEND_DEADLINE &&
	    ((err == ETIMEDOUT &&
	      l->deadline_ns <= (uint64_t)clock_ns(CLOCK_BOOTTIME)) ||
	     err == ENOMEM))
		return;
	if (err == EPERM && geteuid() != 0 &&
	    (((l->flags & ~WSEM_LEND_DEADLINE) == 0 && l->capacity) ||
	     (l->flags & ~WSEM_LEND_DEADLINE) == WSEM_LEND_END_HOLDERS))
		return;
	violation("LEND flags %llx capacity %llu (uid %u): %s",
		  (unsigned long long)l->flags,
		  (unsigned long long)l->capacity, geteuid(), strerror(err));
}

/* Could the kernel take these OPEN arguments (issue 31's included)? */
static bool open_args_ok(const struct wsem_open_args *o)
{
	const uint64_t made = WSEM_OPEN_LOANS | WSEM_OPEN_CHILD;
	const uint64_t known = WSEM_OPEN_CREAT | WSEM_OPEN_EXCL |
			       WSEM_OPEN_ANON | made;

	if (o->flags & ~known || o->__pad || o->__pad2 || o->mode & ~0777 ||
	    (!(o->flags & WSEM_OPEN_CHILD) && o->parent_fd))
		return false;
	if (o->flags & WSEM_OPEN_ANON)
		return (o->flags & ~made) == WSEM_OPEN_ANON && !o->name[0] &&
		       o->capacity && o->capacity <= WSEM_CAPACITY_MAX;
	if (!spec_name(o->name) ||
	    (o->flags & made && !(o->flags & WSEM_OPEN_CREAT)))
		return false;
	return !(o->flags & WSEM_OPEN_CREAT) ||
	       (o->capacity && o->capacity <= WSEM_CAPACITY_MAX);
}

/*
 * The one error a child's OPEN or an ACQUIRE_MANY must fail with, when
 * its arguments (all of them read by the kernel) decide it, else 0.
 * OPEN: arguments it cannot take are EINVAL, then the parent's error
 * (checked before the handle is looked at).  ACQUIRE_MANY: flags, count
 * and clock are EINVAL, then entries it may not read EFAULT, then the
 * first entry's error, or a gang on the deepest child that names it twice
 * or asks more than DEEP_CAP of it (EINVAL).
 */
static int nest_want(const struct step *s)
{
	static const int parent_err[] = {
		[H_NEG] = EBADF, [H_NOTWSEM] = EINVAL, [H_UNBOUND] = EINVAL,
		[H_RDONLY] = EBADF, [H_DEEP] = ELOOP,
	};
	const uint64_t known = WSEM_ACQUIRE_TRY | WSEM_ACQUIRE_DEADLINE |
			       WSEM_ACQUIRE_CLOCK;
	const struct wsem_many_args *m = &s->a.many;
	const struct wsem_many_entry *e;
	uint64_t f = m->flags;

	/* The handle must be a wsem one: only a fresh one surely is. */
	if (!s->fresh || s->kind != P_GOOD || s->usize > PAGE || s->bad_tail)
		return 0;
	if (s->q == R_OPEN) {
		if (s->usize < WSEM_OPEN_SIZE_VER1 ||
		    !(s->a.open.flags & WSEM_OPEN_CHILD || s->a.open.parent_fd))
			return 0;
		if (!open_args_ok(&s->a.open))
			return EINVAL;
		return s->hostile != H_ANY ? parent_err[s->hostile] : 0;
	}
	if (s->q != R_MANY || s->usize < WSEM_MANY_SIZE_VER0)
		return 0;
	if (f & ~known || !m->count || m->count > WSEM_MANY_MAX ||
	    (f & WSEM_ACQUIRE_TRY && f & WSEM_ACQUIRE_DEADLINE) ||
	    (f & WSEM_ACQUIRE_CLOCK && !(f & WSEM_ACQUIRE_DEADLINE)) ||
	    (f & WSEM_ACQUIRE_CLOCK ? m->clockid != CLOCK_MONOTONIC &&
				      m->clockid != CLOCK_BOOTTIME &&
				      m->clockid != CLOCK_REALTIME :
				      m->clockid != 0))
		return EINVAL;
	if (s->entries_kind != P_GOOD &&
	    (s->entries_kind != P_STRADDLE || m->count > 1))
		return EFAULT;
	if (s->entries_kind != P_GOOD)
		return 0;
	e = (const void *)(uintptr_t)m->entries;
	if (e[0].__pad || !e[0].weight)
		return EINVAL;
	/* (the entries before another one may fail first) */
	if (s->dup_deep || (s->too_much && m->count == 1))
		return EINVAL;
	return s->hostile == H_ANY || s->hostile == H_DEEP ? 0 :
	       parent_err[s->hostile];
}

/* Check a failure against the contract. */
static void check_err(const struct step *s, int err)
{
	int want, alt;

	want = nest_want(s);
	if (want) {
		/* ... and what that descriptor is now */
		int fd = hostile_fd(s->hostile);

		if (err != want)
			violation("%s flags %llx (fd %d kind %d, now mode %d "
				  "id %lld): %s, not %s", req_name[s->q],
				  (unsigned long long)(s->q == R_OPEN ?
						       s->a.open.flags :
						       s->a.many.flags),
				  fd, s->hostile, fcntl(fd, F_GETFL),
				  fd_sem_id(fd), strerror(err),
				  strerror(want));
		return;
	}

	if (s->rdonly && (s->q == R_ACQUIRE || s->q == R_RELEASE ||
			  s->q == R_SETCAP || s->q == R_ASYNC ||
			  s->q == R_LABEL || s->q == R_KILL ||
			  s->q == R_LEND)) {
		if (err != EBADF)
			violation("%s on a read-only handle: %s",
				  req_name[s->q], strerror(err));
		return;
	}
	/*
	 * A stale pool entry: closed (EBADF), or its number taken meanwhile
	 * by a descriptor that is no handle (ENOTTY), such as a directory
	 * the wsemfs chaos lists.
	 */
	if (err == EBADF || (err == ENOTTY && !s->fresh && !s->bypath &&
			     s->q < R_UNKNOWN)) {
		/* ... or a child's parent, or a gang's entry */
		if (s->fresh && s->q != R_MANY &&
		    !(s->q == R_OPEN && s->a.open.flags & WSEM_OPEN_CHILD))
			violation("%s on a fresh handle: EBADF", req_name[s->q]);
		return;
	}
	if (s->q == R_HOLDERS && err == EACCES)
		return;		/* a write-only handle: before the args */
	if (!allowed(s->q, err)) {
		violation("%s cmd %#x ptr kind %d: unexpected %s",
			  req_name[s->q], s->cmd, s->kind, strerror(err));
		return;
	}
	want = expected_err(s, &alt);
	if (want && err != want && err != alt) {
		violation("%s cmd %#x ptr kind %d size %llu tail %d: %s, not %s",
			  req_name[s->q], s->cmd, s->kind,
			  (unsigned long long)s->usize, s->bad_tail,
			  strerror(err), strerror(want));
		return;
	}
	if (s->q == R_KILL && s->kind == P_GOOD && !want &&
	    (s->a.kill.flags || s->a.kill.__pad || s->a.kill.pgid < 0) &&
	    err != EINVAL)
		violation("SET_KILL flags %llx pad %u pgid %d: %s, not EINVAL",
			  (unsigned long long)s->a.kill.flags,
			  s->a.kill.__pad, s->a.kill.pgid, strerror(err));
	if (s->kind == P_GOOD && !want)
		check_loan_err(s, err);
	if (s->q == R_MANY && s->kind == P_GOOD &&
	    ((err == ETIMEDOUT &&
	      !(s->a.many.flags & WSEM_ACQUIRE_DEADLINE)) ||
	     (err == EAGAIN && !(s->a.many.flags & WSEM_ACQUIRE_TRY)) ||
	     (err == EINTR && s->a.many.flags & WSEM_ACQUIRE_TRY)))
		violation("ACQUIRE_MANY flags %llx: %s",
			  (unsigned long long)s->a.many.flags, strerror(err));
	if (s->kind != P_GOOD || (s->q != R_ACQUIRE && s->q != R_IDLE) ||
	    s->usize != WSEM_ACQUIRE_SIZE_VER0)
		return;
	/*
	 * Our own acquire arguments reached the kernel (those of VER0: the
	 * clock is CLOCK_REALTIME's 0): precise errors.
	 */
	if (!acquire_flags_ok(&s->a.acq, s->q == R_IDLE)) {
		if (err != EINVAL)
			violation("%s flags %llx weight %llu: %s, not EINVAL",
				  req_name[s->q],
				  (unsigned long long)s->a.acq.flags,
				  (unsigned long long)s->a.acq.weight,
				  strerror(err));
	} else if ((err == ETIMEDOUT &&
		    !(s->a.acq.flags & WSEM_ACQUIRE_DEADLINE)) ||
		   (err == EAGAIN && !(s->a.acq.flags & WSEM_ACQUIRE_TRY)) ||
		   (err == EINTR && s->a.acq.flags & (WSEM_ACQUIRE_TRY |
						      WSEM_ACQUIRE_ASYNC)) ||
		   ((err == EINPROGRESS || err == EBUSY) &&
		    !(s->a.acq.flags & WSEM_ACQUIRE_ASYNC)) ||
		   (err == EDEADLK && s->q != R_IDLE)) {
		violation("%s flags %llx: %s", req_name[s->q],
			  (unsigned long long)s->a.acq.flags, strerror(err));
	}
}

/* A successful HOLDERS: counts that make sense, entries clean. */
static void check_holders(const struct step *s)
{
	struct wsem_holders_args ha;
	struct wsem_holder e;
	uint64_t i, n;
	bool child;

	memcpy(&ha, s->out, sizeof(ha));
	if (ha.count && ha.entry_size < WSEM_HOLDER_SIZE_VER0)
		violation("HOLDERS with entry_size %u succeeded",
			  ha.entry_size);
	if (ha.holders > 10000 || ha.waiters > 10000)
		violation("HOLDERS: %u holders, %u waiters", ha.holders,
			  ha.waiters);
	/* Children came with VER1, and its __pad must be zero. */
	if (s->usize < WSEM_HOLDERS_SIZE_VER1)
		ha.children = 0;
	else if (ha.__pad || s->a.who.__pad || ha.children > 10000)
		violation("HOLDERS: %u children, pad %u (asked %u)",
			  ha.children, ha.__pad, s->a.who.__pad);
	n = ha.holders + (uint64_t)ha.waiters + ha.children;
	n = ha.count < n ? ha.count : n;
	if (ha.entry_size < sizeof(e))
		return;
	for (i = 0; i < n && i < 8; i++) {
		memcpy(&e, (char *)(uintptr_t)ha.entries + i * ha.entry_size,
		       sizeof(e));
		/* holders, waiters, then the children (and only they) */
		child = i >= ha.holders + (uint64_t)ha.waiters;
		if (e.__pad || e.flags & ~(WSEM_HOLDER_WAITING |
					   WSEM_HOLDER_CHILD) ||
		    !(e.flags & WSEM_HOLDER_CHILD) != !child || e.pid < 0 ||
		    !memchr(e.comm, 0, sizeof(e.comm)) ||
		    !memchr(e.cgroup, 0, sizeof(e.cgroup)) || !e.weight ||
		    e.weight > WSEM_CAPACITY_MAX)
			violation("HOLDERS entry: pid %d weight %llu flags %llx",
				  e.pid, (unsigned long long)e.weight,
				  (unsigned long long)e.flags);
		/* Ages come in ns since a grant or queueing: not eons. */
		if (e.age_ns > 3600ULL * NSEC)
			violation("HOLDERS entry aged %llu ns",
				  (unsigned long long)e.age_ns);
	}
}

/*
 * A gang granted: arguments it could take; the weight it gave the
 * worker's deepest child goes back at once (nothing else releases it).
 */
static void check_many_ok(const struct step *s)
{
	const struct wsem_many_args *m = &s->a.many;
	const struct wsem_many_entry *e;
	uint32_t i;

	if (s->usize < WSEM_MANY_SIZE_VER0 || s->entries_kind != P_GOOD) {
		add(&sh->gangs, 1);
		return;
	}
	if (nest_want(s) || m->flags & ~(WSEM_ACQUIRE_TRY |
					WSEM_ACQUIRE_DEADLINE |
					WSEM_ACQUIRE_CLOCK) ||
	    !m->count || m->count > WSEM_MANY_MAX || s->dup_deep ||
	    s->too_much) {
		violation("ACQUIRE_MANY flags %llx count %u (fd kind %d) "
			  "succeeded", (unsigned long long)m->flags, m->count,
			  s->hostile);
		return;
	}
	e = (const void *)(uintptr_t)m->entries;
	for (i = 0; i < m->count; i++) {
		if (!e[i].weight || e[i].__pad ||
		    e[i].weight > WSEM_CAPACITY_MAX)
			violation("ACQUIRE_MANY entry %u weight %llu pad %u "
				  "granted", i,
				  (unsigned long long)e[i].weight, e[i].__pad);
		if (e[i].fd == deep_fd && wsem_release(deep_fd, e[i].weight))
			violation("RELEASE of a gang's %llu on the deepest "
				  "child: %s", (unsigned long long)e[i].weight,
				  strerror(errno));
	}
	add(&sh->gangs, 1);
	add(&sh->gang_parts, m->count);
}

/* A label the kernel may take: no flags, printable up to a NUL. */
static bool label_ok(const struct wsem_label_args *l)
{
	size_t i;

	if (l->flags)
		return false;
	for (i = 0; i < WSEM_LABEL_MAX && l->label[i]; i++)
		if (l->label[i] < 0x20 || l->label[i] > 0x7e)
			return false;
	return i < WSEM_LABEL_MAX;
}

/* Check a success against the contract. */
static void check_ok(const struct step *s, long ret)
{
	struct wsem_stat st, prev;
	struct wsem_list_args la;
	char nb[NOTE_LEN];
	uint64_t i, n;

	if (s->q == R_UNKNOWN) {
		violation("unknown command %#x succeeded", s->cmd);
		return;
	}
	if (s->rdonly && (s->q == R_ACQUIRE || s->q == R_RELEASE ||
			  s->q == R_SETCAP || s->q == R_ASYNC ||
			  s->q == R_LABEL || s->q == R_KILL ||
			  s->q == R_LEND)) {
		violation("%s succeeded on a read-only handle", req_name[s->q]);
		return;
	}
	/* Only what we laid out ourselves tells what the kernel read. */
	if (s->kind != P_GOOD)
		return;
	if (ver0[s->q] && (s->usize < ver0[s->q] || s->usize > PAGE ||
			   (s->bad_tail && s->q != R_STAT)))
		violation("%s of size %llu, tail %d succeeded", req_name[s->q],
			  (unsigned long long)s->usize, s->bad_tail);
	switch (s->q) {
	case R_OPEN:
		if (!(s->a.open.flags & WSEM_OPEN_ANON) &&
		    !spec_name(s->a.open.name))
			violation("OPEN flags %llx accepted the name \"%s\"",
				  (unsigned long long)s->a.open.flags,
				  show(s->a.open.name, nb, sizeof(nb)));
		if (s->a.open.flags & (WSEM_OPEN_CREAT | WSEM_OPEN_ANON) &&
		    (!s->a.open.capacity ||
		     s->a.open.capacity > WSEM_CAPACITY_MAX))
			violation("OPEN created capacity %llu",
				  (unsigned long long)s->a.open.capacity);
		if (s->a.open.flags & ~(WSEM_OPEN_CREAT | WSEM_OPEN_EXCL |
					WSEM_OPEN_ANON | WSEM_OPEN_LOANS |
					WSEM_OPEN_CHILD) ||
		    (s->a.open.flags & (WSEM_OPEN_LOANS | WSEM_OPEN_CHILD) &&
		     !(s->a.open.flags & (WSEM_OPEN_CREAT | WSEM_OPEN_ANON))) ||
		    s->a.open.__pad || s->a.open.mode & ~0777)
			violation("OPEN accepted flags %llx pad %u mode %o",
				  (unsigned long long)s->a.open.flags,
				  s->a.open.__pad, s->a.open.mode);
		/* What the kernel read of the parent was ours (VER1). */
		if (s->usize >= WSEM_OPEN_SIZE_VER1 &&
		    (!open_args_ok(&s->a.open) ||
		     (s->a.open.flags & WSEM_OPEN_CHILD &&
		      s->hostile != H_ANY)))
			violation("OPEN flags %llx parent_fd %d (kind %d) pad2 "
				  "%u succeeded",
				  (unsigned long long)s->a.open.flags,
				  s->a.open.parent_fd, s->hostile,
				  s->a.open.__pad2);
		if (s->a.open.flags & WSEM_OPEN_LOANS)
			add(&sh->loans_opened, 1);
		if (s->a.open.flags & WSEM_OPEN_CHILD)
			add(&sh->children, 1);
		break;
	case R_MANY:
		check_many_ok(s);
		break;
	case R_ACQUIRE:
		if (!s->a.acq.weight || s->a.acq.weight > WSEM_CAPACITY_MAX)
			violation("ACQUIRE granted weight %llu",
				  (unsigned long long)s->a.acq.weight);
		break;
	case R_RELEASE:
		if (!s->a.val || s->a.val > WSEM_CAPACITY_MAX)
			violation("RELEASE of %llu succeeded",
				  (unsigned long long)s->a.val);
		break;
	case R_SETCAP:
		/* 0 is a LOANS semaphore's own capacity: it may take. */
		if (s->a.val > WSEM_CAPACITY_MAX)
			violation("SET_CAPACITY %llu succeeded",
				  (unsigned long long)s->a.val);
		break;
	case R_REOPEN:
		if (ret < 0 || s->a.val & ~WSEM_REOPEN_CLOEXEC)
			violation("REOPEN flags %llx gave %ld",
				  (unsigned long long)s->a.val, ret);
		break;
	case R_LABEL:
		if (!label_ok(&s->a.label))
			violation("SET_LABEL flags %llx of \"%s\" succeeded",
				  (unsigned long long)s->a.label.flags,
				  show(s->a.label.label, nb, sizeof(nb)));
		break;
	case R_KILL:
		/*
		 * No group the fuzzer may name is led by a child of its own:
		 * only "none" may be taken (and nothing is ever killed).
		 */
		if (s->a.kill.pgid || s->a.kill.flags || s->a.kill.__pad)
			violation("SET_KILL flags %llx pad %u pgid %d succeeded",
				  (unsigned long long)s->a.kill.flags,
				  s->a.kill.__pad, s->a.kill.pgid);
		break;
	case R_LEND:
		if ((s->a.lend.flags & ~(WSEM_LEND_END_HOLDERS |
					  WSEM_LEND_DEADLINE)) ||
		    (s->a.lend.flags & WSEM_LEND_END_HOLDERS && geteuid()) ||
		    (s->a.lend.flags & WSEM_LEND_DEADLINE &&
		     s->usize < WSEM_LEND_SIZE_VER1) ||
		    s->a.lend.capacity > WSEM_CAPACITY_MAX)
			violation("LEND flags %llx capacity %llu size %llu succeeded",
				  (unsigned long long)s->a.lend.flags,
				  (unsigned long long)s->a.lend.capacity,
				  (unsigned long long)s->usize);
		add(s->a.lend.capacity ? &sh->lends : &sh->withdrawn, 1);
		if (s->a.lend.flags & WSEM_LEND_END_HOLDERS)
			add(&sh->end_lends, 1);
		if (s->a.lend.flags & WSEM_LEND_DEADLINE)
			add(&sh->deadline_lends, 1);
		break;
	case R_UNLINK:
		if (!spec_name(s->a.unlink.name) || s->a.unlink.flags)
			violation("UNLINK flags %llx of \"%s\" succeeded",
				  (unsigned long long)s->a.unlink.flags,
				  show(s->a.unlink.name, nb, sizeof(nb)));
		break;
	case R_STAT:
		memcpy(&st, s->out, sizeof(st));
		if (st.size != (s->usize < STAT_SIZE ? s->usize : STAT_SIZE))
			violation("STAT of size %llu wrote size %llu",
				  (unsigned long long)s->usize,
				  (unsigned long long)st.size);
		check_stat(&st, "STAT", s->usize, false);
		if (s->usize < STAT_SIZE)
			break;		/* an old caller: the rest is ours */
		for (i = STAT_SIZE; i < s->usize; i++) {
			if (s->out[i]) {
				violation("STAT left byte %llu of %llu set",
					  (unsigned long long)i,
					  (unsigned long long)s->usize);
				break;
			}
		}
		break;
	case R_LIST:
		/* The kernel wrote @total into our args. */
		memcpy(&la, s->out, sizeof(la));
		if (la.count && la.stat_size < WSEM_STAT_SIZE_VER0)
			violation("LIST with stat_size %u succeeded",
				  la.stat_size);
		n = la.count < la.total ? la.count : la.total;
		if (la.stat_size < STAT_SIZE)
			break;
		for (i = 0; i < n && i < 8; i++) {
			memcpy(&st, (char *)(uintptr_t)la.stats +
			       i * la.stat_size, sizeof(st));
			check_stat(&st, "LIST", la.stat_size, true);
			if (st.held)
				violation("LIST entry held %llu",
					  (unsigned long long)st.held);
			if (i && strncmp(prev.name, st.name,
					 WSEM_NAME_MAX) >= 0)
				violation("LIST out of order: \"%s\"",
					  show(st.name, nb, sizeof(nb)));
			prev = st;
		}
		break;
	case R_HOLDERS:
		check_holders(s);
		break;
	case R_ASYNC:
		if (s->a.val & ~WSEM_ASYNC_CANCEL)
			violation("ASYNC flags %llx succeeded",
				  (unsigned long long)s->a.val);
		break;
	case R_IDLE:
		if (s->usize == WSEM_ACQUIRE_SIZE_VER0 &&
		    !acquire_flags_ok(&s->a.acq, true))
			violation("WAIT_IDLE flags %llx weight %llu succeeded",
				  (unsigned long long)s->a.acq.flags,
				  (unsigned long long)s->a.acq.weight);
		break;
	default:
		break;
	}
}

static unsigned int with_size(unsigned int cmd, unsigned int size)
{
	return (cmd & ~(_IOC_SIZEMASK << _IOC_SIZESHIFT)) |
	       ((size & _IOC_SIZEMASK) << _IOC_SIZESHIFT);
}

/*
 * SET_LABEL: mostly printable bytes, now and then another byte, a full
 * 64 with no NUL, flags or a size that are wrong.
 */
static void build_label(struct rng *r, struct step *s, char *buf,
			size_t *len)
{
	struct wsem_label_args *l = &s->a.label;
	size_t i, n = below(r, WSEM_LABEL_MAX + 1);

	s->cmd = WSEM_IOC_SET_LABEL;
	memset(l, 0, sizeof(*l));
	l->size = s->usize = pick_size(r, WSEM_LABEL_SIZE_VER0);
	l->flags = chance(r, 92) ? 0 : rnd(r);
	for (i = 0; i < n; i++)
		l->label[i] = chance(r, 97) ? 0x20 + below(r, 95) : rnd(r);
	memcpy(buf, l, sizeof(*l));
	s->bad_tail = tail(r, buf, sizeof(*l), s->usize, len);
}

/*
 * SET_KILL: mostly no group (0), else a pid that leads no group of a
 * child of ours (ourselves, our parent, init, any number, a negative
 * one); flags and padding now and then.
 */
static void build_kill(struct rng *r, struct step *s, char *buf, size_t *len)
{
	struct wsem_kill_args *k = &s->a.kill;
	const int32_t pids[] = {
		getpid(), getppid(), 1, -1, INT32_MIN, INT32_MAX,
		(int32_t)below(r, 1u << 22), -(int32_t)below(r, 1u << 22),
	};

	s->cmd = WSEM_IOC_SET_KILL;
	memset(k, 0, sizeof(*k));
	k->size = s->usize = pick_size(r, WSEM_KILL_SIZE_VER0);
	k->flags = chance(r, 92) ? 0 : rnd(r);
	k->__pad = chance(r, 95) ? 0 : (uint32_t)rnd(r);
	k->pgid = chance(r, 50) ? 0 : pids[below(r, ARRAY_SIZE(pids))];
	memcpy(buf, k, sizeof(*k));
	s->bad_tail = tail(r, buf, sizeof(*k), s->usize, len);
}

/*
 * LEND: withdraw (0) often, lend a little, or the edges of the largest
 * capacity and past it; flags now and then; a deadline now and then, most
 * often up to 50 ms away (so that loans end under the chaos), else past,
 * or far.
 */
static void build_lend(struct rng *r, struct step *s, char *buf, size_t *len)
{
	struct wsem_lend_args *l = &s->a.lend;

	s->cmd = WSEM_IOC_LEND;
	memset(l, 0, sizeof(*l));
	if (chance(r, 70))
		l->flags = 0;
	else if (chance(r, 40))
		l->flags = WSEM_LEND_END_HOLDERS;
	else if (chance(r, 70))
		l->flags = WSEM_LEND_DEADLINE |
			   (chance(r, 30) ? WSEM_LEND_END_HOLDERS : 0);
	else
		l->flags = rnd(r);
	l->size = s->usize = pick_size(r, l->flags & WSEM_LEND_DEADLINE ?
					  WSEM_LEND_SIZE_VER1 :
					  WSEM_LEND_SIZE_VER0);
	if (chance(r, 75))
		l->deadline_ns = clock_ns(CLOCK_BOOTTIME) + below(r, 50000000);
	else if (chance(r, 50))
		l->deadline_ns = clock_ns(CLOCK_BOOTTIME) - below(r, 1000000);
	else
		l->deadline_ns = chance(r, 50) ? rnd(r) : UINT64_MAX;
	if (chance(r, 30))
		l->capacity = 0;
	else if (chance(r, 60))
		l->capacity = 1 + below(r, 4);
	else if (chance(r, 30))
		l->capacity = WSEM_CAPACITY_MAX - below(r, 3);
	else
		l->capacity = pick_weight(r);
	memcpy(buf, l, sizeof(*l));
	s->bad_tail = tail(r, buf, sizeof(*l), s->usize, len);
}

/* Command numbers near ours that must all be ENOTTY. */
static unsigned int unknown_cmd(struct rng *r)
{
	static const unsigned int nrs[] = { 0, 16, 17, 18, 19, 0x7f, 0xff };
	static const unsigned int ours[] = {
		WSEM_IOC_OPEN, WSEM_IOC_REOPEN, WSEM_IOC_ACQUIRE,
		WSEM_IOC_RELEASE, WSEM_IOC_SET_CAPACITY, WSEM_IOC_STAT,
		WSEM_IOC_UNLINK, WSEM_IOC_LIST, WSEM_IOC_HOLDERS,
		WSEM_IOC_ASYNC, WSEM_IOC_WAIT_IDLE, WSEM_IOC_SET_LABEL,
		WSEM_IOC_SET_KILL, WSEM_IOC_LEND, WSEM_IOC_ACQUIRE_MANY,
	};
	unsigned int dir, size = below(r, 1u << _IOC_SIZEBITS), c;

	switch (below(r, 3)) {
	case 0:
		/* our magic, a number we do not have */
		return _IOC(below(r, 4), WSEM_IOC_MAGIC,
			    nrs[below(r, ARRAY_SIZE(nrs))], size);
	case 1:
		/* our numbers, the magics next to ours */
		return _IOC(below(r, 4),
			    chance(r, 50) ? WSEM_IOC_MAGIC + 1 :
					    WSEM_IOC_MAGIC - 1,
			    1 + below(r, 8), size);
	default:
		/* our command with the wrong direction */
		c = ours[below(r, ARRAY_SIZE(ours))];
		do
			dir = below(r, 4);
		while (dir == _IOC_DIR(c));
		return _IOC(dir, WSEM_IOC_MAGIC, _IOC_NR(c), size);
	}
}

static void build_open(struct rng *r, struct step *s, char *buf,
		       size_t *len)
{
	struct wsem_open_args *o = &s->a.open;

	s->cmd = WSEM_IOC_OPEN;
	o->size = s->usize = pick_size(r, WSEM_OPEN_SIZE_VER0);
	switch (below(r, 13)) {
	case 10:
	case 11:
		/* a child (issue 31): of a pool handle, or a hostile fd */
		o->flags = WSEM_OPEN_CHILD |
			   (chance(r, 60) ? WSEM_OPEN_ANON : WSEM_OPEN_CREAT);
		if (o->flags & WSEM_OPEN_CREAT && chance(r, 20))
			o->flags |= WSEM_OPEN_EXCL;
		if (chance(r, 10))
			o->flags |= WSEM_OPEN_LOANS;
		o->parent_fd = pick_tree_fd(r, &s->hostile);
		o->size = s->usize = pick_size(r, WSEM_OPEN_SIZE_VER1);
		break;
	case 12:
		/*
		 * EINVAL: a parent_fd without CHILD, CHILD without CREAT or
		 * ANON, a non-zero __pad2
		 */
		o->flags = chance(r, 50) ? WSEM_OPEN_CHILD |
			   (chance(r, 50) ? WSEM_OPEN_EXCL : 0) :
			   chance(r, 50) ? WSEM_OPEN_CREAT : WSEM_OPEN_ANON;
		o->parent_fd = pick_tree_fd(r, &s->hostile);
		if (!o->parent_fd || chance(r, 20))
			o->__pad2 = 1 + below(r, 1000);
		o->size = s->usize = pick_size(r, WSEM_OPEN_SIZE_VER1);
		break;
	case 0:
	case 1:
		o->flags = WSEM_OPEN_CREAT;
		break;
	case 8:
		/* capacity from loans: own 0, @capacity the ceiling */
		o->flags = WSEM_OPEN_LOANS | (chance(r, 50) ? WSEM_OPEN_ANON :
					      WSEM_OPEN_CREAT);
		break;
	case 9:
		/* LOANS without CREAT or ANON: EINVAL */
		o->flags = WSEM_OPEN_LOANS |
			   (chance(r, 50) ? WSEM_OPEN_EXCL : 0);
		if (chance(r, 20))
			o->flags = rnd(r) & 0xf;
		break;
	case 2:
		o->flags = WSEM_OPEN_CREAT | WSEM_OPEN_EXCL;
		break;
	case 3:
		o->flags = 0;
		break;
	case 4:
	case 5:
		o->flags = WSEM_OPEN_ANON;
		break;
	case 6:
		o->flags = WSEM_OPEN_ANON | (1 + below(r, 3));
		break;
	default:
		o->flags = rnd(r) & (chance(r, 50) ? 0xf : ~0ULL);
	}
	o->capacity = pick_weight(r);
	if (chance(r, 80))
		o->mode = chance(r, 50) ? 0666 : 0600;
	else
		o->mode = chance(r, 50) ? 01000 : (uint32_t)rnd(r);
	o->__pad = chance(r, 95) ? 0 : 1 + below(r, 100);
	if (o->flags & WSEM_OPEN_ANON && chance(r, 90))
		memset(o->name, 0, WSEM_NAME_MAX);
	else
		pick_name(r, o->name);
	memcpy(buf, o, sizeof(*o));
	s->bad_tail = tail(r, buf, sizeof(*o), o->size, len);
}

static void build_acquire(struct rng *r, struct step *s, char *buf,
			  size_t *len)
{
	struct wsem_acquire_args *q = &s->a.acq;

	static const uint32_t clocks[] = {
		CLOCK_MONOTONIC, CLOCK_BOOTTIME, CLOCK_REALTIME, CLOCK_TAI, 77,
	};
	struct timespec ts;

	s->cmd = s->q == R_IDLE ? WSEM_IOC_WAIT_IDLE : WSEM_IOC_ACQUIRE;
	q->size = s->usize = pick_size(r, WSEM_ACQUIRE_SIZE_VER0);
	q->weight = s->q == R_IDLE && chance(r, 90) ? 0 : pick_weight(r);
	switch (below(r, 24)) {
	case 0:
		q->flags = 0;			/* may sleep: SIGUSR1 ends it */
		break;
	case 1:
		q->flags = WSEM_ACQUIRE_TRY | WSEM_ACQUIRE_DEADLINE;
		break;
	case 2:
		q->flags = rnd(r);
		break;
	case 3:
	case 4:
		q->flags = WSEM_ACQUIRE_DEADLINE | WSEM_ACQUIRE_CLOCK;
		q->clockid = clocks[below(r, ARRAY_SIZE(clocks))];
		if (chance(r, 10))
			q->flags = WSEM_ACQUIRE_CLOCK;
		break;
	case 5:
	case 6:
	case 7:
		/* Queued requests stay until collected, cancelled or closed. */
		q->flags = WSEM_ACQUIRE_ASYNC;
		break;
	default:
		q->flags = chance(r, 50) ? WSEM_ACQUIRE_TRY :
					   WSEM_ACQUIRE_DEADLINE;
	}
	if (chance(r, 3))
		q->clockid = rnd(r);
	if (chance(r, 3))
		q->__pad = rnd(r);
	switch (below(r, 10)) {
	case 0:
		q->deadline_ns = 0;
		break;
	case 1:
		q->deadline_ns = UINT64_MAX;
		break;
	case 2:
		q->deadline_ns = rnd(r);
		break;
	default:
		clock_gettime(q->flags & WSEM_ACQUIRE_CLOCK &&
			      q->clockid <= CLOCK_BOOTTIME ? q->clockid :
			      CLOCK_MONOTONIC, &ts);
		q->deadline_ns = ts.tv_sec * NSEC + ts.tv_nsec +
				 below(r, 2000000);
	}
	memcpy(buf, q, sizeof(*q));
	s->bad_tail = tail(r, buf, sizeof(*q), q->size, len);
}

/*
 * ACQUIRE_MANY: 1..8 entries from the pool (or the worker's own hostile
 * descriptors), weights mostly small, now and then a padding, a weight 0,
 * an entry twice, a count of 0 or over WSEM_MANY_MAX, entries where the
 * kernel may not read; TRY or a deadline within 2 ms mostly, a wait
 * without one seldom (SIGUSR1 ends it, as an acquire's).  The entries go
 * to the arena's second page, the args to its first.
 */
static void build_many(struct rng *r, struct step *s, struct arena *a,
		       char *buf, size_t *len)
{
	static const uint32_t clocks[] = {
		CLOCK_MONOTONIC, CLOCK_BOOTTIME, CLOCK_REALTIME, CLOCK_TAI, 77,
	};
	static const uint32_t counts[] = {
		0, WSEM_MANY_MAX + 1, UINT32_MAX, 1u << 28,
	};
	struct wsem_many_args *m = &s->a.many;
	struct wsem_many_entry *e = (void *)(a->rw + PAGE);
	struct timespec ts;
	unsigned int i, n;
	int h;

	s->cmd = WSEM_IOC_ACQUIRE_MANY;
	m->size = s->usize = pick_size(r, WSEM_MANY_SIZE_VER0);
	switch (below(r, 20)) {
	case 0:
		m->flags = 0;			/* may sleep: SIGUSR1 ends it */
		break;
	case 1:
		m->flags = chance(r, 50) ? rnd(r) : WSEM_ACQUIRE_ASYNC;
		break;
	case 2:
		m->flags = WSEM_ACQUIRE_TRY | WSEM_ACQUIRE_DEADLINE;
		break;
	case 3:
	case 4:
		m->flags = WSEM_ACQUIRE_DEADLINE | WSEM_ACQUIRE_CLOCK;
		m->clockid = clocks[below(r, ARRAY_SIZE(clocks))];
		if (chance(r, 10))
			m->flags = WSEM_ACQUIRE_CLOCK;
		break;
	default:
		m->flags = chance(r, 60) ? WSEM_ACQUIRE_TRY :
					   WSEM_ACQUIRE_DEADLINE;
	}
	if (chance(r, 3))
		m->clockid = rnd(r);
	clock_gettime(m->flags & WSEM_ACQUIRE_CLOCK &&
		      m->clockid <= CLOCK_BOOTTIME ? m->clockid :
		      CLOCK_MONOTONIC, &ts);
	m->deadline_ns = chance(r, 5) ? rnd(r) :
			 ts.tv_sec * NSEC + ts.tv_nsec + below(r, 2000000);
	m->count = chance(r, 93) ? 1 + below(r, WSEM_MANY_MAX) :
		   counts[below(r, ARRAY_SIZE(counts))];
	n = m->count < WSEM_MANY_MAX ? m->count : WSEM_MANY_MAX;
	memset(e, 0, WSEM_MANY_MAX * sizeof(*e));
	for (i = 0; i < n; i++) {
		e[i].fd = pick_tree_fd(r, &h);
		if (!i)
			s->hostile = h;
		e[i].weight = chance(r, 85) ? 1 + below(r, 2) :
			      pick_weight(r);
		if (chance(r, 2))
			e[i].__pad = 1 + below(r, 100);
	}
	/* The same semaphore twice: exactly EINVAL on the deepest child. */
	if (n >= 2 && chance(r, 8)) {
		i = 1 + below(r, n - 1);
		if (chance(r, 60) && deep_fd >= 0) {
			e[0] = (struct wsem_many_entry) {
				.fd = deep_fd, .weight = 1,
			};
			e[i = 1] = e[0];
			s->hostile = H_DEEP;
			s->dup_deep = true;
		} else {
			e[i].fd = e[0].fd;
		}
	}
	/* More than the deepest child's line can ever give: EINVAL. */
	if (n && !s->dup_deep && deep_fd >= 0 && chance(r, 3)) {
		e[0] = (struct wsem_many_entry) {
			.fd = deep_fd, .weight = DEEP_CAP + 1 + below(r, 3),
		};
		s->hostile = H_DEEP;
		s->too_much = true;
	}
	switch (below(r, 25)) {
	case 0:
		s->entries_kind = P_NULL;
		m->entries = 0;
		break;
	case 1:
		s->entries_kind = P_NONE;
		m->entries = (uintptr_t)a->none;
		break;
	case 2:
		/* the first entry readable, the rest not */
		s->entries_kind = P_STRADDLE;
		m->entries = (uintptr_t)(a->none - sizeof(*e));
		memcpy(a->none - sizeof(*e), e, sizeof(*e));
		break;
	case 3:
		s->entries_kind = P_KERNEL;
		m->entries = 0xffffffff81000000ULL;
		break;
	default:
		s->entries_kind = P_GOOD;
		m->entries = (uintptr_t)e;
	}
	memcpy(buf, m, sizeof(*m));
	s->bad_tail = tail(r, buf, sizeof(*m), m->size, len);
}

static void build_holders(struct rng *r, struct step *s, struct arena *a,
			  char *buf, size_t *len)
{
	static const uint32_t counts[] = { 0, 1, 2, 8, UINT32_MAX };
	static const uint32_t sizes[] = {
		0, WSEM_HOLDER_SIZE_VER0 - 1, WSEM_HOLDER_SIZE_VER0 + 8, PAGE,
		PAGE + 1,
	};
	struct wsem_holders_args *h = &s->a.who;

	s->cmd = WSEM_IOC_HOLDERS;
	h->size = s->usize = pick_size(r, chance(r, 50) ?
					 WSEM_HOLDERS_SIZE_VER0 :
					 WSEM_HOLDERS_SIZE_VER1);
	h->flags = chance(r, 95) ? 0 : rnd(r);
	if (h->size >= WSEM_HOLDERS_SIZE_VER1 && chance(r, 5))
		h->__pad = 1 + below(r, 1000);
	h->count = chance(r, 90) ? counts[below(r, ARRAY_SIZE(counts))] :
		   (uint32_t)rnd(r);
	h->entry_size = chance(r, 60) ? WSEM_HOLDER_SIZE_VER0 :
			sizes[below(r, ARRAY_SIZE(sizes))];
	/* As LIST's array: the arena's second page, or worse. */
	switch (below(r, 10)) {
	case 0:
		h->entries = (uintptr_t)a->ro;
		break;
	case 1:
		h->entries = 0;
		break;
	case 2:
		h->entries = (uintptr_t)a->none;
		break;
	default:
		h->entries = (uintptr_t)(a->rw + PAGE);
	}
	h->holders = h->waiters = 0x5a5a5a5a;
	memcpy(buf, h, sizeof(*h));
	s->bad_tail = tail(r, buf, sizeof(*h), h->size, len);
}

static void build_list(struct rng *r, struct step *s, struct arena *a,
		       char *buf, size_t *len)
{
	static const uint32_t counts[] = { 0, 1, 3, 64, UINT32_MAX };
	static const uint32_t sizes[] = {
		0, WSEM_STAT_SIZE_VER0 - 1, WSEM_STAT_SIZE_VER0 + 8, PAGE,
		PAGE + 1,
	};
	struct wsem_list_args *l = &s->a.list;

	s->cmd = WSEM_IOC_LIST;
	l->size = s->usize = pick_size(r, WSEM_LIST_SIZE_VER0);
	l->count = chance(r, 90) ?
		counts[below(r, ARRAY_SIZE(counts))] :
		(uint32_t)rnd(r);
	l->stat_size = chance(r, 30) ? WSEM_STAT_SIZE_VER0 :
		chance(r, 25) ? WSEM_STAT_SIZE_VER2 :
		chance(r, 40) ? WSEM_STAT_SIZE_VER3 :
		sizes[below(r, ARRAY_SIZE(sizes))];
	/*
	 * The array: the arena's second page (the guard page after it stops
	 * the kernel), or somewhere it may not write.
	 */
	switch (below(r, 10)) {
	case 0:
		l->stats = (uintptr_t)a->ro;
		break;
	case 1:
		l->stats = 0;
		break;
	case 2:
		l->stats = (uintptr_t)a->none;
		break;
	default:
		l->stats = (uintptr_t)(a->rw + PAGE);
	}
	l->total = 0x5a5a5a5a;
	memcpy(buf, l, sizeof(*l));
	s->bad_tail = tail(r, buf, sizeof(*l), l->size, len);
}

/*
 * A read-only handle, just bound and still ours alone: it cannot take
 * weight, and REOPEN keeps it read-only.
 */
static void check_readonly(int fd)
{
	struct wsem_acquire_args acq = {
		.size = sizeof(acq), .weight = 1, .flags = WSEM_ACQUIRE_TRY,
	};
	int nfd;

	if (!ioctl(fd, WSEM_IOC_ACQUIRE, &acq) || errno != EBADF)
		violation("ACQUIRE on a read-only handle: %s", strerror(errno));
	nfd = wsem_reopen(fd, O_CLOEXEC);
	if (nfd < 0)
		return;
	if ((fcntl(nfd, F_GETFL) & O_ACCMODE) != O_RDONLY)
		violation("REOPEN of a read-only handle is not read-only");
	close(nfd);
	add(&sh->readonly, 1);
}

static void fuzz_one(struct rng *r, struct arena *a)
{
	static const unsigned int generic[] = {
		FIONBIO, FIOCLEX, FIONCLEX, FIONREAD, FIOASYNC,
	};
	struct step s = { .fd = -1 };
	char buf[PAGE];
	unsigned int k = below(r, 100);
	size_t len = 8, i;
	long ret;
	int err;

	memset(buf, 0, 256);
	/* The handle: one of ours, a fresh one, or no handle at all. */
	if (chance(r, 2)) {
		/* Opened through a mount, racing with the mounts (chaos). */
		snprintf(buf, sizeof(buf), "%s/%s", sh->mnt[below(r, NMNT)],
			 base[below(r, NBASE)].name);
		s.fd = open(buf, O_RDWR | O_CLOEXEC);
		s.bypath = s.fd >= 0;
		if (s.bypath)
			add(&sh->fs_opened, 1);
	} else if (chance(r, 12)) {
		s.rdonly = chance(r, 20);
		s.fd = open("/dev/wsem", (s.rdonly ? O_RDONLY : O_RDWR) |
			    O_CLOEXEC);
		s.fresh = s.fd >= 0;
		if (s.fresh && chance(r, 20)) {
			/* ... some for the demand event, edge-triggered */
			struct epoll_event ev = {
				.events = chance(r, 70) ? EPOLLIN :
					  EPOLLRDBAND | EPOLLET,
			};

			epoll_ctl(epfd, EPOLL_CTL_ADD, s.fd, &ev);
		}
	} else if (chance(r, 3)) {
		s.fd = chance(r, 50) ? -1 : 1000 + (int)below(r, 1000);
	} else {
		s.fd = pool_get(r);
	}

	if (k < 14) {
		s.q = R_OPEN;
		build_open(r, &s, buf, &len);
	} else if (k < 19) {
		s.q = R_REOPEN;
		s.cmd = WSEM_IOC_REOPEN;
		s.a.val = chance(r, 85) ? (chance(r, 50) ? 0 :
				  WSEM_REOPEN_CLOEXEC) : rnd(r) & 0xff;
		memcpy(buf, &s.a.val, 8);
	} else if (k < 35) {
		s.q = R_ACQUIRE;
		build_acquire(r, &s, buf, &len);
	} else if (k < 40) {
		s.q = R_MANY;
		build_many(r, &s, a, buf, &len);
	} else if (k < 42) {
		s.q = R_IDLE;
		build_acquire(r, &s, buf, &len);
	} else if (k < 44) {
		s.q = R_ASYNC;
		s.cmd = WSEM_IOC_ASYNC;
		s.a.val = chance(r, 90) ? (chance(r, 50) ? 0 :
				  WSEM_ASYNC_CANCEL) : rnd(r);
		memcpy(buf, &s.a.val, 8);
	} else if (k < 60) {
		s.q = R_RELEASE;
		s.cmd = WSEM_IOC_RELEASE;
		s.a.val = pick_weight(r);
		memcpy(buf, &s.a.val, 8);
	} else if (k < 64) {
		s.q = R_SETCAP;
		s.cmd = WSEM_IOC_SET_CAPACITY;
		s.a.val = pick_weight(r);
		memcpy(buf, &s.a.val, 8);
	} else if (k < 73) {
		s.q = R_STAT;
		s.cmd = WSEM_IOC_STAT;
		s.usize = pick_size(r, chance(r, 40) ? WSEM_STAT_SIZE_VER0 :
					  chance(r, 30) ? WSEM_STAT_SIZE_VER2 :
					  WSEM_STAT_SIZE_VER3);
		len = s.usize < 8 ? 8 : s.usize > PAGE ? PAGE : s.usize;
		/* Garbage in, so that whatever the kernel leaves shows. */
		memset(buf, 0xa5, len);
		memcpy(buf, &s.usize, 8);
	} else if (k < 76) {
		s.q = R_LEND;
		build_lend(r, &s, buf, &len);
	} else if (k < 80) {
		s.q = R_UNLINK;
		s.cmd = WSEM_IOC_UNLINK;
		s.a.unlink.size = s.usize = pick_size(r, WSEM_UNLINK_SIZE_VER0);
		s.a.unlink.flags = chance(r, 92) ? 0 : rnd(r);
		pick_name(r, s.a.unlink.name);
		memcpy(buf, &s.a.unlink, sizeof(s.a.unlink));
		s.bad_tail = tail(r, buf, sizeof(s.a.unlink), s.usize, &len);
	} else if (k < 85) {
		s.q = R_LIST;
		build_list(r, &s, a, buf, &len);
	} else if (k < 90) {
		s.q = R_HOLDERS;
		build_holders(r, &s, a, buf, &len);
	} else if (k < 92) {
		s.q = R_LABEL;
		build_label(r, &s, buf, &len);
	} else if (k < 93) {
		s.q = R_KILL;
		build_kill(r, &s, buf, &len);
	} else if (k < 96) {
		s.q = R_UNKNOWN;
		s.cmd = unknown_cmd(r);
		len = 64;
		for (i = 0; i < len; i++)
			buf[i] = rnd(r);
	} else {
		s.q = R_GENERIC;
		s.cmd = generic[below(r, ARRAY_SIZE(generic))];
	}

	/* Our commands with other size bits are still ours. */
	if (s.q < R_UNKNOWN && chance(r, 10))
		s.cmd = with_size(s.cmd, below(r, 1u << _IOC_SIZEBITS));
	s.out = place(r, a, buf, len, &s.kind);

	errno = 0;
	ret = ioctl(s.fd, s.cmd, s.out);
	err = errno;
	add(&sh->ops, 1);
	add(&my_ops, 1);

	if (ret >= 0) {
		add(&sh->ok, 1);
		check_ok(&s, ret);
		if (s.q == R_OPEN)
			add(&sh->created, 1);
		if (s.q == R_ACQUIRE)
			add(&sh->granted, 1);
		if (s.q == R_ASYNC)
			add(&sh->ended, 1);
		if (s.q == R_IDLE)
			add(&sh->idle, 1);
		if (s.q == R_REOPEN)
			pool_put(r, ret);
	} else {
		if (s.q == R_ACQUIRE && err == EINTR)
			add(&sh->interrupted, 1);
		if (s.q == R_ACQUIRE && err == EINPROGRESS)
			add(&sh->queued, 1);
		if (s.q == R_OPEN && err == ELOOP)
			add(&sh->eloops, 1);
		check_err(&s, err);
	}
	if (s.bypath)
		pool_put(r, s.fd);
	if (s.fresh) {
		if (ret == 0 && s.q == R_OPEN && s.rdonly)
			check_readonly(s.fd);
		if (ret == 0 && s.q == R_OPEN)
			pool_put(r, s.fd);
		else
			close(s.fd);
	}
	/* Now and then, SIGKILL a worker: another, or this one. */
	if (!below(r, KILL_EVERY)) {
		pid_t pid = __atomic_load_n(&sh->pids[below(r, NWORKERS)],
					    __ATOMIC_RELAXED);

		if (pid > 1 && !kill(pid, SIGKILL))
			add(&sh->kills, 1);
	}
}

/* ---------------------------------------------------------------- */
/* Chaos: descriptors and processes                                 */

/* A descriptor from @sock, or -1; closes anything else that came along. */
static int recv_any_fd(int sock, int flags)
{
	char cbuf[CMSG_SPACE(sizeof(int) * 4)];
	char byte;
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cm;
	int fd = -1, n, i, got[4];

	if (recvmsg(sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC | flags) < 0)
		return -2;
	for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET ||
		    cm->cmsg_type != SCM_RIGHTS)
			continue;
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		memcpy(got, CMSG_DATA(cm), n * sizeof(int));
		for (i = 0; i < n; i++) {
			if (fd < 0)
				fd = got[i];
			else
				close(got[i]);
		}
	}
	return fd;
}

static bool stopping(void)
{
	return __atomic_load_n(&sh->stop, __ATOMIC_RELAXED);
}

/*
 * Read a descriptor's fdinfo, racing with the other processes that share
 * the file; check it.  Only single-threaded forked children do this: in a
 * worker, the new descriptor could take a number another thread is about
 * to use as a stale handle.
 */
static void fdinfo(int fd)
{
	/* A capacity of 0: a LOANS semaphore's, with nothing lent. */
	unsigned long long cap = 1, used = 0, held = 0;
	char path[64], buf[1024], *p;
	ssize_t n;
	int f;

	if (fd < 0)
		return;
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = open(path, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return;
	n = read(f, buf, sizeof(buf) - 1);
	close(f);
	if (n <= 0)
		return;
	buf[n] = 0;
	p = strstr(buf, "wsem-capacity:");
	if (!p)
		return;		/* unbound, or no longer ours */
	if (sscanf(p, "wsem-capacity: %llu wsem-used: %llu wsem-held: %llu",
		   &cap, &used, &held) != 3 ||
	    cap > WSEM_CAPACITY_MAX || held > used)
		violation("fdinfo: capacity %llu used %llu held %llu", cap,
			  used, held);
}

/*
 * The counters page of @fd (issue 45), read as the library reads it: a
 * consistent state, never a capacity above 2^62, no queued weight without
 * waiters.  @fd may have been closed and reused meanwhile by another
 * thread: a page whose size is not the kernel's is not ours, and one whose
 * semaphore went (GONE) is looked at no further.
 */
static void counters(int fd)
{
	const struct wsem_counters *c;
	struct wsem_counters s;

	if (fd < 0)
		return;
	c = wsem_map_counters(fd);
	if (!c)
		return;
	if (!wsem_read_counters(c, &s) && s.size == WSEM_COUNTERS_SIZE_VER0 &&
	    !(s.flags & WSEM_COUNTERS_GONE) &&
	    ((s.seq & 1) || s.flags || s.capacity > WSEM_CAPACITY_MAX ||
	     (!s.waiters && s.queued_weight)))
		violation("counters: seq %u flags %u capacity %llu waiters %llu queued %llu",
			  s.seq, s.flags, (unsigned long long)s.capacity,
			  (unsigned long long)s.waiters,
			  (unsigned long long)s.queued_weight);
	wsem_unmap_counters(c);
}

/*
 * May a mmap(2) of a handle fail with @err?  @aligned: the offset is a
 * multiple of the page; @readable: the handle is open for reading; @where:
 * at most a page at offset 0 or WSEM_MMAP_TREE pages; @how: neither
 * writable nor executable.  The kernel's own checks come first (an
 * unaligned offset, a file not open for reading, execute on a noexec
 * mount), then the handle's: a bad offset or length EINVAL, then a write
 * or execute EACCES.  What should succeed may fail only for memory.
 */
static bool map_error_is_right(int err, bool aligned, bool readable,
			       bool where, bool how, int prot)
{
	if (err == EPERM && (prot & PROT_EXEC))
		return true;
	if (!aligned)
		return err == EINVAL;
	if (!readable)
		return err == EACCES;
	if (!where)
		return err == EINVAL || (!how && err == EACCES);
	if (!how)
		return err == EACCES;
	return err == ENOMEM;
}

/*
 * mmap(2) of a handle with a random offset, length, protection and
 * sharing, on a reopen of @fd that only this call holds: it must succeed
 * exactly for one page at most, at offset 0 (struct wsem_counters) or
 * WSEM_MMAP_TREE pages (struct wsem_tree_counters), neither writable nor
 * executable, of a handle open for reading, and fail otherwise with the
 * errno that says why (map_error_is_right()).  A mapping made shows its
 * struct's size, and mprotect(2) cannot make it writable.
 */
static void random_map(struct rng *r, int fd)
{
	static const uint64_t offs[] = {
		0, WSEM_MMAP_TREE * PAGE, (WSEM_MMAP_TREE + 1) * PAGE,
		PAGE / 2, 7 * PAGE, 1ULL << 32, 1ULL << 40,
	};
	static const size_t lens[] = { 1, 16, 48, PAGE, PAGE + 1, 2 * PAGE };
	static const int prots[] = {
		PROT_READ, PROT_NONE, PROT_READ | PROT_WRITE,
		PROT_READ | PROT_EXEC, PROT_WRITE, PROT_EXEC,
		PROT_READ | PROT_WRITE | PROT_EXEC,
	};
	uint64_t off = offs[below(r, ARRAY_SIZE(offs))];
	size_t len = lens[below(r, ARRAY_SIZE(lens))];
	int prot = prots[below(r, ARRAY_SIZE(prots))];
	int flags = chance(r, 50) ? MAP_SHARED : MAP_PRIVATE;
	bool where = (off == 0 || off == WSEM_MMAP_TREE * PAGE) && len <= PAGE;
	bool how = !(prot & (PROT_WRITE | PROT_EXEC));
	bool aligned = !(off % PAGE), readable;
	int h = fd < 0 ? -1 : wsem_reopen(fd, O_CLOEXEC);
	const __u32 *m;
	__u32 size;

	if (h < 0)
		return;
	readable = (fcntl(h, F_GETFL) & O_ACCMODE) != O_WRONLY;
	add(&sh->maps, 1);
	m = mmap(NULL, len, prot, flags, h, (off_t)off);
	if (m == MAP_FAILED) {
		if (!map_error_is_right(errno, aligned, readable, where, how,
					prot))
			violation("mmap off %llu len %zu prot %d flags %d of a "
				  "handle%s open for reading: %s",
				  (unsigned long long)off, len, prot, flags,
				  readable ? "" : " not", strerror(errno));
		close(h);
		return;
	}
	add(&sh->maps_made, 1);
	if (!where || !how || !readable)
		violation("mmap off %llu len %zu prot %d of a handle%s open for "
			  "reading made a mapping", (unsigned long long)off,
			  len, prot, readable ? "" : " not");
	if (prot & PROT_READ) {
		size = __atomic_load_n(&m[2], __ATOMIC_RELAXED);
		if (size != (off ? WSEM_TREE_COUNTERS_SIZE_VER0 :
				   WSEM_COUNTERS_SIZE_VER0))
			violation("mmap off %llu: a struct of size %u",
				  (unsigned long long)off, size);
	}
	if (!mprotect((void *)m, len, PROT_READ | PROT_WRITE))
		violation("mprotect made a counters mapping writable");
	munmap((void *)m, len);
	close(h);
}

/*
 * A pool (wsem_pool_open(3)) over @fd for a few steps: tries, waits of a
 * millisecond and releases of random weights; a release of more than its
 * threads hold must fail with EINVAL.  Then closed, or left to the child's
 * end (exit or SIGKILL), which gives its weight back as any handle's: the
 * run's end finds nothing held.
 */
static void pooled_steps(struct rng *r, int fd)
{
	struct wsem_pool *p;
	uint64_t held = 0, w;
	int i;

	if (fd < 0)
		return;
	p = wsem_pool_open(fd, below(r, 5),
			   chance(r, 50) ? WSEM_POOL_NOTHREAD : 0);
	if (!p)
		return;
	add(&sh->pools, 1);
	for (i = 0; i < 8; i++) {
		w = 1 + below(r, 3);
		if (held >= w && chance(r, 50)) {
			if (wsem_pool_release(p, w))
				violation("pool: release of %llu of %llu: %s",
					  (unsigned long long)w,
					  (unsigned long long)held,
					  strerror(errno));
			else
				held -= w;
		} else if (!wsem_pool_acquire(p, w,
					      chance(r, 75) ? 0 : 1000000)) {
			held += w;
		}
	}
	if (wsem_pool_release(p, held + 1) != -1 || errno != EINVAL)
		violation("pool: a release of %llu, %llu held, did not fail "
			  "with EINVAL", (unsigned long long)held + 1,
			  (unsigned long long)held);
	if (chance(r, 50))
		wsem_pool_close(p);
}

/*
 * A forked copy of a worker: a few requests on copies of its handles, and
 * a look at their fdinfo and counters page, and a pool over one.
 */
static void __attribute__((noreturn)) fork_child(struct rng *r)
{
	struct arena a;
	int i, n = 20 + below(r, 80);

	alarm(1);	/* nobody interrupts its sleeps: this ends them */
	if (arena_init(&a))
		_exit(1);
	for (i = 0; i < n && !stopping(); i++) {
		fuzz_one(r, &a);
		if (chance(r, 20))
			fdinfo(pool_get(r));
		if (chance(r, 20))
			counters(pool_get(r));
		if (chance(r, 10))
			random_map(r, pool_get(r));
		if (chance(r, 4))
			pooled_steps(r, pool_get(r));
	}
	if (chance(r, 50))
		_exit(0);
	/* ... or die with its handles still open, holding what it holds */
	raise(SIGKILL);
	_exit(0);
}

static pthread_t op_thread[OP_THREADS];
static unsigned int children;	/* forked by this worker, not reaped */

/* ---------------------------------------------------------------- */
/* Chaos through wsemfs: paths, mounts and dying namespaces          */

enum fs_call {
	F_OPEN, F_READ, F_CHMOD, F_CHOWN, F_UNLINK, F_RENAME, F_LINK,
	F_MKDIR, F_TRUNCATE, F_XATTR, F_UTIMES, F_READDIR, F_MOUNT,
	F_UMOUNT, F_BIND, F_JOBSERVER, F_COUNT
};

static const char *const fs_name[F_COUNT] = {
	"open", "read", "chmod", "chown", "unlink", "rename", "link",
	"mkdir", "truncate", "setxattr", "utimensat", "getdents", "mount",
	"umount", "bind mount", "jobserver endpoint",
};

/*
 * errnos a call on the mounts may fail with.  Besides what the files allow
 * (ENOENT for a name that is gone, EACCES by the mode, EPERM for what only
 * the owner or root may do and for every way to create), an unmounted
 * point is a directory of a read-only file system (EROFS, or ENOENT).
 */
static bool fs_allowed(enum fs_call c, int err)
{
	if (err == ENOENT || err == EACCES || err == EPERM || err == EROFS ||
	    err == ENAMETOOLONG)
		return true;
	switch (c) {
	case F_OPEN:
		return err == EISDIR || err == ENOTDIR || err == EEXIST ||
		       err == EINVAL || err == ELOOP || err == EMFILE;
	case F_READ:
		return err == EINVAL || err == EBADF || err == EISDIR ||
		       err == ESPIPE;
	case F_UNLINK:
		return err == EISDIR || err == EBUSY;
	case F_RENAME:
	case F_LINK:
		return err == EXDEV || err == EEXIST || err == EBUSY ||
		       err == EISDIR || err == ENOTDIR || err == EINVAL ||
		       err == ENOTEMPTY;
	case F_MKDIR:
		return err == EEXIST;
	case F_TRUNCATE:
		return err == EINVAL || err == EISDIR;
	case F_XATTR:
		return err == EOPNOTSUPP;
	case F_READDIR:
		return err == ENOTDIR;
	case F_MOUNT:
	case F_BIND:
		return err == EINVAL || err == EBUSY || err == ENOTDIR;
	case F_UMOUNT:
		return err == EINVAL || err == EBUSY;
	case F_JOBSERVER:
		/* EROFS: an open through a read-only mount of wsemfs. */
		return err == EAGAIN || err == EBADF || err == ENOTDIR ||
		       err == EMFILE || err == EROFS;
	default:
		return false;
	}
}

/* Account for one call on the mounts and check how it failed. */
static int fs_check(enum fs_call c, int ret, const char *path)
{
	int err = errno;

	add(&sh->fs_calls, 1);
	if (ret < 0 && !fs_allowed(c, err))
		violation("wsemfs %s %s: unexpected %s", fs_name[c], path,
			  strerror(err));
	errno = err;
	return ret;
}

/* A path under the mounts: a name there, the directory, or junk. */
static void fs_path(struct rng *r, char *path, size_t len)
{
	char name[WSEM_NAME_MAX + 1];
	const char *dir = sh->mnt[below(r, NMNT)];

	if (chance(r, 8)) {
		snprintf(path, len, "%s", sh->bind[below(r, NBIND)]);
		return;
	}
	switch (below(r, 10)) {
	case 0:
		snprintf(path, len, "%s", dir);
		return;
	case 1:
		snprintf(path, len, "%s/nd.%u", dir,
			 (unsigned int)below(r, NNSNAMES));
		return;
	case 2:
		snprintf(path, len, "%s/%s", dir, chance(r, 50) ? ".." : ".");
		return;
	case 3 ... 5:
		snprintf(path, len, "%s/%s", dir, base[below(r, NBASE)].name);
		return;
	default:
		pick_name(r, name);
		name[WSEM_NAME_MAX] = 0;
		snprintf(path, len, "%s/%s", dir, name);
	}
}

/* The text a handle reads must be "key: value" lines of printable bytes. */
static void check_text(const char *buf, ssize_t n, bool whole)
{
	ssize_t i;

	for (i = 0; i < n; i++) {
		if (buf[i] != '\n' && (buf[i] < ' ' || buf[i] > '~')) {
			violation("wsemfs text: byte %#x at %zd",
				  (unsigned char)buf[i], i);
			return;
		}
	}
	if (whole && (strncmp(buf, "name:", 5) || !strstr(buf, "\ncapacity: ")
		      || buf[n - 1] != '\n'))
		violation("wsemfs text: \"%.40s\"...", buf);
	add(&sh->fs_read, 1);
}

/* read(2) or pread(2) of a pooled handle, at any place, of any size. */
static void fs_read(struct rng *r)
{
	char buf[PAGE];
	size_t len = chance(r, 50) ? sizeof(buf) : below(r, 64);
	off_t off = chance(r, 70) ? 0 : (off_t)below(r, 400);
	int fd = pool_get(r);
	ssize_t n;

	if (fd < 0)
		return;
	if (chance(r, 20))
		off = (off_t)(rnd(r) >> 2);
	n = pread(fd, buf, len, off);
	if (n < 0 && errno == ESPIPE) {
		off = -1;		/* read(2) goes on where it was */
		n = read(fd, buf, len);
	}
	if (n < 0 && errno == EBADF)
		return;			/* stale, or not readable */
	if (fs_check(F_READ, n, "(handle)") < 0 || !n)
		return;
	/* Whole if it ends within the page: 64 holders may need more. */
	if (n > (ssize_t)len)
		violation("wsemfs read %zd of %zu bytes", n, len);
	else
		check_text(buf, n, !off && len == sizeof(buf) &&
			   n < (ssize_t)len);
}

/*
 * Open a path with random flags.  A handle joins the pool (a read-only one
 * checked first); the directory is listed; anything else (the tmpfs under
 * an unmounted point) is closed.
 */
static void fs_open(struct rng *r)
{
	static const int acc[] = { O_RDONLY, O_WRONLY, O_RDWR, O_RDWR };
	int flags = acc[below(r, 4)] | O_CLOEXEC, fd;
	char path[160];
	struct statfs sfs;
	struct stat st;

	fs_path(r, path, sizeof(path));
	if (chance(r, 10))
		flags |= O_CREAT | (chance(r, 50) ? O_EXCL : 0);
	if (chance(r, 5))
		flags |= O_TRUNC;
	if (chance(r, 5))
		flags |= O_PATH;
	if (chance(r, 5))
		flags |= O_DIRECTORY;
	if (chance(r, 10))
		flags |= O_NONBLOCK | O_APPEND | O_NOFOLLOW;
	fd = fs_check(F_OPEN, open(path, flags, 0666), path);
	if (fd < 0)
		return;
	/* Directories stay out of the pool: their ioctls are not ours. */
	if (fstatfs(fd, &sfs) || sfs.f_type != WSEM_FS_MAGIC ||
	    fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return;
	}
	add(&sh->fs_opened, 1);
	if (!(flags & O_PATH) && (flags & O_ACCMODE) == O_RDONLY &&
	    !(flags & O_DIRECTORY) && !wsem_stat(fd, &(struct wsem_stat){0}))
		check_readonly(fd);
	pool_put(r, fd);
}

/* List a mount's directory: every entry a valid name, or a dot. */
static void fs_readdir(struct rng *r)
{
	char path[160], buf[PAGE];
	const char *dir = sh->mnt[below(r, NMNT)];
	long n, off;
	int fd;

	snprintf(path, sizeof(path), "%s", dir);
	fd = fs_check(F_OPEN, open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC),
		      path);
	if (fd < 0)
		return;
	while ((n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		for (off = 0; off < n;) {
			struct dirent64 *d = (struct dirent64 *)(buf + off);

			if (strcmp(d->d_name, ".") && strcmp(d->d_name, "..") &&
			    !spec_name(d->d_name))
				violation("wsemfs getdents: bad name");
			off += d->d_reclen;
		}
	}
	fs_check(F_READDIR, n, path);
	close(fd);
}

/* chmod, chown, unlink, rename, link, mkdir, truncate, xattr, utimes. */
static void fs_meta(struct rng *r)
{
	static const uid_t ids[] = { 0, NOBODY, 1000, (uid_t)-1 };
	char path[160], path2[160];
	enum fs_call c = F_CHMOD + below(r, F_UTIMES - F_CHMOD + 1);
	int ret;

	fs_path(r, path, sizeof(path));
	fs_path(r, path2, sizeof(path2));
	switch (c) {
	case F_CHMOD:
		ret = chmod(path, chance(r, 80) ? (mode_t)below(r, 01000) :
			    (mode_t)rnd(r) & 07777);
		break;
	case F_CHOWN:
		ret = lchown(path, ids[below(r, 4)], ids[below(r, 4)]);
		break;
	case F_UNLINK:
		ret = unlink(path);
		break;
	case F_RENAME:
		ret = rename(path, path2);
		break;
	case F_LINK:
		ret = chance(r, 50) ? link(path, path2) : symlink(path, path2);
		if (ret < 0 && errno == EEXIST)
			ret = 0;
		break;
	case F_MKDIR:
		ret = chance(r, 50) ? mkdir(path, 0755) :
		      mknod(path, S_IFREG | 0600, 0);
		break;
	case F_TRUNCATE:
		ret = truncate(path, (off_t)below(r, 100));
		break;
	case F_XATTR:
		ret = setxattr(path, "user.wsem", "1", 1, 0);
		break;
	default:
		ret = utimensat(AT_FDCWD, path, NULL, 0);
		break;
	}
	fs_check(c, ret, path);
}

/* Unmount a point (or a bound file), or mount wsemfs there, or a file. */
static void fs_mount(struct rng *r)
{
	static const char *const data[] = { NULL, "", "mode=0777", "x=1" };
	static const unsigned long mflags[] = {
		0, MS_RDONLY, MS_NOSUID | MS_NODEV | MS_NOEXEC,
	};
	const char *point = sh->mnt[below(r, NMNT)];
	char src[160];
	int ret;

	switch (below(r, 4)) {
	case 0:
		if (chance(r, 30))
			point = sh->bind[below(r, NBIND)];
		ret = fs_check(F_UMOUNT, umount2(point, MNT_DETACH), point);
		if (!ret)
			add(&sh->umounts, 1);
		return;
	case 1:
	case 2:
		ret = fs_check(F_MOUNT, mount("wsem", point, "wsem",
					      mflags[below(r, 3)],
					      data[below(r, 4)]), point);
		break;
	default:
		fs_path(r, src, sizeof(src));
		point = sh->bind[below(r, NBIND)];
		ret = fs_check(F_BIND, mount(src, point, NULL, MS_BIND, NULL),
			       point);
		break;
	}
	if (!ret)
		add(&sh->mounts, 1);
}

/*
 * A child makes an IPC namespace of its own, names in it, mounts it on a
 * point, takes weight, gives handles to the workers and dies (or is
 * killed): the namespace dies under whoever opens through that mount.
 */
static void __attribute__((noreturn)) ns_child(struct rng *r)
{
	char path[160];
	const char *point = sh->mnt[below(r, NMNT)];
	unsigned int i;
	int fd;

	alarm(1);
	if (unshare(CLONE_NEWIPC))
		_exit(errno == EPERM ? 0 : 1);
	add(&sh->ns_deaths, 1);
	if (chance(r, 70) && !mount("wsem", point, "wsem", 0, NULL))
		add(&sh->mounts, 1);
	for (i = 0; i < NNSNAMES; i++) {
		snprintf(path, sizeof(path), "nd.%u", i);
		fd = wsem_open(path, O_CREAT, 0666, 1 + below(r, 4));
		if (fd < 0)
			continue;
		if (chance(r, 50))
			wsem_tryacquire(fd, 1);
		send_fd(box[below(r, NWORKERS)][1], fd, MSG_DONTWAIT);
		snprintf(path, sizeof(path), "%s/nd.%u", point, i);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd >= 0 && chance(r, 50))
			send_fd(box[below(r, NWORKERS)][1], fd, MSG_DONTWAIT);
		if (chance(r, 20))
			usleep(below(r, 2000));
	}
	if (chance(r, 30) && !umount2(point, MNT_DETACH))
		add(&sh->umounts, 1);
	if (chance(r, 50))
		raise(SIGKILL);
	_exit(0);
}

/* Jobserver endpoints the chaos thread keeps open for a while, or -1. */
#define NJS		4
#define JS_NAME		"fz.js"	/* mostly this one's: */
#define JS_CAP		4	/* ... made with this capacity */
static int js_fd[NJS] = { -1, -1, -1, -1 };

/* Open the endpoint of a base semaphore (or of a missing name) at slot @i. */
static void js_open(struct rng *r, unsigned int i)
{
	char path[200];
	int fd;

	snprintf(path, sizeof(path), "%s/%s/%s", sh->mnt[below(r, NMNT)],
		 WSEM_JOBSERVER_DIR, chance(r, 70) ? JS_NAME : chance(r, 80) ?
		 base[below(r, NBASE)].name : "nosuch");
	fd = open(path, (chance(r, 70) ? O_RDWR : O_RDONLY) | O_CLOEXEC |
		  (chance(r, 90) ? O_NONBLOCK : 0));
	if (fs_check(F_JOBSERVER, fd, path) < 0)
		return;
	add(&sh->js_opened, 1);
	if (js_fd[i] >= 0)
		close(js_fd[i]);
	js_fd[i] = fd;
}

/*
 * Slot @i's endpoint, left in the worker's epoll set under a descriptor
 * that is then closed: the file lives on in a dup() that takes the slot,
 * and the chaos thread's drains of the set poll it for a descriptor the
 * process no longer has.
 */
static void js_epoll_after_close(unsigned int i)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int fd = js_fd[i], d = fcntl(fd, F_DUPFD_CLOEXEC, 0);

	if (d < 0)
		return;
	if (!epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev))
		add(&sh->js_epoll, 1);
	close(fd);
	js_fd[i] = d;
}

/*
 * A child that shares the worker's descriptor table (clone(CLONE_FILES),
 * not a thread): it polls @fd, reads a token if it can without blocking,
 * perhaps writes it back, and exits, or is SIGKILLed at once; either way
 * no close of the shared table happens, so only its death gives back what
 * it read.  The raw clone() runs no atfork handler: the child makes only
 * system calls.
 */
static void js_shared_child(struct rng *r, int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	bool nonblock = fcntl(fd, F_GETFL) & O_NONBLOCK;
	int ms = below(r, 3), give = chance(r, 50), kill_it = chance(r, 30);
	pid_t pid;
	char c;

	while (waitpid(-1, NULL, WNOHANG) > 0)
		children--;
	if (children >= MAX_CHILDREN)
		return;
	pid = syscall(SYS_clone, CLONE_FILES | SIGCHLD, NULL, NULL, NULL, NULL);
	if (pid == 0) {
		poll(&pfd, 1, ms);
		if (nonblock && read(fd, &c, 1) == 1 && give)
			write(fd, "+", 1);
		_exit(0);
	}
	if (pid < 0)
		return;
	children++;
	add(&sh->js_shared, 1);
	if (kill_it)
		kill(pid, SIGKILL);
}

/*
 * Slot @i's endpoint through io_uring: a dup() registered as the ring's
 * fixed file and closed (and sometimes the slot's descriptor too), a read
 * of a byte through it (the process's token, or EAGAIN, or EOPNOTSUPP
 * where io_uring runs a blocking read in a kernel thread, before Linux
 * 5.12, or EBADF where the worker has no descriptor of that endpoint
 * left), perhaps a write back, then the ring goes, its file with it (an
 * fput(), no close): what was read stays the worker's until it closes its
 * last descriptor or dies.
 */
static void js_uring(struct rng *r, unsigned int i)
{
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	struct __kernel_timespec ts = { .tv_nsec = 1000000 };
	struct io_uring ring;
	char c = '+';
	int d;

	if (io_uring_queue_init(4, &ring, 0))
		return;
	d = fcntl(js_fd[i], F_DUPFD_CLOEXEC, 0);
	if (d < 0 || io_uring_register_files(&ring, &d, 1)) {
		if (d >= 0)
			close(d);
		io_uring_queue_exit(&ring);
		return;
	}
	close(d);
	if (chance(r, 30)) {
		close(js_fd[i]);
		js_fd[i] = -1;
	}
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_read(sqe, 0, &c, 1, 0);
	sqe->flags |= IOSQE_FIXED_FILE;
	if (io_uring_submit(&ring) == 1 &&
	    !io_uring_wait_cqe_timeout(&ring, &cqe, &ts)) {
		if (cqe->res == 1)
			add(&sh->js_uring, 1);
		else if (cqe->res == -EBADF)
			add(&sh->js_nodesc, 1);
		else if (cqe->res != -EAGAIN && cqe->res != -EOPNOTSUPP &&
			 cqe->res != -EBADF)
			violation("jobserver read through io_uring: %d",
				  cqe->res);
		if (cqe->res == 1 && chance(r, 50)) {
			io_uring_cqe_seen(&ring, cqe);
			sqe = io_uring_get_sqe(&ring);
			io_uring_prep_write(sqe, 0, &c, 1, 0);
			sqe->flags |= IOSQE_FIXED_FILE;
			io_uring_submit(&ring);
		}
	}
	io_uring_queue_exit(&ring);
}

/*
 * One action on a jobserver endpoint: open, close, a read that never
 * blocks (one byte at most, '+'), a write (its whole count, or EBADF on a
 * read-only one), an fchmod or fchown (its semaphore's), a poll (always
 * writable); or one of the ways around the descriptor: an epoll set that
 * outlives it, a child sharing the table, io_uring's fixed file.
 */
static void fs_jobserver(struct rng *r)
{
	unsigned int i = below(r, NJS);
	struct pollfd pfd;
	size_t len;
	ssize_t n;
	char buf[4];
	int fd = js_fd[i];

	if (fd < 0 || chance(r, 15)) {
		js_open(r, i);
		return;
	}
	switch (below(r, 12)) {
	case 0:
		close(fd);
		js_fd[i] = -1;
		break;
	case 9:
		js_epoll_after_close(i);
		break;
	case 10:
		js_shared_child(r, fd);
		break;
	case 11:
		js_uring(r, i);
		break;
	case 7:
		if (chance(r, 50))
			fs_check(F_CHMOD, fchmod(fd, below(r, 01000)),
				 "(fchmod)");
		else
			fs_check(F_CHOWN, fchown(fd, chance(r, 50) ? 0 :
						 NOBODY, (gid_t)-1),
				 "(fchown)");
		break;
	case 1 ... 4:
		if (!(fcntl(fd, F_GETFL) & O_NONBLOCK))
			break;		/* a full semaphore would block */
		len = chance(r, 90) ? 1 + below(r, 3) : 0;
		n = fs_check(F_JOBSERVER, read(fd, buf, len), "(read)");
		if (n > 0)
			add(&sh->js_tokens, 1);
		if (n > (len ? 1 : 0) || (n == 1 && buf[0] != '+'))
			violation("jobserver read of %zu: %zd, '%c'", len, n,
				  buf[0]);
		break;
	case 5 ... 6:
		len = below(r, 5);
		n = fs_check(F_JOBSERVER, write(fd, "++++", len), "(write)");
		if (n >= 0 && (size_t)n != len)
			violation("jobserver write of %zu: %zd", len, n);
		break;
	default:
		pfd.fd = fd;
		pfd.events = chance(r, 80) ? POLLIN | POLLOUT : POLLOUT;
		n = poll(&pfd, 1, 0);
		if (n != 1 || !(pfd.revents & POLLOUT))
			violation("jobserver poll: %zd, revents %#x", n,
				  pfd.revents);
	}
}

/* One action through wsemfs. */
static void fs_chaos(struct rng *r)
{
	unsigned int k = below(r, 100);
	pid_t pid;

	if (k < 30) {
		fs_open(r);
	} else if (k < 45) {
		fs_jobserver(r);
	} else if (k < 57) {
		fs_read(r);
	} else if (k < 62) {
		fs_readdir(r);
	} else if (k < 82) {
		fs_meta(r);
	} else if (k < 95) {
		fs_mount(r);
	} else {
		while (waitpid(-1, NULL, WNOHANG) > 0)
			children--;
		if (children >= MAX_CHILDREN)
			return;
		pid = fork();
		if (pid == 0) {
			struct rng cr = { .s = rnd(r) ^ 0x2545f4914f6cdd1dULL };

			ns_child(&cr);
		}
		if (pid > 0)
			children++;
	}
}


/* ---------------------------------------------------------------- */
/* Lender rounds: loans against an exact model                       */

#define RND_LENDERS	3		/* lending handles of a round */
#define RND_STEPS	16		/* steps of a round */
#define RND_WAIT	(1500 * MSEC)	/* SPEC: gone within a second */

/*
 * A forked child alone with an anonymous semaphore: nobody else can reach
 * it, so its state is the model's, exactly.
 */
struct round {
	int obs;			/* the creator's handle: stat, resize */
	int lender[RND_LENDERS];	/* handles that lend, -1 when closed */
	uint64_t lent[RND_LENDERS];	/* ... what each lends */
	uint64_t extra;			/* a live forked lender's */
	uint64_t own, ceiling;		/* own capacity; 0 or ceiling */
	uint64_t obs_held;		/* weight obs holds: 0 or 1 */
	int w;				/* a handle with a request */
	uint64_t weight;		/* ... this weight, */
	bool queued, held;		/* ... queued, or granted and held */
	struct wsem_stat last;		/* the last stat through obs */
	const char *step;		/* the step, for the notes */
};

static int lend_err(int fd, uint64_t flags, uint64_t capacity)
{
	struct wsem_lend_args l = {
		.size = sizeof(l), .flags = flags, .capacity = capacity,
	};

	return ioctl(fd, WSEM_IOC_LEND, &l) ? errno : 0;
}

static int rstat(int fd, struct wsem_stat *st)
{
	memset(st, 0, sizeof(*st));
	st->size = sizeof(*st);
	return ioctl(fd, WSEM_IOC_STAT, st) ? errno : 0;
}

static uint64_t round_lent(const struct round *rd)
{
	uint64_t sum = rd->extra;
	unsigned int i;

	for (i = 0; i < RND_LENDERS; i++)
		sum += rd->lent[i];
	return sum;
}

static uint64_t round_cap(const struct round *rd)
{
	return rd->own + round_lent(rd);
}

/* A call of the round that the model says must give @want gave @got. */
static void round_expect(const struct round *rd, const char *call, int got,
			 int want)
{
	if (got != want)
		violation("lender round, %s: %s %s, not %s", rd->step, call,
			  got ? strerror(got) : "success",
			  want ? strerror(want) : "success");
}

/* What is held: obs's unit, and the request of @rd->w once granted. */
static uint64_t round_used(const struct round *rd)
{
	return rd->obs_held + (rd->held ? rd->weight : 0);
}

/*
 * After a step: the request of @rd->w ended as the model says (granted
 * when it fits, else waiting; failed with EINVAL by a shrink only on a
 * semaphore without a ceiling), and the stat through obs is the model's.
 * POLLRDBAND is up exactly when used, waiters or queued weight differ
 * from the last stat (the steps change each at most once).
 */
static void round_check(struct round *rd, struct rng *r)
{
	uint64_t flags = 0, cap = round_cap(rd);
	struct pollfd pfd = { .fd = rd->obs, .events = POLLRDBAND };
	struct wsem_stat st;
	bool changed;
	int err, want;

	if (rd->queued) {
		want = rd->obs_held + rd->weight <= cap ? 0 :
		       !rd->ceiling && rd->weight > cap ? EINVAL : EINPROGRESS;
		err = ioctl(rd->w, WSEM_IOC_ASYNC, &flags) ? errno : 0;
		if (err == EINVAL && rd->ceiling)
			violation("lender round, %s: a waiter of weight %llu "
				  "within the ceiling %llu failed (EINVAL)",
				  rd->step, (unsigned long long)rd->weight,
				  (unsigned long long)rd->ceiling);
		else
			round_expect(rd, "the waiter's collect", err, want);
		rd->queued = err == EINPROGRESS;
		rd->held = !err;
	}
	if (poll(&pfd, 1, 0) < 0)
		violation("lender round: poll: %s", strerror(errno));
	if (rstat(rd->obs, &st)) {
		violation("lender round: stat: %s", strerror(errno));
		return;
	}
	changed = st.used != rd->last.used || st.waiters != rd->last.waiters ||
		  st.queued_weight != rd->last.queued_weight;
	if (changed != !!(pfd.revents & POLLRDBAND))
		violation("lender round, %s: demand %s, revents %#x",
			  rd->step, changed ? "changed" : "the same",
			  pfd.revents);
	else if (changed)
		add(&sh->rdband, 1);
	rd->last = st;
	if (st.capacity != cap || st.lent != round_lent(rd) ||
	    st.lent_here || st.ceiling != rd->ceiling ||
	    st.used != round_used(rd) ||
	    st.waiters != rd->queued ||
	    st.queued_weight != (rd->queued ? rd->weight : 0))
		violation("lender round, %s: capacity %llu lent %llu "
			  "(here %llu) ceiling %llu used %llu waiters %llu, "
			  "not %llu %llu 0 %llu %llu %u", rd->step,
			  (unsigned long long)st.capacity,
			  (unsigned long long)st.lent,
			  (unsigned long long)st.lent_here,
			  (unsigned long long)st.ceiling,
			  (unsigned long long)st.used,
			  (unsigned long long)st.waiters,
			  (unsigned long long)cap,
			  (unsigned long long)round_lent(rd),
			  (unsigned long long)rd->ceiling,
			  (unsigned long long)round_used(rd),
			  rd->queued);
	/* Read: nothing is news any more. */
	pfd.revents = 0;
	if (chance(r, 30) && poll(&pfd, 1, 0) == 1 &&
	    pfd.revents & POLLRDBAND)
		violation("lender round, %s: POLLRDBAND right after a stat",
			  rd->step);
}

/* What a lender lends, through its own handle (0 = success). */
static void round_lend(struct round *rd, unsigned int i, uint64_t v)
{
	struct wsem_stat st;

	round_expect(rd, "LEND", lend_err(rd->lender[i], 0, v), 0);
	rd->lent[i] = v;
	if (!rstat(rd->lender[i], &st) && st.lent_here != v)
		violation("lender round, %s: lent_here %llu, not %llu",
			  rd->step, (unsigned long long)st.lent_here,
			  (unsigned long long)v);
}

/*
 * Bad loans change nothing: unknown flags (any bit above
 * WSEM_LEND_DEADLINE), a capacity past WSEM_CAPACITY_MAX, a
 * capacity in force one past it.  A loan that brings it exactly to the
 * largest capacity takes, and then no resize may raise it.
 */
static void round_bad_lend(struct round *rd, struct rng *r, unsigned int i)
{
	uint64_t others = round_cap(rd) - rd->lent[i];
	int fd = rd->lender[i];

	round_expect(rd, "LEND with flags", lend_err(fd, 4ULL << below(r, 62),
						     1), EINVAL);
	round_expect(rd, "LEND past the largest capacity",
		     lend_err(fd, 0, chance(r, 50) ? WSEM_CAPACITY_MAX + 1 :
			      UINT64_MAX), EINVAL);
	round_expect(rd, "LEND one past the largest capacity in force",
		     lend_err(fd, 0, WSEM_CAPACITY_MAX - others + 1), EINVAL);
	if (rd->queued || rd->held || !chance(r, 50))
		return;
	round_lend(rd, i, WSEM_CAPACITY_MAX - others);
	round_expect(rd, "SET_CAPACITY above the largest in force",
		     wsem_set_capacity(rd->obs, rd->own + 1) ? errno : 0,
		     EINVAL);
	round_lend(rd, i, below(r, 3));
}

/*
 * A forked lender: its own handle, a loan, then SIGKILL; its loan must be
 * gone when it is reaped (SPEC: within a second, RND_WAIT).
 */
static void round_killed_lender(struct round *rd, struct rng *r)
{
	uint64_t x = 1 + below(r, 4);
	struct pollfd pfd;
	struct wsem_stat st;
	int p[2], fd, err, n;
	int64_t end;
	ssize_t got;
	pid_t pid;
	char c;

	if (pipe2(p, O_CLOEXEC))
		return;
	pid = fork();
	if (pid == 0) {
		fd = wsem_reopen(rd->obs, O_CLOEXEC);
		err = fd < 0 ? errno : lend_err(fd, 0, x);
		c = err;	/* 0: it lends */
		if (write(p[1], &c, 1) != 1 || err)
			_exit(1);
		pause();
		_exit(0);
	}
	close(p[1]);
	if (pid < 0) {
		close(p[0]);
		return;
	}
	/* A fork on a debug kernel under load: seconds, at worst. */
	pfd = (struct pollfd){ .fd = p[0], .events = POLLIN };
	n = poll(&pfd, 1, 20000);
	got = n == 1 ? read(p[0], &c, 1) : -1;
	if (got != 1 || c) {
		violation("lender round: a forked lender did not lend: %s",
			  got == 1 ? strerror(c) : n == 1 ? "it died" :
			  "no word in 20 s");
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		close(p[0]);
		return;
	}
	close(p[0]);
	rd->extra = x;
	rd->step = "a forked lender lent";
	round_check(rd, r);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	add(&sh->round_kills, 1);
	rd->extra = 0;
	rd->step = "its lender was SIGKILLed";
	/* Its file is released before it is reaped; allow SPEC's second. */
	end = now_ns() + RND_WAIT;
	while (!rstat(rd->obs, &st) && st.lent != round_lent(rd) &&
	       now_ns() < end)
		usleep(1000);
	round_check(rd, r);
}

/*
 * A child turned nobody, with lender @i's handle: raising its loan is
 * EPERM, lowering it takes.
 */
static void round_nobody(struct round *rd, unsigned int i)
{
	uint64_t lower = rd->lent[i] ? rd->lent[i] - 1 : 0;
	int status;
	pid_t pid;

	pid = fork();
	if (pid == 0) {
		if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY))
			_exit(1);
		round_expect(rd, "a raise by nobody",
			     lend_err(rd->lender[i], 0, rd->lent[i] + 1),
			     EPERM);
		round_expect(rd, "a loan lowered by nobody",
			     lend_err(rd->lender[i], 0, lower), 0);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return;
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		violation("lender round: nobody's child ended %#x", status);
	rd->lent[i] = lower;
}

/*
 * Wait until the process whose /proc/PID/stat is open at @fd sleeps (it
 * is in poll(2), its only sleep), for a few seconds at most.
 */
static void await_sleep(int fd)
{
	int64_t end = now_ns() + 5 * NSEC;
	char buf[512], *p;
	ssize_t n;

	while (now_ns() < end) {
		n = pread(fd, buf, sizeof(buf) - 1, 0);
		if (n <= 0)
			return;
		buf[n] = 0;
		p = strrchr(buf, ')');
		if (p && p[1] == ' ' && p[2] == 'S')
			return;
		usleep(1000);
	}
}

/*
 * A poller that sleeps for POLLRDBAND wakes when a forked child queues a
 * request through a handle of its own, once the poller sleeps; the child
 * keeps it until the poll is over: only the request's own wake-up can end
 * the poll before its 10 s (then it finds the event, not woken).
 */
static void round_poll_wakes(struct round *rd, struct rng *r)
{
	struct pollfd pfd = { .fd = rd->obs, .events = POLLRDBAND };
	struct wsem_acquire_args q = {
		.size = sizeof(q), .weight = 1, .flags = WSEM_ACQUIRE_ASYNC,
	};
	pid_t pid;
	int n, fd, p[2], me;
	int64_t t;
	char c;

	me = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	if (me < 0)
		return;
	if (rstat(rd->obs, &rd->last) || pipe2(p, O_CLOEXEC)) {
		close(me);
		return;
	}
	pid = fork();
	if (pid == 0) {
		close(p[1]);
		await_sleep(me);
		fd = wsem_reopen(rd->obs, O_CLOEXEC);
		if (fd >= 0)
			ioctl(fd, WSEM_IOC_ACQUIRE, &q);
		/* Until the poll is over: the parent closes its end. */
		n = read(p[0], &c, 1);
		_exit(n);
	}
	close(p[0]);
	close(me);
	if (pid < 0) {
		close(p[1]);
		return;
	}
	t = now_ns();
	n = poll(&pfd, 1, 10000);
	t = now_ns() - t;
	/* At its timeout poll(2) looks once more: the event, unwoken. */
	if (n != 1 || !(pfd.revents & POLLRDBAND) || t > 9 * NSEC) {
		violation("lender round: a poller of POLLRDBAND was not woken "
			  "by a request (%d, revents %#x, after %lld ms)", n,
			  pfd.revents, (long long)(t / MSEC));
	} else {
		add(&sh->woken, 1);
		if ((uint64_t)t > __atomic_load_n(&sh->woken_max_ns,
						  __ATOMIC_RELAXED))
			__atomic_store_n(&sh->woken_max_ns, t,
					 __ATOMIC_RELAXED);
	}
	close(p[1]);
	waitpid(pid, NULL, 0);
	/* Its request came and went: read, then on as before. */
	rstat(rd->obs, &rd->last);
	rd->step = "a request came and went";
	round_check(rd, r);
}

/* The request of @rd->w: queue one, or release or cancel it. */
static void round_request(struct round *rd, struct rng *r)
{
	uint64_t cap = round_cap(rd), flags = WSEM_ASYNC_CANCEL;
	uint64_t max = rd->ceiling ? rd->ceiling : cap;
	int err, want;

	if (rd->held) {
		rd->step = "the waiter released";
		round_expect(rd, "RELEASE",
			     wsem_release(rd->w, rd->weight) ? errno : 0, 0);
		rd->held = false;
		return;
	}
	if (rd->queued) {
		rd->step = "the waiter cancelled";
		round_expect(rd, "cancel",
			     ioctl(rd->w, WSEM_IOC_ASYNC, &flags) ? errno : 0,
			     0);
		rd->queued = false;
		return;
	}
	rd->step = "the waiter queued";
	rd->weight = 1 + below(r, max + 1);
	if (rd->ceiling && chance(r, 70))
		rd->weight = 1 + below(r, rd->ceiling);
	want = rd->weight > max ? EINVAL :
	       rd->obs_held + rd->weight <= cap ? 0 : EINPROGRESS;
	err = wsem_acquire_async(rd->w, rd->weight) ? errno : 0;
	round_expect(rd, "ACQUIRE_ASYNC", err, want);
	rd->held = !err;
	rd->queued = err == EINPROGRESS;
}

/*
 * obs takes 1 (TRY: only with nobody queued and room) or gives it back:
 * the request of @rd->w then waits beside it, and fails by a shrink.
 */
static void round_obs(struct round *rd)
{
	int want;

	if (rd->obs_held) {
		rd->step = "obs released";
		round_expect(rd, "RELEASE", wsem_release(rd->obs, 1) ? errno :
			     0, 0);
		rd->obs_held = 0;
		return;
	}
	rd->step = "obs took 1";
	want = !rd->queued && round_used(rd) + 1 <= round_cap(rd) ? 0 : EAGAIN;
	round_expect(rd, "TRY 1", wsem_tryacquire(rd->obs, 1) ? errno : 0,
		     want);
	rd->obs_held = !want;
}

/*
 * A holding handle's kill group (WSEM_IOC_SET_KILL, COMMAND's under `wsem
 * run`) ends in the step that withdraws a loan of WSEM_LEND_END_HOLDERS,
 * at its lender's close or at its deadline, though the handle is not
 * closed: its holder keeps it, or has sent it into a unix socket's queue,
 * where no file table has it; the group's leader closed its copy (as
 * COMMAND's exec does), so it is no sharer (fork_holder_and_child()).  On
 * an anonymous semaphore of its own, as root (CAP_KILL); this process is
 * the subreaper of the group's leader.
 */
static void round_kill_group(struct rng *r)
{
	struct wsem_lend_args l = {
		.size = sizeof(l), .flags = WSEM_LEND_END_HOLDERS,
		.capacity = 1,
	};
	bool in_flight = chance(r, 50), by_deadline = chance(r, 50);
	int fd, lender, sv[2], hst = 0, gst = 0, err;
	pid_t h, g = 0;
	int64_t end, t;

	if (geteuid() || prctl(PR_SET_CHILD_SUBREAPER, 1))
		return;
	fd = open_anon(-1, 1, O_RDWR);
	lender = fd < 0 ? -1 : wsem_reopen(fd, O_CLOEXEC);
	if (lender < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
				     sv))
		_exit(0);
	h = fork_holder_and_child(fd, lender, 1, true, in_flight ? sv[0] : -1,
				  &g);
	if (h < 0 || g <= 0)
		_exit(0);	/* ENOMEM, EAGAIN: no scenario, no check */
	if (by_deadline) {
		l.flags |= WSEM_LEND_DEADLINE;
		l.deadline_ns = clock_ns(CLOCK_BOOTTIME) + below(r, 20) * MSEC +
				MSEC;
	}
	err = ioctl(lender, WSEM_IOC_LEND, &l) ? errno : 0;
	if (err == ETIMEDOUT && by_deadline) {
		/*
		 * The deadline passed before the call (a loaded machine):
		 * the lender's close ends the loan instead.
		 */
		by_deadline = false;
		l.flags = WSEM_LEND_END_HOLDERS;
		err = ioctl(lender, WSEM_IOC_LEND, &l) ? errno : 0;
	}
	if (err)
		violation("kill group: LEND with END_HOLDERS: %s",
			  strerror(err));
	if (!by_deadline)
		close(lender);
	/*
	 * Whether they die at all (unkilled, the group lived on), not how
	 * fast: on the debug kernel both were reaped after 1.6 s once.
	 */
	t = now_ns();
	end = t + 20 * NSEC;
	while (now_ns() < end && (!hst || !gst)) {
		if (!hst && waitpid(h, &hst, WNOHANG) != h)
			hst = 0;
		if (!gst && waitpid(g, &gst, WNOHANG) != g)
			gst = 0;
		usleep(1000);
	}
	if (!hst || !WIFSIGNALED(hst) || WTERMSIG(hst) != SIGKILL ||
	    !gst || !WIFSIGNALED(gst) || WTERMSIG(gst) != SIGKILL)
		violation("kill group: the %s of a loan of END_HOLDERS left "
			  "the holder %s, its kill group %s (handle %s)",
			  by_deadline ? "deadline" : "lender's close",
			  hst ? "ended" : "alive", gst ? "ended" : "alive",
			  in_flight ? "in flight" : "kept");
	else
		add(&sh->kill_groups, 1);
	t = now_ns() - t;
	if ((uint64_t)t > __atomic_load_n(&sh->kill_group_max_ns,
					  __ATOMIC_RELAXED))
		__atomic_store_n(&sh->kill_group_max_ns, t, __ATOMIC_RELAXED);
	if (!hst) {
		kill(h, SIGKILL);
		waitpid(h, NULL, 0);
	}
	if (!gst) {
		kill(g, SIGKILL);
		waitpid(g, NULL, 0);
	}
	close(sv[0]);
	close(sv[1]);
	close(fd);
	if (by_deadline)
		close(lender);
}

static void __attribute__((noreturn)) lender_round(struct rng *r)
{
	struct round rd = { .obs = -1, .w = -1, .step = "opened" };
	struct wsem_open_args o = { .size = sizeof(o) };
	unsigned int i, n;
	uint64_t v;

	alarm(90);	/* a round that hangs ends here, with no count */
	o.flags = WSEM_OPEN_ANON;
	if (chance(r, 60)) {
		o.flags |= WSEM_OPEN_LOANS;
		rd.ceiling = o.capacity = 1 + below(r, 6);
	} else {
		rd.own = o.capacity = 1 + below(r, 4);
	}
	rd.obs = open("/dev/wsem", O_RDWR | O_CLOEXEC);
	if (rd.obs < 0 || ioctl(rd.obs, WSEM_IOC_OPEN, &o))
		_exit(0);	/* ENOSPC, ENOMEM: not a round */
	rd.w = wsem_reopen(rd.obs, O_CLOEXEC);
	for (i = 0; i < RND_LENDERS; i++)
		rd.lender[i] = wsem_reopen(rd.obs, O_CLOEXEC);
	if (rd.w < 0 || rd.lender[RND_LENDERS - 1] < 0)
		_exit(0);
	rstat(rd.obs, &rd.last);
	round_check(&rd, r);
	for (n = 0; n < RND_STEPS; n++) {
		i = below(r, RND_LENDERS);
		switch (below(r, 13)) {
		case 0 ... 3:
			rd.step = "a loan changed";
			v = below(r, 5);
			round_lend(&rd, i, v);
			break;
		case 4:
			rd.step = "bad loans";
			round_bad_lend(&rd, r, i);
			break;
		case 5:
			rd.step = "a resize";
			v = below(r, 5);
			if (!v && !rd.ceiling) {
				round_expect(&rd, "SET_CAPACITY 0",
					     wsem_set_capacity(rd.obs, 0) ?
					     errno : 0, EINVAL);
				break;
			}
			round_expect(&rd, "SET_CAPACITY",
				     wsem_set_capacity(rd.obs, v) ? errno : 0,
				     0);
			rd.own = v;
			break;
		case 6:
			rd.step = "a lender closed";
			close(rd.lender[i]);
			rd.lent[i] = 0;
			rd.lender[i] = wsem_reopen(rd.obs, O_CLOEXEC);
			if (rd.lender[i] < 0)
				_exit(0);
			break;
		case 7:
			round_killed_lender(&rd, r);
			continue;
		case 8:
			if (geteuid())
				continue;
			rd.step = "nobody lowered a loan";
			round_nobody(&rd, i);
			break;
		case 9:
			round_poll_wakes(&rd, r);
			continue;
		case 10:
			round_obs(&rd);
			break;
		default:
			round_request(&rd, r);
			break;
		}
		round_check(&rd, r);
	}
	if (chance(r, 20))
		raise(SIGKILL);	/* loans die with it, unchecked */
	/* Every lender gone: nothing lent, the own capacity in force. */
	for (i = 0; i < RND_LENDERS; i++) {
		close(rd.lender[i]);
		rd.lent[i] = 0;
	}
	rd.step = "every lender closed";
	round_check(&rd, r);
	add(&sh->rounds, 1);
	if (chance(r, 50))
		round_kill_group(r);
	_exit(0);
}

static void chaos_one(struct rng *r)
{
	static const char *const spins[] = { "0", "1000", "20000", "1000000" };
	static const char *const tells[] = { "1", "2", "5" };
	static const char *const batches[] = { "0", "1", "2", "3" };
	int fd, nfd, target;
	pid_t pid;

	add(&sh->chaos, 1);
	switch (below(r, 100)) {
	case 0 ... 17:
		pool_close(r);
		break;
	case 18 ... 29:
		fd = pool_get(r);
		if (fd >= 0) {
			nfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
			if (nfd >= 0)
				pool_put(r, nfd);
		}
		break;
	case 30 ... 34:
		/* dup2 one pool descriptor over another */
		fd = pool_get(r);
		nfd = pool_get(r);
		if (fd >= 0 && nfd >= 0 && fd != nfd)
			dup3(fd, nfd, O_CLOEXEC);
		break;
	case 35 ... 56:
		fd = pool_get(r);
		target = below(r, NWORKERS);
		if (fd >= 0 && !send_fd(box[target][1], fd, MSG_DONTWAIT))
			add(&sh->passed, 1);
		break;
	case 57 ... 78:
		fd = recv_any_fd(box[my_slot][0], 0);
		if (fd >= 0) {
			add(&sh->received, 1);
			pool_put(r, fd);
		}
		break;
	case 79 ... 81:
		/* A few children at a time: they are slow to fork and reap. */
		while (waitpid(-1, NULL, WNOHANG) > 0)
			children--;
		if (children >= MAX_CHILDREN)
			break;
		pid = fork();
		if (pid == 0) {
			struct rng cr = { .s = rnd(r) ^ 0x5851f42d4c957f2dULL };

			fork_child(&cr);
		}
		if (pid > 0) {
			children++;
			add(&sh->forks, 1);
		}
		break;
	case 82:
		/* The poll before a sleep: off, short, as shipped, long. */
		write_file(SPIN_PARAM, spins[below(r, ARRAY_SIZE(spins))]);
		break;
	case 83:
		/*
		 * The next granter pauses between its grants and their
		 * telling (test builds): closes, collects and new requests
		 * land in that window.
		 */
		write_file(TELL_DELAY, tells[below(r, ARRAY_SIZE(tells))]);
		break;
	case 95:
		/* A lender round: a few forks, and on (not many: slow). */
		while (waitpid(-1, NULL, WNOHANG) > 0)
			children--;
		if (children >= MAX_CHILDREN)
			break;
		pid = fork();
		if (pid == 0) {
			struct rng cr = { .s = rnd(r) ^ 0x9e3779b97f4a7c15ULL };

			lender_round(&cr);
		}
		if (pid > 0)
			children++;
		break;
	case 84:
		/* Drain the epoll set: handles bound after they joined it. */
		{
			struct epoll_event ev[8];
			struct pollfd pfd = {
				.fd = pool_get(r), .events = POLLRDBAND,
			};

			epoll_wait(epfd, ev, 8, 0);
			/* ... and a pool handle polled for it: any fd. */
			poll(&pfd, 1, 0);
		}
		break;
	case 85 ... 94:
		fs_chaos(r);
		break;
	case 96:
		/*
		 * Holders views in pieces of a few entries (test builds; 0
		 * is the module's 64): the lists change between the pieces.
		 */
		write_file(VIEW_BATCH, batches[below(r, ARRAY_SIZE(batches))]);
		break;
	default:
		/* Interrupt our own sleepers. */
		pthread_kill(op_thread[below(r, OP_THREADS)], SIGUSR1);
		break;
	}
}

struct op_arg {
	struct rng r;
	struct arena a;
};

static void *op_main(void *p)
{
	struct op_arg *o = p;

	while (!stopping()) {
		if (__atomic_load_n(&sh->ops, __ATOMIC_RELAXED) >= sh->target)
			break;
		fuzz_one(&o->r, &o->a);
		if (chance(&o->r, 1))
			counters(pool_get(&o->r));
		if (chance(&o->r, 1))
			random_map(&o->r, pool_get(&o->r));
	}
	_exit(0);
}

static void __attribute__((noreturn)) worker_main(unsigned int slot,
						 uint64_t gen)
{
	static struct op_arg oa[OP_THREADS];
	struct sigaction sa = { .sa_handler = on_usr1 };
	struct rng r = rng_for(slot, gen, 0);
	uint64_t next, ops, last = 0, n;
	unsigned int i;
	int64_t end;

	my_slot = slot;
	sigaction(SIGUSR1, &sa, NULL);
	for (i = 0; i < NPOOL; i++)
		pool[i] = -1;
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		_exit(5);
	if (slot & 1) {
		if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY))
			_exit(3);
	}
	tree_fds();
	shrink_round(&r);
	for (i = 0; i < OP_THREADS; i++) {
		oa[i].r = rng_for(slot, gen, i + 1);
		if (arena_init(&oa[i].a) ||
		    pthread_create(&op_thread[i], NULL, op_main, &oa[i]))
			_exit(4);
	}
	while (!stopping()) {
		/*
		 * About one action per CHAOS_EVERY requests of this worker,
		 * whatever the kernel's speed (catching up after a long
		 * wait for the CPU); at least one per CHAOS_WAIT, for when
		 * its threads are all asleep and need waking.
		 */
		ops = __atomic_load_n(&my_ops, __ATOMIC_RELAXED);
		n = 1 + (ops - last) / CHAOS_EVERY;
		last = ops;
		for (i = 0; i < n && i < 8; i++)
			chaos_one(&r);
		next = ops + 1 + below(&r, 2 * CHAOS_EVERY);
		end = now_ns() + CHAOS_WAIT;
		while (!stopping() && now_ns() < end &&
		       __atomic_load_n(&my_ops, __ATOMIC_RELAXED) < next)
			usleep(50);
	}
	_exit(0);
}

static pid_t spawn(unsigned int slot, uint64_t gen)
{
	pid_t pid = fork();

	if (pid == 0)
		worker_main(slot, gen);
	if (pid > 0) {
		__atomic_store_n(&sh->pids[slot], pid, __ATOMIC_RELAXED);
		add(&sh->spawned, 1);
	}
	return pid;
}

/*
 * PID 1 of the fuzz's PID namespace: keep NWORKERS workers alive until
 * the target is reached or time is up, then return; the kernel kills
 * whatever is left when we exit.
 */
static int ns_init(int64_t seconds)
{
	uint64_t gen[NWORKERS] = { 0 };
	int64_t deadline = now_ns() + seconds * NSEC, stop_at = 0;
	unsigned int i;
	int status;
	pid_t pid;

	sh->start_ns = now_ns();
	for (i = 0; i < NWORKERS; i++)
		if (spawn(i, gen[i]++) < 0)
			return 1;
	for (;;) {
		if (!stopping() &&
		    (__atomic_load_n(&sh->ops, __ATOMIC_RELAXED) >= sh->target ||
		     now_ns() > deadline)) {
			__atomic_store_n(&sh->stop, 1, __ATOMIC_RELAXED);
			sh->end_ns = stop_at = now_ns();
		}
		if (stop_at && now_ns() - stop_at > 3 * NSEC)
			break;
		pid = waitpid(-1, &status, WNOHANG);
		if (pid < 0 && errno == ECHILD)
			break;
		if (pid <= 0) {
			usleep(2000);
			continue;
		}
		for (i = 0; i < NWORKERS; i++)
			if (sh->pids[i] == pid)
				break;
		if (i == NWORKERS)
			continue;		/* a forked child, reparented */
		if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
			add(&sh->killed, 1);
		else if (!WIFEXITED(status) || WEXITSTATUS(status))
			violation("worker %u ended with status %#x", i, status);
		__atomic_store_n(&sh->pids[i], 0, __ATOMIC_RELAXED);
		if (!stopping() && spawn(i, gen[i]++) < 0)
			return 1;
	}
	if (!sh->end_ns)
		sh->end_ns = now_ns();
	return 0;
}

/* ---------------------------------------------------------------- */
/* The test                                                          */

/* Receive and close every descriptor still in flight in the mailboxes. */
static uint64_t drain_boxes(void)
{
	uint64_t n = 0;
	unsigned int i;
	int fd;

	for (i = 0; i < NWORKERS; i++) {
		while ((fd = recv_any_fd(box[i][0], 0)) != -2) {
			if (fd >= 0) {
				close(fd);
				n++;
			}
		}
		close(box[i][0]);
		close(box[i][1]);
	}
	return n;
}

/*
 * In a mount namespace of our own: a tmpfs with NMNT mount points and
 * NBIND files, made read-only, and the fuzz's wsemfs on two of the points.
 * 0, or -1 and errno.
 */
static int make_mounts(void)
{
	unsigned int i;
	int fd;

	if (unshare(CLONE_NEWNS) ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return -1;
	snprintf(sh->top, sizeof(sh->top), "/tmp/wsem-fuzz.%d", getpid());
	if (mkdir(sh->top, 0755) ||
	    mount("tmpfs", sh->top, "tmpfs", 0, "size=64k,mode=0755"))
		return -1;
	for (i = 0; i < NMNT; i++) {
		snprintf(sh->mnt[i], sizeof(sh->mnt[i]), "%s/m%u", sh->top, i);
		if (mkdir(sh->mnt[i], 0755))
			return -1;
	}
	for (i = 0; i < NBIND; i++) {
		snprintf(sh->bind[i], sizeof(sh->bind[i]), "%s/b%u", sh->top,
			 i);
		fd = open(sh->bind[i], O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0 || close(fd))
			return -1;
	}
	if (mount(NULL, sh->top, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY,
		  NULL))
		return -1;
	for (i = 0; i < 2; i++)
		if (mount("wsem", sh->mnt[i], "wsem", 0, NULL))
			return -1;
	return 0;
}

FIXTURE(fuzz) {
	/* handles on the base semaphores, kept by the test, never fuzzed */
	int witness[NBASE];
	/* spin_ns before the test (the chaos threads change it), or "" */
	char spin[32];
	/* setup done: false after a SKIP, so body and teardown do nothing */
	bool ready;
};

FIXTURE_SETUP(fuzz)
{
	unsigned int i;
	int fd;

	for (i = 0; i < NBASE; i++)
		self->witness[i] = -1;
	if (access("/dev/wsem", F_OK))
		SKIP(return, "/dev/wsem is missing (module not loaded)");
	if (geteuid() != 0)
		SKIP(return, "needs root (namespaces, a second user)");
	if (read_file(SPIN_PARAM, self->spin, sizeof(self->spin)))
		self->spin[0] = 0;
	/* Our own IPC namespace: every name here is the fuzz's. */
	ASSERT_EQ(0, unshare(CLONE_NEWIPC));
	umask(0);
	for (i = 0; i < NBASE; i++) {
		self->witness[i] = wsem_open(base[i].name,
					     O_CREAT | O_EXCL | O_CLOEXEC,
					     base[i].mode, base[i].capacity);
		ASSERT_LE(0, self->witness[i]) {
			TH_LOG("create %s: %s", base[i].name, strerror(errno));
		}
	}
	/* The jobserver's own, which the ioctls leave alone (LIST checks it). */
	fd = wsem_open(JS_NAME, O_CREAT | O_EXCL | O_CLOEXEC, 0666, JS_CAP);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, close(fd));
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sh);
	ASSERT_EQ(0, make_mounts()) {
		TH_LOG("wsemfs mount points: %s", strerror(errno));
	}
	for (i = 0; i < NWORKERS; i++)
		ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0,
					box[i]));
	self->ready = true;
}

FIXTURE_TEARDOWN(fuzz)
{
	unsigned int i;

	if (sh != MAP_FAILED && sh && sh->top[0]) {
		EXPECT_EQ(0, umount2(sh->top, MNT_DETACH));
		EXPECT_EQ(0, rmdir(sh->top));
	}

	for (i = 0; i < NBASE; i++)
		if (self->witness[i] >= 0)
			EXPECT_EQ(0, close(self->witness[i]));
	if (self->spin[0])
		EXPECT_EQ(0, write_file(SPIN_PARAM, self->spin));
	if (!access(VIEW_BATCH, F_OK))
		EXPECT_EQ(0, write_file(VIEW_BATCH, "0"));
}

TEST_F_TIMEOUT(fuzz, ioctls, 1800)
{
	struct wsem_stat st, list[64];
	uint64_t inflight, secs_cap;
	double secs;
	ssize_t total, i;
	int status;
	pid_t init;

	if (!self->ready)
		return;
	sh->seed = env_u64("WSEM_FUZZ_SEED", 0);
	if (!sh->seed)
		sh->seed = (uint64_t)now_ns() ^ ((uint64_t)getpid() << 32);
	sh->target = env_u64("WSEM_FUZZ_OPS", DEF_OPS);
	secs_cap = env_u64("WSEM_FUZZ_SECONDS", DEF_SECONDS);
	TH_LOG("seed %#llx (WSEM_FUZZ_SEED=%#llx replays its choices), "
	       "%llu requests, at most %llu s",
	       (unsigned long long)sh->seed, (unsigned long long)sh->seed,
	       (unsigned long long)sh->target, (unsigned long long)secs_cap);

	/* The fuzz processes live in a PID namespace of their own. */
	ASSERT_EQ(0, unshare(CLONE_NEWPID));
	init = fork();
	ASSERT_LE(0, init);
	if (init == 0)
		_exit(ns_init(secs_cap));
	ASSERT_EQ(init, waitpid(init, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status)) {
		TH_LOG("the fuzz's init ended with status %#x", status);
	}

	/* Every fuzz process is gone; weight in flight goes with this. */
	inflight = drain_boxes();

	secs = (sh->end_ns - sh->start_ns) / 1e9;
	TH_LOG("%llu requests in %.1f s: %.0f/s (%llu succeeded: "
	       "%llu bound by OPEN, %llu granted, %llu interrupted)",
	       (unsigned long long)sh->ops, secs, sh->ops / secs,
	       (unsigned long long)sh->ok, (unsigned long long)sh->created,
	       (unsigned long long)sh->granted,
	       (unsigned long long)sh->interrupted);
	TH_LOG("%llu asynchronous requests queued, %llu ended or cancelled, "
	       "%llu idle waits found it idle",
	       (unsigned long long)sh->queued, (unsigned long long)sh->ended,
	       (unsigned long long)sh->idle);
	TH_LOG("%llu workers started, %llu SIGKILLed (%llu kills sent), "
	       "%llu forked children, %llu descriptors passed "
	       "(%llu received, %llu left in flight), %llu other actions",
	       (unsigned long long)sh->spawned,
	       (unsigned long long)sh->killed, (unsigned long long)sh->kills,
	       (unsigned long long)sh->forks, (unsigned long long)sh->passed,
	       (unsigned long long)sh->received,
	       (unsigned long long)inflight, (unsigned long long)sh->chaos);
	for (i = 0; i < (ssize_t)sh->nnotes && i < MAX_NOTES; i++)
		TH_LOG("violation: %s", sh->notes[i]);
	EXPECT_EQ(0, sh->violations) {
		TH_LOG("replay with WSEM_FUZZ_SEED=%#llx",
		       (unsigned long long)sh->seed);
	}
	/*
	 * The depth asked for is a goal, not a check of speed: a loaded
	 * machine makes fewer requests in the time (4,000 a second instead
	 * of 16,000 on 6.1 while a new machine built its caches).  Falling
	 * short is said; only a fuzzer that made less than a tenth of its
	 * target in its time, one that stalled, fails.
	 */
	if (sh->ops < sh->target)
		TH_LOG("%llu of %llu requests in %llu s: the machine was slow",
		       (unsigned long long)sh->ops,
		       (unsigned long long)sh->target,
		       (unsigned long long)secs_cap);
	EXPECT_LE(sh->target / 10, sh->ops) {
		TH_LOG("less than a tenth of the requests: the fuzzer stalled");
	}
	EXPECT_LT(0, sh->killed);
	/* The read-only checks ran (about 1 in 400 requests). */
	TH_LOG("%llu read-only handles bound and checked",
	       (unsigned long long)sh->readonly);
	EXPECT_LT(0, sh->readonly);
	TH_LOG("%llu pools opened by forked children",
	       (unsigned long long)sh->pools);
	TH_LOG("%llu handles mapped at random, %llu of them made a mapping",
	       (unsigned long long)sh->maps,
	       (unsigned long long)sh->maps_made);
	EXPECT_LT(0, sh->maps_made);
	TH_LOG("wsemfs: %llu calls, %llu handles opened by path, %llu texts "
	       "read, %llu mounts, %llu unmounts, %llu namespaces died",
	       (unsigned long long)sh->fs_calls,
	       (unsigned long long)sh->fs_opened,
	       (unsigned long long)sh->fs_read, (unsigned long long)sh->mounts,
	       (unsigned long long)sh->umounts,
	       (unsigned long long)sh->ns_deaths);
	TH_LOG("jobserver: %llu endpoints opened, %llu tokens read; %llu left "
	       "in epoll sets, %llu shared-table children, %llu tokens read "
	       "through io_uring (%llu reads refused, no descriptor left)",
	       (unsigned long long)sh->js_opened,
	       (unsigned long long)sh->js_tokens,
	       (unsigned long long)sh->js_epoll,
	       (unsigned long long)sh->js_shared,
	       (unsigned long long)sh->js_uring,
	       (unsigned long long)sh->js_nodesc);
	/* No minimum: a short run (check-debug) may see few of these. */
	TH_LOG("loans: %llu lends, %llu withdrawn by LEND 0 (%llu of "
	       "them with END_HOLDERS, %llu with a deadline), %llu opens "
	       "with LOANS; %llu lender rounds (%llu lenders SIGKILLed, "
	       "%llu POLLRDBANDs as the model said, %llu sleeping pollers "
	       "woken by one, after %.1f ms at most; %llu holders' kill "
	       "groups ended with a loan of END_HOLDERS, both reaped "
	       "after %.1f ms at most)",
	       (unsigned long long)sh->lends,
	       (unsigned long long)sh->withdrawn,
	       (unsigned long long)sh->end_lends,
	       (unsigned long long)sh->deadline_lends,
	       (unsigned long long)sh->loans_opened,
	       (unsigned long long)sh->rounds,
	       (unsigned long long)sh->round_kills,
	       (unsigned long long)sh->rdband,
	       (unsigned long long)sh->woken, sh->woken_max_ns / 1e6,
	       (unsigned long long)sh->kill_groups,
	       sh->kill_group_max_ns / 1e6);
	TH_LOG("trees: %llu children made by OPEN, %llu ELOOPs, %llu chains "
	       "%u deep checked, %llu gangs granted (%llu entries); "
	       "%lld queues lost their first to a shrink "
	       "(test_regrants, -1: not a test build)",
	       (unsigned long long)sh->children,
	       (unsigned long long)sh->eloops,
	       (unsigned long long)sh->chains, WSEM_DEPTH_MAX,
	       (unsigned long long)sh->gangs,
	       (unsigned long long)sh->gang_parts,
	       read_num("/sys/module/wsem/parameters/test_regrants"));
	EXPECT_LT(0, sh->fs_opened);
	EXPECT_LT(0, sh->fs_read);
	EXPECT_LT(0, sh->js_opened);
	EXPECT_LT(0, sh->mounts);
	EXPECT_LT(0, sh->umounts);
	EXPECT_LT(0, sh->ns_deaths);

	/* Nothing held and nobody waiting, wherever we can look. */
	total = wsem_list(list, 64);
	ASSERT_LE(0, total);
	EXPECT_GE(64, total);
	for (i = 0; i < total && i < 64; i++) {
		char nb[NOTE_LEN];

		EXPECT_EQ(0, list[i].used) {
			TH_LOG("\"%s\" has %llu used",
			       show(list[i].name, nb, sizeof(nb)),
			       (unsigned long long)list[i].used);
		}
		EXPECT_EQ(0, list[i].waiters);
		EXPECT_EQ(0, list[i].queued_weight);
		EXPECT_EQ(list[i].capacity, list[i].available);
		/* Every lending handle is gone: so is every loan. */
		EXPECT_EQ(0, list[i].lent) {
			TH_LOG("\"%s\" has %llu lent, capacity %llu",
			       show(list[i].name, nb, sizeof(nb)),
			       (unsigned long long)list[i].lent,
			       (unsigned long long)list[i].capacity);
		}
		EXPECT_EQ(0, list[i].lent_here);
		/* Children too: a named one is listed, at most 8 deep. */
		EXPECT_GE(WSEM_DEPTH_MAX, list[i].depth);
		EXPECT_EQ(!list[i].depth, !list[i].parent_id);
		if (!list[i].ceiling)
			EXPECT_LT(0, list[i].capacity);
	}
	for (i = 0; i < NBASE; i++) {
		memset(&st, 0, sizeof(st));
		ASSERT_EQ(0, wsem_stat(self->witness[i], &st));
		EXPECT_EQ(0, st.used) {
			TH_LOG("%s has %llu used", base[i].name,
			       (unsigned long long)st.used);
		}
		EXPECT_EQ(0, st.waiters);
		EXPECT_EQ(0, st.queued_weight);
		/* No loan left: the capacity is the own one, not 0. */
		EXPECT_EQ(0, st.lent) {
			TH_LOG("%s has %llu lent, capacity %llu", base[i].name,
			       (unsigned long long)st.lent,
			       (unsigned long long)st.capacity);
		}
		EXPECT_EQ(0, st.lent_here);
		EXPECT_EQ(0, st.ceiling);
		EXPECT_LT(0, st.capacity);
		/* All of it can be taken, at once, by a newcomer. */
		EXPECT_EQ(0, wsem_tryacquire(self->witness[i], st.capacity));
		EXPECT_EQ(0, wsem_release(self->witness[i], st.capacity));
	}
}

/*
 * Found by the fuzzer: the kernel's isalnum() takes Latin-1 letters
 * (0xc0..0xff but 0xd7 and 0xf7), so names outside [A-Za-z0-9._-] were
 * created.  Every byte outside the set must be EINVAL, on create and on
 * unlink.
 */
TEST(names_only_portable_bytes)
{
	struct wsem_unlink_args u = { .size = sizeof(u) };
	unsigned int c, bad = 0, bad_unlink = 0;
	char name[8];
	int fd;

	if (access("/dev/wsem", F_OK))
		SKIP(return, "/dev/wsem is missing (module not loaded)");
	ASSERT_EQ(0, unshare(CLONE_NEWIPC));
	fd = open("/dev/wsem", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	for (c = 1; c < 256; c++) {
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-')
			continue;
		snprintf(name, sizeof(name), "n%c", c);
		errno = 0;
		if (wsem_open(name, O_CREAT | O_CLOEXEC, 0600, 1) >= 0 ||
		    errno != EINVAL) {
			if (bad++ < 4)
				TH_LOG("name \"n\\x%02x\": not EINVAL (%s)", c,
				       strerror(errno));
		}
		memcpy(u.name, name, sizeof(name));
		errno = 0;
		if (ioctl(fd, WSEM_IOC_UNLINK, &u) >= 0 || errno != EINVAL)
			bad_unlink++;
	}
	EXPECT_EQ(0, bad) {
		TH_LOG("%u bytes outside [A-Za-z0-9._-] were accepted", bad);
	}
	EXPECT_EQ(0, bad_unlink) {
		TH_LOG("unlink took %u of them", bad_unlink);
	}
	EXPECT_EQ(0, wsem_list(NULL, 0));
	EXPECT_EQ(0, close(fd));
}

TEST_HARNESS_MAIN
