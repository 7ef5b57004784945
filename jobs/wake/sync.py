"""The sync tick (channels.md C27): notice what changed and wake the agent.

Producers may write channel files directly, without tidings, so a tick looks at
the files themselves: per agent it refreshes the hook registry, restarts
stranded flushes, runs the delay backstop, takes a coherent read, warns about
blocked and oversized files, and — when the masked fingerprint moved — appends a
wake signal carrying the stamped ``check`` result, in one script that first
checks no other delivery committed in between.

A tick visits either every agent of the host (a full scan) or the agents the
scheduler names: those a filesystem watcher saw change, those with a due delay and
those a previous tick asked to see again (C27). The Redis reads of all visited
agents (committed fingerprints, blocked and oversized sets, buffered channels) go
out in one pipeline per :data:`PREFETCH_BATCH` agents; what each agent needs next
time goes back in one pipeline to the host's *due* set.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Literal, Required, TypedDict

from tidings.jobs import log, metrics
from tidings.jobs.channels import allowlist, dead_letter
from tidings.jobs.channels import blocked as blocked_warnings
from tidings.jobs.channels.names import DAEMON
from tidings.jobs.delay import alarm as delay_alarm
from tidings.jobs.delay import state as delay_state
from tidings.jobs.guard import answering
from tidings.jobs.runtime import Runtime
from tidings.jobs.view import committed, delivery, own_acts, wake_mask
from tidings.jobs.view.coherent import observe
from tidings.jobs.view.read import Observation, fingerprint
from tidings.jobs.wake.wait_loop import NOTIFICATION_KIND, STREAM_MAXLEN, Entry
from tidings.store import keys, rates, replies
from tidings.store.jsonfmt import compact, utc_stamp
from tidings.store.keys import AgentKeys
from tidings.store.models import AgentRecord
from tidings.store.registry import AgentRegistry, parse_record
from tidings.store.scripts import channels as channel_scripts
from tidings.store.scripts import wake as wake_scripts


class SyncOutcome(TypedDict, total=False):
    """C27: one agent's visit. ``retry`` asks for a visit at the next tick."""

    status: Required[Literal["ok"]]
    agent_id: Required[str]
    flushes: Required[list[str]]
    woke: Required[bool]
    stable: bool
    retry: bool
    blocked: list[str]
    oversized: list[str]
    wake_id: str


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


@dataclass(frozen=True)
class Known:
    """One agent's Redis state, read for a batch of agents in one pipeline."""

    committed: committed.Committed
    #: The act generation (C53), read before any file of the agent.
    generation: str
    sets: blocked_warnings.KnownSets
    buffered: tuple[str, ...]


#: The batch's :class:`Known` state by agent id, while :func:`sync_host` runs.
_known: ContextVar[dict[str, Known]] = ContextVar("tidings_sync_known")


def prefetch(rt: Runtime, agents: Sequence[AgentRecord]) -> dict[str, Known]:
    """The Redis state :func:`sync_agent` reads, for all ``agents`` in one round trip (one
    per node on a cluster, whose pipelines refuse ``MGET``: single-key reads only)."""
    pipe = rt.redis.pipeline(transaction=False)
    for agent in agents:
        k = AgentKeys(agent.agent_id)
        for key in (k.delivered_fp, k.wake_fp, k.act_generation):
            pipe.get(key)
        pipe.smembers(k.blocked)
        pipe.get(k.blocked_overflow)
        pipe.smembers(k.oversized)
        pipe.smembers(k.buffered_channels)
    answers = pipe.execute()
    known: dict[str, Known] = {}
    for n, agent in enumerate(agents):
        delivered, wake, generation, blocked, overflow, oversized, buffered = (
            answers[7 * n: 7 * n + 7])
        known[agent.agent_id] = Known(
            committed.Committed(replies.text_or_none(delivered) or "",
                                replies.text_or_none(wake) or ""),
            replies.text_or_none(generation) or "",
            blocked_warnings.KnownSets(frozenset(map(replies.text, blocked)), overflow,
                            frozenset(map(replies.text, oversized))),
            tuple(sorted(map(replies.text, buffered))),
        )
    return known

