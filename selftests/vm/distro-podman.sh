#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The podman scenario of `make check-distro`, in the Debian guest, as root,
# wsem installed from the .debs and the host semaphore SEM (capacity CAP)
# made from /etc/wsem.d at boot.
#
# usage: distro-podman.sh SEM CAP OUT
#
# Three containers a, b and c (crun, --network none, an image imported
# from a tarball of busybox and the static wsem) each run their jobs under
# `wsem run /run/limits/SEM`, the host's /sys/fs/wsem/SEM bind-mounted
# there with -v.  The host holds the whole capacity while they queue, in
# the order a (weight 3), b (2), c (1), then lets go: a's job runs, b's
# does not fit, and c's, which would, waits behind it (strict FIFO, across
# containers).  Then `podman kill a` while a holds its weight: it goes
# back, b and c run, and at the end nothing is held.  Then docs/containers.md's
# "Splitting a limit among containers", its commands as written there:
# gpu 8 split by the host into gpu-a 4 and gpu-b 6, each bind-mounted
# into a container of its own user namespace; a container waits past its
# share, cannot take more than its capacity or resize it, podman kill
# returns its weight, b makes a child of its share inside, and
# gpu's used, sampled all along, never exceeds 8.
#
# Leaves OUT/podman.tap ("STATUS NAME" a line), OUT/timeline and
# OUT/podman.log.
set -u -o pipefail

SEM=$1 CAP=$2 OUT=$3
. "$(dirname "$0")/distro-util.sh"
FILE=/sys/fs/wsem/$SEM
IMG=localhost/wsem-lane:1
WORK=/tmp/wsem-podman
TL=$WORK/log/events
LOG=$OUT/podman.log
: >"$OUT/podman.tap"
: >"$LOG"
exec >>"$LOG" 2>&1

check() {
	echo "$1 $2" >>"$OUT/podman.tap"
	echo "== $([ "$1" -eq 0 ] && echo ok || echo FAILED) at $(up)s: $2"
}
ev() { echo "$(up) $*" >>"$TL"; }

# field NAME: one number of `wsem stat SEM --json`.
field() {
	wsem stat "$SEM" --json | grep -o "\"$1\":[0-9]*" | cut -d: -f2
}
is_used() { [ "$(field used)" = "$1" ]; }
is_waiting() { [ "$(field waiters)" = "$1" ]; }
# who KIND: the containers (a, b, c; "host" for anything else) of the
# semaphore's holders or queue, in the kernel's order: each entry's
# cgroup names its container.
who() {
	wsem stat "$SEM" --json |
		sed -n "s/.*\"$1\":\[\([^]]*\)\].*/\1/p" | sed 's/},{/}\n{/g' |
		while read -r e; do
			[ -n "$e" ] || continue
			c=host
			for n in a b c; do
				id=$(cat "$WORK/id-$n" 2>/dev/null)
				[ -n "$id" ] || continue
				case $e in *"$id"*) c=$n ;; esac
			done
			printf '%s ' "$c"
		done
}

# The kernel's own account: wsem's tracepoints (queue, grant, release).
TR=/sys/kernel/tracing
trace_start() {
	[ -d "$TR/events/wsem" ] || return 1
	echo 0 >"$TR/tracing_on" && : >"$TR/trace" &&
		echo 1 >"$TR/events/wsem/enable" && echo 1 >"$TR/tracing_on"
}

# ctr_of PID: the container (a, b, c) whose cgroup PID is in, else host.
ctr_of() {
	local n id cg
	cg=$(cat "/proc/$1/cgroup" 2>/dev/null)
	for n in a b c; do
		id=$(cat "$WORK/id-$n" 2>/dev/null)
		[ -n "$id" ] || continue
		case $cg in *"$id"*) echo "$n"; return ;; esac
	done
	echo host
}

