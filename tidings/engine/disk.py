"""Faults of the state directory: full or read-only (interfaces.md, The default store).

An ``OSError`` from writing there, or a probe write when the engine is the one that
failed (it cannot create or append its AOF), is named by a reason: ``state_dir_full``
(no space or quota left) or ``state_dir_read_only`` (a read-only file system, or no
permission to write). Anything else is not a fault of the directory.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

#: The reasons of the two faults (store/reasons.py).
FULL_REASON = "state_dir_full"
READ_ONLY_REASON = "state_dir_read_only"
#: errno values meaning the file system has no room left.
FULL = frozenset({errno.ENOSPC, errno.EDQUOT})
#: errno values meaning the directory cannot be written.
READ_ONLY = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})
#: Bytes the probe writes: about one append of the engine's AOF.
PROBE_BYTES = 4096


def reason_of(exc: OSError) -> str | None:
    """``state_dir_full``, ``state_dir_read_only``, or ``None`` for another failure."""
    if exc.errno in FULL:
        return FULL_REASON
    if exc.errno in READ_ONLY:
        return READ_ONLY_REASON
    return None


def detail(exc: OSError) -> str:
    """``exc`` in a few words: its error and the file it met."""
    said = exc.strerror or type(exc).__name__
    return f"{said}: {exc.filename}" if exc.filename else said


def describe(fault: str, root: Path, detail: str) -> str:
    """One line: what is wrong with ``root`` (``fault``: its reason) and what to do."""
    if fault == FULL_REASON:
        return (
            f"the state directory {root} is on a full file system ({detail}): free "
            "space there, or point TIDINGS_STATE_DIR at another file system"
        )
    return (
        f"the state directory {root} cannot be written ({detail}): make it writable "
        "(a read-only mount? its owner?), or point TIDINGS_STATE_DIR elsewhere"
    )


def probe(folder: Path) -> tuple[str, str] | None:
    """Write, sync and remove a small file in ``folder``: ``(reason, one line)`` when
    the directory is full or read-only, ``None`` when the write works (or the folder
    is gone, which is not a fault of the file system)."""
    path = folder / f".probe.{os.getpid()}"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, b"\0" * PROBE_BYTES)
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        reason = reason_of(exc)
        return None if reason is None else (reason, describe(reason, folder, detail(exc)))
    finally:
        with contextlib.suppress(OSError):
            path.unlink()
    return None
