// SPDX-License-Identifier: GPL-2.0
/*
 * wsem-bench: wsem next to sem_t, SysV semop, eventfd and flock.
 *
 *	wsem-bench [-o DIR] [-t SCALE] [-s SCENARIO,...] [-r REV] [-a ACCEL] [-q]
 *
 * Runs the scenarios (uncontended, handoff, contention, fairness, scale,
 * memory, massgrant, namespaces, longhold, idleherd, jobserver, nest,
 * gang, gangfair, bigtree, shrink, pool, poolwait) in that order, or those that -s names, writes
 * DIR/results.json, DIR/results.dat and DIR/metrics.txt and prints the table on stdout.  -t multiplies every
 * measuring time.  -r and -a go into the results as they are: the git
 * revision measured and how the CPUs run (tcg, kvm; without -a, "native"
 * or "virtualized" from the CPUID hypervisor bit).  Needs /dev/wsem; the memory scenario and 10,000
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
	{ "nest", scenario_nest },
	{ "gang", scenario_gang },
	{ "gangfair", scenario_gangfair },
	{ "bigtree", scenario_bigtree },
	{ "shrink", scenario_shrink },
	{ "pool", scenario_pool },
	{ "poolwait", scenario_poolwait },
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

/*
 * The module's spin_ns when the run starts (scenarios that turn the poll
 * off put it back), or -1 where it cannot be read.
 */
static long long spin_ns(void)
{
	FILE *f = fopen("/sys/module/wsem/parameters/spin_ns", "r");
	long long v = -1;

	if (f) {
		if (fscanf(f, "%lld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/*
 * How the CPUs run, where -a does not say: "native" without the CPUID
 * hypervisor bit, "virtualized" (KVM or TCG, unknown which) with it.
 */
static const char *accel(void)
{
	FILE *f;
	char line[4096];
	const char *a = "native";

	if (opt.accel)
		return opt.accel;
	f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return "unknown";
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "flags", 5)) {
			if (strstr(line, " hypervisor"))
				a = "virtualized";
			break;
		}
	}
	fclose(f);
	return a;
}

static void meta(void)
{
	char date[32], model[128];
	struct utsname u;
	time_t t = time(NULL);
	long long spin = spin_ns();

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
	if (opt.revision)
		json_str("git_revision", opt.revision);
	else
		json_null("git_revision");
	json_int("spin_ns", spin);
	json_str("accel", accel());
	json_str("ratios", "cost of the row / cost of its reference: "
		 "above 1, the row is slower or costlier");
	json_end();
	table("wsem-bench %s, kernel %s, %ld CPUs (%s), %s\n", date, u.release,
	      sysconf(_SC_NPROCESSORS_ONLN), model, accel());
	table("git revision %s, spin_ns %lld\n",
	      opt.revision ? opt.revision : "unknown", spin);
	table("Ratios compare peers measured in the same run; absolute times "
	      "depend on the machine\n(under software emulation they mean "
	      "little).  Every ratio is a cost's, the row's over its\n"
	      "reference's (for a rate: its time per operation): above 1, "
	      "the row is slower or\ncostlier than its reference, in every "
	      "table.\n");
}

static void usage(void)
{
	fprintf(stderr, "usage: wsem-bench [-o DIR] [-t SCALE] "
		"[-s SCENARIO,...] [-r REV] [-a ACCEL] [-q]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	size_t i;
	int c, fd;

	while ((c = getopt(argc, argv, "o:t:s:r:a:q")) != -1) {
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
		case 'r':
			opt.revision = optarg;
			break;
		case 'a':
			opt.accel = optarg;
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
