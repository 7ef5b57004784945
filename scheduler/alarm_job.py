"""The alarm job's body (delay.md D15) and how alarm jobs are added and removed.

An alarm job is an APScheduler ``DateTrigger`` job whose id is the request id.
Its body only enqueues ``expire_delay(agent_id, request_id)`` on the host queue
(the actor forwards it if the agent moved); it reads no file. The job store
keeps the body's reference, :data:`ALARM_JOB_REF`, and binds it to this
process's broker when it rebuilds a job, so nothing but this function can run.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial

from apscheduler.jobstores.base import JobLookupError
from apscheduler.schedulers.base import BaseScheduler
from apscheduler.triggers.date import DateTrigger
from dramatiq import Broker

from tidings.workers import actor_names
from tidings.workers.dispatch import send
from tidings.workers.routing import host_queue

#: D16: the one callable reference the job store accepts.
ALARM_JOB_REF = "tidings.scheduler.alarm_job:enqueue_expire"
#: The same body under the name job stores written before the ``tidings.`` namespace hold.
LEGACY_ALARM_JOB_REF = "scheduler.alarm_job:enqueue_expire"
#: The job store alias of alarm jobs (the sync tick lives in memory).
ALARM_STORE = "alarms"

AlarmBody = Callable[[str, str], None]


def enqueue_expire(broker: Broker, host: str, agent_id: str, request_id: str) -> None:
    """D15: the whole body of an alarm job."""
    send(broker, actor_names.EXPIRE_DELAY, host_queue(host), agent_id, request_id)


def bind(broker: Broker, host: str) -> AlarmBody:
    """The body as this process runs it: ``(agent_id, request_id) -> None``."""
    return partial(enqueue_expire, broker, host)


def schedule(scheduler: BaseScheduler, body: AlarmBody, agent_id: str, request_id: str,
             deadline_epoch: float) -> None:
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
