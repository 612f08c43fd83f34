#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Pack the guest's initramfs (cpio newc, gzip): busybox-static with its
# applets in /bin, the module, the wsem CLI, bwrap, the selftests and /init.
#
# usage: mkinitramfs.sh -k KO -o OUT [-m check|cmd|shell] [-c CMDFILE]
#                       [-t TEST_TIMEOUT]
set -eu -o pipefail
. "$(dirname "$0")/lib.sh"

ko='' out='' mode=check cmdfile='' test_timeout=${TEST_TIMEOUT:-120}
while getopts k:o:m:c:t: opt; do
	case $opt in
	k) ko=$OPTARG ;;
	o) out=$OPTARG ;;
	m) mode=$OPTARG ;;
	c) cmdfile=$OPTARG ;;
	t) test_timeout=$OPTARG ;;
	*) die "bad option" ;;
	esac
done
[ -n "$ko" ] && [ -f "$ko" ] || die "no module (-k)"
[ -n "$out" ] || die "no output (-o)"

busybox=
for b in /bin/busybox /usr/bin/busybox; do
	[ -x "$b" ] && { busybox=$b; break; }
done
[ -n "$busybox" ] || die "busybox-static is not installed"
if readelf -l "$busybox" | grep -q 'program interpreter'; then
	die "$busybox is dynamically linked; install busybox-static"
fi

stage=$out.d
rm -rf "$stage"
mkdir -p "$stage"/{bin,dev,etc,proc,sys,tmp,root,run,selftests,lib/modules}
ln -s bin "$stage/sbin"
mkdir -p "$stage/usr"
ln -s ../bin "$stage/usr/bin"
ln -s ../bin "$stage/usr/sbin"
chmod 1777 "$stage/tmp"

cp "$busybox" "$stage/bin/busybox"
for a in $("$busybox" --list); do
	[ "$a" = busybox ] && continue
	ln -s busybox "$stage/bin/$a"
done

# add_elf FILE DEST: copy an executable; a dynamically linked one brings the
# libraries ldd names, at the same paths.
add_elf() {
	local lib
	cp "$1" "$2"
	chmod 0755 "$2"
	readelf -l "$1" 2>/dev/null | grep -q 'program interpreter' || return 0
	for lib in $(ldd "$1" | grep -o '/[^ ]*'); do
		mkdir -p "$stage$(dirname "$lib")"
		cp -L "$lib" "$stage$lib"
	done
}

cp "$ko" "$stage/lib/modules/wsem.ko"
if [ -f "$ROOT/userlib/wsem-static" ]; then
	add_elf "$ROOT/userlib/wsem-static" "$stage/bin/wsem"
elif [ -f "$ROOT/userlib/wsem" ]; then
	add_elf "$ROOT/userlib/wsem" "$stage/bin/wsem"
else
	log "mkinitramfs: no userlib/wsem-static: the guest has no wsem CLI"
fi
# bubblewrap, a real container tool for container_test (deps.sh installs it).
bwrap=$(command -v bwrap || true)
if [ -n "$bwrap" ]; then
	add_elf "$bwrap" "$stage/bin/bwrap"
elif list_tests | grep -qx container_test; then
	log "mkinitramfs: no bwrap (bubblewrap): container_test skips it"
fi
# The examples (examples_test runs them as a user would).
for f in "$ROOT"/examples/epoll_jobs "$ROOT"/examples/uring_jobs; do
	[ -f "$f" ] && add_elf "$f" "$stage/bin/$(basename "$f")"
done
# WSEM_VM_BINS: more programs for the guest's /bin (make bench uses it).
for f in ${WSEM_VM_BINS:-}; do
	[ -f "$f" ] || die "no $f (WSEM_VM_BINS)"
	add_elf "$f" "$stage/bin/$(basename "$f")"
done
# What the shell tests source (not a test: no _test in its name).
cp "$ROOT/selftests/util.sh" "$stage/selftests/util.sh"
tests=
for t in $(list_tests); do
	f=$ROOT/selftests/$t
	[ -f "$f" ] || { log "mkinitramfs: no $f"; continue; }
	case $t in
	*.sh) cp "$f" "$stage/selftests/$t"; chmod 0755 "$stage/selftests/$t" ;;
	*) add_elf "$f" "$stage/selftests/$t" ;;
	esac
	tests="$tests $t"
