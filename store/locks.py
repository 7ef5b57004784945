"""Resource-scoped ``flock`` locks (channels.md C18).

A mutation names the scopes it touches (``channel:email``, ``resource:hook-registry``,
...). Each scope maps to one lock file under ``.notification/.locks/``; scopes are
de-duplicated and taken in sorted order so two mutations never deadlock. An
in-process re-entrant lock per lock file lets a holder (the same thread) take the
scope again, and keeps threads of one process from sharing one ``flock``.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import stat
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from tidings.store.errors import LockTimeout, UnsafePathError
from tidings.store.files import describe, file_mode, open_dir

#: How long a mutation waits for its locks before answering ``lock_timeout``.
LOCK_WAIT_SECONDS = 10.0

#: Where lock files live, relative to the workdir.
LOCK_DIR = ".notification/.locks"

_LOCK_FLAGS = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC

_LABEL_JUNK = re.compile(r"[^A-Za-z0-9_.-]+")


def lock_file_name(scope: str) -> str:
    """``<label>-<first 20 hex of sha256(scope)>.lock``."""
    digest = hashlib.sha256(scope.encode("utf-8")).hexdigest()[:20]
    label = _LABEL_JUNK.sub("-", scope).strip("-._")[:48] or "scope"
    return f"{label}-{digest}.lock"


class _FileLock:
    """A re-entrant, thread-aware wrapper around one ``flock`` file."""

    def __init__(self, root: Path, name: str) -> None:
        self._root = root
        self._name = name
        self._mutex = threading.RLock()
        self._depth = 0
        self._fd: int | None = None

    def acquire(self, deadline: float) -> None:
        if not self._mutex.acquire(timeout=max(0.0, deadline - time.monotonic())):
            raise LockTimeout(f"lock {self._name} not obtained in time")
        try:
            if self._depth == 0:
                self._fd = self._flock(deadline)
            self._depth += 1
        except BaseException:
            self._mutex.release()
            raise

    def try_acquire(self) -> bool:
        """Acquire without waiting (``False``: another thread or process holds it). Where
        the lock file cannot be had (no ``.notification`` yet, a hostile ``.locks``), only
        the threads of this process are excluded: nothing is created or refused for it."""
        if not self._mutex.acquire(blocking=False):
            return False
        if self._depth == 0:
            try:
                self._fd = self._try_flock()
            except BlockingIOError:
                self._mutex.release()
                return False
        self._depth += 1
        return True

    def _try_flock(self) -> int | None:
        try:
            if not stat.S_ISDIR(os.lstat(self._root / LOCK_DIR.split("/")[0]).st_mode):
                return None
            fd = self._open()
        except (OSError, UnsafePathError):
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise
        except OSError:
            os.close(fd)
            return None
        return fd

    def release(self) -> None:
        self._depth -= 1
        if self._depth == 0 and self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
        self._mutex.release()

    def _open(self) -> int:
        """The lock file, opened without following links and without blocking.

        C51: a ``.locks`` that is a symlink or a lock file that is not a regular file
        raises :class:`UnsafePathError` naming what is there, never a bare OSError.
        """
        try:
            with open_dir(self._root, LOCK_DIR.split("/"), create=True) as dir_fd:
                try:
                    fd = os.open(self._name, _LOCK_FLAGS, file_mode(dir_fd), dir_fd=dir_fd)
                except OSError:
                    st = os.stat(self._name, dir_fd=dir_fd, follow_symlinks=False)
                    if stat.S_ISREG(st.st_mode):
                        raise  # a plain I/O failure, not something in the way
                    raise UnsafePathError(
                        f"{LOCK_DIR}/{self._name} {describe(st.st_mode)}"
                    ) from None
        except NotADirectoryError:
            raise UnsafePathError(f"{LOCK_DIR} is not a directory") from None
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            os.close(fd)
            raise UnsafePathError(f"{LOCK_DIR}/{self._name} {describe(mode)}")
        return fd

    def _flock(self, deadline: float) -> int:
        fd = self._open()
        pause = 0.001
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise LockTimeout(f"lock {self._name} not obtained in time") from None
                time.sleep(pause)
                pause = min(pause * 2, 0.02)


#: The lock of each (workdir, lock file) while someone uses it: weakly held, so the
#: locks of channels no longer written do not pile up in a long-running worker.
_registry: weakref.WeakValueDictionary[tuple[str, str], _FileLock] = weakref.WeakValueDictionary()
_registry_lock = threading.Lock()


def _file_lock(root: Path, scope: str) -> _FileLock:
    name = lock_file_name(scope)
    key = (str(root), name)
    with _registry_lock:
        lock = _registry.get(key)
        if lock is None:
            lock = _registry[key] = _FileLock(root, name)
        return lock


#: The longest pause between two tries of :func:`attempt` (s).
ATTEMPT_PAUSE_SECONDS = 0.02


@contextmanager
def attempt(root: Path, scope: str, wait: float = 0.0) -> Iterator[bool]:
    """Hold ``scope`` for the ``with`` block if it is free now or within ``wait`` seconds;
    yields whether it is held (see :meth:`_FileLock.try_acquire` for a workdir without
    lock files)."""
    lock = _file_lock(root, scope)
    deadline = time.monotonic() + wait
    pause = 0.001
    held = lock.try_acquire()
    while not held and time.monotonic() < deadline:
        time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
        pause = min(pause * 2, ATTEMPT_PAUSE_SECONDS)
        held = lock.try_acquire()
    try:
        yield held
    finally:
        if held:
            lock.release()


@contextmanager
def hold(root: Path, *scopes: str, timeout: float = LOCK_WAIT_SECONDS) -> Iterator[None]:
    """Hold every scope of ``scopes`` for the ``with`` block, or raise LockTimeout."""
    deadline = time.monotonic() + timeout
    with ExitStack() as stack:
        for scope in sorted(set(scopes)):
            lock = _file_lock(root, scope)
            lock.acquire(deadline)
            stack.callback(lock.release)
        yield
