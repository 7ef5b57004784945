"""What moved between two heads: the ``commit`` area and rewritten history (M29, M30)."""

from __future__ import annotations

from dataclasses import dataclass

import pygit2
from pygit2.enums import DeltaStatus, DiffOption

from tidings.jobs.memory.changes import UNKNOWN, Change, ChangeKind
from tidings.jobs.memory.git_status import head_tree
from tidings.jobs.memory.model import TreeEntry
from tidings.jobs.memory.paths import excluded, to_str

_KINDS: dict[DeltaStatus, ChangeKind] = {
    DeltaStatus.ADDED: "added",
    DeltaStatus.COPIED: "added",
    DeltaStatus.DELETED: "deleted",
    DeltaStatus.MODIFIED: "modified",
    DeltaStatus.RENAMED: "renamed",
    DeltaStatus.TYPECHANGE: "type_changed",
}
_TREE_DIFF = DiffOption.INCLUDE_TYPECHANGE | DiffOption.SKIP_BINARY_CHECK
_READ_ERRORS = (KeyError, ValueError, pygit2.GitError)


@dataclass(frozen=True)
class HeadMove:
    """The ``commit`` list of a head move; ``old_unreadable`` when the old head is gone."""

    commit: tuple[Change, ...]
    history_rewritten: bool
    old_unreadable: bool


def head_move(repo: pygit2.Repository, old: str | None, new: str | None) -> HeadMove:
    """M29: the tree-to-tree diff old head → new head (a missing head is the empty tree),
    renames by libgit2's similarity detection with default settings."""
    try:
        old_tree = head_tree(repo, old)
    except _READ_ERRORS:
        return HeadMove((), True, True)
    new_tree = head_tree(repo, new)
    diff = old_tree.diff_to_tree(new_tree, _TREE_DIFF)
    diff.find_similar()
    changes = []
    for delta in diff.deltas:
        kind = _KINDS.get(delta.status)
        path = (
            delta.new_file.raw_path
            if delta.status != DeltaStatus.DELETED
            else (delta.old_file.raw_path)
        )
        if kind is None or excluded(path):
            continue
        changes.append(
            Change(
                "commit",
                path,
                kind,
                from_path=delta.old_file.raw_path if kind == "renamed" else None,
                old_id=None if kind == "added" else str(delta.old_file.id),
                new_id=None if kind == "deleted" else str(delta.new_file.id),
                present=kind != "deleted",
            )
        )
    changes.sort(key=lambda c: c.path)
    return HeadMove(tuple(changes), _rewritten(repo, old, new), False)


def _rewritten(repo: pygit2.Repository, old: str | None, new: str | None) -> bool:
    """M30: the old head is not an ancestor of the new one."""
    if old is None:
        return False
    if new is None:
        return True
    return not repo.descendant_of(pygit2.Oid(hex=new), pygit2.Oid(hex=old))


class TreeReader:
    """HEAD-tree entries of single paths, for paths one observation did not list."""

    def __init__(self, repo: pygit2.Repository | None) -> None:
        self._repo = repo
        self._trees: dict[str | None, pygit2.Tree | None] = {}

    def entry(self, head: str | None, raw: bytes) -> TreeEntry | None:
        tree = self._tree(head)
        if tree is None:
            return UNKNOWN
        try:
            found = tree[to_str(raw)]
        except (KeyError, ValueError):
            return None
        return TreeEntry(int(found.filemode), str(found.id))

    def _tree(self, head: str | None) -> pygit2.Tree | None:
        if head not in self._trees:
            try:
                self._trees[head] = None if self._repo is None else head_tree(self._repo, head)
            except _READ_ERRORS:
                self._trees[head] = None
        return self._trees[head]
