"""A host's tick (channels.md C27): which of its agents to visit, and when again.

A tick visits either every agent of the host (a full scan) or the agents the
scheduler names: those a filesystem watcher saw change, those with a due delay and
those a previous tick asked to see again (C27). The Redis reads of all visited
agents (committed fingerprints, blocked and oversized sets, buffered channels) go
out in one pipeline per :data:`PREFETCH_BATCH` agents and are handed to each visit
(:func:`tidings.jobs.consumer.sync_agent`); what each agent needs next time goes back
in one pipeline to the host's *due* set.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Literal, TypedDict

from tidings.jobs import log, metrics
from tidings.jobs.consumer import prefetch, sync_agent, wake_deadline
from tidings.jobs.runtime import Runtime
from tidings.store import keys
from tidings.store.jsonfmt import compact, utc_stamp
from tidings.store.models import AgentRecord
from tidings.store.registry import AgentRegistry, parse_record


class HostSync(TypedDict):
    """C27: one tick over a host's agents (``failed``: the agents whose visit failed)."""

    status: Literal["ok"]
    host: str
    agents: int
    woke: int
    failed: list[str]


#: Agents a full scan visits between two looks at its host's changed-tick marker.
STEP_ASIDE_EVERY = 10
#: Longest a full scan waits at one look while a changed tick runs (s).
STEP_ASIDE_SECONDS = 0.5
#: The share of ``TIDINGS_FULL_SCAN_SECONDS`` a full scan may spend waiting in all: a
#: backstop must still finish in time (C27) when changed ticks never stop, or when a
#: worker that died in a changed tick left its marker until it expires.
STEP_ASIDE_SHARE = 1 / 3
#: Pause between two looks at the marker while waiting (s).
STEP_ASIDE_POLL_SECONDS = 0.01
#: The value a changed tick gives its host's marker while it runs. Only a running one
#: makes a full scan step aside: one merely queued may wait for this very thread.
RUNNING = b"running"

#: Agents whose Redis state one pipeline reads (bounds the tick's memory and the
#: staleness of what it read; every write that depends on it is compare-and-set).
PREFETCH_BATCH = 1000


def _batches(agents: Sequence[AgentRecord]) -> Iterator[Sequence[AgentRecord]]:
    for start in range(0, len(agents), PREFETCH_BATCH):
        yield agents[start : start + PREFETCH_BATCH]


def _visited(
    rt: Runtime, host: str, agent_ids: Sequence[str] | None, gone: list[str]
) -> list[AgentRecord]:
    """The agents to visit. A changed tick renews its running marker and reads the named
    agents' records in one pipelined round trip."""
    if agent_ids is None:
        return AgentRegistry(rt.redis, rt.control).on_host(host)
    wanted = sorted(set(agent_ids))
    with rt.redis.pipeline(transaction=False) as pipe:
        pipe.set(keys.sync_running(host, changed=True), RUNNING, xx=True, keepttl=True)
        for agent_id in wanted:
            pipe.get(keys.agent_record(agent_id))
        _, *raws = pipe.execute()
    agents: list[AgentRecord] = []
    for agent_id, raw in zip(wanted, raws, strict=True):
        record = parse_record(raw, agent_id)
        if record is None or record.host != host:
            gone.append(agent_id)  # removed or moved: nothing more to visit here
        else:
            agents.append(record)
    return agents


def next_visit(rt: Runtime, outcome: Mapping[str, object], agent: AgentRecord) -> float | None:
    """When this agent must be visited again whatever its files do (Unix s; ``0`` = at
    the next tick), or ``None``: a failed or unfinished visit, else a live delay (D9)."""
    if outcome.get("status") != "ok" or outcome.get("retry"):
        return 0.0
    return wake_deadline(agent.root, rt.clock.now())


def sync_host(rt: Runtime, host: str, agent_ids: Sequence[str] | None = None) -> HostSync:
    """C27 for the agents of ``host`` (``agent_ids``; ``None``: every one, a full scan);
    one agent's failure never stops the rest.

    Clears the host's ``sync:running`` marker of this kind of tick at the end, which
    the scheduler sets before it enqueues a tick so that ticks never pile up.
    """
    started = time.perf_counter()
    full = agent_ids is None
    woke = 0
    failed: list[str] = []
    gone: list[str] = []
    due: dict[str, float | None] = {}
    agents: list[AgentRecord] = []
    aside = 0.0
    try:
        agents = _visited(rt, host, agent_ids, gone)
        for batch in _batches(agents):
            known = prefetch(rt, batch)
            for n, agent in enumerate(batch):
                if full and n % STEP_ASIDE_EVERY == 0:
                    aside = _step_aside(rt, host, aside)
                # answers internal_error, never raises
                outcome = sync_agent(rt, agent, known[agent.agent_id])
                woke += bool(outcome.get("woke"))
                if outcome.get("status") != "ok":
                    failed.append(agent.agent_id)
                due[agent.agent_id] = next_visit(rt, outcome, agent)
    finally:
        _finish(rt, host, full, due, gone, woke)
    scan = "full" if full else "changed"
    metrics.synced(scan, len(agents))
    log.event(
        "notification_sync_tick",
        logging.DEBUG,
        host=host,
        scan=scan,
        visited=len(agents),
        woke=woke,
        failed=len(failed),
        ms=round((time.perf_counter() - started) * 1000, 1),
    )
    return {"status": "ok", "host": host, "agents": len(agents), "woke": woke, "failed": failed}


def _step_aside(rt: Runtime, host: str, waited: float) -> float:
    """A full scan is the backstop (C27): while a changed tick of its host runs it waits,
    so that the wakes of changed agents do not share the worker's CPU with it; bounded
    per look and per scan. Returns the scan's total wait so far."""
    budget = rt.settings.full_scan_seconds * STEP_ASIDE_SHARE - waited
    started = rt.clock.monotonic()
    deadline = started + min(STEP_ASIDE_SECONDS, budget)
    marker = keys.sync_running(host, changed=True)
    while rt.clock.monotonic() < deadline and rt.redis.get(marker) == RUNNING:
        rt.clock.sleep(STEP_ASIDE_POLL_SECONDS)
    return waited + rt.clock.monotonic() - started


def _finish(
    rt: Runtime, host: str, full: bool, due: dict[str, float | None], gone: list[str], woke: int
) -> None:
    """One pipeline: what each visited agent needs next time, the tick's summary (for
    the console) and the marker cleared."""
    pipe = rt.redis.pipeline(transaction=False)
    last = {
        "at": utc_stamp(rt.clock.now()),
        "agents": len(due),
        "woke": woke,
        "scan": "full" if full else "changed",
    }
    pipe.set(keys.sync_last(host), compact(last))
    at = {agent_id: when for agent_id, when in due.items() if when is not None}
    if at:
        pipe.zadd(keys.sync_due(host), at)
    done = [agent_id for agent_id, when in due.items() if when is None] + gone
    if done:
        pipe.zrem(keys.sync_due(host), *done)
    pipe.delete(keys.sync_running(host, changed=not full))
    pipe.execute()
