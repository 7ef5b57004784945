"""Expiry: the expiring → alarm → published protocol (delay.md D10-D13).

Reconcile first looks without locks and bows out for anything that cannot be
due (D10), so the coherent read that calls it on every read stays lock-free.
For a due request it takes ``channel:delay-alarm`` + ``resource:delay-state``,
re-reads, and moves the state ``active → expiring (with completion) → published``
with the alarm written in between (D11). The alarm is built from the stored
completion alone, so a retry after a crash writes the same bytes, and only the
caller that makes a transition returns ``True``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from tidings.jobs import log, metrics
from tidings.jobs.channels import DELAY_ALARM
from tidings.jobs.consumer.delay_record import DelayState
from tidings.jobs.consumer.delay_shapes import Completion, TargetStats
from tidings.jobs.consumer.delay_state import (
    ACTIVE,
    EXPIRING,
    PUBLISHED,
    is_due,
    read_state,
    stats,
    structural_problem,
    write_state,
)
from tidings.jobs.runtime import Runtime
from tidings.store import faults, locks
from tidings.store.files import staged_write
from tidings.store.jsonfmt import compact_sorted, utc_stamp
from tidings.store.models import AgentRecord

#: D13: the alarm file.
ALARM_FILE = ".notification/delay-alarm.json"
#: C18: the lock scopes of every delay-state mutation.
LOCK_SCOPES = (f"channel:{DELAY_ALARM}", "resource:delay-state")

ALARM_ICON = "⏰"
ALARM_INSTRUCTIONS = (
    "This is a consumer-only delay alarm. The target producer state was not changed; handle "
    "the re-exposed target, then dismiss delay-alarm when this reminder is no longer needed."
)
STATISTICS_SCOPE = (
    "Byte fingerprints compare the current mirror with delay start. Counts are "
    "producer-reported or retained current entries only; they are never asserted as an exact "
    "total for overwrite/capped payloads."
)
#: D12: every key a completion holds.
COMPLETION_KEYS = frozenset(
    {
        "request_id",
        "target",
        "requested_seconds",
        "actual_seconds",
        "expired_at",
        "changed",
        "initial",
        "current",
    }
)
UNKNOWN_STATS: TargetStats = {"present": None}


def _present(stats_object: object) -> bool | None:
    value = stats_object.get("present") if isinstance(stats_object, dict) else None
    return value if isinstance(value, bool) else None


def changed(initial: object, current: object) -> bool | None:
    """D12: unknown when both are unknown, else whether presence or content differs."""
    i, c = _present(initial), _present(current)
    if i is None and c is None:
        return None
    if i != c:
        return True
    if i and isinstance(initial, dict) and isinstance(current, dict):  # both present
        return initial.get("sha256") != current.get("sha256")
    return False


def completion(state: DelayState, now: float, current: TargetStats) -> Completion:
    """D12, for a structurally valid due state."""
    if state.started_epoch is None:
        raise ValueError("only a structurally valid state completes")
    initial: Mapping[str, object] = (
        state.initial if state.initial is not None else TargetStats(present=None)
    )
    return {
        "request_id": state.request_id,
        "target": state.target,
        "requested_seconds": state.requested_seconds,
        "actual_seconds": round(max(0.0, now - state.started_epoch), 3),
        "expired_at": utc_stamp(now),
        "changed": changed(initial, current),
        "initial": initial,
        "current": current,
    }


def alarm_envelope(done: Mapping[str, object]) -> dict[str, object]:
    """D13: the ``delay-alarm`` payload, a function of the completion alone."""
    return {
        "header": f"Notification delay ended: {done['target']}",
        "icon": ALARM_ICON,
        "priority": "high",
        "published_at": done["expired_at"],
        "instructions": ALARM_INSTRUCTIONS,
        "data": {
            "delay_alarm": {
                "request_id": done["request_id"],
                "target": done["target"],
                "requested_seconds": done["requested_seconds"],
                "actual_seconds": done["actual_seconds"],
                "changed": done["changed"],
                "initial": done["initial"],
                "current": done["current"],
                "statistics_scope": STATISTICS_SCOPE,
            }
        },
    }


def alarm_bytes(done: Mapping[str, object]) -> bytes:
    return compact_sorted(alarm_envelope(done)).encode("utf-8")


@dataclass(frozen=True)
class _Seen:
    """What the lock-free look saw of a due request (D10, D12)."""

    request_id: object
    target: object
    current: TargetStats | None


def _look(root: Path, expected: str | None, now: float) -> _Seen | None:
    """D10: ``None`` (take no lock) unless the state may owe an alarm now."""
    state = read_state(root).state
    if state is None or state.status not in (ACTIVE, EXPIRING):
        return None
    request_id = state.raw.get("request_id")
    if expected is not None and request_id != expected:
        return None
    if state.status == EXPIRING:
        return _Seen(request_id, state.raw.get("target"), None)
    target, deadline = state.target, state.deadline_epoch
    if target is None or target == DELAY_ALARM:
        return None
    if deadline is None or deadline > now:
        return None
    return _Seen(request_id, target, stats(root, target))


def _complete(value: object) -> bool:
    return isinstance(value, dict) and value.keys() >= COMPLETION_KEYS


def _transact(rt: Runtime, agent: AgentRecord, expected: str | None, seen: _Seen) -> bool:
    """D11, holding the delay locks."""
    root = agent.root
    state = read_state(root).state
    if state is None or state.status not in (ACTIVE, EXPIRING):
        return False
    if expected is not None and state.raw.get("request_id") != expected:
        return False
    expiring: dict[str, object] | None = None
    if state.status == ACTIVE:
        now = rt.clock.now()
        if structural_problem(state, now) is not None or not is_due(state, now):
            return False
        same = state.target == seen.target and state.request_id == seen.request_id
        current = seen.current if same and seen.current is not None else TargetStats(present=None)
        expiring = state.changed(status=EXPIRING, completion=completion(state, now, current))
        state = DelayState.parse(expiring)
    elif not _complete(state.completion):
        return False
    done = state.completion
    if done is None:  # computed just above, or found complete
        return False
    # The alarm's temp is written before the expiring state (StagedWrite: its fsync then
    # finds little left to do), and renamed into place only once that state is durable.
    with staged_write(root, ALARM_FILE, alarm_bytes(done)) as alarm:
        if expiring is not None:
            write_state(root, expiring)
            faults.reach("expire.after_expiring")
        alarm.commit()
    deadline = state.deadline_epoch
    metrics.alarm_published(rt.clock.now() - deadline if deadline is not None else 0.0)
    faults.reach("expire.after_alarm")
    write_state(root, state.changed(status=PUBLISHED))
    log.event(
        "notification_delay_alarm_published",
        level=logging.INFO,
        agent_id=agent.agent_id,
        request_id=done["request_id"],
        target=done["target"],
        changed=done["changed"],
    )
    return True


def reconcile(rt: Runtime, agent: AgentRecord, expected: str | None = None) -> bool:
    """D9-D11: publish an overdue delay's alarm; ``True`` only for the caller that did."""
    try:
        seen = _look(agent.root, expected, rt.clock.now())
        if seen is None:
            return False
        with locks.hold(agent.root, *LOCK_SCOPES):
            return _transact(rt, agent, expected, seen)
    except Exception as exc:  # D11: never raise; the next trigger retries
        log.event(
            "notification_delay_reconcile_failed",
            agent_id=agent.agent_id,
            error=type(exc).__name__,
            detail=str(exc)[:200],
        )
        return False


