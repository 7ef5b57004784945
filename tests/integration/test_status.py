"""``hub.status()`` / ``tidings status --json`` on a real Redis with real figures
(issue 7, acceptance 4): queue depths, a delayed message, a dead letter, a scheduler
leader, an agent with pending inbox items and a live delay; and status writes nothing."""

from __future__ import annotations

import io
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

import tidings
from tests.support.delay import STATE
from tests.support.polling import wait_until
from tests.support.redis_server import RedisServer
from tidings.cli.status_view import print_tables
from tidings.demo.chapters import CHAPTERS, Tour
from tidings.demo.status import status
from tidings.scheduler.alarm_job import ALARM_JOB_REF
from tidings.scheduler.jobstore import StoredJob
from tidings.scheduler.lease import LeaderLease, LeaseSettings
from tidings.store import keys
from tidings.store.settings import Settings
from tidings.workers.dispatch import route
from tidings.workers.routing import host_queue, scheduler_queue

pytestmark = pytest.mark.redis_server


@pytest.fixture
def hub(redis_server: RedisServer) -> Iterator[tidings.Hub]:
    with redis_server.client() as c:
        c.flushall()
    opened = tidings.connect(redis_server.url, settings=Settings(host=f"st-{uuid.uuid4().hex[:8]}"))
    yield opened
    opened.close()


def queue(figures: dict[str, Any], name: str) -> dict[str, Any]:
    return next(q for q in figures["queues"] if q["name"] == name)


def dead_letter(hub: tidings.Hub, name: str) -> None:
    """dramatiq's own dead-lettering: a consumer fetches the message and nacks it."""
    hub.broker.enqueue(route(hub.broker, "flush_channel", name, "ghost", "mcp.x"))
    consumer = hub.broker.consume(name, prefetch=1, timeout=100)
    try:
        message = next(m for m in consumer if m is not None)
        consumer.nack(message)
    finally:
        consumer.close()


def snapshot_of_redis(hub: tidings.Hub) -> dict[bytes, Any]:
    return {key: hub.redis.dump(key) for key in hub.redis.scan_iter(count=1000)}


def test_status_reports_queues_leaders_pending_items_and_live_delays(
    hub: tidings.Hub, tmp_path: Path
) -> None:
    host = hub.settings.host
    other = f"{host}-other"
    here = hub.agent(tmp_path, agent_id="here")
    for n in range(2):
        assert here.admit("app.mail", f"mail {n}")["status"] == "ok"
    assert here.notification("delay", {"channel": "email", "seconds": 60})["status"] == "ok"
    # No worker runs: the flush message waits on the host queue, the alarm request on
    # the scheduler queue.
    assert here.publish_event("mcp.x", {"n": 1})["flushed"] is False
    hub.broker.enqueue(
        route(hub.broker, "flush_channel", host_queue(host), "here", "mcp.y"), delay=600_000
    )
    dead_letter(hub, host_queue(host))
    lease = LeaderLease(hub.redis, host, "holder-1", LeaseSettings(lease_seconds=60))
    assert lease.try_acquire(time.time())
    # An agent whose files live on another machine: its delay is known from its host's
    # stored alarm job.
    hub.registry.put(
        here.record.model_copy(
            update={"agent_id": "elsewhere", "host": other, "workdir": "/nonexistent/agent"}
        )
    )
    deadline = time.time() + 120
    job = StoredJob(
        version=1,
        id="r" * 32,
        func=ALARM_JOB_REF,
        args=["elsewhere", "r" * 32],
        kwargs={},
        run_date=deadline,
        executor="default",
        name="alarm",
        misfire_grace_time=None,
        coalesce=True,
        max_instances=1,
        next_run_time=deadline,
    )
    hub.redis.hset(keys.scheduler_jobs(other), job.id, job.model_dump_json())

    before = snapshot_of_redis(hub)
    state_before = (tmp_path / STATE).read_bytes()
    figures = hub.status()
    assert snapshot_of_redis(hub) == before, "status writes nothing to Redis"
    assert (tmp_path / STATE).read_bytes() == state_before

    assert set(figures) >= {"queues", "schedulers", "agents"}
    for q in figures["queues"]:
        assert set(q) >= {"name", "depth", "delayed", "dead"}
    assert queue(figures, host_queue(host)) == {
        "name": host_queue(host),
        "depth": 1,
        "delayed": 1,
        "dead": 1,
        "in_flight": 0,
    }
    assert queue(figures, scheduler_queue(host))["depth"] == 1
    assert queue(figures, host_queue(other)) == {
        "name": host_queue(other),
        "depth": 0,
        "delayed": 0,
        "dead": 0,
        "in_flight": 0,
    }
    assert figures["schedulers"][host]["leader"] == "holder-1"
    assert figures["schedulers"][host]["since"]
    assert figures["schedulers"][other] == {"leader": None, "since": None}

    agents = {a["agent_id"]: a for a in figures["agents"]}
    assert agents["here"]["host"] == host and agents["here"]["pending"] == 2
    live = agents["here"]["live_delay"]
    assert live["target"] == "email" and live["source"] == "state_file"
    assert 55 < live["remaining_seconds"] <= 60
    assert agents["elsewhere"]["pending"] == 0
    assert agents["elsewhere"]["live_delay"]["request_id"] == "r" * 32
    assert agents["elsewhere"]["live_delay"]["source"] == "scheduler"
    assert agents["elsewhere"]["live_delay"]["target"] is None
    # interfaces.md, Never silent: the dead letter is the one thing that needs attention here
    assert agents["here"]["attention"] == agents["elsewhere"]["attention"] == []
    assert figures["needs_attention"] == [
        {
            "kind": "queue",
            "name": host_queue(host),
            "workdir": None,
            "host": None,
            "attention": ["dead_letters"],
            "count": 1,
        }
    ]

    out = io.StringIO()
    print_tables(Console(file=out, width=200), figures)
    text = out.getvalue()
    assert host_queue(host) in text and "holder-1" in text and "email until" in text


def test_an_overdue_delay_is_reported_not_published(hub: tidings.Hub, tmp_path: Path) -> None:
    """Status never reconciles: a due delay whose alarm is not yet written shows as
    ``alarm_overdue`` and stays unpublished."""
    agent = hub.agent(tmp_path, agent_id="late")
    assert agent.notification("delay", {"channel": "email", "seconds": 1})["status"] == "ok"
    wait_until(lambda: hub.status()["agents"][0]["alarm_overdue"], timeout=10, what="due")
    [figure] = hub.status()["agents"]
    assert figure["live_delay"] is None and figure["alarm_overdue"] is True
    assert figure["attention"] == ["overdue_delay"]  # interfaces.md, Never silent
    assert not (tmp_path / ".notification" / "delay-alarm.json").exists()


def test_the_demo_ends_with_tidings_status(tmp_path: Path) -> None:
    """``tidings demo``'s operations chapters show the status tables, then the web console
    (issue 16)."""
    assert CHAPTERS[-2] is status
    out = io.StringIO()
    with tidings.connect("embedded", background=True, settings=Settings(host="demo-status")) as hub:
        tour = Tour(hub, hub.agent(tmp_path), tmp_path, Console(file=out, width=120))
        status(tour)  # raises AssertionError if a figure it shows is not so
    text = out.getvalue()
    assert "Schedulers" in text and "tidings.host.demo-status" in text
    assert "mcp.build until" in text
