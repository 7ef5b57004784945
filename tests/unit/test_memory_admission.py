"""Memory observation triggers, atomic admission and the lock (memory-inbox.md M10-M13,
M40-M42, M48, M50, M52)."""

from __future__ import annotations

import json
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import make_agent
from tests.support.memory_repo import MemoryRepo
from tidings.jobs.inbox import admit, projection
from tidings.jobs.memory import lock as observe_lock
from tidings.jobs.memory import memory_admission
from tidings.jobs.runtime import Runtime
from tidings.jobs.turns import finish_turn, prepare_turn, startup
from tidings.store.clock import SystemClock
from tidings.store.inbox_keys import InboxKeys
from tidings.store.models import AgentRecord

Result = dict[str, Any]
M12_KEYS = {"status", "trigger", "event_id", "checkpoint_version", "observed_at"}


@pytest.fixture
def repo(tmp_path: Path) -> MemoryRepo:
    return MemoryRepo(tmp_path / "memory", {"MEMORY.md": "remember\n", "notes/plan.md": "p\n"})


@pytest.fixture
def magent(rt: Runtime, tmp_path: Path, repo: MemoryRepo) -> AgentRecord:
    return make_agent(rt, tmp_path / "workdir", memory_repo=repo.root)


def observe(rt: Runtime, agent: AgentRecord, trigger: str = "manual") -> Result:
    return memory_admission.observe_memory(rt, agent, trigger)


def checkpoint(rt: Runtime, agent: AgentRecord) -> dict[bytes, bytes]:
    return dict(rt.redis.hgetall(InboxKeys(agent.agent_id).checkpoint))


def memory_items(rt: Runtime, agent: AgentRecord) -> list[Result]:
    return [
        i for i in projection(rt, agent.agent_id, limit=100) if i["source_kind"] == "memory-change"
    ]


def wake_entries(rt: Runtime, agent: AgentRecord) -> int:
    return int(rt.redis.xlen(InboxKeys(agent.agent_id).wake_stream))


class TestTriggers:
    def test_m10_m12_startup_baseline_then_manual_change(
        self, rt: Runtime, magent: AgentRecord, repo: MemoryRepo
    ) -> None:
        """M10/M12: start-up writes the baseline; a manual observation admits the change
        with the reason as trigger; results carry the M12 keys."""
        started = startup(rt, magent)["memory"]
        assert set(started) == M12_KEYS and started["status"] == "baseline"
        assert started["trigger"] == "startup" and started["checkpoint_version"] == 1
        repo.write("notes/plan.md", "changed\n")
        changed = observe(rt, magent, "after-sync")
        assert changed["status"] == "changed" and changed["trigger"] == "after-sync"
        assert changed["checkpoint_version"] == 2 and changed["event_id"]
        assert set(observe(rt, magent)) == M12_KEYS

    def test_m10_m4_a_file_change_alone_starts_nothing(
        self, rt: Runtime, magent: AgentRecord, repo: MemoryRepo
    ) -> None:
        """M10/M4: a change plus its observation never wakes or starts a turn."""
        startup(rt, magent)
        repo.write("MEMORY.md", "edited\n")
        k = InboxKeys(magent.agent_id)
        assert rt.redis.exists(k.turn_slot, k.wake_stream) == 0
        observe(rt, magent)
        assert rt.redis.exists(k.turn_slot, k.wake_stream) == 0
        assert len(memory_items(rt, magent)) == 1

    def test_m10_pre_turn_observation_event_is_claimable(
        self, rt: Runtime, magent: AgentRecord, repo: MemoryRepo
    ) -> None:
        """M10/M43: the pre_turn observation's event is claimed by the same turn."""
        startup(rt, magent)
        repo.write("MEMORY.md", "edited\n")
        turn = prepare_turn(rt, magent)
        assert turn["memory"]["status"] == "changed" and turn["memory"]["trigger"] == "pre_turn"
        [item] = turn["inbox"]
        assert item["event_id"] == turn["memory"]["event_id"]
        assert item["source_kind"] == "memory-change" and item["observed_at"]
        assert turn["inbox_text"].endswith(
            "Inspect the current files in your memory repository and decide what needs attention."
        )
        assert wake_entries(rt, magent) == 0

    @pytest.mark.parametrize("kind", ["bridge", "peer"])
    def test_m11_non_observing_kinds(
        self, rt: Runtime, magent: AgentRecord, repo: MemoryRepo, kind: str
    ) -> None:
        """M11: no observation, memory items stay pending, other items are claimed, and
        (M50) the finish does not touch the checkpoint."""
        startup(rt, magent)
        repo.write("MEMORY.md", "one\n")
        mem = observe(rt, magent)["event_id"]
        mail = admit(rt, magent.agent_id, "mail", "hi")["event_id"]
        repo.write("MEMORY.md", "two\n")
        before = checkpoint(rt, magent)
        turn = prepare_turn(rt, magent, kind)
        assert turn["memory"]["status"] == "skipped"
        assert [i["event_id"] for i in turn["inbox"]] == [mail]
        done = finish_turn(rt, magent, turn["turn_id"])
        assert done["memory"]["status"] == "skipped"
        assert checkpoint(rt, magent) == before
        assert {i["event_id"]: i["state"] for i in memory_items(rt, magent)} == {mem: "pending"}


