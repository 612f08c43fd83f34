/* SPDX-License-Identifier: GPL-2.0 */
/*
 * wsem-bench: wsem next to the semaphores Linux already has, measured side
 * by side in one run.
 *
 * A "peer" is one kind of semaphore behind five calls (peers.c); a
 * scenario (s_*.c) drives every peer the same way and reports through
 * report.c, which writes the table, the JSON and the plot data.  Times are
 * CLOCK_MONOTONIC nanoseconds; samples keep a bounded random subset
 * (stats.c) from which medians and 99th percentiles are taken.
 */
#ifndef WSEM_BENCH_H
#define WSEM_BENCH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <semaphore.h>

#define NSEC_PER_SEC	1000000000ULL
#define NSEC_PER_MSEC	1000000ULL

/* Peer capabilities */
#define PEER_WEIGHTS	(1u << 0)	/* acquire(w) is one request */
#define PEER_CAPACITY	(1u << 1)	/* capacity above 1 */
#define PEER_FD_EACH	(1u << 2)	/* one open file per waiter */

/**
 * struct bsem - one semaphore of some peer, in memory shared by the
 * processes of a scenario
 * @capacity: as created
 * @fd: wsem handle or eventfd, inherited by fork
 * @semid: SysV semaphore set
 * @psem: POSIX semaphore (process-shared)
 * @path: flock: the lock file
 */
struct bsem {
	uint64_t capacity;
	int fd;
	int semid;
	sem_t psem;
	char path[64];
};

/**
 * struct bhandle - what one process or thread uses to reach a bsem
 * @sem: the semaphore
 * @fd: its own wsem handle or flock file; else a copy of @sem->fd
 */
struct bhandle {
	struct bsem *sem;
	int fd;
};

/**
 * struct peer - one kind of semaphore
 * @name: short name, used as a JSON key
 * @label: what the table calls it
 * @flags: PEER_*
 * @create: make @s with @capacity units free
 * @attach: make @h usable by the calling process or thread
 * @acquire: take @w units, sleeping as long as needed
 * @release: give back @w units
 * @detach: undo attach
 * @destroy: undo create
 *
 * Every call returns 0 or -1 with errno.  Peers without PEER_WEIGHTS take
 * and give @w units one at a time; flock, which has one slot, maps the full
 * capacity to LOCK_EX and anything less to LOCK_SH.
 */
struct peer {
	const char *name;
	const char *label;
	unsigned int flags;
	int (*create)(struct bsem *s, uint64_t capacity);
	int (*attach)(struct bsem *s, struct bhandle *h);
	int (*acquire)(struct bhandle *h, uint64_t w);
	int (*release)(struct bhandle *h, uint64_t w);
	void (*detach)(struct bhandle *h);
	void (*destroy)(struct bsem *s);
};

extern const struct peer *const peers[];	/* NULL-terminated */
extern const struct peer peer_wsem;
extern const struct peer peer_wsem_before;	/* only where it is loaded */
#define WSEM_BEFORE_DEVICE	"/dev/wsem_before"

/* stats.c */
struct samples {
	uint64_t seen;		/* offered */
	uint32_t n;		/* kept */
	uint32_t cap;
	uint64_t rng;
	uint64_t v[];
};

uint64_t now_ns(void);
void sleep_ns(uint64_t ns);
void busy_for_ns(uint64_t ns);
struct samples *samples_new(uint32_t cap, bool shared);
void samples_add(struct samples *s, uint64_t v);
void samples_merge(struct samples *dst, const struct samples *src);
void samples_free(struct samples *s);
double samples_pct(struct samples *s, double pct);
void *shared_alloc(size_t size);
void shared_free(void *p, size_t size);

/* proc.c: processes, threads and the kernel's view of them */
int spawn(void (*fn)(void *arg, int idx), void *arg, int idx);
int reap(const pid_t *pids, int n, uint64_t timeout_ns);
void futex_wait_for(_Atomic int *word, int val);
void futex_wake_all(_Atomic int *word);
void pin_cpu(int idx);
int batch_sched(void);
int open_task_stat(pid_t pid);
char task_state(int statfd);
void raise_limits(int threads, int files);
uint64_t cpu_ns(pid_t pid);
uint64_t cpu_ns_all(const pid_t *pids, int n);
uint64_t thread_cpu_ns(void);
uint64_t busy_ns(void);
double per_op(uint64_t cpu, uint64_t ops);
int param_read(const char *name, char *buf, size_t len);
int param_set(const char *name, const char *val);
int spin_read(char *buf, size_t len);
int spin_set(const char *val);

/* report.c */
struct options {
	double scale;		/* multiplies every measuring time */
	const char *outdir;
	const char *only;	/* comma-separated scenario names, or NULL */
	bool quiet;
	const char *revision;	/* -r: the git revision measured, or NULL */
	const char *accel;	/* -a: how the CPUs run: tcg, kvm, native */
};

extern struct options opt;

void report_open(const char *outdir);
void report_close(void);
void progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void table(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void plot(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void json_begin(const char *key);
void json_begin_array(const char *key);
void json_end(void);
void json_end_array(void);
void json_str(const char *key, const char *val);
void json_num(const char *key, double val);
void json_int(const char *key, long long val);
void json_bool(const char *key, bool val);
void json_null(const char *key);
void metric(const char *key, const char *label, double val);
uint64_t run_ns(double seconds);
double ratio(double peer, double wsem);

/* The scenarios */
void scenario_uncontended(void);
void scenario_handoff(void);
void scenario_massgrant(void);
void scenario_contention(void);
void scenario_fairness(void);
void scenario_scale(void);
void scenario_memory(void);
void scenario_bigtree(void);
void scenario_shrink(void);
void scenario_namespaces(void);
void scenario_longhold(void);
void scenario_idleherd(void);
void scenario_jobserver(void);
void scenario_nest(void);
void scenario_gang(void);
void scenario_gangfair(void);
void scenario_pool(void);
void scenario_poolwait(void);

#endif /* WSEM_BENCH_H */
