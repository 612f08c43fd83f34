# SPDX-License-Identifier: LGPL-2.1-or-later
"""Handles as plain descriptors: one function per ioctl, errors as OSError.

Nothing here keeps state; wsem._sem wraps a descriptor in a Semaphore.
fcntl.ioctl() is given a bytearray and mutate_flag=True, so that it returns
the ioctl's return value (REOPEN's new descriptor) and the kernel's output
lands in the buffer.  An ioctl that a signal interrupts fails with
InterruptedError (PEP 475 does not cover ioctl): the callers that sleep
retry it with the same absolute deadline.
"""

from __future__ import annotations

import array
import errno
import fcntl
import math
import operator
import os
import stat as _stat
import time
from typing import Dict, List, Optional, Tuple

from . import _abi

DEVICE = "/dev/wsem"


def error(err: int, what: Optional[str]) -> OSError:
    """An OSError of the subclass that @err maps to, naming @what."""
    if what is None:
        return OSError(err, os.strerror(err))
    return OSError(err, os.strerror(err), what)


def ioctl(fd: int, request: int, buf: bytearray) -> int:
    return fcntl.ioctl(fd, request, buf, True)


def u64(value: object, what: str) -> int:
    """@value as an int of 0..2^64-1, else TypeError or ValueError."""
    v = operator.index(value)  # type: ignore[arg-type]
    if not 0 <= v <= _abi.U64_MAX:
        raise ValueError(f"{what} {v} is out of range")
    return v


def check_timeout(timeout: object) -> float:
    """@timeout in seconds, a number >= 0 (inf: no timeout)."""
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError(f"timeout must be a number of seconds, "
                        f"not {type(timeout).__name__}")
    if math.isnan(timeout) or timeout < 0:
        raise ValueError(f"timeout {timeout} is not >= 0")
    return timeout


def deadline_after(timeout: float, clock: int = time.CLOCK_MONOTONIC) -> int:
    """Now + @timeout seconds on @clock, in nanoseconds, saturating."""
    check_timeout(timeout)
    if math.isinf(timeout):
        return _abi.U64_MAX
    if isinstance(timeout, int):
        ns = timeout * 1_000_000_000
    else:
        ns = math.ceil(timeout * 1e9)
    return min(time.clock_gettime_ns(clock) + ns, _abi.U64_MAX)


def encode_name(name: str) -> bytes:
    """A name as the kernel takes it; one that cannot be is EINVAL."""
    try:
        raw = name.encode("ascii")
    except UnicodeEncodeError:
        raise error(errno.EINVAL, name) from None
    if not 0 < len(raw) < _abi.NAME_MAX or b"\0" in raw:
        raise error(errno.EINVAL, name)
    return raw


def dev_open(readonly: bool = False) -> int:
    """A fresh, unbound, close-on-exec handle of /dev/wsem."""
    return os.open(DEVICE, os.O_RDONLY if readonly else os.O_RDWR)


def bind(fd: int, name: Optional[bytes], flags: int, capacity: int,
         mode: int, parent_fd: int = 0) -> None:
    buf = _abi.OPEN_ARGS.pack(size=_abi.OPEN_ARGS.size, flags=flags,
                              capacity=capacity, mode=mode,
                              name=name or b"", parent_fd=parent_fd)
    ioctl(fd, _abi.IOC_OPEN, buf)


def on_wsemfs(fd: int) -> bool:
    """Is @fd a regular file of a wsemfs mount?

    Python has no fstatfs(2): the mount table says which file system the
    file's device number belongs to.  Without /proc, a regular file that
    answers WSEM_IOC_STAT is taken for one.
    """
    st = os.fstat(fd)
    if not _stat.S_ISREG(st.st_mode):
        return False
    dev = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    try:
        with open("/proc/self/mountinfo", encoding="utf-8",
                  errors="replace") as f:
            for line in f:
                left, sep, right = line.partition(" - ")
                fields = left.split()
                if sep and len(fields) > 2 and fields[2] == dev:
                    return right.split()[0] == "wsem"
    except OSError:
        pass
    else:
        return False
    try:
        stat(fd)
    except OSError:
        return False
    return True


