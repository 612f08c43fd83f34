# SPDX-License-Identifier: GPL-2.0
"""The Python binding (bindings/python) in the test VM, in TAP.

usage: wsem_test.py [--group api|pip] [TEST...]

Runs as root with Debian's python3, the module loaded and the binding's
source in /usr/src/wsem/bindings/python, as in the test VM, else in this
tree (WSEM_PY_SRC overrides).  Each
test is a function run in a child process of its own (fork), so that a
thread or a handle left behind ends with it; the semaphores a test made
(names starting with its prefix) are removed after it.  A failing test
prints its traceback as TAP diagnostics.

The waiters that share one queue here are of every kind: blocking calls
in threads, asyncio tasks, other Python processes, and the wsem CLI (C,
libwsem).  Grants are written, in the order they happen, to a file opened
with O_APPEND by everyone; with capacity 1 that order is the queue's.
"""

import asyncio
import contextlib
import errno
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

# The guest's copy, else (make check-host) the source tree, which no
# __pycache__ may land in.
SRC = os.environ.get("WSEM_PY_SRC", "/usr/src/wsem/bindings/python")
if not os.path.isdir(SRC):
    SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "..", "..", "bindings", "python")
    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
    sys.dont_write_bytecode = True
sys.path.insert(0, SRC)
import wsem  # noqa: E402  pylint: disable=wrong-import-position
from wsem import _aio  # noqa: E402  pylint: disable=wrong-import-position

PY = sys.executable
TESTS = []
P = ""          # the running test's prefix for semaphore names
T = ""          # the running test's scratch directory


def test(desc, seconds=60, group="api"):
    """A test of @group (a program of its own: python_test.sh runs "api",
    python_pip_test.sh "pip"), killed after @seconds."""
    def add(fn):
        fn.seconds = seconds
        fn.group = group
        TESTS.append((fn, desc))
        return fn
    return add


# ---- helpers ---------------------------------------------------------------

def note(*args):
    print("#", *args, flush=True)


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def raises(exc, err, fn, *args, **kwargs):
    """fn(*args, **kwargs) raises @exc, with errno @err unless None."""
    try:
        fn(*args, **kwargs)
    except exc as e:
        if err is not None and e.errno != err:
            raise AssertionError(f"{fn.__name__}: errno {e.errno} "
                                 f"({e}), want {errno.errorcode[err]}")
        return e
    raise AssertionError(f"{fn.__name__} did not raise {exc.__name__}")


def eventually(pred, what, timeout=20.0):
    end = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


async def aeventually(pred, what, timeout=20.0):
    end = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


def waiters_are(sem, n):
    return lambda: sem.stat().waiters == n


class Grants:
    """The order of grants: a file every waiter appends its tag to."""

    def __init__(self):
        self.path = os.path.join(T, "grants")
        self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)

    def add(self, tag):
        os.write(self.fd, (tag + "\n").encode())

    def order(self):
        with open(self.path, encoding="ascii") as f:
            return f.read().split()


# A waiter in another Python process: NAME MODE WEIGHT TAG FILE, MODE
# "block" (acquire) or "async" (async with hold); it writes TAG to FILE
# once granted, holds for a moment and goes.
CHILD = r"""
import asyncio, os, sys, time
import wsem
name, mode, weight, tag, path = sys.argv[1:6]
weight = int(weight)
sem = wsem.Semaphore(name)
fd = os.open(path, os.O_WRONLY | os.O_APPEND)
if mode == "block":
    with sem.hold(weight):
        os.write(fd, (tag + "\n").encode())
        time.sleep(0.05)
else:
    async def main():
        async with sem.hold(weight):
            os.write(fd, (tag + "\n").encode())
            await asyncio.sleep(0.05)
    asyncio.run(main())
"""


def child(name, mode, weight, tag, grants):
    env = dict(os.environ, PYTHONPATH=SRC)
    return subprocess.Popen([PY, "-c", CHILD, name, mode, str(weight), tag,
                             grants.path], env=env)


def cli_waiter(name, weight, tag, grants):
    """wsem run: a blocking waiter of libwsem, in C."""
    return subprocess.Popen(["wsem", "run", name, "--weight", str(weight),
                             "--", "sh", "-c",
                             f"echo {tag} >>{grants.path}; sleep 0.05"])


def thread_waiter(sem, weight, tag, grants):
    """A blocking acquire in a thread, through a handle of its own."""
    h = sem.reopen()

    def run():
        with h.hold(weight):
            grants.add(tag)
            time.sleep(0.05)
        h.close()
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


async def task_waiter(sem, weight, tag, grants):
    async with sem.hold(weight):
        grants.add(tag)
        await asyncio.sleep(0.05)


def mount_wsemfs():
    d = os.path.join(T, "mnt")
    os.mkdir(d)
    subprocess.run(["mount", "-t", "wsem", "wsem", d], check=True)
    return d


# ---- opening ---------------------------------------------------------------

@test("Semaphore(name, create=...) creates, opens and reports errors")
def t_open():
    sem = wsem.Semaphore(f"{P}a", create=4, mode=0o640)
    st = sem.stat()
    check((st.capacity, st.used, st.held, st.waiters) == (4, 0, 0, 0),
          f"fresh stat {st}")
    check(st.name == f"{P}a" and sem.name == f"{P}a", f"name {st.name}")
    check(st.mode == 0o640 & ~0o022 and st.uid == 0, f"mode/uid {st}")
    other = wsem.Semaphore(f"{P}a", create=9)       # exists: kept as it is
    check(other.stat().capacity == 4, "create of an existing one resized it")
    raises(FileExistsError, errno.EEXIST, wsem.Semaphore, f"{P}a",
           create=4, exclusive=True)
    raises(FileNotFoundError, errno.ENOENT, wsem.Semaphore, f"{P}none")
    e = raises(OSError, errno.EINVAL, wsem.Semaphore, "bad name", create=1)
    check(e.filename == "bad name", f"error names {e.filename}")
    raises(OSError, errno.EINVAL, wsem.Semaphore, "x" * 64, create=1)
    raises(OSError, errno.EINVAL, wsem.Semaphore, "é", create=1)
    raises(OSError, errno.EINVAL, wsem.Semaphore, f"{P}z", create=0)
    raises(ValueError, None, wsem.Semaphore, f"{P}z", exclusive=True)
    raises(ValueError, None, wsem.Semaphore, f"{P}z", create=-1)
    check(not os.get_inheritable(sem.fileno()), "the handle is inheritable")
    with contextlib.closing(wsem.Semaphore(f"{P}a")) as s2:
        fd = s2.fileno()
    check(s2.closed, "closing() did not close")
    raises(OSError, errno.EBADF, os.fstat, fd)
    raises(ValueError, None, s2.fileno)


@test("anonymous, reopen and from_fd: handles of their own or shared")
def t_anonymous():
    anon = wsem.Semaphore.anonymous(3)
    check(anon.name == "" and anon.stat().capacity == 3, "anonymous stat")
    r = anon.reopen()
    r.acquire(2)
    check(anon.stat().used == 2 and anon.stat().held == 0, "reopen shares")
    check(r.stat().held == 2, "the reopened handle holds")
    check(not os.get_inheritable(r.fileno()), "reopen is inheritable")
    heir = anon.reopen(inheritable=True)
    check(os.get_inheritable(heir.fileno()), "reopen(inheritable) is not")
    shared = wsem.Semaphore.from_fd(os.dup(r.fileno()))
    check(shared.stat().held == 2, "from_fd of a dup is another handle")
    r.close()
    check(anon.stat().used == 2, "a dup still open let go")
    shared.close()
    check(anon.stat().used == 0, "closing the last reference kept weight")
    rd, wr = os.pipe()
    raises(OSError, errno.EINVAL, wsem.Semaphore.from_fd, rd)
    os.close(wr)
    raises(OSError, errno.EINVAL, wsem.Semaphore.anonymous, 0)


