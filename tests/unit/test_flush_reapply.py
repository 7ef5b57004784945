"""C15 across a lost AOF tail (issue 30, acceptance 2): the workdir keeps what a flush
wrote while Redis comes back without the trim, the applied sequence and the intent, so
the records are in the buffer again. Re-applying them must leave the file as it was:
no event twice, no older event back in place of a newer one, no replace undoing an
append."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import make_agent
from tests.support.dispatch import InlineJobs
from tidings.jobs.channels.flush import flush_channel
from tidings.jobs.channels.publishing import append_event, publish
from tidings.jobs.runtime import Runtime
from tidings.store.keys import AgentKeys
from tidings.store.models import AgentRecord

CHANNEL = "mcp.x"


def file_of(agent: AgentRecord) -> dict[str, Any]:
    return dict(
        json.loads((Path(agent.workdir) / ".notification" / f"{CHANNEL}.json").read_bytes())
    )


def ids(agent: AgentRecord) -> list[str]:
    return [e["event_id"] for e in file_of(agent)["data"]["events"]]


def flush_then_lose_the_tail(rt: Runtime, agent: AgentRecord) -> None:
    """Flush the buffer, then put Redis back as it was before the flush (the AOF tail
    that held the trim, the applied sequence and the intent is gone)."""
    k = AgentKeys(agent.agent_id)
    buffered = rt.redis.lrange(k.buffer(CHANNEL), 0, -1)
    applied = rt.redis.get(k.applied(CHANNEL))
    flush_channel(rt, agent, CHANNEL)
    rt.redis.delete(k.buffer(CHANNEL), k.intent(CHANNEL), k.applied(CHANNEL))
    if buffered:
        rt.redis.rpush(k.buffer(CHANNEL), *buffered)
    if applied is not None:
        rt.redis.set(k.applied(CHANNEL), applied)


def test_c15_records_the_file_holds_are_not_applied_again(
    rt: Runtime, jobs_dispatch: InlineJobs, tmp_path: Path
) -> None:
    jobs_dispatch.run_flushes = False
    agent = make_agent(rt, tmp_path / "w", max_events={CHANNEL: 3})
    publish(rt, agent, CHANNEL, {"header": "board", "data": {"events": [{"event_id": "old"}]}})
    sent = [append_event(rt, agent, CHANNEL, {"n": n})["event_id"] for n in range(5)]
    flush_then_lose_the_tail(rt, agent)
    before = file_of(agent)
    assert ids(agent) == sent[2:]  # retention 3: the board's event and two more went
    flush_channel(rt, agent, CHANNEL)
    assert file_of(agent)["data"] == before["data"]


def test_c15_a_partly_applied_buffer_applies_only_the_rest(
    rt: Runtime, jobs_dispatch: InlineJobs, tmp_path: Path
) -> None:
    """The file holds the first records; the buffer has those and newer ones, with a
    replace among the newer: the result is as if each record applied once."""
    jobs_dispatch.run_flushes = False
    agent = make_agent(rt, tmp_path / "w", max_events={CHANNEL: 100})
    first = [append_event(rt, agent, CHANNEL, {"n": n})["event_id"] for n in range(3)]
    flush_channel(rt, agent, CHANNEL)
    k = AgentKeys(agent.agent_id)
    # Redis lost the trim: the applied records are buffered again, ahead of newer ones.
    seqs = list(range(1, 4))
    applied = [
        f"{s}:".encode()
        + json.dumps(
            {"op": "append", "event": e, "priority": None, "skip_if_ref_exists": False}
        ).encode()
        for s, e in zip(seqs, file_of(agent)["data"]["events"], strict=True)
    ]
    publish(rt, agent, CHANNEL, {"header": "reset", "data": {"events": []}})
    later = [append_event(rt, agent, CHANNEL, {"n": n})["event_id"] for n in range(3, 5)]
    rt.redis.lpush(k.buffer(CHANNEL), *reversed(applied))
    flush_channel(rt, agent, CHANNEL)
    assert ids(agent) == later and first[0] not in ids(agent)


def test_c15_an_event_already_in_the_file_is_not_added_again(
    rt: Runtime, jobs_dispatch: InlineJobs, tmp_path: Path
) -> None:
    """A push re-run after its receipt was lost buffers the same event again: the flush
    finds it in the file and adds nothing; the same id with other content is a new
    event (C11: outside the dedup window it is appended)."""
    agent = make_agent(rt, tmp_path / "w")
    one = append_event(rt, agent, CHANNEL, {"event_id": "same", "at": "2026-01-01T00:00:00Z"})
    assert one["flushed"]
    k = AgentKeys(agent.agent_id)
    rt.redis.delete(k.dedup(CHANNEL, "same"))  # as if the push's receipt and key were lost
    again = append_event(rt, agent, CHANNEL, {"event_id": "same", "at": "2026-01-01T00:00:00Z"})
    assert again["status"] == "ok" and "duplicate" not in again
    assert ids(agent) == ["same"]
    other = append_event(
        rt,
        agent,
        CHANNEL,
        {"event_id": "same", "at": "2026-01-02T00:00:00Z"},
        idempotency_key="other",
    )
    assert other["status"] == "ok" and ids(agent) == ["same", "same"]


def test_c15_a_push_run_again_behind_newer_ones_hides_none_of_them(
    rt: Runtime, jobs_dispatch: InlineJobs, tmp_path: Path
) -> None:
    """A push the file took whose first run the lost tail erased runs again after the
    restart (the client's retry), behind pushes that came meanwhile: it is skipped as
    already in the file, and the newer ones are applied."""
    jobs_dispatch.run_flushes = False
    agent = make_agent(rt, tmp_path / "w", max_events={CHANNEL: 3})
    sent = [append_event(rt, agent, CHANNEL, {"n": n})["event_id"] for n in range(5)]
    k = AgentKeys(agent.agent_id)
    last = rt.redis.lrange(k.buffer(CHANNEL), -1, -1)[0].partition(b":")[2]
    flush_channel(rt, agent, CHANNEL)
    newer = [append_event(rt, agent, CHANNEL, {"n": n})["event_id"] for n in range(5, 7)]
    rt.redis.rpush(k.buffer(CHANNEL), b"99:" + last)
    flush_channel(rt, agent, CHANNEL)
    assert ids(agent) == [sent[-1], *newer]
