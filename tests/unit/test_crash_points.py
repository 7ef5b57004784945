"""memory-inbox.md, "Crash points": each row of the table, with a process death simulated
by an exception that no tidings code catches (the unit tier; the e2e tier kills real
processes at the named fault points)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import make_agent
from tests.support.memory_repo import MemoryRepo
from tidings.jobs.inbox import admit, projection
from tidings.jobs.memory import ObserveResult, memory_admission
from tidings.jobs.runtime import Runtime
from tidings.jobs.turns import finish_turn, mark_side_effect
from tidings.jobs.turns import prepare as turn_prepare
from tidings.store import faults
from tidings.store.clock import FakeClock
from tidings.store.inbox_keys import InboxKeys
from tidings.store.models import AgentRecord

Result = dict[str, Any]


class Killed(BaseException):
    """The process stops here (no ``except Exception`` catches it)."""


@pytest.fixture
def repo(tmp_path: Path) -> MemoryRepo:
    return MemoryRepo(tmp_path / "memory", {"MEMORY.md": "remember\n", "notes/plan.md": "p\n"})


@pytest.fixture
def magent(rt: Runtime, tmp_path: Path, repo: MemoryRepo) -> AgentRecord:
    agent = make_agent(rt, tmp_path / "workdir", memory_repo=repo.root)
    turn_prepare.startup(rt, agent)
    return agent


def kill_at(monkeypatch: pytest.MonkeyPatch, point: str) -> None:
    def reach(name: str) -> None:
        if name == point:
            raise Killed(name)

    monkeypatch.setattr(faults, "reach", reach)


def memory_events(rt: Runtime, agent: AgentRecord) -> list[Result]:
    return [
        i for i in projection(rt, agent.agent_id, limit=100) if i["source_kind"] == "memory-change"
    ]


def checkpoint(rt: Runtime, agent: AgentRecord) -> dict[bytes, bytes]:
    return dict(rt.redis.hgetall(InboxKeys(agent.agent_id).checkpoint))


def test_crash_during_observation_before_the_script(
    rt: Runtime, magent: AgentRecord, repo: MemoryRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Crash point "during an observation, before or inside the script": the old
    checkpoint stays; the next observation admits exactly one event."""
    before = checkpoint(rt, magent)
    repo.write("MEMORY.md", "edited\n")
    kill_at(monkeypatch, "admit.before_script")
    with pytest.raises(Killed):
        memory_admission.observe_memory(rt, magent, "manual")
    monkeypatch.undo()
    assert checkpoint(rt, magent) == before and memory_events(rt, magent) == []
    assert memory_admission.observe_memory(rt, magent)["status"] == "changed"
    assert len(memory_events(rt, magent)) == 1


def test_crash_after_admission_before_any_turn(
    rt: Runtime, magent: AgentRecord, repo: MemoryRepo
) -> None:
    """Crash point "after admission, before any turn": one pending event; later unchanged
    observations add nothing; no wake."""
    repo.write("MEMORY.md", "edited\n")
    memory_admission.observe_memory(rt, magent)
    for _ in range(3):
        assert turn_prepare.startup(rt, magent)["memory"]["status"] == "unchanged"
    assert [i["state"] for i in memory_events(rt, magent)] == ["pending"]
    assert rt.redis.exists(InboxKeys(magent.agent_id).wake_stream) == 0


def test_crash_redis_loses_its_last_writes(
    rt: Runtime, magent: AgentRecord, repo: MemoryRepo
) -> None:
    """Crash point "Redis loses its last writes": event, admission and checkpoint roll back
    together (restored from a dump taken before the script); observed again → one event."""
    saved = {key: rt.redis.dump(key) for key in rt.redis.keys("*")}
    repo.write("MEMORY.md", "edited\n")
    assert memory_admission.observe_memory(rt, magent)["status"] == "changed"
    rt.redis.flushdb()
    for key, value in saved.items():
        rt.redis.restore(key, 0, value)
    assert memory_events(rt, magent) == []
    assert memory_admission.observe_memory(rt, magent)["status"] == "changed"
    assert len(memory_events(rt, magent)) == 1


def test_crash_worker_dies_after_the_commit_and_the_job_is_redelivered(
    rt: Runtime, magent: AgentRecord, repo: MemoryRepo
) -> None:
    """Crash point "worker dies after the commit, job redelivered": the replay (same
    message, same arguments) finds no delta; one event."""
    repo.write("MEMORY.md", "edited\n")
    first = memory_admission.observe_memory(rt, magent, "pre_turn")
    replay = memory_admission.observe_memory(rt, magent, "pre_turn")
    assert (first["status"], replay["status"]) == ("changed", "unchanged")
    assert replay["event_id"] is None
    assert len(memory_events(rt, magent)) == 1


