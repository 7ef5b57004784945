"""The failover retry every client gets (store/connection.py), issue 7 Sentinel part."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from redis.connection import AbstractConnection

from tests.conftest import TEST_HOST, make_agent
from tests.support.dispatch import InlineJobs
from tests.support.groups import TIMING
from tests.support.memory_repo import MemoryRepo
from tests.support.redis_server import RedisServer, free_port
from tidings.jobs.channels.publishing import append_event
from tidings.jobs.memory import observe_memory
from tidings.jobs.runtime import Runtime
from tidings.store.clock import SystemClock
from tidings.store.connection import FailoverRetry, client_for, ping
from tidings.store.errors import NoStoreError
from tidings.store.inbox_keys import InboxKeys
from tidings.store.models import AgentRecord
from tidings.store.settings import RedisConfig, Settings

pytestmark = pytest.mark.redis_server


@TIMING
def test_retry_budget_is_time_since_first_failure_not_a_count() -> None:
    """Nested connect and command retries stop together when the budget is spent."""
    client = client_for(
        RedisConfig.from_url(f"redis://127.0.0.1:{free_port()}/0"), retry_seconds=0.5
    )
    start = time.monotonic()
    with pytest.raises(redis.ConnectionError):
        client.get("k")
    assert 0.4 < time.monotonic() - start < 3.0
    client.close()


@TIMING
def test_a_stop_ends_the_nested_connect_and_command_retries_at_once() -> None:
    """Against a Redis that is gone a command waits in its connect retry inside its
    command retry (30 s each); once the stop event is set it raises within a moment."""
    client = client_for(RedisConfig.from_url(f"redis://127.0.0.1:{free_port()}/0"))
    stopping = threading.Event()
    client.set_retry(FailoverRetry(stopping=stopping))
    raised: list[BaseException] = []

    def command() -> None:
        try:
            client.get("k")
        except redis.ConnectionError as exc:
            raised.append(exc)

    thread = threading.Thread(target=command, daemon=True)  # a failure must not hold pytest
    thread.start()
    try:
        thread.join(0.5)
        assert thread.is_alive(), "still riding out the failover"
    finally:
        stopping.set()
        set_at = time.monotonic()
        thread.join(10)
        client.close()
    assert not thread.is_alive() and len(raised) == 1
    assert time.monotonic() - set_at < 2.0


@TIMING
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


def buffer_push_reply(response: Any) -> bool:
    return isinstance(response, list) and response[:1] == [b"queued"]


class LoseOneReply:
    """Drops the next reply that ``matches`` (default: ``buffer_push``'s) after Redis
    has run its command, as a connection lost at that moment would."""

    def __init__(self, matches: Callable[[Any], bool] = buffer_push_reply) -> None:
        self.armed = True
        real = AbstractConnection.read_response

        def read_response(conn: AbstractConnection, *args: Any, **kwargs: Any) -> Any:
            response = real(conn, *args, **kwargs)
            if self.armed and matches(response):
                self.armed = False
                conn.disconnect()
                raise redis.ConnectionError("reply lost")
            return response

        self.read_response = read_response


@pytest.mark.parametrize("key", ["k1", None])
def test_c11_lost_script_reply_is_resent_and_answered_as_one_push(
    redis_server: RedisServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    key: str | None,
) -> None:
    """Issue 30: the retry re-sends a push whose reply was lost; its receipt makes the
    second run answer as the first (no false ``duplicate``, the flush it must start
    started), with or without an idempotency key, so the event is written once."""
    client = client_for(RedisConfig.from_url(redis_server.url))
    client.flushall()
    jobs = InlineJobs()
    rt = Runtime(client, SystemClock(), Settings(host=TEST_HOST), jobs)
    jobs.runtime = rt
    agent = make_agent(rt, tmp_path / "w")
    lose = LoseOneReply()
    monkeypatch.setattr(AbstractConnection, "read_response", lose.read_response)
    try:
        result = append_event(rt, agent, "mcp.x", {"text": "once"}, idempotency_key=key)
        assert not lose.armed
        assert result["status"] == "ok" and "duplicate" not in result and result["flushed"]
        text = (tmp_path / "w" / ".notification" / "mcp.x.json").read_text("utf-8")
        assert text.count('"once"') == 1
        assert result["event_id"] in text
    finally:
        client.close()


@pytest.fixture
def memory_agent(
    redis_server: RedisServer, tmp_path: Path
) -> Iterator[tuple[Runtime, AgentRecord, MemoryRepo]]:
    """A failover-retrying client, an agent with a memory repository at its baseline;
    the observation lock's lease is the default minute."""
    client = client_for(RedisConfig.from_url(redis_server.url))
    client.flushall()
    jobs = InlineJobs()
    rt = Runtime(client, SystemClock(), Settings(host=TEST_HOST), jobs)
    jobs.runtime = rt
    repo = MemoryRepo(tmp_path / "memory", {"MEMORY.md": "one\n"})
    agent = make_agent(rt, tmp_path / "w", memory_repo=repo.root)
    assert observe_memory(rt, agent)["status"] == "baseline"
    yield rt, agent, repo
    client.close()


def memory_event_ids(rt: Runtime, agent: AgentRecord) -> list[str]:
    return [json.loads(raw)["event_id"] for raw in rt.redis.hvals(InboxKeys(agent.agent_id).events)]


def test_m40_lost_admission_reply_is_resent_and_admits_nothing_twice(
    memory_agent: tuple[Runtime, AgentRecord, MemoryRepo], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The client re-sends ``memory_admit`` after its reply was lost; the re-run meets the
    checkpoint its first run advanced (M40's compare-and-set) and writes nothing, and
    the observation still reports the one event it admitted."""
    rt, agent, repo = memory_agent
    repo.write("MEMORY.md", "two\n")
    lose = LoseOneReply(lambda r: isinstance(r, list) and r[:1] == [b"ok"])
    monkeypatch.setattr(AbstractConnection, "read_response", lose.read_response)
    result = observe_memory(rt, agent)
    assert not lose.armed
    assert result["status"] == "changed" and result["checkpoint_version"] == 2
    assert memory_event_ids(rt, agent) == [result["event_id"]]
    assert observe_memory(rt, agent)["status"] == "unchanged"
    assert memory_event_ids(rt, agent) == [result["event_id"]]


@TIMING
def test_m52_lost_lock_reply_is_not_mistaken_for_a_busy_lock(
    memory_agent: tuple[Runtime, AgentRecord, MemoryRepo], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lock's SET NX ran but its reply was lost; the re-sent SET NX is refused by the
    lock it took itself. The observation goes on at once instead of waiting out the
    lease (a minute) and answering ``observation_busy``."""
    rt, agent, repo = memory_agent
    repo.write("MEMORY.md", "two\n")
    lose = LoseOneReply(lambda r: r in (b"OK", True))
    monkeypatch.setattr(AbstractConnection, "read_response", lose.read_response)
    started = time.monotonic()
    result = observe_memory(rt, agent)
    assert not lose.armed
    assert result["status"] == "changed", result
    assert time.monotonic() - started < 5
    assert not rt.redis.exists(InboxKeys(agent.agent_id).observe_lock), "released"
