"""Text forms of inbox items: the projection's cut (M7) and ``inbox_text`` (M45)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TypedDict

#: M7: the projection's summary length in characters.
PROJECTION_SUMMARY_CHARS = 240

#: M45: the closing line with and without memory events.
CLOSING_WITH_MEMORY = (
    "Inspect the current files in your memory repository and decide what needs attention."
)
CLOSING = "Decide what needs attention."

_LINE_BREAKS = re.compile(r"\r\n|[\r\n\u2028\u2029\x0b\x0c\x85]")


def projection_summary(text: str) -> str:
    """M7: at most 240 characters (239 and an ellipsis)."""
    if len(text) <= PROJECTION_SUMMARY_CHARS:
        return text
    return text[: PROJECTION_SUMMARY_CHARS - 1] + "…"


def one_line(text: str) -> str:
    return _LINE_BREAKS.sub(" ", text)


class Listed(TypedDict):
    """What the ``[Inbox]`` block shows of one item (an inbox item has these and more)."""

    event_id: str
    source_kind: str
    summary: str


def render_inbox_text(
    items: Sequence[Listed], memory_entry: str | None = None, memory_events: int = 0
) -> str:
    """M45: the ``[Inbox]`` block of a turn's claimed items ("" when none).

    ``items`` are the claimed non-memory items in claim order; ``memory_entry`` is
    the coalesced entry of the ``memory_events`` claimed memory events, if any.
    """
    if not items and memory_entry is None:
        return ""
    count = len(items) + memory_events
    lines = [f"[Inbox] {count} {'item' if count == 1 else 'items'}:"]
    if memory_entry is not None:
        lines.append(memory_entry)
    for item in items:
        lines.append(f"- {item['event_id']} {item['source_kind']}: {one_line(item['summary'])}")
    lines.append(CLOSING_WITH_MEMORY if memory_entry is not None else CLOSING)
    return "\n".join(lines)
