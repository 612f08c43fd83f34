# SPDX-License-Identifier: LGPL-2.1-or-later
"""Semaphore: one handle on a wsem semaphore; Hold: weight held for a while.

A Semaphore owns one handle, a descriptor of /dev/wsem or of a wsemfs file.
Weight acquired through it belongs to the handle (its open file
description) and goes back when the handle is closed, by close(), by the
garbage collector, or by the process's exit or death.

Blocking calls (acquire, wait_idle) sleep in the kernel with the GIL
released, so other threads run; a signal that interrupts them is handled
(its Python handler runs, and may raise) and the call goes on with the same
absolute deadline.  acquire() returns False when its timeout ends the wait
or blocking=False finds no room, as threading's does.  Errors are OSError
subclasses carrying the errno: TimeoutError (ETIMEDOUT, from hold() and
wait_idle()), BlockingIOError (EAGAIN), FileNotFoundError
(ENOENT), FileExistsError (EEXIST), PermissionError (EACCES, EPERM), and
OSError with errno EINVAL, EDEADLK, ...
"""

from __future__ import annotations

import errno
import os
import time
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Dict, Iterable, List, Optional, Tuple, Type

from . import _abi, _aio, _handle, _pool


@dataclass(frozen=True)
class Stat:
    """The state of a semaphore, field for field struct wsem_stat."""

    capacity: int
    used: int
    available: int
    held: int           #: by the handle asked (0 in list_semaphores())
    waiters: int
    queued_weight: int
    uid: int
    gid: int
    mode: int
    name: str           #: "" for an anonymous or unlinked semaphore
    grants_at_once: int
    grants_waited: int
    timeouts: int
    interrupts: int
    shrunk: int
    wait_ns_total: int
    wait_ns_max: int
    queue_max: int
    lent: int = 0       #: what open handles lend, part of capacity
    lent_here: int = 0  #: what the handle asked lends (0 in a list)
    ceiling: int = 0    #: 0, or a loans semaphore's largest request
    depth: int = 0      #: 0 for a root, else levels below its root
    parent_id: int = 0  #: the parent's id (fdinfo's wsem-id); 0: a root
    spare: int = 0      #: held by the handle's pool, used by nobody


@dataclass(frozen=True)
class Holder:
    """A handle holding weight, or a waiter (waiting is True)."""

    weight: int
    age_ns: int         #: since the grant, or since it queued
    waiting: bool
    pid: int            #: in the caller's PID namespace; 0 if not visible
    comm: str
    cgroup: str
    label: str = ""     #: the handle's label; a child's name or "[ID]"
    child: bool = False  #: a child semaphore's weight, not a handle's


def _stat(fields: Dict[str, Any]) -> Stat:
    return Stat(**fields)


def _is_path(name_or_path: str) -> bool:
    return "/" in name_or_path


