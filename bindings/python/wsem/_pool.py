# SPDX-License-Identifier: LGPL-2.1-or-later
"""The pool: a process's fast path to a semaphore (``pool=N``).

The rules are libwsem's (wsem_pool_open(3), userlib/src/pool.c).  The pool
has a handle of its own (a reopen, close-on-exec), so what the kernel says
that handle holds is exactly the pool's: ``inuse``, what the program
acquired through the pool and has not released, plus ``spare``, weight
held that nobody uses.  While the semaphore's counters page (struct
wsem_counters, mmap(2)ed read-only) shows no waiter, no queued weight and
no more used than the capacity, an acquire takes from ``spare`` and a
release gives to it, without a system call.  Otherwise:

- an acquire that ``spare`` cannot serve gives all of it back, then tries
  the kernel for its weight and a batch (up to ``max_spare`` of what the
  page shows free) that becomes spare, then for its weight alone; if that
  fails it is the plain acquire, on the pool's handle, queued in FIFO
  order with every other request;
- a release moves the weight to ``spare`` and reads the page once: all of
  it goes back if the page shows a waiter or an overhang, else what is
  above ``max_spare``;
- a daemon thread sleeps in poll(2) on the pool's handle for POLLRDBAND,
  the kernel's demand event, and gives ``spare`` back when WSEM_IOC_STAT
  then shows a waiter or an overhang: an idle pool gives way at once.

Python has the GIL, and the counts are two ints behind one
threading.Lock (which the page read is under too), not atomics: the lock
costs about what a C pool's atomics cost next to the interpreter's own
work.  A blocking acquire of the kernel never holds the lock.  The page is
read with struct.unpack_from (plain loads) and its sequence number read
before and after: a torn or changing read is retried, as the header allows
for plain loads; Python has no memory fences, so on a weakly ordered CPU
this relies on the interpreter's work between the loads.

An acquire reads the page before it takes from ``spare``: one that read it
before a request queued may still take spare weight after, and a thread
has one acquire under way at a time, so a pool gets ahead of a queued
request by at most one acquire per thread.  A child semaphore's page shows
the child's queue, not its ancestors', on which its weight is held too: on
a child the pool also maps the tree's page (struct wsem_tree_counters, at
WSEM_MMAP_TREE pages) and serves from ``spare`` only while that shows
nobody queued anywhere in the tree and nothing of it over its capacity; a
child's handle reports POLLRDBAND when those flags change, so the watcher
hears them.  Where a page cannot be mapped the pool keeps nothing spare:
every call is the kernel's.
"""

from __future__ import annotations

import errno
import mmap
import os
import select
import struct
import sys
import threading
from typing import List, Optional

from . import _abi, _handle

_SEQ = struct.Struct("=I")

# The fork(2)s of this process and its ancestors: a child shares a pool's
# handle but not its counts, so its calls fail with EBADF (as libwsem's).
_forks: List[int] = [0]


def _forked() -> None:
    _forks[0] += 1


os.register_at_fork(after_in_child=_forked)


def check_max_spare(max_spare: object) -> int:
    """@max_spare as the pool's bound, else a TypeError or ValueError that
    says what it must be."""
    if isinstance(max_spare, bool) or not isinstance(max_spare, int):
        raise TypeError(f"pool must be an int (the most weight kept "
                        f"spare), not {type(max_spare).__name__}")
    if not 0 <= max_spare <= _abi.CAPACITY_MAX:
        raise ValueError(f"pool={max_spare}: the most weight kept spare "
                         f"must be 0..2**62")
    return max_spare


