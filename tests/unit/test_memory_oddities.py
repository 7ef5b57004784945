"""Repository oddities never fail (issue 6, acceptance 7): each goes through the whole
observe → checkpoint → compare → event chain and gives a sensible result."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.gitrepo import GitRepo, fast_tmp
from tidings.jobs.memory import (
    DEFAULT_STANDING_FILES,
    Comparison,
    Snapshot,
    compare,
    decode_checkpoint,
    encode_checkpoint,
    event_content,
    observe_worktree,
)
from tidings.jobs.memory.model import MAX_PATHS
from tidings.jobs.memory.summary import SUMMARY_BYTES

MIB = 1 << 20


def chain(repo: GitRepo, fields: dict[str, str] | None) -> tuple[Comparison, dict[str, str]]:
    """One observation as the inbox side runs it; returns the comparison and the next
    checkpoint fields."""
    previous = decode_checkpoint(fields)
    result = observe_worktree(
        repo.path, previous if isinstance(previous, Snapshot) else None, now=0
    )
    assert result.status == "ok" and result.snapshot is not None, result
    comparison = compare(previous, result.snapshot, repo.path)
    if comparison.changed:
        text, payload = event_content(
            comparison, trigger="pre_turn", standing_files=DEFAULT_STANDING_FILES
        )
        assert len(text.encode("utf-8")) <= SUMMARY_BYTES
        assert all(len(items) <= 30 for items in payload["changes"].values())
    return comparison, encode_checkpoint(result.snapshot, 1)


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    repo = GitRepo.init(tmp_path / "m")
    repo.write("MEMORY.md", "memory\n")
    repo.commit("start")
    return repo


def test_detached_head(repo: GitRepo) -> None:
    _, fields = chain(repo, None)
    repo.git("checkout", "-q", "--detach")
    result, _ = chain(repo, fields)
    assert result.branch_moved and result.new_head.detached


def test_unborn_branch(tmp_path: Path) -> None:
    repo = GitRepo.init(tmp_path / "m")
    result, fields = chain(repo, None)
    assert result.kind == "baseline" and result.current.head.unborn
    repo.write("a.md", "a")
    result, _ = chain(repo, fields)
    assert [c.path for c in result.worktree] == [b"a.md"]


def test_replaced_repository_is_an_event(repo: GitRepo, tmp_path: Path) -> None:
    _, fields = chain(repo, None)
    other = GitRepo.init(tmp_path / "other")
    other.write("MEMORY.md", "other\n")
    other.commit("other")
    (repo.root / ".git").rename(tmp_path / "old-git")
    (other.root / ".git").rename(repo.root / ".git")
    result, _ = chain(repo, fields)
    assert result.changed and result.category == "repository_replaced"


def test_corrupt_checkpoint_is_an_event(repo: GitRepo) -> None:
    _, fields = chain(repo, None)
    fields["paths"] = "{broken"
    result, repaired = chain(repo, fields)
    assert result.changed and result.category == "reobserved"
    result, _ = chain(repo, repaired)
    assert result.kind == "unchanged"


def test_missing_repository_is_unavailable(tmp_path: Path) -> None:
    result = observe_worktree(str(tmp_path / "gone"), None, now=0)
    assert (result.status, result.reason) == ("unavailable", "missing")


def test_non_utf8_file_name(repo: GitRepo) -> None:
    _, fields = chain(repo, None)
    repo.write(b"\xff\xfe.md", "x")
    result, _ = chain(repo, fields)
    assert [c.path for c in result.worktree] == [b"\xff\xfe.md"]


@pytest.mark.parametrize("name", ["*.md", "[x].md", ":(top)a", "-rf"])
def test_pathspec_like_names(repo: GitRepo, name: str) -> None:
    repo.write("x.md", "x")
    repo.write("a", "a")
    repo.commit("lookalike targets")
    _, fields = chain(repo, None)
    repo.write(name, "n")
    result, _ = chain(repo, fields)
    assert [c.path for c in result.worktree] == [name.encode()]


def test_mode_change(repo: GitRepo) -> None:
    _, fields = chain(repo, None)
    os.chmod(repo.abspath("MEMORY.md"), 0o755)
    result, _ = chain(repo, fields)
    assert [(c.path, c.change) for c in result.worktree] == [(b"MEMORY.md", "modified")]


def test_submodule_moved(repo: GitRepo, tmp_path: Path) -> None:
    upstream = GitRepo.init(tmp_path / "upstream")
    upstream.write("lib.md", "1")
    upstream.commit("one")
    repo.git("submodule", "-q", "add", str(upstream.root), "vendor/lib")
    repo.commit("add submodule")
    _, fields = chain(repo, None)
    sub = GitRepo(repo.root / "vendor" / "lib")
    sub.write("lib.md", "2")
    moved_to = sub.commit("two")
    result, fields = chain(repo, fields)
    [entry] = result.worktree
    assert (entry.path, entry.change, entry.new_id) == (b"vendor/lib", "modified", moved_to)
    repo.git("add", "vendor/lib")
    repo.commit("bump")
    result, _ = chain(repo, fields)
    assert [c.path for c in result.commit] == [b"vendor/lib"] and result.worktree == ()


@pytest.fixture(scope="module")
def big_root() -> Iterator[Path]:
    with fast_tmp("memory-oddities-") as root:
        yield root


def test_100_mib_file_edited_in_the_middle(big_root: Path) -> None:
    """M18, M19: the whole file is hashed (no sampling): one byte changed in the middle,
    size and mtime put back, is still seen (the file is untracked, so only the
    observation's own hashing can see it)."""
    repo = GitRepo.init(big_root / "huge")
    data = bytearray(os.urandom(MIB)) * 100
    repo.write("big.bin", bytes(data))
    repo.age()
    _, fields = chain(repo, None)
    path = repo.abspath("big.bin")
    st = os.stat(path)
    with open(path, "r+b") as handle:
        handle.seek(50 * MIB)
        data[50 * MIB] ^= 1
        handle.write(data[50 * MIB : 50 * MIB + 1])
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    result, _ = chain(repo, fields)
    assert [(c.path, c.change) for c in result.worktree] == [(b"big.bin", "modified")]
    expected = hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False)
    assert result.worktree[0].new_id == expected.hexdigest()


def test_30000_untracked_files_give_a_bounded_event(big_root: Path) -> None:
    """M20, M36, M37: 30,000 untracked files: 20,000 fingerprinted, the rest counted;
    the event is bounded."""
    repo = GitRepo.init(big_root / "many")
    _, fields = chain(repo, None)
    repo.write_many({f"u{i // 1000:02d}/f{i:05d}.md": b"%d" % (i % 5) for i in range(30_000)})
    repo.age()  # outside the racy window: the second observation reuses the ids (M19)
    result, fields = chain(repo, fields)
    assert len(result.current.paths) == MAX_PATHS
    assert result.current.overflow_count == 10_000
    assert result.overflow == (0, 10_000)
    text, payload = event_content(result, trigger="manual", standing_files=())
    assert len(text.encode("utf-8")) <= SUMMARY_BYTES
    assert len(payload["changes"]["worktree"]) == 30
    assert payload["more"]["worktree"] == MAX_PATHS - 30
    assert payload["overflow"] == {"from": 0, "to": 10_000}
    assert f"(+{MAX_PATHS - 30} more)" in text
    again, _ = chain(repo, fields)
    assert again.kind in ("unchanged", "refresh")
