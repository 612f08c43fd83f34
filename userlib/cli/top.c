// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * wsem top: the semaphores of the namespace, the busiest first, again and
 * again, as a tree: each child under its parent, indented, with what it
 * holds of its parent.  On a terminal the screen is redrawn and q quits;
 * otherwise each round is printed as plain text after a blank line, for
 * logs and pipes.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
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

/* The id (fdinfo's wsem-id) of @st, through a watching handle; 0 if none. */
static uint64_t sem_id(const struct wsem_stat *st)
{
	uint64_t id;
	int fd = wsem_open_watch(st->name, O_CLOEXEC);

	if (fd < 0)
		return 0;
	id = cli_fd_sem_id(fd);
	close(fd);
	return id;
}

struct id_entry {
	uint64_t id;
	size_t i;
};

static int by_id(const void *a, const void *b)
{
	const struct id_entry *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

#define NO_ENTRY	((size_t)-1)

/* The tree as top draws it, being built. */
struct tree {
	const struct wsem_stat *st;
	size_t *parent, *first, *next;	/* indexes into st, or NO_ENTRY */
	bool *done;
	struct cli_tree_row *rows;
	size_t nrows;
};

/* Row for entry @i at @level, then its children's, the busiest first. */
static void tree_add(struct tree *t, size_t i, unsigned int level)
{
	struct cli_tree_row *row = &t->rows[t->nrows++];
	size_t c, p = t->parent[i];

	t->done[i] = true;
	row->i = i;
	row->level = level;
	row->parent[0] = '\0';
	if (p != NO_ENTRY)
		memcpy(row->parent, t->st[p].name, sizeof(row->parent));
	else if (t->st[i].depth)
		snprintf(row->parent, sizeof(row->parent), "[%" PRIu64 "]",
			 (uint64_t)t->st[i].parent_id);
	for (c = t->first[i]; c != NO_ENTRY; c = t->next[c]) {
		if (!t->done[c])
			tree_add(t, c, level + 1);
	}
}

/*
 * The rows of @st (busiest first, names NUL-terminated): each semaphore
 * whose parent is not listed (a root, or a child of a semaphore of
 * another namespace, or unnamed), then below each its children.  A
 * parent is found by its id, read through a watching handle, only when
 * some semaphore has one.  NULL with errno.
 */
static struct cli_tree_row *tree_rows(const struct wsem_stat *st, size_t n)
{
	struct tree t = { .st = st };
	struct id_entry *ids, key, *hit;
	bool nested = false;
	size_t i, nids = 0;

	for (i = 0; i < n; i++)
		nested |= st[i].depth != 0;
	t.rows = calloc(n ? n : 1, sizeof(*t.rows));
	t.parent = calloc(n ? n : 1, 3 * sizeof(size_t));
	t.done = calloc(n ? n : 1, sizeof(*t.done));
	ids = calloc(n ? n : 1, sizeof(*ids));
	if (!t.rows || !t.parent || !t.done || !ids) {
		free(t.rows);
		t.rows = NULL;
		errno = ENOMEM;
		goto out;
	}
	t.first = t.parent + n;
	t.next = t.first + n;
	for (i = 0; i < n; i++) {
		t.parent[i] = t.first[i] = t.next[i] = NO_ENTRY;
		ids[nids].id = nested ? sem_id(&st[i]) : 0;
		ids[nids].i = i;
		nids += ids[nids].id != 0;
	}
	qsort(ids, nids, sizeof(*ids), by_id);
	for (i = n; i-- > 0;) {
		if (!st[i].depth || !st[i].parent_id)
			continue;
		key.id = st[i].parent_id;
		hit = bsearch(&key, ids, nids, sizeof(*ids), by_id);
		if (!hit || hit->i == i)
			continue;
		t.parent[i] = hit->i;
		t.next[i] = t.first[hit->i];
		t.first[hit->i] = i;
	}
	for (i = 0; i < n; i++) {
		if (t.parent[i] == NO_ENTRY)
			tree_add(&t, i, 0);
	}
	/* a loop of parents, as ids are reused while top looks: flat */
	for (i = 0; i < n; i++) {
		if (!t.done[i])
			tree_add(&t, i, 0);
	}
out:
	free(ids);
	free(t.done);
	free(t.parent);
	return t.rows;
}

/* One round; 0 or an exit status. */
static int round_once(bool tty, unsigned long n)
{
	struct cli_tree_row *rows;
	struct wsem_stat *st;
	size_t count, i;

	st = cli_list_all(&count);
	if (!st)
		return cli_fail("/dev/wsem", errno);
	for (i = 0; i < count; i++)
		st[i].name[sizeof(st[i].name) - 1] = '\0';
	qsort(st, count, sizeof(*st), busiest_first);
	rows = tree_rows(st, count);
	if (!rows) {
		free(st);
		return cli_fail("wsem top", errno);
	}
	if (tty)
		fputs("\033[H\033[2J", stdout);
	else if (n)
		putchar('\n');
	printf("wsem top: %zu semaphore%s, round %lu%s\n", count,
	       count == 1 ? "" : "s", n + 1, tty ? " (q quits)" : "");
	cli_print_rows(st, rows, count, true);
	fflush(stdout);
	free(rows);
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
