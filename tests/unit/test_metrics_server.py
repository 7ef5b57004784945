"""The metrics endpoint's own parts (tidings/_metrics.py, workers/message_metrics.py; issue 14):
the loopback default address, retry and dead-letter counters, and status gauges that
answer even when the status read fails."""

from __future__ import annotations

from typing import Any

from dramatiq import Message
from prometheus_client import CollectorRegistry, generate_latest

from tidings._metrics import StatusGauges, serve_metrics
from tidings.jobs.metrics import registry
from tidings.store.settings import Settings
from tidings.workers.message_metrics import MessageMetrics


def value(name: str, **labels: str) -> float:
    return registry().get_sample_value(name, labels) or 0.0


def test_metrics_server_binds_loopback_by_default() -> None:
    assert Settings().metrics_host == "127.0.0.1"
    server = serve_metrics(Settings(metrics_port=0), None)
    assert server is not None
    try:
        assert server._httpd.server_address[0] == "127.0.0.1"
    finally:
        server.close()


def test_retries_and_dead_letters_are_counted() -> None:
    labels = {"actor": "flush_channel", "queue": "tidings.host.m"}
    message: Message[Any] = Message(
        queue_name="tidings.host.m", actor_name="flush_channel", args=(), kwargs={}, options={}
    )
    retried, dead = (
        value("tidings_messages_retried_total", **labels),
        value("tidings_messages_dead_lettered_total", **labels),
    )
    middleware = MessageMetrics()
    middleware.after_enqueue(None, message, None)  # a first send is no retry
    middleware.after_enqueue(None, message.copy(options={"retries": 1}), 500)
    middleware.after_nack(None, message)
    assert value("tidings_messages_retried_total", **labels) == retried + 1
    assert value("tidings_messages_dead_lettered_total", **labels) == dead + 1


def test_status_gauges_answer_when_redis_does_not() -> None:
    def unreachable() -> dict[str, Any]:
        raise ConnectionError("no redis")

    registry = CollectorRegistry()
    registry.register(StatusGauges(unreachable))
    text = generate_latest(registry).decode()
    assert "tidings_status_read_ok 0.0" in text and "tidings_queue_depth" not in text
