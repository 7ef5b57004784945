"""HEAD state and repository identity (memory-inbox.md M15, M16)."""

from __future__ import annotations

import os

import pygit2
from pygit2.enums import ReferenceType, SortMode

from tidings.jobs.memory.model import HeadState, Identity

_BRANCH_PREFIX = "refs/heads/"


def head_state(repo: pygit2.Repository) -> HeadState:
    """M16: branch name or None, detached/unborn flags and the commit id HEAD resolves to."""
    ref = repo.lookup_reference("HEAD")
    if ref.type == ReferenceType.DIRECT:
        return HeadState(None, True, False, str(_peel_commit(repo, ref.target)))
    target = str(ref.target)
    branch = target.removeprefix(_BRANCH_PREFIX)
    try:
        resolved = repo.lookup_reference(target).resolve()
    except (KeyError, pygit2.GitError):
        return HeadState(branch, False, True, None)
    return HeadState(branch, False, False, str(_peel_commit(repo, resolved.target)))


def _peel_commit(repo: pygit2.Repository, target: object) -> pygit2.Oid:
    if not isinstance(target, pygit2.Oid):
        raise pygit2.GitError(f"unexpected reference target {target!r}")
    return repo[target].peel(pygit2.Commit).id


def git_dir_id(repo: pygit2.Repository) -> str:
    st = os.stat(os.path.realpath(repo.path))
    return f"{st.st_dev}:{st.st_ino}"


def identity(repo: pygit2.Repository, head: HeadState, known_root: str | None) -> Identity:
    """M15: ``known_root`` (the checkpoint's root commit) is kept while it is still in the
    object database; otherwise the root is found by following first parents from HEAD."""
    root = os.path.realpath(repo.workdir)
    if known_root is not None and _exists(repo, known_root):
        return Identity(root, git_dir_id(repo), known_root)
    return Identity(root, git_dir_id(repo), root_commit(repo, head.head))


def root_commit(repo: pygit2.Repository, head: str | None) -> str | None:
    if head is None:
        return None
    walker = repo.walk(pygit2.Oid(hex=head), SortMode.NONE)
    walker.simplify_first_parent()
    last = None
    for commit in walker:
        last = commit.id
    return None if last is None else str(last)


def _exists(repo: pygit2.Repository, oid: str) -> bool:
    try:
        return repo.odb.exists(pygit2.Oid(hex=oid))
    except (ValueError, pygit2.GitError):
        return False
