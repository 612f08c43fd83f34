// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Output of ls and stat: aligned tables for people, JSON for scripts.
 * JSON keys are the field names of struct wsem_stat; "mode" is an octal
 * string such as "0600", as ls(1) and stat(1) users read it.
 */
#define _GNU_SOURCE		/* strchrnul() */
#include <ctype.h>
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

/* What a child holds of its parent, "4 of gpu"; "-" for a root. */
static const char *holds_text(const struct wsem_stat *st,
			      const struct cli_tree_row *row, char *buf,
			      size_t len)
{
	if (!row || !row->parent[0])
		return "-";
	snprintf(buf, len, "%" PRIu64 " of %s", (uint64_t)st->used,
		 row->parent);
	return buf;
}

/*
 * ls: NAME CAPACITY USED WAITERS, names left, numbers right aligned;
 * @longer (ls -l) adds the capacity lent, the ceiling (0: not a loans
 * semaphore), the depth in its tree (0: a root, 1: a child of a root,
 * ...), the owner and group ids, the mode and the longest wait so
 * far.  With @rows (top), the entries in the rows' order, each name
 * indented two spaces a level of the tree, and after WAITERS a column
 * HOLDS OF PARENT: a child's used, which is what it holds of its parent
 * (its own holders' and its children's), and the parent's name.
 */
void cli_print_rows(const struct wsem_stat *all,
		    const struct cli_tree_row *rows, size_t n, bool longer)
{
	/* the headers' widths */
	int w[9] = { 4, 8, 4, 7, 3, 5, 4, 7, 15 };
	const struct wsem_stat *st;
	char dur[24], holds[WSEM_NAME_MAX + 32];
	int indent;
	size_t i;

	for (i = 0; i < n; i++) {
		st = rows ? &all[rows[i].i] : &all[i];
		indent = rows ? 2 * (int)rows[i].level : 0;
		w[0] = max_int(w[0], indent + (int)strlen(stat_name(st)));
		w[1] = max_int(w[1], num_width(st->capacity));
		w[2] = max_int(w[2], num_width(st->used));
		w[3] = max_int(w[3], num_width(st->waiters));
		w[4] = max_int(w[4], num_width(st->uid));
		w[5] = max_int(w[5], num_width(st->gid));
		w[6] = max_int(w[6], num_width(st->lent));
		w[7] = max_int(w[7], num_width(st->ceiling));
		if (rows)
			w[8] = max_int(w[8], (int)strlen(holds_text(st,
					&rows[i], holds, sizeof(holds))));
	}
	printf("%-*s  %*s  %*s  %*s", w[0], "NAME", w[1], "CAPACITY",
	       w[2], "USED", w[3], "WAITERS");
	if (rows)
		printf("  %-*s", w[8], "HOLDS OF PARENT");
	if (longer)
		printf("  %*s  %*s  DEPTH  %*s  %*s  MODE  LONGEST WAIT",
		       w[6], "LENT", w[7], "CEILING", w[4], "UID", w[5], "GID");
	putchar('\n');
	for (i = 0; i < n; i++) {
		st = rows ? &all[rows[i].i] : &all[i];
		indent = rows ? 2 * (int)rows[i].level : 0;
		printf("%*s%-*s  %*" PRIu64 "  %*" PRIu64 "  %*" PRIu64,
		       indent, "", w[0] - indent, stat_name(st), w[1],
		       (uint64_t)st->capacity, w[2], (uint64_t)st->used, w[3],
		       (uint64_t)st->waiters);
		if (rows)
			printf("  %-*s", w[8], holds_text(st, &rows[i], holds,
							  sizeof(holds)));
		if (longer)
			printf("  %*" PRIu64 "  %*" PRIu64, w[6],
			       (uint64_t)st->lent, w[7],
			       (uint64_t)st->ceiling);
		if (longer)
			printf("  %5" PRIu64 "  %*u  %*u  %04o  %s",
			       (uint64_t)st->depth, w[4], st->uid, w[5],
			       st->gid, (unsigned int)st->mode,
			       cli_duration_text(st->wait_ns_max, dur,
						 sizeof(dur)));
		putchar('\n');
	}
}