@test("a wsemfs path opens a bound handle; read-only cannot acquire")
def t_path():
    mnt = mount_wsemfs()
    wsem.Semaphore(f"{P}p", create=2)
    path = f"{mnt}/{P}p"
    sem = wsem.Semaphore(path)
    sem.acquire(2)
    check(sem.stat().held == 2 and sem.name == f"{P}p", "path handle")
    ro = wsem.Semaphore(path, readonly=True)
    check(ro.stat().used == 2, "read-only handle cannot stat")
    raises(OSError, errno.EBADF, ro.acquire, 1)
    check(len(ro.holders()) == 1, "read-only handle cannot list holders")
    raises(ValueError, None, wsem.Semaphore, path, create=2)
    raises(OSError, errno.EINVAL, wsem.Semaphore, "/etc/passwd")
    raises(OSError, errno.EINVAL, wsem.Semaphore, "/dev/null")
    raises(FileNotFoundError, errno.ENOENT, wsem.Semaphore, f"{mnt}/nope")
    wsem.unlink(path)
    check(not os.path.exists(path), "unlink of the path left the file")
    sem.release(2)                       # still working, nameless
    check(sem.name == "", "an unlinked semaphore kept its name")


@test("list_semaphores and unlink by name")
def t_list_unlink():
    a = wsem.Semaphore(f"{P}l1", create=3)
    wsem.Semaphore(f"{P}l2", create=5)
    a.acquire(1)
    mine = {s.name: s for s in wsem.list_semaphores()
            if s.name.startswith(P)}
    check(sorted(mine) == [f"{P}l1", f"{P}l2"], f"listed {sorted(mine)}")
    check(mine[f"{P}l1"].used == 1 and mine[f"{P}l2"].capacity == 5,
          f"listed stat {mine}")
    wsem.unlink(f"{P}l2")
    raises(FileNotFoundError, errno.ENOENT, wsem.Semaphore, f"{P}l2")
    e = raises(FileNotFoundError, errno.ENOENT, wsem.unlink, f"{P}l2")
    check(e.filename == f"{P}l2", f"error names {e.filename}")


# ---- blocking acquire ------------------------------------------------------

@test("with sem / async with sem: one unit, as threading and asyncio")
def t_with_sem():
    sem = wsem.Semaphore(f"{P}w", create=2)
    with sem as s:
        check(s is sem, "with sem as s: s is not the Semaphore")
        check(sem.stat().held == 1, "with sem: did not acquire one unit")
        check(not sem.locked(), "locked() with one unit free")
        with sem:
            check(sem.stat().held == 2, "nested with sem: not two units")
            check(sem.locked(), "locked() with none free")
        check(sem.stat().held == 1, "the nested block kept its unit")
    check(sem.stat().held == 0, "with sem: did not release")
    try:
        with sem:
            raise KeyError("inside")
    except KeyError:
        pass
    check(sem.stat().used == 0, "an exception kept the unit")
    check(not sem.closed, "with sem: closed the handle")

    async def main():
        async with sem:
            check(sem.stat().used == 1, "async with sem: not one unit")
            async with sem:
                check(sem.stat().used == 2, "nested async with: not two")
                other = asyncio.create_task(sem.__aenter__())
                await aeventually(waiters_are(sem, 1), "a queued task")
                other.cancel()
                try:
                    await other
                except asyncio.CancelledError:
                    pass
            check(sem.stat().used == 1 and sem.stat().waiters == 0,
                  f"after the inner block: {sem.stat()}")
        check(sem.stat().used == 0, "async with sem: did not release")
    asyncio.run(main())


@test("acquire(blocking=False) and timeouts return False, as threading")
def t_acquire_false():
    sem = wsem.Semaphore(f"{P}f", create=2)
    check(sem.acquire() is True, "acquire() did not return True")
    check(sem.acquire(blocking=False) is True, "a free unit was not True")
    check(sem.acquire(blocking=False) is False, "no unit was not False")
    check(sem.acquire(1, timeout=0.05) is False, "timeout was not False")
    check(sem.acquire(1, 0) is False, "timeout 0 was not False")
    raises(ValueError, None, sem.acquire, 1, 1, blocking=False)
    raises(TypeError, None, sem.acquire, False)
    sem.release(2)
    check(sem.acquire(2, timeout=1) is True, "a granted timeout not True")
    sem.release(2)
    holder = sem.reopen()
    holder.acquire(2)
    try:
        with sem.hold(1, timeout=0.05):
            raise AssertionError("hold() went in after its timeout")
    except TimeoutError as e:
        check(e.errno == errno.ETIMEDOUT, f"hold timeout errno {e.errno}")
    check(sem.stat().waiters == 0 and sem.stat().held == 0,
          "a False acquire left something behind")


@test("acquire, try_acquire, release; errors carry the errno")
def t_acquire():
    sem = wsem.Semaphore(f"{P}a", create=4)
    sem.acquire(3)
    check(sem.stat().held == 3, "held after acquire")
    raises(BlockingIOError, errno.EAGAIN, sem.try_acquire, 2)
    sem.try_acquire(1)
    raises(OSError, errno.EINVAL, sem.release, 5)
    check(sem.stat().held == 4, "a failed release changed something")
    sem.release(4)
    raises(OSError, errno.EINVAL, sem.acquire, 0)
    raises(OSError, errno.EINVAL, sem.acquire, 5)
    raises(ValueError, None, sem.acquire, -1)
    raises(ValueError, None, sem.acquire, 1 << 64)
    raises(TypeError, None, sem.acquire, 1.5)
    raises(ValueError, None, sem.acquire, 1, timeout=-1)
    raises(TypeError, None, sem.acquire, 1, timeout="1")
    check(sem.stat().used == 0, "bad calls changed the semaphore")


@test("acquire(timeout=...) returns False at its deadline")
def t_timeout():
    sem = wsem.Semaphore(f"{P}t", create=2)
    holder = sem.reopen()
    holder.acquire(2)
    t0 = time.monotonic()
    check(sem.acquire(1, timeout=0.3) is False, "a timeout was not False")
    dt = time.monotonic() - t0
    check(0.3 <= dt < 5, f"timed out after {dt:.3f} s")
    t0 = time.monotonic()
    check(sem.acquire(1, timeout=0) is False, "timeout=0 was not False")
    check(time.monotonic() - t0 < 1, "timeout=0 slept")
    check(sem.stat().waiters == 0, "a timed-out waiter stayed queued")


@test("a signal does not end acquire: its handler runs, the deadline holds")
def t_eintr():
    sem = wsem.Semaphore(f"{P}i", create=1)
    holder = sem.reopen()
    holder.acquire(1)
    seen = []
    signal.signal(signal.SIGALRM, lambda *_: seen.append(1))
    signal.setitimer(signal.ITIMER_REAL, 0.05, 0.05)
    t0 = time.monotonic()
    check(sem.acquire(1, timeout=0.6) is False, "timeout was not False")
    dt = time.monotonic() - t0
    signal.setitimer(signal.ITIMER_REAL, 0, 0)
    check(len(seen) >= 3, f"only {len(seen)} signals arrived")
    check(0.6 <= dt < 5, f"timed out after {dt:.3f} s: deadline not kept")

    def boom(*_):
        raise KeyboardInterrupt
    signal.signal(signal.SIGALRM, boom)
    signal.setitimer(signal.ITIMER_REAL, 0.2)
    raises(KeyboardInterrupt, None, sem.acquire, 1)
    check(sem.stat().waiters == 0, "an interrupted waiter stayed queued")


