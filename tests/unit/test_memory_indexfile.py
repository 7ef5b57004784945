"""The staged side from the index's cache tree (memory-inbox.md M17, M23, M24)."""

from __future__ import annotations

from typing import Any

import pygit2
import pytest

from tests.support.gitrepo import GitRepo
from tidings.jobs.memory import indexfile, observe_worktree
from tidings.jobs.memory.fingerprint import Fingerprinter
from tidings.jobs.memory.model import INDEX_MODIFIED, INDEX_NEW, WT_NEW


@pytest.fixture
def no_tree_diff(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts HEAD tree → index diffs (each still runs)."""
    calls: list[int] = []
    original = pygit2.Index.diff_to_tree

    def counting(self: pygit2.Index, *args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(pygit2.Index, "diff_to_tree", counting)
    return calls


def _data(repo: GitRepo) -> bytes:
    return (repo.root / ".git" / "index").read_bytes()


def _head_tree(repo: GitRepo) -> bytes:
    return bytes.fromhex(repo.git("rev-parse", "HEAD^{tree}"))


def _with_extension(data: bytes, signature: bytes, body: bytes = b"") -> bytes:
    """``data`` with one more extension before the trailing checksum (not recomputed:
    the reader does not verify it; libgit2 does, on its own read)."""
    return data[:-20] + signature + len(body).to_bytes(4, "big") + body + data[-20:]


def test_committed_index_root_is_the_head_tree(repo: GitRepo) -> None:
    """M17: after a commit the cache tree's root covers every entry and is HEAD's tree,
    in index versions 2, 3 (an extended flag) and 4 (prefix-compressed names)."""
    assert indexfile.cache_tree_root(_data(repo), 20) == (2, _head_tree(repo))
    repo.git("update-index", "--skip-worktree", "SOUL.md")
    assert indexfile.cache_tree_root(_data(repo), 20) is None  # git invalidated the root
    repo.git("write-tree")
    assert _data(repo)[4:8] == (3).to_bytes(4, "big")
    assert indexfile.cache_tree_root(_data(repo), 20) == (2, _head_tree(repo))
    repo.git("update-index", "--no-skip-worktree", "SOUL.md")
    repo.git("update-index", "--index-version", "4")
    repo.git("write-tree")
    assert _data(repo)[4:8] == (4).to_bytes(4, "big")
    assert indexfile.cache_tree_root(_data(repo), 20) == (2, _head_tree(repo))


def test_long_names_are_skipped_by_their_terminator(repo: GitRepo) -> None:
    """A name of 0xFFF bytes or more has no length in its flags: found by its NUL."""
    long_path = "/".join(["d" * 200] * 21) + "/f.md"
    assert len(long_path) > 0xFFF
    git = pygit2.Repository(repo.path)
    try:
        index = git.index
        blob = git.create_blob(b"deep\n")
        index.add(pygit2.IndexEntry(long_path, blob, pygit2.enums.FileMode.BLOB))
        tree = index.write_tree()
        index.write()
    finally:
        git.free()
    assert indexfile.cache_tree_root(_data(repo), 20) == (3, tree.raw)


def test_anything_unusual_answers_unknown(repo: GitRepo) -> None:
    """M17: no cache tree, an invalidated root, an unknown required extension, a split
    or sparse index, another version, truncated bytes: unknown, never a guess."""
    data = _data(repo)
    assert indexfile.cache_tree_root(_with_extension(data, b"ZZZZ", b"opt"), 20) is not None
    for odd in (
        _with_extension(data, b"abcd"),
        _with_extension(data, b"link", b"\0" * 20),
        _with_extension(data, b"sdir"),
        data[:4] + (5).to_bytes(4, "big") + data[8:],
        data[:-40] + data[-20:],
        data[:60],
        b"",
    ):
        assert indexfile.cache_tree_root(odd, 20) is None
    repo.write("SOUL.md", "staged\n")
    repo.git("add", "SOUL.md")
    assert indexfile.cache_tree_root(_data(repo), 20) is None  # "-1": invalidated


def test_conflicted_index_answers_unknown(repo: GitRepo) -> None:
    """M17: stages 1-3 are never read through the cache tree."""
    repo.diverge("SOUL.md")
    repo.git("merge", "-q", "other", check=False)
    assert indexfile.cache_tree_root(_data(repo), 20) is None


def test_clean_index_skips_the_tree_diff(repo: GitRepo, no_tree_diff: list[int]) -> None:
    """M17: an index proven equal to HEAD lists nothing staged without reading HEAD's
    trees; worktree changes are still listed."""
    repo.write("new.md", "n\n")
    snap = repo.observe()
    assert no_tree_diff == [] and {raw: r.flags for raw, r in snap.paths.items()} == {
        b"new.md": WT_NEW
    }


@pytest.mark.parametrize("how", ["add", "write-tree", "reset-soft", "add-intent"])
def test_staged_changes_are_listed_whatever_the_cache_tree(
    repo: GitRepo, no_tree_diff: list[int], how: str
) -> None:
    """M17: an invalidated root, a valid root of another tree (``git write-tree``), a
    HEAD moved under an unchanged index, or entries the cache tree does not count all
    fall back to the diff, which lists the staged paths."""
    repo.write("SOUL.md", "staged\n")
    if how == "add":
        repo.git("add", "SOUL.md")
    elif how == "write-tree":
        repo.git("add", "SOUL.md")
        repo.git("write-tree")
        assert indexfile.cache_tree_root(_data(repo), 20) is not None
    elif how == "reset-soft":
        repo.commit("second")
        repo.git("reset", "-q", "--soft", "HEAD~1")
    else:
        repo.write("intent.md", "i\n")
        repo.git("add", "-N", "intent.md")
        repo.git("add", "SOUL.md")
        repo.git("write-tree")
    snap = repo.observe()
    assert no_tree_diff == [1]
    assert snap.paths[b"SOUL.md"].flags & INDEX_MODIFIED


def test_index_restaged_between_the_reads_is_unstable_then_seen(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """M23: staging during fingerprinting changes the index file read again after it:
    the attempt is repeated and the next one lists the staged path."""
    repo.write("new.md", "n\n")
    original = Fingerprinter.identify
    staged: list[int] = []

    def stage_once(self: Fingerprinter, raw: bytes, flags: int, mode: int) -> Any:
        if not staged:
            staged.append(1)
            repo.git("add", "new.md")
        return original(self, raw, flags, mode)

    monkeypatch.setattr(Fingerprinter, "identify", stage_once)
    attempts: list[int] = []
    real_read = indexfile.staged_is_empty

    def counting(*args: Any) -> bool:
        attempts.append(1)
        return real_read(*args)

    monkeypatch.setattr(indexfile, "staged_is_empty", counting)
    result = observe_worktree(repo.path, None, now=0)
    assert result.status == "ok" and result.snapshot is not None
    assert len(attempts) == 2
    assert result.snapshot.paths[b"new.md"].flags == INDEX_NEW


def test_answer_is_kept_only_for_identical_bytes(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The entries are skipped once per distinct index file content."""
    parsed: list[int] = []
    real_parse = indexfile.cache_tree_root

    def counting(data: bytes, oid_len: int) -> Any:
        parsed.append(1)
        return real_parse(data, oid_len)

    monkeypatch.setattr(indexfile, "cache_tree_root", counting)
    repo.observe()
    repo.observe()
    assert len(parsed) == 1
    repo.write("SOUL.md", "staged\n")
    repo.git("add", "SOUL.md")
    snap = repo.observe()
    assert len(parsed) == 2 and snap.paths[b"SOUL.md"].flags & INDEX_MODIFIED
