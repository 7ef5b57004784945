"""The per-thread alarm behind M55's last gap (jobs/thread_alarm.py, issue 24): a blocked
``open()`` of a FIFO made while the GIL is held fails with ``EINTR``; ordinary work under
the alarm is not disturbed."""

from __future__ import annotations

import ctypes
import errno
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from tidings.jobs import thread_alarm

T = TypeVar("T")

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="POSIX timers aimed at one thread are Linux's"
)


def _in_thread(work: Callable[[], T]) -> T:
    out: list[T] = []
    thread = threading.Thread(target=lambda: out.append(work()), daemon=True)
    thread.start()
    thread.join(10)
    assert not thread.is_alive(), "the alarm did not interrupt the blocked call"
    return out[0]


def test_a_fifo_open_holding_the_gil_is_interrupted(tmp_path: Path) -> None:
    assert thread_alarm.install()
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    # PyDLL keeps the GIL during the call, as pygit2 does around libgit2's open().
    libc = ctypes.PyDLL(None, use_errno=True)
    libc.open.argtypes = [ctypes.c_char_p, ctypes.c_int]

    def blocked_open() -> tuple[bool, int, int, float]:
        started = time.monotonic()
        with thread_alarm.armed(first=0.2, every=0.2) as armed:
            fd = libc.open(os.fsencode(fifo), os.O_RDONLY)
            return armed, fd, ctypes.get_errno(), time.monotonic() - started

    armed, fd, error, seconds = _in_thread(blocked_open)
    assert armed
    assert (fd, error) == (-1, errno.EINTR)
    assert seconds < 5


def test_ordinary_work_under_the_alarm_goes_on(tmp_path: Path) -> None:
    """Reads of regular files are not interruptible, and Python retries its own calls
    (PEP 475): a thread that works past many alarms sees no error."""
    assert thread_alarm.install()
    data = tmp_path / "data"
    data.write_bytes(b"x" * 65536)

    def work() -> int:
        reads = 0
        with thread_alarm.armed(first=0.05, every=0.05):
            deadline = time.monotonic() + 0.6
            while time.monotonic() < deadline:
                reads += len(data.read_bytes()) > 0
                time.sleep(0.01)
        return reads

    assert _in_thread(work) > 10
