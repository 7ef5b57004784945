"""Spill files: a lane's full copy under ``<workdir>/logs/`` (block-cap.md B8-B10, B19).

A name is taken by exclusive creation (B9, :func:`tidings.store.files.exclusive_create`)
and reused only when the file there holds the same canonical text; otherwise
the next suffix ``-1`` … ``-100`` is tried. tidings never overwrites or deletes
a spill. A verified file is remembered by its stat identity, so re-rendering an
unchanged oversized lane costs one ``lstat`` instead of a read.
"""

from __future__ import annotations

import os
import stat
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from tidings.jobs import log, metrics
from tidings.jobs.cap import ruler as cap_ruler
from tidings.store.errors import TidingsError
from tidings.store.files import exclusive_create, lstat_file, safe_read, stat_key
from tidings.store.jsonread import Malformed, parse

#: B8: the spill directory, relative to the workdir.
LOGS_DIR = "logs"
#: B10/B11: the largest name suffix tried.
MAX_SUFFIX = 100
#: B10: the attention spill stem; the name is ``<stem><digest8>[-N].json``.
ATTENTION_STEM = "notification-attention-overflow-"
#: Verified spill files remembered per process.
VERIFIED_CACHE_SIZE = 4096


@dataclass(frozen=True)
class Spill:
    """Where a lane's full copy went; ``name`` and ``path`` are ``None`` when it failed."""

    name: str | None = None
    path: str | None = None

    @property
    def ok(self) -> bool:
        return self.name is not None


class SpillRequest:
    """The full copy of one oversized lane: its canonical text, digest and file bytes."""

    def __init__(self, value: object, ruler: str | None = None) -> None:
        self.value = value
        self.canonical = cap_ruler.canonical_text(value, ruler)
        self.digest = cap_ruler.digest(self.canonical)

    @cached_property
    def content(self) -> bytes:
        """Written only when a name is created (the indented form is the slow one)."""
        return cap_ruler.content_bytes(self.value)


#: What the cap functions call to spill a lane: request in, outcome out.
Spiller = Callable[[SpillRequest], Spill]


class _Verified:
    """(root, name) → (stat identity, digest) of spill files known to hold that digest."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: OrderedDict[tuple[str, str], tuple[tuple[int, ...], str]] = OrderedDict()
        self._lock = threading.Lock()

    def matches(self, key: tuple[str, str], identity: tuple[int, ...], digest: str) -> bool:
        with self._lock:
            return self._items.get(key) == (identity, digest)

    def put(self, key: tuple[str, str], identity: tuple[int, ...], digest: str) -> None:
        with self._lock:
            self._items[key] = (identity, digest)
            self._items.move_to_end(key)
            while len(self._items) > self._size:
                self._items.popitem(last=False)


_verified = _Verified(VERIFIED_CACHE_SIZE)


def _canonical_of(data: bytes) -> str | None:
    parsed = parse(data)
    if isinstance(parsed, Malformed):
        return None
    try:
        return cap_ruler.canonical_text(parsed.value)
    except (ValueError, RecursionError):  # Unserialisable is a ValueError
        return None


def _regular(root: Path, name: str) -> os.stat_result | None:
    st = lstat_file(root, f"{LOGS_DIR}/{name}")
    return st if st is not None and stat.S_ISREG(st.st_mode) else None


def still_verified(root: Path, name: str, digest: str) -> bool:
    """``logs/<name>`` is unchanged since it was found to hold ``digest`` (one ``lstat``)."""
    st = _regular(root, name)
    return st is not None and _verified.matches((str(root), name), stat_key(st), digest)


def holds(root: Path, name: str, request: SpillRequest) -> bool:
    """B9: ``logs/<name>`` is a regular file whose canonical text is the request's."""
    st = _regular(root, name)
    if st is None:
        return False
    key = (str(root), name)
    if _verified.matches(key, stat_key(st), request.digest):
        return True
    # C51: a name held by something else is read at most up to this spill's own size.
    size = len(request.content)
    if st.st_size > size:
        return False
    outcome = safe_read(root, f"{LOGS_DIR}/{name}", limit=size)
    if not outcome.ok or outcome.stat is None:
        return False
    if outcome.data != request.content and _canonical_of(outcome.data) != request.canonical:
        return False
    _verified.put(key, stat_key(outcome.stat), request.digest)
    return True


def _create(root: Path, name: str, request: SpillRequest, lane: str) -> bool:
    rel = f"{LOGS_DIR}/{name}"
    if not exclusive_create(root, rel, request.content):
        return False
    metrics.spilled(lane)
    st = lstat_file(root, rel)  # after the temp is gone: its unlink changed the ctime
    if st is not None:
        _verified.put((str(root), name), stat_key(st), request.digest)
    return True


def suffixed(stem: str) -> list[str]:
    """B10/B11: ``<stem>.json``, then ``<stem>-1.json`` … ``<stem>-100.json``."""
    return [f"{stem}.json", *(f"{stem}-{n}.json" for n in range(1, MAX_SUFFIX + 1))]


def spill_path(root: Path, name: str) -> str:
    return os.path.join(root, LOGS_DIR, name)


def take(root: Path, names: Iterable[str], request: SpillRequest, *, lane: str) -> Spill:
    """The first name that holds (or now holds) the request's content; B8 failures fail."""
    try:
        for name in names:
            if (
                holds(root, name, request)
                or _create(root, name, request, lane)
                or holds(root, name, request)
            ):
                return Spill(name, spill_path(root, name))
    except (OSError, TidingsError, cap_ruler.Unserialisable) as exc:
        log.event(
            "notification_spill_failed",
            workdir=str(root),
            lane=lane,
            error=f"{type(exc).__name__}: {exc}"[:300],
        )
        return Spill()
    log.event(
        "notification_spill_failed",
        workdir=str(root),
        lane=lane,
        error=f"names exhausted (suffix {MAX_SUFFIX})",
    )
    return Spill()


def planned_attention(root: Path, request: SpillRequest) -> Spill:
    """Where :func:`spill_attention` would put ``request``, writing nothing: the first
    name that holds it, else the first name still free (a reader's preview)."""
    try:
        for name in suffixed(ATTENTION_STEM + request.digest[:8]):
            if holds(root, name, request) or lstat_file(root, f"{LOGS_DIR}/{name}") is None:
                return Spill(name, spill_path(root, name))
    except (OSError, TidingsError, cap_ruler.Unserialisable):
        pass
    return Spill()


def spill_attention(root: Path, request: SpillRequest) -> Spill:
    """B10: ``logs/notification-attention-overflow-<digest8>[-N].json``."""
    return take(root, suffixed(ATTENTION_STEM + request.digest[:8]), request, lane="attention")
