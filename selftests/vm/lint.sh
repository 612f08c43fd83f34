#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make lint: the static checks, one TAP line each, against every kernel that
# find_kernels names (the default one when KVERS names only release
# chroots' kernels) and every installed linux-source tarball:
#   - module build with W=1 and -Werror (any warning fails, modpost's too),
#     its probes compiled both ways (module/probes.sh: in one compile and one
#     by one, the same answers)
#   - no cycle in which file of the module calls which, from that build's
#     objects (calls.sh)
#   - sparse (C=2, -Wsparse-error)
#   - kernel-doc -v -none (-Werror; any warning fails)
#   - checkpatch.pl --no-tree --strict -f
#   - codespell with the dictionary checkpatch's --codespell reads (when
#     installed): the same words, once, in 0.3 CPU-seconds where checkpatch
#     --codespell took 40 more for each linux-source
#   - the uapi header as C90 with -m64 and -m32, included twice, and the
#     same struct sizes and ioctl numbers in both
# The TAP also goes to $BUILD/lint.tap.  With -s, ends with the summary line.
set -u -o pipefail
. "$(dirname "$0")/lib.sh"

summary=
[ "${1:-}" = -s ] && summary=1

take_check_lock
out=$BUILD/lint
tapf=$BUILD/lint.tap
mkdir -p "$out"
: >"$tapf"
n=0

emit() { printf '%s\n' "$*" | tee -a "$tapf"; }
# check NAME OUTPUTFILE STATUS: one TAP line; a failure shows the output.
check() {
	n=$((n + 1))
	if [ "$3" -eq 0 ]; then
		emit "ok $n lint: $1"
	else
		emit "not ok $n lint: $1"
		sed 's/^/#   /' "$2" | tee -a "$tapf"
	fi
}
# no_warnings FILE: true if FILE has no compiler or checker diagnostics.
no_warnings() { ! grep -Eqi 'warning|error' "$1"; }

cd "$ROOT" || exit 1
shopt -s nullglob
kfiles=(module/*.c module/*.h uapi/linux/*.h)
cfiles=(module/*.c module/*.h uapi/linux/wsem.h)
# Not the probes' header that an in-tree "make module" generates.
generated=module/compat-probes.h
mapfile -t kfiles < <(printf '%s\n' "${kfiles[@]}" | grep -vx "$generated")
mapfile -t cfiles < <(printf '%s\n' "${cfiles[@]}" | grep -vx "$generated")

csdict=
command -v codespell >/dev/null && csdict=$(codespell_dict)

# ksrc_checks VERSION: kernel-doc and checkpatch of linux-source-VERSION,
# each leaving its output in $out/NAME-VERSION and its status in .st.
ksrc_checks() {
	local v=$1 src res werror
	src=$(ksrc "$v") || { echo 1 >"$out/extract-$v.st"; return; }
	echo 0 >"$out/extract-$v.st"
	res=$out/kernel-doc-$v
	werror=
	grep -q -- '-Werror' "$src/scripts/kernel-doc" && werror=-Werror
	perl "$src/scripts/kernel-doc" -v -none $werror "${kfiles[@]}" \
		>"$res" 2>&1 && no_warnings "$res"
	echo $? >"$res.st"
	res=$out/checkpatch-$v
	perl "$src/scripts/checkpatch.pl" --no-tree --strict --quiet \
		-f "${cfiles[@]}" >"$res" 2>&1
	echo $? >"$res.st"
}

# They take a while (extracting the tarball, checkpatch): in the background
# while the kernel builds run.
versions=$(ksrc_versions)
ksrc_pids=
for v in $versions; do
	rm -f "$out"/*-"$v".st
	ksrc_checks "$v" &
	ksrc_pids="$ksrc_pids $!"
done

kernels=$(find_kernels)
# KVERS naming only release chroots' kernels (KVERS=5.10): the default
# installed one, as without KVERS.
[ -n "$kernels" ] || kernels=$(KVERS='' default_kernel)
[ -n "$kernels" ] || { n=$((n + 1)); emit "not ok $n lint: no kernel headers installed"; }
for k in $kernels; do
	dir=$out/$k
	res=$out/$k.w1
	copy_module_tree "$dir" >"$res" 2>&1 &&
		WSEM_PROBES=compare $MAKE -s -C "$(kdir_of "$k")" M="$dir" \
			W=1 KCFLAGS=-Werror modules 2>&1 |
		grep -v '^Skipping BTF generation' >"$res"
	st=${PIPESTATUS[0]}
	[ "$st" -eq 0 ] && no_warnings "$res"
	w1=$?
	check "W=1 -Werror build against $k, its probes the same in one compile as one by one" "$res" $w1

	# The objects of that build: which file calls which (calls.sh).
	res=$out/$k.calls
	bash "$VMDIR/calls.sh" "$dir" >"$res" 2>&1
	check "no module file calls back into one that calls it ($k)" \
		"$res" $?

	# Only sparse's own findings count here: when the build above failed,
	# this one compiles again and repeats the compiler's.  The same W=1
	# and KCFLAGS as that build: its objects are up to date for these
	# flags, so C=2 runs sparse on every file and compiles nothing (9
	# CPU-seconds against 6.1, where a pass that compiles again took 35).
	res=$out/$k.sparse
	$MAKE -s -C "$(kdir_of "$k")" M="$dir" W=1 KCFLAGS=-Werror C=2 \
		CHECK="sparse -Wsparse-error" modules >"$res" 2>&1
	st=$?
	grep -E ': (warning|error): ' "$res" | grep -Ev '\[-W[^]]*\]$' \
		>"$res.f"
	if [ ! -s "$res.f" ] && [ "$st" -ne 0 ] && [ "$w1" -eq 0 ]; then
		cp "$res" "$res.f"
	fi
	[ ! -s "$res.f" ]
	check "sparse against $k" "$res.f" $?
done

# shellcheck disable=SC2086 # a list of pids
wait $ksrc_pids
[ -n "$versions" ] || { n=$((n + 1)); emit "not ok $n lint: no linux-source tarball in /usr/src"; }
for v in $versions; do
	if [ "$(cat "$out/extract-$v.st" 2>/dev/null)" != 0 ]; then
		n=$((n + 1))
		emit "not ok $n lint: extracting linux-source-$v"
		continue
	fi
	check "kernel-doc (linux-source-$v)" "$out/kernel-doc-$v" \
		"$(cat "$out/kernel-doc-$v.st")"
	check "checkpatch --strict (linux-source-$v)" \
		"$out/checkpatch-$v" "$(cat "$out/checkpatch-$v.st")"
done
if [ -n "$csdict" ]; then
	codespell -D "$csdict" "${cfiles[@]}" >"$out/codespell" 2>&1
	check "codespell -D ${csdict##*/} (the dictionary of checkpatch --codespell)" \
		"$out/codespell" $?
