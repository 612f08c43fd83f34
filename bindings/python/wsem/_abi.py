# SPDX-License-Identifier: LGPL-2.1-or-later
"""The kernel ABI of uapi/linux/wsem.h, in struct formats and numbers.

Every ioctl number is computed here from the header's definitions
(_IOW/_IOWR of magic 0xB9) with the running architecture's <asm/ioctl.h>
encoding, and every argument struct is a list of (field, format) pairs in
the header's order, so that a host test can check each offset and size
against the C compiler's (selftests/host/).
"""

from __future__ import annotations

import os
import struct
from typing import Dict, List, NamedTuple, Tuple


class IocLayout(NamedTuple):
    """How an architecture's <asm/ioctl.h> encodes _IOC(): nr in bits
    0-7, type in 8-15, the size from bit 16 on (size_bits wide), the
    direction above it."""

    size_bits: int
    write: int
    read: int


#: asm-generic: x86, arm, arm64, riscv, s390, loongarch, ...
IOC_GENERIC = IocLayout(size_bits=14, write=1, read=2)
#: powerpc, mips, sparc and alpha: a 13-bit size, a 3-bit direction.
IOC_DIR3 = IocLayout(size_bits=13, write=4, read=2)
#: parisc: the generic layout with write and read swapped.
IOC_PARISC = IocLayout(size_bits=14, write=2, read=1)


def ioc_layout(machine: str) -> IocLayout:
    """The layout of a uname(2) machine name (os.uname().machine)."""
    if machine.startswith(("ppc", "powerpc", "mips", "sparc", "alpha")):
        return IOC_DIR3
    if machine.startswith("parisc"):
        return IOC_PARISC
    return IOC_GENERIC


def _ioc(layout: IocLayout, direction: int, nr: int, size: int) -> int:
    if size >= 1 << layout.size_bits:
        raise ValueError(f"ioctl argument of {size} bytes")
    return ((direction << (16 + layout.size_bits)) | (size << 16) |
            (IOC_MAGIC << 8) | nr)


class Layout:
    """One argument struct: its fields in order, packed native-endian."""

    def __init__(self, name: str, fields: List[Tuple[str, str]]) -> None:
        self.name = name
        self.fields = fields
        self.struct = struct.Struct("=" + "".join(f for _, f in fields))
        self.size = self.struct.size
        self.offsets: Dict[str, int] = {}
        fmt = "="
        for field, f in fields:
            self.offsets[field] = struct.calcsize(fmt)
            fmt += f

    def pack(self, **values: object) -> bytearray:
        """The struct with @values set and every other field zero."""
        args = []
        for field, f in self.fields:
            default: object = b"" if f.endswith("s") else 0
            args.append(values.pop(field, default))
        if values:
            raise TypeError(f"{self.name} has no field {sorted(values)[0]}")
        return bytearray(self.struct.pack(*args))

    def unpack(self, buf: bytes, offset: int = 0) -> Dict[str, object]:
        vals = self.struct.unpack_from(buf, offset)
        return {field: v for (field, _), v in zip(self.fields, vals)}


WSEM_FS_MAGIC = 0x7773656D
NAME_MAX = 64
CGROUP_MAX = 256
LABEL_MAX = 64
CAPACITY_MAX = 1 << 62
U64_MAX = (1 << 64) - 1

OPEN_CREAT = 1 << 0
OPEN_EXCL = 1 << 1
OPEN_ANON = 1 << 2
OPEN_LOANS = 1 << 3
OPEN_CHILD = 1 << 4
DEPTH_MAX = 8
MANY_MAX = 8

ACQUIRE_TRY = 1 << 0
ACQUIRE_DEADLINE = 1 << 1
ACQUIRE_CLOCK = 1 << 2
ACQUIRE_ASYNC = 1 << 3

HOLDER_WAITING = 1 << 0
HOLDER_CHILD = 1 << 1
REOPEN_CLOEXEC = 1 << 0
ASYNC_CANCEL = 1 << 0

