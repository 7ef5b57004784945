"""The scheduler in-process against a real redis-server: a delay ends in one alarm,
standby hand-over, planted job-store bytes, the sync tick (delay.md D1, D13-D19;
issue 3 acceptance 2 and 7)."""

from __future__ import annotations

import json
import os
import pickle
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from apscheduler.schedulers.blocking import BlockingScheduler

import tidings
from tests.support.delay import ALARM, STATE, capture, events
from tests.support.polling import wait_until
from tests.support.redis_server import RedisServer
from tidings.jobs.consumer import request_delay
from tidings.scheduler.lease import LeaseSettings
from tidings.scheduler.service import SchedulerService
from tidings.store import keys
from tidings.store.settings import Settings

pytestmark = pytest.mark.redis_server

FAST_LEASE = LeaseSettings(lease_seconds=2.0, renew_seconds=0.2)


@pytest.fixture
def host_settings(redis_server: RedisServer) -> Settings:
    """A private host per test, so tests never see each other's queues or leases."""
    return Settings(host=f"it-{uuid.uuid4().hex[:8]}", redis_url=redis_server.url)


@pytest.fixture
def hub(host_settings: Settings) -> Iterator[tidings.Hub]:
    hub = tidings.connect(host_settings.redis_url, settings=host_settings)
    yield hub
    hub.close()


@pytest.fixture
def client(redis_server: RedisServer) -> Iterator[Any]:
    c = redis_server.client()
    yield c
    c.close()


def read(path: Path) -> Any:
    return json.loads(path.read_bytes()) if path.exists() else None


def test_d19_delay_ends_in_one_alarm_saying_what_changed(hub: tidings.Hub, tmp_path: Path) -> None:
    """Acceptance 2: ``delay email 2`` hides email while its file keeps changing; about
    2 s later ``delay-alarm.json`` says ``changed: true`` (rewritten) or ``false``."""
    hub.start_worker()
    hub.start_scheduler()
    (tmp_path / "rewritten").mkdir()
    (tmp_path / "untouched").mkdir()
    rewritten = hub.agent(tmp_path / "rewritten", agent_id="rewritten")
    untouched = hub.agent(tmp_path / "untouched", agent_id="untouched")
    for agent in (rewritten, untouched):
        assert agent.publish("email", {"header": "1 unread"}, wait=True)["status"] == "ok"
        result = request_delay(agent.runtime, agent.record, "email", 2)
        assert result["status"] == "ok"
        assert "email" not in agent.snapshot()
    assert rewritten.publish("email", {"header": "2 unread"}, wait=True)["flushed"] is True
    on_disk = read(tmp_path / "rewritten/.notification/email.json")
    assert on_disk["header"] == "2 unread", "the producer's file keeps receiving updates"
    assert "email" not in rewritten.snapshot()

    for agent, changed in ((rewritten, True), (untouched, False)):
        alarm_path = Path(agent.workdir) / ALARM
        wait_until(alarm_path.exists, timeout=10, what=f"{agent.agent_id}'s alarm")
        alarm = read(alarm_path)["data"]["delay_alarm"]
        assert alarm["changed"] is changed
        assert 2.0 <= alarm["actual_seconds"] < 5.0
        snap = agent.snapshot()
        assert snap["email"]["header"] == ("2 unread" if changed else "1 unread")
        assert snap["delay-alarm"]["priority"] == "high"


def test_d18_standby_takes_over_and_alarms_fire_once(
    client: Any, host_settings: Settings, hub: tidings.Hub, tmp_path: Path
) -> None:
    """Two schedulers of one host: one leads; when it goes, the standby leads."""
    hub.start_worker()
    events_seen: list[dict[str, Any]] = []
    one = SchedulerService(
        client, host_settings, lease_settings=FAST_LEASE, on_event=events_seen.append
    )
    two = SchedulerService(
        client, host_settings, lease_settings=FAST_LEASE, on_event=events_seen.append
    )
    one.start()
    two.start()
    try:
        first = wait_until(
            lambda: one if one.leading.is_set() else two if two.leading.is_set() else None,
            timeout=10,
        )
        other = two if first is one else one
        time.sleep(FAST_LEASE.renew_seconds * 3)  # nothing to wait for: still one leader?
        assert first.leading.is_set() and not other.leading.is_set()

        agent = hub.agent(tmp_path, agent_id="a1")
        result = request_delay(agent.runtime, agent.record, "email", 1)
        wait_until(
            lambda: read(tmp_path / STATE)["status"] == "published",
            timeout=10,
            what="the first alarm",
        )
        assert read(tmp_path / ALARM)["data"]["delay_alarm"]["request_id"] == (result["request_id"])

        first.stop()
        wait_until(other.leading.is_set, timeout=10, what="the standby to take over")
        second = request_delay(agent.runtime, agent.record, "system", 1)
        wait_until(
            lambda: (
                read(tmp_path / ALARM)["data"]["delay_alarm"]["request_id"] == second["request_id"]
            ),
            timeout=10,
            what="the second alarm",
        )
        leaders = [e["holder"] for e in events_seen if e["status"] == "leader"]
        assert leaders == [first.holder, other.holder]
    finally:
        one.stop()
        two.stop()


