"""tidings' Prometheus metrics, on one registry that the long-running commands serve.

Jobs count where the work happens: a publish in the calling process, a flush
on the worker that writes the file. Labels stay low-cardinality (no agent ids;
per-agent detail is in the logs and ``tidings status``). Under ``tidings worker
--processes N`` each child records into ``PROMETHEUS_MULTIPROC_DIR`` and the
parent serves the sum (workers/message_metrics.py).

prometheus_client loads with the registry, on the first :func:`registry` call or
the first use of a metric, not with this module: a hook-sized producer
(``tidings publish``, where start-up is most of the cost) never loads it. Until
then publishes are tallied in a plain counter that the registry takes over when it
is built; a producer process that never builds it ends with its tally, as nothing
could have scraped it.
"""

from __future__ import annotations

import threading
from collections import Counter as Tally
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Generic, Literal, TypeVar

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

#: Bucket bounds of the flush batch-size histogram (records; C14 takes up to 500).
BATCH_BUCKETS = (1, 2, 5, 10, 20, 50, 100, 200, 500)
#: Bucket bounds (seconds) of alarm lateness past the delay's deadline.
LATENESS_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0)
#: Bucket bounds (seconds) of memory observations (and of message processing).
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
#: Observation reasons kept as label values; any other (caller-chosen) reason counts
#: as ``manual``, so a label never takes unbounded values.
OBSERVATION_REASONS = frozenset({"startup", "pre_turn", "finish_turn", "manual"})

#: Covariant: every declared metric, whatever its kind, is built alike.
M = TypeVar("M", covariant=True)

_lock = threading.RLock()
_registry: CollectorRegistry | None = None
_declared: list[Lazy[object]] = []
#: Publishes counted before the registry existed: (op, outcome) → records.
_published_tally: Tally[tuple[str, str]] = Tally()


class Lazy(Generic[M]):
    """A metric made on the registry when the registry is built (every declared metric
    is then exported, at zero until counted)."""

    def __init__(self, make: Callable[[CollectorRegistry], M]) -> None:
        self._make = make
        self._metric: M | None = None
        with _lock:
            _declared.append(self)
            if _registry is not None:
                self._metric = make(_registry)

    def get(self) -> M:
        metric = self._metric
        return metric if metric is not None else self._build(registry())

    def _build(self, on: CollectorRegistry) -> M:
        with _lock:
            if self._metric is None:
                self._metric = self._make(on)
            return self._metric


def registry() -> CollectorRegistry:
    """The registry ``tidings worker``, ``scheduler`` and ``up`` expose (built on first call)."""
    global _registry
    with _lock:
        if _registry is None:
            from prometheus_client import CollectorRegistry  # noqa: PLC0415 - see module doc

            built = CollectorRegistry(auto_describe=True)
            for metric in _declared:
                metric._build(built)
            _registry = built
            for (op, outcome), records in _published_tally.items():
                EVENTS_PUBLISHED.get().labels(op=op, outcome=outcome).inc(records)
            _published_tally.clear()
        return _registry


def counter(name: str, documentation: str, labels: Sequence[str] = ()) -> Lazy[Counter]:
    def make(on: CollectorRegistry) -> Counter:
        from prometheus_client import Counter  # noqa: PLC0415 - see module doc

        return Counter(name, documentation, labels, registry=on)

    return Lazy(make)


def histogram(
    name: str, documentation: str, buckets: Sequence[float], labels: Sequence[str] = ()
) -> Lazy[Histogram]:
    def make(on: CollectorRegistry) -> Histogram:
        from prometheus_client import Histogram  # noqa: PLC0415 - see module doc

        return Histogram(name, documentation, labels, buckets=buckets, registry=on)

    return Lazy(make)


#: How ``--processes N`` children's values of a gauge combine (prometheus_client's modes).
GaugeMode = Literal["all", "min", "max", "sum", "mostrecent"]


def gauge(name: str, documentation: str, multiprocess_mode: GaugeMode) -> Lazy[Gauge]:
    def make(on: CollectorRegistry) -> Gauge:
        from prometheus_client import Gauge  # noqa: PLC0415 - see module doc

        return Gauge(name, documentation, registry=on, multiprocess_mode=multiprocess_mode)

    return Lazy(make)


