"""The sync tick (channels.md C27).

This branch carries only the parts the delay feature needs: stranded flushes
(C15) and the delay backstop (delay.md D9). The channel-model branch owns the
full per-agent step (warnings, wake signal) and supersedes this module.
"""

from __future__ import annotations

from typing import Any

from jobs import delay, log
from jobs.runtime import Runtime
from store.keys import AgentKeys
from store.models import AgentRecord
from store.registry import AgentRegistry


def enqueue_stranded_flushes(rt: Runtime, agent: AgentRecord) -> int:
    """C15: start a flush for every non-empty buffer whose flag is absent."""
    k = AgentKeys(agent.agent_id)
    started = 0
    for raw in sorted(rt.redis.smembers(k.buffered_channels)):
        channel = raw.decode("utf-8") if isinstance(raw, bytes) else str(raw)
        claimed = rt.scripts(
            "flush_claim_stranded",
            [k.buffer(channel), k.flush_flag(channel), k.buffered_channels],
            [channel, rt.settings.flush_flag_ttl],
        )
        if int(claimed):
            rt.dispatch.flush_channel(agent, channel)
            started += 1
    return started


def sync_agent(rt: Runtime, agent: AgentRecord) -> dict[str, Any]:
    """C27 for one agent: stranded flushes, delay backstop."""
    flushes = enqueue_stranded_flushes(rt, agent)
    alarm = delay.reconcile(rt, agent)
    return {"status": "ok", "agent_id": agent.agent_id, "stranded_flushes": flushes,
            "alarm_published": alarm}


def sync_host(rt: Runtime, host: str) -> dict[str, Any]:
    """C27 for every agent registered on ``host``; one agent's failure skips only it."""
    agents = AgentRegistry(rt.redis).on_host(host)
    for agent in agents:
        try:
            sync_agent(rt, agent)
        except Exception as exc:
            log.event("sync_agent_failed", agent_id=agent.agent_id, error=type(exc).__name__)
    return {"status": "ok", "host": host, "agents": len(agents)}
