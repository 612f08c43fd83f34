// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * wsem top: the semaphores of the namespace, the busiest first, again and
 * again.  On a terminal the screen is redrawn and q quits; otherwise each
 * round is printed as plain text after a blank line, for logs and pipes.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
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

/*
 * The terminal as top found it, put back on every way out: q, the last
 * round, an error, and a signal that ends or stops top (^C, ^\\, SIGTERM,
 * SIGHUP, ^Z), since a shell such as dash does not restore it itself.
 */
static struct termios saved_tty;

/* The signals after which the terminal is put back. */
static const int tty_signals[] = { SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGTSTP };

#define NR_TTY_SIGNALS	(sizeof(tty_signals) / sizeof(tty_signals[0]))

static void tty_raw(void);

/*
 * Put the terminal back, then take the signal's default action (end, or
 * stop for ^Z) as if top had not caught it: it is raised again, and
 * delivered once this handler returns, its action now the default.
 */
static void tty_restore_and_raise(int sig)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	int err = errno;

	tcsetattr(STDIN_FILENO, TCSANOW, &saved_tty);
	sigemptyset(&dfl.sa_mask);
	sigaction(sig, &dfl, NULL);
	raise(sig);
	errno = err;
}

/* SIGCONT after ^Z: raw again, and ^Z caught again. */
static void tty_resume(int sig)
{
	int err = errno;

	(void)sig;
	tty_raw();
	errno = err;
}

/*
 * No echo, no line editing; the signals put it back (ISIG stays on).  A
 * signal that was ignored (top started in the background) stays so.
 */
static void tty_raw(void)
{
	struct sigaction sa = { .sa_handler = tty_restore_and_raise }, old;
	struct termios raw = saved_tty;
	size_t i;

	sigemptyset(&sa.sa_mask);
	for (i = 0; i < NR_TTY_SIGNALS; i++) {
		if (!sigaction(tty_signals[i], NULL, &old) &&
		    old.sa_handler != SIG_IGN)
			sigaction(tty_signals[i], &sa, NULL);
	}
	sa.sa_handler = tty_resume;
	sigaction(SIGCONT, &sa, NULL);
	raw.c_lflag &= ~(ICANON | ECHO);
	tcsetattr(STDIN_FILENO, TCSANOW, &raw);
}

/* The terminal back as it was (top exits next: the handlers can stay). */
static void tty_restore(void)
{
	tcsetattr(STDIN_FILENO, TCSANOW, &saved_tty);
}

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
	if (tty && !tcgetattr(STDIN_FILENO, &saved_tty))
		tty_raw();
	else
		tty = false;
	for (n = 0; !ret && !quit && (!rounds || n < rounds); n++) {
		ret = round_once(tty, n);
		if (!ret && (!rounds || n + 1 < rounds))
			quit = wait_or_quit(tty, delay);
	}
	if (tty)
		tty_restore();
	return ret ? ret : CLI_EXIT_OK;
}
