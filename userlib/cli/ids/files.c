// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The owner= and group= names of wsem.d, for wsem-static: read from
 * /etc/passwd and /etc/group ("name:x:id:..."), since static glibc cannot
 * load NSS modules; so an account only LDAP or sssd knows is unknown
 * there.  The dynamically linked wsem links nss.c instead
 * (userlib/Makefile).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cli.h"

#define LINE_MAX_LEN	1024

/* The id of line @line if it is @name's (@len bytes); false if not. */
static bool line_id(const char *line, const char *name, size_t len,
		    unsigned int *id)
{
	const char *colon;
	unsigned long long n;
	char *end;

	if (strncmp(line, name, len) || line[len] != ':')
		return false;
	colon = strchr(line + len + 1, ':');	/* past the password */
	if (!colon)
		return false;
	n = strtoull(colon + 1, &end, 10);
	if (end == colon + 1 || *end != ':' || n >= UINT32_MAX)
		return false;
	*id = (unsigned int)n;
	return true;
}

/* The id of @name in @db; 0, or -1 with errno (ENOENT: not there). */
static int file_id(const char *db, const char *name, unsigned int *id)
{
	char line[LINE_MAX_LEN];
	size_t len = strlen(name);
	bool found = false;
	FILE *f = fopen(db, "re");

	if (!f)
		return -1;
	while (!found && fgets(line, sizeof(line), f))
		found = line_id(line, name, len, id);
	fclose(f);
	if (found)
		return 0;
	errno = ENOENT;
	return -1;
}

int cli_user_id(const char *name, unsigned int *id)
{
	return file_id("/etc/passwd", name, id);
}

int cli_group_id(const char *name, unsigned int *id)
{
	return file_id("/etc/group", name, id);
}
