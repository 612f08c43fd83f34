/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers that more than one selftest needs: passing a descriptor over a
 * unix socket, a raw WSEM_IOC_OPEN and a stat as a value, one-line files
 * in /proc, /sys and cgroupfs, "key: value" text (fdinfo, a wsemfs
 * handle's read), the monotonic clock, a seeded random generator, numbers
 * from the environment, tracefs, WSEM_IOC_SET_KILL, and a forked holder
 * with a child (a sharer of its handle, or its kill group).  All static
 * inline, so a test that uses some of them builds without warnings about
 * the others.
 */
#ifndef WSEM_SELFTEST_UTIL_H
#define WSEM_SELFTEST_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <wsem.h>

#define TRACEFS		"/sys/kernel/tracing"
#define TRACEFS_MAGIC	0x74726163

/* Send @fd over the unix socket @sock (never SIGPIPE); 0, or -1 and errno. */
static inline int send_fd(int sock, int fd, int flags)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	char byte = 'F';
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cm;

	memset(cbuf, 0, sizeof(cbuf));
	cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(sock, &msg, MSG_NOSIGNAL | flags) == 1 ? 0 : -1;
}

/* Receive one descriptor sent by send_fd(), close-on-exec; or -1. */
static inline int recv_fd(int sock)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	char byte;
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cm;
	int fd;

	if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != 1)
		return -1;
	cm = CMSG_FIRSTHDR(&msg);
	if (!cm || cm->cmsg_type != SCM_RIGHTS) {
		errno = EBADMSG;
		return -1;
	}
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

/* Write @val to the file @path in one write(); 0, or -1 and errno. */
static inline int write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;
	int err;

	if (fd < 0)
		return -1;
	n = write(fd, val, strlen(val));
	err = errno;
	close(fd);
	errno = err;
	return n == (ssize_t)strlen(val) ? 0 : -1;
}

/* The file @path (up to @len - 1 bytes), NUL-terminated; 0 or -1. */
static inline int read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = 0;
	return 0;
}

/* The number a file (a module parameter) holds, or -1 if unreadable. */
static inline long long read_num(const char *path)
{
	char buf[64];

	if (read_file(path, buf, sizeof(buf)))
		return -1;
	return strtoll(buf, NULL, 10);
}

/*
 * A test build's park knobs (module/params.c): the parked waiters and gangs
 * not yet freed, and the pause of the next one that parks.
 */
#define PARKED_PARAM	"/sys/module/wsem/parameters/test_parked"
#define PARK_DELAY	"/sys/module/wsem/parameters/test_park_delay_ms"

/* Parked waiters and gangs not yet freed (a test build's count), or -1. */
static inline int parked_count(void)
{
	return (int)read_num(PARKED_PARAM);
}

/* Disarm a park pause an ASSERT left armed: it would hold the next parker. */
static inline void park_pause_disarm(void)
{
	if (!access(PARK_DELAY, W_OK))
		write_file(PARK_DELAY, "0");
}

