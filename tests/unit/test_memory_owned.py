"""The agent's own changes, matched by ``owned`` (memory-inbox.md M49)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.gitrepo import GitRepo
from tidings.jobs.memory import Comparison, Snapshot, compare, split_owned
from tidings.jobs.memory.owned import parse_owned


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    repo = GitRepo.init(tmp_path / "m")
    repo.write("a.md", "a\n")
    repo.write("b.md", "b\n")
    repo.write("c.md", "c\n")
    repo.commit("start")
    return repo


def diff(repo: GitRepo, before: Snapshot) -> Comparison:
    result = compare(before, repo.observe(before), repo.path)
    assert result.changed
    return result


def test_spec_example(repo: GitRepo) -> None:
    """M49: the agent committed a.md as c1 and deleted b.md; an external edit to c.md
    during the turn stays as a change."""
    before = repo.observe()
    repo.write("a.md", "agent\n")
    c1 = repo.commit("agent", "a.md")
    repo.remove("b.md")
    repo.write("c.md", "external\n")
    rest = split_owned(diff(repo, before), {"paths": {"b.md": None}, "commits": [c1]}, repo.path)
    assert rest.kind == "changed"
    assert rest.commit == () and not rest.head_moved
    assert [(c.path, c.change) for c in rest.worktree] == [(b"c.md", "modified")]


def test_everything_owned_becomes_refresh(repo: GitRepo) -> None:
    """M49: a fully owned comparison has nothing left: ``changed`` is False."""
    before = repo.observe()
    repo.write("new.md", "n\n")
    rest = split_owned(diff(repo, before), {"paths": {"new.md": repo.blob_id("new.md")}}, repo.path)
    assert rest.kind == "refresh" and not rest.changed


def test_path_owned_only_with_its_new_id(repo: GitRepo) -> None:
    """M49: the claimed id must be the path's new id in that area."""
    before = repo.observe()
    repo.write("new.md", "n\n")
    result = diff(repo, before)
    assert split_owned(result, {"paths": {"new.md": "0" * 40}}, repo.path).changed
    assert split_owned(result, {"paths": {"new.md": None}}, repo.path).changed
    assert split_owned(result, {"paths": {"other.md": None}}, repo.path).changed


def test_rename_needs_its_source_claimed_absent(repo: GitRepo) -> None:
    """M49: a rename is owned when its path has the new id and its from_path null."""
    before = repo.observe()
    blob = repo.blob_id("a.md")
    (repo.root / "a.md").rename(repo.root / "z.md")
    result = diff(repo, before)
    assert split_owned(result, {"paths": {"z.md": blob}}, repo.path).changed
    assert not split_owned(result, {"paths": {"z.md": blob, "a.md": None}}, repo.path).changed


def test_staged_area_uses_the_index_id(repo: GitRepo) -> None:
    """M49: in ``staged`` the new id is the index entry's."""
    before = repo.observe()
    repo.write("a.md", "staged\n")
    repo.git("add", "a.md")
    blob = repo.blob_id("a.md")
    repo.write("a.md", "and edited after staging\n")
    result = diff(repo, before)
    rest = split_owned(result, {"paths": {"a.md": blob}}, repo.path)
    assert rest.staged == () and [c.path for c in rest.worktree] == [b"a.md"]


def test_commits_owned_only_all_together(repo: GitRepo) -> None:
    """M49: the new head and every commit not reachable from the old head."""
    before = repo.observe()
    repo.write("a.md", "1\n")
    first = repo.commit("one")
    repo.write("a.md", "2\n")
    second = repo.commit("two")
    result = diff(repo, before)
    assert split_owned(result, {"commits": [second]}, repo.path).head_moved
    rest = split_owned(result, {"commits": [first.upper(), second]}, repo.path)
    assert not rest.head_moved and rest.commit == () and rest.kind == "refresh"


def test_branch_move_owned_by_name(repo: GitRepo) -> None:
    """M49: ``branch`` equal to the new branch owns the move (null = detached)."""
    repo.git("branch", "side")
    before = repo.observe()
    repo.git("checkout", "-q", "side")
    result = diff(repo, before)
    assert split_owned(result, {}, repo.path).branch_moved
    assert split_owned(result, {"branch": "main"}, repo.path).branch_moved
    assert not split_owned(result, {"branch": "side"}, repo.path).changed
    repo.git("checkout", "-q", "--detach")
    result = diff(repo, before)
    assert not split_owned(result, {"branch": None}, repo.path).branch_moved


def test_owned_branch_move_owns_its_tree_diff(repo: GitRepo) -> None:
    """M29, M49: the paths a branch move lists in ``commit`` are the switch's own; an
    owned move leaves none of them behind."""
    repo.git("checkout", "-q", "-b", "side")
    repo.write("a.md", "side\n")
    repo.commit("side")
    repo.git("checkout", "-q", "main")
    before = repo.observe()
    repo.git("checkout", "-q", "side")
    result = diff(repo, before)
    assert result.branch_moved and [c.path for c in result.commit] == [b"a.md"]
    owned = split_owned(result, {"branch": "side"}, repo.path)
    assert not owned.changed and owned.commit == ()


def test_replaced_and_overflow_never_owned(repo: GitRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    """M49: replacement, reobserved and overflow changes are never owned."""
    monkeypatch.setattr("tidings.jobs.memory.observation.MAX_PATHS", 1)
    repo.write("u1", "1")
    repo.write("u2", "2")
    before = repo.observe()
    repo.write("u3", "3")
    result = diff(repo, before)
    assert result.overflow is not None
    assert split_owned(result, {"paths": {"u3": repo.blob_id("u3")}}, repo.path).changed


@pytest.mark.parametrize(
    "owned",
    [
        {"paths": ["a.md"]},
        {"paths": {"a.md": 3}},
        {"commits": "abc"},
        {"branch": 1},
        {"unknown": 1},
    ],
)
def test_invalid_owned_is_rejected(owned: dict[str, object]) -> None:
    """M49: ``owned`` has a fixed shape; anything else is a ValueError (the caller answers
    ``invalid_input`` before writing)."""
    with pytest.raises(ValueError):
        parse_owned(owned)
