"""The JSON job store and alarm jobs (delay.md D15, D16; issue 3 acceptance 7)."""

from __future__ import annotations

import json
import os
import pickle
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from apscheduler.events import EVENT_SCHEDULER_STARTED
from apscheduler.job import Job
from apscheduler.jobstores.base import ConflictingIdError, JobLookupError
from apscheduler.schedulers.blocking import BlockingScheduler
from apscheduler.triggers.date import DateTrigger
from apscheduler.triggers.interval import IntervalTrigger

from tests.support.delay import (
    REQUEST_ID,
    SentMessages,
    active_state,
    alarm_bytes_of,
    capture,
    events,
    put_state,
    state_of,
)
from tests.support.polling import wait_until
from tidings.jobs.runtime import Runtime
from tidings.scheduler import alarm_job
from tidings.scheduler.alarm_job import ALARM_JOB_REF, ALARM_STORE
from tidings.scheduler.jobstore import JsonRedisJobStore
from tidings.store import faults, keys
from tidings.store.clock import FakeClock
from tidings.store.keys import AgentKeys
from tidings.store.models import AgentRecord
from tidings.store.registry import AgentRegistry

HOST = "h1"
RID = "0123456789abcdef0123456789abcdef"


class Recorder:
    """An alarm body that records its calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def __call__(self, agent_id: str, request_id: str) -> None:
        self.calls.append((agent_id, request_id))


@pytest.fixture
def body() -> Recorder:
    return Recorder()


@pytest.fixture
def store(redis_client: Any, body: Recorder) -> JsonRedisJobStore:
    return JsonRedisJobStore(redis_client, HOST, {ALARM_JOB_REF: body})


def make_job(store: JsonRedisJobStore, body: Any, run: float, job_id: str = RID) -> Job:
    aps = BlockingScheduler(timezone=UTC)
    store.start(aps, ALARM_STORE)
    when = datetime.fromtimestamp(run, UTC)
    return Job(
        aps,
        id=job_id,
        func=body,
        trigger=DateTrigger(run_date=when, timezone=UTC),
        executor="default",
        args=["agent1", job_id],
        kwargs={},
        name="alarm",
        misfire_grace_time=None,
        coalesce=True,
        max_instances=1,
        next_run_time=when,
    )


class Boom:
    """Unpickling this creates a directory: proof that bytes were executed."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.mkdir, (self.marker,))


def plant(redis: Any, job_id: str, raw: bytes, run: float) -> None:
    redis.hset(keys.scheduler_jobs(HOST), job_id, raw)
    redis.zadd(keys.scheduler_run_times(HOST), {job_id: run})


class TestEncoding:
    """D16: JSON, never pickle."""

    def test_d16_job_is_stored_as_json_under_host_keys(
        self, store: JsonRedisJobStore, body: Recorder, redis_client: Any
    ) -> None:
        assert keys.scheduler_jobs(HOST) == "{h:h1}:aps.jobs"
        assert keys.scheduler_run_times(HOST) == "{h:h1}:aps.run_times"
        run = 1_790_000_000.25
        store.add_job(make_job(store, body, run))
        stored = json.loads(redis_client.hget(keys.scheduler_jobs(HOST), RID))
        assert stored == {
            "version": 1,
            "id": RID,
            "func": ALARM_JOB_REF,
            "args": ["agent1", RID],
            "kwargs": {},
            "run_date": run,
            "executor": "default",
            "name": "alarm",
            "misfire_grace_time": None,
            "coalesce": True,
            "max_instances": 1,
            "next_run_time": run,
        }
        assert redis_client.zscore(keys.scheduler_run_times(HOST), RID) == run

    def test_d16_round_trip_binds_the_allowlisted_callable(
        self, store: JsonRedisJobStore, body: Recorder
    ) -> None:
        store.add_job(make_job(store, body, 1_790_000_000.0))
        job = store.lookup_job(RID)
        assert job is not None and job.func is body
        assert job.args == ("agent1", RID)
        assert job.trigger.run_date == datetime.fromtimestamp(1_790_000_000.0, UTC)
        assert job.misfire_grace_time is None and job.coalesce and job.max_instances == 1

    def test_d16_refuses_to_store_other_callables_or_triggers(
        self, store: JsonRedisJobStore, body: Recorder
    ) -> None:
        job = make_job(store, body, 1_790_000_000.0)
        job.func = print
        job.func_ref = "builtins:print"
        with pytest.raises(ValueError, match="allowlist"):
            store.add_job(job)
        job = make_job(store, body, 1_790_000_000.0)
        job.trigger = IntervalTrigger(seconds=5)
        with pytest.raises(ValueError, match="DateTrigger"):
            store.add_job(job)

    def test_d16_store_semantics(self, store: JsonRedisJobStore, body: Recorder) -> None:
        job = make_job(store, body, 1_790_000_000.0)
        store.add_job(job)
        with pytest.raises(ConflictingIdError):
            store.add_job(make_job(store, body, 1_790_000_005.0))
        store.add_job(job)  # the very job again: a re-sent add (issue 30), answered stored
        store.update_job(job)
        assert [j.id for j in store.get_all_jobs()] == [RID]
        assert store.get_next_run_time() == datetime.fromtimestamp(1_790_000_000.0, UTC)
        assert [j.id for j in store.get_due_jobs(datetime.fromtimestamp(1_790_000_001, UTC))] == [
            RID
        ]
        assert store.get_due_jobs(datetime.fromtimestamp(1_789_999_999, UTC)) == []
        store.remove_job(RID)
        store.remove_job(RID)  # already gone (another scheduler fired it): not an error
        with pytest.raises(JobLookupError):
            store.update_job(job)
        assert store.get_all_jobs() == [] and store.get_next_run_time() is None


