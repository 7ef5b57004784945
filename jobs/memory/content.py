"""The memory event's payload and summary (memory-inbox.md M36-M39)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Required, TypedDict

from tidings.jobs.memory import summary
from tidings.jobs.memory.changes import AREAS, Area, Change, ChangeKind
from tidings.jobs.memory.comparison import Category, Comparison
from tidings.jobs.memory.model import Identity
from tidings.jobs.memory.paths import display, display_name

#: M39: the default ``memory_standing_files``.
DEFAULT_STANDING_FILES: tuple[str, ...] = ("PERSONA.md", "SOUL.md", "MEMORY.md")


class ChangeEntry(TypedDict, total=False):
    """M36: one list entry; ``from_path`` for renames, ``escaped`` when a path was (M26)."""

    path: Required[str]
    change: Required[ChangeKind]
    area: Required[Area]
    from_path: str
    escaped: bool


#: M36: the paths listed beyond the first 20,000 changed (``from`` is a keyword).
Overflow = TypedDict("Overflow", {"from": int, "to": int})


class IdentityFields(TypedDict):
    """M15: a repository's identity as the payload names it."""

    root: str | None
    git_dir: str
    root_commit: str | None


class MemoryPayload(TypedDict):
    """M36: the memory event's payload (the JSON stored with the event)."""

    category: Category
    trigger: str
    since: str | None
    from_branch: str | None
    from_head: str | None
    from_detached: bool | None
    from_unborn: bool | None
    to_branch: str | None
    to_head: str | None
    to_detached: bool | None
    to_unborn: bool | None
    branch_moved: bool
    head_moved: bool
    history_rewritten: bool
    changes: dict[str, list[ChangeEntry]]
    more: dict[str, int]
    overflow: Overflow | None
    persona_changed: bool
    persona_paths: list[str]
    repository_replaced: bool
    reobserved: bool
    old_identity: IdentityFields | None
    new_identity: IdentityFields | None


def event_content(
    comparison: Comparison, *, trigger: str, standing_files: Sequence[str]
) -> tuple[str, MemoryPayload]:
    """``(summary, payload)`` of the event for ``comparison``: lists of at most 30 entries
    plus ``more`` counts, no bodies or diffs, the summary at most 4096 UTF-8 bytes."""
    payload = build_payload(comparison, trigger=trigger, standing_files=standing_files)
    text = summary.summary_text(
        payload, summary.header(comparison.since, comparison.current.observed_at)
    )
    return text, payload


def build_payload(
    comparison: Comparison, *, trigger: str, standing_files: Sequence[str]
) -> MemoryPayload:
    """The memory event's payload (M36): category, movements, capped change lists, persona flags."""
    c = comparison
    old, new = c.old_head, c.new_head
    lists = {"commit": c.commit, "staged": c.staged, "worktree": c.worktree}
    persona = standing_changes(c, standing_files)
    replaced = c.category == "repository_replaced"
    return {
        "category": c.category,
        "trigger": trigger,
        "since": c.since,
        "from_branch": display_name(old.branch) if old else None,
        "from_head": old.head if old else None,
        "from_detached": old.detached if old else None,
        "from_unborn": old.unborn if old else None,
        "to_branch": display_name(new.branch) if new else None,
        "to_head": new.head if new else None,
        "to_detached": new.detached if new else None,
        "to_unborn": new.unborn if new else None,
        "branch_moved": c.branch_moved,
        "head_moved": c.head_moved,
        "history_rewritten": c.history_rewritten,
        "changes": {
            area: [entry(ch) for ch in lists[area][: summary.LIST_LIMIT]] for area in AREAS
        },
        "more": {area: max(0, len(lists[area]) - summary.LIST_LIMIT) for area in AREAS},
        "overflow": None if c.overflow is None else {"from": c.overflow[0], "to": c.overflow[1]},
        "persona_changed": bool(persona),
        "persona_paths": persona,
        "repository_replaced": replaced,
        "reobserved": c.category == "reobserved",
        "old_identity": _identity(c.old_identity) if replaced else None,
        "new_identity": _identity(c.current.identity) if replaced else None,
    }


def entry(change: Change) -> ChangeEntry:
    """One list entry: ``{path, change, area}`` + ``from_path`` and ``escaped`` (M26)."""
    path, escaped = display(change.path)
    item: ChangeEntry = {"path": path, "change": change.change, "area": change.area}
    if change.from_path is not None:
        from_path, from_escaped = display(change.from_path)
        item["from_path"] = from_path
        escaped = escaped or from_escaped
    if escaped:
        item["escaped"] = True
    return item


def standing_changes(comparison: Comparison, standing_files: Sequence[str]) -> list[str]:
    """M39: standing files in any list (as path or from path; a branch move's ``commit``
    list is what differs between its heads), in the order of the setting."""
    touched: set[bytes] = set()
    for changes in (comparison.commit, comparison.staged, comparison.worktree):
        for change in changes:
            touched.add(change.path)
            if change.from_path is not None:
                touched.add(change.from_path)
    return [name for name in standing_files if name.encode("utf-8") in touched]


def _identity(identity: Identity | None) -> IdentityFields | None:
    if identity is None:
        return None
    return {
        "root": display_name(identity.root),
        "git_dir": identity.git_dir,
        "root_commit": identity.root_commit,
    }
