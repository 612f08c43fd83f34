# SPDX-License-Identifier: LGPL-2.1-or-later
"""The kernel ABI of uapi/linux/wsem.h, in struct formats and numbers.

Every ioctl number is computed here from the header's definitions
(_IOW/_IOWR of magic 0xB9), and every argument struct is a list of
(field, format) pairs in the header's order, so that a host test can check
each offset and size against the C compiler's (selftests/host/).
"""

from __future__ import annotations

import struct
from typing import Dict, List, Tuple

# <asm-generic/ioctl.h>: nr 8 bits, type 8, size 14, dir 2.
_IOC_NRSHIFT = 0
_IOC_TYPESHIFT = 8
_IOC_SIZESHIFT = 16
_IOC_DIRSHIFT = 30
_IOC_WRITE = 1
_IOC_READ = 2


def _ioc(direction: int, nr: int, size: int) -> int:
    return ((direction << _IOC_DIRSHIFT) | (size << _IOC_SIZESHIFT) |
            (IOC_MAGIC << _IOC_TYPESHIFT) | (nr << _IOC_NRSHIFT))


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

ACQUIRE_TRY = 1 << 0
ACQUIRE_DEADLINE = 1 << 1
ACQUIRE_CLOCK = 1 << 2
ACQUIRE_ASYNC = 1 << 3

HOLDER_WAITING = 1 << 0
REOPEN_CLOEXEC = 1 << 0
ASYNC_CANCEL = 1 << 0

OPEN_ARGS = Layout("wsem_open_args", [
    ("size", "Q"), ("flags", "Q"), ("capacity", "Q"), ("mode", "I"),
    ("__pad", "I"), ("name", f"{NAME_MAX}s"),
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
    ("wait_ns_max", "Q"), ("queue_max", "Q"),
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
])
LABEL_ARGS = Layout("wsem_label_args", [
    ("size", "Q"), ("flags", "Q"), ("label", f"{LABEL_MAX}s"),
])
U64 = Layout("__u64", [("value", "Q")])

LAYOUTS = (OPEN_ARGS, ACQUIRE_ARGS, STAT, LIST_ARGS, UNLINK_ARGS, HOLDER,
           HOLDERS_ARGS, LABEL_ARGS)

IOC_MAGIC = 0xB9
IOC_OPEN = _ioc(_IOC_WRITE, 0x01, OPEN_ARGS.size)
IOC_REOPEN = _ioc(_IOC_WRITE, 0x02, U64.size)
IOC_ACQUIRE = _ioc(_IOC_WRITE, 0x03, ACQUIRE_ARGS.size)
IOC_RELEASE = _ioc(_IOC_WRITE, 0x04, U64.size)
IOC_SET_CAPACITY = _ioc(_IOC_WRITE, 0x05, U64.size)
IOC_STAT = _ioc(_IOC_READ | _IOC_WRITE, 0x06, STAT.size)
IOC_UNLINK = _ioc(_IOC_WRITE, 0x07, UNLINK_ARGS.size)
IOC_LIST = _ioc(_IOC_READ | _IOC_WRITE, 0x08, LIST_ARGS.size)
IOC_HOLDERS = _ioc(_IOC_READ | _IOC_WRITE, 0x09, HOLDERS_ARGS.size)
IOC_ASYNC = _ioc(_IOC_WRITE, 0x0A, U64.size)
IOC_WAIT_IDLE = _ioc(_IOC_WRITE, 0x0B, ACQUIRE_ARGS.size)
IOC_SET_LABEL = _ioc(_IOC_WRITE, 0x0C, LABEL_ARGS.size)

IOCTLS = {
    "WSEM_IOC_OPEN": IOC_OPEN, "WSEM_IOC_REOPEN": IOC_REOPEN,
    "WSEM_IOC_ACQUIRE": IOC_ACQUIRE, "WSEM_IOC_RELEASE": IOC_RELEASE,
    "WSEM_IOC_SET_CAPACITY": IOC_SET_CAPACITY, "WSEM_IOC_STAT": IOC_STAT,
    "WSEM_IOC_UNLINK": IOC_UNLINK, "WSEM_IOC_LIST": IOC_LIST,
    "WSEM_IOC_HOLDERS": IOC_HOLDERS, "WSEM_IOC_ASYNC": IOC_ASYNC,
    "WSEM_IOC_WAIT_IDLE": IOC_WAIT_IDLE, "WSEM_IOC_SET_LABEL": IOC_SET_LABEL,
}

# The sizes the header publishes, which the layouts above must equal.
SIZES = {
    "wsem_open_args": 96, "wsem_acquire_args": 40, "wsem_stat": 200,
    "wsem_list_args": 32, "wsem_unlink_args": 80, "wsem_holder": 368,
    "wsem_holders_args": 40, "wsem_label_args": 80,
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
    "WSEM_OPEN_ANON": OPEN_ANON, "WSEM_ACQUIRE_TRY": ACQUIRE_TRY,
    "WSEM_ACQUIRE_DEADLINE": ACQUIRE_DEADLINE,
    "WSEM_ACQUIRE_CLOCK": ACQUIRE_CLOCK, "WSEM_ACQUIRE_ASYNC": ACQUIRE_ASYNC,
    "WSEM_HOLDER_WAITING": HOLDER_WAITING,
    "WSEM_REOPEN_CLOEXEC": REOPEN_CLOEXEC, "WSEM_ASYNC_CANCEL": ASYNC_CANCEL,
    "WSEM_IOC_MAGIC": IOC_MAGIC,
    "WSEM_OPEN_SIZE_VER0": 96, "WSEM_ACQUIRE_SIZE_VER1": ACQUIRE_ARGS.size,
    "WSEM_STAT_SIZE_VER1": STAT.size, "WSEM_LIST_SIZE_VER0": LIST_ARGS.size,
    "WSEM_UNLINK_SIZE_VER0": UNLINK_ARGS.size,
    "WSEM_HOLDER_SIZE_VER0": HOLDER.offsets["label"],
    "WSEM_HOLDER_SIZE_VER1": HOLDER.size,
    "WSEM_LABEL_SIZE_VER0": LABEL_ARGS.size,
    "WSEM_HOLDERS_SIZE_VER0": HOLDERS_ARGS.size,
}
