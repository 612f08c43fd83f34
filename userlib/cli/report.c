// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Error messages: one line on stderr, "wsem: WHAT: reason", and the exit
 * status that goes with it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#define WSEM_DEVICE	"/dev/wsem"

int cli_fail_msg(const char *what, const char *msg, int status)
{
	fprintf(stderr, "wsem: %s: %s\n", what, msg);
	return status;
}

/*
 * "wsem: note: NAME exists with capacity 4, not 8, left as it is": what
 * create --exist-ok and run --create say of a semaphore they found with
 * another capacity than the one they were given.
 */
void cli_note_capacity(const char *name, uint64_t has, uint64_t asked)
{
	fprintf(stderr, "wsem: note: %s exists with capacity %" PRIu64
		", not %" PRIu64 ", left as it is\n", name, has, asked);
}

/*
 * Was @err, from a call that went through /dev/wsem, the device's doing
 * rather than the semaphore's?  Then the device's own error: what opening
 * it says (ENOENT: no module; EACCES: the node's mode), or ENOTTY when it
 * opens but is no wsem device.  0 when the device is fine.
 */
int cli_device_error(int err)
{
	int fd;

	if (err != ENOENT && err != EACCES && err != EPERM && err != ENOTTY &&
	    err != ENXIO && err != ENODEV)
		return 0;
	fd = open(WSEM_DEVICE, O_RDWR | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return errno;
	close(fd);
	return err == ENOTTY ? ENOTTY : 0;
}

/*
 * No /dev/wsem, yet the module is loaded (it has /sys/module/wsem, and
 * makes /sys/fs/wsem): a container, where semaphores come in as files.
 */
static bool module_loaded(void)
{
	return !access("/sys/module/wsem", F_OK) ||
	       !access("/sys/fs/wsem", F_OK);
}

/* One line about the device, with what to do about it. */
static int fail_device(int err)
{
	if ((err == ENOENT || err == ENXIO || err == ENODEV) && module_loaded())
		fprintf(stderr, "wsem: %s: %s (the module is loaded: give a "
			"semaphore's file by its path, as wsem run "
			"/run/limits/NAME, or mount wsemfs: mount -t wsem wsem "
			"/sys/fs/wsem)\n", WSEM_DEVICE, strerror(err));
	else if (err == ENOENT || err == ENXIO || err == ENODEV)
		fprintf(stderr, "wsem: %s: %s (is the module loaded? "
			"modprobe wsem)\n", WSEM_DEVICE, strerror(err));
	else if (err == ENOTTY)
		fprintf(stderr, "wsem: %s is not a wsem device\n",
			WSEM_DEVICE);
	else
		fprintf(stderr, "wsem: %s: %s\n", WSEM_DEVICE, strerror(err));
	return CLI_EXIT_ERROR;
}

/*
 * Report @err for @what, a semaphore reached through /dev/wsem (a NAME,
 * "ls"): when the device is to blame, the line names it instead.  ENOENT
 * about the semaphore itself means "no such semaphore" (exit 3).
 */
int cli_fail(const char *what, int err)
{
	int derr = cli_device_error(err);

	if (derr)
		return fail_device(derr);
	return cli_fail_msg(what, strerror(err),
			    err == ENOENT ? CLI_EXIT_NOTFOUND : CLI_EXIT_ERROR);
}

/* Report @err for @what, which did not involve /dev/wsem (a path, --fd). */
int cli_fail_nodev(const char *what, int err)
{
	return cli_fail_msg(what, strerror(err),
			    err == ENOENT ? CLI_EXIT_NOTFOUND : CLI_EXIT_ERROR);
}

/* "wsem: usage: PROBLEM (wsem SYNOPSIS)", or the synopsis alone. */
int cli_usage(const char *synopsis, const char *fmt, ...)
{
	va_list ap;

	fputs("wsem: usage: ", stderr);
	if (fmt) {
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fprintf(stderr, " (wsem %s)\n", synopsis);
	} else {
		fprintf(stderr, "wsem %s\n", synopsis);
	}
	return CLI_EXIT_USAGE;
}

/* cli_fail() for a NAME, cli_fail_nodev() for a path or "--fd". */
int cli_fail_target(const char *what, int err)
{
	if (cli_is_path(what) || what[0] == '-')
		return cli_fail_nodev(what, err);
	return cli_fail(what, err);
}

/*
 * Report @err reaching @path, the jobserver endpoint of @name (a NAME or
 * a semaphore's file), which is never /dev/wsem's doing: the semaphore
 * itself was opened already.  ENOENT where @name is a file is the
 * container's case, the semaphore's file bind-mounted without its
 * endpoint: said so.
 */
int cli_fail_endpoint(const char *name, const char *path, int err)
{
	const char *base = strrchr(name, '/');

	if (err != ENOENT)
		return cli_fail_msg(path, strerror(err), CLI_EXIT_ERROR);
	if (base)
		fprintf(stderr, "wsem: %s: no such file: %s is here without "
			"its jobserver endpoint (bind-mount %s/%s beside it, "
			"or the whole wsemfs)\n", path, name,
			WSEM_JOBSERVER_DIR, base + 1);
	else
		fprintf(stderr, "wsem: %s: no such file: %s has no jobserver "
			"endpoint there\n", path, name);
	return CLI_EXIT_ERROR;
}
