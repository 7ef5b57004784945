"""The ``staged`` and ``worktree`` lists: per path, H/I/W in P and in C (M31-M33).

For a path one observation did not list, I = H and W = H in that observation.
Because lists compare net states, a second edit of a dirty path is a change
and an edit reverted between observations is none (M33).
"""

from __future__ import annotations

from tidings.jobs.memory.changes import (
    Change,
    ChangeKind,
    as_index,
    as_worktree,
    index_change,
    main_entry,
    pair_renames,
    worktree_change,
)
from tidings.jobs.memory.commits import TreeReader
from tidings.jobs.memory.model import (
    CONFLICTED,
    INDEX_DELETED,
    INDEX_FLAGS,
    INDEX_NEW,
    INDEX_TYPECHANGE,
    WORKTREE_FLAGS,
    WT_DELETED,
    WT_NEW,
    WT_TYPECHANGE,
    IndexEntry,
    PathRecord,
    Snapshot,
    TreeEntry,
    Worktree,
)

Lists = tuple[tuple[Change, ...], tuple[Change, ...]]


class _Side:
    """One observation's view of one path."""

    def __init__(self, record: PathRecord | None, head: TreeEntry | None) -> None:
        self.index: tuple[IndexEntry, ...] = record.index if record else as_index(head)
        self.worktree: Worktree = record.worktree if record else as_worktree(head)
        flags = record.flags if record else 0
        self.index_dirty = bool(flags & (INDEX_FLAGS | CONFLICTED))
        self.worktree_dirty = bool(flags & (WORKTREE_FLAGS | CONFLICTED))
        self.conflicted = bool(record and record.conflicted)


def compare_paths(previous: Snapshot, current: Snapshot, trees: TreeReader) -> Lists:
    """M31: ``(staged, worktree)`` between P and C, renames paired (M32)."""
    staged: list[Change] = []
    worktree: list[Change] = []
    same_head = previous.head.head == current.head.head
    for raw in _compared_paths(previous, current):
        p_rec, c_rec = previous.paths.get(raw), current.paths.get(raw)
        if p_rec and c_rec and p_rec.index == c_rec.index and p_rec.worktree == c_rec.worktree:
            continue  # nothing moved at this path
        p_head = (
            p_rec.head
            if p_rec
            else (c_rec.head if same_head and c_rec else trees.entry(previous.head.head, raw))
        )
        c_head = (
            c_rec.head
            if c_rec
            else (p_rec.head if same_head and p_rec else trees.entry(current.head.head, raw))
        )
        old, new = _Side(p_rec, p_head), _Side(c_rec, c_head)
        index_moved = old.index != new.index
        worktree_moved = old.worktree != new.worktree
        if new.conflicted and (index_moved or worktree_moved):
            staged.append(_staged(raw, old, new))  # M31: a conflicted path is listed once
            continue
        if index_moved and (old.index_dirty or new.index_dirty):
            staged.append(_staged(raw, old, new))
        if worktree_moved and (old.worktree_dirty or new.worktree_dirty):
            worktree.append(_worktree(raw, old, new))
    return pair_renames(staged), pair_renames(worktree)


def _compared_paths(previous: Snapshot, current: Snapshot) -> list[bytes]:
    """Union of both maps, minus M20's tail: a path in only one map that sorts after
    the last fingerprinted path of an overflowing other map."""
    p_last, c_last = previous.last_path, current.last_path
    paths = []
    for raw in previous.paths.keys() | current.paths.keys():
        if raw not in current.paths and c_last is not None and raw > c_last:
            continue
        if raw not in previous.paths and p_last is not None and raw > p_last:
            continue
        paths.append(raw)
    return sorted(paths)


def _staged(raw: bytes, old: _Side, new: _Side) -> Change:
    old_main, new_main = main_entry(old.index), main_entry(new.index)
    return Change(
        "staged",
        raw,
        index_change(old.index, new.index),
        old_id=old_main.id if old_main else None,
        new_id=new_main.id if new_main and not new.conflicted else None,
        present=bool(new.index),
    )


def _worktree(raw: bytes, old: _Side, new: _Side) -> Change:
    return Change(
        "worktree",
        raw,
        worktree_change(old.worktree, new.worktree),
        old_id=old.worktree.id,
        new_id=new.worktree.id,
        present=new.worktree.type != "absent",
    )


def from_flags(current: Snapshot) -> Lists:
    """M28 (reobserved): C's dirty paths, classified from their status flags alone."""
    staged: list[Change] = []
    worktree: list[Change] = []
    for raw, rec in sorted(current.paths.items()):
        main = main_entry(rec.index)
        if rec.flags & CONFLICTED or rec.conflicted:
            staged.append(Change("staged", raw, "conflicted", new_id=None))
            continue
        if rec.flags & INDEX_FLAGS:
            kind = _flag_kind(rec.flags, INDEX_NEW, INDEX_DELETED, INDEX_TYPECHANGE)
            staged.append(
                Change(
                    "staged", raw, kind, new_id=main.id if main else None, present=main is not None
                )
            )
        if rec.flags & WORKTREE_FLAGS:
            kind = _flag_kind(rec.flags, WT_NEW, WT_DELETED, WT_TYPECHANGE)
            worktree.append(
                Change(
                    "worktree",
                    raw,
                    kind,
                    new_id=rec.worktree.id,
                    present=rec.worktree.type != "absent",
                )
            )
    return tuple(staged), tuple(worktree)


def _flag_kind(flags: int, new: int, deleted: int, typechange: int) -> ChangeKind:
    if flags & new:
        return "added"
    if flags & deleted:
        return "deleted"
    if flags & typechange:
        return "type_changed"
    return "modified"
