"""The alarm job's body (delay.md D15) and how alarm jobs are added and removed.

An alarm job is an APScheduler ``DateTrigger`` job whose id is the request id.
Its body runs ``expire_delay`` (D17) at once in this process — the scheduler is on
the agent's host, and D17 is idempotent —, so the alarm is not late by a queue
hop. The precise timer of scheduler/alarm_timer.py, which mirrors the alarm jobs,
usually runs it first, at the deadline itself; the body then only claims the
request and finds nothing left to do. When D17 cannot be done here (the agent
lives on another host, its workdir is not on this one, the expiry failed and the
alarm is still owed), the body enqueues ``expire_delay(agent_id, request_id)`` on
the agent's host queue instead; whichever path runs second is a no-op (D17). The
job store keeps the body's reference, :data:`ALARM_JOB_REF`, and binds it to this
process when it rebuilds a job, so nothing but this function can run.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial

from apscheduler.events import (
    EVENT_ALL_JOBS_REMOVED,
    EVENT_JOB_ADDED,
    EVENT_JOB_MODIFIED,
    EVENT_JOB_REMOVED,
    JobEvent,
    SchedulerEvent,
)
from apscheduler.jobstores.base import JobLookupError
from apscheduler.schedulers.base import BaseScheduler
from apscheduler.triggers.date import DateTrigger
from dramatiq import Broker

from tidings.jobs import log
from tidings.jobs.consumer import alarm_plan, expire, rehearse_expiry
from tidings.jobs.runtime import Runtime
from tidings.scheduler.alarm_timer import AlarmTimer
from tidings.store.models import AgentRecord
from tidings.store.placement import RunFence
from tidings.store.registry import parse_record
from tidings.workers import actor_names
from tidings.workers.dispatch import send
from tidings.workers.routing import host_queue

#: D16: the one callable reference the job store accepts.
ALARM_JOB_REF = "tidings.scheduler.alarm_job:expire_here"
#: The same body under the names job stores written by earlier versions hold (the body
#: then only enqueued ``expire_delay``; it now runs it here first).
LEGACY_ALARM_JOB_REFS = (
    "tidings.scheduler.alarm_job:enqueue_expire",
    "scheduler.alarm_job:enqueue_expire",
)
#: The job store alias of alarm jobs (the sync tick lives in memory).
ALARM_STORE = "alarms"
#: A job's run date is the deadline rounded to the microsecond (a ``datetime``): the
#: timer waits a microsecond more, so it never runs before the state's own deadline.
RUN_DATE_RESOLUTION = 1e-6
#: How long before the deadline the timer rehearses the expiry's first reads (s). A
#: thread that slept tens of milliseconds runs its next file reads several times slower
#: (issue 33, this 2-core VM: the first state read 134-190 µs after a 10 ms sleep, 32 µs
#: after 1 ms), and the alarm's lateness is that path; the rehearsal itself takes ~0.3 ms.
REHEARSAL_SECONDS = 0.002

AlarmBody = Callable[[str, str], None]


def enqueue_expire(broker: Broker, host: str, agent_id: str, request_id: str) -> None:
    """D15's fallback: ``expire_delay`` on the host queue (the actor forwards it to the
    agent's host if the agent moved)."""
    send(broker, actor_names.EXPIRE_DELAY, host_queue(host), agent_id, request_id)


def _run_fenced(
    rt: Runtime,
    agent_id: str,
    request_id: str,
    wait: Callable[[AgentRecord], bool] | None = None,
) -> bool:
    """D17 here, inside the run fence; ``True`` when no alarm for ``request_id`` is owed
    any more, ``False`` when it is still owed or the agent is not served from here.
    ``wait`` (the timer's) runs once the fence is entered and the record read, and
    ``False`` from it gives up before D17."""
    host = rt.settings.host
    fence = RunFence(rt.redis, rt.clock)
    # As an actor does: a move of the agent waits for this run (store/placement.py).
    token, raw = fence.enter_reading(agent_id, host)
    try:
        agent = parse_record(raw, agent_id)
        if agent is None or agent.host != host or not os.path.isdir(agent.workdir):
            return False
        if wait is not None and not wait(agent):
            return False
        expire(rt, agent, request_id)
        # D11 answers false on a failure too: only an alarm still owed goes on.
        plan = alarm_plan(rt, agent)
        # Still pending ("add": run before its deadline) is not done either.
        return plan is None or plan.request_id != request_id
    finally:
        fence.leave(agent_id, token)


