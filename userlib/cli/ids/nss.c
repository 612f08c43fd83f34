// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The owner= and group= names of wsem.d, for the dynamically linked wsem:
 * through NSS (getpwnam_r(), getgrnam_r()), so that accounts of LDAP, sssd
 * or systemd-userdb resolve as they do for ls and chown.  wsem-static
 * links files.c instead (userlib/Makefile): static glibc cannot load NSS
 * modules.
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdlib.h>

#include "../cli.h"

#define BUF_MAX		(1 << 20)	/* a group of many members, say */

/* Double @buf (1 KiB the first time), up to BUF_MAX; false if it cannot. */
static bool grow(char **buf, size_t *len)
{
	size_t n = *len ? *len * 2 : 1024;
	char *nb;

	if (n > BUF_MAX)
		return false;
	nb = realloc(*buf, n);
	if (!nb)
		return false;
	*buf = nb;
	*len = n;
	return true;
}

/* 0 if found, else -1 with errno: @err, ENOMEM for ERANGE, or ENOENT. */
static int result(bool found, int err)
{
	if (found)
		return 0;
	errno = err == ERANGE ? ENOMEM : err ? err : ENOENT;
	return -1;
}

int cli_user_id(const char *name, unsigned int *id)
{
	struct passwd pw, *res = NULL;
	char *buf = NULL;
	size_t len = 0;
	int err = ERANGE;

	while (err == ERANGE && grow(&buf, &len))
		err = getpwnam_r(name, &pw, buf, len, &res);
	if (res)
		*id = (unsigned int)pw.pw_uid;
	free(buf);
	return result(res, err);
}

int cli_group_id(const char *name, unsigned int *id)
{
	struct group gr, *res = NULL;
	char *buf = NULL;
	size_t len = 0;
	int err = ERANGE;

	while (err == ERANGE && grow(&buf, &len))
		err = getgrnam_r(name, &gr, buf, len, &res);
	if (res)
		*id = (unsigned int)gr.gr_gid;
	free(buf);
	return result(res, err);
}
