"""Fingerprints, snapshots and the coherent read (channels.md C19-C22).

A fingerprint is the sorted list of ``[filename, byte_size, sha256]`` over the
readable allowed channel files plus the derived ``daemon.json`` entry; a hash is
reused while the file's ``(dev, ino, size, mtime_ns, ctime_ns)`` is unchanged.
A coherent read takes fingerprint → snapshot → fingerprint and calls the
observation stable when the bookends (and the bytes it parsed) agree.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from redis.exceptions import RedisError

from tidings.jobs import log
from tidings.jobs.channels.allowlist import Allowlist, allowlist
from tidings.jobs.channels.files import NOTIFICATION_DIR, FpEntry, parse_payload
from tidings.jobs.channels.names import DAEMON, NON_CHANNEL_FILES
from tidings.jobs.daemon import view as daemon
from tidings.jobs.delay import state as delay_state
from tidings.jobs.runtime import Runtime
from tidings.jobs.view import wake_mask
from tidings.store.errors import TidingsError
from tidings.store.files import MAX_READ_BYTES, DirView, Entry, directory, stat_key
from tidings.store.jsonfmt import sha256_hex
from tidings.store.listing import Listing
from tidings.store.models import AgentRecord

#: C22: attempts before an observation is marked unstable.
COHERENT_ATTEMPTS = 3
#: Cached content hashes kept per process.
HASH_CACHE_SIZE = 65_536
#: Listings whose allowed channel names are remembered (one per agent directory).
LISTING_MEMO_SIZE = 16_384

__all__ = [
    "NOTIFICATION_DIR", "FpEntry", "Observation", "coherent_read", "failed_read", "fingerprint",
    "parse_payload", "snapshot",
]


@dataclass(frozen=True)
class Observation:
    """One instant of an agent's visible channels (C22)."""

    stable: bool
    raw_fp: list[FpEntry]
    masked_fp: list[FpEntry]
    payloads: dict[str, Any]
    delayed: str | None = None
    error: str | None = None
    attempts: int = 1
    extras: dict[str, Any] = field(default_factory=dict)


class _HashCache:
    """Content hashes by ``(root, filename)``, valid while the stat identity holds.

    Lookups take no lock (a dict read is atomic); writers evict the oldest entries
    once the cache is full.
    """

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: dict[tuple[str, str], tuple[tuple[int, ...], str]] = {}
        self._lock = threading.Lock()

    def get(self, path: tuple[str, str], key: tuple[int, ...]) -> str | None:
        hit = self._items.get(path)
        return hit[1] if hit is not None and hit[0] == key else None

    def put(self, path: tuple[str, str], key: tuple[int, ...], sha: str) -> None:
        with self._lock:
            self._items.pop(path, None)
            self._items[path] = (key, sha)
            while len(self._items) > self._size:
                del self._items[next(iter(self._items))]


_hashes = _HashCache(HASH_CACHE_SIZE)


def is_candidate(name: str) -> bool:
    """A ``.notification`` entry that could be a channel file by its name alone."""
    return name.endswith(".json") and name not in NON_CHANNEL_FILES and not name.startswith(".")


@lru_cache(maxsize=LISTING_MEMO_SIZE)
def _channel_names(listing: Listing, hook_channels: frozenset[str]) -> tuple[str, ...]:
    """The allowed channel file names of a listing, sorted (memoised per listing: a
    directory flooded with rogue names costs nothing while it is unchanged, C50)."""
    allow = Allowlist(hook_channels)
    return tuple(sorted(
        name for name in listing.names
        if name in listing.regular and is_candidate(name) and name[:-5] != DAEMON
        and allow.allows(name[:-5])
    ))


def _chosen(view: DirView, allow: Allowlist, exclude: str | None) -> list[Entry]:
    """Allowed, regular channel files of at most 1 MiB, sorted by name (C19)."""
    chosen = []
    for name in _channel_names(view.listing(), allow.hook_channels):
        entry = view.entry(name) if name[:-5] != exclude else None
        if entry is not None and entry.is_regular and entry.stat.st_size <= MAX_READ_BYTES:
            chosen.append(entry)
    return chosen


def _known_sha(root: Path, name: str, st: os.stat_result) -> str | None:
    return _hashes.get((str(root), name), stat_key(st))


