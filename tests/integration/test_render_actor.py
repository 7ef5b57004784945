"""``render_attention`` as an actor on the host queue, the Agent's capping calls and
``tidings check`` (block-cap.md B3, B6, B19; interfaces.md)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dramatiq.results import Results

import tidings
from tests.support.processes import run_cli
from tests.support.redis_server import RedisServer
from tests.support.spills import spill_files
from tidings.workers.dispatch import send
from tidings.workers.routing import host_queue

HOST = "cap-test"


def telegram() -> dict[str, Any]:
    return {
        "header": "Telegram",
        "data": {"messages": [{"id": f"m{i}", "text": "t" * 3000} for i in range(25)]},
    }


@pytest.fixture
def hub() -> Iterator[tidings.Hub]:
    with tidings.connect("embedded", background=True, settings=tidings.Settings(host=HOST)) as hub:
        yield hub


def test_b3_render_attention_actor_on_the_host_queue(hub: tidings.Hub, tmp_path: Path) -> None:
    agent = hub.agent(tmp_path)  # served by the hub's background worker
    assert agent.publish("mcp.telegram", telegram(), wait=True)["status"] == "ok"
    actor = hub.broker.get_actor("render_attention")
    assert actor.options.get("store_results") is True
    message = send(hub.broker, "render_attention", host_queue(HOST), agent.agent_id)
    backend = next(m.backend for m in hub.broker.middleware if isinstance(m, Results))
    lane = message.get_result(backend=backend, block=True, timeout=20_000)
    assert lane["mcp.telegram"]["data"]["messages"][0]["text"] == "t" * 200 + "..."
    path = Path(lane["overflow"]["path"])
    assert json.loads(path.read_text())["mcp.telegram"]["data"] == telegram()["data"]
    assert agent.render()["attention"] == lane  # inline: the same lane, the same spill
    assert spill_files(tmp_path) == [path.name]


def test_b6_agent_cap_persistent(hub: tidings.Hub, tmp_path: Path) -> None:
    agent = hub.agent(tmp_path, inline=True)
    small = {"email": {"emails": [{"id": "e1", "body": "hello"}]}}
    assert agent.cap_persistent(small) is small
    big = {
        "mcp": {"telegram": {"messages": [{"id": f"m{i}", "text": "t" * 3000} for i in range(10)]}}
    }
    capped = agent.cap_persistent(big)
    assert capped["overflow"]["path"].endswith(spill_files(tmp_path)[0])
    assert agent.cap_persistent(big) == capped
    assert agent.render(persistent=big)["persistent"] == capped
    for bad in ([], "x", 3):
        assert agent.cap_persistent(bad)["reason"] == "invalid_persistent"  # type: ignore[arg-type]
        assert agent.render(persistent=bad)["reason"] == "invalid_persistent"  # type: ignore[arg-type]
    assert len(spill_files(tmp_path)) == 1


def test_b19_tidings_check_prints_the_capped_lane(
    redis_server: RedisServer, e2e_env: dict[str, str], tmp_path: Path
) -> None:
    redis_server.client().flushall()
    with tidings.connect(redis_server.url) as hub:
        hub.agent(tmp_path, inline=True).publish("mcp.telegram", telegram())
    done = run_cli(
        ["check", "--workdir", str(tmp_path), "--json"],
        {**e2e_env, "TIDINGS_REDIS_URL": redis_server.url},
    )
    assert done.returncode == 0, done.stderr
    attention = json.loads(done.stdout)["_meta"]["agent_meta"]["notifications"]["attention"]
    assert attention["mcp.telegram"]["data"]["messages"][0]["text"] == "t" * 200 + "..."
    spilled = json.loads(Path(attention["overflow"]["path"]).read_text())
    assert spilled["mcp.telegram"]["data"] == telegram()["data"]
