"""Many ``tidings.aio`` agents of one event loop waiting at once (issue 25, "Waits that
scale"): every third is woken, the rest time out; no wait may fail."""

from __future__ import annotations

import asyncio
from pathlib import Path

import tidings.aio
from tidings.store.settings import Settings


def wait_all(
    state_url: str, broker_url: str | None, host: str, base: Path, count: int, seconds: float
) -> list[object]:
    """Each waiter's ``wait_for_wake(seconds)`` answer (or what it raised), in order."""

    async def scenario() -> list[object]:
        async with tidings.aio.connect(
            state_url, broker_url=broker_url, settings=Settings(host=host)
        ) as hub:
            agents = []
            for n in range(count):
                (base / f"a{n}").mkdir()
                agents.append(await hub.agent(base / f"a{n}", inline=True))
            for agent in agents[::3]:
                await agent.admit("ticket", "wake", wake=True)
            return await asyncio.gather(
                *(a.wait_for_wake(seconds) for a in agents), return_exceptions=True
            )

    return asyncio.run(scenario())


def woken_count(count: int) -> int:
    """How many of ``count`` waiters :func:`wait_all` wakes."""
    return len(range(0, count, 3))
