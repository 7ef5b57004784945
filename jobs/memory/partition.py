"""The worktree side of the listing on several threads (memory-inbox.md M24, M25).

The work tree is split by top-level name: every name in HEAD's tree, in the
staged side and on disk (``.git`` aside). Each thread opens its own ``Repository``
and its own copy of the index (:mod:`privateindex`, checked to stand for the same
index bytes as the attempt's) and diffs only its names, as literal paths (pathspec
matching disabled, so a directory named ``[x]`` or ``*`` is only itself). The parts
are disjoint and together cover every path a single pass would list.

A name that appears on disk after the names were read is not in this listing; like
any path that changes after it was listed, the next observation reports it (M23).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

import pygit2

from tidings.jobs.memory import git_status, privateindex
from tidings.jobs.memory.fingerprint import Unstable
from tidings.jobs.memory.paths import excluded
from tidings.jobs.memory.repository import opened


def top_level_names(root: str, tree: pygit2.Tree, staged: Iterable[bytes]) -> list[bytes]:
    """Every first path component the listing could hold, sorted."""
    names = {os.fsencode(entry.name or "") for entry in tree}
    names.update(raw.split(b"/", 1)[0] for raw in staged)
    with os.scandir(os.fsencode(root)) as entries:
        names.update(entry.name for entry in entries)
    return sorted(name for name in names if name and not excluded(name))


def groups(names: list[bytes], threads: int) -> list[list[bytes]]:
    """``names`` dealt round robin into at most ``threads`` non-empty groups."""
    dealt = [names[start::threads] for start in range(threads)]
    return [group for group in dealt if group]


def read_worktree(
    repo_path: str, index_file: str, data: bytes, names: list[bytes], threads: int
) -> git_status.WorktreeSide:
    """The single pass's worktree side, read by ``threads`` threads."""
    parts = groups(names, threads)
    if not parts:
        return {}
    with ThreadPoolExecutor(len(parts), thread_name_prefix="memory-listing") as pool:
        found = list(pool.map(lambda part: _part(repo_path, index_file, data, part), parts))
    merged: git_status.WorktreeSide = {}
    for part in found:
        merged.update(part)
    return merged


def _part(
    repo_path: str, index_file: str, data: bytes, names: list[bytes]
) -> git_status.WorktreeSide:
    with opened(repo_path) as repo:
        index, seen = privateindex.load(repo, index_file)
        if seen != data:
            raise Unstable("the index changed during the observation")
        return git_status.read_worktree(index, names)