@test("with sem.hold(w): held inside, released after, also on an exception")
def t_hold():
    sem = wsem.Semaphore(f"{P}h", create=3)
    with sem.hold(2) as h:
        check(h.held and sem.stat().held == 2, "not held inside")
        raises(RuntimeError, None, h.acquire)
    check(not h.held and sem.stat().held == 0, "held after the block")
    try:
        with sem.hold(3):
            raise KeyError("x")
    except KeyError:
        pass
    check(sem.stat().used == 0, "an exception kept the weight")
    raises(RuntimeError, None, h.release)
    other = sem.reopen()
    other.acquire(3)
    try:
        with sem.hold(1, timeout=0.1):
            raise AssertionError("entered without the weight")
    except TimeoutError:
        pass


@test("a blocked acquire leaves other threads running (GIL released)")
def t_threads():
    sem = wsem.Semaphore(f"{P}g", create=1)
    sem.acquire(1)
    grants = Grants()
    ts = []
    for i in range(3):
        ts.append(thread_waiter(sem, 1, f"t{i}", grants))
        eventually(waiters_are(sem, i + 1), f"thread {i} to queue")
    n = 0
    end = time.monotonic() + 0.3
    while time.monotonic() < end:
        n += 1                     # the main thread runs meanwhile
    check(n > 1000, f"the main thread ran {n} rounds only")
    sem.release(1)
    for t in ts:
        t.join(20)
    check(grants.order() == ["t0", "t1", "t2"], f"order {grants.order()}")


@test("close() and garbage collection give the weight back")
def t_close():
    sem = wsem.Semaphore(f"{P}c", create=3)
    r = sem.reopen()
    r.acquire(3)
    r.close()
    r.close()
    check(sem.stat().used == 0, "close kept the weight")
    r = sem.reopen()
    r.acquire(2)
    del r
    check(sem.stat().used == 0, "garbage collection kept the weight")


@test("holders(): who holds, then who waits, with pid and command")
def t_holders():
    sem = wsem.Semaphore(f"{P}w", create=4)
    sem.acquire(2)
    grants = Grants()
    t = thread_waiter(sem, 3, "big", grants)
    eventually(waiters_are(sem, 1), "the waiter to queue")
    hs = sem.holders()
    check(len(hs) == 2, f"holders {hs}")
    check((hs[0].weight, hs[0].waiting, hs[0].pid) ==
          (2, False, os.getpid()), f"holder {hs[0]}")
    check((hs[1].weight, hs[1].waiting, hs[1].pid) ==
          (3, True, os.getpid()), f"waiter {hs[1]}")
    check(hs[0].comm != "" and hs[1].age_ns > 0, f"entries {hs}")
    sem.release(2)
    t.join(20)


@test("set_capacity: a waiter larger than the new capacity fails EINVAL")
def t_shrink():
    sem = wsem.Semaphore(f"{P}s", create=4)
    sem.acquire(4)
    res = []

    def run():
        h = sem.reopen()
        try:
            h.acquire(3)
        except OSError as e:
            res.append(e.errno)
    t = threading.Thread(target=run, daemon=True)
    t.start()
    eventually(waiters_are(sem, 1), "the waiter to queue")
    sem.set_capacity(2)
    t.join(20)
    check(res == [errno.EINVAL], f"waiter ended with {res}")
    check(sem.stat().capacity == 2, "capacity not changed")


@test("lend: a loan adds to the capacity; close withdraws it, held kept")
def t_lend():
    sem = wsem.Semaphore(f"{P}l", create=2)
    lender = sem.reopen()
    lender.lend(3)
    st = lender.stat()
    check((st.capacity, st.lent, st.lent_here, st.ceiling) == (5, 3, 3, 0),
          f"capacity, lent, lent_here, ceiling: {st}")
    st = sem.stat()
    check((st.lent, st.lent_here) == (3, 0), f"another handle: {st}")
    lender.lend(1)
    check(sem.stat().capacity == 3, "a loan is set, not added")
    sem.acquire(3)
    lender.close()
    st = sem.stat()
    check((st.capacity, st.lent, st.held, st.used) == (2, 0, 3, 3),
          f"after close: {st}")
    sem.release(3)
    raises(OSError, errno.EINVAL, sem.lend, 1 << 62)
    try:
        sem.lend(-1)
    except ValueError:
        pass
    else:
        raise AssertionError("lend(-1) accepted")
    check(sem.stat().capacity == 2, "a refused loan changed the capacity")
    listed = [s for s in wsem.list_semaphores() if s.name == f"{P}l"]
    check(len(listed) == 1 and listed[0].lent == 0, f"listed: {listed}")


@test("lend: another user may lower, not raise; SIGKILL withdraws")
def t_lend_other_user_kill():
    sem = wsem.Semaphore(f"{P}m", create=2, mode=0o666)
    lender = sem.reopen()
    lender.lend(3)
    pid = os.fork()
    if pid == 0:
        st = 1
        try:
            os.setgid(65534)
            os.setuid(65534)
            try:
                lender.lend(4)
            except PermissionError as e:
                if e.errno == errno.EPERM:
                    lender.lend(1)
                    st = 0
        finally:
            os._exit(st)  # pylint: disable=protected-access
    _, status = os.waitpid(pid, 0)
    check(status == 0, f"the other user's child: status {status:#x}")
    check(sem.stat().lent == 1, "the other user lowered nothing")
    lender.close()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        h = sem.reopen()
        h.lend(3)
        os.write(w, b"x")
        time.sleep(600)
        os._exit(0)  # pylint: disable=protected-access
    os.close(w)
    check(os.read(r, 1) == b"x", "the lender did not lend")
    check(sem.stat().capacity == 5, "capacity with a loan of 3")
    sem.acquire(4)
    res = []

    def run():
        h = sem.reopen()
        try:
            h.acquire(5)
        except OSError as e:
            res.append(e.errno)
    t = threading.Thread(target=run, daemon=True)
    t.start()
    eventually(waiters_are(sem, 1), "the waiter to queue")
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    t.join(20)
    check(res == [errno.EINVAL], f"waiter ended with {res}")
    st = sem.stat()
    check((st.capacity, st.held) == (2, 4), f"after the SIGKILL: {st}")


@test("loans=True: capacity 0 and a ceiling; a waiter outlives a withdrawal")
def t_loans_semaphore():
    sem = wsem.Semaphore.anonymous(8, loans=True)
    st = sem.stat()
    check((st.capacity, st.ceiling) == (0, 8), f"a loans semaphore: {st}")
    raises(OSError, errno.EINVAL, sem.acquire, 9)
    res = []

    def run():
        h = sem.reopen()
        h.acquire(5)
        res.append(h.stat().held)
    t = threading.Thread(target=run, daemon=True)
    t.start()
    eventually(waiters_are(sem, 1), "the waiter to queue")
    lender = sem.reopen()
    lender.lend(3)
    lender.close()
    sem.set_capacity(0)
    time.sleep(0.2)
    check(res == [] and sem.stat().waiters == 1, "the waiter ended")
    lender = sem.reopen()
    lender.lend(5)
    t.join(20)
    check(res == [5], f"the waiter: {res}")
    named = wsem.Semaphore(f"{P}n", create=6, loans=True)
    check(named.stat().ceiling == 6, "a named loans semaphore")
    try:
        wsem.Semaphore(f"{P}n", loans=True)
    except ValueError:
        pass
    else:
        raise AssertionError("loans without create accepted")


