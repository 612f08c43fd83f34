// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Output of ls and stat: aligned tables for people, JSON for scripts.
 * JSON keys are the field names of struct wsem_stat; "mode" is an octal
 * string such as "0600", as ls(1) and stat(1) users read it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char *stat_name(const struct wsem_stat *st)
{
	static char name[WSEM_NAME_MAX];

	/* The kernel terminates it; do not trust that blindly. */
	memcpy(name, st->name, sizeof(name));
	name[sizeof(name) - 1] = '\0';
	return name;
}

/*
 * __u64 is unsigned long long on some ABIs and unsigned long on others
 * (ppc64el, mips64el, alpha): numbers are printed as uint64_t, PRIu64.
 */
static int num_width(uint64_t v)
{
	char buf[24];

	return snprintf(buf, sizeof(buf), "%" PRIu64, v);
}

static int max_int(int a, int b)
{
	return a > b ? a : b;
}

/* ls: NAME CAPACITY USED WAITERS, names left, numbers right aligned. */
void cli_print_table(const struct wsem_stat *st, size_t n)
{
	int w[4] = { 4, 8, 4, 7 };	/* the headers' widths */
	size_t i;

	for (i = 0; i < n; i++) {
		w[0] = max_int(w[0], (int)strlen(stat_name(&st[i])));
		w[1] = max_int(w[1], num_width(st[i].capacity));
		w[2] = max_int(w[2], num_width(st[i].used));
		w[3] = max_int(w[3], num_width(st[i].waiters));
	}
	printf("%-*s  %*s  %*s  %*s\n", w[0], "NAME", w[1], "CAPACITY",
	       w[2], "USED", w[3], "WAITERS");
	for (i = 0; i < n; i++)
		printf("%-*s  %*" PRIu64 "  %*" PRIu64 "  %*" PRIu64 "\n",
		       w[0], stat_name(&st[i]), w[1], (uint64_t)st[i].capacity,
		       w[2], (uint64_t)st[i].used, w[3], (uint64_t)st[i].waiters);
}

static void print_field(const char *key, uint64_t v)
{
	printf("%-14s %" PRIu64 "\n", key, v);
}

/* stat: one "field: value" line per field of struct wsem_stat. */
void cli_print_stat(const struct wsem_stat *st)
{
	printf("%-14s %s\n", "name:", stat_name(st));
	print_field("capacity:", st->capacity);
	print_field("used:", st->used);
	print_field("available:", st->available);
	print_field("held:", st->held);
	print_field("waiters:", st->waiters);
	print_field("queued_weight:", st->queued_weight);
	print_field("uid:", st->uid);
	print_field("gid:", st->gid);
	printf("%-14s %04o\n", "mode:", (unsigned int)st->mode);
}

/* A JSON string; names are [A-Za-z0-9._-], but escape anything odd. */
static void json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void json_u64(const char *key, uint64_t v)
{
	printf(",\"%s\":%" PRIu64, key, v);
}

static void json_fields(const struct wsem_stat *st)
{
	fputs("{\"name\":", stdout);
	json_string(stat_name(st));
	json_u64("capacity", st->capacity);
	json_u64("used", st->used);
	json_u64("available", st->available);
	json_u64("held", st->held);
	json_u64("waiters", st->waiters);
	json_u64("queued_weight", st->queued_weight);
	printf(",\"uid\":%u,\"gid\":%u,\"mode\":\"%04o\"", st->uid, st->gid,
	       st->mode);
}

void cli_print_json_stat(const struct wsem_stat *st)
{
	json_fields(st);
	putchar('}');
}

/* stat --json: the fields, and "ipc_ns", the N of ipc:[N] (0: unknown). */
void cli_print_json_stat_ns(const struct wsem_stat *st, unsigned long ns)
{
	json_fields(st);
	printf(",\"ipc_ns\":%lu}", ns);
}

/* ls --json: an array, one object per line. */
void cli_print_json_list(const struct wsem_stat *st, size_t n)
{
	size_t i;

	if (!n) {
		puts("[]");
		return;
	}
	puts("[");
	for (i = 0; i < n; i++) {
		fputs("  ", stdout);
		cli_print_json_stat(&st[i]);
		puts(i + 1 < n ? "," : "");
	}
	puts("]");
}
