"""What is on disk at each listed path, read stably (memory-inbox.md M18, M19, M22).

Paths are resolved from the work tree root one component at a time through
no-follow directory descriptors. Listed paths arrive sorted by raw bytes, so
the descriptors of the current directory chain are kept open on a stack and
shared by consecutive paths of one directory.
"""

from __future__ import annotations

import errno
import hashlib
import io
import os
import stat
from collections.abc import Mapping

import pygit2
from pygit2.enums import RepositoryOpenFlag

from tidings.jobs.memory.model import (
    ABSENT,
    CONFLICTED,
    INDEX_DELETED,
    WT_DELETED,
    WT_NEW,
    PathRecord,
    StatTuple,
    Worktree,
)
from tidings.store.files import stat_key

#: M19: a cached id is only trusted for files modified this long before the checkpoint began.
RACY_WINDOW_NS = 2_000_000_000
#: M54: bytes read per chunk while hashing.
CHUNK_BYTES = 65_536

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_GITLINK = 0o160000
_SYMLINK = 0o120000
_TREE = 0o040000


class Unstable(Exception):
    """M22/M23: something changed while it was being read; the attempt is repeated."""


def blob_header(size: int) -> bytes:
    return b"blob %d\0" % size


def git_file_mode(st_mode: int) -> int:
    return 0o100755 if st_mode & stat.S_IXUSR else 0o100644


def may_be_absent(flags: int) -> bool:
    """M22: only a path listed as deleted may be missing from the work tree."""
    if flags & (WT_DELETED | CONFLICTED):
        return True
    return bool(flags & INDEX_DELETED) and not flags & WT_NEW


class Fingerprinter:
    """Reads worktree identities under one root; close it (or use ``with``) when done."""

    def __init__(self, root: str, cached: Mapping[bytes, PathRecord], cache_before_ns: int) -> None:
        self._root = os.fsencode(root)
        self._root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        self._stack: list[tuple[bytes, int]] = []
        self._folder: bytes | None = None  # the folder of the previous path, and its fd
        self._dir_fd: int | None = None
        self._cached = cached
        self._cache_before_ns = cache_before_ns
        self._buffer = bytearray(CHUNK_BYTES)

    def __enter__(self) -> Fingerprinter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for _, fd in self._stack:
            os.close(fd)
        self._stack.clear()
        os.close(self._root_fd)

    def identify(
        self, raw: bytes, flags: int, index_mode: int
    ) -> tuple[Worktree, StatTuple | None]:
        """M18: ``(identity, stat tuple)`` of the path, or raise :class:`Unstable`."""
        folder, _, name = raw.rpartition(b"/")
        dir_fd = self._dir_fd if folder == self._folder else self._enter(folder)
        before = None if dir_fd is None else _lstat(dir_fd, name)
        if dir_fd is None or before is None:
            if may_be_absent(flags):
                return ABSENT, None
            raise Unstable(f"listed path vanished: {raw!r}")
        kind = stat.S_IFMT(before.st_mode)
        if kind == stat.S_IFREG:
            key = stat_key(before)
            return self._file(dir_fd, name, raw, before, key), key
        if kind == stat.S_IFLNK:
            return _symlink(dir_fd, name, before), stat_key(before)
        if kind == stat.S_IFDIR:
            return self._directory(dir_fd, name, raw, index_mode), None
        return Worktree("other", kind, None), None

    def _enter(self, folder: bytes) -> int | None:
        """The descriptor of ``folder`` (None: not a directory chain), kept for the
        paths after this one in the same folder."""
        self._folder = folder
        self._dir_fd = self._parent(folder.split(b"/") if folder else [])
        return self._dir_fd

    def _parent(self, names: list[bytes]) -> int | None:
        depth = 0
        while depth < min(len(names), len(self._stack)) and self._stack[depth][0] == names[depth]:
            depth += 1
        while len(self._stack) > depth:
            os.close(self._stack.pop()[1])
        for name in names[depth:]:
            parent = self._stack[-1][1] if self._stack else self._root_fd
            try:
                fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
            except OSError as exc:
                if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
                    return None  # a non-directory (or symlink) on the way: the path is absent
                raise
            self._stack.append((name, fd))
        return self._stack[-1][1] if self._stack else self._root_fd

    def _file(
        self, dir_fd: int, name: bytes, raw: bytes, before: os.stat_result, key: StatTuple
    ) -> Worktree:
        cached = self._cached.get(raw)
        if (
            cached is not None
            and cached.stat == key
            and cached.worktree.type == "file"
            and before.st_mtime_ns < self._cache_before_ns
        ):
            return cached.worktree
        digest = self._hash_file(dir_fd, name, before)
        return Worktree("file", git_file_mode(before.st_mode), digest)

    def _hash_file(self, dir_fd: int, name: bytes, before: os.stat_result) -> str | None:
        return stable_blob_id(dir_fd, name, before, self._buffer)

    def blob_at(self, raw: bytes) -> tuple[str | None, StatTuple] | None:
        """The blob id (M22's stable read) and stat tuple of the regular file at ``raw``;
        None when it is not one (or a parent is not a directory)."""
        folder, _, name = raw.rpartition(b"/")
        dir_fd = self._dir_fd if folder == self._folder else self._enter(folder)
        before = None if dir_fd is None else _lstat(dir_fd, name)
        if dir_fd is None or before is None or not stat.S_ISREG(before.st_mode):
            return None
        return stable_blob_id(dir_fd, name, before, self._buffer), stat_key(before)

    def _directory(self, dir_fd: int, name: bytes, raw: bytes, index_mode: int) -> Worktree:
        if index_mode != _GITLINK and _lstat_in(dir_fd, name, b".git") is None:
            return Worktree("directory", _TREE, None)
        return Worktree("gitlink", _GITLINK, _checked_out(os.path.join(self._root, raw)))