@test("acquire_until: a deadline on CLOCK_REALTIME and CLOCK_BOOTTIME")
def t_clock():
    sem = wsem.Semaphore(f"{P}k", create=1)
    holder = sem.reopen()
    holder.acquire(1)
    for clock in (time.CLOCK_REALTIME, time.CLOCK_BOOTTIME,
                  time.CLOCK_MONOTONIC):
        t0 = time.monotonic()
        deadline = time.clock_gettime_ns(clock) + 300_000_000
        check(sem.acquire_until(1, deadline, clock) is False,
              f"clock {clock}: the deadline was not False")
        dt = time.monotonic() - t0
        check(0.3 <= dt < 5, f"clock {clock}: timed out after {dt:.3f} s")
    raises(OSError, errno.EINVAL, sem.acquire_until, 1, 0,
           time.CLOCK_PROCESS_CPUTIME_ID)


@test("wait_idle: until nothing is held or queued; EDEADLK when holding")
def t_wait_idle():
    sem = wsem.Semaphore(f"{P}d", create=2)
    sem.wait_idle(timeout=0)          # idle: at once
    other = sem.reopen()
    other.acquire(1)
    raises(TimeoutError, errno.ETIMEDOUT, sem.wait_idle, timeout=0.2)
    threading.Timer(0.3, other.release, (1,)).start()
    t0 = time.monotonic()
    sem.wait_idle(timeout=20)
    check(time.monotonic() - t0 >= 0.25, "wait_idle returned early")
    sem.acquire(1)
    raises(OSError, errno.EDEADLK, sem.wait_idle)
    sem.release(1)
    ro = wsem.Semaphore(f"{P}d", readonly=True)
    ro.wait_idle()


# ---- children and gangs ----------------------------------------------------

@test("create_child: a child's weight is its parent's too; stat, holders")
def t_child():
    root = wsem.Semaphore(f"{P}root", create=4)
    kid = root.create_child(f"{P}kid", 3, mode=0o640)
    st = kid.stat()
    check((st.capacity, st.depth, st.name) == (3, 1, f"{P}kid"),
          f"child stat {st}")
    check(st.parent_id > 0 and root.stat().depth == 0 and
          root.stat().parent_id == 0, f"tree fields {st} {root.stat()}")
    again = root.create_child(f"{P}kid", 9)         # there: opened
    check(again.stat().capacity == 3, "create_child of an existing resized")
    raises(FileExistsError, errno.EEXIST, root.create_child, f"{P}kid", 3,
           exclusive=True)
    other = wsem.Semaphore(f"{P}other", create=2)
    raises(FileExistsError, errno.EEXIST, other.create_child, f"{P}kid", 3)
    kid.acquire(3)
    check(root.stat().used == 3 and kid.stat().held == 3, "not held above")
    check(not kid.acquire(1, timeout=0), "the child's capacity was passed")
    hs = root.holders()
    check([(h.weight, h.child, h.label) for h in hs] == [(3, True, f"{P}kid")],
          f"root holders {hs}")
    anon = root.create_child(None, 2)
    check(anon.name == "" and anon.stat().depth == 1, "anonymous child")
    check(not anon.acquire(2, timeout=0.05), "the root's capacity passed")
    kid.release(3)
    check(anon.acquire(2, timeout=5) and root.stat().used == 2,
          "the anonymous child's acquire")
    deep = root
    for i in range(wsem._abi.DEPTH_MAX):
        deep = deep.create_child(f"{P}d{i}", 1)
    check(deep.stat().depth == wsem._abi.DEPTH_MAX, "depth")
    raises(OSError, errno.ELOOP, deep.create_child, f"{P}d9", 1)
    ro = wsem.Semaphore(f"{P}root", readonly=True)
    raises(OSError, errno.EBADF, ro.create_child, f"{P}ro", 1)


@test("acquire_many: all or nothing, timeouts, FIFO on each semaphore")
def t_acquire_many():
    a = wsem.Semaphore(f"{P}a", create=2)
    b = wsem.Semaphore(f"{P}b", create=1)
    check(wsem.acquire_many([(a, 2), (b, 1)]), "a free gang")
    check((a.stat().held, b.stat().held) == (2, 1), "the gang's holds")
    a.release(2)
    b.release(1)
    other = wsem.Semaphore(f"{P}b")
    other.acquire(1)
    a2 = a.reopen()
    check(not wsem.acquire_many([(a2, 1), (b, 1)], timeout=0),
          "timeout=0 with one busy")
    check(not wsem.acquire_many([(a2, 1), (b, 1)], timeout=0.1),
          "a timeout with one busy")
    check(a.stat().used == 0, "part of a gang is held")
    grants = Grants()

    def gang():
        wsem.acquire_many([(a2, 1), (b, 1)])
        grants.add("gang")
    t = threading.Thread(target=gang)
    t.start()
    eventually(waiters_are(b, 1), "the gang to queue")
    check(a.stat().used == 0 and a.stat().waiters == 1,
          "a waiting gang holds part, or is not queued on each")
    # FIFO on every semaphore of the gang: a is free, yet a later request
    # on a does not pass the gang queued there
    raises(BlockingIOError, errno.EAGAIN, a.try_acquire, 1)
    other.release(1)
    t.join(20)
    check(grants.order() == ["gang"], f"grants {grants.order()}")
    check((a2.stat().held, b.stat().held) == (1, 1), "after the wait")
    raises(ValueError, None, wsem.acquire_many, [])
    raises(ValueError, None, wsem.acquire_many, [(a, 1)] * 9)
    raises(OSError, errno.EINVAL, wsem.acquire_many, [(a, 3)], 0)


# ---- asyncio ---------------------------------------------------------------

@test("async with sem.hold(w): on a handle of its own, closed after")
def t_async_hold():
    sem = wsem.Semaphore(f"{P}x", create=3)

    async def main():
        nfd = len(os.listdir("/proc/self/fd"))
        async with sem.hold(2) as h:
            st = sem.stat()
            check(st.used == 2 and st.held == 0 and h.held, f"inside {st}")
            check(len(os.listdir("/proc/self/fd")) == nfd + 1, "no handle")
        check(sem.stat().used == 0 and not h.held, "held after the block")
        check(len(os.listdir("/proc/self/fd")) == nfd, "handle left open")
        lease = await sem.acquire_async(3)
        check(sem.stat().used == 3, "acquire_async did not hold")
        lease.release()
        check(sem.stat().used == 0, "Hold.release kept the weight")
        try:
            async with sem.hold(4):
                pass
        except OSError as e:
            check(e.errno == errno.EINVAL, f"weight > capacity: {e}")
        else:
            raise AssertionError("weight > capacity was granted")
    asyncio.run(main())


@test("AsyncSemaphore: await acquire() waits on the loop beside the task "
      "that holds, timeouts are False, release gives back the latest first")
