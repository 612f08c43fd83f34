// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * wsem run: take weight, run COMMAND holding it.  And wsem lend, which
 * runs COMMAND the same way while its handle lends capacity (cli_lend()).
 *
 * Supervised (the default), as flock(1) runs a command: wsem opens a
 * close-on-exec handle, acquires, forks COMMAND and waits for it, then
 * closes the handle.  COMMAND and whatever it starts never hold the
 * handle, so a daemon left behind (nohup, a compiler server) does not keep
 * the weight after COMMAND ends.  COMMAND runs in a process group of its
 * own (its pid), which wsem records on the handle (WSEM_IOC_SET_KILL)
 * before COMMAND is exec()ed: when the handle is released the kernel
 * kills that group with SIGKILL, before the weight goes back, so killing
 * wsem, even with SIGKILL, cannot leave COMMAND or what it started in its
 * group running without the lease, set-uid programs included.  When
 * COMMAND exits on its own, and wsem was sent no SIGHUP, SIGINT, SIGQUIT
 * or SIGTERM, the group is forgotten first (end_child()).  If wsem's group
 * was the terminal's foreground group, COMMAND's is made so, and wsem's
 * again after (a stop of COMMAND's stops wsem's group: stop_too()).
 * SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2 and SIGWINCH sent to
 * wsem, or to its process group, go on to COMMAND, once, so "kill $!" and
 * "kill %1" work as they would on COMMAND.  The exit status is COMMAND's;
 * when a signal kills COMMAND, wsem dies of the same signal (die_of()),
 * as timeout(1) does.
 *
 * COMMAND is looked up in PATH before anything is opened or waited for
 * (127 not found, 126 not executable, as env(1)), and every failure of
 * wsem's own (usage, no device, no such semaphore, permission) exits 125,
 * as env(1) and timeout(1) do; a conflict keeps 75 (--nonblock) or 124
 * (--timeout), or -E N.
 *
 * --inherit: the handle is opened inheritable, and COMMAND is exec()ed in
 * this very process with WSEM_FD set to the handle's number (and
 * WSEM_NAME to NAME).  The lease lasts as long as COMMAND and any
 * descendant that keeps the descriptor open; no wsem process is left.
 *
 * Either way the handle is labelled with COMMAND's command line before it
 * queues, so that the holders view (wsem stat) names the job, not the
 * supervising wsem.
 *
 * --jobserver[=fifo|pipe]: COMMAND also gets the semaphore's jobserver
 * endpoint (wsemfs's @jobserver/NAME) in MAKEFLAGS, "-j1
 * --jobserver-auth=fifo:PATH" or, for pipe, two inherited descriptors
 * opened on it, "R,W"; they replace any jobserver and -j of the MAKEFLAGS
 * it had (makeflags.c), whose other words are kept.
 * The weight run holds is the protocol's implicit token: make, ninja and
 * cargo take their other jobs' tokens from the semaphore.  A supervised
 * --jobserver run also ends what COMMAND leaves running when a signal
 * kills it: see end_orphans().
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

struct run_req {
	const char *name;	/* NAME, a path, or "--fd" */
	int fd;			/* --fd N, or -1 */
	struct cli_lease lease;	/* the weight, how long to wait, -E N */
	bool create;
	uint64_t capacity;	/* with --create */
	mode_t mode;		/* with --create */
	bool mode_exact;	/* --mode given: the umask is not applied */
	bool inherit;
	int jobserver;		/* JOBSERVER_* */
	int js_fds[2];		/* --jobserver=pipe: read, write; or -1 */
	char **cmd;
	int killed_by;		/* the signal that killed COMMAND, or 0 */
	bool to_group;		/* die_of() signals wsem's whole group */
	bool lend;		/* wsem lend: COMMAND is not tied to the handle */
	FILE *json;		/* --json's line goes here, or NULL */
	uint64_t loan;		/* wsem lend's CAPACITY */
	struct cli_gang gang;	/* --and: [0] is NAME's handle; n 1 without */
};

enum { JOBSERVER_NONE, JOBSERVER_FIFO, JOBSERVER_PIPE };

/* Where the semaphores of this IPC namespace are files (the packages'). */
#define WSEMFS_MOUNT	"/sys/fs/wsem"

/*
 * What a flock(1) or timeout(1) user types out of habit around COMMAND,
 * where wsem has another meaning or nothing like it (FLOCK_HABITS in
 * cli.h for the lock's own options).
 */
#define NOT_A_RUN_LIMIT	"--timeout bounds the wait for the weight, not " \
	"COMMAND: run COMMAND under timeout(1) for that"
#define COMMAND_HABITS \
	{ .name = "command", .short_name = 'c', .refuse = "COMMAND comes " \
	  "after -- (-- sh -c 'CMD' for flock(1)'s -c); to create NAME, " \
	  "--create CAPACITY" }, \
	{ .name = "close", .short_name = 'o', .refuse = "COMMAND never " \
	  "holds the handle (flock(1)'s -o), unless --inherit" }, \
	{ .name = "no-fork", .short_name = 'F', .refuse = "wsem stays " \
	  "to hold the weight while COMMAND runs (flock(1)'s -F)" }, \
	{ .name = "kill-after", .short_name = 'k', .refuse = NOT_A_RUN_LIMIT }, \
	{ .name = "signal", .refuse = NOT_A_RUN_LIMIT }, \
	{ .name = "preserve-status", .refuse = "the exit status is always " \
	  "COMMAND's (timeout(1)'s --preserve-status)" }, \
	{ .name = "foreground", .refuse = "COMMAND has the terminal when " \
	  "wsem has it (timeout(1)'s --foreground)" }

/* --and's values, as given */
static const char *and_values[WSEM_MANY_MAX - 1];

static struct cli_opt run_opts[] = {
	{ .name = "weight", .arg = "W",
	  .help = "the weight to hold (default 1; all: the capacity)" },
	{ .name = "timeout", .short_name = 't', .arg = "DURATION",
	  .help = "give up after DURATION (5, 1.5s, 5m, 2h, 1d): exit 124" },
	{ .name = "nonblock", .short_name = 'n',
	  .help = "take the weight only at once, else exit 75" },
	{ .name = "conflict-exit-code", .short_name = 'E', .arg = "N",
	  .help = "exit N (0-255) instead of 75 or 124; COMMAND does not run" },
	{ .name = "create", .arg = "CAPACITY",
	  .help = "create NAME with CAPACITY if it does not exist" },
	{ .name = "mode", .short_name = 'm', .arg = "MODE",
	  .help = "with --create: octal or symbolic (u=rw,g=r), as given "
		  "(default 0600 & ~umask)" },
	{ .name = "inherit",
	  .help = "exec COMMAND with the handle ($WSEM_FD) instead" },
	{ .name = "fd", .arg = "N", .help = "acquire through a reopen of N" },
	{ .name = "jobserver", .arg = "STYLE", .arg_optional = true,
	  .help = "MAKEFLAGS with NAME's jobserver: fifo (default) or pipe" },
	{ .name = "verbose", .short_name = 'v',
	  .help = "say on stderr when it waits, and for how long" },
	{ .name = "json", .arg = "PATH", .arg_optional = true,
	  .help = "once held, one JSON line on stderr (or PATH): the lease, "
		  "the wait" },
	{ .name = "and", .short_name = 'a', .arg = "NAME[:W]",
	  .help = "also hold W (default 1) of NAME or PATH, taken at once "
		  "with the rest; repeatable", .values = and_values,
	  .max_values = WSEM_MANY_MAX - 1 },
	FLOCK_HABITS,
	COMMAND_HABITS,
	{ .name = NULL },
};

static bool seen(const char *name)
{
	return cli_opt(run_opts, name)->seen;
}

static const char *value(const char *name)
{
	return cli_opt(run_opts, name)->value;
}

/*
 * A failure of wsem's own before COMMAND ran (usage, no device, no such
 * semaphore, permission, ...): exit 125, as env(1) and timeout(1) do, so
 * that a script tells it from COMMAND's statuses.  CLI_DONE (--help) and
 * 0 stay as they are.
 */
static int own_failure(int status)
{
	return status > 0 ? CLI_EXIT_RUN_FAILED : status;
}

/* --create and --mode; 0 or a usage exit status. */
static int run_create_options(const char *syn, struct run_req *req)
{
	req->mode = CLI_DEFAULT_MODE;
	req->create = seen("create");
	if (req->create && !cli_parse_u64(value("create"), &req->capacity))
		return cli_usage(syn, "invalid CAPACITY '%s'", value("create"));
	if (seen("mode") && !cli_parse_mode(value("mode"), &req->mode))
		return cli_usage(syn, "invalid MODE '%s'", value("mode"));
	req->mode_exact = seen("mode");
	if (seen("mode") && !req->create)
		return cli_usage(syn, "--mode needs --create");
	if (req->create && seen("fd"))
		return cli_usage(syn, "--create and --fd exclude each other");
	return 0;
}

/*
 * --and NAME[:W], each: NAME (or a path) and the weight after the last
 * ':', if all digits (else 1), into @req->gang from [1] on.  0 or a
 * usage exit status.
 */
static int run_and_options(const char *syn, struct run_req *req)
{
	static char names[WSEM_MANY_MAX][PATH_MAX];
	struct cli_opt *o = cli_opt(run_opts, "and");
	const char *v, *colon;
	size_t i, len;

	req->gang.n = 1;
	if (!o->seen)
		return 0;
	if (o->nvalues > o->max_values)
		return cli_usage(syn, "at most %d --and: one gang takes %d "
				 "semaphores", o->max_values, WSEM_MANY_MAX);
	if (req->inherit)
		return cli_usage(syn, "--and and --inherit exclude each other");
	for (i = 0; i < (size_t)o->nvalues; i++) {
		uint64_t w = 1;

		v = o->values[i];
		colon = strrchr(v, ':');
		len = strlen(v);
		if (colon && colon[1] && strspn(colon + 1, "0123456789") ==
		    strlen(colon + 1)) {
			if (!cli_parse_u64(colon + 1, &w) || !w)
				return cli_usage(syn, "invalid WEIGHT in "
						 "--and '%s'", v);
			len = (size_t)(colon - v);
		}
		if (!len || len >= sizeof(names[0]))
			return cli_usage(syn, "invalid --and '%s'", v);
		memcpy(names[i + 1], v, len);
		names[i + 1][len] = '\0';
		req->gang.names[i + 1] = names[i + 1];
		req->gang.weights[i + 1] = w;
		req->gang.fds[i + 1] = -1;
	}
	req->gang.n = (size_t)o->nvalues + 1;
	return 0;
}

/* Turn the options into @req; 0 or a usage exit status. */
/*
 * Where --json's line goes: standard error, so that COMMAND's standard
 * output is COMMAND's alone (a pipeline reads it), or --json=PATH,
 * created (0666 & ~umask) or truncated now, before any wait, so that a
 * PATH wsem cannot write is a failure of its own that changes nothing
 * else.  /dev/fd/N names a descriptor the caller holds.
 */
static int run_json_option(const char *syn, struct run_req *req)
{
	const char *path = value("json");
	int fd;

	if (!seen("json"))
		return 0;
	if (!path) {
		req->json = stderr;
		return 0;
	}
	if (!*path)
		return cli_usage(syn, "--json= needs a PATH");
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	req->json = fd < 0 ? NULL : fdopen(fd, "w");
	if (!req->json) {
		if (fd >= 0)
			close(fd);
		return cli_fail_nodev(path, errno);
	}
	return 0;
}

static int run_options(const struct cli_verb *verb, struct run_req *req)
{
	const char *syn = verb->synopsis;
	int ret = cli_lease_options(syn, run_opts, &req->lease);

	if (!ret)
		ret = run_create_options(syn, req);
	if (ret)
		return ret;
	req->inherit = seen("inherit");
	req->js_fds[0] = req->js_fds[1] = -1;
	ret = run_and_options(syn, req);
	if (ret)
		return ret;
	ret = run_json_option(syn, req);
	if (ret)
		return ret;
	if (seen("jobserver")) {
		const char *style = value("jobserver");

		if (!style || !strcmp(style, "fifo"))
			req->jobserver = JOBSERVER_FIFO;
		else if (!strcmp(style, "pipe"))
			req->jobserver = JOBSERVER_PIPE;
		else
			return cli_usage(syn, "invalid --jobserver '%s' "
					 "(fifo or pipe)", style);
		if (seen("fd"))
			return cli_usage(syn, "--jobserver needs NAME or "
					 "PATH, not --fd");
	}
	return cli_fd_option(syn, cli_opt(run_opts, "fd"), &req->fd);
}

/*
 * The jobserver endpoint of @name into @buf: for a path DIR/NAME (a wsemfs
 * file, bind-mounted perhaps) DIR/@jobserver/NAME; for a NAME, that of
 * the wsemfs mounted at /sys/fs/wsem.  0, or an exit status after one line
 * that says why not.
 */
static int jobserver_path(const char *name, char *buf, size_t len)
{
	const char *base = strrchr(name, '/');
	struct statfs sf;
	int n;

	if (base) {
		n = snprintf(buf, len, "%.*s/%s/%s", (int)(base - name), name,
			     WSEM_JOBSERVER_DIR, base + 1);
	} else {
		if (statfs(WSEMFS_MOUNT, &sf) || sf.f_type != WSEM_FS_MAGIC)
			return cli_fail_msg(WSEMFS_MOUNT, "wsemfs is not mounted "
					    "there (mount -t wsem wsem "
					    WSEMFS_MOUNT "), so --jobserver "
					    "has no endpoint", CLI_EXIT_ERROR);
		n = snprintf(buf, len, "%s/%s/%s", WSEMFS_MOUNT,
			     WSEM_JOBSERVER_DIR, name);
	}
	if (n < 0 || (size_t)n >= len)
		return cli_fail_msg(name, "path too long", CLI_EXIT_ERROR);
	return 0;
}

/* Open the endpoint @path with @flags, inheritable, above stderr; or -1. */
static int open_inheritable(const char *path, int flags)
{
	int fd = open(path, flags | O_NOCTTY), nfd, err;

	if (fd < 0 || fd > STDERR_FILENO)
		return fd;
	nfd = fcntl(fd, F_DUPFD, STDERR_FILENO + 1);
	err = errno;
	close(fd);
	errno = err;
	return nfd;
}

/*
 * --jobserver: MAKEFLAGS for COMMAND, "-j1 --jobserver-auth=fifo:PATH"
 * or, for pipe, "R,W" on descriptors opened here for COMMAND to inherit,
 * in place of any jobserver and -j COMMAND would inherit (cli_makeflags()).
 * "-j1", not the capacity: a client that knows no --jobserver-auth (make
 * before 4.2) runs one job at a time on the implicit token rather than
 * jobs that hold nothing; the others ignore an inherited -j when they have
 * a jobserver.  0, or an exit status after one line.
 */
static int jobserver_setup(struct run_req *req)
{
	char path[4096], ours[4300], *flags;
	struct stat sb;
	int ret;

	ret = jobserver_path(req->name, path, sizeof(path));
	if (ret)
		return ret;
	if (stat(path, &sb))
		return cli_fail_endpoint(req->name, path, errno);
	if (!S_ISFIFO(sb.st_mode))
		return cli_fail_msg(path, "not a jobserver endpoint",
				    CLI_EXIT_ERROR);
	if (req->jobserver == JOBSERVER_PIPE) {
		req->js_fds[0] = open_inheritable(path, O_RDONLY);
		if (req->js_fds[0] < 0)
			return cli_fail_endpoint(req->name, path, errno);
		req->js_fds[1] = open_inheritable(path, O_WRONLY);
		if (req->js_fds[1] < 0)
			return cli_fail_endpoint(req->name, path, errno);
		snprintf(ours, sizeof(ours), "-j1 --jobserver-auth=%d,%d",
			 req->js_fds[0], req->js_fds[1]);
	} else {
		snprintf(ours, sizeof(ours), "-j1 --jobserver-auth=fifo:%s",
			 path);
	}
	flags = cli_makeflags(getenv("MAKEFLAGS"), ours);
	if (!flags)
		return cli_fail_nodev("MAKEFLAGS", ENOMEM);
	ret = setenv("MAKEFLAGS", flags, 1);
	free(flags);
	if (ret)
		return cli_fail_nodev("MAKEFLAGS", errno);
	return 0;
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
 * The handle to acquire through: opened by NAME or path, or a reopen of
 * --fd N or of an inherited $WSEM_FD bound to NAME (so that parallel jobs
 * sharing one inherited handle each get a lease of their own).  With
 * --inherit, COMMAND inherits it: keep it off 0, 1 and 2, should one of
 * them be closed, so that COMMAND never mistakes it for stdin or stdout.
 */
static int open_handle(const struct run_req *req)
{
	int oflag = req->inherit ? WSEM_INHERIT : 0;
	int fd, nfd, err, inh = req->fd;

	note_namespace(req);
	if (inh < 0 && !req->create)
		inh = cli_inherited_fd(req->name);
	if (inh >= 0)
		fd = wsem_reopen(inh, oflag);
	else
		fd = cli_create_open(req->name,
				     oflag | (req->create ? O_CREAT : 0),
				     req->mode, req->mode_exact, req->capacity);
	if (fd < 0 || fd > STDERR_FILENO)
		return fd;
	nfd = fcntl(fd, req->inherit ? F_DUPFD : F_DUPFD_CLOEXEC,
		    STDERR_FILENO + 1);
	err = errno;
	close(fd);
	errno = err;
	return nfd;
}

/*
 * The handles of --and, each as NAME's is opened (a reopen of an
 * inherited $WSEM_FD bound to it, else by NAME or path), close-on-exec,
 * labelled; 0 or exit status 125 after one line.
 */
static void label_handle(int fd, const struct run_req *req);

static int open_and(struct run_req *req)
{
	const char *name;
	size_t i;
	int inh;

	for (i = 1; i < req->gang.n; i++) {
		name = req->gang.names[i];
		inh = cli_inherited_fd(name);
		req->gang.fds[i] = inh >= 0 ? wsem_reopen(inh, 0) :
					      wsem_open(name, 0, 0, 0);
		if (req->gang.fds[i] < 0)
			return own_failure(cli_fail_target(name, errno));
		label_handle(req->gang.fds[i], req);
	}
	return 0;
}

static void close_and(struct run_req *req)
{
	size_t i;

	for (i = 1; i < req->gang.n; i++) {
		if (req->gang.fds[i] >= 0)
			close(req->gang.fds[i]);
		req->gang.fds[i] = -1;
	}
}

/*
 * COMMAND's arguments joined with spaces, cut to a label's 63 bytes, each
 * byte that is not printable ASCII replaced by '?'.
 */
static void command_label(char **cmd, char *label, size_t size)
{
	size_t len = 0;
	const char *p;

	for (; *cmd && len + 1 < size; cmd++) {
		if (len)
			label[len++] = ' ';
		for (p = *cmd; *p && len + 1 < size; p++)
			label[len++] = *p >= 0x20 && *p <= 0x7e ? *p : '?';
	}
	label[len] = '\0';
}

/*
 * Label the handle with COMMAND.  The label only names the job in the
 * holders view: a module that does not know labels (ENOTTY) runs COMMAND
 * all the same.
 */
static void label_handle(int fd, const struct run_req *req)
{
	char label[WSEM_LABEL_MAX];

	command_label(req->cmd, label, sizeof(label));
	if (wsem_set_label(fd, label) && errno != ENOTTY)
		fprintf(stderr, "wsem: note: cannot label the handle: %s\n",
			strerror(errno));
}

/* execvp() COMMAND; only returns, with 126 or 127, if that fails. */
static int exec_command(char **cmd)
{
	int err;

	execvp(cmd[0], cmd);
	err = errno;
	return cli_fail_msg(cmd[0], strerror(err), err == ENOENT ?
			    CLI_EXIT_NOCMD : CLI_EXIT_NOEXEC);
}

/* --inherit: become COMMAND, WSEM_FD and WSEM_NAME telling the handle. */
static int become(int fd, const struct run_req *req)
{
	char num[16];

	snprintf(num, sizeof(num), "%d", fd);
	if (setenv("WSEM_FD", num, 1))
		return own_failure(cli_fail_nodev("WSEM_FD", errno));
	if (req->fd < 0 && setenv("WSEM_NAME", req->name, 1))
		return own_failure(cli_fail_nodev("WSEM_NAME", errno));
	return exec_command(req->cmd);
}

/* The signals a supervising wsem passes on to COMMAND. */
static const int forwarded[] = {
	SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGWINCH,
};

#define NR_FORWARDED	(sizeof(forwarded) / sizeof(forwarded[0]))

static volatile sig_atomic_t child_pid;

/* wsem was sent SIGHUP, SIGINT, SIGQUIT or SIGTERM: the run is ended. */
static volatile sig_atomic_t told_to_end;

/* The signals forward() was sent, a bit (1 << N) each. */
static volatile sig_atomic_t received;

/* What each forwarded signal did before: COMMAND gets it back. */
static struct sigaction saved[NR_FORWARDED];

/*
 * The service manager whose signals reach every process of wsem's unit,
 * COMMAND too (cli_unit_manager()); 0: none.
 */
static pid_t unit_manager;

/* Did @si come from that manager, which sent it to COMMAND as well? */
static bool sent_to_unit(const siginfo_t *si)
{
	return unit_manager > 0 && si->si_pid == unit_manager &&
	       (si->si_code == SI_USER || si->si_code == SI_QUEUE);
}

/*
 * Pass a signal on to COMMAND, which has a process group of its own (its
 * pid): one sent to wsem by pid or to wsem's group reaches COMMAND only
 * this way, once.  One the terminal sent (SI_KERNEL: wsem's group was the
 * foreground one, which COMMAND's is not) goes to COMMAND's whole group,
 * as the terminal would have sent it.  One from the manager of a unit
 * that signals all its processes is not passed on: COMMAND has it.
 */
static void forward(int sig, siginfo_t *si, void *uc)
{
	int err = errno;

	(void)uc;
	received |= 1 << sig;
	if (sig != SIGUSR1 && sig != SIGUSR2 && sig != SIGWINCH)
		told_to_end = 1;
	if (child_pid > 0 && !sent_to_unit(si))
		kill(si->si_code == SI_KERNEL ? -child_pid : child_pid, sig);
	errno = err;
}

/*
 * Install forward() for every forwarded signal that is not ignored (one
 * ignored when wsem started, as SIGINT in a shell's background job, stays
 * ignored, for COMMAND too), saving the old actions.
 */
static void start_forwarding(void)
{
	struct sigaction sa = { 0 };
	size_t i;

	sigemptyset(&sa.sa_mask);
	sa.sa_sigaction = forward;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	for (i = 0; i < NR_FORWARDED; i++) {
		sigaction(forwarded[i], NULL, &saved[i]);
		if (saved[i].sa_handler != SIG_IGN)
			sigaction(forwarded[i], &sa, NULL);
	}
}

/* Put back the actions start_forwarding() found. */
static void stop_forwarding(void)
{
	size_t i;

	for (i = 0; i < NR_FORWARDED; i++)
		sigaction(forwarded[i], &saved[i], NULL);
}

/* The controlling terminal, or -1. */
static int tty_fd = -1;

/* Is process group @pgrp the terminal's foreground group? */
static bool tty_is(pid_t pgrp)
{
	return tty_fd >= 0 && tcgetpgrp(tty_fd) == pgrp;
}

/*
 * Make @pgrp the terminal's foreground group, as a shell gives the
 * terminal to a job; SIGTTOU blocked, since wsem's group may be in the
 * background by then.
 */
static void give_tty(pid_t pgrp)
{
	sigset_t ttou, old;

	sigemptyset(&ttou);
	sigaddset(&ttou, SIGTTOU);
	sigprocmask(SIG_BLOCK, &ttou, &old);
	tcsetpgrp(tty_fd, pgrp);
	sigprocmask(SIG_SETMASK, &old, NULL);
}

/*
 * Record COMMAND's process group @pgid on handle @fd as the one the
 * kernel kills (SIGKILL) when the lease ends, however wsem ends; @pgid 0
 * forgets it.  A module without WSEM_IOC_SET_KILL (ENOTTY) runs COMMAND
 * with PR_SET_PDEATHSIG alone, after a note.  0, or -1 with errno.
 */
static int set_kill(int fd, pid_t pgid)
{
	struct wsem_kill_args args = { .size = sizeof(args), .pgid = pgid };

	if (!ioctl(fd, WSEM_IOC_SET_KILL, &args))
		return 0;
	if (errno != ENOTTY)
		return -1;
	if (pgid)
		fprintf(stderr, "wsem: note: this wsem module cannot end "
			"COMMAND's process group with the lease: if wsem is "
			"killed, what COMMAND started may run on\n");
	return 0;
}

/*
 * set_kill() on each handle of --and too: whichever of the handles is
 * released first, COMMAND's group is killed before its weight goes back.
 */
static int set_kill_and(const struct run_req *req, pid_t pgid)
{
	size_t i;

	for (i = 1; i < req->gang.n; i++) {
		if (set_kill(req->gang.fds[i], pgid))
			return -1;
	}
	return 0;
}

/*
 * The child: a process group of its own, SIGKILL when wsem goes (and wsem
 * may have gone already, in which case getppid() is no longer @parent;
 * not for wsem lend, whose COMMAND holds nothing),
 * then it waits on @gate until wsem has made its group the lease's (a
 * byte; end of file if wsem died or gave up), default signal actions, and
 * COMMAND.  The handle is close-on-exec: COMMAND never sees it.
 */
static void child(pid_t parent, int gate, const sigset_t *oldmask,
		  const struct run_req *req)
{
	char go;
	ssize_t n;

	stop_forwarding();
	if (setpgid(0, 0))
		_exit(own_failure(cli_fail_nodev("setpgid", errno)));
	if (!req->lend && prctl(PR_SET_PDEATHSIG, SIGKILL))
		_exit(own_failure(cli_fail_nodev("PR_SET_PDEATHSIG", errno)));
	if (!req->lend && getppid() != parent)	/* died before the prctl */
		_exit(CLI_EXIT_RUN_FAILED);
	while ((n = read(gate, &go, 1)) < 0 && errno == EINTR)
		;
	if (n != 1)
		_exit(CLI_EXIT_RUN_FAILED);
	close(gate);
	sigprocmask(SIG_SETMASK, oldmask, NULL);
	_exit(exec_command(req->cmd));
}

/*
 * A terminal's stop signal (^Z, or a read or write of the terminal from
 * the background) stopped COMMAND's group, which is not wsem's: stop
 * wsem's group too, as the terminal would have stopped it had COMMAND
 * been in it, so that the shell sees its job stopped.  The terminal goes
 * back to wsem's group first if COMMAND had it; when wsem is continued
 * (fg, bg), COMMAND gets the terminal again if wsem's group has it, and a
 * SIGCONT.  A SIGSTOP from anyone else stops COMMAND alone, as before.
 */
static void stop_too(pid_t pgid, int sig)
{
	if (sig != SIGTSTP && sig != SIGTTIN && sig != SIGTTOU)
		return;
	if (tty_is(pgid))
		give_tty(getpgrp());
	kill(0, sig);
	if (tty_is(getpgrp()))
		give_tty(pgid);
	kill(-pgid, SIGCONT);
}

/*
 * COMMAND's exit status, or 128 + the signal that killed it (and then
 * *@sig is that signal, else 0: 128 + N from an exit is an exit).  COMMAND is
 * waited for without reaping it first (WNOWAIT): until it is reaped its
 * pid is no one else's, so forward() cannot signal a stranger; then the
 * forwarded signals are blocked, forward() is disarmed, and it is reaped.
 * A stop of COMMAND's is passed on (stop_too()).  Any other child that
 * ends meanwhile (an orphan of COMMAND's, when wsem is their subreaper) is
 * reaped as it ends, so that none stays a zombie.
 */
static int wait_child(pid_t pid, const sigset_t *fwd, int *sig)
{
	siginfo_t si;
	int status;

	for (;;) {
		si.si_pid = 0;
		if (waitid(P_ALL, 0, &si, WEXITED | WSTOPPED | WNOWAIT) < 0) {
			if (errno == EINTR)
				continue;
			return own_failure(cli_fail_nodev("waitid", errno));
		}
		if (si.si_code == CLD_STOPPED || si.si_code == CLD_TRAPPED) {
			/* Take the report, so that it is not seen again. */
			waitid(P_PID, (id_t)si.si_pid, &si, WSTOPPED | WNOHANG);
			if (si.si_pid == pid && si.si_code == CLD_STOPPED)
				stop_too(pid, si.si_status);
			continue;
		}
		if (si.si_pid == pid)
			break;
		waitpid(si.si_pid, NULL, 0);
	}
	sigprocmask(SIG_BLOCK, fwd, NULL);
	child_pid = 0;
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			return own_failure(cli_fail_nodev("waitpid", errno));
	}
	*sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

/* The parent of process @pid (a /proc entry's name), or -1. */
static pid_t parent_of(const char *pid)
{
	char path[300], buf[512], *end;
	int ppid = -1;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%s/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	/* "PID (COMM) STATE PPID ...": COMM may hold anything but ")". */
	end = strrchr(buf, ')');
	if (!end || sscanf(end + 1, " %*c %d", &ppid) != 1)
		return -1;
	return ppid;
}

/*
 * Kill with SIGKILL every child this process has (COMMAND's orphans, since
 * COMMAND itself is reaped), found by their parent in /proc; whether there
 * was one.  No pid found can be a stranger's: a child's pid stays its own
 * until its parent, this process, reaps it.
 */
static bool kill_children(void)
{
	DIR *proc = opendir("/proc");
	pid_t self = getpid();
	struct dirent *e;
	bool any = false;

	if (!proc)
		return false;
	while ((e = readdir(proc))) {
		if (e->d_name[0] < '1' || e->d_name[0] > '9' ||
		    parent_of(e->d_name) != self)
			continue;
		kill((pid_t)atoi(e->d_name), SIGKILL);
		any = true;
	}
	closedir(proc);
	return any;
}

/*
 * --jobserver: the jobs make starts hold no token of their own, make holds
 * them.  When a signal kills make, its tokens go back at once (the kernel
 * releases what a process holds when it dies), so jobs it leaves running
 * would run beside the ones other builds now start with those tokens.  A
 * make that can (SIGINT, SIGTERM) ends its jobs itself; SIGKILL leaves
 * them.  So wsem is their subreaper (PR_SET_CHILD_SUBREAPER: COMMAND's
 * orphans become wsem's children), and when COMMAND died of a signal it
 * kills them, and what they leave in turn, until it has no child left.
 * A COMMAND that exits is left as it is: make waits for its jobs, and a
 * daemon a build starts on purpose is not wsem's to end.  Reads /proc
 * (each process's parent): without it nothing is ended.
 */
static void end_orphans(void)
{
	while (kill_children()) {
		while (waitpid(-1, NULL, 0) < 0 && errno == EINTR)
			;
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
	}
}

/*
 * Between fork() and COMMAND's exec: COMMAND's process group (made by
 * both sides, as a shell makes a job's, so that neither races the other)
 * is recorded on handle @fd (and the --and handles) as the one the
 * lease's end kills (not for wsem lend: a loan's end leaves COMMAND be),
 * and given the terminal if wsem's group had it; then the child, waiting
 * on @gate, is let go.  0, or an exit status after one line: the child
 * then exits 125 without running COMMAND.
 */
static int start_child(int fd, pid_t pid, int gate,
		       const struct run_req *req)
{
	int ret = 0;

	setpgid(pid, pid);	/* the child may have done it: no matter */
	if (!req->lend && (set_kill(fd, pid) || set_kill_and(req, pid))) {
		ret = own_failure(cli_fail_nodev("WSEM_IOC_SET_KILL", errno));
	} else {
		if (tty_is(getpgrp()))
			give_tty(pid);
		if (write(gate, "", 1) != 1)
			ret = own_failure(cli_fail_nodev("pipe", errno));
	}
	close(gate);
	if (ret)
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	return ret;
}

/*
 * After COMMAND was reaped: the terminal goes back to wsem's group if
 * COMMAND's had it.  A SIGINT or SIGQUIT that killed COMMAND without
 * reaching wsem, while COMMAND's group had the terminal (the terminal's ^C
 * or ^\, which reached COMMAND's group alone), is to reach wsem's whole
 * group (@req->to_group), as the terminal would have sent it had COMMAND
 * been in it: a shell script without job control ends its loop only when
 * it gets the SIGINT itself.  Without the terminal (a COMMAND that ends
 * itself with "kill -INT 0", in a CI script, a service, a container's
 * init) wsem dies of it alone, as timeout(1) does: nothing but a terminal
 * speaks for the caller's group.  Unless the run was
 * ended (COMMAND died of a signal, or wsem was sent SIGHUP, SIGINT,
 * SIGQUIT or SIGTERM), COMMAND's group is forgotten on the handle: what
 * COMMAND leaves running on purpose (a daemon) is not ended when wsem
 * closes it.
 */
static void end_child(int fd, pid_t pid, struct run_req *req)
{
	int sig = req->killed_by;
	bool had_tty = tty_is(pid);

	if (had_tty)
		give_tty(getpgrp());
	req->to_group = had_tty && (sig == SIGINT || sig == SIGQUIT) &&
			!(received & (1 << sig));
	if (!sig && !told_to_end && !req->lend) {
		set_kill(fd, 0);
		set_kill_and(req, 0);
	}
}

/*
 * Supervised: run COMMAND as a child holding nothing, in a process group
 * of its own that the lease's end kills, wait, pass on; the signal that
 * killed COMMAND in @req->killed_by.
 */
static int supervise(int fd, struct run_req *req)
{
	pid_t parent = getpid(), pid;
	sigset_t all, old;
	int gate[2], ret;
	size_t i;

	sigemptyset(&all);
	for (i = 0; i < NR_FORWARDED; i++)
		sigaddset(&all, forwarded[i]);
	if (pipe2(gate, O_CLOEXEC))
		return own_failure(cli_fail_nodev("pipe", errno));
	sigprocmask(SIG_BLOCK, &all, &old);
	if (req->jobserver && prctl(PR_SET_CHILD_SUBREAPER, 1)) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		return own_failure(cli_fail_nodev("PR_SET_CHILD_SUBREAPER",
						  errno));
	}
	tty_fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	start_forwarding();
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		close(gate[1]);
		child(parent, gate[0], &old, req);
	}
	close(gate[0]);
	if (pid < 0) {
		close(gate[1]);
		sigprocmask(SIG_SETMASK, &old, NULL);
		return own_failure(cli_fail_nodev("fork", errno));
	}
	ret = start_child(fd, pid, gate[1], req);
	if (ret) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		return ret;
	}
	child_pid = pid;
	sigprocmask(SIG_SETMASK, &old, NULL);
	ret = wait_child(pid, &all, &req->killed_by);
	end_child(fd, pid, req);
	if (req->jobserver && req->killed_by)
		end_orphans();
	return ret;
}

