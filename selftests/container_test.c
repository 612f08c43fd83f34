// SPDX-License-Identifier: GPL-2.0
/*
 * Containers (SPEC.md "Semaphores as files", issue 11): a host limit
 * reaches a container through one bind-mounted wsemfs file, and through
 * nothing else.
 *
 * A container here is made the way runtimes make one: an unprivileged
 * user (uid CT_UID) unshares user, mount, IPC, PID and network namespaces,
 * maps its uid to 0 inside, and the new PID 1 builds a root file system (a
 * tmpfs with /proc and the bind mounts the test asks for, no /dev/wsem
 * unless asked), pivot_root()s into it and drops the old root.  Then it
 * runs a job: a function of this program (it needs no binary inside) that
 * reports to the test on a pipe and waits for a "go" pipe to close.  One
 * test runs a real container tool, bubblewrap, with this program as its
 * payload ("container_test --hold PATH WEIGHT REPORT_FD GO_FD").
 *
 * The guest's root is the initramfs, which pivot_root() cannot leave
 * (EINVAL, as on any initramfs).  So each test first gives itself what a
 * real host has, in a mount namespace of its own: a root that is a mount
 * (a recursive bind of /, moved onto / as switch_root does).  In it, the
 * test mounts the host's wsemfs on a directory of its own.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/bpf.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <wsem.h>

#include "kselftest_harness.h"
#include "util.h"

#define CT_UID		1000	/* the containers' unprivileged user */
#define OVERFLOW_ID	65534	/* an id that a user namespace lacks */
#define MAX_CTS		3	/* containers per test */
#define MAX_BINDS	4	/* bind mounts per container */
#define REPORT_WAIT_MS	30000	/* bound for a container to report */
#define TEXT_MAX	1024
#define CGROUP2_MAGIC	0x63677270

/* What a container reports, at each stage. */
enum ct_stage {
	CT_FAILED = 1,		/* setup failed: @what, @err say where */
	CT_LAUNCHED,		/* from outside: PID 1 (@pid1) runs */
	CT_REPORT,		/* from the job: @ret.. and the rest */
};

struct ct_report {
	int stage;		/* enum ct_stage */
	int err;		/* errno of the failed step (CT_FAILED) */
	char what[48];		/* the failed step */
	pid_t pid1;		/* PID 1 as the host sees it (CT_LAUNCHED) */
	int ret[12];		/* the job's return values, in its order */
	int err_of[12];		/* errno after each */
	int count;		/* how many of something the job saw */
	struct wsem_stat st;	/* a stat the job made */
	char fdinfo_name[WSEM_NAME_MAX + 8];	/* fdinfo's wsem-name */
	char text_name[WSEM_NAME_MAX + 8];	/* the read text's name */
	char leak[WSEM_NAME_MAX + 8];	/* a host name it saw, or "" */
};

/* A bind mount into the container's root: host @src at @dst. */
struct ct_bind {
	const char *src;	/* host path, NULL ends the list */
	const char *dst;	/* path in the container */
	bool dir;		/* a directory, not a file */
};

/* The job a container's PID 1 runs after the pivot; @arg is the test's. */
typedef void (*ct_job)(const void *arg, int report, int go);

struct ct_spec {
	struct ct_bind binds[MAX_BINDS];	/* bind mounts */
	ct_job job;				/* what to run */
	const void *arg;			/* and with what */
	const char *cgroup;	/* cgroup to start in (as root), or NULL */
};

/* One container of a test. */
struct ct {
	pid_t outer;		/* the unprivileged setup process, or 0 */
	pid_t pid1;		/* its PID 1 (host pid), or 0 */
	int report;		/* read end of its report pipe, or -1 */
	int go;			/* write end of its go pipe, or -1 */
};

FIXTURE(container) {
	/* the host's semaphore: "ct<pid>.gpu" */
	char name[WSEM_NAME_MAX];
	/* the test's directory, 0755: wsem/ (host wsemfs) and root/ */
	char base[64];
	/* base/wsem: the host's wsemfs, mounted */
	char wsem[96];
	/* base/wsem/name: the file containers get */
	char path[192];
	/* base/root: where each container mounts its root (in its ns) */
	char root[96];
	/* root's handle on the host semaphore, or -1 */
	int fd;
	/* host names the teardown unlinks */
	char made[4][WSEM_NAME_MAX];
	/* the containers */
	struct ct cts[MAX_CTS];
	/* a device cgroup the test made, or "" */
	char cgroup[128];
	/* setup done: false after a SKIP, so body and teardown do nothing */
	bool ready;
};

/*
 * What a handle tells about its name from here: stat into @st, fdinfo's
 * wsem-name and the read text's name into @r ("?" where unreadable).
 */
static void look_at_handle(int fd, struct ct_report *r)
{
	char path[64], buf[TEXT_MAX];
	ssize_t n;

	wsem_stat(fd, &r->st);
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	if (read_file(path, buf, sizeof(buf)) ||
	    line_get(buf, "wsem-name", r->fdinfo_name,
		     sizeof(r->fdinfo_name)))
		snprintf(r->fdinfo_name, sizeof(r->fdinfo_name), "?");
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n < 0 && errno == ESPIPE)
		n = read(fd, buf, sizeof(buf) - 1);
	if (n < 0) {
		snprintf(r->text_name, sizeof(r->text_name), "?");
		return;
	}
	buf[n] = 0;
	if (line_get(buf, "name", r->text_name, sizeof(r->text_name)))
		snprintf(r->text_name, sizeof(r->text_name), "?");
}

static void report_write(int report, struct ct_report *r)
{
	r->stage = r->stage ?: CT_REPORT;
	if (write(report, r, sizeof(*r)) != sizeof(*r))
		_exit(3);
}

static void __attribute__((noreturn)) ct_fail(int report, const char *what)
{
	struct ct_report r;

	memset(&r, 0, sizeof(r));
	r.stage = CT_FAILED;
	r.err = errno;
	snprintf(r.what, sizeof(r.what), "%s", what);
	report_write(report, &r);
	_exit(2);
}

/* Wait until @go is closed (or a byte comes). */
static void wait_go(int go)
{
	char byte;

	while (read(go, &byte, 1) < 0 && errno == EINTR)
		;
}

static int write_str(const char *path, const char *s)
{
	return write_file(path, s);
}

