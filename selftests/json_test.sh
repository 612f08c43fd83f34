#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Every --json output of wsem(1) parsed by python3's json.loads (as bytes:
# the output must be UTF-8 and JSON both), with what once broke it: a
# token holder whose comm, set by prctl(PR_SET_NAME) to eight 'é', is cut
# at 15 bytes inside a character (it must come out as seven 'é' and
# U+FFFD), in a cgroup whose name is not ASCII; a job whose label (its
# command line, non-ASCII bytes made '?') holds '"' and '\'; a waiter.
# Covered: ls, stat (NAME, PATH, --fd), run (the lease, before COMMAND's
# output; with --inherit), wait (idle, timed out).  Runs as root in the
# test VM, which has python3 for it (mkinitramfs.sh); TAP on stdout.

# shellcheck source-path=SCRIPTDIR source=util.sh
. "$(dirname "$0")/util.sh"
need_module_and_python3
T=$(mktemp -d /tmp/json_test.XXXXXX) || exit 1
N=json$$
MNT=/sys/fs/wsem
CG=
mounted=
wsem create "$N" 4 --mode 0644 || { echo "Bail out! create failed"; exit 1; }
if [ "$(stat -f -c %t "$MNT" 2>/dev/null)" != "7773656d" ]; then
	mount -t wsem wsem "$MNT" || { echo "Bail out! cannot mount wsemfs"; exit 1; }
	mounted=1
fi

# The holder: into cgroup "grp-é" (where cgroup2 is mounted), its comm
# eight 'é' (16 bytes, cut to 15), then a token read from the endpoint;
# "held" in $T/held once it holds it, then it sleeps until killed.
cat >"$T/holder.py" <<'EOP'
import ctypes, os, sys, time
cg = sys.argv[2]
if cg:
    with open(os.path.join(cg, "cgroup.procs"), "w") as f:
        f.write(str(os.getpid()))
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(15, ctypes.c_char_p("é".encode() * 8), 0, 0, 0):
    sys.exit("prctl: errno %d" % ctypes.get_errno())
fd = os.open(sys.argv[1], os.O_RDONLY)
os.read(fd, 1)
open(sys.argv[3], "w").close()
time.sleep(600)
EOP

# The checker: parses stdin as bytes with json.loads; the expression
# $1 on the result (j) must be true.
cat >"$T/check.py" <<'EOP'
import json, sys
raw = sys.stdin.buffer.read()
sys.stdout.write(raw.decode("utf-8", "backslashreplace"))
j = json.loads(raw)
if not eval(sys.argv[1], {"j": j}):
    sys.exit("not true: " + sys.argv[1])
EOP

# parses EXPR CMD...: CMD exits 0 and its stdout is one JSON value that
# makes EXPR true.
parses() {
	expr=$1
	shift
	"$@" >"$T/json" || { echo "exit $?"; return 1; }
	python3 "$T/check.py" "$expr" <"$T/json"
}

if [ -w /sys/fs/cgroup/cgroup.procs ] && mkdir "/sys/fs/cgroup/grp-é"; then
	CG="/sys/fs/cgroup/grp-é"
fi
python3 "$T/holder.py" "$MNT/@jobserver/$N" "$CG" "$T/held" &
holder=$!
# A job whose label holds '"', '\' and two bytes of 'é' (each '?').
wsem run "$N" -- sh -c 'sleep 600' "é\"\\" &
job=$!
i=0
while { [ ! -e "$T/held" ] || [ "$(used "$N")" != 2 ]; } && [ $i -lt 100 ]; do
	i=$((i + 1))
	sleep 0.1
done
# A waiter, queued behind them: it wants all 4.
wsem run "$N" --weight 4 -- true &
waiter=$!
sleep 0.5

COMM="'é' * 7 + '\\ufffd'"
HOLDER="[h for h in j['holders'] if h['comm'] == $COMM]"
t_stat() {
	parses "len(j['holders']) == 2 and len($HOLDER) == 1 and \
		any(h['label'] == 'sh -c sleep 600 ??\"\\\\' for h in j['holders']) and \
		len(j['queue']) == 1 and j['queue'][0]['weight'] == 4 and \
		j['used'] == 2 and j['name'] == '$N'" wsem stat "$N" --json
}

t_cgroup() {
	[ -n "$CG" ] || { echo "# SKIP no cgroup2 here" >&3; return 0; }
	parses "${HOLDER}[0]['cgroup'] == '/grp-é'" wsem stat "$N" --json
}

t_stat_path_fd() {
	parses "len($HOLDER) == 1" wsem stat "$MNT/$N" --json &&
	parses "len($HOLDER) == 1" sh -c "exec 9<\"$MNT/$N\"; wsem stat --fd 9 --json"
}

t_ls() {
	parses "[s for s in j if s['name'] == '$N'][0]['waiters'] == 1" \
		wsem ls --json
}

# As nobody, who may read the semaphore (0644): the holders too.
t_nobody() {
	parses "len(j['holders']) == 2 and len(j['queue']) == 1" \
		su -s /bin/sh -c "wsem stat $N --json" nobody
}