def test_d18_lost_lease_steps_down(client: Any, host_settings: Settings) -> None:
    service = SchedulerService(client, host_settings, lease_settings=FAST_LEASE)
    service.start()
    try:
        wait_until(service.leading.is_set, timeout=10)
        client.set(keys.scheduler_leader(host_settings.host), "someone else")
        wait_until(lambda: not service.leading.is_set(), timeout=10, what="stepping down")
        client.delete(keys.scheduler_leader(host_settings.host))
        wait_until(service.leading.is_set, timeout=10, what="leading again")
    finally:
        service.stop()
    assert client.get(keys.scheduler_leader(host_settings.host)) is None, "released on stop"


class _Boom:
    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.mkdir, (self.marker,))


def test_d16_planted_pickle_is_refused_by_a_running_scheduler(
    client: Any, host_settings: Settings, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Acceptance 7: refused and reported, never executed."""
    capture(caplog)
    host = host_settings.host
    marker = tmp_path / "pwned"
    client.hset(keys.scheduler_jobs(host), "evil", pickle.dumps(_Boom(marker)))
    client.zadd(keys.scheduler_run_times(host), {"evil": time.time() - 5})
    service = SchedulerService(client, host_settings, lease_settings=FAST_LEASE)
    service.start()
    try:
        wait_until(service.leading.is_set, timeout=10)
        wait_until(lambda: client.hlen(keys.scheduler_jobs(host)) == 0, timeout=10)
    finally:
        service.stop()
    assert not marker.exists()
    assert client.zcard(keys.scheduler_run_times(host)) == 0
    rejected = events(caplog, "scheduler_job_rejected")
    assert rejected and all(e["job_id"] == "evil" for e in rejected)


def test_c27_sync_tick_keeps_one_sync_host_pending(client: Any, host_settings: Settings) -> None:
    """Without a worker, ticks never pile up more than one ``sync_host`` message (a full
    scan is due every tick here; with nothing changed no other tick is sent)."""
    fast = host_settings.model_copy(update={"sync_interval": 0.1, "full_scan_seconds": 0.1})
    service = SchedulerService(client, fast, lease_settings=FAST_LEASE)
    service.start()
    queue = f"tidings:tidings.host.{fast.host}.msgs"
    try:
        wait_until(lambda: client.hlen(queue) == 1, timeout=10, what="the first tick")
        time.sleep(0.5)  # five more ticks
        assert client.hlen(queue) == 1
        client.delete(keys.sync_running(fast.host))  # as a finished sync_host does
        wait_until(lambda: client.hlen(queue) == 2, timeout=10, what="the next tick")
    finally:
        service.stop()


def test_d18_a_dead_timer_loop_makes_the_leader_start_afresh(
    client: Any,
    host_settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Never lead without a timer: if APScheduler's loop dies, step down and re-activate."""
    capture(caplog)
    real_loop = BlockingScheduler._main_loop
    calls: list[int] = []

    def flaky_loop(self: BlockingScheduler) -> None:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("timer loop died")
        real_loop(self)

    monkeypatch.setattr(BlockingScheduler, "_main_loop", flaky_loop)
    seen: list[str] = []
    service = SchedulerService(
        client,
        host_settings,
        lease_settings=FAST_LEASE,
        on_event=lambda e: seen.append(e["status"]),
    )
    service.start()
    try:
        wait_until(lambda: seen.count("leader") == 2, timeout=15, what="a fresh activation")
        assert seen[:3] == ["leader", "standby", "leader"]
        assert events(caplog, "scheduler_loop_failed")[0]["error"] == "RuntimeError"
    finally:
        service.stop()