/*
 * COMMAND died of signal @sig: wsem dies of it too, as timeout(1) does,
 * so that the shell sees a command killed by it (bash ends a loop on ^C
 * only when its child died of SIGINT).  Core dumps off first (a core of
 * wsem's would be no use), then the default action, unblocked, and the
 * signal, to wsem's whole process group with @to_group (end_child()).  If
 * wsem lives on, or cannot turn core dumps off: 128 + @sig.
 */
static int die_of(int sig, bool to_group)
{
	struct rlimit no_core = { 0, 0 };
	struct sigaction dfl = { 0 };
	sigset_t set;

	fflush(NULL);
	if (setrlimit(RLIMIT_CORE, &no_core))
		return 128 + sig;
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	sigaction(sig, &dfl, NULL);
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	if (to_group)
		kill(0, sig);
	else
		raise(sig);
	return 128 + sig;
}

/*
 * --create found NAME there with another capacity: it is left as it is
 * (the run goes on with it), and one line says so, as create --exist-ok
 * does.
 */
static void note_capacity(int fd, const struct run_req *req)
{
	struct wsem_stat st;

	if (!req->create || wsem_stat(fd, &st) || st.capacity == req->capacity)
		return;
	cli_note_capacity(req->name, st.capacity, req->capacity);
}

