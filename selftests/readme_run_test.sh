#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# README.md's shell blocks, run as a reader types them: every ```sh block
# runs, in the README's order, in one fresh IPC and mount namespace, each
# block with "sh -e" in a directory holding a few .wav files.  A block is
# left out only when the line before its fence says why:
# "<!-- not run by selftests/readme_run_test.sh: REASON -->".
#
# make, ninja, cargo and flac are stand-ins that record what they were started
# with and what the namespace's semaphores held at that moment, so the
# checks are the README's own words: each block succeeds, each command a
# block gates runs while its weight is held ("holds 2 while make runs"),
# and nothing is held once a block ends.  The README (copied next to this
# file by mkinitramfs.sh) is the one of the tree under test.  Runs as root
# in the test VM; TAP on stdout.

if [ ! -c /dev/wsem ]; then
	echo "1..0 # SKIP no /dev/wsem: the wsem module is not loaded"
	exit 4
fi
README=$(dirname "$0")/README.md
[ -f "$README" ] || { echo "Bail out! no $README"; exit 1; }
T=$(mktemp -d /tmp/readme_run_test.XXXXXX) || exit 1
trap 'rm -rf "$T"' EXIT
mkdir "$T/blocks" "$T/bin" "$T/work"
: >"$T/work/a.wav"
: >"$T/work/b.wav"
: >"$T/work/c.wav"

# The blocks, one file each, named by the line of their fence; a block
# with a reason in front of it goes to "skipped" instead.
awk -v dir="$T/blocks" '
/^<!-- not run by selftests\/readme_run_test.sh: .* -->$/ { why = NR; next }
/^```sh$/ && !f {
	if (why == NR - 1) { print NR > (dir "/skipped"); f = "/dev/null" }
	else f = sprintf("%s/%05d.sh", dir, NR)
	next
}
/^```/ && f { if (f != "/dev/null") close(f); f = ""; next }
f { print > f }
' "$README"

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

# In the namespaces: each block's status, then what is held after it.
cat >"$T/all.sh" <<EOT
mount --make-rprivate / 2>/dev/null
cd "$T/work" || exit 1
for b in "$T"/blocks/*.sh; do
	PATH="$T/bin:\$PATH" sh -e "\$b" >"\$b.out" 2>&1
	echo "\$? \$(wsem ls | awk 'NR > 1 && \$3 > 0 { printf " %s=%s", \$1, \$3 }')" \
		>"\$b.after"
done
EOT
unshare -i -m sh "$T/all.sh"

# shellcheck source-path=SCRIPTDIR source=util.sh
. "$(dirname "$0")/util.sh"

# ran PATTERN COUNT: COUNT stand-in lines match PATTERN (grep -E).
ran() {
	[ "$(grep -cE "$1" "$T/ran")" -eq "$2" ]
}

blocks=0
for b in "$T"/blocks/*.sh; do
	[ -f "$b" ] && blocks=$((blocks + 1))
done
skipped=$(wc -l <"$T/blocks/skipped" 2>/dev/null || echo 0)
[ "$blocks" -ge 5 ]
result "README.md: $blocks sh blocks run, $skipped left out with a reason" $?
for b in "$T"/blocks/*.sh; do
	line=$(basename "$b" .sh)
	line=${line#"${line%%[!0]*}"}
	read -r st held <"$b.after"
	[ "$st" -eq 0 ]
	result "README.md:$line: the block runs (exit $st)" $? "$b.out"
	[ -z "$held" ]
	result "README.md:$line: nothing is held after it${held:+ (held:$held)}" $?
done
# Every stand-in ran under a lease: some semaphore was in use.
! grep -q '|$' "$T/ran"
result "every make, ninja, cargo and flac ran while weight was held" $? "$T/ran"
ran '^make -j2 \|  \| build=2$' 1
result "wsem run build --weight 2 -- make -j2: make runs holding 2" $? "$T/ran"
ran '^flac -s [abc]\.wav \|  \| enc=[1-3]$' 3
result "the .wav loop: flac runs once per file under enc's lease" $? "$T/ran"
grep -q '^capacity: *4$' "$T"/blocks/*.sh.out
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
result "exec 9<>, wsem acquire --fd 9 -w 2: make runs holding 2" $? "$T/ran"

tap_end
