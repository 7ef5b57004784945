"""Start-up reconcile, alarm requests and the sync tick (delay.md D15, D18;
channels.md C27)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from apscheduler.jobstores.base import JobLookupError

from tests.conftest import make_agent
from tests.support.delay import REQUEST_ID, active_state, capture, events, put_state, state_of
from tests.support.dispatch import InlineJobs
from tidings.jobs.consumer import delay_state
from tidings.jobs.runtime import Runtime
from tidings.scheduler import requests, startup, sync_tick
from tidings.store.clock import FakeClock
from tidings.store.keys import sync_running
from tidings.store.models import AgentRecord
from tidings.store.registry import AgentRegistry


class StubScheduler:
    """The part of APScheduler's API the scheduler code uses."""

    def __init__(self, stored: tuple[str, ...] = ()) -> None:
        self.jobs: dict[str, Any] = {i: SimpleNamespace(id=i, args=None) for i in stored}

    def add_job(
        self,
        func: Any,
        *,
        trigger: Any,
        args: list[str],
        id: str,
        jobstore: str,
        replace_existing: bool,
        **options: Any,
    ) -> None:
        assert replace_existing and options["misfire_grace_time"] is None
        self.jobs[id] = SimpleNamespace(
            id=id, args=args, run_date=trigger.run_date, options=options
        )

    def get_job(self, job_id: str, jobstore: str) -> Any:
        return self.jobs.get(job_id)

    def remove_job(self, job_id: str, jobstore: str) -> None:
        if job_id not in self.jobs:
            raise JobLookupError(job_id)
        del self.jobs[job_id]

    def get_jobs(self, jobstore: str) -> list[Any]:
        return list(self.jobs.values())


def body(agent_id: str, request_id: str) -> None:
    raise AssertionError("start-up never runs a job body itself")


def rid(n: int) -> str:
    return f"{n:032x}"


