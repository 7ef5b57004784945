"""Applying buffered records to a channel mirror (channels.md C12, C14).

Pure functions: given the current mirror and a batch of records, compute the
new mirror. The flush job around them does the locking, I/O and bookkeeping.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from tidings.jobs.channels.allowlisting import load_registry
from tidings.jobs.channels.envelope import DEFAULT_ICON, MAX_ENVELOPE_BYTES
from tidings.jobs.channels.names import SYSTEM
from tidings.store.jsonfmt import compact, utc_stamp
from tidings.store.jsonread import MAX_DEPTH, loads_or
from tidings.store.models import AgentRecord

#: C12: the retained-event bound when nothing else sets one.
DEFAULT_RETAINED = 20
#: A buffered record wraps an envelope (checked to C47's depth) in one more object.
RECORD_DEPTH = MAX_DEPTH + 1


@dataclass(frozen=True)
class Record:
    """One buffered record: ``seq`` and its JSON body."""

    seq: int
    body: dict[str, object]

    @classmethod
    def decode(cls, raw: bytes) -> Record:
        seq, _, body = raw.partition(b":")
        value = loads_or(body, {}, max_depth=RECORD_DEPTH)
        return cls(int(seq), value if isinstance(value, dict) else {})


def retained_bound(agent: AgentRecord, channel: str) -> int:
    """C12: ``system`` 20; a hook manifest's ``max_events``; the registration value; 20."""
    if channel == SYSTEM:
        return DEFAULT_RETAINED
    for manifest in load_registry(agent.root).manifests:
        if manifest.channel == channel and manifest.max_events is not None:
            return manifest.max_events
    return agent.max_events.get(channel, DEFAULT_RETAINED)


def parse_mirror(data: bytes | None) -> dict[str, object]:
    """The current mirror as an object; missing or malformed starts empty (C12)."""
    value = loads_or(data, {})
    return value if isinstance(value, dict) else {}


def _events_of(envelope: dict[str, object]) -> list[object]:
    data = envelope.get("data")
    if not isinstance(data, dict):
        data = envelope["data"] = {}
    events = data.get("events")
    if not isinstance(events, list):
        events = data["events"] = []
    return events


def _replaced(events: list[object], ref: object, event: object) -> bool:
    """C50: ``event`` takes the place of the first retained event with ``ref`` (others
    with it go); ``False`` when there is none."""
    at = [i for i, e in enumerate(events) if isinstance(e, dict) and e.get("ref_id") == ref]
    if not at:
        return False
    events[at[0]] = event
    for i in reversed(at[1:]):
        del events[i]
    return True


def _is_high(event: object) -> bool:
    return isinstance(event, dict) and "high" in (event.get("severity"), event.get("priority"))


def _ids(envelope: dict[str, object]) -> dict[str, object]:
    """The envelope's events that carry an ``event_id``, by it (the envelope untouched)."""
    data = envelope.get("data")
    events = data.get("events") if isinstance(data, dict) else None
    return {
        e["event_id"]: e
        for e in events or ()
        if isinstance(events, list) and isinstance(e, dict) and isinstance(e.get("event_id"), str)
    }


def _holds(ids: dict[str, object], event: dict[str, object]) -> bool:
    """``event`` itself (same id, same content) is among ``ids``' events."""
    event_id = event.get("event_id")
    return isinstance(event_id, str) and ids.get(event_id) == event


def dropped_by_retention(current: dict[str, object], records: list[Record]) -> int:
    """C15: how many head records of the batch the file took and then dropped as the
    oldest (C12), so that applying them again would put them back.

    After a lost AOF tail Redis has the batch's records again while the file already
    took them. One already in the file is skipped as it comes (:func:`apply_batch`); one
    retention dropped is not in the file, yet it is no newer record: it sits before the
    first record whose event is the file's oldest. Only such a head is skipped: a record
    pushed after the restart is never taken for one.
    """
    data = current.get("data")
    events = data.get("events") if isinstance(data, dict) else None
    oldest = events[0] if isinstance(events, list) and events else None
    if not isinstance(oldest, dict) or not isinstance(oldest.get("event_id"), str):
        return 0
    for i, record in enumerate(records):
        if record.body.get("op") == "append" and record.body.get("event") == oldest:
            return i
    return 0


def apply_batch(
    current: dict[str, object], records: list[Record], channel: str, bound: int, now: float
) -> dict[str, object]:
    """The mirror after ``records``, in order (C12, C14); an event already in the mirror
    (same id, same content) is not added again, nor one it dropped as the oldest (C15)."""
    envelope = copy.deepcopy(current)  # never mutate input
    appended = False
    asked_high = False
    ids = _ids(envelope)
    for record in records[dropped_by_retention(current, records) :]:
        body = record.body
        replacement = body.get("envelope")
        if body.get("op") == "replace" and isinstance(replacement, dict):
            envelope = copy.deepcopy(replacement)
            ids = _ids(envelope)
            continue
        event = body.get("event")
        if body.get("op") != "append" or not isinstance(event, dict):
            continue  # a record that cannot be read back (never written by tidings)
        events = _events_of(envelope)
        ref = event.get("ref_id")
        if _holds(ids, event) or (
            body.get("skip_if_ref_exists")
            and ref is not None
            and any(isinstance(e, dict) and e.get("ref_id") == ref for e in events)
        ):
            continue
        if body.get("replace_ref") and ref is not None and _replaced(events, ref, event):
            ids = _ids(envelope)
        else:
            events.append(event)
            if isinstance(event.get("event_id"), str):
                ids[event["event_id"]] = event
        appended = True
        asked_high = asked_high or body.get("priority") == "high"
    if appended:
        _retain(envelope, channel, bound, asked_high, now)
    return envelope


def _retain(
    envelope: dict[str, object], channel: str, bound: int, asked_high: bool, now: float
) -> None:
    events = _events_of(envelope)
    del events[: max(0, len(events) - bound)]
    _fit(envelope, events, channel)
    icon = envelope.get("icon")
    envelope["header"] = _header(len(events), channel)
    envelope["icon"] = icon if isinstance(icon, str) else DEFAULT_ICON
    envelope["priority"] = "high" if asked_high or any(map(_is_high, events)) else "normal"
    envelope["published_at"] = utc_stamp(now)


def _header(n: int, channel: str) -> str:
    return f"{n} {channel} notification(s)"


def _fit(envelope: dict[str, object], events: list[object], channel: str) -> None:
    """Drop the oldest events until the serialised mirror is within 1 MiB (C12)."""
    envelope["header"] = _header(len(events), channel)
    total = len(compact(envelope).encode("utf-8"))
    if total <= MAX_ENVELOPE_BYTES:
        return
    sizes = [len(compact(e).encode("utf-8")) + 1 for e in events]
    drop = 0
    while drop < len(events) and total > MAX_ENVELOPE_BYTES:
        total -= sizes[drop]
        drop += 1
    del events[:drop]
    while events and len(compact(envelope).encode("utf-8")) > MAX_ENVELOPE_BYTES:
        del events[0]


def summarise(envelope: dict[str, object], channel: str) -> None:
    """C36: after events were removed, recompute header and priority (C12) in place."""
    events = _events_of(envelope)
    envelope["header"] = _header(len(events), channel)
    envelope["priority"] = "high" if any(map(_is_high, events)) else "normal"
