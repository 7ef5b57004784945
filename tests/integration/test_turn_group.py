"""prepare_turn through the dramatiq group on the host queue (in-process worker threads,
real redis-server), beside the inline path (interfaces.md: both paths behave identically)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.memory_repo import MemoryRepo
from tests.support.redis_server import RedisServer
from tidings import Turn
from tidings._hub import Hub
from tidings.store.inbox_keys import InboxKeys
from tidings.store.settings import Settings

pytestmark = pytest.mark.redis_server


@pytest.fixture
def hub(redis_server: RedisServer) -> Iterator[Hub]:
    client = redis_server.client()
    client.flushall()
    settings = Settings(
        host=f"it-{uuid.uuid4().hex[:8]}", redis_url=redis_server.url, turn_wait_seconds=3
    )
    hub = Hub(client, settings, url=redis_server.url)
    hub.start_worker()
    hub.start_scheduler()
    yield hub
    hub.close()
    client.close()


def turn_shape(turn: Turn) -> dict[str, Any]:
    memory_items = [i for i in turn.inbox if i["source_kind"] == "memory-change"]
    return {
        "kind": turn.kind,
        "memory": (turn.memory["status"], turn.memory["trigger"]),
        "items": len(turn.inbox),
        "paths": [
            c["path"]
            for i in memory_items
            for area in i["payload"]["changes"].values()
            for c in area
        ],
        "text_lines": len(turn.inbox_text.splitlines()),
    }


def test_m43_group_and_inline_prepare_the_same_turn(hub: Hub, tmp_path: Path) -> None:
    """M43/M11: the worker group (observe_memory + render_attention on the host queue)
    and the inline path give the same turn for the same change."""
    shapes = []
    for name, inline in (("group", False), ("inline", True)):
        repo = MemoryRepo(tmp_path / name / "memory", {"MEMORY.md": "m\n", "a.md": "a\n"})
        agent = hub.agent(tmp_path / name, memory_repo=repo.root, inline=inline)
        assert agent.startup()["memory"]["status"] == "baseline"
        repo.write("a.md", "edited\n")
        agent.admit("mail", "a letter")
        turn = agent.prepare_turn()
        assert isinstance(turn, Turn), turn
        shapes.append(turn_shape(turn))
        assert agent.finish_turn(turn)["status"] == "ok"
        assert hub.redis.xlen(InboxKeys(agent.agent_id).wake_stream) == 0
        bridge = agent.prepare_turn("bridge")
        assert isinstance(bridge, Turn) and bridge.memory == {"status": "skipped"}  # §9
        agent.finish_turn(bridge)
    assert shapes[0] == shapes[1]
    assert shapes[0]["memory"] == ("changed", "pre_turn") and shapes[0]["items"] == 2


def test_m12_no_worker_degrades_the_turn_instead_of_failing_it(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    """M12: when no worker answers in time the turn proceeds (memory error, empty lane)
    and the queued observation still commits later."""
    client = redis_server.client()
    client.flushall()
    settings = Settings(
        host=f"it-{uuid.uuid4().hex[:8]}", redis_url=redis_server.url, turn_wait_seconds=1
    )
    hub = Hub(client, settings, url=redis_server.url)
    try:
        repo = MemoryRepo(tmp_path / "memory", {"MEMORY.md": "m\n"})
        agent = hub.agent(tmp_path, memory_repo=repo.root)
        agent.startup()
        agent.admit("mail", "still claimed")
        turn = agent.prepare_turn()
        assert isinstance(turn, Turn)
        assert turn.memory["status"] == "error" and turn.memory["reason"] == "worker_timeout"
        assert turn.attention == {} and len(turn.inbox) == 1
        assert agent.finish_turn(turn)["memory"]["status"] == "skipped"
    finally:
        hub.close()
        client.close()


def test_m51_hub_startup_runs_for_every_agent_of_the_host(hub: Hub, tmp_path: Path) -> None:
    """M51: host start-up recovers and observes each of its agents, never waking one."""
    repo = MemoryRepo(tmp_path / "memory", {"MEMORY.md": "m\n"})
    for name in "abc":
        (tmp_path / name).mkdir()
    mine = hub.agent(tmp_path / "a", memory_repo=repo.root, inline=True)
    plain = hub.agent(tmp_path / "b", inline=True)
    elsewhere = hub.agent(tmp_path / "c", host="another-host", inline=True)
    results = hub.startup()
    assert set(results) == {mine.agent_id, plain.agent_id}
    assert results[mine.agent_id]["memory"]["status"] == "baseline"
    assert results[plain.agent_id]["memory"]["reason"] == "not_configured"
    assert elsewhere.agent_id not in results
    assert hub.redis.xlen(InboxKeys(mine.agent_id).wake_stream) == 0


def test_m54_the_group_runs_on_the_agents_host_queue(hub: Hub, tmp_path: Path) -> None:
    """M54/architecture: observation and render are sent to the agent's host queue."""
    sent: list[tuple[str, str]] = []
    enqueue = hub.broker.enqueue

    def spy(message: Any, **kw: Any) -> Any:
        sent.append((message.actor_name, message.queue_name))
        return enqueue(message, **kw)

    hub.broker.enqueue = spy  # type: ignore[method-assign]
    repo = MemoryRepo(tmp_path / "memory", {"MEMORY.md": "m\n"})
    agent = hub.agent(tmp_path, memory_repo=repo.root)
    turn = agent.prepare_turn()
    assert isinstance(turn, Turn)
    queue = f"tidings.host.{hub.settings.host}"
    assert sorted(sent) == [("observe_memory", queue), ("render_attention", queue)]
    agent.finish_turn(turn)