/* The value of "@key:" in "key: value" lines, blanks trimmed; 0 or -1. */
static inline int line_get(const char *text, const char *key, char *val,
			   size_t len)
{
	size_t klen = strlen(key), n;
	const char *p = text, *end;

	while (p && *p) {
		if (!strncmp(p, key, klen) && p[klen] == ':') {
			p += klen + 1;
			while (*p == ' ' || *p == '\t')
				p++;
			end = strchrnul(p, '\n');
			n = end - p;
			if (n >= len)
				n = len - 1;
			memcpy(val, p, n);
			val[n] = 0;
			return 0;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return -1;
}

/* The value of "@key:" in @fd's /proc/self/fdinfo; 0 or -1. */
static inline int fdinfo_get(int fd, const char *key, char *val, size_t len)
{
	char path[64], buf[2048];

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	if (read_file(path, buf, sizeof(buf)))
		return -1;
	return line_get(buf, key, val, len);
}

/* ... as a number, or -1. */
static inline long long fdinfo_num(int fd, const char *key)
{
	char val[32];

	if (fdinfo_get(fd, key, val, sizeof(val)))
		return -1;
	return strtoll(val, NULL, 10);
}

#define NSEC		1000000000LL

/* @clock in nanoseconds (CLOCK_BOOTTIME for LEND's deadlines). */
static inline int64_t clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return ts.tv_sec * NSEC + ts.tv_nsec;
}

/* CLOCK_MONOTONIC in nanoseconds. */
static inline int64_t now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

#define RTC_ALARM	"/sys/class/rtc/rtc0/wakealarm"

/*
 * Suspend the machine to RAM (ACPI S3) for about @secs seconds, woken by
 * the RTC's alarm.  Not to idle: in QEMU the RTC's alarm wakes S3 (through
 * the firmware) but not s2idle, which would sleep until the guest is
 * killed.  0 once resumed, or -1 with errno; ENODEV: no S3 or no RTC alarm
 * here (a kernel without CONFIG_SUSPEND, as the debug kernel's).
 */
static inline int suspend_to_ram(int secs)
{
	char modes[128], when[16];

	if (read_file("/sys/power/mem_sleep", modes, sizeof(modes)) ||
	    !strstr(modes, "deep") || access(RTC_ALARM, W_OK)) {
		errno = ENODEV;
		return -1;
	}
	snprintf(when, sizeof(when), "+%d", secs);
	if (write_file("/sys/power/mem_sleep", "deep") ||
	    write_file(RTC_ALARM, "0") || write_file(RTC_ALARM, when))
		return -1;
	return write_file("/sys/power/state", "mem");
}

/*
 * A handle on a new semaphore made by WSEM_IOC_OPEN with @flags (ANON,
 * CREAT, LOANS, CHILD, ...), @capacity, mode 0666 and @parent_fd as they
 * are; @name NULL for none.  The handle, or -1 with errno.
 */
static inline int open_with(const char *name, uint64_t flags,
			   uint64_t capacity, int parent_fd)
{
	struct wsem_open_args a = {
		.size = sizeof(a),
		.flags = flags,
		.capacity = capacity,
		.mode = 0666,
		.parent_fd = parent_fd,
	};
	int fd = open("/dev/wsem", O_RDWR | O_CLOEXEC), err;

	if (fd < 0)
		return -1;
	if (name)
		snprintf(a.name, sizeof(a.name), "%s", name);
	if (!ioctl(fd, WSEM_IOC_OPEN, &a))
		return fd;
	err = errno;
	close(fd);
	errno = err;
	return -1;
}

/* The stat of handle @fd, or all bits set if it fails. */
static inline struct wsem_stat stat_of(int fd)
{
	struct wsem_stat st;

	if (wsem_stat(fd, &st))
		memset(&st, 0xff, sizeof(st));
	return st;
}

/*
 * Wait (10 s at most) until the semaphore of handle @fd has @n waiters, as
 * the kernel counts them; 0, or -1 (also when the stat fails).
 */
static inline int wait_waiters(int fd, uint64_t n)
{
	int64_t end = now_ns() + 10 * NSEC;
	struct wsem_stat st;

	do {
		if (wsem_stat(fd, &st))
			return -1;
		if (st.waiters == n)
			return 0;
		usleep(1000);
	} while (now_ns() < end);
	return -1;
}

/* voluntary_ctxt_switches of this process's thread @tid, or -1. */
static inline long long nvcsw(pid_t tid)
{
	char path[64], buf[4096], *p;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", tid);
	if (read_file(path, buf, sizeof(buf)))
		return -1;
	p = strstr(buf, "voluntary_ctxt_switches:");
	return p ? strtoll(p + 24, NULL, 10) : -1;
}

/* Is this process's thread @tid asleep (state S)?  False if unknown. */
static inline bool thread_sleeping(pid_t tid)
{
	char path[64], buf[512], *p;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	if (read_file(path, buf, sizeof(buf)))
		return false;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] == 'S';
}

