// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Acquiring as run and acquire are asked to: the weight (a number, or
 * "all", the whole capacity), at once only (--nonblock), with a timeout,
 * or waiting; and the status of a conflict (-E N).  Also the checks that
 * turn a bare EINVAL into a line saying what the limit is.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli.h"

/* --weight W: 1 or more, or "all"; 0 or a usage exit status. */
static int parse_weight(const char *syn, struct cli_opt *o,
			struct cli_lease *l)
{
	l->weight = 1;
	l->weight_all = false;
	if (!o || !o->seen)
		return 0;
	if (!strcmp(o->value, "all")) {
		l->weight_all = true;
		return 0;
	}
	if (!cli_parse_u64(o->value, &l->weight) || !l->weight)
		return cli_usage(syn, "invalid WEIGHT '%s' (1 .. the capacity, "
				 "or all)", o->value);
	return 0;
}

/* -E N: 0 .. 255; 0 or a usage exit status. */
static int parse_conflict(const char *syn, struct cli_opt *o,
			  struct cli_lease *l)
{
	uint64_t n;

	l->conflict_status = -1;
	if (!o || !o->seen)
		return 0;
	if (!cli_parse_u64(o->value, &n) || n > 255)
		return cli_usage(syn, "invalid exit code '%s'", o->value);
	l->conflict_status = (int)n;
	return 0;
}

/**
 * cli_lease_options() - the acquiring options of a verb, into @l
 * @syn: the verb's synopsis, for usage messages
 * @opts: its options: "weight", "timeout", "nonblock",
 *	"conflict-exit-code"
 * @l: filled in
 *
 * Return: 0 or a usage exit status, after the message.
 */
int cli_lease_options(const char *syn, struct cli_opt *opts,
		      struct cli_lease *l)
{
	struct cli_opt *t = cli_opt(opts, "timeout");
	int ret;

	ret = parse_weight(syn, cli_opt(opts, "weight"), l);
	if (!ret)
		ret = parse_conflict(syn, cli_opt(opts, "conflict-exit-code"), l);
	if (ret)
		return ret;
	l->timeout_ns = -1;
	l->nonblock = cli_opt(opts, "nonblock")->seen;
	l->verbose = cli_opt(opts, "verbose") && cli_opt(opts, "verbose")->seen;
	if (t->seen && !cli_parse_duration(t->value, &l->timeout_ns))
		return cli_usage(syn, "invalid DURATION '%s'", t->value);
	if (t->seen && l->nonblock)
		return cli_usage(syn,
				 "--timeout and --nonblock exclude each other");
	/* A timeout of 0 is a try-acquire, with the same status and line. */
	if (l->timeout_ns == 0) {
		l->nonblock = true;
		l->timeout_ns = -1;
	}
	return 0;
}

/*
 * The acquire failed with EINVAL: say why when the weight is the cause
 * (larger than the capacity, which may have shrunk while we waited, or
 * than the ceiling of a semaphore that takes its capacity from loans).
 */
static int fail_einval(int fd, const char *what, uint64_t weight)
{
	struct wsem_stat st;
	uint64_t limit;
	char msg[96];

	if (wsem_stat(fd, &st))
		return cli_fail_nodev(what, EINVAL);
	limit = st.ceiling ? st.ceiling : st.capacity;
	if (weight <= limit)
		return cli_fail_nodev(what, EINVAL);
	snprintf(msg, sizeof(msg), "weight %" PRIu64 " exceeds %s %" PRIu64,
		 weight, st.ceiling ? "ceiling" : "capacity", limit);
	return cli_fail_msg(what, msg, CLI_EXIT_ERROR);
}

/* A conflict: the line, and -E N's status or @status. */
static int fail_conflict(struct cli_lease *l, const char *msg, int status)
{
	l->conflict = true;
	return cli_fail_msg(l->what, msg, l->conflict_status >= 0 ?
			    l->conflict_status : status);
}

/* Seconds on the monotonic clock. */
static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Wait for the weight as @l says (a timeout, or for ever): 0 or -1. */
static int acquire_waiting(int fd, const struct cli_lease *l)
{
	if (l->timeout_ns >= 0)
		return wsem_acquire_timeout(fd, l->weight, l->timeout_ns);
	return wsem_acquire(fd, l->weight);
}

/*
 * --verbose: what is granted at once is taken silently; otherwise one line
 * says what is ahead ("3 ahead, 8/8 in use": the waiters queued before us,
 * the weight in use and the capacity) and, once granted, one how long it
 * took.  0, or -1 with errno as the acquire left it.
 */
static int acquire_verbose(int fd, const struct cli_lease *l)
{
	struct wsem_stat st;
	double start;
	int ret;

	if (!wsem_tryacquire(fd, l->weight))
		return 0;
	if (errno != EAGAIN)
		return -1;
	if (!wsem_stat(fd, &st))
		fprintf(stderr, "wsem: waiting for %s: %" PRIu64 " ahead, %"
			PRIu64 "/%" PRIu64 " in use\n", l->what,
			(uint64_t)st.waiters, (uint64_t)st.used,
			(uint64_t)st.capacity);
	start = now_s();
	ret = acquire_waiting(fd, l);
	if (!ret)
		fprintf(stderr, "wsem: acquired %s after %.1f s\n", l->what,
			now_s() - start);
	return ret;
}

/**
 * cli_lease_acquire() - acquire through handle @fd as @l says
 * @fd: a bound handle, open for reading and writing
 * @l: what to acquire; "all" is read from @fd's capacity now
 * @status: set to the exit status when it fails
 *
 * A conflict (would block, timed out) and every error print one line;
 * a conflict also sets @l->conflict.  A conflict whose status is 0 (-E 0)
 * is still a failure: nothing is held.
 *
 * Return: true if the handle now holds the weight.
 */
