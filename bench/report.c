// SPDX-License-Identifier: GPL-2.0
/*
 * Where results go: a table (kept until the end, then printed on stdout),
 * OUTDIR/results.json and OUTDIR/results.dat (gnuplot data blocks, each
 * starting with a "# name" line that plot.gp selects with index "name")
 * and OUTDIR/metrics.txt: one "key<TAB>value<TAB>label" line per headline
 * figure, which run.sh joins across two runs (before/after).  Progress
 * goes to stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench.h"

struct options opt = { .scale = 1.0, .outdir = "." };

static char *table_buf;
static size_t table_len;
static FILE *table_f;
static FILE *json_f;
static FILE *plot_f;
static FILE *metric_f;

/* JSON nesting: whether the current level has an element yet. */
static bool json_has[16];
static int json_depth;

static FILE *open_out(const char *dir, const char *name)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "wsem-bench: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	return f;
}

void report_open(const char *outdir)
{
	mkdir(outdir, 0755);
	table_f = open_memstream(&table_buf, &table_len);
	json_f = open_out(outdir, "results.json");
	plot_f = open_out(outdir, "results.dat");
	metric_f = open_out(outdir, "metrics.txt");
	if (!table_f)
		exit(1);
	fputc('{', json_f);
	json_depth = 1;
	json_has[1] = false;
}

void report_close(void)
{
	fputs("\n}\n", json_f);
	fclose(json_f);
	fclose(plot_f);
	fclose(metric_f);
	fclose(table_f);
	fwrite(table_buf, 1, table_len, stdout);
	fflush(stdout);
	free(table_buf);
}

void progress(const char *fmt, ...)
{
	va_list ap;

	if (opt.quiet)
		return;
	va_start(ap, fmt);
	fputs("# ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

void table(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(table_f, fmt, ap);
	va_end(ap);
}

void plot(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(plot_f, fmt, ap);
	va_end(ap);
}

/* A headline figure @val under @key (no blanks), described by @label. */
void metric(const char *key, const char *label, double val)
{
	fprintf(metric_f, "%s\t%.6g\t%s\n", key, val, label);
}

/* A comma and a new line before every element but the first of a level. */
static void json_key(const char *key)
{
	if (json_has[json_depth])
		fputc(',', json_f);
	json_has[json_depth] = true;
	fprintf(json_f, "\n%*s", 2 * json_depth, "");
	if (key)
		fprintf(json_f, "\"%s\": ", key);
}

static void json_open(const char *key, char c)
{
	json_key(key);
	fputc(c, json_f);
	json_has[++json_depth] = false;
}

static void json_close(char c)
{
	json_depth--;
	fprintf(json_f, "\n%*s%c", 2 * json_depth, "", c);
}

void json_begin(const char *key)
{
	json_open(key, '{');
}

void json_begin_array(const char *key)
{
	json_open(key, '[');
}

void json_end(void)
{
	json_close('}');
}

void json_end_array(void)
{
	json_close(']');
}

void json_str(const char *key, const char *val)
{
	const char *p;

	json_key(key);
	fputc('"', json_f);
	for (p = val; *p; p++) {
		if (*p == '"' || *p == '\\')
			fputc('\\', json_f);
		if ((unsigned char)*p < 0x20)
			fprintf(json_f, "\\u%04x", *p);
		else
			fputc(*p, json_f);
	}
	fputc('"', json_f);
}

void json_num(const char *key, double val)
{
	json_key(key);
	if (isfinite(val))
		fprintf(json_f, "%.6g", val);
	else
		fputs("null", json_f);
}

void json_int(const char *key, long long val)
{
	json_key(key);
	fprintf(json_f, "%lld", val);
}

void json_bool(const char *key, bool val)
{
	json_key(key);
	fputs(val ? "true" : "false", json_f);
}

void json_null(const char *key)
{
	json_key(key);
	fputs("null", json_f);
}

/* A measuring time of @seconds, scaled by -t. */
uint64_t run_ns(double seconds)
{
	return (uint64_t)(seconds * opt.scale * NSEC_PER_SEC);
}

/*
 * @peer / @wsem, NaN when either is missing.  Every ratio printed is one
 * of costs, a row's over its reference's (times, CPU, bytes; for rates the
 * reference's rate over the row's, i.e. the row's time per operation over
 * the reference's), so that above 1 always means the row is slower or
 * costlier than its reference, in every table.
 */
double ratio(double peer, double wsem)
{
	if (!isfinite(peer) || !isfinite(wsem) || wsem == 0)
		return __builtin_nan("");
	return peer / wsem;
}
