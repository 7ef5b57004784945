"""Capping the attention lane (block-cap.md B6, B7, B12-B14, B18).

:func:`cap_lane` is pure apart from the spiller it is given: a lane within the
cap comes back as the very same object; a larger one is spilled first and then
compacted in fixed stages, each built afresh from the original (inputs are
never mutated), until one measures within the cap.

Below the 2,048 floor (never used in production, but the function takes any
cap) the final guard of B13 may still be too long; then the lane degrades to
``{"overflow": <guard marker>}``, ``{"overflow": {"truncated": true}}`` and
finally ``{}``, the smallest lane there is (2 characters).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import NotRequired, TypedDict

from tidings.jobs.cap import ruler as cap_ruler
from tidings.jobs.cap.spill import ATTENTION_STEM, Spill, Spiller, SpillRequest

#: B12: compaction budgets, tried in order.
BUDGETS = (200, 100, 50, 0)
#: B12: what a shortened string ends with.
ELLIPSIS = "..."
#: B12: keys whose string values are shortened.
HEAVY_KEYS = frozenset(
    {"text", "message", "body", "preview", "content", "summary", "caption", "detail", "instruction"}
)
#: B13: the keys a routing stub keeps (their values are never shortened either).
ROUTING_KEYS = frozenset(
    {"count", "email_ids", "message_ref", "event_id", "event_ids", "ref", "ref_id", "message_ids"}
)
#: B13 step 4: routing id lists are cut to this head.
ID_HEAD = 8
ID_LISTS = frozenset({"email_ids", "message_ids"})
#: B7: the lane-level keys (never channel names, channels.md C7).
MARKER_KEY, COMMENT_KEY = "overflow", "comment"
#: The smallest lane that can be returned: ``{}``.
SMALLEST_LANE = 2

COMMENT_SPILLED = (
    "Full notification content exceeds the attention block size cap; read {path} for the "
    "complete payload."
)
COMMENT_NOT_SPILLED = (
    "Full notification content exceeds the attention block size cap and the overflow file "
    "could not be written — use the producer tool for the full content."
)
COMMENT_PATH_OMITTED = (
    "Full notification content exceeds the attention block size cap; the spill path is "
    "omitted (too long for the cap) - read logs/{name} in the agent workdir, or use the "
    "producer tool."
)

#: A lane: channel (or lane-level key) → payload; payloads are the producer's open JSON.
Lane = dict[str, object]
#: One level of a payload object, as the B13 steps rebuild it.
Part = dict[object, object]
_CONTAINERS = (dict, list, tuple)


class Marker(TypedDict):
    """B7: the lane-level ``overflow`` marker; the B13 guard forms add the optional keys."""

    path: str | None
    full_chars: int
    truncated: bool
    spill_failed: NotRequired[bool]
    path_omitted: NotRequired[bool]
    spill_file: NotRequired[str]
    digest: NotRequired[str]


def cut(text: str, budget: int) -> str:
    """B12: the first ``budget`` characters and ``...``; nothing at budget 0."""
    return text[:budget] + ELLIPSIS if budget else ""


def shorten(value: object, budget: int) -> object:
    """B12: a copy of ``value`` with heavy strings over ``budget`` cut and their existing
    ``<field>_truncated`` flags set; routing values are kept as they are."""
    if isinstance(value, dict):
        out: Part = {}
        cut_fields: list[str] = []
        for key, item in value.items():
            if key in ROUTING_KEYS:
                out[key] = item
            elif key in HEAVY_KEYS and isinstance(item, str) and len(item) > budget:
                out[key] = cut(item, budget)
                cut_fields.append(key)
            else:
                out[key] = shorten(item, budget)
        for field in cut_fields:
            if f"{field}_truncated" in out:
                out[f"{field}_truncated"] = True
        return out
    if isinstance(value, list | tuple):
        return [shorten(item, budget) if isinstance(item, _CONTAINERS) else item for item in value]
    return value


def marker(spill: Spill, full_chars: int) -> Marker:
    """B7: the lane-level ``overflow`` marker."""
    out: Marker = {"path": spill.path, "full_chars": full_chars, "truncated": True}
    if not spill.ok:
        out["spill_failed"] = True
    return out


def _with_marker(entries: Mapping[str, object], overflow: Marker, comment: str | None) -> Lane:
    out = dict(entries)
    out[MARKER_KEY] = overflow
    if comment is None:
        out.pop(COMMENT_KEY, None)
    else:
        out[COMMENT_KEY] = comment
    return out


def _routing_part(part: Part) -> Part:
    return {k: v for k, v in part.items() if k in ROUTING_KEYS}


def routing_stub(payload: object) -> object:
    """B13: an object keeps its routing keys and its ``data`` object's routing keys."""
    if not isinstance(payload, dict):
        return payload
    return {
        k: (_routing_part(v) if k == "data" else v)
        for k, v in payload.items()
        if k in ROUTING_KEYS or (k == "data" and isinstance(v, dict))
    }