OPEN_ARGS = Layout("wsem_open_args", [
    ("size", "Q"), ("flags", "Q"), ("capacity", "Q"), ("mode", "I"),
    ("__pad", "I"), ("name", f"{NAME_MAX}s"), ("parent_fd", "i"),
    ("__pad2", "I"),
])
ACQUIRE_ARGS = Layout("wsem_acquire_args", [
    ("size", "Q"), ("weight", "Q"), ("flags", "Q"), ("deadline_ns", "Q"),
    ("clockid", "I"), ("__pad", "I"),
])
STAT = Layout("wsem_stat", [
    ("size", "Q"), ("capacity", "Q"), ("used", "Q"), ("available", "Q"),
    ("held", "Q"), ("waiters", "Q"), ("queued_weight", "Q"), ("uid", "I"),
    ("gid", "I"), ("mode", "I"), ("__pad", "I"), ("name", f"{NAME_MAX}s"),
    ("grants_at_once", "Q"), ("grants_waited", "Q"), ("timeouts", "Q"),
    ("interrupts", "Q"), ("shrunk", "Q"), ("wait_ns_total", "Q"),
    ("wait_ns_max", "Q"), ("queue_max", "Q"), ("lent", "Q"),
    ("lent_here", "Q"), ("ceiling", "Q"), ("depth", "Q"), ("parent_id", "Q"),
])
LIST_ARGS = Layout("wsem_list_args", [
    ("size", "Q"), ("stats", "Q"), ("count", "I"), ("stat_size", "I"),
    ("total", "Q"),
])
UNLINK_ARGS = Layout("wsem_unlink_args", [
    ("size", "Q"), ("flags", "Q"), ("name", f"{NAME_MAX}s"),
])
HOLDER = Layout("wsem_holder", [
    ("weight", "Q"), ("age_ns", "Q"), ("flags", "Q"), ("pid", "i"),
    ("__pad", "I"), ("comm", "16s"), ("cgroup", f"{CGROUP_MAX}s"),
    ("label", f"{LABEL_MAX}s"),
])
HOLDERS_ARGS = Layout("wsem_holders_args", [
    ("size", "Q"), ("flags", "Q"), ("entries", "Q"), ("count", "I"),
    ("entry_size", "I"), ("holders", "I"), ("waiters", "I"),
    ("children", "I"), ("__pad", "I"),
])
LABEL_ARGS = Layout("wsem_label_args", [
    ("size", "Q"), ("flags", "Q"), ("label", f"{LABEL_MAX}s"),
])
LEND_ARGS = Layout("wsem_lend_args", [
    ("size", "Q"), ("flags", "Q"), ("capacity", "Q"), ("deadline_ns", "Q"),
])
MANY_ENTRY = Layout("wsem_many_entry", [
    ("fd", "i"), ("__pad", "I"), ("weight", "Q"),
])
MANY_ARGS = Layout("wsem_many_args", [
    ("size", "Q"), ("flags", "Q"), ("deadline_ns", "Q"), ("clockid", "I"),
    ("count", "I"), ("entries", "Q"),
])
U64 = Layout("__u64", [("value", "Q")])
#: the counters page's struct (mmap(2) of a handle), read-only
COUNTERS = Layout("wsem_counters", [
    ("seq", "I"), ("flags", "I"), ("size", "I"), ("__pad", "I"),
    ("capacity", "Q"), ("used", "Q"), ("waiters", "Q"),
    ("queued_weight", "Q"),
])
COUNTERS_GONE = 1 << 0
#: what a child's page cannot show (mmap(2) at MMAP_TREE pages), read-only
TREE_COUNTERS = Layout("wsem_tree_counters", [
    ("seq", "I"), ("flags", "I"), ("size", "I"), ("__pad", "I"),
])
MMAP_TREE = 1
TREE_WAITING = 1 << 1
TREE_OVER = 1 << 2

