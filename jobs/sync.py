"""The sync tick (channels.md C27). Interface placeholder on main."""

from __future__ import annotations

from typing import Any

from jobs.runtime import Runtime
from store.models import AgentRecord


def sync_agent(rt: Runtime, agent: AgentRecord) -> dict[str, Any]:
    """C27 for one agent: stranded flushes, delay backstop, warnings, wake signal."""
    return {"status": "ok", "agent_id": agent.agent_id}


def sync_host(rt: Runtime, host: str) -> dict[str, Any]:
    """C27 for every agent registered on ``host``."""
    return {"status": "ok", "host": host, "agents": 0}
