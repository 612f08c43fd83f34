// SPDX-License-Identifier: GPL-2.0
/*
 * fleet_watch CAPACITY SECONDS PATH...: the observer of fleet_test.sh.
 * PATH is each simulated host's semaphore, through the wsemfs mount of
 * the host's IPC namespace.  For SECONDS it reads them all at every
 * change of any of them, and fails if the weight they hold together is
 * ever above CAPACITY.  It sleeps in poll() for POLLRDBAND on every
 * host's handle (the module's demand event: the held or queued weight or
 * the waiters changed since the handle's last stat, which clears it) and
 * reads every host at each wake-up, and at least every 10 ms: a read of
 * all of them follows each grant on any host, and the observer takes no
 * CPU from the agents, etcd and the jobs in between.  A round that took
 * over a millisecond (the reader was preempted) is not a sum at one
 * instant: it is left out, and counted.  It prints the rounds, the
 * largest sum, those left out, the seconds some host had waiters and the
 * utilisation over them: the sum over CAPACITY, weighted by the time it
 * lasted (from one round to the next; the sum changes only at events).
 * SIGUSR1 ends the watch early, after one more round: the scenario it
 * watches is over before SECONDS have passed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <wsem.h>

#include "util.h"

#define MAX_HOSTS 16

static volatile sig_atomic_t told_to_end;

static void end_watch(int sig)
{
	(void)sig;
	told_to_end = 1;
}

static double now_s(void)
{
	return (double)now_ns() / NSEC;
}

/* One round: the weight held and the waiters on all hosts together. */
static int read_hosts(const struct pollfd *pfd, int n, uint64_t *sum,
		      uint64_t *waiters)
{
	struct wsem_stat st;
	int i;

	*sum = *waiters = 0;
	for (i = 0; i < n; i++) {
		if (wsem_stat(pfd[i].fd, &st)) {
			perror("fleet_watch: stat");
			return -1;
		}
		*sum += st.used;
		*waiters += st.waiters;
	}
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t cap, sum, waiters, max = 0, over = 0, rounds = 0, slow = 0;
	uint64_t last_sum = 0, last_waiters = 0;
	double end, start, last = 0, busy_s = 0, busy_sum = 0;
	struct pollfd pfd[MAX_HOSTS];
	struct sigaction sa = { .sa_handler = end_watch };
	int n = argc - 3, i, last_round = 0;

	if (argc < 4 || n > MAX_HOSTS) {
		fprintf(stderr, "usage: fleet_watch CAPACITY SECONDS PATH...\n");
		return 2;
	}
	cap = strtoull(argv[1], NULL, 10);
	if (!cap) {
		fprintf(stderr, "fleet_watch: a CAPACITY of 0\n");
		return 2;
	}
	if (sigaction(SIGUSR1, &sa, NULL)) {
		perror("fleet_watch: sigaction");
		return 2;
	}
	for (i = 0; i < n; i++) {
		pfd[i].fd = wsem_open_watch(argv[3 + i], O_CLOEXEC);
		pfd[i].events = POLLRDBAND;
		if (pfd[i].fd < 0) {
			fprintf(stderr, "fleet_watch: %s: %s\n", argv[3 + i],
				strerror(errno));
			return 2;
		}
	}
	end = now_s() + atof(argv[2]);
	while ((start = now_s()) < end && !last_round) {
		last_round = told_to_end;
		if (read_hosts(pfd, n, &sum, &waiters))
			return 2;
		if (now_s() - start > 1e-3) {
			slow++;
		} else {
			rounds++;
			if (sum > max)
				max = sum;
			if (sum > cap)
				over++;
			/* what the last round read lasted until this one */
			if (last && last_waiters) {
				busy_s += start - last;
				busy_sum += (double)last_sum / cap * (start - last);
			}
			last = start;
			last_sum = sum;
			last_waiters = waiters;
		}
		if (poll(pfd, n, 10) < 0 && errno != EINTR) {
			perror("fleet_watch: poll");
			return 2;
		}
	}
	if (last && last_waiters) {
		busy_s += start - last;
		busy_sum += (double)last_sum / cap * (start - last);
	}
	printf("rounds %llu max %llu over %llu slow %llu busy %.1fs util %.0f\n",
	       (unsigned long long)rounds, (unsigned long long)max,
	       (unsigned long long)over, (unsigned long long)slow, busy_s,
	       busy_s > 0 ? 100 * busy_sum / busy_s : 0.0);
	return over ? 1 : 0;
}
