"""The index file's cache tree: is the staged side empty? (memory-inbox.md M17, M24)

Git and libgit2 keep, in the index's ``TREE`` extension, the id of the tree the
index entries would make; writers invalidate a directory's node whenever an entry
under it changes. When the root node is valid, covers every entry of the index
and names the HEAD commit's tree, the HEAD tree → index diff is empty: the
observation then skips that diff, which reads every tree of HEAD (``git status``
uses the cache tree the same way). Anything else — another index version, a
conflict stage, a split or sparse index, an unknown required extension, a
truncated file — answers "unknown" and the diff runs as before. The file is only
read, never locked or written. It is read within the attempt, after the index
file's identity was taken and before it is taken again (M23), so a file replaced
between libgit2's load and this read makes the attempt unstable.

Skipping the entries costs about 0.4 µs each, so the last answer per index file
is kept with the file's bytes and reused only while the bytes are identical.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from tidings.store.files import safe_read

_SIGNATURE = b"DIRC"
_VERSIONS = (2, 3, 4)
#: Stat data (ten 32-bit words) before the object id of each entry.
_STAT_BYTES = 40
_STAGE_MASK = 0x3000
_EXTENDED = 0x4000
_NAME_MASK = 0xFFF
#: Extensions whose presence changes what the entries of this file mean.
_UNSUPPORTED = frozenset({b"link", b"sdir"})
#: M55: the largest index file read (as :data:`privateindex.INDEX_MAX_BYTES`).
INDEX_MAX_BYTES = 64 * 1024 * 1024
#: Index files whose last answer is kept (each with a copy of the file's bytes).
KEPT_INDEX_FILES = 8

Root = tuple[int, bytes] | None
_kept: dict[tuple[str, int], tuple[bytes, Root]] = {}
_kept_lock = threading.Lock()


def staged_is_empty(index_path: str, head_tree: bytes, entry_count: int) -> bool:
    """True when the index at ``index_path`` provably equals ``head_tree`` (a raw tree
    id) through a valid cache tree over all ``entry_count`` entries (the count the
    loaded index has); False when that cannot be shown."""
    directory, name = os.path.split(index_path)
    outcome = safe_read(Path(directory), name, INDEX_MAX_BYTES)  # M55: no-follow, capped
    if not outcome.ok:
        return False
    data = outcome.data
    root = _remembered_root(index_path, data, len(head_tree))
    return root is not None and root == (entry_count, head_tree)


def _remembered_root(index_path: str, data: bytes, oid_len: int) -> Root:
    key = (index_path, oid_len)
    with _kept_lock:
        kept = _kept.get(key)
    if kept is not None and kept[0] == data:
        return kept[1]
    root = cache_tree_root(data, oid_len)
    with _kept_lock:
        _kept.pop(key, None)
        _kept[key] = (data, root)
        while len(_kept) > KEPT_INDEX_FILES:
            del _kept[next(iter(_kept))]
    return root


def cache_tree_root(data: bytes, oid_len: int) -> Root:
    """``(entry count, raw tree id)`` of the valid root node of the index ``data``'s
    cache tree, or None (no cache tree, an invalid root, or anything unexpected)."""
    if len(data) < 12 + oid_len or data[:4] != _SIGNATURE:
        return None
    version = int.from_bytes(data[4:8], "big")
    count = int.from_bytes(data[8:12], "big")
    if version not in _VERSIONS:
        return None
    try:
        pos = _entries_end(data, count, version, oid_len)
    except IndexError:
        return None
    if pos is None:
        return None
    return _root_from_extensions(data, pos, len(data) - oid_len, count, oid_len)


def _entries_end(data: bytes, count: int, version: int, oid_len: int) -> int | None:
    """Offset just past the last entry, or None when an entry is conflicted or odd."""
    flags_at = _STAT_BYTES + oid_len
    base = flags_at + 2
    find = data.find
    pos = 12
    if version == 4:  # prefix-compressed names: varint, then the NUL-terminated rest
        for _ in range(count):
            flags = (data[pos + flags_at] << 8) | data[pos + flags_at + 1]
            if flags & _STAGE_MASK:
                return None
            pos += base + (2 if flags & _EXTENDED else 0)
            while data[pos] & 0x80:
                pos += 1
            end = find(b"\0", pos + 1)
            if end < 0:
                return None
            pos = end + 1
        return pos
    for _ in range(count):  # versions 2 and 3: NUL-padded to a multiple of eight bytes
        flags = (data[pos + flags_at] << 8) | data[pos + flags_at + 1]
        if flags & _STAGE_MASK:
            return None
        start = base + (2 if flags & _EXTENDED else 0)
        length = flags & _NAME_MASK
        if length == _NAME_MASK:
            end = find(b"\0", pos + start)
            if end < 0:
                return None
            length = end - pos - start
        pos += (start + length + 8) & ~7
    return pos


def _root_from_extensions(data: bytes, pos: int, end: int, count: int, oid_len: int) -> Root:
    """Walk the extensions up to the trailing checksum; the TREE root when sound."""
    root = None
    while pos < end:
        if pos + 8 > end:
            return None
        signature = data[pos : pos + 4]
        size = int.from_bytes(data[pos + 4 : pos + 8], "big")
        body = pos + 8
        pos = body + size
        if pos > end or signature in _UNSUPPORTED:
            return None
        if signature == b"TREE":
            root = _tree_root(data[body:pos], oid_len)
        elif not b"A" <= signature[:1] <= b"Z":
            return None  # a required extension this reader does not know
    if pos != end or root is None or root[0] != count:
        return None
    return root


def _tree_root(body: bytes, oid_len: int) -> Root:
    """The root node: empty name, NUL, ``<entries> <subtrees>\\n``, then its id."""
    if not body.startswith(b"\0"):
        return None
    line_end = body.find(b"\n", 1)
    if line_end < 0:
        return None
    fields = body[1:line_end].split(b" ")
    if len(fields) != 2 or not all(f.isdigit() for f in fields):
        return None  # "-1": the root is invalid
    oid = body[line_end + 1 : line_end + 1 + oid_len]
    return (int(fields[0]), oid) if len(oid) == oid_len else None