/* An empty file or directory at @path, for a bind mount. */
static int make_target(const char *path, bool dir)
{
	int fd;

	if (dir)
		return mkdir(path, 0755);
	fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	return close(fd);
}

/*
 * PID 1 of a new container: build its root on @root (a tmpfs with /proc,
 * /run and the binds), pivot into it, drop the old root, run the job.
 */
static void __attribute__((noreturn))
ct_init(const char *root, const struct ct_spec *spec, int report, int go)
{
	char path[256];
	int i;

	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		ct_fail(report, "make / private");
	if (mount("ctroot", root, "tmpfs", 0, "mode=0755"))
		ct_fail(report, "mount the tmpfs root");
	if (chdir(root))
		ct_fail(report, "chdir to the root");
	if (mkdir("run", 0755) || mkdir("proc", 0555) ||
	    mkdir("dev", 0755) || mkdir("tmp", 01777) ||
	    mkdir("bin", 0755) || mkdir("oldroot", 0700))
		ct_fail(report, "mkdir in the root");
	for (i = 0; i < MAX_BINDS && spec->binds[i].src; i++) {
		const struct ct_bind *b = &spec->binds[i];

		snprintf(path, sizeof(path), ".%s", b->dst);
		if (make_target(path, b->dir))
			ct_fail(report, "make a bind target");
		if (mount(b->src, path, NULL, MS_BIND, NULL))
			ct_fail(report, "bind mount");
	}
	if (mount("proc", "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  NULL))
		ct_fail(report, "mount proc");
	if (syscall(SYS_pivot_root, ".", "oldroot"))
		ct_fail(report, "pivot_root");
	if (chdir("/") || umount2("/oldroot", MNT_DETACH) ||
	    rmdir("/oldroot"))
		ct_fail(report, "drop the old root");
	spec->job(spec->arg, report, go);
	_exit(0);
}

/* The uid and gid maps of a rootless container: 0 inside is CT_UID. */
static int map_ids(void)
{
	char map[32];

	snprintf(map, sizeof(map), "0 %d 1", CT_UID);
	if (write_str("/proc/self/setgroups", "deny") ||
	    write_str("/proc/self/uid_map", map) ||
	    write_str("/proc/self/gid_map", map))
		return -1;
	return 0;
}

/*
 * The unprivileged side: become CT_UID, unshare the namespaces, map the
 * ids, start PID 1, say who it is, and wait for it (its exit status).
 */
static void __attribute__((noreturn))
ct_outer(const char *root, const struct ct_spec *spec, int report, int go)
{
	struct ct_report r;
	int status, i, launched[2];
	pid_t pid;

	for (i = 3; i < 1024; i++)
		if (i != report && i != go)
			close(i);
	if (spec->cgroup) {
		char procs[160];

		snprintf(procs, sizeof(procs), "%s/cgroup.procs",
			 spec->cgroup);
		if (write_str(procs, "0"))
			ct_fail(report, "join the device cgroup");
	}
	if (setgroups(0, NULL) || setgid(CT_UID) || setuid(CT_UID))
		ct_fail(report, "become the unprivileged user");
	/* setuid() made us non-dumpable: /proc/self would be root's. */
	if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0))
		ct_fail(report, "dumpable");
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWIPC |
		    CLONE_NEWPID | CLONE_NEWNET))
		ct_fail(report, "unshare the namespaces");
	if (map_ids())
		ct_fail(report, "map the ids");
	if (pipe2(launched, O_CLOEXEC))
		ct_fail(report, "pipe for the launch");
	pid = fork();
	if (pid < 0)
		ct_fail(report, "fork PID 1");
	if (pid == 0) {
		/* CT_LAUNCHED is the first report: PID 1's come after it. */
		close(launched[1]);
		wait_go(launched[0]);
		close(launched[0]);
		ct_init(root, spec, report, go);
	}
	close(launched[0]);
	memset(&r, 0, sizeof(r));
	r.stage = CT_LAUNCHED;
	r.pid1 = pid;
	report_write(report, &r);
	close(launched[1]);
	close(report);
	close(go);
	if (waitpid(pid, &status, 0) != pid)
		_exit(4);
	_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

/* Read one report of container @i, waiting up to REPORT_WAIT_MS; 0 or -1. */
static int ct_read(FIXTURE_DATA(container) *self, int i, struct ct_report *r)
{
	struct pollfd pfd = { .fd = self->cts[i].report, .events = POLLIN };

	memset(r, 0, sizeof(*r));
	if (poll(&pfd, 1, REPORT_WAIT_MS) != 1)
		return -1;
	return read(pfd.fd, r, sizeof(*r)) == sizeof(*r) ? 0 : -1;
}

/*
 * Start container @i; it has reported CT_LAUNCHED when this returns 0.
 * On a failed setup, *@r says where.
 */
static int ct_start(FIXTURE_DATA(container) *self, int i,
		    const struct ct_spec *spec, struct ct_report *r)
{
	struct ct *ct = &self->cts[i];
	int rep[2], go[2];

	if (pipe2(rep, O_CLOEXEC))
		return -1;
	if (pipe2(go, O_CLOEXEC)) {
		close(rep[0]);
		close(rep[1]);
		return -1;
	}
	ct->outer = fork();
	if (ct->outer < 0)
		return -1;
	if (ct->outer == 0)
		ct_outer(self->root, spec, rep[1], go[0]);
	close(rep[1]);
	close(go[0]);
	ct->report = rep[0];
	ct->go = go[1];
	if (ct_read(self, i, r) || r->stage != CT_LAUNCHED)
		return -1;
	ct->pid1 = r->pid1;
	return 0;
}

