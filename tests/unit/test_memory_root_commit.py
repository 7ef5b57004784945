"""The root-commit walk runs once per head (memory-inbox.md M15)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pygit2
import pytest

from tests.support.gitrepo import GitRepo


def test_root_commit_is_walked_once_per_head(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """M15: an observation without a known root walks first parents to the root; the same
    head is not walked again (observations without a checkpoint, re-baselines), a new head
    is, and an orphan branch has its own root."""
    repo = GitRepo.init(tmp_path / "memory")
    repo.write("a.md", "a")
    first = repo.commit("one")
    repo.write("a.md", "b")
    repo.commit("two")
    walks: list[Any] = []
    original = pygit2.Repository.walk

    def counting(self: pygit2.Repository, *args: Any) -> Any:
        walks.append(args[0])
        return original(self, *args)

    monkeypatch.setattr(pygit2.Repository, "walk", counting)
    assert repo.observe().identity.root_commit == first
    assert repo.observe().identity.root_commit == first
    assert len(walks) == 1
    repo.git("checkout", "-q", "--orphan", "other")
    orphan = repo.commit("orphan root")
    assert repo.observe().identity.root_commit == orphan
    assert len(walks) == 2
