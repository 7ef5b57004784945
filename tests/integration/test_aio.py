"""``tidings.aio`` (issue 12, acceptance 4; interfaces.md, Plugging into agent frameworks):
the same calls as coroutines, and waiting that holds no thread."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

import tidings
import tidings.aio
from tests.support.groups import TIMING
from tests.support.redis_server import RedisServer
from tidings.jobs.consumer import sync_agent

WAITERS = 300
ADDED_THREADS = 16
WAKE_WITHIN = 2.0


def os_threads() -> int:
    return len(os.listdir("/proc/self/task"))


def write_direct(workdir: Path, name: str, payload: Any) -> None:
    """An outside producer: temp file + atomic rename, no tidings call."""
    folder = workdir / ".notification"
    folder.mkdir(exist_ok=True)
    temp = folder / f".{name}.tmp"
    temp.write_text(json.dumps(payload), encoding="utf-8")
    os.replace(temp, folder / name)


def test_coroutines_give_the_sync_results(fake_redis: Any, tmp_path: Path) -> None:
    async def scenario() -> None:
        async with tidings.aio.connect(client=fake_redis) as hub:
            agent = await hub.agent(tmp_path, inline=True)
            assert (await hub.agents())[0]["agent_id"] == agent.agent_id
            published = await agent.publish_event("system", {"text": "hi"}, wait=True)
            assert published["status"] == "ok" and published["flushed"] is True
            assert (await agent.snapshot())["system"]["data"]["events"][0]["text"] == "hi"
            assert await agent.notification("check") == agent.sync.notification("check")
            assert (
                await agent.call_tool(
                    {"action": "delay", "input": {"channel": "system", "seconds": None}}
                )
            )["reason"] == "invalid_delay"
            turn = await agent.prepare_turn()
            assert isinstance(turn, tidings.Turn)
            assert (await agent.prepare_turn())["reason"] == "turn_in_progress"
            assert (await agent.finish_turn(turn))["status"] == "ok"
            admitted = await agent.admit("ticket", "a ticket", wake=True)
            assert admitted["status"] == "ok"
            signal = await agent.wait_for_wake(5)
            assert signal is not None and signal["wake_id"]
            assert await agent.wait_for_wake(0) is None
            with pytest.raises(tidings.TidingsError) as info:
                await agent.wait_for_wake(-1)
            assert info.value.reason == "invalid_timeout"
            assert (await agent.inbox())[0]["summary"] == "a ticket"

    asyncio.run(scenario())


@TIMING
def test_wait_returns_on_a_wake_appended_while_waiting(fake_redis: Any, tmp_path: Path) -> None:
    async def scenario() -> None:
        hub = await tidings.aio.connect(client=fake_redis)
        try:
            agent = await hub.agent(tmp_path, inline=True)
            waiter = asyncio.create_task(agent.wait_for_wake(10))
            await asyncio.sleep(0.05)
            assert not waiter.done()
            start = time.monotonic()
            await agent.admit("ticket", "wake me", wake=True)
            assert (await asyncio.wait_for(waiter, 5)) is not None
            assert time.monotonic() - start < 1.0
        finally:
            await hub.aclose()

    asyncio.run(scenario())


@pytest.mark.redis_server
def test_acceptance4_300_waiters_add_few_threads(redis_server: RedisServer, tmp_path: Path) -> None:
    redis_server.client().flushall()
    baseline = os_threads()

    async def scenario() -> tuple[int, float]:
        async with tidings.aio.connect(redis_server.url) as hub:
            agents = []
            for n in range(WAITERS):
                (tmp_path / f"w{n}").mkdir()
                agents.append(await hub.agent(tmp_path / f"w{n}"))
            waits = [asyncio.create_task(a.wait_for_wake(30)) for a in agents]
            await asyncio.sleep(1.0)  # every waiter is blocked in XREAD by now
            during = os_threads()
            target = agents[7]
            write_direct(Path(target.workdir), "mcp.x.json", {"header": "1 new item"})
            tick = await asyncio.to_thread(sync_agent, hub.sync.runtime, target.record)
            ticked = time.monotonic()
            assert tick["woke"] is True, tick
            signal = await asyncio.wait_for(waits[7], 10)
            latency = time.monotonic() - ticked
            assert signal is not None and signal["wake_id"] == tick["wake_id"]
            assert not any(w.done() for n, w in enumerate(waits) if n != 7)
            for w in waits:
                w.cancel()
            await asyncio.gather(*waits, return_exceptions=True)
            return during, latency

    during, latency = asyncio.run(scenario())
    assert during - baseline <= ADDED_THREADS, (baseline, during)
    assert latency <= WAKE_WITHIN, latency


def test_worker_paths_awaited(tmp_path: Path) -> None:
    """publish(wait=True) and prepare_turn's group through a worker, awaited natively."""

    async def scenario() -> None:
        async with tidings.aio.connect("embedded", background=True) as hub:
            agent = await hub.agent(tmp_path)
            assert not agent.inline
            published = await agent.publish_event("system", {"text": "hi"}, wait=True)
            assert published["flushed"] is True, published
            turn = await agent.prepare_turn()
            assert isinstance(turn, tidings.Turn), turn
            assert "system" in json.dumps(turn.attention)
            assert (await agent.finish_turn(turn))["status"] == "ok"

    asyncio.run(scenario())
