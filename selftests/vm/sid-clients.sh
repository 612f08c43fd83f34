# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Sourced by mkinitramfs.sh when jobserver_clients_test.sh goes into the
# guest: Debian sid's jobserver clients, newer than bookworm's (GNU make
# 4.4.1, which speaks the fifo style, ninja 1.13, cargo and rustc), taken
# from the sid chroot of chroot.sh, which is never built here.
#
# In the guest they live under /opt/sid as in sid's own tree
# (/opt/sid/usr/bin/make, /opt/sid/bin -> usr/bin), with sid's dynamic
# loader and the libraries that ldd names for them inside the chroot, at
# their paths under /opt/sid.  Each executable copy is rewritten by
# patchelf: sid's loader as its interpreter, /opt/sid's library folders as
# its DT_RPATH (not DT_RUNPATH: an RPATH of the executable also serves the
# libraries' own dependencies); a library that has a search path of its
# own (libLLVM's $ORIGIN/../lib) gets /opt/sid's instead.  So they run on
# the guest's bookworm userland with no LD_LIBRARY_PATH, while what they
# start (sh, the recipes) keeps the guest's own loader and libc; make runs
# by its own path, for $(MAKE).  rustc finds its sysroot from where its
# librustc_driver is (/opt/sid/usr/lib/x86_64-linux-gnu -> /opt/sid/usr),
# and there it finds lib/rustlib: of its target libraries only the .rmeta
# files, all that a build of library crates reads (the .rlib files, 60 MB,
# are for linking programs, which needs a cc the guest does not have).
#
# The tree is built once per chroot (and per SID_CLIENTS_RECIPE) into
# $BUILD/sid-clients as a gzipped cpio archive of its own, which
# mkinitramfs.sh appends to the guest's: the kernel unpacks concatenated
# archives one after the other.  165 MB gzipped, 445 MB unpacked in the
# guest's memory (rustc's librustc_driver and libLLVM are 250 MB, its
# .rmeta files 107 MB); run.sh gives such guests more memory.
#
# add_sid_clients: set sid_archive to the archive, built if need be, for
# mkinitramfs.sh to append to its own.  When it cannot, it writes why into
# $stage/etc/wsem-sid-clients, which the test reads: "skip REASON" when
# the user left sid out (CHROOTS) or the machine cannot build chroots (no
# root or no debootstrap: check.sh skips the sid lane then too), else
# "fail REASON" (a skip would hide the missing coverage).
# shellcheck disable=SC2154 # stage: mkinitramfs.sh's

# Bump when the tree changes.
SID_CLIENTS_RECIPE=2
# The programs, by their names in the chroot's PATH.
SID_CLIENTS="make ninja cargo rustc"
SID_TRIPLE=x86_64-unknown-linux-gnu

# sid_clients_note VERDICT REASON: what the guest's test is told.
sid_clients_note() {
	printf '%s %s\n' "$1" "$2" >"$stage/etc/wsem-sid-clients"
	log "mkinitramfs: sid's jobserver clients left out: $2"
}

