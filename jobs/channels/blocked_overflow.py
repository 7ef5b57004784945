"""The blocked flood (channels.md C50): past 100 warned channels, one overflow notice.

Each blocked channel is warned once (C28), but only the first 100 per agent; the
durable set that remembers them holds no more. Blocked files beyond those are
counted, and one ``system`` event with ``ref_id: "blocked_channel:overflow"`` says
how many, replaced in place whenever the count changes, so a flood of rogue files
neither pushes real notices out one by one nor grows Redis without bound.
"""

from __future__ import annotations

from tidings.jobs import log
from tidings.jobs.channels import system_events
from tidings.jobs.runtime import Runtime
from tidings.store import replies
from tidings.store.keys import AgentKeys
from tidings.store.models import AgentRecord
from tidings.store.scripts import channels as channel_scripts

#: C50: blocked channels warned one by one per agent (and the blocked set's bound).
MAX_WARNED_BLOCKED = 100
#: C50: the ``ref_id`` of the overflow notice.
OVERFLOW_REF = "blocked_channel:overflow"


def overflow_body(count: int) -> str:
    return (
        f"{count} more unregistered channel file(s) exist beyond the {MAX_WARNED_BLOCKED} "
        "warned individually; their notifications do not pass through. See "
        "notification(action='list') and notification(action='add', ...)."
    )


def join(rt: Runtime, agent: AgentRecord, channel: str) -> int:
    """Join the blocked set: 1 joined, 0 already there, -1 the set is full (C50)."""
    return channel_scripts.join_blocked(rt.scripts, agent.agent_id, channel, cap=MAX_WARNED_BLOCKED)


def announce(rt: Runtime, agent: AgentRecord, count: int, last: object) -> bool:
    """Name ``count`` in the overflow notice when it differs from ``last`` announced;
    ``True`` when a notice was published. A failed publish is retried next tick."""
    k = AgentKeys(agent.agent_id)
    previous = replies.text_or_none(last)
    if count == 0:
        if previous is not None:
            rt.redis.delete(k.blocked_overflow)
        return False
    if previous == str(count):
        return False
    result = system_events.notify(
        rt,
        agent,
        source="notification_hook",
        ref_id=OVERFLOW_REF,
        body=overflow_body(count),
        replace=True,
    )
    if result["status"] == "error":
        log.event(
            "notification_warning_failed",
            agent_id=agent.agent_id,
            channel=OVERFLOW_REF,
            reason=result["reason"],
        )
        return False
    rt.redis.set(k.blocked_overflow, count)
    return True
