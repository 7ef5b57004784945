"""What the metrics endpoint of ``up``, ``worker`` and ``scheduler`` serves.

Next to the counters the jobs and workers record (jobs/metrics.py,
workers/message_metrics.py): the ``process_*`` and ``python_*`` collectors,
``tidings_build_info``, and gauges computed at scrape time with the reads of
``tidings status`` (one status read per scrape). Every process of a host serves
the same gauge values; aggregate them with ``max``, not ``sum``.
"""

from __future__ import annotations

import platform
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from prometheus_client import (
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
)
from prometheus_client.core import GaugeMetricFamily, InfoMetricFamily, Metric
from prometheus_client.registry import Collector
from redis import Redis

from tidings.inspection.status import Status, status
from tidings.jobs import log, metrics
from tidings.store.clock import SystemClock
from tidings.store.errors import TidingsError
from tidings.store.settings import Settings
from tidings.workers.exposition import MetricsServer, children_registry

#: The status figures served as gauges: (metric name, help, status field), per queue.
QUEUE_GAUGES = (
    ("tidings_queue_depth", "Messages waiting in the queue", "depth"),
    ("tidings_queue_in_flight", "Messages fetched by a worker, not yet acknowledged", "in_flight"),
    ("tidings_queue_delayed", "Messages waiting for their eta (retries, delayed sends)", "delayed"),
    ("tidings_queue_dead", "Dead-lettered messages", "dead"),
)


class BuildInfo(Collector):
    """``tidings_build_info{version, python}`` 1."""

    def collect(self) -> Iterator[Metric]:
        from tidings import __version__  # noqa: PLC0415 - importlib.metadata, once per scrape

        info = InfoMetricFamily("tidings_build", "The running tidings")
        info.add_metric([], {"version": __version__, "python": platform.python_version()})
        yield info


class StatusGauges(Collector):
    """The figures of ``tidings status`` as gauges, read when scraped."""

    def __init__(self, read: Callable[[], Status]) -> None:
        self._read = read

    def describe(self) -> Iterator[Metric]:
        return iter(())  # computed at scrape time only: nothing to register up front

    def collect(self) -> Iterator[Metric]:
        ok = GaugeMetricFamily(
            "tidings_status_read_ok", "1 when the last scrape could read the status figures"
        )
        try:
            figures = self._read()
        except Exception as exc:  # a scrape must answer even when Redis does not
            log.event("metrics_status_read_failed", error=type(exc).__name__)
            ok.add_metric([], 0)
            yield ok
            return
        ok.add_metric([], 1)
        yield ok
        yield from _queue_gauges(figures["queues"])
        yield from _host_gauges(figures)


def _queue_gauges(queues: Sequence[Mapping[str, object]]) -> Iterator[Metric]:
    for name, text, field in QUEUE_GAUGES:
        family = GaugeMetricFamily(name, text, labels=["queue"])
        for queue in queues:
            value = queue[field]
            if isinstance(value, int):
                family.add_metric([str(queue["name"])], value)
        yield family


def _host_gauges(figures: Status) -> Iterator[Metric]:
    leader = GaugeMetricFamily(
        "tidings_scheduler_leader",
        "1 when a scheduler holds the host's leader lease",
        labels=["host"],
    )
    for host, lease in figures["schedulers"].items():
        leader.add_metric([host], 1 if lease["leader"] else 0)
    yield leader
    items = GaugeMetricFamily(
        "tidings_inbox_items", "Inbox items by state, summed per host", labels=["host", "state"]
    )
    delays = GaugeMetricFamily(
        "tidings_live_delays", "Agents with a live delay, per host", labels=["host"]
    )
    agents = GaugeMetricFamily("tidings_agents", "Registered agents, per host", labels=["host"])
    totals: dict[str, list[int]] = {}
    for agent in figures["agents"]:
        counts = totals.setdefault(agent["host"], [0, 0, 0, 0])
        counts[0] += agent["pending"]
        counts[1] += agent["processing"]
        counts[2] += agent["live_delay"] is not None
        counts[3] += 1
    for host, (pending, processing, live, registered) in sorted(totals.items()):
        items.add_metric([host, "pending"], pending)
        items.add_metric([host, "processing"], processing)
        delays.add_metric([host], live)
        agents.add_metric([host], registered)
    yield from (items, delays, agents)


def _process_collectors(registry: CollectorRegistry) -> None:
    for collector in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR, BuildInfo()):
        registry.register(collector)


def _served(
    registry: CollectorRegistry, redis: Redis | None, control: Redis | None = None
) -> CollectorRegistry:
    """A registry serving ``registry``'s metrics plus the process-wide collectors (status
    gauges from the state store ``redis`` and the control store ``control``)."""
    served = CollectorRegistry(auto_describe=False)
    served.register(_Forward(registry))
    _process_collectors(served)
    if redis is not None:
        clock = SystemClock()
        served.register(StatusGauges(lambda: status(redis, clock, control)))
    return served


class _Forward(Collector):
    """Another registry's metrics, as one collector."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry

    def describe(self) -> Iterator[Metric]:
        return iter(())

    def collect(self) -> Iterator[Metric]:
        return iter(self._registry.collect())


class MetricsAddressError(TidingsError):
    """The metrics server cannot bind its address (in use, or not this machine's)."""

    default_reason = "metrics_address_unavailable"


def _start(settings: Settings, registry: CollectorRegistry) -> MetricsServer:
    if settings.metrics_port is None:
        raise ValueError("serving metrics needs TIDINGS_METRICS_PORT")
    try:
        return MetricsServer(settings.metrics_host, settings.metrics_port, registry)
    except OSError as exc:
        raise MetricsAddressError(
            f"cannot serve metrics on {settings.metrics_host}:{settings.metrics_port} "
            f"({exc.strerror}); change TIDINGS_METRICS_PORT or TIDINGS_METRICS_HOST"
        ) from None


def serve_metrics(
    settings: Settings, redis: Redis | None, control: Redis | None = None
) -> MetricsServer | None:
    """This process's metrics on ``TIDINGS_METRICS_HOST:TIDINGS_METRICS_PORT`` (unset: off)."""
    if settings.metrics_port is None:
        return None
    return _start(settings, _served(metrics.registry(), redis, control))


def serve_pool_metrics(
    settings: Settings, directory: Path, redis: Redis | None = None, control: Redis | None = None
) -> MetricsServer:
    """The sum of what ``--processes N`` children recorded under ``directory``."""
    return _start(settings, _served(children_registry(directory), redis, control))