void cli_print_table(const struct wsem_stat *st, size_t n, bool longer)
{
	cli_print_rows(st, NULL, n, longer);
}

static void print_field(const char *key, uint64_t v)
{
	printf("%-14s %" PRIu64 "\n", key, v);
}

/* A column of ls -o: its name (also its JSON key), and how to get it. */
struct column {
	const char *name;
	uint64_t (*get)(const struct wsem_stat *st);
};

#define COLUMN(f) \
	static uint64_t col_##f(const struct wsem_stat *st) { return st->f; }
COLUMN(capacity) COLUMN(used) COLUMN(available) COLUMN(held)
COLUMN(waiters) COLUMN(queued_weight) COLUMN(lent) COLUMN(ceiling)
COLUMN(depth) COLUMN(uid) COLUMN(gid) COLUMN(mode)

static const struct column columns[] = {
	{ "name", NULL }, { "capacity", col_capacity }, { "used", col_used },
	{ "available", col_available }, { "held", col_held },
	{ "waiters", col_waiters }, { "queued_weight", col_queued_weight },
	{ "lent", col_lent }, { "ceiling", col_ceiling },
	{ "depth", col_depth }, { "uid", col_uid }, { "gid", col_gid },
	{ "mode", col_mode },
};

#define NR_COLUMNS	(sizeof(columns) / sizeof(columns[0]))
#define MAX_PICKED	32

/*
 * The columns @list names (comma-separated, each once or more), into
 * @picked; how many, or -1 with the first unknown name in *@bad.
 */
static int pick_columns(const char *list, const struct column **picked,
			const char **bad)
{
	static char word[32];
	const char *p = list, *end;
	size_t len, i;
	int n = 0;

	do {
		end = strchrnul(p, ',');
		len = (size_t)(end - p);
		for (i = 0; i < NR_COLUMNS; i++) {
			if (strlen(columns[i].name) == len &&
			    !strncmp(columns[i].name, p, len))
				break;
		}
		if (i == NR_COLUMNS || n == MAX_PICKED) {
			snprintf(word, sizeof(word), "%.*s", (int)len, p);
			*bad = word;
			return -1;
		}
		picked[n++] = &columns[i];
		p = end + 1;
	} while (*end);
	return n;
}

static void print_cell(const struct column *c, const struct wsem_stat *st,
		       int width, bool last)
{
	if (!c->get)
		printf("%-*s", last ? 0 : width, stat_name(st));
	else if (c->get == col_mode)
		printf("%*s%04o", width - 4, "", (unsigned int)st->mode);
	else
		printf("%*" PRIu64, width, c->get(st));
}

/*
 * ls -o COLUMNS: those columns, in that order, with a header line of their
 * names in capitals unless @headings is false; names left, numbers right
 * aligned.  Return: 0, or -1 with the unknown column in *@bad.
 */
