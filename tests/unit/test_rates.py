"""Rate counters count in process and are written every few seconds, not once per flush
or wake (issue 25); a clean stop writes what is left; a reader sees its own counts."""

from __future__ import annotations

from typing import Any

from tidings.store import rates

NOW = 1_790_000_005.0


def stored(redis: Any, kind: str) -> int:
    return int(redis.get(rates.key(kind, int(NOW // rates.BUCKET_SECONDS))) or 0)


def test_counts_wait_in_process_until_a_flush(redis_client: Any) -> None:
    for _ in range(100):
        rates.count(redis_client, rates.EVENTS, 3, NOW)
    rates.count(redis_client, rates.WAKES, 1, NOW)
    assert stored(redis_client, rates.EVENTS) == 0  # no round trip per count
    rates.flush_all()
    assert stored(redis_client, rates.EVENTS) == 300 and stored(redis_client, rates.WAKES) == 1
    assert (
        0
        < redis_client.ttl(rates.key(rates.EVENTS, int(NOW // rates.BUCKET_SECONDS)))
        <= rates.KEEP_SECONDS
    )
    rates.flush_all()  # nothing left: nothing written twice
    assert stored(redis_client, rates.EVENTS) == 300


def test_a_reader_sees_what_its_own_process_counted(redis_client: Any) -> None:
    rates.count(redis_client, rates.EVENTS, 20, NOW - rates.BUCKET_SECONDS)
    series = rates.series(redis_client, NOW)
    assert series[rates.EVENTS][-2] == 20 / rates.BUCKET_SECONDS
