// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Strict number parsing: digits only, no sign, no blanks, no trailing
 * junk, and overflow is an error rather than a clamp.
 */
#include <stdint.h>

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

/* Seconds with an optional fraction ("2", "0.25", ".5"), as nanoseconds. */
bool cli_parse_seconds(const char *s, int64_t *ns)
{
	const int64_t max_sec = INT64_MAX / NSEC_PER_SEC;
	int64_t sec = 0, frac;
	const char *p = s;

	if (!is_digit(s[0]) && !(s[0] == '.' && is_digit(s[1])))
		return false;
	for (; is_digit(*p); p++) {
		sec = sec * 10 + (*p - '0');
		if (sec > max_sec)
			return false;
	}
	if (*p == '.')
		p++;
	if (!parse_fraction(p, &frac) || frac > INT64_MAX - sec * NSEC_PER_SEC)
		return false;
	*ns = sec * NSEC_PER_SEC + frac;
	return true;
}