# note_queued: which container each queued pid of the trace is in, while
# they are all alive (pid -> container, in $WORK/pids).
note_queued() {
	local pid
	sed -n 's/.*wsem_queue: .* pid=\([0-9]*\) .*/\1/p' "$TR/trace" |
		while read -r pid; do
			echo "$pid $(ctr_of "$pid")"
		done >"$WORK/pids"
}

# grant_order: whose the trace's grants were (host, a, b, c), in the
# order the kernel made them; the second jobs, queued later, are "-".
grant_order() {
	sed -n 's/.*wsem_grant: .* pid=\([0-9]*\) .*/\1/p' "$TR/trace" |
		while read -r pid; do
			printf '%s ' "$(awk -v p="$pid" '$1 == p { print $2 }' \
				"$WORK/pids" | grep . || echo -)"
		done
}

# started JOB: the job's start is in the log.
started() { grep -q " start $1 " "$TL"; }

# The semaphore as the kernel sees it, logged whenever it changes.
monitor() {
	local last='' cur t
	while [ ! -e "$WORK/stop" ]; do
		t=$(up)
		cur="$(field used) $(field waiters)"
		[ "$cur" != "$last" ] && echo "$t sem $cur" >>"$TL"
		last=$cur
		sleep 0.1
	done
}

# The image: busybox and the static wsem from the wsem package, imported
# from a tarball.
make_image() {
	local r=$WORK/rootfs a
	mkdir -p "$r/bin" "$r/proc" "$r/sys" "$r/dev" "$r/tmp" "$r/etc" \
		"$r/run/limits" "$r/log"
	cp /bin/busybox "$r/bin/busybox" || return 1
	for a in sh sleep cat cut echo ls; do
		ln -s busybox "$r/bin/$a"
	done
	cp /usr/bin/wsem-static "$r/bin/wsem" || return 1
	# Stand-ins for docs/containers.md's jobs: train and infer hold on until
	# killed, ci-job ends at once.
	printf '#!/bin/sh\nexec sleep 600\n' >"$r/bin/train"
	printf '#!/bin/sh\nexec sleep 600\n' >"$r/bin/infer"
	printf '#!/bin/sh\necho ci-job ran\n' >"$r/bin/ci-job"
	chmod 755 "$r/bin/train" "$r/bin/infer" "$r/bin/ci-job"
	tar -C "$r" -cf "$WORK/rootfs.tar" . &&
		podman import "$WORK/rootfs.tar" "$IMG"
}

