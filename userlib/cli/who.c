// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Who holds and who waits, for wsem stat: aligned tables for people,
 * arrays for --json.  The entries come from a handle
 * for a NAME or a PATH, a watching one (wsem_open_watch()), which needs
 * read permission only; wsem_holders_children() lists them.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/*
 * Every holder and waiter of @fd's semaphore, then every child of it that
 * holds weight (WSEM_HOLDER_CHILD: its name and what it holds of this
 * one), malloc()ed, into *@who; how many in all, with *@nholders the
 * holders and *@nchildren the children among them; -1 with errno.
 */
ssize_t cli_who(int fd, struct wsem_holder **who, size_t *nholders,
		size_t *nchildren)
{
	struct wsem_holder *buf = NULL, *nbuf;
	size_t room = 0;
	ssize_t total;

	/* Loops only while processes queue under our feet. */
	for (;;) {
		total = wsem_holders_children(fd, buf, room, nholders,
					      nchildren);
		if (total < 0) {
			free(buf);
			return -1;
		}
		if ((size_t)total <= room)
			break;
		room = total + 8;
		nbuf = realloc(buf, room * sizeof(*buf));
		if (!nbuf) {
			free(buf);
			errno = ENOMEM;
			return -1;
		}
		buf = nbuf;
	}
	*who = buf;
	return total;
}

/* A duration for people: 850ms, 12.5s, 3m07s, 2h05m. */
const char *cli_duration_text(uint64_t ns, char *buf, size_t len)
{
	uint64_t ms = ns / 1000000, s = ms / 1000;

	if (ms < 1000)
		snprintf(buf, len, "%" PRIu64 "ms", ms);
	else if (s < 60)
		snprintf(buf, len, "%" PRIu64 ".%" PRIu64 "s", s,
			 ms % 1000 / 100);
	else if (s < 3600)
		snprintf(buf, len, "%" PRIu64 "m%02" PRIu64 "s", s / 60,
			 s % 60);
	else
		snprintf(buf, len, "%" PRIu64 "h%02" PRIu64 "m", s / 3600,
			 s / 60 % 60);
	return buf;
}

static const char *cgroup_of(const struct wsem_holder *w)
{
	return w->cgroup[0] ? w->cgroup : "-";
}

/* The label, "-" for none. */
static const char *label_of(const struct wsem_holder *w)
{
	return w->label[0] ? w->label : "-";
}

/* One table: the entries [@from, @to) of @who under @title. */
static void who_table(const char *title, const char *since,
		      const struct wsem_holder *who, size_t from, size_t to)
{
	/* PID COMMAND CGROUP WEIGHT, then since and LABEL */
	int w[5] = { 3, 7, 6, 6, (int)strlen(since) };
	char num[24], dur[24];
	size_t i;
	int n;

	printf("\n%s\n", title);
	if (from == to) {
		puts("  (none)");
		return;
	}
	for (i = from; i < to; i++) {
		n = snprintf(num, sizeof(num), "%d", who[i].pid);
		w[0] = n > w[0] ? n : w[0];
		n = (int)strnlen(who[i].comm, sizeof(who[i].comm));
		w[1] = n > w[1] ? n : w[1];
		n = (int)strlen(cgroup_of(&who[i]));
		w[2] = n > w[2] ? n : w[2];
		n = snprintf(num, sizeof(num), "%" PRIu64,
			     (uint64_t)who[i].weight);
		w[3] = n > w[3] ? n : w[3];
		n = (int)strlen(cli_duration_text(who[i].age_ns, dur,
						  sizeof(dur)));
		w[4] = n > w[4] ? n : w[4];
	}
	printf("  %*s  %-*s  %-*s  %*s  %-*s  %s\n", w[0], "PID", w[1],
	       "COMMAND", w[2], "CGROUP", w[3], "WEIGHT", w[4], since, "LABEL");
	for (i = from; i < to; i++)
		printf("  %*d  %-*.*s  %-*s  %*" PRIu64 "  %-*s  %.*s\n", w[0],
		       who[i].pid, w[1], (int)sizeof(who[i].comm), who[i].comm,
		       w[2], cgroup_of(&who[i]), w[3], (uint64_t)who[i].weight,
		       w[4], cli_duration_text(who[i].age_ns, dur, sizeof(dur)),
		       (int)sizeof(who[i].label), label_of(&who[i]));
}

/* The children that hold weight, [@from, @n) of @who: name, weight. */
static void child_table(const struct wsem_holder *who, size_t from, size_t n)
{
	int w = 5;
	size_t i;

	puts("\nCHILDREN (what each holds of this one)");
	if (from == n) {
		puts("  (none)");
		return;
	}
	for (i = from; i < n; i++) {
		int len = (int)strnlen(who[i].label, sizeof(who[i].label));

		w = len > w ? len : w;
	}
	printf("  %-*s  %s\n", w, "CHILD", "WEIGHT");
	for (i = from; i < n; i++)
		printf("  %-*.*s  %" PRIu64 "\n", w, (int)sizeof(who[i].label),
		       who[i].label, (uint64_t)who[i].weight);
}

/*
 * stat: the holders, then the waiters in queue order, then (only where
 * there are any) the children that hold weight.
 */
void cli_print_who(const struct wsem_holder *who, size_t n, size_t nholders,
		   size_t nchildren)
{
	who_table("HOLDERS", "HELD FOR", who, 0, nholders);
	who_table("WAITERS (in queue order)", "WAITING FOR", who, nholders,
		  n - nchildren);
	if (nchildren)
		child_table(who, n - nchildren, n);
}

static void json_entry(const struct wsem_holder *w, const char *age)
{
	printf("{\"pid\":%d,\"comm\":", w->pid);
	cli_json_string(stdout, w->comm, sizeof(w->comm));
	fputs(",\"cgroup\":", stdout);
	cli_json_string(stdout, w->cgroup, sizeof(w->cgroup));
	fputs(",\"label\":", stdout);
	cli_json_string(stdout, w->label, sizeof(w->label));
	printf(",\"weight\":%" PRIu64 ",\"%s\":%" PRIu64 "}",
	       (uint64_t)w->weight, age, (uint64_t)w->age_ns);
}

/*
 * --json: ,"holders":[...],"queue":[...],"children":[...] inside the stat
 * object; a child is {"name":...,"weight":N}.
 */
void cli_print_json_who(const struct wsem_holder *who, size_t n,
			size_t nholders, size_t nchildren)
{
	size_t i, nwho = n - nchildren;

	fputs(",\"holders\":[", stdout);
	for (i = 0; i < nholders; i++) {
		if (i)
			putchar(',');
		json_entry(&who[i], "held_ns");
	}
	fputs("],\"queue\":[", stdout);
	for (i = nholders; i < nwho; i++) {
		if (i > nholders)
			putchar(',');
		json_entry(&who[i], "waiting_ns");
	}
	fputs("],\"children\":[", stdout);
	for (i = nwho; i < n; i++) {
		if (i > nwho)
			putchar(',');
		fputs("{\"name\":", stdout);
		cli_json_string(stdout, who[i].label, sizeof(who[i].label));
		printf(",\"weight\":%" PRIu64 "}", (uint64_t)who[i].weight);
	}
	putchar(']');
}