def rehearse(root: Path, expected: str, at: float) -> None:
    """D10's lock-free look as it will be at ``at``, with nothing kept and nothing locked.

    The precise alarm timer runs it just before a deadline, so that the real look at
    the deadline finds the state file, the target's pages and the code warm: on the
    2-core VMs measured (issue 33), the first state read after a thread slept 10 ms or
    more took 134-190 µs, after a 1 ms sleep 32 µs. It reads what :func:`reconcile`
    reads first and changes nothing; a failure is the real look's to report.
    """
    # Whatever fails here fails again in the real look, which logs it (D11).
    with suppress(Exception):
        _look(root, expected, at)


def owes_alarm(state: DelayState, now: float) -> bool:
    """Whether :func:`reconcile` would publish this state's alarm now (D4's "overdue")."""
    if state.status == EXPIRING:
        return _complete(state.completion)
    return structural_problem(state, now) is None and is_due(state, now)


def wake_deadline(root: Path, now: float) -> float | None:
    """D9: from when a sync tick must visit this agent whatever its files do (Unix s;
    ``0``: at once, an alarm is still owed), or ``None``: no live delay. A tick that
    skips unchanged agents (channels.md C27) still visits this one when it is due."""
    state = read_state(root).state
    if state is None:
        return None
    if owes_alarm(state, now):
        return 0.0
    if state.status != ACTIVE or structural_problem(state, now) is not None:
        return None
    deadline = state.deadline
    return deadline if deadline > now else None
