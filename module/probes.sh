#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# What the target kernel's headers offer, found by compiling: one small
# test file per interface, compiled with the kernel's own compiler and the
# flags Kbuild gives the module's objects; all in one compile, which reads
# the headers once, when that compile can tell which failed (all_at_once),
# else one by one.  Kbuild runs this before any of wsem's objects;
# module/compat.h turns the answers into wrappers.  No version number is
# read: distributions backport interfaces (Debian's 5.10 has
# TIF_NOTIFY_SIGNAL from 5.11), so only a compile tells.
#
# usage: probes.sh OUT CC [CFLAGS...]    (WSEM_PROBES_KEEP=1: keep the logs;
# WSEM_PROBES=each or compare: below)
#
# Writes OUT (module/compat-probes.h): "#define WSEM_HAVE_X 1" for each
# probe that compiled, a comment for each that did not.  Its first line is
# a digest of CC, CFLAGS, this script and the content of the headers the
# probes include: when none has changed, OUT is left as it is (make sees
# no change and rebuilds nothing).
set -u

out=$1
cc=$2
shift 2

# WSEM_PROBES_KEEP=1: keep the test files and the compiler's words on them.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/wsem-probes.XXXXXX") || exit 1
if [ -n "${WSEM_PROBES_KEEP:-}" ]; then
	echo "probes.sh: the probes and their logs: $tmp" >&2
else
	trap 'rm -rf "$tmp"' EXIT
fi

names=

# probe NAME TEXT: the test file of probe NAME.  Its #include lines come
# first; what it defines is named wsem_probe, wsem_probe_a or wsem_probe_b
# (all_at_once gives each probe its own names for them).
probe() {
	names="$names $1"
	printf '%s\n' "$2" >"$tmp/$1.c"
}

# The compiler and flags work at all: else every answer below is "no".
probe SANITY '#include <linux/module.h>
int wsem_probe(void);
int wsem_probe(void) { return 0; }'

# 6.3: the VFS passes the mount's struct mnt_idmap to inode operations.
probe IOP_MNT_IDMAP '#include <linux/fs.h>
static int wsem_probe_a(struct mnt_idmap *i, struct inode *d,
			struct dentry *e, umode_t m, bool x) { return 0; }
const struct inode_operations wsem_probe = { .create = wsem_probe_a };'

# 5.12 to 6.2: the mount's struct user_namespace instead.
probe IOP_USERNS '#include <linux/fs.h>
static int wsem_probe_a(struct user_namespace *i, struct inode *d,
			struct dentry *e, umode_t m, bool x) { return 0; }
const struct inode_operations wsem_probe = { .create = wsem_probe_a };'

# 6.15: mkdir returns the dentry it made (or NULL, or an error).
probe MKDIR_DENTRY '#include <linux/fs.h>
static struct dentry *wsem_probe_a(struct mnt_idmap *i, struct inode *d,
				    struct dentry *e, umode_t m) { return NULL; }
const struct inode_operations wsem_probe = { .mkdir = wsem_probe_a };'

# setattr_prepare() and setattr_copy() take the same as the operations.
probe SETATTR_MNT_IDMAP '#include <linux/fs.h>
int wsem_probe(struct mnt_idmap *i, struct dentry *d, struct iattr *a);
int wsem_probe(struct mnt_idmap *i, struct dentry *d, struct iattr *a)
{ setattr_copy(i, d_inode(d), a); return setattr_prepare(i, d, a); }'

probe SETATTR_USERNS '#include <linux/fs.h>
int wsem_probe(struct user_namespace *i, struct dentry *d, struct iattr *a);
int wsem_probe(struct user_namespace *i, struct dentry *d, struct iattr *a)
{ setattr_copy(i, d_inode(d), a); return setattr_prepare(i, d, a); }'

# 6.6: generic_fillattr() takes the request mask.
probe GENERIC_FILLATTR_MASK '#include <linux/fs.h>
void wsem_probe(struct mnt_idmap *i, struct inode *n, struct kstat *s);
void wsem_probe(struct mnt_idmap *i, struct inode *n, struct kstat *s)
{ generic_fillattr(i, STATX_BASIC_STATS, n, s); }'

# 6.0: a chown's new owner is a vfsuid_t of the mount, mapped to the
# filesystem's kuid_t by from_vfsuid(); before, a kuid_t already.
probe IATTR_VFSUID '#include <linux/fs.h>
int wsem_probe(struct iattr *a);
int wsem_probe(struct iattr *a) { return vfsuid_valid(a->ia_vfsuid); }'

