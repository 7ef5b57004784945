"""Consumer delay and delay-expiry alarms (delay.md).

The public face of the delay modules: :func:`request_delay` (the ``delay``
action), :func:`live_target` (what readers hide), :func:`reconcile` (the
backstop that publishes an overdue alarm) and :func:`expire` (the
``expire_delay`` job), plus :func:`alarm_plan`, what a starting scheduler does
for one agent (D18). The logic lives in ``delay_state`` (file, liveness,
statistics), ``delay_alarm`` (expiry protocol) and ``delay_request`` (the action).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from jobs.allowlist import Allowlist
from jobs.delay_alarm import owes_alarm, reconcile
from jobs.delay_request import request_delay
from jobs.delay_state import read_state, report_invalid, structural_problem
from jobs.runtime import Runtime
from store.models import AgentRecord

__all__ = ["AlarmPlan", "alarm_plan", "expire", "live_target", "reconcile", "request_delay"]


def live_target(rt: Runtime, agent: AgentRecord, allow: Allowlist) -> str | None:
    """D1, D8: the target of the agent's live delay, or ``None`` (fail open)."""
    read = read_state(agent.root)
    now = rt.clock.now()
    state = read.state
    if state is None or structural_problem(state, now) is not None:
        report_invalid(agent.root, agent.agent_id, read, now)
        return None
    if state["deadline_epoch"] <= now or not allow.allows(state["target"]):
        return None
    target: str = state["target"]
    return target


def expire(rt: Runtime, agent: AgentRecord, request_id: str) -> bool:
    """D17: publish this request's alarm if it is owed; then wake at once (D14)."""
    published = reconcile(rt, agent, expected=request_id)
    if published:
        from jobs import sync  # the sync step reads through jobs.reading, which imports us

        sync.sync_agent(rt, agent)
    return published


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
    request_id = state.get("request_id")
    if not isinstance(request_id, str) or not request_id:
        return None
    if owes_alarm(state, now):
        return AlarmPlan("expire", request_id, now)
    if structural_problem(state, now) is None:
        return AlarmPlan("add", request_id, float(state["deadline_epoch"]))
    return None
