// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * wsem create, rm and resize.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "cli.h"

#define CLI_DEFAULT_MODE	0600

/* Parse operand @s as a number called @what, or print a usage message. */
static int operand_u64(const struct cli_verb *verb, const char *what,
		       const char *s, uint64_t *v)
{
	if (cli_parse_u64(s, v))
		return 0;
	return cli_usage(verb->synopsis, "invalid %s '%s'", what, s);
}

static struct cli_opt create_opts[] = {
	{ .name = "mode", .has_arg = true },
	{ .name = "exclusive" },
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

/* An existing semaphore is left as it is, unless --exclusive. */
int cli_create(const struct cli_verb *verb, int argc, char **argv)
{
	struct cli_parse p = {
		.synopsis = verb->synopsis,
		.opts = create_opts,
		.max_pos = 2,
	};
	int oflag = O_CREAT | O_CLOEXEC;
	uint64_t capacity;
	mode_t mode;
	int fd, ret;

	ret = cli_parse(&p, argc, argv);
	if (!ret)
		ret = operand_u64(verb, "CAPACITY", p.pos[1], &capacity);
	if (!ret)
		ret = create_mode(verb, &mode);
	if (ret)
		return ret;
	if (cli_opt(create_opts, "exclusive")->seen)
		oflag |= O_EXCL;
	if (cli_is_path(p.pos[0]))
		return cli_fail_msg(p.pos[0], "a semaphore is created by NAME, "
				    "in the IPC namespace it is for",
				    CLI_EXIT_USAGE);
	fd = wsem_open(p.pos[0], oflag, mode, capacity);
	if (fd < 0)
		return cli_fail(p.pos[0], errno);
	close(fd);
	return CLI_EXIT_OK;
}

static struct cli_opt no_opts[] = {
	{ .name = NULL },
};

int cli_rm(const struct cli_verb *verb, int argc, char **argv)
{
	struct cli_parse p = {
		.synopsis = verb->synopsis,
		.opts = no_opts,
		.max_pos = 1,
	};
	int ret = cli_parse(&p, argc, argv);

	if (ret)
		return ret;
	if (wsem_unlink(p.pos[0]))
		return cli_fail(p.pos[0], errno);
	return CLI_EXIT_OK;
}

static struct cli_opt resize_opts[] = {
	{ .name = "fd", .has_arg = true },
	{ .name = NULL },
};

/* NAME or a path is opened; --fd N is used as it is. */
int cli_resize(const struct cli_verb *verb, int argc, char **argv)
{
	struct cli_parse p = {
		.synopsis = verb->synopsis,
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
	if (fd < 0) {
		fd = own = wsem_open(p.pos[0], O_CLOEXEC, 0, 0);
		if (fd < 0)
			return cli_fail(what, errno);
	}
	ret = wsem_set_capacity(fd, capacity);
	if (ret)
		ret = cli_fail(what, errno);
	if (own >= 0)
		close(own);
	return ret;
}
