// SPDX-License-Identifier: GPL-2.0
/*
 * The raw ioctl ABI of <linux/wsem.h>: command numbers, user pointers,
 * versioned struct sizes, flags and padding, and the fdinfo lines.  These
 * tests speak ioctl() directly, since the point is what libwsem hides.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>

#include <wsem.h>

#include "kselftest_harness.h"

#define DEV "/dev/wsem"
#define CAP 7
#define BUF_SIZE 8192	/* larger than any struct, and than a page */

FIXTURE(abi) {
	bool skip;	/* no /dev/wsem; 6.1 runs the body anyway: it returns */
	char name[WSEM_NAME_MAX];	/* this test's semaphore, capacity CAP */
	char tmp[WSEM_NAME_MAX];	/* a name a test may create and unlink */
	int fd;		/* a handle bound to it */
	int raw;	/* an unbound handle */
	long page;	/* the page size */
	char *ro;	/* a page a test fills, then makes read-only */
	char buf[BUF_SIZE] __attribute__((aligned(8)));	/* an argument */
};

FIXTURE_SETUP(abi)
{
	struct wsem_open_args args = {
		.size = sizeof(args),
		.flags = WSEM_OPEN_CREAT | WSEM_OPEN_EXCL,
		.capacity = CAP,
		.mode = 0600,
	};

	self->fd = -1;
	self->raw = -1;
	self->page = sysconf(_SC_PAGESIZE);
	snprintf(self->name, sizeof(self->name), "abi.%d.%s", getpid(),
		 _metadata->name);
	snprintf(self->tmp, sizeof(self->tmp), "abi.%d.tmp", getpid());
	if (access(DEV, R_OK | W_OK)) {
		self->skip = true;
		SKIP(return, DEV " is missing");
	}
	self->ro = mmap(NULL, self->page, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->ro);
	self->raw = open(DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->raw);
	self->fd = open(DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	strcpy(args.name, self->name);
	ASSERT_EQ(0, ioctl(self->fd, WSEM_IOC_OPEN, &args));
}

FIXTURE_TEARDOWN(abi)
{
	if (self->skip)
		return;
	EXPECT_EQ(0, munmap(self->ro, self->page));
	EXPECT_EQ(0, close(self->raw));
	EXPECT_EQ(0, close(self->fd));
	EXPECT_EQ(0, wsem_unlink(self->name));
	if (wsem_unlink(self->tmp))
		EXPECT_EQ(ENOENT, errno);
}

/* Every command, with whether it needs the bound or the unbound handle. */
static const struct cmd {
	const char *what;
	unsigned long nr;
	bool unbound;
} cmds[] = {
	{ "OPEN", WSEM_IOC_OPEN, true },
	{ "REOPEN", WSEM_IOC_REOPEN, false },
	{ "ACQUIRE", WSEM_IOC_ACQUIRE, false },
	{ "RELEASE", WSEM_IOC_RELEASE, false },
	{ "SET_CAPACITY", WSEM_IOC_SET_CAPACITY, false },
	{ "STAT", WSEM_IOC_STAT, false },
	{ "UNLINK", WSEM_IOC_UNLINK, false },
	{ "LIST", WSEM_IOC_LIST, false },
	{ "ASYNC", WSEM_IOC_ASYNC, false },
	{ "WAIT_IDLE", WSEM_IOC_WAIT_IDLE, false },
	{ "SET_KILL", WSEM_IOC_SET_KILL, false },
};

/*
 * The commands whose argument is a struct that starts with its size.  All
 * but STAT's carry input after it: a newer binary's unknown input must be
 * zero, while a larger struct wsem_stat is only more room for output.
 */
static const struct sized {
	const char *what;
	unsigned long nr;
	__u64 ver0;
	bool input;
} sized[] = {
	{ "OPEN", WSEM_IOC_OPEN, WSEM_OPEN_SIZE_VER0, true },
	{ "ACQUIRE", WSEM_IOC_ACQUIRE, WSEM_ACQUIRE_SIZE_VER0, true },
	{ "STAT", WSEM_IOC_STAT, WSEM_STAT_SIZE_VER0, false },
	{ "UNLINK", WSEM_IOC_UNLINK, WSEM_UNLINK_SIZE_VER0, true },
	{ "LIST", WSEM_IOC_LIST, WSEM_LIST_SIZE_VER0, true },
	{ "WAIT_IDLE", WSEM_IOC_WAIT_IDLE, WSEM_ACQUIRE_SIZE_VER0, true },
	{ "SET_KILL", WSEM_IOC_SET_KILL, WSEM_KILL_SIZE_VER0, true },
};

/* The handle @c is issued on. */
static int cmd_fd(FIXTURE_DATA(abi) *self, const struct cmd *c)
{
	return c->unbound ? self->raw : self->fd;
}

/*
 * Issue sized command @s with self->buf as its argument, claiming @size.
 * The caller has zeroed self->buf and set any tail; this fills in a valid
 * request (anonymous open of a fresh handle, try-acquire 1 then release,
 * stat, unlink of a name just created, list of nothing, no kill target)
 * and undoes it.
 * Returns the ioctl's result with its errno.
 */
static int sized_ioctl(FIXTURE_DATA(abi) *self, const struct sized *s,
		       __u64 size)
{
	struct wsem_acquire_args *acq = (void *)self->buf;
	struct wsem_unlink_args *unl = (void *)self->buf;
	struct wsem_open_args *opn = (void *)self->buf;
	struct wsem_list_args *lst = (void *)self->buf;
	int fd = self->fd, ret, err, tmp;
	__u64 one = 1;

	*(__u64 *)self->buf = size;
	switch (s->nr) {
	case WSEM_IOC_OPEN:
		fd = open(DEV, O_RDWR | O_CLOEXEC);
		opn->flags = WSEM_OPEN_ANON;
		opn->capacity = 1;
		break;
	case WSEM_IOC_ACQUIRE:
		acq->weight = 1;
		acq->flags = WSEM_ACQUIRE_TRY;
		break;
	case WSEM_IOC_UNLINK:
		tmp = wsem_open(self->tmp, O_CREAT | O_CLOEXEC, 0600, 1);
		if (tmp >= 0)
			close(tmp);
		strcpy(unl->name, self->tmp);
		break;
	case WSEM_IOC_LIST:
		lst->stat_size = sizeof(struct wsem_stat);
		break;
	case WSEM_IOC_WAIT_IDLE:
		acq->flags = WSEM_ACQUIRE_TRY;
		break;
	}
	ret = ioctl(fd, s->nr, self->buf);
	err = errno;
	if (s->nr == WSEM_IOC_OPEN)
		close(fd);
	if (s->nr == WSEM_IOC_ACQUIRE && !ret)
		ioctl(self->fd, WSEM_IOC_RELEASE, &one);
	if (s->nr == WSEM_IOC_UNLINK && ret)
		wsem_unlink(self->tmp);
	errno = err;
	return ret;
}

/* Read "@key:" from @fd's fdinfo into @val, blanks trimmed; 0 or -1. */
static int fdinfo_get(int fd, const char *key, char *val, size_t len)
{
	char path[64], text[4096], *line, *end;
	size_t klen = strlen(key);
	ssize_t n;
	int info;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	info = open(path, O_RDONLY | O_CLOEXEC);
	if (info < 0)
		return -1;
	n = read(info, text, sizeof(text) - 1);
	close(info);
	if (n < 0)
		return -1;
	text[n] = '\0';
	for (line = text; line && *line; line = end ? end + 1 : NULL) {
		end = strchr(line, '\n');
		if (end)
			*end = '\0';
		if (strncmp(line, key, klen) || line[klen] != ':')
			continue;
		line += klen + 1;
		line += strspn(line, " \t");
		snprintf(val, len, "%s", line);
		return 0;
	}
	return -1;
}

/* Neither unused numbers on our magic nor ours on nearby magics are ours. */
TEST_F(abi, unknown_cmd_enotty)
{
	const unsigned long bad[] = {
		_IO(WSEM_IOC_MAGIC, 0x00),
		_IOWR(WSEM_IOC_MAGIC, 0x00, struct wsem_stat),
		_IOWR(WSEM_IOC_MAGIC, 0x10, struct wsem_stat),
		_IOW(WSEM_IOC_MAGIC, 0x11, __u64),
		_IOWR(WSEM_IOC_MAGIC, 0xff, struct wsem_list_args),
		_IOW(WSEM_IOC_MAGIC - 1, 0x01, struct wsem_open_args),
		_IOWR(WSEM_IOC_MAGIC - 1, 0x06, struct wsem_stat),
		_IOW(WSEM_IOC_MAGIC + 1, 0x03, struct wsem_acquire_args),
		_IOWR(WSEM_IOC_MAGIC + 1, 0x08, struct wsem_list_args),
	};
	unsigned int i;

	if (self->skip)
		return;
	memset(self->buf, 0, sizeof(self->buf));
	*(__u64 *)self->buf = sizeof(struct wsem_stat);
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		EXPECT_EQ(-1, ioctl(self->fd, bad[i], self->buf))
			TH_LOG("cmd %#lx on a bound handle", bad[i]);
		EXPECT_EQ(ENOTTY, errno) TH_LOG("cmd %#lx", bad[i]);
		EXPECT_EQ(-1, ioctl(self->raw, bad[i], self->buf))
			TH_LOG("cmd %#lx on an unbound handle", bad[i]);
		EXPECT_EQ(ENOTTY, errno) TH_LOG("cmd %#lx", bad[i]);
	}
}

