// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * epoll_jobs: one thread, one epoll loop, jobs gated by several wsem
 * semaphores, each waiting its turn in the kernel's FIFO queue.
 *
 *	epoll_jobs [-r ROUNDS] [-t HOLD_MS] NAME:WEIGHT...
 *
 * For each NAME:WEIGHT the loop keeps one handle with an asynchronous
 * request (wsem_acquire_async()).  When the handle polls readable, the
 * request has ended: the weight is the handle's.  The "job" holds it for
 * HOLD_MS (a timerfd in the same loop), then closing the handle gives it
 * back, and the next round queues again.  A line per event goes to
 * stdout, unbuffered, so that several processes can share one log.
 *
 * Build: cc -o epoll_jobs epoll_jobs.c $(pkg-config --cflags --libs wsem)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <wsem.h>

#define MAX_JOBS	16

struct job {
	char name[WSEM_NAME_MAX + 128];	/* a name or a wsemfs path */
	uint64_t weight;
	int sem;		/* bound handle, kept to reopen from */
	int req;		/* the handle with the request, or -1 */
	int timer;		/* timerfd while holding, or -1 */
	int rounds;		/* rounds still to run */
};

static int ep;
static int hold_ms = 100;

static void die(const char *what)
{
	fprintf(stderr, "epoll_jobs: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void watch(int fd, struct job *job)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = job };

	if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev))
		die("epoll_ctl");
}

/* The job holds its weight: say so, and set the timer that ends it. */
static void start(struct job *job)
{
	struct itimerspec its = {
		.it_value = { hold_ms / 1000, (hold_ms % 1000) * 1000000L },
	};

	printf("%s granted %llu\n", job->name,
	       (unsigned long long)job->weight);
	job->timer = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	if (job->timer < 0 || timerfd_settime(job->timer, 0, &its, NULL))
		die("timerfd");
	watch(job->timer, job);
}

/* Take a place in the queue with a fresh handle. */
static void queue(struct job *job)
{
	job->req = wsem_reopen(job->sem, 0);
	if (job->req < 0)
		die(job->name);
	if (!wsem_acquire_async(job->req, job->weight)) {
		start(job);		/* granted at once */
		return;
	}
	if (errno != EINPROGRESS)
		die(job->name);
	printf("%s queued %llu\n", job->name,
	       (unsigned long long)job->weight);
	watch(job->req, job);
}

/* The request ended, or the job's time is up; 1 when the job is done. */
static int event(struct job *job)
{
	if (job->timer < 0) {
		epoll_ctl(ep, EPOLL_CTL_DEL, job->req, NULL);
		if (wsem_acquire_result(job->req))
			die(job->name);
		start(job);
		return 0;
	}
	/*
	 * Time is up: closing the handle gives the weight back.  Said
	 * before, so that in a log shared with others it comes before
	 * whatever the next holder says.
	 */
	printf("%s releasing %llu\n", job->name,
	       (unsigned long long)job->weight);
	close(job->timer);
	job->timer = -1;
	close(job->req);
	job->req = -1;
	if (--job->rounds > 0) {
		queue(job);
		return 0;
	}
	return 1;
}

static int parse(struct job *job, const char *arg, int rounds)
{
	const char *colon = strrchr(arg, ':');
	char *end;

	if (!colon || colon == arg ||
	    (size_t)(colon - arg) >= sizeof(job->name))
		return -1;
	memcpy(job->name, arg, colon - arg);
	job->name[colon - arg] = '\0';
	errno = 0;
	job->weight = strtoull(colon + 1, &end, 10);
	if (errno || *end || !job->weight)
		return -1;
	job->rounds = rounds;
	job->timer = job->req = -1;
	job->sem = wsem_open(job->name, 0, 0, 0);
	return job->sem < 0 ? -2 : 0;
}

int main(int argc, char **argv)
{
	struct job jobs[MAX_JOBS];
	struct epoll_event ev;
	int rounds = 1, njobs, left, i, opt;

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
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		die("epoll_create1");
	for (i = 0; i < njobs; i++) {
		switch (parse(&jobs[i], argv[optind + i], rounds)) {
		case -1:
			goto usage;
		case -2:
			die(argv[optind + i]);
		}
	}
	for (i = 0; i < njobs; i++)
		queue(&jobs[i]);
	for (left = njobs; left > 0;) {
		if (epoll_wait(ep, &ev, 1, -1) != 1) {
			if (errno == EINTR)
				continue;
			die("epoll_wait");
		}
		/* A job waits on one descriptor at a time: request or timer. */
		left -= event(ev.data.ptr);
	}
	return 0;
usage:
	fprintf(stderr, "usage: epoll_jobs [-r ROUNDS] [-t HOLD_MS] "
		"NAME:WEIGHT...\n");
	return 2;
}