# The jobs of one container: "NAME WEIGHT SECONDS" triples, one after the
# other, each under `wsem run` on the bind-mounted file.
cat_job_script() {
	cat <<'EOF'
#!/bin/sh
while [ $# -ge 3 ]; do
	wsem run /run/limits/sem --weight "$2" -- sh -c '
		echo "$(cut -d" " -f1 /proc/uptime) start $0 $1" >>/log/events
		sleep "$2"
		echo "$(cut -d" " -f1 /proc/uptime) end $0 $1" >>/log/events
	' "$1" "$2" "$3"
	echo "$(cut -d" " -f1 /proc/uptime) exit $1 $2 $?" >>/log/events
	shift 3
done
EOF
}

# ctr NAME JOBS...: start container NAME running the jobs.
ctr() {
	local name=$1
	shift
	ev "podman-run $name"
	podman run -d --name "$name" --runtime crun --network none \
		-v "$FILE:/run/limits/sem" -v "$WORK/log:/log" \
		"$IMG" sh /log/jobs.sh "$@" >"$WORK/id-$name"
}

# The readable timeline: seconds since the start, what happened, and the
# semaphore (used/capacity, waiters) as it was then.
timeline() {
	sort -n -s -k1,1 "$TL" | awk -v cap="$CAP" -v sem="$SEM" '
	NR == 1 { t0 = $1; used = 0; waiters = 0 }
	{
		t = sprintf("%7.2fs", $1 - t0)
		what = ""
		if ($2 == "sem") {
			used = $3; waiters = $4
			what = "the kernel: " used "/" cap " used, " waiters " waiting"
		} else if ($2 == "start") {
			what = "job " $3 " (" substr($3, 1, 1) ", weight " $4 ") starts"
		} else if ($2 == "end") {
			what = "job " $3 " ends"
		} else if ($2 == "exit") {
			what = "job " $3 ": wsem run exits " $5
		} else if ($2 == "podman-run") {
			what = "podman run " $3
		} else if ($2 == "kill") {
			what = "podman kill " $3 " (holds weight)"
		} else {
			$1 = ""
			what = substr($0, 2)
		}
		printf "%s  %s\n", t, what
	}'
}

podman rm -f -i a b c >/dev/null 2>&1
rm -rf "$WORK"
mkdir -p "$WORK/log"
: >"$TL"
cat_job_script >"$WORK/log/jobs.sh"
chmod -R a+rwX "$WORK/log"

echo "== podman $(podman version --format '{{.Client.Version}}')," \
	"runtime $(podman info --format '{{.Host.OCIRuntime.Name}}')," \
	"cgroups $(podman info --format '{{.Host.CgroupsVersion}}')"
[ "$(podman info --format '{{.Host.OCIRuntime.Name}}/{{.Host.CgroupsVersion}}')" = crun/v2 ]
check $? "podman: runs on crun with cgroup v2"
make_image
check $? "podman: image imported from a tarball of busybox and the static wsem"

trace_start
check $? "podman: wsem's tracepoints on (the kernel's grant order)"
ev "start: $SEM has capacity $CAP"
monitor &
mon=$!

# The host holds everything while the containers queue, so that their
# order in the queue is the order they were started in.
wsem run "$SEM" --weight "$CAP" -- sh -c "
	echo \"\$(cut -d' ' -f1 /proc/uptime) host holds $CAP\" >>$TL
	while [ ! -e $WORK/go ]; do sleep 0.1; done" &
gate=$!
until_true 30 is_used "$CAP"
check $? "podman: the host holds all $CAP units"

ok=0
ctr a a1 3 600 || ok=1
until_true 60 is_waiting 1 || ok=1
ctr b b1 2 3 b2 1 2 || ok=1
until_true 60 is_waiting 2 || ok=1
ctr c c1 1 3 c2 2 2 || ok=1
until_true 60 is_waiting 3 || ok=1
queue=$(who queue)
note_queued
echo "$gate host" >>"$WORK/pids"
ev "the kernel's queue: $queue(a1 weight 3, b1 2, c1 1)"
check $ok "podman: three containers (--network none) queue on $FILE bind-mounted"
[ "$queue" = "a b c " ]
check $? "podman: the kernel queues them across containers in arrival order: $queue"

ev "the host lets go"
touch "$WORK/go"
wait "$gate"
until_true 30 started a1
check $? "podman: a1 (weight 3) starts once the host lets go"

# b1 (2) does not fit next to a1 (3); c1 (1) would, and must not pass it.
sleep 3
held=$(who holders)
queue=$(who queue)
! started b1 && ! started c1 && is_used 3 && [ "$held" = "a " ] &&
	[ "$queue" = "b c " ]
st=$?
ev "3 s later: a holds, the queue is $queue(c1 would fit; FIFO keeps it behind b1)"
check $st "podman: FIFO across containers: c1 (weight 1) waits behind b1 (weight 2): held $held, queue $queue"

ev "kill a"
podman kill a >/dev/null
until_true 60 started b1 && until_true 30 started c1
check $? "podman: podman kill a returns a1's weight: b1 and c1 start"

# Granted in queue order, as the kernel's grant events tell: the host's
# gate (at once), then a1, b1, c1.  What comes after them depends on the
# moment of the read (b2 and c2, "-" until their pids are written down),
# so the check's name shows what was read only when it fails.
order=$(grant_order)
ev "the kernel's grants, in order: $order"
name="podman: the kernel granted in queue order: host a b c"
case $order in
"host a b c "*) st=0 ;;
*) st=1 name="$name (got $order)" ;;
esac
check $st "$name"