def t_async_semaphore():
    asem = wsem.AsyncSemaphore(f"{P}a", create=2)
    sem = asem.semaphore

    async def holder(go):
        check(await asem.acquire(2), "the holder's acquire")
        await go.wait()
        asem.release(2)

    async def main():
        go = asyncio.Event()
        t1 = asyncio.create_task(holder(go))
        await aeventually(lambda: sem.stat().used == 2, "the holder to hold")
        t2 = asyncio.create_task(asem.acquire(1))
        await aeventually(waiters_are(sem, 1), "the waiter to queue")
        check(not t2.done() and asem.locked(), "granted over the capacity")
        # the holder is a task of this loop: it runs while the other waits
        go.set()
        check(await asyncio.wait_for(t2, 10), "the waiter's acquire")
        await t1
        check(sem.stat().used == 1, f"after the hand-over: {sem.stat()}")
        check(await asem.acquire(2, timeout=0.2) is False, "a timeout")
        check(sem.stat().waiters == 0, "the timed-out request queued on")
        await asem.acquire(1)
        asem.release(1)
        check(sem.stat().used == 1, "release(1) of two holds of 1")
        asem.release(1)
        async with asem:
            check(sem.stat().used == 1, "async with holds one unit")
        check(sem.stat().used == 0, "async with gave it back")
        await asem.acquire(2)
        asem.release(1)
        check(sem.stat().used == 1, "a partial release")
        raises(RuntimeError, None, asem.release, 2)
        asem.release(1)
        check(sem.stat().used == 0, "all given back")
    asyncio.run(main())
    asem.close()


@test("async waits do not block the loop; one task per handle, FIFO")
def t_async_fifo():
    sem = wsem.Semaphore(f"{P}y", create=1)
    sem.acquire(1)
    grants = Grants()

    async def main():
        tasks = []
        for i in range(4):
            tasks.append(asyncio.create_task(
                task_waiter(sem, 1, f"a{i}", grants)))
            await aeventually(waiters_are(sem, i + 1), f"task {i} to queue")
        ticks = 0
        end = time.monotonic() + 0.3
        while time.monotonic() < end:
            await asyncio.sleep(0.01)
            ticks += 1
        check(ticks >= 10, f"the loop ran {ticks} times only")
        sem.release(1)
        await asyncio.wait_for(asyncio.gather(*tasks), 30)
    asyncio.run(main())
    check(grants.order() == ["a0", "a1", "a2", "a3"],
          f"order {grants.order()}")


@test("FIFO across threads, tasks, Python processes and the C CLI")
def t_fifo_mixed():
    name = f"{P}m"
    sem = wsem.Semaphore(name, create=1)
    sem.acquire(1)
    grants = Grants()
    procs, threads = [], []

    async def main():
        tasks = []
        kinds = ["task", "thread", "proc-block", "cli", "task",
                 "proc-async", "thread", "task"]
        for i, kind in enumerate(kinds):
            tag = f"{i}-{kind}"
            if kind == "task":
                tasks.append(asyncio.create_task(
                    task_waiter(sem, 1, tag, grants)))
            elif kind == "thread":
                threads.append(thread_waiter(sem, 1, tag, grants))
            elif kind == "cli":
                procs.append(cli_waiter(name, 1, tag, grants))
            else:
                procs.append(child(name, kind[5:], 1, tag, grants))
            await aeventually(waiters_are(sem, i + 1), f"{tag} to queue",
                              timeout=60)
        sem.release(1)
        await asyncio.wait_for(asyncio.gather(*tasks), 60)
        return [f"{i}-{k}" for i, k in enumerate(kinds)]
    want = asyncio.run(main())
    for t in threads:
        t.join(30)
    for p in procs:
        check(p.wait(30) == 0, f"waiter process exited {p.returncode}")
    check(grants.order() == want, f"order {grants.order()}, want {want}")


@test("no barging: a task waits behind a larger blocking waiter")
def t_async_no_barging():
    sem = wsem.Semaphore(f"{P}b", create=3)
    sem.acquire(1)
    grants = Grants()

    async def main():
        big = thread_waiter(sem, 3, "big", grants)
        await aeventually(waiters_are(sem, 1), "the big waiter to queue")
        small = asyncio.create_task(task_waiter(sem, 1, "small", grants))
        await aeventually(waiters_are(sem, 2), "the task to queue")
        await asyncio.sleep(0.3)
        check(not small.done() and grants.order() == [],
              f"granted past the queue: {grants.order()}")
        sem.release(1)
        await asyncio.wait_for(small, 30)
        big.join(30)
    asyncio.run(main())
    check(grants.order() == ["big", "small"], f"order {grants.order()}")


@test("cancelling a waiting task leaves the queue and grants followers")
def t_async_cancel():
    name = f"{P}q"
    sem = wsem.Semaphore(name, create=2)
    sem.acquire(1)
    grants = Grants()

    async def main():
        head = asyncio.create_task(task_waiter(sem, 2, "head", grants))
        await aeventually(waiters_are(sem, 1), "the task to queue")
        follower = child(name, "block", 1, "follower", grants)
        await aeventually(waiters_are(sem, 2), "the follower to queue",
                          timeout=60)
        await asyncio.sleep(0.2)
        check(grants.order() == [], "the follower barged")
        head.cancel()
        try:
            await head
        except asyncio.CancelledError:
            pass
        else:
            raise AssertionError("the cancelled task finished")
        # Only the cancellation can grant it: the weight 1 stays held.
        await aeventually(lambda: follower.poll() is not None,
                          "the follower to be granted")
        check(follower.returncode == 0, "the follower failed")
        st = sem.stat()
        check(st.waiters == 0 and st.used == 1, f"after the cancel: {st}")
    asyncio.run(main())
    check(grants.order() == ["follower"], f"order {grants.order()}")


@test("a task cancelled after its grant gives the weight back")
def t_async_cancel_granted():
    sem = wsem.Semaphore(f"{P}r", create=1)
    sem.acquire(1)

    async def main():
        task = asyncio.create_task(task_waiter(sem, 1, "x", Grants()))
        await aeventually(waiters_are(sem, 1), "the task to queue")
        sem.release(1)             # granted now, in the kernel ...
        check(sem.stat().used == 1, "the release granted nobody")
        task.cancel()              # ... before the loop has seen it
        try:
            await task
        except asyncio.CancelledError:
            pass
        st = sem.stat()
        check(st.used == 0 and st.waiters == 0, f"after the cancel: {st}")
    asyncio.run(main())


@test("the cancel and the timeout themselves (not the close) leave the queue")
def t_async_cancel_fd():
    sem = wsem.Semaphore(f"{P}f", create=2)
    sem.acquire(1)

    async def main():
        for release_first in (False, True):
            h = sem.reopen()       # stays open: only the cancel may act
            task = asyncio.create_task(_aio.acquire(h.fileno(), 2, None,
                                                    None))
            await aeventually(waiters_are(sem, 1), "the request to queue")
            if release_first:
                sem.release(1)     # granted before the loop sees it
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
            st = h.stat()
            check(st.waiters == 0 and st.held == 0,
                  f"release_first={release_first}: {st}")
            h.close()
        sem.acquire(1)
        h = sem.reopen()
        try:
            await _aio.acquire(h.fileno(), 2, 0.3, None)
        except TimeoutError:
            pass
        else:
            raise AssertionError("granted despite the timeout")
        st = h.stat()
        check(st.waiters == 0 and st.held == 0, f"after the timeout: {st}")
    asyncio.run(main())


@test("an async timeout leaves the queue with TimeoutError, followers go")
def t_async_timeout():
    sem = wsem.Semaphore(f"{P}o", create=2)
    sem.acquire(1)
    grants = Grants()

    async def main():
        t0 = time.monotonic()
        late = asyncio.create_task(sem.acquire_async(2, timeout=0.5))
        await aeventually(waiters_are(sem, 1), "the request to queue")
        follower = asyncio.create_task(task_waiter(sem, 1, "f", grants))
        await aeventually(waiters_are(sem, 2), "the follower to queue")
        try:
            await late
        except TimeoutError as e:
            check(e.errno == errno.ETIMEDOUT, f"errno {e.errno}")
        else:
            raise AssertionError("granted despite the timeout")
        dt = time.monotonic() - t0
        check(0.5 <= dt < 10, f"timed out after {dt:.3f} s")
        await asyncio.wait_for(follower, 10)
        check(sem.stat().used == 1, "something is still held")
        async with sem.hold(1, timeout=5):
            pass
    asyncio.run(main())
    check(grants.order() == ["f"], f"order {grants.order()}")


