"""The ``delay`` action: validate, then write, replace or cancel the one delay
(delay.md D2-D6), wake after an owed alarm (D14) and tell the scheduler (D15).

The state changes under ``channel:delay-alarm`` + ``resource:delay-state``; an
alarm that came due meanwhile is published first (outside the locks) and the
locked step retried once. Scheduler requests are sent only after the locks are
released; if sending fails the state still stands and the read/sync backstop
publishes the alarm (D19).
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass, field
from typing import cast

from tidings.jobs import limits, log
from tidings.jobs.channels import (
    DAEMON,
    DELAY_ALARM,
    Allowlist,
    allowlist,
    name_error,
    not_allowlisted_message,
)
from tidings.jobs.consumer import committed, delay_alarm, visit
from tidings.jobs.consumer.delay_record import DelayState, is_int
from tidings.jobs.consumer.delay_shapes import ActiveState, AlarmRequest, DelayResult, TargetStats
from tidings.jobs.consumer.delay_state import (
    ACTIVE,
    CANCELLED,
    LATEST_DEADLINE_AT,
    LATEST_DEADLINE_EPOCH,
    STATE_VERSION,
    live_target,
    read_state,
    stats,
    structural_problem,
    write_state,
)
from tidings.jobs.consumer.own_acts import own_act
from tidings.jobs.consumer.read import fingerprint
from tidings.jobs.consumer.wake_mask import masked_fingerprint
from tidings.jobs.runtime import Runtime
from tidings.store import locks
from tidings.store.errors import LockTimeout, TidingsError
from tidings.store.jsonfmt import utc_stamp
from tidings.store.jsonread import echo
from tidings.store.models import AgentRecord
from tidings.store.reasons import Reason

#: D4: locked attempts when an overdue request is found (one retry).
OVERDUE_ATTEMPTS = 2


def _error(reason: Reason, message: str, **fields: str | None) -> DelayResult:
    # The fields are the echoed channel names of DelayResult (channel, active_channel).
    return cast(
        "DelayResult",
        {
            "status": "error",
            "reason": reason,
            **{k: echo(v) for k, v in fields.items()},
            "message": echo(message),
        },
    )


def _invalid(
    channel: object, seconds: object, cap: int, allow: Allowlist, now: float
) -> str | None:
    """D3 step 2, in order: the message of ``invalid_delay``, or ``None``."""
    if not allow.allows(channel):
        problem = name_error(channel)
        return problem if problem is not None else not_allowlisted_message(str(channel))
    if channel == DELAY_ALARM:
        return f"{DELAY_ALARM} cannot be delayed"
    if not is_int(seconds):
        return "seconds must be an integer"
    if not 0 <= seconds <= cap:
        return f"seconds must be between 0 and {cap}"
    if now + seconds > LATEST_DEADLINE_EPOCH:
        return (
            f"seconds is too large: the deadline would fall after {LATEST_DEADLINE_AT}, "
            "the latest time a timestamp can hold"
        )
    return None


@dataclass
class _Step:
    """The outcome of one locked attempt."""

    result: DelayResult | None = None
    overdue: bool = False
    overdue_id: str | None = None
    requests: list[AlarmRequest] = field(default_factory=list)
    #: Channels whose visibility the step changed (their wake entries move, C23).
    touched: set[str] = field(default_factory=set)


def _live_target(state: DelayState | None, now: float, allow: Allowlist) -> str | None:
    if state is None or structural_problem(state, now) is not None:
        return None
    return state.target if allow.allows(state.target) else None


def _new_state(
    channel: str, seconds: int, cap: int, now: float, initial: TargetStats
) -> ActiveState:
    """D5, D6: a fresh active request."""
    deadline = now + seconds
    return {
        "version": STATE_VERSION,
        "status": ACTIVE,
        "request_id": uuid.uuid4().hex,
        "target": channel,
        "requested_seconds": seconds,
        "max_seconds": cap,
        "started_epoch": now,
        "started_at": utc_stamp(now),
        "deadline_epoch": deadline,
        "deadline_at": utc_stamp(deadline),
        "initial": initial,
    }


def _locked_step(
    rt: Runtime,
    agent: AgentRecord,
    allow: Allowlist,
    channel: str,
    seconds: int,
    cap: int,
    initial: TargetStats | None,
) -> _Step:
    """D4 under the delay locks."""
    root = agent.root
    state = read_state(root).state
    now = rt.clock.now()
    if state is not None and delay_alarm.owes_alarm(state, now):
        return _Step(overdue=True, overdue_id=state.request_id)
    live = _live_target(state, now, allow)
    old_active = state is not None and state.status == ACTIVE
    old_id = state.request_id if state is not None and old_active else None
    step = _Step()
    if seconds > 0:
        if initial is None:  # request_delay takes the stats of every positive delay
            raise ValueError("a delay needs the channel's stats at the request")
        new = _new_state(channel, seconds, cap, now, initial)
        write_state(root, new)
        step.touched.add(channel)
        step.result = {
            "status": "ok",
            "action": "delayed",
            "channel": channel,
            "seconds": seconds,
            "request_id": new["request_id"],
            "deadline_at": new["deadline_at"],
        }
        if live is not None:
            step.result["replaced_channel"] = live
            step.touched.add(live)
        if old_id:
            step.requests.append({"op": "remove", "request_id": old_id})
        step.requests.append(
            {
                "op": "add",
                "agent_id": agent.agent_id,
                "request_id": new["request_id"],
                "deadline_epoch": new["deadline_epoch"],
            }
        )
    elif live is None:
        step.result = {
            "status": "ok",
            "action": "cancelled",
            "channel": channel,
            "cancelled": False,
        }
    elif live != channel:
        step.result = _error(
            "delay_target_mismatch",
            f"the live delay is on {live!r}, not {channel!r}",
            channel=channel,
            active_channel=live,
        )
    else:
        if state is None:  # a live target is read from a stored state
            raise ValueError("a live delay without a stored state")
        write_state(root, state.changed(status=CANCELLED, cancelled_at=utc_stamp(now)))
        step.touched.add(channel)
        step.result = {"status": "ok", "action": "cancelled", "channel": channel, "cancelled": True}
        step.requests.append({"op": "remove", "request_id": state.request_id})
    return step


def _attempt(
    rt: Runtime,
    agent: AgentRecord,
    allow: Allowlist,
    channel: str,
    seconds: int,
    cap: int,
    initial: TargetStats | None,
) -> _Step:
    try:
        with locks.hold(agent.root, *delay_alarm.LOCK_SCOPES):
            return _locked_step(rt, agent, allow, channel, seconds, cap, initial)
    except LockTimeout as exc:
        return _Step(_error("lock_timeout", exc.message, channel=channel))
    except (OSError, TidingsError) as exc:
        return _Step(
            _error(
                "delay_state_write_failed",
                f"could not persist notification delay: {type(exc).__name__}",
                channel=channel,
            )
        )


def _send(rt: Runtime, agent: AgentRecord, requests: list[AlarmRequest]) -> None:
    """D15; a failure is reported and left to the backstop (D19)."""
    for request in requests:
        try:
            rt.dispatch.alarm_request(agent.host, request)
        except Exception as exc:
            log.event(
                "notification_delay_alarm_request_failed",
                agent_id=agent.agent_id,
                op=request["op"],
                request_id=request["request_id"],
                error=type(exc).__name__,
            )


def _commit_wake(rt: Runtime, agent: AgentRecord, channels: set[str]) -> None:
    """channels.md C23: the agent's own delay or cancel is not news. The committed wake
    fingerprint takes the new masked entries of the channels the act touched, and only
    those, so a producer's change to any other channel still wakes (C53)."""
    if not channels:
        return
    allow = allowlist(rt, agent)
    target = live_target(rt, agent, allow)
    raw = fingerprint(agent.root, allow, target if target != DAEMON else None)
    masked = {entry[0]: entry for entry in masked_fingerprint(agent.root, raw, target)}
    files = {f"{channel}.json" for channel in channels}
    committed.patch_wake(rt, agent, {name: masked.get(name) for name in files}, target)


