"""Fixtures shared by the unit tests of one capability."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.gitrepo import GitRepo


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    """A memory repository on ``main`` with ``notes/plan.md`` and ``SOUL.md`` committed."""
    repo = GitRepo.init(tmp_path / "memory")
    repo.write("notes/plan.md", "plan\n")
    repo.write("SOUL.md", "soul\n")
    repo.commit("start")
    return repo