def stable_blob_id(
    dir_fd: int, name: bytes, before: os.stat_result, buffer: bytearray
) -> str | None:
    """M22: the blob id of the file ``name``, read with its stat unchanged around the read
    (else :class:`Unstable`); None for a file this process may not read (it stays observed
    by type and stat; its content is compared again once it is readable)."""
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    except PermissionError:
        return None
    except OSError as exc:
        raise Unstable(f"cannot open {name!r}: {exc.strerror}") from None
    digest = hashlib.sha1(blob_header(before.st_size), usedforsecurity=False)
    size = 0
    view = memoryview(buffer)
    with io.FileIO(fd, "rb", closefd=True) as handle:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode) or not _same(before, opened):
            raise Unstable(f"{name!r} changed while opening")
        while count := handle.readinto(view):
            digest.update(view[:count])
            size += count
        read_end = os.fstat(fd)
    after = _lstat(dir_fd, name)
    if after is None or not (_same(before, read_end) and _same(before, after)):
        raise Unstable(f"{name!r} changed while reading")
    if size != before.st_size:
        raise Unstable(f"{name!r}: read {size} bytes of {before.st_size}")
    return digest.hexdigest()


def _same(a: os.stat_result, b: os.stat_result) -> bool:
    """M22: same file, and its size and times did not move."""
    return stat_key(a) == stat_key(b)


def _lstat(dir_fd: int, name: bytes) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return None


def _lstat_in(dir_fd: int, name: bytes, child: bytes) -> os.stat_result | None:
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        return _lstat(fd, child)
    finally:
        os.close(fd)


def _symlink(dir_fd: int, name: bytes, before: os.stat_result) -> Worktree:
    """M18: the blob id of the link's target text; the link is never followed."""
    try:
        target = os.readlink(name, dir_fd=dir_fd)
    except OSError as exc:
        raise Unstable(f"cannot read link {name!r}: {exc.strerror}") from None
    after = _lstat(dir_fd, name)
    if after is None or not _same(before, after):
        raise Unstable(f"link {name!r} changed while reading")
    digest = hashlib.sha1(blob_header(len(target)) + target, usedforsecurity=False)
    return Worktree("symlink", _SYMLINK, digest.hexdigest())


def _checked_out(path: bytes) -> str | None:
    """M18: a submodule's or nested repository's HEAD commit; None when unreadable."""
    try:
        nested = pygit2.Repository(os.fsdecode(path), RepositoryOpenFlag.NO_SEARCH)
    except (pygit2.GitError, OSError, ValueError):
        return None
    try:
        if nested.head_is_unborn:
            return None
        return str(nested.head.target)
    except (pygit2.GitError, KeyError, ValueError):
        return None
    finally:
        nested.free()
