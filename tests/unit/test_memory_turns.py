"""Memory changes made outside the agent's turns, seen at its next turn (issue 6,
acceptance 2, 3, 6 and 7; memory-inbox.md M28-M31 through the turn API, M45, M49)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pygit2
import pytest

from tests.conftest import make_agent
from tests.support.memory_repo import MemoryRepo
from tidings.jobs.inbox import admit, projection
from tidings.jobs.runtime import Runtime
from tidings.jobs.turns import finish_turn, prepare_turn, startup
from tidings.store.inbox_keys import InboxKeys
from tidings.store.models import AgentRecord

Result = dict[str, Any]


@pytest.fixture
def repo(tmp_path: Path) -> MemoryRepo:
    return MemoryRepo(
        tmp_path / "memory",
        {"MEMORY.md": "remember\n", "notes/plan.md": "p\n", "notes/old.md": "o\n"},
    )


@pytest.fixture
def magent(rt: Runtime, tmp_path: Path, repo: MemoryRepo) -> AgentRecord:
    agent = make_agent(rt, tmp_path / "workdir", memory_repo=repo.root)
    assert startup(rt, agent)["memory"]["status"] == "baseline"
    return agent


def next_turn(rt: Runtime, agent: AgentRecord, kind: str = "ordinary") -> Result:
    """Prepare and finish one turn (ok, nothing owned); return the prepared turn."""
    turn = prepare_turn(rt, agent, kind)
    assert turn["status"] == "ok", turn
    assert finish_turn(rt, agent, turn["turn_id"])["status"] == "ok"
    return turn


def memory_items(turn: Result) -> list[Result]:
    return [i for i in turn["inbox"] if i["source_kind"] == "memory-change"]


def areas(item: Result) -> dict[str, list[tuple[str, str]]]:
    changes = item["payload"]["changes"]
    return {
        area: [(c["path"], c["change"]) for c in entries]
        for area, entries in changes.items()
        if entries
    }


def no_wake(rt: Runtime, agent: AgentRecord) -> bool:
    return int(rt.redis.xlen(InboxKeys(agent.agent_id).wake_stream)) == 0


def add_file(r: MemoryRepo) -> None:
    r.write("todo.md", "new\n")


def edit_file(r: MemoryRepo) -> None:
    r.write("notes/plan.md", "edited\n")


def remove_file(r: MemoryRepo) -> None:
    r.remove("notes/old.md")


def stage_edit(r: MemoryRepo) -> None:
    r.write("notes/plan.md", "staged\n")
    r.stage("notes/plan.md")


def commit_edit(r: MemoryRepo) -> None:
    r.write("notes/plan.md", "committed\n")
    r.commit("edit plan")


def amend_head(r: MemoryRepo) -> None:
    r.write("notes/plan.md", "amended\n")
    r.amend()


def switch_branch(r: MemoryRepo) -> None:
    r.switch("side", create=True)


def reset_back(r: MemoryRepo) -> None:
    r.reset_hard(str(r.repo.head.peel(pygit2.Commit).parent_ids[0]))


CASES: dict[str, tuple[Callable[[MemoryRepo], None], dict[str, Any]]] = {
    "addition": (add_file, {"worktree": [("todo.md", "added")]}),
    "edit": (edit_file, {"worktree": [("notes/plan.md", "modified")]}),
    "removal": (remove_file, {"worktree": [("notes/old.md", "deleted")]}),
    "staged": (stage_edit, {"staged": [("notes/plan.md", "modified")]}),
    "commit": (commit_edit, {"commit": [("notes/plan.md", "modified")]}),
    "amend": (amend_head, {"commit": [("notes/plan.md", "modified")]}),
    "reset": (reset_back, {"commit": [("notes/plan.md", "modified")]}),
    "branch": (switch_branch, {}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_acceptance_2_each_external_change_is_one_event_at_the_next_turn(
    rt: Runtime, tmp_path: Path, repo: MemoryRepo, case: str
) -> None:
    """Addition, edit, removal, staged change, commit, amend, reset and branch switch:
    exactly one event at the next prepare_turn with the right areas (M31) and head flags
    (M29, M30), and no wake signal (M4)."""
    if case == "reset":
        repo.write("notes/plan.md", "to be reset\n")
        repo.commit("will be reset")
    agent = make_agent(rt, tmp_path / "workdir", memory_repo=repo.root)
    startup(rt, agent)
    change, expected = CASES[case]
    change(repo)
    assert no_wake(rt, agent) and rt.redis.exists(InboxKeys(agent.agent_id).turn_slot) == 0
    turn = next_turn(rt, agent)
    [item] = memory_items(turn)
    payload = item["payload"]
    assert payload["category"] == "changes" and payload["trigger"] == "pre_turn"
    assert areas(item) == expected
    assert payload["head_moved"] is (case in ("commit", "amend", "reset"))
    assert payload["history_rewritten"] is (case in ("amend", "reset"))
    assert payload["branch_moved"] is (case == "branch")
    if case == "branch":
        assert (payload["from_branch"], payload["to_branch"]) == ("main", "side")
    assert item["event_id"] in turn["inbox_text"]
    assert no_wake(rt, agent)
    assert memory_items(next_turn(rt, agent)) == []


def test_acceptance_2_unchanged_tree_and_own_changes_give_no_event(
    rt: Runtime, magent: AgentRecord, repo: MemoryRepo
) -> None:
    """An unchanged tree gives nothing; the agent's own edit and commit during a turn are
    absorbed at finish and never come back as an event."""
    assert memory_items(next_turn(rt, magent)) == []
    turn = prepare_turn(rt, magent)
    repo.write("notes/plan.md", "the agent's own note\n")
    own = repo.commit("agent commit")
    repo.write("MEMORY.md", "the agent's own memory\n")
    owned = {
        "paths": {"MEMORY.md": str(pygit2.hash(b"the agent's own memory\n"))},
        "commits": [own],
    }
    done = finish_turn(rt, magent, turn["turn_id"], owned=owned)
    assert done["memory"]["status"] == "absorbed"
    assert memory_items(next_turn(rt, magent)) == []
    assert projection(rt, magent.agent_id) == []


def test_acceptance_3_a_second_edit_of_a_dirty_file_is_detected(
    rt: Runtime, magent: AgentRecord, repo: MemoryRepo
) -> None:
    """M33: editing an already-dirty file again is a change (and a reverted edit is not)."""
    repo.write("notes/plan.md", "first edit\n")
    assert len(memory_items(next_turn(rt, magent))) == 1
    repo.write("notes/plan.md", "second edit\n")
    [item] = memory_items(next_turn(rt, magent))
    assert areas(item) == {"worktree": [("notes/plan.md", "modified")]}
    repo.write("notes/plan.md", "third\n")
    repo.write("notes/plan.md", "second edit\n")
    assert memory_items(next_turn(rt, magent)) == []


def test_acceptance_6_owned_leaves_only_the_external_edit(
    rt: Runtime, magent: AgentRecord, repo: MemoryRepo
) -> None:
    """M49: with owned, an external edit made during the turn becomes a new event at the
    next turn; the agent's reported own edit (and own deletion) does not."""
    turn = prepare_turn(rt, magent)
    repo.write("notes/plan.md", "own\n")
    repo.remove("notes/old.md")
    repo.write("MEMORY.md", "external, during the turn\n")
    owned = {
        "paths": {"notes/plan.md": str(pygit2.hash(b"own\n")), "notes/old.md": None},
        "commits": [],
    }
    done = finish_turn(rt, magent, turn["turn_id"], owned=owned)
    assert done["memory"]["status"] == "changed"
    nxt = next_turn(rt, magent)
    [item] = memory_items(nxt)
    assert item["event_id"] == done["memory"]["event_id"]
    assert areas(item) == {"worktree": [("MEMORY.md", "modified")]}
    assert item["payload"]["persona_paths"] == ["MEMORY.md"]
    assert "MEMORY.md changed on disk" in nxt["inbox_text"]