#: C26: the synthetic call the orchestrator injects with a notification wake.
WAKE_CALL: dict[str, object] = {
    "name": "notification",
    "arguments": {"action": "check", "input": {}, "reasoning": "notification sync"},
}


def enqueue_stranded(rt: Runtime, agent: AgentRecord) -> list[str]:
    """C15: start a flush for every non-empty buffer whose flag lapsed, except those
    dead-lettered (C52)."""
    k = AgentKeys(agent.agent_id)
    started: list[str] = []
    known = _known.get({}).get(agent.agent_id)
    buffered = set(known.buffered) if known else {
        replies.text(member) for member in rt.redis.smembers(k.buffered_channels)}
    for channel in sorted(buffered - dead_letter.dead_channels(rt, agent) if buffered else ()):
        if channel_scripts.claim_stranded(rt.scripts, agent.agent_id, channel,
                                          flag_ttl=rt.settings.flush_flag_ttl):
            rt.dispatch.flush_channel(agent, channel)
            started.append(channel)
    return started


def wake_entry(rt: Runtime, agent: AgentRecord, obs: Observation) -> Entry | None:
    """C26: the signal for ``obs`` (``None`` if it cannot be stamped)."""
    stamped = delivery.stamp_with(rt, agent, obs, delivery.check_placeholder())
    if stamped is None:
        return None
    return {
        "kind": NOTIFICATION_KIND,
        "agent_id": agent.agent_id,
        "at": utc_stamp(rt.clock.now()),
        "call": WAKE_CALL,
        "result": stamped,
    }


def _signal(rt: Runtime, agent: AgentRecord, seen: committed.Committed, obs: Observation,
            generation: str) -> str | None:
    """Append the signal unless a delivery or an own act of the agent (C53) came between."""
    entry = wake_entry(rt, agent, obs)
    if entry is None:
        return None
    return wake_scripts.signal(
        rt.scripts, agent.agent_id, expected_wake=seen.wake_text,
        wake=compact(obs.masked_fp), delivered=compact(obs.raw_fp), kind=NOTIFICATION_KIND,
        entry_json=compact(entry), stream_length=STREAM_MAXLEN, act_generation=generation,
        now=rt.clock.now(),
    )


def _unchanged(rt: Runtime, agent: AgentRecord, allow: allowlist.Allowlist,
               seen: committed.Committed) -> bool:
    """Whether one fingerprint pass already equals the committed wake fingerprint.

    Most agents are quiet most ticks: then the outcome of C27 is "stop" whatever a
    full coherent read would say, so the tick skips reading and parsing payloads.
    """
    target = delay_state.live_target(rt, agent, allow)
    raw = fingerprint(agent.root, allow, target if target != DAEMON else None)
    masked = wake_mask.masked_fingerprint(agent.root, raw, target)
    return bool(masked == seen.wake(agent.root, target))


