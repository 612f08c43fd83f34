// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The one JSON string writer of every --json output (names, holders'
 * comm, cgroup and label), so that all of it is valid JSON (RFC 8259)
 * whatever bytes the kernel hands over.
 *
 * Well-formed UTF-8 is copied as it is.  A byte that does not start a
 * well-formed sequence (a comm of 15 bytes cut inside a character, an
 * overlong form, a surrogate, a stray continuation byte) becomes U+FFFD,
 * written "\ufffd", one per such byte, as a decoder that replaces errors
 * does.  '"' and '\' are escaped with a backslash, control characters
 * (below 0x20, and 0x7f) as "\u00XX".
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

/*
 * How many bytes the well-formed UTF-8 sequence at @s (at most @len bytes)
 * has, or 0 if none starts there (Unicode 15, table 3-7).
 */
static size_t utf8_len(const unsigned char *s, size_t len)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4;
	else
		return 0;
	if (s[0] == 0xe0)
		lo = 0xa0;		/* overlong */
	else if (s[0] == 0xed)
		hi = 0x9f;		/* surrogates */
	else if (s[0] == 0xf0)
		lo = 0x90;		/* overlong */
	else if (s[0] == 0xf4)
		hi = 0x8f;		/* above U+10FFFF */
	if (n > len)
		return 0;
	for (i = 1; i < n; i++) {
		if (s[i] < lo || s[i] > hi)
			return 0;
		lo = 0x80;
		hi = 0xbf;
	}
	return n;
}

/*
 * Write the bytes of @s up to its NUL or @max bytes, whichever comes
 * first, as one JSON string to @out.
 */
void cli_json_string(FILE *out, const char *s, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strnlen(s, max), i = 0, n;

	putc('"', out);
	while (i < len) {
		n = utf8_len(p + i, len - i);
		if (!n) {
			fputs("\\ufffd", out);
			n = 1;
		} else if (p[i] == '"' || p[i] == '\\') {
			fprintf(out, "\\%c", p[i]);
		} else if (p[i] < 0x20 || p[i] == 0x7f) {
			fprintf(out, "\\u%04x", p[i]);
		} else {
			fwrite(p + i, 1, n, out);
		}
		i += n;
	}
	putc('"', out);
}

/*
 * run --json: one line on @f (standard error, or --json=PATH) once the
 * weight is held, before COMMAND starts (flushed, so that it comes before
 * anything COMMAND writes there):
 * {"name":..,"weight":W,"capacity":C,"used":U,"waited_ns":N,"pid":P,
 * "inherit":false} and, with --inherit, "fd": the handle COMMAND gets as
 * $WSEM_FD.  P is the process that holds the lease: wsem's, which is
 * COMMAND's too with --inherit.  capacity and used are 0 where @fd cannot
 * be stat()ed.  0, or -1 with errno if the line could not be written.
 */
int cli_print_json_lease(FILE *f, const char *name, int fd, uint64_t weight,
			 uint64_t waited_ns, int inherit_fd)
{
	struct wsem_stat st = { 0 };

	wsem_stat(fd, &st);
	fputs("{\"name\":", f);
	cli_json_string(f, name, strlen(name));
	fprintf(f, ",\"weight\":%" PRIu64 ",\"capacity\":%" PRIu64
		",\"used\":%" PRIu64 ",\"waited_ns\":%" PRIu64 ",\"pid\":%d"
		",\"inherit\":%s", weight, (uint64_t)st.capacity,
		(uint64_t)st.used, waited_ns, (int)getpid(),
		inherit_fd >= 0 ? "true" : "false");
	if (inherit_fd >= 0)
		fprintf(f, ",\"fd\":%d", inherit_fd);
	fputs("}\n", f);
	return fflush(f) || ferror(f) ? -1 : 0;
}

/*
 * wait --json: one line on stdout when the wait ends, idle or timed out:
 * {"name":..,"idle":true|false,"waited_ns":N}.
 */
void cli_print_json_wait(const char *name, bool idle, uint64_t waited_ns)
{
	fputs("{\"name\":", stdout);
	cli_json_string(stdout, name, strlen(name));
	printf(",\"idle\":%s,\"waited_ns\":%" PRIu64 "}\n",
	       idle ? "true" : "false", waited_ns);
	fflush(stdout);
}

/* Nanoseconds on the monotonic clock, for waited_ns. */
uint64_t cli_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
