"""tidings' own metrics as the jobs that own them record them (jobs/metrics.py): publish
and flush, alarms and their lateness, observations and their duration, inbox item
states, spills."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import make_agent
from tests.support.delay import active_state, put_state
from tests.support.dispatch import InlineJobs
from tests.support.memory_repo import MemoryRepo
from tests.support.spills import attention_spiller
from tidings.jobs.cap import cap_lane
from tidings.jobs.channels import flush_channel, publishing
from tidings.jobs.consumer import delay_alarm
from tidings.jobs.inbox import admit, ignore
from tidings.jobs.memory import observe_memory
from tidings.jobs.metrics import registry
from tidings.jobs.runtime import Runtime
from tidings.jobs.turns import finish_turn, prepare_turn
from tidings.store.clock import FakeClock
from tidings.store.models import AgentRecord


def sample(name: str, **labels: str) -> float:
    return registry().get_sample_value(name, labels) or 0.0


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
        publishing.append_event(rt, agent, "mcp.x", {"n": n}, idempotency_key=f"k{n}")
    publishing.append_event(rt, agent, "mcp.x", {"n": 0}, idempotency_key="k0")
    publishing.publish(rt, agent, "mcp.y", {"header": "h"})
    flush_channel(rt, agent, "mcp.x")
    flush_channel(rt, agent, "mcp.y")

    assert (
        sample("tidings_events_published_total", op="append", outcome="queued")
        == before["queued"] + 3
    )
    assert (
        sample("tidings_events_published_total", op="append", outcome="duplicate")
        == before["duplicate"] + 1
    )
    assert (
        sample("tidings_events_published_total", op="replace", outcome="queued")
        == before["replace"] + 1
    )
    assert sample("tidings_flush_batch_records_count") == before["writes"] + 2
    assert sample("tidings_flush_batch_records_sum") == before["records"] + 4
    assert sample("tidings_events_coalesced_total") == before["coalesced"] + 2


def test_alarm_counts_and_lateness_from_the_deadline(
    rt: Runtime, agent: AgentRecord, clock: FakeClock
) -> None:
    """The alarm writer counts one alarm and observes now − deadline (2.5 s here)."""
    alarms, late = (
        sample("tidings_alarms_published_total"),
        sample("tidings_alarm_lateness_seconds_sum"),
    )
    put_state(agent, active_state(clock.now(), seconds=10))
    clock.advance(12.5)
    assert delay_alarm.reconcile(rt, agent) is True
    assert delay_alarm.reconcile(rt, agent) is False  # published once, counted once
    assert sample("tidings_alarms_published_total") == alarms + 1
    assert sample("tidings_alarm_lateness_seconds_sum") == pytest.approx(late + 2.5)


def test_observations_by_reason_and_outcome_and_items_by_state(rt: Runtime, tmp_path: Path) -> None:
    """Observations count by reason and outcome with their duration; every item state
    an inbox item enters is counted (admission, claim, finish, ignore)."""
    repo = MemoryRepo(tmp_path / "memory", {"MEMORY.md": "one\n"})
    agent = make_agent(rt, tmp_path / "w", "m1", memory_repo=repo.root)
    states = ("pending", "processing", "handled", "ignored", "deferred")
    items = {s: sample("tidings_inbox_admissions_total", state=s) for s in states}
    changed = sample("tidings_observations_total", reason="manual", outcome="changed")
    baseline = sample("tidings_observations_total", reason="startup", outcome="baseline")
    timed = sample("tidings_observation_duration_seconds_count", reason="manual")

    assert observe_memory(rt, agent, "startup")["status"] == "baseline"
    repo.write("MEMORY.md", "two\n")
    assert observe_memory(rt, agent, "some reason")["status"] == "changed"
    kept = admit(rt, agent.agent_id, "app.mail", "mail")["event_id"]
    dropped = admit(rt, agent.agent_id, "app.mail", "spam")["event_id"]
    turn = prepare_turn(rt, agent, "ordinary")
    assert finish_turn(rt, agent, turn["turn_id"], ok=False, ignored=[dropped])["retryable"]
    assert kept and ignore(rt, agent.agent_id, kept)["changed"] is True

    def moved(state: str) -> float:
        return sample("tidings_inbox_admissions_total", state=state) - items[state]

    assert [moved(s) for s in states] == [3, 3, 0, 2, 2]
    assert (
        sample("tidings_observations_total", reason="startup", outcome="baseline") == baseline + 1
    )
    assert sample("tidings_observations_total", reason="manual", outcome="changed") == changed + 1
    assert sample("tidings_observation_duration_seconds_count", reason="manual") == timed + 1


def test_spills_count_files_written_by_lane(tmp_path: Path) -> None:
    """A spill is counted when its file is created, not when an equal one is reused."""
    before = sample("tidings_spills_total", lane="attention")
    lane = {f"mcp.c{i}": {"header": f"h{i}", "data": {"text": "x" * 3000}} for i in range(5)}
    for _ in range(2):
        assert cap_lane(lane, 2048, attention_spiller(tmp_path))["overflow"]["path"]
    assert sample("tidings_spills_total", lane="attention") == before + 1


def test_publishes_before_the_registry_are_tallied_then_taken_over() -> None:
    """A producer process loads no prometheus_client; once a process builds its registry
    (every exporting one does), the earlier publishes are in it and every metric is
    exported, at zero until counted."""
    probe = """
import json, sys
from tidings.jobs import metrics
from tidings.workers import message_metrics
metrics.published("append", "queued")
metrics.published("append", "queued")
metrics.published("replace", "duplicate")
loaded = "prometheus_client" in sys.modules
registry = metrics.registry()
metrics.published("append", "queued")
value = registry.get_sample_value
print(json.dumps([loaded,
    value("tidings_events_published_total", {"op": "append", "outcome": "queued"}),
    value("tidings_events_published_total", {"op": "replace", "outcome": "duplicate"}),
    value("tidings_alarms_published_total"), value("tidings_events_coalesced_total"),
    value("tidings_sync_unwatched_agents")]))
"""
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    loaded, queued, duplicate, alarms, coalesced, unwatched = json.loads(done.stdout)
    assert loaded is False
    assert (queued, duplicate) == (3.0, 1.0)
    assert (alarms, coalesced, unwatched) == (0.0, 0.0, 0.0)
