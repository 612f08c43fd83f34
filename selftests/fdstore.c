// SPDX-License-Identifier: GPL-2.0
/*
 * fdstore SOCKET PIDFILE CMD [ARG]...: what fleet_test.sh has in place of
 * systemd for wsem-agent.service's file descriptor store, which the guest
 * has no systemd to keep.  It runs CMD as a service with Restart=always,
 * RestartSec=1s and FileDescriptorStoreMax= would: CMD's environment has
 * NOTIFY_SOCKET=SOCKET (a datagram socket this binds) and FDSTORE=16; the
 * descriptors CMD sends there with "FDSTORE=1" and "FDNAME=NAME" are kept
 * (a later one of the same name replaces the earlier), "FDSTOREREMOVE=1"
 * closes the one named; every start of CMD gets them as sd_listen_fds(3)
 * says: from descriptor 3 on, with LISTEN_FDS, LISTEN_FDNAMES and
 * LISTEN_PID.  CMD's pid goes to PIDFILE at each start; each end of CMD
 * is logged and CMD started again a second later.  A SIGTERM to fdstore
 * is the unit's stop: CMD gets a SIGTERM, and once it has ended the kept
 * descriptors are closed (the store flushed) and fdstore exits 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_KEPT	16
#define NAME_MAX_LEN	255
/* Kept descriptors live from here up, clear of 3 .. 3 + MAX_KEPT. */
#define KEPT_BASE	64

struct kept {
	int fd;				/* -1: a free slot */
	char name[NAME_MAX_LEN + 1];
};

static struct kept kept[MAX_KEPT];
static volatile sig_atomic_t stopping;

/* 0: running; 1: a SIGTERM came; 2: the service was sent one */
static void on_term(int sig)
{
	(void)sig;
	stopping = 1;
}

/*
 * say - one line on stderr in one write(2): the agent shares the log, and
 * stderr is unbuffered, so a line in pieces could be cut by the agent's.
 */
static void say(const char *what, const char *name)
{
	char line[512];
	int len;

	len = snprintf(line, sizeof(line), "fdstore: %s %s\n", what, name);
	if (len > (int)sizeof(line) - 1)
		len = sizeof(line) - 1;
	if (write(STDERR_FILENO, line, len) < 0)
		return;
}

static struct kept *find(const char *name)
{
	for (int i = 0; i < MAX_KEPT; i++) {
		if (kept[i].fd >= 0 && !strcmp(kept[i].name, name))
			return &kept[i];
	}
	return NULL;
}

static void drop(struct kept *k)
{
	close(k->fd);
	k->fd = -1;
}

/* Keep @fd as @name (replacing one of that name); closes it if full. */
static void keep(int fd, const char *name)
{
	struct kept *k = find(name);
	int high;

	if (k)
		drop(k);
	for (k = kept; k < kept + MAX_KEPT && k->fd >= 0; k++)
		;
	high = fcntl(fd, F_DUPFD_CLOEXEC, KEPT_BASE);
	close(fd);
	if (k == kept + MAX_KEPT || high < 0) {
		say("no room to keep", name);
		if (high >= 0)
			close(high);
		return;
	}
	k->fd = high;
	snprintf(k->name, sizeof(k->name), "%s", name);
	say("kept", name);
}

/* The value of @key= among @msg's lines, copied into @val, or NULL. */
static const char *field(const char *msg, const char *key, char *val,
			 size_t size)
{
	size_t n = strlen(key);

	for (const char *l = msg; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : l) {
		if (!strncmp(l, key, n) && l[n] == '=') {
			size_t len = strcspn(l + n + 1, "\n");

			if (len >= size)
				return NULL;
			memcpy(val, l + n + 1, len);
			val[len] = '\0';
			return val;
		}
	}
	return NULL;
}