/* A struct may grow without a new command: the size bits are ignored. */
TEST_F(abi, cmd_size_bits_ignored)
{
	const unsigned long stat0 = _IOC(_IOC_READ | _IOC_WRITE,
		WSEM_IOC_MAGIC, _IOC_NR(WSEM_IOC_STAT), 0);
	const unsigned long stat_big = _IOC(_IOC_READ | _IOC_WRITE,
		WSEM_IOC_MAGIC, _IOC_NR(WSEM_IOC_STAT), 512);
	struct wsem_stat st = { .size = sizeof(st) };

	if (self->skip)
		return;
	ASSERT_EQ(0, ioctl(self->fd, stat0, &st));
	EXPECT_EQ(CAP, st.capacity);
	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	ASSERT_EQ(0, ioctl(self->fd, stat_big, &st));
	EXPECT_EQ(CAP, st.capacity);
}

TEST_F(abi, null_pointer_efault)
{
	struct wsem_stat st = { .size = sizeof(st) };
	unsigned int i;

	if (self->skip)
		return;
	for (i = 0; i < ARRAY_SIZE(cmds); i++) {
		EXPECT_EQ(-1, ioctl(cmd_fd(self, &cmds[i]), cmds[i].nr, NULL))
			TH_LOG("%s", cmds[i].what);
		EXPECT_EQ(EFAULT, errno) TH_LOG("%s", cmds[i].what);
	}
	/* nothing changed */
	ASSERT_EQ(0, ioctl(self->fd, WSEM_IOC_STAT, &st));
	EXPECT_EQ(CAP, st.capacity);
	EXPECT_EQ(0, st.used);
	EXPECT_EQ(-1, ioctl(self->raw, WSEM_IOC_STAT, &st));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(abi, unmapped_pointer_efault)
{
	struct wsem_stat st = { .size = sizeof(st) };
	unsigned int i;
	void *hole;

	if (self->skip)
		return;
	/* nothing below maps memory, so the hole stays a hole */
	hole = mmap(NULL, self->page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
		    -1, 0);
	ASSERT_NE(MAP_FAILED, hole);
	ASSERT_EQ(0, munmap(hole, self->page));
	for (i = 0; i < ARRAY_SIZE(cmds); i++) {
		EXPECT_EQ(-1, ioctl(cmd_fd(self, &cmds[i]), cmds[i].nr, hole))
			TH_LOG("%s", cmds[i].what);
		EXPECT_EQ(EFAULT, errno) TH_LOG("%s", cmds[i].what);
	}
	ASSERT_EQ(0, ioctl(self->fd, WSEM_IOC_STAT, &st));
	EXPECT_EQ(CAP, st.capacity);
	EXPECT_EQ(0, st.used);
}

/*
 * An acquire's struct ends where its size says, at the end of a page before
 * a hole: a short one (VER0) is read without a byte past it, and granted;
 * ours whole there is granted; ours cut by the hole is EFAULT and takes
 * nothing.  The common size is read field by field in one user access
 * window (main.c), which must look at the size before anything else.
 */
TEST_F(abi, acquire_struct_at_a_page_end)
{
	struct wsem_acquire_args a = { .size = WSEM_ACQUIRE_SIZE_VER0,
				       .weight = 1 };
	struct wsem_stat st = { .size = sizeof(st) };
	char *two;

	if (self->skip)
		return;
	two = mmap(NULL, 2 * self->page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, two);
	ASSERT_EQ(0, munmap(two + self->page, self->page));

	memcpy(two + self->page - WSEM_ACQUIRE_SIZE_VER0, &a,
	       WSEM_ACQUIRE_SIZE_VER0);
	EXPECT_EQ(0, ioctl(self->fd, WSEM_IOC_ACQUIRE,
			   two + self->page - WSEM_ACQUIRE_SIZE_VER0));

	a.size = sizeof(a);
	memcpy(two + self->page - sizeof(a), &a, sizeof(a));
	EXPECT_EQ(0, ioctl(self->fd, WSEM_IOC_ACQUIRE,
			   two + self->page - sizeof(a)));

	memcpy(two + self->page - WSEM_ACQUIRE_SIZE_VER0, &a,
	       WSEM_ACQUIRE_SIZE_VER0);
	EXPECT_EQ(-1, ioctl(self->fd, WSEM_IOC_ACQUIRE,
			    two + self->page - WSEM_ACQUIRE_SIZE_VER0));
	EXPECT_EQ(EFAULT, errno);

	ASSERT_EQ(0, ioctl(self->fd, WSEM_IOC_STAT, &st));
	EXPECT_EQ(2, st.used);
	EXPECT_EQ(0, munmap(two, self->page));
}

/* Output that cannot be written is EFAULT: stat, list's header, its array. */
TEST_F(abi, readonly_output_efault)
{
	struct wsem_list_args args = {
		.size = sizeof(args),
		.stats = (uintptr_t)self->ro,
		.count = 1,
		.stat_size = sizeof(struct wsem_stat),
	};
	struct wsem_stat st = { .size = sizeof(st) };

	if (self->skip)
		return;
	memcpy(self->ro, &st, sizeof(st));
	ASSERT_EQ(0, mprotect(self->ro, self->page, PROT_READ));
	EXPECT_EQ(-1, ioctl(self->fd, WSEM_IOC_STAT, self->ro));
	EXPECT_EQ(EFAULT, errno);

	/* our semaphore exists, so the list has an entry to write */
	EXPECT_EQ(-1, ioctl(self->raw, WSEM_IOC_LIST, &args));
	EXPECT_EQ(EFAULT, errno);

	ASSERT_EQ(0, mprotect(self->ro, self->page, PROT_READ | PROT_WRITE));
	args.stats = 0;
	args.count = 0;
	memcpy(self->ro, &args, sizeof(args));
	ASSERT_EQ(0, mprotect(self->ro, self->page, PROT_READ));
	EXPECT_EQ(-1, ioctl(self->raw, WSEM_IOC_LIST, self->ro));
	EXPECT_EQ(EFAULT, errno);
}

TEST_F(abi, size_below_ver0_einval)
{
	unsigned int i;

	if (self->skip)
		return;
	for (i = 0; i < ARRAY_SIZE(sized); i++) {
		memset(self->buf, 0, sizeof(self->buf));
		EXPECT_EQ(-1, sized_ioctl(self, &sized[i], sized[i].ver0 - 1))
			TH_LOG("%s", sized[i].what);
		EXPECT_EQ(EINVAL, errno) TH_LOG("%s", sized[i].what);
		memset(self->buf, 0, sizeof(self->buf));
		EXPECT_EQ(-1, sized_ioctl(self, &sized[i], 0))
			TH_LOG("%s size 0", sized[i].what);
		EXPECT_EQ(EINVAL, errno) TH_LOG("%s size 0", sized[i].what);
	}
}

TEST_F(abi, list_stat_size_below_ver0_einval)
{
	struct wsem_stat st[2];
	struct wsem_list_args args = {
		.size = sizeof(args),
		.stats = (uintptr_t)st,
		.count = 1,
		.stat_size = WSEM_STAT_SIZE_VER0 - 8,
	};

	if (self->skip)
		return;
	EXPECT_EQ(-1, ioctl(self->raw, WSEM_IOC_LIST, &args));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(abi, exact_size_ok)
{
	unsigned int i;

	if (self->skip)
		return;
	for (i = 0; i < ARRAY_SIZE(sized); i++) {
		memset(self->buf, 0, sizeof(self->buf));
		EXPECT_EQ(0, sized_ioctl(self, &sized[i], sized[i].ver0))
			TH_LOG("%s: %s", sized[i].what, strerror(errno));
	}
}

/* A newer binary's larger struct works while its extra fields are zero. */
TEST_F(abi, larger_zero_tail_ok)
{
	unsigned int i;

	if (self->skip)
		return;
	for (i = 0; i < ARRAY_SIZE(sized); i++) {
		memset(self->buf, 0, sizeof(self->buf));
		EXPECT_EQ(0, sized_ioctl(self, &sized[i], 256))
			TH_LOG("%s: %s", sized[i].what, strerror(errno));
	}
}

TEST_F(abi, larger_nonzero_tail_e2big)
{
	unsigned int i;

	if (self->skip)
		return;
	for (i = 0; i < ARRAY_SIZE(sized); i++) {
		if (!sized[i].input)
			continue;
		memset(self->buf, 0, sizeof(self->buf));
		self->buf[255] = 1;
		EXPECT_EQ(-1, sized_ioctl(self, &sized[i], 256))
			TH_LOG("%s", sized[i].what);
		EXPECT_EQ(E2BIG, errno) TH_LOG("%s", sized[i].what);
	}
}

TEST_F(abi, size_above_page_e2big)
{
	unsigned int i;

	if (self->skip)
		return;
	ASSERT_GE(BUF_SIZE, self->page + 8);
	for (i = 0; i < ARRAY_SIZE(sized); i++) {
		memset(self->buf, 0, sizeof(self->buf));
		EXPECT_EQ(-1, sized_ioctl(self, &sized[i], self->page + 8))
			TH_LOG("%s", sized[i].what);
		EXPECT_EQ(E2BIG, errno) TH_LOG("%s", sized[i].what);
	}
}

/* Output goes up to the smaller size; size says how much was written. */
TEST_F(abi, stat_larger_struct_output)
{
	struct wsem_stat *st = (void *)self->buf;

	if (self->skip)
		return;
	memset(self->buf, 0, sizeof(self->buf));
	st->size = 256;
	ASSERT_EQ(0, ioctl(self->fd, WSEM_IOC_STAT, self->buf));
	EXPECT_EQ(sizeof(*st), st->size);
	EXPECT_EQ(CAP, st->capacity);
	EXPECT_EQ(CAP, st->available);
	EXPECT_EQ(0, st->__pad);
	EXPECT_STREQ(self->name, st->name);
	EXPECT_EQ(0, self->buf[sizeof(*st)]);
	EXPECT_EQ(0, self->buf[255]);
}

TEST_F(abi, open_unknown_flags_einval)
{
	const __u64 bad[] = { 1ULL << 5, 1ULL << 31, 1ULL << 63 };
	struct wsem_open_args args = {
		.size = sizeof(args),
		.capacity = 1,
		.mode = 0600,
	};
	unsigned int i;

	if (self->skip)
		return;
	strcpy(args.name, self->tmp);
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		args.flags = WSEM_OPEN_CREAT | bad[i];
		EXPECT_EQ(-1, ioctl(self->raw, WSEM_IOC_OPEN, &args));
		EXPECT_EQ(EINVAL, errno);
	}
	/* nothing was created, and the handle is still unbound */
	EXPECT_EQ(-1, wsem_unlink(self->tmp));
	EXPECT_EQ(ENOENT, errno);
	args.flags = WSEM_OPEN_ANON;
	args.name[0] = '\0';
	EXPECT_EQ(0, ioctl(self->raw, WSEM_IOC_OPEN, &args));
}

TEST_F(abi, open_nonzero_pad_einval)
{
	struct wsem_open_args args = {
		.size = sizeof(args),
		.flags = WSEM_OPEN_ANON,
		.capacity = 1,
		.__pad = 1,
	};

	if (self->skip)
		return;
	EXPECT_EQ(-1, ioctl(self->raw, WSEM_IOC_OPEN, &args));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(abi, open_mode_above_0777_einval)
{
	const __u32 bad[] = { 01000, 02600, 04600, 0100600 };
	struct wsem_open_args args = {
		.size = sizeof(args),
		.flags = WSEM_OPEN_CREAT,
		.capacity = 1,
	};
	unsigned int i;

	if (self->skip)
		return;
	strcpy(args.name, self->tmp);
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		args.mode = bad[i];
		EXPECT_EQ(-1, ioctl(self->raw, WSEM_IOC_OPEN, &args))
			TH_LOG("mode %#o", bad[i]);
		EXPECT_EQ(EINVAL, errno) TH_LOG("mode %#o", bad[i]);
	}
}

/* ANON excludes CREAT, EXCL and a name. */
TEST_F(abi, open_anon_with_named_fields_einval)
{
	struct wsem_open_args args = {
		.size = sizeof(args),
		.capacity = 1,
	};

	if (self->skip)
		return;
	args.flags = WSEM_OPEN_ANON | WSEM_OPEN_CREAT;
	EXPECT_EQ(-1, ioctl(self->raw, WSEM_IOC_OPEN, &args));
	EXPECT_EQ(EINVAL, errno);
	args.flags = WSEM_OPEN_ANON | WSEM_OPEN_EXCL;
	EXPECT_EQ(-1, ioctl(self->raw, WSEM_IOC_OPEN, &args));
	EXPECT_EQ(EINVAL, errno);
	args.flags = WSEM_OPEN_ANON;
	strcpy(args.name, self->tmp);
	EXPECT_EQ(-1, ioctl(self->raw, WSEM_IOC_OPEN, &args));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, wsem_unlink(self->tmp));
	EXPECT_EQ(ENOENT, errno);
}

