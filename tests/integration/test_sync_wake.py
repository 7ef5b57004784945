"""Wake on direct writes and the blocked-channel warning with real processes
(channels.md C26-C28; issue 4 acceptance 3): a real ``tidings worker`` and
``tidings scheduler`` (whose sync tick runs every ``TIDINGS_SYNC_INTERVAL``,
default 1 s) on a real redis-server.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

import tidings
from tests.support.groups import TIMING
from tests.support.polling import wait_until
from tests.support.processes import ProcessGroup, TidingsProcess
from tests.support.redis_server import RedisServer
from tidings.store.keys import AgentKeys
from tidings.store.settings import Settings

pytestmark = pytest.mark.redis_server


@pytest.fixture
def redis(own_redis: RedisServer) -> RedisServer:
    return own_redis


@pytest.fixture
def env(e2e_env: dict[str, str], redis: RedisServer) -> dict[str, str]:
    return {**e2e_env, "TIDINGS_REDIS_URL": redis.url}


def start_worker(procs: ProcessGroup, env: dict[str, str]) -> TidingsProcess:
    worker = procs.start("worker", "--threads", "2", env=env)
    worker.wait_ready()
    return worker


def start_scheduler(procs: ProcessGroup, env: dict[str, str]) -> TidingsProcess:
    """The host's scheduler, once it leads (its sync tick runs from then on)."""
    scheduler = procs.start("scheduler", env=env)
    scheduler.wait_json(lambda line: line.get("status") == "leader")
    return scheduler


def write_direct(workdir: Path, name: str, payload: Any) -> None:
    """An outside producer: temp file + atomic rename, no tidings call."""
    d = workdir / ".notification"
    d.mkdir(exist_ok=True)
    temp = d / f".{name}.producer.tmp"
    temp.write_text(json.dumps(payload), encoding="utf-8")
    os.replace(temp, d / name)


def refs(workdir: Path) -> list[Any]:
    try:
        events = json.loads((workdir / ".notification" / "system.json").read_bytes())
    except FileNotFoundError:
        return []
    return [e.get("ref_id") for e in events["data"]["events"]]


def drain(agent: tidings.Agent) -> None:
    while agent.wait_for_wake(0) is not None:
        pass


@TIMING
def test_acceptance3_direct_write_wakes_and_blocked_channel_warns_once(
    env: dict[str, str], procs: ProcessGroup, tmp_path: Path
) -> None:
    workdir = tmp_path / "agent"
    workdir.mkdir()
    settings = Settings(redis_url=env["TIDINGS_REDIS_URL"], host=env["TIDINGS_HOST"])
    worker = start_worker(procs, env)
    tick = start_scheduler(procs, env)
    hub = tidings.connect(settings.redis_url, settings=settings)
    try:
        agent = hub.agent(workdir)
        assert settings.sync_interval == 1.0  # the default interval

        # 1. a registered (mcp.) channel written directly wakes the agent within 1.5 s
        wake_fp = AgentKeys(agent.agent_id).wake_fp
        written = time.monotonic()
        write_direct(workdir, "mcp.x.json", {"header": "1 new item", "data": {"id": 1}})
        signal = agent.wait_for_wake(5)
        latency = time.monotonic() - written
        assert signal is not None and latency < 1.5, latency
        attention = signal["result"]["_meta"]["agent_meta"]["notifications"]["attention"]
        assert list(attention) == ["mcp.x"]

        # 2. an unregistered channel written the same way: one warning, which wakes once
        write_direct(workdir, "stray.json", {"header": "nobody registered me"})
        signal = agent.wait_for_wake(5)
        assert signal is not None
        attention = signal["result"]["_meta"]["agent_meta"]["notifications"]["attention"]
        assert "stray" not in attention
        assert [e["ref_id"] for e in attention["system"]["data"]["events"]] == [
            "blocked_channel:stray"
        ]
        write_direct(workdir, "stray.json", {"header": "changed, still blocked"})
        assert agent.wait_for_wake(2.5) is None  # the blocked file never moves the wake fp
        assert refs(workdir) == ["blocked_channel:stray"]
        assert "stray" not in agent.snapshot()
        assert "stray.json" not in hub.redis.get(wake_fp).decode()

        # the agent handles the warning; its own dismissal does not wake it
        gone = agent.notification("dismiss_ref", {"ref_id": "blocked_channel:stray"})
        assert gone["removed"] == 1
        assert agent.wait_for_wake(1.5) is None
    finally:
        hub.close()

    # 3. restart every process: the dedup set lives in Redis, so no second warning
    worker.kill()
    tick.kill()
    worker = start_worker(procs, env)
    tick = start_scheduler(procs, env)
    hub = tidings.connect(settings.redis_url, settings=settings)
    try:
        agent = hub.agent(workdir)
        write_direct(workdir, "mcp.x.json", {"header": "after restart", "data": {"id": 2}})
        signal = wait_until(lambda: agent.wait_for_wake(1), timeout=10, what="a wake")
        attention = signal["result"]["_meta"]["agent_meta"]["notifications"]["attention"]
        assert list(attention) == ["mcp.x"]  # the stray file stayed blocked, unwarned
        assert agent.wait_for_wake(2.5) is None
        assert refs(workdir) == []
        assert hub.redis.sismember(AgentKeys(agent.agent_id).blocked, "stray")
    finally:
        hub.close()
        tick.kill()
        worker.stop()
