// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * wsem(1): create, inspect and use weighted FIFO semaphores from a shell.
 *
 *	wsem create build 4
 *	for t in a b c d e f; do wsem run build --weight 2 -- make -C $t & done
 *
 * Each verb lives in its own file; this one picks the verb and makes sure
 * what was printed really reached stdout.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* The release, from the top-level VERSION file (userlib/Makefile). */
#ifndef WSEM_VERSION
#error "WSEM_VERSION is set by userlib/Makefile from the file VERSION"
#endif

static const struct cli_verb verbs[] = {
	{ "create", "create NAME CAPACITY [-m MODE] [--exclusive | --exist-ok] "
		    "[--loans | -p PARENT | --parent-fd N]",
	  "Create a semaphore of capacity CAPACITY (--loans: of ceiling "
	  "CAPACITY, its capacity lent; a child of PARENT's); an existing "
	  "one of the same capacity is fine.", cli_create },
	{ "rm", "rm [-f] NAME|PATH", "Remove a semaphore's name; -f: "
	  "one that is not there is no error.", cli_rm },
	{ "ls", "ls [-l | -o COLUMNS] [-n] [--json]",
	  "List the semaphores of this IPC namespace.", cli_ls },
	{ "stat", "stat NAME|PATH|--fd N [--json]",
	  "Show every field of one semaphore, who holds it and who "
	  "waits.", cli_stat },
	{ "top", "top [-n N] [-d DURATION]",
	  "Show the namespace's semaphores as a tree, each child under its "
	  "parent with what it holds of it, busiest first, every DURATION "
	  "(2s); q quits.", cli_top },
	{ "resize", "resize NAME|PATH|--fd N CAPACITY",
	  "Change the capacity.", cli_resize },
	{ "run", "run NAME|PATH|--fd N [--weight W|all] [-t DURATION | -n] "
		 "[-E N] [-v] [--create CAPACITY [-m MODE]] [--inherit] "
		 "[--jobserver[=fifo|pipe]] [--json[=PATH]] -- COMMAND [ARG...]",
	  "Wait for weight W, run COMMAND holding it, give it back when "
	  "COMMAND ends.", cli_run },
	{ "lend", "lend NAME|PATH|--fd N CAPACITY [-- COMMAND [ARG...]]",
	  "Lend CAPACITY to the semaphore while COMMAND runs (without "
	  "COMMAND: until SIGTERM, SIGINT or SIGHUP).", cli_lend },
	{ "acquire", "acquire --fd N [--weight W|all] [-t DURATION | -n] "
	  "[-E N] [--label TEXT]",
	  "Acquire weight W on the shell's own handle N (exec N<>FILE); "
	  "it holds W until released or closed.", cli_acquire },
	{ "release", "release --fd N [--weight W]",
	  "Give back W, or all that handle N holds.", cli_release },
	{ "wait", "wait NAME|PATH|--fd N [--idle] [-t DURATION] [--json]",
	  "Wait until nothing is held and nobody waits.", cli_wait },
	{ "apply", "apply [-n|--dry-run] [--prune] [-v] [PATH...]",
	  "Create, resize, chmod and chown the semaphores /etc/wsem.d/*.conf "
	  "(or PATH...) declares.", cli_apply },
};

#define NR_VERBS	(sizeof(verbs) / sizeof(verbs[0]))

static int help(void)
{
	size_t i;

	puts("Usage:");
	for (i = 0; i < NR_VERBS; i++)
		printf("  wsem %s\n", verbs[i].synopsis);
	puts("  wsem -h|--help | VERB --help | -V|--version\n"
	     "Weighted, strictly FIFO counting semaphores (/dev/wsem).\n"
	     "\"wsem VERB --help\" shows a verb's options; see wsem(1).");
	return CLI_EXIT_OK;
}

static const struct cli_verb *find_verb(const char *name)
{
	size_t i;

	for (i = 0; i < NR_VERBS; i++) {
		if (!strcmp(verbs[i].name, name))
			return &verbs[i];
	}
	return NULL;
}

/* A write error on stdout (full disk, closed pipe) is an error too. */
static int flush_stdout(int status)
{
	errno = 0;
	if (fflush(stdout) || ferror(stdout)) {
		if (status == CLI_EXIT_OK)
			return cli_fail("stdout", errno ? errno : EIO);
	}
	return status;
}

int main(int argc, char **argv)
{
	const struct cli_verb *verb;
	const char *all = "create|rm|ls|stat|top|resize|run|lend|acquire|"
			  "release|wait|apply ...";

	int status;

	if (argc < 2)
		return cli_usage(all, NULL);
	if (!strcmp(argv[1], "help") && argc == 3 && find_verb(argv[2])) {
		verb = find_verb(argv[2]);
		argv[1] = argv[2];
		argv[2] = "--help";
		status = verb->run(verb, 2, argv + 1);
		return flush_stdout(status == CLI_DONE ? CLI_EXIT_OK : status);
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help"))
		return flush_stdout(help());
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		puts("wsem " WSEM_VERSION);
		return flush_stdout(CLI_EXIT_OK);
	}
	verb = find_verb(argv[1]);
	if (!verb)
		return cli_usage(all, "unknown command '%s'", argv[1]);
	status = verb->run(verb, argc - 1, argv + 1);
	return flush_stdout(status == CLI_DONE ? CLI_EXIT_OK : status);
}