TEST_F(abi, open_bound_handle_ebusy)
{
	struct wsem_open_args args = {
		.size = sizeof(args),
		.flags = WSEM_OPEN_ANON,
		.capacity = 1,
	};
	struct wsem_stat st = { .size = sizeof(st) };

	if (self->skip)
		return;
	EXPECT_EQ(-1, ioctl(self->fd, WSEM_IOC_OPEN, &args));
	EXPECT_EQ(EBUSY, errno);
	/* still bound to the first one */
	ASSERT_EQ(0, ioctl(self->fd, WSEM_IOC_STAT, &st));
	EXPECT_STREQ(self->name, st.name);
}

TEST_F(abi, acquire_unknown_flags_einval)
{
	struct wsem_acquire_args args = {
		.size = sizeof(args),
		.weight = 1,
		.flags = 1ULL << 4,
	};
	struct wsem_stat st = { .size = sizeof(st) };

	if (self->skip)
		return;
	EXPECT_EQ(-1, ioctl(self->fd, WSEM_IOC_ACQUIRE, &args));
	EXPECT_EQ(EINVAL, errno);
	args.flags = WSEM_ACQUIRE_TRY | (1ULL << 63);
	EXPECT_EQ(-1, ioctl(self->fd, WSEM_IOC_ACQUIRE, &args));
	EXPECT_EQ(EINVAL, errno);
	ASSERT_EQ(0, ioctl(self->fd, WSEM_IOC_STAT, &st));
	EXPECT_EQ(0, st.used);
}

