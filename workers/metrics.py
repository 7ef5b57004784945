"""Message metrics and the Prometheus exposition server.

dramatiq's own Prometheus middleware forks its exposition server and depends on
the ``dramatiq`` CLI's multiprocess directory; tidings starts its workers itself,
so :class:`MessageMetrics` is a small equivalent that records into
:data:`tidings.jobs.metrics.REGISTRY`, next to tidings' own metrics.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from dramatiq import Broker, Middleware
from dramatiq.common import q_name
from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server
from prometheus_client.multiprocess import MultiProcessCollector

from tidings.jobs.metrics import DURATION_BUCKETS, REGISTRY

#: The variable that puts prometheus_client into multiprocess mode (set for children).
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"

MESSAGES_PROCESSED = Counter(
    "tidings_messages_processed", "dramatiq messages processed, by actor and queue",
    ["actor", "queue"], registry=REGISTRY,
)
MESSAGES_FAILED = Counter(
    "tidings_messages_failed", "dramatiq messages whose actor raised, by actor and queue",
    ["actor", "queue"], registry=REGISTRY,
)
MESSAGES_RETRIED = Counter(
    "tidings_messages_retried", "dramatiq messages re-enqueued for a retry, by actor and queue",
    ["actor", "queue"], registry=REGISTRY,
)
MESSAGES_DEAD_LETTERED = Counter(
    "tidings_messages_dead_lettered",
    "dramatiq messages that exhausted their retries (moved to the dead-letter queue), "
    "by actor and queue",
    ["actor", "queue"], registry=REGISTRY,
)
MESSAGE_SECONDS = Histogram(
    "tidings_message_duration_seconds", "Time an actor spent on one message",
    ["actor", "queue"], buckets=DURATION_BUCKETS, registry=REGISTRY,
)


class MessageMetrics(Middleware):
    """Counts and times every message a worker of this process handles."""

    def __init__(self) -> None:
        self._started: dict[str, float] = {}

    def before_process_message(self, broker: Broker, message: Any) -> None:
        self._started[message.message_id] = time.perf_counter()

    def after_process_message(
        self, broker: Broker, message: Any, *, result: Any = None,
        exception: BaseException | None = None,
    ) -> None:
        labels = (message.actor_name, q_name(message.queue_name))
        started = self._started.pop(message.message_id, None)
        MESSAGES_PROCESSED.labels(*labels).inc()
        if exception is not None:
            MESSAGES_FAILED.labels(*labels).inc()
        if started is not None:
            MESSAGE_SECONDS.labels(*labels).observe(time.perf_counter() - started)

    def after_skip_message(self, broker: Broker, message: Any) -> None:
        self.after_process_message(broker, message)

    def after_enqueue(self, broker: Broker, message: Any, delay: int | None) -> None:
        # The Retries middleware re-enqueues with ``retries`` counted in the options.
        if "retries" in message.options:
            MESSAGES_RETRIED.labels(message.actor_name, q_name(message.queue_name)).inc()

    def after_nack(self, broker: Broker, message: Any) -> None:
        MESSAGES_DEAD_LETTERED.labels(message.actor_name, q_name(message.queue_name)).inc()


class MetricsServer:
    """A started exposition server (``GET /metrics``); ``port`` is the bound one."""

    def __init__(self, host: str, port: int, registry: CollectorRegistry) -> None:
        self._httpd, self._thread = start_http_server(port, host, registry)
        self.port = int(self._httpd.server_port)

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)


def children_registry(directory: Path) -> CollectorRegistry:
    """The sum of what child processes recorded under ``directory`` (children started
    with :data:`MULTIPROC_ENV` pointing there)."""
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(directory))  # type: ignore[no-untyped-call]
    return registry
