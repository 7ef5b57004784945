"""A private copy of the repository's index whose stat data tidings refreshes itself
(memory-inbox.md M19, M22, M24).

libgit2 compares each index entry's stat data with the file's and re-hashes the file
when they differ. ``git status`` then refreshes the index, but an observation may not
write to the repository (M24), so after every tracked file got a new mtime with equal
content (a restore, ``rsync`` without ``-t``, a formatter) each observation would
re-hash the whole tree, forever. Instead the worktree side is diffed against a copy of
the index kept outside the repository (a private directory of this process), made
from the index file's bytes as read in the attempt and used while those bytes stay the
same. The copy's mtime is set to the index file's, so libgit2's racy-entry rule means
the same for both.

After an attempt, a few entries not in the listing are sampled: an entry whose stat
differs from its file's, although the listing shows the file equal to the index, was
re-hashed by libgit2. Then every such entry is checked the way M22 reads files (stable
stat around the read) and M19 judges them (not modified within the racy window); an
entry whose content still equals its id gets the file's stat data, any other entry
that could be racy against the rewritten copy is smudged (size 0, so it is always
re-hashed), and the copy is written again. So one observation pays the re-hash and
the following ones do not. Nothing in the copy ever decides a path's content: an
entry's id and mode are the repository index's own.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import stat
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pygit2
from pygit2 import C, ffi
from pygit2.errors import check_error

from tidings.jobs.memory.fingerprint import RACY_WINDOW_NS, Fingerprinter, Unstable
from tidings.jobs.memory.indexfile import INDEX_MAX_BYTES
from tidings.jobs.memory.metadata import RepositoryUnavailable
from tidings.store.files import atomic_write, safe_read, stat_key

#: Repositories whose private index copy is kept (each with its source index's bytes).
KEPT_COPIES = 8
#: Entries outside the listing whose stat is compared after each attempt.
SAMPLE_ENTRIES = 32

_STAGE_MASK = 0x3000
_U32 = 0xFFFFFFFF
_REGULAR = (0o100644, 0o100755)

Entry = Any  # a cffi ``const git_index_entry *``


@dataclass
class _Copy:
    source: bytes  # the repository index's bytes this copy was made from
    source_mtime_ns: int  # ... and that file's mtime (libgit2's racy rule)
    path: str  # the copy's file
    next_sample: int = 0


_copies: dict[str, _Copy] = {}
_copies_lock = threading.Lock()
_directory: str | None = None


def _private_dir() -> str:
    global _directory
    with _copies_lock:
        if _directory is None or not os.path.isdir(_directory):
            _directory = tempfile.mkdtemp(prefix="tidings-index-")
            atexit.register(shutil.rmtree, _directory, True)  # a cache of this process only
        return _directory


def load(repo: pygit2.Repository, index_file: str) -> tuple[pygit2.Index, bytes]:
    """The private copy of ``index_file`` (the repository's index) as an Index bound to
    ``repo``, and the index file's bytes it stands for. The file is read no-follow,
    non-blocking and capped (M55): not a regular file → ``unreadable``, over
    :data:`INDEX_MAX_BYTES` → ``index_too_large``."""
    data, source = read_index(index_file)
    path = None
    if data and source is not None:
        with _copies_lock:
            copy = _copies.get(index_file)
        if copy is None or copy.source != data or not os.path.exists(copy.path):
            copy = _write_copy(index_file, data, source)
        path = copy.path
    handle = ffi.new("git_index **")
    check_error(C.git_index_open(handle, ffi.NULL if path is None else os.fsencode(path)))
    # Bound to ``repo`` because diffs need the repository; the entries stay the copy's.
    index: pygit2.Index = pygit2.Index.from_c(repo, handle)  # type: ignore[no-untyped-call]
    return index, data


def read_index(index_file: str) -> tuple[bytes, os.stat_result | None]:
    """M55: the index file's bytes and stat (``b""``, None when there is none yet: an
    empty index, as libgit2 reads it)."""
    directory, name = os.path.split(index_file)
    outcome = safe_read(Path(directory), name, INDEX_MAX_BYTES)
    if outcome.kind == "absent":
        return b"", None
    if outcome.kind == "too_large":
        raise RepositoryUnavailable("index_too_large", f"over {INDEX_MAX_BYTES} bytes")
    if not outcome.ok:
        raise RepositoryUnavailable("unreadable", f".git/index {outcome.what or outcome.error}")
    return outcome.data, outcome.stat


def _write_copy(index_file: str, data: bytes, source_stat: os.stat_result) -> _Copy:
    directory = _private_dir()
    name = hashlib.sha256(os.fsencode(index_file)).hexdigest()[:24] + ".index"
    atomic_write(Path(directory), name, data)
    path = os.path.join(directory, name)
    os.utime(path, ns=(source_stat.st_atime_ns, source_stat.st_mtime_ns))
    copy = _Copy(data, source_stat.st_mtime_ns, path)
    with _copies_lock:
        _copies.pop(index_file, None)
        _copies[index_file] = copy
        while len(_copies) > KEPT_COPIES:
            del _copies[next(iter(_copies))]
    return copy


def refresh(
    index: pygit2.Index,
    index_file: str,
    data: bytes,
    root: str,
    listed: set[bytes],
    started_ns: int,
) -> int:
    """Refresh the copy's stat data when a sample shows re-hashed entries; returns the
    number of entries refreshed (0 when the sample found nothing)."""
    with _copies_lock:
        copy = _copies.get(index_file)
    if copy is None or copy.source != data:
        return 0
    count = C.git_index_entrycount(index._index)
    if not count or not _sample_differs(index, count, copy, root, listed):
        return 0
    racy_before = started_ns - RACY_WINDOW_NS
    trusted_before = min(racy_before, copy.source_mtime_ns)
    refreshed = changed = 0
    with Fingerprinter(root, {}, 0) as reader:
        for position in range(count):
            entry = C.git_index_get_byindex(index._index, position)
            raw = ffi.string(entry.path)
            if raw in listed or entry.flags & _STAGE_MASK or entry.mode not in _REGULAR:
                continue
            st = _lstat(root, raw)
            if st is None:
                continue
            same = _same_stat(entry, st)
            if same and _mtime_ns(entry) < trusted_before:
                continue  # the stat data proves the content, as before
            if st.st_mtime_ns < racy_before and _equal(reader, raw, entry, st):
                _replace(index, entry, st)
                refreshed += 1
            elif same:
                _replace(index, entry, None)  # racy and unverified: always re-hashed
            else:
                continue  # changed since the listing: libgit2 hashes it next time
            changed += 1
    if changed:
        C.git_index_write(index._index)  # a failed write only leaves the copy as it was
    return refreshed


def _sample_differs(
    index: pygit2.Index, count: int, copy: _Copy, root: str, listed: set[bytes]
) -> bool:
    step = max(1, count // SAMPLE_ENTRIES)
    start = copy.next_sample % step
    copy.next_sample += 1
    for position in range(start, count, step):
        entry = C.git_index_get_byindex(index._index, position)
        raw = ffi.string(entry.path)
        if raw in listed or entry.flags & _STAGE_MASK or entry.mode not in _REGULAR:
            continue
        st = _lstat(root, raw)
        if st is not None and not _same_stat(entry, st):
            return True
    return False


def _lstat(root: str, raw: bytes) -> os.stat_result | None:
    try:
        st = os.stat(os.path.join(os.fsencode(root), raw), follow_symlinks=False)
    except OSError:
        return None
    return st if stat.S_ISREG(st.st_mode) else None


def _mtime_ns(entry: Entry) -> int:
    return int(entry.mtime.seconds) * 1_000_000_000 + int(entry.mtime.nanoseconds)


def _same_stat(entry: Entry, st: os.stat_result) -> bool:
    """The stat fields libgit2 compares (core.trustctime and core.filemode as default)."""
    return bool(
        entry.file_size == st.st_size & _U32
        and _mtime_ns(entry) == _truncated(st.st_mtime_ns)
        and entry.ctime.seconds == _seconds(st.st_ctime_ns)
        and entry.ctime.nanoseconds == st.st_ctime_ns % 1_000_000_000
        and entry.ino == st.st_ino & _U32
        and entry.uid == st.st_uid & _U32
        and entry.gid == st.st_gid & _U32
        and entry.mode == _git_mode(st)
    )


def _seconds(ns: int) -> int:
    """Seconds as the index's signed 32-bit field holds them."""
    value = (ns // 1_000_000_000) & _U32
    return value - (1 << 32) if value >= 1 << 31 else value


def _truncated(ns: int) -> int:
    return _seconds(ns) * 1_000_000_000 + ns % 1_000_000_000


def _git_mode(st: os.stat_result) -> int:
    return 0o100755 if st.st_mode & stat.S_IXUSR else 0o100644


def _equal(reader: Fingerprinter, raw: bytes, entry: Entry, st: os.stat_result) -> bool:
    """M22: the file, read stably with the stat it has now, holds the entry's blob."""
    try:
        found = reader.blob_at(raw)
    except Unstable:
        return False
    entry_id = bytes(ffi.buffer(entry.id.id)).hex()
    return found is not None and found == (entry_id, stat_key(st)) and _git_mode(st) == entry.mode


def _replace(index: pygit2.Index, entry: Entry, st: os.stat_result | None) -> None:
    """Put ``entry`` back with ``st``'s stat data, or smudged (size 0) without one."""
    updated = ffi.new("git_index_entry *")
    ffi.memmove(updated, entry, ffi.sizeof("git_index_entry"))
    if st is None:
        updated.file_size = 0
    else:
        updated.ctime.seconds = _seconds(st.st_ctime_ns)
        updated.ctime.nanoseconds = st.st_ctime_ns % 1_000_000_000
        updated.mtime.seconds = _seconds(st.st_mtime_ns)
        updated.mtime.nanoseconds = st.st_mtime_ns % 1_000_000_000
        updated.dev = st.st_rdev & _U32  # as libgit2 records it
        updated.ino = st.st_ino & _U32
        updated.uid = st.st_uid & _U32
        updated.gid = st.st_gid & _U32
        updated.file_size = st.st_size & _U32
    C.git_index_add(index._index, updated)
