"""The sync tick (channels.md C27): each interval, a ``sync_host`` message for the
agents that need a visit, unless the host's previous one of that kind still runs.

Two kinds of message, each with its own ``{h:<host>}:sync:running…`` marker (set
with NX and an expiry before the send; the ``sync_host`` actor deletes it when
done; the expiry only matters when a message is lost):

- a *full scan*, ``sync_host(host)``: every agent of the host. It is sent every
  ``TIDINGS_FULL_SCAN_SECONDS``, at once after a watcher overflow or failure, and
  on every tick where no filesystem watcher runs (other platforms; today's design);
- a *changed* tick, ``sync_host(host, [agent ids])``: the agents the watcher saw
  change, those without watches, and those in the host's *due* set (a live delay's
  deadline has come, or a previous visit asked to be repeated). With nothing to
  visit nothing is sent: a quiet host costs one Redis round trip per tick.

A full scan runs beside changed ticks (a second worker thread), so a long scan of
a large host never holds back the wake of a changed agent; it also steps aside while
a changed tick runs (jobs/tick/host.py), so the two do not share the
worker's CPU. Visiting an agent twice
at once is safe: every commit of the per-agent step is compare-and-set.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from typing import TypedDict

from apscheduler.schedulers.base import BaseScheduler
from dramatiq import Broker
from redis import Redis
from redis.exceptions import RedisError

from tidings.jobs import log, metrics
from tidings.scheduler.watcher import Watcher
from tidings.store import keys, replies
from tidings.store.registry import AgentRegistry
from tidings.workers import actor_names
from tidings.workers.dispatch import send
from tidings.workers.routing import host_queue

#: The least lifetime (s) of the "sync running" flag.
MIN_FLAG_TTL_SECONDS = 30
#: Id of the tick's job in the in-memory job store.
TICK_JOB_ID = "sync-tick"

#: Sends one ``sync_host`` message: the agent ids, or ``None`` for a full scan.
Sender = Callable[[Sequence[str] | None], None]


def flag_ttl(interval: float) -> int:
    return max(MIN_FLAG_TTL_SECONDS, math.ceil(3 * interval))


def tick(redis: Redis, broker: Broker, host: str, interval: float) -> bool:
    """A full scan: enqueue ``sync_host(host)`` unless one is still pending; ``True`` if
    enqueued."""
    if not redis.set(keys.sync_running(host), "1", nx=True, ex=flag_ttl(interval)):
        return False
    send(broker, actor_names.SYNC_HOST, host_queue(host), host)
    return True


def broker_sender(broker: Broker, host: str) -> Sender:
    def sender(agent_ids: Sequence[str] | None) -> None:
        if agent_ids is None:
            send(broker, actor_names.SYNC_HOST, host_queue(host), host)
        else:
            send(broker, actor_names.SYNC_HOST, host_queue(host), host, list(agent_ids))

    return sender


class TickResult(TypedDict):
    """What one tick sent: ``full``, the reason of a full scan or ``""``; ``changed``,
    the ids of the agents visited."""

    full: str
    changed: list[str]


class SyncTicker:
    """The tick job of one host's scheduler, over a :class:`Watcher` (or none)."""

    def __init__(
        self,
        redis: Redis,
        host: str,
        interval: float,
        full_scan_seconds: float,
        sender: Sender,
        watcher: Watcher | None,
        wall: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.redis, self.host, self.interval = redis, host, interval
        self.full_scan_seconds = full_scan_seconds
        self.watcher = watcher
        self._send, self._wall, self._monotonic = sender, wall, monotonic
        self._lock = threading.Lock()
        self._version: int | None = None
        self._last_full: float | None = None
        self._full_reason = ""
        self._carried: set[str] = set()

    def tick(self) -> TickResult:
        """One interval: what was sent (``full``: a reason or ``""``; ``changed``: ids)."""
        with self._lock:
            pipe = self.redis.pipeline(transaction=False)
            pipe.get(keys.host_agents_version(self.host))
            pipe.zrangebyscore(keys.sync_due(self.host), "-inf", self._wall())
            version, due = pipe.execute()
            if self.watcher is None:
                return {"full": "no_watcher" if self._full("no_watcher") else "", "changed": []}
            if self._version != int(version or 0):
                self._refresh(int(version or 0))
            changes = self.watcher.take()
            reason = self._full_reason or changes.reason
            now = self._monotonic()
            if not reason and (
                self._last_full is None or now - self._last_full >= self.full_scan_seconds
            ):
                reason = "interval"
            sent_full = ""
            if reason:
                if self._full(reason):
                    sent_full, self._full_reason, self._last_full = reason, "", now
                    self.watcher.retry_unwatched()
                else:
                    self._full_reason = changes.reason or self._full_reason
            # A full scan sent now reads every agent after this moment: the fresh ones
            # need no visit of their own (changed ones keep theirs: a scan takes long).
            visit = self._carried | changes.changed | changes.unwatched
            if not sent_full:
                visit |= changes.fresh
            visit.update(replies.text(m) for m in due)
            self._carried = set()
            sent: list[str] = []
            if visit:
                if self._claim(changed=True):
                    sent = sorted(visit)
                    self._send(sent)
                else:
                    self._carried = visit
            if sent or sent_full:
                log.event(
                    "notification_sync_planned",
                    logging.DEBUG,
                    host=self.host,
                    full=sent_full,
                    changed=len(sent),
                    unwatched=len(changes.unwatched),
                )
            return {"full": sent_full, "changed": sent}

    def watch(self) -> None:
        """Watch the host's agents now (at activation): a change before the first tick
        then starts its prompt visit too (C27)."""
        with self._lock:
            if self.watcher is not None:
                self._refresh(int(self.redis.get(keys.host_agents_version(self.host)) or 0))

    def _claim(self, *, changed: bool) -> bool:
        return bool(
            self.redis.set(
                keys.sync_running(self.host, changed=changed),
                "1",
                nx=True,
                ex=flag_ttl(self.interval),
            )
        )

    def _full(self, reason: str) -> bool:
        if not self._claim(changed=False):
            return False
        self._send(None)
        metrics.full_scan_sent(reason)
        return True

    def _refresh(self, version: int) -> None:
        """Watch exactly the agents registered on this host now (C27: registration and
        removal while running)."""
        if self.watcher is None:  # only a watching tick refreshes
            return
        records = AgentRegistry(self.redis).on_host(self.host, repair=True)
        self.watcher.set_agents({r.agent_id: r.workdir for r in records})
        self._version = version


def run_tick(ticker: SyncTicker) -> None:
    """The tick job. A tick that finds Redis gone (an outage, or a stop, whose retries end
    at once) is missed and later ticks catch up: a line says so, not a traceback."""
    try:
        ticker.tick()
    except RedisError as exc:
        log.event(
            "notification_sync_failed",
            host=ticker.host,
            error=type(exc).__name__,
            detail=str(exc)[:200],
        )


def add_tick_job(scheduler: BaseScheduler, ticker: SyncTicker, jobstore: str) -> None:
    scheduler.add_job(
        run_tick,
        "interval",
        args=(ticker,),
        seconds=ticker.interval,
        id=TICK_JOB_ID,
        name="sync tick",
        jobstore=jobstore,
        coalesce=True,
        max_instances=1,
        misfire_grace_time=None,
        replace_existing=True,
    )
