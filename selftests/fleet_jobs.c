// SPDX-License-Identifier: GPL-2.0
/*
 * fleet_jobs NAME WEIGHT MIN_MS MAX_MS STOP: the steady jobs of
 * fleet_test.sh on one simulated host (run inside its namespaces).  One
 * process that acquires WEIGHT on the host's semaphore NAME (blocking, in
 * its FIFO order), holds it for a random time from MIN_MS to MAX_MS,
 * releases it and asks again at once, until the file STOP exists.  No
 * process starts between two jobs, as it would with a wsem run per job
 * (two under TCG take tens of milliseconds, in which the weight lies
 * idle): what the observer sees unused is the cluster limit's doing.
 * At the end it prints the jobs granted before STOP existed and the
 * longest wait of one, in ms (the last wait included); exit 1 if an
 * acquire failed or waited 30 s.  Its weight goes back with its handle.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <wsem.h>

#include "util.h"

/* A job that waits this long has starved: the test fails, and ends. */
#define WAIT_MAX_NS (30 * NSEC)

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, ms % 1000 * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

int main(int argc, char **argv)
{
	int64_t t, waited, longest = 0;
	long lo, hi, jobs = 0;
	struct rng rng;
	uint64_t w;
	int fd;

	if (argc != 6) {
		fprintf(stderr, "usage: fleet_jobs NAME WEIGHT MIN_MS MAX_MS STOP\n");
		return 2;
	}
	w = strtoull(argv[2], NULL, 10);
	lo = atol(argv[3]);
	hi = atol(argv[4]);
	if (!w || lo < 0 || hi < lo) {
		fprintf(stderr, "fleet_jobs: bad weight or times\n");
		return 2;
	}
	fd = wsem_open(argv[1], O_RDWR, 0, 0);
	if (fd < 0) {
		fprintf(stderr, "fleet_jobs: %s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	rng.s = getpid();
	while (access(argv[5], F_OK)) {
		t = now_ns();
		if (wsem_acquire_timeout(fd, w, WAIT_MAX_NS)) {
			fprintf(stderr, "fleet_jobs: acquire %llu: %s\n",
				(unsigned long long)w, strerror(errno));
			return 1;
		}
		waited = now_ns() - t;
		if (waited > longest)
			longest = waited;
		/* granted once the others stopped: not a job of the phase */
		if (!access(argv[5], F_OK))
			break;
		sleep_ms(lo + below(&rng, hi - lo + 1));
		if (wsem_release(fd, w)) {
			perror("fleet_jobs: release");
			return 1;
		}
		jobs++;
	}
	printf("jobs %ld longest %lld\n", jobs,
	       (long long)(longest / 1000000));
	return 0;
}
