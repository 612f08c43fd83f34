// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Strict number parsing: digits only, no sign, no blanks, no trailing
 * junk, and overflow is an error rather than a clamp.
 */
#include <stdint.h>
#include <string.h>

#include "cli.h"

#define NSEC_PER_SEC	1000000000LL

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* A decimal uint64_t. */
bool cli_parse_u64(const char *s, uint64_t *v)
{
	uint64_t n = 0;

	if (!*s)
		return false;
	for (; *s; s++) {
		unsigned int d = (unsigned int)(*s - '0');

		if (!is_digit(*s) || n > (UINT64_MAX - d) / 10)
			return false;
		n = n * 10 + d;
	}
	*v = n;
	return true;
}

/* Octal permission bits, 0 .. 0777 ("600", "0644"). */
static bool parse_octal_mode(const char *s, mode_t *mode)
{
	unsigned int m = 0;

	for (; *s; s++) {
		if (*s < '0' || *s > '7')
			return false;
		m = m * 8 + (unsigned int)(*s - '0');
		if (m > 0777)
			return false;
	}
	*mode = m;
	return true;
}

/* The bits of "ugoa" letters at *@s (all of them for none), moving on. */
static unsigned int parse_who(const char **s)
{
	unsigned int who = 0;

	for (;; (*s)++) {
		if (**s == 'u')
			who |= 0700;
		else if (**s == 'g')
			who |= 0070;
		else if (**s == 'o')
			who |= 0007;
		else if (**s == 'a')
			who |= 0777;
		else
			return who ? who : 0777;
	}
}

/*
 * The permission after an operator, moving on: letters of "rwx" as bits
 * for every class, or one of "ugo", the bits that class has in @mode now
 * (chmod's "g=u").  -1 for anything else, such as s, t or X, which a
 * semaphore has no use for.
 */
static int parse_perm(const char **s, mode_t mode)
{
	const char *copy = strchr("ugo", **s);
	unsigned int bits = 0, c;

	if (**s && copy) {
		c = (unsigned int)mode >> (3 * (2 - (copy - "ugo"))) & 7;
		(*s)++;
		return (int)(c * 0111);
	}
	for (; **s && !strchr(",+-=", **s); (*s)++) {
		if (**s == 'r')
			bits |= 0444;
		else if (**s == 'w')
			bits |= 0222;
		else if (**s == 'x')
			bits |= 0111;
		else
			return -1;
	}
	return (int)bits;
}

/* One clause, "WHO OP PERM [OP PERM]...", applied to *@mode. */
static bool parse_clause(const char **s, mode_t *mode)
{
	unsigned int who = parse_who(s);
	char op;
	int bits;

	if (!**s || !strchr("+-=", **s))
		return false;
	while (**s && strchr("+-=", **s)) {
		op = *(*s)++;
		bits = parse_perm(s, *mode);
		if (bits < 0)
			return false;
		bits &= (int)who;
		if (op == '=')
			*mode = (*mode & ~who) | (unsigned int)bits;
		else if (op == '+')
			*mode |= (unsigned int)bits;
		else
			*mode &= ~(unsigned int)bits;
	}
	return true;
}

/*
 * Permission bits as chmod(1) and mkdir -m take them: octal, 0 .. 0777
 * ("600", "0644"), or symbolic, clauses separated by commas ("a+rw",
 * "u=rw,g=r", "go-w", "g=u"), applied to *@mode, the default mode.  A
 * clause without ugoa is for all (the umask plays no part: the mode is
 * exact, as with an octal one); s, t and X are refused.
 */
bool cli_parse_mode(const char *s, mode_t *mode)
{
	mode_t m = *mode & 0777;

	if (!*s)
		return false;
	if (*s >= '0' && *s <= '9')
		return parse_octal_mode(s, mode);
	for (;;) {
		if (!parse_clause(&s, &m))
			return false;
		if (!*s)
			break;
		if (*s++ != ',')
			return false;
	}
	*mode = m;
	return true;
}

/* The fraction after the dot, as nanoseconds; digits past the 9th drop. */
static bool parse_fraction(const char *s, int64_t *ns)
{
	int64_t scale = NSEC_PER_SEC / 10;

	*ns = 0;
	for (; *s; s++) {
		if (!is_digit(*s))
			return false;
		*ns += (*s - '0') * scale;
		scale /= 10;
	}
	return true;
}

/* The seconds a duration's unit stands for, as timeout(1)'s: s m h d. */
static int64_t unit_seconds(const char *u)
{
	static const struct { char c; int64_t secs; } units[] = {
		{ 's', 1 }, { 'm', 60 }, { 'h', 3600 }, { 'd', 86400 },
	};
	size_t i;

	if (!*u)
		return 1;
	for (i = 0; u[1] == '\0' && i < sizeof(units) / sizeof(units[0]); i++) {
		if (units[i].c == *u)
			return units[i].secs;
	}
	return 0;
}

/*
 * A duration as timeout(1) takes it, as nanoseconds: a decimal number with
 * an optional fraction ("2", "0.25", ".5") and an optional unit, s
 * (seconds, the default), m (minutes), h (hours) or d (days): "5m",
 * "1.5s", "2h".  No sign, no exponent, no blanks; what does not fit in
 * int64_t nanoseconds (about 292 years) is refused.
 */
bool cli_parse_duration(const char *s, int64_t *ns)
{
	const int64_t max_sec = INT64_MAX / NSEC_PER_SEC;
	int64_t sec = 0, frac, unit;
	char num[32];
	const char *p = s;
	size_t len;

	if (!is_digit(s[0]) && !(s[0] == '.' && is_digit(s[1])))
		return false;
	len = strspn(s, "0123456789.");
	if (len >= sizeof(num))
		return false;
	memcpy(num, s, len);
	num[len] = '\0';
	unit = unit_seconds(s + len);
	for (p = num; is_digit(*p); p++) {
		sec = sec * 10 + (*p - '0');
		if (sec > max_sec)
			return false;
	}
	if (*p == '.')
		p++;
	if (!unit || !parse_fraction(p, &frac))
		return false;
	/* sec * unit s + frac * unit ns, without overflow */
	if (sec > (INT64_MAX - frac * unit) / (unit * NSEC_PER_SEC))
		return false;
	*ns = sec * unit * NSEC_PER_SEC + frac * unit;
	return true;
}
