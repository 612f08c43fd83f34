#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The Python binding (bindings/python) against uapi/linux/wsem.h, in TAP:
# every ioctl number, struct size, field offset and constant that the
# binding computes must be what the C compiler makes of the header; the
# package must import and byte-compile with Debian's python3; and each
# architecture's ioctl numbers, against a table and against the C
# compiler's with that architecture's <asm/ioctl.h> (ioc_archs.sh).  Runs
# on the host (make check runs every selftests/host/*_test.sh).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=/usr/bin/python3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# A copy, so that no __pycache__ lands in the source tree.
PKG=$T/pkg
mkdir "$PKG" && cp -R "$ROOT/bindings/python/wsem" "$PKG/" || exit 1
. "$ROOT/selftests/host/tap.sh"

echo "1..5"
if [ ! -x "$PY" ]; then
	for i in 1 2 3 4 5; do
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

# Two architectures' numbers as Linux 6.12's headers make them, and which
# uname machine names share each encoding.
cat >"$T/table.py" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from wsem import _abi
generic = {"WSEM_IOC_OPEN": 0x4068b901, "WSEM_IOC_STAT": 0xc0f0b906,
           "WSEM_IOC_RELEASE": 0x4008b904, "WSEM_IOC_HOLDERS": 0xc030b909,
           "WSEM_IOC_SET_LABEL": 0x4050b90c, "WSEM_IOC_LEND": 0x4020b90e,
           "WSEM_IOC_ACQUIRE_MANY": 0x4028b90f}
dir3 = {"WSEM_IOC_OPEN": 0x8068b901, "WSEM_IOC_STAT": 0xc0f0b906,
        "WSEM_IOC_RELEASE": 0x8008b904, "WSEM_IOC_HOLDERS": 0xc030b909,
        "WSEM_IOC_SET_LABEL": 0x8050b90c, "WSEM_IOC_LEND": 0x8020b90e,
        "WSEM_IOC_ACQUIRE_MANY": 0x8028b90f}
bad = 0
for machines, want in (
        (("x86_64", "i686", "aarch64", "armv7l", "riscv64", "s390x",
          "loongarch64"), generic),
        (("ppc64le", "ppc64", "ppc", "mips64", "mips", "sparc64", "alpha",
          "parisc64", "parisc"), dir3)):
    for m in machines:
        got = _abi.ioctl_numbers(_abi.ioc_layout(m))
        for k, v in want.items():
            if got[k] != v:
                print(f"{m}: {k} is {got[k]:#x}, want {v:#x}")
                bad = 1
assert _abi.ioc_layout("mips64").size_bits == 13
assert _abi.ioc_layout("parisc64") == _abi.IOC_PARISC
sys.exit(bad)
PY
check "each architecture's ioctl numbers: the table" \
	"$PY" "$T/table.py" "$PKG"

# Each kernel architecture under a uname machine name of it.
cat >"$T/arch.py" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from wsem import _abi
bad = 0
for m in sys.argv[3:]:
    arch, machine = m.split(":")
    want = {}
    with open(f"{sys.argv[2]}/{arch}.txt") as f:
        for line in f:
            k, v = line.split()
            want[k] = int(v)
    got = _abi.ioctl_numbers(_abi.ioc_layout(machine))
    if got != want:
        print(f"{machine} ({arch}): {got} here, {want} in C")
        bad = 1
sys.exit(bad)
PY
. "$ROOT/selftests/host/ioc_archs.sh"
mkdir "$T/arch"
if ! why=$(ioc_archs "$T/arch" 2>&1); then
	n=$((n + 1))
	echo "ok $n - each architecture's ioctl numbers match wsem.h with its <asm/ioctl.h> # SKIP $why"
else
	check "each architecture's ioctl numbers match wsem.h with its <asm/ioctl.h>" \
		"$PY" "$T/arch.py" "$PKG" "$T/arch" generic:aarch64 \
		powerpc:ppc64le mips:mips64 sparc:sparc64 alpha:alpha \
		parisc:parisc64
fi
[ $failed -eq 0 ]