@test("a shrink below a queued task's weight ends it with EINVAL")
def t_async_shrink():
    sem = wsem.Semaphore(f"{P}k", create=4)
    sem.acquire(4)

    async def main():
        task = asyncio.create_task(sem.acquire_async(3))
        await aeventually(waiters_are(sem, 1), "the request to queue")
        sem.set_capacity(2)
        try:
            await asyncio.wait_for(task, 10)
        except OSError as e:
            check(e.errno == errno.EINVAL, f"errno {e.errno}")
        else:
            raise AssertionError("granted beyond the capacity")
    asyncio.run(main())


@test("await wait_idle_async(): when the last holder and waiter are gone")
def t_async_idle():
    name = f"{P}e"
    sem = wsem.Semaphore(name, create=2)
    holder = sem.reopen()
    watch = wsem.Semaphore(name, readonly=True)

    async def main():
        await asyncio.wait_for(watch.wait_idle_async(), 5)
        holder.acquire(2)
        try:
            await watch.wait_idle_async(timeout=0.2)
        except TimeoutError:
            pass
        else:
            raise AssertionError("idle while held")
        waiter = asyncio.create_task(sem.acquire_async(1))
        await aeventually(waiters_are(sem, 1), "the waiter to queue")
        idle = asyncio.create_task(watch.wait_idle_async(timeout=30))
        await asyncio.sleep(0.2)
        holder.release(2)
        lease = await waiter
        await asyncio.sleep(0.2)
        check(not idle.done(), "idle while a task holds")
        lease.release()
        await asyncio.wait_for(idle, 10)
        sem.acquire(1)
        try:
            await sem.wait_idle_async()
        except OSError as e:
            check(e.errno == errno.EDEADLK, f"errno {e.errno}")
        else:
            raise AssertionError("idle while this handle holds")
    asyncio.run(main())


# ---- the pool (pool=N) -----------------------------------------------------

def grants_of(sem):
    st = sem.stat()
    return st.grants_at_once + st.grants_waited


@test("pool: acquires and releases from spare weight make no kernel grant")
def t_pool_fast_path():
    sem = wsem.Semaphore(f"{P}p", create=4, pool=4)
    sem.acquire(1)
    st = sem.stat()
    check((st.used, st.held, st.spare) == (4, 1, 3),
          f"the first acquire takes 1 and a batch of 3: {st}")
    g = grants_of(sem)
    for _ in range(100):
        check(sem.acquire(2), "acquire(2) from spare")
        sem.try_acquire(1)
        raises(BlockingIOError, errno.EAGAIN, sem.try_acquire, 1)
        sem.release(3)
    check(grants_of(sem) == g, f"{grants_of(sem) - g} kernel grants")
    sem.release(1)
    st = sem.stat()
    check((st.used, st.held, st.spare) == (4, 0, 4), f"all released: {st}")
    sem.close()
    asem = wsem.AsyncSemaphore(f"{P}p", pool=4)

    async def main():
        check(await asem.acquire(1), "AsyncSemaphore.acquire")
        g = grants_of(asem.semaphore)
        for _ in range(20):
            check(await asem.acquire(2), "AsyncSemaphore.acquire(2)")
            async with asem:
                pass
            asem.release(2)
        return grants_of(asem.semaphore) - g
    check(asyncio.run(main()) == 0, "the async fast path made kernel grants")
    st = asem.semaphore.stat()
    check((st.used, st.held, st.spare) == (4, 1, 3), f"async: {st}")
    asem.close()
    check(wsem.Semaphore(f"{P}p").stat().used == 0, "held after close")


@test("pool: max_spare bounds what is kept; 0 keeps nothing")
def t_pool_max_spare():
    sem = wsem.Semaphore.anonymous(10, pool=2)
    sem.acquire(5)
    st = sem.stat()
    check((st.used, st.spare) == (7, 2), f"acquire(5), a batch of 2: {st}")
    sem.release(5)
    st = sem.stat()
    check((st.used, st.spare) == (2, 2), f"release(5): {st}")
    none = wsem.Semaphore.anonymous(10, pool=0)
    g = grants_of(none)
    for _ in range(3):
        none.acquire(3)
        none.release(3)
    st = none.stat()
    check((st.used, st.spare, grants_of(none) - g) == (0, 0, 3),
          f"pool=0: {st}")


@test("pool: a waiter of another process gets the whole capacity from an "
      "idle pool (its thread) and from a busy one at its release")
def t_pool_gives_way():
    name = f"{P}g"
    sem = wsem.Semaphore(name, create=4, pool=4)
    sem.acquire(1)
    sem.release(1)
    st = sem.stat()
    check((st.used, st.spare) == (4, 4), f"the idle pool: {st}")
    grants = Grants()
    other = child(name, "block", 4, "other", grants)
    check(other.wait(20) == 0, "the other process's acquire(4)")
    check(grants.order() == ["other"], f"order {grants.order()}")
    sem.acquire(1)
    other = child(name, "block", 4, "busy", grants)
    eventually(waiters_are(sem, 1), "the other to queue")
    eventually(lambda: sem.stat().spare == 0, "the spare to go back")
    time.sleep(0.3)
    check(other.poll() is None, "granted 4 while the pool's caller holds 1")
    sem.release(1)
    check(other.wait(20) == 0, "the other process after the release")
    check(grants.order() == ["other", "busy"], f"order {grants.order()}")


@test("pool: a child of fork gets EBADF from the parent's pool, and its "
      "close leaves the parent's pool working")
def t_pool_fork():
    name = f"{P}f"
    sem = wsem.Semaphore(name, create=4, pool=4)
    sem.acquire(1)
    sem.release(1)
    pid = os.fork()
    if pid == 0:
        st = 1
        try:
            raises(OSError, errno.EBADF, sem.acquire, 1)
            raises(OSError, errno.EBADF, sem.release, 1)
            sem.close()
            st = 0
        finally:
            os._exit(st)  # pylint: disable=protected-access
    check(os.waitpid(pid, 0)[1] == 0, "the child of fork")
    st = sem.stat()
    check((st.used, st.spare) == (4, 4), f"the parent's pool: {st}")
    grants = Grants()
    other = child(name, "block", 4, "other", grants)
    check(other.wait(20) == 0, "the parent's watcher gave way")
    sem.acquire(1)
    sem.release(1)


@test("pool: a child of fork closes its copy of the pool even when the "
      "pool's lock was held at the fork (by the parent's watcher, or here "
      "by the thread that forks)")
def t_pool_fork_lock():
    sem = wsem.Semaphore.anonymous(4, pool=4)
    sem.acquire(1)
    sem.release(1)
    lock = sem._pool._lock  # pylint: disable=protected-access
    with lock:
        pid = os.fork()
        if pid == 0:
            signal.alarm(10)
            st = 1
            try:
                sem.close()
                st = 0
            finally:
                os._exit(st)  # pylint: disable=protected-access
    status = os.waitpid(pid, 0)[1]
    check(status == 0, f"the child's close: status {status:#x} "
          f"(killed by SIGALRM, 14: it waited for the lock)")
    check(sem.stat().spare == 4, f"the parent's pool: {sem.stat()}")
    sem.acquire(1)
    sem.release(1)
    sem.close()


