// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What a verb acts on: a NAME of this IPC namespace, the path of a wsemfs
 * file (anything with a '/', such as a file bind-mounted into a
 * container), or --fd N, a handle inherited from the parent.  And which
 * IPC namespace that semaphore lives in.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

/* The initial IPC namespace's nsfs inode number (PROC_IPC_INIT_INO). */
#define CLI_INIT_IPC_NS		0xeffffffful

bool cli_is_path(const char *name)
{
	return strchr(name, '/') != NULL;
}

/* --fd N: a descriptor that is a wsem handle; 0 or a usage exit status. */
int cli_fd_option(const char *synopsis, const struct cli_opt *o, int *fd)
{
	struct wsem_stat st;
	uint64_t n;

	*fd = -1;
	if (!o || !o->seen)
		return 0;
	if (!cli_parse_u64(o->value, &n) || n > INT32_MAX)
		return cli_usage(synopsis, "invalid --fd '%s'", o->value);
	if (wsem_stat((int)n, &st)) {
		if (errno == EBADF)
			return cli_fail_msg(o->value, "--fd: no such descriptor",
					    CLI_EXIT_ERROR);
		return cli_fail_msg(o->value, "--fd: not a wsem handle",
				    CLI_EXIT_ERROR);
	}
	*fd = (int)n;
	return 0;
}

/*
 * The handle that "wsem run --inherit" left in $WSEM_FD, if it is bound to
 * @name: the semaphore's own name says so, or, where the kernel hides the
 * name (a handle from another IPC namespace, a container's parent),
 * $WSEM_NAME, the NAME that run was given.  The descriptor, or -1.
 */
int cli_inherited_fd(const char *name)
{
	const char *env = getenv("WSEM_FD");
	const char *env_name = getenv("WSEM_NAME");
	struct wsem_stat st;
	uint64_t fd;

	if (!env || !cli_parse_u64(env, &fd) || fd > INT32_MAX)
		return -1;
	if (wsem_stat((int)fd, &st))
		return -1;
	st.name[sizeof(st.name) - 1] = '\0';
	if (!strcmp(st.name, name))
		return (int)fd;
	if (!st.name[0] && env_name && !strcmp(env_name, name) &&
	    cli_fd_ipc_ns((int)fd) != cli_own_ipc_ns())
		return (int)fd;
	return -1;
}

/* This process's IPC namespace, as /proc/self/ns/ipc names it; 0 unknown. */
unsigned long cli_own_ipc_ns(void)
{
	struct stat sb;

	return stat("/proc/self/ns/ipc", &sb) ? 0 : (unsigned long)sb.st_ino;
}

/* The IPC namespace of handle @fd's semaphore, from its fdinfo; 0 unknown. */
unsigned long cli_fd_ipc_ns(int fd)
{
	char path[64], line[128];
	unsigned long ns = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "wsem-ipc-ns:", 12))
			ns = strtoul(line + 12, NULL, 10);
	}
	fclose(f);
	return ns;
}

/* The id of handle @fd's semaphore, fdinfo's wsem-id; 0 unknown. */
uint64_t cli_fd_sem_id(int fd)
{
	char path[64], line[128];
	uint64_t id = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "wsem-id:", 8))
			id = strtoull(line + 8, NULL, 10);
	}
	fclose(f);
	return id;
}

bool cli_ipc_ns_is_initial(unsigned long ns)
{
	return ns == CLI_INIT_IPC_NS;
}

/* "ipc:[N] (this namespace)" and the like, for people. */
const char *cli_ipc_ns_text(unsigned long ns)
{
	static char buf[80];
	unsigned long own = cli_own_ipc_ns();

	if (!ns)
		return "unknown";
	snprintf(buf, sizeof(buf), "ipc:[%lu] (%s%s)", ns,
		 ns == own ? "this namespace" : "another namespace",
		 cli_ipc_ns_is_initial(ns) ? ", the host's" : "");
	return buf;
}