# 6.3: inode_permission() takes the mount's struct mnt_idmap ...
probe INODE_PERMISSION_MNT_IDMAP '#include <linux/fs.h>
int wsem_probe(struct file *f);
int wsem_probe(struct file *f)
{ return inode_permission(file_mnt_idmap(f), file_inode(f), MAY_READ); }'

# ... 5.12 to 6.2 its struct user_namespace, 5.10 neither.
probe INODE_PERMISSION_USERNS '#include <linux/fs.h>
int wsem_probe(struct file *f);
int wsem_probe(struct file *f)
{ return inode_permission(file_mnt_user_ns(f), file_inode(f), MAY_READ); }'

# 6.14: d_revalidate is told the parent and the name.
probe D_REVALIDATE_NAME '#include <linux/dcache.h>
static int wsem_probe_a(struct inode *d, const struct qstr *n,
			struct dentry *e, unsigned int fl) { return 1; }
const struct dentry_operations wsem_probe = { .d_revalidate = wsem_probe_a };'

# 6.17: a superblock's default dentry operations are set by a call.
probe SET_DEFAULT_D_OP '#include <linux/dcache.h>
#include <linux/fs.h>
void wsem_probe(struct super_block *sb, const struct dentry_operations *o);
void wsem_probe(struct super_block *sb, const struct dentry_operations *o)
{ set_default_d_op(sb, o); }'

# generic_delete_inode(), renamed inode_just_drop() in 6.18.
probe INODE_JUST_DROP '#include <linux/fs.h>
const struct super_operations wsem_probe = { .drop_inode = inode_just_drop };'

# 6.6: timestamps behind helpers.
probe INODE_INIT_TS '#include <linux/fs.h>
void wsem_probe(struct inode *i);
void wsem_probe(struct inode *i) { simple_inode_init_ts(i); }'

# 5.12: rb_find() and rb_add().
probe RB_FIND_ADD '#include <linux/rbtree.h>
static int wsem_probe_a(const void *k, const struct rb_node *n) { return 0; }
static bool wsem_probe_b(struct rb_node *a, const struct rb_node *b) { return 0; }
void wsem_probe(struct rb_root *r, struct rb_node *n);
void wsem_probe(struct rb_root *r, struct rb_node *n)
{ rb_find(NULL, r, wsem_probe_a); rb_add(n, r, wsem_probe_b); }'

# 5.16: fsnotify_name() takes the event's data and its type, as Debian's
# 5.10 has it too (a backport); upstream 5.10 took the child inode first.
probe FSNOTIFY_NAME_DATA '#include <linux/fsnotify.h>
void wsem_probe(struct inode *d, const struct qstr *n);
void wsem_probe(struct inode *d, const struct qstr *n)
{ fsnotify_name(FS_CREATE, d, FSNOTIFY_EVENT_INODE, d, n, 0); }'

# 6.13: hrtimer_setup() sets the callback with the clock and mode;
# hrtimer_init() is gone since 6.15.
probe HRTIMER_SETUP '#include <linux/hrtimer.h>
static enum hrtimer_restart wsem_probe_a(struct hrtimer *t)
{ return HRTIMER_NORESTART; }
void wsem_probe(struct hrtimer *t);
void wsem_probe(struct hrtimer *t)
{ hrtimer_setup(t, wsem_probe_a, CLOCK_BOOTTIME, HRTIMER_MODE_ABS); }'

# 6.3: a VMA's flags change through vm_flags_set() and vm_flags_clear();
# before, by writing vma->vm_flags, which is read-only since.
probe VM_FLAGS_SET '#include <linux/mm.h>
void wsem_probe(struct vm_area_struct *v);
void wsem_probe(struct vm_area_struct *v)
{ vm_flags_set(v, VM_DONTEXPAND); vm_flags_clear(v, VM_MAYWRITE); }'

# 5.11: vma_set_file() swaps a mapping's file in ->mmap.
probe VMA_SET_FILE '#include <linux/mm.h>
void wsem_probe(struct vm_area_struct *v, struct file *f);
void wsem_probe(struct vm_area_struct *v, struct file *f)
{ vma_set_file(v, f); }'

# The key of OUT: CC, CFLAGS, this script, and what the headers that the
# probes include say, as the compiler reads them with these flags (one
# pass of the preprocessor over all of them, macros kept).  The same flags
# on headers that changed (a distribution's new build of the same kernel,
# a backport) probe anew.
grep -h '^#include' "$tmp"/*.c | sort -u >"$tmp/headers.c"
# shellcheck disable=SC2086 # CC may be several words (ccache gcc)
$cc "$@" -E -dD -P "$tmp/headers.c" >"$tmp/headers.i" 2>/dev/null
sig="/* wsem probes $(printf '%s\n' "$cc" "$@" |
	cat - "$0" "$tmp/headers.i" | cksum) */"
