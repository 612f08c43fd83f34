// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The declarations "wsem apply" reads: files of /etc/wsem.d, /run/wsem.d
 * and /usr/lib/wsem.d (conf_default()), or those named, one semaphore a
 * line,
 *
 *	# NAME   KEY=VALUE...
 *	build    capacity=8 mode=0660 group=builders
 *	gpu      capacity=2 owner=ci
 *	gpu-ci   capacity=1 parent=gpu
 *
 * capacity is required; mode (octal), owner and group (a name, or a
 * number) are enforced only when given;
 * parent=NAME makes it a child of NAME (WSEM_OPEN_CHILD).  cluster=etcd
 * makes it this host's share of a cluster limit: a loans semaphore
 * (WSEM_LOANS) whose ceiling is capacity, to which wsem-agent lends; the
 * agent's own keys (endpoints=, host=, ...: agent/conf.go) are left to
 * it, and allowed only with cluster=.
 * A "#" starts a comment.  A file with any error is rejected whole.
 */
#define _GNU_SOURCE		/* asprintf() */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "cli.h"

#define LINE_MAX_LEN	1024

/*
 * The id of @name, a user (@user) or a group: @name itself when it is a
 * number, else what cli_user_id() or cli_group_id() finds: through NSS in
 * wsem, in /etc/passwd and /etc/group in wsem-static (cli/ids/).
 */
static bool lookup_id(bool user, const char *name, unsigned int *id)
{
	uint64_t n;

	if (cli_parse_u64(name, &n)) {
		if (n >= UINT32_MAX)		/* (uid_t)-1 means "none" */
			return false;
		*id = (unsigned int)n;
		return true;
	}
	return !(user ? cli_user_id(name, id) : cli_group_id(name, id));
}

/* A name as the kernel takes it: 1..63 bytes of [A-Za-z0-9._-]. */
static bool name_valid(const char *name)
{
	size_t len = strlen(name);

	return len && len < WSEM_NAME_MAX &&
	       strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			    "0123456789._-") == len;
}

/* Is @key one of wsem-agent's, for a line with cluster=etcd? */
static bool agent_key(const char *key)
{
	static const char *const keys[] = {
		"endpoints", "host", "prefix", "ttl", "hold", "turn",
		"policy", "cacert", "cert", "key",
	};
	size_t i;

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (!strcmp(key, keys[i]))
			return true;
	}
	return false;
}

/* One KEY=VALUE of a line into @d; NULL or what is wrong. */
static const char *conf_key(struct cli_decl *d, char *word)
{
	char *val = strchr(word, '=');

	if (!val)
		return "expected KEY=VALUE";
	*val++ = '\0';
	if (!strcmp(word, "capacity")) {
		if (!cli_parse_u64(val, &d->capacity) || !d->capacity ||
		    d->capacity > WSEM_CAPACITY_MAX)
			return "invalid capacity";
	} else if (!strcmp(word, "mode")) {
		if (!d->has_mode)
			d->mode = CLI_DEFAULT_MODE;
		if (!cli_parse_mode(val, &d->mode))
			return "invalid mode (octal, at most 0777)";
		d->has_mode = true;
	} else if (!strcmp(word, "owner")) {
		if (!lookup_id(true, val, &d->uid))
			return "unknown owner";
		d->has_uid = true;
	} else if (!strcmp(word, "group")) {
		if (!lookup_id(false, val, &d->gid))
			return "unknown group";
		d->has_gid = true;
	} else if (!strcmp(word, "parent")) {
		if (!name_valid(val))
			return "invalid parent (a NAME: 1-63 of A-Z a-z 0-9 . "
			       "_ -)";
		strcpy(d->parent, val);
	} else if (!strcmp(word, "cluster")) {
		if (strcmp(val, "etcd"))
			return "invalid cluster (etcd)";
		d->cluster = true;
	} else if (agent_key(word)) {
		if (!*val)
			return "expected KEY=VALUE";
		d->agent_key = true;
	} else {
		return "unknown key (capacity, mode, owner, group, parent, "
		       "cluster)";
	}
	return NULL;
}

