"""The alarm job's body (delay.md D15) and how alarm jobs are added and removed.

An alarm job is an APScheduler ``DateTrigger`` job whose id is the request id.
Its body runs ``expire_delay`` (D17) at once in this process — the scheduler is on
the agent's host, and D17 is idempotent —, so the alarm is not late by a queue
hop. When that cannot be done here (the agent lives on another host, its workdir
is not on this one, the expiry failed and the alarm is still owed), the body
enqueues ``expire_delay(agent_id, request_id)`` on the agent's host queue instead;
whichever path runs second is a no-op (D17). The job store keeps the body's
reference, :data:`ALARM_JOB_REF`, and binds it to this process when it rebuilds a
job, so nothing but this function can run.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial

from apscheduler.jobstores.base import JobLookupError
from apscheduler.schedulers.base import BaseScheduler
from apscheduler.triggers.date import DateTrigger
from dramatiq import Broker

from tidings.jobs import log
from tidings.jobs.consumer import alarm_plan, expire
from tidings.jobs.runtime import Runtime
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

AlarmBody = Callable[[str, str], None]


def enqueue_expire(broker: Broker, host: str, agent_id: str, request_id: str) -> None:
    """D15's fallback: ``expire_delay`` on the host queue (the actor forwards it to the
    agent's host if the agent moved)."""
    send(broker, actor_names.EXPIRE_DELAY, host_queue(host), agent_id, request_id)


def expire_here(rt: Runtime, broker: Broker, agent_id: str, request_id: str) -> None:
    """D15: the whole body of an alarm job — D17 in this process, else the actor."""
    host = rt.settings.host
    fence = RunFence(rt.redis, rt.clock)
    ran = False
    try:
        # As an actor does: a move of the agent waits for this run (store/placement.py).
        token, raw = fence.enter_reading(agent_id, host)
        try:
            agent = parse_record(raw, agent_id)
            if agent is not None and agent.host == host and os.path.isdir(agent.workdir):
                expire(rt, agent, request_id)
                # D11 answers false on a failure too: only an alarm still owed goes on.
                plan = alarm_plan(rt, agent)
                ran = plan is None or plan.request_id != request_id or plan.action != "expire"
        finally:
            fence.leave(agent_id, token)
    except Exception as exc:  # the queue is the fallback, whatever failed here
        log.event(
            "scheduler_alarm_fallback",
            agent_id=agent_id,
            request_id=request_id,
            error=type(exc).__name__,
            detail=str(exc)[:200],
        )
    if not ran:
        enqueue_expire(broker, host, agent_id, request_id)


def bind(rt: Runtime, broker: Broker) -> AlarmBody:
    """The body as this process runs it: ``(agent_id, request_id) -> None``."""
    return partial(expire_here, rt, broker)


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
