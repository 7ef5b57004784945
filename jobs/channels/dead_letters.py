"""A flush that can never succeed is dead-lettered, not retried forever (channels.md C52).

dramatiq retries a failing ``flush_channel`` message a bounded number of times
(``workers/actors.py``); when the retries run out it hands the failed message to
:func:`dead_letter`. The channel is then marked *dead* for its agent, so the sync
tick stops restarting its stranded buffer (C15); the reason is logged and the agent
hears of it once on ``system``. The records stay buffered, so nothing is lost: a
new publish to the channel starts a fresh attempt, and a flush that drains the
buffer clears the mark.
"""

from __future__ import annotations

import logging
from typing import Literal, TypedDict

from tidings.jobs import log
from tidings.jobs.channels import names, system_events
from tidings.jobs.runtime import Runtime
from tidings.store import replies
from tidings.store.keys import AgentKeys
from tidings.store.models import AgentRecord

#: Logged when a flush is given up.
DEAD_EVENT = "notification_flush_dead_lettered"


class DeadLettered(TypedDict):
    """C52: the channel's flush was given up (its records stay buffered)."""

    status: Literal["ok"]
    agent_id: str
    channel: str
    dead_lettered: bool
    reason: str


def dead_channels(rt: Runtime, agent: AgentRecord) -> set[str]:
    return {replies.text(m) for m in rt.redis.smembers(AgentKeys(agent.agent_id).dead_flushes)}


def revive(rt: Runtime, agent: AgentRecord, channel: str) -> None:
    """The channel flushed: the stranded-buffer scan may restart it again."""
    rt.redis.srem(AgentKeys(agent.agent_id).dead_flushes, channel)


def reason_of(traceback_text: object) -> str:
    """The last line of a failed message's traceback (the exception), at most 300 chars."""
    lines = [line for line in str(traceback_text or "").splitlines() if line.strip()]
    return (lines[-1].strip() if lines else "unknown failure")[:300]


def dead_letter(
    rt: Runtime, agent: AgentRecord, channel: str, reason: str, retries: object = None
) -> DeadLettered:
    """Give up the channel's flush: mark, log and tell the agent once (C52)."""
    added = rt.redis.sadd(AgentKeys(agent.agent_id).dead_flushes, channel)
    log.event(
        DEAD_EVENT,
        logging.ERROR,
        agent_id=agent.agent_id,
        channel=channel,
        retries=retries,
        reason=reason,
    )
    if added and channel != names.SYSTEM:
        system_events.notify(
            rt,
            agent,
            source="notification_store",
            ref_id=f"flush_failed:{channel}",
            body=(
                f"Channel '{channel}' cannot be written ({reason}). Its notifications stay "
                "buffered; the next publish to it tries again."
            ),
            idempotency_key=f"flush_failed:{channel}",
        )
    return {
        "status": "ok",
        "agent_id": agent.agent_id,
        "channel": channel,
        "dead_lettered": True,
        "reason": reason,
    }
