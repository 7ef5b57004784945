"""tidings' Prometheus metrics, on one registry that the long-running commands serve.

Jobs count where the work happens: a publish in the calling process, a flush
on the worker that writes the file. Labels stay low-cardinality (no agent ids;
per-agent detail is in the logs and ``tidings status``). Under ``tidings worker
--processes N`` each child records into ``PROMETHEUS_MULTIPROC_DIR`` and the
parent serves the sum (workers/metrics.py).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

#: The registry ``tidings worker``, ``scheduler`` and ``up`` expose.
REGISTRY = CollectorRegistry(auto_describe=True)

#: Bucket bounds of the flush batch-size histogram (records; C14 takes up to 500).
BATCH_BUCKETS = (1, 2, 5, 10, 20, 50, 100, 200, 500)
#: Bucket bounds (seconds) of alarm lateness past the delay's deadline.
LATENESS_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0)
#: Bucket bounds (seconds) of memory observations (and of message processing).
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)

EVENTS_PUBLISHED = Counter(
    "tidings_events_published",
    "Producer records pushed onto a channel buffer (C13), by op (append, replace) and "
    "outcome (queued, duplicate)",
    ["op", "outcome"], registry=REGISTRY,
)
EVENTS_COALESCED = Counter(
    "tidings_events_coalesced",
    "Records that shared a flush file write with an earlier record of their batch "
    "(each saved one write)",
    registry=REGISTRY,
)
FLUSH_BATCH_RECORDS = Histogram(
    "tidings_flush_batch_records", "Records applied by one flush file write (C14)",
    buckets=BATCH_BUCKETS, registry=REGISTRY,
)
ALARMS_PUBLISHED = Counter(
    "tidings_alarms_published", "Delay alarms written (delay.md)", registry=REGISTRY,
)
ALARM_LATENESS = Histogram(
    "tidings_alarm_lateness_seconds", "Seconds from a delay's deadline to its alarm",
    buckets=LATENESS_BUCKETS, registry=REGISTRY,
)
OBSERVATIONS = Counter(
    "tidings_observations", "Memory observations, by reason and outcome",
    ["reason", "outcome"], registry=REGISTRY,
)
OBSERVATION_SECONDS = Histogram(
    "tidings_observation_duration_seconds", "Duration of one memory observation, by reason",
    ["reason"], buckets=DURATION_BUCKETS, registry=REGISTRY,
)
INBOX_ADMISSIONS = Counter(
    "tidings_inbox_admissions", "Inbox admissions, by the state the item entered",
    ["state"], registry=REGISTRY,
)
SPILLS = Counter(
    "tidings_spills", "Spill files written by the block cap, by lane",
    ["lane"], registry=REGISTRY,
)
SYNC_TICKS = Counter(
    "tidings_sync_ticks",
    "sync_host runs (C27), by scan: changed (agents a watcher reported, due delays, "
    "unwatched agents) or full",
    ["scan"], registry=REGISTRY,
)
SYNC_AGENTS_VISITED = Counter(
    "tidings_sync_agents_visited", "Agents visited by sync ticks (C27), by scan",
    ["scan"], registry=REGISTRY,
)
SYNC_FULL_SCANS = Counter(
    "tidings_sync_full_scans",
    "Full scans the scheduler asked for, by reason (interval, overflow, watcher_error, "
    "no_watcher)",
    ["reason"], registry=REGISTRY,
)
SYNC_UNWATCHED_AGENTS = Gauge(
    "tidings_sync_unwatched_agents",
    "Registered agents of this host without filesystem watches (watch limit reached, or "
    "no workdir): the tick visits them every time",
    registry=REGISTRY, multiprocess_mode="max",
)
#: Observation reasons kept as label values; any other (caller-chosen) reason counts
#: as ``manual``, so a label never takes unbounded values.
OBSERVATION_REASONS = frozenset({"startup", "pre_turn", "finish_turn", "manual"})


def flush_written(records: int) -> None:
    """One flush file write that applied ``records`` buffered records."""
    FLUSH_BATCH_RECORDS.observe(records)
    EVENTS_COALESCED.inc(max(records - 1, 0))


def alarm_published(lateness: float) -> None:
    """One delay alarm written, ``lateness`` seconds after its deadline."""
    ALARMS_PUBLISHED.inc()
    ALARM_LATENESS.observe(max(lateness, 0.0))


def observed(reason: str, outcome: str, seconds: float) -> None:
    """One memory observation that ended with ``outcome`` (its result's status)."""
    label = reason if reason in OBSERVATION_REASONS else "manual"
    OBSERVATIONS.labels(label, outcome).inc()
    OBSERVATION_SECONDS.labels(label).observe(seconds)


def items_entered(state: str, count: int = 1) -> None:
    """``count`` inbox items entered ``state`` (an api.md item state)."""
    if count:
        INBOX_ADMISSIONS.labels(state).inc(count)


def spilled(lane: str) -> None:
    """One spill file written for ``lane`` (``attention`` or ``persistent``)."""
    SPILLS.labels(lane).inc()
