"""``store.json``: how every process finds the store ``tidings up`` serves.

``{"url": "redis://:<password>@127.0.0.1:<port>/0", "pid": <engine pid>,
"engine": "valkey 9.1.2", ...}``, mode 0600, written once the engine answers and
removed on a clean stop. A reader never trusts it blindly: the file must be a
regular file of this user that no one else can read, and its pid must be alive; the
client then pings the URL with its password. Standard library only: ``tidings
publish`` reads it on every start.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from pathlib import Path
from typing import TypedDict

#: The file clients read, in the state directory.
STORE_FILE = "store.json"
#: ``store.json`` and every secret next to it: owner read/write only.
SECRET_MODE = 0o600
#: A store file larger than this is not one tidings wrote.
MAX_BYTES = 64 * 1024


class StoreFileError(Exception):
    """A ``store.json`` that is there but must not be used (wrong owner or mode)."""


def write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (temp + fsync + rename), mode 0600."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        temp.unlink()
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, SECRET_MODE)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temp, path)


class StoreRecord(TypedDict):
    """``store.json``: how to reach the store, and which processes serve and own it."""

    url: str
    pid: int
    engine: str
    port: int
    owner_pid: int
    #: The Unix socket path, where the engine listens on one.
    socket: str | None


def write(path: Path, record: StoreRecord) -> None:
    """Publish ``record`` as ``store.json``."""
    write_private(path, json.dumps(record, sort_keys=True).encode() + b"\n")


def remove(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def _pid_alive(pid: object) -> bool:
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read(path: Path) -> dict[str, object] | None:
    """The record of a live store, ``None`` when there is none (absent, stale or unreadable).

    Raises :class:`StoreFileError` for a file that is there but could be another user's
    or readable by others: a client must not send it its commands, nor use its password.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise StoreFileError(f"{path}: cannot open ({exc.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise StoreFileError(f"{path} is not a regular file")
        if info.st_uid != os.geteuid():
            raise StoreFileError(f"{path} belongs to another user")
        if info.st_mode & 0o077:
            raise StoreFileError(
                f"{path} is readable by others (mode {stat.S_IMODE(info.st_mode):o}, expected 600)"
            )
        raw = os.read(fd, MAX_BYTES + 1)
    finally:
        os.close(fd)
    try:
        record = json.loads(raw) if len(raw) <= MAX_BYTES else None
    except ValueError:
        return None
    if not isinstance(record, dict) or not isinstance(record.get("url"), str):
        return None
    return record if _pid_alive(record.get("pid")) else None


def find_url(state_dir: Path) -> str | None:
    """The URL of the store ``tidings up`` serves from ``state_dir``, if one runs."""
    record = read(state_dir / STORE_FILE)
    return str(record["url"]) if record else None