/* Take one notify message: store or remove what it says. */
static void take_message(int sock)
{
	char msg[4096], name[NAME_MAX_LEN + 1], flag[8];
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * 4)];
	} ctl;
	struct iovec iov = { msg, sizeof(msg) - 1 };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf),
	};
	int fds[4], nfds = 0;
	ssize_t n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);

	if (n < 0)
		return;
	msg[n] = '\0';
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		nfds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		memcpy(fds, CMSG_DATA(c), nfds * sizeof(int));
	}
	if (!field(msg, "FDNAME", name, sizeof(name)))
		snprintf(name, sizeof(name), "stored");
	if (field(msg, "FDSTORE", flag, sizeof(flag)) && !strcmp(flag, "1")) {
		for (int i = 0; i < nfds; i++)
			keep(fds[i], name);
		return;
	}
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	if (field(msg, "FDSTOREREMOVE", flag, sizeof(flag)) &&
	    !strcmp(flag, "1") && find(name)) {
		drop(find(name));
		say("removed", name);
	}
}

/* In the child: the kept descriptors from 3 on, the variables, CMD. */
static void exec_service(char **argv, const char *sock_path)
{
	char names[MAX_KEPT * (NAME_MAX_LEN + 1) + 1] = "", num[32];
	int n = 0;

	for (int i = 0; i < MAX_KEPT; i++) {
		if (kept[i].fd < 0)
			continue;
		if (dup2(kept[i].fd, 3 + n) < 0)
			_exit(127);
		if (n)
			strcat(names, ":");
		strcat(names, kept[i].name);
		n++;
	}
	snprintf(num, sizeof(num), "%d", n);
	setenv("LISTEN_FDS", num, 1);
	setenv("LISTEN_FDNAMES", names, 1);
	snprintf(num, sizeof(num), "%d", (int)getpid());
	setenv("LISTEN_PID", num, 1);
	setenv("NOTIFY_SOCKET", sock_path, 1);
	setenv("FDSTORE", "16", 1);
	execvp(argv[0], argv);
	_exit(127);
}

static pid_t start(char **argv, const char *sock_path, const char *pidfile)
{
	pid_t pid = fork();
	FILE *f;

	if (pid == 0)
		exec_service(argv, sock_path);
	if (pid < 0)
		return -1;
	f = fopen(pidfile, "w");
	if (f) {
		fprintf(f, "%d\n", (int)pid);
		fclose(f);
	}
	return pid;
}

static int bind_socket(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (s < 0 || strlen(path) >= sizeof(sa.sun_path))
		return -1;
	strcpy(sa.sun_path, path);
	unlink(path);
	if (bind(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(s);
		return -1;
	}
	return s;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_term };
	int sock, status;
	pid_t pid;

	if (argc < 4) {
		fprintf(stderr, "usage: fdstore SOCKET PIDFILE CMD [ARG]...\n");
		return 2;
	}
	for (int i = 0; i < MAX_KEPT; i++)
		kept[i].fd = -1;
	sock = bind_socket(argv[1]);
	if (sock < 0) {
		perror(argv[1]);
		return 1;
	}
	sigaction(SIGTERM, &sa, NULL);
	pid = start(argv + 3, argv[1], argv[2]);
	while (pid > 0) {
		struct pollfd p = { .fd = sock, .events = POLLIN };

		if (stopping == 1) {
			kill(pid, SIGTERM);
			stopping = 2;
		}
		if (poll(&p, 1, 100) == 1)
			take_message(sock);
		if (waitpid(pid, &status, WNOHANG) != pid)
			continue;
		/* (what it sent before it ended comes first) */
		while (poll(&p, 1, 0) == 1)
			take_message(sock);
		say("the service ended:", WIFSIGNALED(status) ?
		    strsignal(WTERMSIG(status)) : "exited");
		if (!stopping)
			sleep(1);	/* RestartSec=1s; a SIGTERM cuts it */
		if (stopping)
			break;
		pid = start(argv + 3, argv[1], argv[2]);
	}
	for (int i = 0; i < MAX_KEPT; i++) {
		if (kept[i].fd >= 0) {
			say("flushed", kept[i].name);
			drop(&kept[i]);
		}
	}
	return 0;
}
