"""Observing a memory repository (memory-inbox.md M12-M19, M22-M24)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pygit2
import pytest

from tests.support.gitrepo import GitRepo, fast_tmp
from tidings.jobs.memory import fingerprint as memory_fingerprint
from tidings.jobs.memory import git_status, observe_worktree
from tidings.jobs.memory.fingerprint import Fingerprinter, Unstable
from tidings.jobs.memory.model import CONFLICTED, INDEX_NEW, WT_MODIFIED, WT_NEW


@pytest.fixture
def hashed(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bytes]]:
    """Names of the files the observation opened and hashed."""
    names: list[bytes] = []
    original = Fingerprinter._hash_file

    def spy(self: Fingerprinter, dir_fd: int, name: bytes, before: os.stat_result) -> str:
        names.append(name)
        return original(self, dir_fd, name, before)

    monkeypatch.setattr(Fingerprinter, "_hash_file", spy)
    yield names


# --- M12, M13: results -----------------------------------------------------------------


def test_unavailable_reasons(tmp_path: Path) -> None:
    """M13: not_configured, missing, not_a_repository (plain dir, file, bare repository,
    a sub-directory of a work tree, a git directory itself)."""
    assert observe_worktree(None, None, now=0).reason == "not_configured"
    assert observe_worktree(str(tmp_path / "nope"), None, now=0).reason == "missing"
    (tmp_path / "plain").mkdir()
    (tmp_path / "file").write_text("x")
    repo = GitRepo.init(tmp_path / "wt")
    repo.write("sub/a.md", "a")
    pygit2.init_repository(str(tmp_path / "bare.git"), bare=True)
    for path in ("plain", "file", "bare.git", "wt/sub", "wt/.git"):
        result = observe_worktree(str(tmp_path / path), None, now=0)
        assert (result.status, result.reason) == ("unavailable", "not_a_repository"), path


def test_corrupt_repository_is_unreadable_not_raised(repo: GitRepo) -> None:
    """M12, M13: a broken repository never raises: ``unavailable``/``unreadable``."""
    (repo.root / ".git" / "HEAD").write_text("garbage\n")
    result = observe_worktree(repo.path, None, now=0)
    assert (result.status, result.reason) == ("unavailable", "unreadable")


def test_unexpected_error_is_reported_not_raised(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """M12: whatever goes wrong inside, the caller gets a result and a log event."""

    def boom(*args: Any) -> Any:
        raise RuntimeError("odd")

    monkeypatch.setattr(git_status, "read_staged", boom)
    result = observe_worktree(repo.path, None, now=0)
    assert (result.status, result.reason) == ("unavailable", "unreadable")
    assert any(getattr(r, "event", "") == "memory.observe_failed" for r in caplog.records)


def test_sha256_repository_is_unreadable(tmp_path: Path) -> None:
    """M12, M13: libgit2 here cannot open SHA-256 repositories: reported, not raised."""
    root = tmp_path / "s"
    root.mkdir()
    GitRepo(root).git("init", "-q", "--object-format=sha256")
    assert observe_worktree(str(root), None, now=0).reason == "unreadable"


# --- M15, M16: identity and HEAD ---------------------------------------------------------


def test_identity(repo: GitRepo, tmp_path: Path) -> None:
    """M15: real path of the work tree, dev:ino of the git dir, root commit by first
    parents; kept from the checkpoint while it exists."""
    link = tmp_path / "link"
    link.symlink_to(repo.root)
    first = repo.head()
    repo.write("x.md", "x")
    repo.commit("second")
    snap = GitRepo(link).observe()
    st = os.stat(repo.root / ".git")
    assert snap.identity.root == str(repo.root.resolve())
    assert snap.identity.git_dir == f"{st.st_dev}:{st.st_ino}"
    assert snap.identity.root_commit == first
    fake_root = repo.head()  # exists, so it is kept rather than recomputed
    kept = repo.observe(_with_root(snap, fake_root))
    assert kept.identity.root_commit == fake_root
    gone = repo.observe(_with_root(snap, "0" * 39 + "1"))
    assert gone.identity.root_commit == first


def _with_root(snap: Any, root: str) -> Any:
    from dataclasses import replace

    return replace(snap, identity=replace(snap.identity, root_commit=root))


def test_head_states(tmp_path: Path) -> None:
    """M16: unborn (branch named, head null), on a branch, detached (branch null)."""
    repo = GitRepo.init(tmp_path / "m", branch="trunk")
    unborn = repo.observe().head
    assert (unborn.branch, unborn.unborn, unborn.detached, unborn.head) == (
        "trunk",
        True,
        False,
        None,
    )
    assert repo.observe().identity.root_commit is None
    commit = repo.commit("first")
    on = repo.observe().head
    assert (on.branch, on.unborn, on.detached, on.head) == ("trunk", False, False, commit)
    repo.git("checkout", "-q", "--detach")
    off = repo.observe().head
    assert (off.branch, off.unborn, off.detached, off.head) == (None, False, True, commit)


# --- M17, M18: records and worktree identity --------------------------------------------


def test_records_list_dirty_paths_only(repo: GitRepo) -> None:
    """M17: untracked files one by one, ignored and clean paths not at all; index entries
    and stat tuple recorded."""
    repo.write(".gitignore", "*.log\n")
    repo.write("debug.log", "ignored")
    repo.write("new/deep/a.md", "a")
    repo.write("new/deep/b.md", "b")
    repo.write("notes/plan.md", "edited\n")
    repo.write("staged.md", "s")
    repo.git("add", "staged.md")
    snap = repo.observe()
    assert sorted(snap.paths) == [
        b".gitignore",
        b"new/deep/a.md",
        b"new/deep/b.md",
        b"notes/plan.md",
        b"staged.md",
    ]
    plan = snap.paths[b"notes/plan.md"]
    assert plan.flags == WT_MODIFIED and [e.stage for e in plan.index] == [0]
    assert plan.head is not None and plan.index[0].id == plan.head.id
    st = os.stat(repo.abspath("notes/plan.md"))
    assert plan.stat == (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    staged = snap.paths[b"staged.md"]
    assert staged.flags == INDEX_NEW and staged.head is None
    assert snap.paths[b"new/deep/a.md"].flags == WT_NEW


def test_file_identity_is_the_raw_blob_id(repo: GitRepo) -> None:
    """M18: regular file: Git blob id of the raw bytes, no filters (CRLF left as is)."""
    repo.write(".gitattributes", "*.txt text eol=crlf\n")
    repo.write("crlf.txt", b"a\r\nb\r\n")
    repo.write("bin.dat", bytes(range(256)) * 10)
    snap = repo.observe()
    for name in ("crlf.txt", "bin.dat"):
        data = (repo.root / name).read_bytes()
        expected = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        assert snap.paths[name.encode()].worktree.id == expected == repo.blob_id(name)


def test_symlink_identity_never_follows(repo: GitRepo, tmp_path: Path) -> None:
    """M18, M22: a symlink's id is the blob of its target text; the target is not read."""
    secret = tmp_path / "outside.txt"
    secret.write_text("outside")
    os.symlink(str(secret), repo.abspath("link.md"))
    os.symlink("missing/target", repo.abspath("dangling"))
    snap = repo.observe()
    link = snap.paths[b"link.md"].worktree
    target = os.fsencode(str(secret))
    assert link.type == "symlink" and link.mode == 0o120000
    assert link.id == hashlib.sha1(b"blob %d\0" % len(target) + target).hexdigest()
    assert snap.paths[b"dangling"].worktree.type == "symlink"