# run --json: the lease, one line on stderr before COMMAND runs, never on
# COMMAND's stdout; --json=PATH writes it to PATH instead, and a PATH that
# cannot be written is wsem's own failure (125), with nothing taken.
t_run() {
	N2=json2$$
	wsem create "$N2" 3 || return 1
	wsem run "$N2" --weight 2 --json -- sh -c 'echo ran; echo err >&2' \
		>"$T/run" 2>"$T/run.err" || return 1
	cat "$T/run" "$T/run.err"
	[ "$(cat "$T/run")" = ran ] || return 1
	[ "$(sed -n 2p "$T/run.err")" = err ] || return 1
	head -n 1 "$T/run.err" | python3 "$T/check.py" "j['name'] == '$N2' and \
		j['weight'] == 2 and j['capacity'] == 3 and j['used'] == 2 and \
		j['waited_ns'] >= 0 and j['inherit'] is False" || return 1
	wsem run "$N2" --inherit --json="$T/lease" -- true >"$T/run" \
		2>"$T/run.err" || return 1
	[ ! -s "$T/run" ] && [ ! -s "$T/run.err" ] || return 1
	python3 "$T/check.py" "j['inherit'] is True and j['fd'] > 2 and \
		j['weight'] == 1" <"$T/lease" || return 1
	st=0
	wsem run "$N2" --json="$T/no/such/dir" -- touch "$T/ran" \
		2>"$T/run.err" || st=$?
	cat "$T/run.err"
	[ "$st" -eq 125 ] && [ ! -e "$T/ran" ] &&
		[ "$(wc -l <"$T/run.err")" -eq 1 ] &&
		grep -q "$T/no/such/dir: No such file or directory" "$T/run.err" &&
		[ "$(wsem stat "$N2" --json | python3 -c \
			'import json,sys; print(json.load(sys.stdin)["used"])')" = 0 ]
	r=$?
	wsem rm "$N2"
	return $r
}

# run --json after a wait: waited_ns tells it.
t_run_waited() {
	N3=json3$$
	wsem create "$N3" 1 || return 1
	wsem run "$N3" -- sleep 1 &
	p=$!
	sleep 0.3
	wsem run "$N3" --json=/proc/self/fd/3 -- true 3>"$T/waited"
	python3 "$T/check.py" "j['waited_ns'] >= 300000000" <"$T/waited"
	r=$?
	wait $p
	wsem rm "$N3"
	return $r
}

# wait --json: idle at once; timed out (124) while the job holds.
t_wait() {
	N4=json4$$
	wsem create "$N4" 1 || return 1
	parses "j['idle'] is True and j['name'] == '$N4'" wsem wait "$N4" --json
	r=$?
	if [ $r -eq 0 ]; then
		wsem wait "$N" -t 0.2 --json >"$T/w"
		r2=$?
		python3 "$T/check.py" "j['idle'] is False and \
			j['waited_ns'] >= 200000000" <"$T/w" && [ $r2 -eq 124 ]
		r=$?
	fi
	wsem rm "$N4"
	return $r
}

# stat --json of a cluster limit: wsem-agent's view (agent/view.go), with
# host names that hold '%', '"', '\\', a blank and 'é' (a blank and '%' the
# file escapes as %XX), an error with '"' and a byte not UTF-8.
t_cluster() {
	N5=json5$$
	wsem create "$N5" 1 || return 1
	d=/run/wsem-agent/$(readlink /proc/self/ns/ipc | tr -dc 0-9)
	mkdir -p "$d" || return 1
	printf '%s\n' "wsem-agent-view 1" "name $N5" "id 0" "pid 1" "this h\"é" \
		"prefix /wsem/$N5/" "look 1" "refresh 1" "read 1" "revision 3" \
		"capacity 6" "free 5" "failing 1 etcd: \"down\" $(printf '\377')" \
		"host h\"é 1 1 1 1 1" "host a%20b%25\\ 0 2 2 2 0" >"$d/$N5"
	parses "j['cluster']['host'] == 'h\"é' and \
		j['cluster']['error'] == 'etcd: \"down\" \\ufffd' and \
		[h['host'] for h in j['cluster']['hosts']] == ['h\"é', 'a b%\\\\'] and \
		j['cluster']['hosts'][0]['this'] is True and \
		j['cluster']['stale'] is True and j['cluster']['free'] == 5" \
		wsem stat "$N5" --json
	r=$?
	rm -f "$d/$N5"
	rmdir "$d" /run/wsem-agent 2>/dev/null
	wsem rm "$N5"
	return $r
}

exec 3>&1
check "stat --json: a comm cut inside 'é' parses, U+FFFD; label escaped" t_stat
check "stat --json: a non-ASCII cgroup name" t_cgroup
check "stat PATH --json and stat --fd N --json parse" t_stat_path_fd
check "ls --json parses" t_ls
check "stat --json as nobody (read permission): holders and queue" t_nobody
check "run --json: the lease on stderr or --json=PATH, never COMMAND's stdout" t_run
check "run --json: waited_ns after a wait" t_run_waited
check "wait --json: idle, and timed out (124)" t_wait
check "stat --json of a cluster limit: host names and the error escaped" t_cluster

kill "$holder" "$job" 2>/dev/null
wait "$holder" "$job" "$waiter" 2>/dev/null
wait_used 0
r=$?
result "nothing used at the end" $r
wsem rm "$N"
[ -n "$CG" ] && rmdir "$CG"
[ -n "$mounted" ] && umount "$MNT"
rm -rf "$T"
tap_end
