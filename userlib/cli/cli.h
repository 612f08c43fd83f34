/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * wsem(1): shared declarations of the command line tool.
 */
#ifndef WSEM_CLI_H
#define WSEM_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "wsem.h"

/* Exit statuses; wsem(1) documents them. */
#define CLI_EXIT_OK		0
#define CLI_EXIT_ERROR		1
#define CLI_EXIT_USAGE		2
#define CLI_EXIT_NOTFOUND	3	/* no such semaphore */
#define CLI_EXIT_WOULDBLOCK	75	/* run --nonblock; EX_TEMPFAIL */
#define CLI_EXIT_TIMEDOUT	124	/* run --timeout; as timeout(1) */
#define CLI_EXIT_RUN_FAILED	125	/* run: wsem's own failure; as env(1) */
#define CLI_EXIT_NOEXEC		126	/* COMMAND found, not executable */
#define CLI_EXIT_NOCMD		127	/* COMMAND not found */

/* Not an exit status: done, nothing more to do (--help); main() exits 0. */
#define CLI_DONE		(-1)

#define CLI_MAX_POS		2
#define CLI_DEFAULT_MODE	0600	/* create, run --create */

/* One option of a verb: "--name VALUE", "--name=VALUE", "-n VALUE", "-n". */
struct cli_opt {
	const char *name;	/* without the leading "--" */
	char short_name;	/* 'n' for "-n", or 0 */
	const char *arg;	/* what the value is called in help; NULL: a flag */
	bool arg_optional;	/* the value comes only as --name=VALUE */
	const char *help;	/* one line for --help */
	const char *refuse;	/* another tool's spelling: refused, with this
				 * hint naming wsem's (as flock(1)'s -w) */
	bool seen;
	const char *value;	/* the last value given */
	const char **values;	/* a repeatable option: every value, in order */
	int max_values;		/* room in @values */
	int nvalues;		/* how many were given (may exceed the room) */
};

/*
 * What a flock(1) user types out of habit where wsem means another thing
 * or has nothing like it: refused, each with the wsem spelling, never
 * taken to mean something else (flock's -w is a timeout).  What means the
 * same here is taken as it is: -n, -E N, --timeout, --verbose.  run adds
 * COMMAND's (run.c).
 */
#define FLOCK_HABITS \
	{ .name = "wait", .short_name = 'w', .refuse = "flock(1)'s -w, a " \
	  "wait of at most SECONDS, is --timeout SECONDS; a weight is " \
	  "--weight W" }, \
	{ .name = "shared", .short_name = 's', .refuse = "no shared mode " \
	  "(flock(1)'s -s): hold --weight W of a larger capacity" }, \
	{ .name = "exclusive", .short_name = 'x', .refuse = "all of the " \
	  "capacity (flock(1)'s -x) is --weight all" }, \
	{ .name = "unlock", .short_name = 'u', .refuse = "weight goes back " \
	  "when its holder ends or closes the handle, or at wsem release" }, \
	{ .name = "nb", .refuse = "flock(1)'s --nb is --nonblock (-n)" }

/* A verb: argv[0] is the verb itself. */
struct cli_verb {
	const char *name;
	const char *synopsis;
	const char *summary;	/* one line for --help */
	int (*run)(const struct cli_verb *verb, int argc, char **argv);
};

/* What cli_parse() is told, and what it found. */
struct cli_parse {
	const struct cli_verb *verb;
	const char *synopsis;	/* set by cli_parse(): the verb's, for usage */
	struct cli_opt *opts;	/* ends with a NULL name */
	int max_pos;		/* operands before COMMAND */
	bool command;		/* the verb ends with COMMAND [ARG...] */
	bool command_optional;	/* ... which may be absent (apply's PATH...) */
	bool fd_only;		/* acts on --fd N alone, never on NAME */
	char *pos[CLI_MAX_POS];
	int npos;
	char **cmd;		/* NULL-terminated COMMAND, or NULL */
};

