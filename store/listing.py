"""Directory listings reused while the directory is unchanged (channels.md C50).

A tick reads ``.notification/`` twice per agent (fingerprint, warnings scan); a
workdir flooded with thousands of rogue files would make every tick pay for each
name. Adding, removing or renaming an entry changes the directory's mtime and
ctime, and a name's file type cannot change without such a change, so a listing
(names, and which are regular files) is reused while the directory's
``(dev, ino, mtime_ns, ctime_ns)`` is unchanged. File contents are never cached
here: readers still ``lstat`` the entries they use. As timestamps are coarse, a
listing of a directory changed within :data:`RACY_SECONDS` is not reused (git's
"racily clean" rule).

What readers derive from a listing (the allowed channel names, the flaggable stems)
is kept on the listing itself (:func:`derived`), so it goes when the listing goes. A
process-wide memo keyed by listings kept every listing it ever saw alive: under steady
publishing a directory is always racy, so every read made a new listing, and two
16,384-entry memos of them grew ``tidings up`` by megabytes a minute (issue 30).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import TypeVar, cast

T = TypeVar("T")

#: A directory changed this recently (s) is listed afresh every time.
RACY_SECONDS = 1.0
#: Directories whose listing is kept (least recently used go first).
MAX_LISTINGS = 20_000


@dataclass(frozen=True, eq=False)
class Listing:
    """The names in a directory and those that are regular files. Compared and hashed
    by identity: while its directory is unchanged, the same object comes back, so
    readers may memoise what they derive from it."""

    names: tuple[str, ...]
    regular: frozenset[str]
    #: What readers derived from this listing (:func:`derived`), by their key.
    memo: dict[Hashable, object] = field(default_factory=dict, repr=False)


def derived(listing: Listing, key: Hashable, make: Callable[[], T]) -> T:
    """``make()``, computed once per ``listing`` and ``key`` and kept on the listing, so it
    lives exactly as long as the listing (two threads may both compute it: same value)."""
    try:
        return cast(T, listing.memo[key])
    except KeyError:
        value = listing.memo[key] = make()
        return value


class _Listings:
    def __init__(self, size: int) -> None:
        self._items: dict[tuple[int, int], tuple[tuple[int, int], Listing]] = {}
        self._size = size
        self._lock = threading.Lock()

    def get(self, key: tuple[int, int], stamp: tuple[int, int]) -> Listing | None:
        with self._lock:
            found = self._items.get(key)
            if found is None or found[0] != stamp:
                return None
            self._items[key] = self._items.pop(key)
            return found[1]

    def put(self, key: tuple[int, int], stamp: tuple[int, int], listing: Listing) -> None:
        with self._lock:
            self._items.pop(key, None)
            self._items[key] = (stamp, listing)
            while len(self._items) > self._size:
                del self._items[next(iter(self._items))]


_listings = _Listings(MAX_LISTINGS)


def listing(dir_fd: int) -> Listing:
    """The listing of the open directory ``dir_fd`` (no links followed)."""
    st = os.fstat(dir_fd)
    key, stamp = (st.st_dev, st.st_ino), (st.st_mtime_ns, st.st_ctime_ns)
    cached = _listings.get(key, stamp)
    if cached is not None:
        return cached
    names: list[str] = []
    regular: set[str] = set()
    with os.scandir(dir_fd) as entries:
        for entry in entries:
            names.append(entry.name)
            if entry.is_file(follow_symlinks=False):
                regular.add(entry.name)
    found = Listing(tuple(names), frozenset(regular))
    if time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) > RACY_SECONDS * 1e9:
        _listings.put(key, stamp, found)
    return found
