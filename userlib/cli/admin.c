// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * wsem create, rm and resize.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

/* Parse operand @s as a number called @what, or print a usage message. */
static int operand_u64(const struct cli_verb *verb, const char *what,
		       const char *s, uint64_t *v)
{
	if (cli_parse_u64(s, v))
		return 0;
	return cli_usage(verb->synopsis, "invalid %s '%s'", what, s);
}

static struct cli_opt create_opts[] = {
	{ .name = "mode", .short_name = 'm', .arg = "MODE",
	  .help = "permission bits, octal or symbolic (u=rw,g=r), as given "
		  "(default 0600 & ~umask)" },
	{ .name = "exclusive", .short_name = 'x',
	  .help = "fail if NAME exists" },
	{ .name = "exist-ok",
	  .help = "accept an existing NAME whatever its capacity" },
	{ .name = "loans",
	  .help = "capacity from loans (wsem lend) alone; CAPACITY is the "
		  "ceiling" },
	{ .name = "parent", .short_name = 'p', .arg = "PARENT",
	  .help = "a child of PARENT (a NAME or a PATH): what it takes, "
		  "PARENT gives too" },
	{ .name = "parent-fd", .arg = "N",
	  .help = "a child of the inherited handle N's semaphore" },
	{ .name = NULL },
};

static int create_mode(const struct cli_verb *verb, mode_t *mode)
{
	struct cli_opt *o = cli_opt(create_opts, "mode");

	*mode = CLI_DEFAULT_MODE;
	if (!o->seen || cli_parse_mode(o->value, mode))
		return 0;
	return cli_usage(verb->synopsis, "invalid MODE '%s'", o->value);
}

/*
 * check_capacity() where --loans was given or @st is a loans semaphore:
 * the same kind with the same ceiling is success.
 */
static int check_loans(const char *name, const struct wsem_stat *st,
		       uint64_t capacity, bool loans)
{
	char msg[160];

	if (loans && st->ceiling == capacity)
		return CLI_EXIT_OK;
	if (cli_opt(create_opts, "exist-ok")->seen) {
		fprintf(stderr, "wsem: note: %s exists %s, left as it is\n",
			name, st->ceiling ? "as a loans semaphore" :
			"without --loans");
		return CLI_EXIT_OK;
	}
	if (!st->ceiling)
		snprintf(msg, sizeof(msg), "exists with capacity %" PRIu64
			 ", without --loans (--exist-ok accepts it)",
			 (uint64_t)st->capacity);
	else if (!loans)
		snprintf(msg, sizeof(msg), "exists as a loans semaphore of "
			 "ceiling %" PRIu64 " (--exist-ok accepts it)",
			 (uint64_t)st->ceiling);
	else
		snprintf(msg, sizeof(msg), "exists with ceiling %" PRIu64
			 ", not %" PRIu64 " (--exist-ok accepts it)",
			 (uint64_t)st->ceiling, capacity);
	return cli_fail_msg(name, msg, CLI_EXIT_ERROR);
}

/*
 * Handle @fd on @name, which exists: compare its capacity with the one
 * asked for (with --loans: that it takes its capacity from loans, and its
 * ceiling), then close @fd.  The same is success; another is an error
 * unless --exist-ok, which still says so.  -1 with errno if stat fails.
 */
static int check_capacity(const char *name, int fd, uint64_t capacity)
{
	bool loans = cli_opt(create_opts, "loans")->seen;
	struct wsem_stat st;
	char msg[160];

	if (wsem_stat(fd, &st)) {
		int err = errno;

		close(fd);
		errno = err;
		return -1;
	}
	close(fd);
	if (loans || st.ceiling)
		return check_loans(name, &st, capacity, loans);
	if (st.capacity == capacity)
		return CLI_EXIT_OK;
	if (cli_opt(create_opts, "exist-ok")->seen) {
		cli_note_capacity(name, st.capacity, capacity);
		return CLI_EXIT_OK;
	}
	snprintf(msg, sizeof(msg), "exists with capacity %" PRIu64 ", not %"
		 PRIu64 " (--exist-ok accepts it, wsem resize changes it)",
		 (uint64_t)st.capacity, capacity);
	return cli_fail_msg(name, msg, CLI_EXIT_ERROR);
}

