// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Splitting a verb's arguments into options, operands and COMMAND.
 *
 * Options come long ("--weight 2", "--weight=2") or short ("-t 2", "-t2",
 * "-nt 4" for flags together), before, between or after the operands.
 * Where a verb has an "fd" option, --fd N takes the place of its first
 * operand, NAME.  "--" ends the options.  For a verb that ends with
 * COMMAND, the first word after "--", or the first word that is not an
 * option once all operands are there, starts COMMAND; nothing after it is
 * ours.  So "wsem run NAME -t 2 -- cmd" takes -t as ours, and
 * "wsem run NAME echo -t 2" gives "-t 2" to echo.  -h and --help print the
 * verb's help.  An option with a hint to refuse it (run's -w, which is a
 * timeout to a flock(1) user) is never taken: the usage message names
 * what wsem spells for it.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

struct cli_opt *cli_opt(struct cli_opt *opts, const char *name)
{
	for (; opts->name; opts++) {
		if (!strcmp(opts->name, name))
			return opts;
	}
	return NULL;
}

/* Find the option "name" or "name=value" that @arg spells, or NULL. */
static struct cli_opt *match_long(struct cli_opt *opts, const char *arg,
				  const char **inline_value)
{
	const char *eq = strchr(arg, '=');
	size_t len = eq ? (size_t)(eq - arg) : strlen(arg);

	*inline_value = eq ? eq + 1 : NULL;
	for (; opts->name; opts++) {
		if (strlen(opts->name) == len && !strncmp(opts->name, arg, len))
			return opts;
	}
	return NULL;
}

static struct cli_opt *match_short(struct cli_opt *opts, char c)
{
	for (; opts->name; opts++) {
		if (opts->short_name && opts->short_name == c)
			return opts;
	}
	return NULL;
}

/* "-t, --timeout DURATION" for help and messages. */
static void print_opt_name(FILE *f, const struct cli_opt *o)
{
	char buf[48];

	const char *sep = o->arg_optional ? "[=" : " ";
	const char *end = o->arg_optional ? "]" : "";

	if (!o->arg)
		sep = end = "";
	if (o->short_name)
		snprintf(buf, sizeof(buf), "-%c, --%s%s%s%s", o->short_name,
			 o->name, sep, o->arg ? o->arg : "", end);
	else
		snprintf(buf, sizeof(buf), "    --%s%s%s%s", o->name, sep,
			 o->arg ? o->arg : "", end);
	fprintf(f, "  %-28s", buf);
}

/* wsem VERB --help: the synopsis, what the verb does, its options. */
static int verb_help(const struct cli_parse *p)
{
	const struct cli_opt *o;

	bool refused = false;

	printf("Usage: wsem %s\n%s\n\nOptions:\n", p->verb->synopsis,
	       p->verb->summary);
	for (o = p->opts; o->name; o++) {
		refused |= !!o->refuse;
		if (o->refuse)
			continue;
		print_opt_name(stdout, o);
		printf(" %s\n", o->help);
	}
	print_opt_name(stdout, &(struct cli_opt){ .name = "help",
						  .short_name = 'h' });
	printf(" show this help and exit\n");
	if (refused)
		printf("\nRefused (another tool's meaning; see wsem(1)):");
	for (o = p->opts; o->name; o++) {
		if (!o->refuse)
			continue;
		if (o->short_name)
			printf(" -%c", o->short_name);
		printf(" --%s", o->name);
	}
	printf("%sSee wsem(1).\n", refused ? "\n" : "");
	return CLI_DONE;
}

/*
 * @o, spelled -@c (or --name if @c is 0), refused: a usage status, with
 * what wsem spells for what the user meant.
 */
static int refuse(const struct cli_parse *p, const struct cli_opt *o,
		  char c)
{
	if (c)
		return cli_usage(p->synopsis, "-%c is not an option of %s: %s",
				 c, p->verb->name, o->refuse);
	return cli_usage(p->synopsis, "--%s is not an option of %s: %s",
			 o->name, p->verb->name, o->refuse);
}

/* Record option @o with @value (NULL for a flag). */
static void set_opt(struct cli_opt *o, const char *value)
{
	o->seen = true;
	o->value = value;
	if (o->values && o->nvalues < o->max_values)
		o->values[o->nvalues] = value;
	o->nvalues++;
}

