// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The cluster section of wsem stat: the view of a cluster limit that
 * wsem-agent writes after each look at etcd (agent/view.go has the
 * format) to /run/wsem-agent/IPCNS/NAME, for the semaphore NAME of the
 * IPC namespace whose nsfs inode is IPCNS.  Only read here: wsem stat
 * never talks to the network.  No file: no cluster limit, nothing shown.
 * A file that cannot be read or parsed, or that is another semaphore's:
 * one note on stderr, and stat goes on without it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

#define VIEW_DIR	"/run/wsem-agent"
#define VIEW_VERSION	"wsem-agent-view 1"
#define VIEW_MAX	(1 << 20)	/* bytes; some 20,000 hosts */

/* One host's line. */
struct view_host {
	char *name;		/* as written: %XX escapes and all */
	uint64_t share, need, floor, queue;
	bool alive;
};

/* The keys of one value each, in the order of enum view_key. */
static const char *const view_keys[] = {
	"name", "id", "pid", "this", "prefix", "look", "refresh", "read",
	"revision", "capacity", "free",
};

enum view_key {
	K_NAME, K_ID, K_PID, K_THIS, K_PREFIX, K_LOOK, K_REFRESH, K_READ,
	K_REVISION, K_CAPACITY, K_FREE, K_COUNT
};

/* A parsed view; the words point into @text. */
struct view {
	char *text;
	char *word[K_COUNT];	/* each key's value; NULL: not seen */
	uint64_t num[K_COUNT];	/* ... as a number, for the numeric ones */
	bool failing;		/* a "failing" line: the last look failed */
	uint64_t failing_since;
	const char *error;	/* its text */
	struct view_host *hosts;
	size_t nhosts;
};

static bool numeric_key(enum view_key k)
{
	return k != K_NAME && k != K_THIS && k != K_PREFIX;
}

/* Is @s a word as the agent writes them: no blank, %XX escapes only? */
static bool good_word(const char *s)
{
	for (; *s; s++) {
		if ((unsigned char)*s <= ' ' || *s == 0x7f)
			return false;
		if (*s == '%' && !(strchr("0123456789ABCDEFabcdef", s[1]) &&
				   s[1] && strchr("0123456789ABCDEFabcdef",
						  s[2]) && s[2]))
			return false;
	}
	return true;
}