class TestRejection:
    """D16, acceptance 7: bytes that are not our JSON are refused, reported, never run."""

    def test_d16_planted_pickle_is_never_unpickled(
        self,
        store: JsonRedisJobStore,
        redis_client: Any,
        tmp_path: Path,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        capture(caplog)
        marker = tmp_path / "pwned"
        plant(redis_client, "evil", pickle.dumps(Boom(marker)), time.time() - 1)
        assert store.get_due_jobs(datetime.now(UTC)) == []
        assert not marker.exists()
        assert redis_client.hlen(keys.scheduler_jobs(HOST)) == 0
        assert redis_client.zcard(keys.scheduler_run_times(HOST)) == 0
        assert events(caplog, "scheduler_job_rejected") == [
            {"host": HOST, "job_id": "evil", "reason": "not_a_json_job"}
        ]

    @pytest.mark.parametrize(
        ("change", "reason"),
        [
            ({"func": "os:system", "args": ["touch /tmp/x"]}, "callable_not_allowed"),
            ({"func": "tidings.scheduler.alarm_job:bind"}, "callable_not_allowed"),
            ({"args": ["only-one"]}, "bad_arguments"),
            ({"args": [1, 2]}, "not_a_json_job"),
            ({"kwargs": {"x": "y"}}, "not_a_json_job"),
            ({"extra": 1}, "not_a_json_job"),
            ({"version": 2}, "not_a_json_job"),
            ({"id": "other"}, "id_mismatch"),
            ({"max_instances": 0}, "not_a_json_job"),
        ],
    )
    def test_d16_wrong_json_is_rejected(
        self,
        change: dict[str, Any],
        reason: str,
        store: JsonRedisJobStore,
        body: Recorder,
        redis_client: Any,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        capture(caplog)
        store.add_job(make_job(store, body, time.time() - 1))
        record = json.loads(redis_client.hget(keys.scheduler_jobs(HOST), RID))
        redis_client.hset(keys.scheduler_jobs(HOST), RID, json.dumps({**record, **change}))
        assert store.get_all_jobs() == []
        assert store.lookup_job(RID) is None
        assert body.calls == []
        assert [e["reason"] for e in events(caplog, "scheduler_job_rejected")] == [reason]

    def test_d16_run_time_without_job_is_dropped(
        self, store: JsonRedisJobStore, redis_client: Any
    ) -> None:
        redis_client.zadd(keys.scheduler_run_times(HOST), {"ghost": time.time() - 1})
        assert store.get_due_jobs(datetime.now(UTC)) == []
        assert redis_client.zcard(keys.scheduler_run_times(HOST)) == 0


@pytest.fixture
def running(store: JsonRedisJobStore) -> Iterator[BlockingScheduler]:
    aps = BlockingScheduler(timezone=UTC)
    aps.add_jobstore(store, ALARM_STORE)
    started = threading.Event()
    aps.add_listener(lambda _e: started.set(), EVENT_SCHEDULER_STARTED)
    thread = threading.Thread(target=aps.start, daemon=True)
    thread.start()
    assert started.wait(10)
    yield aps
    aps.shutdown(wait=True)
    thread.join(10)


class TestAlarmJobs:
    """D15: DateTrigger, id = request id, replace_existing, never skipped as late."""

    def test_d15_job_options(
        self, running: BlockingScheduler, body: Recorder, redis_client: Any
    ) -> None:
        deadline = time.time() + 3600
        alarm_job.schedule(running, body, "agent1", RID, deadline)
        alarm_job.schedule(running, body, "agent1", RID, deadline + 5)  # replace_existing
        stored = json.loads(redis_client.hget(keys.scheduler_jobs(HOST), RID))
        assert stored["id"] == RID and stored["func"] == ALARM_JOB_REF
        assert stored["run_date"] == pytest.approx(deadline + 5)
        assert stored["misfire_grace_time"] is None
        assert stored["coalesce"] is True and stored["max_instances"] == 1
        assert alarm_job.unschedule(running, RID) is True
        assert alarm_job.unschedule(running, RID) is False, "an unknown id is a no-op"

    def test_d15_job_fires_once_at_its_deadline(
        self, running: BlockingScheduler, body: Recorder, redis_client: Any
    ) -> None:
        alarm_job.schedule(running, body, "agent1", RID, time.time() + 0.3)
        wait_until(lambda: body.calls, timeout=5, what="the alarm job")
        assert body.calls == [("agent1", RID)]
        wait_until(lambda: redis_client.hlen(keys.scheduler_jobs(HOST)) == 0, timeout=5)

    def test_d15_alarm_missed_during_downtime_still_fires(
        self, store: JsonRedisJobStore, body: Recorder, redis_client: Any
    ) -> None:
        store.add_job(make_job(store, body, time.time() - 3600))  # an hour late
        aps = BlockingScheduler(timezone=UTC)
        aps.add_jobstore(store, ALARM_STORE)
        thread = threading.Thread(target=aps.start, daemon=True)
        thread.start()
        try:
            wait_until(lambda: body.calls, timeout=5, what="the missed alarm")
            wait_until(lambda: redis_client.hlen(keys.scheduler_jobs(HOST)) == 0, timeout=5)
        finally:
            aps.shutdown(wait=True)
            thread.join(10)
        assert body.calls == [("agent1", RID)]


def test_d15_body_runs_d17_here_and_enqueues_nothing(
    rt: Runtime, agent: AgentRecord, clock: FakeClock
) -> None:
    """The alarm is published by the job itself (no queue hop), and the wake follows
    (D14); a second run of the body (a duplicate) is a no-op (D17)."""
    put_state(agent, active_state(clock.now(), seconds=10))
    clock.advance(10.5)
    broker = SentMessages()
    body = alarm_job.bind(rt, broker)  # type: ignore[arg-type]
    body(agent.agent_id, REQUEST_ID)
    alarm = alarm_bytes_of(agent)
    assert alarm is not None and state_of(agent)["status"] == "published"
    assert rt.redis.xlen(AgentKeys(agent.agent_id).wake_stream) == 1
    body(agent.agent_id, REQUEST_ID)
    assert alarm_bytes_of(agent) == alarm and broker.sent == []
    assert rt.redis.xlen(AgentKeys(agent.agent_id).wake_stream) == 1


def test_d15_body_falls_back_to_the_actor_when_it_cannot_run_here(
    rt: Runtime,
    agent: AgentRecord,
    clock: FakeClock,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Another host, a workdir not on this one, or an expiry that failed with the alarm
    still owed: ``expire_delay`` goes to the host queue, nothing is published here."""
    broker = SentMessages()
    body = alarm_job.bind(rt, broker)  # type: ignore[arg-type]
    put_state(agent, active_state(clock.now(), seconds=10))
    clock.advance(10.5)
    want = ("tidings.host.testhost", "expire_delay", (agent.agent_id, REQUEST_ID))
    AgentRegistry(rt.redis).put(agent.model_copy(update={"host": "elsewhere"}))
    body(agent.agent_id, REQUEST_ID)
    AgentRegistry(rt.redis).put(agent.model_copy(update={"workdir": str(tmp_path / "gone")}))
    body(agent.agent_id, REQUEST_ID)
    assert alarm_bytes_of(agent) is None and state_of(agent)["status"] == "active"
    AgentRegistry(rt.redis).put(agent)

    def disk_fails(name: str) -> None:
        if name == "expire.after_expiring":
            raise OSError("disk went away")

    monkeypatch.setattr(faults, "reach", disk_fails)
    capture(caplog)
    body(agent.agent_id, REQUEST_ID)
    assert broker.expires() == [want] * 3
    assert alarm_bytes_of(agent) is None and state_of(agent)["status"] == "expiring"
    assert events(caplog, "notification_delay_reconcile_failed")
