"""The status listing: which paths differ between HEAD, index and worktree (M17, M27).

It is Git's status, computed from libgit2's two diffs (HEAD tree → index and
index → worktree, no rename detection, untracked files one by one, ignored files
left out) so the HEAD and index entries of each listed path come with it and
paths stay raw bytes. It is read once per attempt (M23).
"""

from __future__ import annotations

from dataclasses import dataclass

import pygit2
from pygit2 import C, ffi
from pygit2.enums import DeltaStatus, DiffOption
from pygit2.errors import check_error

from tidings.jobs.memory import indexfile
from tidings.jobs.memory.model import (
    CONFLICTED,
    INDEX_DELETED,
    INDEX_MODIFIED,
    INDEX_NEW,
    INDEX_TYPECHANGE,
    WT_DELETED,
    WT_MODIFIED,
    WT_NEW,
    WT_TYPECHANGE,
    WT_UNREADABLE,
    HeadState,
    IndexEntry,
    TreeEntry,
)
from tidings.jobs.memory.paths import excluded, to_str

#: The id of Git's empty tree (libgit2 knows it without reading the object database).
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

_INDEX_FLAGS = {
    DeltaStatus.ADDED: INDEX_NEW,
    DeltaStatus.DELETED: INDEX_DELETED,
    DeltaStatus.MODIFIED: INDEX_MODIFIED,
    DeltaStatus.TYPECHANGE: INDEX_TYPECHANGE,
    DeltaStatus.CONFLICTED: CONFLICTED,
}
_WORKTREE_FLAGS = {
    DeltaStatus.ADDED: WT_NEW,
    DeltaStatus.UNTRACKED: WT_NEW,
    DeltaStatus.DELETED: WT_DELETED,
    DeltaStatus.MODIFIED: WT_MODIFIED,
    DeltaStatus.TYPECHANGE: WT_TYPECHANGE,
    DeltaStatus.UNREADABLE: WT_UNREADABLE,
    DeltaStatus.CONFLICTED: CONFLICTED,
}
_HEAD_TO_INDEX = DiffOption.INCLUDE_TYPECHANGE | DiffOption.SKIP_BINARY_CHECK
_INDEX_TO_WORKTREE = (
    DiffOption.INCLUDE_TYPECHANGE
    | DiffOption.INCLUDE_UNTRACKED
    | DiffOption.RECURSE_UNTRACKED_DIRS
    | DiffOption.INCLUDE_UNREADABLE
    | DiffOption.SKIP_BINARY_CHECK
)
#: libgit2's one-letter codes of index → worktree deltas.
_WORKTREE_CODES = {
    "?": WT_NEW,
    "A": WT_NEW,
    "D": WT_DELETED,
    "M": WT_MODIFIED,
    "T": WT_TYPECHANGE,
    "X": WT_UNREADABLE,
}
#: Codes whose old side is the path's index entry.
_TRACKED_CODES = frozenset("DMTX")


@dataclass(frozen=True)
class Listed:
    """A listed path: status flags, its HEAD-tree entry and its index entries."""

    flags: int
    head: TreeEntry | None
    index: tuple[IndexEntry, ...]


StagedSide = dict[bytes, Listed]
WorktreeSide = dict[bytes, tuple[int, IndexEntry | None]]


def head_tree(repo: pygit2.Repository, head: str | None) -> pygit2.Tree:
    """The tree of commit ``head``; the empty tree for no head."""
    if head is None:
        return repo[pygit2.Oid(hex=EMPTY_TREE)].peel(pygit2.Tree)
    return repo[pygit2.Oid(hex=head)].peel(pygit2.Tree)