/* Split @line at blanks into at most @max words; how many there are. */
static size_t split(char *line, char **words, size_t max)
{
	size_t n = 0;
	char *save = NULL, *w;

	for (w = strtok_r(line, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
		if (n < max)
			words[n] = w;
		n++;
	}
	return n;
}

/* A host line's words after "host"; false if they are not 6 good ones. */
static bool parse_host(struct view *v, char **w, size_t n)
{
	struct view_host h = { .name = w[0] }, *nh;
	uint64_t alive;

	if (n != 6 || !good_word(w[0]) || !cli_parse_u64(w[1], &h.share) ||
	    !cli_parse_u64(w[2], &h.need) || !cli_parse_u64(w[3], &h.floor) ||
	    !cli_parse_u64(w[4], &h.queue) || !cli_parse_u64(w[5], &alive) ||
	    alive > 1)
		return false;
	h.alive = alive;
	nh = realloc(v->hosts, (v->nhosts + 1) * sizeof(*nh));
	if (!nh)
		return false;
	v->hosts = nh;
	v->hosts[v->nhosts++] = h;
	return true;
}

/* "failing NS TEXT": TEXT is the rest of the line, blanks and all. */
static bool parse_failing(struct view *v, char *rest)
{
	char *sp = strchr(rest, ' ');

	if (sp)
		*sp = '\0';
	if (!cli_parse_u64(rest, &v->failing_since))
		return false;
	v->failing = true;
	v->error = sp ? sp + 1 : "";
	return true;
}

/* One line (its newline cut off); false if it is bad. */
static bool parse_line(struct view *v, char *line)
{
	char *w[7];
	size_t n, k;

	if (!strncmp(line, "failing ", 8))
		return parse_failing(v, line + 8);
	n = split(line, w, 7);
	if (!n)
		return false;
	if (!strcmp(w[0], "host"))
		return parse_host(v, w + 1, n - 1);
	for (k = 0; k < K_COUNT && strcmp(w[0], view_keys[k]); k++)
		;
	if (k == K_COUNT)
		return true;	/* a key of a later agent */
	if (n != 2 || !good_word(w[1]))
		return false;
	if (numeric_key(k) && !cli_parse_u64(w[1], &v->num[k]))
		return false;
	v->word[k] = w[1];
	return true;
}

/*
 * Read all of the file at @fd into v->text (NUL-terminated); false with
 * @why said if it is no regular file, too large or unreadable.
 */
static bool read_all(int fd, struct view *v, char *why, size_t len)
{
	struct stat sb;
	size_t got = 0;
	ssize_t r;

	if (fstat(fd, &sb)) {
		snprintf(why, len, "%s", strerror(errno));
		return false;
	}
	if (!S_ISREG(sb.st_mode) || sb.st_size > VIEW_MAX) {
		snprintf(why, len, "%s", S_ISREG(sb.st_mode) ?
			 "larger than 1 MiB" : "not a regular file");
		return false;
	}
	v->text = malloc((size_t)sb.st_size + 1);
	if (!v->text) {
		snprintf(why, len, "%s", strerror(errno));
		return false;
	}
	while (got < (size_t)sb.st_size) {
		r = read(fd, v->text + got, (size_t)sb.st_size - got);
		if (r <= 0) {
			snprintf(why, len, "%s", r ? strerror(errno) :
				 "cut short");
			return false;
		}
		got += (size_t)r;
	}
	v->text[got] = '\0';
	if (strlen(v->text) != got) {
		snprintf(why, len, "a NUL byte");
		return false;
	}
	return true;
}

/* Parse v->text; false with @why said (the line, what is wrong). */
static bool parse_view(struct view *v, char *why, size_t len)
{
	char *line = v->text, *nl;
	unsigned int lineno = 1;
	size_t k;

	if (!*line) {
		snprintf(why, len, "empty");
		return false;
	}
	for (; *line; line = nl + 1, lineno++) {
		nl = strchr(line, '\n');
		if (!nl) {
			snprintf(why, len, "line %u: no newline at its end",
				 lineno);
			return false;
		}
		*nl = '\0';
		if (lineno == 1 ? strcmp(line, VIEW_VERSION) :
		    !parse_line(v, line)) {
			snprintf(why, len, lineno == 1 ?
				 "line 1: not \"" VIEW_VERSION "\"" :
				 "line %u: not understood", lineno);
			return false;
		}
	}
	for (k = 0; k < K_COUNT; k++) {
		if (!v->word[k]) {
			snprintf(why, len, "no \"%s\" line", view_keys[k]);
			return false;
		}
	}
	return true;
}

static void view_free(struct view *v)
{
	free(v->hosts);
	free(v->text);
}

/*
 * Read and parse the view at @path of the semaphore @name, id @id (0:
 * unknown; an id of 0 in the file, too: the agent could not tell); 1 if
 * it is there and good, 0 if there is none, -1 after a note on stderr.
 */
static int view_read(const char *path, const char *name, uint64_t id,
		     struct view *v)
{
	char why[160];
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	bool ok;

	memset(v, 0, sizeof(*v));
	if (fd < 0 && errno == ENOENT)
		return 0;
	if (fd < 0) {
		snprintf(why, sizeof(why), "%s", strerror(errno));
		ok = false;
	} else {
		ok = read_all(fd, v, why, sizeof(why)) &&
		     parse_view(v, why, sizeof(why));
		close(fd);
	}
	if (ok && strcmp(v->word[K_NAME], name)) {
		snprintf(why, sizeof(why), "the view of %.63s, not of %s",
			 v->word[K_NAME], name);
		ok = false;
	} else if (ok && id && v->num[K_ID] && v->num[K_ID] != id) {
		snprintf(why, sizeof(why), "the view of another semaphore %s "
			 "(id %" PRIu64 ", this one's is %" PRIu64 ")", name,
			 v->num[K_ID], id);
		ok = false;
	}
	if (ok)
		return 1;
	fprintf(stderr, "wsem: note: %s: %s: no cluster view shown\n", path,
		why);
	view_free(v);
	return -1;
}

/* CLOCK_BOOTTIME, as the agent writes its times; 0 if unknown. */
static uint64_t boot_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_BOOTTIME, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* How long ago boottime @t was (0 for a time to come). */
static uint64_t age_of(uint64_t now, uint64_t t)
{
	return now > t ? now - t : 0;
}

/* A word of the file, %XX decoded, into @buf (NUL-terminated). */
static const char *decode(const char *w, char *buf, size_t len)
{
	size_t i = 0;
	unsigned int c;

	for (; *w && i + 1 < len; w++) {
		if (*w == '%' && sscanf(w + 1, "%2x", &c) == 1) {
			buf[i++] = (char)c;
			w += 2;
		} else {
			buf[i++] = *w;
		}
	}
	buf[i] = '\0';
	return buf;
}

static void print_hosts(const struct view *v)
{
	/* HOST SHARE NEED FLOOR QUEUE, as wsem-agent status prints them */
	int w[5] = { 4, 5, 4, 5, 5 }, n;
	const struct view_host *h;
	char num[24];
	size_t i;

	if (!v->nhosts) {
		puts("  (no host has a share, a demand or an agent)");
		return;
	}
	for (i = 0; i < v->nhosts; i++) {
		h = &v->hosts[i];
		n = (int)strlen(h->name) + 2;
		w[0] = n > w[0] ? n : w[0];
		n = snprintf(num, sizeof(num), "%" PRIu64, h->share);
		w[1] = n > w[1] ? n : w[1];
		n = snprintf(num, sizeof(num), "%" PRIu64, h->need);
		w[2] = n > w[2] ? n : w[2];
		n = snprintf(num, sizeof(num), "%" PRIu64, h->floor);
		w[3] = n > w[3] ? n : w[3];
		n = snprintf(num, sizeof(num), "%" PRIu64, h->queue);
		w[4] = n > w[4] ? n : w[4];
	}
	printf("  %-*s  %*s  %*s  %*s  %*s  AGENT\n", w[0], "HOST", w[1],
	       "SHARE", w[2], "NEED", w[3], "FLOOR", w[4], "QUEUE");
	for (i = 0; i < v->nhosts; i++) {
		h = &v->hosts[i];
		n = snprintf(num, sizeof(num), "%" PRIu64, h->queue);
		printf("  %s%-*s  %*" PRIu64 "  %*" PRIu64 "  %*" PRIu64
		       "  %*s  %s\n", h->name,
		       w[0] - (int)strlen(h->name),
		       strcmp(h->name, v->word[K_THIS]) ? "" : " *",
		       w[1], h->share, w[2], h->need, w[3], h->floor, w[4],
		       h->queue ? num : "-", h->alive ? "alive" : "gone");
	}
}

/* The last look's error on one line: control bytes as '?'. */
static void print_error(const char *s)
{
	for (; *s; s++)
		putchar((unsigned char)*s < ' ' || *s == 0x7f ? '?' : *s);
}

static void print_view(const struct view *v, uint64_t now)
{
	char a[24], b[24];

	printf("\nCLUSTER (wsem-agent's view of etcd %s at revision %" PRIu64
	       ", read %s ago)\n", v->word[K_PREFIX], v->num[K_REVISION],
	       cli_duration_text(age_of(now, v->num[K_READ]), a, sizeof(a)));
	printf("  capacity %" PRIu64 " across the cluster, %" PRIu64
	       " free; this host is %s (*)\n", v->num[K_CAPACITY],
	       v->num[K_FREE], v->word[K_THIS]);
	print_hosts(v);
	if (v->failing) {
		printf("  etcd: the agent's looks have failed for %s: ",
		       cli_duration_text(age_of(now, v->failing_since), a,
					 sizeof(a)));
		print_error(v->error);
		putchar('\n');
	}
	if (age_of(now, v->num[K_LOOK]) > v->num[K_REFRESH])
		printf("  stale: not rewritten for %s, while a running agent "
		       "rewrites it every %s at most: is wsem-agent (pid %"
		       PRIu64 ") running?\n",
		       cli_duration_text(age_of(now, v->num[K_LOOK]), a,
					 sizeof(a)),
		       cli_duration_text(v->num[K_REFRESH], b, sizeof(b)),
		       v->num[K_PID]);
}

/* A word of the file as a JSON string, decoded. */
static void json_word(const char *key, const char *w)
{
	char buf[1024];

	printf("\"%s\":", key);
	cli_json_string(stdout, decode(w, buf, sizeof(buf)), sizeof(buf));
}

static void print_json_view(const struct view *v, uint64_t now)
{
	uint64_t look = age_of(now, v->num[K_LOOK]);
	const struct view_host *h;
	size_t i;

	fputs(",\"cluster\":{", stdout);
	json_word("host", v->word[K_THIS]);
	putchar(',');
	json_word("prefix", v->word[K_PREFIX]);
	printf(",\"revision\":%" PRIu64 ",\"capacity\":%" PRIu64
	       ",\"free\":%" PRIu64 ",\"age_ns\":%" PRIu64
	       ",\"look_age_ns\":%" PRIu64 ",\"refresh_ns\":%" PRIu64
	       ",\"stale\":%s,\"etcd_ok\":%s,\"error\":",
	       v->num[K_REVISION], v->num[K_CAPACITY], v->num[K_FREE],
	       age_of(now, v->num[K_READ]), look, v->num[K_REFRESH],
	       look > v->num[K_REFRESH] ? "true" : "false",
	       v->failing ? "false" : "true");
	cli_json_string(stdout, v->failing ? v->error : "", 1024);
	printf(",\"failing_ns\":%" PRIu64 ",\"pid\":%" PRIu64 ",\"hosts\":[",
	       v->failing ? age_of(now, v->failing_since) : 0,
	       v->num[K_PID]);
	for (i = 0; i < v->nhosts; i++) {
		h = &v->hosts[i];
		fputs(i ? ",{" : "{", stdout);
		json_word("host", h->name);
		printf(",\"share\":%" PRIu64 ",\"need\":%" PRIu64
		       ",\"floor\":%" PRIu64 ",\"queue\":%" PRIu64
		       ",\"alive\":%s,\"this\":%s}", h->share, h->need,
		       h->floor, h->queue, h->alive ? "true" : "false",
		       strcmp(h->name, v->word[K_THIS]) ? "false" : "true");
	}
	fputs("]}", stdout);
}

/**
 * cli_print_cluster() - stat's cluster section, if wsem-agent keeps one
 * @st: the semaphore
 * @ns: its IPC namespace (0: unknown)
 * @id: its id, fdinfo's wsem-id (0: unknown)
 * @json: print ,"cluster":{...} inside stat's object, not the section
 *
 * Only for a semaphore whose name the caller sees (its own namespace's).
 */
void cli_print_cluster(const struct wsem_stat *st, unsigned long ns,
		       uint64_t id, bool json)
{
	char name[WSEM_NAME_MAX], path[sizeof(VIEW_DIR) + 24 + WSEM_NAME_MAX];
	struct view v;

	memcpy(name, st->name, sizeof(name));
	name[sizeof(name) - 1] = '\0';
	if (!ns || !name[0] || !strcmp(name, ".") || !strcmp(name, ".."))
		return;
	snprintf(path, sizeof(path), VIEW_DIR "/%lu/%s", ns, name);
	if (view_read(path, name, id, &v) <= 0)
		return;
	if (json)
		print_json_view(&v, boot_ns());
	else
		print_view(&v, boot_ns());
	view_free(&v);
}
