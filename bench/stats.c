// SPDX-License-Identifier: GPL-2.0
/*
 * Clocks and samples.
 *
 * A struct samples keeps at most @cap values: all of them while they fit,
 * then a uniform random subset (reservoir sampling), so a long native run
 * and a short emulated one are summarized the same way.  It may live in
 * shared memory, filled by one process and read by another.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "bench.h"

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

void sleep_ns(uint64_t ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(ns / NSEC_PER_SEC),
		.tv_nsec = (long)(ns % NSEC_PER_SEC),
	};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Busy for @ns on the clock: a hold that keeps its CPU, as work would. */
void busy_for_ns(uint64_t ns)
{
	uint64_t end = now_ns() + ns;

	while (now_ns() < end)
		;
}

void *shared_alloc(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

void shared_free(void *p, size_t size)
{
	if (p)
		munmap(p, size);
}

static size_t samples_size(uint32_t cap)
{
	return sizeof(struct samples) + (size_t)cap * sizeof(uint64_t);
}

struct samples *samples_new(uint32_t cap, bool shared)
{
	struct samples *s;

	s = shared ? shared_alloc(samples_size(cap)) :
		     calloc(1, samples_size(cap));
	if (!s)
		abort();
	s->cap = cap;
	s->rng = 0x9e3779b97f4a7c15ULL ^ (uint64_t)cap;
	return s;
}

void samples_free(struct samples *s)
{
	/* Shared ones are unmapped with their scenario's memory. */
	free(s);
}

static uint64_t xorshift(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

void samples_add(struct samples *s, uint64_t v)
{
	uint64_t i;

	s->seen++;
	if (s->n < s->cap) {
		s->v[s->n++] = v;
		return;
	}
	i = xorshift(&s->rng) % s->seen;
	if (i < s->cap)
		s->v[i] = v;
}

/* Keep @dst a fair subset of both: weight each side by what it saw. */
void samples_merge(struct samples *dst, const struct samples *src)
{
	uint32_t i;

	for (i = 0; i < src->n; i++) {
		uint64_t before = dst->seen;

		samples_add(dst, src->v[i]);
		/* Each kept value stands for seen/n offered ones. */
		dst->seen = before + (src->n ? src->seen / src->n : 1);
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The @pct percentile (0..100), nearest rank; NaN when empty. */
double samples_pct(struct samples *s, double pct)
{
	size_t rank;

	if (!s->n)
		return __builtin_nan("");
	qsort(s->v, s->n, sizeof(s->v[0]), cmp_u64);
	rank = (size_t)(pct / 100.0 * s->n + 0.999999);
	if (rank < 1)
		rank = 1;
	if (rank > s->n)
		rank = s->n;
	return (double)s->v[rank - 1];
}
