"""Issue 30 acceptance 1: every write a client may retry has one effect (interfaces.md
"The default store", guide.md rule 1).

The client's failover retry re-sends a script whose reply was lost: the script then runs
twice with the same arguments and the caller sees the second reply. Here every script
call runs twice (the first reply dropped), on fakeredis and on a real redis-server, and
each producer, tool and inbox write is checked to have the effect and the answer of one
call.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from apscheduler.job import Job
from apscheduler.schedulers.blocking import BlockingScheduler
from apscheduler.triggers.date import DateTrigger

import tidings
from tests.support.memory_repo import MemoryRepo
from tidings.scheduler.alarm_job import ALARM_JOB_REF, ALARM_STORE
from tidings.scheduler.jobstore import JsonRedisJobStore
from tidings.store import keys
from tidings.store.inbox_keys import InboxKeys
from tidings.store.keys import AgentKeys
from tidings.store.scripts import Arg, Scripts

HOST = "replay-host"


class Replays:
    """Runs every script twice and answers the second run, as a lost reply and the
    client's re-send do; counts the runs."""

    def __init__(self) -> None:
        self.runs: list[str] = []
        self.real = Scripts.__call__

    def run(self, scripts: Scripts, name: str, keys: Sequence[str], args: Sequence[Arg]) -> object:
        self.real(scripts, name, keys, args)
        self.runs.append(name)
        return self.real(scripts, name, keys, args)


@pytest.fixture
def replays(monkeypatch: pytest.MonkeyPatch) -> Replays:
    twice = Replays()

    def run(scripts: Scripts, name: str, keys: Sequence[str], args: Sequence[Arg]) -> object:
        return twice.run(scripts, name, keys, args)

    monkeypatch.setattr(Scripts, "__call__", run)
    return twice


@pytest.fixture
def hub(redis_client: Any) -> Iterator[tidings.Hub]:
    redis_client.flushall()
    settings = tidings.Settings(host=HOST, turn_wait_seconds=5)
    with tidings.connect(client=redis_client, settings=settings) as opened:
        yield opened


def mirror(workdir: Path, channel: str) -> dict[str, Any]:
    return dict(json.loads((workdir / ".notification" / f"{channel}.json").read_bytes()))


def event_ids(workdir: Path, channel: str) -> list[str]:
    return [e["event_id"] for e in mirror(workdir, channel)["data"]["events"]]


def test_publishes_land_once_and_answer_as_one_call(
    hub: tidings.Hub, tmp_path: Path, replays: Replays
) -> None:
    """C10, C11, C13: envelope, event and keyed event pushes, each run twice: one record
    buffered (one sequence number), one copy in the file, no false ``duplicate``."""
    agent = hub.agent(tmp_path, inline=True)
    published = agent.publish("mcp.board", {"header": "board", "data": {"v": 1}})
    assert published == {"status": "ok", "flushed": True}
    plain = agent.publish_event("mcp.x", {"text": "plain"})
    keyed = agent.publish_event("mcp.x", {"text": "keyed"}, idempotency_key="k1")
    own_id = agent.publish_event("mcp.x", {"text": "own", "event_id": "mine-1"})
    for result in (plain, keyed, own_id):
        assert result["status"] == "ok" and "duplicate" not in result, result
        assert result["flushed"] is True
    assert replays.runs.count("buffer_push") == 4
    assert event_ids(tmp_path, "mcp.x") == [plain["event_id"], keyed["event_id"], "mine-1"]
    assert mirror(tmp_path, "mcp.board")["data"] == {"v": 1}
    k = AgentKeys(agent.agent_id)
    assert int(hub.redis.get(k.sequence("mcp.x"))) == 3
    assert hub.redis.llen(k.buffer("mcp.x")) == 0
    # The producer's own second call is still a duplicate (C11).
    again = agent.publish_event("mcp.x", {"text": "keyed"}, idempotency_key="k1")
    assert again == {"status": "ok", "event_id": keyed["event_id"], "duplicate": True}