/* Let container @i's job end (close "go") and reap it; its exit status. */
static int ct_end(FIXTURE_DATA(container) *self, int i)
{
	struct ct *ct = &self->cts[i];
	int status;

	if (ct->go >= 0)
		close(ct->go);
	ct->go = -1;
	if (!ct->outer || waitpid(ct->outer, &status, 0) != ct->outer)
		return -1;
	ct->outer = 0;
	ct->pid1 = 0;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/*
 * What a real host has and the guest does not: a root that is a mount,
 * so that containers can pivot_root().  In a mount namespace of our own:
 * bind / (recursively) on a fresh directory and move that onto /.
 */
static int reroot(void)
{
	char dir[] = "/tmp/container_test.root.XXXXXX";

	if (unshare(CLONE_NEWNS) ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    !mkdtemp(dir))
		return -1;
	if (mount("/", dir, NULL, MS_BIND | MS_REC, NULL) || chdir(dir) ||
	    mount(".", "/", NULL, MS_MOVE, NULL) || chroot(".") ||
	    chdir("/")) {
		rmdir(dir);
		return -1;
	}
	/* The same /tmp: the directory is an empty one there now. */
	return rmdir(dir);
}

static int create_name(FIXTURE_DATA(container) *self, const char *name,
		       mode_t mode, uint64_t cap)
{
	int i;

	for (i = 0; i < 4; i++) {
		if (!self->made[i][0]) {
			snprintf(self->made[i], WSEM_NAME_MAX, "%s", name);
			break;
		}
	}
	return wsem_open(name, O_CREAT | O_EXCL | O_CLOEXEC, mode, cap);
}

FIXTURE_SETUP(container)
{
	int i;

	self->fd = -1;
	for (i = 0; i < MAX_CTS; i++) {
		self->cts[i].report = -1;
		self->cts[i].go = -1;
	}
	if (access("/dev/wsem", F_OK))
		SKIP(return, "/dev/wsem is missing (module not loaded)");
	umask(0);
	ASSERT_EQ(0, reroot()) {
		TH_LOG("a root that is a mount: %s", strerror(errno));
	}
	snprintf(self->base, sizeof(self->base), "/tmp/container_test.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->base));
	ASSERT_EQ(0, chmod(self->base, 0755));
	snprintf(self->wsem, sizeof(self->wsem), "%s/wsem", self->base);
	snprintf(self->root, sizeof(self->root), "%s/root", self->base);
	ASSERT_EQ(0, mkdir(self->wsem, 0755));
	ASSERT_EQ(0, mkdir(self->root, 0755));
	if (mount("wsem", self->wsem, "wsem", 0, NULL)) {
		ASSERT_EQ(ENODEV, errno);
		rmdir(self->wsem);
		self->wsem[0] = 0;
		SKIP(return, "no file system type wsem");
	}
	snprintf(self->name, sizeof(self->name), "ct%d.gpu", getpid());
	snprintf(self->path, sizeof(self->path), "%s/%s", self->wsem,
		 self->name);
	self->fd = create_name(self, self->name, 0666, 2);
	ASSERT_LE(0, self->fd);
	self->ready = true;
}

FIXTURE_TEARDOWN(container)
{
	int i;

	for (i = 0; i < MAX_CTS; i++) {
		struct ct *ct = &self->cts[i];

		if (ct->pid1 > 0)
			kill(ct->pid1, SIGKILL);
		if (ct->outer > 0) {
			kill(ct->outer, SIGKILL);
			waitpid(ct->outer, NULL, 0);
		}
		if (ct->report >= 0)
			EXPECT_EQ(0, close(ct->report));
		if (ct->go >= 0)
			EXPECT_EQ(0, close(ct->go));
	}
	if (self->cgroup[0]) {
		/* Dead tasks leave a cgroup a moment after their reaping. */
		for (i = 0; i < 100 && rmdir(self->cgroup); i++)
			usleep(10000);
		EXPECT_GT(100, i);
	}
	if (self->fd >= 0)
		EXPECT_EQ(0, close(self->fd));
	for (i = 0; i < 4; i++)
		if (self->made[i][0] && wsem_unlink(self->made[i]))
			EXPECT_EQ(ENOENT, errno);
	if (self->wsem[0]) {
		EXPECT_EQ(0, umount2(self->wsem, MNT_DETACH));
		EXPECT_EQ(0, rmdir(self->wsem));
	}
	if (self->base[0]) {
		EXPECT_EQ(0, rmdir(self->root));
		EXPECT_EQ(0, rmdir(self->base));
	}
}

/*
 * Job: open /run/gpu, acquire @arg (a uint64_t weight), report what the
 * handle says, hold until "go".
 */
static void job_hold(const void *arg, int report, int go)
{
	struct ct_report r;
	int fd;

	memset(&r, 0, sizeof(r));
	fd = open("/run/gpu", O_RDWR | O_CLOEXEC);
	r.ret[0] = fd;
	r.err_of[0] = errno;
	if (fd >= 0) {
		r.ret[1] = wsem_acquire(fd, *(const uint64_t *)arg);
		r.err_of[1] = errno;
		look_at_handle(fd, &r);
	}
	/* No /dev/wsem here. */
	r.ret[2] = access("/dev/wsem", F_OK);
	r.err_of[2] = errno;
	report_write(report, &r);
	wait_go(go);
}

/* Start a container that holds @weight of the host semaphore. */
static int start_holder(FIXTURE_DATA(container) *self, int i,
			const uint64_t *weight, struct ct_report *r)
{
	struct ct_spec spec = {
		.binds = { { .src = self->path, .dst = "/run/gpu" } },
		.job = job_hold,
		.arg = weight,
	};

	return ct_start(self, i, &spec, r);
}

/* ASSERT that container @i started; log where it failed if not. */
#define ASSERT_STARTED(ret, r) \
	ASSERT_EQ(0, ret) { \
		TH_LOG("container setup failed: %s: %s", (r).what, \
		       strerror((r).err)); \
	}

/*
 * A rootless container with the host file bind-mounted (and no
 * /dev/wsem) opens it, acquires, and the host sees the weight used; the
 * handle tells the container no host name, and the host's owner shows as
 * unmapped.  When the job ends, the weight is back.
 */
TEST_F(container, bind_mounted_file_gates_a_job)
{
	static const uint64_t weight = 2;
	struct wsem_stat st;
	struct ct_report r;

	if (!self->ready)
		return;
	ASSERT_STARTED(start_holder(self, 0, &weight, &r), r);
	ASSERT_EQ(0, ct_read(self, 0, &r));
	ASSERT_EQ(CT_REPORT, r.stage) {
		TH_LOG("container setup failed: %s: %s", r.what,
		       strerror(r.err));
	}
	ASSERT_LE(0, r.ret[0]) {
		TH_LOG("open /run/gpu in the container: %s",
		       strerror(r.err_of[0]));
	}
	EXPECT_EQ(0, r.ret[1]);
	EXPECT_EQ(-1, r.ret[2]);
	EXPECT_EQ(ENOENT, r.err_of[2]);
	EXPECT_EQ(2, r.st.held);
	EXPECT_EQ(2, r.st.capacity);
	EXPECT_STREQ("", r.st.name);
	EXPECT_STREQ("", r.fdinfo_name);
	EXPECT_STREQ("", r.text_name);
	EXPECT_EQ(OVERFLOW_ID, r.st.uid);
	EXPECT_EQ(OVERFLOW_ID, r.st.gid);

	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(2, st.used);
	EXPECT_EQ(0, st.held);
	EXPECT_EQ(-1, wsem_tryacquire(self->fd, 1));
	EXPECT_EQ(EAGAIN, errno);
	EXPECT_EQ(0, ct_end(self, 0));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(0, st.used);
}

/* SIGKILL of a container's PID 1 gives its weight back. */
TEST_F(container, sigkill_of_pid1_returns_the_weight)
{
	static const uint64_t weight = 1;
	struct wsem_stat st;
	struct ct_report r;

	if (!self->ready)
		return;
	ASSERT_STARTED(start_holder(self, 0, &weight, &r), r);
	ASSERT_EQ(0, ct_read(self, 0, &r));
	ASSERT_EQ(CT_REPORT, r.stage);
	ASSERT_EQ(0, r.ret[1]);
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(1, st.used);
	ASSERT_EQ(0, kill(self->cts[0].pid1, SIGKILL));
	EXPECT_EQ(128 + SIGKILL, ct_end(self, 0));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(0, st.used);
	EXPECT_EQ(0, wsem_tryacquire(self->fd, 2));
}

/*
 * Job: under the host semaphore it sees at /run/gpu, make a child of its
 * own (capacity 5, more than the host's 2), and try what a container may:
 * ret[0] the child's fd, ret[1] acquire 3 on it (the host's 2 bounds it:
 * EINVAL), ret[2] acquire 2 (granted), ret[3] resize the host semaphore
 * (EPERM), ret[4] resize its own child to 1 (allowed; nothing revoked),
 * ret[5] try 1 more (EAGAIN); then hold until "go".
 */
static void job_child(const void *arg, int report, int go)
{
	struct ct_report r;
	int parent, kid;

	(void)arg;
	memset(&r, 0, sizeof(r));
	parent = open("/run/gpu", O_RDWR | O_CLOEXEC);
	kid = parent < 0 ? -1 :
	      wsem_open_child(parent, "mine", O_CREAT | O_EXCL, 0600, 5);
	r.ret[0] = kid;
	r.err_of[0] = errno;
	if (kid >= 0) {
		r.ret[1] = wsem_tryacquire(kid, 3);
		r.err_of[1] = errno;
		r.ret[2] = wsem_acquire(kid, 2);
		r.err_of[2] = errno;
		r.ret[3] = wsem_set_capacity(parent, 9);
		r.err_of[3] = errno;
		r.ret[4] = wsem_set_capacity(kid, 1);
		r.err_of[4] = errno;
		r.ret[5] = wsem_tryacquire(kid, 1);
		r.err_of[5] = errno;
		wsem_stat(kid, &r.st);
	}
	report_write(report, &r);
	wait_go(go);
}

/*
 * A container (its own user, IPC, PID and mount namespaces) makes a child
 * of the host semaphore it sees through a bind mount: it can neither take
 * more than the host's capacity through it nor resize the host's; the
 * host sees the child's weight as used, and gets it back at the end.
 */
TEST_F(container, a_child_of_the_host_limit)
{
	struct ct_spec spec = {
		.binds = { { .src = self->path, .dst = "/run/gpu" },
			   { .src = "/dev/wsem", .dst = "/dev/wsem" } },
		.job = job_child,
	};
	struct wsem_stat st;
	struct ct_report r;

	if (!self->ready)
		return;
	ASSERT_STARTED(ct_start(self, 0, &spec, &r), r);
	ASSERT_EQ(0, ct_read(self, 0, &r));
	ASSERT_EQ(CT_REPORT, r.stage) {
		TH_LOG("container setup failed: %s: %s", r.what,
		       strerror(r.err));
	}
	ASSERT_LE(0, r.ret[0]) {
		TH_LOG("wsem_open_child: %s", strerror(r.err_of[0]));
	}
	EXPECT_EQ(-1, r.ret[1]);
	EXPECT_EQ(EINVAL, r.err_of[1]);
	EXPECT_EQ(0, r.ret[2]);
	EXPECT_EQ(-1, r.ret[3]);
	EXPECT_EQ(EPERM, r.err_of[3]);
	EXPECT_EQ(0, r.ret[4]);
	EXPECT_EQ(-1, r.ret[5]);
	EXPECT_EQ(EAGAIN, r.err_of[5]);
	EXPECT_EQ(1, r.st.depth);
	EXPECT_EQ(1, r.st.capacity);
	EXPECT_EQ(2, r.st.used);
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(2, st.capacity);
	EXPECT_EQ(2, st.used);
	EXPECT_EQ(-1, wsem_tryacquire(self->fd, 1));
	EXPECT_EQ(EAGAIN, errno);
	EXPECT_EQ(0, ct_end(self, 0));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(0, st.used);
	EXPECT_EQ(0, wsem_tryacquire(self->fd, 2));
}

/*
 * Three containers queue on the host's semaphore (capacity 2, all held by
 * the host) for 1, 2 and 1: they are served in the order they came, and
 * the last one (1) does not pass the second (2) when 1 is free.
 */
TEST_F(container, three_containers_served_in_fifo_order)
{
	static const uint64_t weights[MAX_CTS] = { 1, 2, 1 };
	struct pollfd pfd = { .events = POLLIN };
	struct wsem_stat st;
	struct ct_report r;
	int i;

	if (!self->ready)
		return;
	ASSERT_EQ(0, wsem_acquire(self->fd, 2));
	for (i = 0; i < MAX_CTS; i++) {
		ASSERT_STARTED(start_holder(self, i, &weights[i], &r), r);
		ASSERT_EQ(0, wait_waiters(self->fd, i + 1)) {
			TH_LOG("container %d did not queue", i);
		}
	}
	/* 1 free: the first (1) goes. */
	ASSERT_EQ(0, wsem_release(self->fd, 1));
	ASSERT_EQ(0, ct_read(self, 0, &r));
	EXPECT_EQ(0, r.ret[1]);
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(2, st.used);
	EXPECT_EQ(2, st.waiters);
	/* 1 free again: the second needs 2, and the third waits behind it. */
	ASSERT_EQ(0, wsem_release(self->fd, 1));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(1, st.used);
	EXPECT_EQ(2, st.waiters);
	pfd.fd = self->cts[2].report;
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	/* The first ends: the second goes, then the third. */
	EXPECT_EQ(0, ct_end(self, 0));
	ASSERT_EQ(0, ct_read(self, 1, &r));
	EXPECT_EQ(0, r.ret[1]);
	EXPECT_EQ(2, r.st.held);
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(2, st.used);
	EXPECT_EQ(1, st.waiters);
	EXPECT_EQ(0, ct_end(self, 1));
	ASSERT_EQ(0, ct_read(self, 2, &r));
	EXPECT_EQ(0, r.ret[1]);
	EXPECT_EQ(0, ct_end(self, 2));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(0, st.used);
	EXPECT_EQ(0, st.waiters);
}

/* Wait until the host semaphore has @n used; 0, or -1 after 10 s. */
static int wait_used(int fd, uint64_t n)
{
	int64_t end = now_ns() + 10 * NSEC;
	struct wsem_stat st;

	do {
		if (wsem_stat(fd, &st))
			return -1;
		if (st.used == n)
			return 0;
		usleep(1000);
	} while (now_ns() < end);
	return -1;
}

/*
 * Job: become "wsem run /run/gpu --weight W -- busybox cat" with "go" as
 * its stdin: the lease lasts until the test closes "go".  @arg is W, a
 * string.
 */
static void job_wsem_run(const void *arg, int report, int go)
{
	if (dup2(go, 0) < 0)
		ct_fail(report, "dup2");
	execl("/bin/wsem", "wsem", "run", "/run/gpu", "--weight",
	      (const char *)arg, "--", "/bin/busybox", "cat", (char *)NULL);
	ct_fail(report, "exec /bin/wsem");
}

/*
 * The way a user gates jobs in a container: "wsem run /run/gpu" (the
 * static wsem and busybox bound in, nothing else).  Two containers: the
 * second waits while the first's job runs, and runs when it ends.
 */
TEST_F(container, wsem_run_in_containers)
{
	struct ct_spec spec = {
		.binds = {
			{ .src = self->path, .dst = "/run/gpu" },
			{ .src = "/bin/wsem", .dst = "/bin/wsem" },
			{ .src = "/bin/busybox", .dst = "/bin/busybox" },
		},
		.job = job_wsem_run,
	};
	struct wsem_stat st;
	struct ct_report r;

	if (!self->ready)
		return;
	if (access("/bin/wsem", X_OK) || access("/bin/busybox", X_OK))
		SKIP(return, "no /bin/wsem or /bin/busybox");
	spec.arg = "2";
	ASSERT_STARTED(ct_start(self, 0, &spec, &r), r);
	ASSERT_EQ(0, wait_used(self->fd, 2)) {
		if (!ct_read(self, 0, &r))
			TH_LOG("container: %s: %s", r.what, strerror(r.err));
	}
	spec.arg = "1";
	ASSERT_STARTED(ct_start(self, 1, &spec, &r), r);
	ASSERT_EQ(0, wait_waiters(self->fd, 1));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(2, st.used);
	EXPECT_EQ(0, ct_end(self, 0));	/* cat's, through wsem run */
	ASSERT_EQ(0, wait_used(self->fd, 1));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(0, st.waiters);
	EXPECT_EQ(0, ct_end(self, 1));
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(0, st.used);
}

/* Job: /dev/wsem (bound in) is refused; /run/gpu works. */
static void job_devcg(const void *arg, int report, int go)
{
	struct ct_report r;
	int fd;

	(void)arg;
	memset(&r, 0, sizeof(r));
	fd = open("/dev/wsem", O_RDWR | O_CLOEXEC);
	r.ret[0] = fd;
	r.err_of[0] = errno;
	fd = open("/run/gpu", O_RDWR | O_CLOEXEC);
	r.ret[1] = fd;
	r.err_of[1] = errno;
	if (fd >= 0) {
		r.ret[2] = wsem_acquire(fd, 1);
		r.err_of[2] = errno;
		look_at_handle(fd, &r);
	}
	report_write(report, &r);
	wait_go(go);
}

/* A cgroup2 device program that denies every device: r0 = 0; exit. */
/* Does the kernel have bpf(2)?  Debian's and make check-debug's have. */
static bool kernel_has_bpf(void)
{
	return syscall(__NR_bpf, 0, NULL, 0) == 0 || errno != ENOSYS;
}

static int attach_deny_all(int cgroup_fd)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	static const char license[] = "GPL";
	union bpf_attr attr;
	int prog, ret;

	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
	attr.insns = (uintptr_t)insns;
	attr.insn_cnt = 2;
	attr.license = (uintptr_t)license;
	prog = syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof(attr));
	if (prog < 0)
		return -1;
	memset(&attr, 0, sizeof(attr));
	attr.target_fd = cgroup_fd;
	attr.attach_bpf_fd = prog;
	attr.attach_type = BPF_CGROUP_DEVICE;
	ret = syscall(SYS_bpf, BPF_PROG_ATTACH, &attr, sizeof(attr));
	/* The attachment holds the program. */
	close(prog);
	return ret;
}