/* splitmix64: small, fast, and the same everywhere for one seed. */
struct rng {
	uint64_t s;
};

static inline uint64_t rnd(struct rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static inline uint64_t below(struct rng *r, uint64_t n)
{
	return rnd(r) % n;
}

static inline bool chance(struct rng *r, unsigned int percent)
{
	return below(r, 100) < percent;
}

/* The environment variable @name as a number (0x... allowed), else @def. */
static inline uint64_t env_u64(const char *name, uint64_t def)
{
	const char *v = getenv(name);

	return v && *v ? strtoull(v, NULL, 0) : def;
}

/*
 * Tracefs: ensure it is mounted, with options/record-cmd off; 0 or -1.
 * With record-cmd on (the default), enabling the first event hooks the
 * scheduler's sched_switch and sched_wakeup tracepoints to save command
 * names, and so live-patches their sites in the scheduler's own code on
 * every CPU: ttwu_do_activate(), where a 6.12 guest under TCG once died
 * of an int3 that the patching no longer claimed.  Our tests read pids,
 * not names: with it off, enabling wsem's events patches only wsem's code.
 */
static inline int tracefs(void)
{
	struct statfs sfs;

	if ((statfs(TRACEFS, &sfs) || sfs.f_type != TRACEFS_MAGIC) &&
	    mount("tracefs", TRACEFS, "tracefs", 0, NULL))
		return -1;
	return write_file(TRACEFS "/options/record-cmd", "0");
}

/* WSEM_IOC_SET_KILL of @pgid on @fd: 0, or the errno. */
static inline int set_kill(int fd, pid_t pgid)
{
	struct wsem_kill_args k = { .size = sizeof(k), .pgid = pgid };

	return ioctl(fd, WSEM_IOC_SET_KILL, &k) ? errno : 0;
}

/*
 * A forked holder of @weight on @fd's semaphore, through a handle of its
 * own (its copy of @lender closed), which forks a child that pauses and
 * tells the caller its pid in *@child; the holder's pid, or -1.  Without
 * @kill_group the child shares the holding handle.  With it the child
 * leads a process group of its own, named on the handle by
 * WSEM_IOC_SET_KILL, and has closed its copy (as COMMAND's exec closes
 * `wsem run`'s close-on-exec handle): no sharer.  With @sock >= 0 the
 * holder then sends the handle into the unix socket @sock, which keeps it
 * in its queue, and closes it: no file table has it, and nothing closes it
 * until the socket goes.  Both pause until killed.
 */
static inline pid_t fork_holder_and_child(int fd, int lender, uint64_t weight,
					  bool kill_group, int sock,
					  pid_t *child)
{
	int ready[2];
	pid_t a, b;

	if (pipe2(ready, O_CLOEXEC))
		return -1;
	a = fork();
	if (!a) {
		close(ready[0]);
		close(lender);
		fd = wsem_reopen(fd, O_CLOEXEC);
		if (fd < 0 || wsem_acquire(fd, weight))
			_exit(1);
		b = fork();
		if (b < 0)
			_exit(1);
		if (!b) {
			if (kill_group) {
				close(fd);
				setpgid(0, 0);
			}
			for (;;)
				pause();
		}
		if (kill_group && (setpgid(b, b) || set_kill(fd, b)))
			_exit(1);
		if (sock >= 0 && (send_fd(sock, fd, 0) || close(fd)))
			_exit(1);
		if (write(ready[1], &b, sizeof(b)) != sizeof(b))
			_exit(1);
		for (;;)
			pause();
	}
	close(ready[1]);
	if (a > 0 && read(ready[0], child, sizeof(*child)) != sizeof(*child)) {
		kill(a, SIGKILL);
		waitpid(a, NULL, 0);
		a = -1;
	}
	close(ready[0]);
	return a;
}

#endif