# Everything left runs to its end (a minute is plenty: what stays, a
# stuck queue, is a failure).
rcs=$(timeout 60 podman wait b c | tr '\n' ' ')
rca=$(podman inspect a --format '{{.State.ExitCode}}')
ev "containers ended: a $rca (killed), b and c: $rcs"
[ "$rcs" = "0 0 " ] && [ "$rca" = 137 ]
check $? "podman: b and c exit 0, a was killed (137): $rca / $rcs"

until_true 10 is_used 0 && is_waiting 0
check $? "podman: nothing held or waiting at the end"
touch "$WORK/stop"
wait "$mon"

# a1 never ended.
! grep -q ' end a1 ' "$TL"
check $? "podman: a1 did not end: it was killed holding its weight"

echo 0 >"$TR/events/wsem/enable"
echo "== the trace"
cat "$TR/trace"
timeline >"$OUT/timeline"
echo "== timeline"
cat "$OUT/timeline"
podman rm -f a b c >/dev/null

# As a new user would: a limit made by hand, two containers started with
# one -v each and no other option, and `wsem stat` on the host shows what
# they hold.
gpu=/sys/fs/wsem/gpu
wsem create gpu 4 --mode 0666
check $? "new user: wsem create gpu 4 --mode 0666"
gpu_used() {
	[ "$(wsem stat gpu --json | grep -o '"used":[0-9]*' | cut -d: -f2)" = "$1" ]
}
podman run -d -v $gpu:/run/limits/gpu "$IMG" \
	wsem run /run/limits/gpu --weight 1 -- sleep 600 >"$WORK/id-g1" &&
	podman run -d -v $gpu:/run/limits/gpu "$IMG" \
		wsem run /run/limits/gpu --weight 2 -- sleep 600 >"$WORK/id-g2" &&
	until_true 60 gpu_used 3
st=$?
echo "== wsem stat gpu, two containers holding"
wsem stat gpu | tee "$OUT/new-user-stat"
# Each holder is named by its container's cgroup, which holds its id.
grep -q "$(cat "$WORK/id-g1")" "$OUT/new-user-stat" &&
	grep -q "$(cat "$WORK/id-g2")" "$OUT/new-user-stat"
check $((st | $?)) "new user: two containers with one -v each hold 1 + 2 of gpu, and wsem stat gpu on the host names them"
podman rm -f "$(cat "$WORK/id-g1")" "$(cat "$WORK/id-g2")" >/dev/null
until_true 30 gpu_used 0 && wsem rm gpu
check $? "new user: podman rm gives the weight back; wsem rm gpu"

# docs/containers.md's "Splitting a limit among containers", its commands
# as written there (IMAGE is $IMG): 8 GPU slots, A may use 4, B 6, together
# never more than 8.  Each container has a user namespace of its own
# (--uidmap), so that its root does not own what the host made.
jf() { wsem stat "$1" --json | grep -o "\"$2\":[0-9]*" | head -n 1 | cut -d: -f2; }
is() { [ "$(jf "$1" "$2")" = "$3" ]; }
wsem create gpu 8 &&
	wsem create gpu-a 4 --parent gpu --mode 0666 &&
	wsem create gpu-b 6 --parent gpu --mode 0666
check $? "split: wsem create gpu 8; gpu-a 4 and gpu-b 6 --parent gpu"
t_split=$(up)
# The kernel's used of gpu, sampled all along: never above 8.
: >"$WORK/gpu-used"
rm -f "$WORK/split-stop"
while [ ! -e "$WORK/split-stop" ]; do
	jf gpu used >>"$WORK/gpu-used"
	sleep 0.1
done &
sampler=$!
podman run -d --name a --uidmap 0:100000:65536 --gidmap 0:100000:65536 \
	-v /sys/fs/wsem/gpu-a:/run/limits/gpu "$IMG" \
	wsem run /run/limits/gpu --weight 4 -- train >/dev/null &&
	until_true 60 is gpu-a used 4 && is gpu used 4
