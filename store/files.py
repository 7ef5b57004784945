"""Workdir files: atomic writes, exclusive creation and safe reads (channels.md C16, C19).

Every path is walked from the agent's workdir one component at a time with
``O_NOFOLLOW`` directory descriptors, so no write or read ever follows a symlink
out of the workdir, even if one appears between a check and a use. What is created
takes the permission bits of the directory it is created in (files without execute),
narrowed by the umask: a 0700 ``.notification/`` gives 0600 mirrors (interfaces.md "Local trust").
"""

from __future__ import annotations

import errno
import os
import stat
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tidings.store.errors import UnsafePathError
from tidings.store.listing import Listing, listing

#: The most bytes any reader takes from one file (1 MiB).
MAX_READ_BYTES = 1_048_576

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC

ReadKind = Literal["ok", "absent", "not_regular", "too_large", "unreadable"]


@dataclass(frozen=True)
class ReadOutcome:
    """What a safe read found; ``data`` and ``stat`` are set only when ``kind == "ok"``."""

    kind: ReadKind
    data: bytes = b""
    stat: os.stat_result | None = None
    error: str | None = None
    #: For ``not_regular``: what is there instead (``is a FIFO``, C51).
    what: str | None = None

    @property
    def ok(self) -> bool:
        return self.kind == "ok"


