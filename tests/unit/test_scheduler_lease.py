"""The host's leader lease (delay.md D18)."""

from __future__ import annotations

from typing import Any

from tests.support.polling import wait_until
from tidings.scheduler.lease import LeaderLease, LeaseSettings, current_leader
from tidings.store import keys

FAST = LeaseSettings(lease_seconds=0.3, renew_seconds=0.1)
NOW = 1_790_000_000.0


def test_d18_one_holder_at_a_time(redis_client: Any) -> None:
    a = LeaderLease(redis_client, "h1", "a", FAST)
    b = LeaderLease(redis_client, "h1", "b", FAST)
    assert a.try_acquire(NOW) is True
    assert b.try_acquire(NOW) is False
    assert a.renew() is True
    assert b.renew() is False, "a standby cannot renew what it never held"
    assert current_leader(redis_client, "h1") == {"leader": "a", "since": "2026-09-21T14:13:20Z"}
    a.release()
    assert current_leader(redis_client, "h1") is None
    assert b.try_acquire(NOW) is True


def test_d18_lease_key_and_expiry(redis_client: Any) -> None:
    lease = LeaderLease(redis_client, "h1", "a", LeaseSettings())
    assert lease.key == "{h:h1}:scheduler:leader"
    assert lease.settings.lease_seconds == 10 and lease.settings.renew_seconds == 3
    lease.try_acquire(NOW)
    assert 9_000 < redis_client.pttl(lease.key) <= 10_000


def test_d18_lapsed_lease_is_taken_over_and_the_old_holder_cannot_touch_it(
    redis_client: Any,
) -> None:
    a = LeaderLease(redis_client, "h1", "a", FAST)
    b = LeaderLease(redis_client, "h1", "b", FAST)
    assert a.try_acquire(NOW)
    wait_until(lambda: b.try_acquire(NOW), timeout=5, what="the lease to lapse")
    assert a.renew() is False, "token-checked renew"
    a.release()
    assert current_leader(redis_client, "h1") == {"leader": "b", "since": "2026-09-21T14:13:20Z"}
    assert redis_client.exists(keys.scheduler_leader("h1"))


def test_d18_hosts_are_independent(redis_client: Any) -> None:
    assert LeaderLease(redis_client, "h1", "a", FAST).try_acquire(NOW)
    assert LeaderLease(redis_client, "h2", "b", FAST).try_acquire(NOW)
