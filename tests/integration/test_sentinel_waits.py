"""Waits that scale on Sentinel too (issue 25, "Waits that scale"): the asyncio client
behind a Sentinel URL shares a bounded pool that queues a wait for a connection, as the
plain and cluster clients do, instead of raising ``Too many connections``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.sentinel import sentinel_set
from tests.support.waiters import wait_all, woken_count
from tidings.store import async_connection

pytestmark = pytest.mark.redis_server

#: Waiting agents of one event loop, far more than the pool below holds.
WAITERS = 60
#: The pool size for the test: far fewer connections than waiters.
POOL = 8


def test_waiters_behind_sentinel_queue_for_a_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(async_connection, "MAX_CONNECTIONS", POOL)
    replica_set = sentinel_set(tmp_path / "redis")
    try:
        results = wait_all(replica_set.url, None, "sentinel-waits", tmp_path, WAITERS, 0.3)
    finally:
        replica_set.stop()
    failures = [r for r in results if isinstance(r, BaseException)]
    assert not failures, failures[:3]
    assert len([r for r in results if r is not None]) == woken_count(WAITERS)
