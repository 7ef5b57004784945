"""An APScheduler job store in Redis that keeps jobs as JSON (delay.md D16).

APScheduler's own ``RedisJobStore`` pickles jobs, and unpickling bytes read
from a shared Redis runs whatever they say. This store writes a JSON record
(id, callable reference, args, trigger run date, job options, next run time)
and rebuilds a job only when the record is exactly that shape *and* its
callable reference is on the allowlist it was given; the job's callable is then
the allowlisted one, never something named by the stored bytes. Anything else
is removed, logged ``scheduler_job_rejected`` and never run.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Literal

from apscheduler.job import Job
from apscheduler.jobstores.base import BaseJobStore, ConflictingIdError, JobLookupError
from apscheduler.triggers.date import DateTrigger
from apscheduler.util import check_callable_args, datetime_to_utc_timestamp
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from redis import Redis

from tidings.jobs import log
from tidings.store import keys, replies
from tidings.store.scripts import Scripts
from tidings.store.scripts import scheduler as scheduler_scripts

#: Longest job id and argument accepted from the store.
MAX_ID_CHARS = 200
MAX_ARGS = 8


class StoredJob(BaseModel):
    """The JSON form of one job."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    version: Literal[1]
    id: str = Field(min_length=1, max_length=MAX_ID_CHARS)
    func: str
    args: list[str] = Field(max_length=MAX_ARGS)
    kwargs: dict[str, str] = Field(max_length=0)
    run_date: float
    executor: str
    name: str
    misfire_grace_time: int | None
    coalesce: bool
    max_instances: int = Field(ge=1)
    next_run_time: float | None