def path_open(path: str, readonly: bool = False) -> int:
    """open(2) of a wsemfs file: a bound, close-on-exec handle.

    O_NONBLOCK only while it is not yet known to be one, so that a FIFO
    given by mistake does not hang the open.  EINVAL for any other file.
    """
    acc = os.O_RDONLY if readonly else os.O_RDWR
    fd = os.open(path, acc | os.O_NOCTTY | os.O_NONBLOCK)
    try:
        if not on_wsemfs(fd):
            raise error(errno.EINVAL, path)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def reopen(fd: int, inheritable: bool = False) -> int:
    flags = 0 if inheritable else _abi.REOPEN_CLOEXEC
    return ioctl(fd, _abi.IOC_REOPEN, _abi.U64.pack(value=flags))


def _acquire_args(weight: int, flags: int, deadline_ns: int = 0,
                  clockid: int = 0) -> bytearray:
    return _abi.ACQUIRE_ARGS.pack(size=_abi.ACQUIRE_ARGS.size,
                                  weight=weight, flags=flags,
                                  deadline_ns=deadline_ns, clockid=clockid)


def _sleeping_ioctl(fd: int, request: int, buf: bytearray) -> None:
    """An ioctl that may sleep, retried after a signal; its deadline, if
    any, is absolute and so kept."""
    while True:
        try:
            ioctl(fd, request, buf)
            return
        except InterruptedError:
            continue


def acquire(fd: int, weight: int, flags: int = 0, deadline_ns: int = 0,
            clockid: Optional[int] = None) -> None:
    """WSEM_IOC_ACQUIRE; a deadline on a clock other than CLOCK_MONOTONIC
    goes with WSEM_ACQUIRE_CLOCK."""
    cid = 0
    if clockid is not None and clockid != time.CLOCK_MONOTONIC:
        flags |= _abi.ACQUIRE_CLOCK
        cid = clockid
    _sleeping_ioctl(fd, _abi.IOC_ACQUIRE,
                    _acquire_args(weight, flags, deadline_ns, cid))


def acquire_many(fds: List[int], weights: List[int], flags: int = 0,
                 deadline_ns: int = 0) -> None:
    """WSEM_IOC_ACQUIRE_MANY through fds[0]: weights[i] on fds[i]'s
    semaphore, all at once or none."""
    size = _abi.MANY_ENTRY.size
    room, addr = _buffer(len(fds), size)
    for i, (fd, weight) in enumerate(zip(fds, weights)):
        room[i * size:(i + 1) * size] = array.array(
            "B", _abi.MANY_ENTRY.pack(fd=fd, weight=weight))
    args = _abi.MANY_ARGS.pack(size=_abi.MANY_ARGS.size, flags=flags,
                               deadline_ns=deadline_ns, count=len(fds),
                               entries=addr)
    _sleeping_ioctl(fds[0], _abi.IOC_ACQUIRE_MANY, args)
    del room


def wait_idle(fd: int, flags: int = 0, deadline_ns: int = 0,
              clockid: Optional[int] = None) -> None:
    cid = 0
    if clockid is not None and clockid != time.CLOCK_MONOTONIC:
        flags |= _abi.ACQUIRE_CLOCK
        cid = clockid
    _sleeping_ioctl(fd, _abi.IOC_WAIT_IDLE,
                    _acquire_args(0, flags, deadline_ns, cid))


def acquire_async(fd: int, weight: int) -> bool:
    """Queue an asynchronous request: True if granted at once, False if
    queued (the handle polls readable once it has ended)."""
    try:
        ioctl(fd, _abi.IOC_ACQUIRE, _acquire_args(weight, _abi.ACQUIRE_ASYNC))
    except BlockingIOError as e:
        if e.errno == errno.EINPROGRESS:
            return False
        raise
    return True


def async_result(fd: int) -> bool:
    """True once the request was granted, False while it is queued; the
    error it ended with is raised."""
    try:
        ioctl(fd, _abi.IOC_ASYNC, _abi.U64.pack(value=0))
    except BlockingIOError as e:
        if e.errno == errno.EINPROGRESS:
            return False
        raise
    return True