int cli_print_columns(const struct wsem_stat *st, size_t n,
		      const char *list, bool headings, const char **bad)
{
	const struct column *picked[MAX_PICKED];
	int w[MAX_PICKED], nc, c;
	char head[32];
	size_t i, k;

	nc = pick_columns(list, picked, bad);
	if (nc < 0)
		return -1;
	for (c = 0; c < nc; c++) {
		w[c] = headings ? (int)strlen(picked[c]->name) : 0;
		for (i = 0; i < n; i++) {
			if (!picked[c]->get)
				w[c] = max_int(w[c], (int)strlen(stat_name(&st[i])));
			else if (picked[c]->get == col_mode)
				w[c] = max_int(w[c], 4);
			else
				w[c] = max_int(w[c], num_width(picked[c]->get(&st[i])));
		}
	}
	if (headings) {
		for (c = 0; c < nc; c++) {
			for (k = 0; picked[c]->name[k] && k < sizeof(head) - 1; k++)
				head[k] = (char)toupper((unsigned char)picked[c]->name[k]);
			head[k] = '\0';
			printf(picked[c]->get ? "%s%*s" : "%s%-*s",
			       c ? "  " : "", w[c], head);
		}
		putchar('\n');
	}
	for (i = 0; i < n; i++) {
		for (c = 0; c < nc; c++) {
			fputs(c ? "  " : "", stdout);
			print_cell(picked[c], &st[i], w[c], c == nc - 1);
		}
		putchar('\n');
	}
	return 0;
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
	print_field("lent:", st->lent);
	print_field("ceiling:", st->ceiling);
	print_field("uid:", st->uid);
	print_field("gid:", st->gid);
	printf("%-14s %04o\n", "mode:", (unsigned int)st->mode);
	print_field("depth:", st->depth);
	print_field("parent_id:", st->parent_id);
}

/* stat: the statistics since creation, after the fields. */
void cli_print_stats(const struct wsem_stat *st)
{
	char a[24], b[24];

	printf("%-14s %" PRIu64 " at once, %" PRIu64 " after waiting\n",
	       "grants:", (uint64_t)st->grants_at_once,
	       (uint64_t)st->grants_waited);
	printf("%-14s %" PRIu64 " timed out, %" PRIu64 " interrupted, %"
	       PRIu64 " ended by a shrink\n", "failed waits:",
	       (uint64_t)st->timeouts, (uint64_t)st->interrupts,
	       (uint64_t)st->shrunk);
	printf("%-14s longest %s, in all %s; longest queue %" PRIu64 "\n",
	       "waiting:", cli_duration_text(st->wait_ns_max, a, sizeof(a)),
	       cli_duration_text(st->wait_ns_total, b, sizeof(b)),
	       (uint64_t)st->queue_max);
}

static void json_u64(const char *key, uint64_t v)
{
	printf(",\"%s\":%" PRIu64, key, v);
}

static void json_fields(const struct wsem_stat *st)
{
	fputs("{\"name\":", stdout);
	cli_json_string(stdout, st->name, sizeof(st->name));
	json_u64("capacity", st->capacity);
	json_u64("used", st->used);
	json_u64("available", st->available);
	json_u64("held", st->held);
	json_u64("waiters", st->waiters);
	json_u64("queued_weight", st->queued_weight);
	printf(",\"uid\":%u,\"gid\":%u,\"mode\":\"%04o\"", st->uid, st->gid,
	       st->mode);
	json_u64("grants_at_once", st->grants_at_once);
	json_u64("grants_waited", st->grants_waited);
	json_u64("timeouts", st->timeouts);
	json_u64("interrupts", st->interrupts);
	json_u64("shrunk", st->shrunk);
	json_u64("wait_ns_total", st->wait_ns_total);
	json_u64("wait_ns_max", st->wait_ns_max);
	json_u64("queue_max", st->queue_max);
	json_u64("lent", st->lent);
	json_u64("lent_here", st->lent_here);
	json_u64("ceiling", st->ceiling);
	json_u64("depth", st->depth);
	json_u64("parent_id", st->parent_id);
}

void cli_print_json_stat(const struct wsem_stat *st)
{
	json_fields(st);
	putchar('}');
}

/* stat --json: the fields, and "ipc_ns", the N of ipc:[N] (0: unknown). */
void cli_print_json_stat_ns(const struct wsem_stat *st, unsigned long ns)
{
	cli_print_json_stat_open(st, ns);
	putchar('}');
}

/* ... without the closing brace, for more keys to follow. */
void cli_print_json_stat_open(const struct wsem_stat *st, unsigned long ns)
{
	json_fields(st);
	printf(",\"ipc_ns\":%lu", ns);
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