def test_daemon_events_and_tool_actions_take_effect_once(
    hub: tidings.Hub, tmp_path: Path, replays: Replays
) -> None:
    """C30: a daemon event with the producer's event id, sent twice, is in its mini-file
    once; dismissal and delay (tool actions, C35, D2) run their scripts twice with one
    effect."""
    agent = hub.agent(tmp_path, inline=True)
    first = agent.publish_daemon_event("d1", {"event_id": "run-1", "text": "built"})
    second = agent.publish_daemon_event("d1", {"event_id": "run-1", "text": "built"})
    assert first["status"] == "ok" and second["duplicate"] is True
    mini = json.loads((tmp_path / ".notification/daemon/d1.json").read_bytes())
    assert [e["event_id"] for e in mini["data"]["events"]] == ["run-1"]

    kept = agent.publish_event("system", {"text": "kept"})
    gone = agent.publish_event("system", {"text": "gone"})
    dismissed = agent.notification(
        "dismiss_event", {"event_id": gone["event_id"], "channel": "system", "force": True}
    )
    assert dismissed["status"] == "ok", dismissed
    assert event_ids(tmp_path, "system") == [kept["event_id"]]
    delayed = agent.notification("delay", {"channel": "mcp.x", "seconds": 600})
    assert delayed["status"] == "ok", delayed
    state = json.loads((tmp_path / ".notification/.delay_state.json").read_bytes())
    assert state["request_id"] == delayed["request_id"]
    assert "own_act_begin" in replays.runs


def test_inbox_admission_and_state_changes_take_effect_once(
    hub: tidings.Hub, tmp_path: Path, replays: Replays
) -> None:
    """M3, M4, M6, M43-M47: admission, claim, side-effect mark and finish each run twice:
    one item per admission, one attempt per claim, the same turn answered."""
    agent = hub.agent(tmp_path, inline=True)
    one = agent.admit("mail", "a letter")
    keyed = agent.admit("mail", "keyed", key="letter-2")
    ignored = agent.admit("mail", "ignore me")
    for result in (one, keyed, ignored):
        assert result["status"] == "ok" and "duplicate" not in result, result
    assert agent.ignore(ignored["event_id"])["status"] == "ok"
    turn = agent.prepare_turn()
    assert isinstance(turn, tidings.Turn), turn
    assert [i["event_id"] for i in turn.inbox] == [one["event_id"], keyed["event_id"]]
    assert agent.mark_side_effect(turn)["status"] == "ok"
    finished = agent.finish_turn(turn)
    assert finished["status"] == "ok" and finished["handled"] == [
        one["event_id"],
        keyed["event_id"],
    ]
    k = InboxKeys(agent.agent_id)
    assert hub.redis.hlen(k.events) == 3
    assert hub.redis.hget(k.admissions, f"{one['event_id']}:attempts") == b"1"
    assert {"inbox_admit", "inbox_claim", "turn_begin", "inbox_finish"} <= set(replays.runs)


def test_memory_observation_admits_once(hub: tidings.Hub, tmp_path: Path, replays: Replays) -> None:
    """M40: a re-run memory admission meets the checkpoint its first run advanced."""
    repo = MemoryRepo(tmp_path / "memory", {"MEMORY.md": "one\n"})
    workdir = tmp_path / "wd"
    workdir.mkdir()
    agent = hub.agent(workdir, memory_repo=repo.root, inline=True)
    assert agent.startup()["memory"]["status"] in ("baseline", "unchanged")
    repo.write("MEMORY.md", "two\n")
    assert agent.startup()["memory"]["status"] == "changed"
    memory = [i for i in agent.inbox() if i["source_kind"] == "memory-change"]
    assert len(memory) == 1


def test_alarm_jobs_are_stored_once(redis_client: Any, replays: Replays) -> None:
    """D15, D16: an alarm job added twice (its reply lost) is stored once and the add
    succeeds; a remove run twice removes it."""
    redis_client.flushall()
    store = JsonRedisJobStore(redis_client, HOST, {ALARM_JOB_REF: print})
    aps = BlockingScheduler(timezone=UTC)
    store.start(aps, ALARM_STORE)
    when = datetime.fromtimestamp(1_790_000_000.0, UTC)
    job = Job(
        aps,
        id="req-1",
        func=print,
        trigger=DateTrigger(run_date=when, timezone=UTC),
        executor="default",
        args=["agent1", "req-1"],
        kwargs={},
        name="alarm",
        misfire_grace_time=None,
        coalesce=True,
        max_instances=1,
        next_run_time=when,
    )
    store.add_job(job)
    assert redis_client.hkeys(keys.scheduler_jobs(HOST)) == [b"req-1"]
    store.remove_job("req-1")
    assert redis_client.hlen(keys.scheduler_jobs(HOST)) == 0
    assert replays.runs == ["scheduler_job_put", "scheduler_job_remove"]
