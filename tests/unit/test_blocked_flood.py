"""The blocked flood (channels.md C28, C50; issue 11 item 9 and acceptance 3).

A workdir full of unregistered channel files gets at most 100 individual
warnings, then one overflow event that names how many more exist, replaced in
place as the count changes; the Redis set stays bounded. The tick's cost over
such a workdir is measured in ``bench/sync_tick.py``.
"""

from __future__ import annotations

import json
from typing import Any

from tests.support.dispatch import InlineJobs
from tidings.jobs.channels import add, blocked_overflow, flush_channel
from tidings.jobs.channels import blocked as blocked_warnings
from tidings.jobs.consumer import stamp, sync_agent
from tidings.jobs.runtime import Runtime
from tidings.store.keys import AgentKeys
from tidings.store.models import AgentRecord

ROGUES = 1500


def plant(agent: AgentRecord, count: int, start: int = 0) -> None:
    d = agent.root / ".notification"
    d.mkdir(exist_ok=True)
    for n in range(start, start + count):
        (d / f"rogue{n}.json").write_text("{}")


def tick(rt: Runtime, agent: AgentRecord) -> dict[str, Any]:
    """One sync tick whose warnings flush together afterwards, as on a worker (C13)."""
    jobs = rt.dispatch
    assert isinstance(jobs, InlineJobs)
    jobs.run_flushes = False
    try:
        result = sync_agent(rt, agent)
    finally:
        jobs.run_flushes = True
    flush_channel(rt, agent, "system")
    return result


def system_events(agent: AgentRecord) -> list[dict[str, Any]]:
    path = agent.root / ".notification" / "system.json"
    if not path.exists():
        return []
    return list(json.loads(path.read_bytes())["data"]["events"])


def warnings_published(rt: Runtime, agent: AgentRecord) -> list[str]:
    """Every blocked-channel warning ever flushed (``system`` itself keeps only 20)."""
    return [e["ref_id"] for e in system_events(agent)]


def test_1500_rogue_files_100_warnings_and_one_overflow(
    rt: Runtime, agent: AgentRecord, monkeypatch: Any
) -> None:
    """Acceptance 3: at most 100 individual warnings, exactly one overflow event."""
    published: list[dict[str, Any]] = []
    real = blocked_overflow.system_events.notify

    def counting(*args: Any, **kwargs: Any) -> dict[str, Any]:
        published.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(blocked_warnings.system_events, "notify", counting)
    monkeypatch.setattr(blocked_overflow.system_events, "notify", counting)
    plant(agent, ROGUES)
    first = tick(rt, agent)
    assert len(first["blocked"]) == blocked_overflow.MAX_WARNED_BLOCKED
    for _ in range(3):
        assert tick(rt, agent)["blocked"] == []
    individual = [p for p in published if p["ref_id"] != blocked_overflow.OVERFLOW_REF]
    overflows = [p for p in published if p["ref_id"] == blocked_overflow.OVERFLOW_REF]
    assert len(individual) == blocked_overflow.MAX_WARNED_BLOCKED
    assert len(overflows) == 1 and "1400 more" in overflows[0]["body"]
    retained = [e for e in system_events(agent) if e["ref_id"] == blocked_overflow.OVERFLOW_REF]
    assert len(retained) == 1 and retained[0]["body"] == blocked_overflow.overflow_body(1400)
    k = AgentKeys(agent.agent_id)
    assert rt.redis.scard(k.blocked) == blocked_overflow.MAX_WARNED_BLOCKED


def test_overflow_event_is_updated_in_place(rt: Runtime, agent: AgentRecord) -> None:
    plant(agent, blocked_overflow.MAX_WARNED_BLOCKED + 5)
    tick(rt, agent)
    before = system_events(agent)
    at = [i for i, e in enumerate(before) if e["ref_id"] == blocked_overflow.OVERFLOW_REF]
    assert len(at) == 1 and before[at[0]]["body"] == blocked_overflow.overflow_body(5)
    plant(agent, 10, start=blocked_overflow.MAX_WARNED_BLOCKED + 5)
    tick(rt, agent)
    after = system_events(agent)
    same = [i for i, e in enumerate(after) if e["ref_id"] == blocked_overflow.OVERFLOW_REF]
    assert same == at and after[at[0]]["body"] == blocked_overflow.overflow_body(15)
    assert len(after) == len(before)
    tick(rt, agent)
    assert system_events(agent) == after  # an unchanged count publishes nothing


def test_set_stays_bounded_and_registration_makes_room(rt: Runtime, agent: AgentRecord) -> None:
    plant(agent, blocked_overflow.MAX_WARNED_BLOCKED + 3)
    tick(rt, agent)
    k = AgentKeys(agent.agent_id)
    warned = sorted(m.decode() for m in rt.redis.smembers(k.blocked))
    assert len(warned) == blocked_overflow.MAX_WARNED_BLOCKED
    assert (
        add(
            rt,
            agent,
            {
                "name": "h",
                "channel": warned[0],
                "source": "s",
                "description": "d",
                "how_to_modify": "m",
                "how_to_cancel": "c",
            },
        )["status"]
        == "ok"
    )
    again = tick(rt, agent)
    assert len(again["blocked"]) == 1  # the freed slot goes to one more channel
    assert rt.redis.scard(k.blocked) == blocked_overflow.MAX_WARNED_BLOCKED
    overflow_event = [
        e for e in system_events(agent) if e["ref_id"] == blocked_overflow.OVERFLOW_REF
    ]
    assert overflow_event[0]["body"] == blocked_overflow.overflow_body(2)


def test_a_few_rogue_files_never_announce_an_overflow(rt: Runtime, agent: AgentRecord) -> None:
    plant(agent, 3)
    assert len(tick(rt, agent)["blocked"]) == 3
    assert blocked_overflow.OVERFLOW_REF not in warnings_published(rt, agent)
    stamp(rt, agent, {"status": "ok"})
    assert rt.redis.get(AgentKeys(agent.agent_id).blocked_overflow) is None


def test_overflow_key_is_hash_tagged(agent: AgentRecord) -> None:
    assert AgentKeys(agent.agent_id).blocked_overflow.startswith("{a:a1}:")
