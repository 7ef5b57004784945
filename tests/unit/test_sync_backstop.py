"""The sync step's parts the delay feature relies on (channels.md C15, C27; delay.md D9)."""

from __future__ import annotations

import json

from tests.support.dispatch import InlineJobs
from tidings.jobs import tick
from tidings.jobs.channels.publishing import append_event
from tidings.jobs.consumer import sync_agent
from tidings.jobs.runtime import Runtime
from tidings.store.keys import AgentKeys
from tidings.store.models import AgentRecord


def test_c15_sync_step_restarts_a_stranded_flush(
    rt: Runtime, agent: AgentRecord, jobs_dispatch: InlineJobs
) -> None:
    jobs_dispatch.run_flushes = False
    assert append_event(rt, agent, "system", {"text": "stranded"})["status"] == "ok"
    rt.redis.delete(AgentKeys(agent.agent_id).flush_flag("system"))  # its flush died
    jobs_dispatch.run_flushes = True
    sync_agent(rt, agent)
    events = json.loads((agent.root / ".notification/system.json").read_bytes())["data"]["events"]
    assert [e["text"] for e in events] == ["stranded"]
    assert jobs_dispatch.flushes == [(agent.agent_id, "system")] * 2
    sync_agent(rt, agent)
    assert len(jobs_dispatch.flushes) == 2, "a drained buffer needs no flush"


def test_c27_sync_host_covers_every_agent_of_the_host(rt: Runtime, agent: AgentRecord) -> None:
    assert tick.sync_host(rt, agent.host)["agents"] == 1
    assert tick.sync_host(rt, "elsewhere")["agents"] == 0
