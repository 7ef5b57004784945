"""``tidings stop``: ask the ``tidings up`` that serves a state directory to stop, and wait.

The owner lock names the process: its holder notes its pid in the lock file, and on
Linux ``/proc/locks`` confirms which process holds it, so a pid that an earlier holder
noted is never signalled. SIGTERM stops ``tidings up`` as Ctrl-C does: worker and
scheduler first, then the engine (``SHUTDOWN``, the append-only file synced),
``store.json`` removed, the locks let go. It has stopped when it has let go of the
owner lock. Standard library only.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path
from typing import Literal, TypedDict

from tidings.engine.dir_locks import FileLock
from tidings.engine.state_paths import StatePaths

#: How long ``tidings stop`` waits for ``tidings up`` to finish stopping (seconds): its
#: worker drains, then the engine syncs its append-only file.
STOP_SECONDS = 60.0
#: Pause between two looks at the owner lock (seconds).
POLL = 0.05
#: Where Linux lists every file lock with the pid of its holder.
PROC_LOCKS = Path("/proc/locks")


class Stopped(TypedDict):
    """``tidings up`` (pid ``stopped``) has stopped serving ``state_dir``."""

    status: Literal["ok"]
    stopped: int
    state_dir: str
    seconds: float


class NotStopped(TypedDict):
    """Nothing was stopped: ``not_running``, or ``stop_timeout`` (still stopping)."""

    status: Literal["error"]
    reason: Literal["not_running", "stop_timeout"]
    message: str
    state_dir: str


def _locking_pids(path: Path) -> set[int] | None:
    """Pids holding a lock on ``path`` per ``/proc/locks``; ``None`` without it (macOS)."""
    try:
        info = os.stat(path)
        lines = PROC_LOCKS.read_text().splitlines()
    except OSError:
        return None
    device = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
    pids = set()
    for line in lines:
        fields = line.split()
        # "1: FLOCK  ADVISORY  WRITE 4242 08:01:1234 0 EOF" (a "->" marks a waiter)
        if len(fields) >= 6 and fields[1] != "->" and fields[5] == device and fields[4].isdigit():
            pids.add(int(fields[4]))
    return pids


def _held(path: Path) -> bool:
    """Whether a process holds the lock on ``path`` (a file that is there)."""
    pids = _locking_pids(path)
    return bool(pids) if pids is not None else not FileLock(path).is_free()


def holder(paths: StatePaths) -> int | None:
    """The pid of the ``tidings up`` serving ``paths``, ``None`` when none does."""
    if not paths.owner_lock.is_file():  # never create files in a directory no one serves
        return None
    noted = FileLock(paths.owner_lock).holder()
    confirmed = _locking_pids(paths.owner_lock)
    if confirmed is None:  # no /proc/locks: the noted pid, if the lock is held
        return int(noted) if noted.isdigit() and _held(paths.owner_lock) else None
    if noted.isdigit() and int(noted) in confirmed:
        return int(noted)
    # Linux: the kernel's word over the file's (a holder that has not noted its pid yet)
    return min(confirmed) if confirmed else None


def _let_go(pid: int, paths: StatePaths) -> bool:
    """Whether ``pid`` no longer holds the owner lock: ``tidings up`` lets go of it last,
    once its engine has shut down (a process that has exited may linger as a zombie
    until its parent reaps it, so the lock says it, not the pid)."""
    pids = _locking_pids(paths.owner_lock)
    return pid not in pids if pids is not None else FileLock(paths.owner_lock).is_free()


def stop(paths: StatePaths, timeout: float = STOP_SECONDS) -> Stopped | NotStopped:
    """SIGTERM the ``tidings up`` of ``paths`` and wait until it has stopped."""
    root = str(paths.root)
    pid = holder(paths)
    if pid is None:
        orphan = paths.server_lock.is_file() and _held(paths.server_lock)
        left = (
            (
                " (an engine an earlier `tidings up` left still holds its lock; the next "
                "`tidings up` there stops it)"
            )
            if orphan
            else ""
        )
        return {
            "status": "error",
            "reason": "not_running",
            "state_dir": root,
            "message": f"no `tidings up` serves {root}{left}",
        }
    started = time.monotonic()
    with contextlib.suppress(ProcessLookupError):  # it stopped between look and signal
        os.kill(pid, signal.SIGTERM)
    while not _let_go(pid, paths):
        if time.monotonic() - started > timeout:
            return {
                "status": "error",
                "reason": "stop_timeout",
                "state_dir": root,
                "message": f"`tidings up` (pid {pid}) serving {root} got SIGTERM and "
                f"still runs after {timeout:g} s; see its log, or wait",
            }
        time.sleep(POLL)
    return {
        "status": "ok",
        "stopped": pid,
        "state_dir": root,
        "seconds": round(time.monotonic() - started, 2),
    }
