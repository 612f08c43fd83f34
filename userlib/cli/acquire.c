// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * wsem acquire and wsem release: a lease that the shell holds itself, as
 * "flock 9" holds a lock on the shell's descriptor 9:
 *
 *	exec 9<>/sys/fs/wsem/gpu
 *	wsem acquire --fd 9 --weight 2
 *	...
 *	wsem release --fd 9		(or exec 9>&-)
 *
 * Both act on the open file --fd N itself, never on a reopen of it: the
 * weight belongs to the shell's descriptor, and goes back when the shell
 * releases it, closes it or exits.  Acquiring on a handle that wsem opened
 * itself would hold weight until wsem exits, a moment later, so there is
 * no NAME form.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static struct cli_opt acquire_opts[] = {
	{ .name = "fd", .arg = "N",
	  .help = "the handle to acquire on (required): the shell's own" },
	{ .name = "weight", .arg = "W",
	  .help = "the weight to acquire (default 1; all: the capacity)" },
	{ .name = "timeout", .short_name = 't', .arg = "DURATION",
	  .help = "give up after DURATION (5, 1.5s, 5m, 2h, 1d): exit 124" },
	{ .name = "nonblock", .short_name = 'n',
	  .help = "acquire only at once, else exit 75" },
	{ .name = "conflict-exit-code", .short_name = 'E', .arg = "N",
	  .help = "exit N (0-255) instead of 75 or 124" },
	{ .name = "label", .arg = "TEXT",
	  .help = "what the weight is held for, shown by stat" },
	FLOCK_HABITS,
	{ .name = NULL },
};

static struct cli_opt release_opts[] = {
	{ .name = "fd", .arg = "N",
	  .help = "the handle to release on (required)" },
	{ .name = "weight", .arg = "W",
	  .help = "the weight to give back (default: all the handle holds)" },
	{ .name = "wait", .short_name = 'w', .refuse = "a weight is "
	  "--weight W (-w is flock(1)'s timeout, which acquire and run "
	  "refuse)" },
	{ .name = NULL },
};

/* "--fd N", for messages. */
static const char *fd_text(const struct cli_opt *opts, char *buf, size_t len)
{
	snprintf(buf, len, "--fd %s", cli_opt((struct cli_opt *)opts,
					      "fd")->value);
	return buf;
}

/* A read-only descriptor: say how to open one that can take weight. */
static int fail_readonly(const char *what)
{
	return cli_fail_msg(what, "Bad file descriptor (a handle open "
			    "read-only watches, it cannot acquire: open it "
			    "with exec N<>FILE)", CLI_EXIT_ERROR);
}

/* --label TEXT: 0..63 bytes of printable ASCII; 0 or a usage status. */
static int check_label(const char *syn, const struct cli_opt *o)
{
	const char *p;

	if (!o->seen)
		return 0;
	for (p = o->value; *p; p++) {
		if (*p < 0x20 || *p > 0x7e)
			break;
	}
	if (*p || p - o->value >= WSEM_LABEL_MAX)
		return cli_usage(syn, "invalid TEXT of --label (at most %d "
				 "bytes of printable ASCII)",
				 WSEM_LABEL_MAX - 1);
	return 0;
}

/* Label handle @fd before it queues, so that its wait shows it too. */
static int label_on(int fd, const char *what, const struct cli_opt *o)
{
	if (!o->seen || !wsem_set_label(fd, o->value))
		return 0;
	if (errno == EBADF)
		return fail_readonly(what);
	return cli_fail_nodev(what, errno);
}

int cli_acquire(const struct cli_verb *verb, int argc, char **argv)
{
	struct cli_parse p = {
		.verb = verb,
		.opts = acquire_opts,
		.fd_only = true,
	};
	struct cli_lease l = { 0 };
	char what[48];
	int fd, ret;

	ret = cli_parse(&p, argc, argv);
	if (!ret)
		ret = cli_lease_options(verb->synopsis, acquire_opts, &l);
	if (!ret)
		ret = check_label(verb->synopsis, cli_opt(acquire_opts, "label"));
	if (!ret)
		ret = cli_fd_option(verb->synopsis,
				    cli_opt(acquire_opts, "fd"), &fd);
	if (ret)
		return ret;
	l.what = fd_text(acquire_opts, what, sizeof(what));
	ret = label_on(fd, l.what, cli_opt(acquire_opts, "label"));
	if (ret)
		return ret;
	if (cli_lease_acquire(fd, &l, &ret))
		return CLI_EXIT_OK;
	return ret;
}

/* --weight W of release: 1 or more, or all; 0 (all) or a usage status. */
static int release_weight(const char *syn, uint64_t *w)
{
	struct cli_opt *o = cli_opt(release_opts, "weight");

	*w = 0;
	if (!o->seen || !strcmp(o->value, "all"))
		return 0;
	if (!cli_parse_u64(o->value, w) || !*w)
		return cli_usage(syn, "invalid WEIGHT '%s' (1 .. what the "
				 "handle holds, or all)", o->value);
	return 0;
}

/* Give back @w (0: all) of what handle @fd holds; 0 or exit status. */
static int release_on(int fd, const char *what, uint64_t w)
{
	struct wsem_stat st;
	char msg[96];

	if (wsem_stat(fd, &st))
		return cli_fail_nodev(what, errno);
	if (!w && !st.held)
		return CLI_EXIT_OK;		/* nothing held: nothing to do */
	if (w > st.held) {
		snprintf(msg, sizeof(msg), "weight %" PRIu64 " exceeds what "
			 "this handle holds (%" PRIu64 ")", w,
			 (uint64_t)st.held);
		return cli_fail_msg(what, msg, CLI_EXIT_ERROR);
	}
	if (!wsem_release(fd, w ? w : st.held))
		return CLI_EXIT_OK;
	if (errno == EBADF)
		return fail_readonly(what);
	return cli_fail_nodev(what, errno);
}

int cli_release(const struct cli_verb *verb, int argc, char **argv)
{
	struct cli_parse p = {
		.verb = verb,
		.opts = release_opts,
		.fd_only = true,
	};
	uint64_t w;
	char what[48];
	int fd, ret;

	ret = cli_parse(&p, argc, argv);
	if (!ret)
		ret = release_weight(verb->synopsis, &w);
	if (!ret)
		ret = cli_fd_option(verb->synopsis,
				    cli_opt(release_opts, "fd"), &fd);
	if (ret)
		return ret;
	return release_on(fd, fd_text(release_opts, what, sizeof(what)), w);
}
