"""Issue 21, acceptance 1: the snippet of the issue, run as written, on the embedded store
and on a real Redis, sync and aio; and the same through ``tidings`` processes (the CLI
path as a user runs it). ``snapshot()`` is a coherent read, so an overdue
delay's alarm shows in the *first* snapshot after the deadline (delay.md D9,
channels.md C22) — before the fix only ``agent.stamp`` published it.

Real time, as in the snippet: the shortest delay is one second, and the test polls the
wall clock past the deadline rather than sleeping a fixed time.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

import tidings
import tidings.aio
from tests.support.polling import wait_until
from tests.support.processes import add_agent, run_cli
from tests.support.redis_server import RedisServer

SOUL = {"header": "s", "data": {"count": 7, "events": [1]}}
#: How far past the deadline the first snapshot is taken (seconds).
MARGIN = 0.05


@pytest.fixture(params=["embedded", "real"])
def url(request: pytest.FixtureRequest) -> str:
    if request.param == "embedded":
        return "embedded"
    server: RedisServer = request.getfixturevalue("redis_server")
    server.client().flushall()
    return server.url


def past(delay: dict[str, Any]) -> None:
    """Poll the wall clock until the delay's deadline (whole seconds in ``deadline_at``,
    so one more second bounds it) has passed."""
    assert delay["status"] == "ok", delay
    deadline = time.time() + delay["seconds"]
    wait_until(
        lambda: time.time() >= deadline + MARGIN,
        timeout=delay["seconds"] + 5,
        what="the delay's deadline",
    )


def state(workdir: Path) -> Any:
    return json.loads((workdir / ".notification" / ".delay_state.json").read_bytes())


def test_first_sync_snapshot_after_the_deadline_shows_the_alarm(url: str, tmp_path: Path) -> None:
    with tidings.connect(url) as hub:
        agent = hub.agent(tmp_path, inline=True)
        agent.publish("soul", SOUL, wait=True)
        delay = agent.notification("delay", {"channel": "soul", "seconds": 1})
        assert sorted(agent.snapshot()) == []
        past(delay)
        assert sorted(agent.snapshot()) == ["delay-alarm", "soul"]
        assert state(tmp_path)["status"] == "published"


def test_first_aio_snapshot_after_the_deadline_shows_the_alarm(url: str, tmp_path: Path) -> None:
    async def scenario() -> None:
        async with tidings.aio.connect(url) as hub:
            agent = await hub.agent(tmp_path, inline=True)
            await agent.publish("soul", SOUL, wait=True)
            delay = await agent.notification("delay", {"channel": "soul", "seconds": 1})
            assert sorted(await agent.snapshot()) == []
            await asyncio.to_thread(past, delay)
            assert sorted(await agent.snapshot()) == ["delay-alarm", "soul"]
            assert state(tmp_path)["status"] == "published"

    asyncio.run(scenario())


@pytest.mark.redis_server
def test_first_cli_check_after_the_deadline_shows_the_alarm(
    redis_server: RedisServer, e2e_env: dict[str, str], tmp_path: Path
) -> None:
    redis_server.client().flushall()
    env = {**e2e_env, "TIDINGS_REDIS_URL": redis_server.url}
    add_agent(tmp_path, env)

    def cli(*args: str) -> Any:
        done = run_cli([*args, "--workdir", str(tmp_path), "--json", "--inline"], env)
        assert done.returncode == 0, done.stdout + done.stderr
        return json.loads(done.stdout.splitlines()[-1])

    cli("publish", "soul", "--envelope", json.dumps(SOUL), "--wait")
    delay = cli("notification", "delay", "--input", '{"channel": "soul", "seconds": 1}')
    past(delay)
    attention = cli("check")["_meta"]["agent_meta"]["notifications"]["attention"]
    assert sorted(attention) == ["delay-alarm", "soul"]
    assert state(tmp_path)["status"] == "published"