@pytest.mark.parametrize("marked", [False, True])
def test_crash_after_the_claim(
    rt: Runtime, magent: AgentRecord, repo: MemoryRepo, marked: bool
) -> None:
    """Crash point "after the claim, orchestrator dies": the next startup() makes the item
    retryable (needs-repair if a side effect was marked), no duplicate event."""
    repo.write("MEMORY.md", "edited\n")
    turn = turn_prepare.prepare_turn(rt, magent)
    [item] = turn["inbox"]
    if marked:
        mark_side_effect(rt, magent, turn["turn_id"])
    recovered = turn_prepare.startup(rt, magent)["recovered"]
    key = "needs_repair" if marked else "retryable"
    assert recovered[key] == [item["event_id"]]
    again = turn_prepare.prepare_turn(rt, magent)
    assert [i["event_id"] for i in again["inbox"]] == ([] if marked else [item["event_id"]])
    assert len(memory_events(rt, magent)) == 1


def test_crash_in_finish_after_the_reconcile(
    rt: Runtime, magent: AgentRecord, repo: MemoryRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Crash point "in finish_turn, after the reconcile, before the marks": items stay
    running and recover; own changes stay absorbed."""
    mail = admit(rt, magent.agent_id, "mail", "hello")["event_id"]
    turn = turn_prepare.prepare_turn(rt, magent)
    repo.write("notes/plan.md", "own edit\n")
    kill_at(monkeypatch, "finish.after_reconcile")
    with pytest.raises(Killed):
        finish_turn(rt, magent, turn["turn_id"])
    monkeypatch.undo()
    assert [i["state"] for i in projection(rt, magent.agent_id)] == ["processing"]
    started = turn_prepare.startup(rt, magent)
    assert started["recovered"]["retryable"] == [mail]
    assert started["memory"]["status"] == "unchanged"
    assert memory_events(rt, magent) == []


def test_crash_finish_never_called(rt: Runtime, magent: AgentRecord, clock: FakeClock) -> None:
    """Crash point "finish_turn never called": after the lease the next prepare_turn
    recovers; a late finish gets turn_expired and writes nothing."""
    mail = admit(rt, magent.agent_id, "mail", "hello")["event_id"]
    lost = turn_prepare.prepare_turn(rt, magent)
    clock.advance(rt.settings.turn_lease_seconds + 0.001)
    fresh = turn_prepare.prepare_turn(rt, magent)
    assert [i["event_id"] for i in fresh["inbox"]] == [mail]
    keys = {k: rt.redis.dump(k) for k in rt.redis.keys("*")}
    assert finish_turn(rt, magent, lost["turn_id"])["reason"] == "turn_expired"
    assert {k: rt.redis.dump(k) for k in rt.redis.keys("*")} == keys


def test_crash_during_startup_recovery(
    rt: Runtime, magent: AgentRecord, repo: MemoryRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Crash point "during start-up recovery": rerunning completes it; nothing duplicated."""
    mail = admit(rt, magent.agent_id, "mail", "hello")["event_id"]
    turn_prepare.prepare_turn(rt, magent)
    repo.write("MEMORY.md", "edited while down\n")

    def die(*args: Any, **kw: Any) -> Result:
        raise Killed("after recovery, before the observation")

    monkeypatch.setattr(turn_prepare, "observe_memory", die)
    with pytest.raises(Killed):
        turn_prepare.startup(rt, magent)
    monkeypatch.undo()
    rerun = turn_prepare.startup(rt, magent)
    assert rerun["recovered"] == {"retryable": [], "needs_repair": []}
    assert rerun["memory"]["status"] == "changed"
    assert turn_prepare.startup(rt, magent)["memory"]["status"] == "unchanged"
    assert len(memory_events(rt, magent)) == 1
    turn = turn_prepare.prepare_turn(rt, magent)
    assert {i["event_id"] for i in turn["inbox"]} >= {mail}


def test_crash_pre_turn_unstable_then_finish(
    rt: Runtime, magent: AgentRecord, repo: MemoryRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Crash point "pre-turn observation unstable/error, then finish": the checkpoint is
    unchanged; the next recorded observation reports the changes."""
    before = checkpoint(rt, magent)
    monkeypatch.setattr(
        memory_admission,
        "observe_worktree",
        lambda *a, **k: ObserveResult("unstable", reason="unstable"),
    )
    turn = turn_prepare.prepare_turn(rt, magent)
    assert turn["memory"]["status"] == "unstable"
    monkeypatch.undo()
    repo.write("MEMORY.md", "edited during the turn\n")
    assert finish_turn(rt, magent, turn["turn_id"])["memory"]["status"] == "skipped"
    assert checkpoint(rt, magent) == before
    assert memory_admission.observe_memory(rt, magent)["status"] == "changed"
