// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * wsem apply [-n|--dry-run] [--prune] [PATH...]: make the semaphores of
 * this IPC namespace what the .conf files of /etc/wsem.d, /run/wsem.d and
 * /usr/lib/wsem.d (conf.c: sysctl.d's rules), or of PATH..., declare.
 *
 * Idempotent: it creates what is missing, resizes what has another
 * capacity, and changes mode, owner and group where they are declared and
 * differ; what exists but is not declared is reported, and removed with
 * --prune (never when a file was rejected: what it declared is unknown).
 * Each change is one line on stdout; --dry-run prints the lines and
 * changes nothing.  A declaration with parent=NAME is a child of NAME:
 * parents are made before their children, whatever the order of the
 * files (apply_order()); an existing semaphore is never moved to another
 * parent, only reported.  Mode and owner change through wsemfs (chmod, chown
 * of the file), at /sys/fs/wsem if it is mounted there, else on a private
 * mount of our own (root).
 */
#define _GNU_SOURCE		/* unshare() */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "cli.h"

#define SYSFS_MNT	"/sys/fs/wsem"

static struct cli_opt apply_opts[] = {
	{ .name = "dry-run", .short_name = 'n',
	  .help = "say what would change, change nothing" },
	{ .name = "prune",
	  .help = "remove the semaphores no file declares" },
	{ .name = "verbose", .short_name = 'v',
	  .help = "also list the semaphores no file declares" },
	{ .name = NULL },
};

struct apply {
	bool dry;
	int failed;
	const char *mnt;	/* a wsemfs mount of our namespace, or NULL */
	char tmp[32];		/* a private mount point we made */
};

static const char *sfx(const struct apply *a)
{
	return a->dry ? " (dry run)" : "";
}

/* Is @dir a wsemfs mount? */
static bool is_wsemfs(const char *dir)
{
	struct statfs sf;

	return !statfs(dir, &sf) && sf.f_type == WSEM_FS_MAGIC;
}

/* Does @mnt show our IPC namespace?  Asked of the file of @name there. */
static bool shows_our_ns(const char *mnt, const char *name)
{
	char path[4096];
	unsigned long ns;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", mnt, name);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return false;
	ns = cli_fd_ipc_ns(fd);
	close(fd);
	return ns && ns == cli_own_ipc_ns();
}

/*
 * A wsemfs mount of our IPC namespace for chmod and chown of @name:
 * /sys/fs/wsem if it is one, else a private mount in a mount namespace of
 * our own (which needs privilege).  NULL with errno.
 */
static const char *fs_mount(struct apply *a, const char *name)
{
	if (a->mnt)
		return a->mnt;
	if (is_wsemfs(SYSFS_MNT) && shows_our_ns(SYSFS_MNT, name))
		return a->mnt = SYSFS_MNT;
	strcpy(a->tmp, "/tmp/wsem-apply.XXXXXX");
	if (unshare(CLONE_NEWNS) ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    !mkdtemp(a->tmp)) {
		a->tmp[0] = '\0';
		return NULL;
	}
	if (mount("wsem", a->tmp, "wsem", 0, NULL)) {
		rmdir(a->tmp);
		a->tmp[0] = '\0';
		return NULL;
	}
	return a->mnt = a->tmp;
}

static void fail(struct apply *a, const char *name, const char *what, int err)
{
	fprintf(stderr, "wsem: %s: %s: %s\n", name, what, strerror(err));
	a->failed = 1;
}

/* Mode, owner and group where declared and different from @st. */
static void fix_attrs(struct apply *a, const struct cli_decl *d,
		      const struct wsem_stat *st)
{
	unsigned int uid = d->has_uid ? d->uid : st->uid;
	unsigned int gid = d->has_gid ? d->gid : st->gid;
	char path[4096];
	bool chmod_it = d->has_mode && d->mode != st->mode;
	bool chown_it = uid != st->uid || gid != st->gid;
	const char *mnt;

	if (chmod_it)
		printf("chmod %s %04o -> %04o%s\n", d->name,
		       (unsigned int)st->mode, (unsigned int)d->mode, sfx(a));
	if (chown_it)
		printf("chown %s %u:%u -> %u:%u%s\n", d->name, st->uid,
		       st->gid, uid, gid, sfx(a));
	if (a->dry || (!chmod_it && !chown_it))
		return;
	mnt = fs_mount(a, d->name);
	if (!mnt) {
		fail(a, d->name, "mounting wsemfs to change mode or owner",
		     errno);
		return;
	}
	snprintf(path, sizeof(path), "%s/%s", mnt, d->name);
	if (chown_it && chown(path, uid, gid))
		fail(a, d->name, "chown", errno);
	if (chmod_it && chmod(path, d->mode))
		fail(a, d->name, "chmod", errno);
}

/*
 * Is @st, which exists, where @d puts it: a root without parent=, a
 * child of the parent named with it?  If not, one line, and false.
 */
static bool parent_matches(struct apply *a, const struct cli_decl *d,
			   const struct wsem_stat *st)
{
	uint64_t id = 0;
	int fd;

	if (!d->parent[0] && !st->depth)
		return true;
	if (d->parent[0] && st->depth) {
		fd = wsem_open_watch(d->parent, O_CLOEXEC);
		if (fd >= 0) {
			id = cli_fd_sem_id(fd);
			close(fd);
		}
		if (id && id == st->parent_id)
			return true;
	}
	fprintf(stderr, "wsem: %s: exists %s, not %s%s: left as it is (wsem "
		"rm it for apply to make it anew)\n", d->name,
		st->depth ? "as a child" : "as a root",
		d->parent[0] ? "as a child of " : "as a root",
		d->parent[0] ? d->parent : "");
	a->failed = 1;
	return false;
}

/* @d exists as @st: resize if the capacity differs, then the rest. */
static void fix_existing(struct apply *a, const struct cli_decl *d,
			 const struct wsem_stat *st)
{
	int fd;

	if (!parent_matches(a, d, st))
		return;

	if (d->cluster) {
		/* the capacity in force is the agent's to lend */
		if (st->ceiling != d->capacity) {
			fprintf(stderr, "wsem: %s: exists with %s %" PRIu64
				", not as cluster= declares it (loans, "
				"ceiling %" PRIu64 "): left as it is (wsem rm "
				"it for apply to make it anew)\n", d->name,
				st->ceiling ? "ceiling" : "a capacity of its own",
				st->ceiling ? (uint64_t)st->ceiling :
				(uint64_t)st->capacity, d->capacity);
			a->failed = 1;
		}
	} else if (st->capacity != d->capacity) {
		printf("resize %s %" PRIu64 " -> %" PRIu64 "%s\n", d->name,
		       (uint64_t)st->capacity, d->capacity, sfx(a));
		if (!a->dry) {
			fd = wsem_open(d->name, 0, 0, 0);
			if (fd < 0 || wsem_set_capacity(fd, d->capacity))
				fail(a, d->name, "resize", errno);
			if (fd >= 0)
				close(fd);
		}
	}
	fix_attrs(a, d, st);
}

/* @d, a child of @d->parent: its handle, or -1 after one line. */
static int create_child(struct apply *a, const struct cli_decl *d,
			mode_t mode)
{
	int pfd = wsem_open(d->parent, O_CLOEXEC, 0, 0), fd;

	if (pfd < 0) {
		fprintf(stderr, "wsem: %s: create: parent %s: %s\n", d->name,
			d->parent, errno == ENOENT ? "no such semaphore" :
			strerror(errno));
		a->failed = 1;
		return -1;
	}
	fd = wsem_open_child(pfd, d->name, O_EXCL | O_CLOEXEC, mode,
			     d->capacity);
	if (fd < 0)
		fail(a, d->name, "create", errno);
	close(pfd);
	return fd;
}

/* @d does not exist: create it with its mode, then its owner. */
static void create(struct apply *a, const struct cli_decl *d)
{
	struct wsem_stat st;
	mode_t mode = d->has_mode ? d->mode : CLI_DEFAULT_MODE;
	int fd;

	printf("create %s %s %" PRIu64 " mode %04o%s%s%s\n", d->name,
	       d->cluster ? "loans ceiling" : "capacity", d->capacity,
	       (unsigned int)mode, d->parent[0] ? " parent " : "", d->parent,
	       sfx(a));
	if (a->dry)
		return;
	if (d->parent[0]) {
		fd = create_child(a, d, mode);
		if (fd < 0)
			return;
	} else {
		fd = wsem_open(d->name, O_CREAT | O_EXCL |
			       (d->cluster ? WSEM_LOANS : 0), mode,
			       d->capacity);
	}
	if (fd < 0) {
		fail(a, d->name, "create", errno);
		return;
	}
	if (!wsem_stat(fd, &st))
		fix_attrs(a, d, &st);
	close(fd);
}

static const struct wsem_stat *find(const struct wsem_stat *st, size_t n,
				    const char *name)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (!strcmp(st[i].name, name))
			return &st[i];
	}
	return NULL;
}