/*
 * In a device cgroup that denies every device (as container runtimes set
 * up, without /dev/wsem on their list), /dev/wsem bind-mounted into the
 * container fails with EPERM, while the bind-mounted wsemfs file, a
 * regular file, works.
 */
TEST_F(container, device_cgroup_denies_dev_wsem_not_the_file)
{
	static const char cgroot[] = "/sys/fs/cgroup";
	struct ct_spec spec = {
		.binds = {
			{ .src = self->path, .dst = "/run/gpu" },
			{ .src = "/dev/wsem", .dst = "/dev/wsem" },
		},
		.job = job_devcg,
	};
	struct wsem_stat st;
	struct ct_report r;
	struct statfs sfs;
	int cgfd;

	if (!self->ready)
		return;
	if (statfs(cgroot, &sfs) || sfs.f_type != CGROUP2_MAGIC)
		SKIP(return, "%s is not a cgroup2 mount", cgroot);
	snprintf(self->cgroup, sizeof(self->cgroup), "%s/ct%d", cgroot,
		 getpid());
	ASSERT_EQ(0, mkdir(self->cgroup, 0755));
	cgfd = open(self->cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_LE(0, cgfd);
	if (!kernel_has_bpf()) {
		close(cgfd);
		SKIP(return, "no bpf(2) in this kernel: no device program");
	}
	ASSERT_EQ(0, attach_deny_all(cgfd)) {
		TH_LOG("attach a device program: %s", strerror(errno));
	}
	EXPECT_EQ(0, close(cgfd));

	spec.cgroup = self->cgroup;
	ASSERT_STARTED(ct_start(self, 0, &spec, &r), r);
	ASSERT_EQ(0, ct_read(self, 0, &r));
	ASSERT_EQ(CT_REPORT, r.stage) {
		TH_LOG("container setup failed: %s: %s", r.what,
		       strerror(r.err));
	}
	EXPECT_EQ(-1, r.ret[0]);
	EXPECT_EQ(EPERM, r.err_of[0]);
	ASSERT_LE(0, r.ret[1]) {
		TH_LOG("open /run/gpu: %s", strerror(r.err_of[1]));
	}
	EXPECT_EQ(0, r.ret[2]);
	EXPECT_EQ(1, r.st.held);
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(1, st.used);
	EXPECT_EQ(0, ct_end(self, 0));
}

/* What the attacks job works on: host names and the host's directory. */
struct attack_arg {
	char rw[WSEM_NAME_MAX];	/* 0666: at /run/gpu */
	char ro[WSEM_NAME_MAX];	/* 0604: at /run/ro */
	char no[WSEM_NAME_MAX];	/* 0600: at /run/none */
	/* the host's directory is at /run/limits */
};

/*
 * Job: container root (uid 0 of its user namespace, all capabilities
 * there) goes for host semaphores it has some or no mode bits for.
 */
static void job_attack(const void *arg, int report, int go)
{
	const struct attack_arg *a = arg;
	char path[128];
	struct ct_report r;
	int fd;

	memset(&r, 0, sizeof(r));
	/* 0: rw file: open, 1: resize, 2: chmod, 3: chown. */
	fd = open("/run/gpu", O_RDWR | O_CLOEXEC);
	r.ret[0] = fd;
	r.err_of[0] = errno;
	if (fd >= 0) {
		r.ret[1] = wsem_set_capacity(fd, 100);
		r.err_of[1] = errno;
		look_at_handle(fd, &r);
		r.count = wsem_acquire(fd, 1) ? -1 : 1;
	}
	r.ret[2] = chmod("/run/gpu", 0777);
	r.err_of[2] = errno;
	r.ret[3] = chown("/run/gpu", 0, 0);
	r.err_of[3] = errno;
	/* 4: the 0600 one, read-write; 5: read-only. */
	r.ret[4] = open("/run/none", O_RDWR | O_CLOEXEC);
	r.err_of[4] = errno;
	r.ret[5] = open("/run/none", O_RDONLY | O_CLOEXEC);
	r.err_of[5] = errno;
	/* 6: the 0604 one, read-write; 7: read-only, then 8: acquire. */
	r.ret[6] = open("/run/ro", O_RDWR | O_CLOEXEC);
	r.err_of[6] = errno;
	fd = open("/run/ro", O_RDONLY | O_CLOEXEC);
	r.ret[7] = fd;
	r.err_of[7] = errno;
	r.ret[8] = fd < 0 ? 0 : wsem_acquire(fd, 1);
	r.err_of[8] = errno;
	/* 9: unlink through the host's directory; 10: chmod there. */
	snprintf(path, sizeof(path), "/run/limits/%s", a->rw);
	r.ret[9] = unlink(path);
	r.err_of[9] = errno;
	snprintf(path, sizeof(path), "/run/limits/%s", a->no);
	r.ret[10] = chmod(path, 0666);
	r.err_of[10] = errno;
	/* 11: creating in the host's directory. */
	snprintf(path, sizeof(path), "/run/limits/%s.new", a->rw);
	r.ret[11] = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0666);
	r.err_of[11] = errno;
	report_write(report, &r);
	wait_go(go);
}