def test_nested_repository_is_one_entry(repo: GitRepo) -> None:
    """M18, M27: a nested repository is one entry identified by its HEAD commit; none of
    its files are hashed."""
    nested = GitRepo.init(repo.root / "vendor" / "lib")
    nested.write("inner.md", "i")
    commit = nested.commit("inner")
    nested.write("untracked-inside.md", "u")
    snap = repo.observe()
    entry = snap.paths[b"vendor/lib"]
    assert (entry.worktree.type, entry.worktree.id) == ("gitlink", commit)
    assert not any(p.startswith(b"vendor/lib/") for p in snap.paths)


def test_fifo_is_typed_not_opened(repo: GitRepo, hashed: list[bytes]) -> None:
    """M18: a fifo where a tracked file was is type and mode only, never opened."""
    repo.remove("SOUL.md")
    os.mkfifo(repo.abspath("SOUL.md"))
    snap = repo.observe()
    assert snap.paths[b"SOUL.md"].worktree.type == "other"
    assert b"SOUL.md" not in hashed


def test_conflict_records_every_stage(repo: GitRepo) -> None:
    """M17: a conflicted path keeps index entries of stages 1-3."""
    repo.diverge("SOUL.md")
    repo.git("merge", "-q", "other", check=False)
    rec = repo.observe().paths[b"SOUL.md"]
    assert rec.flags & CONFLICTED and [e.stage for e in rec.index] == [1, 2, 3]