/*
 * @name exists: compare its capacity with the one asked for.  The same is
 * success; another is an error unless --exist-ok, which still says so.
 * -1 with errno when it cannot be opened (ENOENT: removed meanwhile).
 */
static int check_existing(const char *name, uint64_t capacity)
{
	int fd = wsem_open(name, 0, 0, 0);

	if (fd < 0)
		return -1;
	return check_capacity(name, fd, capacity);
}

/**
 * cli_create_open() - wsem_open() with O_CREAT, the mode as the user meant it
 * @name:	the semaphore's name
 * @oflag:	O_CREAT and the other flags of wsem_open()
 * @mode:	its permission bits
 * @exact:	@mode was given (--mode): as with mkdir -m, the umask is not
 *		applied; otherwise (the default mode) it is
 * @capacity:	the capacity, should it be created
 *
 * Return: the handle, or -1 with errno set, as wsem_open().
 */
int cli_create_open(const char *name, int oflag, mode_t mode, bool exact,
		    uint64_t capacity)
{
	mode_t old = 0;
	int fd, err;

	if (exact)
		old = umask(0);
	fd = wsem_open(name, oflag, mode, capacity);
	err = errno;
	if (exact)
		umask(old);
	errno = err;
	return fd;
}

/*
 * Create @name, or find it there: O_EXCL tells which.  A semaphore removed
 * between the two steps is created again (a few times at most).
 */
static int create_or_check(const char *name, mode_t mode, uint64_t capacity)
{
	bool exclusive = cli_opt(create_opts, "exclusive")->seen;
	int oflag = O_CREAT | O_EXCL;
	int fd, ret, tries;

	if (cli_opt(create_opts, "loans")->seen)
		oflag |= WSEM_LOANS;
	for (tries = 0; tries < 3; tries++) {
		fd = cli_create_open(name, oflag, mode,
				     cli_opt(create_opts, "mode")->seen,
				     capacity);
		if (fd >= 0) {
			close(fd);
			return CLI_EXIT_OK;
		}
		if (errno != EEXIST || exclusive)
			return cli_fail(name, errno);
		ret = check_existing(name, capacity);
		if (ret >= 0)
			return ret;
		if (errno != ENOENT)
			return cli_fail(name, errno);
	}
	return cli_fail(name, EAGAIN);
}

/**
 * cli_open_parent() - a handle on the semaphore to make a child under
 * @parent:	a NAME or a path (a wsemfs file, bind-mounted perhaps)
 * @own:	set to whether the handle is ours to close: the inherited
 *		$WSEM_FD of "wsem run --inherit", when it is bound to
 *		@parent, is used as it is
 *
 * Return: the handle, or -1 with errno set, as wsem_open().
 */
int cli_open_parent(const char *parent, bool *own)
{
	int fd = cli_inherited_fd(parent);

	*own = fd < 0;
	return fd >= 0 ? fd : wsem_open(parent, O_CLOEXEC, 0, 0);
}

/*
 * One line for @err, from creating child @name under @parent (a NAME, a
 * path or "--parent-fd N"): the reasons only a child has are spelled out.
 */
int cli_fail_child(const char *name, const char *parent, int err)
{
	char msg[160];

	switch (err) {
	case EEXIST:
		snprintf(msg, sizeof(msg), "exists, and is not a child of %s",
			 parent);
		break;
	case ELOOP:
		snprintf(msg, sizeof(msg), "too deep: %s is %d levels below "
			 "its root already, the most a tree has", parent,
			 WSEM_DEPTH_MAX);
		break;
	case EBADF:
		snprintf(msg, sizeof(msg), "the parent %s is open read-only: "
			 "a child needs it open for reading and writing",
			 parent);
		break;
	default:
		return cli_fail_target(name, err);
	}
	return cli_fail_msg(name, msg, CLI_EXIT_ERROR);
}