/* Parse one line (no comment, not blank) into @d; NULL or the error. */
static const char *conf_line(struct cli_decl *d, char *line)
{
	char *word, *save;
	const char *err;

	memset(d, 0, sizeof(*d));
	word = strtok_r(line, " \t", &save);
	if (!name_valid(word))
		return "invalid NAME (1-63 of A-Z a-z 0-9 . _ -)";
	strcpy(d->name, word);
	while ((word = strtok_r(NULL, " \t", &save))) {
		err = conf_key(d, word);
		if (err)
			return err;
	}
	if (!strcmp(d->parent, d->name))
		return "parent= names the semaphore itself";
	if (d->agent_key && !d->cluster)
		return "endpoints=, host=, ... are wsem-agent's: only with "
		       "cluster=etcd";
	if (d->cluster && d->parent[0])
		return "a cluster limit (cluster=) has no parent=";
	return d->capacity ? NULL : "capacity=N is required";
}

/* Is @name declared in @c already?  Its index, or -1. */
static ssize_t conf_find(const struct cli_conf *c, const char *name)
{
	size_t i;

	for (i = 0; i < c->n; i++) {
		if (!strcmp(c->decl[i].name, name))
			return (ssize_t)i;
	}
	return -1;
}

static int conf_error(const char *file, unsigned int line, const char *msg)
{
	fprintf(stderr, "wsem: %s:%u: %s; nothing of this file is applied\n",
		file, line, msg);
	return -1;
}

