// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * wsem ls and wsem stat.  Both read the namespace list, so they need only
 * read permission on a semaphore and never open (or create) one.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* Every semaphore of the namespace, in name order, malloc()ed. */
struct wsem_stat *cli_list_all(size_t *count)
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
	{ .name = "long", .short_name = 'l',
	  .help = "also owner, group, mode and the longest wait" },
	{ .name = "output", .short_name = 'o', .arg = "COLUMNS",
	  .help = "only these columns, comma-separated: name, capacity, used, "
		  "available, held, waiters, queued_weight, lent, ceiling, "
		  "depth, uid, gid, mode" },
	{ .name = "noheadings", .short_name = 'n',
	  .help = "no header line" },
	{ .name = NULL },
};

static int unknown_column(const struct cli_verb *verb, const char *bad)
{
	return cli_usage(verb->synopsis, "unknown column '%s' (name, capacity, "
			 "used, available, held, waiters, queued_weight, lent, "
			 "ceiling, depth, uid, gid, mode)", bad);
}

int cli_ls(const struct cli_verb *verb, int argc, char **argv)
{
	const struct cli_opt *out = cli_opt(show_opts, "output");
	struct cli_parse p = { .verb = verb, .opts = show_opts };
	const char *columns = "name,capacity,used,waiters", *bad;
	bool plain, json, longer;
	struct wsem_stat *st;
	size_t n;
	int ret = cli_parse(&p, argc, argv);

	if (ret)
		return ret;
	plain = !cli_opt(show_opts, "noheadings")->seen;
	json = cli_opt(show_opts, "json")->seen;
	longer = cli_opt(show_opts, "long")->seen;
	if ((out->seen || !plain) && (json || longer))
		return cli_usage(verb->synopsis, "-o and -n are for the table "
				 "of columns: not with -l or --json");
	/* An unknown column is found before anything is listed. */
	if (out->seen) {
		columns = out->value;
		if (cli_print_columns(NULL, 0, columns, false, &bad))
			return unknown_column(verb, bad);
	}
	st = cli_list_all(&n);
	if (!st)
		return cli_fail("/dev/wsem", errno);
	if (json)
		cli_print_json_list(st, n);
	else if (longer)
		cli_print_table(st, n, true);
	else
		cli_print_columns(st, n, columns, plain, &bad);
	free(st);
	return CLI_EXIT_OK;
}

/* Copy the entry of @name out of the list; ENOENT if it is not there. */
static int find_stat(const char *name, struct wsem_stat *out)
{
	struct wsem_stat *st;
	size_t i, n;

	st = cli_list_all(&n);
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
 * No read-only handle on @name: an older module, where a handle needs
 * write permission too, so the list (read permission) has it.  A NAME the
 * open refused with EACCES exists: missing from the list too, it is still
 * EACCES (no read permission), as run and every other verb says.
 */
static int stat_listed(const char *name, struct wsem_stat *st,
		       unsigned long *ns)
{
	int err = errno;

	if (err != EACCES && err != EPERM)
		return cli_fail(name, err);
	if (find_stat(name, st))
		return cli_fail(name, errno == ENOENT ? err : errno);
	*ns = cli_own_ipc_ns();
	return 0;
}

/*
 * The state of what stat was asked about, the IPC namespace it lives in
 * and a handle to ask who holds it (*@hfd, -1 if none; *@own: ours to
 * close); 0 or an exit status.  The inherited handle of "wsem run
 * --inherit" comes first when it is bound to NAME, so that held is the
 * job's and a job in another IPC namespace still finds it; then a
 * watching handle on the PATH or NAME (wsem_open_watch(): read
 * permission is enough), or, for a NAME, the list.
 */
static int stat_target(const char *name, int fd, struct wsem_stat *st,
		       unsigned long *ns, int *hfd, bool *own)
{
	*hfd = fd;
	*own = false;
	if (fd >= 0)
		return stat_fd("--fd", fd, st, ns);
	fd = cli_inherited_fd(name);
	*hfd = fd;
	if (fd >= 0)
		return stat_fd(name, fd, st, ns);
	fd = wsem_open_watch(name, O_CLOEXEC);
	if (fd >= 0) {
		*hfd = fd;
		*own = true;
		return stat_fd(name, fd, st, ns);
	}
	if (cli_is_path(name))
		return cli_fail_nodev(name, errno);
	return stat_listed(name, st, ns);
}

/*
 * The name of @st's parent, if it is a named semaphore of this IPC
 * namespace that the caller may read: the semaphores one level up are
 * looked at, each through a watching handle, for the id @st's parent_id
 * names.  NULL if none is found (anonymous, unlinked, another namespace).
 */
static const char *parent_name(const struct wsem_stat *st)
{
	static char name[WSEM_NAME_MAX];
	struct wsem_stat *all;
	size_t i, n;
	int fd;

	if (!st->depth || !st->parent_id)
		return NULL;
	all = cli_list_all(&n);
	if (!all)
		return NULL;
	name[0] = '\0';
	for (i = 0; i < n && !name[0]; i++) {
		if (all[i].depth + 1 != st->depth || !all[i].name[0])
			continue;
		all[i].name[sizeof(all[i].name) - 1] = '\0';
		fd = wsem_open_watch(all[i].name, O_CLOEXEC);
		if (fd < 0)
			continue;
		if (cli_fd_sem_id(fd) == st->parent_id)
			memcpy(name, all[i].name, sizeof(name));
		close(fd);
	}
	free(all);
	return name[0] ? name : NULL;
}

/*
 * stat's output: the fields, the statistics, who holds and who waits, and
 * for a cluster limit the view wsem-agent keeps of it (cluster.c).
 */
static void print_stat(const struct wsem_stat *st, unsigned long ns, int hfd,
		       bool json)
{
	struct wsem_holder *who = NULL;
	size_t nholders = 0, nchildren = 0;
	ssize_t n = hfd >= 0 ? cli_who(hfd, &who, &nholders, &nchildren) : -1;
	uint64_t id = hfd >= 0 ? cli_fd_sem_id(hfd) : 0;

	if (json) {
		/* who is not to be read: empty arrays, never absent keys */
		cli_print_json_stat_open(st, ns);
		cli_print_json_who(who, n > 0 ? (size_t)n : 0, nholders,
				   nchildren);
		cli_print_cluster(st, ns, id, true);
		puts("}");
	} else {
		const char *parent = parent_name(st);

		cli_print_stat(st);
		if (parent)
			printf("%-14s %s\n", "parent:", parent);
		printf("%-14s %s\n", "ipc_ns:", cli_ipc_ns_text(ns));
		cli_print_stats(st);
		if (n >= 0)
			cli_print_who(who, (size_t)n, nholders, nchildren);
		cli_print_cluster(st, ns, id, false);
	}
	free(who);
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
	int fd, hfd = -1, ret = cli_parse(&p, argc, argv);
	bool own = false;

	if (!ret)
		ret = cli_fd_option(verb->synopsis, cli_opt(stat_opts, "fd"),
				    &fd);
	if (!ret && fd < 0)
		ret = cli_check_name(p.pos[0]);
	if (!ret)
		ret = stat_target(p.pos[0], fd, &st, &ns, &hfd, &own);
	if (!ret)
		print_stat(&st, ns, hfd, cli_opt(stat_opts, "json")->seen);
	if (own)
		close(hfd);
	return ret ? ret : CLI_EXIT_OK;
}