bool cli_lease_acquire(int fd, struct cli_lease *l, int *status)
{
	struct wsem_stat st;
	int ret;

	l->conflict = false;
	if (l->weight_all) {
		if (wsem_stat(fd, &st)) {
			*status = cli_fail_nodev(l->what, errno);
			return false;
		}
		l->weight = st.capacity;
	}
	if (l->nonblock)
		ret = wsem_tryacquire(fd, l->weight);
	else if (l->verbose)
		ret = acquire_verbose(fd, l);
	else
		ret = acquire_waiting(fd, l);
	if (!ret)
		return true;
	if (l->nonblock && errno == EAGAIN)
		*status = fail_conflict(l, "would block", CLI_EXIT_WOULDBLOCK);
	else if (l->timeout_ns >= 0 && errno == ETIMEDOUT)
		*status = fail_conflict(l, "timed out", CLI_EXIT_TIMEDOUT);
	else if (errno == EINVAL)
		*status = fail_einval(fd, l->what, l->weight);
	else if (errno == EBADF)
		*status = cli_fail_msg(l->what, "Bad file descriptor (a handle "
				       "open read-only watches, it cannot "
				       "acquire: open it with exec N<>FILE)",
				       CLI_EXIT_ERROR);
	else
		*status = cli_fail_target(l->what, errno);
	return false;
}

/*
 * The gang failed with EINVAL: name the semaphore whose capacity is below
 * its weight, if one is.
 */
static int fail_einval_many(const struct cli_gang *g)
{
	struct wsem_stat st;
	char msg[96];
	size_t i;

	for (i = 0; i < g->n; i++) {
		if (wsem_stat(g->fds[i], &st) || g->weights[i] <= st.capacity)
			continue;
		snprintf(msg, sizeof(msg), "weight %" PRIu64 " exceeds "
			 "capacity %" PRIu64, g->weights[i],
			 (uint64_t)st.capacity);
		return cli_fail_msg(g->names[i], msg, CLI_EXIT_ERROR);
	}
	return cli_fail_nodev(g->names[0], EINVAL);
}

/**
 * cli_lease_acquire_many() - one gang request over @g's handles, as @l says
 * @g: the handles, their weights and names; @g->fds[0] is the one @l is
 *	about, whose "all" weight is read from its capacity now
 * @l: how long to wait (--timeout, --nonblock), -E N, --verbose
 * @status: set to the exit status when it fails
 *
 * wsem_acquire_many(): all the weights at once or none, in one place of
 * the arrival order; the failures as cli_lease_acquire()'s.
 *
 * Return: true if every handle now holds its weight.
 */
bool cli_lease_acquire_many(struct cli_gang *g, struct cli_lease *l,
			    int *status)
{
	int64_t timeout = l->nonblock ? 0 : l->timeout_ns;
	struct wsem_stat st;
	double start;
	int ret;

	l->conflict = false;
	if (l->weight_all) {
		if (wsem_stat(g->fds[0], &st)) {
			*status = cli_fail_nodev(l->what, errno);
			return false;
		}
		l->weight = st.capacity;
	}
	g->weights[0] = l->weight;
	if (!l->verbose || l->nonblock) {
		ret = wsem_acquire_many(g->fds, g->weights, g->n, timeout);
	} else {
		/* --verbose: one line if it waits, one when granted */
		ret = wsem_acquire_many(g->fds, g->weights, g->n, 0);
		if (ret && errno == EAGAIN) {
			fprintf(stderr, "wsem: waiting for %s and %zu more, "
				"all at once\n", l->what, g->n - 1);
			start = now_s();
			ret = wsem_acquire_many(g->fds, g->weights, g->n,
						timeout);
			if (!ret)
				fprintf(stderr, "wsem: acquired %s and %zu "
					"more after %.1f s\n", l->what,
					g->n - 1, now_s() - start);
		}
	}
	if (!ret)
		return true;
	if (l->nonblock && errno == EAGAIN)
		*status = fail_conflict(l, "would block", CLI_EXIT_WOULDBLOCK);
	else if (l->timeout_ns >= 0 && errno == ETIMEDOUT)
		*status = fail_conflict(l, "timed out", CLI_EXIT_TIMEDOUT);
	else if (errno == EINVAL)
		*status = fail_einval_many(g);
	else
		*status = cli_fail_nodev(l->what, errno);
	return false;
}

/*
 * Is @name a valid semaphore name?  If not, say what one is; 0 or exit
 * status 1.  A path (anything with a '/') is not a name and passes.
 */
int cli_check_name(const char *name)
{
	size_t len = strlen(name), i;

	if (cli_is_path(name))
		return 0;
	for (i = 0; i < len && len < WSEM_NAME_MAX; i++) {
		if (!strchr("abcdefghijklmnopqrstuvwxyz"
			    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", name[i]))
			break;
	}
	if (len && len < WSEM_NAME_MAX && i == len)
		return 0;
	return cli_fail_msg(name, "invalid name: a name is 1..63 bytes of "
			    "[A-Za-z0-9._-]", CLI_EXIT_ERROR);
}

/* Is @capacity within 1 .. 2^62?  If not, say so; 0 or exit status 1. */
int cli_check_capacity(const char *what, uint64_t capacity)
{
	char msg[96];

	if (capacity >= 1 && capacity <= WSEM_CAPACITY_MAX)
		return 0;
	snprintf(msg, sizeof(msg), "capacity %" PRIu64 " is out of range "
		 "(1 .. 2^62 = %" PRIu64 ")", capacity,
		 (uint64_t)WSEM_CAPACITY_MAX);
	return cli_fail_msg(what, msg, CLI_EXIT_ERROR);
}
