# SPDX-License-Identifier: LGPL-2.1-or-later
"""asyncio: an asynchronous request and an idle wait, on the event loop.

An asynchronous acquire (WSEM_ACQUIRE_ASYNC) takes its place at the tail of
the queue at once, like a blocking one; its handle then polls readable
once the request has ended, which the loop learns through add_reader().
Every request here has a handle of its own, because a handle has at most
one request.

A task cancelled while it waits takes its request out of the queue
(WSEM_ASYNC_CANCEL), so the waiters behind it are granted as for any
leaving waiter; a grant that came first is given back.  A timeout does
the same, except that a grant that came first wins, as the kernel's
deadline lets a grant win over a timeout.

Idle is reported by poll(2) as POLLPRI, which add_reader() does not
watch: an epoll descriptor that watches the handle for EPOLLPRI is
readable exactly when the handle is idle, and that one the loop watches.
"""

from __future__ import annotations

import asyncio
import errno
import select
from typing import Callable, Optional

from . import _abi, _handle


class _Wait:
    """One wait on the loop: @check() runs whenever @watch_fd is readable
    and ends the wait by returning True or raising; @expire() runs at the
    timeout and may end it as well."""

    def __init__(self, watch_fd: int, check: Callable[[], bool],
                 timeout: Optional[float],
                 expire: Callable[[], bool]) -> None:
        self.loop = asyncio.get_running_loop()
        self.fut: asyncio.Future[None] = self.loop.create_future()
        self.watch_fd = watch_fd
        self.check = check
        self.expire = expire
        self.timer: Optional[asyncio.TimerHandle] = None
        self.loop.add_reader(watch_fd, self._step, check)
        if timeout is not None and timeout != float("inf"):
            self.timer = self.loop.call_later(timeout, self._step, expire)

    def _step(self, fn: Callable[[], bool]) -> None:
        if self.fut.done():
            return
        try:
            if not fn():
                return
        except Exception as e:  # pylint: disable=broad-except
            self.stop()
            self.fut.set_exception(e)
            return
        self.stop()
        self.fut.set_result(None)

    def stop(self) -> None:
        """No more callbacks; idempotent."""
        self.loop.remove_reader(self.watch_fd)
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None


async def acquire(fd: int, weight: int, timeout: Optional[float],
                  what: Optional[str]) -> None:
    """Acquire @weight through handle @fd, which has no request, without
    blocking the loop.  TimeoutError after @timeout seconds."""

    def granted() -> bool:
        try:
            return _handle.async_result(fd)
        except OSError as e:
            raise _handle.error(e.errno, what) from None

    def timed_out() -> bool:
        if not _handle.async_cancel(fd):
            return True  # granted meanwhile: the grant wins
        raise _handle.error(errno.ETIMEDOUT, what)

    if timeout is not None:
        _handle.check_timeout(timeout)
    try:
        if _handle.acquire_async(fd, weight):
            return
    except OSError as e:
        raise _handle.error(e.errno, what) from None
    wait = _Wait(fd, granted, timeout, timed_out)
    try:
        await wait.fut
    except asyncio.CancelledError:
        wait.stop()
        _give_up(fd, weight, wait.fut)
        raise


def _give_up(fd: int, weight: int, fut: asyncio.Future[None]) -> None:
    """The task was cancelled: leave the queue, or give back what a grant
    before the cancellation brought.  The caller closes the handle next,
    which would do both too: an error here must not hide the
    cancellation."""
    try:
        if fut.done() and not fut.cancelled():
            if fut.exception() is None:
                _handle.release(fd, weight)
        elif not _handle.async_cancel(fd):
            _handle.release(fd, weight)
    except OSError:
        pass


async def wait_idle(fd: int, timeout: Optional[float],
                    what: Optional[str]) -> None:
    """Until the semaphore of handle @fd is idle: nothing held, nobody
    queued.  EDEADLK at once if @fd itself holds weight or has a
    request; TimeoutError after @timeout seconds."""

    def idle() -> bool:
        try:
            ep.poll(0)
            _handle.wait_idle(fd, _abi.ACQUIRE_TRY)
        except BlockingIOError as e:
            if e.errno == errno.EAGAIN:
                return False
            raise _handle.error(e.errno, what) from None
        except OSError as e:
            raise _handle.error(e.errno, what) from None
        return True

    def timed_out() -> bool:
        raise _handle.error(errno.ETIMEDOUT, what)

    if timeout is not None:
        _handle.check_timeout(timeout)
    ep = select.epoll()
    try:
        if idle():
            return
        ep.register(fd, select.EPOLLPRI)
        wait = _Wait(ep.fileno(), idle, timeout, timed_out)
        try:
            await wait.fut
        finally:
            wait.stop()
    finally:
        ep.close()