/**
 * cli_create_child() - wsem_open_child(), the mode as the user meant it
 * @pfd:	a handle on the parent
 * @name:	the child's name
 * @oflag:	0 or O_EXCL
 * @mode:	its permission bits
 * @exact:	@mode was given: the umask is not applied (cli_create_open())
 * @capacity:	its own capacity, should it be created
 *
 * Return: the handle, or -1 with errno set, as wsem_open_child().
 */
int cli_create_child(int pfd, const char *name, int oflag, mode_t mode,
		     bool exact, uint64_t capacity)
{
	mode_t old = 0;
	int fd, err;

	if (exact)
		old = umask(0);
	fd = wsem_open_child(pfd, name, oflag | O_CLOEXEC, mode, capacity);
	err = errno;
	if (exact)
		umask(old);
	errno = err;
	return fd;
}

/*
 * create --parent PARENT or --parent-fd N: make @name a child of PARENT's
 * semaphore, or find it there as such a child (with the capacity check
 * of a plain create).  A NAME that exists under another parent, or as a
 * root, is an error.
 */
static int create_child(const char *syn, const char *name, mode_t mode,
			uint64_t capacity)
{
	struct cli_opt *pfd_opt = cli_opt(create_opts, "parent-fd");
	const char *parent = cli_opt(create_opts, "parent")->value;
	bool exclusive = cli_opt(create_opts, "exclusive")->seen;
	bool own = false;
	char what[32];
	int pfd, fd, ret;

	if (pfd_opt->seen) {
		ret = cli_fd_option(syn, &(struct cli_opt){ .seen = true,
			.value = pfd_opt->value }, &pfd);
		if (ret)
			return ret;
		snprintf(what, sizeof(what), "--parent-fd %d", pfd);
		parent = what;
	} else {
		ret = cli_check_name(parent);
		if (ret)
			return ret;
		pfd = cli_open_parent(parent, &own);
		if (pfd < 0) {
			int err = errno;

			if (err == ENOENT && !cli_device_error(err))
				return cli_fail_msg(parent, "no such parent "
						    "semaphore",
						    CLI_EXIT_NOTFOUND);
			return cli_fail_target(parent, err);
		}
	}
	fd = cli_create_child(pfd, name, exclusive ? O_EXCL : 0, mode,
			      cli_opt(create_opts, "mode")->seen, capacity);
	if (fd < 0 && exclusive && errno == EEXIST)
		ret = cli_fail(name, EEXIST);	/* there, whatever its parent */
	else if (fd < 0)
		ret = cli_fail_child(name, parent, errno);
	else
		ret = check_capacity(name, fd, capacity);
	if (ret < 0)
		ret = cli_fail(name, errno);
	if (own)
		close(pfd);
	return ret;
}

/*
 * An existing semaphore of the same capacity is success; of another
 * capacity an error, unless --exist-ok; with --exclusive any is.  With
 * --loans, CAPACITY is the ceiling of a semaphore whose own capacity is 0.
 */
int cli_create(const struct cli_verb *verb, int argc, char **argv)
{
	struct cli_parse p = {
		.verb = verb,
		.opts = create_opts,
		.max_pos = 2,
	};
	uint64_t capacity;
	mode_t mode;
	int ret;

	ret = cli_parse(&p, argc, argv);
	if (!ret)
		ret = operand_u64(verb, "CAPACITY", p.pos[1], &capacity);
	if (!ret)
		ret = create_mode(verb, &mode);
	if (!ret && cli_opt(create_opts, "exclusive")->seen &&
	    cli_opt(create_opts, "exist-ok")->seen)
		ret = cli_usage(verb->synopsis,
				"--exclusive and --exist-ok exclude each other");
	if (!ret && cli_opt(create_opts, "parent")->seen &&
	    cli_opt(create_opts, "parent-fd")->seen)
		ret = cli_usage(verb->synopsis,
				"--parent and --parent-fd exclude each other");
	if (!ret && cli_opt(create_opts, "loans")->seen &&
	    (cli_opt(create_opts, "parent")->seen ||
	     cli_opt(create_opts, "parent-fd")->seen))
		ret = cli_usage(verb->synopsis,
				"--loans makes a root: not with a parent");
	if (ret)
		return ret;
	if (cli_is_path(p.pos[0]))
		return cli_fail_msg(p.pos[0], "a semaphore is created by NAME, "
				    "in the IPC namespace it is for",
				    CLI_EXIT_USAGE);
	ret = cli_check_name(p.pos[0]);
	if (!ret)
		ret = cli_check_capacity(p.pos[0], capacity);
	if (ret)
		return ret;
	if (cli_opt(create_opts, "parent")->seen ||
	    cli_opt(create_opts, "parent-fd")->seen)
		return create_child(verb->synopsis, p.pos[0], mode, capacity);
	return create_or_check(p.pos[0], mode, capacity);
}

