"""Comparison and classification of memory observations (memory-inbox.md M28-M35).

Each scenario changes a real repository the way a person would (tests may use
the git CLI), observes it, and compares with the checkpoint decoded from its
encoded form, as the inbox side does.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from tests.support.gitrepo import GitRepo
from tidings.jobs.memory import Comparison, Snapshot, compare, decode_checkpoint, encode_checkpoint
from tidings.jobs.memory.model import Unreadable


def checkpoint(snapshot: Snapshot) -> Snapshot:
    """The snapshot as the next observation gets it back from Redis."""
    fields = encode_checkpoint(snapshot, 7)
    decoded = decode_checkpoint({k.encode(): v.encode() for k, v in fields.items()})
    assert isinstance(decoded, Snapshot)
    return decoded


def step(repo: GitRepo, before: Snapshot) -> tuple[Comparison, Snapshot]:
    previous = checkpoint(before)
    after = repo.observe(previous)
    return compare(previous, after, repo.path), after


def listed(changes: tuple[object, ...]) -> list[tuple[str, str]]:
    return [(c.path.decode(), c.change) for c in changes]  # type: ignore[attr-defined]


def test_no_checkpoint_is_a_baseline(repo: GitRepo) -> None:
    """M28: no checkpoint: C becomes the baseline, no event."""
    assert compare(None, repo.observe(), repo.path).kind == "baseline"


def test_unchanged_tree_gives_no_event(repo: GitRepo) -> None:
    """M35 (acceptance 2): nothing changed: unchanged, nothing to write."""
    repo.age()
    first = repo.observe()
    result, _ = step(repo, first)
    assert result.kind == "unchanged" and not result.changed


def test_external_addition(repo: GitRepo) -> None:
    """M31 (acceptance 2): an untracked file is a worktree addition."""
    before = repo.observe()
    repo.write("todo.md", "x\n")
    result, _ = step(repo, before)
    assert result.kind == "changed"
    assert listed(result.worktree) == [("todo.md", "added")]
    assert result.staged == () and result.commit == ()


def test_external_edit(repo: GitRepo) -> None:
    """M31 (acceptance 2): a tracked file edited on disk is a worktree modification."""
    before = repo.observe()
    repo.write("notes/plan.md", "plan v2\n")
    result, _ = step(repo, before)
    assert listed(result.worktree) == [("notes/plan.md", "modified")]
    assert result.staged == ()


def test_external_removal(repo: GitRepo) -> None:
    """M31 (acceptance 2)."""
    before = repo.observe()
    repo.remove("notes/plan.md")
    result, _ = step(repo, before)
    assert listed(result.worktree) == [("notes/plan.md", "deleted")]


def test_staged_change(repo: GitRepo) -> None:
    """M31 (acceptance 2): staging an already-observed edit lists it in ``staged`` only:
    the worktree content (W) did not move."""
    repo.write("notes/plan.md", "plan v2\n")
    before = repo.observe()
    repo.git("add", "notes/plan.md")
    result, _ = step(repo, before)
    assert listed(result.staged) == [("notes/plan.md", "modified")]
    assert result.worktree == ()


def test_commit_of_existing_content_lists_only_commit(repo: GitRepo) -> None:
    """M31 (acceptance 2): committing already-observed content lists only ``commit``."""
    repo.write("notes/plan.md", "plan v2\n")
    before = repo.observe()
    old = repo.head()
    new = repo.commit("edit")
    result, _ = step(repo, before)
    assert result.head_moved and not result.branch_moved and not result.history_rewritten
    assert listed(result.commit) == [("notes/plan.md", "modified")]
    assert result.staged == () and result.worktree == ()
    assert (result.old_head and result.old_head.head, result.new_head.head) == (old, new)


def test_reset_rewrites_history(repo: GitRepo) -> None:
    """M29, M30 (acceptance 2): a reset moves the head backwards: history rewritten."""
    repo.write("notes/plan.md", "plan v2\n")
    repo.commit("edit")
    before = repo.observe()
    repo.git("reset", "-q", "--hard", "HEAD~1")
    result, _ = step(repo, before)
    assert result.head_moved and result.history_rewritten
    assert listed(result.commit) == [("notes/plan.md", "modified")]
    assert result.worktree == () and result.staged == ()


def test_amend_rewrites_history(repo: GitRepo) -> None:
    """M29, M30 (acceptance 2)."""
    before = repo.observe()
    repo.write("extra.md", "x\n")
    repo.git("add", "extra.md")
    repo.git("commit", "-q", "--amend", "-m", "start, amended")
    result, _ = step(repo, before)
    assert result.head_moved and result.history_rewritten
    assert listed(result.commit) == [("extra.md", "added")]


def test_branch_switch_on_clean_tree_lists_the_head_trees_diff(repo: GitRepo) -> None:
    """M29, M31: a branch move reports both branches and lists, in ``commit``, exactly the
    paths that differ between the two head trees; staged and worktree stay empty."""
    repo.git("checkout", "-q", "-b", "other")
    repo.write("notes/plan.md", "other plan\n")
    repo.commit("other")
    repo.git("checkout", "-q", "main")
    before = repo.observe()
    repo.git("checkout", "-q", "other")
    result, _ = step(repo, before)
    assert result.branch_moved and not result.head_moved
    assert (result.old_head and result.old_head.branch, result.new_head.branch) == ("main", "other")
    assert listed(result.commit) == [("notes/plan.md", "modified")]
    assert result.staged == () and result.worktree == () and not result.history_rewritten


def test_branch_move_lists_dirty_paths_against_each_head(repo: GitRepo) -> None:
    """M29/M31: a dirty file carried across a branch switch is compared per side."""
    repo.git("checkout", "-q", "-b", "other")
    repo.git("checkout", "-q", "main")
    repo.write("notes/plan.md", "dirty\n")
    before = repo.observe()
    repo.git("checkout", "-q", "other")
    result, _ = step(repo, before)
    assert result.branch_moved and result.worktree == () and result.staged == ()


def test_second_edit_of_a_dirty_file_is_detected(repo: GitRepo) -> None:
    """M33 (acceptance 3): editing an already-dirty file again is a change."""
    repo.write("notes/plan.md", "first edit\n")
    before = repo.observe()
    repo.write("notes/plan.md", "second edit\n")
    result, _ = step(repo, before)
    assert listed(result.worktree) == [("notes/plan.md", "modified")]


def test_second_edit_with_same_size_and_kept_mtime_is_detected(repo: GitRepo) -> None:
    """M19, M33 (acceptance 3): same size, mtime forced back: the ctime still moves."""
    repo.write("notes/plan.md", "edit-1\n")
    repo.age()
    before = repo.observe()
    path = repo.abspath("notes/plan.md")
    st = os.stat(path)
    repo.write("notes/plan.md", "edit-2\n")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    result, _ = step(repo, before)
    assert listed(result.worktree) == [("notes/plan.md", "modified")]


def test_reverted_edit_is_no_change_and_several_edits_are_one(repo: GitRepo) -> None:
    """M33."""
    before = repo.observe()
    repo.write("notes/plan.md", "a\n")
    repo.write("notes/plan.md", "plan\n")
    result, _ = step(repo, before)
    assert not result.changed
    for text in ("1\n", "2\n", "3\n"):
        repo.write("notes/plan.md", text)
    result, _ = step(repo, before)
    assert listed(result.worktree) == [("notes/plan.md", "modified")]


def test_stat_only_change_refreshes_without_event(repo: GitRepo) -> None:
    """M19: a stat-only change (touch a dirty file) refreshes the checkpoint, no event."""
    repo.write("notes/plan.md", "dirty\n")
    repo.age(20)
    before = repo.observe()
    repo.age(10)
    result, after = step(repo, before)
    assert result.kind == "refresh" and not result.changed
    assert after.paths[b"notes/plan.md"].stat != before.paths[b"notes/plan.md"].stat


def test_unreadable_checkpoint_reobserves(repo: GitRepo) -> None:
    """M28: an unreadable checkpoint gives a ``reobserved`` event listing C's dirty paths
    from their flags, staged and worktree."""
    repo.write("notes/plan.md", "dirty\n")
    repo.write("new.md", "n\n")
    repo.git("add", "new.md")
    current = repo.observe()
    result = compare(Unreadable("invalid checkpoint"), current, repo.path)
    assert result.kind == "changed" and result.category == "reobserved"
    assert listed(result.staged) == [("new.md", "added")]
    assert listed(result.worktree) == [("notes/plan.md", "modified")]


def test_reinitialised_repository_is_replaced(repo: GitRepo) -> None:
    """M28: another git directory at the same root: ``repository_replaced``, no lists."""
    before = repo.observe()
    (repo.root / ".git").rename(repo.root.parent / "old-git")  # keeps its inode in use
    repo.git("init", "-q", "-b", "main")
    repo.commit("fresh")
    result, after = step(repo, before)
    assert result.kind == "changed" and result.category == "repository_replaced"
    assert result.old_identity == before.identity
    assert after.identity.git_dir != before.identity.git_dir
    assert result.commit == result.staged == result.worktree == ()


def test_root_commit_gone_is_replaced(repo: GitRepo) -> None:
    """M15, M28: the root commit no longer in the object database: replaced."""
    before = repo.observe()
    assert before.identity.root_commit == repo.head()
    repo.git("checkout", "-q", "--orphan", "fresh")
    repo.commit("unrelated")
    repo.git("branch", "-D", "main")
    repo.git("reflog", "expire", "--expire=now", "--all")
    repo.git("gc", "-q", "--prune=now")
    result, after = step(repo, before)
    assert result.category == "repository_replaced"
    assert after.identity.root_commit == repo.head()


def test_old_head_unreadable(repo: GitRepo) -> None:
    """M30: the old head commit cannot be read: empty ``commit``, history rewritten."""
    repo.write("notes/plan.md", "v2\n")
    repo.commit("edit")
    before = repo.observe()
    repo.git("reset", "-q", "--hard", "HEAD~1")
    repo.git("reflog", "expire", "--expire=now", "--all")
    repo.git("gc", "-q", "--prune=now")
    result, _ = step(repo, before)
    assert result.head_moved and result.history_rewritten and result.old_head_unreadable
    assert result.commit == ()


def test_change_kinds(repo: GitRepo) -> None:
    """M32: added, deleted, type_changed (file → symlink), modified (mode only)."""
    repo.write("script.sh", "echo\n")
    repo.commit("script")
    before = repo.observe()
    os.chmod(repo.abspath("script.sh"), 0o755)
    repo.remove("SOUL.md")
    os.symlink("notes/plan.md", repo.abspath("SOUL.md"))
    repo.write("new.md", "n\n")
    result, _ = step(repo, before)
    assert listed(result.worktree) == [
        ("SOUL.md", "type_changed"),
        ("new.md", "added"),
        ("script.sh", "modified"),
    ]


def test_exact_rename_in_worktree_and_staged(repo: GitRepo) -> None:
    """M32: a deleted and an added entry with the same id are one ``renamed`` entry."""
    before = repo.observe()
    os.rename(repo.abspath("notes/plan.md"), repo.abspath("notes/plan-2.md"))
    result, _ = step(repo, before)
    [entry] = result.worktree
    assert (entry.change, entry.path, entry.from_path) == (
        "renamed",
        b"notes/plan-2.md",
        b"notes/plan.md",
    )
    repo.git("add", "-A")
    result, _ = step(repo, before)
    [entry] = result.staged
    assert (entry.change, entry.path, entry.from_path) == (
        "renamed",
        b"notes/plan-2.md",
        b"notes/plan.md",
    )


def test_commit_rename_by_similarity(repo: GitRepo) -> None:
    """M32: in ``commit``, renames come from libgit2's similarity detection."""
    repo.write("long.md", "".join(f"line {i}\n" for i in range(40)))
    repo.commit("long")
    before = repo.observe()
    repo.git("mv", "long.md", "renamed.md")
    repo.write("renamed.md", "".join(f"line {i}\n" for i in range(41)))
    repo.commit("move")
    result, _ = step(repo, before)
    [entry] = result.commit
    assert (entry.change, entry.path, entry.from_path) == ("renamed", b"renamed.md", b"long.md")