class TestOddities:
    """Acceptance 7: repository oddities never fail a turn."""

    def proceeds(self, rt: Runtime, agent: AgentRecord) -> Result:
        turn = prepare_turn(rt, agent)
        assert turn["status"] == "ok", turn
        done = finish_turn(rt, agent, turn["turn_id"])
        assert done["status"] == "ok", done
        return turn

    def test_detached_head(self, rt: Runtime, magent: AgentRecord, repo: MemoryRepo) -> None:
        """M16/M29: detaching HEAD is an ordinary branch move."""
        repo.detach()
        [item] = memory_items(self.proceeds(rt, magent))
        assert item["payload"]["to_detached"] is True and item["payload"]["branch_moved"]
        repo.write("q.md", "x\n")
        repo.commit("on a detached head")
        [item] = memory_items(self.proceeds(rt, magent))
        assert item["payload"]["head_moved"] is True

    def test_unborn_branch(self, rt: Runtime, tmp_path: Path) -> None:
        """M16: a repository without commits is observed; its first file is an event."""
        empty = MemoryRepo(tmp_path / "empty")
        agent = make_agent(rt, tmp_path / "wd", memory_repo=empty.root)
        assert startup(rt, agent)["memory"]["status"] == "baseline"
        empty.write("first.md", "x\n")
        [item] = memory_items(self.proceeds(rt, agent))
        assert item["payload"]["to_unborn"] is True
        assert areas(item) == {"worktree": [("first.md", "added")]}

    def test_replaced_repository_is_an_event(
        self, rt: Runtime, magent: AgentRecord, repo: MemoryRepo
    ) -> None:
        """M28: another repository at the same path → repository_replaced, re-baselined."""
        shutil.rmtree(repo.path)
        MemoryRepo(repo.path, {"other.md": "x\n"})
        [item] = memory_items(self.proceeds(rt, magent))
        assert item["payload"]["category"] == "repository_replaced"
        assert memory_items(self.proceeds(rt, magent)) == []

    def test_corrupt_checkpoint_is_an_event(
        self, rt: Runtime, magent: AgentRecord, repo: MemoryRepo
    ) -> None:
        """M21/M28: an unreadable checkpoint → reobserved, listing the dirty paths."""
        repo.write("notes/plan.md", "dirty\n")
        rt.redis.hset(InboxKeys(magent.agent_id).checkpoint, "paths", "{not json")
        [item] = memory_items(self.proceeds(rt, magent))
        assert item["payload"]["category"] == "reobserved"
        assert areas(item) == {"worktree": [("notes/plan.md", "modified")]}
        assert memory_items(self.proceeds(rt, magent)) == []

    def test_checkpoint_too_new_is_left_untouched(
        self, rt: Runtime, magent: AgentRecord, repo: MemoryRepo
    ) -> None:
        """M21: a newer checkpoint format → error checkpoint_too_new; nothing written."""
        k = InboxKeys(magent.agent_id)
        rt.redis.hset(k.checkpoint, "format", "99")
        before = rt.redis.hgetall(k.checkpoint)
        repo.write("notes/plan.md", "dirty\n")
        turn = self.proceeds(rt, magent)
        assert turn["memory"]["reason"] == "checkpoint_too_new"
        assert rt.redis.hgetall(k.checkpoint) == before

    @pytest.mark.parametrize("oddity", ["missing", "bare", "plain directory", "file"])
    def test_unavailable_repository(
        self, rt: Runtime, magent: AgentRecord, repo: MemoryRepo, oddity: str
    ) -> None:
        """M13: missing, bare, non-repository paths → unavailable; the turn proceeds."""
        shutil.rmtree(repo.path)
        if oddity == "bare":
            pygit2.init_repository(str(repo.path), bare=True)
        elif oddity == "plain directory":
            repo.path.mkdir()
        elif oddity == "file":
            repo.path.write_text("not a repository")
        turn = self.proceeds(rt, magent)
        assert turn["memory"]["status"] == "unavailable"

    def test_non_utf8_path(self, rt: Runtime, magent: AgentRecord, repo: MemoryRepo) -> None:
        """M26: a non-UTF-8 file name is reported escaped, never crashes a turn."""
        with open(bytes(repo.path) + b"/caf\xe9.md", "wb") as handle:
            handle.write(b"x")
        [item] = memory_items(self.proceeds(rt, magent))
        [entry] = item["payload"]["changes"]["worktree"]
        assert entry["path"] == "caf\\xe9.md" and entry["escaped"] is True


def test_m45_several_memory_events_coalesce_into_one_entry(
    rt: Runtime, magent: AgentRecord, repo: MemoryRepo
) -> None:
    """M45: claimed memory events render as ONE entry naming every event id, before the
    other items, with the memory closing line."""
    repo.write("notes/plan.md", "one\n")
    first = startup(rt, magent)["memory"]["event_id"]
    repo.write("todo.md", "two\n")
    second = startup(rt, magent)["memory"]["event_id"]
    mail = admit(rt, magent.agent_id, "mail", "a letter")["event_id"]
    turn = next_turn(rt, magent)
    text = turn["inbox_text"]
    lines = text.split("\n")
    assert lines[0].startswith("[Inbox] 3 items")
    assert first in lines[1] and second in lines[1]
    assert text.count("Memory repository changes") == 1
    assert f"- {mail} mail: a letter" in lines
    assert lines[-1] == (
        "Inspect the current files in your memory repository and decide what needs attention."
    )
