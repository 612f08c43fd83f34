// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Is wsem one of the processes of a systemd service whose stop signals
 * every process of the unit (KillMode=control-group, the default)?  Then
 * a signal from the service manager reaches COMMAND directly, and a
 * supervising wsem must not pass it on a second time.
 *
 * The answer comes from the manager itself, once, before the lease is
 * taken: `systemctl show` of the service named by wsem's cgroup, which
 * must be the invocation named by $INVOCATION_ID (so that a variable
 * inherited from elsewhere counts for nothing).  Anything that does not
 * fit, or a systemctl that fails or does not answer within two seconds:
 * no such unit, and wsem passes every signal on, as elsewhere.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

#define UNIT_MAX	256	/* bytes of a unit name, and then some */
#define SHOW_MAX	1024	/* bytes of systemctl's answer */
#define SHOW_WAIT_MS	2000
#define INVOCATION_LEN	32	/* hex digits of a 128-bit id */

/*
 * The deepest component of wsem's cgroup (v2) that names a service, in
 * @unit: "0::/system.slice/build.service" gives "build.service".
 */
static bool cgroup_service(char *unit, size_t size)
{
	char line[4096] = "", *p, *end, *best = NULL;
	size_t len = 0;
	FILE *f = fopen("/proc/self/cgroup", "re");

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f) && strncmp(line, "0::/", 4))
		;
	fclose(f);
	if (strncmp(line, "0::/", 4))
		return false;
	line[strcspn(line, "\n")] = '\0';
	for (p = line + 4; *p; p = *end ? end + 1 : end) {
		end = strchrnul(p, '/');
		if (end - p > 8 && !strncmp(end - 8, ".service", 8)) {
			best = p;
			len = end - p;
		}
	}
	if (!best || len >= size)
		return false;
	memcpy(unit, best, len);
	unit[len] = '\0';
	return true;
}

/* Child: systemctl [--user] show KillMode and InvocationID of @unit. */
static void exec_show(int out, const char *unit, bool user)
{
	char *argv[] = {
		"systemctl", "--user", "show", "--property=KillMode",
		"--property=InvocationID", "--", (char *)unit, NULL,
	};
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		dup2(null, STDERR_FILENO);
	}
	dup2(out, STDOUT_FILENO);
	if (!user)
		argv[1] = "--system";
	execvp(argv[0], argv);
	_exit(127);
}

/*
 * systemctl's answer for @unit, into @buf (NUL-terminated): true when it
 * exited 0 within SHOW_WAIT_MS.
 */
static bool show_unit(const char *unit, bool user, char *buf, size_t size)
{
	int fds[2], status = 0, ms = SHOW_WAIT_MS;
	size_t got = 0;
	struct pollfd pfd;
	ssize_t n = 1;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC))
		return false;
	pid = fork();
	if (pid == 0)
		exec_show(fds[1], unit, user);
	close(fds[1]);
	if (pid < 0) {
		close(fds[0]);
		return false;
	}
	pfd = (struct pollfd){ .fd = fds[0], .events = POLLIN };
	while (n > 0 && got < size - 1 && poll(&pfd, 1, ms) > 0) {
		n = read(fds[0], buf + got, size - 1 - got);
		if (n > 0)
			got += n;
		ms = SHOW_WAIT_MS / 4;	/* the rest comes at once */
	}
	buf[got] = '\0';
	close(fds[0]);
	if (n != 0)
		kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return n == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* Is "@key=@value" a whole line of @text? */
static bool show_says(const char *text, const char *key, const char *value)
{
	size_t klen = strlen(key), vlen = strlen(value);
	const char *p;

	for (p = text; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, key, klen) && p[klen] == '=' &&
		    !strncmp(p + klen + 1, value, vlen) &&
		    (p[klen + 1 + vlen] == '\n' || !p[klen + 1 + vlen]))
			return true;
	return false;
}

pid_t cli_unit_manager(void)
{
	const char *id = getenv("INVOCATION_ID"), *mgr = getenv("MANAGERPID");
	char unit[UNIT_MAX], buf[SHOW_MAX], *end;
	long pid = 1;

	if (!id || strlen(id) != INVOCATION_LEN || !cgroup_service(unit,
								  sizeof(unit)))
		return 0;
	if (mgr) {	/* a user manager's service (systemd.exec(5)) */
		errno = 0;
		pid = strtol(mgr, &end, 10);
		if (errno || *end || pid < 1)
			return 0;
	}
	if (!show_unit(unit, pid != 1, buf, sizeof(buf)))
		return 0;
	if (!show_says(buf, "InvocationID", id) ||
	    !show_says(buf, "KillMode", "control-group"))
		return 0;
	return (pid_t)pid;
}