/*
 * Flags that make no sense together, a clock without a deadline, a clock
 * the kernel does not take, padding: EINVAL, on acquire and on idle
 * waits, and nothing is queued or held.
 */
TEST_F(abi, acquire_bad_combinations_einval)
{
	const struct {
		__u64 flags;
		__u32 clockid, pad;
	} bad[] = {
		{ WSEM_ACQUIRE_TRY | WSEM_ACQUIRE_DEADLINE, 0, 0 },
		{ WSEM_ACQUIRE_CLOCK, CLOCK_REALTIME, 0 },
		{ WSEM_ACQUIRE_CLOCK | WSEM_ACQUIRE_TRY, CLOCK_MONOTONIC, 0 },
		{ WSEM_ACQUIRE_DEADLINE, CLOCK_BOOTTIME, 0 },
		{ WSEM_ACQUIRE_DEADLINE | WSEM_ACQUIRE_CLOCK,
		  CLOCK_PROCESS_CPUTIME_ID, 0 },
		{ WSEM_ACQUIRE_DEADLINE | WSEM_ACQUIRE_CLOCK, CLOCK_TAI, 0 },
		{ WSEM_ACQUIRE_DEADLINE | WSEM_ACQUIRE_CLOCK, 1000, 0 },
		{ WSEM_ACQUIRE_ASYNC | WSEM_ACQUIRE_TRY, 0, 0 },
		{ WSEM_ACQUIRE_ASYNC | WSEM_ACQUIRE_DEADLINE, 0, 0 },
		{ WSEM_ACQUIRE_TRY, 0, 1 },
	};
	struct wsem_acquire_args args = { .size = sizeof(args) };
	struct wsem_stat st = { .size = sizeof(st) };
	__u64 none = 0;
	unsigned int i;

	if (self->skip)
		return;
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		args.weight = 1;
		args.flags = bad[i].flags;
		args.clockid = bad[i].clockid;
		args.__pad = bad[i].pad;
		args.deadline_ns = UINT64_MAX;
		EXPECT_EQ(-1, ioctl(self->fd, WSEM_IOC_ACQUIRE, &args))
			TH_LOG("acquire, case %u", i);
		EXPECT_EQ(EINVAL, errno) TH_LOG("acquire, case %u", i);
		args.weight = 0;
		EXPECT_EQ(-1, ioctl(self->fd, WSEM_IOC_WAIT_IDLE, &args))
			TH_LOG("idle, case %u", i);
		EXPECT_EQ(EINVAL, errno) TH_LOG("idle, case %u", i);
	}
	/* An idle wait has no weight, nor is it asynchronous. */
	args.flags = WSEM_ACQUIRE_TRY;
	args.clockid = 0;
	args.__pad = 0;
	args.weight = 1;
	EXPECT_EQ(-1, ioctl(self->fd, WSEM_IOC_WAIT_IDLE, &args));
	EXPECT_EQ(EINVAL, errno);
	args.weight = 0;
	args.flags = WSEM_ACQUIRE_ASYNC;
	EXPECT_EQ(-1, ioctl(self->fd, WSEM_IOC_WAIT_IDLE, &args));
	EXPECT_EQ(EINVAL, errno);
	/* Unknown flags of WSEM_IOC_ASYNC; none at all is no request. */
	none = 1ULL << 1;
	EXPECT_EQ(-1, ioctl(self->fd, WSEM_IOC_ASYNC, &none));
	EXPECT_EQ(EINVAL, errno);
	none = 0;
	EXPECT_EQ(-1, ioctl(self->fd, WSEM_IOC_ASYNC, &none));
	EXPECT_EQ(ENOENT, errno);
	ASSERT_EQ(0, ioctl(self->fd, WSEM_IOC_STAT, &st));
	EXPECT_EQ(0, st.used);
	EXPECT_EQ(0, st.waiters);
}

