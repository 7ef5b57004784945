"""Validating and completing producer input (channels.md C8, C10, C11)."""

from __future__ import annotations

import secrets
from typing import Literal, NamedTuple, Required, TypedDict, Unpack, cast

from pydantic import ValidationError

from tidings.store.errors import TidingsError
from tidings.store.jsonfmt import compact, utc_stamp
from tidings.store.jsonread import MAX_DEPTH, echo, encodable, input_problem
from tidings.store.models import Envelope, Event
from tidings.store.reasons import Reason

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


class ErrorFields(TypedDict, total=False):
    """The caller's values an error result repeats (made writable, C48)."""

    channel: object
    daemon_id: object
    name: object
    suggested_verb: object


class ErrorResult(ErrorFields):
    """``{"status": "error", "reason", "message"}`` and the repeated fields."""

    status: Required[Literal["error"]]
    #: A :data:`~tidings.store.reasons.Reason` (an exception's reason is a plain ``str``).
    reason: Required[str]
    message: Required[str]


class Published(TypedDict, total=False):
    """A producer call that was taken (C10, C11, C30): queued, flushed or a duplicate."""

    status: Required[Literal["ok"]]
    event_id: str | None
    duplicate: bool
    flushed: bool


#: What ``publish``, ``publish_event`` and ``publish_daemon_event`` answer.
PublishResult = Published | ErrorResult


def failure(reason: Reason, message: str, **fields: Unpack[ErrorFields]) -> ErrorResult:
    """An error result; the caller's values it repeats are made writable (C48)."""
    echoed = {key: echo(value) for key, value in fields.items()}
    # The keys are ErrorFields' own (checked at each call); echo keeps them JSON.
    return cast(
        "ErrorResult", {"status": "error", "reason": reason, "message": echo(message), **echoed}
    )


def error(reason: str, message: str, **fields: object) -> dict[str, object]:
    """:func:`failure` for callers whose results are not typed yet (any reason, any field)."""
    return {
        "status": "error",
        "reason": reason,
        "message": echo(message),
        **{k: echo(v) for k, v in fields.items()},
    }


def raised(exc: TidingsError, **fields: Unpack[ErrorFields]) -> ErrorResult:
    """The error result of a caught :class:`TidingsError` (its message as it is)."""
    return {"status": "error", "reason": exc.reason, "message": exc.message, **fields}


def new_channel_event_id(now: float) -> str:
    """``evt_<ms-epoch-hex>_<4 hex>``."""
    return f"evt_{int(now * 1000):x}_{secrets.token_hex(2)}"


def _first_error(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "envelope"
    return f"{where}: {first['msg']}"


class Completed(NamedTuple):
    """An envelope ready to store (C8, C10)."""

    envelope: dict[str, object]


def complete_envelope(value: object, now: float) -> Completed | ErrorResult:
    """The envelope to store, or an ``invalid_envelope``/``envelope_too_large`` error.

    Absent ``icon``, ``priority`` and ``published_at`` are filled in and
    ``instructions: null`` is dropped; everything else stays in producer order.
    """
    if not isinstance(value, dict):
        return failure("invalid_envelope", "envelope must be a JSON object")
    shape = input_problem(value, "envelope")
    if shape is not None:
        return failure("invalid_envelope", shape.message)
    try:
        Envelope.model_validate(value)
    except ValidationError as exc:
        return failure("invalid_envelope", _first_error(exc))
    envelope = {k: v for k, v in value.items() if not (k == "instructions" and v is None)}
    envelope.setdefault("icon", DEFAULT_ICON)
    envelope.setdefault("priority", "normal")
    envelope.setdefault("published_at", utc_stamp(now))
    try:
        size = len(compact(envelope).encode("utf-8"))
    except (TypeError, ValueError) as exc:
        return failure("invalid_envelope", f"envelope is not JSON: {exc}")
    if size > MAX_ENVELOPE_BYTES:
        return failure("envelope_too_large", f"envelope is {size} bytes; the limit is 1 MiB")
    return Completed(envelope)


def check_event(event: object, priority: object, idempotency_key: object) -> ErrorResult | None:
    """C11's event checks in order; ``None`` when the event may be buffered."""
    if not isinstance(event, dict):
        return failure("invalid_event", "event must be a JSON object")
    shape = input_problem(event, "event", max_depth=MAX_EVENT_DEPTH, max_bytes=MAX_EVENT_BYTES)
    if shape is not None and shape.reason == "too_large":
        return failure("event_too_large", f"{shape.message} (256 KiB)")
    if shape is not None:
        return failure("invalid_event", shape.message)
    if priority is not None and priority not in PRIORITIES:
        return failure("invalid_priority", "priority must be null, 'low', 'normal' or 'high'")
    try:
        Event.model_validate({"event_id": event.get("event_id")})
    except ValidationError:
        return failure(
            "invalid_event_id", "event_id must be a non-empty string of at most 200 characters"
        )
    key = idempotency_key if idempotency_key is not None else event.get("idempotency_key")
    if isinstance(key, str) and not encodable(key):
        return failure("invalid_idempotency_key", "not valid Unicode")
    try:
        Event.model_validate({"idempotency_key": key})
    except ValidationError:
        return failure(
            "invalid_idempotency_key",
            "idempotency_key must be a non-empty string of at most 200 characters",
        )
    return None


class CompletedEvent(NamedTuple):
    """An event ready to store: the copy, its ``event_id`` and its dedup key (C11)."""

    event: dict[str, object]
    event_id: str
    dedup_key: str | None


def _key(value: object) -> str | None:
    # check_event admitted only strings or null for event_id and idempotency_key.
    return value if isinstance(value, str) else None


def complete_event(
    event: dict[str, object], idempotency_key: str | None, now: float
) -> CompletedEvent:
    """A copy with ``event_id`` and ``at`` set, and its dedup key (C11), of a checked event."""
    completed = dict(event)
    caller_id = _key(completed.get("event_id"))
    event_id = caller_id if caller_id is not None else new_channel_event_id(now)
    if caller_id is None:  # C11: a null event_id counts as absent
        completed["event_id"] = event_id
    completed.setdefault("at", utc_stamp(now))
    if idempotency_key is not None:
        completed.setdefault("idempotency_key", idempotency_key)
    key = idempotency_key or _key(completed.get("idempotency_key")) or caller_id
    return CompletedEvent(completed, event_id, key)
