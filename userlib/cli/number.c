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
bool cli_parse_mode(const char *s, mode_t *mode)
{
	unsigned int m = 0;

	if (!*s)
		return false;
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
