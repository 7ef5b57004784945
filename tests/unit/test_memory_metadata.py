"""M55: a FIFO, socket, symlink or anything odd among a repository's metadata files makes
``observe_memory`` answer ``unavailable`` (``unreadable``) at once instead of holding the
thread in libgit2's blocking ``open()`` (issue 24 finding 4, acceptance 6). The
observations run in a child process with a timeout, so a hang fails the test."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.memory_repo import MemoryRepo
from tidings.jobs.memory import indexfile
from tidings.jobs.memory.observation import observe

REPO_ROOT = Path(__file__).resolve().parents[2]
#: The child's whole budget: every case answers in well under a second.
CHILD_TIMEOUT = 60


def _fifo(path: Path) -> None:
    path.unlink(missing_ok=True)
    os.mkfifo(path)


def _socket(path: Path) -> None:
    path.unlink(missing_ok=True)
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))


def _symlink_to_fifo(path: Path) -> None:
    outside = path.parent.parent.parent / f"outside-{path.name}"
    os.mkfifo(outside)
    path.unlink(missing_ok=True)
    path.symlink_to(outside)


def _gitdir_to_fifo(path: Path) -> None:
    """``.git`` a ``gitdir:`` file naming a FIFO."""
    os.rename(path, path.with_name("real-git"))
    os.mkfifo(path.with_name("fifo-git"))
    path.write_text("gitdir: fifo-git\n")


#: (case, file under the repository, how it is made odd)
CASES: list[tuple[str, str, Callable[[Path], None]]] = [
    ("index-fifo", ".git/index", _fifo),
    ("config-fifo", ".git/config", _fifo),
    ("head-fifo", ".git/HEAD", _fifo),
    ("packed-refs-fifo", ".git/packed-refs", _fifo),
    ("branch-ref-fifo", ".git/refs/heads/main", _fifo),
    ("index-socket", ".git/index", _socket),
    ("config-symlink", ".git/config", _symlink_to_fifo),
    ("index-symlink", ".git/index", _symlink_to_fifo),
    ("dotgit-fifo", ".git", lambda p: (os.rename(p, p.with_name("moved")), os.mkfifo(p))),
    ("gitdir-fifo", ".git", _gitdir_to_fifo),
]


def test_odd_metadata_files_answer_unreadable_at_once(tmp_path: Path) -> None:
    cases = []
    for case, rel, make_odd in CASES:
        repo = MemoryRepo(tmp_path / case / "memory", {"SOUL.md": "soul\n"})
        make_odd(repo.path / rel)
        workdir = tmp_path / case / "workdir"
        workdir.mkdir()
        cases.append([case, str(workdir), repo.root])
    child = subprocess.run(
        [sys.executable, "-m", "tests.support.observe_child", json.dumps(cases)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=CHILD_TIMEOUT, check=False)
    answers = [json.loads(line) for line in child.stdout.splitlines()]
    assert child.returncode == 0, child.stderr[-2000:]
    assert [a["case"] for a in answers] == [c[0] for c in CASES]
    for answer in answers:
        assert (answer["status"], answer["reason"]) == ("unavailable", "unreadable"), answer
        assert answer["seconds"] < 1.0, answer


def test_the_reason_names_what_was_found(tmp_path: Path) -> None:
    repo = MemoryRepo(tmp_path / "memory", {"SOUL.md": "soul\n"})
    _fifo(repo.path / ".git" / "config")
    from tidings.jobs.memory.metadata import RepositoryUnavailable, check

    with pytest.raises(RepositoryUnavailable, match=r"\.git/config is a FIFO"):
        check(repo.root)


def test_an_index_over_the_cap_is_index_too_large(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    repo = MemoryRepo(tmp_path / "memory", {"SOUL.md": "soul\n"})
    size = (repo.path / ".git" / "index").stat().st_size
    monkeypatch.setattr("tidings.jobs.memory.privateindex.INDEX_MAX_BYTES", size - 1)
    outcome = observe(repo.root, None, now=0.0)
    assert (outcome.status, outcome.reason) == ("unavailable", "index_too_large")


def test_ordinary_repositories_and_linked_work_trees_still_observe(tmp_path: Path) -> None:
    repo = MemoryRepo(tmp_path / "memory", {"SOUL.md": "soul\n"})
    assert observe(repo.root, None, now=0.0).status == "ok"
    linked = tmp_path / "linked"
    repo.repo.add_worktree("linked", str(linked))
    assert observe(str(linked), None, now=0.0).status == "ok"
    assert indexfile.INDEX_MAX_BYTES >= 1 << 20
