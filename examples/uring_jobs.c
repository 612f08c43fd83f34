// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * uring_jobs: epoll_jobs on io_uring.  The same jobs, gated by several
 * wsem semaphores, but the loop submits IORING_OP_POLL_ADD on each
 * handle with a queued request and IORING_OP_TIMEOUT for the time a job
 * holds its weight, and reaps completions.
 *
 *	uring_jobs [-r ROUNDS] [-t HOLD_MS] NAME:WEIGHT...
 *
 * A wsem handle needs no io_uring support of its own: POLL_ADD uses its
 * poll, and the request's grant is what makes it readable.
 *
 * Build: cc -o uring_jobs uring_jobs.c $(pkg-config --cflags --libs wsem) -luring
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <liburing.h>
#include <wsem.h>

#define MAX_JOBS	16

struct job {
	char name[WSEM_NAME_MAX + 128];
	uint64_t weight;
	int sem;			/* bound handle, to reopen from */
	int req;			/* the handle with the request */
	bool holding;			/* granted; a timeout is pending */
	int rounds;
	struct __kernel_timespec hold;
};

static struct io_uring ring;

static void die(const char *what, int err)
{
	fprintf(stderr, "uring_jobs: %s: %s\n", what, strerror(err));
	exit(1);
}

static struct io_uring_sqe *sqe_get(void)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);

	if (!sqe)
		die("io_uring_get_sqe", EBUSY);
	return sqe;
}

/* Granted: hold the weight for the job's time, a timeout on the ring. */
static void start(struct job *job)
{
	struct io_uring_sqe *sqe = sqe_get();

	printf("%s granted %llu\n", job->name,
	       (unsigned long long)job->weight);
	job->holding = true;
	io_uring_prep_timeout(sqe, &job->hold, 0, 0);
	io_uring_sqe_set_data(sqe, job);
}

/* Queue a request on a fresh handle; its grant completes a POLL_ADD. */
static void queue(struct job *job)
{
	struct io_uring_sqe *sqe;

	job->req = wsem_reopen(job->sem, 0);
	if (job->req < 0)
		die(job->name, errno);
	if (!wsem_acquire_async(job->req, job->weight)) {
		start(job);
		return;
	}
	if (errno != EINPROGRESS)
		die(job->name, errno);
	printf("%s queued %llu\n", job->name,
	       (unsigned long long)job->weight);
	sqe = sqe_get();
	io_uring_prep_poll_add(sqe, job->req, POLLIN);
	io_uring_sqe_set_data(sqe, job);
}

/* A completion: the request ended, or the job's time is up. */
static int complete(struct job *job, int res)
{
	if (!job->holding) {
		if (res < 0)
			die("POLL_ADD", -res);
		if (wsem_acquire_result(job->req))
			die(job->name, errno);
		start(job);
		return 0;
	}
	if (res != -ETIME)
		die("TIMEOUT", -res);
	job->holding = false;
	printf("%s releasing %llu\n", job->name,
	       (unsigned long long)job->weight);
	close(job->req);		/* gives the weight back */
	if (--job->rounds > 0) {
		queue(job);
		return 0;
	}
	return 1;
}

static int parse(struct job *job, const char *arg, int rounds, int hold_ms)
{
	const char *colon = strrchr(arg, ':');
	char *end;

	if (!colon || colon == arg ||
	    (size_t)(colon - arg) >= sizeof(job->name))
		return -1;
	memset(job, 0, sizeof(*job));
	memcpy(job->name, arg, colon - arg);
	errno = 0;
	job->weight = strtoull(colon + 1, &end, 10);
	if (errno || *end || !job->weight)
		return -1;
	job->rounds = rounds;
	job->hold.tv_sec = hold_ms / 1000;
	job->hold.tv_nsec = (hold_ms % 1000) * 1000000LL;
	job->sem = wsem_open(job->name, 0, 0, 0);
	return job->sem < 0 ? -2 : 0;
}

int main(int argc, char **argv)
{
	struct job jobs[MAX_JOBS];
	struct io_uring_cqe *cqe;
	int rounds = 1, hold_ms = 100, njobs, left, i, opt, ret;

	setvbuf(stdout, NULL, _IONBF, 0);
	while ((opt = getopt(argc, argv, "r:t:")) != -1) {
		if (opt == 'r')
			rounds = atoi(optarg);
		else if (opt == 't')
			hold_ms = atoi(optarg);
		else
			goto usage;
	}
	njobs = argc - optind;
	if (njobs < 1 || njobs > MAX_JOBS || rounds < 1 || hold_ms < 0)
		goto usage;
	ret = io_uring_queue_init(2 * MAX_JOBS, &ring, 0);
	if (ret < 0)
		die("io_uring_queue_init", -ret);
	for (i = 0; i < njobs; i++) {
		switch (parse(&jobs[i], argv[optind + i], rounds, hold_ms)) {
		case -1:
			goto usage;
		case -2:
			die(argv[optind + i], errno);
		}
	}
	for (i = 0; i < njobs; i++)
		queue(&jobs[i]);
	for (left = njobs; left > 0;) {
		ret = io_uring_submit_and_wait(&ring, 1);
		if (ret == -EINTR)
			continue;
		if (ret < 0)
			die("io_uring_submit_and_wait", -ret);
		while (!io_uring_peek_cqe(&ring, &cqe)) {
			struct job *job = io_uring_cqe_get_data(cqe);

			ret = cqe->res;
			io_uring_cqe_seen(&ring, cqe);
			left -= complete(job, ret);
		}
	}
	io_uring_queue_exit(&ring);
	return 0;
usage:
	fprintf(stderr, "usage: uring_jobs [-r ROUNDS] [-t HOLD_MS] "
		"NAME:WEIGHT...\n");
	return 2;
}
