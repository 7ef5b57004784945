"""One inbox entry for all memory events a turn claimed (memory-inbox.md M45)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tidings.jobs.memory import summary
from tidings.jobs.memory.changes import AREAS

_FLAGS = (
    "branch_moved",
    "head_moved",
    "history_rewritten",
    "persona_changed",
    "repository_replaced",
    "reobserved",
)
_HEAD_FIELDS = ("branch", "head", "detached", "unborn")


def render_memory_entry(events: Sequence[Mapping[str, object]]) -> str:
    """The coalesced text of ``events`` (oldest first; each with ``event_id``, ``payload``,
    ``observed_at``, ``created_at``): every event id named, lists merged by (area, path)
    with the newest entry winning, ``from_*`` of the oldest and ``to_*`` of the newest."""
    if not events:
        return ""
    payloads = [summary.mapping_of(event.get("payload")) for event in events]
    merged = merge_payloads(payloads)
    head = summary.header(
        _text(payloads[0].get("since")),
        _text(events[0].get("observed_at")),
        [str(event.get("event_id")) for event in events],
    )
    return summary.summary_text(merged, head)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def merge_payloads(payloads: Sequence[Mapping[str, object]]) -> dict[str, object]:
    oldest, newest = payloads[0], payloads[-1]
    merged: dict[str, object] = {flag: any(p.get(flag) for p in payloads) for flag in _FLAGS}
    for field in _HEAD_FIELDS:
        merged[f"from_{field}"] = oldest.get(f"from_{field}")
        merged[f"to_{field}"] = newest.get(f"to_{field}")
    changes: dict[str, list[dict[str, object]]] = {}
    more: dict[str, int] = {}
    for area in AREAS:
        latest: dict[str, dict[str, object]] = {}
        for payload in payloads:
            for item in summary.entries_of(summary.mapping_of(payload.get("changes")).get(area)):
                latest[str(item.get("path"))] = dict(item)
        entries = sorted(latest.values(), key=lambda item: str(item.get("path")))
        changes[area] = entries[: summary.LIST_LIMIT]
        hidden = sum(
            summary.count_of(summary.mapping_of(p.get("more")).get(area)) for p in payloads
        )
        more[area] = len(entries) - len(changes[area]) + hidden
    merged["changes"], merged["more"] = changes, more
    overflows = [summary.mapping_of(p["overflow"]) for p in payloads if p.get("overflow")]
    merged["overflow"] = (
        {"from": overflows[0].get("from"), "to": overflows[-1].get("to")} if overflows else None
    )
    persona: list[str] = []
    for payload in payloads:
        persona.extend(
            p for p in summary.strings_of(payload.get("persona_paths")) if p not in persona
        )
    merged["persona_paths"] = persona
    return merged