/* lease.c: acquiring as run and acquire are asked to */
struct cli_lease {
	const char *what;	/* NAME, a path or "--fd N", for messages */
	uint64_t weight;	/* --weight W; set from the capacity for "all" */
	bool weight_all;	/* -w all: the whole capacity */
	int64_t timeout_ns;	/* --timeout, or -1 */
	bool nonblock;		/* --nonblock, or --timeout 0 */
	int conflict_status;	/* -E N, or -1: 75 or 124 */
	bool verbose;		/* --verbose: say when it waits, and how long */
	bool conflict;		/* set when it failed for a conflict */
};

/* run --and: the handles of one gang request, [0] the one run names */
struct cli_gang {
	int fds[WSEM_MANY_MAX];
	uint64_t weights[WSEM_MANY_MAX];
	const char *names[WSEM_MANY_MAX];	/* for messages */
	size_t n;
};

bool cli_lease_acquire_many(struct cli_gang *g, struct cli_lease *l,
			    int *status);
int cli_lease_options(const char *syn, struct cli_opt *opts,
		      struct cli_lease *l);
bool cli_lease_acquire(int fd, struct cli_lease *l, int *status);
int cli_check_name(const char *name);
int cli_check_capacity(const char *what, uint64_t capacity);

/* args.c */
int cli_parse(struct cli_parse *p, int argc, char **argv);
struct cli_opt *cli_opt(struct cli_opt *opts, const char *name);

/* command.c */
int cli_check_command(const char *name);

/*
 * The service manager whose signals reach every process of wsem's unit
 * (a systemd service of KillMode=control-group, the invocation in
 * $INVOCATION_ID), asked of systemctl; 0 when there is none (unit.c).
 */
pid_t cli_unit_manager(void);

/* number.c */
bool cli_parse_u64(const char *s, uint64_t *v);
bool cli_parse_mode(const char *s, mode_t *mode);
bool cli_parse_duration(const char *s, int64_t *ns);

/* target.c */
bool cli_is_path(const char *name);
int cli_fd_option(const char *synopsis, const struct cli_opt *o, int *fd);
int cli_inherited_fd(const char *name);
unsigned long cli_own_ipc_ns(void);
unsigned long cli_fd_ipc_ns(int fd);
uint64_t cli_fd_sem_id(int fd);
bool cli_ipc_ns_is_initial(unsigned long ns);
const char *cli_ipc_ns_text(unsigned long ns);

