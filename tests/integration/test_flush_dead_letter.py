"""A flush that can never succeed is dead-lettered after its retries (channels.md C52).

A real dramatiq worker (in this process, on a real redis-server) runs a flush
whose file write always fails: dramatiq's Retries middleware gives up after the
flush's ``max_retries``, its ``on_retry_exhausted`` actor marks the channel dead
with a logged reason, the agent hears of it on ``system``, and the sync tick stops
restarting the buffer. The records stay buffered; the next publish tries again.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import tidings
from tests.support.polling import wait_until
from tests.support.redis_server import RedisServer
from tidings.jobs.channels import DEAD_EVENT, dead_channels
from tidings.jobs.channels import flush as flushing
from tidings.jobs.channels.publishing import buffered_records
from tidings.jobs.consumer import visit
from tidings.store.keys import AgentKeys
from tidings.store.settings import Settings
from tidings.workers import actors
from tidings.workers.routing import host_queue

pytestmark = pytest.mark.redis_server

BROKEN = "mcp.broken"


@pytest.fixture
def hub(redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[tidings.Hub]:
    monkeypatch.setattr(actors, "FLUSH_MAX_RETRIES", 1)  # one retry, then the dead letter
    client = redis_server.client()
    client.flushall()
    with tidings.connect(client=client, settings=Settings(host="dl", redis_url=None)) as h:
        yield h


def test_a_flush_that_always_fails_is_dead_lettered(
    hub: tidings.Hub,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    real_write = flushing.atomic_write

    def refusing(root: Path, rel: str, data: bytes, *args: Any, **kwargs: Any) -> Any:
        if BROKEN in rel:
            raise OSError(36, "File name too long")
        return real_write(root, rel, data, *args, **kwargs)

    monkeypatch.setattr(flushing, "atomic_write", refusing)
    (tmp_path / "w").mkdir()
    agent = hub.agent(tmp_path / "w")
    hub.start_worker(threads=2)
    rt, record = hub.runtime, agent.record
    with caplog.at_level(logging.INFO):
        assert agent.publish_event(BROKEN, {"body": "never lands"})["status"] == "ok"
        wait_until(
            lambda: BROKEN in dead_channels(rt, record),
            timeout=30,
            what="the flush to be dead-lettered",
        )
        wait_until(
            lambda: (tmp_path / "w" / ".notification" / "system.json").exists(),
            timeout=15,
            what="the system notice",
        )
    logged = [r for r in caplog.records if getattr(r, "event", None) == DEAD_EVENT]
    assert logged and "OSError" in logged[0].fields["reason"]  # type: ignore[attr-defined]
    dead = hub.redis.zcard(f"tidings:{host_queue('dl')}.XQ")
    assert dead >= 1  # dramatiq's own dead letter queue holds the message
    assert [r["event"]["body"] for r in buffered_records(rt, record, BROKEN)] == ["never lands"]
    notice = (tmp_path / "w" / ".notification" / "system.json").read_text()
    assert f"flush_failed:{BROKEN}" in notice
    # The tick no longer restarts the stranded buffer, however often it runs.
    hub.redis.delete(AgentKeys(record.agent_id).flush_flag(BROKEN))
    assert visit.enqueue_stranded(rt, record) == []
    # A successful flush later revives the channel.
    monkeypatch.setattr(flushing, "atomic_write", real_write)
    assert agent.publish_event(BROKEN, {"body": "second"}, wait=True)["flushed"] is True
    # (the run revives the channel when it finds the buffer drained, just after the commit)
    wait_until(
        lambda: BROKEN not in dead_channels(rt, record),
        timeout=10,
        what="the channel revived by a flush that drained it",
    )