/* What NAME and --create say is valid, or one line why not. */
static int check_target(const struct run_req *req)
{
	int ret = req->fd < 0 ? cli_check_name(req->name) : 0;
	size_t i;

	if (!ret && req->create)
		ret = cli_check_capacity(req->name, req->capacity);
	for (i = 1; !ret && i < req->gang.n; i++)
		ret = cli_check_name(req->gang.names[i]);
	return ret;
}

/*
 * Acquire through handle @fd and run COMMAND: its status, that of a
 * conflict (75, 124, -E N), or 125 for a failure of wsem's own.
 */
static int run_leased(int fd, struct run_req *req)
{
	uint64_t start;
	int ret = 0;

	if (req->jobserver)
		ret = own_failure(jobserver_setup(req));
	if (ret)
		return ret;
	if (!req->inherit)
		unit_manager = cli_unit_manager();
	start = cli_now_ns();
	req->gang.fds[0] = fd;
	req->gang.names[0] = req->name;
	if (req->gang.n > 1 ? !cli_lease_acquire_many(&req->gang, &req->lease,
						      &ret) :
	    !cli_lease_acquire(fd, &req->lease, &ret))
		return req->lease.conflict ? ret : own_failure(ret);
	if (req->json && cli_print_json_lease(req->json, req->name, fd,
					      req->lease.weight,
					      cli_now_ns() - start,
					      req->inherit ? fd : -1))
		return own_failure(cli_fail_nodev(value("json") ?
						  value("json") : "stderr",
						  errno));
	if (req->json && req->json != stderr)
		fclose(req->json);
	req->json = NULL;
	return req->inherit ? become(fd, req) : supervise(fd, req);
}

