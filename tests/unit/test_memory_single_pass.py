"""The listing is read once per attempt, and that loses nothing (memory-inbox.md M23,
issue 13 acceptance 1).

Test hooks sit between the stages of an observation: after the listing, before the
fingerprint (``observation._fingerprint``), and after the fingerprint, before the
checkpoint commits (``admission._commit``). A change made at either moment is
reported by the next observation.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import make_agent
from tests.support.memory_repo import MemoryRepo
from tidings.jobs.memory import memory_admission, observation
from tidings.jobs.runtime import Runtime
from tidings.store.inbox_keys import InboxKeys
from tidings.store.models import AgentRecord

Result = dict[str, Any]


@pytest.fixture
def repo(tmp_path: Path) -> MemoryRepo:
    return MemoryRepo(tmp_path / "memory", {"MEMORY.md": "remember\n", "notes/plan.md": "p\n"})


@pytest.fixture
def magent(rt: Runtime, tmp_path: Path, repo: MemoryRepo) -> AgentRecord:
    agent = make_agent(rt, tmp_path / "workdir", memory_repo=repo.root)
    assert memory_admission.observe_memory(rt, agent, "startup")["status"] == "baseline"
    return agent


def worktree_entries(rt: Runtime, result: Result) -> list[tuple[str, str]]:
    event = rt.redis.hget(InboxKeys("a1").events, result["event_id"])
    assert event is not None, result
    payload = json.loads(event)["payload"]
    return [(e["change"], e["path"]) for e in payload["changes"]["worktree"]]


def test_edit_between_listing_and_fingerprint_is_reported_next(
    rt: Runtime, magent: AgentRecord, repo: MemoryRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """M23: a clean file edited after the listing was read is not in this snapshot (it
    was not listed), so the next observation compares it against the checkpoint and
    reports it; a listed file edited at the same moment is recorded as read."""
    repo.write("todo.md", "v1\n")
    original = observation._fingerprint
    hits: list[int] = []

    def edit_then_fingerprint(*args: Any) -> Any:
        if not hits:
            hits.append(1)
            repo.write("notes/plan.md", "edited after the listing\n")
            repo.write("todo.md", "v2, still before the fingerprint\n")
        return original(*args)

    monkeypatch.setattr(observation, "_fingerprint", edit_then_fingerprint)
    first = memory_admission.observe_memory(rt, magent, "manual")
    monkeypatch.undo()
    assert first["status"] == "changed" and hits == [1]
    assert worktree_entries(rt, first) == [("added", "todo.md")]
    second = memory_admission.observe_memory(rt, magent, "manual")
    assert second["status"] == "changed"
    assert worktree_entries(rt, second) == [("modified", "notes/plan.md")]
    assert memory_admission.observe_memory(rt, magent, "manual")["status"] == "unchanged"


def test_edit_after_fingerprint_before_commit_is_reported_next(
    rt: Runtime, magent: AgentRecord, repo: MemoryRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """M23: the committed checkpoint holds the identity the file had when it was
    fingerprinted; an edit made after that, before the commit, differs from it and is
    reported by the next observation (same size and a racy mtime included, M19)."""
    repo.write("todo.md", "v1\n")
    original = memory_admission._commit
    hits: list[int] = []

    def edit_then_commit(*args: Any) -> Any:
        if not hits:
            hits.append(1)
            repo.write("todo.md", "v2\n")  # same size, same second: only M19's racy rule
            repo.write("MEMORY.md", "edited before the commit\n")
        return original(*args)

    monkeypatch.setattr(memory_admission, "_commit", edit_then_commit)
    first = memory_admission.observe_memory(rt, magent, "manual")
    monkeypatch.undo()
    assert first["status"] == "changed" and hits == [1]
    assert worktree_entries(rt, first) == [("added", "todo.md")]
    second = memory_admission.observe_memory(rt, magent, "manual")
    assert second["status"] == "changed"
    assert worktree_entries(rt, second) == [("modified", "MEMORY.md"), ("modified", "todo.md")]
    assert memory_admission.observe_memory(rt, magent, "manual")["status"] == "unchanged"
