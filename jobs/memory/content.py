"""The memory event's payload and summary (memory-inbox.md M36-M39)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tidings.jobs.memory import summary
from tidings.jobs.memory.changes import AREAS, Change
from tidings.jobs.memory.comparison import Comparison
from tidings.jobs.memory.model import HeadState, Identity
from tidings.jobs.memory.paths import display, display_name

#: M39: the default ``memory_standing_files``.
DEFAULT_STANDING_FILES: tuple[str, ...] = ("PERSONA.md", "SOUL.md", "MEMORY.md")


def event_content(
    comparison: Comparison, *, trigger: str, standing_files: Sequence[str]
) -> tuple[str, dict[str, Any]]:
    """``(summary, payload)`` of the event for ``comparison``: lists of at most 30 entries
    plus ``more`` counts, no bodies or diffs, the summary at most 4096 UTF-8 bytes."""
    payload = build_payload(comparison, trigger=trigger, standing_files=standing_files)
    text = summary.summary_text(payload, summary.header(comparison.since,
                                                  comparison.current.observed_at))
    return text, payload


def build_payload(
    comparison: Comparison, *, trigger: str, standing_files: Sequence[str]
) -> dict[str, Any]:
    """The memory event's payload (M36): category, movements, capped change lists, persona flags."""
    c = comparison
    lists = {"commit": c.commit, "staged": c.staged, "worktree": c.worktree}
    persona = standing_changes(c, standing_files)
    replaced = c.category == "repository_replaced"
    return {
        "category": c.category,
        "trigger": trigger,
        "since": c.since,
        **_head_fields("from", c.old_head),
        **_head_fields("to", c.new_head),
        "branch_moved": c.branch_moved,
        "head_moved": c.head_moved,
        "history_rewritten": c.history_rewritten,
        "changes": {area: [entry(ch) for ch in lists[area][: summary.LIST_LIMIT]]
                    for area in AREAS},
        "more": {area: max(0, len(lists[area]) - summary.LIST_LIMIT) for area in AREAS},
        "overflow": None if c.overflow is None else {"from": c.overflow[0], "to": c.overflow[1]},
        "persona_changed": bool(persona),
        "persona_paths": persona,
        "repository_replaced": replaced,
        "reobserved": c.category == "reobserved",
        "old_identity": _identity(c.old_identity) if replaced else None,
        "new_identity": _identity(c.current.identity) if replaced else None,
    }


def entry(change: Change) -> dict[str, Any]:
    """One list entry: ``{path, change, area}`` + ``from_path`` and ``escaped`` (M26)."""
    path, escaped = display(change.path)
    item: dict[str, Any] = {"path": path, "change": change.change, "area": change.area}
    if change.from_path is not None:
        from_path, from_escaped = display(change.from_path)
        item["from_path"] = from_path
        escaped = escaped or from_escaped
    if escaped:
        item["escaped"] = True
    return item


def standing_changes(comparison: Comparison, standing_files: Sequence[str]) -> list[str]:
    """M39: standing files in any list (as path or from path) or differing between the
    heads of a branch move, in the order of the setting."""
    touched = set(comparison.branch_paths)
    for changes in (comparison.commit, comparison.staged, comparison.worktree):
        for change in changes:
            touched.add(change.path)
            if change.from_path is not None:
                touched.add(change.from_path)
    return [name for name in standing_files if name.encode("utf-8") in touched]


def _head_fields(side: str, head: HeadState | None) -> dict[str, Any]:
    return {
        f"{side}_branch": display_name(head.branch) if head else None,
        f"{side}_head": head.head if head else None,
        f"{side}_detached": head.detached if head else None,
        f"{side}_unborn": head.unborn if head else None,
    }


def _identity(identity: Identity | None) -> dict[str, Any] | None:
    if identity is None:
        return None
    return {"root": display_name(identity.root), "git_dir": identity.git_dir,
            "root_commit": identity.root_commit}
