"""Validating and completing producer input (channels.md C8, C10, C11)."""

from __future__ import annotations

import secrets
from typing import Any

from pydantic import ValidationError

from tidings.store.jsonfmt import compact, utc_stamp
from tidings.store.jsonread import MAX_DEPTH, echo, encodable, input_problem
from tidings.store.models import Envelope, Event

#: C10: the largest whole envelope, serialised.
MAX_ENVELOPE_BYTES = 1_048_576
#: C11: the largest event, serialised.
MAX_EVENT_BYTES = 262_144
#: C47: the deepest event accepted. An event is stored three levels down in its
#: mirror (envelope → data → events), which must itself stay within the reader's 64.
MAX_EVENT_DEPTH = MAX_DEPTH - 3
#: C8: the icon of an envelope that has none.
DEFAULT_ICON = "🔔"
PRIORITIES = ("low", "normal", "high")

Result = dict[str, Any]


def error(reason: str, message: str, **fields: Any) -> Result:
    """An error result; the caller's values it repeats are made writable (C48)."""
    return {"status": "error", "reason": reason, "message": echo(message),
            **{k: echo(v) for k, v in fields.items()}}


def new_channel_event_id(now: float) -> str:
    """``evt_<ms-epoch-hex>_<4 hex>``."""
    return f"evt_{int(now * 1000):x}_{secrets.token_hex(2)}"


def _first_error(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "envelope"
    return f"{where}: {first['msg']}"


def complete_envelope(value: object, now: float) -> Result | dict[str, Any]:
    """The envelope to store, or an ``invalid_envelope``/``envelope_too_large`` error.

    Absent ``icon``, ``priority`` and ``published_at`` are filled in and
    ``instructions: null`` is dropped; everything else stays in producer order.
    """
    if not isinstance(value, dict):
        return error("invalid_envelope", "envelope must be a JSON object")
    shape = input_problem(value, "envelope")
    if shape is not None:
        return error("invalid_envelope", shape.message)
    try:
        Envelope.model_validate(value)
    except ValidationError as exc:
        return error("invalid_envelope", _first_error(exc))
    envelope = {k: v for k, v in value.items() if not (k == "instructions" and v is None)}
    envelope.setdefault("icon", DEFAULT_ICON)
    envelope.setdefault("priority", "normal")
    envelope.setdefault("published_at", utc_stamp(now))
    try:
        size = len(compact(envelope).encode("utf-8"))
    except (TypeError, ValueError) as exc:
        return error("invalid_envelope", f"envelope is not JSON: {exc}")
    if size > MAX_ENVELOPE_BYTES:
        return error("envelope_too_large", f"envelope is {size} bytes; the limit is 1 MiB")
    return envelope


def check_event(
    event: object, priority: object, idempotency_key: object
) -> Result | None:
    """C11's event checks in order; ``None`` when the event may be buffered."""
    if not isinstance(event, dict):
        return error("invalid_event", "event must be a JSON object")
    shape = input_problem(event, "event", max_depth=MAX_EVENT_DEPTH, max_bytes=MAX_EVENT_BYTES)
    if shape is not None and shape.reason == "too_large":
        return error("event_too_large", f"{shape.message} (256 KiB)")
    if shape is not None:
        return error("invalid_event", shape.message)
    if priority is not None and priority not in PRIORITIES:
        return error("invalid_priority", "priority must be null, 'low', 'normal' or 'high'")
    try:
        Event.model_validate({"event_id": event.get("event_id")})
    except ValidationError:
        return error(
            "invalid_event_id", "event_id must be a non-empty string of at most 200 characters"
        )
    key = idempotency_key if idempotency_key is not None else event.get("idempotency_key")
    if isinstance(key, str) and not encodable(key):
        return error("invalid_idempotency_key", "not valid Unicode")
    try:
        Event.model_validate({"idempotency_key": key})
    except ValidationError:
        return error(
            "invalid_idempotency_key",
            "idempotency_key must be a non-empty string of at most 200 characters",
        )
    return None


def complete_event(
    event: dict[str, Any], idempotency_key: str | None, now: float
) -> tuple[dict[str, Any], str | None]:
    """A copy with ``event_id`` and ``at`` set, and its dedup key (C11)."""
    completed = dict(event)
    caller_id = completed.get("event_id")
    if caller_id is None:  # C11: a null event_id counts as absent
        completed["event_id"] = new_channel_event_id(now)
    completed.setdefault("at", utc_stamp(now))
    if idempotency_key is not None:
        completed.setdefault("idempotency_key", idempotency_key)
    key = idempotency_key or completed.get("idempotency_key") or caller_id
    return completed, key
