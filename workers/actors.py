"""The actors: each a few lines around one ``jobs`` function.

Actors are declared on a given broker with a given runtime (no global broker,
no client built here). Each resolves its agent from the registry; a message
that reaches a host the agent no longer lives on is forwarded to the agent's
current host queue (safe agent moves, issue 7), never run on the wrong files.
A message for an agent whose workdir is not (yet) on this host raises, so dramatiq
retries it with back-off until the workdir arrives: a host never creates the
workdir of an agent that is moving in.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from typing import Literal, NotRequired, TypedDict

import dramatiq
from dramatiq import Broker

from tidings.jobs import log, tick
from tidings.jobs.channels import DEAD_EVENT, dead_letter, flush_channel, reason_of
from tidings.jobs.consumer import expire, render_attention
from tidings.jobs.memory import observe_memory
from tidings.jobs.runtime import Runtime
from tidings.jobs.tick import PromptVisits
from tidings.store.errors import StoreError
from tidings.store.models import AgentRecord
from tidings.store.placement import RunFence
from tidings.store.registry import AgentRegistry, parse_record
from tidings.workers import actor_names
from tidings.workers.dispatch import send
from tidings.workers.routing import UNROUTED_QUEUE, host_queue

#: A job run for one agent: ``job(rt, agent, *args)``; its answer is kept as JSON when the
#: actor stores results.
AgentJob = Callable[..., object]

#: C52: retries of a failing flush before it is dead-lettered (about 2 minutes with the
#: broker's back-off, workers/broker.py).
FLUSH_MAX_RETRIES = 8
#: The actor that dead-letters a flush whose retries ran out.


class UnknownAgent(TypedDict):
    """The agent a message names is not registered (the message is dropped)."""

    status: Literal["error"]
    reason: Literal["unknown_agent"]
    agent_id: str


class Forwarded(TypedDict):
    """The agent is served from another host: the message went to its queue."""

    status: Literal["forwarded"]
    host: str


class WorkdirMissing(StoreError):
    """The agent's workdir is not on this host (yet): the message is retried."""

    default_reason = "workdir_missing"


def agent_actor(
    broker: Broker, rt: Runtime, name: str, job: AgentJob, **options: object
) -> dramatiq.Actor[..., object]:
    """Declare actor ``name`` that runs ``job(rt, agent, *args)`` for a registered agent."""
    fence = RunFence(rt.redis, rt.clock)
    keep_result = bool(options.get("store_results"))

    def run(agent_id: str, *args: object) -> object:
        # Enter the fence before reading the host: a move waits for this run (placement.py);
        # one round trip for both.
        token, raw = fence.enter_reading(agent_id, rt.settings.host)
        try:
            agent: AgentRecord | None = parse_record(raw, agent_id)
            result: object
            if agent is None:
                log.event("actor_unknown_agent", actor=name, agent_id=agent_id)
                result = UnknownAgent(status="error", reason="unknown_agent", agent_id=agent_id)
            elif agent.host != rt.settings.host:
                send(broker, name, host_queue(agent.host), agent_id, *args)
                log.event(
                    "actor_forwarded", logging.INFO, actor=name, agent_id=agent_id, host=agent.host
                )
                result = Forwarded(status="forwarded", host=agent.host)
            elif not os.path.isdir(agent.workdir):
                log.event(
                    "actor_workdir_missing", actor=name, agent_id=agent_id, workdir=agent.workdir
                )
                raise WorkdirMissing(f"workdir {agent.workdir} is not on host {agent.host}")
            else:
                result = job(rt, agent, *args)
        finally:
            fence.leave(agent_id, token)
        return result if keep_result else None

    run.__name__ = run.__qualname__ = name
    return dramatiq.Actor(
        run,
        broker=broker,
        actor_name=name,
        queue_name=UNROUTED_QUEUE,
        priority=0,
        options=options,
    )


