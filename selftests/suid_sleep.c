// SPDX-License-Identifier: GPL-2.0
/*
 * suid_sleep SECONDS: sleep, for cli_test.sh, which installs a copy of it
 * set-uid root and runs it as an ordinary user's COMMAND under wsem run:
 * such a process is out of reach of its user's kill(2), and its exec
 * cleared the PR_SET_PDEATHSIG wsem run asked for.  Unlike busybox's
 * applets it never gives up the effective uid it was given.
 */
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
	struct timespec t = { .tv_sec = argc > 1 ? atoi(argv[1]) : 600 };

	while (nanosleep(&t, &t))
		;
	return 0;
}