/*
 * The options, NAME and COMMAND, all checked before anything is opened
 * (so that a typo in COMMAND creates nothing and waits for nothing); 0,
 * CLI_DONE, or an exit status after one line.
 */
static int run_prepare(const struct cli_verb *verb, int argc, char **argv,
		       struct run_req *req)
{
	struct cli_parse p = {
		.verb = verb,
		.opts = run_opts,
		.max_pos = 1,
		.command = true,
	};
	int ret = cli_parse(&p, argc, argv);

	if (!ret)
		ret = run_options(verb, req);
	if (ret)
		return own_failure(ret);
	req->name = req->fd < 0 ? p.pos[0] : "--fd";
	req->lease.what = req->name;
	req->cmd = p.cmd;
	ret = own_failure(check_target(req));
	if (!ret)
		ret = cli_check_command(req->cmd[0]);
	return ret;
}

int cli_run(const struct cli_verb *verb, int argc, char **argv)
{
	struct run_req req = { .js_fds = { -1, -1 } };
	int fd, ret;

	ret = run_prepare(verb, argc, argv, &req);
	if (ret)
		return ret;
	fd = open_handle(&req);
	if (fd < 0)
		return own_failure(cli_fail_target(req.name, errno));
	note_capacity(fd, &req);
	label_handle(fd, &req);
	ret = open_and(&req);
	if (!ret)
		ret = run_leased(fd, &req);
	close_and(&req);
	if (req.js_fds[0] >= 0)
		close(req.js_fds[0]);
	if (req.js_fds[1] >= 0)
		close(req.js_fds[1]);
	close(fd);
	return req.killed_by ? die_of(req.killed_by, req.to_group) : ret;
}