def read_staged(
    repo: pygit2.Repository, index: pygit2.Index, head: HeadState, index_file: str
) -> StagedSide:
    """HEAD tree → index: the paths whose index differs from HEAD, with both entries.

    Nothing, without diffing, when the index file's cache tree shows that the
    index is HEAD's tree (``index_file`` is the file ``index`` was loaded from).
    """
    tree = head_tree(repo, head.head)
    if indexfile.staged_is_empty(index_file, tree.id.raw, len(index)):
        return {}
    entries: StagedSide = {}
    for delta in index.diff_to_tree(tree, _HEAD_TO_INDEX).deltas:
        raw = delta.old_file.raw_path
        if excluded(raw):
            continue
        status = delta.status
        head_entry = None if status == DeltaStatus.ADDED else _tree_entry(delta.old_file)
        if status == DeltaStatus.CONFLICTED:
            stages = _conflict_stages(index, raw)
        elif status == DeltaStatus.DELETED:
            stages = ()
        else:
            stages = (_index_entry(0, delta.new_file),)
        entries[raw] = Listed(_INDEX_FLAGS.get(status, 0), head_entry, stages)
    return entries


def read_worktree(index: pygit2.Index, under: list[bytes] | None = None) -> WorktreeSide:
    """Index → worktree: flags and stage-0 entry of each path whose worktree differs;
    with ``under``, only the paths that are, or lie below, one of those literal paths."""
    diff = index.diff_to_workdir(_INDEX_TO_WORKTREE) if under is None else _diff_under(index, under)
    found: WorktreeSide = {}
    for delta in diff.deltas:
        code = delta.status_char()  # a plain str: far cheaper than the status enum per delta
        flags = _WORKTREE_CODES.get(code)
        if flags is None:
            flags = _WORKTREE_FLAGS.get(delta.status, 0)  # conflicted, and anything rarer
        old = delta.old_file
        raw = old.raw_path
        if raw.endswith(b"/"):
            raw = raw[:-1]  # a nested repository is listed as one directory entry (M27)
        if excluded(raw):
            continue
        entry = None
        if code in _TRACKED_CODES and old.mode:
            entry = IndexEntry(0, int(old.mode), str(old.id))
        found[raw] = (flags, entry)
    return found


def _diff_under(index: pygit2.Index, under: list[bytes]) -> pygit2.Diff:
    """``Index.diff_to_workdir`` limited to literal paths: pathspec matching disabled
    (M25), so ``[x]`` or ``*`` is only itself; libgit2 then walks only those paths."""
    options = ffi.new("git_diff_options *")
    check_error(C.git_diff_options_init(options, 1))
    options.flags = int(_INDEX_TO_WORKTREE | DiffOption.DISABLE_PATHSPEC_MATCH)
    names = [ffi.new("char[]", name) for name in under]
    strings = ffi.new("char *[]", names)
    options.pathspec.strings = strings
    options.pathspec.count = len(names)
    out = ffi.new("git_diff **")
    repo = index._repo
    if repo is None:  # privateindex binds every index it loads
        raise ValueError("the index is not bound to a repository")
    check_error(C.git_diff_index_to_workdir(out, repo._repo, index._index, options))
    diff: pygit2.Diff = pygit2.Diff.from_c(bytes(ffi.buffer(out)[:]), repo)
    return diff


def merge(staged: StagedSide, worktree: WorktreeSide, index: pygit2.Index) -> dict[bytes, Listed]:
    """The whole listing. A path listed only by the worktree side has I = H."""
    listing = dict(staged)
    for raw, (flags, entry) in worktree.items():
        known = listing.get(raw)
        if known is not None:
            listing[raw] = Listed(known.flags | flags, known.head, known.index)
        elif flags & CONFLICTED:
            listing[raw] = Listed(flags, None, _conflict_stages(index, raw))
        elif entry is None:
            listing[raw] = Listed(flags, None, ())
        else:
            listing[raw] = Listed(flags, TreeEntry(entry.mode, entry.id), (entry,))
    return listing


def _tree_entry(file: pygit2.DiffFile) -> TreeEntry | None:
    return TreeEntry(int(file.mode), str(file.id)) if file.mode else None


def _index_entry(stage: int, file: pygit2.DiffFile | pygit2.IndexEntry) -> IndexEntry:
    return IndexEntry(stage, int(file.mode), str(file.id))


def _conflict_stages(index: pygit2.Index, raw: bytes) -> tuple[IndexEntry, ...]:
    conflicts = index.conflicts
    if conflicts is None:
        return ()
    try:
        sides = conflicts[to_str(raw)]
    except KeyError:
        return ()
    return tuple(
        _index_entry(stage, entry)
        for stage, entry in enumerate(sides, start=1)
        if entry is not None
    )
