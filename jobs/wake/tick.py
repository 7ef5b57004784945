"""The sync tick (channels.md C27): notice what changed and wake the agent.

Producers may write channel files directly, without tidings, so a tick looks at
the files themselves: per agent it refreshes the hook registry, restarts
stranded flushes, runs the delay backstop, takes a coherent read, warns about
blocked and oversized files, and — when the masked fingerprint moved — appends a
wake signal carrying the stamped ``check`` result, in one script that first
checks no other delivery committed in between.
"""

from __future__ import annotations

from typing import Any

from tidings.jobs.channels import allowlist, dead_letter
from tidings.jobs.channels import blocked as scans
from tidings.jobs.channels.names import DAEMON
from tidings.jobs.delay import alarm as delay_alarm
from tidings.jobs.delay import state as delay_state
from tidings.jobs.guard import answering
from tidings.jobs.runtime import Runtime
from tidings.jobs.view import committed, delivery, own_acts, wake_mask
from tidings.jobs.view.coherent import observe
from tidings.jobs.view.read import Observation, fingerprint
from tidings.jobs.wake.stream import NOTIFICATION_KIND, STREAM_MAXLEN
from tidings.store import keys, rates, replies
from tidings.store.jsonfmt import compact, utc_stamp
from tidings.store.keys import AgentKeys
from tidings.store.models import AgentRecord
from tidings.store.registry import AgentRegistry
from tidings.store.scripts import channels as channel_scripts
from tidings.store.scripts import wake as wake_scripts

Result = dict[str, Any]

#: C26: the synthetic call the orchestrator injects with a notification wake.
WAKE_CALL: dict[str, Any] = {
    "name": "notification",
    "arguments": {"action": "check", "input": {}, "reasoning": "notification sync"},
}


def enqueue_stranded(rt: Runtime, agent: AgentRecord) -> list[str]:
    """C15: start a flush for every non-empty buffer whose flag lapsed, except those
    dead-lettered (C52)."""
    k = AgentKeys(agent.agent_id)
    started: list[str] = []
    buffered = {replies.text(member) for member in rt.redis.smembers(k.buffered_channels)}
    for channel in sorted(buffered - dead_letter.dead_channels(rt, agent) if buffered else ()):
        if channel_scripts.claim_stranded(rt.scripts, agent.agent_id, channel,
                                          flag_ttl=rt.settings.flush_flag_ttl):
            rt.dispatch.flush_channel(agent, channel)
            started.append(channel)
    return started


def wake_entry(rt: Runtime, agent: AgentRecord, obs: Observation) -> dict[str, Any] | None:
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


def _unchanged(rt: Runtime, agent: AgentRecord, allow: allowlist.Allowlist) -> bool:
    """Whether one fingerprint pass already equals the committed wake fingerprint.

    Most agents are quiet most ticks: then the outcome of C27 is "stop" whatever a
    full coherent read would say, so the tick skips reading and parsing payloads.
    """
    target = delay_state.live_target(rt, agent, allow)
    raw = fingerprint(agent.root, allow, target if target != DAEMON else None)
    masked = wake_mask.masked_fingerprint(agent.root, raw, target)
    return bool(masked == committed.read(rt, agent).wake(agent.root, target))


@answering("sync_agent")
def sync_agent(rt: Runtime, agent: AgentRecord) -> Result:
    """C27 for one agent; an unexpected failure answers ``internal_error`` (C52)."""
    generation = own_acts.generation(rt, agent)  # C53: taken before anything is read
    state = allowlist.registry_state(rt, agent)
    allow = allowlist.Allowlist(state.hook_channels)
    result: Result = {"status": "ok", "agent_id": agent.agent_id,
                      "flushes": enqueue_stranded(rt, agent), "woke": False}
    delay_alarm.reconcile(rt, agent)
    if _unchanged(rt, agent, allow):
        found = scans.scan(rt, agent, allow, registry_loaded=state.loaded)
        return {**result, "stable": True, "blocked": found.blocked, "oversized": found.oversized}
    obs = observe(rt, agent)
    if not obs.stable:
        return {**result, "stable": False}
    found = scans.scan(rt, agent, allow, registry_loaded=state.loaded)
    result.update(stable=True, blocked=found.blocked, oversized=found.oversized)
    seen = committed.read(rt, agent)
    if obs.masked_fp == seen.wake(agent.root, obs.delayed):
        return result
    if not obs.payloads:
        committed.swap(rt, agent, seen, seen.delivered, obs.masked_fp)
        return result
    wake_id = _signal(rt, agent, seen, obs, generation)
    if wake_id is not None:
        rates.count(rt.redis, rates.WAKES, 1, rt.clock.now())
        result.update(woke=True, wake_id=wake_id)
    return result


def sync_host(rt: Runtime, host: str) -> Result:
    """C27 for every agent registered on ``host``; one agent's failure never stops the rest.

    Clears the host's ``sync:running`` marker at the end, which the scheduler sets
    before it enqueues a tick so that ticks never pile up.
    """
    woke = 0
    failed: list[str] = []
    agents = AgentRegistry(rt.redis).on_host(host)
    try:
        for agent in agents:
            outcome = sync_agent(rt, agent)
            woke += bool(outcome.get("woke"))
            if outcome.get("status") != "ok":
                failed.append(agent.agent_id)
    finally:
        last = {"at": utc_stamp(rt.clock.now()), "agents": len(agents), "woke": woke}
        with rt.redis.pipeline(transaction=False) as pipe:
            pipe.set(keys.sync_last(host), compact(last))
            pipe.delete(keys.sync_running(host))
            pipe.execute()
    return {"status": "ok", "host": host, "agents": len(agents), "woke": woke, "failed": failed}
