"""The text of a memory event, from its payload (memory-inbox.md M37-M39).

One renderer serves the event's own summary and the coalesced inbox entry
(M45), so both read alike. It never sees file bodies, diffs or commit messages,
and says what was observed, never who did it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

from tidings.jobs.summary_cap import SUMMARY_BYTES, TRUNCATION_MARK, cap

__all__ = ["SUMMARY_BYTES", "TRUNCATION_MARK", "cap", "summary_text"]

#: M36/M37: entries shown per list.
LIST_LIMIT = 30
#: M37: commit ids are shown with this many hex digits.
SHORT_ID = 12
PERSONA_SENTENCE = (
    "{paths} changed on disk; the current session keeps its frozen persona and new "
    "sessions get the new version."
)
#: What a file name must not be able to imitate in a list line (M26).
_SPOOFING = re.compile(r'; |: | → |\(\+\d+ more\)|^"')
_LABELS = {"commit": "Committed", "staged": "Staged", "worktree": "Worktree"}


def summary_text(payload: Mapping[str, object], header: str) -> str:
    """M37: header, notices, branch move, head move, lists, overflow, persona sentence."""
    lines = [header]
    if payload.get("repository_replaced"):
        lines.append("The memory repository at this path was replaced by a different one; "
                     "observation restarted from its current state.")
        lines.append(f"Now on {_position(payload, 'to')}.")
    if payload.get("reobserved"):
        lines.append("The previous observation was unreadable; observation restarted from "
                     "the current state.")
    if payload.get("branch_moved"):
        lines.append(f"Branch moved: {_position(payload, 'from')} → {_position(payload, 'to')}")
    if payload.get("head_moved"):
        where = "(detached HEAD)" if payload.get("to_detached") else (
            f"on {payload.get('to_branch')}"
        )
        lines.append(f"Head moved {where}: {short(payload.get('from_head'))} → "
                     f"{short(payload.get('to_head'))}")
    if payload.get("history_rewritten"):
        lines.append("History rewritten; inspect with git.")
    changes, more = mapping_of(payload.get("changes")), mapping_of(payload.get("more"))
    for area, label in _LABELS.items():
        line = list_line(label, entries_of(changes.get(area)), count_of(more.get(area)))
        if line:
            lines.append(line)
    overflow = mapping_of(payload.get("overflow"))
    if overflow:
        lines.append(f"Paths listed beyond the first 20,000 changed: {overflow.get('from')} → "
                     f"{overflow.get('to')} more paths.")
    persona_paths = strings_of(payload.get("persona_paths"))
    if payload.get("persona_changed") and persona_paths:
        lines.append(persona_sentence(persona_paths))
    return cap("\n".join(lines))


def mapping_of(value: object) -> Mapping[str, object]:
    """A payload's JSON object field (an empty one where it is absent or not an object)."""
    return value if isinstance(value, Mapping) else {}


def entries_of(value: object) -> list[Mapping[str, object]]:
    """A payload's list of change entries (the objects in it; none where it is absent)."""
    return [e for e in value if isinstance(e, Mapping)] if isinstance(value, list) else []


def strings_of(value: object) -> list[str]:
    """A payload's list of paths (the strings in it; none where it is absent)."""
    return [s for s in value if isinstance(s, str)] if isinstance(value, list) else []


def count_of(value: object) -> int:
    """A payload's count (0 where it is absent or not a number: stored data fails open)."""
    if not isinstance(value, int | float | str) or not value:
        return 0
    try:
        return int(value)
    except (ValueError, OverflowError):
        return 0


def header(since: str | None, observed_at: str | None, event_ids: Sequence[str] = ()) -> str:
    ids = f" (events {', '.join(event_ids)})" if event_ids else ""
    if since:
        return f"Memory repository changes observed since {since}{ids}:"
    return f"Memory repository changes observed at {observed_at}{ids}:"


def list_line(label: str, entries: Sequence[Mapping[str, object]], more: int) -> str | None:
    """``Label: entry; entry (+N more)`` with at most LIST_LIMIT entries."""
    shown = list(entries)[:LIST_LIMIT]
    hidden = len(entries) - len(shown) + more
    if not shown and not hidden:
        return None
    text = "; ".join(entry_text(entry) for entry in shown)
    if hidden:
        text = f"{text} (+{hidden} more)" if text else f"(+{hidden} more)"
    return f"{label}: {text}"


def entry_text(entry: Mapping[str, object]) -> str:
    if entry.get("change") == "renamed" and entry.get("from_path") is not None:
        return f"renamed {quoted(entry['from_path'])} → {quoted(entry['path'])}"
    return f"{entry.get('change')} {quoted(entry.get('path'))}"


def quoted(path: object) -> str:
    """M26: a display path in JSON string form when it could read as more than one entry
    (it holds a separator of the line, a leading or trailing space, a rename arrow, a
    ``(+N more)`` tail, or starts with a quote); otherwise as it is."""
    text = str(path)
    if _SPOOFING.search(text) or text != text.strip(" "):
        return json.dumps(text, ensure_ascii=False)
    return text


def persona_sentence(paths: Sequence[str]) -> str:
    return PERSONA_SENTENCE.format(paths=", ".join(paths))


def short(commit: object) -> str:
    return str(commit)[:SHORT_ID] if commit else "(none)"


def _position(payload: Mapping[str, object], side: str) -> str:
    head = payload.get(f"{side}_head")
    if payload.get(f"{side}_detached"):
        return f"detached HEAD at {short(head)}"
    branch = payload.get(f"{side}_branch")
    if payload.get(f"{side}_unborn") or not head:
        return f"{branch} (no commits)"
    return f"{branch} at {short(head)}"

