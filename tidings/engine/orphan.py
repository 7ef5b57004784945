"""An engine whose ``tidings up`` died: found by its server lock, shut down cleanly.

It is not adopted: a process cannot wait for, or take the parent-death signal of, a
child that is not its own. ``SHUTDOWN`` syncs its append-only file; the next engine,
this ``tidings up``'s own child, loads it, so no acknowledged write is lost. On Linux
an orphan is rare (the parent-death signal stops it with its parent); what the next
``tidings up`` usually meets is one still finishing that shutdown, and it waits.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time

import redis

from tidings.engine.child import client
from tidings.engine.config import BIND
from tidings.engine.dir_locks import FileLock
from tidings.engine.state_paths import StatePaths
from tidings.engine.storefile import read

#: How long an orphan gets to stop after SHUTDOWN, then after SIGTERM (seconds).
STOP_SECONDS = 15.0
#: Pause between two looks at the server lock (seconds).
POLL = 0.05


def _wait_free(lock: FileLock, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if lock.acquire():
            return True
        time.sleep(POLL)
    return False


def _ask_shutdown(paths: StatePaths) -> None:
    """SHUTDOWN through the port ``store.json`` names, with the kept password."""
    with contextlib.suppress(Exception):  # a stale or half-written record: just wait
        record = read(paths.store_file)
        secret = paths.password.read_text().strip()
        port = record.get("port") if record is not None else None
        if not isinstance(port, int):
            return
        with client(BIND, port, secret) as c:
            c.shutdown()


def _engine_pid(paths: StatePaths) -> int | None:
    """The pid in the engine's pid file, if that process works in our data directory
    (an engine changes to its ``dir``; its process title no longer names its files).
    Without ``/proc`` (macOS) nothing is signalled: SHUTDOWN is the only way."""
    try:
        pid = int(paths.pid_file.read_text().strip())
        cwd = os.readlink(f"/proc/{pid}/cwd")
    except (OSError, ValueError):
        return None
    return pid if cwd == os.path.realpath(paths.data_dir) else None


def stop_orphan(paths: StatePaths, lock: FileLock) -> bool:
    """Stop the engine holding ``lock`` and take the lock; ``False`` if it would not stop."""
    with contextlib.suppress(redis.RedisError):
        _ask_shutdown(paths)
    if _wait_free(lock, STOP_SECONDS):
        return True
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pid = _engine_pid(paths)
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        if _wait_free(lock, STOP_SECONDS):
            return True
    return False


def clear_stale(paths: StatePaths) -> None:
    """Nothing serves the directory: what a crash left behind is not to be believed."""
    for path in (paths.store_file, paths.pid_file, paths.socket):
        if path is not None:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