def _read_entry(root: Path, view: DirView | None, entry: Entry) -> tuple[FpEntry, bytes] | None:
    """One read: ``[name, size, sha]`` of exactly the bytes returned (C20)."""
    if view is None:
        return None
    name = entry.name
    outcome = view.read(entry)
    if not outcome.ok or outcome.stat is None:
        return None
    sha = _known_sha(root, name, outcome.stat)
    if sha is None:
        sha = sha256_hex(outcome.data)
        _hashes.put((str(root), name), stat_key(outcome.stat), sha)
    return [name, len(outcome.data), sha], outcome.data


def fingerprint(root: Path, allow: Allowlist, exclude: str | None = None) -> list[FpEntry]:
    """C20 over the allowed channel files (minus ``exclude``) and the daemon aggregate."""
    fp: list[FpEntry] = []
    with directory(root, NOTIFICATION_DIR) as view:
        for entry in _chosen(view, allow, exclude) if view is not None else []:
            sha = _known_sha(root, entry.name, entry.stat)
            read = None if sha is not None else _read_entry(root, view, entry)
            if sha is not None:
                fp.append([entry.name, entry.stat.st_size, sha])
            elif read is not None:
                fp.append(read[0])
    view_d = daemon.read_daemon(root)
    if view_d.fp_entry is not None:
        fp.append(list(view_d.fp_entry))
    return sorted(fp, key=lambda item: str(item[0]))


def _snapshot(
    root: Path, allow: Allowlist, exclude: str | None
) -> tuple[dict[str, Any], list[FpEntry]]:
    payloads: dict[str, Any] = {}
    seen: list[FpEntry] = []
    with directory(root, NOTIFICATION_DIR) as view:
        for entry in _chosen(view, allow, exclude) if view is not None else []:
            read = _read_entry(root, view, entry)
            if read is None:
                continue
            seen.append(read[0])
            payload = parse_payload(read[1])
            if payload is not None:
                payloads[entry.name[:-5]] = payload
    daemon_view = daemon.read_daemon(root)
    if daemon_view.fp_entry is not None:
        seen.append(list(daemon_view.fp_entry))
    if daemon_view.payload is not None:
        payloads[DAEMON] = daemon_view.payload
    ordered = {name: payloads[name] for name in sorted(payloads)}
    return ordered, sorted(seen, key=lambda item: str(item[0]))


def snapshot(root: Path, allow: Allowlist, exclude: str | None = None) -> dict[str, Any]:
    """C21: ``{channel: payload}`` of allowed, readable, parseable files (fresh objects)."""
    return _snapshot(root, allow, exclude)[0]


def failed_read(agent: AgentRecord, exc: Exception) -> Observation:
    """The observation of a read that could not start (fail open, reported)."""
    log.event("notification_read_failed", agent_id=agent.agent_id, error=type(exc).__name__)
    return Observation(False, [], [], {}, error=type(exc).__name__)


def coherent_read(rt: Runtime, agent: AgentRecord, allow: Allowlist | None = None) -> Observation:
    """C22: a stable observation of the consumer's view, or an unstable last attempt.

    D9's reconcile comes first, but it writes, so the caller runs it
    (:func:`tidings.jobs.view.coherent.observe`); this module only reads, apart from
    refreshing the agent's stored hook channels (C41) unless ``allow`` is given.
    """
    try:
        allow = allow if allow is not None else allowlist(rt, agent)
        target = delay_state.live_target(rt, agent, allow)
    except (RedisError, TidingsError, OSError) as exc:
        return failed_read(agent, exc)
    exclude = target if target != DAEMON else None
    root = agent.root
    payloads: dict[str, Any] = {}
    raw: list[FpEntry] = []
    stable = False
    attempt = 0
    for attempt in range(1, COHERENT_ATTEMPTS + 1):  # noqa: B007 - reported below
        before = fingerprint(root, allow, exclude)
        payloads, seen = _snapshot(root, allow, exclude)
        after = fingerprint(root, allow, exclude)
        raw = after
        if before == seen == after:
            stable = True
            break
    masked = wake_mask.masked_fingerprint(root, raw, target)
    return Observation(stable, raw, masked, payloads, delayed=target, attempts=attempt)

