"""The two locks of a state directory (engines take none on their data directory).

* The **owner lock** is held by the one ``tidings up`` serving the directory.
* The **server lock** is taken by ``tidings up`` and inherited by the engine child (its
  descriptor is passed down), so it is held for as long as the engine lives, whoever
  its parent is.

Busy server lock and free owner lock: an orphaned engine (its ``tidings up`` died).
Both free: nothing serves the directory, and any socket, pid file or ``store.json``
left there is stale.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from tidings.engine.storefile import SECRET_MODE


class FileLock:
    """An exclusive ``flock`` on one file, taken without waiting."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd: int | None = None

    def acquire(self) -> bool:
        """Take the lock; ``False`` when another process holds it."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, SECRET_MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self.fd = fd
        return True

    def is_free(self) -> bool:
        """Whether no process holds it (taken and let go at once)."""
        if not self.acquire():
            return False
        self.release()
        return True

    def note_pid(self) -> None:
        """Write this process's pid into the held lock file (for the busy message)."""
        if self.fd is not None:
            os.ftruncate(self.fd, 0)
            os.pwrite(self.fd, f"{os.getpid()}\n".encode(), 0)

    def holder(self) -> str:
        """The pid a holder noted, or ``"?"``."""
        with contextlib.suppress(OSError, ValueError):
            return str(int(self.path.read_text().strip()))
        return "?"

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
