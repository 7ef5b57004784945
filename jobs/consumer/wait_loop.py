"""C26's one wait loop, for the sync and the asyncio client alike (issue 22).

The loop is written once, as a generator of Redis steps: read the cursor, read the
entries after it (blocking for at most what is left of the timeout), choose the oldest
unconsumed one, and move the cursor to it by compare-and-set. :func:`run` drives it on
a redis-py client (:mod:`tidings.jobs.consumer.wake_stream`), :func:`run_async` on a
``redis.asyncio`` one (:mod:`tidings.jobs.consumer.waiting`); neither decides anything.
"""

from __future__ import annotations

import math
import time
from collections.abc import Generator
from dataclasses import dataclass
from typing import cast

from redis import Redis
from redis.asyncio import Redis as AsyncRedis

from tidings.store import replies
from tidings.store.errors import TidingsError
from tidings.store.jsonread import MAX_DEPTH, loads_or
from tidings.store.keys import AgentKeys
from tidings.store.scripts import AsyncScripts, Scripts
from tidings.store.scripts import wake as wake_scripts

#: C26: approximately how many entries the stream keeps.
STREAM_MAXLEN = 1000
NOTIFICATION_KIND = "notification"
#: The longest single blocking read; clients have a 30 s socket timeout.
BLOCK_SLICE_MS = 10_000
#: C26: a wake entry holds payloads (each within C47's depth) under ~8 levels of its own.
ENTRY_DEPTH = MAX_DEPTH + 16

#: One wake signal: ``kind`` and what its producer put beside it (open JSON).
Entry = dict[str, object]
#: RESP2 XREAD: ``[[stream, [(id, {field: value}), ...]]]``, or nothing.
XReadReply = list[tuple[bytes, list[tuple[bytes, dict[bytes, bytes]]]]] | None


@dataclass(frozen=True)
class ReadCursor:
    """Step: ``GET`` the cursor; send back the raw reply."""


@dataclass(frozen=True)
class ReadAfter:
    """Step: ``XREAD`` after ``cursor`` (blocking ``block_ms``, or not when ``None``)."""

    cursor: str
    block_ms: int | None


@dataclass(frozen=True)
class Advance:
    """Step: the cursor script from ``expected`` to ``cursor``; send back whether it moved."""

    expected: str
    cursor: str


Step = ReadCursor | ReadAfter | Advance
#: The loop: yields steps, is sent their replies, returns the consumed entry or ``None``.
Loop = Generator[Step, object, Entry | None]


def decode(fields: dict[bytes, bytes]) -> Entry:
    """One stream entry's fields as the signal its producer appended."""
    decoded = {replies.text(k): replies.text(v) for k, v in fields.items()}
    if "entry" in decoded:
        # A wake entry nests a stamped result several levels deep: bound it loosely.
        value = loads_or(decoded["entry"], None, max_depth=ENTRY_DEPTH)
        if isinstance(value, dict):
            return cast("Entry", value)  # JSON objects have str keys
    return dict(decoded)


def entries_of(reply: object) -> list[tuple[str, Entry]]:
    """The ``(wake_id, entry)`` pairs of an ``XREAD`` reply."""
    read = cast("XReadReply", reply)
    if not read:
        return []
    return [(replies.text(wake_id), decode(fields)) for wake_id, fields in read[0][1]]


def choose(entries: list[tuple[str, Entry]]) -> tuple[str, Entry]:
    """The oldest unconsumed of the (non-empty) ``entries``, skipping a notification that
    a newer one supersedes; the newest entry is never superseded."""
    for position, (wake_id, entry) in enumerate(entries[:-1]):
        superseded = entry.get("kind") == NOTIFICATION_KIND and any(
            later.get("kind") == NOTIFICATION_KIND for _, later in entries[position + 1 :]
        )
        if not superseded:
            return wake_id, entry
    return entries[-1]


def check_timeout(timeout: object) -> float:
    """``timeout`` as seconds, or ``invalid_timeout``."""
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not math.isfinite(timeout)
        or timeout < 0
    ):
        raise TidingsError(
            "timeout must be a finite number of seconds >= 0", reason="invalid_timeout"
        )
    return float(timeout)


def wait_loop(seconds: float) -> Loop:
    """C26: consume the oldest unconsumed signal, waiting up to ``seconds``.

    One read serves both the look and the wait: ``XREAD BLOCK`` from the cursor returns
    at once when entries are there, else on the first one appended. Redis blocks in real
    time, so the deadline is kept in real time too.
    """
    deadline = time.monotonic() + seconds
    while True:
        raw = yield ReadCursor()
        cursor = replies.text(raw) if raw is not None else ""
        remaining_ms = int((deadline - time.monotonic()) * 1000)
        block = max(1, min(remaining_ms, BLOCK_SLICE_MS)) if remaining_ms > 0 else None
        entries = entries_of((yield ReadAfter(cursor or "0-0", block)))
        if entries:
            wake_id, entry = choose(entries)
            if (yield Advance(cursor, wake_id)):
                return {**entry, "wake_id": wake_id}
        elif block is None or time.monotonic() >= deadline:
            return None  # the read above waited out the rest of the timeout


def run(redis: Redis, scripts: Scripts, agent_id: str, loop: Loop) -> Entry | None:
    """Drive ``loop`` on a redis-py client."""
    k = AgentKeys(agent_id)
    reply: object = None
    while True:
        try:
            step = loop.send(reply)
        except StopIteration as done:
            return cast("Entry | None", done.value)
        if isinstance(step, ReadCursor):
            reply = redis.get(k.wake_cursor)
        elif isinstance(step, ReadAfter):
            reply = redis.xread(
                {k.wake_stream: step.cursor}, count=STREAM_MAXLEN * 2, block=step.block_ms
            )
        else:
            reply = wake_scripts.advance_cursor(
                scripts, agent_id, expected=step.expected, cursor=step.cursor
            )


async def run_async(
    redis: AsyncRedis, scripts: AsyncScripts, agent_id: str, loop: Loop
) -> Entry | None:
    """Drive ``loop`` on a ``redis.asyncio`` client: a waiting agent holds a pooled
    connection blocked in ``XREAD BLOCK`` and no thread."""
    k = AgentKeys(agent_id)
    reply: object = None
    while True:
        try:
            step = loop.send(reply)
        except StopIteration as done:
            return cast("Entry | None", done.value)
        if isinstance(step, ReadCursor):
            reply = await redis.get(k.wake_cursor)
        elif isinstance(step, ReadAfter):
            reply = await redis.xread(
                {k.wake_stream: step.cursor}, count=STREAM_MAXLEN * 2, block=step.block_ms
            )
        else:
            reply = await wake_scripts.advance_cursor_async(
                scripts, agent_id, expected=step.expected, cursor=step.cursor
            )
