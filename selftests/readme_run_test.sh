#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The shell blocks of README.md and docs/*.md, run as a reader types them:
# README.md's first, then each docs/*.md's in name order; within a file,
# every ```sh block runs in the file's order, in one fresh IPC and mount
# namespace of that file's own, where wsemfs is mounted at /sys/fs/wsem
# as the packages mount it at boot; each block with "sh -e" in a
# directory holding a few .wav files.  A block is left out only when the
# line before its fence says why:
# "<!-- not run by selftests/readme_run_test.sh: REASON -->".
#
# make, ninja, cargo and flac are stand-ins that record what they were started
# with and what the namespace's semaphores held at that moment, so the
# checks are the documents' own words: each block succeeds, each command a
# block gates runs while its weight is held ("holds 2 while make runs"),
# and nothing is held once a block ends.  README.md and docs/ (copied next
# to this file by mkinitramfs.sh) are those of the tree under test.  Runs
# as root in the test VM; TAP on stdout.

if [ ! -c /dev/wsem ]; then
	echo "1..0 # SKIP no /dev/wsem: the wsem module is not loaded"
	exit 4
fi
DIR=$(dirname "$0")
[ -f "$DIR/README.md" ] || { echo "Bail out! no $DIR/README.md"; exit 1; }
[ -d "$DIR/docs" ] || { echo "Bail out! no $DIR/docs"; exit 1; }
T=$(mktemp -d /tmp/readme_run_test.XXXXXX) || exit 1
trap 'rm -rf "$T"' EXIT
mkdir "$T/blocks" "$T/bin" "$T/work"
: >"$T/work/a.wav"
: >"$T/work/b.wav"
: >"$T/work/c.wav"
docs=$(cd "$DIR" && echo README.md && ls docs/*.md)

# The blocks, one directory per file (its name with "/" made "@"), one
# file per block named by the line of its fence; a block with a reason in
# front of it goes to "skipped" instead.
for doc in $docs; do
	d="$T/blocks/$(echo "$doc" | tr / @)"
	mkdir "$d"
	awk -v dir="$d" '
	/^<!-- not run by selftests\/readme_run_test.sh: .* -->$/ { why = NR; next }
	/^```sh$/ && !f {
		if (why == NR - 1) { print NR > (dir "/skipped"); f = "/dev/null" }
		else f = sprintf("%s/%05d.sh", dir, NR)
		next
	}
	/^```/ && f { if (f != "/dev/null") close(f); f = ""; next }
	f { print > f }
	' "$DIR/$doc"
done

# The stand-ins: "NAME ARGS | MAKEFLAGS | the semaphores in use".
for tool in make ninja cargo flac; do
	cat >"$T/bin/$tool" <<EOT
#!/bin/sh
printf '%s %s | %s |%s\n' $tool "\$*" "\${MAKEFLAGS:-}" \
	"\$(wsem ls | awk 'NR > 1 && \$3 > 0 { printf " %s=%s", \$1, \$3 }')" \
	>>"$T/ran"
EOT
	chmod 0755 "$T/bin/$tool"
done
: >"$T/ran"

# In a file's namespaces: each block's status, then what is held after it.
cat >"$T/all.sh" <<EOT
mount --make-rprivate / 2>/dev/null
mount -t wsem none /sys/fs/wsem || exit 1
cd "$T/work" || exit 1
for b in "\$1"/*.sh; do
	[ -f "\$b" ] || continue
	PATH="$T/bin:\$PATH" sh -e "\$b" >"\$b.out" 2>&1
	echo "\$? \$(wsem ls | awk 'NR > 1 && \$3 > 0 { printf " %s=%s", \$1, \$3 }')" \
		>"\$b.after"
done
EOT
for doc in $docs; do
	unshare -i -m sh "$T/all.sh" "$T/blocks/$(echo "$doc" | tr / @)"
done

# shellcheck source-path=SCRIPTDIR source=util.sh
. "$(dirname "$0")/util.sh"

# ran PATTERN COUNT: COUNT stand-in lines match PATTERN (grep -E).
ran() {
	[ "$(grep -cE "$1" "$T/ran")" -eq "$2" ]
}

blocks=0
for b in "$T"/blocks/*/*.sh; do
	[ -f "$b" ] && blocks=$((blocks + 1))
done
skipped=$(cat "$T"/blocks/*/skipped 2>/dev/null | wc -l)
[ "$blocks" -ge 5 ]
result "README.md, docs/*.md: $blocks sh blocks run, $skipped left out with a reason" $?
for doc in $docs; do
	for b in "$T/blocks/$(echo "$doc" | tr / @)"/*.sh; do
		[ -f "$b" ] || continue
		line=$(basename "$b" .sh)
		line=${line#"${line%%[!0]*}"}
		st=1 held=
		[ -f "$b.after" ] && read -r st held <"$b.after"
		[ "$st" -eq 0 ]
		result "$doc:$line: the block runs (exit $st)" $? "$b.out"
		[ -z "$held" ]
		result "$doc:$line: nothing is held after it${held:+ (held:$held)}" $?
	done
done
# Every stand-in ran under a lease: some semaphore was in use.
! grep -q '|$' "$T/ran"
result "every make, ninja, cargo and flac ran while weight was held" $? "$T/ran"
ran '^make -j2 \|  \| build=2$' 1
result "wsem run build --weight 2 -- make -j2: make runs holding 2" $? "$T/ran"
ran '^flac -s [abc]\.wav \|  \| enc=[1-3]$' 3
result "the .wav loop: flac runs once per file under enc's lease" $? "$T/ran"
grep -q '^capacity: *4$' "$T"/blocks/*/*.sh.out
result "cat /sys/fs/wsem/gpu shows capacity 4" $?
ran '^make  \|  -j1 --jobserver-auth=fifo:/sys/fs/wsem/@jobserver/build \| build=1$' 1
result "wsem run build --jobserver -- make: MAKEFLAGS names the fifo" $? "$T/ran"
ran '^make  \|  -j1 --jobserver-auth=[0-9]+,[0-9]+ \| build=1$' 1
result "--jobserver=pipe: MAKEFLAGS names two descriptors" $? "$T/ran"
ran '^ninja  \|  -j1 --jobserver-auth=fifo:/sys/fs/wsem/@jobserver/build \| build=1$' 1
result "wsem run build --jobserver -- ninja: the same MAKEFLAGS" $? "$T/ran"
ran '^cargo build \|  -j1 --jobserver-auth=fifo:/sys/fs/wsem/@jobserver/build \| build=1$' 1
result "wsem run build --jobserver -- cargo build: the same MAKEFLAGS" $? "$T/ran"
ran '^make -j2 \|  \| gpu=2$' 1
result "exec 9<>, wsem acquire --fd 9 --weight 2: make runs holding 2" $? "$T/ran"

tap_end
