// SPDX-License-Identifier: GPL-2.0
/*
 * A lease ends what it was for.  WSEM_IOC_SET_KILL records on a handle a
 * process group that the kernel kills (SIGKILL) when the handle is
 * released; "wsem run" runs COMMAND in such a group of its own, so that
 * killing wsem, even with SIGKILL, leaves nothing of COMMAND's running
 * without the lease (a shell's children, a set-uid COMMAND run by an
 * ordinary user), and a signal to wsem's process group reaches COMMAND
 * once, through wsem.
 *
 * The set-uid COMMAND is this very program, copied set-uid root into
 * /tmp: run as "lease_test --hold FILE" it becomes root through and
 * through (setresuid(0, 0, 0), as sudo does, so that its user may not
 * signal it), forks a child, writes both pids to FILE and sleeps.  A
 * constructor does that before the harness starts.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "util.h"

#define DEV	"/dev/wsem"
#define USER_ID	1000		/* the ordinary user; no passwd entry needed */

static int count_fd = -1;

/* --count: one line "TERM <sender's pid>" per SIGTERM handled. */
static void count_term(int sig, siginfo_t *si, void *uc)
{
	unsigned int v = (unsigned int)si->si_pid;
	char buf[32] = "TERM ", digits[16];
	int n = 5, k = 0;

	(void)sig;
	(void)uc;
	do
		digits[k++] = '0' + v % 10;
	while ((v /= 10));
	while (k)
		buf[n++] = digits[--k];
	buf[n++] = '\n';
	if (write(count_fd, buf, n) != n)
		_exit(6);
}

/*
 * "lease_test --count FILE": a COMMAND that appends a line to FILE for
 * each SIGTERM, with the pid that sent it, and makes FILE.ready.
 */
static void count_mode(const char *file)
{
	struct sigaction sa = { .sa_sigaction = count_term,
				.sa_flags = SA_SIGINFO | SA_RESTART };
	char ready[4096];
	int fd;

	count_fd = open(file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	snprintf(ready, sizeof(ready), "%s.ready", file);
	if (count_fd < 0 || sigaction(SIGTERM, &sa, NULL))
		_exit(5);
	fd = open(ready, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		_exit(5);
	close(fd);
	for (;;)
		pause();
}

__attribute__((constructor)) static void hold_mode(int argc, char **argv)
{
	char tmp[4096];
	pid_t kid;
	FILE *f;

	if (argc == 3 && !strcmp(argv[1], "--count"))
		count_mode(argv[2]);
	if (argc != 3 || strcmp(argv[1], "--hold"))
		return;
	if (setresuid(0, 0, 0))
		_exit(3);
	kid = fork();
	if (kid < 0)
		_exit(4);
	if (kid == 0)
		for (;;)
			pause();
	snprintf(tmp, sizeof(tmp), "%s.tmp", argv[2]);
	f = fopen(tmp, "w");
	if (!f || fprintf(f, "%d %d\n", getpid(), kid) < 0 || fclose(f) ||
	    rename(tmp, argv[2]))
		_exit(5);
	for (;;)
		pause();
}

/* Field 3 on of /proc/@pid/stat: state, ppid, pgrp; false if none. */
static bool proc_stat(pid_t pid, char *state, pid_t *ppid, pid_t *pgrp)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && sscanf(p + 1, " %c %d %d", state, ppid, pgrp) == 3;
}

/* Does @pid run: a process, not a zombie? */
static bool alive(pid_t pid)
{
	pid_t ppid, pgrp;
	char st;

	return proc_stat(pid, &st, &ppid, &pgrp) && st != 'Z' && st != 'X';
}

static bool comm_is(pid_t pid, const char *comm);

/*
 * The live processes whose @field (0: parent, 1: process group) is @id,
 * or, with @comm, whose command name is @comm; the first @max of them
 * into @pids; how many there are.
 */
static int procs_where(int field, pid_t id, const char *comm, pid_t *pids,
		       int max)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	pid_t pid, ppid, pgrp;
	int n = 0;
	char st;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		pid = atoi(e->d_name);
		if (pid <= 0 || !proc_stat(pid, &st, &ppid, &pgrp) ||
		    st == 'Z' || st == 'X')
			continue;
		if (comm ? !comm_is(pid, comm) : (field ? pgrp : ppid) != id)
			continue;
		if (n < max)
			pids[n] = pid;
		n++;
	}
	closedir(d);
	return n;
}

