// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * wsem run --jobserver: the MAKEFLAGS COMMAND gets, where wsem's endpoint
 * is the one in force whatever was inherited.
 *
 * GNU make, ninja, cargo's jobserver crate and LLVM take the last
 * --jobserver-auth (or --jobserver-fds) word of MAKEFLAGS, and make the
 * last -j; so words added in front of an inherited MAKEFLAGS lose to an
 * outer make's or a CI's.  cli_makeflags() removes them instead:
 *
 *  - "--jobserver-auth=X", "--jobserver-fds=X", "--jobserver-auth X",
 *    "--jobserver-fds X";
 *  - "-jN", "-j", "-j N", "--jobs=N", "--jobs", "--jobs N", and the 'j'
 *    of a cluster of single-letter flags ("-kj8" becomes "-k");
 *  - the first word, when it has no '-' and no '=', is make's own word of
 *    single-letter flags ("ks"): make reads it as options only while it is
 *    the first word, so it stays first ('j' and what follows it cut);
 *  - after a "--" word come variable definitions: kept as they are.
 *
 * Then wsem's words go right after that first word (and so before any
 * "--"); with no such word, after a blank, as make writes MAKEFLAGS
 * (" -j8 --jobserver-auth=3,4") and ninja expects it.  Words are split where make splits them, at blanks not escaped
 * by a backslash, and kept byte for byte.
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Single-letter options of make that take an argument (j is handled). */
#define MAKE_ARG_LETTERS	"CEfIlLoOW"

/* The end of the word that starts at @p (a blank not escaped, or NUL). */
static const char *word_end(const char *p)
{
	for (; *p && *p != ' ' && *p != '\t'; p++) {
		if (*p == '\\' && p[1])
			p++;
	}
	return p;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static bool all_digits(const char *p, size_t len)
{
	size_t i;

	if (!len)
		return false;
	for (i = 0; i < len; i++) {
		if (p[i] < '0' || p[i] > '9')
			return false;
	}
	return true;
}

/* Whether word @w (@len bytes) is @opt, or @opt followed by '='. */
static bool is_long(const char *w, size_t len, const char *opt, bool *joined)
{
	size_t n = strlen(opt);

	if (len < n || memcmp(w, opt, n))
		return false;
	if (len == n) {
		*joined = false;
		return true;
	}
	if (w[n] != '=')
		return false;
	*joined = true;
	return true;
}

/*
 * In a cluster of single-letter flags @w (@len bytes, its '-' included or
 * not), where a 'j' starts that is an option of its own (not another
 * option's argument), or @len.
 */
static size_t j_in_cluster(const char *w, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		if (w[i] == 'j')
			return i;
		if (i && strchr(MAKE_ARG_LETTERS, w[i]))
			break;
	}
	return len;
}

/* Append @len bytes of @w to @out at *@pos, a blank before if not first. */
static void put_word(char *out, size_t *pos, const char *w, size_t len)
{
	if (*pos)
		out[(*pos)++] = ' ';
	memcpy(out + *pos, w, len);
	*pos += len;
}

/*
 * The inherited word @w (@len bytes; @next the word after it, @next_len
 * bytes) into @out: dropped if a jobserver's or a -j, cut if a cluster
 * holding j.  How many of the following words it consumed too (0 or 1).
 */
static int filter_word(char *out, size_t *pos, const char *w, size_t len,
		       const char *next, size_t next_len)
{
	bool joined;
	size_t j;

	if (is_long(w, len, "--jobserver-auth", &joined) ||
	    is_long(w, len, "--jobserver-fds", &joined))
		return joined ? 0 : next_len > 0;
	if (is_long(w, len, "--jobs", &joined))
		return !joined && all_digits(next, next_len);
	if (len < 2 || w[0] != '-' || w[1] == '-') {
		put_word(out, pos, w, len);
		return 0;
	}
	j = j_in_cluster(w, len);
	if (j < len) {
		if (j > 1)
			put_word(out, pos, w, j);
		return j + 1 == len && all_digits(next, next_len);
	}
	put_word(out, pos, w, len);
	return 0;
}

/*
 * MAKEFLAGS made of inherited @old (or NULL) and wsem's words @ours, as
 * the header comment says; malloc()ed, or NULL with errno ENOMEM.
 */
char *cli_makeflags(const char *old, const char *ours)
{
	size_t len = old ? strlen(old) : 0, pos = 0, wlen, nlen;
	const char *p = old, *w, *next;
	bool vars = false;
	char *out;
	int skip;

	out = malloc(len + strlen(ours) + 3);
	if (!out)
		return NULL;
	while (p && is_blank(*p))
		p++;
	if (p && *p && *p != '-' && (size_t)(word_end(p) - p) ==
	    strcspn(p, "= \t")) {
		/* make's own single-letter flags: they stay the first word */
		wlen = word_end(p) - p;
		wlen = j_in_cluster(p, wlen);
		if (wlen)
			put_word(out, &pos, p, wlen);
		p = word_end(p);
	}
	/* after the flags, or (none) an empty first word, as make writes */
	out[pos++] = ' ';
	memcpy(out + pos, ours, strlen(ours));
	pos += strlen(ours);
	while (p && *p) {
		while (is_blank(*p))
			p++;
		if (!*p)
			break;
		w = p;
		wlen = word_end(w) - w;
		for (next = w + wlen; is_blank(*next); next++)
			;
		nlen = word_end(next) - next;
		if (vars) {
			put_word(out, &pos, w, wlen);
			skip = 0;
		} else if (wlen == 2 && !memcmp(w, "--", 2)) {
			vars = true;
			put_word(out, &pos, w, wlen);
			skip = 0;
		} else {
			skip = filter_word(out, &pos, w, wlen, next, nlen);
		}
		p = skip ? next + nlen : w + wlen;
	}
	out[pos] = '\0';
	return out;
}