/* A deadline already past never sleeps: ETIMEDOUT unless it fits now. */
TEST_F(abi, acquire_past_deadline)
{
	struct wsem_acquire_args args = {
		.size = sizeof(args),
		.weight = CAP,
		.flags = WSEM_ACQUIRE_DEADLINE,
		.deadline_ns = 1,
	};
	struct wsem_stat st = { .size = sizeof(st) };

	if (self->skip)
		return;
	ASSERT_EQ(0, ioctl(self->fd, WSEM_IOC_ACQUIRE, &args));
	EXPECT_EQ(-1, ioctl(self->fd, WSEM_IOC_ACQUIRE, &args));
	EXPECT_EQ(ETIMEDOUT, errno);
	ASSERT_EQ(0, ioctl(self->fd, WSEM_IOC_STAT, &st));
	EXPECT_EQ(CAP, st.used);
	EXPECT_EQ(0, st.waiters);
}

TEST_F(abi, unlink_unknown_flags_einval)
{
	struct wsem_unlink_args args = {
		.size = sizeof(args),
		.flags = 1,
	};

	int fd;

	if (self->skip)
		return;
	strcpy(args.name, self->name);
	EXPECT_EQ(-1, ioctl(self->raw, WSEM_IOC_UNLINK, &args));
	EXPECT_EQ(EINVAL, errno);
	/* the name is still there */
	fd = wsem_open(self->name, O_CLOEXEC, 0, 0);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, close(fd));
}