class Semaphore:
    """A handle on a wsem semaphore.

    ``Semaphore("jobs")`` opens the named semaphore "jobs" of this IPC
    namespace; ``create=CAPACITY`` creates it if it does not exist (with
    ``mode`` masked by the umask; ``exclusive=True``: fail if it exists).
    Anything with a ``/`` is the path of a wsemfs file instead, such as
    /sys/fs/wsem/jobs or one bind-mounted into a container.  ``readonly``
    opens it for looking only (stat, holders, wait_idle), which needs read
    permission alone.  ``loans=True`` with ``create=CEILING`` creates,
    if it does not exist, a semaphore that takes its capacity from loans
    (lend()): its own capacity is 0 and CEILING is the largest weight a
    request may ask for; its waiters within the ceiling wait while the
    loans fall short, withdrawn ones included.

    The handle is close-on-exec; close() closes it (or the garbage
    collector, or the process's end).  As threading.Semaphore and
    asyncio.Semaphore: ``with sem:`` acquires one unit for the block
    (blocking this thread) and releases it at the end, ``async with sem:``
    the same on the event loop, and acquire() returns True, or False when
    ``blocking=False`` finds the weight taken or a timeout ends the wait.
    ``with sem.hold(2):`` holds more.  ``contextlib.closing(sem)`` closes
    the handle at the end of a block.

    ``pool=N`` gives the Semaphore a pool (see the README): acquire(),
    try_acquire(), release(), hold() and the async acquires are served
    from up to N units that a handle of the pool's own keeps spare, with
    no system call, while the semaphore's counters page shows nobody
    queued; once anyone waits, the spare weight goes back (at the next
    release, or at once through the pool's thread) and the acquires go to
    the kernel in FIFO order.  On a child semaphore the fast path also
    needs nobody queued anywhere in the tree and nothing of it over its
    capacity (its tree's page).  Without the pages every call is the
    kernel's; acquire_many() always is.
    """

    _fd = -1
    _pool: Optional[_pool.Pool] = None
    _async_holds: List["Hold"]

    def __init__(self, name_or_path: str, *, create: Optional[int] = None,
                 mode: int = 0o600, exclusive: bool = False,
                 readonly: bool = False, loans: bool = False,
                 pool: Optional[int] = None) -> None:
        if not isinstance(name_or_path, str):
            raise TypeError("name_or_path must be a str")
        if pool is not None:
            _pool.check_max_spare(pool)
        if exclusive and create is None:
            raise ValueError("exclusive needs create=CAPACITY")
        if loans and create is None:
            raise ValueError("loans needs create=CEILING")
        self._what: Optional[str] = name_or_path
        self._async_holds = []
        if _is_path(name_or_path):
            if create is not None:
                raise ValueError(f"{name_or_path}: a semaphore is created "
                                 f"by NAME, in the IPC namespace it is for")
            self._fd = _handle.path_open(name_or_path, readonly)
            self._enable_pool(pool)
            return
        name = _handle.encode_name(name_or_path)
        flags = 0
        if create is not None:
            flags |= _abi.OPEN_CREAT
            create = _handle.u64(create, "capacity")
        if exclusive:
            flags |= _abi.OPEN_EXCL
        if loans:
            flags |= _abi.OPEN_LOANS
        fd = _handle.dev_open(readonly)
        try:
            _handle.bind(fd, name, flags, create or 0, mode)
        except OSError as e:
            os.close(fd)
            raise _handle.error(e.errno, name_or_path) from None
        self._fd = fd
        self._enable_pool(pool)

    def _enable_pool(self, max_spare: Optional[int]) -> None:
        if max_spare is None:
            return
        try:
            self._pool = _pool.Pool(self._fd, max_spare)
        except OSError as e:
            self.close()
            raise self._error(e) from None

    @classmethod
    def _adopt(cls, fd: int, what: Optional[str]) -> "Semaphore":
        sem = cls.__new__(cls)
        sem._fd = fd
        sem._what = what
        sem._async_holds = []
        return sem

    @classmethod
    def anonymous(cls, capacity: int, *, loans: bool = False,
                  pool: Optional[int] = None) -> "Semaphore":
        """A new semaphore without a name, alive while a handle is; share
        it with reopen(), fork or SCM_RIGHTS.  ``loans=True``: it takes
        its capacity from loans, and @capacity is its ceiling.  ``pool``
        as for Semaphore()."""
        capacity = _handle.u64(capacity, "capacity")
        if pool is not None:
            _pool.check_max_spare(pool)
        flags = _abi.OPEN_ANON | (_abi.OPEN_LOANS if loans else 0)
        fd = _handle.dev_open()
        try:
            _handle.bind(fd, None, flags, capacity, 0)
        except OSError as e:
            os.close(fd)
            raise _handle.error(e.errno, None) from None
        sem = cls._adopt(fd, None)
        sem._enable_pool(pool)
        return sem

    def create_child(self, name: Optional[str], capacity: int, *,
                     mode: int = 0o600,
                     exclusive: bool = False) -> "Semaphore":
        """A child semaphore of this handle's (which must be open for
        reading and writing): created with @capacity of its own, or, named
        and there already with this parent, opened (``exclusive=True``:
        FileExistsError instead).  Weight acquired on the child is
        acquired on this semaphore and every ancestor too, at once.
        @name None makes an anonymous child.  FileExistsError for a name
        that exists under another parent, OSError ELOOP deeper than
        DEPTH_MAX levels."""
        capacity = _handle.u64(capacity, "capacity")
        flags = _abi.OPEN_CHILD
        if name is None:
            if exclusive:
                raise ValueError("exclusive needs a name")
            flags |= _abi.OPEN_ANON
            encoded = None
            mode = 0
        else:
            encoded = _handle.encode_name(name)
            flags |= _abi.OPEN_CREAT
            if exclusive:
                flags |= _abi.OPEN_EXCL
        fd = _handle.dev_open()
        try:
            _handle.bind(fd, encoded, flags, capacity, mode, self.fileno())
        except OSError as e:
            os.close(fd)
            raise _handle.error(e.errno, name) from None
        return self._adopt(fd, name)

    @classmethod
    def from_fd(cls, fd: int) -> "Semaphore":
        """Adopt @fd, a bound handle (inherited, received): the Semaphore
        owns it from now on and closes it.  EINVAL if @fd is not one."""
        try:
            _handle.stat(fd)
        except OSError as e:
            if e.errno == errno.ENOTTY:
                raise _handle.error(errno.EINVAL, f"fd {fd}") from None
            raise _handle.error(e.errno, f"fd {fd}") from None
        return cls._adopt(fd, None)

    # ---- the handle ------------------------------------------------------

    def fileno(self) -> int:
        """The handle's descriptor (ValueError once closed)."""
        if self._fd < 0:
            raise ValueError("I/O operation on a closed wsem handle")
        return self._fd

    @property
    def closed(self) -> bool:
        return self._fd < 0

    def close(self) -> None:
        """Close the handle: what it holds goes back, its request leaves
        the queue (unless another descriptor shares the handle); and the
        pool's, with what it holds."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()
        fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)

    def __del__(self) -> None:
        try:
            self.close()
        except OSError:
            pass

    def __enter__(self) -> "Semaphore":
        """``with sem:`` acquires one unit, as threading.Semaphore does,
        waiting as long as it takes; the block gets the Semaphore."""
        self.acquire()
        return self

    def __exit__(self, et: Optional[Type[BaseException]],
                 ev: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.release()

    async def __aenter__(self) -> None:
        """``async with sem:`` acquires one unit on the event loop, as
        asyncio.Semaphore does, through a handle of its own (see hold())."""
        h = Hold(self, 1, None)
        await h.acquire_async()
        self._async_holds.append(h)

    async def __aexit__(self, et: Optional[Type[BaseException]],
                        ev: Optional[BaseException],
                        tb: Optional[TracebackType]) -> None:
        # Any of the units held for async with blocks will do: each is one.
        self._async_holds.pop().release()

    def locked(self) -> bool:
        """True if one unit cannot be acquired at once: none is free, or
        someone waits (nobody is overtaken), as asyncio's locked()."""
        if self._pool is not None and self._pool.can_serve(1):
            return False
        st = self.stat()
        return st.available < 1 or st.waiters > 0

    def __repr__(self) -> str:
        if self._fd < 0:
            return "<wsem.Semaphore closed>"
        return f"<wsem.Semaphore {self._what or '(anonymous)'} fd={self._fd}>"

    def reopen(self, *, inheritable: bool = False) -> "Semaphore":
        """A new, independent handle on the same semaphore, holding 0."""
        try:
            fd = _handle.reopen(self.fileno(), inheritable)
        except OSError as e:
            raise self._error(e) from None
        return self._adopt(fd, self._what)

    def _error(self, e: OSError) -> OSError:
        return _handle.error(e.errno, self._what)

    # ---- weight ----------------------------------------------------------

    def acquire(self, weight: int = 1, timeout: Optional[float] = None,
                *, blocking: bool = True) -> bool:
        """Wait, in FIFO order, until @weight is granted to this handle;
        True once it is, as threading.Semaphore.acquire().

        @timeout: seconds, after which the wait ends and acquire() returns
        False; 0 takes only what is free at once and nobody waits for;
        None waits as long as it takes.  ``blocking=False`` is timeout=0
        (and takes no timeout).  Other errors raise OSError.  @weight
        comes first: threading's positional ``acquire(False)`` is a
        TypeError here.
        """
        if isinstance(weight, bool):
            raise TypeError("weight must be an int (for threading's "
                            "acquire(False), write blocking=False)")
        weight = _handle.u64(weight, "weight")
        if not blocking:
            if timeout is not None:
                raise ValueError("can't specify a timeout for a "
                                 "non-blocking call")
            timeout = 0
        flags = deadline = 0
        if timeout is not None:
            flags, deadline = _abi.ACQUIRE_DEADLINE, \
                _handle.deadline_after(timeout)
        try:
            if self._pool is not None:
                self.fileno()
                self._pool.acquire(weight, flags, deadline)
            else:
                _handle.acquire(self.fileno(), weight, flags, deadline)
        except OSError as e:
            if e.errno == errno.ETIMEDOUT:
                return False
            raise self._error(e) from None
        return True

    def acquire_until(self, weight: int, deadline_ns: int,
                      clock: int = time.CLOCK_MONOTONIC) -> bool:
        """acquire() with an absolute deadline on @clock, in nanoseconds:
        time.CLOCK_MONOTONIC, CLOCK_BOOTTIME or CLOCK_REALTIME (which
        follows changes of the clock, as sem_clockwait(3)).  True once
        granted, False at the deadline."""
        weight = _handle.u64(weight, "weight")
        deadline_ns = _handle.u64(deadline_ns, "deadline_ns")
        try:
            if self._pool is not None:
                self.fileno()
                self._pool.acquire(weight, _abi.ACQUIRE_DEADLINE,
                                   deadline_ns, clock)
            else:
                _handle.acquire(self.fileno(), weight,
                                _abi.ACQUIRE_DEADLINE, deadline_ns, clock)
        except OSError as e:
            if e.errno == errno.ETIMEDOUT:
                return False
            raise self._error(e) from None
        return True

    def try_acquire(self, weight: int = 1) -> None:
        """Take @weight only if it is free and nobody is queued, else
        BlockingIOError (EAGAIN)."""
        weight = _handle.u64(weight, "weight")
        try:
            if self._pool is None:
                _handle.acquire(self.fileno(), weight, _abi.ACQUIRE_TRY)
            elif not self._pool_try(weight):
                raise _handle.error(errno.EAGAIN, None)
        except OSError as e:
            raise self._error(e) from None

    def _pool_try(self, weight: int) -> bool:
        """@weight through the pool without waiting: True if it got it,
        False without a pool or if it is not free (or someone waits)."""
        pool = self._pool
        if pool is None:
            return False
        self.fileno()
        return pool.take_spare(weight) or pool.kernel_try(weight)

    def release(self, weight: int = 1) -> None:
        """Give back @weight of what this handle holds (EINVAL if more).
        With a pool: of what was acquired through the pool, which keeps
        it spare as its rules say; else of what the handle itself holds
        (acquire_many()'s)."""
        weight = _handle.u64(weight, "weight")
        try:
            fd = self.fileno()
            if self._pool is None or not self._pool.release(weight):
                _handle.release(fd, weight)
        except OSError as e:
            raise self._error(e) from None

    def hold(self, weight: int = 1,
             timeout: Optional[float] = None) -> "Hold":
        """@weight held for the time of a with or async with block.

        ``with sem.hold(2):`` acquires through this handle and releases at
        the end; ``async with sem.hold(2):`` waits on the event loop
        through a handle of its own, closed at the end.
        """
        return Hold(self, _handle.u64(weight, "weight"), timeout)

    async def acquire_async(self, weight: int = 1,
                            timeout: Optional[float] = None) -> "Hold":
        """Wait for @weight on the event loop, in the same FIFO queue as
        every other waiter, and return the Hold that has it (its own
        handle); release() it, or close the Semaphore's handles."""
        h = self.hold(weight, timeout)
        await h.acquire_async()
        return h

    # ---- looking ---------------------------------------------------------

    def stat(self) -> Stat:
        """The semaphore's state; ``held`` is this Semaphore's (its
        handle's and, with a pool, what was acquired through the pool),
        ``spare`` what the pool holds that nobody uses."""
        try:
            fields = _handle.stat(self.fileno())
        except OSError as e:
            raise self._error(e) from None
        pool = self._pool
        if pool is not None:
            fields["held"] += pool.inuse  # type: ignore[operator]
            fields["spare"] = pool.spare
        return _stat(fields)

    @property
    def name(self) -> str:
        """The semaphore's name ("" if anonymous or unlinked)."""
        return self.stat().name

    def holders(self) -> List[Holder]:
        """Who holds (one entry per handle) and who waits, in queue
        order, the holders first."""
        try:
            entries = _handle.holders(self.fileno())
        except OSError as e:
            raise self._error(e) from None
        return [Holder(weight=d["weight"], age_ns=d["age_ns"],
                       waiting=bool(d["flags"] & _abi.HOLDER_WAITING),
                       pid=d["pid"], comm=d["comm"], cgroup=d["cgroup"],
                       label=d["label"],
                       child=bool(d["flags"] & _abi.HOLDER_CHILD))
                for d in entries]

    def set_capacity(self, capacity: int) -> None:
        """Grow (grants those that now fit) or shrink (revokes nothing;
        waiters larger than the new capacity fail with EINVAL)."""
        capacity = _handle.u64(capacity, "capacity")
        try:
            _handle.set_capacity(self.fileno(), capacity)
        except OSError as e:
            raise self._error(e) from None

    def lend(self, capacity: int) -> None:
        """This handle's loan becomes @capacity (0 withdraws it): the
        capacity in force is the semaphore's own plus every open handle's
        loan.  The loan is withdrawn when the handle is closed, or its
        process dies, however it dies; less capacity is a shrink, which
        revokes nothing held.  Lending more needs the owner or
        CAP_IPC_OWNER (PermissionError); lending less never does."""
        capacity = _handle.u64(capacity, "capacity")
        try:
            _handle.lend(self.fileno(), capacity)
        except OSError as e:
            raise self._error(e) from None

    def wait_idle(self, timeout: Optional[float] = None) -> None:
        """Sleep until nothing is held and nobody is queued (a drain).
        EDEADLK if this handle itself holds weight or has a request."""
        flags = deadline = 0
        if timeout is not None:
            flags, deadline = _abi.ACQUIRE_DEADLINE, \
                _handle.deadline_after(timeout)
        try:
            _handle.wait_idle(self.fileno(), flags, deadline)
        except OSError as e:
            raise self._error(e) from None

    async def wait_idle_async(self, timeout: Optional[float] = None) -> None:
        """wait_idle() on the event loop."""
        await _aio.wait_idle(self.fileno(), timeout, self._what)