static struct cli_opt rm_opts[] = {
	{ .name = "force", .short_name = 'f',
	  .help = "a NAME or PATH that is not there is no error (as rm -f)" },
	{ .name = NULL },
};

/*
 * rm -f: was the unlink's @err only that @name is not there?  Not when
 * /dev/wsem is missing: "no module" is still an error.
 */
static bool rm_absent(const char *name, int err)
{
	if (!cli_opt(rm_opts, "force")->seen || err != ENOENT)
		return false;
	return cli_is_path(name) || !cli_device_error(err);
}

int cli_rm(const struct cli_verb *verb, int argc, char **argv)
{
	struct cli_parse p = {
		.verb = verb,
		.opts = rm_opts,
		.max_pos = 1,
	};
	int ret = cli_parse(&p, argc, argv);

	if (!ret)
		ret = cli_check_name(p.pos[0]);
	if (ret)
		return ret;
	if (!wsem_unlink(p.pos[0]) || rm_absent(p.pos[0], errno))
		return CLI_EXIT_OK;
	return cli_is_path(p.pos[0]) ? cli_fail_nodev(p.pos[0], errno) :
				       cli_fail(p.pos[0], errno);
}

static struct cli_opt resize_opts[] = {
	{ .name = "fd", .arg = "N", .help = "the inherited handle N" },
	{ .name = NULL },
};

/*
 * Resizing to 0 is for a semaphore that takes its capacity from loans
 * (its ceiling is not 0); any other gets the out-of-range line.
 */
static int check_zero(const char *what, int fd)
{
	struct wsem_stat st;

	if (!wsem_stat(fd, &st) && st.ceiling)
		return 0;
	return cli_check_capacity(what, 0);
}

/*
 * --fd N, or the inherited $WSEM_FD when it is bound to NAME, is used as
 * it is; otherwise NAME or a path is opened.  CAPACITY is the own
 * capacity: what handles lend comes on top.
 */
int cli_resize(const struct cli_verb *verb, int argc, char **argv)
{
	struct cli_parse p = {
		.verb = verb,
		.opts = resize_opts,
		.max_pos = 2,
	};
	const char *what;
	uint64_t capacity;
	int fd, own = -1, ret;

	ret = cli_parse(&p, argc, argv);
	if (!ret)
		ret = cli_fd_option(verb->synopsis, resize_opts, &fd);
	if (!ret)
		ret = operand_u64(verb, "CAPACITY", p.pos[fd < 0], &capacity);
	if (ret)
		return ret;
	what = fd < 0 ? p.pos[0] : "--fd";
	ret = fd < 0 ? cli_check_name(what) : 0;
	if (!ret && capacity)
		ret = cli_check_capacity(what, capacity);
	if (ret)
		return ret;
	if (fd < 0)
		fd = cli_inherited_fd(p.pos[0]);
	if (fd < 0) {
		fd = own = wsem_open(p.pos[0], 0, 0, 0);
		if (fd < 0)
			return cli_fail_target(what, errno);
	}
	ret = capacity ? 0 : check_zero(what, fd);
	if (!ret && wsem_set_capacity(fd, capacity))
		ret = -1;
	if (ret < 0)
		ret = own >= 0 ? cli_fail_target(what, errno) :
				 cli_fail_nodev(what, errno);
	if (own >= 0)
		close(own);
	return ret;
}