/*
 * wsem lend NAME CAPACITY [-- COMMAND...]: a handle of wsem's own (a
 * reopen for --fd N, as run makes) lends CAPACITY (wsem_lend()) while
 * COMMAND runs, supervised as run's is, but not tied to the handle: when
 * the loan ends because wsem is killed, COMMAND runs on (it holds
 * nothing).  When COMMAND ends, wsem closes the handle, which withdraws
 * the loan, and exits as COMMAND did.  Without COMMAND, wsem lends until
 * SIGTERM, SIGINT or SIGHUP (then exit 0), or until it is killed.  Either
 * way the kernel withdraws the loan when the handle goes, however wsem
 * ends.  wsem's own failures exit 125, as run's do.
 */
static struct cli_opt lend_opts[] = {
	{ .name = "fd", .arg = "N", .help = "lend through a reopen of N" },
	{ .name = NULL },
};

/* One line for a loan the kernel refused; the exit status (125). */
static int lend_failed(const char *what, uint64_t loan, int err)
{
	char msg[160];

	if (err == EPERM)
		return own_failure(cli_fail_msg(what, "lending more needs the "
			"semaphore's owner or CAP_IPC_OWNER (Operation not "
			"permitted)", CLI_EXIT_ERROR));
	if (err == EINVAL) {
		snprintf(msg, sizeof(msg), "lending %" PRIu64 " would take "
			 "its capacity past 2^62 (Invalid argument)", loan);
		return own_failure(cli_fail_msg(what, msg, CLI_EXIT_ERROR));
	}
	if (err == ENOTTY)
		return own_failure(cli_fail_msg(what, "this wsem module "
			"cannot lend (no WSEM_IOC_LEND)", CLI_EXIT_ERROR));
	return own_failure(cli_fail_nodev(what, err));
}