class Hold:
    """Weight held through a Semaphore: made by Semaphore.hold()."""

    def __init__(self, sem: Semaphore, weight: int,
                 timeout: Optional[float]) -> None:
        self.semaphore = sem
        self.weight = weight
        self.timeout = timeout
        self._own: Optional[Semaphore] = None
        self._held = False

    @property
    def held(self) -> bool:
        return self._held

    def __repr__(self) -> str:
        state = "held" if self._held else "not held"
        return f"<wsem.Hold {self.weight} of {self.semaphore!r}, {state}>"

    def _check_free(self) -> None:
        if self._held:
            raise RuntimeError("this Hold already holds its weight")

    def acquire(self) -> "Hold":
        """Acquire through the Semaphore's handle (blocking); a timeout
        raises TimeoutError, since a with block cannot be skipped."""
        self._check_free()
        if not self.semaphore.acquire(self.weight, self.timeout):
            raise _handle.error(errno.ETIMEDOUT,
                                self.semaphore._what)  # pylint: disable=protected-access
        self._held = True
        return self

    async def acquire_async(self) -> "Hold":
        """Acquire on the event loop through a new handle of its own.

        Cancelling the task that waits takes the request out of the queue
        (the waiters behind it that fit are granted) and closes the handle.
        """
        self._check_free()
        sem = self.semaphore
        try:
            if sem._pool_try(self.weight):  # pylint: disable=protected-access
                self._held = True  # the pool's: released through sem
                return self
        except OSError as e:
            raise sem._error(e) from None  # pylint: disable=protected-access
        own = sem.reopen()
        try:
            await _aio.acquire(own.fileno(), self.weight, self.timeout,
                               own._what)  # pylint: disable=protected-access
        except BaseException:
            own.close()
            raise
        self._own = own
        self._held = True
        return self

    def partial_release(self, weight: int) -> None:
        """Give back @weight, less than the Hold holds, and hold the rest."""
        if not self._held or weight >= self.weight:
            raise RuntimeError("partial release of all or of nothing")
        if self._own is None:
            self.semaphore.release(weight)
        else:
            self._own.release(weight)
        self.weight -= weight

    def release(self) -> None:
        """Give the weight back (RuntimeError if not held)."""
        if not self._held:
            raise RuntimeError("this Hold holds nothing")
        self._held = False
        own, self._own = self._own, None
        if own is None:
            self.semaphore.release(self.weight)
            return
        try:
            own.release(self.weight)
        finally:
            own.close()

    def __enter__(self) -> "Hold":
        return self.acquire()

    def __exit__(self, et: Optional[Type[BaseException]],
                 ev: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.release()

    async def __aenter__(self) -> "Hold":
        return await self.acquire_async()

    async def __aexit__(self, et: Optional[Type[BaseException]],
                        ev: Optional[BaseException],
                        tb: Optional[TracebackType]) -> None:
        self.release()


def acquire_many(requests: Iterable[Tuple[Semaphore, int]],
                 timeout: Optional[float] = None) -> bool:
    """One gang request: each (semaphore, weight) of @requests (1 to
    MANY_MAX of them, each another semaphore), granted all at once or not
    at all, each weight then held by its Semaphore's handle; in one place
    of the arrival order, so no later request is granted before it on any
    of them.  True once granted.

    @timeout: seconds, after which it gives up and returns False; 0
    takes them only if all are free at once and nobody is queued before
    (False otherwise); None waits as long as it takes.
    """
    pairs = list(requests)
    if not 1 <= len(pairs) <= MANY_MAX:
        raise ValueError(f"acquire_many takes 1 to {MANY_MAX} semaphores")
    fds = [sem.fileno() for sem, _ in pairs]
    weights = [_handle.u64(w, "weight") for _, w in pairs]
    flags = deadline = 0
    if timeout is not None:
        if _handle.check_timeout(timeout) == 0:
            flags = _abi.ACQUIRE_TRY
        else:
            flags = _abi.ACQUIRE_DEADLINE
            deadline = _handle.deadline_after(timeout)
    try:
        _handle.acquire_many(fds, weights, flags, deadline)
    except OSError as e:
        if e.errno in (errno.ETIMEDOUT, errno.EAGAIN) and timeout is not None:
            return False
        raise pairs[0][0]._error(e) from None
    return True


#: How many semaphores one acquire_many() may ask.
MANY_MAX = _abi.MANY_MAX


def unlink(name_or_path: str) -> None:
    """Remove a name (owner or CAP_IPC_OWNER), or unlink(2) the wsemfs
    file at a path.  Handles already open keep working."""
    if _is_path(name_or_path):
        fd = _handle.path_open(name_or_path, readonly=True)
        os.close(fd)
        os.unlink(name_or_path)
        return
    name = _handle.encode_name(name_or_path)
    try:
        _handle.unlink(name)
    except OSError as e:
        if e.filename is not None:
            raise
        raise _handle.error(e.errno, name_or_path) from None


def list_semaphores() -> List[Stat]:
    """Every semaphore of this IPC namespace that the caller may read, in
    name order (held is 0)."""
    return [_stat(d) for d in _handle.list_all()]


class AsyncSemaphore:
    """A wsem semaphore with asyncio.Semaphore's shape, for the event loop.

    ``await sem.acquire()`` waits on the loop (the kernel's asynchronous
    request, the loop's reader) in the same FIFO queue as every other
    waiter, and returns True (False when @timeout ends the wait);
    release() gives weight back; ``async with sem:`` holds one unit.
    Each acquire() waits through a handle of its own, so tasks of one
    loop wait side by side, and one that holds never stops another's
    release.  The arguments are Semaphore's; semaphore is that Semaphore.
    """

    def __init__(self, name_or_path: str, **kwargs: object) -> None:
        self.semaphore = Semaphore(name_or_path, **kwargs)  # type: ignore
        self._held: List[Hold] = []

    def __repr__(self) -> str:
        return f"<wsem.AsyncSemaphore of {self.semaphore!r}>"

    async def acquire(self, weight: int = 1,
                      timeout: Optional[float] = None) -> bool:
        """Wait on the event loop until @weight is granted: True, or
        False once @timeout seconds passed (None: no limit)."""
        if isinstance(weight, bool):
            raise TypeError("weight must be an int")
        h = self.semaphore.hold(weight, timeout)
        try:
            await h.acquire_async()
        except TimeoutError:
            return False
        self._held.append(h)
        return True

    def release(self, weight: int = 1) -> None:
        """Give back @weight of what this object's acquire() calls hold,
        the latest first (RuntimeError if they hold less)."""
        weight = _handle.u64(weight, "weight")
        if weight > sum(h.weight for h in self._held):
            raise RuntimeError("release of more than is held")
        while weight:
            h = self._held[-1]
            if h.weight > weight:
                h.partial_release(weight)
                return
            weight -= h.weight
            self._held.pop().release()

    def locked(self) -> bool:
        """True if one unit cannot be acquired at once."""
        return self.semaphore.locked()

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(self, et: Optional[Type[BaseException]],
                        ev: Optional[BaseException],
                        tb: Optional[TracebackType]) -> None:
        self.release()

    def close(self) -> None:
        """Close every handle: what they hold goes back."""
        while self._held:
            self._held.pop().release()
        self.semaphore.close()
