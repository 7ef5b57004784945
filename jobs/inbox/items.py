"""Reading inbox items: full items for turns and the projection (memory-inbox.md M5, M7).

Reads are plain commands (no script): events are immutable and an admission read
a moment late only shows a later state. An item forgotten between the listing read
and the record read is skipped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NotRequired, TypedDict, TypeGuard

from tidings.jobs import log
from tidings.jobs.ids import is_event_id
from tidings.jobs.inbox.states import STATES, projected
from tidings.jobs.inbox.text import projection_summary
from tidings.jobs.runtime import Runtime
from tidings.store import replies
from tidings.store.errors import TidingsError
from tidings.store.inbox_keys import ADMISSION_ATTRIBUTES, InboxKeys
from tidings.store.jsonread import MAX_DEPTH, loads_or

#: M7: the default and largest projection page.
DEFAULT_PAGE, MAX_PAGE = 30, 100


#: Listing ids read per round trip while filtering by state.
_SCAN_BATCH = 200
#: A stored record wraps the admitted payload (checked to C47's depth) in one object.
RECORD_DEPTH = MAX_DEPTH + 1


class PublicItem(TypedDict):
    """M7: one item of the projection (keys in this order in the JSON)."""

    event_id: str
    source_kind: str
    state: str
    created_at: str
    summary: str
    payload: dict[str, object]
    observed_at: NotRequired[str | None]
    attempts: int
    claimed_at: str | None
    turn_id: str | None
    handled_at: str | None
    ignored_at: str | None


class Item(PublicItem):
    """M5: a full item, as a turn reads it: the projection's keys, the whole summary,
    ``seq`` (after ``observed_at``) and ``side_effect_started_at`` (after ``turn_id``)."""

    seq: int
    side_effect_started_at: str | None


class _Observed(TypedDict, total=False):
    """M5: when the memory snapshot behind an item was taken, where it has one."""

    observed_at: str | None


class _Record(TypedDict):
    """What admit stored for one event (C47: checked by :func:`_well_formed`)."""

    event_id: str
    source_kind: str
    created_at: str
    summary: str
    payload: NotRequired[dict[str, object] | None]
    observed_at: NotRequired[str | None]


def projection_state(admission: dict[str, str | None]) -> str:
    return projected(admission.get("state"), admission.get("ignored_at"))


def read_items(rt: Runtime, agent_id: str, ids: Sequence[str]) -> list[Item]:
    """The full items of ``ids`` in that order (missing ones left out)."""
    if not ids:
        return []
    k = InboxKeys(agent_id)
    fields = [f"{i}:{a}" for i in ids for a in ADMISSION_ATTRIBUTES]
    with rt.redis.pipeline(transaction=False) as pipe:
        pipe.hmget(k.events, list(ids))
        pipe.hmget(k.admissions, fields)
        events, values = pipe.execute()
    items: list[Item] = []
    width = len(ADMISSION_ATTRIBUTES)
    for n, raw in enumerate(events):
        if raw is None:
            continue
        event = loads_or(raw, None, max_depth=RECORD_DEPTH)
        if not _well_formed(event):
            log.event("inbox_record_malformed", agent_id=agent_id, event_id=ids[n])
            continue
        row = values[n * width : (n + 1) * width]
        admission = {
            a: replies.text_or_none(v) for a, v in zip(ADMISSION_ATTRIBUTES, row, strict=True)
        }
        items.append(_item(event, admission))
    return items


def _well_formed(event: object) -> TypeGuard[_Record]:
    """C47: a record read back from Redis is used only if it is what admit wrote."""
    return (
        isinstance(event, dict)
        and all(
            isinstance(event.get(f), str)
            for f in ("event_id", "source_kind", "created_at", "summary")
        )
        and isinstance(event.get("payload") or {}, dict)
    )


def _item(event: _Record, admission: dict[str, str | None]) -> Item:
    item: Item = {
        "event_id": event["event_id"],
        "source_kind": event["source_kind"],
        "state": projection_state(admission),
        "created_at": event["created_at"],
        "summary": event["summary"],
        "payload": event.get("payload") or {},
        **_observed(event),
        "seq": int(admission["seq"] or 0),
        "attempts": int(admission["attempts"] or 0),
        "claimed_at": admission["claimed_at"],
        "turn_id": admission["turn_id"],
        "side_effect_started_at": admission["side_effect_started_at"],
        "handled_at": admission["handled_at"],
        "ignored_at": admission["ignored_at"],
    }
    return item


def _observed(record: _Record | Item) -> _Observed:
    """``observed_at`` where the record has it (an admit without a snapshot has none)."""
    return {"observed_at": record["observed_at"]} if "observed_at" in record else {}


def check_query(limit: object, state: object, before: object) -> None:
    """M7's input checks; raises :class:`TidingsError` with the reason."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
        raise TidingsError(f"limit must be an integer in 1..{MAX_PAGE}", reason="invalid_limit")
    if state is not None and state not in STATES:
        raise TidingsError(f"state must be one of {', '.join(STATES)}", reason="invalid_state")
    if before is not None and not is_event_id(before):
        raise TidingsError("before must be an event id (32 hex digits)", reason="invalid_before")


def projection(
    rt: Runtime,
    agent_id: str,
    limit: int = DEFAULT_PAGE,
    state: str | None = None,
    before: str | None = None,
) -> list[PublicItem]:
    """M7: retained items newest first (``created_at``, then ``event_id``, descending)."""
    check_query(limit, state, before)
    k = InboxKeys(agent_id)
    start = 0
    if before is not None:
        rank = rt.redis.zrevrank(k.listing, before)
        if not isinstance(rank, int):
            raise TidingsError(f"no retained item {before}", reason="invalid_before")
        start = rank + 1
    page: list[PublicItem] = []
    while len(page) < limit:
        step = limit if state is None else _SCAN_BATCH
        ids = [replies.text(i) for i in rt.redis.zrevrange(k.listing, start, start + step - 1)]
        if not ids:
            break
        start += len(ids)
        for item in read_items(rt, agent_id, ids):
            if state is None or item["state"] == state:
                page.append(_public(item))
    return page[:limit]


def _public(item: Item) -> PublicItem:
    """The projection form: the 240-character summary, no internal counters."""
    return {
        "event_id": item["event_id"],
        "source_kind": item["source_kind"],
        "state": item["state"],
        "created_at": item["created_at"],
        "summary": projection_summary(item["summary"]),
        "payload": item["payload"],
        **_observed(item),
        "attempts": item["attempts"],
        "claimed_at": item["claimed_at"],
        "turn_id": item["turn_id"],
        "handled_at": item["handled_at"],
        "ignored_at": item["ignored_at"],
    }
