"""One host's scheduler: standby until it holds the leader lease, then active (D18).

While active (an :class:`Activation`) it runs a ``BlockingScheduler`` in its own
thread with two job stores — alarm jobs as JSON in Redis, the sync tick in
memory —, a precise timer that fires each alarm job's D17 at its deadline (the job
is its backstop), a filesystem watcher over the host's agents that starts their prompt visits
and tells the tick what else to visit (C27), and,
after the start-up reconcile, a dramatiq worker that alone consumes the host's
alarm-request queue. A keeper thread renews the lease; when it is lost (or the
service stops) everything active is stopped again and the service goes back to
standby.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from datetime import UTC

from apscheduler.events import EVENT_SCHEDULER_STARTED
from apscheduler.jobstores.memory import MemoryJobStore
from apscheduler.schedulers.base import STATE_STOPPED
from apscheduler.schedulers.blocking import BlockingScheduler
from redis import Redis
from redis.exceptions import RedisError

from tidings.jobs import log
from tidings.jobs.runtime import Runtime
from tidings.jobs.tick import PromptVisits, start_prompt_visits
from tidings.scheduler import alarm_job, requests, startup, sync_tick, watcher
from tidings.scheduler.jobstore import JsonRedisJobStore
from tidings.scheduler.lease import LeaderLease, LeaseSettings, holder_name
from tidings.store.clock import Clock, SystemClock
from tidings.store.settings import Settings
from tidings.workers.broker import consuming, make_broker
from tidings.workers.dispatch import BrokerDispatcher
from tidings.workers.routing import scheduler_queue

#: Requests are applied in order, so one thread consumes them.
REQUEST_THREADS = 1
#: The in-memory job store of the sync tick.
LOCAL_STORE = "local"
#: How long to wait for APScheduler to start or stop (s).
START_TIMEOUT_SECONDS = 10.0

EventSink = Callable[[dict[str, object]], None]


class Activation:
    """Everything that runs while this process leads its host."""

    def __init__(
        self,
        redis: Redis,
        settings: Settings,
        clock: Clock,
        on_failure: Callable[[], None],
        control: Redis,
        visits: PromptVisits | None = None,
    ) -> None:
        self.host = settings.host
        self._on_failure = on_failure
        self.broker = make_broker(control, settings)
        self.runtime = Runtime(redis, clock, settings, BrokerDispatcher(self.broker), control)
        # The precise timer fires each alarm at its deadline; the job is its backstop (D15).
        self.timer = alarm_job.timer_for(self.runtime)
        self.body = alarm_job.bind(self.runtime, self.broker, self.timer)
        refs = (alarm_job.ALARM_JOB_REF, *alarm_job.LEGACY_ALARM_JOB_REFS)
        self.aps = BlockingScheduler(
            timezone=UTC,
            jobstores={
                alarm_job.ALARM_STORE: JsonRedisJobStore(
                    redis, self.host, dict.fromkeys(refs, self.body)
                ),
                LOCAL_STORE: MemoryJobStore(),
            },
        )
        # Prompt visits (C27): the process's own (a hub shares its worker's), or none.
        self._own_visits = visits is None
        self.visits = start_prompt_visits(self.runtime) if visits is None else visits
        self.watcher = watcher.start(self.visits.poke if self.visits is not None else None)
        self.ticker = sync_tick.SyncTicker(
            redis,
            self.host,
            settings.sync_interval,
            settings.full_scan_seconds,
            sync_tick.broker_sender(self.broker, self.host),
            self.watcher,
            clock.now,
            clock.monotonic,
        )
        sync_tick.add_tick_job(self.aps, self.ticker, LOCAL_STORE)
        alarm_job.track_jobs(self.aps, self.timer)
        requests.declare_request_actor(self.broker, self.host, self.aps, self.body)
        self.worker = consuming(self.broker, scheduler_queue(self.host), REQUEST_THREADS)
        self._thread = threading.Thread(
            target=self._run_scheduler, name="tidings-apscheduler", daemon=True
        )
        self._worker_started = False
        self._stopping = False

    def _run_scheduler(self) -> None:
        """APScheduler's loop; if it dies while leading, the service steps down (and then
        starts afresh) rather than lead without a timer."""
        try:
            self.aps.start()
        except Exception as exc:
            if self._stopping:
                return  # a job that fired during shutdown; nothing is lost (D17)
            log.event(
                "scheduler_loop_failed",
                host=self.host,
                error=type(exc).__name__,
                detail=str(exc)[:200],
            )
            self._on_failure()

    def start(self) -> dict[str, int]:
        """Start APScheduler, reconcile (D18), then serve alarm requests."""
        started = threading.Event()
        self.aps.add_listener(lambda _event: started.set(), EVENT_SCHEDULER_STARTED)
        self._thread.start()
        if not started.wait(START_TIMEOUT_SECONDS):
            raise RuntimeError("APScheduler did not start")
        self.ticker.watch()
        counts = startup.reconcile_host(self.runtime, self.aps, self.body)
        self.worker.start()
        self._worker_started = True
        return counts

    def stop(self) -> None:
        self._stopping = True
        if self._worker_started:
            self.worker.stop(timeout=int(START_TIMEOUT_SECONDS * 1000))
        if self.aps.state != STATE_STOPPED:
            self.aps.shutdown(wait=False)
        if self._thread.is_alive():
            self._thread.join(START_TIMEOUT_SECONDS)
        self.timer.close()
        if self.watcher is not None:
            self.watcher.close()
        if self._own_visits and self.visits is not None:
            self.visits.close()


class SchedulerService:
    """The scheduler of ``settings.host``; :meth:`start` returns at once. Its job store
    and lease are on the state store ``redis``, its broker on ``control`` (default: the
    same client)."""

    def __init__(
        self,
        redis: Redis,
        settings: Settings,
        *,
        clock: Clock | None = None,
        lease_settings: LeaseSettings | None = None,
        on_event: EventSink | None = None,
        control: Redis | None = None,
        visits: PromptVisits | None = None,
    ) -> None:
        self.redis = redis
        self.control = control if control is not None else redis
        self.settings = settings
        self.clock = clock or SystemClock()
        self.lease_settings = lease_settings or LeaseSettings()
        #: Prompt visits shared with this process's worker (``None``: its own, if on).
        self.visits = visits
        self.holder = holder_name()
        self.lease = LeaderLease(redis, settings.host, self.holder, self.lease_settings)
        self.leading = threading.Event()
        self._on_event = on_event or (lambda _payload: None)
        self._stop = threading.Event()
        self._step_down = threading.Event()
        self._thread: threading.Thread | None = None

    def _emit(self, status: str, **fields: object) -> None:
        self._on_event(
            {
                "status": status,
                "role": "scheduler",
                "host": self.settings.host,
                "pid": os.getpid(),
                "holder": self.holder,
                **fields,
            }
        )

    def start(self) -> None:
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="tidings-scheduler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._step_down.set()
        if self._thread is not None:
            self._thread.join(START_TIMEOUT_SECONDS * 3)
            self._thread = None

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                acquired = self.lease.try_acquire(self.clock.now())
            except RedisError as exc:
                log.event(
                    "scheduler_lease_error", host=self.settings.host, error=type(exc).__name__
                )
                acquired = False
            if acquired:
                self._lead()
            else:
                self._stop.wait(self.lease_settings.standby_poll_seconds)

    def _lead(self) -> None:
        step_down = self._step_down = threading.Event()
        if self._stop.is_set():
            step_down.set()
        keeper = threading.Thread(
            target=self._keep_lease, args=(step_down,), name="tidings-scheduler-lease", daemon=True
        )
        keeper.start()
        activation: Activation | None = None
        try:
            activation = Activation(
                self.redis, self.settings, self.clock, step_down.set, self.control, self.visits
            )
            counts = activation.start()
            self.leading.set()
            self._emit("leader", startup=counts)
            step_down.wait()
        except Exception as exc:
            log.event(
                "scheduler_activation_failed",
                host=self.settings.host,
                error=type(exc).__name__,
                detail=str(exc)[:200],
            )
        finally:
            self.leading.clear()
            step_down.set()
            if activation is not None:
                activation.stop()
            keeper.join()
            self._release()
        if not self._stop.is_set():
            self._emit("standby")
            self._stop.wait(self.lease_settings.standby_poll_seconds)

    def _keep_lease(self, step_down: threading.Event) -> None:
        """Renew every ``renew_seconds``; step down once the lease is surely lost."""
        last_renewed = time.monotonic()
        while not step_down.wait(self.lease_settings.renew_seconds):
            try:
                if self.lease.renew():
                    last_renewed = time.monotonic()
                    continue
                lost = True
            except RedisError:
                lost = time.monotonic() - last_renewed >= self.lease_settings.lease_seconds
            if lost:
                log.event("scheduler_lease_lost", host=self.settings.host, holder=self.holder)
                step_down.set()

    def _release(self) -> None:
        try:
            self.lease.release()
        except RedisError as exc:
            log.event("scheduler_lease_error", host=self.settings.host, error=type(exc).__name__)
