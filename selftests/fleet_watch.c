// SPDX-License-Identifier: GPL-2.0
/*
 * fleet_watch CAPACITY SECONDS PATH...: the observer of fleet_test.sh.
 * PATH is each simulated host's semaphore, through the wsemfs mount of
 * the host's IPC namespace.  For SECONDS it reads them all, again and
 * again (a round takes microseconds; a share moves between hosts through
 * etcd in milliseconds), and fails if the weight they hold together is
 * ever above CAPACITY.  A round that took over a millisecond (the reader
 * was preempted) is not a sum at one instant: it is left out, and
 * counted.  It prints the rounds, the largest sum, those left out, and the
 * utilisation: the mean of the sum over CAPACITY in the rounds where some
 * host had waiters.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <wsem.h>

#define MAX_HOSTS 16

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	uint64_t cap, sum, waiters, max = 0, over = 0, rounds = 0, busy = 0;
	uint64_t slow = 0;
	int fd[MAX_HOSTS], n = argc - 3, i;
	double end, start, busy_sum = 0;
	struct wsem_stat st;

	if (argc < 4 || n > MAX_HOSTS) {
		fprintf(stderr, "usage: fleet_watch CAPACITY SECONDS PATH...\n");
		return 2;
	}
	cap = strtoull(argv[1], NULL, 10);
	if (!cap) {
		fprintf(stderr, "fleet_watch: a CAPACITY of 0\n");
		return 2;
	}
	end = now_s() + atof(argv[2]);
	for (i = 0; i < n; i++) {
		fd[i] = wsem_open_watch(argv[3 + i], O_CLOEXEC);
		if (fd[i] < 0) {
			fprintf(stderr, "fleet_watch: %s: %s\n", argv[3 + i],
				strerror(errno));
			return 2;
		}
	}
	while ((start = now_s()) < end) {
		sum = waiters = 0;
		for (i = 0; i < n; i++) {
			if (wsem_stat(fd[i], &st)) {
				perror("fleet_watch: stat");
				return 2;
			}
			sum += st.used;
			waiters += st.waiters;
		}
		if (now_s() - start > 1e-3) {
			slow++;
			continue;
		}
		rounds++;
		if (sum > max)
			max = sum;
		if (sum > cap)
			over++;
		if (waiters) {
			busy++;
			busy_sum += (double)sum / cap;
		}
	}
	printf("rounds %llu max %llu over %llu slow %llu busy %llu util %.0f\n",
	       (unsigned long long)rounds, (unsigned long long)max,
	       (unsigned long long)over, (unsigned long long)slow,
	       (unsigned long long)busy, busy ? 100 * busy_sum / busy : 0.0);
	return over ? 1 : 0;
}
