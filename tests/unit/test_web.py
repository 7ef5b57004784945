"""Issue 16: the web console's pages, safety and cost, in process (Starlette's test
client over fakeredis; the browser tests drive real processes)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fakeredis
import pytest
from dramatiq import Message
from starlette.testclient import TestClient

import tidings
from tests.support.delay import active_state, put_state, write_channel
from tidings._hub import Hub
from tidings.store import keys, rates
from tidings.store.clock import FakeClock
from tidings.web.app import build_app
from tidings.web.poller import Poller

HOSTILE = "<script>alert('x')</script>"
LOCAL = "http://127.0.0.1"


@pytest.fixture
def hub() -> Iterator[Hub]:
    store = fakeredis.FakeRedis(server=fakeredis.FakeServer(), version=(7,))
    with tidings.connect(client=store, clock=FakeClock()) as h:
        yield h


@pytest.fixture
def agent(hub: Hub, tmp_path: Path) -> Any:
    workdir = tmp_path / "w"
    workdir.mkdir()
    return hub.agent(workdir, agent_id="a1", inline=True)


def client(hub: Hub, **options: Any) -> TestClient:
    return TestClient(build_app(hub, **options), base_url=LOCAL)


def redis_state(hub: Hub) -> dict[bytes, Any]:
    return {key: hub.redis.dump(key) for key in sorted(hub.redis.keys("*"))}


def tree(root: Path) -> dict[str, tuple[bytes, int]]:
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file():
            out[str(path.relative_to(root))] = (path.read_bytes(), path.stat().st_mtime_ns)
    return out


def test_read_only_pages_write_nothing(hub: Hub, agent: Any) -> None:
    """Safety: no page writes Redis or the workdir — even with an oversized lane (whose
    spill a delivery would write), a changed hook registry (whose stored copy the sync
    tick refreshes) and an overdue delay (whose alarm a coherent read would publish)."""
    big = [{"event_id": f"e{i}", "text": "x" * 2500} for i in range(12)]
    write_channel(agent.record, "mcp.big", {"header": "big", "data": {"events": big}})
    write_channel(agent.record, "email", {"header": "mail", "data": {}})
    (agent.record.root / ".notification" / "hooks.json").write_text(
        json.dumps([{"name": "ci", "channel": "ci-builds", "command": "x"}])
    )
    hub.redis.set(keys.AgentKeys("a1").hook_channels, "[]")
    now = hub.clock.now()
    put_state(agent.record, active_state(now - 120, target="email", seconds=60))
    agent.admit("ticket", "an item")
    before_redis, before_files = redis_state(hub), tree(agent.record.root)
    with client(hub) as web:
        for path in (
            "/",
            "/agents",
            "/agents?q=a&page=2",
            "/agents/a1",
            "/agents/a1?part=live",
            "/dead",
            "/api/status",
            "/agents/nobody",
        ):
            answer = web.get(path)
            assert answer.status_code in (200, 404), path
        page = web.get("/agents/a1").text
    assert "Over the block cap" in page and "notification-attention-overflow-" in page
    assert "An alarm is overdue" in page
    assert redis_state(hub) == before_redis
    assert tree(agent.record.root) == before_files
    assert not (agent.record.root / "logs").exists()


def test_the_lane_is_the_one_a_delivery_hands_over(hub: Hub, agent: Any) -> None:
    """The attention lane shown is what ``render`` then delivers (same cap, same marker)."""
    big = [{"event_id": f"e{i}", "text": "y" * 2500} for i in range(12)]
    write_channel(agent.record, "mcp.big", {"header": "big", "data": {"events": big}})
    from tidings.inspection.agent import agent_page

    shown = agent_page(hub.runtime, agent.record)["lane"]
    delivered = agent.render()["attention"]
    assert shown == delivered
    assert shown["overflow"]["path"].endswith(".json")


def test_producer_text_is_escaped_and_scripts_are_forbidden(hub: Hub, agent: Any) -> None:
    """channels.md §11: a ``<script>`` a producer wrote shows as text."""
    write_channel(agent.record, "mcp.x", {"header": HOSTILE, "data": {"text": HOSTILE}})
    agent.admit("ticket", HOSTILE)
    with client(hub) as web:
        answer = web.get("/agents/a1")
        listing = web.get(f"/agents?q={HOSTILE}")
    for text in (answer.text, listing.text):
        assert "<script>alert" not in text
    assert "&lt;script&gt;alert(" in answer.text
    assert "script-src 'self'" in answer.headers["content-security-policy"]


def test_fifty_pages_share_one_status_read_per_second(hub: Hub) -> None:
    """Cost: 50 open event streams cost one status read per interval in total."""
    reads: list[float] = []

    def summary() -> dict[str, Any]:
        reads.append(1.0)
        return {"at": "now", "html": ""}

    async def scenario() -> list[int]:
        poller = Poller(hub.runtime, summary, interval=0.2)
        subs = [poller.subscribe([f"agent{i}"]) for i in range(50)]
        await asyncio.sleep(1.0)
        got = [s.queue.qsize() for s in subs]
        for s in subs:
            poller.unsubscribe(s)
        await asyncio.sleep(0.3)
        return got

    got = asyncio.run(scenario())
    assert 4 <= len(reads) <= 6  # one read per 0.2 s interval, not 50
    assert min(got) >= 4


def test_actions_need_allow_actions_a_form_key_and_are_logged(
    hub: Hub, agent: Any, caplog: pytest.LogCaptureFixture
) -> None:
    event_id = agent.admit("ticket", "to ignore")["event_id"]
    path = f"/agents/a1/inbox/{event_id}/ignore"
    with client(hub) as web:
        assert web.post(path, data={"form_key": "x"}).status_code == 403
        assert "ignore</button>" not in web.get("/agents/a1").text
    caplog.set_level(logging.INFO, logger="tidings")
    app = build_app(hub, allow_actions=True)
    with TestClient(app, base_url=LOCAL) as web:
        assert web.post(path, data={"form_key": "forged"}).status_code == 403
        assert agent.inbox()[0]["state"] == "pending"
        page = web.get("/agents/a1").text
        assert "ignore</button>" in page and "data-confirm=" in page
        done = web.post(path, data={"form_key": app.state.console.form_key})
    assert done.status_code == 200
    assert agent.inbox()[0]["state"] == "ignored"
    logged = [r for r in caplog.records if getattr(r, "event", None) == "web_action"]
    assert logged and logged[0].fields["event_id"] == event_id  # type: ignore[attr-defined]


def _dead_letter(hub: Hub, queue: str, died_ms: int = 1_790_000_000_000) -> str:
    """A dead letter on ``queue`` (a real broker purges one older than its TTL: give
    ``died_ms`` there)."""
    message = Message(
        queue_name=queue,
        actor_name="flush_channel",
        args=("a1", "system"),
        kwargs={},
        options={
            "redis_message_id": "m-1",
            "retries": 20,
            "traceback": "Traceback...\nRuntimeError: boom",
        },
    )
    hub.registry.add_host(queue.rpartition(".")[2])  # queues are known by their host (issue 25)
    hub.redis.zadd(f"tidings:{queue}.XQ", {"m-1": died_ms})
    hub.redis.hset(f"tidings:{queue}.XQ.msgs", "m-1", message.encode())
    return "m-1"


def test_dead_letters_listed_and_requeued(hub: Hub) -> None:
    queue = "tidings.host.h1"
    message_id = _dead_letter(hub, queue)
    app = build_app(hub, allow_actions=True)
    with TestClient(app, base_url=LOCAL) as web:
        page = web.get("/dead").text
        assert "flush_channel" in page and "RuntimeError: boom" in page
        done = web.post(
            f"/dead/{message_id}/requeue", data={"form_key": app.state.console.form_key}
        )
    assert done.status_code == 200
    assert hub.redis.zcard(f"tidings:{queue}.XQ") == 0
    assert hub.redis.llen(f"tidings:{queue}") == 1
    requeued = Message.decode(hub.redis.hvals(f"tidings:{queue}.msgs")[0])
    assert requeued.actor_name == "flush_channel" and "traceback" not in requeued.options
    assert hub.requeue_dead(message_id)["reason"] == "not_found"


def test_token_gate(hub: Hub) -> None:
    """Acceptance 3 (in process): with a token, a request without it gets 401."""
    with TestClient(
        build_app(hub, token="s3cret", loopback=False), base_url="https://10.0.0.5"
    ) as web:  # the cookie is Secure here
        assert web.get("/api/status").status_code == 401
        assert web.get("/", headers={"Accept": "text/html"}).status_code == 401
        assert web.get("/api/status", headers={"Authorization": "Bearer nope"}).status_code == 401
        assert web.get("/api/status", headers={"Authorization": "Bearer s3cret"}).status_code == 200
        assert web.post("/login", data={"token": "nope"}).status_code == 401
        web.post("/login", data={"token": "s3cret"}, follow_redirects=False)
        assert web.get("/api/status").status_code == 200  # the login cookie


def test_loopback_console_answers_only_to_loopback_names(hub: Hub) -> None:
    with TestClient(build_app(hub), base_url="http://evil.example") as web:
        assert web.get("/").status_code == 400


def test_api_status_is_tidings_status(hub: Hub, agent: Any) -> None:
    with client(hub) as web:
        assert web.get("/api/status").json() == json.loads(json.dumps(hub.status()))


def test_agents_list_searches_and_pages(hub: Hub, tmp_path: Path) -> None:
    for i in range(120):
        hub.registry.put(_record(tmp_path, f"agent-{i:03d}", host=f"h{i % 3}"))
    with client(hub) as web:
        third = web.get("/agents?page=3").text
        found = web.get("/agents?q=agent-07").text
        on_host = web.get("/agents?q=host:h2").text
        by_path = web.get(f"/agents?q={tmp_path}/agent-11").text
    assert "agent-119" in third and "agent-099" not in third
    assert "10 agents" in found and "agent-070" in found and "agent-080" not in found
    assert "40 agents" in on_host and "agent-002" in on_host and "agent-001<" not in on_host
    assert "10 agents" in by_path and "agent-110" in by_path


def _record(tmp_path: Path, agent_id: str, host: str = "h1") -> Any:
    from tidings.store.models import AgentRecord

    return AgentRecord(agent_id=agent_id, workdir=os.fspath(tmp_path / agent_id), host=host)


def test_rates_are_ten_second_buckets(hub: Hub) -> None:
    now = 1_790_000_004.0  # 4 s into a bucket
    rates.count(hub.redis, rates.EVENTS, 30, now - 10)  # the last complete bucket
    rates.count(hub.redis, rates.WAKES, 5, now - 10)
    rates.count(hub.redis, rates.EVENTS, 8, now)  # the current one, so far
    series = rates.series(hub.redis, now)
    assert len(series["events"]) == rates.WINDOW_SECONDS // rates.BUCKET_SECONDS + 1
    assert series["events"][-2:] == [3.0, 2.0] and series["wakes"][-2:] == [0.5, 0.0]
    assert sum(series["events"][:-2]) == 0


def test_cli_lists_and_requeues_dead_letters(
    hub: Hub, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The console's re-enqueue is the CLI's ``tidings dead requeue`` (same public call)."""
    from tidings.cli import main

    message_id = _dead_letter(hub, "tidings.host.h1")

    class Shared:
        def __enter__(self) -> Hub:
            return hub

        def __exit__(self, *exc: object) -> None:
            return None

    monkeypatch.setattr("tidings.cli.dead.open_hub", lambda args: Shared())
    assert main(["dead", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["dead_letters"]
    assert [d["message_id"] for d in listed] == [message_id]
    assert main(["dead", "requeue", message_id, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "ok"
    assert main(["dead", "requeue", message_id, "--json"]) == 1


def test_the_demo_ends_with_the_console_and_no_dead_url(tmp_path: Path) -> None:
    """The demo's last chapter serves the console over the tour's store and reads the
    agent's page; read from a pipe, it prints no URL (the console ends with the tour), only
    the command that serves one (issue 34, acceptance 5)."""
    import io
    import re

    from rich.console import Console

    from tidings.demo.chapters import CHAPTERS
    from tidings.demo.tour import Tour
    from tidings.demo.web import web_console

    assert CHAPTERS[-1] is web_console
    out = io.StringIO()
    with tidings.connect("embedded", background=False) as hub:
        tour = Tour(hub, hub.agent(tmp_path, inline=True), tmp_path, Console(file=out, width=200))
        web_console(tour)  # fails if the console does not show the agent
    assert "tidings web" in out.getvalue()
    assert not re.search(r"https?://", out.getvalue())