fi

# The uapi header as userspace sees it.
hdr=uapi/linux/wsem.h
printf '#include <linux/wsem.h>\n#include <linux/wsem.h>\n' >"$out/uapi.c"
for m in 64 32; do
	res=$out/uapi-m$m
	gcc -std=c90 -Wall -Werror -fsyntax-only -m$m -Iuapi "$out/uapi.c" \
		>"$res" 2>&1
	check "$hdr is C90 (-m$m, included twice)" "$res" $?
done

# Same layout for 32-bit callers (compat_ptr_ioctl relies on it): every
# struct's size and every command number, computed with -m64, asserted
# with -m32.
res=$out/uapi-layout
{
	structs=$(sed -n 's/^struct \([a-z0-9_]*\) {.*/\1/p' "$hdr")
	cmds=$(sed -n 's/^#define \(WSEM_IOC_[A-Z0-9_]*\)[[:space:]].*/\1/p' "$hdr")
	{
		printf '#include <stdio.h>\n#include <linux/wsem.h>\n'
		printf 'int main(void)\n{\n'
		for s in $structs; do
			printf '\tprintf("_Static_assert(sizeof(struct %s) == %%zu, \\"%s\\");\\n", sizeof(struct %s));\n' "$s" "$s" "$s"
		done
		for c in $cmds; do
			printf '\tprintf("_Static_assert(%s == %%luU, \\"%s\\");\\n", (unsigned long)%s);\n' "$c" "$c" "$c"
		done
		printf '\treturn 0;\n}\n'
	} >"$out/layout-gen.c"
	gcc -std=gnu11 -Wall -Werror -m64 -Iuapi -o "$out/layout-gen" \
		"$out/layout-gen.c" &&
	{
		printf '#include <linux/wsem.h>\n'
		"$out/layout-gen"
	} >"$out/layout-check.c" &&
	gcc -std=gnu11 -Wall -Werror -fsyntax-only -m32 -Iuapi \
		"$out/layout-check.c"
} >"$res" 2>&1
check "$hdr: same struct sizes and ioctl numbers with -m32 and -m64" \
	"$res" $?

if [ -n "$summary" ]; then
	awk -f "$VMDIR/summary.awk" label=- "$tapf"
	exit $?
fi
! grep -q '^not ok' "$tapf"
