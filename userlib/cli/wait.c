// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * wsem wait NAME|PATH|--fd N [--idle] [-t DURATION]: until nothing is held
 * and nobody is queued, a drain before maintenance.  Idle is the only
 * thing to wait for, so --idle is the default; it is still accepted.  Waiting only watches,
 * so a read-only handle does: read permission is enough.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "cli.h"

static struct cli_opt wait_opts[] = {
	{ .name = "idle", .short_name = 'i',
	  .help = "until nothing is held and nobody waits (the default)" },
	{ .name = "timeout", .short_name = 't', .arg = "DURATION",
	  .help = "give up after DURATION (exit 124)" },
	{ .name = "fd", .arg = "N", .help = "the inherited handle N" },
	{ .name = "json",
	  .help = "at the end, one JSON line: idle or not, how long" },
	{ .name = NULL },
};

/*
 * A handle of our own that holds nothing: a fresh one of the inherited
 * handle (which may hold the job's weight), else a watching one by path
 * or by name (wsem_open_watch()).  -1 with errno.
 */
static int wait_handle(const char *name, int fd)
{
	if (fd < 0)
		fd = cli_inherited_fd(name);
	if (fd >= 0)
		return wsem_reopen(fd, O_CLOEXEC);
	return wsem_open_watch(name, O_CLOEXEC);
}

int cli_wait(const struct cli_verb *verb, int argc, char **argv)
{
	struct cli_parse p = {
		.verb = verb,
		.opts = wait_opts,
		.max_pos = 1,
	};
	struct cli_opt *timeout = cli_opt(wait_opts, "timeout");
	int64_t timeout_ns = -1;
	const char *what;
	uint64_t start;
	int fd, ret, err;

	ret = cli_parse(&p, argc, argv);
	if (!ret)
		ret = cli_fd_option(verb->synopsis, cli_opt(wait_opts, "fd"),
				    &fd);
	if (ret)
		return ret;
	if ((fd < 0) != (p.npos == 1))
		return cli_usage(verb->synopsis, "NAME, PATH or --fd N: one");
	if (timeout->seen && !cli_parse_duration(timeout->value, &timeout_ns))
		return cli_usage(verb->synopsis, "invalid duration '%s'",
				 timeout->value);
	what = fd < 0 ? p.pos[0] : "--fd";
	ret = fd < 0 ? cli_check_name(what) : 0;
	if (ret)
		return ret;
	fd = wait_handle(what, fd);
	if (fd < 0)
		return cli_is_path(what) ? cli_fail_nodev(what, errno) :
					   cli_fail_target(what, errno);
	start = cli_now_ns();
	ret = wsem_wait_idle(fd, timeout_ns);
	err = errno;
	if (cli_opt(wait_opts, "json")->seen && (!ret || err == ETIMEDOUT))
		cli_print_json_wait(what, !ret, cli_now_ns() - start);
	errno = err;
	if (ret && errno == ETIMEDOUT)
		ret = cli_fail_msg(what, "timed out", CLI_EXIT_TIMEDOUT);
	else if (ret)
		ret = cli_fail_nodev(what, errno);
	close(fd);
	return ret;
}