/* Take the long option at argv[*i]; 0, CLI_DONE or a usage status. */
static int take_long(struct cli_parse *p, int argc, char **argv, int *i)
{
	const char *value;
	struct cli_opt *o = match_long(p->opts, argv[*i] + 2, &value);

	if (!o && !strcmp(argv[*i], "--help"))
		return verb_help(p);
	if (!o)
		return cli_usage(p->synopsis, "unknown option %s", argv[*i]);
	if (o->refuse)
		return refuse(p, o, 0);
	if (!o->arg && value)
		return cli_usage(p->synopsis, "option --%s takes no value",
				 o->name);
	if (o->arg && !value && !o->arg_optional) {
		if (*i + 1 >= argc)
			return cli_usage(p->synopsis,
					 "option --%s needs a value", o->name);
		value = argv[++*i];
	}
	set_opt(o, value);
	return 0;
}

/*
 * Take the short options at argv[*i] ("-n", "-t2", "-nt 2"); 0, CLI_DONE
 * or a usage status.  An option with a value takes the rest of the word,
 * or the next word.
 */
static int take_short(struct cli_parse *p, int argc, char **argv, int *i)
{
	const char *s = argv[*i] + 1;
	struct cli_opt *o;

	for (; *s; s++) {
		o = match_short(p->opts, *s);
		if (!o && *s == 'h')
			return verb_help(p);
		if (!o)
			return cli_usage(p->synopsis, "unknown option -%c", *s);
		if (o->refuse)
			return refuse(p, o, *s);
		if (!o->arg) {
			set_opt(o, NULL);
			continue;
		}
		if (s[1]) {
			set_opt(o, s + 1);
			return 0;
		}
		if (*i + 1 >= argc)
			return cli_usage(p->synopsis,
					 "option -%c needs a value", *s);
		set_opt(o, argv[++*i]);
		return 0;
	}
	return 0;
}

/* Take operand argv[i]; return 1 if it starts COMMAND instead. */
static int take_pos(struct cli_parse *p, char **argv, int i)
{
	if (p->fd_only)
		return cli_usage(p->synopsis, "'%s': %s works on a handle the "
				 "shell holds open, --fd N (exec 9<>/sys/fs/"
				 "wsem/NAME), never on NAME", argv[i],
				 p->verb->name);
	if (p->npos == p->max_pos) {
		if (!p->command)
			return cli_usage(p->synopsis,
					 "unexpected argument '%s'", argv[i]);
		p->cmd = argv + i;
		return 1;
	}
	p->pos[p->npos++] = argv[i];
	return 0;
}

/*
 * As many operands as the verb takes; a verb with an "fd" option takes
 * --fd N instead of its first operand, NAME.
 */
static int check_count(struct cli_parse *p)
{
	struct cli_opt *fd = cli_opt(p->opts, "fd");
	int need = p->max_pos - (fd && fd->seen);

	if (p->fd_only)
		return fd->seen ? 0 : cli_usage(p->synopsis, "%s needs --fd "
						"N, a handle the shell holds "
						"open (exec 9<>/sys/fs/wsem/"
						"NAME)", p->verb->name);
	if (fd && fd->seen && p->npos > need)
		return cli_usage(p->synopsis,
				 "NAME and --fd N exclude each other");
	if (p->npos < need)
		return cli_usage(p->synopsis, NULL);
	return 0;
}

/* One word before COMMAND; 0, 1 (it started COMMAND) or an exit status. */
static int take_word(struct cli_parse *p, int argc, char **argv, int *i,
		     bool *opts_done)
{
	const char *a = argv[*i];

	if (!*opts_done && !strcmp(a, "--")) {
		if (p->command)
			p->cmd = argv + *i + 1;
		*opts_done = true;
		return p->command;
	}
	if (*opts_done || a[0] != '-' || !a[1])
		return take_pos(p, argv, *i);
	if (a[1] == '-')
		return take_long(p, argc, argv, i);
	return take_short(p, argc, argv, i);
}

/**
 * cli_parse() - split argv (argv[0] is the verb) as @p describes
 * @p: the verb, its options and operand count; receives operands and
 *	COMMAND
 * @argc: argument count
 * @argv: arguments
 *
 * Return: 0; CLI_DONE after printing the verb's help; or CLI_EXIT_USAGE
 * after printing the usage message.
 */
int cli_parse(struct cli_parse *p, int argc, char **argv)
{
	bool opts_done = false;
	int i, ret = 0;

	p->synopsis = p->verb->synopsis;
	for (i = 1; i < argc && !p->cmd; i++) {
		ret = take_word(p, argc, argv, &i, &opts_done);
		if (ret > 1 || ret == CLI_DONE)
			return ret;
	}
	if (p->command && !p->command_optional && (!p->cmd || !p->cmd[0]))
		return cli_usage(p->synopsis, "no COMMAND given");
	return check_count(p);
}