def test_conflicted_path_is_listed_once_in_staged(repo: GitRepo) -> None:
    """M31, M32: a merge conflict: ``conflicted`` in staged, nothing in worktree."""
    repo.diverge("notes/plan.md")
    before = repo.observe()
    repo.git("merge", "-q", "other", check=False)
    result, after = step(repo, before)
    assert listed(result.staged) == [("notes/plan.md", "conflicted")]
    assert result.worktree == ()
    assert {e.stage for e in after.paths[b"notes/plan.md"].index} == {1, 2, 3}


def test_detached_and_unborn_are_ordinary_states(tmp_path: Path) -> None:
    """M16, M29: unborn → first commit is a head move from the empty tree; detaching is a
    branch move; moving while detached is a head move."""
    repo = GitRepo.init(tmp_path / "m")
    before = repo.observe()
    assert before.head.unborn and before.head.head is None and before.head.branch == "main"
    repo.write("a.md", "a\n")
    first = repo.commit("first")
    result, before = step(repo, before)
    assert result.head_moved and not result.history_rewritten
    assert listed(result.commit) == [("a.md", "added")]
    repo.write("a.md", "b\n")
    repo.commit("second")
    repo.git("checkout", "-q", "--detach", first)
    result, before = step(repo, checkpoint(before))
    assert result.branch_moved and result.new_head.detached and result.new_head.branch is None
    repo.git("checkout", "-q", "--detach", "main")
    result, _ = step(repo, before)
    assert result.head_moved and not result.branch_moved
    assert listed(result.commit) == [("a.md", "modified")]


