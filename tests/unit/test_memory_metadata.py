"""M55: a FIFO, socket, symlink or anything odd among a repository's metadata files, or a
FIFO anywhere libgit2 opens a file, makes ``observe_memory`` answer ``unavailable``
(``unreadable``) within a second instead of holding the thread in libgit2's blocking
``open()`` (issue 24 finding 4, acceptance 6); what cannot be released answers ``timeout``
at the time limit. The observations run in a child process with a timeout, so a hang
fails the test."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.groups import TIMING
from tests.support.memory_repo import MemoryRepo
from tests.support.polling import wait_until
from tidings.jobs.memory import ObserveResult, indexfile, observe_worktree, watchdog

REPO_ROOT = Path(__file__).resolve().parents[2]
#: The child's whole budget: every case answers in well under a second.
CHILD_TIMEOUT = 60
#: Observations of one repository while its ``config`` is swapped for a FIFO in a loop.
SWAP_OBSERVATIONS = 12


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


def _excludes_file_fifo(path: Path) -> None:
    """``config`` names a FIFO outside the repository as its excludes file."""
    fifo = path.parent.parent / "excludes-fifo"
    os.mkfifo(fifo)
    with path.open("a") as config:
        config.write(f"[core]\n\texcludesFile = {fifo}\n")


def _include_fifo(path: Path) -> None:
    """``config`` includes a FIFO (libgit2 reads includes while holding the GIL)."""
    fifo = path.parent.parent / "include-fifo"
    os.mkfifo(fifo)
    with path.open("a") as config:
        config.write(f'[includeIf "gitdir:/"]\n\tpath = {fifo}\n')


#: (case, file under the repository, how it is made odd); the first eleven are caught by
#: the lstat checks, the rest (files libgit2 opens that no lstat list covers) by the
#: watchdog, which releases the FIFO the helper thread is blocked opening.
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
    ("include-fifo", ".git/config", _include_fifo),
    ("gitignore-fifo", ".gitignore", _fifo),
    ("nested-gitignore-fifo", "notes/.gitignore", _fifo),
    ("exclude-fifo", ".git/info/exclude", _fifo),
    ("alternates-fifo", ".git/objects/info/alternates", _fifo),
    ("excludes-file-fifo", ".git/config", _excludes_file_fifo),
]


def test_odd_metadata_files_answer_unreadable_at_once(tmp_path: Path) -> None:
    cases = []
    for case, rel, make_odd in CASES:
        repo = MemoryRepo(tmp_path / case / "memory", {"SOUL.md": "soul\n", "notes/a.md": "a\n"})
        (repo.path / rel).parent.mkdir(parents=True, exist_ok=True)
        make_odd(repo.path / rel)
        workdir = tmp_path / case / "workdir"
        workdir.mkdir()
        cases.append([case, str(workdir), repo.root])
    child = subprocess.run(
        [sys.executable, "-m", "tests.support.observe_child", json.dumps(cases)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT,
        check=False,
    )
    answers = [json.loads(line) for line in child.stdout.splitlines()]
    assert child.returncode == 0, child.stderr[-2000:]
    assert [a["case"] for a in answers] == [c[0] for c in CASES]
    for answer in answers:
        assert (answer["status"], answer["reason"]) == ("unavailable", "unreadable"), answer
        assert answer["seconds"] < 1.0, answer


def _observe_in_child(cases: list[list[str]]) -> list[dict[str, object]]:
    child = subprocess.run(
        [sys.executable, "-m", "tests.support.observe_child", json.dumps(cases)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT,
        check=False,
    )
    assert child.returncode == 0, child.stderr[-2000:]
    return [json.loads(line) for line in child.stdout.splitlines()]


def test_a_fifo_loose_object_is_interrupted_not_held(tmp_path: Path) -> None:
    """M55: libgit2 opens a loose object while pygit2 holds the GIL, so no thread of the
    process can release it; the helper thread's own alarm (tidings.jobs.thread_alarm)
    makes the ``open()`` fail and the observation answers ``unavailable``."""
    repo = MemoryRepo(tmp_path / "memory", {"SOUL.md": "soul\n"})
    head = str(repo.repo.head.target)
    loose = repo.path / ".git" / "objects" / head[:2] / head[2:]
    loose.chmod(0o644)
    loose.unlink()
    os.mkfifo(loose)
    (tmp_path / "workdir").mkdir()
    [answer] = _observe_in_child([["loose-object-fifo", str(tmp_path / "workdir"), repo.root]])
    assert (answer["status"], answer["reason"]) == ("unavailable", "unreadable"), answer
    assert answer["seconds"] < 5.0, answer


def test_a_file_swapped_for_a_fifo_after_the_checks_holds_nothing(tmp_path: Path) -> None:
    """M55: ``.git/config`` flips between a file and a FIFO as fast as a thread can rename,
    so some observation opens the FIFO after the lstat checks passed (the FIFO is renamed
    away at once: nothing can open it for writing again). Every observation still ends,
    with a baseline, or unavailable (or unstable)."""
    repo = MemoryRepo(tmp_path / "memory", {"SOUL.md": "soul\n"})
    config = repo.path / ".git" / "config"
    regular = config.read_bytes()
    cases = []
    for n in range(SWAP_OBSERVATIONS):
        (tmp_path / f"w{n}").mkdir()
        cases.append([f"swap-{n}", str(tmp_path / f"w{n}"), repo.root])
    halt = threading.Event()

    def swap() -> None:
        fifo, text = repo.path / ".git" / "config.fifo", repo.path / ".git" / "config.text"
        while not halt.is_set():
            os.mkfifo(fifo)
            os.replace(fifo, config)
            text.write_bytes(regular)
            os.replace(text, config)

    swapper = threading.Thread(target=swap, daemon=True)
    swapper.start()
    try:
        answers = _observe_in_child(cases)
    finally:
        halt.set()
        swapper.join(5)
    assert len(answers) == SWAP_OBSERVATIONS
    # A fresh agent's first good observation is its baseline (M12); a read that raced a
    # swap may also be unstable. What matters is that each one ended.
    assert {a["status"] for a in answers} <= {"baseline", "unstable", "unavailable"}, answers


def test_the_reason_names_what_was_found(tmp_path: Path) -> None:
    repo = MemoryRepo(tmp_path / "memory", {"SOUL.md": "soul\n"})
    _fifo(repo.path / ".git" / "config")
    from tidings.jobs.memory.metadata import RepositoryUnavailable, check

    with pytest.raises(RepositoryUnavailable, match=r"\.git/config is a FIFO"):
        check(repo.root)


def test_an_index_over_the_cap_is_index_too_large(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    repo = MemoryRepo(tmp_path / "memory", {"SOUL.md": "soul\n"})
    size = (repo.path / ".git" / "index").stat().st_size
    monkeypatch.setattr("tidings.jobs.memory.privateindex.INDEX_MAX_BYTES", size - 1)
    outcome = observe_worktree(repo.root, None, now=0.0)
    assert (outcome.status, outcome.reason) == ("unavailable", "index_too_large")


def test_ordinary_repositories_and_linked_work_trees_still_observe(tmp_path: Path) -> None:
    repo = MemoryRepo(tmp_path / "memory", {"SOUL.md": "soul\n"})
    assert observe_worktree(repo.root, None, now=0.0).status == "ok"
    linked = tmp_path / "linked"
    repo.repo.add_worktree("linked", str(linked))
    assert observe_worktree(str(linked), None, now=0.0).status == "ok"
    assert indexfile.INDEX_MAX_BYTES >= 1 << 20


@TIMING
def test_an_observation_past_its_time_limit_answers_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(watchdog, "TIME_LIMIT_SECONDS", 0.2)
    release = threading.Event()
    slow = ObserveResult("ok")

    def stuck() -> ObserveResult:
        release.wait(10)
        return slow

    started = time.monotonic()
    assert watchdog.watched("/repo", stuck).reason == "timeout"
    assert time.monotonic() - started < 2
    # while its helper is left running, the same repository answers at once
    assert watchdog.watched("/repo", lambda: slow).reason == "timeout"
    assert watchdog.watched("/other", lambda: slow) is slow
    release.set()
    wait_until(lambda: watchdog.watched("/repo", lambda: slow) is slow, what="helper ended")
