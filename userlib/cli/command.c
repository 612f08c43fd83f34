// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Finding COMMAND before "wsem run" waits for its weight, as execvp(3)
 * will look for it, so that a typo fails at once (127) instead of after
 * the wait, as env(1) fails.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

/* execvp()'s search path when PATH is unset (glibc's and musl's). */
#define DEFAULT_PATH	"/bin:/usr/bin"

/* Could execve() run @path?  0, or the errno it would fail with. */
static int check_file(const char *path)
{
	struct stat sb;

	if (stat(path, &sb))
		return errno;
	if (!S_ISREG(sb.st_mode))
		return EACCES;
	if (faccessat(AT_FDCWD, path, X_OK, AT_EACCESS))
		return errno;
	return 0;
}

/*
 * Look for @name in the directory of @dir that is @len bytes long (0: the
 * current directory, as execvp() takes an empty PATH entry).  0, or why
 * it is not there.
 */
static int check_in_dir(const char *dir, size_t len, const char *name)
{
	char path[4096];
	int n;

	if (!len)
		n = snprintf(path, sizeof(path), "./%s", name);
	else
		n = snprintf(path, sizeof(path), "%.*s/%s", (int)len, dir,
			     name);
	if (n < 0 || (size_t)n >= sizeof(path))
		return ENAMETOOLONG;
	return check_file(path);
}

/*
 * Search PATH for @name as execvp() does: the first entry that can be
 * run; none: EACCES if one was there but could not be run, else ENOENT.
 */
static int search_path(const char *name)
{
	const char *p = getenv("PATH"), *end;
	int err, found = ENOENT;

	if (!p)
		p = DEFAULT_PATH;
	for (;;) {
		end = strchrnul(p, ':');
		err = check_in_dir(p, (size_t)(end - p), name);
		if (!err)
			return 0;
		if (err == EACCES)
			found = EACCES;
		if (!*end)
			return found;
		p = end + 1;
	}
}

/**
 * cli_check_command() - can COMMAND be executed?
 * @name: COMMAND's first word: a path when it has a '/', else looked up
 *	in PATH
 *
 * Return: 0, or the exit status (127 not found, 126 not executable) after
 * one line "wsem: NAME: reason", the line and status a failed execvp()
 * gives.
 */
int cli_check_command(const char *name)
{
	int err;

	if (!*name)
		err = ENOENT;
	else if (strchr(name, '/'))
		err = check_file(name);
	else
		err = search_path(name);
	if (!err)
		return 0;
	return cli_fail_msg(name, strerror(err), err == ENOENT ?
			    CLI_EXIT_NOCMD : CLI_EXIT_NOEXEC);
}
