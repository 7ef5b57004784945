"""Issue 25, acceptance 4: ``tidings worker`` and ``tidings scheduler`` with agent state on
a Redis Cluster of three primaries and the broker on a standalone Redis."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

import tidings
from tests.support.polling import wait_until
from tests.support.processes import ProcessGroup, add_agent, run_cli
from tests.support.redis_cluster import RedisCluster
from tests.support.redis_server import RedisServer
from tidings.store.settings import Settings

pytestmark = [pytest.mark.redis_server, pytest.mark.e2e]


def events_of(workdir: Path, channel: str) -> list[dict[str, Any]]:
    try:
        data = json.loads((workdir / ".notification" / f"{channel}.json").read_text("utf-8"))
    except FileNotFoundError:
        return []
    found: list[dict[str, Any]] = data["data"]["events"]
    return found


def write_direct(workdir: Path, name: str, payload: Any) -> None:
    """An outside producer: temp file + atomic rename, no tidings call."""
    folder = workdir / ".notification"
    folder.mkdir(exist_ok=True)
    temp = folder / f".{name}.tmp"
    temp.write_text(json.dumps(payload), encoding="utf-8")
    os.replace(temp, folder / name)


def test_worker_and_scheduler_on_a_cluster(
    procs: ProcessGroup,
    e2e_env: dict[str, str],
    redis_cluster: RedisCluster,
    own_redis: RedisServer,
    tmp_path: Path,
) -> None:
    """Non-inline events flush, the sync tick wakes the agent, the scheduler fires an
    alarm, and ``tidings publish`` and ``tidings status`` work from the CLI."""
    redis_cluster.flush()
    env = {"TIDINGS_REDIS_URL": redis_cluster.url, "TIDINGS_BROKER_URL": own_redis.url}
    run_env = {**e2e_env, **env}
    procs.start("worker", "--threads", "2", env=env).wait_ready()
    procs.start("scheduler", env=env).wait_ready()
    workdir = tmp_path / "w"
    workdir.mkdir()
    record = add_agent(workdir, run_env)

    done = run_cli(
        ["publish", "mcp.cli", "--event", '{"text":"hi"}', "--workdir", str(workdir)], run_env
    )
    assert done.returncode == 0, done.stderr
    wait_until(lambda: events_of(workdir, "mcp.cli"), timeout=10, what="the CLI's event")

    host = e2e_env["TIDINGS_HOST"]
    with tidings.connect(
        redis_cluster.url, broker_url=own_redis.url, settings=Settings(host=host)
    ) as hub:
        agent = hub.find_agent(workdir)
        assert agent is not None
        published = agent.publish_event("mcp.hub", {"n": 1}, wait=True)
        assert published["status"] == "ok" and published["flushed"] is True, published
        while agent.wait_for_wake(0) is not None:  # wakes of the events above
            pass
        write_direct(workdir, "mcp.outside.json", {"header": "1 new item", "data": {"id": 1}})
        signal = agent.wait_for_wake(10)
        assert signal is not None, "the sync tick did not wake the agent"
        assert agent.notification("delay", {"channel": "mcp.hub", "seconds": 1})["status"] == "ok"
        wait_until(
            lambda: (workdir / ".notification" / "delay-alarm.json").exists(),
            timeout=15,
            what="the scheduler's alarm",
        )

    status = run_cli(["status", "--json"], run_env)
    assert status.returncode == 0, status.stderr
    figures = json.loads(status.stdout)
    assert [a["agent_id"] for a in figures["agents"]] == [record["agent_id"]]
    assert figures["schedulers"][host]["leader"]
    assert {q["name"] for q in figures["queues"]} >= {
        f"tidings.host.{host}",
        f"tidings.scheduler.{host}",
    }
    keys = [k for found in redis_cluster.keys_by_node().values() for k in found]
    assert keys and all(k.startswith(("{a:", "{h:")) for k in keys), keys