/*
 * Container root cannot chmod, chown, unlink, resize, or open for more
 * than its mode bits ("other", as the host's owner is not mapped) give:
 * EPERM, EPERM, EPERM, EPERM, EACCES; and a read-only handle acquires
 * nothing (EBADF).  The host's semaphores are as they were.
 */
TEST_F(container, container_root_attacks_fail)
{
	char ro_path[192], no_path[192];
	struct attack_arg a;
	struct ct_spec spec = {
		.binds = {
			{ .src = self->path, .dst = "/run/gpu" },
			{ .src = ro_path, .dst = "/run/ro" },
			{ .src = no_path, .dst = "/run/none" },
			{ .src = self->wsem, .dst = "/run/limits",
			  .dir = true },
		},
		.job = job_attack,
		.arg = &a,
	};
	struct wsem_stat st;
	struct ct_report r;
	struct stat sb;
	int fd_ro, fd_no, i;

	if (!self->ready)
		return;
	memset(&a, 0, sizeof(a));
	snprintf(a.rw, sizeof(a.rw), "%s", self->name);
	snprintf(a.ro, sizeof(a.ro), "ct%d.ro", getpid());
	snprintf(a.no, sizeof(a.no), "ct%d.none", getpid());
	fd_ro = create_name(self, a.ro, 0604, 2);
	ASSERT_LE(0, fd_ro);
	fd_no = create_name(self, a.no, 0600, 2);
	ASSERT_LE(0, fd_no);
	snprintf(ro_path, sizeof(ro_path), "%s/%s", self->wsem, a.ro);
	snprintf(no_path, sizeof(no_path), "%s/%s", self->wsem, a.no);

	ASSERT_STARTED(ct_start(self, 0, &spec, &r), r);
	ASSERT_EQ(0, ct_read(self, 0, &r));
	ASSERT_EQ(CT_REPORT, r.stage) {
		TH_LOG("container setup failed: %s: %s", r.what,
		       strerror(r.err));
	}
	ASSERT_LE(0, r.ret[0]) {
		TH_LOG("open the 0666 file: %s", strerror(r.err_of[0]));
	}
	EXPECT_EQ(-1, r.ret[1]);
	EXPECT_EQ(EPERM, r.err_of[1]);
	EXPECT_EQ(1, r.count);		/* its mode lets it acquire */
	EXPECT_EQ(-1, r.ret[2]);
	EXPECT_EQ(EPERM, r.err_of[2]);
	EXPECT_EQ(-1, r.ret[3]);
	EXPECT_EQ(EPERM, r.err_of[3]);
	EXPECT_EQ(-1, r.ret[4]);
	EXPECT_EQ(EACCES, r.err_of[4]);
	EXPECT_EQ(-1, r.ret[5]);
	EXPECT_EQ(EACCES, r.err_of[5]);
	EXPECT_EQ(-1, r.ret[6]);
	EXPECT_EQ(EACCES, r.err_of[6]);
	EXPECT_LE(0, r.ret[7]);
	EXPECT_EQ(-1, r.ret[8]);
	EXPECT_EQ(EBADF, r.err_of[8]);
	EXPECT_EQ(-1, r.ret[9]);
	EXPECT_EQ(EPERM, r.err_of[9]);
	EXPECT_EQ(-1, r.ret[10]);
	EXPECT_EQ(EPERM, r.err_of[10]);
	EXPECT_EQ(-1, r.ret[11]);
	EXPECT_EQ(EPERM, r.err_of[11]);
	EXPECT_STREQ("", r.st.name);
	EXPECT_STREQ("", r.fdinfo_name);
	EXPECT_STREQ("", r.text_name);

	/* The host's semaphores are untouched. */
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(2, st.capacity);
	EXPECT_EQ(0666, st.mode);
	EXPECT_EQ(0, st.uid);
	EXPECT_EQ(1, st.used);
	ASSERT_EQ(0, wsem_stat(fd_no, &st));
	EXPECT_EQ(0600, st.mode);
	EXPECT_EQ(0, st.uid);
	EXPECT_EQ(0, st.gid);
	EXPECT_EQ(0, st.used);
	ASSERT_EQ(0, wsem_stat(fd_ro, &st));
	EXPECT_EQ(0, st.used);
	ASSERT_EQ(0, stat(self->path, &sb));
	EXPECT_EQ(0666, sb.st_mode & 07777);
	EXPECT_EQ(0, ct_end(self, 0));
	for (i = 0; i < 3; i++) {
		const char *n = i == 0 ? a.rw : i == 1 ? a.ro : a.no;
		int fd = wsem_open(n, O_CLOEXEC, 0, 0);

		EXPECT_LE(0, fd);
		if (fd >= 0)
			close(fd);
	}
	EXPECT_EQ(0, close(fd_ro));
	EXPECT_EQ(0, close(fd_no));
}

