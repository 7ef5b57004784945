"""One agent's visit (channels.md C27): notice what changed and wake the agent.

Producers may write channel files directly, without tidings, so a visit looks at the
files themselves: it refreshes the hook registry, restarts stranded flushes, runs the
delay backstop, takes a coherent read, warns about blocked and oversized files, and —
when the masked fingerprint moved — appends a wake signal carrying the stamped
``check`` result, in one script that first checks no other delivery committed in
between.

Which agents are visited, and when, is the host's tick (:mod:`tidings.jobs.tick`); it
reads the Redis state of a batch of agents in one pipeline (:func:`prefetch`) and hands
each visit its agent's :class:`Known` state.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Required, TypedDict

from tidings.jobs.channels import (
    DAEMON,
    Allowlist,
    KnownSets,
    dead_channels,
    registry_state,
    scan,
)
from tidings.jobs.consumer import committed, delay_alarm, delay_state, delivery, own_acts, wake_mask
from tidings.jobs.consumer._bare_read import Opening, bare_read
from tidings.jobs.consumer.read import Observation, fingerprint
from tidings.jobs.consumer.wait_loop import NOTIFICATION_KIND, STREAM_MAXLEN, Entry
from tidings.jobs.guard import answering
from tidings.jobs.runtime import Runtime
from tidings.store import locks, rates, replies
from tidings.store.jsonfmt import compact, utc_stamp
from tidings.store.keys import AgentKeys, agent_record
from tidings.store.models import AgentRecord
from tidings.store.registry import parse_record
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
    busy: bool


#: The lock scope that keeps one agent's visits from overlapping (C27), across the
#: processes of its host too (:func:`tidings.store.locks.attempt`).
VISIT_SCOPE = "agent-visit"
#: How long a visit that must follow an act (D14: the wake after an alarm) waits for
#: one of the same agent that is running (s).
VISIT_WAIT_SECONDS = 5.0


@dataclass(frozen=True)
class Known:
    """One agent's Redis state, read for a batch of agents in one pipeline."""

    committed: committed.Committed
    #: The act generation (C53), read before any file of the agent.
    generation: str
    sets: KnownSets
    buffered: tuple[str, ...]


def prefetch(rt: Runtime, agents: Sequence[AgentRecord]) -> dict[str, Known]:
    """The Redis state :func:`sync_agent` reads, for all ``agents`` in one round trip (one
    per node on a cluster, whose pipelines refuse ``MGET``: single-key reads only)."""
    return _read(rt, [agent.agent_id for agent in agents], records=False)[1]


def prefetch_records(
    rt: Runtime, agent_ids: Sequence[str]
) -> tuple[list[AgentRecord | None], dict[str, Known]]:
    """The agents' records (``None``: not registered) and :func:`prefetch`'s state, in one
    round trip: what a prompt visit (C27) reads before its visits."""
    return _read(rt, agent_ids, records=True)


def _read(
    rt: Runtime, agent_ids: Sequence[str], records: bool
) -> tuple[list[AgentRecord | None], dict[str, Known]]:
    pipe = rt.redis.pipeline(transaction=False)
    for agent_id in agent_ids:
        k = AgentKeys(agent_id)
        if records:
            pipe.get(agent_record(agent_id))
        for key in (k.delivered_fp, k.wake_fp, k.act_generation):
            pipe.get(key)
        pipe.smembers(k.blocked)
        pipe.get(k.blocked_overflow)
        pipe.smembers(k.oversized)
        pipe.smembers(k.buffered_channels)
    answers = pipe.execute()
    stride = 8 if records else 7
    found: list[AgentRecord | None] = []
    known: dict[str, Known] = {}
    for n, agent_id in enumerate(agent_ids):
        reply = answers[stride * n : stride * n + stride]
        if records:
            found.append(parse_record(reply[0], agent_id))
        delivered, wake, generation, blocked, overflow, oversized, buffered = reply[-7:]
        known[agent_id] = Known(
            committed.Committed(
                replies.text_or_none(delivered) or "", replies.text_or_none(wake) or ""
            ),
            replies.text_or_none(generation) or "",
            KnownSets(
                frozenset(map(replies.text, blocked)),
                overflow,
                frozenset(map(replies.text, oversized)),
            ),
            tuple(sorted(map(replies.text, buffered))),
        )
    return found, known


#: C26: the synthetic call the orchestrator injects with a notification wake.
WAKE_CALL: dict[str, object] = {
    "name": "notification",
    "arguments": {"action": "check", "input": {}, "reasoning": "notification sync"},
}


