// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * wsem top: the semaphores of the namespace, the busiest first, again and
 * again.  On a terminal the screen is redrawn and q quits; otherwise each
 * round is printed as plain text after a blank line, for logs and pipes.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static struct cli_opt top_opts[] = {
	{ .name = "rounds", .short_name = 'n', .arg = "N",
	  .help = "stop after N rounds (default: until q)" },
	{ .name = "delay", .short_name = 'd', .arg = "DURATION",
	  .help = "between rounds (default 2s)" },
	{ .name = NULL },
};

/* The most waiters first, then the most used, then by name. */
static int busiest_first(const void *a, const void *b)
{
	const struct wsem_stat *x = a, *y = b;

	if (x->waiters != y->waiters)
		return x->waiters < y->waiters ? 1 : -1;
	if (x->used != y->used)
		return x->used < y->used ? 1 : -1;
	return strncmp(x->name, y->name, sizeof(x->name));
}

/* One round; 0 or an exit status. */
static int round_once(bool tty, unsigned long n)
{
	struct wsem_stat *st;
	size_t count;

	st = cli_list_all(&count);
	if (!st)
		return cli_fail("/dev/wsem", errno);
	qsort(st, count, sizeof(*st), busiest_first);
	if (tty)
		fputs("\033[H\033[2J", stdout);
	else if (n)
		putchar('\n');
	printf("wsem top: %zu semaphore%s, round %lu%s\n", count,
	       count == 1 ? "" : "s", n + 1, tty ? " (q quits)" : "");
	cli_print_table(st, count, true);
	fflush(stdout);
	free(st);
	return 0;
}

/* Sleep @ns, or less if q is typed on the terminal; true for q. */
static bool wait_or_quit(bool tty, int64_t ns)
{
	struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
	int64_t ms = ns / 1000000;
	char c;

	if (!tty) {
		struct timespec ts = { ns / 1000000000, ns % 1000000000 };

		nanosleep(&ts, NULL);
		return false;
	}
	while (poll(&p, 1, (int)(ms > 1000000 ? 1000000 : ms)) > 0) {
		if (read(STDIN_FILENO, &c, 1) != 1 || c == 'q' || c == 'Q')
			return true;
	}
	return false;
}

int cli_top(const struct cli_verb *verb, int argc, char **argv)
{
	struct cli_parse p = { .verb = verb, .opts = top_opts };
	struct cli_opt *o;
	struct termios old, raw;
	uint64_t rounds = 0, n;
	int64_t delay = 2000000000;
	bool tty, quit = false;
	int ret = cli_parse(&p, argc, argv);

	if (ret)
		return ret;
	o = cli_opt(top_opts, "rounds");
	if (o->seen && (!cli_parse_u64(o->value, &rounds) || !rounds))
		return cli_usage(verb->synopsis, "invalid N '%s'", o->value);
	o = cli_opt(top_opts, "delay");
	if (o->seen && !cli_parse_duration(o->value, &delay))
		return cli_usage(verb->synopsis, "invalid DURATION '%s'",
				 o->value);
	tty = isatty(STDOUT_FILENO) && isatty(STDIN_FILENO);
	if (tty && !tcgetattr(STDIN_FILENO, &old)) {
		raw = old;
		raw.c_lflag &= ~(ICANON | ECHO);
		tcsetattr(STDIN_FILENO, TCSANOW, &raw);
	} else {
		tty = false;
	}
	for (n = 0; !ret && !quit && (!rounds || n < rounds); n++) {
		ret = round_once(tty, n);
		if (!ret && (!rounds || n + 1 < rounds))
			quit = wait_or_quit(tty, delay);
	}
	if (tty)
		tcsetattr(STDIN_FILENO, TCSANOW, &old);
	return ret ? ret : CLI_EXIT_OK;
}