LAYOUTS = (OPEN_ARGS, ACQUIRE_ARGS, STAT, LIST_ARGS, UNLINK_ARGS, HOLDER,
           HOLDERS_ARGS, LABEL_ARGS, LEND_ARGS, MANY_ENTRY, MANY_ARGS,
           COUNTERS, TREE_COUNTERS)

IOC_MAGIC = 0xB9


def ioctl_numbers(layout: IocLayout) -> Dict[str, int]:
    """Every WSEM_IOC_* under @layout, by its C name."""
    w, wr = layout.write, layout.read | layout.write
    u64 = U64.size
    return {
        "WSEM_IOC_OPEN": _ioc(layout, w, 0x01, OPEN_ARGS.size),
        "WSEM_IOC_REOPEN": _ioc(layout, w, 0x02, u64),
        "WSEM_IOC_ACQUIRE": _ioc(layout, w, 0x03, ACQUIRE_ARGS.size),
        "WSEM_IOC_RELEASE": _ioc(layout, w, 0x04, u64),
        "WSEM_IOC_SET_CAPACITY": _ioc(layout, w, 0x05, u64),
        "WSEM_IOC_STAT": _ioc(layout, wr, 0x06, STAT.size),
        "WSEM_IOC_UNLINK": _ioc(layout, w, 0x07, UNLINK_ARGS.size),
        "WSEM_IOC_LIST": _ioc(layout, wr, 0x08, LIST_ARGS.size),
        "WSEM_IOC_HOLDERS": _ioc(layout, wr, 0x09, HOLDERS_ARGS.size),
        "WSEM_IOC_ASYNC": _ioc(layout, w, 0x0A, u64),
        "WSEM_IOC_WAIT_IDLE": _ioc(layout, w, 0x0B, ACQUIRE_ARGS.size),
        "WSEM_IOC_SET_LABEL": _ioc(layout, w, 0x0C, LABEL_ARGS.size),
        "WSEM_IOC_LEND": _ioc(layout, w, 0x0E, LEND_ARGS.size),
        "WSEM_IOC_ACQUIRE_MANY": _ioc(layout, w, 0x0F, MANY_ARGS.size),
    }


#: The commands on the machine this runs on.
IOCTLS = ioctl_numbers(ioc_layout(os.uname().machine))
IOC_OPEN = IOCTLS["WSEM_IOC_OPEN"]
IOC_REOPEN = IOCTLS["WSEM_IOC_REOPEN"]
IOC_ACQUIRE = IOCTLS["WSEM_IOC_ACQUIRE"]
IOC_RELEASE = IOCTLS["WSEM_IOC_RELEASE"]
IOC_SET_CAPACITY = IOCTLS["WSEM_IOC_SET_CAPACITY"]
IOC_STAT = IOCTLS["WSEM_IOC_STAT"]
IOC_UNLINK = IOCTLS["WSEM_IOC_UNLINK"]
IOC_LIST = IOCTLS["WSEM_IOC_LIST"]
IOC_HOLDERS = IOCTLS["WSEM_IOC_HOLDERS"]
IOC_ASYNC = IOCTLS["WSEM_IOC_ASYNC"]
IOC_WAIT_IDLE = IOCTLS["WSEM_IOC_WAIT_IDLE"]
IOC_SET_LABEL = IOCTLS["WSEM_IOC_SET_LABEL"]
IOC_LEND = IOCTLS["WSEM_IOC_LEND"]
IOC_ACQUIRE_MANY = IOCTLS["WSEM_IOC_ACQUIRE_MANY"]