/*
 * What exists and no file declares: remove it with --prune.  Without it,
 * that is no change, and a run that changes nothing prints nothing:
 * listed only with --verbose.  With --prune and a rejected file it is
 * kept, and that is said, since --prune was asked for.
 */
static void undeclared(struct apply *a, const struct cli_conf *c,
		       const struct wsem_stat *st, size_t n, bool prune)
{
	bool verbose = cli_opt(apply_opts, "verbose")->seen;

	size_t i, j;

	for (i = 0; i < n; i++) {
		for (j = 0; j < c->n; j++) {
			if (!strcmp(c->decl[j].name, st[i].name))
				break;
		}
		if (j < c->n)
			continue;
		if (!prune || c->bad) {
			if (prune || verbose)
				printf("undeclared %s%s\n", st[i].name, prune ?
				       " (kept: a file was rejected)" : "");
			continue;
		}
		printf("remove %s%s\n", st[i].name, sfx(a));
		if (!a->dry && wsem_unlink(st[i].name) && errno != ENOENT)
			fail(a, st[i].name, "remove", errno);
	}
}

/*
 * The order to apply @c's declarations in, into @order: each parent
 * declared with them before its children, else the files' order.  A
 * declaration whose parent= chain comes back to it is left out, with one
 * line.  How many there are in @order.
 */