/*
 * Job: with /dev/wsem but no wsemfs file, look for the host's name (@arg)
 * every way there is: by name, in a wsemfs mount of its own (which shows
 * its own namespace: one name it makes), in /proc.
 */
static void job_no_bind(const void *arg, int report, int go)
{
	const char *host = arg;
	char path[128], buf[4096];
	struct ct_report r;
	struct dirent *de;
	DIR *d;
	int fd;

	memset(&r, 0, sizeof(r));
	/* 0: the host's name through /dev/wsem. */
	r.ret[0] = wsem_open(host, O_CLOEXEC, 0, 0);
	r.err_of[0] = errno;
	/* 1: a name of its own; 2: a wsemfs mount of its own. */
	fd = wsem_open("own", O_CREAT | O_EXCL | O_CLOEXEC, 0600, 3);
	r.ret[1] = fd;
	r.err_of[1] = errno;
	if (fd >= 0)
		close(fd);
	r.ret[2] = mkdir("/run/wsem", 0755) ?:
		   mount("wsem", "/run/wsem", "wsem", 0, NULL);
	r.err_of[2] = errno;
	d = opendir("/run/wsem");
	r.count = d ? 0 : -1;
	while (d && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		r.count++;
		if (strcmp(de->d_name, "own"))
			snprintf(r.leak, sizeof(r.leak), "%.63s", de->d_name);
	}
	if (d)
		closedir(d);
	/* 3: the host's name in its mount; 4: its own name there. */
	snprintf(path, sizeof(path), "/run/wsem/%s", host);
	r.ret[3] = open(path, O_RDONLY | O_CLOEXEC);
	r.err_of[3] = errno;
	fd = open("/run/wsem/own", O_RDWR | O_CLOEXEC);
	r.ret[4] = fd;
	r.err_of[4] = errno;
	if (fd >= 0)
		look_at_handle(fd, &r);
	/* 5: the list of its namespace. */
	r.ret[5] = wsem_list(NULL, 0);
	r.err_of[5] = errno;
	if (!read_file("/proc/self/mountinfo", buf, sizeof(buf)) &&
	    strstr(buf, host))
		snprintf(r.leak, sizeof(r.leak), "mountinfo");
	/* 6: the old root is gone. */
	r.ret[6] = access("/oldroot", F_OK);
	r.err_of[6] = errno;
	report_write(report, &r);
	wait_go(go);
}

