// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * wsem ls and wsem stat.  Both read the namespace list, so they need only
 * read permission on a semaphore and never open (or create) one.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

static struct cli_opt show_opts[] = {
	{ .name = "json", .help = "print JSON" },
	{ .name = NULL },
};

int cli_ls(const struct cli_verb *verb, int argc, char **argv)
{
	struct cli_parse p = { .verb = verb, .opts = show_opts };
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

static struct cli_opt stat_opts[] = {
	{ .name = "json", .help = "print JSON" },
	{ .name = "fd", .arg = "N", .help = "the inherited handle N" },
	{ .name = NULL },
};

/* The stat of handle @fd and its IPC namespace; 0 or an exit status. */
static int stat_fd(const char *what, int fd, struct wsem_stat *st,
		   unsigned long *ns)
{
	*ns = cli_fd_ipc_ns(fd);
	return wsem_stat(fd, st) ? cli_fail_nodev(what, errno) : 0;
}

/*
 * The state of what stat was asked about, and the IPC namespace it lives
 * in; 0 or an exit status.  The inherited handle of "wsem run --inherit"
 * comes first when it is bound to NAME, so that held is the job's and a
 * job in another IPC namespace still finds it; then a path goes through a
 * read-only open of the file, and a NAME through the list (read
 * permission is enough).
 */
static int stat_target(const char *name, int fd, struct wsem_stat *st,
		       unsigned long *ns)
{
	int pfd, ret;

	if (fd >= 0)
		return stat_fd("--fd", fd, st, ns);
	fd = cli_inherited_fd(name);
	if (fd >= 0)
		return stat_fd(name, fd, st, ns);
	if (cli_is_path(name)) {
		pfd = cli_open_path_ro(name);
		if (pfd < 0)
			return cli_fail_nodev(name, errno);
		ret = stat_fd(name, pfd, st, ns);
		close(pfd);
		return ret;
	}
	if (find_stat(name, st))
		return cli_fail(name, errno);
	*ns = cli_own_ipc_ns();
	return 0;
}

int cli_stat(const struct cli_verb *verb, int argc, char **argv)
{
	struct cli_parse p = {
		.verb = verb,
		.opts = stat_opts,
		.max_pos = 1,
	};
	struct wsem_stat st;
	unsigned long ns = 0;
	int fd, ret = cli_parse(&p, argc, argv);

	if (!ret)
		ret = cli_fd_option(verb->synopsis, cli_opt(stat_opts, "fd"),
				    &fd);
	if (!ret)
		ret = stat_target(p.pos[0], fd, &st, &ns);
	if (ret)
		return ret;
	if (cli_opt(stat_opts, "json")->seen) {
		cli_print_json_stat_ns(&st, ns);
		putchar('\n');
	} else {
		cli_print_stat(&st);
		printf("%-14s %s\n", "ipc_ns:", cli_ipc_ns_text(ns));
	}
	return CLI_EXIT_OK;
}
