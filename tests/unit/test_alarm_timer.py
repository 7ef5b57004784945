"""The precise alarm timer beside the alarm jobs (delay.md D15, D17, D19; issue 33).

The timer prepares an alarm before its deadline, runs D17 at the deadline and never
before it; the job that fires at the same run date claims the request and finds it
done, or takes it over when the timer has not started on it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC
from typing import Any

import pytest
from apscheduler.events import EVENT_JOB_EXECUTED, EVENT_SCHEDULER_STARTED
from apscheduler.jobstores.memory import MemoryJobStore
from apscheduler.schedulers.blocking import BlockingScheduler

from tests.conftest import make_agent
from tests.support.delay import (
    REQUEST_ID,
    SentMessages,
    active_state,
    alarm_of,
    capture,
    events,
    put_state,
    state_of,
)
from tests.support.groups import TIMING
from tests.support.polling import wait_until
from tidings.jobs.runtime import Runtime
from tidings.scheduler import alarm_job
from tidings.scheduler.alarm_timer import AlarmTimer
from tidings.store.clock import SystemClock
from tidings.store.keys import AgentKeys
from tidings.store.settings import Settings

#: A timer run is timed against the wall clock: never beside another time-bound test.
pytestmark = TIMING

#: Deadlines in these tests are this far ahead (s): long enough to arm before them.
AHEAD = 0.25
#: How late a timer run may be here (s): loose, the suite shares its cores; the
#: figure that counts is bench/alarms.py's.
SLACK = 0.2


class Runs:
    """A ``fire`` that records when it prepared and when its deadline came."""

    def __init__(
        self, answer: bool | BaseException = True, hold: threading.Event | None = None
    ) -> None:
        self.answer = answer
        self.hold = hold
        self.prepared: dict[str, float] = {}
        self.fired: dict[str, float] = {}
        self.order: list[str] = []
        self.waited: list[bool] = []

    def __call__(
        self, agent_id: str, request_id: str, deadline: float, wait: Callable[[float], bool]
    ) -> bool:
        self.prepared[request_id] = time.time()
        reached = wait(deadline)
        self.waited.append(reached)
        if not reached:
            return False
        self.fired[request_id] = time.time()
        self.order.append(request_id)
        if self.hold is not None:
            self.hold.wait(10)
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer


@pytest.fixture
def timers() -> Iterator[Callable[[Runs], AlarmTimer]]:
    made: list[AlarmTimer] = []

    def make(runs: Runs) -> AlarmTimer:
        timer = AlarmTimer(runs, SystemClock())
        made.append(timer)
        return timer

    yield make
    for timer in made:
        timer.close()


def test_d15_timer_prepares_early_and_fires_at_the_deadline_never_before(
    timers: Callable[[Runs], AlarmTimer],
) -> None:
    runs = Runs()
    timer = timers(runs)
    deadline = time.time() + AHEAD
    timer.arm("a1", "r1", deadline)
    wait_until(lambda: "r1" in runs.fired, timeout=5, what="the timer's run")
    assert runs.prepared["r1"] < deadline, "the fence and record are read before the deadline"
    assert deadline <= runs.fired["r1"] < deadline + SLACK
    assert timer.claim("r1") is True, "the job finds the request done"
    assert timer.claim("r1") is False, "an outcome is claimed once"


def test_d15_alarms_fire_in_deadline_order_and_rearming_moves_one(
    timers: Callable[[Runs], AlarmTimer],
) -> None:
    runs = Runs()
    timer = timers(runs)
    now = time.time()
    timer.arm("a3", "r3", now + AHEAD + 0.2)
    timer.arm("a1", "r1", now + AHEAD + 0.1)
    timer.arm("a2", "r2", now + AHEAD)
    timer.arm("a1", "r1", now + AHEAD + 0.3)  # replaced: the earlier entry is stale
    wait_until(lambda: len(runs.order) == 3, timeout=5, what="three runs")
    assert runs.order == ["r2", "r3", "r1"]
    assert runs.fired["r1"] >= now + AHEAD + 0.3


def test_d15_a_disarmed_or_claimed_request_is_never_fired(
    timers: Callable[[Runs], AlarmTimer],
) -> None:
    """A removed job disarms its request; a job that fires before the timer started on
    its request (the timer busy with another) owns it, and the timer forgets it."""
    runs = Runs()
    timer = timers(runs)
    now = time.time()
    timer.arm("a1", "removed", now + AHEAD)
    timer.arm("a2", "claimed", now + AHEAD)
    timer.arm("a3", "kept", now + AHEAD + 0.05)
    timer.disarm("removed")
    assert timer.claim("claimed") is False
    wait_until(lambda: "kept" in runs.fired, timeout=5, what="the kept run")
    assert runs.order == ["kept"] and timer.armed() == 0


def test_d15_a_claim_waits_for_the_run_in_flight_and_takes_its_outcome(
    timers: Callable[[Runs], AlarmTimer],
) -> None:
    hold = threading.Event()
    runs = Runs(answer=True, hold=hold)
    timer = timers(runs)
    timer.arm("a1", "r1", time.time())
    wait_until(lambda: "r1" in runs.fired, timeout=5, what="the run in flight")
    outcome: list[bool] = []
    claimer = threading.Thread(target=lambda: outcome.append(timer.claim("r1")))
    claimer.start()
    time.sleep(0.05)  # the claim must be waiting, not answered, while the run holds
    assert outcome == []
    hold.set()
    claimer.join(5)
    assert outcome == [True]


@pytest.mark.parametrize("answer", [False, RuntimeError("workdir gone")])
def test_d15_a_failed_run_leaves_the_request_to_the_job(
    timers: Callable[[Runs], AlarmTimer], answer: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """``False`` (an alarm still owed, an agent not served here) or an exception: the
    job runs its own path (D17 in the process, else the actor)."""
    capture(caplog)
    runs = Runs(answer=answer)
    timer = timers(runs)
    timer.arm("a1", "r1", time.time())
    wait_until(lambda: "r1" in runs.fired, timeout=5, what="the run")
    assert timer.claim("r1") is False
    failed = events(caplog, "scheduler_alarm_timer_failed")
    assert len(failed) == (1 if isinstance(answer, BaseException) else 0)


def test_d15_closing_stops_a_run_waiting_for_its_deadline(
    timers: Callable[[Runs], AlarmTimer],
) -> None:
    runs = Runs()
    timer = timers(runs)
    timer.arm("a1", "r1", time.time() + 0.06)  # prepared at once: inside the lead
    wait_until(lambda: "r1" in runs.prepared, timeout=5, what="the preparation")
    started = time.monotonic()
    timer.close()
    assert time.monotonic() - started < 1
    assert runs.waited == [False] and runs.fired == {}
    timer.arm("a2", "r2", time.time())  # a closed timer arms nothing
    assert timer.armed() == 0


@pytest.fixture
def real_rt(redis_client: Any, settings: Settings, rt: Runtime) -> Runtime:
    """The shared runtime on the real clock: the timer waits in real time."""
    return Runtime(redis_client, SystemClock(), settings, rt.dispatch)


def test_d15_timer_and_job_publish_exactly_one_alarm_at_the_deadline(
    real_rt: Runtime, tmp_path: Any
) -> None:
    """Through a running APScheduler: the job added at the deadline arms the timer
    (``track_jobs``), the timer publishes the alarm at the deadline (never before, by
    the alarm's own ``actual_seconds``) and wakes the agent once (D14); the job, firing
    at the same run date, claims the request and enqueues nothing (D17, D19)."""
    agent = make_agent(real_rt, tmp_path / "workdir")
    now = time.time()
    put_state(agent, active_state(now, seconds=60, started=now - 60 + 1.0))
    deadline = state_of(agent)["deadline_epoch"]
    broker = SentMessages()
    timer = alarm_job.timer_for(real_rt)
    body = alarm_job.bind(real_rt, broker, timer)  # type: ignore[arg-type]
    aps = BlockingScheduler(timezone=UTC, jobstores={alarm_job.ALARM_STORE: MemoryJobStore()})
    alarm_job.track_jobs(aps, timer)
    started, ran = threading.Event(), threading.Event()
    aps.add_listener(lambda _e: started.set(), EVENT_SCHEDULER_STARTED)
    aps.add_listener(lambda _e: ran.set(), EVENT_JOB_EXECUTED)
    thread = threading.Thread(target=aps.start, daemon=True)
    thread.start()
    try:
        assert started.wait(10)
        alarm_job.schedule(aps, body, agent.agent_id, REQUEST_ID, deadline)
        assert timer.armed() == 1, "the add armed the timer"
        wait_until(lambda: state_of(agent)["status"] == "published", timeout=10, what="alarm")
        done = alarm_of(agent)["data"]["delay_alarm"]
        assert done["actual_seconds"] >= done["requested_seconds"]
        assert time.time() >= deadline
        assert ran.wait(10), "the job's own run"  # it waited for the timer's run to end
        assert broker.sent == []
        assert real_rt.redis.xlen(AgentKeys(agent.agent_id).wake_stream) == 1
    finally:
        aps.shutdown(wait=True)
        thread.join(10)
        timer.close()


def test_d15_a_run_before_the_deadline_is_not_done(rt: Runtime, agent: Any) -> None:
    """A run that comes before the deadline (a run date a microsecond early) publishes
    nothing and says so: the job then runs its own path, not the timer's "done"."""
    put_state(agent, active_state(rt.clock.now(), seconds=10))
    reached: list[float] = []

    def wait(deadline: float) -> bool:
        reached.append(deadline)
        return True

    deadline = state_of(agent)["deadline_epoch"]
    assert alarm_job.expire_on_time(rt, agent.agent_id, REQUEST_ID, deadline, wait) is False
    assert reached == [deadline - alarm_job.REHEARSAL_SECONDS, deadline]
    assert state_of(agent)["status"] == "active"


def test_d15_the_timer_rehearses_the_first_reads_just_before_the_deadline(
    rt: Runtime, agent: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The timer's run waits until :data:`REHEARSAL_SECONDS` before the deadline, runs
    the lock-free look once (changing nothing), then waits for the deadline and only
    then runs D11 (issue 33: a thread that slept reads cold)."""
    now = rt.clock.now()
    put_state(agent, active_state(now, seconds=10, started=now - 10))
    deadline = state_of(agent)["deadline_epoch"]
    steps: list[str] = []
    state_file = agent.root / ".notification/.delay_state.json"

    def rehearse(record: Any, request_id: str, at: float) -> None:
        before = state_file.read_bytes()
        steps.append(f"rehearse {request_id} {at == deadline}")
        real_rehearse(record, request_id, at)
        assert state_file.read_bytes() == before, "a rehearsal changes nothing"

    real_rehearse = alarm_job.rehearse_expiry
    monkeypatch.setattr(alarm_job, "rehearse_expiry", rehearse)

    def wait(until: float) -> bool:
        steps.append("deadline" if until == deadline else "rehearsal")
        return True

    assert alarm_job.expire_on_time(rt, agent.agent_id, REQUEST_ID, deadline, wait) is True
    assert steps == ["rehearsal", f"rehearse {REQUEST_ID} True", "deadline"]
    assert state_of(agent)["status"] == "published"


def test_d15_a_timer_closed_before_the_rehearsal_does_nothing(rt: Runtime, agent: Any) -> None:
    now = rt.clock.now()
    put_state(agent, active_state(now, seconds=10, started=now - 10))
    deadline = state_of(agent)["deadline_epoch"]
    assert (
        alarm_job.expire_on_time(rt, agent.agent_id, REQUEST_ID, deadline, lambda _d: False)
        is False
    )
    assert state_of(agent)["status"] == "active"


def test_d15_removing_the_job_disarms_the_timer(real_rt: Runtime) -> None:
    timer = alarm_job.timer_for(real_rt)
    aps = BlockingScheduler(timezone=UTC, jobstores={alarm_job.ALARM_STORE: MemoryJobStore()})
    alarm_job.track_jobs(aps, timer)
    started = threading.Event()
    aps.add_listener(lambda _e: started.set(), EVENT_SCHEDULER_STARTED)
    thread = threading.Thread(target=aps.start, daemon=True)
    thread.start()
    try:
        assert started.wait(10)
        body = alarm_job.bind(real_rt, SentMessages(), timer)  # type: ignore[arg-type]
        alarm_job.schedule(aps, body, "a1", REQUEST_ID, time.time() + 60)
        alarm_job.schedule(aps, body, "a2", "f" * 32, time.time() + 60)
        assert timer.armed() == 2
        assert alarm_job.unschedule(aps, REQUEST_ID) is True
        assert timer.armed() == 1
        aps.remove_all_jobs(jobstore=alarm_job.ALARM_STORE)
        assert timer.armed() == 0
    finally:
        aps.shutdown(wait=True)
        thread.join(10)
        timer.close()