def stat_key(st: os.stat_result) -> tuple[int, int, int, int, int]:
    """The identity tuple that lets a cached content hash be reused (C20)."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def describe(mode: int) -> str:
    """C51: what a non-regular file is, for warnings (``is a FIFO``, ``is a directory``)."""
    for test, text in (
        (stat.S_ISLNK, "is a symlink"),
        (stat.S_ISDIR, "is a directory"),
        (stat.S_ISFIFO, "is a FIFO"),
        (stat.S_ISSOCK, "is a socket"),
        (stat.S_ISCHR, "is a character device"),
        (stat.S_ISBLK, "is a block device"),
    ):
        if test(mode):
            return text
    return "is not a regular file" if not stat.S_ISREG(mode) else "is a regular file"


def _not_regular(mode: int) -> ReadOutcome:
    return ReadOutcome("not_regular", error="not_regular_file", what=describe(mode))


def _split(rel: str) -> list[str]:
    parts = [p for p in rel.split("/") if p]
    if not parts or any(p in (".", "..") for p in parts):
        raise UnsafePathError(f"not a workdir-relative path: {rel!r}")
    return parts


def dir_mode(dir_fd: int) -> int:
    """The permission bits of the directory ``dir_fd`` ("Local trust": what tidings
    creates in it takes them, and the umask narrows them further when it is applied)."""
    return stat.S_IMODE(os.fstat(dir_fd).st_mode) & 0o777


def file_mode(dir_fd: int) -> int:
    """The mode of a file tidings creates in ``dir_fd``: the directory's read and write
    bits (a 0700 ``.notification/`` gives 0600 mirrors), never execute."""
    return dir_mode(dir_fd) & 0o666


def _open_child_dir(parent_fd: int, name: str, *, create: bool) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except FileNotFoundError:
        if not create:
            raise
        with suppress(FileExistsError):
            os.mkdir(name, dir_mode(parent_fd), dir_fd=parent_fd)
        return _open_child_dir(parent_fd, name, create=False)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            st = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode):
                raise UnsafePathError(f"{name} is a symlink") from None
            raise NotADirectoryError(errno.ENOTDIR, f"{name} is not a directory") from None
        raise


@contextmanager
def open_dir(root: Path, parts: list[str], *, create: bool = False) -> Iterator[int]:
    """A no-follow descriptor of ``root/parts...``; missing parts are created if asked."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for name in parts:
            child = _open_child_dir(fd, name, create=create)
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def _lstat_at(dir_fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _create_temp(dir_fd: int, temp: str) -> int:
    return os.open(
        temp,
        os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
        file_mode(dir_fd),
        dir_fd=dir_fd,
    )


def _write_temp(dir_fd: int, temp: str, data: bytes) -> None:
    fd = _create_temp(dir_fd, temp)
    try:
        _write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def _refuse_link(dir_fd: int, name: str, rel: str) -> None:
    existing = _lstat_at(dir_fd, name)
    if existing is not None and stat.S_ISLNK(existing.st_mode):
        raise UnsafePathError(f"{rel} is a symlink")


class StagedWrite:
    """A C16 write whose temp is created and written, not yet fsynced or renamed.

    :meth:`commit` takes C16's remaining steps in C16's order: fsync the temp, replace
    the target, fsync the directory. Other writes may run before it: delay.md D11
    stages the alarm before it writes the ``expiring`` state, so the alarm's temp is
    created while the directory is warm and that creation is committed with the state's
    journal commit; when the alarm's turn comes, its fsync has only its few data blocks
    left to write (issue 33, ext4 on this VM: 0.14 ms, against a cold create + fsync).
    """

    def __init__(self, dir_fd: int, name: str, rel: str, temp: str, fd: int) -> None:
        self._dir_fd, self._name, self._rel, self._temp, self._fd = dir_fd, name, rel, temp, fd
        self._renamed = False

    def write(self, data: bytes) -> None:
        _write_all(self._fd, data)

    def commit(self) -> None:
        """Make the staged content the target's, durably; raises
        :class:`UnsafePathError` if the target became a symlink meanwhile."""
        os.fsync(self._fd)
        _refuse_link(self._dir_fd, self._name, self._rel)
        os.replace(self._temp, self._name, src_dir_fd=self._dir_fd, dst_dir_fd=self._dir_fd)
        self._renamed = True
        os.fsync(self._dir_fd)

    def _close(self) -> None:
        os.close(self._fd)
        if not self._renamed:
            with suppress(FileNotFoundError):
                os.unlink(self._temp, dir_fd=self._dir_fd)


@contextmanager
def staged_write(root: Path, rel: str, data: bytes) -> Iterator[StagedWrite]:
    """Stage ``data`` for ``rel`` (C16's temp, created and written); the temp is removed
    on leaving unless :meth:`StagedWrite.commit` renamed it into place.

    Raises :class:`UnsafePathError` if a directory on the way is a symlink, and the
    commit raises it if the target is one (checked once, just before the rename); the
    link is left untouched.
    """
    parts = _split(rel)
    with open_dir(root, parts[:-1], create=True) as dir_fd:
        name = parts[-1]
        temp = f".{name}.{os.getpid()}.{uuid.uuid4().hex}.tmp"
        staged = StagedWrite(dir_fd, name, rel, temp, _create_temp(dir_fd, temp))
        try:
            staged.write(data)
            yield staged
        finally:
            staged._close()


def atomic_write(root: Path, rel: str, data: bytes) -> None:
    """Temp in the same directory + fsync + ``os.replace`` + directory fsync.

    Raises :class:`UnsafePathError` if a directory on the way or the target is a
    symlink; the link is left untouched.
    """
    with staged_write(root, rel, data) as staged:
        staged.commit()


def exclusive_create(root: Path, rel: str, data: bytes) -> bool:
    """Create ``rel`` with ``data`` only if no such name exists (block-cap.md B9).

    The content is written and fsynced under a temp name first, then hard-linked
    to the target (which fails if the target exists); the temp is always removed.
    Returns ``True`` if this call created the file.
    """
    parts = _split(rel)
    with open_dir(root, parts[:-1], create=True) as dir_fd:
        name = parts[-1]
        temp = f".{name}.{uuid.uuid4().hex[:16]}.tmp"
        try:
            _write_temp(dir_fd, temp, data)
            try:
                os.link(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
            except FileExistsError:
                return False
            os.fsync(dir_fd)
            return True
        finally:
            with suppress(FileNotFoundError):
                os.unlink(temp, dir_fd=dir_fd)


def lstat_file(root: Path, rel: str) -> os.stat_result | None:
    """``lstat`` of ``rel`` with no link followed on the way; ``None`` if it cannot be reached."""
    parts = _split(rel)
    try:
        with open_dir(root, parts[:-1]) as dir_fd:
            return _lstat_at(dir_fd, parts[-1])
    except (OSError, UnsafePathError):
        return None


def remove_file(root: Path, rel: str) -> bool:
    """Delete a regular file without following links; ``False`` if it was absent."""
    parts = _split(rel)
    try:
        with open_dir(root, parts[:-1]) as dir_fd:
            existing = _lstat_at(dir_fd, parts[-1])
            if existing is None:
                return False
            if stat.S_ISLNK(existing.st_mode):
                raise UnsafePathError(f"{rel} is a symlink")
            os.unlink(parts[-1], dir_fd=dir_fd)
            os.fsync(dir_fd)
            return True
    except FileNotFoundError:
        return False


def safe_read(root: Path, rel: str, limit: int = MAX_READ_BYTES) -> ReadOutcome:
    """Read a regular file of at most ``limit`` bytes, never following a link."""
    parts = _split(rel)
    try:
        with open_dir(root, parts[:-1]) as dir_fd:
            return _read_at(dir_fd, parts[-1], limit)
    except (FileNotFoundError, NotADirectoryError):
        return ReadOutcome("absent")
    except UnsafePathError:
        return ReadOutcome("not_regular", error="not_regular_file", what="is under a symlink")
    except OSError as exc:
        return ReadOutcome("unreadable", error=type(exc).__name__)


def _read_at(
    dir_fd: int, name: str, limit: int, before: os.stat_result | None = None
) -> ReadOutcome:
    """Read ``name``; ``before`` is an ``lstat`` the caller just took (from a listing)."""
    before = before or _lstat_at(dir_fd, name)
    if before is None:
        return ReadOutcome("absent")
    if not stat.S_ISREG(before.st_mode):
        return _not_regular(before.st_mode)
    if before.st_size > limit:
        return ReadOutcome("too_large", error="too_large")
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        return ReadOutcome("absent")
    except OSError as exc:
        return ReadOutcome("unreadable", error=type(exc).__name__)
    try:
        handle = os.fstat(fd)
        if not stat.S_ISREG(handle.st_mode):
            return _not_regular(handle.st_mode)
        chunks: list[bytes] = []
        remaining = limit + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        data = b"".join(chunks)
    except OSError as exc:
        return ReadOutcome("unreadable", error=type(exc).__name__)
    finally:
        os.close(fd)
    if len(data) > limit:
        return ReadOutcome("too_large", error="too_large")
    return ReadOutcome("ok", data=data, stat=handle)


@dataclass(frozen=True)
class Entry:
    """One directory entry, as ``lstat`` saw it."""

    name: str
    stat: os.stat_result

    @property
    def is_regular(self) -> bool:
        return stat.S_ISREG(self.stat.st_mode)


class DirView:
    """An open, no-follow directory: list and read many entries through one descriptor."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def listing(self) -> Listing:
        """Names and regular files, reused while the directory is unchanged (C50)."""
        return listing(self.fd)

    def entry(self, name: str) -> Entry | None:
        """``name`` as ``lstat`` sees it now, or ``None`` if it is gone."""
        st = _lstat_at(self.fd, name)
        return None if st is None else Entry(name, st)

    def entries(self) -> list[Entry]:
        found: list[Entry] = []
        for name in os.listdir(self.fd):
            st = _lstat_at(self.fd, name)
            if st is not None:
                found.append(Entry(name, st))
        return found

    def read(self, entry: Entry | str, limit: int = MAX_READ_BYTES) -> ReadOutcome:
        """Read an entry of :meth:`entries` (its ``lstat`` is reused) or a name."""
        name, listed = (entry, None) if isinstance(entry, str) else (entry.name, entry.stat)
        try:
            return _read_at(self.fd, name, limit, listed)
        except OSError as exc:
            return ReadOutcome("unreadable", error=type(exc).__name__)


@contextmanager
def directory(root: Path, rel: str) -> Iterator[DirView | None]:
    """A :class:`DirView` of a workdir directory, or ``None`` if it is absent, not a
    directory or a symlink (readers then see nothing)."""
    stack = ExitStack()
    try:
        fd = stack.enter_context(open_dir(root, _split(rel)))
    except (FileNotFoundError, NotADirectoryError, UnsafePathError):
        yield None
        return
    with stack:
        yield DirView(fd)


def list_dir(root: Path, rel: str) -> list[Entry] | None:
    """Entries of a workdir directory (no links followed); ``None`` if it is absent,
    not a directory or a symlink."""
    try:
        with open_dir(root, _split(rel)) as dir_fd:
            entries: list[Entry] = []
            for name in os.listdir(dir_fd):
                st = _lstat_at(dir_fd, name)
                if st is not None:
                    entries.append(Entry(name, st))
            return entries
    except (FileNotFoundError, NotADirectoryError, UnsafePathError):
        return None


def is_symlink(root: Path, rel: str) -> bool:
    """Whether ``rel`` or a directory on its way is a symlink (used before buffering)."""
    current = root
    for part in _split(rel):
        current = current / part
        try:
            if stat.S_ISLNK(os.lstat(current).st_mode):
                return True
        except FileNotFoundError:
            return False
        except NotADirectoryError:
            return False
    return False
