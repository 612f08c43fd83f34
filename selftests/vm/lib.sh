# SPDX-License-Identifier: GPL-2.0
# Shared helpers of the wsem VM harness; sourced by the other scripts.
#
# ROOT is the top of the source tree, BUILD (ROOT/build) where everything
# generated goes.

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$ROOT/build
# shellcheck disable=SC2034 # used by the scripts that source this
VMDIR=$ROOT/selftests/vm
# The skips a run expects (summary.awk's expected=): any other fails it.
# shellcheck disable=SC2034 # used by the scripts that source this
EXPECTED_SKIPS=${EXPECTED_SKIPS-$ROOT/selftests/expected-skips}
MAKE=${MAKE:-make}

log() { printf '%s\n' "$*" >&2; }
die() { log "$(basename "$0"): $*"; exit 1; }

# Where kernel KVER's image and modules are: /boot and /lib/modules when
# its owner installed it, else the cache guest-kernels.sh unpacked it into
# (always the cache with WSEM_CACHED_KERNELS=1): $WSEM_KERNEL_CACHE/KVER,
# one per machine (below).  Its headers: the installed ones
# (/lib/modules/KVER/build), else those guest-kernels.sh unpacked beside
# the image (kdir_of).
kernel_root() {
	if [ -z "${WSEM_CACHED_KERNELS:-}" ] && [ -f "/boot/vmlinuz-$1" ]; then
		echo ""
	else
		echo "$WSEM_KERNEL_CACHE/$1"
	fi
}
kernel_image() { echo "$(kernel_root "$1")/boot/vmlinuz-$1"; }
kernel_modules() { echo "$(kernel_root "$1")/lib/modules/$1"; }

# The newest Debian 6.1, 6.12 and 6.12 PREEMPT_RT kernels that have both
# an image (installed or cached) and headers.
installed_kernels() {
	local pat v newest
	for pat in '6.1.0-*-amd64' '6.12.*+deb12-amd64' \
		   '6.12.*+deb12-rt-amd64'; do
		newest=
		for v in /boot/vmlinuz-$pat \
			 "$WSEM_KERNEL_CACHE"/*/boot/vmlinuz-$pat; do
			v=${v##*/vmlinuz-}
			# 6.1.0-N-rt-amd64 matches the first pattern too.
			case $pat/$v in
			*-rt-*/*) ;;
			*/*-rt-amd64) continue ;;
			esac
			[ -f "$(kernel_image "$v")" ] &&
				[ -f "$(kdir_of "$v")/Makefile" ] || continue
			newest=$(printf '%s\n%s\n' "$newest" "$v" | sed '/^$/d' |
				sort -V | tail -n 1)
		done
		[ -n "$newest" ] && echo "$newest"
	done
	return 0
}

# resolve_kernel KVER: KVER if installed, else the newest of
# installed_kernels whose version starts with it ("6.1" -> 6.1.0-N-amd64);
# a PREEMPT_RT one only when KVER ends in "rt" ("6.12-rt", "rt").
resolve_kernel() {
	local k match= base=${1%rt} rt=
	if [ -f "$(kernel_image "$1")" ] && [ -f "$(kdir_of "$1")/Makefile" ]; then
		echo "$1"
		return 0
	fi
	[ "$base" != "$1" ] && rt=1
	base=${base%-}
	for k in $(installed_kernels); do
		case $k in
		*-rt-amd64) [ -n "$rt" ] || continue ;;
		*) [ -z "$rt" ] || continue ;;
		esac
		case $k in
		"$base".* | "$base"-* | "$base"+*) match=$k ;;
		esac
		[ -z "$base" ] && match=$k
	done
	[ -n "$match" ] && echo "$match"
}

# The kernels to test: installed_kernels, or those that KVERS names.
find_kernels() {
	local v k
	if [ -z "${KVERS:-}" ]; then
		installed_kernels
		return 0
	fi
	for v in $KVERS; do
		k=$(resolve_kernel "$v")
		if [ -n "$k" ]; then
			echo "$k"
		elif ! chroot_named "$v"; then
			log "no installed kernel with headers matches $v"
		fi
	done
	return 0
}

