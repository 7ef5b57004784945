"""The actors: each a few lines around one ``jobs`` function.

Actors are declared on a given broker with a given runtime (no global broker,
no client built here). Each resolves its agent from the registry; a message
that reaches a host the agent no longer lives on is forwarded to the agent's
current host queue (safe agent moves, issue 7), never run on the wrong files.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import dramatiq
from dramatiq import Broker

from jobs import flush, log, render
from jobs.runtime import Runtime
from store.models import AgentRecord
from store.registry import AgentRegistry
from workers.dispatch import send
from workers.routing import UNROUTED_QUEUE, host_queue

AgentJob = Callable[..., Any]


def agent_actor(
    broker: Broker, rt: Runtime, name: str, job: AgentJob, **options: Any
) -> dramatiq.Actor[..., Any]:
    """Declare actor ``name`` that runs ``job(rt, agent, *args)`` for a registered agent."""
    registry = AgentRegistry(rt.redis)
    keep_result = bool(options.get("store_results"))

    def run(agent_id: str, *args: Any) -> Any:
        agent: AgentRecord | None = registry.get(agent_id)
        if agent is None:
            log.event("actor_unknown_agent", actor=name, agent_id=agent_id)
            result: Any = {"status": "error", "reason": "unknown_agent", "agent_id": agent_id}
        elif agent.host != rt.settings.host:
            send(broker, name, host_queue(agent.host), agent_id, *args)
            result = {"status": "forwarded", "host": agent.host}
        else:
            result = job(rt, agent, *args)
        return result if keep_result else None

    run.__name__ = run.__qualname__ = name
    return dramatiq.Actor(
        run, broker=broker, actor_name=name, queue_name=UNROUTED_QUEUE, priority=0,
        options=options,
    )


def declare_actors(broker: Broker, rt: Runtime) -> None:
    """Declare every host actor on ``broker``."""
    agent_actor(broker, rt, "flush_channel", flush.flush_channel)
    agent_actor(broker, rt, "render_attention", render.render_attention, store_results=True)
