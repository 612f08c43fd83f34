// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * wsem ls and wsem stat.  Both read the namespace list, so they need only
 * read permission on a semaphore and never open (or create) one.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Every semaphore of the namespace, in name order, malloc()ed. */
static struct wsem_stat *list_all(size_t *count)
{
	struct wsem_stat *buf = NULL, *nbuf;
	size_t room = 0;
	ssize_t total;

	/* Loops only while semaphores are being created under our feet. */
	while ((total = wsem_list(buf, room)) > (ssize_t)room) {
		room = (size_t)total + 8;
		nbuf = realloc(buf, room * sizeof(*buf));
		if (!nbuf)
			break;
		buf = nbuf;
	}
	if (total < 0 || (size_t)total > room) {
		if (total >= 0)
			errno = ENOMEM;
		free(buf);
		return NULL;
	}
	*count = (size_t)total;
	return buf ? buf : calloc(1, sizeof(*buf));
}

/*
 * Inside "wsem run", WSEM_FD is the inherited handle: when it is bound to
 * @name, show its own stat, whose held is this job's weight.
 */
static void stat_inherited(const char *name, struct wsem_stat *st)
{
	const char *env = getenv("WSEM_FD");
	struct wsem_stat own;
	uint64_t fd;

	if (!env || !cli_parse_u64(env, &fd) || fd > INT32_MAX)
		return;
	if (wsem_stat((int)fd, &own) || strcmp(own.name, name))
		return;
	*st = own;
}

static struct cli_opt show_opts[] = {
	{ .name = "json" },
	{ .name = NULL },
};

int cli_ls(const struct cli_verb *verb, int argc, char **argv)
{
	struct cli_parse p = { .synopsis = verb->synopsis, .opts = show_opts };
	struct wsem_stat *st;
	size_t n;
	int ret = cli_parse(&p, argc, argv);

	if (ret)
		return ret;
	st = list_all(&n);
	if (!st)
		return cli_fail("/dev/wsem", errno);
	if (cli_opt(show_opts, "json")->seen)
		cli_print_json_list(st, n);
	else
		cli_print_table(st, n);
	free(st);
	return CLI_EXIT_OK;
}

/* Copy the entry of @name out of the list; ENOENT if it is not there. */
static int find_stat(const char *name, struct wsem_stat *out)
{
	struct wsem_stat *st;
	size_t i, n;

	st = list_all(&n);
	if (!st)
		return -1;
	for (i = 0; i < n && strcmp(st[i].name, name); i++)
		;
	if (i < n)
		*out = st[i];
	free(st);
	errno = ENOENT;
	return i < n ? 0 : -1;
}

int cli_stat(const struct cli_verb *verb, int argc, char **argv)
{
	struct cli_parse p = {
		.synopsis = verb->synopsis,
		.opts = show_opts,
		.max_pos = 1,
	};
	struct wsem_stat st;
	int ret = cli_parse(&p, argc, argv);

	if (ret)
		return ret;
	if (find_stat(p.pos[0], &st))
		return cli_fail(p.pos[0], errno);
	stat_inherited(p.pos[0], &st);
	if (cli_opt(show_opts, "json")->seen) {
		cli_print_json_stat(&st);
		putchar('\n');
	} else {
		cli_print_stat(&st);
	}
	return CLI_EXIT_OK;
}
