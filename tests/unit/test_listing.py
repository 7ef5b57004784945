"""Directory listings reused while the directory is unchanged (channels.md C50)."""

from __future__ import annotations

import gc
import os
import time
import weakref
from pathlib import Path

import pytest

from tidings.jobs.channels import blocked as blocked_warnings
from tidings.jobs.consumer import read as reading
from tidings.store import listing as listings
from tidings.store.files import directory

LONG_AGO_NS = 1_000_000_000 * 1_000_000_000  # 2001


def _list(root: Path) -> listings.Listing:
    with directory(root, "d") as view:
        assert view is not None
        return view.listing()


def test_an_unchanged_directory_reuses_its_listing_and_a_change_is_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = tmp_path / "d"
    d.mkdir()
    (d / "a.json").write_text("{}")
    os.mkfifo(d / "f.json")
    os.utime(d, ns=(LONG_AGO_NS, LONG_AGO_NS))
    real = time.time_ns
    monkeypatch.setattr(listings.time, "time_ns", lambda: real() + 10 * 10**9)
    first = _list(tmp_path)
    assert set(first.names) == {"a.json", "f.json"} and first.regular == {"a.json"}
    assert _list(tmp_path) is first
    (d / ".b.tmp").write_text("{}")
    os.replace(d / ".b.tmp", d / "b.json")  # the directory's mtime moves: listed afresh
    second = _list(tmp_path)
    assert second is not first and "b.json" in second.regular


def test_a_racily_changed_directory_is_listed_every_time(tmp_path: Path) -> None:
    """Timestamps are coarse: a directory changed within RACY_SECONDS is not trusted."""
    d = tmp_path / "d"
    d.mkdir()
    (d / "a.json").write_text("{}")
    first = _list(tmp_path)
    assert _list(tmp_path) is not first


def test_what_readers_derive_from_a_listing_goes_with_it(tmp_path: Path) -> None:
    """Issue 30: under steady publishing every read lists a racy directory afresh; the
    channel names and flaggable stems derived from each listing must not keep it alive
    (two process-wide memos of 16,384 listings grew `tidings up` by MB a minute)."""
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "mcp.a.json").write_text("{}")
    seen = []
    for _ in range(3):
        racy = _list(tmp_path)
        assert reading._channel_names(racy, frozenset()) == ("mcp.a.json",)
        assert blocked_warnings._flaggable(racy, frozenset()) == ((), ("mcp.a",))
        names = reading._channel_names(racy, frozenset())
        assert reading._channel_names(racy, frozenset()) is names  # memoised on the listing
        seen.append(weakref.ref(racy))
        del racy
    gc.collect()
    assert [ref() for ref in seen] == [None, None, None]
