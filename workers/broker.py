"""The broker factory: a dramatiq ``RedisBroker`` with a doorbell on an injected client,
and the dramatiq ``Worker`` that consumes a queue with it."""

from __future__ import annotations

import uuid

from dramatiq import Worker
from dramatiq.brokers.redis import MAINTENANCE_SCALE, RedisBroker
from dramatiq.middleware import (
    AgeLimit,
    Callbacks,
    CurrentMessage,
    Pipelines,
    Retries,
    ShutdownNotifications,
    TimeLimit,
)
from dramatiq.results import Results
from dramatiq.results.backends.redis import RedisBackend
from redis import Redis

from tidings.store.keys import NAMESPACE
from tidings.store.settings import DEFAULT_HEARTBEAT_MS, Settings
from tidings.workers.doorbell import DoorbellBroker
from tidings.workers.message_metrics import MessageMetrics
from tidings.workers.presence import Presence

#: Retry back-off bounds (ms): short, because most failures are a busy lock.
RETRY_MIN_BACKOFF_MS = 500
RETRY_MAX_BACKOFF_MS = 60_000
#: How long job results (prepare_turn's group) are kept (ms).
RESULT_TTL_MS = 10 * 60 * 1000
#: How often a ``Worker``'s idle worker threads look whether it is stopping (ms): its
#: ``stop()`` returns within about this. The consumers' idle wait is the broker's.
WORKER_THREAD_WAKE_MS = 100


def make_broker(client: Redis, settings: Settings) -> DoorbellBroker:
    """A broker in namespace ``tidings`` whose heartbeat follows the settings.

    Its enqueues ring the queue's doorbell and its idle consumers wait on it for up to
    ``settings.worker_poll_ms`` (:mod:`tidings.workers.doorbell`; ``worker_doorbell``
    off: they poll). Queue maintenance (which moves a dead worker's messages back)
    runs at least four times per heartbeat per consumed queue, so redelivery happens
    within about one and a quarter heartbeats (with a heartbeat below dramatiq's
    default, maintenance runs on every command as well).
    """
    heartbeat = settings.broker_heartbeat_ms
    middleware = [
        AgeLimit(),
        TimeLimit(),
        ShutdownNotifications(),
        Callbacks(),
        Pipelines(),
        Retries(max_retries=20, min_backoff=RETRY_MIN_BACKOFF_MS, max_backoff=RETRY_MAX_BACKOFF_MS),
        CurrentMessage(),
        MessageMetrics(),
        Presence(client, settings.host),
        # Prefixed result keys (``tidings-results:<queue>:<actor>:<id>``), not dramatiq's
        # bare digests, so ACL key patterns can name them (deploy/redis.conf).
        Results(
            backend=RedisBackend(
                client=client, namespace=f"{NAMESPACE}-results", use_namespace_prefix_keys=True
            ),
            result_ttl=RESULT_TTL_MS,
        ),
    ]
    broker = DoorbellBroker(
        poll_ms=settings.worker_poll_ms,
        doorbell=settings.worker_doorbell,
        client=client,
        namespace=NAMESPACE,
        middleware=middleware,
        heartbeat_timeout=heartbeat,
        maintenance_chance=(MAINTENANCE_SCALE if heartbeat < DEFAULT_HEARTBEAT_MS else 1000),
    )
    broker.broker_id = enqueuer_id(settings.host)
    return broker


def enqueuer_id(host: str) -> str:
    """The broker id of every process of ``host`` that only enqueues (issue 25).

    dramatiq's enqueue adds its broker's id to the heartbeat set ``tidings:__heartbeats__``,
    and its maintenance clears a dead id with a ``KEYS`` over the whole keyspace. A
    process that never fetches owns no acknowledgement sets, so all of one host's share
    this id: the set holds one entry per host for them, however many CLI runs come and go.
    """
    return f"enqueue:{host}"


def consuming(broker: RedisBroker, queue: str, threads: int) -> Worker:
    """A dramatiq ``Worker`` (not started) of ``threads`` threads on ``queue`` and its delay
    queue, with ``broker`` under an id of its own (:func:`fetching`)."""
    fetching(broker)
    return Worker(
        broker, queues={queue}, worker_threads=threads, worker_timeout=WORKER_THREAD_WAKE_MS
    )


def fetching(broker: RedisBroker) -> None:
    """Give ``broker`` an id of its own before a worker fetches with it: a worker's
    unacknowledged messages are kept under its id, and moved back when it dies."""
    broker.broker_id = str(uuid.uuid4())
