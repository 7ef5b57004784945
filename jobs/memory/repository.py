"""Opening the memory repository read-only, one fresh handle per attempt (M13, M24)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import pygit2
from pygit2.enums import RepositoryOpenFlag

from tidings.jobs.memory.metadata import RepositoryUnavailable, check

__all__ = ["RepositoryUnavailable", "opened"]


@contextmanager
def opened(repo_path: str) -> Iterator[pygit2.Repository]:
    """A fresh :class:`pygit2.Repository` for the work tree at ``repo_path``.

    The path must be the root of a non-bare work tree; no parent directory is
    searched. Its metadata files are checked first (M55: nothing libgit2 opens may be a
    FIFO, socket, device or symlink). The handle is freed on exit (no pygit2 object
    outlives it).
    """
    if not os.path.lexists(repo_path):
        raise RepositoryUnavailable("missing", repo_path)
    if not os.path.isdir(repo_path):
        raise RepositoryUnavailable("not_a_repository", repo_path)
    check(repo_path)
    try:
        repo = pygit2.Repository(repo_path, RepositoryOpenFlag.NO_SEARCH)
    except (pygit2.GitError, OSError, ValueError) as exc:
        reason = (
            "unreadable"
            if os.path.lexists(os.path.join(repo_path, ".git"))
            else ("not_a_repository")
        )
        raise RepositoryUnavailable(reason, str(exc)) from None
    try:
        workdir = repo.workdir
        if repo.is_bare or workdir is None:
            raise RepositoryUnavailable("not_a_repository", "bare repository")
        if os.path.realpath(workdir) != os.path.realpath(repo_path):
            raise RepositoryUnavailable("not_a_repository", "not the root of the work tree")
        yield repo
    finally:
        repo.free()
