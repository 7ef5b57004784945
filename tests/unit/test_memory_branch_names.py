"""Branch names and repository paths that are not valid UTF-8 (memory-inbox.md M16, M26;
issue 13 acceptance 4): raw bytes compared, the escaped form displayed, the checkpoint
advances, and ``hub.agent`` answers a reason instead of a raw serialisation error."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import tidings
from tests.conftest import make_agent
from tests.support.gitrepo import GitRepo
from tidings._hub import Hub
from tidings.jobs.memory import observe_memory
from tidings.jobs.runtime import Runtime
from tidings.store.errors import TidingsError
from tidings.store.inbox_keys import InboxKeys

Result = dict[str, Any]
BRANCH = b"br\xe9"


def event(rt: Runtime, result: Result) -> Result:
    raw = rt.redis.hget(InboxKeys("a1").events, result["event_id"])
    assert raw is not None, result
    loaded: Result = json.loads(raw)
    return loaded


def test_non_utf8_branch_is_observed_escaped_and_the_checkpoint_advances(
    rt: Runtime, tmp_path: Path
) -> None:
    """M16/M26: creating the branch and an edit made on it are each reported with the
    escaped name; every observation advances the checkpoint; none fails."""
    repo = GitRepo.init(tmp_path / "memory")
    repo.write("notes.md", "n\n")
    repo.commit("start")
    agent = make_agent(rt, tmp_path / "workdir", memory_repo=repo.path)
    assert observe_memory(rt, agent, "startup")["status"] == "baseline"

    repo.git("checkout", "-q", "-b", BRANCH)
    created = observe_memory(rt, agent, "manual")
    assert created["status"] == "changed" and created["checkpoint_version"] == 2
    moved = event(rt, created)
    assert moved["payload"]["to_branch"] == "br\\xe9"
    assert moved["payload"]["from_branch"] == "main"
    assert "main at " in moved["summary"] and "br\\xe9 at " in moved["summary"]

    repo.write("notes.md", "edited on the branch\n")
    edited = observe_memory(rt, agent, "manual")
    assert edited["status"] == "changed" and edited["checkpoint_version"] == 3
    payload = event(rt, edited)["payload"]
    assert payload["category"] == "changes" and not payload["branch_moved"]
    assert payload["changes"]["worktree"] == [
        {"path": "notes.md", "change": "modified", "area": "worktree"}
    ]
    again = observe_memory(rt, agent, "manual")
    assert (again["status"], again["event_id"]) == ("unchanged", None)  # decoded, no reobserve

    repo.git("checkout", "-q", "main")
    back = observe_memory(rt, agent, "manual")
    assert back["status"] == "changed" and back["checkpoint_version"] > 3
    assert event(rt, back)["payload"]["from_branch"] == "br\\xe9"


def test_branch_names_compare_as_raw_bytes(rt: Runtime, tmp_path: Path) -> None:
    """M26: two branches whose names differ only in an undecodable byte are different
    branches (a switch between them is a branch move)."""
    repo = GitRepo.init(tmp_path / "memory")
    repo.write("a.md", "a\n")
    repo.commit("start")
    repo.git("checkout", "-q", "-b", b"x\xe9")
    agent = make_agent(rt, tmp_path / "workdir", memory_repo=repo.path)
    assert observe_memory(rt, agent, "startup")["status"] == "baseline"
    repo.git("checkout", "-q", "-b", b"x\xe8")
    switched = observe_memory(rt, agent, "manual")
    assert switched["status"] == "changed"
    payload = event(rt, switched)["payload"]
    assert (payload["from_branch"], payload["to_branch"]) == ("x\\xe9", "x\\xe8")


@pytest.fixture
def hub(fake_redis: Any) -> Iterator[Hub]:
    with tidings.connect(client=fake_redis) as h:
        yield h


def test_hub_agent_with_a_non_utf8_memory_repo_answers_a_reason(hub: Hub, tmp_path: Path) -> None:
    """M26: ``hub.agent(memory_repo=<path holding \\xe9>)`` raises TidingsError with a
    reason (never a raw pydantic serialisation error) and registers nothing."""
    (tmp_path / "w").mkdir()
    odd = GitRepo.init(Path(os.fsdecode(os.path.join(os.fsencode(tmp_path), b"m\xe9"))))
    with pytest.raises(TidingsError) as caught:
        hub.agent(tmp_path / "w", memory_repo=odd.path, inline=True)
    assert caught.value.reason == "invalid_memory_repo"
    assert hub.agents() == []