/*
 * A container without the bind mount reaches no host semaphore by any
 * path, even with /dev/wsem: its own wsemfs mount shows its own namespace.
 */
TEST_F(container, no_bind_mount_no_host_semaphore)
{
	struct ct_spec spec = {
		.binds = { { .src = "/dev/wsem", .dst = "/dev/wsem" } },
		.job = job_no_bind,
		.arg = self->name,
	};
	struct ct_report r;

	if (!self->ready)
		return;
	ASSERT_STARTED(ct_start(self, 0, &spec, &r), r);
	ASSERT_EQ(0, ct_read(self, 0, &r));
	ASSERT_EQ(CT_REPORT, r.stage) {
		TH_LOG("container setup failed: %s: %s", r.what,
		       strerror(r.err));
	}
	EXPECT_EQ(-1, r.ret[0]);
	EXPECT_EQ(ENOENT, r.err_of[0]);
	EXPECT_LE(0, r.ret[1]) {
		TH_LOG("create in the container: %s", strerror(r.err_of[1]));
	}
	EXPECT_EQ(0, r.ret[2]) {
		TH_LOG("mount -t wsem in the container: %s",
		       strerror(r.err_of[2]));
	}
	EXPECT_EQ(1, r.count);
	EXPECT_EQ(-1, r.ret[3]);
	EXPECT_EQ(ENOENT, r.err_of[3]);
	EXPECT_LE(0, r.ret[4]);
	EXPECT_STREQ("own", r.st.name);
	EXPECT_EQ(3, r.st.capacity);
	EXPECT_EQ(0, r.st.uid);		/* its creator: root there */
	EXPECT_EQ(1, r.ret[5]);
	EXPECT_EQ(-1, r.ret[6]);
	EXPECT_STREQ("", r.leak);
	EXPECT_EQ(0, ct_end(self, 0));
	/* Its name was never the host's. */
	EXPECT_EQ(-1, wsem_open("own", O_CLOEXEC, 0, 0));
	EXPECT_EQ(ENOENT, errno);
}

