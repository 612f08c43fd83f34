// SPDX-License-Identifier: GPL-2.0
/*
 * The Order bullet of "Limits nest", checked on random trees: a checker
 * replays every grant the kernel makes against what the bullet allows.
 *
 * One process drives a random tree (a root and up to NODES - 1 children,
 * WSEM_DEPTH_MAX levels at most, random capacities) with asynchronous
 * requests, one per handle, submitted one after the other, so that the
 * order of submission is the tree's arrival order.  Between its steps it
 * submits, releases, cancels, kills (the close of a handle that holds or
 * waits: the path a process's death takes) and resizes a semaphore up or
 * down; after each step it collects every request that ended
 * (wsem_acquire_result()) and checks the state the step left:
 *
 *  - used: each semaphore's, as stat says it, is the sum of the weights
 *    held on it and below it (nothing leaks, nothing is made up), and a
 *    grant never takes a semaphore of its line past its capacity;
 *  - order: a request granted in the step was held up by no earlier one
 *    still waiting.  A waiter W holds up the semaphore it asked for, and
 *    an ancestor A of it once it passes every semaphore of its line below
 *    A: it fits there, and no earlier waiter holds that one up (a request
 *    waiting behind an earlier one on its own child holds up nothing
 *    above it).  Looked at in the state the step left;
 *  - nothing starves: no request still waiting could be granted now (it
 *    fits its whole line, and no earlier waiter holds up any of it): a
 *    child at its own limit never stops its siblings;
 *  - a waiter failed with EINVAL only when a shrink made it too heavy for
 *    some semaphore of its line, and every such one failed.
 *
 * Gangs are not replayed here (they have no asynchronous form); their
 * strict order across trees is gang_test's.  WSEM_ORDER_SEED=N replays a
 * run; WSEM_ORDER_TREES (120, fewer where 20 s pass first: the debug
 * kernel) and WSEM_ORDER_STEPS (400) size it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <wsem.h>

#include "kselftest_harness.h"
#include "util.h"

#define NODES		7
#define SLOTS		24
#define MAX_CAP		8

enum slot_state { IDLE, WAITING, HELD };

struct node {
	int fd;
	int parent;		/* -1 for the root */
	uint64_t cap;
};

struct slot {
	int fd;			/* a handle on nodes[node]'s semaphore */
	int node;
	enum slot_state state;
	uint64_t weight;
	uint64_t ticket;	/* arrival order, while WAITING or HELD */
};

struct tree {
	struct __test_metadata *meta;
	struct rng rng;
	struct node nodes[NODES];
	int nr_nodes;
	struct slot slots[SLOTS];
	uint64_t next_ticket;
	bool granted[SLOTS];	/* in this step */
	unsigned long grants, waits, failed, violations;
};

/* Is @anc on the line of node @n (@n itself or an ancestor)? */
static bool on_line(const struct tree *t, int n, int anc)
{
	for (; n >= 0; n = t->nodes[n].parent)
		if (n == anc)
			return true;
	return false;
}

/* The weight held on node @n: its own holders' and those below it. */
static uint64_t used_on(const struct tree *t, int n)
{
	uint64_t used = 0;
	int i;

	for (i = 0; i < SLOTS; i++)
		if (t->slots[i].state == HELD && on_line(t, t->slots[i].node, n))
			used += t->slots[i].weight;
	return used;
}

static bool fits(const struct tree *t, int n, uint64_t w)
{
	uint64_t used = used_on(t, n);

	return used <= t->nodes[n].cap && w <= t->nodes[n].cap - used;
}

/* The smallest capacity on node @n's line: the heaviest valid request. */
static uint64_t line_cap(const struct tree *t, int n)
{
	uint64_t cap = UINT64_MAX;

	for (; n >= 0; n = t->nodes[n].parent)
		if (t->nodes[n].cap < cap)
			cap = t->nodes[n].cap;
	return cap;
}

static const struct slot *held_at(const struct tree *t, int a,
				  uint64_t ticket);

/*
 * Does waiter @w hold up node @a (on its line)?  The node it asked for,
 * always; an ancestor, once it passes every node of its line below it:
 * it fits there, and no earlier waiter holds that node up (one that waits
 * behind an earlier request on its own child holds up nothing above).
 */
