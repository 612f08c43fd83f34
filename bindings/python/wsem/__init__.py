# SPDX-License-Identifier: LGPL-2.1-or-later
"""wsem: weighted, strictly FIFO counting semaphores of the Linux kernel.

A thin binding of the wsem module's ioctls (/dev/wsem, wsemfs files), with
no compiled code::

    import wsem

    sem = wsem.Semaphore("gpu", create=4)
    with sem:                   # one unit, as threading.Semaphore
        train()
    with sem.hold(2):           # blocks this thread until granted
        train()

    async def job():
        async with sem:          # one unit, on the event loop
            await infer()

    asem = wsem.AsyncSemaphore("gpu")   # asyncio.Semaphore's shape:
    async def job2():
        await asem.acquire(2)   # waits on the loop, never blocks it
        try:
            await infer()
        finally:
            asem.release(2)

Blocking, asynchronous and other processes' waiters share one FIFO queue
per semaphore.  Weight goes back when the handle that holds it is closed,
however the process ends.
"""

from ._sem import (MANY_MAX, AsyncSemaphore, Hold, Holder, Semaphore, Stat,
                   acquire_many, list_semaphores, unlink)

__all__ = ["AsyncSemaphore", "Hold", "Holder", "MANY_MAX", "Semaphore",
           "Stat", "acquire_many", "list_semaphores", "unlink"]
__version__ = "1.0.0"