TEST_F(abi, reopen_unknown_flags_einval)
{
	__u64 flags = WSEM_REOPEN_CLOEXEC << 1;

	if (self->skip)
		return;
	EXPECT_EQ(-1, ioctl(self->fd, WSEM_IOC_REOPEN, &flags));
	EXPECT_EQ(EINVAL, errno);
	flags = WSEM_REOPEN_CLOEXEC | (1ULL << 63);
	EXPECT_EQ(-1, ioctl(self->fd, WSEM_IOC_REOPEN, &flags));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(abi, fdinfo_fields)
{
	char val[128], cap[32];
	int fd2;

	if (self->skip)
		return;
	fd2 = wsem_open(self->name, O_CLOEXEC, 0, 0);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, wsem_acquire(self->fd, 3));
	ASSERT_EQ(0, wsem_acquire(fd2, 2));
	snprintf(cap, sizeof(cap), "%d", CAP);
	ASSERT_EQ(0, fdinfo_get(self->fd, "wsem-name", val, sizeof(val)));
	EXPECT_STREQ(self->name, val);
	ASSERT_EQ(0, fdinfo_get(self->fd, "wsem-capacity", val, sizeof(val)));
	EXPECT_STREQ(cap, val);
	ASSERT_EQ(0, fdinfo_get(self->fd, "wsem-used", val, sizeof(val)));
	EXPECT_STREQ("5", val);
	ASSERT_EQ(0, fdinfo_get(self->fd, "wsem-held", val, sizeof(val)));
	EXPECT_STREQ("3", val);
	ASSERT_EQ(0, fdinfo_get(fd2, "wsem-held", val, sizeof(val)));
	EXPECT_STREQ("2", val);
	ASSERT_EQ(0, fdinfo_get(self->fd, "wsem-waiters", val, sizeof(val)));
	EXPECT_STREQ("0", val);
	EXPECT_EQ(0, close(fd2));
}