/*
 * bwrap's payload: open @path, acquire @weight, report on @report_fd what
 * the handle says, hold until @go_fd is closed.
 */
static int hold_main(char **argv)
{
	uint64_t weight = strtoull(argv[1], NULL, 0);
	int report = atoi(argv[2]), go = atoi(argv[3]);
	struct ct_report r;
	int fd;

	memset(&r, 0, sizeof(r));
	fd = open(argv[0], O_RDWR | O_CLOEXEC);
	r.ret[0] = fd;
	r.err_of[0] = errno;
	if (fd >= 0) {
		r.ret[1] = wsem_acquire(fd, weight);
		r.err_of[1] = errno;
		look_at_handle(fd, &r);
	}
	r.ret[2] = access("/dev/wsem", F_OK);
	r.err_of[2] = errno;
	report_write(report, &r);
	wait_go(go);
	return 0;
}

/*
 * Run bwrap as CT_UID with @args (NULL-terminated), the test's pipes
 * inherited as fds 3 (report) and 4 (go), its stderr into @err_fd; the
 * child's pid.
 */
static pid_t run_bwrap(const char *bwrap, char *const *args, int report,
		       int go, int err_fd)
{
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	if (dup2(report, 3) < 0 || dup2(go, 4) < 0 || dup2(err_fd, 2) < 0)
		_exit(125);
	for (int i = 5; i < 1024; i++)
		close(i);
	if (setgroups(0, NULL) || setgid(CT_UID) || setuid(CT_UID))
		_exit(126);
	execv(bwrap, args);
	_exit(127);
}

/* The first line of what @fd (a pipe or file at offset 0) holds. */
static void first_line(int fd, char *buf, size_t len)
{
	ssize_t n = pread(fd, buf, len - 1, 0);

	buf[n > 0 ? n : 0] = 0;
	buf[strcspn(buf, "\n")] = 0;
}

/*
 * The same with a real container tool: bubblewrap, unprivileged, with
 * every namespace unshared and the host's file bound in.
 */
TEST_F(container, bubblewrap_gates_a_job)
{
	const char *cands[] = { "/usr/bin/bwrap", "/bin/bwrap" };
	const char *bwrap = NULL;
	char self_exe[256], err[256], tmpl[] = "/tmp/ct-bwrap.XXXXXX";
	struct wsem_stat st;
	struct ct_report r;
	struct pollfd pfd;
	int rep[2], go[2], errf, status;
	unsigned int i;
	ssize_t n;
	pid_t pid;

	if (!self->ready)
		return;
	for (i = 0; i < 2 && !bwrap; i++)
		if (!access(cands[i], X_OK))
			bwrap = cands[i];
	if (!bwrap)
		SKIP(return, "no bwrap (bubblewrap) in this system");
	n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
	ASSERT_LT(0, n);
	self_exe[n] = 0;
	errf = mkstemp(tmpl);
	ASSERT_LE(0, errf);
	unlink(tmpl);
	ASSERT_EQ(0, pipe2(rep, O_CLOEXEC));
	ASSERT_EQ(0, pipe2(go, O_CLOEXEC));

	/* Can bwrap make a user namespace here at all? */
	{
		char *probe[] = { (char *)bwrap, "--unshare-user",
				  "--ro-bind", "/", "/", "/bin/true", NULL };

		pid = run_bwrap(bwrap, probe, rep[1], go[0], errf);
		ASSERT_LT(0, pid);
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			first_line(errf, err, sizeof(err));
			close(errf);
			close(rep[0]);
			close(rep[1]);
			close(go[0]);
			close(go[1]);
			SKIP(return, "bwrap: no user namespace as uid %d: %.60s",
			     CT_UID, err);
		}
	}
	ASSERT_EQ(0, ftruncate(errf, 0));
	{
		char *args[] = { (char *)bwrap, "--unshare-all",
			"--die-with-parent", "--proc", "/proc",
			"--bind", self->path, "/run/gpu",
			"--ro-bind", self_exe, "/hold",
			"/hold", "--hold", "/run/gpu", "2", "3", "4", NULL };

		pid = run_bwrap(bwrap, args, rep[1], go[0], errf);
	}
	ASSERT_LT(0, pid);
	close(rep[1]);
	close(go[0]);
	pfd.fd = rep[0];
	pfd.events = POLLIN;
	memset(&r, 0, sizeof(r));
	if (poll(&pfd, 1, REPORT_WAIT_MS) != 1 ||
	    read(rep[0], &r, sizeof(r)) != sizeof(r)) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		first_line(errf, err, sizeof(err));
		ASSERT_TRUE(false) {
			TH_LOG("bwrap ran no payload (status %#x): %s",
			       status, err);
		}
	}
	ASSERT_LE(0, r.ret[0]) {
		TH_LOG("open /run/gpu in bwrap: %s", strerror(r.err_of[0]));
	}
	EXPECT_EQ(0, r.ret[1]);
	EXPECT_EQ(-1, r.ret[2]);
	EXPECT_EQ(2, r.st.held);
	EXPECT_STREQ("", r.st.name);
	EXPECT_STREQ("", r.fdinfo_name);
	EXPECT_STREQ("", r.text_name);
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(2, st.used);
	close(go[1]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		first_line(errf, err, sizeof(err));
		TH_LOG("bwrap: status %#x: %s", status, err);
	}
	ASSERT_EQ(0, wsem_stat(self->fd, &st));
	EXPECT_EQ(0, st.used);
	close(rep[0]);
	close(errf);
}

/* TEST_HARNESS_MAIN, and bwrap's payload when called as "--hold ...". */
static void __attribute__((constructor)) __constructor_order_last(void)
{
	if (!__constructor_order)
		__constructor_order = _CONSTRUCTOR_ORDER_BACKWARD;
}

int main(int argc, char **argv)
{
	if (argc == 6 && !strcmp(argv[1], "--hold"))
		return hold_main(argv + 2);
	return test_harness_run(argc, argv);
}
