"""The text of a memory event, from its payload (memory-inbox.md M37-M39).

One renderer serves the event's own summary and the coalesced inbox entry
(M45), so both read alike. It never sees file bodies, diffs or commit messages,
and says what was observed, never who did it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

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
#: M29/M37: the ``commit`` list's label after a branch move.
_BRANCH_LABEL = "Changed by the branch move"
_ELLIPSIS = "…"
#: M37: a path is shortened to no fewer bytes than this (else its entry is dropped).
_MIN_PATH_BYTES = 16
#: M37: a list's last entry is shortened, not dropped, when this much room is left for it.
_MIN_ENTRY_BYTES = 32


def summary_text(payload: Mapping[str, object], header: str) -> str:
    """M37: header, notices, branch move, head move, lists, overflow, persona sentence,
    within SUMMARY_BYTES by showing fewer entries (see :func:`bounded`)."""
    lines = [header]
    if payload.get("repository_replaced"):
        lines.append(
            "The memory repository at this path was replaced by a different one; "
            "observation restarted from its current state."
        )
        lines.append(f"Now on {_position(payload, 'to')}.")
    if payload.get("reobserved"):
        lines.append(
            "The previous observation was unreadable; observation restarted from the current state."
        )
    if payload.get("branch_moved"):
        lines.append(f"Branch moved: {_position(payload, 'from')} → {_position(payload, 'to')}")
    if payload.get("head_moved"):
        where = (
            "(detached HEAD)" if payload.get("to_detached") else (f"on {payload.get('to_branch')}")
        )
        lines.append(
            f"Head moved {where}: {short(payload.get('from_head'))} → "
            f"{short(payload.get('to_head'))}"
        )
    if payload.get("history_rewritten"):
        lines.append("History rewritten; inspect with git.")
    changes, more = mapping_of(payload.get("changes")), mapping_of(payload.get("more"))
    labels = {**_LABELS, "commit": _BRANCH_LABEL} if payload.get("branch_moved") else _LABELS
    lists = [
        _List(label, entries_of(changes.get(area)), count_of(more.get(area)))
        for area, label in labels.items()
    ]
    tail = []
    overflow = mapping_of(payload.get("overflow"))
    if overflow:
        tail.append(
            f"Paths listed beyond the first 20,000 changed: {overflow.get('from')} → "
            f"{overflow.get('to')} more paths."
        )
    persona_paths = strings_of(payload.get("persona_paths"))
    if payload.get("persona_changed") and persona_paths:
        tail.append(persona_sentence(persona_paths))
    return bounded(lines, [item for item in lists if item.total], tail)


@dataclass
class _List:
    """One labelled list: the entries a payload holds and the count it left out."""

    label: str
    entries: list[Mapping[str, object]]
    more: int
    #: The entries' texts as they will be shown (the first ones, some perhaps shortened).
    shown: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.shown = [entry_text(entry) for entry in self.entries[:LIST_LIMIT]]

    @property
    def total(self) -> int:
        return len(self.entries) + self.more

    def line(self) -> str:
        hidden = self.total - len(self.shown)
        text = "; ".join(self.shown)
        if hidden:
            text = f"{text} (+{hidden} more)" if text else f"(+{hidden} more)"
        return f"{self.label}: {text}"

    def weight(self) -> int:
        return sum(len(text.encode("utf-8")) for text in self.shown)


def bounded(head: Sequence[str], lists: Sequence[_List], tail: Sequence[str]) -> str:
    """M37: the lines within SUMMARY_BYTES, meaning kept. Entries are dropped from the
    longest list (in bytes) first, its ``(+N more)`` counting every entry not shown; a
    list's last entry, when too long to fit, is shortened in the middle of its path(s).
    Only when the fixed lines and the labels with their counts alone are over the bound
    is the text cut (:func:`cap`)."""

    def render() -> str:
        return "\n".join([*head, *(item.line() for item in lists), *tail])

    text = render()
    while (excess := len(text.encode("utf-8")) - SUMMARY_BYTES) > 0:
        longest = max(lists, key=_List.weight, default=None)
        if longest is None or not longest.shown:
            return cap(text)
        if len(longest.shown) == 1:
            entry = longest.entries[0]
            room = longest.weight() - excess
            kept = _shortened_entry(entry, room) if room >= _MIN_ENTRY_BYTES else None
            if kept is not None and kept != longest.shown[0]:
                longest.shown = [kept]
                text = render()
                continue
        longest.shown.pop()
        text = render()
    return text


def _shortened_entry(entry: Mapping[str, object], room: int) -> str | None:
    """The entry's text in at most ``room`` UTF-8 bytes, its path(s) shortened in the
    middle with ``…`` (None when no shortening fits)."""
    paths = (
        ["path", "from_path"]
        if entry.get("change") == "renamed" and entry.get("from_path") is not None
        else ["path"]
    )
    full = entry_text(entry)
    budget = {key: len(str(entry.get(key)).encode("utf-8")) for key in paths}
    while True:
        over = len(full.encode("utf-8")) - room
        if over <= 0:
            return full
        for key in paths:  # the longest path gives up the bytes
            if budget[key] == max(budget.values()):
                budget[key] -= over
                break
        if min(budget.values()) < _MIN_PATH_BYTES:
            return None
        shortened = {
            **entry,
            **{key: middle_cut(str(entry.get(key)), budget[key]) for key in paths},
        }
        full = entry_text(shortened)


def middle_cut(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` UTF-8 bytes: its start and end around ``…``, cut on
    code-point boundaries."""
    if len(text.encode("utf-8")) <= limit:
        return text
    room = limit - len(_ELLIPSIS.encode("utf-8"))
    start: list[str] = []
    end: list[str] = []
    used, low, high = 0, 0, len(text) - 1
    while low <= high:
        take_start = len(start) <= len(end)
        char = text[low] if take_start else text[high]
        size = len(char.encode("utf-8"))
        if used + size > room:
            break
        used += size
        if take_start:
            start.append(char)
            low += 1
        else:
            end.append(char)
            high -= 1
    return "".join(start) + _ELLIPSIS + "".join(reversed(end))


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