static int procs_with(int field, pid_t id, pid_t *pids, int max)
{
	return procs_where(field, id, NULL, pids, max);
}

/* Is the command name of @pid @comm? */
static bool comm_is(pid_t pid, const char *comm)
{
	char path[64], buf[32] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	f = fopen(path, "r");
	if (!f)
		return false;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return !strcmp(buf, comm);
}

/* Sleep @ms milliseconds. */
static void nap(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* The weight held on semaphore @name, or -1. */
static long long used_of(const char *name)
{
	struct wsem_stat st;
	int fd = wsem_open(name, O_RDONLY | O_CLOEXEC, 0, 0);
	long long used = -1;

	if (fd < 0)
		return -1;
	if (!wsem_stat(fd, &st))
		used = (long long)st.used;
	close(fd);
	return used;
}

/* A handle bound to a new anonymous semaphore of capacity 4, or -1. */
static int anon_handle(void)
{
	struct wsem_open_args o = {
		.size = sizeof(o), .flags = WSEM_OPEN_ANON, .capacity = 4,
	};
	int fd = open(DEV, O_RDWR | O_CLOEXEC);

	if (fd >= 0 && ioctl(fd, WSEM_IOC_OPEN, &o)) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * A child that, in a process group of its own when @own_group (made by
 * both sides), forks a grandchild (its pid in *@grandchild) and both
 * sleep; the child's pid.
 */
static pid_t sleepers(bool own_group, pid_t *grandchild)
{
	int p[2];
	pid_t pid, g;

	if (pipe2(p, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid == 0) {
		if (own_group)
			setpgid(0, 0);
		g = fork();
		if (g == 0) {
			close_range(3, ~0U, 0);	/* no handle of ours */
			for (;;)
				pause();
		}
		if (write(p[1], &g, sizeof(g)) != sizeof(g))
			_exit(1);
		close_range(3, ~0U, 0);
		for (;;)
			pause();
	}
	if (own_group && pid > 0)
		setpgid(pid, pid);
	close(p[1]);
	if (pid > 0 && read(p[0], grandchild, sizeof(*grandchild)) !=
	    sizeof(*grandchild))
		*grandchild = -1;
	close(p[0]);
	return pid;
}

/* Kill @pid and, if it is our child, reap it; its wait status. */
static int end_child(pid_t pid)
{
	int status = -1;

	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return status;
}

/* Wait up to @ms for @pid to be gone; whether it is. */
static bool gone_within(pid_t pid, int ms)
{
	for (; ms > 0 && alive(pid); ms -= 10)
		nap(10);
	return !alive(pid);
}

/*
 * Fork "wsem run @name -- @cmd..." in a process group of its own, as a
 * job-control shell starts a job, as @uid when not 0; its pid.
 */
static pid_t start_run(const char *name, uid_t uid, char *const cmd[])
{
	char *argv[16] = { "wsem", "run", (char *)name, "--" };
	pid_t pid;
	int i, null;

	for (i = 0; cmd[i] && i < 10; i++)
		argv[4 + i] = cmd[i];
	pid = fork();
	if (pid == 0) {
		setpgid(0, 0);
		null = open("/dev/null", O_RDONLY);
		if (null < 0 || dup2(null, STDIN_FILENO) < 0)
			_exit(97);
		if (uid && (setgroups(0, NULL) || setresgid(uid, uid, uid) ||
			    setresuid(uid, uid, uid)))
			_exit(98);
		execvp("wsem", argv);
		_exit(99);
	}
	if (pid > 0)
		setpgid(pid, pid);
	return pid;
}

/* Wait up to 20 s for @path to exist; whether it does. */
static bool appears(const char *path)
{
	int i;

	for (i = 0; i < 2000 && access(path, F_OK); i++)
		nap(10);
	return !access(path, F_OK);
}

/* The lines of file @path, or -1. */
static int lines_of(const char *path)
{
	FILE *f = fopen(path, "r");
	int c, n = 0;

	if (!f)
		return -1;
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

/* Skip where there is no module (a module without the ioctl fails). */
#define NEED_SET_KILL(fd)						\
	do {								\
		if (access(DEV, R_OK | W_OK))				\
			SKIP(return, DEV " is missing");		\
		ASSERT_LE(0, fd);					\
	} while (0)

/* Bad requests: one errno each, and nothing recorded. */
TEST(set_kill_refuses)
{
	int fd = access(DEV, F_OK) ? -1 : anon_handle();
	struct wsem_kill_args k = { .size = sizeof(k) };
	pid_t in_ours, g, setsid_kid;
	int raw, p[2];
	char c;

	NEED_SET_KILL(fd);
	raw = open(DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, raw);
	EXPECT_EQ(EINVAL, set_kill(raw, 0));	/* unbound */
	close(raw);
	k.flags = 1;
	EXPECT_EQ(-1, ioctl(fd, WSEM_IOC_SET_KILL, &k));
	EXPECT_EQ(EINVAL, errno);
	k.flags = 0;
	k.__pad = 1;
	EXPECT_EQ(-1, ioctl(fd, WSEM_IOC_SET_KILL, &k));
	EXPECT_EQ(EINVAL, errno);
	k.__pad = 0;
	k.size = 16;
	EXPECT_EQ(-1, ioctl(fd, WSEM_IOC_SET_KILL, &k));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(EINVAL, set_kill(fd, -1));
	EXPECT_EQ(0, set_kill(fd, 0));
	/* a child in our group leads none */
	in_ours = sleepers(false, &g);
	ASSERT_LT(0, in_ours);
	EXPECT_EQ(ESRCH, set_kill(fd, in_ours));
	/* a group we lead is not a child's */
	ASSERT_EQ(0, setpgid(0, 0));
	EXPECT_EQ(EPERM, set_kill(fd, getpid()));
	/* a child that left for a session of its own is out of reach */
	ASSERT_EQ(0, pipe2(p, O_CLOEXEC));
	setsid_kid = fork();
	if (setsid_kid == 0) {
		setsid();
		c = 'r';
		if (write(p[1], &c, 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	ASSERT_LT(0, setsid_kid);
	close(p[1]);
	ASSERT_EQ(1, read(p[0], &c, 1));
	close(p[0]);
	EXPECT_EQ(EPERM, set_kill(fd, setsid_kid));
	/* a pid nobody has */
	EXPECT_EQ(ESRCH, set_kill(fd, 4194304 - 1));
	close(fd);
	/* nothing was recorded: both live on after the close */
	nap(100);
	EXPECT_TRUE(alive(in_ours));
	EXPECT_TRUE(alive(g));
	EXPECT_TRUE(alive(setsid_kid));
	end_child(in_ours);
	kill(g, SIGKILL);
	end_child(setsid_kid);
}

/*
 * The close kills the whole group (a grandchild too) before the weight
 * goes back; a group replaced by 0 is not killed.
 */
TEST(close_kills_the_group)
{
	int fd = access(DEV, F_OK) ? -1 : anon_handle(), keep, watch, status;
	struct wsem_stat st;
	pid_t kid, g, kept, kept_g;

	NEED_SET_KILL(fd);
	watch = wsem_reopen(fd, O_CLOEXEC);
	ASSERT_LE(0, watch);
	ASSERT_EQ(0, wsem_acquire(fd, 2));
	kid = sleepers(true, &g);
	ASSERT_LT(0, kid);
	ASSERT_LT(0, g);
	kept = sleepers(true, &kept_g);
	ASSERT_LT(0, kept);
	keep = anon_handle();
	ASSERT_LE(0, keep);
	EXPECT_EQ(0, set_kill(keep, kept));
	EXPECT_EQ(0, set_kill(keep, 0));
	EXPECT_EQ(0, set_kill(fd, kept));	/* replaced by kid below */
	EXPECT_EQ(0, set_kill(fd, kid));
	EXPECT_EQ(0, close(keep));
	EXPECT_EQ(0, close(fd));
	EXPECT_EQ(kid, waitpid(kid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	EXPECT_TRUE(gone_within(g, 1000));
	nap(100);
	EXPECT_TRUE(alive(kept));
	EXPECT_TRUE(alive(kept_g));
	kill(kept_g, SIGKILL);
	end_child(kept);
	/* the weight went back */
	ASSERT_EQ(0, wsem_stat(watch, &st));
	EXPECT_EQ(0, st.used);
	close(watch);
}

/* A named semaphore of capacity 2, mode 0666, for "wsem run". */
static void make_sem(char *name, size_t len, const char *test)
{
	mode_t old = umask(0);
	int fd;

	snprintf(name, len, "lease.%d.%s", getpid(), test);
	fd = wsem_open(name, O_CREAT | O_CLOEXEC, 0666, 2);
	umask(old);
	if (fd >= 0)
		close(fd);
}

/*
 * kill -9 of "wsem run NAME -- sh -c 'sleep 600 & sleep 600'": within a
 * second no process of COMMAND's is left, and the weight is back.
 */
TEST(run_killed_leaves_nothing)
{
	char *cmd[] = { "sh", "-c", "sleep 600 & sleep 600", NULL };
	int fd = access(DEV, F_OK) ? -1 : anon_handle(), i, j, n = 0;
	int sleeps = 0;
	char name[WSEM_NAME_MAX];
	pid_t run, sh = 0, tree[8];

	NEED_SET_KILL(fd);
	close(fd);
	make_sem(name, sizeof(name), "tree");
	run = start_run(name, 0, cmd);
	ASSERT_LT(0, run);
	/* the two sleeps (the shell may have become the second one) */
	for (i = 0; i < 500 && sleeps < 2; i++) {
		nap(20);
		if (!sh)
			procs_with(0, run, &sh, 1);
		if (!sh)
			continue;
		n = procs_with(1, sh, tree, 8);
		for (j = sleeps = 0; j < n && j < 8; j++)
			sleeps += comm_is(tree[j], "sleep");
	}
	ASSERT_EQ(2, sleeps) TH_LOG("COMMAND's group never had two sleeps");
	EXPECT_EQ(1, used_of(name));
	end_child(run);
	for (i = 0; i < 100 && procs_with(1, sh, tree, 8); i++)
		nap(10);
	EXPECT_EQ(0, procs_with(1, sh, tree, 8))
		TH_LOG("a process of COMMAND's ran on a second after");
	EXPECT_EQ(0, used_of(name));
	for (i = 0; i < n; i++)
		kill(tree[i], SIGKILL);
	wsem_unlink(name);
}

/* Copy this program to @path, set-uid root; 0 or -1. */
static int setuid_copy(const char *path)
{
	int in = open("/proc/self/exe", O_RDONLY | O_CLOEXEC), out;
	char buf[65536];
	ssize_t n = 0;

	out = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0700);
	if (in < 0 || out < 0)
		return -1;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n)
			n = -1;
	close(in);
	if (close(out) || n < 0 || chown(path, 0, 0))
		return -1;
	return chmod(path, 04755);
}

/*
 * /tmp/lease.PID/hold, this program set-uid root, into @prog (96 bytes),
 * its folder into @dir (64), and in @pids (96) the file it writes its
 * pids to, in a folder the ordinary user may write; 0 or -1.
 */
static int setuid_dirs(char *dir, char *prog, char *pids)
{
	snprintf(dir, 64, "/tmp/lease.%d", getpid());
	snprintf(prog, 96, "%s/hold", dir);
	snprintf(pids, 96, "%s/run", dir);
	if (mkdir(dir, 0755) || setuid_copy(prog) || mkdir(pids, 0777) ||
	    chmod(pids, 0777))
		return -1;
	strcat(pids, "/pids");
	return 0;
}

/* Remove what setuid_dirs() made. */
static void setuid_undo(char *dir, char *prog, char *pids)
{
	unlink(pids);
	*strrchr(pids, '/') = '\0';
	rmdir(pids);
	unlink(prog);
	rmdir(dir);
}

/*
 * The same with a set-uid root COMMAND (that becomes root through and
 * through, and forks) run by an ordinary user, who may not signal it,
 * and whose PR_SET_PDEATHSIG the kernel cleared.
 */
TEST(run_setuid_killed_leaves_nothing)
{
	int fd = access(DEV, F_OK) ? -1 : anon_handle(), status;
	char name[WSEM_NAME_MAX], dir[64], prog[96], pids[96];
	char *cmd[] = { prog, "--hold", pids, NULL };
	pid_t run, holder = 0, kid = 0, user;
	FILE *f;

	NEED_SET_KILL(fd);
	close(fd);
	make_sem(name, sizeof(name), "setuid");
	ASSERT_EQ(0, setuid_dirs(dir, prog, pids));
	run = start_run(name, USER_ID, cmd);
	ASSERT_LT(0, run);
	ASSERT_TRUE(appears(pids)) TH_LOG("the set-uid COMMAND never ran");
	f = fopen(pids, "r");
	ASSERT_NE(NULL, f);
	ASSERT_EQ(2, fscanf(f, "%d %d", &holder, &kid));
	fclose(f);
	EXPECT_EQ(1, used_of(name));
	/* the user may not signal it: only the kernel's kill reaches it */
	user = fork();
	if (user == 0) {
		if (setresuid(USER_ID, USER_ID, USER_ID))
			_exit(2);
		_exit(kill(holder, 0) && errno == EPERM ? 0 : 1);
	}
	ASSERT_EQ(user, waitpid(user, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	end_child(run);
	EXPECT_TRUE(gone_within(holder, 1000));
	EXPECT_TRUE(gone_within(kid, 1000));
	EXPECT_EQ(0, used_of(name));
	kill(holder, SIGKILL);
	kill(kid, SIGKILL);
	setuid_undo(dir, prog, pids);
	wsem_unlink(name);
}

/* Milliseconds since @t0 (CLOCK_MONOTONIC). */
static long ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 +
	       (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/* The live processes whose command name is @comm (up to @max in @pids). */
static int procs_named(const char *comm, pid_t *pids, int max)
{
	return procs_where(0, 0, comm, pids, max);
}

/*
 * kill -9 of "wsem run" at every moment of its start, a set-uid root
 * COMMAND run by an ordinary user: before the fork, between the fork and
 * the kill group's registration, between that and the exec, during the
 * set-uid exec (which clears PR_SET_PDEATHSIG) and after it.  A first
 * start measures how long COMMAND takes to run here (a few ms natively,
 * tens under TCG, hundreds with KASAN); then up to 60 rounds each kill
 * wsem 0 to 1.5 times that after it started; none may leave a process of
 * COMMAND's alive 1.2 s later, nor weight held.  Three that do end the
 * rounds, and so do 15 s (the harness gives a test 30 s).
 */
TEST(run_setuid_killed_at_start_leaves_nothing)
{
	int fd = access(DEV, F_OK) ? -1 : anon_handle(), i, j, n, left = 0;
	int ran = 0;
	char name[WSEM_NAME_MAX], dir[64], prog[96], pids[96];
	char *cmd[] = { prog, "--hold", pids, NULL };
	pid_t run, found[8];
	struct timespec t0;
	long start_ms;

	NEED_SET_KILL(fd);
	close(fd);
	make_sem(name, sizeof(name), "early");
	ASSERT_EQ(0, setuid_dirs(dir, prog, pids));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	run = start_run(name, USER_ID, cmd);
	ASSERT_LT(0, run);
	for (j = 0; j < 2000 && procs_named("hold", found, 8) == 0; j++)
		nap(5);
	start_ms = ms_since(&t0);
	ASSERT_GT(2000, j) TH_LOG("the set-uid COMMAND never ran");
	end_child(run);
	EXPECT_TRUE(gone_within(found[0], 1200));
	unlink(pids);
	TH_LOG("COMMAND runs %ld ms after wsem run starts", start_ms);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < 60 && left < 3 && ms_since(&t0) < 15000; i++) {
		run = start_run(name, USER_ID, cmd);
		ASSERT_LT(0, run);
		nap((int)((i * 17) % 60 * start_ms * 3 / 2 / 59));
		ran += procs_named("hold", found, 8) > 0;
		end_child(run);
		for (j = 0; j < 120 && procs_named("hold", found, 8) > 0; j++)
			nap(10);
		n = procs_named("hold", found, 8);
		if (n > 0) {
			left++;
			TH_LOG("round %d (killed after %ld ms): %d left, pid %d",
			       i, (i * 17) % 60 * start_ms * 3 / 2 / 59, n,
			       found[0]);
		}
		for (j = 0; j < n && j < 8; j++)
			kill(found[j], SIGKILL);
		unlink(pids);
	}
	TH_LOG("%d of %d rounds killed wsem once COMMAND ran", ran, i);
	/* the rounds reach both sides of the exec */
	EXPECT_LT(0, ran);
	EXPECT_GT(i, ran);
	EXPECT_EQ(0, left);
	for (j = 0; j < 100 && used_of(name) > 0; j++)
		nap(10);
	EXPECT_EQ(0, used_of(name));
	setuid_undo(dir, prog, pids);
	wsem_unlink(name);
}

/* The text of file @path (at most @len - 1 bytes) into @buf. */
static void read_text(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? 0 : read(fd, buf, len - 1);

	buf[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
}

/*
 * A SIGTERM to wsem's process group ("kill %1", "kill -TERM -PGID")
 * reaches COMMAND once, from wsem, not also from the sender (the two
 * would merge into one pending signal if they came close together: the
 * sender's pid tells); one to wsem's pid too.  COMMAND is this program
 * in --count mode.
 */
TEST(run_group_signal_once)
{
	int fd = access(DEV, F_OK) ? -1 : anon_handle(), i;
	char name[WSEM_NAME_MAX], exe[4096], count[64], ready[80];
	char want[64], got[256];
	char *cmd[] = { exe, "--count", count, NULL };
	ssize_t n;
	pid_t run;

	NEED_SET_KILL(fd);
	close(fd);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	ASSERT_LT(0, n);
	exe[n] = '\0';
	make_sem(name, sizeof(name), "once");
	snprintf(count, sizeof(count), "/tmp/lease.%d.count", getpid());
	snprintf(ready, sizeof(ready), "%s.ready", count);
	run = start_run(name, 0, cmd);
	ASSERT_LT(0, run);
	ASSERT_TRUE(appears(ready));
	ASSERT_EQ(0, kill(-run, SIGTERM));
	for (i = 0; i < 100 && lines_of(count) < 1; i++)
		nap(10);
	nap(300);
	snprintf(want, sizeof(want), "TERM %d\n", run);
	read_text(count, got, sizeof(got));
	EXPECT_STREQ(want, got);
	ASSERT_EQ(0, kill(run, SIGTERM));
	for (i = 0; i < 100 && lines_of(count) < 2; i++)
		nap(10);
	nap(300);
	snprintf(want, sizeof(want), "TERM %d\nTERM %d\n", run, run);
	read_text(count, got, sizeof(got));
	EXPECT_STREQ(want, got);
	EXPECT_TRUE(alive(run));
	end_child(run);
	unlink(count);
	unlink(ready);
	wsem_unlink(name);
}

/*
 * A shell in a session of its own on the terminal @slave, with "wsem
 * run" as its foreground job, as an interactive shell runs one: each wait
 * status of the job goes to @report; a stopped job is made the foreground
 * again and continued (fg).
 */
static void __attribute__((noreturn)) shell(const char *slave,
					    char *const argv[], int report)
{
	int fd, st, gate[2];
	pid_t job;
	char go;

	setsid();
	fd = open(slave, O_RDWR);
	if (fd < 0 || dup2(fd, 0) < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
		_exit(1);
	signal(SIGTTOU, SIG_IGN);
	if (pipe2(gate, O_CLOEXEC))
		_exit(1);
	job = fork();
	if (job == 0) {
		/* as a shell's child, once the shell made it the job */
		close(gate[1]);
		if (read(gate[0], &go, 1) != 1)
			_exit(98);
		signal(SIGTTOU, SIG_DFL);
		execvp("wsem", argv);
		_exit(99);
	}
	setpgid(job, job);
	tcsetpgrp(0, job);
	close(gate[0]);
	if (write(gate[1], "", 1) != 1)
		_exit(1);
	close(gate[1]);
	for (;;) {
		if (waitpid(job, &st, WUNTRACED) != job ||
		    write(report, &st, sizeof(st)) != sizeof(st))
			_exit(2);
		if (!WIFSTOPPED(st))
			for (;;)	/* the terminal stays ours */
				pause();
		tcsetpgrp(0, job);
		kill(-job, SIGCONT);
	}
}

/* The next wait status @report tells within 10 s, or -1. */
static int reported(int report)
{
	struct pollfd p = { .fd = report, .events = POLLIN };
	int st;

	if (poll(&p, 1, 10000) != 1 || read(report, &st, sizeof(st)) !=
	    sizeof(st))
		return -1;
	return st;
}

/* Wait up to 10 s for the foreground group of @master to be @pgrp. */
static bool foreground_is(int master, pid_t pgrp)
{
	int i;

	for (i = 0; i < 1000 && tcgetpgrp(master) != pgrp; i++)
		nap(10);
	return tcgetpgrp(master) == pgrp;
}

/*
 * On a terminal: COMMAND's group is the foreground one while it runs and
 * reads the terminal; ^Z stops the job (wsem's group) with the terminal
 * back at wsem's group, fg gives it to COMMAND again; ^C kills COMMAND
 * and wsem dies of SIGINT too; the terminal is wsem's group's after.
 */
TEST(run_on_a_terminal)
{
	int fd = access(DEV, F_OK) ? -1 : anon_handle(), master, p[2], st;
	char name[WSEM_NAME_MAX], script[512], ready[64], out[64], got[16];
	char *argv[] = { "wsem", "run", name, "--", "sh", "-c", script, NULL };
	pid_t sh_pid, job = 0, cmd = 0;
	const char *slave;
	FILE *f;

	NEED_SET_KILL(fd);
	close(fd);
	make_sem(name, sizeof(name), "tty");
	snprintf(ready, sizeof(ready), "/tmp/lease.%d.tty", getpid());
	snprintf(out, sizeof(out), "/tmp/lease.%d.out", getpid());
	master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	ASSERT_LE(0, master);
	ASSERT_EQ(0, grantpt(master));
	ASSERT_EQ(0, unlockpt(master));
	slave = ptsname(master);
	ASSERT_NE(NULL, slave);
	for (int round = 0; round < 2; round++) {
		snprintf(script, sizeof(script), round ?
			 "touch %s; sleep 600" :
			 "touch %s; read x && echo \"$x\" >%s", ready, out);
		ASSERT_EQ(0, pipe2(p, O_CLOEXEC));
		sh_pid = fork();
		if (sh_pid == 0)
			shell(slave, argv, p[1]);
		ASSERT_LT(0, sh_pid);
		close(p[1]);
		ASSERT_TRUE(appears(ready));
		procs_with(0, sh_pid, &job, 1);
		procs_with(0, job, &cmd, 1);
		ASSERT_LT(0, cmd);
		EXPECT_TRUE(foreground_is(master, cmd));
		if (!round) {
			ASSERT_EQ(1, write(master, "\032", 1));	/* ^Z */
			st = reported(p[0]);
			EXPECT_TRUE(WIFSTOPPED(st) &&
				    WSTOPSIG(st) == SIGTSTP)
				TH_LOG("the job did not stop: %#x", st);
			EXPECT_TRUE(foreground_is(master, cmd));
			ASSERT_EQ(6, write(master, "hello\n", 6));
			st = reported(p[0]);
			EXPECT_TRUE(WIFEXITED(st) && !WEXITSTATUS(st))
				TH_LOG("wsem ended with %#x", st);
			f = fopen(out, "r");
			ASSERT_NE(NULL, f);
			EXPECT_NE(NULL, fgets(got, sizeof(got), f));
			fclose(f);
			EXPECT_STREQ("hello\n", got);
		} else {
			ASSERT_EQ(1, write(master, "\003", 1));	/* ^C */
			st = reported(p[0]);
			EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGINT)
				TH_LOG("wsem ended with %#x", st);
		}
		EXPECT_EQ(job, tcgetpgrp(master));
		EXPECT_FALSE(alive(cmd));
		end_child(sh_pid);
		close(p[0]);
		unlink(ready);
		unlink(out);
		cmd = 0;
	}
	close(master);
	wsem_unlink(name);
}

TEST_HARNESS_MAIN