# --- M19: stat cache ---------------------------------------------------------------------


def test_stat_cache_reuses_ids(repo: GitRepo, hashed: list[bytes]) -> None:
    """M19: an unchanged stat outside the racy window reuses the checkpoint's id."""
    repo.write("notes/plan.md", "dirty\n")
    repo.write("new.md", "n\n")
    repo.age()
    first = repo.observe()
    assert sorted(hashed) == [b"new.md", b"plan.md"]
    hashed.clear()
    second = repo.observe(first)
    assert hashed == [] and second.paths == first.paths
    repo.write("new.md", "changed\n")
    repo.observe(second)
    assert hashed == [b"new.md"]


def test_racy_files_are_rehashed(repo: GitRepo, hashed: list[bytes]) -> None:
    """M19: a file modified less than 2 s before the checkpoint began is re-hashed, and
    the window uses the host's real clock, not the injectable ``now``."""
    repo.write("new.md", "n\n")
    first = repo.observe(now=0.0)  # a fake clock far in the past changes nothing
    assert abs(first.started_ns - time.time_ns()) < 60 * 10**9
    hashed.clear()
    repo.observe(first, now=0.0)
    assert hashed == [b"new.md"]


def test_no_change_observation_hashes_nothing(hashed: list[bytes]) -> None:
    """M19: a no-change observation of a 10,000-file repository hashes no file."""
    with fast_tmp("memory-10k-") as root:
        repo = GitRepo.init(root / "big")
        repo.write_many({f"d{i // 500:02d}/f{i:05d}.md": b"%d\n" % (i % 7) for i in range(10_000)})
        repo.commit("many")
        _no_change_hashes_nothing(repo, hashed)


def _no_change_hashes_nothing(repo: GitRepo, hashed: list[bytes]) -> None:
    first = repo.observe()
    second = repo.observe(first)
    assert hashed == [] and second.paths == {}
    repo.write("d00/f00000.md", "changed\n")
    repo.observe(second)
    assert hashed == [b"f00000.md"]


# --- M22, M23: stable reads ------------------------------------------------------------


def test_non_directory_parent_makes_a_path_absent(repo: GitRepo) -> None:
    """M22: a file (or a symlink) where a directory was: the path below is absent."""
    (repo.root / "notes" / "plan.md").unlink()
    (repo.root / "notes").rmdir()
    (repo.root / "notes").write_text("now a file")
    snap = repo.observe()
    assert snap.paths[b"notes/plan.md"].worktree.type == "absent"
    assert snap.paths[b"notes"].worktree.type == "file"