class ExhaustedFlush(TypedDict):
    """What dramatiq's Retries hands ``on_retry_exhausted``: the ``flush_channel``
    message as a dict (:meth:`dramatiq.Message.asdict`), of which this reads these keys."""

    args: tuple[str, str] | list[str]
    options: NotRequired[Mapping[str, object]]


def sync_host_actor(broker: Broker, rt: Runtime) -> dramatiq.Actor[..., None]:
    """``sync_host(host[, agent_ids])`` (channels.md C27): a full scan, or the named
    agents; the job clears the flag the scheduler's tick set, so the next tick may
    enqueue again."""

    def sync_host(host: str, agent_ids: list[str] | None = None) -> None:
        if host != rt.settings.host:
            send(
                broker,
                actor_names.SYNC_HOST,
                host_queue(host),
                host,
                *([] if agent_ids is None else [agent_ids]),
            )
            return
        tick.sync_host(rt, host, agent_ids)

    return dramatiq.Actor(
        sync_host,
        broker=broker,
        actor_name=actor_names.SYNC_HOST,
        queue_name=UNROUTED_QUEUE,
        priority=0,
        options={},
    )


def flush_dead_letter_actor(broker: Broker, rt: Runtime) -> dramatiq.Actor[..., None]:
    """Takes a ``flush_channel`` message whose retries ran out (dramatiq's Retries
    ``on_retry_exhausted``) and dead-letters its channel (channels.md C52). Declared on
    this host's queue: the worker that gave up the flush sends it there."""
    registry = AgentRegistry(rt.redis, rt.control)

    def flush_dead_letter(message: ExhaustedFlush, retries: Mapping[str, object]) -> None:
        agent_id, channel = message["args"][0], message["args"][1]
        agent = registry.get(agent_id)
        reason = reason_of(message.get("options", {}).get("traceback"))
        if agent is None or not os.path.isdir(agent.workdir):
            # No agent here, or a workdir still moving in: not a channel that can never
            # flush, so the tick's stranded-buffer sweep keeps restarting it (C15).
            log.event(DEAD_EVENT, agent_id=agent_id, channel=channel, reason=reason, marked=False)
            return
        dead_letter(rt, agent, channel, reason, retries.get("retries"))

    return dramatiq.Actor(
        flush_dead_letter,
        broker=broker,
        actor_name=actor_names.FLUSH_DEAD_LETTER,
        queue_name=host_queue(rt.settings.host),
        priority=0,
        options={},
    )


#: This process's prompt visits when a flush commits (``None``: none run here).
VisitsOf = Callable[[], PromptVisits | None]


def flush_then_visit(visits: VisitsOf) -> AgentJob:
    """``flush_channel``; a flush that committed records starts its agent's prompt visit
    (channels.md C27) in this process, without waiting for a watcher or a tick."""

    def flush_then_poke(rt: Runtime, agent: AgentRecord, channel: str) -> object:
        result = flush_channel(rt, agent, channel)
        runner = visits()
        if runner is not None and result["applied"]:
            runner.poke([agent.agent_id])
        return result

    return flush_then_poke


def _none() -> None:
    return None


def declare_actors(broker: Broker, rt: Runtime, visits: VisitsOf = _none) -> None:
    """Declare every host actor on ``broker``; ``visits``: this process's prompt visits."""
    agent_actor(
        broker,
        rt,
        actor_names.FLUSH_CHANNEL,
        flush_then_visit(visits),
        max_retries=FLUSH_MAX_RETRIES,
        on_retry_exhausted=actor_names.FLUSH_DEAD_LETTER,
    )
    flush_dead_letter_actor(broker, rt)
    agent_actor(broker, rt, actor_names.EXPIRE_DELAY, expire)
    sync_host_actor(broker, rt)
    # prepare_turn's group (workers/turn_group.py): results are read by the caller.
    agent_actor(broker, rt, actor_names.OBSERVE_MEMORY, observe_memory, store_results=True)
    agent_actor(broker, rt, actor_names.RENDER_ATTENTION, render_attention, store_results=True)
