"""The agent's wake stream and ``wait_for_wake`` (channels.md C26).

Each agent has a Redis stream of wake signals (about the last 1,000 kept) and a
cursor: the id of the last entry its orchestrator consumed. Every stream entry
has two fields, ``kind`` and ``entry`` (the whole signal as JSON); other
producers of wake signals (the inbox's ``admit(wake=True)``) append the same
two fields from their own scripts.
"""

from __future__ import annotations

import math
import time
from typing import Any, cast

from tidings.jobs.runtime import Runtime
from tidings.store import replies
from tidings.store.errors import TidingsError
from tidings.store.jsonfmt import compact
from tidings.store.jsonread import MAX_DEPTH, loads_or
from tidings.store.keys import AgentKeys
from tidings.store.models import AgentRecord
from tidings.store.scripts import wake as wake_scripts

#: C26: approximately how many entries the stream keeps.
STREAM_MAXLEN = 1000
NOTIFICATION_KIND = "notification"
#: The longest single blocking read; clients have a 30 s socket timeout.
BLOCK_SLICE_MS = 10_000
#: C26: a wake entry holds payloads (each within C47's depth) under ~8 levels of its own.
ENTRY_DEPTH = MAX_DEPTH + 16

Entry = dict[str, Any]


def append(rt: Runtime, agent: AgentRecord, entry: Entry) -> str:
    """Append one signal ``{"kind": ..., ...}``; returns its stream id."""
    kind = entry.get("kind")
    if not isinstance(kind, str) or not kind:
        raise TidingsError("a wake signal needs a kind", reason="invalid_wake")
    wake_id = rt.redis.xadd(
        AgentKeys(agent.agent_id).wake_stream, {"kind": kind, "entry": compact(entry)},
        maxlen=STREAM_MAXLEN, approximate=True,
    )
    return replies.text(wake_id)


def _decode(fields: dict[Any, Any]) -> Entry:
    decoded = {replies.text(k): replies.text(v) for k, v in fields.items()}
    if "entry" in decoded:
        # A wake entry nests a stamped result several levels deep: bound it loosely.
        value = loads_or(decoded["entry"], None, max_depth=ENTRY_DEPTH)
        if isinstance(value, dict):
            return value
    return decoded


def _choose(entries: list[tuple[str, Entry]]) -> tuple[str, Entry]:
    """The oldest unconsumed of the (non-empty) ``entries``, skipping a notification that
    a newer one supersedes; the newest entry is never superseded."""
    for position, (wake_id, entry) in enumerate(entries[:-1]):
        superseded = entry.get("kind") == NOTIFICATION_KIND and any(
            later.get("kind") == NOTIFICATION_KIND for _, later in entries[position + 1:]
        )
        if not superseded:
            return wake_id, entry
    return entries[-1]


def _check_timeout(timeout: object) -> float:
    if (isinstance(timeout, bool) or not isinstance(timeout, int | float)
            or not math.isfinite(timeout) or timeout < 0):
        raise TidingsError("timeout must be a finite number of seconds >= 0",
                           reason="invalid_timeout")
    return float(timeout)


def _unconsumed(rt: Runtime, k: AgentKeys, cursor: str) -> list[tuple[str, Entry]]:
    # RESP2 XREAD: [[stream, [(id, {field: value}), ...]]], or nothing.
    reply = cast("list[tuple[bytes, list[tuple[bytes, dict[bytes, bytes]]]]] | None",
                 rt.redis.xread({k.wake_stream: cursor or "0-0"}, count=STREAM_MAXLEN * 2))
    if not reply:
        return []
    return [(replies.text(wake_id), _decode(fields)) for wake_id, fields in reply[0][1]]


def try_consume(rt: Runtime, agent: AgentRecord) -> Entry | None:
    """One non-blocking attempt: the chosen entry with ``wake_id``, cursor advanced."""
    k = AgentKeys(agent.agent_id)
    while True:
        raw = rt.redis.get(k.wake_cursor)
        cursor = replies.text(raw) if raw is not None else ""
        entries = _unconsumed(rt, k, cursor)
        if not entries:
            return None
        wake_id, entry = _choose(entries)
        if wake_scripts.advance_cursor(rt.scripts, agent.agent_id, expected=cursor,
                                       cursor=wake_id):
            return {**entry, "wake_id": wake_id}


def wait_for_wake(rt: Runtime, agent: AgentRecord, timeout: object) -> Entry | None:
    """C26: the oldest unconsumed wake signal, waiting up to ``timeout`` seconds."""
    seconds = _check_timeout(timeout)
    k = AgentKeys(agent.agent_id)
    # Redis blocks in real time, so the deadline is kept in real time too.
    deadline = time.monotonic() + seconds
    while True:
        found = try_consume(rt, agent)
        if found is not None:
            return found
        remaining_ms = int((deadline - time.monotonic()) * 1000)
        if remaining_ms <= 0:
            return None
        # Block from the cursor, not the stream's end: an entry appended since the
        # attempt above then returns at once instead of being waited past.
        raw = rt.redis.get(k.wake_cursor)
        since = replies.text(raw) if raw is not None else "0-0"
        rt.redis.xread({k.wake_stream: since}, count=1,
                       block=max(1, min(remaining_ms, BLOCK_SLICE_MS)))