def test_symlinked_directory_is_not_followed(repo: GitRepo, tmp_path: Path) -> None:
    """M22: a tracked directory replaced by a symlink to a look-alike is not entered."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "plan.md").write_text("plan\n")
    (repo.root / "notes" / "plan.md").unlink()
    (repo.root / "notes").rmdir()
    os.symlink(str(elsewhere), repo.abspath("notes"))
    snap = repo.observe()
    assert snap.paths[b"notes/plan.md"].worktree.type == "absent"
    assert snap.paths[b"notes"].worktree.type == "symlink"


def test_file_changing_while_read_is_unstable(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """M22, M23: a file that changes during every read: three attempts, then
    ``unstable`` (no snapshot)."""
    repo.write("notes/plan.md", "dirty\n")
    original = Fingerprinter._hash_file
    calls: list[int] = []

    def growing(self: Fingerprinter, dir_fd: int, name: bytes, before: os.stat_result) -> str:
        calls.append(1)
        with open(repo.abspath("notes/plan.md"), "ab") as handle:
            handle.write(b"more")
        return original(self, dir_fd, name, before)

    monkeypatch.setattr(Fingerprinter, "_hash_file", growing)
    result = observe_worktree(repo.path, None, now=0)
    assert (result.status, result.snapshot) == ("unstable", None)
    assert len(calls) == 3


def test_listed_path_vanishing_is_unstable_then_retried(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """M22, M23: a path listed without a deleted flag but absent is unstable; the whole
    observation is repeated and the next attempt sees the file gone."""
    repo.write("new.md", "n")
    original = Fingerprinter.identify

    def vanish(self: Fingerprinter, raw: bytes, flags: int, mode: int) -> Any:
        if raw == b"new.md" and os.path.exists(repo.abspath("new.md")):
            repo.remove("new.md")
        return original(self, raw, flags, mode)

    monkeypatch.setattr(Fingerprinter, "identify", vanish)
    result = observe_worktree(repo.path, None, now=0)
    assert result.status == "ok" and result.snapshot is not None
    assert b"new.md" not in result.snapshot.paths
    with pytest.raises(Unstable):
        memory_fingerprint.Fingerprinter(repo.path, {}, 0).identify(b"gone.md", WT_NEW, 0)


def test_head_moving_during_observation_is_unstable_once(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """M23: HEAD read again after fingerprinting; one change costs one attempt."""
    repo.write("new.md", "n")
    original = Fingerprinter.identify
    moved: list[str] = []

    def commit_once(self: Fingerprinter, raw: bytes, flags: int, mode: int) -> Any:
        if not moved:
            moved.append(repo.commit("during"))
        return original(self, raw, flags, mode)

    monkeypatch.setattr(Fingerprinter, "identify", commit_once)
    snap = repo.observe()
    assert snap.head.head == moved[0] and snap.paths == {}


# --- M24: read-only ---------------------------------------------------------------------


def _tree_state(root: Path) -> dict[str, tuple[bytes, int]]:
    state = {}
    for folder, _, files in os.walk(root / ".git"):
        for name in files:
            path = Path(folder) / name
            state[str(path)] = (path.read_bytes(), path.stat().st_mtime_ns)
    return state


def test_observation_writes_nothing_and_runs_no_git(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """M24: no write to the repository (index with stale stat data included), no git
    subprocess, one fresh Repository per attempt."""
    repo.write("notes/plan.md", "dirty\n")
    repo.write("new.md", "n\n")
    os.utime(repo.abspath("SOUL.md"))  # stat-only change: libgit2 re-hashes, git would refresh
    before = _tree_state(repo.root)

    def no_process(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("observation started a process")

    opened: list[str] = []
    real_repository = pygit2.Repository

    def counting(path: str, *args: Any) -> pygit2.Repository:
        opened.append(path)
        return real_repository(path, *args)

    monkeypatch.setattr(subprocess, "Popen", no_process)
    monkeypatch.setattr(os, "fork", no_process)
    monkeypatch.setattr(os, "posix_spawn", no_process)
    monkeypatch.setattr("tidings.jobs.memory.repository.pygit2.Repository", counting)
    result = observe_worktree(repo.path, None, now=0)
    monkeypatch.undo()
    assert result.status == "ok"
    assert opened == [repo.path]
    assert _tree_state(repo.root) == before


def test_unreadable_file_is_observed_without_an_id(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """M12, M18: a file the host may not read is listed (type, mode, stat) with a null id
    rather than failing or destabilising every observation."""
    repo.write("locked.md", "secret")
    real_open = os.open

    def deny(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if path == b"locked.md":
            raise PermissionError(13, "Permission denied")
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr("tidings.jobs.memory.fingerprint.os.open", deny)
    result = observe_worktree(repo.path, None, now=0)
    assert result.status == "ok" and result.snapshot is not None
    locked = result.snapshot.paths[b"locked.md"].worktree
    assert (locked.type, locked.id) == ("file", None)


def test_corrupt_index_is_unreadable(repo: GitRepo) -> None:
    """M12, M13: a damaged index file is reported, never raised."""
    (repo.root / ".git" / "index").write_bytes(b"DIRC garbage")
    assert observe_worktree(repo.path, None, now=0).reason == "unreadable"
