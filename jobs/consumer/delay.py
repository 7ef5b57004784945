"""Consumer delay and delay-expiry alarms (delay.md): the acts.

:func:`request_delay` (the ``delay`` action), :func:`expire` (the
``expire_delay`` job) and :func:`alarm_plan`, what a starting scheduler does for
one agent (D18). The state file and liveness live in
:mod:`tidings.jobs.consumer.delay_state`, the expiry protocol and D9's backstop
(:func:`reconcile`) in :mod:`tidings.jobs.consumer.delay_alarm`; both sit below the read
and the tick, which these acts use.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tidings.jobs.consumer import visit
from tidings.jobs.consumer.delay_alarm import owes_alarm, reconcile, rehearse
from tidings.jobs.consumer.delay_request import request_delay
from tidings.jobs.consumer.delay_state import live_target, read_state, structural_problem
from tidings.jobs.runtime import Runtime
from tidings.store.models import AgentRecord

__all__ = [
    "AlarmPlan",
    "alarm_plan",
    "expire",
    "live_target",
    "reconcile",
    "rehearse_expiry",
    "request_delay",
]


def expire(rt: Runtime, agent: AgentRecord, request_id: str) -> bool:
    """D17: publish this request's alarm if it is owed; then wake at once (D14)."""
    published = reconcile(rt, agent, expected=request_id)
    if published:
        visit.sync_agent(rt, agent, wait=visit.VISIT_WAIT_SECONDS)
    return published


def rehearse_expiry(agent: AgentRecord, request_id: str, deadline: float) -> None:
    """What :func:`expire` reads first, read just before ``deadline`` and dropped: the
    precise alarm timer's warm-up (see :func:`tidings.jobs.consumer.delay_alarm.rehearse`)."""
    rehearse(agent.root, request_id, deadline)


@dataclass(frozen=True)
class AlarmPlan:
    """D18: ``add`` a job for a pending request, or ``expire`` an owed one."""

    action: Literal["add", "expire"]
    request_id: str
    deadline_epoch: float


def alarm_plan(rt: Runtime, agent: AgentRecord) -> AlarmPlan | None:
    """What a starting scheduler does for ``agent`` (D18); ``None``: nothing is scheduled.

    A structurally valid active request gets its job even while its target is not
    allowed, since D11 publishes its alarm at the deadline all the same.
    """
    state = read_state(agent.root).state
    if state is None:
        return None
    now = rt.clock.now()
    request_id = state.request_id
    if not request_id:
        return None
    if owes_alarm(state, now):
        return AlarmPlan("expire", request_id, now)
    if structural_problem(state, now) is None:
        return AlarmPlan("add", request_id, state.deadline)
    return None
