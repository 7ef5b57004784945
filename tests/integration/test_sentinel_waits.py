"""Waits that scale on Sentinel too (issue 25, "Waits that scale"): the asyncio client
behind a Sentinel URL shares a bounded pool that queues a wait for a connection, as the
plain and cluster clients do, instead of raising ``Too many connections``."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import tidings.aio
from tests.support.sentinel import sentinel_set
from tidings.store import async_connection
from tidings.store.settings import Settings

pytestmark = pytest.mark.redis_server

#: Waiting agents of one event loop, far more than the pool below holds.
WAITERS = 60
#: The pool size for the test: a quarter of a connection per waiter.
POOL = 8


def test_waiters_behind_sentinel_queue_for_a_connection(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(async_connection, "MAX_CONNECTIONS", POOL)
    replica_set = sentinel_set(tmp_path / "redis")

    async def scenario() -> list[object]:
        async with tidings.aio.connect(replica_set.url,
                                       settings=Settings(host="sentinel-waits")) as hub:
            agents = []
            for n in range(WAITERS):
                (tmp_path / f"a{n}").mkdir()
                agents.append(await hub.agent(tmp_path / f"a{n}", inline=True))
            for agent in agents[::3]:
                await agent.admit("ticket", "wake", wake=True)
            return await asyncio.gather(*(a.wait_for_wake(0.3) for a in agents),
                                        return_exceptions=True)

    try:
        results = asyncio.run(scenario())
    finally:
        replica_set.stop()
    failures = [r for r in results if isinstance(r, BaseException)]
    assert not failures, failures[:3]
    assert len([r for r in results if r is not None]) == len(range(0, WAITERS, 3))