class TestNeverFails:
    def test_m12_an_observation_that_raises_is_an_error_result(
        self, rt: Runtime, magent: AgentRecord, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """M12: observation never raises to its caller nor fails the turn."""

        def boom(*args: Any, **kw: Any) -> Any:
            raise RuntimeError("pygit2 exploded")

        monkeypatch.setattr(memory_admission, "observe_worktree", boom)
        assert observe(rt, magent) == {
            **observe(rt, magent),
            "status": "error",
            "reason": "observation_failed",
        }
        turn = prepare_turn(rt, magent)
        assert turn["status"] == "ok" and turn["memory"]["status"] == "error"

    @pytest.mark.parametrize("case", ["not_configured", "missing", "not_a_repository"])
    def test_m13_unavailable_touches_nothing_and_the_turn_proceeds(
        self, rt: Runtime, tmp_path: Path, repo: MemoryRepo, case: str
    ) -> None:
        """M13: unavailable with its reason; checkpoint and inbox untouched."""
        target: str | None = {
            "not_configured": None,
            "missing": str(tmp_path / "gone"),
            "not_a_repository": str(tmp_path),
        }[case]
        agent = make_agent(rt, tmp_path / "wd", memory_repo=target)
        result = observe(rt, agent)
        assert result["status"] == "unavailable" and result["reason"] == case
        turn = prepare_turn(rt, agent)
        assert turn["status"] == "ok" and turn["memory"]["reason"] == case
        assert checkpoint(rt, agent) == {} and memory_items(rt, agent) == []


def admit_script(
    rt: Runtime,
    agent: AgentRecord,
    read_version: str,
    *,
    event: bool,
    fields: dict[str, str],
    bound: int = 10_000,
) -> list[bytes]:
    k = InboxKeys(agent.agent_id)
    event_json = json.dumps(
        {
            "event_id": "e" * 32,
            "source_kind": "memory-change",
            "created_at": "2030-01-01T00:00:00.000Z",
            "summary": "s",
            "payload": {},
            "observed_at": "2030-01-01T00:00:00.000Z",
        }
    )
    pairs = [x for kv in fields.items() for x in kv]
    reply: list[bytes] = rt.scripts(
        "memory_admit",
        [*k.item_keys(), k.sequence, k.checkpoint],
        [read_version, "1" if event else "0", bound, "e" * 32, event_json, 1, *pairs],
    )
    return reply


class TestAdmissionScript:
    def test_m40_version_compared_as_string_then_all_written(
        self, rt: Runtime, agent: AgentRecord
    ) -> None:
        """M40: absent version = ""; event, admission, set entries and checkpoint
        (version + 1) are written together."""
        assert admit_script(rt, agent, "", event=False, fields={"paths": "{}"}) == [b"ok", b"1"]
        assert admit_script(rt, agent, "1", event=True, fields={"paths": '{"a":1}'}) == [
            b"ok",
            b"2",
        ]
        assert checkpoint(rt, agent) == {b"paths": b'{"a":1}', b"version": b"2"}
        [item] = projection(rt, agent.agent_id)
        assert item["event_id"] == "e" * 32 and item["state"] == "pending"

    @pytest.mark.parametrize("stored", ["", "1", "01", "x"])
    def test_m40_conflict_writes_nothing(
        self, rt: Runtime, agent: AgentRecord, stored: str
    ) -> None:
        """M40: a stored version other than the one read (string compare) → conflict."""
        k = InboxKeys(agent.agent_id)
        if stored:
            rt.redis.hset(k.checkpoint, mapping={"version": stored, "paths": "old"})
        before = checkpoint(rt, agent)
        read = "2" if stored != "" else "1"
        assert admit_script(rt, agent, read, event=True, fields={"paths": "new"}) == [b"conflict"]
        assert checkpoint(rt, agent) == before and projection(rt, agent.agent_id) == []

    def test_m40_m8_inbox_full_writes_nothing(self, rt: Runtime, agent: AgentRecord) -> None:
        """M40/M8: the open-item bound refuses the event and keeps the old checkpoint."""
        admit(rt, agent.agent_id, "mail", "x")
        assert admit_script(rt, agent, "", event=True, fields={"p": "1"}, bound=1) == [
            b"inbox_full"
        ]
        assert checkpoint(rt, agent) == {}

    def test_m40_unreadable_version_restarts_the_count(
        self, rt: Runtime, agent: AgentRecord
    ) -> None:
        """M40/M21: a garbage stored version still compares as a string and is replaced."""
        rt.redis.hset(InboxKeys(agent.agent_id).checkpoint, "version", "garbage")
        assert admit_script(rt, agent, "garbage", event=False, fields={}) == [b"ok", b"1"]


class TestAtomicAdmission:
    def test_m40_conflicts_are_retried_then_reported(
        self, rt: Runtime, magent: AgentRecord, repo: MemoryRepo, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """M40: a checkpoint written between read and commit → recompute (up to 3 times),
        then error checkpoint_conflict with nothing written."""
        observe(rt, magent)
        repo.write("MEMORY.md", "edited\n")
        real = memory_admission.observe_worktree
        k = InboxKeys(magent.agent_id)
        races = {"left": 1}

        def racing(*args: Any, **kw: Any) -> Any:
            if races["left"]:
                races["left"] -= 1
                rt.redis.hincrby(k.checkpoint, "version", 1)
            return real(*args, **kw)

        monkeypatch.setattr(memory_admission, "observe_worktree", racing)
        assert observe(rt, magent)["status"] == "changed"
        assert len(memory_items(rt, magent)) == 1
        repo.write("MEMORY.md", "again\n")
        races["left"] = 3
        before = checkpoint(rt, magent)
        failed = observe(rt, magent)
        assert failed["status"] == "error" and failed["reason"] == "checkpoint_conflict"
        assert len(memory_items(rt, magent)) == 1
        assert checkpoint(rt, magent)[b"paths"] == before[b"paths"]

    def test_m41_failed_script_then_exactly_one_event(
        self, rt: Runtime, magent: AgentRecord, repo: MemoryRepo, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """M41: the script fails → old checkpoint; the next observation admits exactly one
        event; a replay then finds no delta."""
        observe(rt, magent)
        before = checkpoint(rt, magent)
        repo.write("MEMORY.md", "edited\n")
        real_scripts = rt.scripts

        class Failing:
            def __call__(self, name: str, keys: list[str], args: list[Any]) -> Any:
                if name == "memory_admit":
                    raise ConnectionError("redis went away")
                return real_scripts(name, keys, args)

        object.__setattr__(rt, "scripts", Failing())
        assert observe(rt, magent)["status"] == "error"
        object.__setattr__(rt, "scripts", real_scripts)
        assert checkpoint(rt, magent) == before and memory_items(rt, magent) == []
        assert observe(rt, magent)["status"] == "changed"
        assert observe(rt, magent)["status"] == "unchanged"
        assert len(memory_items(rt, magent)) == 1

    def test_m42_pending_event_survives_rebaseline(
        self, rt: Runtime, magent: AgentRecord, repo: MemoryRepo
    ) -> None:
        """M42: a pending event stays pending whatever happens to the checkpoint."""
        observe(rt, magent)
        repo.write("MEMORY.md", "edited\n")
        eid = observe(rt, magent)["event_id"]
        rt.redis.delete(InboxKeys(magent.agent_id).checkpoint)
        assert observe(rt, magent)["status"] == "baseline"
        assert [(i["event_id"], i["state"]) for i in memory_items(rt, magent)] == [(eid, "pending")]
        assert wake_entries(rt, magent) == 0


class TestReconcile:
    def test_m48_without_owned_every_change_is_absorbed(
        self, rt: Runtime, magent: AgentRecord, repo: MemoryRepo
    ) -> None:
        """M48: owned absent → the checkpoint advances without an event."""
        startup(rt, magent)
        turn = prepare_turn(rt, magent)
        repo.write("notes/plan.md", "the agent's own edit\n")
        done = finish_turn(rt, magent, turn["turn_id"])
        assert done["memory"]["status"] == "absorbed"
        assert done["memory"]["trigger"] == "finish_turn"
        assert memory_items(rt, magent) == []
        assert observe(rt, magent)["status"] == "unchanged"

    def test_m48_m49_owned_splits_own_from_external_changes(
        self, rt: Runtime, magent: AgentRecord, repo: MemoryRepo
    ) -> None:
        """M48/M49: with owned, the agent's edit is absorbed and an external edit made
        during the turn becomes one new pending event (trigger finish_turn)."""
        startup(rt, magent)
        turn = prepare_turn(rt, magent)
        repo.write("notes/plan.md", "own\n")
        repo.write("MEMORY.md", "external\n")
        own_id = str(repo.repo.create_blob(b"own\n"))
        done = finish_turn(
            rt, magent, turn["turn_id"], owned={"paths": {"notes/plan.md": own_id}, "commits": []}
        )
        assert done["memory"]["status"] == "changed"
        [item] = memory_items(rt, magent)
        assert item["event_id"] == done["memory"]["event_id"]
        assert item["payload"]["trigger"] == "finish_turn"
        paths = [c["path"] for area in item["payload"]["changes"].values() for c in area]
        assert paths == ["MEMORY.md"]
        assert wake_entries(rt, magent) == 0

    def test_m48_unavailable_reconcile_does_not_advance(
        self, rt: Runtime, magent: AgentRecord, repo: MemoryRepo
    ) -> None:
        """M48: an unavailable reconcile leaves the checkpoint; nothing is lost."""
        startup(rt, magent)
        turn = prepare_turn(rt, magent)
        before = checkpoint(rt, magent)
        moved = repo.path.with_name("moved")
        repo.path.rename(moved)
        done = finish_turn(rt, magent, turn["turn_id"])
        assert done["memory"]["status"] == "unavailable"
        assert checkpoint(rt, magent) == before
        moved.rename(repo.path)

    def test_m50_unrecorded_pre_turn_observation_means_no_reconcile(
        self, rt: Runtime, magent: AgentRecord, repo: MemoryRepo
    ) -> None:
        """M50: pre-turn unavailable → the finish must not touch the checkpoint; the
        agent's changes are reported by the next recorded observation."""
        startup(rt, magent)
        before = checkpoint(rt, magent)
        hidden = repo.path.with_name("hidden")
        repo.path.rename(hidden)
        turn = prepare_turn(rt, magent)
        assert turn["memory"]["status"] == "unavailable"
        hidden.rename(repo.path)
        repo.write("MEMORY.md", "made during the turn\n")
        done = finish_turn(rt, magent, turn["turn_id"])
        assert done["memory"]["status"] == "skipped"
        assert checkpoint(rt, magent) == before
        assert observe(rt, magent)["status"] == "changed"


class TestLock:
    def test_m52_busy_lock_gives_observation_busy(
        self, rt: Runtime, magent: AgentRecord, repo: MemoryRepo
    ) -> None:
        """M52: a waiter gives up after 30 s (fake clock) with observation_busy; the turn
        proceeds."""
        rt.redis.set(InboxKeys(magent.agent_id).observe_lock, "someone-else", px=60_000)
        started = rt.clock.monotonic()
        result = observe(rt, magent)
        assert result["status"] == "error" and result["reason"] == "observation_busy"
        assert rt.clock.monotonic() - started >= observe_lock.WAIT_SECONDS
        assert prepare_turn(rt, magent)["memory"]["reason"] == "observation_busy"

    def test_m52_release_by_token_and_renewal(self, rt: Runtime, agent: AgentRecord) -> None:
        """M52: the lease is renewed every third while held; release only frees the
        holder's own token."""
        quick = Runtime(
            rt.redis,
            SystemClock(),
            rt.settings.model_copy(update={"observe_lock_seconds": 0.3}),
            rt.dispatch,
        )
        key = InboxKeys(agent.agent_id).observe_lock
        with observe_lock.observe_lock(quick, agent.agent_id):
            token = rt.redis.get(key)
            time.sleep(0.5)  # longer than the lease: only renewal keeps it
            assert rt.redis.get(key) == token
            rt.redis.set(key, "stolen")
        assert rt.redis.get(key) == b"stolen"

    def test_m52_observations_of_one_agent_are_serialised(
        self, rt: Runtime, magent: AgentRecord, repo: MemoryRepo
    ) -> None:
        """M52/M41: concurrent observations of one change admit exactly one event."""
        real = Runtime(rt.redis, SystemClock(), rt.settings, rt.dispatch)
        observe(real, magent)
        repo.write("MEMORY.md", "edited\n")
        results: list[Result] = []
        threads = [
            threading.Thread(target=lambda: results.append(observe(real, magent))) for _ in range(4)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(r["status"] for r in results) == [
            "changed",
            "unchanged",
            "unchanged",
            "unchanged",
        ]
        assert len(memory_items(rt, magent)) == 1


def test_m13_missing_repository_later_reappears(
    rt: Runtime, magent: AgentRecord, repo: MemoryRepo
) -> None:
    """M13: a removed repository is unavailable (reason missing), not an error."""
    startup(rt, magent)
    shutil.rmtree(repo.path)
    result = observe(rt, magent)
    assert result["status"] == "unavailable" and result["reason"] == "missing"


def test_m54_no_git_subprocess_in_the_observation_path(
    rt: Runtime, magent: AgentRecord, repo: MemoryRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """M54: observing, admitting, turning and reconciling never start a process."""
    import subprocess

    def no_process(*args: Any, **kw: Any) -> Any:
        raise AssertionError(f"a process was started: {args!r}")

    monkeypatch.setattr(subprocess.Popen, "__init__", no_process)
    startup(rt, magent)
    repo.write("MEMORY.md", "edited\n")
    turn = prepare_turn(rt, magent)
    assert turn["memory"]["status"] == "changed"
    repo.write("notes/plan.md", "own\n")
    assert finish_turn(rt, magent, turn["turn_id"])["memory"]["status"] == ("absorbed")
