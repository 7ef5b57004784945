"""tidings' own metrics as the publish and flush jobs record them (jobs/metrics.py)."""

from __future__ import annotations

from jobs import publish as pub
from jobs.flush import flush_channel
from jobs.metrics import REGISTRY
from jobs.runtime import Runtime
from store.models import AgentRecord
from tests.support.dispatch import InlineJobs


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_publish_counts_records_and_flush_counts_batches_and_coalescing(
    rt: Runtime, agent: AgentRecord, jobs_dispatch: InlineJobs
) -> None:
    before = {
        "queued": sample("tidings_events_published_total", op="append", outcome="queued"),
        "duplicate": sample("tidings_events_published_total", op="append", outcome="duplicate"),
        "replace": sample("tidings_events_published_total", op="replace", outcome="queued"),
        "writes": sample("tidings_flush_batch_records_count"),
        "records": sample("tidings_flush_batch_records_sum"),
        "coalesced": sample("tidings_events_coalesced_total"),
    }
    jobs_dispatch.run_flushes = False
    for n in range(3):
        pub.publish_event(rt, agent, "mcp.x", {"n": n}, idempotency_key=f"k{n}")
    pub.publish_event(rt, agent, "mcp.x", {"n": 0}, idempotency_key="k0")
    pub.publish(rt, agent, "mcp.y", {"header": "h"})
    flush_channel(rt, agent, "mcp.x")
    flush_channel(rt, agent, "mcp.y")

    assert sample("tidings_events_published_total", op="append", outcome="queued") \
        == before["queued"] + 3
    assert sample("tidings_events_published_total", op="append", outcome="duplicate") \
        == before["duplicate"] + 1
    assert sample("tidings_events_published_total", op="replace", outcome="queued") \
        == before["replace"] + 1
    assert sample("tidings_flush_batch_records_count") == before["writes"] + 2
    assert sample("tidings_flush_batch_records_sum") == before["records"] + 4
    assert sample("tidings_events_coalesced_total") == before["coalesced"] + 2
