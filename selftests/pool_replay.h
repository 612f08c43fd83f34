/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The pool's replayed run, shared by pool_test (libwsem's pool, threads
 * of forked processes) and pool_replay (the bindings' pools, Go and Python
 * processes it starts): the log's format, the plain waiters that ask for
 * the whole capacity, and the checker that replays the log.
 *
 * The log is a sequence of struct entry in one global order, that of the
 * steps: each process notes a step before a call (START), after it
 * returned (DONE, QUEUED, GRANT), before a release (REL); the process
 * that SIGKILLs a pooled process notes KILL first.  An entry of kind NONE
 * (a slot taken and not filled, or a failed call) is passed over.
 */
#ifndef WSEM_SELFTEST_POOL_REPLAY_H
#define WSEM_SELFTEST_POOL_REPLAY_H

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <wsem.h>

#include "util.h"

enum { NONE, START, DONE, QUEUED, GRANT, REL, KILL };

/* One step: 16 bytes, host byte order, no padding. */
struct entry {
	uint32_t kind;
	uint32_t who;		/* process generation << 8 | thread */
	uint64_t weight;	/* of the acquire or release; 0 for KILL */
};

/* Plain waiters are who (REPLAY_PLAIN + i) << 8; pooled ones below. */
#define REPLAY_PLAIN	1000

/*
 * A plain process: requests of the whole @cap, queued asynchronously
 * (QUEUED once the call says so, GRANT once the result does), and small
 * blocking ones between them, on a handle of its own on @fd's semaphore,
 * until @stopping says so.  Exits 0, or 4 on any failed call.
 */
static inline void replay_plain(int fd, uint32_t who, uint64_t seed,
				uint64_t cap,
				void (*note)(uint32_t, uint32_t, uint64_t),
				bool (*stopping)(void))
{
	struct rng r = { seed };
	int h = wsem_reopen(fd, 0), ret;

	while (h >= 0 && !stopping()) {
		uint64_t w = chance(&r, 60) ? cap : 1 + below(&r, cap);
		struct pollfd p = { .fd = h, .events = POLLIN };

		note(START, who, w);
		if (w < cap) {
			if (wsem_acquire(h, w))
				_exit(4);
			note(DONE, who, w);
		} else {
			ret = wsem_acquire_async(h, w);
			if (ret && errno != EINPROGRESS)
				_exit(4);
			if (ret) {
				note(QUEUED, who, w);
				while (poll(&p, 1, 1000) != 1)
					;
				if (wsem_acquire_result(h))
					_exit(4);
			}
			note(GRANT, who, w);
		}
		usleep(below(&r, 2000));
		note(REL, who, w);
		if (wsem_release(h, w))
			_exit(4);
		usleep(below(&r, 5000));
	}
	_exit(h < 0 ? 4 : 0);
}

/* What the replay found. */
struct replay {
	uint64_t entries, ops, checked, ahead_max;
	uint64_t over, overtaken;
	int64_t first_bad;
};

#define WHO_MAX		(1 << 18)
#define WINDOWS_MAX	(1 << 16)

/* A full request's wait: from its QUEUED to its GRANT. */
struct window {
	int64_t q, g;
	uint64_t ahead;
};

/* Per who: the weight it holds now, where its last acquire started. */
struct who_state {
	uint64_t held;
	int64_t start, queued;
	bool dead;
};

static struct who_state ws[WHO_MAX];
static struct window win[WINDOWS_MAX];

/*
 * Pass 1: the weight held never exceeds @cap; the windows, by QUEUED.  A
 * KILL of generation g ends what its @threads threads held.
 */
static uint64_t replay_holds(struct replay *out, const struct entry *log,
			     uint64_t n, uint64_t cap, unsigned int threads)
{
	uint64_t held = 0, nwin = 0, i, j;

	for (i = 0; i < WHO_MAX; i++)
		ws[i] = (struct who_state){ .start = -1, .queued = -1 };
	for (i = 0; i < n; i++) {
		const struct entry *e = &log[i];
		struct who_state *s = &ws[e->who % WHO_MAX];

		if (e->kind == KILL) {
			for (j = 0; j < threads; j++) {
				struct who_state *k =
					&ws[(e->who << 8 | j) % WHO_MAX];

				held -= k->held;
				k->held = 0;
				k->dead = true;
			}
			continue;
		}
		if (s->dead)
			continue;
		if (e->kind == QUEUED)
			s->queued = i;
		if (e->kind == GRANT && s->queued >= 0 && nwin < WINDOWS_MAX) {
			win[nwin++] = (struct window){ s->queued, i, 0 };
			s->queued = -1;
		}
		if (e->kind == DONE || e->kind == GRANT) {
			s->held += e->weight;
			held += e->weight;
			if (held > cap && !out->over++)
				out->first_bad = i;
			out->ops++;
		}
		if (e->kind == REL && s->held >= e->weight) {
			s->held -= e->weight;
			held -= e->weight;
		}
	}
	return nwin;
}

static int by_q(const void *a, const void *b)
{
	const struct window *x = a, *y = b;

	return (x->q > y->q) - (x->q < y->q);
}

/*
 * Pass 2: each grant inside a window (after its QUEUED, before its GRANT)
 * was of an acquire that started before the QUEUED (one under way, that
 * may pass it) or after it (overtaken: it came later and went first).
 */
static void replay_order(struct replay *out, const struct entry *log,
			 uint64_t n, uint64_t nwin)
{
	uint64_t i, j, first = 0;

	qsort(win, nwin, sizeof(win[0]), by_q);
	for (i = 0; i < WHO_MAX; i++)
		ws[i].start = -1;
	for (i = 0; i < n; i++) {
		const struct entry *e = &log[i];
		int64_t start;

		if (e->kind == START)
			ws[e->who % WHO_MAX].start = i;
		if (e->kind != DONE && e->kind != GRANT)
			continue;
		start = ws[e->who % WHO_MAX].start;
		while (first < nwin && win[first].g <= (int64_t)i)
			first++;
		for (j = first; j < nwin && win[j].q < (int64_t)i; j++) {
			if (win[j].g <= (int64_t)i || start < 0)
				continue;
			if (start > win[j].q) {
				if (!out->overtaken++ && out->first_bad < 0)
					out->first_bad = i;
			} else {
				win[j].ahead++;
			}
		}
	}
	for (j = 0; j < nwin; j++)
		if (win[j].ahead > out->ahead_max)
			out->ahead_max = win[j].ahead;
	out->checked = nwin;
}

/*
 * Replay the @n entries of @log: the weight held never exceeds @cap (a
 * hold counts from after its grant to before its release or kill: within
 * the real one); and no acquire that started after a full request queued
 * was granted before that request's GRANT: the request needed the whole
 * capacity, so nothing could be granted between its grant and its release
 * after it.  @threads: the threads of a pooled process (for KILL).
 */
static inline void replay(struct replay *out, const struct entry *log,
			  uint64_t n, uint64_t cap, unsigned int threads)
{
	memset(out, 0, sizeof(*out));
	out->first_bad = -1;
	out->entries = n;
	replay_order(out, log, n, replay_holds(out, log, n, cap, threads));
}

#endif /* WSEM_SELFTEST_POOL_REPLAY_H */
