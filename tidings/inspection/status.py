"""``tidings status`` / ``hub.status()``: queues, scheduler leaders and agents, read only.

The JSON shape is interfaces.md's: ``{"queues": [{"name", "depth", "delayed", "dead"}],
"schedulers": {host: {"leader", "since"}}, "agents": [{"agent_id", "host",
"pending", "live_delay", "attention"}]}``, with a few more fields per entry, and
``needs_attention``: the agents and queues that need an operator (:mod:`.attention`).
A host is listed when an agent is registered on it or its scheduler holds the leader lease; its
host and scheduler queues are listed even when empty, other hosts' queues when they
hold messages. Everything is read from the host set, the per-host indexes and
counters, never a keyspace ``SCAN`` (issue 25).

An agent's live delay comes from its delay state file when the workdir is on
this machine; otherwise from its host's scheduler (the stored alarm job, which
knows the request and the deadline but not the target).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal, TypedDict

from redis import Redis

from tidings.inspection import attention
from tidings.inspection.agent_status import AgentFigure, agent_figures, delay_figure
from tidings.inspection.attention import AttentionRow
from tidings.scheduler.jobstore import stored_alarms
from tidings.scheduler.lease import Leader, leaders
from tidings.store.clock import Clock
from tidings.store.registry import AgentRegistry
from tidings.workers.queue_stats import queue_figures_of, queue_reads
from tidings.workers.routing import host_queue, scheduler_queue


class Status(TypedDict):
    """interfaces.md's ``tidings status --json``."""

    status: Literal["ok"]
    queues: Sequence[Mapping[str, object]]
    #: ``{"leader": None, "since": None}`` where no scheduler holds the host's lease.
    schedulers: dict[str, Leader]
    agents: list[AgentFigure]
    needs_attention: list[AttentionRow]


def _scheduled_delays(redis: Redis, figures: list[AgentFigure], now: float) -> None:
    """Fill ``live_delay`` of agents whose files are elsewhere from their host's jobs."""
    by_host: dict[str, dict[str, tuple[str, float]]] = {}
    for figure in figures:
        if figure["files_here"]:
            continue
        host = figure["host"]
        if host not in by_host:
            by_host[host] = stored_alarms(redis, host)
        job = by_host[host].get(figure["agent_id"])
        if job is not None and job[1] > now:
            figure["live_delay"] = delay_figure(
                job[0], job[1], now, target=None, source="scheduler"
            )
        elif job is not None:  # its alarm job is stored past the deadline: still owed
            figure["alarm_overdue"] = True


def status(redis: Redis, clock: Clock, control: Redis | None = None) -> Status:
    """The figures of interfaces.md's ``tidings status --json`` (plus ``"status": "ok"``):
    agents and schedulers from the state store ``redis``, queues and the host set from
    ``control`` (default: the same client)."""
    now = clock.now()
    control = control if control is not None else redis
    registry = AgentRegistry(redis, control)
    known = registry.hosts()
    records = registry.all(known)
    leader = leaders(redis, known)
    hosts = sorted(
        {record.host for record in records}
        | {host for host, held in leader.items() if held is not None}
    )
    agents = agent_figures(redis, records, now)
    _scheduled_delays(redis, agents, now)
    attention.mark(redis, records, agents)
    queues = _queues(control, known, set(hosts))
    return {
        "status": "ok",
        "queues": queues,
        "schedulers": {host: leader.get(host) or Leader(leader=None, since=None) for host in hosts},
        "agents": agents,
        "needs_attention": attention.rows(agents, queues),
    }


def _queues(redis: Redis, known: list[str], listed: set[str]) -> Sequence[Mapping[str, object]]:
    """The queues of ``listed`` hosts, and of other known hosts where they hold messages."""
    owner = {
        q: host
        for host in sorted(set(known) | listed)
        for q in (host_queue(host), scheduler_queue(host))
    }
    names = sorted(owner)
    with redis.pipeline(transaction=False) as pipe:
        queue_reads(pipe, names)
        figures = queue_figures_of(names, pipe.execute())
    return [
        f
        for f in figures
        if owner[f["name"]] in listed or f["depth"] or f["delayed"] or f["dead"] or f["in_flight"]
    ]
