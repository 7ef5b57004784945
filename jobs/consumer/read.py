"""Fingerprints and observations (channels.md C19, C20, C22).

A fingerprint is the sorted list of ``[filename, byte_size, sha256]`` over the
readable allowed channel files plus the derived ``daemon.json`` entry; a hash is
reused while the file's ``(dev, ino, size, mtime_ns, ctime_ns)`` is unchanged.
Payloads are read only in :mod:`tidings.jobs.consumer._bare_read`, whose coherent read
is reachable from outside this package only through the composed read
:func:`tidings.jobs.consumer.coherent.observe` (D9, then C22).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from tidings.jobs import log
from tidings.jobs.channels import (
    DAEMON,
    NON_CHANNEL_FILES,
    NOTIFICATION_DIR,
    Allowlist,
    FpEntry,
    parse_payload,
    read_daemon,
)
from tidings.store import refusals
from tidings.store.files import MAX_READ_BYTES, DirView, Entry, directory, stat_key
from tidings.store.jsonfmt import sha256_hex
from tidings.store.listing import Listing, derived
from tidings.store.models import AgentRecord

#: Cached content hashes kept per process.
HASH_CACHE_SIZE = 65_536

__all__ = [
    "NOTIFICATION_DIR",
    "FpEntry",
    "Observation",
    "chosen",
    "failed_read",
    "fingerprint",
    "parse_payload",
    "read_entry",
]


@dataclass(frozen=True)
class Observation:
    """One instant of an agent's visible channels (C22)."""

    stable: bool
    raw_fp: list[FpEntry]
    masked_fp: list[FpEntry]
    payloads: dict[str, dict[str, object]]
    delayed: str | None = None
    error: str | None = None
    #: Why a read that could not start failed (a reason of store/reasons.py).
    reason: str | None = None
    attempts: int = 1
    extras: dict[str, object] = field(default_factory=dict)


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


def _channel_names(listing: Listing, hook_channels: frozenset[str]) -> tuple[str, ...]:
    """The allowed channel file names of a listing, sorted (memoised on the listing: a
    directory flooded with rogue names costs nothing while it is unchanged, C50)."""

    def names() -> tuple[str, ...]:
        allow = Allowlist(hook_channels)
        return tuple(
            sorted(
                name
                for name in listing.names
                if name in listing.regular
                and is_candidate(name)
                and name[:-5] != DAEMON
                and allow.allows(name[:-5])
            )
        )

    return derived(listing, (_channel_names, hook_channels), names)


def chosen(view: DirView, allow: Allowlist, exclude: str | None) -> list[Entry]:
    """Allowed, regular channel files of at most 1 MiB, sorted by name (C19)."""
    entries = []
    for name in _channel_names(view.listing(), allow.hook_channels):
        entry = view.entry(name) if name[:-5] != exclude else None
        if entry is not None and entry.is_regular and entry.stat.st_size <= MAX_READ_BYTES:
            entries.append(entry)
    return entries


def _known_sha(root: Path, name: str, st: os.stat_result) -> str | None:
    return _hashes.get((str(root), name), stat_key(st))


def read_entry(root: Path, view: DirView | None, entry: Entry) -> tuple[FpEntry, bytes] | None:
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
        for entry in chosen(view, allow, exclude) if view is not None else []:
            sha = _known_sha(root, entry.name, entry.stat)
            read = None if sha is not None else read_entry(root, view, entry)
            if sha is not None:
                fp.append([entry.name, entry.stat.st_size, sha])
            elif read is not None:
                fp.append(read[0])
    view_d = read_daemon(root)
    if view_d.fp_entry is not None:
        fp.append(list(view_d.fp_entry))
    return sorted(fp, key=lambda item: str(item[0]))


def failed_read(agent: AgentRecord, exc: Exception) -> Observation:
    """The observation of a read that could not start (fail open, reported)."""
    reason = refusals.reason_of(exc)
    log.event(
        "notification_read_failed", agent_id=agent.agent_id, error=type(exc).__name__, reason=reason
    )
    return Observation(False, [], [], {}, error=type(exc).__name__, reason=reason)
