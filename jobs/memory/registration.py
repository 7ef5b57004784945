"""Is a memory repository usable? Asked when an agent is registered with one (interfaces.md,
"Never silent, never wrong"), so that a typo in the path is refused at once instead of
turning the memory inbox off with every later turn reading ``unavailable``."""

from __future__ import annotations

import os

from tidings.jobs.memory.model import ObserveResult
from tidings.jobs.memory.repository import RepositoryUnavailable, opened
from tidings.jobs.memory.watchdog import watched

#: What each M13 reason means to the person who typed the path.
WHY = {
    "missing": "does not exist",
    "not_a_repository": "is not a Git repository with a working tree",
}


def _looks_bare(path: str) -> bool:
    return all(os.path.lexists(os.path.join(path, name)) for name in ("HEAD", "objects", "refs"))


def _detail(path: str, reason: str, said: str) -> str:
    """What the person can do about ``path``."""
    if reason != "not_a_repository":
        return ""
    if not os.path.isdir(path):
        return "a file, not a folder"
    if _looks_bare(path) or said.startswith("bare"):
        return "a bare repository: give a clone with a working tree"
    if said.startswith("not the root"):
        return "a folder inside a work tree: give the work tree's root"
    return "a plain folder: run `git init` in it, or give the work tree's root"


#: Reasons that refuse a registration: the path is no work tree at all. A repository
#: whose metadata is hostile or slow (``unreadable``, ``index_too_large``, ``timeout``)
#: is one: it registers, and each observation reports it (M13, M55).
REFUSED = frozenset({"missing", "not_a_repository"})


def repository_problem(path: str) -> str | None:
    """A one-line reason why ``path`` is no memory repository (a missing path, a plain
    folder, a bare repository, a folder inside a work tree), or ``None`` if it is one.

    Opening it is an observation's first step, so it runs under the same M55 watchdog: a
    metadata file swapped for a FIFO after the checks cannot hold the registering thread.
    A repository that is hostile or slow registers (fail open); its observations say so.
    """
    found: list[str | None] = []

    def probe() -> ObserveResult:
        found.append(_problem(path))
        return ObserveResult("ok")

    watched(path, probe)
    return found[0] if found else None


def _problem(path: str) -> str | None:
    try:
        with opened(path):
            return None
    except RepositoryUnavailable as exc:
        if exc.reason not in REFUSED:
            return None
        detail = _detail(path, exc.reason, str(exc).partition(": ")[2])
        return f"memory repository {path} {WHY.get(exc.reason, exc.reason)}" + (
            f" ({detail})" if detail else ""
        )