static bool holds_up(const struct tree *t, const struct slot *w, int a)
{
	int n;

	for (n = w->node; n != a; n = t->nodes[n].parent)
		if (!fits(t, n, w->weight) || held_at(t, n, w->ticket))
			return false;
	return true;
}

/* A waiter earlier than @ticket that holds up node @a, or NULL. */
static const struct slot *held_at(const struct tree *t, int a,
				  uint64_t ticket)
{
	const struct slot *w;
	int i;

	for (i = 0; i < SLOTS; i++) {
		w = &t->slots[i];
		if (w->state == WAITING && w->ticket < ticket &&
		    on_line(t, w->node, a) && holds_up(t, w, a))
			return w;
	}
	return NULL;
}

/* An earlier waiter than @s that holds up a node of @s's line, or NULL. */
static const struct slot *held_up_by(const struct tree *t,
				     const struct slot *s)
{
	const struct slot *w;
	int a;

	for (a = s->node; a >= 0; a = t->nodes[a].parent) {
		w = held_at(t, a, s->ticket);
		if (w)
			return w;
	}
	return NULL;
}

/* Could @s be granted now: it fits its whole line. */
static bool fits_line(const struct tree *t, const struct slot *s)
{
	int n;

	for (n = s->node; n >= 0; n = t->nodes[n].parent)
		if (!fits(t, n, s->weight))
			return false;
	return true;
}

#define violation(t, fmt, ...) do {					\
	struct __test_metadata *_metadata = (t)->meta;			\
	(t)->violations++;						\
	TH_LOG("seed %llu: " fmt, (unsigned long long)seed, ##__VA_ARGS__); \
	EXPECT_TRUE(false);						\
} while (0)

static uint64_t seed;
static long trace_tree = -1;	/* WSEM_ORDER_TRACE=K: print tree K's steps */
static long cur_tree;

/* Collect what the step ended; then check the state it left. */
static void check_step(struct tree *t, const char *step)
{
	const struct slot *w;
	struct wsem_stat st;
	struct slot *s;
	int i, n, r;

	memset(t->granted, 0, sizeof(t->granted));
	if (cur_tree == trace_tree)
		fprintf(stderr, "# step: %s\n", step);
	for (i = 0; i < SLOTS; i++) {
		s = &t->slots[i];
		if (s->state != WAITING)
			continue;
		r = wsem_acquire_result(s->fd);
		if (cur_tree == trace_tree && (!r || errno != EINPROGRESS))
			fprintf(stderr, "#   slot %d (%llu on %d, t%llu): %s\n",
				i, (unsigned long long)s->weight, s->node,
				(unsigned long long)s->ticket,
				r ? strerror(errno) : "granted");
		if (!r) {
			s->state = HELD;
			t->granted[i] = true;
			t->grants++;
		} else if (errno == EINVAL) {
			if (s->weight <= line_cap(t, s->node))
				violation(t, "%s: slot %d (%llu on node %d) "
					  "failed but fits its line's capacity",
					  step, i,
					  (unsigned long long)s->weight,
					  s->node);
			s->state = IDLE;
			t->failed++;
		} else if (errno != EINPROGRESS) {
			violation(t, "%s: slot %d: result %s", step, i,
				  strerror(errno));
			s->state = IDLE;
		} else if (s->weight > line_cap(t, s->node)) {
			violation(t, "%s: slot %d (%llu on node %d) waits "
				  "though too heavy for its line", step, i,
				  (unsigned long long)s->weight, s->node);
		}
	}
	for (n = 0; n < t->nr_nodes; n++) {
		if (wsem_stat(t->nodes[n].fd, &st)) {
			violation(t, "%s: stat of node %d: %s", step, n,
				  strerror(errno));
			continue;
		}
		if (st.used != used_on(t, n))
			violation(t, "%s: node %d: used %llu, held %llu", step,
				  n, (unsigned long long)st.used,
				  (unsigned long long)used_on(t, n));
	}
	for (i = 0; i < SLOTS; i++) {
		s = &t->slots[i];
		if (t->granted[i]) {
			for (n = s->node; n >= 0; n = t->nodes[n].parent)
				if (used_on(t, n) > t->nodes[n].cap)
					violation(t, "%s: slot %d's grant took "
						  "node %d past its capacity",
						  step, i, n);
			w = held_up_by(t, s);
			if (w)
				violation(t, "%s: slot %d (%llu on node %d, "
					  "ticket %llu) granted before slot "
					  "%ld (%llu on node %d, ticket %llu)",
					  step, i,
					  (unsigned long long)s->weight,
					  s->node,
					  (unsigned long long)s->ticket,
					  (long)(w - t->slots),
					  (unsigned long long)w->weight,
					  w->node,
					  (unsigned long long)w->ticket);
		} else if (s->state == WAITING && fits_line(t, s) &&
			   !held_up_by(t, s)) {
			violation(t, "%s: slot %d (%llu on node %d) waits "
				  "though nothing holds it up", step, i,
				  (unsigned long long)s->weight, s->node);
		}
	}
}