class TestStartupReconcile:
    """D18: pending → job, owed → expire_delay, everything else removed."""

    def test_d18_rebuilds_jobs_from_state_files(
        self, rt: Runtime, tmp_path: Path, clock: FakeClock, jobs_dispatch: InlineJobs
    ) -> None:
        now = clock.now()
        live = make_agent(rt, tmp_path / "live", "live")
        put_state(live, active_state(now, request_id=rid(1)))
        overdue = make_agent(rt, tmp_path / "overdue", "overdue")
        put_state(overdue, active_state(now - 100, request_id=rid(2)))
        expiring = make_agent(rt, tmp_path / "expiring", "expiring")
        completion = {
            "request_id": rid(3),
            "target": "email",
            "requested_seconds": 60,
            "actual_seconds": 60.0,
            "expired_at": "2026-01-01T00:00:00Z",
            "changed": None,
            "initial": {},
            "current": {},
        }
        put_state(
            expiring,
            active_state(now - 100, request_id=rid(3), status="expiring", completion=completion),
        )
        done = make_agent(rt, tmp_path / "done", "done")
        put_state(done, active_state(now - 100, request_id=rid(4), status="published"))
        corrupt = make_agent(rt, tmp_path / "corrupt", "corrupt")
        put_state(corrupt, active_state(now, request_id=rid(5), max_seconds=1))
        disallowed = make_agent(rt, tmp_path / "dropped", "dropped")
        put_state(disallowed, active_state(now, request_id=rid(6), target="watch"))
        make_agent(rt, tmp_path / "none", "none")
        elsewhere = AgentRecord(agent_id="other", workdir=str(tmp_path), host="otherhost")
        AgentRegistry(rt.redis).put(elsewhere)
        put_state(elsewhere, active_state(now, request_id=rid(7)))

        aps = StubScheduler(stored=(rid(1), rid(2), rid(4), rid(5), "stale"))
        counts = startup.reconcile_host(rt, aps, body)
        assert counts == {"added": 2, "expired": 2, "removed": 3}
        assert sorted(aps.jobs) == [rid(1), rid(2), rid(6)]
        assert aps.jobs[rid(1)].args == ["live", rid(1)]
        assert aps.jobs[rid(1)].run_date.timestamp() == pytest.approx(now + 60)
        assert sorted(jobs_dispatch.expires) == [("expiring", rid(3)), ("overdue", rid(2))]
        assert state_of(overdue)["status"] == "published"
        assert state_of(expiring)["status"] == "published"

    def test_d18_a_failed_agent_keeps_every_stored_job(
        self,
        rt: Runtime,
        tmp_path: Path,
        clock: FakeClock,
        monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        capture(caplog)
        make_agent(rt, tmp_path / "a", "a")

        def flaky(root: Path) -> delay_state.StateRead:
            raise OSError("disk trouble")

        monkeypatch.setattr("tidings.jobs.consumer.delay.read_state", flaky)
        aps = StubScheduler(stored=("stale",))
        assert startup.reconcile_host(rt, aps, body) == {"added": 0, "expired": 0, "removed": 0}
        assert list(aps.jobs) == ["stale"]
        assert events(caplog, "scheduler_startup_agent_failed")[0]["error"] == "OSError"


class TestRequests:
    """D15: add / remove, in order; bad requests are dropped with a log line."""

    def test_d15_add_and_remove(self) -> None:
        aps = StubScheduler()
        add = {
            "op": "add",
            "agent_id": "a1",
            "request_id": REQUEST_ID,
            "deadline_epoch": 1_790_000_060,
        }
        assert requests.apply(aps, body, add) == "added"
        assert aps.jobs[REQUEST_ID].args == ["a1", REQUEST_ID]
        assert aps.jobs[REQUEST_ID].options["coalesce"] is True
        assert aps.jobs[REQUEST_ID].options["max_instances"] == 1
        assert requests.apply(aps, body, add) == "added"
        assert requests.apply(aps, body, {"op": "remove", "request_id": REQUEST_ID}) == ("removed")
        assert requests.apply(aps, body, {"op": "remove", "request_id": REQUEST_ID}) == ("unknown")

    @pytest.mark.parametrize(
        "request_",
        [
            None,
            [],
            {"op": "pause"},
            {"op": "add", "agent_id": "a1"},
            {"op": "add", "agent_id": "../x", "request_id": "r", "deadline_epoch": 1},
            {"op": "add", "agent_id": "a1", "request_id": "r", "deadline_epoch": "soon"},
            {"op": "remove", "request_id": ""},
        ],
    )
    def test_d15_invalid_requests_change_nothing(
        self, request_: Any, caplog: pytest.LogCaptureFixture
    ) -> None:
        capture(caplog)
        aps = StubScheduler(stored=("kept",))
        assert requests.apply(aps, body, request_) == "invalid"
        assert list(aps.jobs) == ["kept"]
        assert len(events(caplog, "scheduler_request_invalid")) == 1

    def test_d15_infinite_deadline_is_invalid(self) -> None:
        aps = StubScheduler()
        bad = {"op": "add", "agent_id": "a1", "request_id": "r", "deadline_epoch": float("inf")}
        assert requests.apply(aps, body, bad) == "invalid"


def test_c27_tick_enqueues_one_sync_host_until_it_ran(redis_client: Any) -> None:
    sent: list[Any] = []

    class Broker:
        def declare_queue(self, name: str) -> None:
            pass

        def enqueue(self, message: Any) -> Any:
            sent.append(message)
            return message

    broker: Any = Broker()
    assert sync_tick.tick(redis_client, broker, "h1", 1.0) is True
    assert sync_tick.tick(redis_client, broker, "h1", 1.0) is False
    assert 0 < redis_client.ttl(sync_running("h1")) <= sync_tick.MIN_FLAG_TTL_SECONDS
    redis_client.delete(sync_running("h1"))  # what the sync_host actor does when done
    assert sync_tick.tick(redis_client, broker, "h1", 1.0) is True
    assert [(m.queue_name, m.actor_name, m.args) for m in sent] == [
        ("tidings.host.h1", "sync_host", ("h1",))
    ] * 2
