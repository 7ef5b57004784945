"""``wait_for_wake`` on ``redis.asyncio`` (channels.md C26; api.md, ``tidings.aio``).

The same choice and cursor script as :mod:`tidings.jobs.wake.stream`, awaited on
an asyncio client: a waiting agent holds a pooled connection blocked in
``XREAD BLOCK`` and no thread, so one event loop can wait for a thousand agents.
"""

from __future__ import annotations

import time
from typing import Any

from tidings.jobs.wake.stream import (
    BLOCK_SLICE_MS,
    STREAM_MAXLEN,
    Entry,
    _check_timeout,
    _choose,
    _decode,
)
from tidings.store.keys import AgentKeys
from tidings.store.replies import text as _text
from tidings.store.scripts import AsyncScripts
from tidings.store.scripts import wake as wake_scripts


async def wait_for_wake(
    aredis: Any, scripts: AsyncScripts, agent_id: str, timeout: object
) -> Entry | None:
    """C26: the oldest unconsumed wake signal, awaiting up to ``timeout`` seconds.

    One read serves both the look and the wait: ``XREAD BLOCK`` from the cursor
    returns at once when entries are there, else on the first one appended, so a
    wake costs a cursor read, that read and the cursor script.
    """
    seconds = _check_timeout(timeout)
    k = AgentKeys(agent_id)
    deadline = time.monotonic() + seconds
    while True:
        raw = await aredis.get(k.wake_cursor)
        cursor = _text(raw) if raw is not None else ""
        remaining_ms = int((deadline - time.monotonic()) * 1000)
        block = max(1, min(remaining_ms, BLOCK_SLICE_MS)) if remaining_ms > 0 else None
        reply = await aredis.xread({k.wake_stream: cursor or "0-0"}, count=STREAM_MAXLEN * 2,
                                   block=block)
        entries = [(_text(wake_id), _decode(fields)) for wake_id, fields in reply[0][1]] \
            if reply else []
        if entries:
            wake_id, entry = _choose(entries)
            if await wake_scripts.advance_cursor_async(scripts, agent_id, expected=cursor,
                                                       cursor=wake_id):
                return {**entry, "wake_id": wake_id}
        elif block is None or time.monotonic() >= deadline:
            return None  # the read above waited out the rest of the timeout


async def latest_id(aredis: Any, agent_id: str) -> str:
    """The id of the agent's newest wake signal (``0-0`` when there is none)."""
    newest = await aredis.xrevrange(AgentKeys(agent_id).wake_stream, count=1)
    return _text(newest[0][0]) if newest else "0-0"


async def signals_after(
    aredis: Any, agent_id: str, after: str, block_ms: int = BLOCK_SLICE_MS
) -> list[tuple[str, Entry]]:
    """Wake signals appended after id ``after``, awaiting up to ``block_ms`` for one.

    Reads only: the agent's cursor is not moved, so a watcher (``tidings mcp``'s
    resource updates) never takes a signal from the orchestrator's ``wait_for_wake``.
    """
    reply = await aredis.xread({AgentKeys(agent_id).wake_stream: after}, count=STREAM_MAXLEN,
                               block=max(1, block_ms))
    if not reply:
        return []
    return [(_text(wake_id), _decode(fields)) for wake_id, fields in reply[0][1]]