/* A new handle for slot @s on its node (after a kill, or at the start). */
static int slot_open(struct tree *t, struct slot *s, int node)
{
	s->node = node;
	s->state = IDLE;
	s->fd = wsem_reopen(t->nodes[node].fd, O_CLOEXEC);
	return s->fd;
}

static void step_submit(struct tree *t, struct slot *s)
{
	uint64_t max = line_cap(t, s->node);
	char what[64];

	s->weight = 1 + below(&t->rng, max < 4 ? max : 4);
	if (s->weight > max)
		s->weight = max;
	s->ticket = t->next_ticket++;
	if (cur_tree == trace_tree)
		fprintf(stderr, "# submit slot %ld: %llu on %d, t%llu\n",
			(long)(s - t->slots), (unsigned long long)s->weight,
			s->node, (unsigned long long)s->ticket);
	if (!wsem_acquire_async(s->fd, s->weight)) {
		if (cur_tree == trace_tree)
			fprintf(stderr, "#   granted at once\n");
		s->state = HELD;
		memset(t->granted, 0, sizeof(t->granted));
		t->granted[s - t->slots] = true;
		t->grants++;
		/* Granted at once: nobody earlier may hold it up. */
		if (held_up_by(t, s))
			violation(t, "submit: slot %ld (%llu on node %d) "
				  "granted at once past an earlier waiter",
				  (long)(s - t->slots),
				  (unsigned long long)s->weight, s->node);
		return;
	}
	if (errno != EINPROGRESS) {
		violation(t, "submit of %llu on node %d: %s",
			  (unsigned long long)s->weight, s->node,
			  strerror(errno));
		return;
	}
	s->state = WAITING;
	t->waits++;
	snprintf(what, sizeof(what), "submit %llu on node %d",
		 (unsigned long long)s->weight, s->node);
	check_step(t, what);
}

/* Slot @s holds and waits for nothing now (@how): check the step. */
static void slot_ended(struct tree *t, struct slot *s, const char *how)
{
	char what[80];

	snprintf(what, sizeof(what), "%s slot %ld (%llu on %d)", how,
		 (long)(s - t->slots), (unsigned long long)s->weight, s->node);
	s->state = IDLE;
	check_step(t, what);
}

static void step(struct tree *t)
{
	struct slot *s = &t->slots[below(&t->rng, SLOTS)];
	int n = below(&t->rng, t->nr_nodes), roll = below(&t->rng, 100);
	uint64_t cap;
	char what[64];

	if (roll < 10) {
		/* Resize: down to half, up to twice, never 0. */
		cap = 1 + below(&t->rng, MAX_CAP);
		if (wsem_set_capacity(t->nodes[n].fd, cap)) {
			violation(t, "resize of node %d to %llu: %s", n,
				  (unsigned long long)cap, strerror(errno));
			return;
		}
		t->nodes[n].cap = cap;
		snprintf(what, sizeof(what), "resize node %d to %llu", n,
			 (unsigned long long)cap);
		check_step(t, what);
	} else if (roll < 18 && s->state != IDLE) {
		/* Kill: the handle goes with what it holds or waits for. */
		close(s->fd);
		slot_ended(t, s, s->state == HELD ? "kill, holding," :
			   "kill, waiting,");
		if (slot_open(t, s, n) < 0)
			violation(t, "reopen: %s", strerror(errno));
	} else if (s->state == IDLE) {
		if (s->node != n) {
			close(s->fd);
			if (slot_open(t, s, n) < 0) {
				violation(t, "reopen: %s", strerror(errno));
				return;
			}
		}
		step_submit(t, s);
	} else if (s->state == HELD) {
		if (wsem_release(s->fd, s->weight))
			violation(t, "release: %s", strerror(errno));
		slot_ended(t, s, "release");
	} else if (roll < 40) {
		/* EALREADY: granted without the checker seeing it. */
		if (wsem_acquire_cancel(s->fd))
			violation(t, "cancel: %s", strerror(errno));
		slot_ended(t, s, "cancel");
	}
}

