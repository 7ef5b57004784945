"""Change entries and how they are sorted, paired and classified (memory-inbox.md M32)."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Literal

from tidings.jobs.memory.model import IndexEntry, TreeEntry, Worktree, WorktreeType

Area = Literal["commit", "staged", "worktree"]
ChangeKind = Literal["added", "deleted", "modified", "type_changed", "renamed", "conflicted"]
AREAS: tuple[Area, ...] = ("commit", "staged", "worktree")

#: A HEAD-tree entry that could not be read (its commit is gone): equal to nothing.
UNKNOWN = TreeEntry(0, "")


@dataclass(frozen=True)
class Change:
    """One entry of an area's list. ``new_id`` is the path's id in the area after the
    change (None: absent, or no single id); ``present`` whether anything is there."""

    area: Area
    path: bytes
    change: ChangeKind
    from_path: bytes | None = None
    old_id: str | None = None
    new_id: str | None = None
    present: bool = True


def mode_type(mode: int) -> WorktreeType:
    if mode in (0o100644, 0o100755, 0o100664):
        return "file"
    if mode == 0o120000:
        return "symlink"
    if mode == 0o160000:
        return "gitlink"
    if mode == 0o040000:
        return "directory"
    return "other"


def as_index(entry: TreeEntry | None) -> tuple[IndexEntry, ...]:
    """M31: where a path is not listed, its index is its HEAD entry."""
    return () if entry is None else (IndexEntry(0, entry.mode, entry.id),)


def as_worktree(entry: TreeEntry | None) -> Worktree:
    """M31: where a path is not listed, its worktree is its HEAD entry."""
    if entry is None:
        return Worktree("absent", 0, None)
    return Worktree(mode_type(entry.mode), entry.mode, entry.id)


def main_entry(index: tuple[IndexEntry, ...]) -> IndexEntry | None:
    """The entry that stands for the path: stage 0, else "ours" (2), else any."""
    by_stage = {entry.stage: entry for entry in index}
    return by_stage.get(0) or by_stage.get(2) or (index[0] if index else None)


def index_change(old: tuple[IndexEntry, ...], new: tuple[IndexEntry, ...]) -> ChangeKind:
    if any(entry.stage for entry in new):
        return "conflicted"
    old_main, new_main = main_entry(old), main_entry(new)
    if old_main is None:
        return "added"
    if new_main is None:
        return "deleted"
    return _kind(old_main.mode, new_main.mode)


def worktree_change(old: Worktree, new: Worktree) -> ChangeKind:
    if old.type == "absent":
        return "added"
    if new.type == "absent":
        return "deleted"
    if old.mode == 0 or new.mode == 0 or old.type == new.type:
        return "modified"
    return "type_changed"


def _kind(old_mode: int, new_mode: int) -> ChangeKind:
    if old_mode == 0 or new_mode == 0 or mode_type(old_mode) == mode_type(new_mode):
        return "modified"
    return "type_changed"


def pair_renames(entries: Iterable[Change]) -> tuple[Change, ...]:
    """M32 (staged, worktree): a deleted and an added entry with the same id are one
    ``renamed`` entry, pairing in ascending path order; the result is sorted by path."""
    ordered = sorted(entries, key=lambda c: c.path)
    added: dict[str, deque[Change]] = {}
    for change in ordered:
        if change.change == "added" and change.new_id:
            added.setdefault(change.new_id, deque()).append(change)
    renamed: dict[bytes, Change] = {}
    for change in ordered:
        candidates = added.get(change.old_id or "") if change.change == "deleted" else None
        if candidates:
            target = candidates.popleft()
            renamed[target.path] = replace(
                target, change="renamed", from_path=change.path, old_id=change.old_id
            )
            renamed[change.path] = change  # marks the deleted half as consumed
    result = []
    for change in ordered:
        pair = renamed.get(change.path)
        if pair is None:
            result.append(change)
        elif pair.change == "renamed":
            result.append(pair)
    return tuple(result)