@answering("sync_agent")
def sync_agent(rt: Runtime, agent: AgentRecord) -> SyncOutcome:
    """C27 for one agent, with the Redis state :func:`sync_host` read beforehand if any;
    an unexpected failure answers ``internal_error`` (C52).

    ``retry: True`` asks for a visit at the next tick even if nothing changes on disk:
    an unstable read, a signal that could not be stamped, or a commit that lost its
    compare-and-set.
    """
    known = _known.get({}).get(agent.agent_id)
    # C53: the act generation is taken before anything is read (a batch read it earlier)
    generation = known.generation if known else own_acts.generation(rt, agent)
    state = allowlist.registry_state(rt, agent)
    allow = allowlist.Allowlist(state.hook_channels)
    result: SyncOutcome = {"status": "ok", "agent_id": agent.agent_id,
                      "flushes": enqueue_stranded(rt, agent), "woke": False}
    delay_alarm.reconcile(rt, agent)
    sets = known.sets if known else None
    # Read once, before the files: the compare-and-set below (C26, C53) then refuses a
    # signal if a delivery committed anything while this visit observed.
    seen = known.committed if known else committed.read(rt, agent)
    if _unchanged(rt, agent, allow, seen):
        found = blocked_warnings.scan(rt, agent, allow, registry_loaded=state.loaded, known=sets)
        return {**result, "stable": True, "blocked": found.blocked, "oversized": found.oversized}
    obs = observe(rt, agent)
    if not obs.stable:
        return {**result, "stable": False, "retry": True}
    found = blocked_warnings.scan(rt, agent, allow, registry_loaded=state.loaded, known=sets)
    result.update({"stable": True, "blocked": found.blocked, "oversized": found.oversized})
    if obs.masked_fp == seen.wake(agent.root, obs.delayed):
        return result
    if not obs.payloads:
        if not committed.swap(rt, agent, seen, seen.delivered, obs.masked_fp):
            result["retry"] = True
        return result
    wake_id = _signal(rt, agent, seen, obs, generation)
    if wake_id is None:
        result["retry"] = True
    else:
        rates.count(rt.control, rates.WAKES, 1, rt.clock.now())
        result.update({"woke": True, "wake_id": wake_id})
    return result


def _batches(agents: Sequence[AgentRecord]) -> Iterator[Sequence[AgentRecord]]:
    for start in range(0, len(agents), PREFETCH_BATCH):
        yield agents[start:start + PREFETCH_BATCH]


def _visited(rt: Runtime, host: str, agent_ids: Sequence[str] | None,
             gone: list[str]) -> list[AgentRecord]:
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


def next_visit(rt: Runtime, outcome: Mapping[str, object],
               agent: AgentRecord) -> float | None:
    """When this agent must be visited again whatever its files do (Unix s; ``0`` = at
    the next tick), or ``None``: a failed or unfinished visit, else a live delay (D9)."""
    if outcome.get("status") != "ok" or outcome.get("retry"):
        return 0.0
    return delay_alarm.wake_deadline(agent.root, rt.clock.now())


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
            token = _known.set(prefetch(rt, batch))
            try:
                for n, agent in enumerate(batch):
                    if full and n % STEP_ASIDE_EVERY == 0:
                        aside = _step_aside(rt, host, aside)
                    outcome = sync_agent(rt, agent)  # answers internal_error, never raises
                    woke += bool(outcome.get("woke"))
                    if outcome.get("status") != "ok":
                        failed.append(agent.agent_id)
                    due[agent.agent_id] = next_visit(rt, outcome, agent)
            finally:
                _known.reset(token)
    finally:
        _finish(rt, host, full, due, gone, woke)
    scan = "full" if full else "changed"
    metrics.synced(scan, len(agents))
    log.event("notification_sync_tick", logging.DEBUG, host=host, scan=scan,
              visited=len(agents), woke=woke, failed=len(failed),
              ms=round((time.perf_counter() - started) * 1000, 1))
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


def _finish(rt: Runtime, host: str, full: bool, due: dict[str, float | None],
            gone: list[str], woke: int) -> None:
    """One pipeline: what each visited agent needs next time, the tick's summary (for
    the console) and the marker cleared."""
    pipe = rt.redis.pipeline(transaction=False)
    last = {"at": utc_stamp(rt.clock.now()), "agents": len(due), "woke": woke,
            "scan": "full" if full else "changed"}
    pipe.set(keys.sync_last(host), compact(last))
    at = {agent_id: when for agent_id, when in due.items() if when is not None}
    if at:
        pipe.zadd(keys.sync_due(host), at)
    done = [agent_id for agent_id, when in due.items() if when is None] + gone
    if done:
        pipe.zrem(keys.sync_due(host), *done)
    pipe.delete(keys.sync_running(host, changed=not full))
    pipe.execute()
