"""Alarm requests (delay.md D15): the messages only the active scheduler consumes.

``{"op": "add", "agent_id", "request_id", "deadline_epoch"}`` becomes (or
replaces) the request's alarm job; ``{"op": "remove", "request_id"}`` drops it,
and is a no-op for an unknown id. A malformed request is logged and dropped.
"""

from __future__ import annotations

from typing import Annotated, Literal

import dramatiq
from apscheduler.schedulers.base import BaseScheduler
from dramatiq import Broker
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from tidings.jobs import log
from tidings.scheduler import alarm_job
from tidings.store.models import NAME_PATTERN
from tidings.workers import actor_names
from tidings.workers.routing import scheduler_queue

#: Longest request id accepted (ours are 32 hex characters).
MAX_REQUEST_ID_CHARS = 200

RequestId = Annotated[str, Field(min_length=1, max_length=MAX_REQUEST_ID_CHARS)]


class AddRequest(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    op: Literal["add"]
    agent_id: Annotated[str, Field(pattern=NAME_PATTERN)]
    request_id: RequestId
    deadline_epoch: Annotated[float, Field(allow_inf_nan=False)]


class RemoveRequest(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    op: Literal["remove"]
    request_id: RequestId


_requests: TypeAdapter[AddRequest | RemoveRequest] = TypeAdapter(
    Annotated[AddRequest | RemoveRequest, Field(discriminator="op")]
)


def apply(scheduler: BaseScheduler, body: alarm_job.AlarmBody, request: object) -> str:
    """Apply one request; returns ``added``, ``removed``, ``unknown`` or ``invalid``."""
    try:
        parsed = _requests.validate_python(request)
    except ValidationError as exc:
        log.event("scheduler_request_invalid", error=str(exc.errors()[0]["msg"])[:200])
        return "invalid"
    if isinstance(parsed, AddRequest):
        alarm_job.schedule(
            scheduler, body, parsed.agent_id, parsed.request_id, parsed.deadline_epoch
        )
        return "added"
    return "removed" if alarm_job.unschedule(scheduler, parsed.request_id) else "unknown"


def declare_request_actor(
    broker: Broker, host: str, scheduler: BaseScheduler, body: alarm_job.AlarmBody
) -> dramatiq.Actor[[object], None]:
    """The ``alarm_request`` actor on the host's scheduler queue (scheduler process only)."""

    def alarm_request(request: object) -> None:
        apply(scheduler, body, request)

    return dramatiq.Actor(
        alarm_request,
        broker=broker,
        actor_name=actor_names.ALARM_REQUEST,
        queue_name=scheduler_queue(host),
        priority=0,
        options={},
    )
