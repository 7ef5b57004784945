"""Saying so when a registered memory repository becomes unavailable (interfaces.md, "Never
silent, never wrong").

Each turn's ``memory`` result already says ``unavailable`` with its M13 reason; besides,
the agent's ``memory_unavailable`` key holds that reason while it lasts, and the log gets
one ``memory_unavailable`` warning per change of that state (and one
``memory_available`` line when it ends), not one per turn. ``tidings status`` and the
console read the key (an ``EXISTS``, which the monitor role may run).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from redis.exceptions import RedisError

from tidings.jobs import log
from tidings.jobs.runtime import Runtime
from tidings.store import replies
from tidings.store.inbox_keys import InboxKeys
from tidings.store.models import AgentRecord

#: Observation outcomes that read the repository (so it is available again).
READ_OUTCOMES = frozenset({"baseline", "unchanged", "changed", "absorbed", "unstable"})


def note(rt: Runtime, agent: AgentRecord, outcome: Mapping[str, object]) -> None:
    """Record ``outcome``'s availability; log a change of state. Never raises (M12)."""
    status, reason = outcome.get("status"), str(outcome.get("reason") or "unavailable")
    key = InboxKeys(agent.agent_id).memory_unavailable
    try:
        if status == "unavailable" and reason != "not_configured":
            before = rt.redis.set(key, reason, get=True)
            if before is None or replies.text(before) != reason:
                log.event(
                    "memory_unavailable",
                    logging.WARNING,
                    agent_id=agent.agent_id,
                    memory_repo=agent.memory_repo,
                    reason=reason,
                )
        elif status in READ_OUTCOMES and rt.redis.delete(key):
            log.event(
                "memory_available",
                logging.INFO,
                agent_id=agent.agent_id,
                memory_repo=agent.memory_repo,
            )
    except RedisError as exc:  # the observation's answer stands; the next one retries
        log.event("memory_state_not_recorded", agent_id=agent.agent_id, error=type(exc).__name__)