# A pooled process: three threads acquiring and releasing 1 for ever, and
# a command beside it (close_fds=False) that must not keep its handle;
# prints "child PID", then "running".
POOLED = r"""
import subprocess, sys, threading
import wsem
sem = wsem.Semaphore(sys.argv[1], pool=4)
sleeper = subprocess.Popen(["sleep", "30"], close_fds=False)
print("child", sleeper.pid, flush=True)
def loop():
    while True:
        sem.acquire(1)
        sem.release(1)
for _ in range(3):
    threading.Thread(target=loop, daemon=True).start()
print("running", flush=True)
threading.Event().wait()
"""


@test("pool: a busy pooled process does not starve another's waiter for "
      "the whole capacity")
def t_pool_busy_gives_way():
    name = f"{P}b"
    sem = wsem.Semaphore(name, create=4)
    env = dict(os.environ, PYTHONPATH=SRC)
    p = subprocess.Popen([PY, "-c", POOLED, name], env=env,
                         stdout=subprocess.PIPE, text=True)
    sleeper = int(p.stdout.readline().split()[1])
    try:
        check(p.stdout.readline().strip() == "running",
              "the pooled process did not start")
        for _ in range(3):
            check(sem.acquire(4, timeout=20),
                  f"acquire(4) beside a busy pool: {sem.stat()}")
            st = sem.stat()
            check((st.used, st.held) == (4, 4), f"{st}")
            sem.release(4)
    finally:
        p.kill()
        p.wait()
        p.stdout.close()
        with contextlib.suppress(OSError):
            os.kill(sleeper, signal.SIGKILL)


@test("pool: pooled processes SIGKILLed at random moments hold nothing")
def t_pool_killed():
    import random  # pylint: disable=import-outside-toplevel
    name = f"{P}k"
    sem = wsem.Semaphore(name, create=4)
    env = dict(os.environ, PYTHONPATH=SRC)
    saw_held = False
    sleepers = []
    try:
        for _ in range(6):
            procs = [subprocess.Popen([PY, "-c", POOLED, name], env=env,
                                      stdout=subprocess.PIPE, text=True)
                     for _ in range(2)]
            for p in procs:
                sleepers.append(int(p.stdout.readline().split()[1]))
                check(p.stdout.readline().strip() == "running",
                      "a pooled process did not start")
            time.sleep(random.uniform(0, 0.05))
            saw_held = saw_held or sem.stat().used > 0
            for p in procs:
                p.kill()
                p.wait()
                p.stdout.close()
            eventually(lambda: (sem.stat().used, sem.stat().waiters) ==
                       (0, 0), "nothing held after the kills")
    finally:
        for pid in sleepers:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    check(saw_held, "the pooled processes never held anything")


# A worker of pool_replay (selftests/pool_replay.c, which sets WSEM_REPLAY
# "NAME LOGFD GEN THREADS MAXSPARE SEED" and documents the log): THREADS
# threads acquire and release 1 or 2 through a pool of MAXSPARE, holding
# it up to 200 us (asleep or busy) and asleep up to 200 us after the
# release, until the process is killed, each step one write(2) of an
# entry (pool_replay.h's struct entry: kind, who, weight) to the
# descriptor LOGFD.  A failed call ends the process with status 3.
REPLAYED = r"""
import os, random, struct, threading, time
import wsem
name, log, gen, threads, max_spare, seed = os.environ["WSEM_REPLAY"].split()
log, gen = int(log), int(gen)
sem = wsem.Semaphore(name, pool=int(max_spare))
START, DONE, REL = 1, 2, 5
def note(kind, who, weight):
    if os.write(log, struct.pack("=IIQ", kind, who, weight)) != 16:
        os._exit(6)
def busy(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass
def loop(who, r):
    try:
        while True:
            w = 1 + r.randrange(2)
            note(START, who, w)
            sem.acquire(w)
            note(DONE, who, w)
            (time.sleep if r.randrange(2) else busy)(r.randrange(200) / 1e6)
            note(REL, who, w)
            sem.release(w)
            time.sleep(r.randrange(200) / 1e6)
    except BaseException as e:
        print("worker:", repr(e), flush=True)
        os._exit(3)
seeds = random.Random(int(seed))
for i in range(int(threads)):
    threading.Thread(target=loop, daemon=True,
                     args=(gen << 8 | i, random.Random(seeds.random()))).start()
threading.Event().wait()
"""


@test("pool: pooled processes of two threads SIGKILLed and started again "
      "beside plain waiters of the whole capacity, every step logged and "
      "replayed (pool_replay): never over the capacity, no acquire that "
      "began after a full request queued granted before it, nothing held "
      "at the end", seconds=90)
