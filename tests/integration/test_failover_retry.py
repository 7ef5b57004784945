"""The failover retry every client gets (store/connection.py), issue 7 Sentinel part."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
import redis
from redis.connection import AbstractConnection

from jobs.flush import flush_channel
from jobs.publish import publish_event
from jobs.runtime import Runtime
from store.clock import SystemClock
from store.connection import client_for, ping
from store.errors import NoStoreError
from store.settings import RedisConfig, Settings
from tests.conftest import TEST_HOST, make_agent
from tests.support.dispatch import InlineJobs
from tests.support.redis_server import RedisServer, free_port

pytestmark = pytest.mark.redis_server


def test_retry_budget_is_time_since_first_failure_not_a_count() -> None:
    """Nested connect and command retries stop together when the budget is spent."""
    client = client_for(RedisConfig.from_url(f"redis://127.0.0.1:{free_port()}/0"),
                        retry_seconds=0.5)
    start = time.monotonic()
    with pytest.raises(redis.ConnectionError):
        client.get("k")
    assert 0.4 < time.monotonic() - start < 3.0
    client.close()


def test_ping_fails_at_once_and_keeps_the_failover_retry() -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    client = client_for(RedisConfig.from_url(url))
    retry = client.get_retry()
    start = time.monotonic()
    with pytest.raises(NoStoreError):
        ping(client, url)
    assert time.monotonic() - start < 1.0
    assert client.get_retry() is retry
    client.close()


def test_read_only_master_is_retried_until_writable(tmp_path: Path) -> None:
    """A demoted master answers READONLY; the write waits for a writable one."""
    server = RedisServer(tmp_path / "redis").start()
    client = client_for(RedisConfig.from_url(server.url))
    try:
        with server.client() as admin:
            admin.execute_command("REPLICAOF", "127.0.0.1", str(free_port()))
        promote = threading.Timer(0.3, lambda: _promote(server))
        promote.start()
        assert client.set("k", "v")
        promote.join()
        assert client.get("k") == b"v"
    finally:
        client.close()
        server.stop()


def _promote(server: RedisServer) -> None:
    with server.client() as admin:
        admin.execute_command("REPLICAOF", "NO", "ONE")


class LoseOneReply:
    """Drops the reply of the next ``buffer_push`` after Redis has run it."""

    def __init__(self) -> None:
        self.armed = True
        real = AbstractConnection.read_response

        def read_response(conn: AbstractConnection, *args: Any, **kwargs: Any) -> Any:
            response = real(conn, *args, **kwargs)
            if self.armed and isinstance(response, list) and response[:1] == [b"queued"]:
                self.armed = False
                conn.disconnect()
                raise redis.ConnectionError("reply lost")
            return response

        self.read_response = read_response


def test_c11_lost_script_reply_is_resent_and_answered_as_duplicate(
    redis_server: RedisServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The retry re-sends a script whose reply was lost; the idempotency key makes the
    second run a duplicate (C11), so the event is written once."""
    client = client_for(RedisConfig.from_url(redis_server.url))
    client.flushall()
    jobs = InlineJobs()
    rt = Runtime(client, SystemClock(), Settings(host=TEST_HOST), jobs)
    jobs.runtime = rt
    agent = make_agent(rt, tmp_path / "w")
    lose = LoseOneReply()
    monkeypatch.setattr(AbstractConnection, "read_response", lose.read_response)
    try:
        result = publish_event(rt, agent, "mcp.x", {"text": "once"}, idempotency_key="k1")
        assert not lose.armed
        assert result["status"] == "ok" and result["duplicate"] is True
        # The lost reply also lost "you set the flag, start the flush": the record
        # waits for the stranded-flush sweep (C15), run here directly.
        flush_channel(rt, agent, "mcp.x")
        text = (tmp_path / "w" / ".notification" / "mcp.x.json").read_text("utf-8")
        assert text.count('"once"') == 1
        assert result["event_id"] in text
    finally:
        client.close()