done
# The Go binding's static programs (bindings/go builds them) for go_test.sh.
case " $tests " in
*" go_test.sh "*)
	for f in "$BUILD/go/wsem-go.test" "$BUILD/go/wsem-go-pool"; do
		[ -f "$f" ] && add_elf "$f" "$stage/bin/${f##*/}"
	done ;;
esac
# pool_replay, the bindings' pools under pool_test's replay (the Go and
# Python tests TestPoolReplayed and t_pool_replayed start it).
case " $tests " in
*" go_test.sh "* | *" python_test.sh "*)
	[ -f "$ROOT/selftests/pool_replay" ] &&
		add_elf "$ROOT/selftests/pool_replay" "$stage/bin/pool_replay" ;;
esac
# add_net_modules MOD...: the guest kernel's modules MOD (in that order),
# unpacked, in /lib/modules/net/, listed in the order to load them in
# /lib/modules/net/order (Debian builds them as modules, xz-compressed; a
# kernel not under /lib/modules, a chroot's, gets none).
add_net_modules() {
	local kver mdir m f
	kver=$(modinfo -F vermagic "$ko" 2>/dev/null | cut -d' ' -f1)
	mdir=$(kernel_modules "$kver")
	[ -n "$kver" ] && [ -f "$mdir/modules.dep" ] || return 0
	mkdir -p "$stage/lib/modules/net"
	for m in "$@"; do
		f=$(find "$mdir/kernel/net" "$mdir/kernel/drivers/net" \
			-name "$m.ko*" 2>/dev/null | head -n 1)
		case $f in
		'') continue ;;
		*.xz) xz -dc "$f" >"$stage/lib/modules/net/$m.ko" ;;
		*.zst) zstd -qdc "$f" >"$stage/lib/modules/net/$m.ko" ;;
		*.gz) gzip -dc "$f" >"$stage/lib/modules/net/$m.ko" ;;
		*) cp "$f" "$stage/lib/modules/net/$m.ko" ;;
		esac
		echo "$m" >>"$stage/lib/modules/net/order"
	done
}
# fleet_test.sh: Debian's etcd and etcdctl, wsem-agent (agent/ builds it),
# the observer fleet_watch and the steady jobs fleet_jobs; for its whole
# scenario (a network namespace per etcd member and per host, joined by
# veth pairs into a bridge) iproute2's ip as /usr/lib/iproute2/ip, run by
# that path (busybox's makes no veth, and busybox sh runs its own applet for
# "ip" whatever /bin/ip is; iproute2's ip takes a name "ipX" as "ip X"), and
# the guest kernel's llc, stp, bridge and veth modules (add_net_modules: a
# chroot's kernel gets none; its lane runs the smoke test, which needs no
# network).
# twoguest.sh (selftests/vm/twoguest.sh's two guests): etcd, etcdctl,
# wsem-agent and the e1000 module, the driver of the NIC on QEMU's socket
# netdev (busybox's ip sets its address).
case " $tests " in
*" fleet_test.sh "* | *" twoguest.sh "*)
	for f in "$(command -v etcd || true)" "$(command -v etcdctl || true)" \
		"$BUILD/agent/wsem-agent"; do
		[ -n "$f" ] && [ -f "$f" ] && add_elf "$f" "$stage/bin/${f##*/}"
	done ;;
esac
# cli_test.sh: a sleep that keeps a set-uid root's effective uid.
case " $tests " in
*" cli_test.sh "*)
	[ -f "$ROOT/selftests/suid_sleep" ] &&
		add_elf "$ROOT/selftests/suid_sleep" "$stage/bin/suid_sleep" ;;
esac
case " $tests " in
*" fleet_test.sh "*)
	for f in fleet_watch fleet_jobs fdstore; do
		if [ -f "$ROOT/selftests/$f" ]; then
			add_elf "$ROOT/selftests/$f" "$stage/bin/$f"
		fi
	done
	iproute=$(PATH=/usr/sbin:/sbin:$PATH command -v ip || true)
	if [ -n "$iproute" ] && [ "$(readlink -f "$iproute")" != "$busybox" ]; then
		mkdir -p "$stage/usr/lib/iproute2"
		add_elf "$iproute" "$stage/usr/lib/iproute2/ip"
	else
		log "mkinitramfs: no iproute2: fleet_test's whole scenario fails"
	fi
	add_net_modules llc stp bridge veth ;;
