// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Error messages: one line on stderr, "wsem: WHAT: reason", and the exit
 * status that goes with it.
 */
#include <errno.h>
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
 * Report @err for @what.  ENOENT means "no such semaphore" (exit 3) unless
 * the device itself is missing: then the module is not loaded (exit 1).
 */
int cli_fail(const char *what, int err)
{
	if (err == ENOENT && access(WSEM_DEVICE, F_OK))
		return cli_fail_msg(WSEM_DEVICE, strerror(err), CLI_EXIT_ERROR);
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
