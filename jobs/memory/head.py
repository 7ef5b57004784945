"""HEAD state and repository identity (memory-inbox.md M15, M16)."""

from __future__ import annotations

import os
import threading

import pygit2
from pygit2.enums import ReferenceType, SortMode

from tidings.jobs.memory.model import HeadState, Identity

_BRANCH_PREFIX = "refs/heads/"
#: Root commits remembered per (git directory, head commit), oldest dropped first.
KEPT_ROOTS = 256

_roots: dict[tuple[str, str], str] = {}
_roots_lock = threading.Lock()


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
    """The root of ``head``'s first-parent chain. A commit never changes, so the answer is
    kept per (git directory, head): a long history is walked once per process."""
    if head is None:
        return None
    key = (git_dir_id(repo), head)
    with _roots_lock:
        kept = _roots.get(key)
    if kept is not None:
        return kept
    walker = repo.walk(pygit2.Oid(hex=head), SortMode.NONE)
    walker.simplify_first_parent()
    last = None
    for commit in walker:
        last = str(commit.id)
    if last is not None:
        with _roots_lock:
            _roots[key] = last
            while len(_roots) > KEPT_ROOTS:
                del _roots[next(iter(_roots))]
    return last


def _exists(repo: pygit2.Repository, oid: str) -> bool:
    try:
        return repo.odb.exists(pygit2.Oid(hex=oid))
    except (ValueError, pygit2.GitError):
        return False