esac
case " $tests " in
*" twoguest.sh "*) add_net_modules e1000 ;;
esac
# readme_run_test.sh runs the shell blocks of README.md and docs/*.md.
case " $tests " in
*" readme_run_test.sh "*)
	cp "$ROOT/README.md" "$stage/selftests/README.md"
	mkdir -p "$stage/selftests/docs"
	cp "$ROOT"/docs/*.md "$stage/selftests/docs/" ;;
esac
# demo_test.sh runs make demo's guest half, selftests/vm/demo.sh.
case " $tests " in
*" demo_test.sh "*) cp "$VMDIR/demo.sh" "$stage/selftests/demo.sh" ;;
esac
# bash, for cli_test.sh: only bash ends a loop when its child dies of the
# ^C it got too (and so tells a death by SIGINT from an exit 130).
case " $tests " in
*" cli_test.sh "*)
	sh_bash=$(command -v bash || true)
	if [ -n "$sh_bash" ]; then
		add_elf "$sh_bash" "$stage/bin/bash"
	else
		log "mkinitramfs: no bash: cli_test's t_run_signal fails"
	fi ;;
esac
# GNU make, the jobserver client that jobserver_make_test.sh runs.
case " $tests " in
*" jobserver_make_test.sh "*)
	mk=$(command -v make || true)
	if [ -n "$mk" ]; then
		add_elf "$mk" "$stage/bin/make"
	else
		log "mkinitramfs: no make: jobserver_make_test skips"
	fi ;;
esac
# jobserver_clients_test.sh: Debian sid's make 4.4.1, ninja, cargo and rustc
# under /opt/sid (sid-clients.sh), an archive of their own appended to ours.
sid_archive=''
case " $tests " in
*" jobserver_clients_test.sh "*)
	. "$VMDIR/sid-clients.sh"
	add_sid_clients
	;;
esac
# The Python tests bring Debian's python3, pip and the binding (python.sh).
case " $tests " in
*" python_test.sh "* | *" python_pip_test.sh "* | *" json_test.sh "* | \
*" top_tty_test.sh "*)
	. "$VMDIR/python.sh"
	add_python || die "cannot add python3 to the guest"
	;;
esac

cat >"$stage/etc/passwd" <<'EOT'
root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/sh
EOT
cat >"$stage/etc/group" <<'EOT'
root:x:0:
nogroup:x:65534:
EOT
printf 'wsem-vm\n' >"$stage/etc/hostname"
{
	printf 'MODE=%s\n' "$mode"
	printf 'TEST_TIMEOUT=%s\n' "$test_timeout"
	printf 'TESTS="%s"\n' "$tests"
	# WSEM_VM_ENV: "NAME=VALUE ..." exported to /init and the tests
	# (make check-debug scales the heavy tests down with it).
	for v in ${WSEM_VM_ENV:-}; do
		case $v in
		[A-Za-z_]*=*) printf "export %s='%s'\n" "${v%%=*}" "${v#*=}" ;;
		*) die "WSEM_VM_ENV: $v is not NAME=VALUE" ;;
		esac
	done
} >"$stage/etc/wsem-vm.conf"
if [ -n "$cmdfile" ]; then
	cp "$cmdfile" "$stage/etc/wsem-vm.cmd"
fi
cp "$VMDIR/init" "$stage/init"
cp "$VMDIR/runtests.sh" "$stage/runtests.sh"
chmod 0755 "$stage/init" "$stage/runtests.sh"

(cd "$stage" && find . | LC_ALL=C sort |
	cpio -o -H newc -R 0:0 --quiet) | gzip -1 >"$out.tmp"
if [ -n "$sid_archive" ]; then
	cat "$sid_archive" >>"$out.tmp"
fi
mv "$out.tmp" "$out"
rm -rf "$stage"