/* A random tree: node i's parent is one of 0..i-1, depth 3 at most. */
static int tree_make(struct tree *t)
{
	int depth[NODES] = { 0 }, i, p;

	t->nr_nodes = 2 + below(&t->rng, NODES - 1);
	t->nodes[0].parent = -1;
	t->nodes[0].cap = 2 + below(&t->rng, MAX_CAP - 1);
	t->nodes[0].fd = wsem_open_anon(t->nodes[0].cap, O_CLOEXEC);
	if (t->nodes[0].fd < 0)
		return -1;
	for (i = 1; i < t->nr_nodes; i++) {
		do
			p = below(&t->rng, i);
		while (depth[p] >= 3);
		depth[i] = depth[p] + 1;
		t->nodes[i].parent = p;
		t->nodes[i].cap = 1 + below(&t->rng, MAX_CAP);
		t->nodes[i].fd = wsem_open_child(t->nodes[p].fd, NULL,
						 O_CLOEXEC, 0600,
						 t->nodes[i].cap);
		if (t->nodes[i].fd < 0)
			return -1;
	}
	for (i = 0; cur_tree == trace_tree && i < t->nr_nodes; i++)
		fprintf(stderr, "# node %d: parent %d, capacity %llu\n", i,
			t->nodes[i].parent, (unsigned long long)t->nodes[i].cap);
	for (i = 0; i < SLOTS; i++)
		if (slot_open(t, &t->slots[i], below(&t->rng, t->nr_nodes)) < 0)
			return -1;
	return 0;
}

static void tree_close(struct tree *t)
{
	int i;

	for (i = 0; i < SLOTS; i++)
		close(t->slots[i].fd);
	for (i = t->nr_nodes - 1; i >= 0; i--)
		close(t->nodes[i].fd);
}

/*
 * Random trees, each driven through WSEM_ORDER_STEPS steps: every grant
 * is one the Order bullet allows, nobody who could run waits, and the
 * counts are exact throughout.
 */
TEST(random_trees_keep_the_order)
{
	unsigned long trees = env_u64("WSEM_ORDER_TREES", 120);
	unsigned long steps = env_u64("WSEM_ORDER_STEPS", 400);
	unsigned long grants = 0, waits = 0, failed = 0, k, j;
	uint64_t start = now_ns(), budget = 20000000000ull;
	struct tree t;

	seed = env_u64("WSEM_ORDER_SEED", (uint64_t)now_ns());
	TH_LOG("seed %llu (WSEM_ORDER_SEED replays it, WSEM_ORDER_TRACE=K "
	       "prints tree K's steps)",
	       (unsigned long long)seed);
	trace_tree = (long)env_u64("WSEM_ORDER_TRACE", (uint64_t)-1);
	/* Within the harness's 30 s: a debug kernel runs fewer trees. */
	for (k = 0; k < trees && (k < 10 || now_ns() - start < budget); k++) {
		cur_tree = k;
		memset(&t, 0, sizeof(t));
		t.meta = _metadata;
		t.rng.s = seed + k;
		ASSERT_EQ(0, tree_make(&t)) TH_LOG("tree %lu: %s", k,
						   strerror(errno));
		for (j = 0; j < steps && !t.violations; j++)
			step(&t);
		grants += t.grants;
		waits += t.waits;
		failed += t.failed;
		tree_close(&t);
		if (t.violations)
			TH_LOG("tree %lu (%d nodes): stopped at step %lu", k,
			       t.nr_nodes, j);
	}
	TH_LOG("%lu trees of %lu steps: %lu grants, %lu requests waited, "
	       "%lu failed by a shrink", k, steps, grants, waits, failed);
	/* The checker saw the cases it is for. */
	EXPECT_LT(100, waits);
	EXPECT_LT(0, failed);
}

TEST_HARNESS_MAIN