# The newest kernel of the 6.12 series, else the newest of any.
default_kernel() {
	local k
	k=$(find_kernels | grep '^6\.12\.' | grep -v -- '-rt-' | tail -n 1)
	[ -n "$k" ] || k=$(find_kernels | tail -n 1)
	echo "$k"
}

# host_mirror [security]: the Debian mirror this machine's apt uses (the
# first deb822 or one-line source whose suite is not -security; with
# "security", the first whose suite is), for the chroots and the distro
# image, so that a machine behind its own mirror or proxy uses it there
# too; deb.debian.org when the host names none.
host_mirror() {
	local want=main uri
	[ "${1:-}" = security ] && want=security
	uri=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk -v want="$want" '
	function take() {
		if (uri != "" && suites != "" && !found &&
		    ((want == "security") == (suites ~ /-security/))) {
			print uri; found = 1
		}
		uri = suites = ""
	}
	/^[ \t]*$/ { take(); next }
	/^URIs:/ { uri = $2 }
	/^Suites:/ { suites = $0 }
	END { take() }')
	[ -n "$uri" ] || uri=$(cat /etc/apt/sources.list \
		/etc/apt/sources.list.d/*.list 2>/dev/null | awk -v want="$want" '
	$1 == "deb" {
		i = 2
		if ($2 ~ /^\[/) while (i <= NF && $i !~ /\]$/) i++
		if ($2 ~ /^\[/) i++
		if ((want == "security") == ($(i + 1) ~ /-security/)) {
			print $i; exit
		}
	}')
	if [ -z "$uri" ]; then
		[ "$want" = security ] && uri=http://deb.debian.org/debian-security ||
			uri=http://deb.debian.org/debian
	fi
	echo "${uri%/}"
}

# kdir_of KVER: the headers to build against for KVER, the installed ones
# if any, else those in the cache (6.12's headers packages depend on the
# kernel's image, so they are unpacked, not installed: guest-kernels.sh).
kdir_of() {
	if [ -f "/lib/modules/$1/build/Makefile" ]; then
		echo "/lib/modules/$1/build"
	else
		echo "$WSEM_KERNEL_CACHE/$1/usr/src/linux-headers-$1"
	fi
}

# The test programs: TESTS if set, else those of the tier WSEM_TIER:
#  - kernel: every selftests/X_test built from an X_test.c.  They face the
#    module (its ioctls, files, waits, locking), so they run on every kernel;
#  - full (the default): those and every selftests/X_test.sh.  The shell
#    tests face userland: the wsem command, the bindings, make, ninja and
#    cargo as jobserver clients, the fleet's agent, the README and the
#    examples.  What of the kernel they reach, the C programs reach too:
#    make check runs them on one kernel (6.12, check.sh's full_lane),
#    make check-full on every kernel.
list_tests() {
	local t
	if [ -n "${TESTS:-}" ]; then
		# shellcheck disable=SC2086 # a list
		printf '%s\n' $TESTS
		return 0
	fi
	for t in "$ROOT"/selftests/*_test.c; do
		[ -f "${t%.c}" ] && [ -x "${t%.c}" ] && basename "${t%.c}"
	done
	[ "${WSEM_TIER:-full}" = kernel ] && return 0
	for t in "$ROOT"/selftests/*_test.sh; do
		[ -f "$t" ] && basename "$t"
	done
	return 0
}

# copy_module_tree DIR: a private copy of the module sources in DIR, so that
# each kernel builds in its own directory.
copy_module_tree() {
	local dir=$1 f
	rm -rf "$dir"
	mkdir -p "$dir"
	for f in Kbuild module uapi; do
		[ -e "$ROOT/$f" ] || { log "missing $ROOT/$f"; return 1; }
		cp -pR "$ROOT/$f" "$dir/"
	done
}

# build_module KVER: build wsem.ko for KVER in $BUILD/KVER/mod with our
# warnings as errors; prints the compiler output.  Several builds for one
# kernel at once take turns.  WSEM_TEST_KNOBS=y (make check's) builds in
# the test knobs (module/wsem.h).
build_module() {
	local kver=$1 dir=$BUILD/$1/mod
	mkdir -p "$BUILD/$kver"
	(
		flock 9
		copy_module_tree "$dir" || exit 1
		$MAKE -s -j"$(nproc)" -C "$(kdir_of "$kver")" M="$dir" W=1 \
			KCFLAGS=-Werror \
			${WSEM_TEST_KNOBS:+WSEM_TEST_KNOBS=$WSEM_TEST_KNOBS} \
			modules 2>&1 | grep -v '^Skipping BTF generation'
		[ "${PIPESTATUS[0]}" -eq 0 ] && [ -f "$dir/wsem.ko" ]
	) 9>"$BUILD/$kver/.lock"
}

# The Debian releases whose kernels make check tests beside the installed
# ones, each from a cached chroot (chroot.sh) with that release's kernel,
# headers and gcc: bullseye's 5.10, trixie's 6.12 (gcc 14) and sid's
# newest.  CHROOTS overrides ("" for none).
chroot_releases() {
	# shellcheck disable=SC2086 # a list
	printf '%s\n' ${CHROOTS-bullseye trixie sid}
}

# chroot_lock_dir RELEASE: the directory whose lock (cache_lock) a build
# of RELEASE's chroot holds (chroot.sh).
chroot_lock_dir() {
	echo "$(cache_root wsem-chroot "${WSEM_CHROOT_CACHE:-}")/.lock-$1"
}

# chroot_wait RELEASE: when RELEASE's chroot is not cached and a build of
# it is under way (make check starts one in the background, at its
# start; chroot.sh holds its cache's lock meanwhile), wait for that build,
# up to 30 minutes.  For the host tests, which make test starts beside
# make check.
chroot_wait() {
	local lock
	lock=$(chroot_lock_dir "$1")/.lock
	if ! bash "$VMDIR/chroot.sh" -n "$1" >/dev/null 2>&1 &&
	   [ -f "$lock" ] && ! flock -n "$lock" true; then
		echo "# waiting for the $1 chroot's build (chroot.sh's lock)"
		flock -w 1800 "$lock" true
	fi
}

# chroot_booted RELEASE: whether make check boots RELEASE's kernel and runs
# the tests there, or only builds wsem.ko for it (and dkms, deb_test.sh):
# trixie's 6.12 is the series bookworm's lanes boot.  CHROOT_BOOT overrides.
chroot_booted() {
	case " ${CHROOT_BOOT-bullseye sid} " in
	*" $1 "*) return 0 ;;
	esac
	return 1
}

# chroot_wanted RELEASE: whether KVERS (when set) names RELEASE, or a
# prefix of the kernel of its cached chroot ("5.10", "7.2"); with none
# cached, of the series the release has (bullseye 5.10, trixie 6.12,
# sid 7.2, as chroot.sh's linux-source-7.2), so that KVERS=5.10 on a new
# machine builds the bullseye chroot instead of testing nothing.
chroot_wanted() {
	local v dir krel=
	[ -z "${KVERS:-}" ] && return 0
	dir=$(bash "$VMDIR/chroot.sh" -n "$1" 2>/dev/null) &&
		krel=$(cat "$dir/kernel.release")
	# Not built yet (a new machine): the series its kernel is.
	if [ -z "$krel" ]; then
		case $1 in
		bullseye) krel=5.10.0 ;;
		trixie) krel=6.12.0 ;;
		sid) krel=7.2.0 ;;
		esac
	fi
	for v in $KVERS; do
		[ "$v" = "$1" ] && return 0
		case $krel in
		"$v".* | "$v"-* | "$v"+*) return 0 ;;
		esac
	done
	return 1
}

# chroot_named WORD: whether WORD of KVERS names a chroot lane instead.
chroot_named() {
	local r
	for r in $(chroot_releases); do
		KVERS=$1 chroot_wanted "$r" && return 0
	done
	return 1
}

# in_chroot DIR SRC CMD...: CMD run in the chroot DIR/root (chroot.sh's
# cache directory) with /proc mounted and SRC bind-mounted on /mnt, in a
# mount namespace of its own (nothing stays mounted, two may run at once).
# With CHROOT_SRV set, that directory (a kernel build tree made outside)
# is bind-mounted on /srv too.
#
# The namespace's mounts must not propagate back to the caller's (where /
# is shared, as systemd makes it): unshare --propagation private makes
# every mount private from / down.  Where / is not a mount point (make
# test run inside a builder's chroot: sbuild, pbuilder, a debootstrap
# tree entered with chroot) that fails with "cannot change root
# filesystem propagation: Invalid argument"; there DIR/root is first
# bind-mounted onto itself in the caller's namespace (a copy appears
# wherever DIR's file system is shared), and the new namespace makes its
# copy of that bind, and all below it, private before mounting anything
# (and the binds of SRC and CHROOT_SRV, which come from the caller's
# shared mounts, after).  That bind is shared by the in_chroot calls
# that run at once, made by the first (under DIR/.bind.lock; DIR/.bound
# says it is ours) and taken away by the last (DIR/.enter.lock: shared
# while in use, exclusive to unmount), so that no mount or unmount at
# DIR/root, which would propagate into the others' namespaces, happens
# while one is inside.
in_chroot() {
	local dir=$1 src=$2 r=$1/root
	shift 2
	# shellcheck disable=SC2016 # expanded by that sh
	local enter='
		r=$1 s=$2 v=$3 fds=$4
		shift 4
		if [ -n "$fds" ]; then
			for fd in $fds; do
				eval "exec $fd>&-"
			done
			mount --make-rprivate "$r" || exit 1
		fi
		mount -t proc proc "$r/proc" &&
		mount --bind "$s" "$r/mnt" &&
		{ [ -z "$v" ] || mount --bind "$v" "$r/srv"; } &&
		{ [ -z "$fds" ] || mount --make-rprivate "$r"; } &&
		exec chroot "$r" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
			LC_ALL=C.UTF-8 "$@"'
	if root_propagation_settable; then
		unshare --mount --propagation private sh -c "$enter" sh \
			"$r" "$src" "${CHROOT_SRV:-}" "" "$@"
		return
	fi
	(
		exec {use}>"$dir/.enter.lock" {bind}>"$dir/.bind.lock" &&
			flock -s "$use" && flock -x "$bind" || exit 1
		if ! mountpoint -q "$r"; then
			mount --bind "$r" "$r" || {
				log "in_chroot: cannot enter $r: neither unshare --mount --propagation private nor a bind mount of it onto itself works here (entering a release chroot needs CAP_SYS_ADMIN)"
				exit 1
			}
			: >"$dir/.bound"
		fi
		flock -u "$bind"
		# The last one out (none holds the lock shared) unmounts what
		# one of us mounted (.bound), not a mount that was there.
		trap 'flock -n -x "$use" && [ -f "$dir/.bound" ] &&
			umount "$r" && rm -f "$dir/.bound"' EXIT
		trap 'exit 130' INT
		trap 'exit 143' TERM
		# bash: dash closes no descriptor above 9.
		unshare --mount --propagation unchanged bash -c "$enter" sh \
			"$r" "$src" "${CHROOT_SRV:-}" "$use $bind" "$@"
	)
}

# root_propagation_settable: whether a new mount namespace can make its
# mounts private from / down (unshare --propagation private, the default
# of unshare --mount): not where / is not a mount point (a chroot), nor
# without CAP_SYS_ADMIN.
root_propagation_settable() {
	unshare --mount --propagation private true 2>/dev/null
}

# build_chroot_module DIR: build wsem.ko in the chroot DIR (chroot.sh's)
# for its kernel, with its gcc and our warnings as errors, in
# $BUILD/KREL/mod; prints the compiler output.  WSEM_TEST_KNOBS as for
# build_module.
build_chroot_module() {
	local cdir=$1 kver mdir
	kver=$(cat "$cdir/kernel.release") || return 1
	mdir=$BUILD/$kver/mod
	mkdir -p "$BUILD/$kver"
	(
		flock 9
		copy_module_tree "$mdir" || exit 1
		in_chroot "$cdir" "$mdir" make -s -j"$(nproc)" \
			-C "/usr/src/linux-headers-$kver" \
			M=/mnt W=1 KCFLAGS=-Werror \
			${WSEM_TEST_KNOBS:+WSEM_TEST_KNOBS=$WSEM_TEST_KNOBS} \
			modules 2>&1 |
			grep -v '^Skipping BTF generation'
		[ "${PIPESTATUS[0]}" -eq 0 ] && [ -f "$mdir/wsem.ko" ]
	) 9>"$BUILD/$kver/.lock"
}

# take_check_lock: one make check or make lint at a time in this tree (they
# share build/lint and the console logs); a nested call already has it.
take_check_lock() {
	[ -n "${WSEM_CHECK_LOCKED:-}" ] && return 0
	mkdir -p "$BUILD"
	exec 8>"$BUILD/.check.lock"
	if ! flock -n 8; then
		log "waiting for another make check/lint in this tree"
		flock 8
	fi
	export WSEM_CHECK_LOCKED=1
}

# private_apt: set APT to apt's options for bookworm and
# bookworm-security of this machine's mirrors (host_mirror), with their
# lists and archives in $BUILD/apt and no binary cache written, and run
# "apt-get update" there, which touches none of /etc/apt, /var/lib/apt
# and /var/cache/apt.  For a tree made by debootstrap, whose sources have
# only "bookworm main" where Debian 12's installer adds bookworm-security:
# the 6.12 kernels and linux-source-6.12 are there (guest-kernels.sh
# unpacks the kernels, deps.sh installs the source from its .deb).  The
# lists are in the tree, which apt's _apt user may not reach (a clone in
# /root): apt fetches as root then, as it would anyway, without warning
# "Download is performed unsandboxed as root".
APT=()
private_apt() {
	local a=$BUILD/apt
	mkdir -p "$a/lists/partial" "$a/archives/partial" "$a/parts" || return 1
	printf 'deb %s bookworm main\ndeb %s bookworm-security main\n' \
		"$(host_mirror)" "$(host_mirror security)" >"$a/sources.list" ||
		return 1
	APT=(-o "Dir::Etc::SourceList=$a/sources.list"
	     -o "Dir::Etc::SourceParts=$a/parts"
	     -o "Dir::State::Lists=$a/lists"
	     -o "Dir::Cache::Archives=$a/archives"
	     -o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache="
	     -o "APT::Sandbox::User=root")
	log "$(basename "$0"): this machine's apt sources lack bookworm-security: reading it through $a/sources.list; the machine's own sources stay as they are"
	apt-get "${APT[@]}" -q update </dev/null >/dev/null
}

# ksrc VERSION: a directory holding the scripts we use from the
# linux-source-VERSION tarball (checkpatch.pl, kernel-doc and their data),
# extracted once per machine (12-15 CPU-seconds each: xz reads the whole
# tarball) into the wsem-ksrc cache, keyed by the tarball's size and
# mtime, which a new linux-source package changes (the older one goes).
# Extracted beside and renamed into place: two runs at once both extract,
# one rename stays.
ksrc() {
	local v=$1 tarball=/usr/src/linux-source-$1.tar.xz root dir tmp
	[ -f "$tarball" ] || return 1
	root=$(cache_root wsem-ksrc "${WSEM_KSRC_CACHE:-}")
	dir=$root/linux-source-$v-$(stat -c '%s-%Y' "$tarball")
	if [ ! -f "$dir/.stamp" ]; then
		mkdir -p "$root" && tmp=$(mktemp -d "$root/.new.XXXXXX") ||
			return 1
		if tar -xJf "$tarball" -C "$tmp" \
			--wildcards "linux-source-$v/scripts/*"; then
			touch "$tmp/linux-source-$v/.stamp"
			mv -T "$tmp/linux-source-$v" "$dir" 2>/dev/null &&
				cache_drop_others "$dir" "$root/linux-source-$v-"
		fi
		rm -rf "$tmp"
		[ -f "$dir/.stamp" ] || return 1
	fi
	echo "$dir"
}

# The linux-source versions whose tarballs are installed, oldest first.
ksrc_versions() {
	local t
	for t in /usr/src/linux-source-*.tar.xz; do
		[ -f "$t" ] || continue
		t=${t#/usr/src/linux-source-}
		echo "${t%.tar.xz}"
	done | sort -V
}

# Codespell's dictionary, wherever Debian put it.
codespell_dict() {
	local f
	for f in /usr/share/codespell/dictionary.txt \
		 /usr/lib/python3/dist-packages/codespell_lib/data/dictionary.txt; do
		[ -f "$f" ] && { echo "$f"; return 0; }
	done
	return 1
}

# check_begin NAME: the state of a make check lane: a fresh $out
# (build/NAME), $tapf for the lane's own TAP lines, $t0; and its helpers.
check_begin() {
	out=$BUILD/$1
	rm -rf "$out"
	mkdir -p "$out"
	tapf=$out/build.tap
	: >"$tapf"
	n=0
	t0=$(date +%s)
}

# stage TITLE: a heading with the time it starts; the stage before it
# (of this shell) ends with a line that says how long it took.
stage_title= stage_t0= stage_cpu0=0
stage() {
	local now cpu
	now=$(date +%s)
	children_cpu cpu
	[ -n "$stage_title" ] &&
		printf '(%s: %ss, %s CPU-seconds)\n' "$stage_title" \
			"$((now - stage_t0))" "$(((cpu - stage_cpu0) / CLK_TCK))"
	printf '\n==== %s [%s]\n' "$*" "$(date -u +%H:%M:%S)"
	stage_title=${*%% (*} stage_t0=$now stage_cpu0=$cpu
}

# children_cpu VAR: VAR := the clock ticks (CLK_TCK a second) of CPU, user
# and system, that this shell's children have used, those that have ended
# and been waited for, their own children's included (/proc/PID/stat's
# cutime and cstime).  No subshell: one would count its own children.
CLK_TCK=$(getconf CLK_TCK 2>/dev/null || echo 100)
children_cpu() {
	local s
	read -r s <"/proc/$BASHPID/stat" || { printf -v "$1" 0; return; }
	s=${s##*) }
	# shellcheck disable=SC2086 # the fields, from the state on
	set -- "$1" $s
	printf -v "$1" '%s' "$((${15} + ${16}))"
}

# tap STATUS NAME [OUTPUT]: a TAP line of the lane's own, into $tapf; a
# failure shows the tail of OUTPUT.
tap() {
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $n $2" | tee -a "$tapf"
	else
		[ -n "${3:-}" ] && tail -n 60 "$3" | sed 's/^/#   /'
		echo "not ok $n $2" | tee -a "$tapf"
	fi
}

# build_userspace: the library and the selftests, a TAP line each.
build_userspace() {
	stage "build"
	$MAKE -j"$(nproc)" -C "$ROOT/userlib" >"$out/userlib.log" 2>&1
	tap $? "build: userlib" "$out/userlib.log"
	$MAKE -j"$(nproc)" -C "$ROOT/selftests" >"$out/selftests.log" 2>&1
	tap $? "build: selftests" "$out/selftests.log"
	$MAKE -j"$(nproc)" -C "$ROOT/examples" >"$out/examples.log" 2>&1
	tap $? "build: examples" "$out/examples.log"
}

# show_guest NAME LOG RUNLOG: a guest's console LOG without the firmware's
# chatter, escapes and carriage returns, then run.sh's RUNLOG.  A guest
# that never reached its tests (no "# wsem-vm: kernel" line: it did not
# start, or its kernel hung or was killed while booting) is a failure:
# summary.awk can only count what the log shows.
show_guest() {
	local clean
	clean=$(tr -d '\r' <"$2" |
		sed 's/\x1b\[[0-9;?]*[A-Za-z]//g; s/\x1bc//g')
	if grep -q '^# wsem-vm: kernel ' <<<"$clean"; then
		sed -n '/^# wsem-vm: kernel /,/^# wsem-vm: done/p' <<<"$clean"
		cat "$3"
	else
		tap 1 "$1: the guest never reached its tests" "$3"
	fi
}

# nice_of PID: PID's niceness, from /proc (no procps needed): the 19th
# field of its stat, the 17th after the command's closing parenthesis,
# read as children_cpu reads its fields.
nice_of() {
	local s
	read -r s 2>/dev/null <"/proc/$1/stat" || return 0
	s=${s##*) }
	# shellcheck disable=SC2086 # the fields, from the state on
	set -- $s
	echo "${17}"
}

# cache_root NAME OVERRIDE: the folder of the machine's cache NAME:
# OVERRIDE when set, else /var/cache/NAME when writable, else the user's.
cache_root() {
	if [ -n "$2" ]; then
		echo "$2"
	elif mkdir -p "/var/cache/$1" 2>/dev/null && [ -w "/var/cache/$1" ]; then
		echo "/var/cache/$1"
	else
		echo "${XDG_CACHE_HOME:-$HOME/.cache}/$1"
	fi
}

# cache_drop_others DIR PREFIX: remove every PREFIX* but DIR (the same
# cache entry under an older key).
cache_drop_others() {
	local o
	for o in "$2"*; do
		[ "$o" = "$1" ] || rm -rf "$o"
	done
}

# Go's build cache for every Go build of the harness and the tests (the
# agent, the binding: their Makefiles take WSEM_GOCACHE), one per machine
# as the chroots and kernels are: a fresh clone on a machine that built
# them once compiles none of etcd's packages again.  Go keys each entry by
# a hash of its inputs and trims what goes unused for days.
WSEM_GOCACHE=$(cache_root wsem-go-build "${WSEM_GOCACHE:-}")
export WSEM_GOCACHE

# The guests' Debian kernels, unpacked by guest-kernels.sh, one per
# machine as well (each kernel in a folder of its own, KVER, with its
# packages' version): a fresh clone downloads and unpacks none of them
# again.  Nothing writes there but guest-kernels.sh, under the cache's
# lock; the module builds write only into their own M= folder.
WSEM_KERNEL_CACHE=$(cache_root wsem-guest-kernels "${WSEM_KERNEL_CACHE:-}")
export WSEM_KERNEL_CACHE

# cache_lock ROOT WHO: one build per machine at a time (fd 9 holds
# ROOT's lock from here on; the others wait for it, WHO says so).
cache_lock() {
	mkdir -p "$1" || die "cannot create $1"
	exec 9>"$1/.lock"
	if ! flock -n 9; then
		log "$2: waiting for another build in $1"
		flock 9
	fi
}

# cache_take ROOT DIR WHO FORCE: cache_lock ROOT; then, when DIR is
# complete and FORCE empty, print DIR and exit: the cache serves.
cache_take() {
	cache_lock "$1" "$3"
	if [ -z "$4" ] && [ -f "$2/.done" ]; then
		log "$3: cached: $2 ($(head -n 1 "$2/build-time"))"
		echo "$2"
		exit 0
	fi
}

# preflight: what make check and its kin need from the machine they run
# on, checked before anything starts, so that a builder's chroot or a
# container that lacks it is told at once, one line per missing piece
# (and returns 1), instead of failing minutes later in every lane.  Not
# needed: /dev/kvm (the guests run under TCG), loop devices (the distro
# image is made with mkfs.ext4 -d).  Without root the lanes that need
# root skip, so only the rest is checked.
preflight() {
	local ok=0 d devs=
	if [ ! -r /proc/self/mountinfo ]; then
		log "$(basename "$0"): no /proc here: mount it (mount -t proc proc /proc); bash, ps, unshare and qemu need it"
		ok=1
	fi
	for d in null zero urandom; do
		[ -c "/dev/$d" ] || devs="$devs /dev/$d"
	done
	if [ -n "$devs" ]; then
		log "$(basename "$0"): no$devs here (not character devices): bind-mount the host's /dev (mount --bind /dev DIR/dev)"
		ok=1
	fi
	[ "$(id -u)" -eq 0 ] || return $ok
	# The release chroots (in_chroot) and chroot.sh and distro-image.sh
	# mount in them: a mount namespace, and a bind mount where / is not
	# a mount point.
	if ! unshare --mount --propagation unchanged true 2>/dev/null; then
		log "$(basename "$0"): root cannot make a mount namespace here ($(unshare --mount --propagation unchanged true 2>&1 | tail -n 1)): the release chroots need CAP_SYS_ADMIN (a privileged container)"
		ok=1
	elif ! root_propagation_settable; then
		d=$(mktemp -d)
		if ! mount --bind "$d" "$d" 2>/dev/null; then
			log "$(basename "$0"): / is not a mount point here (a chroot) and a bind mount fails: the release chroots need CAP_SYS_ADMIN"
			ok=1
		else
			umount "$d"
		fi
		rmdir "$d"
	fi
	return $ok
}
