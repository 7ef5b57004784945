"""Comparing an observation with the checkpoint (memory-inbox.md M28-M35)."""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass
from typing import Literal

import pygit2

from tidings.jobs.memory import areas
from tidings.jobs.memory.changes import Change
from tidings.jobs.memory.commits import HeadMove, TreeReader, head_move
from tidings.jobs.memory.fingerprint import RACY_WINDOW_NS
from tidings.jobs.memory.model import (
    CheckpointState,
    HeadState,
    Identity,
    Snapshot,
    TooNew,
    Unreadable,
)
from tidings.jobs.memory.repository import RepositoryUnavailable, opened

ComparisonKind = Literal["baseline", "unchanged", "refresh", "changed"]
Category = Literal["changes", "repository_replaced", "reobserved"]


@dataclass(frozen=True)
class Comparison:
    """What differs between the checkpoint P and the observation C.

    ``kind``: ``baseline`` (no checkpoint: write C, no event), ``unchanged`` (nothing
    to write), ``refresh`` (write C without an event) or ``changed`` (an event is
    due; replaced and reobserved also re-baseline). ``since`` is P's ``observed_at``.
    """

    kind: ComparisonKind
    current: Snapshot
    category: Category = "changes"
    since: str | None = None
    old_head: HeadState | None = None
    branch_moved: bool = False
    head_moved: bool = False
    history_rewritten: bool = False
    old_head_unreadable: bool = False
    commit: tuple[Change, ...] = ()
    staged: tuple[Change, ...] = ()
    worktree: tuple[Change, ...] = ()
    overflow: tuple[int, int] | None = None
    old_identity: Identity | None = None

    @property
    def changed(self) -> bool:
        return self.kind == "changed"

    @property
    def new_head(self) -> HeadState:
        return self.current.head

    def has_delta(self) -> bool:
        """Whether anything here is worth an event (M28-M34)."""
        return bool(
            self.category != "changes"
            or self.branch_moved
            or self.head_moved
            or self.commit
            or self.staged
            or self.worktree
            or self.overflow
        )


def compare(previous: CheckpointState | None, current: Snapshot, repo_path: str) -> Comparison:
    """Classify C against P. ``repo_path`` is read (never written) for HEAD trees."""
    if previous is None:
        return Comparison("baseline", current)
    if isinstance(previous, TooNew):
        raise ValueError("checkpoint_too_new: the caller must not compare it")
    if isinstance(previous, Unreadable):
        staged, worktree = areas.from_flags(current)
        return Comparison("changed", current, "reobserved", staged=staged, worktree=worktree)
    if _replaced(previous.identity, current.identity):
        return Comparison(
            "changed",
            current,
            "repository_replaced",
            since=previous.observed_at,
            old_head=previous.head,
            old_identity=previous.identity,
        )
    with ExitStack() as stack:
        repo = _open(stack, repo_path, previous, current)
        result = _changes(previous, current, repo)
    if result.has_delta():
        return result
    kind: ComparisonKind = "refresh" if _needs_refresh(previous, current) else "unchanged"
    return Comparison(kind, current, since=previous.observed_at, old_head=previous.head)


def _replaced(old: Identity, new: Identity) -> bool:
    """M28: a different work tree, git directory, or a root commit that is gone (observe
    keeps the checkpoint's root commit while it is still in the object database)."""
    if old.root != new.root or old.git_dir != new.git_dir:
        return True
    return old.root_commit is not None and old.root_commit != new.root_commit


def _open(
    stack: ExitStack, repo_path: str, previous: Snapshot, current: Snapshot
) -> pygit2.Repository | None:
    """The repository, only when the heads differ (tree lookups and diffs need it)."""
    if previous.head == current.head:
        return None
    try:
        return stack.enter_context(opened(repo_path))
    except RepositoryUnavailable:
        return None


def _changes(previous: Snapshot, current: Snapshot, repo: pygit2.Repository | None) -> Comparison:
    old, new = previous.head, current.head
    branch_moved = old.branch != new.branch or old.detached != new.detached
    head_moved = not branch_moved and old.head != new.head
    move = HeadMove((), False, False)
    if head_moved or (branch_moved and old.head != new.head):
        move = head_move(repo, old.head, new.head) if repo else HeadMove((), True, True)
    # M29/M30: a branch move lists what the switch changed between the two head trees;
    # only an unreadable old head says history was rewritten (a branch is no rewrite)
    rewritten = move.old_unreadable if branch_moved else move.history_rewritten
    staged, worktree = areas.compare_paths(previous, current, TreeReader(repo))
    overflow = None
    if (previous.overflow_count, previous.overflow_digest) != (
        current.overflow_count,
        current.overflow_digest,
    ):
        overflow = (previous.overflow_count, current.overflow_count)
    return Comparison(
        "changed",
        current,
        "changes",
        since=previous.observed_at,
        old_head=old,
        branch_moved=branch_moved,
        head_moved=head_moved,
        history_rewritten=rewritten,
        old_head_unreadable=move.old_unreadable,
        commit=move.commit,
        staged=staged,
        worktree=worktree,
        overflow=overflow,
    )


def _needs_refresh(previous: Snapshot, current: Snapshot) -> bool:
    """M19: no event, but C must be written when its records differ (a stat-only
    change) or when a file's id could not be cached under P (racy under P)."""
    if (previous.identity, previous.head, previous.overflow_count, previous.overflow_digest) != (
        current.identity,
        current.head,
        current.overflow_count,
        current.overflow_digest,
    ) or previous.paths != current.paths:
        return True
    racy_from = previous.started_ns - RACY_WINDOW_NS
    return any(
        rec.worktree.type == "file" and rec.stat is not None and rec.stat[3] >= racy_from
        for rec in current.paths.values()
    )