class Pool:
    """A pool over a new handle on the semaphore of handle @fd."""

    def __init__(self, fd: int, max_spare: int) -> None:
        self.max_spare = check_max_spare(max_spare)
        self._forks = _forks[0]
        self._lock = threading.Lock()
        self.spare = 0      # held by fd, used by nobody
        self.inuse = 0      # held by fd for the program's acquires
        self._page: Optional[mmap.mmap] = None
        self._tree: Optional[mmap.mmap] = None
        self._stop = -1
        self._thread: Optional[threading.Thread] = None
        self.fd = _handle.reopen(fd)
        try:
            self._map(_handle.stat(self.fd)["depth"])
            if self._page is not None:
                self._start_watcher()
        except BaseException:
            self.close()
            raise

    def _map(self, depth: int) -> None:
        try:
            if depth:
                self._tree = mmap.mmap(
                    self.fd, _abi.TREE_COUNTERS.size, mmap.MAP_SHARED,
                    mmap.PROT_READ,
                    offset=_abi.MMAP_TREE * mmap.PAGESIZE)
            self._page = mmap.mmap(self.fd, _abi.COUNTERS.size,
                                   mmap.MAP_SHARED, mmap.PROT_READ)
        except (OSError, ValueError):
            self._unmap()  # no page: every call is the kernel's

    def _unmap(self) -> None:
        for page in (self._page, self._tree):
            if page is not None:
                page.close()
        self._page = self._tree = None

    def _tree_busy(self) -> bool:
        """On a child, does the tree's page show a request queued or an
        overhang anywhere in the tree (or the tree gone)?  One aligned
        32-bit field, read whole."""
        tree = self._tree
        return tree is not None and bool(
            _SEQ.unpack_from(tree, _abi.TREE_COUNTERS.offsets["flags"])[0] &
            (_abi.COUNTERS_GONE | _abi.TREE_WAITING | _abi.TREE_OVER))

    def _start_watcher(self) -> None:
        r, w = os.pipe2(os.O_CLOEXEC)
        self._stop = w
        self._thread = threading.Thread(target=self._watch, args=(r,),
                                        name="wsem-pool", daemon=True)
        self._thread.start()

    # ---- the page ----------------------------------------------------

    def _free(self) -> Optional[int]:
        """What a try of the kernel could get now (capacity - used) if
        nobody is queued and nothing is held over the capacity; None if
        someone is, or without a page.  Called with the lock held."""
        page = self._page
        if page is None:
            return None
        while True:
            s1 = _SEQ.unpack_from(page, 0)[0]
            if s1 & 1:
                continue
            c = _abi.COUNTERS.unpack(page)
            if _SEQ.unpack_from(page, 0)[0] == s1 and c["seq"] == s1:
                break
        if (c["flags"] & _abi.COUNTERS_GONE or c["waiters"] or
                c["queued_weight"] or c["used"] > c["capacity"] or
                self._tree_busy()):
            return None
        return c["capacity"] - c["used"]

    # ---- giving back (all with the lock held) --------------------------

    def _release_spare(self, n: int) -> None:
        if n:
            try:
                _handle.release(self.fd, n)
            except OSError:
                self.spare += n  # never expected: the handle holds it
                raise

    def _give_back(self) -> None:
        n, self.spare = self.spare, 0
        self._release_spare(n)

    def _settle(self) -> None:
        """Weight went into spare: all back if the page shows a request
        queued (or an overhang), else what is above max_spare."""
        if self._free() is None:
            self._give_back()
        elif self.spare > self.max_spare:
            n, self.spare = self.spare - self.max_spare, self.max_spare
            self._release_spare(n)

    # ---- the calls -----------------------------------------------------

    def _check(self) -> None:
        """EBADF in a child of fork(2), or once closed."""
        if self._forks != _forks[0] or self.fd < 0:
            raise _handle.error(errno.EBADF, "a pool of another process "
                                "(fork) or closed")

    def take_spare(self, weight: int) -> bool:
        """The fast path: @weight from spare while nobody is queued."""
        self._check()
        with self._lock:
            if self.spare < weight or self._free() is None:
                return False
            self.spare -= weight
            self.inuse += weight
            return True

    def kernel_try(self, weight: int) -> bool:
        """Spare goes back, then one try of the kernel for @weight and a
        batch, else for @weight alone: True if granted, False if not free
        or someone is queued; OSError for the kernel's other errors."""
        self._check()
        with self._lock:
            self._give_back()
            free = self._free()
            extra = 0
            if free is not None and free > weight:
                extra = min(free - weight, self.max_spare)
            if extra:
                try:
                    _handle.acquire(self.fd, weight + extra,
                                    _abi.ACQUIRE_TRY)
                except BlockingIOError:
                    pass
                else:
                    self.inuse += weight
                    self.spare += extra
                    self._settle()
                    return True
            try:
                _handle.acquire(self.fd, weight, _abi.ACQUIRE_TRY)
            except BlockingIOError:
                return False
            self.inuse += weight
            return True

    def acquire(self, weight: int, flags: int, deadline_ns: int,
                clockid: Optional[int] = None) -> None:
        """The whole acquire: spare, a try, then the kernel's acquire with
        @flags and @deadline_ns on the pool's handle, in FIFO order (its
        errors, ETIMEDOUT among them, are raised)."""
        if self.take_spare(weight) or self.kernel_try(weight):
            return
        _handle.acquire(self.fd, weight, flags, deadline_ns, clockid)
        with self._lock:
            self.inuse += weight

    def release(self, weight: int) -> bool:
        """@weight acquired through the pool becomes spare, then settles;
        False (nothing changed) if the pool's calls hold less."""
        self._check()
        with self._lock:
            if weight > self.inuse:
                return False
            self.inuse -= weight
            self.spare += weight
            self._settle()
            return True

    def can_serve(self, weight: int) -> bool:
        with self._lock:
            return self.spare >= weight and self._free() is not None

    def trim(self) -> None:
        """Read the state through the pool's handle (which ends the demand
        event) and give spare back if anyone waits or more is held than
        the capacity."""
        with self._lock:
            if self.fd < 0:
                return
            st = _handle.stat(self.fd)
            if (st["waiters"] or st["queued_weight"] or
                    st["used"] > st["capacity"] or self._tree_busy()):
                self._give_back()

    def _watch(self, stop: int) -> None:
        """The watcher thread: the demand event, until @stop is readable."""
        p = select.poll()
        p.register(self.fd, select.POLLRDBAND)
        p.register(stop, select.POLLIN)
        try:
            while True:
                events = dict(p.poll())
                if stop in events or events.get(self.fd, 0) & (
                        select.POLLERR | select.POLLNVAL):
                    return
                try:
                    self.trim()
                except OSError as e:
                    if e.errno != errno.EINTR:
                        return
        finally:
            os.close(stop)

    def close(self) -> None:
        """Stop the watcher, close the handle (everything it holds goes
        back) and unmap the page.  In a child of fork(2) only the child's
        descriptors are closed: the parent's pool goes on."""
        if self._stop >= 0:
            if self._forks == _forks[0]:
                os.write(self._stop, b"x")
                # Not at the interpreter's exit, where the thread (a
                # daemon) no longer runs: it sees the closed handle.
                if (self._thread is not None and not sys.is_finalizing()
                        and self._thread is not threading.current_thread()):
                    self._thread.join(10)
            os.close(self._stop)
            self._stop = -1
        if self._forks != _forks[0]:
            # A child of fork(2) has a copy of the lock as it was at the
            # fork: held for good if a thread of the parent (its watcher
            # in trim(), a caller) held it then.  Nothing else of the
            # child uses the pool (EBADF), so a new lock is safe.
            self._lock = threading.Lock()
        with self._lock:
            self._unmap()
            fd, self.fd = self.fd, -1
            self.spare = self.inuse = 0
        if fd >= 0:
            os.close(fd)
