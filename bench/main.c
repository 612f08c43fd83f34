// SPDX-License-Identifier: GPL-2.0
/*
 * wsem-bench: wsem next to sem_t, SysV semop, eventfd and flock.
 *
 *	wsem-bench [-o DIR] [-t SCALE] [-s SCENARIO,...] [-q]
 *
 * Runs the scenarios (uncontended, handoff, contention, fairness, scale,
 * memory, massgrant, namespaces, longhold, idleherd, jobserver) in that
 * order, or those that -s names, writes DIR/results.json, DIR/results.dat
 * and DIR/metrics.txt and prints the table on stdout.  -t multiplies every
 * measuring time.  Needs /dev/wsem; the memory scenario and 10,000
 * threads need root, and the rows without wsem's poll need spin_ns to be
 * writable.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

static const struct {
	const char *name;
	void (*fn)(void);
} scenarios[] = {
	{ "uncontended", scenario_uncontended },
	{ "handoff", scenario_handoff },
	{ "contention", scenario_contention },
	{ "fairness", scenario_fairness },
	{ "scale", scenario_scale },
	{ "memory", scenario_memory },
	{ "massgrant", scenario_massgrant },
	{ "namespaces", scenario_namespaces },
	{ "longhold", scenario_longhold },
	{ "idleherd", scenario_idleherd },
	{ "jobserver", scenario_jobserver },
};

static bool wanted(const char *name)
{
	size_t len = strlen(name);
	const char *p = opt.only;

	if (!p)
		return true;
	while ((p = strstr(p, name))) {
		if ((p == opt.only || p[-1] == ',') &&
		    (p[len] == ',' || !p[len]))
			return true;
		p += len;
	}
	return false;
}

/* "QEMU Virtual CPU" without the hypervisor's help: emulated. */
static const char *cpu_model(char *buf, size_t len)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[256], *p;

	snprintf(buf, len, "unknown");
	if (!f)
		return buf;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "model name", 10))
			continue;
		p = strchr(line, ':');
		if (p) {
			snprintf(buf, len, "%s", p + 2);
			buf[strcspn(buf, "\n")] = 0;
		}
		break;
	}
	fclose(f);
	return buf;
}

static void meta(void)
{
	char date[32], model[128];
	struct utsname u;
	time_t t = time(NULL);

	uname(&u);
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", gmtime(&t));
	cpu_model(model, sizeof(model));
	json_begin("meta");
	json_str("date", date);
	json_str("kernel", u.release);
	json_str("machine", u.machine);
	json_str("cpu", model);
	json_int("cpus", sysconf(_SC_NPROCESSORS_ONLN));
	json_num("time_scale", opt.scale);
	json_end();
	table("wsem-bench %s, kernel %s, %ld CPUs (%s)\n", date, u.release,
	      sysconf(_SC_NPROCESSORS_ONLN), model);
	table("Ratios compare peers measured in the same run; absolute times "
	      "depend on the machine\n(under software emulation they mean "
	      "little).\n");
}

static void usage(void)
{
	fprintf(stderr, "usage: wsem-bench [-o DIR] [-t SCALE] "
		"[-s SCENARIO,...] [-q]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	size_t i;
	int c, fd;

	while ((c = getopt(argc, argv, "o:t:s:q")) != -1) {
		switch (c) {
		case 'o':
			opt.outdir = optarg;
			break;
		case 't':
			opt.scale = strtod(optarg, NULL);
			if (opt.scale <= 0)
				usage();
			break;
		case 's':
			opt.only = optarg;
			break;
		case 'q':
			opt.quiet = true;
			break;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();
	fd = open("/dev/wsem", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "wsem-bench: /dev/wsem: %s (load wsem.ko)\n",
			strerror(errno));
		return 1;
	}
	close(fd);
	setvbuf(stderr, NULL, _IOLBF, 0);

	report_open(opt.outdir);
	meta();
	for (i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++) {
		if (!wanted(scenarios[i].name))
			continue;
		progress("%s", scenarios[i].name);
		scenarios[i].fn();
	}
	report_close();
	return 0;
}