check $? "split: container a (own user namespace, gpu-a bind-mounted) holds 4 of gpu-a and of gpu"
# Its share is full: one more unit waits, though gpu has 4 free.
podman exec a wsem run /run/limits/gpu --timeout 1 -- train
st=$?
echo "wsem run past a's share: exit $st"
[ $st -eq 124 ] && is gpu-a used 4 && is gpu used 4 && is gpu-a waiters 0
check $? "split: in a, wsem run over its share of 4 waits (timed out, exit 124), gpu's 4 free untouched"
podman exec a wsem run /run/limits/gpu --weight 5 -- train 2>"$WORK/err"
st=$?
cat "$WORK/err"
[ $st -ne 0 ] && grep -q 'exceeds capacity 4' "$WORK/err" && is gpu used 4
check $? "split: in a, --weight 5 fails: $(cat "$WORK/err")"
podman exec a wsem resize /run/limits/gpu 8 2>"$WORK/err"
st=$?
cat "$WORK/err"
[ $st -ne 0 ] && grep -q 'Operation not permitted' "$WORK/err" &&
	is gpu-a capacity 4
check $? "split: in a, wsem resize of its share (the parent of its children) fails: $(cat "$WORK/err")"
podman run -d --name b --uidmap 0:200000:65536 --gidmap 0:200000:65536 \
	--device /dev/wsem -v /sys/fs/wsem/gpu-b:/run/limits/gpu "$IMG" \
	wsem run /run/limits/gpu --weight 4 -- infer >/dev/null &&
	until_true 60 is gpu-b used 4 && is gpu used 8
check $? "split: container b (gpu-b bind-mounted) holds 4: gpu's 8 are all held"
# b has 2 of its 6 free, gpu none: b's next job waits.
podman exec -d b wsem run /run/limits/gpu -- infer >/dev/null &&
	until_true 30 is gpu-b waiters 1
st=$?
sleep 1
echo "== b's second job waiting"
wsem stat gpu; wsem stat gpu-b
[ $st -eq 0 ] && is gpu used 8 && is gpu-b used 4 && is gpu-a used 4
check $? "split: b's next job waits (b has room, gpu has none): gpu 8 = a 4 + b 4"
podman kill a >/dev/null &&
	until_true 60 is gpu-b used 5 && is gpu-a used 0 && is gpu used 5
check $? "split: podman kill a returns its 4: b's waiting job runs, gpu holds 5"
# B's own CI splits its share again: a child made inside the container,
# of the file it was given, through the /dev/wsem it was given.
out=$(podman exec b sh -c '
	wsem create job1 2 --parent /run/limits/gpu
	wsem run job1 -- ci-job' 2>&1)
st=$?
echo "$out"
[ $st -eq 0 ] && [ "$out" = "ci-job ran" ] && is gpu used 5 && is gpu-b used 5
check $? "split: in b, a child of its bind-mounted share, made inside, runs a job: $out"
podman rm -f a b >/dev/null
until_true 30 is gpu used 0 && is gpu waiters 0 &&
	is gpu-a used 0 && is gpu-b used 0 && is gpu-b waiters 0
st=$?
touch "$WORK/split-stop"
wait "$sampler"
max=$(sort -n "$WORK/gpu-used" | tail -n 1)
echo "gpu used, sampled $(wc -l <"$WORK/gpu-used") times: at most $max"
check $st "split: podman rm -f: nothing held or waiting on gpu, gpu-a, gpu-b"
[ "$max" = 8 ]
check $? "split: gpu's used, sampled all along, never above 8 (at most $max)"
wsem rm gpu-a && wsem rm gpu-b && wsem rm gpu
check $? "split: wsem rm gpu-a gpu-b gpu ($(awk -v a="$t_split" -v b="$(up)" 'BEGIN { printf "%.0f", b - a }') s in all)"
exit 0
