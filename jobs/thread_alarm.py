"""A per-thread alarm that interrupts a blocked system call (M55's last gap, issue 24).

A FIFO that libgit2 opens while pygit2 holds the GIL (a loose object, ``HEAD`` or
``config`` swapped for a FIFO after :mod:`tidings.jobs.memory.metadata`'s checks) blocks in
``open()`` with every thread of the process stopped behind it, so no Python watcher can
act. The kernel can: a POSIX timer created with ``SIGEV_THREAD_ID`` sends a signal to one
thread, and a signal that has a handler makes a blocked ``open()`` of a FIFO fail with
``EINTR`` (CPython installs its handlers without ``SA_RESTART``); libgit2 does not retry,
so the observation fails and answers ``unavailable``. Reads of regular files are not
interruptible, so an observation that is merely slow is not disturbed; a futex wait (the
GIL) is retried by the C library.

:func:`install` gives :data:`SIGNAL` a no-op handler (from the main thread only, and only
where the signal has no handler yet); :func:`armed` arms the calling thread's timer for
the length of a block. Where either is not possible (not Linux, no ``timer_create``, not
installed) :func:`armed` does nothing, and the in-process watchdog is all there is.
"""

from __future__ import annotations

import ctypes
import logging
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

logger = logging.getLogger("tidings")

#: The signal the alarm sends: ignored by default and used by nothing else here.
SIGNAL = signal.SIGURG
#: First alarm after this many seconds of the block, then one every :data:`EVERY_SECONDS`.
FIRST_SECONDS = 0.5
EVERY_SECONDS = 0.5
#: ``<signal.h>``'s ``SIGEV_THREAD_ID`` (Linux) and ``CLOCK_MONOTONIC``.
SIGEV_THREAD_ID = 4
CLOCK_MONOTONIC = 1


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", _Timespec), ("it_value", _Timespec)]


class _Sigevent(ctypes.Structure):
    """``struct sigevent`` as Linux lays it out (64 bytes; the thread id in the union)."""

    _fields_ = [
        ("sigev_value", ctypes.c_void_p),
        ("sigev_signo", ctypes.c_int),
        ("sigev_notify", ctypes.c_int),
        ("thread_id", ctypes.c_int),
        ("_pad", ctypes.c_int * 11),
    ]


class _Timers:
    """``timer_create``, ``timer_settime`` and ``timer_delete`` from the C library."""

    def __init__(self, library: ctypes.CDLL) -> None:
        self.create = library.timer_create
        self.create.argtypes = [
            ctypes.c_int,
            ctypes.POINTER(_Sigevent),
            ctypes.POINTER(ctypes.c_void_p),
        ]
        self.settime = library.timer_settime
        self.settime.argtypes = [
            ctypes.c_void_p,
            ctypes.c_int,
            ctypes.POINTER(_Itimerspec),
            ctypes.c_void_p,
        ]
        self.delete = library.timer_delete
        self.delete.argtypes = [ctypes.c_void_p]


def _load() -> _Timers | None:
    if not sys.platform.startswith("linux"):
        return None
    try:  # glibc >= 2.34 has them in libc itself
        return _Timers(ctypes.CDLL(None, use_errno=True))
    except (OSError, AttributeError):
        pass
    from ctypes.util import find_library  # noqa: PLC0415 - only an older C library needs it

    try:
        return _Timers(ctypes.CDLL(find_library("rt"), use_errno=True))
    except (OSError, AttributeError):
        return None


_timers = _load()
_installed = False


def _ignore(_signum: int, _frame: FrameType | None) -> None:
    """The handler's only job is to exist: its presence makes the call fail with EINTR."""


def install() -> bool:
    """Give :data:`SIGNAL` a handler if it has none (from the main thread only; a handler
    the embedding program set serves as well); whether alarms can interrupt now."""
    global _installed
    if _installed or _timers is None:
        return _installed
    if not callable(signal.getsignal(SIGNAL)):
        if signal.getsignal(SIGNAL) != signal.SIG_DFL:
            return False  # ignored on purpose by the embedding program: leave it so
        if threading.current_thread() is not threading.main_thread():
            return False  # only the main thread may set a handler
        signal.signal(SIGNAL, _ignore)
    _installed = True
    return True


def _spec(seconds: float) -> _Timespec:
    return _Timespec(int(seconds), int(seconds % 1 * 1_000_000_000))


@contextmanager
def armed(first: float = FIRST_SECONDS, every: float = EVERY_SECONDS) -> Iterator[bool]:
    """Interrupt the calling thread's blocked system calls after ``first`` seconds, then
    every ``every`` seconds, until the block ends; yields whether the alarm is armed."""
    timers = _timers
    if timers is None or not (_installed or install()):
        yield False
        return
    event = _Sigevent(
        sigev_signo=SIGNAL, sigev_notify=SIGEV_THREAD_ID, thread_id=threading.get_native_id()
    )
    timer = ctypes.c_void_p()
    if timers.create(CLOCK_MONOTONIC, ctypes.byref(event), ctypes.byref(timer)) != 0:
        logger.debug("thread_alarm: timer_create failed (errno %d)", ctypes.get_errno())
        yield False
        return
    try:
        spec = _Itimerspec(it_interval=_spec(every), it_value=_spec(first))
        yield timers.settime(timer, 0, ctypes.byref(spec), None) == 0
    finally:
        timers.delete(timer)