def request_delay(rt: Runtime, agent: AgentRecord, channel: object, seconds: object) -> DelayResult:
    """D3, D4, D15: the ``delay`` action."""
    if not os.path.isdir(agent.workdir):
        return _error(
            "delay_requires_workdir",
            f"delay needs the agent's workdir; {agent.workdir} is not a directory",
        )
    cap = limits.delay_cap(log_invalid=True)
    allow = allowlist(rt, agent)
    problem = _invalid(channel, seconds, cap, allow, rt.clock.now())
    if problem is not None or not isinstance(channel, str) or not is_int(seconds):
        return _error(
            "invalid_delay",
            problem or "channel and seconds are required",
            channel=channel if isinstance(channel, str) else None,
        )
    published = delay_alarm.reconcile(rt, agent)
    initial = stats(agent.root, channel) if seconds > 0 else None
    step = _Step()
    with own_act(rt, agent):  # C53: no tick wakes on what this act changes
        for _ in range(OVERDUE_ATTEMPTS):
            step = _attempt(rt, agent, allow, channel, seconds, cap, initial)
            if not step.overdue:
                break
            published = delay_alarm.reconcile(rt, agent, step.overdue_id) or published
        if step.result is not None and step.result["status"] == "ok":
            _send(rt, agent, step.requests)
            _commit_wake(rt, agent, step.touched)
    if published:
        # D14: the wake follows the alarm at once
        visit.sync_agent(rt, agent, wait=visit.VISIT_WAIT_SECONDS)
    if step.overdue:
        return _error(
            "delay_expiry_recovery_pending",
            "an overdue delay's alarm could not be published yet; try again",
            channel=channel,
        )
    if step.result is None:  # every attempt that is not overdue sets a result
        raise ValueError("the delay step ended without a result")
    return step.result