def async_cancel(fd: int) -> bool:
    """Leave the queue: True if the request left it, False if it was
    granted meanwhile (the weight is held)."""
    try:
        ioctl(fd, _abi.IOC_ASYNC, _abi.U64.pack(value=_abi.ASYNC_CANCEL))
    except BlockingIOError as e:
        if e.errno == errno.EALREADY:
            return False
        raise
    return True


def release(fd: int, weight: int) -> None:
    ioctl(fd, _abi.IOC_RELEASE, _abi.U64.pack(value=weight))


def set_capacity(fd: int, capacity: int) -> None:
    ioctl(fd, _abi.IOC_SET_CAPACITY, _abi.U64.pack(value=capacity))


def lend(fd: int, capacity: int) -> None:
    ioctl(fd, _abi.IOC_LEND, _abi.LEND_ARGS.pack(size=_abi.LEND_ARGS.size,
                                                 capacity=capacity))


def _decode(raw: object) -> str:
    assert isinstance(raw, bytes)
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


def _stat_fields(buf: bytes, offset: int = 0) -> Dict[str, object]:
    d = _abi.STAT.unpack(buf, offset)
    for k in ("size", "__pad"):
        del d[k]
    d["name"] = _decode(d["name"])
    return d


def stat(fd: int) -> Dict[str, object]:
    buf = _abi.STAT.pack(size=_abi.STAT.size)
    ioctl(fd, _abi.IOC_STAT, buf)
    return _stat_fields(buf)


def _buffer(n: int, entry_size: int) -> Tuple[array.array, int]:
    """Zeroed room for @n entries, and its address for a __u64 pointer."""
    a = array.array("B", bytes(max(n, 1) * entry_size))
    return a, a.buffer_info()[0]


def list_all() -> List[Dict[str, object]]:
    """WSEM_IOC_LIST: the stat of every semaphore of the caller's IPC
    namespace that it may read, in name order."""
    fd = dev_open(readonly=True)
    try:
        count = 16
        while True:
            room, addr = _buffer(count, _abi.STAT.size)
            args = _abi.LIST_ARGS.pack(size=_abi.LIST_ARGS.size, stats=addr,
                                       count=count,
                                       stat_size=_abi.STAT.size)
            ioctl(fd, _abi.IOC_LIST, args)
            total = _abi.LIST_ARGS.unpack(args)["total"]
            assert isinstance(total, int)
            if total <= count:
                raw = room.tobytes()
                return [_stat_fields(raw, i * _abi.STAT.size)
                        for i in range(total)]
            count = total + 16
    finally:
        os.close(fd)


def holders(fd: int) -> List[Dict[str, object]]:
    """WSEM_IOC_HOLDERS: the holders, then the waiters in queue order,
    then the child semaphores that hold weight (HOLDER_CHILD)."""
    count = 16
    while True:
        room, addr = _buffer(count, _abi.HOLDER.size)
        args = _abi.HOLDERS_ARGS.pack(size=_abi.HOLDERS_ARGS.size,
                                      entries=addr, count=count,
                                      entry_size=_abi.HOLDER.size)
        ioctl(fd, _abi.IOC_HOLDERS, args)
        out = _abi.HOLDERS_ARGS.unpack(args)
        total = (out["holders"] + out["waiters"]  # type: ignore[operator]
                 + out["children"])
        if total <= count:
            raw = room.tobytes()
            entries = []
            for i in range(total):
                d = _abi.HOLDER.unpack(raw, i * _abi.HOLDER.size)
                del d["__pad"]
                d["comm"] = _decode(d["comm"])
                d["cgroup"] = _decode(d["cgroup"])
                d["label"] = _decode(d["label"])
                entries.append(d)
            return entries
        count = total + 16


def unlink(name: bytes) -> None:
    fd = dev_open()
    try:
        ioctl(fd, _abi.IOC_UNLINK,
              _abi.UNLINK_ARGS.pack(size=_abi.UNLINK_ARGS.size, name=name))
    finally:
        os.close(fd)