# The sizes the header publishes, which the layouts above must equal.
SIZES = {
    "wsem_open_args": 104, "wsem_acquire_args": 40, "wsem_stat": 240,
    "wsem_list_args": 32, "wsem_unlink_args": 80, "wsem_holder": 368,
    "wsem_holders_args": 48, "wsem_label_args": 80, "wsem_lend_args": 32,
    "wsem_many_entry": 16, "wsem_many_args": 40, "wsem_counters": 48,
    "wsem_tree_counters": 16,
}
for _l in LAYOUTS:
    if _l.size != SIZES[_l.name]:
        raise ImportError(f"wsem: struct {_l.name} is {_l.size} bytes, "
                          f"not {SIZES[_l.name]}")

# The header's other numbers, by their C names (the host test compares).
CONSTANTS = {
    "WSEM_FS_MAGIC": WSEM_FS_MAGIC, "WSEM_NAME_MAX": NAME_MAX,
    "WSEM_CAPACITY_MAX": CAPACITY_MAX, "WSEM_CGROUP_MAX": CGROUP_MAX,
    "WSEM_LABEL_MAX": LABEL_MAX,
    "WSEM_OPEN_CREAT": OPEN_CREAT, "WSEM_OPEN_EXCL": OPEN_EXCL,
    "WSEM_OPEN_ANON": OPEN_ANON, "WSEM_OPEN_LOANS": OPEN_LOANS,
    "WSEM_OPEN_CHILD": OPEN_CHILD,
    "WSEM_DEPTH_MAX": DEPTH_MAX, "WSEM_MANY_MAX": MANY_MAX,
    "WSEM_ACQUIRE_TRY": ACQUIRE_TRY,
    "WSEM_ACQUIRE_DEADLINE": ACQUIRE_DEADLINE,
    "WSEM_ACQUIRE_CLOCK": ACQUIRE_CLOCK, "WSEM_ACQUIRE_ASYNC": ACQUIRE_ASYNC,
    "WSEM_HOLDER_WAITING": HOLDER_WAITING, "WSEM_HOLDER_CHILD": HOLDER_CHILD,
    "WSEM_REOPEN_CLOEXEC": REOPEN_CLOEXEC, "WSEM_ASYNC_CANCEL": ASYNC_CANCEL,
    "WSEM_IOC_MAGIC": IOC_MAGIC,
    "WSEM_OPEN_SIZE_VER0": OPEN_ARGS.offsets["parent_fd"],
    "WSEM_OPEN_SIZE_VER1": OPEN_ARGS.size,
    "WSEM_ACQUIRE_SIZE_VER1": ACQUIRE_ARGS.size,
    "WSEM_STAT_SIZE_VER1": STAT.offsets["lent"],
    "WSEM_STAT_SIZE_VER2": STAT.offsets["depth"],
    "WSEM_STAT_SIZE_VER3": STAT.size, "WSEM_LIST_SIZE_VER0": LIST_ARGS.size,
    "WSEM_UNLINK_SIZE_VER0": UNLINK_ARGS.size,
    "WSEM_HOLDER_SIZE_VER0": HOLDER.offsets["label"],
    "WSEM_HOLDER_SIZE_VER1": HOLDER.size,
    "WSEM_LABEL_SIZE_VER0": LABEL_ARGS.size,
    "WSEM_HOLDERS_SIZE_VER0": HOLDERS_ARGS.offsets["children"],
    "WSEM_HOLDERS_SIZE_VER1": HOLDERS_ARGS.size,
    "WSEM_LEND_SIZE_VER0": LEND_ARGS.offsets["deadline_ns"],
    "WSEM_LEND_SIZE_VER1": LEND_ARGS.size,
    "WSEM_MANY_SIZE_VER0": MANY_ARGS.size,
    "WSEM_COUNTERS_SIZE_VER0": COUNTERS.size,
    "WSEM_COUNTERS_GONE": COUNTERS_GONE,
    "WSEM_TREE_COUNTERS_SIZE_VER0": TREE_COUNTERS.size,
    "WSEM_MMAP_TREE": MMAP_TREE, "WSEM_TREE_WAITING": TREE_WAITING,
    "WSEM_TREE_OVER": TREE_OVER,
}
