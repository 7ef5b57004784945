"""The host's leader lease (delay.md D18)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from tests.support.polling import wait_until
from tidings.scheduler.lease import LeaderLease, LeaseSettings, current_leader
from tidings.store import keys
from tidings.store.holder import process_start, this_host

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


def test_d18_m52_a_dead_same_host_holder_is_taken_over_at_once(
    redis_client: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 30 acceptance 6: the lease of a holder process gone from this host (a
    SIGKILLed `tidings up`) is taken at once, not after its 10 s expiry; a live holder,
    or one of another host, is waited out."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    start = process_start(dead.pid)
    dead.wait()
    slow = LeaseSettings()  # 10 s: waiting it out would fail this test
    live = LeaderLease(redis_client, "h1", "live", slow)
    assert live.try_acquire(NOW)
    assert not LeaderLease(redis_client, "h1", "next", slow).try_acquire(NOW)
    live.release()

    gone = LeaderLease(redis_client, "h1", "gone", slow)
    for holder, taken in (
        (f"t otherhost/boot {dead.pid} {start}", False),
        (f"t {this_host()} {dead.pid} {start}", True),
    ):
        monkeypatch.setattr(gone, "_token", holder)
        redis_client.delete(gone.key)
        assert gone.try_acquire(NOW)
        successor = LeaderLease(redis_client, "h1", "successor", slow)
        assert successor.try_acquire(NOW) is taken
        assert gone.renew() is not taken, "the gone holder's value no longer holds it"
    assert current_leader(redis_client, "h1") == {
        "leader": "successor",
        "since": "2026-09-21T14:13:20Z",
    }


def test_d18_a_retried_set_whose_reply_was_lost_keeps_the_lease(redis_client: Any) -> None:
    lease = LeaderLease(redis_client, "h1", "a", FAST)
    assert lease.try_acquire(NOW)
    assert lease.try_acquire(NOW), "the key holds this very value: the lease is ours"