def _utc(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


class JsonRedisJobStore(BaseJobStore):  # type: ignore[misc]  # untyped base
    """Jobs of one host under ``{h:<host>}:aps.jobs`` / ``{h:<host>}:aps.run_times``."""

    def __init__(
        self, redis: Redis, host: str, callables: Mapping[str, Callable[..., object]]
    ) -> None:
        super().__init__()
        self.redis = redis
        self.host = host
        self.jobs_key = keys.scheduler_jobs(host)
        self.run_times_key = keys.scheduler_run_times(host)
        self._callables = dict(callables)
        self._scripts = Scripts(redis)

    # -- encoding ------------------------------------------------------------------

    def _ref_of(self, job: Job) -> str:
        for ref, func in self._callables.items():
            if job.func is func or job.func_ref == ref:
                return ref
        raise ValueError(f"job {job.id!r}: its callable is not on the job store's allowlist")

    def encode(self, job: Job) -> str:
        """The JSON record of ``job``; only allowlisted date-triggered jobs are storable."""
        if not isinstance(job.trigger, DateTrigger):
            raise ValueError(f"job {job.id!r}: only DateTrigger jobs are stored")
        next_run = job.next_run_time
        return StoredJob(
            version=1,
            id=job.id,
            func=self._ref_of(job),
            args=list(job.args),
            kwargs=dict(job.kwargs),
            run_date=datetime_to_utc_timestamp(job.trigger.run_date),
            executor=job.executor,
            name=job.name,
            misfire_grace_time=job.misfire_grace_time,
            coalesce=job.coalesce,
            max_instances=job.max_instances,
            next_run_time=datetime_to_utc_timestamp(next_run) if next_run else None,
        ).model_dump_json()

    def _decode(self, job_id: bytes | str, raw: bytes | str | None) -> Job | None:
        """A job rebuilt from ``raw``, or ``None`` after rejecting the entry."""
        if raw is None:
            return self._reject(job_id, "missing_job")
        try:
            stored = StoredJob.model_validate_json(raw)
        except ValidationError:
            return self._reject(job_id, "not_a_json_job")
        if stored.id != replies.text(job_id):
            return self._reject(job_id, "id_mismatch")
        func = self._callables.get(stored.func)
        if func is None:
            return self._reject(job_id, "callable_not_allowed")
        if not (
            math.isfinite(stored.run_date)
            and (stored.next_run_time is None or math.isfinite(stored.next_run_time))
        ):
            return self._reject(job_id, "bad_run_time")
        try:
            check_callable_args(func, stored.args, stored.kwargs)
        except ValueError:
            return self._reject(job_id, "bad_arguments")
        return self._job(stored, func)

    def _job(self, stored: StoredJob, func: Callable[..., object]) -> Job:
        job = Job.__new__(Job)
        job.id = stored.id
        job.func_ref = stored.func
        job.func = func
        job.trigger = DateTrigger(run_date=_utc(stored.run_date), timezone=UTC)
        job.executor = stored.executor
        job.args = tuple(stored.args)
        job.kwargs = dict(stored.kwargs)
        job.name = stored.name
        job.misfire_grace_time = stored.misfire_grace_time
        job.coalesce = stored.coalesce
        job.max_instances = stored.max_instances
        job.next_run_time = _utc(stored.next_run_time) if stored.next_run_time else None
        job._scheduler = self._scheduler
        job._jobstore_alias = self._alias
        return job

    def _reject(self, job_id: bytes | str, reason: str) -> Job | None:
        """Remove and report an entry that is not a job of ours; it never runs."""
        log.event(
            "scheduler_job_rejected",
            host=self.host,
            job_id=replies.text(job_id)[:MAX_ID_CHARS],
            reason=reason,
        )
        scheduler_scripts.remove_job(self._scripts, self.host, job_id=job_id)
        return None

    def _decode_all(self, entries: Iterable[tuple[bytes | str, bytes | str | None]]) -> list[Job]:
        jobs = [self._decode(job_id, raw) for job_id, raw in entries]
        return [job for job in jobs if job is not None]

    # -- BaseJobStore --------------------------------------------------------------

    def lookup_job(self, job_id: str) -> Job | None:
        raw = self.redis.hget(self.jobs_key, job_id)
        return self._decode(job_id, raw) if raw is not None else None

    def get_due_jobs(self, now: datetime) -> list[Job]:
        due = self.redis.zrangebyscore(self.run_times_key, 0, datetime_to_utc_timestamp(now))
        ids = [replies.text(job_id) for job_id in due]
        if not ids:
            return []
        return self._decode_all(zip(ids, self.redis.hmget(self.jobs_key, ids), strict=True))

    def get_next_run_time(self) -> datetime | None:
        first = self.redis.zrange(self.run_times_key, 0, 0, withscores=True)
        return _utc(float(first[0][1])) if first else None

    def get_all_jobs(self) -> list[Job]:
        jobs = self._decode_all(self.redis.hgetall(self.jobs_key).items())
        paused = datetime(9999, 12, 31, tzinfo=UTC)
        return sorted(jobs, key=lambda job: job.next_run_time or paused)

    def _put(self, job: Job, mode: Literal["add", "update"]) -> bool:
        next_run = job.next_run_time
        return scheduler_scripts.put_job(
            self._scripts,
            self.host,
            job_id=job.id,
            job_json=self.encode(job),
            next_run=datetime_to_utc_timestamp(next_run) if next_run else None,
            mode=mode,
        )

    def add_job(self, job: Job) -> None:
        if not self._put(job, "add"):
            raise ConflictingIdError(job.id)

    def update_job(self, job: Job) -> None:
        if not self._put(job, "update"):
            raise JobLookupError(job.id)

    def remove_job(self, job_id: str) -> None:
        """Remove a job; an id that is already gone is not an error here: an old leader
        that has not yet noticed its lost lease may fire and remove the same job from this
        shared store, and APScheduler's loop must not die of that."""
        scheduler_scripts.remove_job(self._scripts, self.host, job_id=job_id)

    def remove_all_jobs(self) -> None:
        self.redis.delete(self.jobs_key, self.run_times_key)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} host={self.host}>"


def stored_alarms(redis: Redis, host: str) -> dict[str, tuple[str, float]]:
    """``{agent_id: (request_id, run_date)}`` of the host's stored alarm jobs, read only
    (``tidings status``); entries that are not well-formed jobs are skipped, not removed."""
    alarms: dict[str, tuple[str, float]] = {}
    for raw in redis.hvals(keys.scheduler_jobs(host)):
        try:
            stored = StoredJob.model_validate_json(raw)
        except ValidationError:
            continue
        if len(stored.args) == 2 and math.isfinite(stored.run_date):
            agent_id, request_id = stored.args
            alarms[agent_id] = (request_id, stored.run_date)
    return alarms
