"""C54: a producer cannot write what reads as tidings' own notice in ``system``.

tidings' notices (C28, C29, and the flush and dead-letter notices) carry a ``source``
beginning ``notification_`` and, for the blocked and oversized warnings, a ``ref_id``
beginning ``blocked_channel:`` or ``oversized_channel:``. A producer's event in
``system`` with either shape is refused (``reserved_source``) before anything is
buffered; every other producer event in ``system`` stays allowed. tidings publishes its
notices below this check (:mod:`tidings.jobs.channels.system_events`).
"""

from __future__ import annotations

from tidings.jobs.channels.envelope import ErrorResult, failure
from tidings.jobs.channels.names import SYSTEM

#: Sources that only tidings' own notices carry.
RESERVED_SOURCE_PREFIX = "notification_"
#: ``ref_id`` prefixes of tidings' blocked and oversized warnings (C28).
RESERVED_REF_PREFIXES = ("blocked_channel:", "oversized_channel:")


def notice_problem(event: object) -> ErrorResult | None:
    """``reserved_source`` when ``event`` has the shape of one of tidings' notices."""
    if not isinstance(event, dict):
        return None
    source, ref_id = event.get("source"), event.get("ref_id")
    if isinstance(source, str) and source.startswith(RESERVED_SOURCE_PREFIX):
        return failure(
            "reserved_source",
            f"sources beginning {RESERVED_SOURCE_PREFIX!r} are tidings' own notices",
            channel=SYSTEM,
        )
    if isinstance(ref_id, str) and ref_id.startswith(RESERVED_REF_PREFIXES):
        return failure(
            "reserved_source",
            f"ref_ids beginning {' or '.join(map(repr, RESERVED_REF_PREFIXES))} are "
            "tidings' own warnings",
            channel=SYSTEM,
        )
    return None


def producer_event_problem(channel: object, event: object) -> ErrorResult | None:
    """C54 for ``publish_event``: only events in ``system`` are checked."""
    return notice_problem(event) if channel == SYSTEM else None


def producer_envelope_problem(channel: object, envelope: object) -> ErrorResult | None:
    """C54 for ``publish`` (C10): a whole ``system`` mirror may not carry such an event."""
    if channel != SYSTEM or not isinstance(envelope, dict):
        return None
    data = envelope.get("data")
    events = data.get("events") if isinstance(data, dict) else None
    for event in events if isinstance(events, list) else ():
        problem = notice_problem(event)
        if problem is not None:
            return problem
    return None
