"""Touched-but-equal files are re-hashed by one observation, not by every one
(memory-inbox.md M19, M22, M24; issue 13): the worktree side is diffed against a
private copy of the index, outside the repository, whose stat data tidings refreshes."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pygit2
import pytest
from pygit2 import C, ffi

from tests.support.gitrepo import GitRepo
from tidings.jobs.memory import privateindex

FILES = 40


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    repo = GitRepo.init(tmp_path / "memory")
    repo.write_many({f"d{i % 4}/f{i:02d}.md": b"body %d\n" % i for i in range(FILES)})
    repo.commit("start")
    repo.git("status")  # git refreshes its index: every entry's stat matches its file
    return repo


@pytest.fixture
def refreshes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    counts: list[int] = []
    original = privateindex.refresh

    def counting(*args: Any) -> int:
        counts.append(original(*args))
        return counts[-1]

    monkeypatch.setattr(privateindex, "refresh", counting)
    return counts


def copy_entries(repo: GitRepo) -> dict[bytes, tuple[int, int]]:
    """(mtime ns, size) of each entry of the private copy, as libgit2 reads it."""
    handle = pygit2.Repository(repo.path)
    try:
        index, _ = privateindex.load(handle, os.path.join(handle.path, "index"))
        entries = {}
        for position in range(C.git_index_entrycount(index._index)):
            entry = C.git_index_get_byindex(index._index, position)
            entries[ffi.string(entry.path)] = (
                entry.mtime.seconds * 10**9 + entry.mtime.nanoseconds,
                entry.file_size,
            )
        return entries
    finally:
        handle.free()


def test_touched_equal_files_are_refreshed_once(repo: GitRepo, refreshes: list[int]) -> None:
    first = repo.observe()
    assert refreshes == [0]
    repo.age(30)  # every tracked file gets a new mtime, content unchanged
    assert repo.observe(first).paths == {}
    assert refreshes[-1] == FILES  # this observation paid the re-hash ...
    for raw, (mtime_ns, size) in copy_entries(repo).items():
        st = os.lstat(repo.abspath(raw))
        assert (mtime_ns, size) == (st.st_mtime_ns, st.st_size)
    repo.observe(first)
    assert refreshes[-1] == 0  # ... the next one finds nothing to refresh


def test_a_change_after_the_refresh_is_still_seen(repo: GitRepo) -> None:
    """Same size, an old mtime that differs from the refreshed one: re-hashed, reported."""
    first = repo.observe()
    repo.age(30)
    repo.observe(first)
    repo.write("d1/f01.md", b"BODY 1\n")
    past = time.time() - 20
    os.utime(repo.abspath("d1/f01.md"), (past, past))
    changed = repo.observe(first)
    assert list(changed.paths) == [b"d1/f01.md"]


def test_racy_touches_are_not_trusted(repo: GitRepo, refreshes: list[int]) -> None:
    """M19: a file touched within the racy window keeps being re-hashed: its stat is not
    recorded, and an equal-size edit in the same instant is still reported."""
    first = repo.observe()
    repo.age(30)
    now = time.time()
    for i in range(FILES):
        os.utime(repo.abspath(f"d{i % 4}/f{i:02d}.md"), (now, now))
    repo.observe(first)
    assert refreshes[-1] == 0
    repo.write("d2/f02.md", b"BODY 2\n")
    os.utime(repo.abspath("d2/f02.md"), (now, now))
    assert list(repo.observe(first).paths) == [b"d2/f02.md"]


def test_the_copy_lives_outside_the_repository(repo: GitRepo) -> None:
    """M24: nothing is written inside the repository; the copy is this process's own."""
    repo.observe()
    copies = [copy.path for copy in privateindex._copies.values()]
    assert copies and not any(path.startswith(repo.path) for path in copies)
