"""connect(), Hub.agent() and the inline and worker paths (interfaces.md)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import tidings
from tests.support.polling import wait_until
from tests.support.redis_server import RedisServer
from tidings.store.models import default_agent_id


@pytest.fixture
def embedded() -> Iterator[tidings.Hub]:
    settings = tidings.Settings(host="embedded-test")
    with tidings.connect("embedded", background=True, settings=settings) as hub:
        yield hub


def events(workdir: Path, channel: str) -> list[dict[str, Any]]:
    try:
        return list(
            json.loads((workdir / ".notification" / f"{channel}.json").read_bytes())["data"][
                "events"
            ]
        )
    except (OSError, ValueError, KeyError):
        return []


def test_registration_is_idempotent_and_stable(embedded: tidings.Hub, tmp_path: Path) -> None:
    a = embedded.agent(tmp_path, inline=True)
    b = embedded.agent(str(tmp_path) + "/", inline=True)
    assert a.agent_id == b.agent_id == default_agent_id(tmp_path)
    assert embedded.agents() == [
        {
            "agent_id": a.agent_id,
            "workdir": str(tmp_path.resolve()),
            "memory_repo": None,
            "host": "embedded-test",
        }
    ]


def test_bad_registrations_raise_with_reason(embedded: tidings.Hub, tmp_path: Path) -> None:
    with pytest.raises(tidings.TidingsError) as missing:
        embedded.agent(tmp_path / "nope")
    assert missing.value.reason == "invalid_workdir"
    embedded.agent(tmp_path, agent_id="alice", inline=True)
    other = tmp_path / "other"
    other.mkdir()
    with pytest.raises(tidings.TidingsError) as conflict:
        embedded.agent(other, agent_id="alice")
    assert conflict.value.reason == "agent_id_conflict"
    with pytest.raises(tidings.TidingsError) as bounds:
        embedded.agent(other, max_events={"mcp.x": 0})
    assert bounds.value.reason == "invalid_agent"
    with pytest.raises(tidings.TidingsError) as bad_id:
        embedded.agent(other, agent_id="{bad}")
    assert bad_id.value.reason == "invalid_agent"


def test_inline_and_worker_paths_write_the_same_mirror(
    embedded: tidings.Hub, tmp_path: Path
) -> None:
    inline_dir, worker_dir = tmp_path / "inline", tmp_path / "worker"
    inline_dir.mkdir()
    worker_dir.mkdir()
    inline = embedded.agent(inline_dir, inline=True)
    queued = embedded.agent(worker_dir)
    for n in range(30):
        event = {"n": n, "event_id": f"e{n}", "at": "2026-01-01T00:00:00Z"}
        assert inline.publish_event("system", event)["flushed"] is True
        queued.publish_event("system", event)
    wait_until(
        lambda: (
            len(events(worker_dir, "system")) == 20 and events(worker_dir, "system")[-1]["n"] == 29
        ),
        what="the worker's flush",
    )
    assert events(inline_dir, "system") == events(worker_dir, "system")
    assert inline.snapshot()["system"]["header"] == queued.snapshot()["system"]["header"]


def test_wait_true_returns_once_flushed_by_the_worker(
    embedded: tidings.Hub, tmp_path: Path
) -> None:
    agent = embedded.agent(tmp_path)
    result = agent.publish_event("mcp.w", {"text": "x"}, wait=True)
    assert result["flushed"] is True
    assert events(tmp_path, "mcp.w")[0]["event_id"] == result["event_id"]


def test_connect_to_a_real_redis(redis_server: RedisServer, tmp_path: Path) -> None:
    with tidings.connect(redis_server.url) as hub:
        agent = hub.agent(tmp_path, inline=True)
        agent.publish("soul", {"header": "Be kind", "data": {"v": 1}})
        assert agent.snapshot()["soul"]["header"] == "Be kind"


def test_connect_without_a_store_raises_no_store() -> None:
    from tests.support.redis_server import free_port

    with pytest.raises(tidings.NoStoreError) as exc:
        tidings.connect(f"redis://127.0.0.1:{free_port()}/0")
    assert exc.value.reason == "no_store"


def test_close_closes_the_client_connect_built(redis_server: RedisServer) -> None:
    """Issue 10: Hub.close() closes the client connect() built; a passed-in client is the
    caller's to close."""
    with redis_server.client() as mine:

        def connections() -> set[str]:
            return {entry["id"] for entry in mine.client_list()}

        # Counted by id: the session's server also holds (and drops) other tests' clients.
        before = connections()
        hub = tidings.connect(redis_server.url, settings=tidings.Settings(host="close-test"))
        hub.redis.ping()
        built = connections() - before
        assert built, "connect() opened connections of its own"
        hub.close()
        wait_until(
            lambda: not built & connections(),
            timeout=5,
            what="the hub's connections are closed",
        )
        passed = tidings.connect(client=mine)
        passed.close()
        assert mine.ping() is True


def test_embedded_agent_starts_no_thread_unless_asked(tmp_path: Path) -> None:
    """interfaces.md: hub.agent() only registers; background=True runs a worker and a scheduler."""
    before = threading.active_count()
    with tidings.connect("embedded", settings=tidings.Settings(host="quiet")) as hub:
        agent = hub.agent(tmp_path)
        assert agent.inline, "no worker serves an embedded hub's queue: agents run inline"
        assert agent.publish_event("mcp.x", {"text": "hi"})["flushed"] is True
        assert threading.active_count() == before
    with tidings.connect(
        "embedded", background=True, settings=tidings.Settings(host="busy")
    ) as hub:
        assert threading.active_count() > before
        assert hub.agent(tmp_path).inline is False
    wait_until(
        lambda: threading.active_count() == before,
        timeout=10,
        what="hub.close() stops the background threads",
    )
