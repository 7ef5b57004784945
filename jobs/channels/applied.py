"""``publish(..., wait=True)`` on ``redis.asyncio`` (channels.md C11; interfaces.md,
``tidings.aio``): await the channel's applied sequence with no thread held."""

from __future__ import annotations

import asyncio

from redis import Redis
from redis.asyncio import Redis as AsyncRedis

from tidings.jobs.channels.publishing import WAIT_SECONDS
from tidings.store.keys import AgentKeys

#: First and longest pause between two reads of the applied sequence (seconds).
FIRST_PAUSE = 0.002
LONGEST_PAUSE = 0.05


async def applied_through(aredis: AsyncRedis, agent_id: str, channel: str) -> int:
    raw = await aredis.get(AgentKeys(agent_id).applied(channel))
    return int(raw) if raw else 0


async def wait_applied(
    aredis: AsyncRedis, agent_id: str, channel: str, seq: int, seconds: float = WAIT_SECONDS
) -> bool:
    """True once the flush applied record ``seq`` of ``channel`` (within ``seconds``)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    pause = FIRST_PAUSE
    while loop.time() < deadline:
        if await applied_through(aredis, agent_id, channel) >= seq:
            return True
        await asyncio.sleep(pause)
        pause = min(pause * 2, LONGEST_PAUSE)
    return await applied_through(aredis, agent_id, channel) >= seq


def pushed_through(redis: Redis, agent_id: str, channel: str) -> int:
    """The channel's sequence now: read right after a push, it bounds that record's own."""
    raw = redis.get(AgentKeys(agent_id).sequence(channel))
    return int(raw) if raw else 0