TEST_F(abi, fdinfo_waiters)
{
	struct timespec start, now;
	char val[128];
	int status, got;
	pid_t pid;

	if (self->skip)
		return;
	ASSERT_EQ(0, wsem_acquire(self->fd, CAP));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int fd = wsem_open(self->name, 0, 0, 0);

		_exit(fd < 0 || wsem_acquire(fd, 1));
	}
	/*
	 * Poll until the child is queued, for about 5 s at most.  Only a
	 * value this very read produced is compared: a failed read is a
	 * failure of its own, never an old value.
	 */
	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		val[0] = '\0';
		got = fdinfo_get(self->fd, "wsem-waiters", val, sizeof(val));
		if (got || !strcmp(val, "1"))
			break;
		usleep(1000);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec - start.tv_sec <= 5);
	EXPECT_EQ(0, kill(pid, SIGKILL));
	EXPECT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, got) TH_LOG("no wsem-waiters line in the fdinfo");
	EXPECT_STREQ("1", val);
}

TEST_F(abi, fdinfo_anon_name_empty)
{
	char val[128];
	int fd;

	if (self->skip)
		return;
	fd = wsem_open_anon(4, O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, fdinfo_get(fd, "wsem-name", val, sizeof(val)));
	EXPECT_STREQ("", val);
	ASSERT_EQ(0, fdinfo_get(fd, "wsem-capacity", val, sizeof(val)));
	EXPECT_STREQ("4", val);
	EXPECT_EQ(0, close(fd));
}

