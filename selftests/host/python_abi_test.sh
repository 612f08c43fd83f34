#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The Python binding (bindings/python) against uapi/linux/wsem.h, in TAP:
# every ioctl number, struct size, field offset and constant that the
# binding computes must be what the C compiler makes of the header; the
# package must import and byte-compile with Debian's python3.  Runs on the
# host (make check runs every selftests/host/*_test.sh).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=/usr/bin/python3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# A copy, so that no __pycache__ lands in the source tree.
PKG=$T/pkg
mkdir "$PKG" && cp -R "$ROOT/bindings/python/wsem" "$PKG/" || exit 1
. "$ROOT/selftests/host/tap.sh"

echo "1..3"
if [ ! -x "$PY" ]; then
	for i in 1 2 3; do
		echo "ok $i - python binding # SKIP no $PY (apt-get install python3)"
	done
	exit 0
fi

# What the binding believes, one "KEY VALUE" a line; and a C program that
# prints the same keys with the compiler's values.
cat >"$T/dump.py" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from wsem import _abi
mode = sys.argv[2]
if mode == "c":
    print("#include <stddef.h>\n#include <stdio.h>\n#include <linux/wsem.h>")
    print("int main(void)\n{")
def out(key, py, c):
    if mode == "c":
        print(f'\tprintf("%s %llu\\n", "{key}", (unsigned long long)({c}));')
    else:
        print(f"{key} {py}")
for l in _abi.LAYOUTS:
    out(f"sizeof.{l.name}", l.size, f"sizeof(struct {l.name})")
    for field, f in l.fields:
        out(f"offsetof.{l.name}.{field}", l.offsets[field],
            f"offsetof(struct {l.name}, {field})")
        if not f.endswith("s"):
            out(f"signed.{l.name}.{field}", int(f.islower()),
                f"(__typeof__(((struct {l.name} *)0)->{field}))-1 < 0")
for k, v in sorted(_abi.IOCTLS.items()):
    out(k, v, k)
for k, v in sorted(_abi.CONSTANTS.items()):
    out(k, v, k)
if mode == "c":
    print("\treturn 0;\n}")
PY
abi_same() {
	"$PY" "$T/dump.py" "$PKG" c >"$T/abi.c" &&
	cc -Wall -Werror -I"$ROOT/uapi" -o "$T/abi" "$T/abi.c" &&
	"$T/abi" >"$T/c.txt" &&
	"$PY" "$T/dump.py" "$PKG" py >"$T/py.txt" &&
	diff -u "$T/c.txt" "$T/py.txt"
}
check "ioctl numbers, struct sizes, offsets and constants match the header" \
	abi_same
check "the package imports with Debian's python3" \
	"$PY" -c "import sys; sys.path.insert(0, '$PKG'); import wsem; \
		  print(wsem.__version__)"
check "every module byte-compiles, warnings as errors" \
	"$PY" -W error -m compileall -q -f -d wsem -x '/__pycache__/' \
		"$PKG/wsem" -o 0
[ $failed -eq 0 ]