def t_pool_replayed():
    driver = shutil.which("pool_replay")
    check(driver, "no pool_replay (selftests/pool_replay.c) on PATH")
    env = dict(os.environ, PYTHONPATH=SRC)
    p = subprocess.run([driver, PY, "-c", REPLAYED], env=env, check=False,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    for line in p.stdout.splitlines():
        note(line)
    check(p.returncode == 0, f"pool_replay exited {p.returncode}")


@test("pool: bad pool= values are clear errors; a child's pool serves from "
      "spare and gives way to a sibling's request that the parent holds up")
def t_pool_errors_child():
    for bad, exc in ((-1, ValueError), ((1 << 62) + 1, ValueError),
                     ("4", TypeError), (True, TypeError), (1.5, TypeError)):
        try:
            wsem.Semaphore.anonymous(4, pool=bad)
        except exc as e:
            check("pool" in str(e), f"pool={bad!r}: {e}")
        else:
            raise AssertionError(f"pool={bad!r} was taken")
    parent = wsem.Semaphore(f"{P}parent", create=4)
    parent.create_child(f"{P}child", 4).close()
    parent.create_child(f"{P}sib", 4).close()
    sem = wsem.Semaphore(f"{P}child", pool=4)
    sem.acquire(1)
    sem.release(1)
    g = grants_of(sem)
    for _ in range(5):
        sem.acquire(1)
        sem.release(1)
    st = sem.stat()
    check((st.used, st.spare, grants_of(sem) - g) == (4, 4, 0),
          f"a child's pool: {st}, {grants_of(sem) - g} kernel grants")
    grants = Grants()
    other = child(f"{P}sib", "block", 4, "sib", grants)
    check(other.wait(20) == 0, "the sibling's acquire(4) of the parent's 4")
    check(sem.stat().spare == 0, f"the idle pool kept {sem.stat()}")
    raises(OSError, errno.EINVAL, sem.release, 1)
    sem.close()
    check(parent.stat().used == 0, "held after close")


# asyncio.Semaphore's situations (as CPython's test_asyncio/test_locks.py
# tests them), written anew for an AsyncSemaphore, with and without a pool.
def asyncio_scenarios(pool):
    n = [0]

    def new(cap):
        n[0] += 1
        return wsem.AsyncSemaphore(f"{P}s{n[0]}", create=cap, pool=pool)

    def idle(asem):
        st = asem.semaphore.stat()
        check(st.used == st.spare and st.waiters == 0 and st.held == 0,
              f"not idle: {st}")

    async def counting():
        asem = new(3)
        check(not asem.locked(), "locked() at first")
        for _ in range(3):
            check(await asem.acquire(), "acquire within the capacity")
        check(asem.locked(), "not locked() with all taken")
        asem.release()
        check(not asem.locked(), "locked() after a release")
        asem.release(2)
        idle(asem)

    async def fifo():
        asem = new(1)
        await asem.acquire()
        order = []

        async def waiter(i):
            await asem.acquire()
            order.append(i)
            await asyncio.sleep(0.01)
            asem.release()
        tasks = []
        for i in range(4):
            tasks.append(asyncio.create_task(waiter(i)))
            await aeventually(waiters_are(asem.semaphore, i + 1),
                              f"waiter {i} to queue")
        asem.release()
        await asyncio.wait_for(asyncio.gather(*tasks), 20)
        check(order == [0, 1, 2, 3], f"order {order}")
        idle(asem)

    async def cancel_waiter():
        asem = new(1)
        await asem.acquire()
        t1 = asyncio.create_task(asem.acquire())
        t2 = asyncio.create_task(asem.acquire())
        await aeventually(waiters_are(asem.semaphore, 2), "two to queue")
        t1.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await t1
        asem.release()
        check(await asyncio.wait_for(t2, 10), "the one behind")
        asem.release()
        idle(asem)

    async def cancel_before_resumed():
        asem = new(1)
        await asem.acquire()
        t = asyncio.create_task(asem.acquire())
        await aeventually(waiters_are(asem.semaphore, 1), "the waiter")
        asem.release()          # granted in the kernel, not resumed yet
        t.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await t
        check(await asyncio.wait_for(asem.acquire(), 10),
              "the unit came back")
        asem.release()
        idle(asem)

    async def no_hang():
        asem = new(2)

        async def job():
            async with asem:
                await asyncio.sleep(0.005)
        tasks = [asyncio.create_task(job()) for _ in range(20)]
        await asyncio.sleep(0)
        for t in tasks[::3]:
            t.cancel()
        await asyncio.wait_for(asyncio.gather(*tasks,
                                              return_exceptions=True), 20)
        idle(asem)

    async def over_release():
        asem = new(2)
        await asem.acquire()
        raises(RuntimeError, None, asem.release, 2)
        asem.release()
        raises(RuntimeError, None, asem.release)
        idle(asem)

    async def main():
        for fn in (counting, fifo, cancel_waiter, cancel_before_resumed,
                   no_hang, over_release):
            note(f"{fn.__name__} (pool={pool})")
            await fn()
    asyncio.run(main())


@test("asyncio.Semaphore's situations on AsyncSemaphore, no pool")
def t_asyncio_scenarios():
    asyncio_scenarios(None)


@test("asyncio.Semaphore's situations on AsyncSemaphore, pool=2")
def t_asyncio_scenarios_pool():
    asyncio_scenarios(2)


# ---- as a new user would ---------------------------------------------------

DEMO = """\
import asyncio, os, sys, time, wsem

sem = wsem.Semaphore(sys.argv[1], create=2)

async def job(i):
    async with sem.hold(1):
        print("start", time.monotonic(), os.getpid(), i, flush=True)
        await asyncio.sleep(0.3)
        print("end", time.monotonic(), os.getpid(), i, flush=True)

async def main():
    await asyncio.gather(*(job(i) for i in range(4)))

asyncio.run(main())
"""


@test("pip install into a venv; a ten-line asyncio script, two processes",
      seconds=280, group="pip")
def t_pip_demo():
    t0 = time.monotonic()
    src = os.path.join(T, "checkout")
    subprocess.run(["cp", "-R", SRC, src], check=True)
    venv = os.path.join(T, "venv")
    subprocess.run([PY, "-m", "venv", "--without-pip",
                    "--system-site-packages", venv], check=True)
    vpy = os.path.join(venv, "bin", "python")
    t1 = time.monotonic()
    subprocess.run([vpy, "-m", "pip", "install", "--quiet", "--no-index",
                    "--no-build-isolation", "--disable-pip-version-check",
                    src], check=True, cwd=T)
    note(f"venv {t1 - t0:.1f} s, pip install {time.monotonic() - t1:.1f} s")
    out = subprocess.run([vpy, "-c", "import wsem; print(wsem.__file__)"],
                         check=True, cwd="/", capture_output=True,
                         text=True).stdout
    check(out.startswith(venv + "/"), f"imported {out.strip()}")
    demo = os.path.join(T, "demo.py")
    with open(demo, "w", encoding="ascii") as f:
        f.write(DEMO)
    check(len([ln for ln in DEMO.splitlines() if ln]) == 10,
          "the demo is not ten lines")
    # Both processes queue all their jobs behind the test before any
    # runs: then eight jobs of two processes contend at once.
    gate = wsem.Semaphore(f"{P}demo", create=2)
    gate.acquire(2)
    ps = [subprocess.Popen([vpy, demo, f"{P}demo"], stdout=subprocess.PIPE,
                           text=True, cwd="/") for _ in range(2)]
    eventually(waiters_are(gate, 8), "both demos to queue their jobs",
               timeout=120)
    gate.release(2)
    events = []
    for p in ps:
        out, _ = p.communicate(timeout=90)
        check(p.returncode == 0, f"the demo exited {p.returncode}")
        for line in out.split("\n"):
            if line:
                kind, when, pid, i = line.split()
                events.append((float(when), kind == "start", pid, i))
    check(len(events) == 16, f"{len(events)} events, want 16")
    check(len({(e[2], e[3]) for e in events}) == 8, "not 8 jobs")
    check(len({e[2] for e in events}) == 2, "not two processes")
    running = peak = 0
    for _, start, _, _ in sorted(events):
        running += 1 if start else -1
        peak = max(peak, running)
    check(peak == 2, f"{peak} jobs ran at once at the most, want 2")


# ---- the runner ------------------------------------------------------------

def cleanup(prefix):
    for s in wsem.list_semaphores():
        if s.name.startswith(prefix):
            try:
                wsem.unlink(s.name)
            except OSError:
                pass


def run_one(n, fn):
    """@fn in a child process; its exit status (0: passed)."""
    global P, T  # pylint: disable=global-statement
    P = f"py{os.getpid()}-{n}-"
    T = tempfile.mkdtemp(prefix="wsem_py.")
    pid = os.fork()
    if pid == 0:
        st = 1
        try:
            os.setpgid(0, 0)
            fn()
            st = 0
        except BaseException:  # pylint: disable=broad-except
            for line in traceback.format_exc().splitlines():
                note(line)
        sys.stdout.flush()
        os._exit(st)  # pylint: disable=protected-access
    end = time.monotonic() + fn.seconds
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > end:
            note(f"still running after {fn.seconds} s: killed")
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            status = 1 << 8
            break
        time.sleep(0.05)
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    subprocess.run(["umount", "-l", os.path.join(T, "mnt")],
                   stderr=subprocess.DEVNULL, check=False)
    subprocess.run(["rm", "-rf", T], check=False)
    cleanup(P)
    if os.WIFSIGNALED(status):
        note(f"killed by signal {os.WTERMSIG(status)}")
        return 1
    return os.WEXITSTATUS(status)


def main():
    if not os.path.exists("/dev/wsem"):
        print("1..0 # SKIP no /dev/wsem: the wsem module is not loaded")
        return 4
    args = sys.argv[1:]
    group = "api"
    if args[:1] == ["--group"]:
        group, args = args[1], args[2:]
    tests = [(fn, d) for fn, d in TESTS
             if fn.__name__ in args or not args and fn.group == group]
    print("TAP version 13")
    print(f"1..{len(tests)}", flush=True)
    failed = 0
    for n, (fn, desc) in enumerate(tests, 1):
        t0 = time.monotonic()
        st = run_one(n, fn)
        dt = time.monotonic() - t0
        print(f"{'ok' if st == 0 else 'not ok'} {n} - {desc}", flush=True)
        note(f"{fn.__name__}: {dt:.1f} s")
        failed += st != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
