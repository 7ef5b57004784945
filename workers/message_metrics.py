"""Message metrics: counts and times of the messages a process's workers handle.

dramatiq's own Prometheus middleware forks its exposition server and depends on
the ``dramatiq`` CLI's multiprocess directory; tidings starts its workers itself,
so :class:`MessageMetrics` is a small equivalent that records into
:func:`tidings.jobs.metrics.registry`, next to tidings' own metrics. Like those,
its metrics load prometheus_client only when first used, so a client broker that
only enqueues (``tidings publish``) never loads it.
"""

from __future__ import annotations

import time

from dramatiq import Broker, Message, Middleware
from dramatiq.broker import MessageProxy
from dramatiq.common import q_name

from tidings.jobs.metrics import DURATION_BUCKETS, counter, histogram

MESSAGES_PROCESSED = counter(
    "tidings_messages_processed",
    "dramatiq messages processed, by actor and queue",
    ["actor", "queue"],
)
MESSAGES_FAILED = counter(
    "tidings_messages_failed",
    "dramatiq messages whose actor raised, by actor and queue",
    ["actor", "queue"],
)
MESSAGES_RETRIED = counter(
    "tidings_messages_retried",
    "dramatiq messages re-enqueued for a retry, by actor and queue",
    ["actor", "queue"],
)
MESSAGES_DEAD_LETTERED = counter(
    "tidings_messages_dead_lettered",
    "dramatiq messages that exhausted their retries (moved to the dead-letter queue), "
    "by actor and queue",
    ["actor", "queue"],
)
MESSAGE_SECONDS = histogram(
    "tidings_message_duration_seconds",
    "Time an actor spent on one message",
    DURATION_BUCKETS,
    ["actor", "queue"],
)


class MessageMetrics(Middleware):
    """Counts and times every message a worker of this process handles."""

    def __init__(self) -> None:
        self._started: dict[str, float] = {}

    def before_process_message(self, broker: Broker, message: MessageProxy) -> None:
        self._started[message.message_id] = time.perf_counter()

    def after_process_message(
        self,
        broker: Broker,
        message: MessageProxy,
        *,
        result: object = None,
        exception: BaseException | None = None,
    ) -> None:
        labels = (message.actor_name, q_name(message.queue_name))
        started = self._started.pop(message.message_id, None)
        MESSAGES_PROCESSED.get().labels(*labels).inc()
        if exception is not None:
            MESSAGES_FAILED.get().labels(*labels).inc()
        if started is not None:
            MESSAGE_SECONDS.get().labels(*labels).observe(time.perf_counter() - started)

    def after_skip_message(self, broker: Broker, message: MessageProxy) -> None:
        self.after_process_message(broker, message)

    def after_enqueue(self, broker: Broker, message: Message[object], delay: int | None) -> None:
        # The Retries middleware re-enqueues with ``retries`` counted in the options.
        if "retries" in message.options:
            MESSAGES_RETRIED.get().labels(message.actor_name, q_name(message.queue_name)).inc()

    def after_nack(self, broker: Broker, message: MessageProxy) -> None:
        MESSAGES_DEAD_LETTERED.get().labels(message.actor_name, q_name(message.queue_name)).inc()