/*
 * LIST in a namespace of our own holding names "a" and "b", with the
 * arguments @args; the caller has set everything but the size.
 */
static int list_alone(struct wsem_list_args *args)
{
	static const char * const names[] = { "a", "b" };
	unsigned int i;
	int fd, ret;

	if (unshare(CLONE_NEWIPC))
		return -2;
	for (i = 0; i < ARRAY_SIZE(names); i++) {
		fd = wsem_open(names[i], O_CREAT | O_CLOEXEC, 0600, 1);
		if (fd < 0)
			return -3;
		close(fd);
	}
	fd = open(DEV, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -4;
	args->size = sizeof(*args);
	ret = ioctl(fd, WSEM_IOC_LIST, args);
	close(fd);
	return ret;
}

/* The kernel writes what exists, not what the caller says it has room for. */
TEST(list_count_above_total)
{
	struct wsem_stat st[3];
	struct wsem_list_args args = {
		.stats = (uintptr_t)st,
		.count = UINT32_MAX,
		.stat_size = sizeof(st[0]),
	};

	if (access(DEV, R_OK | W_OK) || geteuid())
		SKIP(return, "needs " DEV " and root");
	memset(st, 0xa5, sizeof(st));
	ASSERT_EQ(0, list_alone(&args));
	EXPECT_EQ(2, args.total);
	EXPECT_STREQ("a", st[0].name);
	EXPECT_STREQ("b", st[1].name);
	EXPECT_EQ((char)0xa5, ((char *)&st[2])[0]);
}

/* A newer binary's larger struct wsem_stat: entries at its stride. */
TEST(list_larger_stat_size)
{
	char buf[2 * 256] __attribute__((aligned(8)));
	struct wsem_list_args args = {
		.stats = (uintptr_t)buf,
		.count = 2,
		.stat_size = 256,
	};
	struct wsem_stat *st;

	if (access(DEV, R_OK | W_OK) || geteuid())
		SKIP(return, "needs " DEV " and root");
	memset(buf, 0, sizeof(buf));
	ASSERT_EQ(0, list_alone(&args));
	EXPECT_EQ(2, args.total);
	st = (void *)buf;
	EXPECT_STREQ("a", st->name);
	EXPECT_EQ(sizeof(*st), st->size);
	st = (void *)(buf + 256);
	EXPECT_STREQ("b", st->name);
	EXPECT_EQ(1, st->capacity);
}

TEST_HARNESS_MAIN
