"""``wait_for_wake`` on ``redis.asyncio`` (channels.md C26; interfaces.md, ``tidings.aio``).

The very loop of :mod:`tidings.jobs.consumer.wait_loop` that the sync client runs, awaited on
an asyncio client: a waiting agent holds a pooled connection blocked in
``XREAD BLOCK`` and no thread, so one event loop can wait for a thousand agents.
"""

from __future__ import annotations

from redis.asyncio import Redis as AsyncRedis

from tidings.jobs.consumer.wait_loop import (
    BLOCK_SLICE_MS,
    STREAM_MAXLEN,
    Entry,
    check_timeout,
    entries_of,
    run_async,
    wait_loop,
)
from tidings.store.keys import AgentKeys
from tidings.store.replies import text as _text
from tidings.store.scripts import AsyncScripts


async def wait_for_wake(
    aredis: AsyncRedis, scripts: AsyncScripts, agent_id: str, timeout: object
) -> Entry | None:
    """C26: the oldest unconsumed wake signal, awaiting up to ``timeout`` seconds."""
    return await run_async(aredis, scripts, agent_id, wait_loop(check_timeout(timeout)))


async def latest_id(aredis: AsyncRedis, agent_id: str) -> str:
    """The id of the agent's newest wake signal (``0-0`` when there is none)."""
    newest = await aredis.xrevrange(AgentKeys(agent_id).wake_stream, count=1)
    return _text(newest[0][0]) if newest else "0-0"


async def signals_after(
    aredis: AsyncRedis, agent_id: str, after: str, block_ms: int = BLOCK_SLICE_MS
) -> list[tuple[str, Entry]]:
    """Wake signals appended after id ``after``, awaiting up to ``block_ms`` for one.

    Reads only: the agent's cursor is not moved, so a watcher (``tidings mcp``'s
    resource updates) never takes a signal from the orchestrator's ``wait_for_wake``.
    """
    reply = await aredis.xread(
        {AgentKeys(agent_id).wake_stream: after}, count=STREAM_MAXLEN, block=max(1, block_ms)
    )
    return entries_of(reply)
