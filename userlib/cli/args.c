// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Splitting a verb's arguments into long options, operands and COMMAND.
 *
 * Options are long only ("--weight 2" or "--weight=2") and may come before,
 * between or after the operands.  Where a verb has an "fd" option, --fd N
 * takes the place of its first operand, NAME.  "--" ends the options.  For a verb that
 * ends with COMMAND, the first word after "--", or the first word once all
 * operands are there, starts COMMAND; nothing after it is ours.
 */
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

/* Find the option "--name" or "--name=value" that @arg spells, or NULL. */
static struct cli_opt *match_opt(struct cli_opt *opts, const char *arg,
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

/* Take the option at argv[*i]; return 0 or a usage exit status. */
static int take_opt(struct cli_parse *p, int argc, char **argv, int *i)
{
	const char *value;
	struct cli_opt *o = match_opt(p->opts, argv[*i] + 2, &value);

	if (!o)
		return cli_usage(p->synopsis, "unknown option %s", argv[*i]);
	if (!o->has_arg && value)
		return cli_usage(p->synopsis, "option --%s takes no value",
				 o->name);
	if (o->has_arg && !value) {
		if (*i + 1 >= argc)
			return cli_usage(p->synopsis,
					 "option --%s needs a value", o->name);
		value = argv[++*i];
	}
	o->seen = true;
	o->value = value;
	return 0;
}

/* Take operand argv[i]; return 1 if it starts COMMAND instead. */
static int take_pos(struct cli_parse *p, char **argv, int i)
{
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

	if (fd && fd->seen && p->npos > need)
		return cli_usage(p->synopsis,
				 "NAME and --fd N exclude each other");
	if (p->npos < need)
		return cli_usage(p->synopsis, NULL);
	return 0;
}

/**
 * cli_parse() - split argv (argv[0] is the verb) as @p describes
 * @p: the verb's options and operand count; receives operands and COMMAND
 * @argc: argument count
 * @argv: arguments
 *
 * Return: 0, or CLI_EXIT_USAGE after printing the usage message.
 */
int cli_parse(struct cli_parse *p, int argc, char **argv)
{
	bool opts_done = false;
	int i, ret;

	for (i = 1; i < argc && !p->cmd; i++) {
		if (!opts_done && !strcmp(argv[i], "--")) {
			if (p->command)
				p->cmd = argv + i + 1;
			opts_done = true;
			continue;
		}
		if (!opts_done && !strncmp(argv[i], "--", 2))
			ret = take_opt(p, argc, argv, &i);
		else
			ret = take_pos(p, argv, i);
		if (ret == CLI_EXIT_USAGE)
			return ret;
	}
	if (p->command && (!p->cmd || !p->cmd[0]))
		return cli_usage(p->synopsis, "no COMMAND given");
	return check_count(p);
}