static size_t apply_order(const struct cli_conf *c, size_t *order,
			  struct apply *a)
{
	bool *done = calloc(c->n ? c->n : 1, sizeof(*done));
	size_t i, j, n = 0;
	bool more = true;

	if (!done) {
		for (i = 0; i < c->n; i++)
			order[n++] = i;
		return n;
	}
	while (more) {
		more = false;
		for (i = 0; i < c->n; i++) {
			if (done[i])
				continue;
			for (j = 0; j < c->n; j++) {
				if (!done[j] &&
				    !strcmp(c->decl[j].name, c->decl[i].parent))
					break;
			}
			if (j < c->n)
				continue;	/* its parent first */
			done[i] = more = true;
			order[n++] = i;
		}
	}
	for (i = 0; i < c->n; i++) {
		if (done[i])
			continue;
		fprintf(stderr, "wsem: %s:%u: %s: parent=%s comes back to it: "
			"left out\n", c->decl[i].file, c->decl[i].line,
			c->decl[i].name, c->decl[i].parent);
		a->failed = 1;
	}
	free(done);
	return n;
}

int cli_apply(const struct cli_verb *verb, int argc, char **argv)
{
	struct cli_parse p = {
		.verb = verb,
		.opts = apply_opts,
		.command = true,	/* PATH... */
		.command_optional = true,	/* none: CLI_CONF_DIRS */
	};
	char **paths;
	struct cli_conf c = { 0 };
	struct apply a = { 0 };
	const struct wsem_stat *cur;
	struct wsem_stat *st;
	size_t n, i, k, norder, *order;
	int ret = cli_parse(&p, argc, argv);

	if (ret)
		return ret;
	paths = p.cmd && *p.cmd ? p.cmd : NULL;
	for (i = 0; paths && paths[i]; i++) {
		if (paths[i][0] == '-')
			return cli_usage(verb->synopsis,
					 "options go before PATH: '%s'",
					 paths[i]);
	}
	a.dry = cli_opt(apply_opts, "dry-run")->seen;
	cli_conf_read(&c, paths);
	st = cli_list_all(&n);
	if (!st)
		return cli_fail("/dev/wsem", errno);
	order = malloc((c.n ? c.n : 1) * sizeof(*order));
	if (!order) {
		free(st);
		free(c.decl);
		return cli_fail("wsem apply", ENOMEM);
	}
	umask(0);		/* modes are exact */
	norder = apply_order(&c, order, &a);
	for (k = 0; k < norder; k++) {
		i = order[k];
		cur = find(st, n, c.decl[i].name);
		if (cur)
			fix_existing(&a, &c.decl[i], cur);
		else
			create(&a, &c.decl[i]);
	}
	free(order);
	undeclared(&a, &c, st, n, cli_opt(apply_opts, "prune")->seen);
	if (a.tmp[0]) {
		umount2(a.tmp, MNT_DETACH);
		rmdir(a.tmp);
	}
	free(st);
	free(c.decl);
	return c.bad || a.failed ? CLI_EXIT_ERROR : CLI_EXIT_OK;
}
