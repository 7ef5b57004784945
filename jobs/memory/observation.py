"""One observation of a memory repository (memory-inbox.md M12-M24).

An attempt reads HEAD, the index file's identity and the status listing once,
fingerprints the first MAX_PATHS listed paths, then reads HEAD and the index
file's identity again: a difference, or an unstable file read, repeats the whole
attempt (M23). The listing is not read a second time: a path that changes after
it was listed keeps, in this snapshot, an identity it really had during the
attempt, and the next observation compares against exactly that, so the change
is reported then. The listing's worktree side is diffed against a private copy of
the index (:mod:`privateindex`), whose stat data tidings refreshes after files were
touched with equal content. Nothing here writes to the repository or runs git (M24).
"""

from __future__ import annotations

import hashlib
import logging
import os
import time

import pygit2

from tidings.jobs import log
from tidings.jobs.memory import git_status, partition, privateindex, watchdog
from tidings.jobs.memory.fingerprint import RACY_WINDOW_NS, Fingerprinter, Unstable
from tidings.jobs.memory.head import head_state, identity
from tidings.jobs.memory.model import MAX_PATHS, ObserveResult, PathRecord, Snapshot
from tidings.jobs.memory.repository import RepositoryUnavailable, opened
from tidings.store.jsonfmt import utc_stamp_ms

#: M23: attempts before an observation is reported ``unstable``.
OBSERVE_ATTEMPTS = 3

#: M55: unavailable reasons that are logged (a hostile or broken repository, reported).
REPORTED = frozenset({"unreadable", "index_too_large"})

IndexStat = tuple[int, int, int] | None


def observe_worktree(
    repo_path: str | os.PathLike[str] | None,
    previous: Snapshot | None,
    *,
    now: float,
    threads: int = 1,
) -> ObserveResult:
    """Observe ``repo_path``. Never raises for repository oddities (M12).

    Answers within :data:`watchdog.TIME_LIMIT_SECONDS`, and at once ``unreadable``
    when a FIFO holds libgit2 (M55). ``previous`` (the checkpoint's snapshot) only feeds
    the stat cache (M19);
    ``now`` is the injectable clock's time for ``observed_at``; ``threads`` > 1 reads
    the worktree side of the listing on that many threads (M24, :mod:`partition`).
    """
    if repo_path is None:
        return ObserveResult("unavailable", reason="not_configured")
    path = os.fspath(repo_path)
    return watchdog.watched(path, lambda: _observe(path, previous, now, threads))


def _observe(path: str, previous: Snapshot | None, now: float, threads: int) -> ObserveResult:
    try:
        for attempt in range(1, OBSERVE_ATTEMPTS + 1):
            try:
                return ObserveResult("ok", _attempt(path, previous, now, threads))
            except Unstable as exc:
                log.event(
                    "memory.observe_unstable",
                    logging.INFO,
                    repo=path,
                    attempt=attempt,
                    detail=str(exc),
                )
    except RepositoryUnavailable as exc:
        if exc.reason in REPORTED:
            log.event("memory.observe_unavailable", repo=path, reason=exc.reason, detail=str(exc))
        return ObserveResult("unavailable", reason=exc.reason)
    except Exception as exc:  # M12: a repository oddity must never fail the caller
        log.event("memory.observe_failed", repo=path, error=type(exc).__name__, detail=str(exc))
        return ObserveResult("unavailable", reason="unreadable")
    return ObserveResult("unstable", reason="unstable")


def _attempt(repo_path: str, previous: Snapshot | None, now: float, threads: int) -> Snapshot:
    started_ns = time.time_ns()  # M19: the host's real clock, never the injectable one
    with opened(repo_path) as repo:
        index_path = os.path.join(repo.path, "index")
        index_before = _index_stat(index_path)
        head = head_state(repo)
        index, index_data = privateindex.load(repo, index_path)
        staged = git_status.read_staged(repo, index, head, index_path)
        if threads > 1:
            names = partition.top_level_names(
                repo.workdir, git_status.head_tree(repo, head.head), staged
            )
            worktree = partition.read_worktree(repo_path, index_path, index_data, names, threads)
        else:
            worktree = git_status.read_worktree(index)
        listed = git_status.merge(staged, worktree, index)
        ident = identity(repo, head, previous.identity.root_commit if previous else None)
        ordered = sorted(listed)
        records = _fingerprint(ident.root, ordered[:MAX_PATHS], listed, previous)
        if head_state(repo) != head or _index_stat(index_path) != index_before:
            raise Unstable("HEAD or index changed during the observation")
        _refresh(index, index_path, index_data, ident.root, set(worktree), started_ns)
    overflow = max(0, len(ordered) - MAX_PATHS)
    return Snapshot(
        identity=ident,
        head=head,
        paths=records,
        overflow_count=overflow,
        overflow_digest=listing_digest(ordered, listed) if overflow else None,
        observed_at=utc_stamp_ms(now),
        started_ns=started_ns,
    )


def _fingerprint(
    root: str, paths: list[bytes], listed: dict[bytes, git_status.Listed], previous: Snapshot | None
) -> dict[bytes, PathRecord]:
    cached = previous.paths if previous else {}
    cache_before = previous.started_ns - RACY_WINDOW_NS if previous else 0
    records: dict[bytes, PathRecord] = {}
    with Fingerprinter(root, cached, cache_before) as reader:
        for raw in paths:
            item = listed[raw]
            index_mode = item.index[0].mode if item.index else 0
            worktree, stat = reader.identify(raw, item.flags, index_mode)
            records[raw] = PathRecord(item.flags, item.head, item.index, worktree, stat)
    return records


def _refresh(
    index: pygit2.Index,
    index_path: str,
    data: bytes,
    root: str,
    listed: set[bytes],
    started_ns: int,
) -> None:
    """Refresh the private index copy's stat data (a cache: a failure costs only time)."""
    try:
        refreshed = privateindex.refresh(index, index_path, data, root, listed, started_ns)
    except (OSError, pygit2.GitError, ValueError) as exc:
        log.event("memory.index_refresh_failed", repo=root, error=type(exc).__name__)
        return
    if refreshed:
        log.event("memory.index_refreshed", logging.INFO, repo=root, entries=refreshed)


def listing_digest(ordered: list[bytes], listed: dict[bytes, git_status.Listed]) -> str:
    """M20: SHA-256 over the full listing: raw path, NUL, flags in decimal, LF."""
    digest = hashlib.sha256()
    for raw in ordered:
        digest.update(b"%s\0%d\n" % (raw, listed[raw].flags))
    return digest.hexdigest()


def _index_stat(path: str) -> IndexStat:
    try:
        st = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)