def test_overflow_change(repo: GitRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    """M20, M34: beyond the cap only listing changes count; a path past the last
    fingerprinted path of an overflowing map is not a change by itself."""
    monkeypatch.setattr("tidings.jobs.memory.observation.MAX_PATHS", 3)
    for name in ("a", "b", "c", "d", "e"):
        repo.write(f"u/{name}.md", name)
    before = repo.observe()
    assert before.overflow_count == 2
    listing = b"".join(b"u/%s.md\x00128\n" % n for n in (b"a", b"b", b"c", b"d", b"e"))
    assert before.overflow_digest == hashlib.sha256(listing).hexdigest()
    assert sorted(before.paths) == [b"u/a.md", b"u/b.md", b"u/c.md"]
    repo.write("u/f.md", "f")
    result, _ = step(repo, before)
    assert result.overflow == (2, 3)
    assert result.worktree == ()


def test_file_and_directory_swaps(repo: GitRepo) -> None:
    """M32: a file replaced by a directory is ``type_changed`` (the directory's files are
    added); a directory replaced by a file: the file is added, the old files deleted."""
    before = repo.observe()
    repo.remove("SOUL.md")
    repo.write("SOUL.md/inner.md", "i")
    repo.remove("notes/plan.md")
    os.rmdir(repo.abspath("notes"))
    repo.write("notes", "now a file")
    result, _ = step(repo, before)
    assert listed(result.worktree) == [
        ("SOUL.md", "type_changed"),
        ("SOUL.md/inner.md", "added"),
        ("notes", "added"),
        ("notes/plan.md", "deleted"),
    ]