/* Append what file @path declares to @c, all or nothing; 0 or -1. */
static int conf_file(struct cli_conf *c, const char *path)
{
	char buf[LINE_MAX_LEN], *p, where[WSEM_NAME_MAX + 32];
	size_t first = c->n;
	struct cli_decl d, *nd;
	unsigned int line = 0;
	const char *err = NULL;
	ssize_t dup;
	FILE *f = fopen(path, "re");

	if (!f) {
		fprintf(stderr, "wsem: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (!err && fgets(buf, sizeof(buf), f)) {
		line++;
		if (!strchr(buf, '\n') && !feof(f)) {
			err = "line too long";
			break;
		}
		buf[strcspn(buf, "#\n")] = '\0';
		for (p = buf; isspace((unsigned char)*p); p++)
			;
		if (!*p)
			continue;
		err = conf_line(&d, p);
		if (err)
			break;
		dup = conf_find(c, d.name);
		if (dup >= 0) {
			snprintf(where, sizeof(where), "%s declared again",
				 d.name);
			err = where;
			break;
		}
		nd = realloc(c->decl, (c->n + 1) * sizeof(*nd));
		if (!nd) {
			err = strerror(ENOMEM);
			break;
		}
		c->decl = nd;
		d.file = path;
		d.line = line;
		c->decl[c->n++] = d;
	}
	if (!err && ferror(f))
		err = strerror(EIO);
	fclose(f);
	if (!err)
		return 0;
	c->n = first;			/* none of this file */
	return conf_error(path, line, err);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Free the @n names of @names, and @names. */
static void free_names(char **names, ssize_t n)
{
	ssize_t i;

	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/*
 * The names of the *.conf files of @dir into *@names (malloc()ed, each
 * too); how many, or -1 after one line (*@names NULL).  No directory:
 * none.
 */
static ssize_t conf_names(const char *dir, char ***names)
{
	struct dirent *e;
	size_t n = 0, len;
	char **nn;
	DIR *d = opendir(dir);

	*names = NULL;
	if (!d) {
		/* No directory: nothing is declared. */
		if (errno == ENOENT)
			return 0;
		fprintf(stderr, "wsem: %s: %s\n", dir, strerror(errno));
		return -1;
	}
	while ((e = readdir(d))) {
		len = strlen(e->d_name);
		if (e->d_name[0] == '.' || len < 6 ||
		    strcmp(e->d_name + len - 5, ".conf"))
			continue;
		nn = realloc(*names, (n + 1) * sizeof(*nn));
		if (nn)
			*names = nn;
		if (!nn || !(nn[n] = strdup(e->d_name))) {
			closedir(d);
			free_names(*names, n);
			*names = NULL;
			fprintf(stderr, "wsem: %s: %s\n", dir, strerror(ENOMEM));
			return -1;
		}
		n++;
	}
	closedir(d);
	return (ssize_t)n;
}

/* Read file @name of @dir into @c; 0 or -1. */
static int conf_dir_file(struct cli_conf *c, const char *dir, const char *name)
{
	char *p;

	/* The declarations keep the path, for messages. */
	if (asprintf(&p, "%s/%s", dir, name) < 0)
		return -1;
	return conf_file(c, p);
}

/* The *.conf files of directory @dir, in name order, into @c. */
static int conf_dir(struct cli_conf *c, const char *dir)
{
	char **names;
	ssize_t n = conf_names(dir, &names), i;
	int ret = 0;

	if (n < 0)
		return -1;
	qsort(names, n, sizeof(*names), by_name);
	for (i = 0; i < n; i++) {
		if (conf_dir_file(c, dir, names[i]))
			ret = -1;
	}
	free_names(names, n);
	return ret;
}

/* Is @path /dev/null (a symlink to it: the file is masked)? */
static bool masked(const char *path)
{
	struct stat sb;

	return !stat(path, &sb) && S_ISCHR(sb.st_mode) &&
	       major(sb.st_rdev) == 1 && minor(sb.st_rdev) == 3;
}

/* A file of the default directories: its name, and the one that wins. */
struct conf_entry {
	char *name;
	const char *dir;
};

static int by_entry_name(const void *a, const void *b)
{
	return strcmp(((const struct conf_entry *)a)->name,
		      ((const struct conf_entry *)b)->name);
}

/* Whether @e (@n entries) has one named @name. */
static bool has_entry(const struct conf_entry *e, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (!strcmp(e[i].name, name))
			return true;
	}
	return false;
}

/*
 * Add the *.conf files of @dir that no earlier directory has to *@e
 * (*@n entries); 0, or -1 after one line.
 */
static int add_entries(struct conf_entry **e, size_t *n, const char *dir)
{
	char **names;
	ssize_t k = conf_names(dir, &names), i;
	struct conf_entry *ne;
	int ret = k < 0 ? -1 : 0;

	for (i = 0; i < k; i++) {
		if (has_entry(*e, *n, names[i]))
			continue;
		ne = realloc(*e, (*n + 1) * sizeof(*ne));
		if (!ne) {
			ret = -1;
			break;
		}
		*e = ne;
		ne[*n].name = names[i];
		ne[*n].dir = dir;
		names[i] = NULL;	/* now the entry's */
		(*n)++;
	}
	free_names(names, k < 0 ? 0 : k);
	return ret;
}

/*
 * No PATH: the *.conf files of /etc/wsem.d, /run/wsem.d and
 * /usr/lib/wsem.d, as sysctl.d(5) and tmpfiles.d(5) read theirs: a file
 * of /etc hides one of the same name in /run or /usr/lib, one of /run
 * one in /usr/lib; a winner that is /dev/null (a symlink to it) masks the
 * name; the files are read in the order of their names, whatever their
 * directory.  A directory that is not there declares nothing.
 */
static int conf_default(struct cli_conf *c)
{
	static const char *const dirs[] = CLI_CONF_DIRS;
	struct conf_entry *e = NULL;
	size_t n = 0, i;
	char path[4096];
	int ret = 0;

	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		if (add_entries(&e, &n, dirs[i]))
			ret = -1;
	}
	if (n)
		qsort(e, n, sizeof(*e), by_entry_name);
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", e[i].dir, e[i].name);
		if (!masked(path) && conf_dir_file(c, e[i].dir, e[i].name))
			ret = -1;
		free(e[i].name);
	}
	free(e);
	return ret;
}

/**
 * cli_conf_read() - read declarations from files and directories
 * @c: filled; c->bad is set if any file was rejected
 * @paths: NULL-terminated; a directory contributes its *.conf files;
 *	   NULL: the default directories (conf_default())
 *
 * Return: 0, or -1 if any file was rejected (the others are in @c).
 */
int cli_conf_read(struct cli_conf *c, char **paths)
{
	DIR *d;
	int ret = 0;

	if (!paths) {
		ret = conf_default(c);
		c->bad = ret != 0;
		return ret;
	}
	for (; *paths; paths++) {
		d = opendir(*paths);
		if (d)
			closedir(d);
		if (d ? conf_dir(c, *paths) : conf_file(c, *paths))
			ret = -1;
	}
	c->bad = ret != 0;
	return ret;
}