# sid_clients_tree CDIR DEST: the tree in DEST/opt/sid from the chroot CDIR.
sid_clients_tree() {
	local cdir=$1 dest=$2 r=$1/root opt=$2/opt/sid f p dirs='' ld='' bin libdir
	rm -rf "$dest"
	mkdir -p "$opt" || return 1
	# Inside the chroot: the real path of each program, then each library
	# ldd names for it (the loader among them), by the name ldd gives (the
	# soname) in the real folder.
	# shellcheck disable=SC2016,SC2086 # the chroot's sh expands; a list
	in_chroot "$cdir" "$dest" sh -c '
		for b; do
			f=$(command -v "$b") || { echo "no $b" >&2; exit 1; }
			f=$(readlink -f "$f")
			echo "bin $f"
			ldd "$f" | grep -o "/[^ ]*" | while read -r l; do
				echo "lib $(readlink -f "${l%/*}")/${l##*/}"
			done
		done' sh $SID_CLIENTS >"$dest/closure" || return 1
	while read -r kind p; do
		mkdir -p "$opt${p%/*}" || return 1
		cp -L "$r$p" "$opt$p" || return 1
		case $kind/$p in
		lib/*/ld-linux-*) ld=$p ;;
		lib/*)
			case ":$dirs:" in
			*":/opt/sid${p%/*}:"*) ;;
			*) dirs=${dirs:+$dirs:}/opt/sid${p%/*} ;;
			esac ;;
		esac
	done <"$dest/closure"
	[ -n "$ld" ] || { log "mkinitramfs: no loader in sid's ldd output"; return 1; }
	# The copies rewritten by the chroot's patchelf.
	# shellcheck disable=SC2016 # the chroot's sh expands
	in_chroot "$cdir" "$dest" sh -c '
		cd /mnt/opt/sid || exit 1
		sort -u /mnt/closure | while read -r kind f; do
			case $kind in
			bin)
				patchelf --set-interpreter "/opt/sid$1" \
					--force-rpath --set-rpath "$2" ".$f" ;;
			lib)
				[ -z "$(patchelf --print-rpath ".$f")" ] ||
					patchelf --set-rpath "$2" ".$f" ;;
			esac || exit 1
		done' sh "$ld" "$dirs" || return 1
	# rustc's target libraries, as its sysroot has them.
	bin=$(sed -n 's,^bin \(.*\)/rustc$,\1,p' "$dest/closure")
	libdir=${bin%/bin}/lib/rustlib/$SID_TRIPLE/lib
	mkdir -p "$opt$libdir"
	cp "$r$libdir"/*.rmeta "$opt$libdir/" || return 1
	ln -s usr/bin "$opt/bin"
	for f in $SID_CLIENTS; do
		[ -x "$opt/bin/$f" ] || { log "mkinitramfs: no $opt/bin/$f"; return 1; }
	done
	rm "$dest/closure"
}

add_sid_clients() {
	local cdir key cache
	sid_archive=''
	case " $(chroot_releases | tr '\n' ' ') " in
	*" sid "*) ;;
	*)
		sid_clients_note skip "CHROOTS leaves sid out: no sid clients"
		return 0 ;;
	esac
	if ! cdir=$(bash "$VMDIR/chroot.sh" -n sid); then
		if [ "$(id -u)" -ne 0 ] || ! command -v debootstrap >/dev/null; then
			sid_clients_note skip "no sid chroot cached; building one needs root and debootstrap"
		else
			sid_clients_note fail "no sid chroot cached (selftests/vm/chroot.sh sid)"
		fi
		return 0
	fi
	key=${cdir##*/}-r$SID_CLIENTS_RECIPE
	cache=$BUILD/sid-clients/$key
	mkdir -p "$BUILD/sid-clients"
	(
		flock 9
		[ -f "$cache/opt.cpio.gz" ] && exit 0
		log "mkinitramfs: sid's jobserver clients from $cdir"
		sid_clients_tree "$cdir" "$cache.tmp" || exit 1
		(cd "$cache.tmp" && find opt | LC_ALL=C sort |
			cpio -o -H newc -R 0:0 --quiet) | gzip -1 \
			>"$cache.tmp/opt.cpio.gz" || exit 1
		du -sb "$cache.tmp/opt" | cut -f1 >"$cache.tmp/unpacked-bytes"
		rm -rf "$cache.tmp/opt" "$cache"
		mv "$cache.tmp" "$cache"
	) 9>"$BUILD/sid-clients/.lock" || true
	if [ ! -f "$cache/opt.cpio.gz" ]; then
		sid_clients_note fail "taking the clients from $cdir failed"
		return 0
	fi
	# shellcheck disable=SC2034 # mkinitramfs.sh's
	sid_archive=$cache/opt.cpio.gz
}
