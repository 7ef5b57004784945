"""The generic durable inbox: admit, ignore and recovery (memory-inbox.md M1-M9, M51).

Every change is one Lua script on the agent's hash-tagged keys (M9). Bad input
answers with a reason and writes nothing.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Literal, Required, TypedDict

from tidings.jobs import metrics
from tidings.jobs.ids import is_event_id, new_uuid7
from tidings.jobs.runtime import Runtime
from tidings.jobs.summary_cap import cap
from tidings.store import rates
from tidings.store.jsonfmt import compact, utc_stamp_ms
from tidings.store.jsonread import encodable, input_problem
from tidings.store.reasons import Reason
from tidings.store.scripts import inbox as inbox_scripts

#: M8: open (non-terminal) items per agent, and terminal items retained.
MAX_OPEN = 10_000
MAX_TERMINAL = 1_000
#: M3: the largest generic payload, serialised.
MAX_PAYLOAD_BYTES = 65_536
#: M3: the longest idempotency key.
MAX_KEY_CHARS = 200
#: M3: what a ``source_kind`` looks like; the memory kind is tidings' own.
SOURCE_KIND_RE = re.compile(r"[a-z][a-z0-9._-]{0,63}")
MEMORY_SOURCE_KIND = "memory-change"


class InboxError(TypedDict, total=False):
    """An inbox call's refusal; ``event_id`` repeats the id asked about, if any."""

    status: Required[Literal["error"]]
    reason: Required[Reason]
    message: Required[str]
    event_id: object


class Admitted(TypedDict, total=False):
    """M3, M4: ``admit``'s answer (``duplicate``: the key was seen; ``truncated``: the
    summary was cut as M37 cuts)."""

    status: Required[Literal["ok"]]
    event_id: Required[str | None]
    state: Literal["pending"]
    woke: bool
    duplicate: bool
    truncated: bool


class Ignored(TypedDict):
    """M6: ``ignore``'s answer (``changed``: false when it was ignored already)."""

    status: Literal["ok"]
    event_id: str
    state: Literal["ignored"]
    changed: bool


def error(reason: Reason, message: str, **about: object) -> InboxError:
    """``about``: at most ``event_id``, repeated as given (even ``None``)."""
    out: InboxError = {"status": "error", "reason": reason, "message": message}
    if "event_id" in about:
        out["event_id"] = about["event_id"]
    return out


def key_digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def _check(source_kind: object, summary: object, payload: object, key: object) -> InboxError | None:
    if not isinstance(source_kind, str) or not SOURCE_KIND_RE.fullmatch(source_kind):
        return error("invalid_source_kind", "source_kind must match ^[a-z][a-z0-9._-]{0,63}$")
    if source_kind == MEMORY_SOURCE_KIND:
        return error("reserved_source_kind", "memory-change events are admitted by tidings only")
    if not isinstance(summary, str) or not summary:
        return error("invalid_summary", "summary must be a non-empty string")
    if not encodable(summary):
        return error("invalid_summary", "not valid Unicode")
    if payload is not None:
        if not isinstance(payload, dict):
            return error("invalid_payload", "payload must be null or a JSON object")
        problem = input_problem(payload, "payload", max_bytes=MAX_PAYLOAD_BYTES)
        if problem is not None:
            return error(
                "payload_too_large" if problem.reason == "too_large" else "invalid_payload",
                problem.message,
            )
    if key is not None and (not isinstance(key, str) or not 1 <= len(key) <= MAX_KEY_CHARS):
        return error("invalid_key", "key must be a non-empty string of at most 200 characters")
    if key is not None and not encodable(key):
        return error("invalid_key", "not valid Unicode")
    return None


def admit(
    rt: Runtime,
    agent_id: str,
    source_kind: str,
    summary: str,
    payload: Mapping[str, object] | None = None,
    wake: bool = False,
    key: str | None = None,
    *,
    event_id: str | None = None,
) -> Admitted | InboxError:
    """M3/M4: admit one application event; ``event_id`` is minted here unless replayed."""
    problem = _check(source_kind, summary, payload, key)
    if problem is None and not isinstance(wake, bool):
        problem = error("invalid_wake", "wake must be true or false")
    if problem is not None:
        return problem
    event_id = event_id or new_uuid7()
    now = rt.clock.now()
    created_at = utc_stamp_ms(now)
    text = cap(summary)  # M3: cut as in M37
    event = {
        "event_id": event_id,
        "source_kind": source_kind,
        "created_at": created_at,
        "summary": text,
        "payload": payload or {},
    }
    wake_entry = {"kind": "inbox", "agent_id": agent_id, "at": created_at, "event_id": event_id}
    admitted = inbox_scripts.admit(
        rt.scripts,
        agent_id,
        event_id=event_id,
        event_json=compact(event),
        created_ms=int(now * 1000),
        key_digest=key_digest(key) if key else None,
        open_bound=MAX_OPEN,
        wake_entry_json=compact(wake_entry) if wake else None,
    )
    if admitted.outcome == "duplicate":
        return {"status": "ok", "event_id": admitted.existing, "duplicate": True}
    if admitted.outcome == "inbox_full":
        return error("inbox_full", f"the inbox holds {MAX_OPEN} open items")
    metrics.items_entered("pending")
    if wake:
        rates.count(rt.control, rates.WAKES, 1, now)
    result: Admitted = {"status": "ok", "event_id": event_id, "state": "pending", "woke": wake}
    if text != summary:
        result["truncated"] = True
    return result


def ignore(rt: Runtime, agent_id: str, event_id: object) -> Ignored | InboxError:
    """M6: move a pending, deferred or processing item to ``ignored``."""
    if not is_event_id(event_id):
        return error("not_found", "no such item (an event id is 32 hex digits)", event_id=event_id)
    now = rt.clock.now()
    ignored = inbox_scripts.ignore(
        rt.scripts,
        agent_id,
        event_id=event_id,
        now_iso=utc_stamp_ms(now),
        now_ms=int(now * 1000),
        terminal_kept=MAX_TERMINAL,
    )
    if ignored.outcome == "not_found":
        return error("not_found", f"no retained item {event_id}", event_id=event_id)
    if ignored.outcome == "not_ignorable":
        return error(
            "not_ignorable", f"a {ignored.previous} item cannot be ignored", event_id=event_id
        )
    metrics.items_entered("ignored", int(ignored.outcome == "ok"))
    return {
        "status": "ok",
        "event_id": event_id,
        "state": "ignored",
        "changed": ignored.outcome == "ok",
    }


class Recovery(TypedDict):
    """M51's outcome: the items made retryable or needs-repair, and the turn closed."""

    retryable: list[str]
    needs_repair: list[str]
    closed_turn: str | None


def recover(rt: Runtime, agent_id: str, *, expired_turn: str | None = None) -> Recovery:
    """M51: running items become retryable (needs-repair after a marked side effect)
    and the open turn is closed. With ``expired_turn``, only if that turn still holds
    the slot past its lease (M43 step 1). Idempotent."""
    recovered = inbox_scripts.recover(
        rt.scripts, agent_id, now_ms=int(rt.clock.now() * 1000), expired_turn=expired_turn
    )
    if recovered.changed:
        metrics.items_entered("deferred", len(recovered.retryable))
        metrics.items_entered("needs-repair", len(recovered.needs_repair))
    return {
        "retryable": recovered.retryable,
        "needs_repair": recovered.needs_repair,
        "closed_turn": recovered.closed_turn,
    }