/* Without COMMAND: until SIGTERM, SIGINT or SIGHUP; 0. */
static int lend_until_signal(void)
{
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	do
		sig = sigwaitinfo(&set, NULL);
	while (sig < 0 && errno == EINTR);
	return sig < 0 ? own_failure(cli_fail_nodev("sigwaitinfo", errno)) :
			 CLI_EXIT_OK;
}

/* The options, NAME, CAPACITY and COMMAND, checked; 0 or a status. */
static int lend_prepare(const struct cli_verb *verb, int argc, char **argv,
			struct run_req *req)
{
	struct cli_parse p = {
		.verb = verb,
		.opts = lend_opts,
		.max_pos = 2,
		.command = true,
		.command_optional = true,
	};
	const char *cap;
	int ret = cli_parse(&p, argc, argv);

	if (!ret)
		ret = cli_fd_option(verb->synopsis, cli_opt(lend_opts, "fd"),
				    &req->fd);
	if (ret)
		return own_failure(ret);
	cap = p.pos[req->fd < 0];
	if (!cli_parse_u64(cap, &req->loan))
		return own_failure(cli_usage(verb->synopsis,
					     "invalid CAPACITY '%s'", cap));
	if (p.cmd && !p.cmd[0])
		return own_failure(cli_usage(verb->synopsis,
					     "no COMMAND after --"));
	req->name = req->fd < 0 ? p.pos[0] : "--fd";
	req->cmd = p.cmd;
	ret = own_failure(check_target(req));
	if (!ret)
		ret = own_failure(cli_check_capacity(req->name, req->loan));
	if (!ret && req->cmd)
		ret = cli_check_command(req->cmd[0]);
	return ret;
}

int cli_lend(const struct cli_verb *verb, int argc, char **argv)
{
	struct run_req req = { .js_fds = { -1, -1 }, .lend = true };
	int fd, ret;

	ret = lend_prepare(verb, argc, argv, &req);
	if (ret)
		return ret;
	fd = open_handle(&req);
	if (fd < 0)
		return own_failure(cli_fail_target(req.name, errno));
	if (wsem_lend(fd, req.loan))
		ret = lend_failed(req.name, req.loan, errno);
	else if (req.cmd)
		ret = supervise(fd, &req);
	else
		ret = lend_until_signal();
	close(fd);
	return req.killed_by ? die_of(req.killed_by, req.to_group) : ret;
}