EVENTS_PUBLISHED = counter(
    "tidings_events_published",
    "Producer records pushed onto a channel buffer (C13), by op (append, replace) and "
    "outcome (queued, duplicate)",
    ["op", "outcome"],
)
EVENTS_COALESCED = counter(
    "tidings_events_coalesced",
    "Records that shared a flush file write with an earlier record of their batch "
    "(each saved one write)",
)
FLUSH_BATCH_RECORDS = histogram(
    "tidings_flush_batch_records",
    "Records applied by one flush file write (C14)",
    BATCH_BUCKETS,
)
ALARMS_PUBLISHED = counter("tidings_alarms_published", "Delay alarms written (delay.md)")
ALARM_LATENESS = histogram(
    "tidings_alarm_lateness_seconds",
    "Seconds from a delay's deadline to its alarm",
    LATENESS_BUCKETS,
)
OBSERVATIONS = counter(
    "tidings_observations",
    "Memory observations, by reason and outcome",
    ["reason", "outcome"],
)
OBSERVATION_SECONDS = histogram(
    "tidings_observation_duration_seconds",
    "Duration of one memory observation, by reason",
    DURATION_BUCKETS,
    ["reason"],
)
INBOX_ADMISSIONS = counter(
    "tidings_inbox_admissions",
    "Inbox admissions, by the state the item entered",
    ["state"],
)
SPILLS = counter("tidings_spills", "Spill files written by the block cap, by lane", ["lane"])
SYNC_TICKS = counter(
    "tidings_sync_ticks",
    "sync_host runs (C27), by scan: changed (agents a watcher reported, due delays, "
    "unwatched agents) or full",
    ["scan"],
)
SYNC_AGENTS_VISITED = counter(
    "tidings_sync_agents_visited",
    "Agents visited by sync ticks (C27), by scan",
    ["scan"],
)
SYNC_FULL_SCANS = counter(
    "tidings_sync_full_scans",
    "Full scans the scheduler asked for, by reason (interval, overflow, watcher_error, no_watcher)",
    ["reason"],
)
SYNC_UNWATCHED_AGENTS = gauge(
    "tidings_sync_unwatched_agents",
    "Registered agents of this host without filesystem watches (watch limit reached, or "
    "no workdir): the tick visits them every time",
    multiprocess_mode="max",
)


def published(op: str, outcome: str) -> None:
    """One producer record pushed (``queued``) or refused as a ``duplicate`` (C11, C13)."""
    with _lock:
        if _registry is None:
            _published_tally[(op, outcome)] += 1
            return
    EVENTS_PUBLISHED.get().labels(op=op, outcome=outcome).inc()


def flush_written(records: int) -> None:
    """One flush file write that applied ``records`` buffered records."""
    FLUSH_BATCH_RECORDS.get().observe(records)
    EVENTS_COALESCED.get().inc(max(records - 1, 0))


def alarm_published(lateness: float) -> None:
    """One delay alarm written, ``lateness`` seconds after its deadline."""
    ALARMS_PUBLISHED.get().inc()
    ALARM_LATENESS.get().observe(max(lateness, 0.0))


def observed(reason: str, outcome: str, seconds: float) -> None:
    """One memory observation that ended with ``outcome`` (its result's status)."""
    label = reason if reason in OBSERVATION_REASONS else "manual"
    OBSERVATIONS.get().labels(label, outcome).inc()
    OBSERVATION_SECONDS.get().labels(label).observe(seconds)


def items_entered(state: str, count: int = 1) -> None:
    """``count`` inbox items entered ``state`` (an interfaces.md item state)."""
    if count:
        INBOX_ADMISSIONS.get().labels(state).inc(count)


def spilled(lane: str) -> None:
    """One spill file written for ``lane`` (``attention`` or ``persistent``)."""
    SPILLS.get().labels(lane).inc()


def synced(scan: str, visited: int) -> None:
    """One ``sync_host`` run of kind ``scan`` (``changed`` or ``full``) over ``visited``
    agents."""
    SYNC_TICKS.get().labels(scan).inc()
    SYNC_AGENTS_VISITED.get().labels(scan).inc(visited)


def full_scan_sent(reason: str) -> None:
    """The scheduler asked for a full scan, for ``reason``."""
    SYNC_FULL_SCANS.get().labels(reason).inc()


def unwatched_agents(count: int) -> None:
    """This host's agents without filesystem watches, now."""
    SYNC_UNWATCHED_AGENTS.get().set(count)
