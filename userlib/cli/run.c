// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * wsem run: take weight, then become COMMAND.
 *
 * The handle is opened without O_CLOEXEC, the weight acquired, and COMMAND
 * exec()ed in this very process with WSEM_FD set to the handle's number.
 * COMMAND inherits the handle, so the lease lasts exactly as long as
 * COMMAND and any descendant that keeps the descriptor open; no wsem
 * process is left behind that could be killed apart from COMMAND, and the
 * exit status (or the killing signal) is COMMAND's own.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

struct run_req {
	const char *name;	/* NAME, a path, or "--fd" */
	int fd;			/* --fd N, or -1 */
	uint64_t weight;
	bool create;
	uint64_t capacity;	/* with --create */
	int64_t timeout_ns;	/* --timeout, or -1 */
	bool nonblock;
	char **cmd;
};

static struct cli_opt run_opts[] = {
	{ .name = "weight", .has_arg = true },
	{ .name = "timeout", .has_arg = true },
	{ .name = "nonblock" },
	{ .name = "create", .has_arg = true },
	{ .name = "fd", .has_arg = true },
	{ .name = NULL },
};

/* Turn the options into @req; 0 or a usage exit status. */
static int run_options(const struct cli_verb *verb, struct run_req *req)
{
	struct cli_opt *w = cli_opt(run_opts, "weight");
	struct cli_opt *t = cli_opt(run_opts, "timeout");
	struct cli_opt *c = cli_opt(run_opts, "create");

	req->weight = 1;
	req->timeout_ns = -1;
	req->nonblock = cli_opt(run_opts, "nonblock")->seen;
	req->create = c->seen;
	if (w->seen && !cli_parse_u64(w->value, &req->weight))
		return cli_usage(verb->synopsis, "invalid WEIGHT '%s'",
				 w->value);
	if (t->seen && !cli_parse_seconds(t->value, &req->timeout_ns))
		return cli_usage(verb->synopsis, "invalid SECONDS '%s'",
				 t->value);
	if (c->seen && !cli_parse_u64(c->value, &req->capacity))
		return cli_usage(verb->synopsis, "invalid CAPACITY '%s'",
				 c->value);
	if (t->seen && req->nonblock)
		return cli_usage(verb->synopsis,
				 "--timeout and --nonblock exclude each other");
	if (c->seen && cli_opt(run_opts, "fd")->seen)
		return cli_usage(verb->synopsis,
				 "--create and --fd exclude each other");
	return cli_fd_option(verb->synopsis, cli_opt(run_opts, "fd"),
			     &req->fd);
}

/*
 * Creating in a container's IPC namespace makes a semaphore that only that
 * namespace sees: a limit that gates nothing else.  Say so.
 */
static void note_namespace(const struct run_req *req)
{
	unsigned long ns = cli_own_ipc_ns();

	if (!req->create || !ns || cli_ipc_ns_is_initial(ns))
		return;
	fprintf(stderr, "wsem: note: %s is made in IPC namespace ipc:[%lu], "
		"not the host's: it gates only processes of this namespace "
		"(a host limit comes in as a file: wsem run /path/to/file)\n",
		req->name, ns);
}

/*
 * A handle COMMAND inherits: opened by NAME or path, or a reopen of --fd N
 * (so that parallel jobs sharing one inherited handle each get a lease of
 * their own).  Keep it off 0, 1 and 2, should one of them be closed, so
 * that COMMAND never mistakes it for stdin or stdout.
 */
static int open_inherited(const struct run_req *req)
{
	int oflag = WSEM_INHERIT | (req->create ? O_CREAT : 0);
	int fd, nfd, err;

	note_namespace(req);
	if (req->fd >= 0)
		fd = wsem_reopen(req->fd, WSEM_INHERIT);
	else
		fd = wsem_open(req->name, oflag, 0600, req->capacity);
	if (fd < 0 || fd > STDERR_FILENO)
		return fd;
	nfd = fcntl(fd, F_DUPFD, STDERR_FILENO + 1);
	err = errno;
	close(fd);
	errno = err;
	return nfd;
}

/* Acquire as asked; 0 or the exit status, after a one-line message. */
static int take(int fd, const struct run_req *req)
{
	int ret;

	if (req->nonblock)
		ret = wsem_tryacquire(fd, req->weight);
	else if (req->timeout_ns >= 0)
		ret = wsem_acquire_timeout(fd, req->weight, req->timeout_ns);
	else
		ret = wsem_acquire(fd, req->weight);
	if (!ret)
		return 0;
	if (req->nonblock && errno == EAGAIN)
		return cli_fail_msg(req->name, "would block",
				    CLI_EXIT_WOULDBLOCK);
	if (req->timeout_ns >= 0 && errno == ETIMEDOUT)
		return cli_fail_msg(req->name, "timed out", CLI_EXIT_TIMEDOUT);
	return cli_fail(req->name, errno);
}

/* Become COMMAND; only returns, with 126 or 127, if exec fails. */
static int become(int fd, char **cmd)
{
	char num[16];
	int err;

	snprintf(num, sizeof(num), "%d", fd);
	if (setenv("WSEM_FD", num, 1))
		return cli_fail("WSEM_FD", errno);
	execvp(cmd[0], cmd);
	err = errno;
	return cli_fail_msg(cmd[0], strerror(err), err == ENOENT ?
			    CLI_EXIT_NOCMD : CLI_EXIT_NOEXEC);
}

int cli_run(const struct cli_verb *verb, int argc, char **argv)
{
	struct cli_parse p = {
		.synopsis = verb->synopsis,
		.opts = run_opts,
		.max_pos = 1,
		.command = true,
	};
	struct run_req req = { 0 };
	int fd, ret;

	ret = cli_parse(&p, argc, argv);
	if (!ret)
		ret = run_options(verb, &req);
	if (ret)
		return ret;
	req.name = req.fd < 0 ? p.pos[0] : "--fd";
	req.cmd = p.cmd;
	fd = open_inherited(&req);
	if (fd < 0)
		return cli_fail(req.name, errno);
	ret = take(fd, &req);
	if (!ret)
		ret = become(fd, req.cmd);
	close(fd);
	return ret;
}