def expire_on_time(
    rt: Runtime,
    agent_id: str,
    request_id: str,
    deadline: float,
    wait_until: Callable[[float], bool],
) -> bool:
    """The precise timer's run (scheduler/alarm_timer.py): prepared before the deadline,
    its first reads rehearsed just before it (:data:`REHEARSAL_SECONDS`), D17 at it."""

    def at_deadline(agent: AgentRecord) -> bool:
        if not wait_until(deadline - REHEARSAL_SECONDS):
            return False
        rehearse_expiry(agent, request_id, deadline)
        return wait_until(deadline)

    return _run_fenced(rt, agent_id, request_id, at_deadline)


def expire_here(
    rt: Runtime,
    broker: Broker,
    agent_id: str,
    request_id: str,
    *,
    timer: AlarmTimer | None = None,
) -> None:
    """D15: the whole body of an alarm job — nothing if the precise timer already ran
    D17 for it, else D17 in this process, else the actor."""
    if timer is not None and timer.claim(request_id):
        return
    try:
        ran = _run_fenced(rt, agent_id, request_id)
    except Exception as exc:  # the queue is the fallback, whatever failed here
        log.event(
            "scheduler_alarm_fallback",
            agent_id=agent_id,
            request_id=request_id,
            error=type(exc).__name__,
            detail=str(exc)[:200],
        )
        ran = False
    if not ran:
        enqueue_expire(broker, rt.settings.host, agent_id, request_id)


def bind(rt: Runtime, broker: Broker, timer: AlarmTimer | None = None) -> AlarmBody:
    """The body as this process runs it: ``(agent_id, request_id) -> None``."""
    return partial(expire_here, rt, broker, timer=timer)


def timer_for(rt: Runtime) -> AlarmTimer:
    """The precise timer of an active scheduler, firing :func:`expire_on_time`."""
    return AlarmTimer(partial(expire_on_time, rt), rt.clock)


def track_jobs(scheduler: BaseScheduler, timer: AlarmTimer) -> None:
    """Keep ``timer`` armed with exactly the alarm jobs ``scheduler`` holds (D15, D18):
    added or replaced jobs are armed at their run date, removed ones disarmed."""

    def on_job_event(event: SchedulerEvent) -> None:
        if event.code == EVENT_ALL_JOBS_REMOVED:
            if event.alias in (None, ALARM_STORE):  # None: every store
                timer.disarm_all()
            return
        if not isinstance(event, JobEvent) or event.jobstore != ALARM_STORE:
            return
        if event.code == EVENT_JOB_REMOVED:
            timer.disarm(event.job_id)
            return
        job = scheduler.get_job(event.job_id, jobstore=ALARM_STORE)
        if job is None or job.next_run_time is None or len(job.args) != 2:
            timer.disarm(event.job_id)
            return
        agent_id, request_id = (str(arg) for arg in job.args)
        timer.arm(agent_id, request_id, job.next_run_time.timestamp() + RUN_DATE_RESOLUTION)

    scheduler.add_listener(
        on_job_event,
        EVENT_JOB_ADDED | EVENT_JOB_MODIFIED | EVENT_JOB_REMOVED | EVENT_ALL_JOBS_REMOVED,
    )


def schedule(
    scheduler: BaseScheduler, body: AlarmBody, agent_id: str, request_id: str, deadline_epoch: float
) -> None:
    """D15 ``add``: one job per request id, replaced if it exists, never skipped as late."""
    scheduler.add_job(
        body,
        trigger=DateTrigger(run_date=datetime.fromtimestamp(deadline_epoch, UTC), timezone=UTC),
        args=[agent_id, request_id],
        id=request_id,
        name=f"delay alarm {request_id}",
        jobstore=ALARM_STORE,
        replace_existing=True,
        misfire_grace_time=None,
        coalesce=True,
        max_instances=1,
    )


def unschedule(scheduler: BaseScheduler, request_id: str) -> bool:
    """D15 ``remove``: ``False`` (a no-op) for an unknown id."""
    if scheduler.get_job(request_id, jobstore=ALARM_STORE) is None:
        return False
    try:
        scheduler.remove_job(request_id, jobstore=ALARM_STORE)
    except JobLookupError:
        return False
    return True
