# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Sourced by mkinitramfs.sh when python_test.sh or python_pip_test.sh goes
# into the guest: Debian's python3 (the interpreter, its standard library
# less the tests, IDLE, tkinter and the like), pip, setuptools and wheel for
# an offline "pip install", the Python binding's source tree (/usr/src/wsem)
# and the Python tests (/selftests/python).  About 20 MB more in the
# initramfs, so only for runs that have one of them.
#
# add_python: copies into $stage, with mkinitramfs.sh's add_elf.
# shellcheck disable=SC2154 # stage, ROOT: mkinitramfs.sh's

# add_libs FILE: the libraries that ldd names for FILE, at the same paths.
add_libs() {
	local lib
	for lib in $(ldd "$1" | grep -o '/[^ ]*'); do
		[ -e "$stage$lib" ] && continue
		mkdir -p "$stage$(dirname "$lib")"
		cp -L "$lib" "$stage$lib"
	done
}

add_python() {
	local py v so dist=/usr/lib/python3/dist-packages pat d
	py=$(readlink -f /usr/bin/python3) || return 1
	v=${py##*/python}
	if [ ! -x "$py" ] || [ ! -d "/usr/lib/python$v" ]; then
		log "mkinitramfs: no Debian python3 (apt-get install python3)"
		return 1
	fi
	# /usr/bin is /bin in the guest: Python, not finding lib/pythonX.Y
	# next to the executable, takes its built-in prefix, /usr, quietly.
	add_elf "$py" "$stage/bin/python$v"
	ln -s "python$v" "$stage/bin/python3"
	mkdir -p "$stage/usr/lib" "$stage/usr/lib/python3/dist-packages"
	tar -C /usr/lib -cf - \
		--exclude="python$v/test" --exclude="python$v/idlelib" \
		--exclude="python$v/tkinter" --exclude="python$v/turtledemo" \
		--exclude="python$v/lib2to3" --exclude="python$v/pydoc_data" \
		--exclude="python$v/ensurepip" --exclude="python$v/config-*" \
		--exclude='*.opt-1.pyc' --exclude='*.opt-2.pyc' \
		--exclude='lib-dynload/_test*' --exclude='lib-dynload/xx*' \
		--exclude='lib-dynload/_xx*' --exclude='lib-dynload/_ctypes_test*' \
		--exclude='lib-dynload/_curses*' --exclude='lib-dynload/readline*' \
		--exclude='lib-dynload/_dbm*' --exclude='lib-dynload/nis*' \
		--exclude='lib-dynload/ossaudiodev*' \
		--exclude='lib-dynload/_sqlite3*' \
		"python$v" | tar -C "$stage/usr/lib" -xf - || return 1
	for so in "$stage/usr/lib/python$v/lib-dynload"/*.so; do
		add_libs "/usr/lib/python$v/lib-dynload/${so##*/}"
	done
	for pat in pip pip-*.dist-info setuptools setuptools-*.egg-info \
		 pkg_resources _distutils_hack distutils-precedence.pth \
		 wheel wheel-*.egg-info; do
		for d in "$dist"/$pat; do
			[ -e "$d" ] || { log "mkinitramfs: no $d"; return 1; }
			cp -pR "$d" "$stage/usr/lib/python3/dist-packages/"
		done
	done
	mkdir -p "$stage/usr/src/wsem/bindings" "$stage/selftests/python"
	tar -C "$ROOT/bindings" -cf - --exclude=__pycache__ \
		--exclude=build --exclude='*.egg-info' python |
		tar -C "$stage/usr/src/wsem/bindings" -xf - || return 1
	cp "$ROOT"/selftests/python/*.py "$stage/selftests/python/"
}
