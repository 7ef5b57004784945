"""The agent's wake stream and ``wait_for_wake`` (channels.md C26).

Each agent has a Redis stream of wake signals (about the last 1,000 kept) and a
cursor: the id of the last entry its orchestrator consumed. Every stream entry
has two fields, ``kind`` and ``entry`` (the whole signal as JSON); other
producers of wake signals (the inbox's ``admit(wake=True)``) append the same
two fields from their own scripts. The wait itself is :mod:`tidings.jobs.consumer.wait_loop`'s,
shared with the asyncio client.
"""

from __future__ import annotations

from tidings.jobs.consumer.wait_loop import STREAM_MAXLEN, Entry, check_timeout, run, wait_loop
from tidings.jobs.runtime import Runtime
from tidings.store import replies
from tidings.store.errors import TidingsError
from tidings.store.jsonfmt import compact
from tidings.store.keys import AgentKeys
from tidings.store.models import AgentRecord


def append(rt: Runtime, agent: AgentRecord, entry: Entry) -> str:
    """Append one signal ``{"kind": ..., ...}``; returns its stream id."""
    kind = entry.get("kind")
    if not isinstance(kind, str) or not kind:
        raise TidingsError("a wake signal needs a kind", reason="invalid_wake")
    wake_id = rt.redis.xadd(
        AgentKeys(agent.agent_id).wake_stream,
        {"kind": kind, "entry": compact(entry)},
        maxlen=STREAM_MAXLEN,
        approximate=True,
    )
    return replies.text(wake_id)


def try_consume(rt: Runtime, agent: AgentRecord) -> Entry | None:
    """One non-blocking attempt: the chosen entry with ``wake_id``, cursor advanced."""
    return run(rt.redis, rt.scripts, agent.agent_id, wait_loop(0.0))


def wait_for_wake(rt: Runtime, agent: AgentRecord, timeout: object) -> Entry | None:
    """C26: the oldest unconsumed wake signal, waiting up to ``timeout`` seconds."""
    return run(rt.redis, rt.scripts, agent.agent_id, wait_loop(check_timeout(timeout)))