/* report.c */
int cli_fail(const char *what, int err);
int cli_fail_nodev(const char *what, int err);
int cli_fail_endpoint(const char *name, const char *path, int err);
int cli_device_error(int err);
void cli_note_capacity(const char *name, uint64_t has, uint64_t asked);
int cli_fail_target(const char *what, int err);
int cli_fail_msg(const char *what, const char *msg, int status);
int cli_usage(const char *synopsis, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* format.c */
/* A row of top's tree: entry @i of the list, @level deep in the view. */
struct cli_tree_row {
	size_t i;
	unsigned int level;
	char parent[WSEM_NAME_MAX];	/* its parent's name, "[ID]"; "": a root */
};
void cli_print_table(const struct wsem_stat *st, size_t n, bool longer);
int cli_print_columns(const struct wsem_stat *st, size_t n,
		      const char *list, bool headings, const char **bad);
void cli_print_rows(const struct wsem_stat *all,
		    const struct cli_tree_row *rows, size_t n, bool longer);
void cli_print_stat(const struct wsem_stat *st);
void cli_print_stats(const struct wsem_stat *st);
void cli_print_json_list(const struct wsem_stat *st, size_t n);
void cli_print_json_stat(const struct wsem_stat *st);
void cli_print_json_stat_ns(const struct wsem_stat *st, unsigned long ns);
void cli_print_json_stat_open(const struct wsem_stat *st, unsigned long ns);

/* cluster.c */
void cli_print_cluster(const struct wsem_stat *st, unsigned long ns,
		       uint64_t id, bool json);

/* json.c */
void cli_json_string(FILE *out, const char *s, size_t max);
int cli_print_json_lease(FILE *f, const char *name, int fd, uint64_t weight,
			 uint64_t waited_ns, int inherit_fd);
void cli_print_json_wait(const char *name, bool idle, uint64_t waited_ns);
uint64_t cli_now_ns(void);

/* makeflags.c */
char *cli_makeflags(const char *old, const char *ours);

/* who.c */
ssize_t cli_who(int fd, struct wsem_holder **who, size_t *nholders,
		size_t *nchildren);
const char *cli_duration_text(uint64_t ns, char *buf, size_t len);
void cli_print_who(const struct wsem_holder *who, size_t n, size_t nholders,
		   size_t nchildren);
void cli_print_json_who(const struct wsem_holder *who, size_t n,
			size_t nholders, size_t nchildren);

/* conf.c: what "wsem apply" is told to make true */
struct cli_decl {
	char name[WSEM_NAME_MAX];
	uint64_t capacity;
	mode_t mode;
	unsigned int uid, gid;
	bool has_mode, has_uid, has_gid;
	char parent[WSEM_NAME_MAX];	/* parent=NAME, or "" for a root */
	/*
	 * cluster=etcd: a share of a cluster limit, which wsem-agent lends
	 * to a loans semaphore (WSEM_LOANS) whose ceiling is capacity.
	 * agent_key: one of the agent's own keys (endpoints=, ...) was seen.
	 */
	bool cluster, agent_key;
	const char *file;	/* where it was declared */
	unsigned int line;
};

struct cli_conf {
	struct cli_decl *decl;
	size_t n;
	bool bad;		/* a file was rejected */
};

/* wsem apply without PATH: these, /etc over /run over /usr/lib */
#define CLI_CONF_DIRS	{ "/etc/wsem.d", "/run/wsem.d", "/usr/lib/wsem.d" }

int cli_conf_read(struct cli_conf *c, char **paths);

/*
 * ids/: the uid of user @name, the gid of group @name; 0, or -1 with
 * errno (ENOENT: no such name).  wsem links ids/nss.c (NSS), wsem-static
 * ids/files.c (/etc/passwd and /etc/group: static glibc loads no NSS
 * module).
 */
int cli_user_id(const char *name, unsigned int *id);
int cli_group_id(const char *name, unsigned int *id);

/* The verbs */
int cli_create(const struct cli_verb *verb, int argc, char **argv);
int cli_create_open(const char *name, int oflag, mode_t mode, bool exact,
		    uint64_t capacity);
int cli_open_parent(const char *parent, bool *own);
int cli_create_child(int pfd, const char *name, int oflag, mode_t mode,
		     bool exact, uint64_t capacity);
int cli_fail_child(const char *name, const char *parent, int err);
int cli_rm(const struct cli_verb *verb, int argc, char **argv);
int cli_resize(const struct cli_verb *verb, int argc, char **argv);
int cli_ls(const struct cli_verb *verb, int argc, char **argv);
int cli_stat(const struct cli_verb *verb, int argc, char **argv);
int cli_top(const struct cli_verb *verb, int argc, char **argv);
struct wsem_stat *cli_list_all(size_t *count);
int cli_run(const struct cli_verb *verb, int argc, char **argv);
int cli_lend(const struct cli_verb *verb, int argc, char **argv);
int cli_wait(const struct cli_verb *verb, int argc, char **argv);
int cli_acquire(const struct cli_verb *verb, int argc, char **argv);
int cli_release(const struct cli_verb *verb, int argc, char **argv);
int cli_apply(const struct cli_verb *verb, int argc, char **argv);

#endif /* WSEM_CLI_H */
