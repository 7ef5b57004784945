"""``Hub.move_agent``: the registry change and the run fence (store/placement.py), issue 7."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import tidings
from tests.support.polling import wait_until
from tests.support.redis_server import RedisServer
from tidings._hub import Hub
from tidings.store.clock import SystemClock
from tidings.store.placement import RunFence, running_key
from tidings.store.settings import Settings
from tidings.workers.actors import WorkdirMissing
from tidings.workers.routing import host_queue

pytestmark = pytest.mark.redis_server


@pytest.fixture
def hub(redis_server: RedisServer) -> Iterator[Hub]:
    client = redis_server.client()
    client.flushall()
    opened = tidings.connect(client=client, settings=Settings(host="ha"))
    yield opened
    opened.close()
    client.close()


def test_move_waits_for_the_old_hosts_run_under_way(hub: Hub, tmp_path: Path) -> None:
    agent = hub.agent(tmp_path, host="ha")
    fence = RunFence(hub.redis, SystemClock())
    token = fence.enter(agent.agent_id, "ha")
    outcome: list[dict[str, Any]] = []
    mover = threading.Thread(
        target=lambda: outcome.append(hub.move_agent(agent.agent_id, "hb", settle_seconds=20))
    )
    mover.start()
    wait_until(lambda: hub.registry.require(agent.agent_id).host == "hb", what="registry moved")
    assert mover.is_alive() and not outcome
    fence.leave(agent.agent_id, token)
    mover.join(10)
    assert outcome == [
        {
            "status": "ok",
            "agent_id": agent.agent_id,
            "from_host": "ha",
            "to_host": "hb",
            "moved": True,
            "settled": True,
            "in_flight": 0,
        }
    ]
    assert not hub.redis.exists(running_key(agent.agent_id))


def test_move_reports_runs_that_outlast_the_settle_time(hub: Hub, tmp_path: Path) -> None:
    agent = hub.agent(tmp_path, host="ha")
    RunFence(hub.redis, SystemClock()).enter(agent.agent_id, "ha")
    RunFence(hub.redis, SystemClock()).enter(agent.agent_id, "hb")
    result = hub.move_agent(agent.agent_id, "hb", settle_seconds=0.1)
    assert result["moved"] is True
    assert result["settled"] is False and result["in_flight"] == 1


def test_move_flushes_buffered_channels_on_the_new_host(hub: Hub, tmp_path: Path) -> None:
    agent = hub.agent(tmp_path, host="ha")
    agent.publish_event("mcp.x", {"text": "waiting"})
    before = hub.broker.do_qsize(host_queue("hb"))
    assert hub.move_agent(agent.agent_id, "hb")["moved"] is True
    assert hub.broker.do_qsize(host_queue("hb")) == before + 1


def test_bad_moves_answer_a_reason_and_change_nothing(hub: Hub, tmp_path: Path) -> None:
    agent = hub.agent(tmp_path, host="ha")
    assert hub.move_agent("nobody", "hb")["reason"] == "unknown_agent"
    assert hub.move_agent(agent.agent_id, "bad host!")["reason"] == "invalid_host"
    assert hub.registry.require(agent.agent_id).host == "ha"
    same = hub.move_agent(agent.agent_id, "ha")
    assert same["status"] == "ok" and same["moved"] is False


def test_a_host_without_the_workdir_retries_instead_of_creating_it(
    hub: Hub, tmp_path: Path
) -> None:
    """A message for an agent moving in before its workdir has arrived raises (dramatiq
    retries it with back-off); once the workdir is there, it runs."""
    workdir = tmp_path / "arriving"
    workdir.mkdir()
    agent = hub.agent(workdir, host="ha")
    agent.publish_event("mcp.x", {"text": "kept"})
    staged = tmp_path / "staged"
    workdir.rename(staged)
    flush = hub.broker.get_actor("flush_channel")
    with pytest.raises(WorkdirMissing):
        flush.fn(agent.agent_id, "mcp.x")
    assert not workdir.exists()
    staged.rename(workdir)
    flush.fn(agent.agent_id, "mcp.x")
    assert "kept" in (workdir / ".notification" / "mcp.x.json").read_text("utf-8")
    assert not hub.redis.exists(running_key(agent.agent_id))