if [ -f "$out" ] && [ "$(head -n 1 "$out")" = "$sig" ]; then
	exit 0
fi

# The compiler's flags for a probe: a mismatched type is an error here, as
# it would be in our use of the interface; any other warning is not (W=1
# KCFLAGS=-Werror must not turn a probe's unused parameter into a "no").
# A diagnostic in a macro is given where the macro is used.
set -- "$@" -Wno-error -Werror=incompatible-pointer-types \
	-Werror=implicit-function-declaration -Werror=int-conversion \
	-Werror=return-type -ftrack-macro-expansion=0 -fsyntax-only

# one_by_one FLAGS...: each probe compiled alone, all in parallel.
one_by_one() {
	for n in $names; do
		# shellcheck disable=SC2086 # CC may be several words
		( $cc "$@" -c "$tmp/$n.c" >"$tmp/$n.log" 2>&1 &&
			: >"$tmp/$n.ok" ) &
	done
	wait
}

# all_at_once FLAGS...: every probe in one file, so that the headers are
# read once (most of a probe's time): the headers first, then each probe
# under a "#line" that names it, with its own names for what it defines,
# and last a probe that must fail.  A probe with no error of its own is
# there; one with an error is not.  Fails, and the probes are compiled one
# by one, when an error names no probe, the last one's error is missing
# (a header not found, an option this compiler lacks, a compile that
# stopped early) or the sanity probe failed (its words are wanted).
all_at_once() {
	all=$tmp/all-probes.c
	{
		cat "$tmp/headers.c"
		for n in $names; do
			echo "#define wsem_probe wsem_probe_$n"
			echo "#define wsem_probe_a wsem_probe_${n}_a"
			echo "#define wsem_probe_b wsem_probe_${n}_b"
			echo "#line 1 \"$n.c\""
			grep -v '^#include' "$tmp/$n.c"
			echo "#undef wsem_probe"
			echo "#undef wsem_probe_a"
			echo "#undef wsem_probe_b"
		done
		echo '#line 1 "LAST.c"'
		echo 'int wsem_probe_last = (void *)0;'
	} >"$all"
	# shellcheck disable=SC2086 # CC may be several words (ccache gcc)
	$cc "$@" -c "$all" >"$tmp/all-probes.log" 2>&1
	grep ': error: ' "$tmp/all-probes.log" >"$tmp/errors"
	named='^\([A-Z0-9_]*\)\.c:[0-9]*:[0-9]*: error: '
	sed -n "s/$named.*/\\1/p" "$tmp/errors" | sort -u >"$tmp/failed"
	! grep -qv "$named" "$tmp/errors" && grep -qx LAST "$tmp/failed" &&
		! grep -qx SANITY "$tmp/failed" || return 1
	for n in $names; do
		grep -qx "$n" "$tmp/failed" || : >"$tmp/$n.ok"
	done
}

# WSEM_PROBES=each: one by one only; =compare: both ways, and fail unless
# the one compile could tell and both found the same (make lint).
case ${WSEM_PROBES:-} in
each)
	one_by_one "$@" ;;
compare)
	if ! all_at_once "$@"; then
		echo "probes.sh: the probes in one compile could not tell:" >&2
		cat "$tmp/errors" >&2
		exit 1
	fi
	(cd "$tmp" && ls -- *.ok) >"$tmp/all.list"
	rm -f "$tmp"/*.ok
	one_by_one "$@"
	(cd "$tmp" && ls -- *.ok) >"$tmp/each.list"
	if ! diff "$tmp/all.list" "$tmp/each.list" >&2; then
		echo "probes.sh: one compile (<) and one by one (>) differ" >&2
		exit 1
	fi ;;
*)
	all_at_once "$@" || one_by_one "$@" ;;
esac

if [ ! -f "$tmp/SANITY.ok" ]; then
	echo "probes.sh: the kernel's compiler fails on an empty module:" >&2
	cat "$tmp/SANITY.log" >&2
	exit 1
fi

{
	echo "$sig"
	echo "/* Generated by module/probes.sh for this kernel: do not edit. */"
	for n in $names; do
		[ "$n" = SANITY ] && continue
		if [ -f "$tmp/$n.ok" ]; then
			echo "#define WSEM_HAVE_$n 1"
		else
			echo "/* #undef WSEM_HAVE_$n */"
		fi
	done
} >"$out.tmp" && mv "$out.tmp" "$out"