def _drop(keys: frozenset[str]) -> Callable[[Part], Part]:
    return lambda part: {k: v for k, v in part.items() if k not in keys}


def _head_ids(part: Part) -> Part:
    return {
        k: (list(v[:ID_HEAD]) if k in ID_LISTS and isinstance(v, list | tuple) else v)
        for k, v in part.items()
    }


#: B13 steps 1-5, applied to every entry's top level and its ``data``.
ROUTING_STEPS: tuple[Callable[[Part], Part], ...] = (
    _drop(frozenset({"ref", "ref_id"})),
    _drop(frozenset({"event_id", "event_ids"})),
    _drop(frozenset({"message_ref"})),
    _head_ids,
    _drop(frozenset({"count"})),
)


def _apply(step: Callable[[Part], Part], payload: object) -> object:
    if not isinstance(payload, dict):
        return payload
    out = step(payload)
    data = out.get("data")
    if isinstance(data, dict):
        out["data"] = step(data)
    return out


def _shortened(channels: Lane, budget: int) -> Lane:
    """:func:`shorten` over the whole lane (a dict in, so a dict out)."""
    out = shorten(channels, budget)
    return out if isinstance(out, dict) else channels


def _compacted(lane: Lane, overflow: Marker, comment: str) -> Iterator[Lane]:
    """B12 stages, then B13's stub and steps 1-6, smallest last."""
    channels = {k: v for k, v in lane.items() if k not in (MARKER_KEY, COMMENT_KEY)}
    for budget in BUDGETS:
        yield _with_marker(_shortened(channels, budget), overflow, comment)
    entries = {name: routing_stub(payload) for name, payload in channels.items()}
    yield _with_marker(entries, overflow, comment)
    for step in ROUTING_STEPS:
        entries = {name: _apply(step, payload) for name, payload in entries.items()}
        yield _with_marker(entries, overflow, comment)
    yield _with_marker(entries, overflow, None)


def _envelopes(spill: Spill, digest8: str, overflow: Marker) -> Iterator[Lane]:
    """B13 steps 7-8, then the sub-floor degradations."""
    yield {MARKER_KEY: overflow}
    guard = overflow.copy()
    guard["path"], guard["path_omitted"] = None, True
    if spill.name is not None:
        guard["spill_file"] = spill.name
        name = spill.name
    else:
        guard["digest"] = digest8
        name = f"{ATTENTION_STEM}{digest8}.json"
    yield {MARKER_KEY: guard, COMMENT_KEY: COMMENT_PATH_OMITTED.format(name=name)}
    yield {MARKER_KEY: guard}
    yield {MARKER_KEY: {"truncated": True}}


def cap_lane(lane: Lane, cap: int, spiller: Spiller) -> Lane:
    """B6-B18: ``lane`` itself when it fits ``cap``, else its spilled and compacted form."""
    limit = max(cap, SMALLEST_LANE)
    try:
        ruler = cap_ruler.ruler_text(lane)
    except cap_ruler.Unserialisable:
        return lane  # B5: measures 0, never spilled
    if len(ruler) <= limit:
        return lane
    request = SpillRequest(lane, ruler)
    spill = spiller(request)
    overflow = marker(spill, len(ruler))
    comment = COMMENT_SPILLED.format(path=spill.path) if spill.ok else COMMENT_NOT_SPILLED
    try:
        for candidate in _compacted(lane, overflow, comment):
            if cap_ruler.measure(candidate) <= limit:
                return candidate
    except RecursionError:
        pass  # nested too deep to rebuild: the envelopes below still fit
    for candidate in _envelopes(spill, request.digest[:8], overflow):
        if cap_ruler.measure(candidate) <= limit:
            return candidate
    return {}
