"""M55: no file in a memory repository holds a worker thread.

:mod:`metadata`'s lstat checks cover the files that open a repository, but libgit2 opens
many more with a blocking ``open()``: ignore and attribute files in the work tree,
``info/exclude``, ``objects/info/alternates``, ``shallow``, loose objects, files that
``config`` names (``bench/memory_fifo.py``: a FIFO at any of eight such places held the
observation past 5 s; a file swapped for a FIFO after the check does the same). A worker's
time limit cannot interrupt a C-level ``open()``.

So an observation runs on a helper thread that the calling thread watches. libgit2 calls
release the GIL, so the caller keeps running: every :data:`CHECK_SECONDS` it reads, from
``/proc``, which file each thread of the process is blocked opening; a FIFO there is opened
for writing and closed at once, which lets the blocked ``open()`` return (the reader sees
an empty file), and the observation answers ``unavailable`` (``unreadable``) at once,
logged with the FIFO's path. Whatever else keeps the helper past
:data:`TIME_LIMIT_SECONDS` (a device, a hung network mount) gives ``unavailable``
(``timeout``). Either way the worker thread goes on; a helper left behind is counted, a
reaper thread keeps releasing FIFOs it opens again, and its repository answers
``timeout`` at once until it ends. At most :data:`MAX_STUCK` helpers may be left; past that
every observation answers ``timeout`` at once (fail open, reported) until one ends.

An ``open()`` libgit2 makes while pygit2 holds the GIL (reading ``config`` and the files
it includes, ``HEAD``, loose objects) stops every thread of the process, the watcher too;
:mod:`metadata` checks those files beforehand (includes too), which leaves a FIFO loose
object and a file swapped for a FIFO after the check (a FIFO renamed away while a thread
waits in its ``open()`` can never be opened for writing again). For those the helper runs
under :func:`tidings.jobs.thread_alarm.armed`: after half a second the kernel signals the helper
thread itself, the blocked ``open()`` fails with ``EINTR`` and the observation answers
``unavailable`` (``bench/memory_fifo.py``: a FIFO loose object, and ``config`` or ``HEAD``
swapped for a FIFO in a loop, hung the whole process before).
Without ``/proc`` and POSIX timers (not Linux) only the time limit applies.
"""

from __future__ import annotations

import os
import platform
import stat
import threading
import time
from collections.abc import Callable

from tidings.jobs import log, thread_alarm
from tidings.jobs.memory.model import ObserveResult

#: M55: the longest an observation may take before it answers ``timeout`` (seconds).
TIME_LIMIT_SECONDS = 30.0
#: How often the watching thread looks for a helper blocked opening a FIFO (seconds).
CHECK_SECONDS = 0.1
#: Helpers that outlived their time limit, at most, before every observation is refused.
MAX_STUCK = 8
#: The ``openat`` system call's number, by machine (``/proc/<tid>/syscall``).
OPENAT = {"x86_64": 257, "aarch64": 56}.get(platform.machine())
#: ``openat``'s "relative to the working directory" descriptor, as ``/proc`` prints it.
AT_FDCWD = 0xFFFFFF9C

_stuck: set[str] = set()
_pokes = 0
_lock = threading.Lock()
_reaper: threading.Thread | None = None


def watched(repo_path: str, observe: Callable[[], ObserveResult]) -> ObserveResult:
    """``observe()`` on a helper thread, answered within :data:`TIME_LIMIT_SECONDS`."""
    with _lock:
        if repo_path in _stuck or len(_stuck) >= MAX_STUCK:
            return ObserveResult("unavailable", reason="timeout")
        pokes_before = _pokes
    answer: list[ObserveResult] = []
    done = threading.Event()

    def run() -> None:
        try:
            with thread_alarm.armed():
                answer.append(observe())
        finally:
            with _lock:
                done.set()
                _stuck.discard(repo_path)

    helper = threading.Thread(target=run, name="tidings-observe", daemon=True)
    helper.start()
    deadline = time.monotonic() + TIME_LIMIT_SECONDS
    while not done.wait(CHECK_SECONDS):
        release_fifo_opens()
        with _lock:
            poked = _pokes != pokes_before
        if poked:
            return _leave(repo_path, done, "unreadable")
        if time.monotonic() >= deadline:
            log.event("memory.observe_timeout", repo=repo_path, seconds=TIME_LIMIT_SECONDS)
            return _leave(repo_path, done, "timeout")
    with _lock:
        poked = _pokes != pokes_before
    if poked or not answer:
        return ObserveResult("unavailable", reason="unreadable")
    return answer[0]


def _leave(repo_path: str, done: threading.Event, reason: str) -> ObserveResult:
    """Answer without the helper; it stays counted (and its FIFOs released) until it ends."""
    global _reaper
    with _lock:
        if not done.is_set():
            _stuck.add(repo_path)
            if _reaper is None or not _reaper.is_alive():
                _reaper = threading.Thread(target=_reap, name="tidings-observe-reaper", daemon=True)
                _reaper.start()
    return ObserveResult("unavailable", reason=reason)


def _reap() -> None:
    """Keep releasing FIFO opens while a helper that was left behind still runs (libgit2
    may open the same FIFO again after a release)."""
    while True:
        with _lock:
            if not _stuck:
                return
        release_fifo_opens()
        time.sleep(CHECK_SECONDS)


def release_fifo_opens() -> int:
    """Open for writing, and close, every FIFO a thread of this process is blocked
    opening (tidings never opens one on purpose), so the ``open()`` returns; how many."""
    global _pokes
    released = 0
    for path in blocked_opens():
        try:
            if not stat.S_ISFIFO(os.stat(path).st_mode):
                continue
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC))
        except OSError:
            continue  # gone, or no reader any more
        released += 1
        with _lock:
            _pokes += 1
        log.event("memory.fifo_released", path=os.fsdecode(path))
    return released


def blocked_opens() -> list[bytes]:
    """The paths threads of this process are blocked in ``openat`` on (Linux ``/proc``)."""
    if OPENAT is None:
        return []
    paths: list[bytes] = []
    try:
        tasks = os.listdir("/proc/self/task")
        with open("/proc/self/mem", "rb", buffering=0) as memory:
            for task in tasks:
                path = _opening(task, memory)
                if path is not None:
                    paths.append(path)
    except OSError:
        return paths
    return paths


def _opening(task: str, memory: object) -> bytes | None:
    try:
        with open(f"/proc/self/task/{task}/syscall", "rb") as handle:
            fields = handle.read().split()
    except OSError:
        return None
    if len(fields) < 3 or fields[0] != str(OPENAT).encode():
        return None
    try:
        memory.seek(int(fields[2], 16))  # type: ignore[attr-defined]
        raw: bytes = memory.read(4096)  # type: ignore[attr-defined]
    except (OSError, ValueError, OverflowError):
        return None
    path = raw.split(b"\0", 1)[0]
    if not path or (not path.startswith(b"/") and int(fields[1], 16) != AT_FDCWD):
        return None  # relative to a directory descriptor: not how libgit2 opens files
    return path
