"""The agent's own changes, absorbed at the end of its turn (memory-inbox.md M49)."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass, replace

import pygit2
from pygit2.enums import SortMode

from tidings.jobs.memory.changes import Change
from tidings.jobs.memory.comparison import Comparison
from tidings.jobs.memory.paths import display_name, display_text
from tidings.jobs.memory.repository import RepositoryUnavailable, opened

#: M49: commits walked when matching ``owned["commits"]``.
MAX_OWNED_COMMITS = 1_000


@dataclass(frozen=True)
class Owned:
    """A validated ``owned`` argument."""

    paths: Mapping[str, str | None]
    commits: frozenset[str]
    has_branch: bool
    branch: str | None


def parse_owned(owned: Mapping[str, object]) -> Owned:
    """Validate ``{"paths": {display path: blob id | None}, "commits": [ids], "branch":
    name | None}`` (every key optional); raise ValueError on anything else."""
    if not isinstance(owned, Mapping) or set(owned) - {"paths", "commits", "branch"}:
        raise ValueError("owned must be an object with paths, commits and branch")
    paths = owned.get("paths", {})
    commits = owned.get("commits", [])
    branch = owned.get("branch")
    if not isinstance(paths, Mapping) or not all(
        isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in paths.items()
    ):
        raise ValueError("owned.paths must map paths to blob ids or null")
    if not isinstance(commits, list | tuple) or not all(isinstance(c, str) for c in commits):
        raise ValueError("owned.commits must be a list of commit ids")
    if branch is not None and not isinstance(branch, str):
        raise ValueError("owned.branch must be a branch name or null")
    return Owned(
        paths={k: None if v is None else v.lower() for k, v in paths.items()},
        commits=frozenset(c.lower() for c in commits),
        has_branch="branch" in owned,
        branch=branch,
    )


def split_owned(comparison: Comparison, owned: Mapping[str, object], repo_path: str) -> Comparison:
    """M49: ``comparison`` without the changes ``owned`` claims; ``kind`` becomes
    ``refresh`` when nothing is left. Replacement, reobserved and overflow are never owned."""
    if not comparison.changed or comparison.category != "changes":
        return comparison
    spec = parse_owned(owned)
    result = replace(
        comparison,
        staged=tuple(c for c in comparison.staged if not _path_owned(c, spec)),
        worktree=tuple(c for c in comparison.worktree if not _path_owned(c, spec)),
    )
    new_head = comparison.new_head
    if (
        result.branch_moved
        and spec.has_branch
        and spec.branch == (None if new_head.detached else display_name(new_head.branch))
    ):
        result = replace(
            result,
            branch_moved=False,
            history_rewritten=False,
            old_head_unreadable=False,
            commit=(),
        )
    old_head = comparison.old_head.head if comparison.old_head else None
    if result.head_moved and _commits_owned(repo_path, old_head, new_head.head, spec.commits):
        result = replace(
            result, head_moved=False, history_rewritten=False, old_head_unreadable=False, commit=()
        )
    if not result.has_delta():
        result = replace(result, kind="refresh")
    return result


def _path_owned(change: Change, spec: Owned) -> bool:
    """Owned when the path (and a rename's source) is claimed with its new id there."""
    if not _claims(spec, change.path, change.new_id if change.present else None, change.present):
        return False
    return change.from_path is None or _claims(spec, change.from_path, None, False)


def _claims(spec: Owned, raw: bytes, new_id: str | None, present: bool) -> bool:
    key = display_text(raw)
    if key not in spec.paths:
        return False
    claimed = spec.paths[key]
    if present:
        return new_id is not None and claimed == new_id
    return claimed is None


def _commits_owned(
    repo_path: str, old: str | None, new: str | None, commits: frozenset[str]
) -> bool:
    """The new head and every commit reachable from it but not from the old head."""
    if new is None or new not in commits:
        return False
    try:
        with opened(repo_path) as repo:
            walker = repo.walk(pygit2.Oid(hex=new), SortMode.TOPOLOGICAL)
            if old is not None:
                # The old head may be gone; then every commit reachable from the new one counts.
                with suppress(KeyError, ValueError, pygit2.GitError):
                    walker.hide(pygit2.Oid(hex=old))
            for walked, commit in enumerate(walker, start=1):
                if walked > MAX_OWNED_COMMITS or str(commit.id) not in commits:
                    return False
    except (RepositoryUnavailable, KeyError, ValueError, pygit2.GitError):
        return False
    return True