def enqueue_stranded(rt: Runtime, agent: AgentRecord, known: Known | None = None) -> list[str]:
    """C15: start a flush for every non-empty buffer whose flag lapsed, except those
    dead-lettered (C52); ``known``: the buffered channels a batch read beforehand."""
    k = AgentKeys(agent.agent_id)
    started: list[str] = []
    buffered = (
        set(known.buffered)
        if known
        else {replies.text(member) for member in rt.redis.smembers(k.buffered_channels)}
    )
    for channel in sorted(buffered - dead_channels(rt, agent) if buffered else ()):
        if channel_scripts.claim_stranded(
            rt.scripts, agent.agent_id, channel, flag_ttl=rt.settings.flush_flag_ttl
        ):
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


def _signal(
    rt: Runtime, agent: AgentRecord, seen: committed.Committed, obs: Observation, generation: str
) -> str | None:
    """Append the signal unless a delivery or an own act of the agent (C53) came between."""
    entry = wake_entry(rt, agent, obs)
    if entry is None:
        return None
    return wake_scripts.signal(
        rt.scripts,
        agent.agent_id,
        expected_wake=seen.wake_text,
        wake=compact(obs.masked_fp),
        delivered=compact(obs.raw_fp),
        kind=NOTIFICATION_KIND,
        entry_json=compact(entry),
        stream_length=STREAM_MAXLEN,
        act_generation=generation,
        now=rt.clock.now(),
    )


def _unchanged(
    rt: Runtime, agent: AgentRecord, allow: Allowlist, seen: committed.Committed
) -> Opening | None:
    """``None`` if one fingerprint pass already equals the committed wake fingerprint,
    else that pass, which opens the coherent read that follows (C22's first bookend).

    Most agents are quiet most ticks: then the outcome of C27 is "stop" whatever a
    full coherent read would say, so the tick skips reading and parsing payloads.
    """
    target = delay_state.live_target(rt, agent, allow)
    raw = fingerprint(agent.root, allow, target if target != DAEMON else None)
    masked = wake_mask.masked_fingerprint(agent.root, raw, target)
    return None if masked == seen.wake(agent.root, target) else Opening(target, raw)


@answering("sync_agent")
def sync_agent(
    rt: Runtime, agent: AgentRecord, known: Known | None = None, wait: float = 0.0
) -> SyncOutcome:
    """C27 for one agent; ``known``: its Redis state a batch read beforehand
    (:func:`prefetch`), else it is read here. An unexpected failure answers
    ``internal_error`` (C52).

    One agent's visits never overlap (C27), in this process or another of its host:
    while one runs, another waits up to ``wait`` seconds, then answers ``busy``.

    ``retry: True`` asks for a visit at the next tick even if nothing changes on disk:
    an unstable read, a signal that could not be stamped, a commit that lost its
    compare-and-set, or a visit that found the agent busy.
    """
    with locks.attempt(agent.root, VISIT_SCOPE, wait) as held:
        if not held:
            return {
                "status": "ok",
                "agent_id": agent.agent_id,
                "flushes": [],
                "woke": False,
                "retry": True,
                "busy": True,
            }
        return _visit(rt, agent, known)


def _visit(rt: Runtime, agent: AgentRecord, known: Known | None) -> SyncOutcome:
    # C53: the act generation is taken before anything is read (a batch read it earlier)
    generation = known.generation if known else own_acts.generation(rt, agent)
    state = registry_state(rt, agent)
    allow = Allowlist(state.hook_channels)
    result: SyncOutcome = {
        "status": "ok",
        "agent_id": agent.agent_id,
        "flushes": enqueue_stranded(rt, agent, known),
        "woke": False,
    }
    # D9 once per visit: the read below is the bare one (C22), composed here after the
    # reconcile as the coherent read composes it, so an overdue alarm is published once.
    delay_alarm.reconcile(rt, agent)
    sets = known.sets if known else None
    # Read once, before the files: the compare-and-set below (C26, C53) then refuses a
    # signal if a delivery committed anything while this visit observed.
    seen = known.committed if known else committed.read(rt, agent)
    opening = _unchanged(rt, agent, allow, seen)
    if opening is None:
        found = scan(rt, agent, allow, registry_loaded=state.loaded, known=sets)
        return {**result, "stable": True, "blocked": found.blocked, "oversized": found.oversized}
    obs = bare_read(rt, agent, allow, opening)
    if not obs.stable:
        return {**result, "stable": False, "retry": True}
    found = scan(rt, agent, allow, registry_loaded=state.loaded, known=sets)
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
