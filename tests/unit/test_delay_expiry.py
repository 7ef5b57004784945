"""Expiry: reconcile, the expiring → alarm → published protocol, the alarm payload,
races and crashes (delay.md D9-D14, D17, D19; issue 3 acceptance 5)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from tests.support.delay import (
    ALARM,
    REQUEST_ID,
    active_state,
    alarm_bytes_of,
    alarm_of,
    capture,
    events,
    put_state,
    state_of,
    write_channel,
)
from tidings.jobs import tick
from tidings.jobs.channels import publish
from tidings.jobs.consumer import delay_alarm, expire, observe, request_delay, visit
from tidings.jobs.consumer.delay import reconcile
from tidings.jobs.consumer.delay_alarm import alarm_bytes, changed
from tidings.jobs.runtime import Runtime
from tidings.store import faults, locks
from tidings.store.clock import FakeClock
from tidings.store.jsonfmt import compact_sorted, utc_stamp
from tidings.store.models import AgentRecord


class Crash(BaseException):
    """Stands in for the process dying at a fault point."""


def crash_at(monkeypatch: pytest.MonkeyPatch, point: str) -> None:
    def reach(name: str) -> None:
        if name == point:
            raise Crash(name)

    monkeypatch.setattr(faults, "reach", reach)


def due(agent: AgentRecord, clock: FakeClock, seconds: int = 10, **changes: Any) -> None:
    """An active state whose deadline has just passed."""
    put_state(agent, active_state(clock.now(), seconds=seconds, **changes))
    clock.advance(seconds + 0.5)


class TestWhereReconcileRuns:
    """D9."""

    def test_d9_coherent_read_shows_alarm_and_target_in_the_same_read(
        self, rt: Runtime, agent: AgentRecord, clock: FakeClock
    ) -> None:
        write_channel(agent, "email", {"header": "mail"})
        request_delay(rt, agent, "email", 10)
        clock.advance(10)
        obs = observe(rt, agent)
        assert obs.stable
        assert {"email", "delay-alarm"} <= set(obs.payloads)
        assert obs.payloads["delay-alarm"]["header"] == "Notification delay ended: email"

    def test_d9_sync_tick_publishes(
        self, rt: Runtime, agent: AgentRecord, clock: FakeClock
    ) -> None:
        due(agent, clock)
        assert tick.sync_host(rt, agent.host)["agents"] == 1
        assert state_of(agent)["status"] == "published"

    def test_d9_delay_action_reconciles_first(
        self, rt: Runtime, agent: AgentRecord, clock: FakeClock
    ) -> None:
        due(agent, clock)
        request_delay(rt, agent, "system", 0)
        assert alarm_of(agent)["data"]["delay_alarm"]["request_id"] == REQUEST_ID


@contextmanager
def counting_locks(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, ...]]]:
    taken: list[tuple[str, ...]] = []
    real = locks.hold

    @contextmanager
    def hold(root: Any, *scopes: str, **kw: Any) -> Iterator[None]:
        taken.append(scopes)
        with real(root, *scopes, **kw):
            yield

    monkeypatch.setattr(delay_alarm.locks, "hold", hold)
    yield taken


class TestFastPath:
    """D10: no lock unless the state may owe an alarm now."""

    @pytest.mark.parametrize(
        "case",
        [
            "absent",
            "malformed",
            "published",
            "cancelled",
            "other_id",
            "target_int",
            "target_alarm",
            "deadline_string",
            "deadline_bool",
            "future",
            "not_object",
        ],
    )
    def test_d10_returns_false_taking_zero_locks(
        self,
        case: str,
        rt: Runtime,
        agent: AgentRecord,
        clock: FakeClock,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        now = clock.now()
        past = active_state(now - 100)
        states: dict[str, Any] = {
            "malformed": b"{",
            "published": {**past, "status": "published"},
            "cancelled": {**past, "status": "cancelled"},
            "other_id": past,
            "target_int": {**past, "target": 3},
            "target_alarm": {**past, "target": "delay-alarm"},
            "deadline_string": {**past, "deadline_epoch": "soon"},
            "deadline_bool": {**past, "deadline_epoch": True},
            "future": active_state(now),
            "not_object": [past],
        }
        if case in states:
            put_state(agent, states[case])
        with counting_locks(monkeypatch) as taken:
            expected = "another" if case == "other_id" else None
            assert reconcile(rt, agent, expected) is False
        assert taken == []
        assert not (agent.root / ALARM).exists()

    def test_d10_due_state_takes_the_delay_locks(
        self,
        rt: Runtime,
        agent: AgentRecord,
        clock: FakeClock,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        due(agent, clock)
        with counting_locks(monkeypatch) as taken:
            assert reconcile(rt, agent) is True
        assert taken == [("channel:delay-alarm", "resource:delay-state")]


class TestTransaction:
    """D11."""

    def test_d11_active_goes_expiring_then_alarm_then_published(
        self,
        rt: Runtime,
        agent: AgentRecord,
        clock: FakeClock,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        seen: list[tuple[str, str, bool]] = []

        def reach(point: str) -> None:
            seen.append((point, state_of(agent)["status"], (agent.root / ALARM).exists()))

        monkeypatch.setattr(faults, "reach", reach)
        due(agent, clock)
        assert reconcile(rt, agent) is True
        assert seen == [
            ("expire.after_expiring", "expiring", False),
            ("expire.after_alarm", "expiring", True),
        ]
        final = state_of(agent)
        assert final["status"] == "published"
        assert final["completion"]["request_id"] == REQUEST_ID

    def test_d11_expiring_state_is_completed_from_its_completion(
        self, rt: Runtime, agent: AgentRecord, clock: FakeClock
    ) -> None:
        completion = {
            "request_id": REQUEST_ID,
            "target": "email",
            "requested_seconds": 10,
            "actual_seconds": 10.5,
            "expired_at": "2026-01-01T00:00:00Z",
            "changed": None,
            "initial": {"present": None},
            "current": {"present": None},
        }
        put_state(agent, active_state(clock.now(), status="expiring", completion=completion))
        assert reconcile(rt, agent, REQUEST_ID) is True
        assert alarm_bytes_of(agent) == alarm_bytes(completion)
        assert state_of(agent)["status"] == "published"

    def test_d11_incomplete_completion_is_left_alone(
        self, rt: Runtime, agent: AgentRecord, clock: FakeClock
    ) -> None:
        put_state(
            agent,
            active_state(clock.now(), status="expiring", completion={"request_id": REQUEST_ID}),
        )
        assert reconcile(rt, agent) is False
        assert alarm_of(agent) is None
        assert state_of(agent)["status"] == "expiring"

    def test_d11_structurally_invalid_due_state_publishes_nothing(
        self, rt: Runtime, agent: AgentRecord, clock: FakeClock
    ) -> None:
        due(agent, clock, max_seconds=5)
        assert reconcile(rt, agent) is False
        assert alarm_of(agent) is None

    def test_d11_a_target_no_longer_allowed_still_gets_its_alarm(
        self, rt: Runtime, agent: AgentRecord, clock: FakeClock
    ) -> None:
        due(agent, clock, target="watch")  # a hook channel that was dropped
        assert reconcile(rt, agent) is True

    def test_d11_failure_returns_false_logs_and_the_next_trigger_retries(
        self,
        rt: Runtime,
        agent: AgentRecord,
        clock: FakeClock,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        capture(caplog)
        due(agent, clock)
        (agent.root / ALARM).mkdir(parents=True)
        assert reconcile(rt, agent) is False
        assert events(caplog, "notification_delay_reconcile_failed")[0]["error"] == (
            "IsADirectoryError"
        )
        assert state_of(agent)["status"] == "expiring"
        (agent.root / ALARM).rmdir()
        assert reconcile(rt, agent) is True
        assert state_of(agent)["status"] == "published"

    def test_d11_replaced_or_cancelled_requests_are_never_expired(
        self, rt: Runtime, agent: AgentRecord, clock: FakeClock
    ) -> None:
        first = request_delay(rt, agent, "email", 10)["request_id"]
        second = request_delay(rt, agent, "system", 20)["request_id"]
        clock.advance(15)
        assert expire(rt, agent, first) is False
        assert alarm_of(agent) is None
        request_delay(rt, agent, "system", 0)
        clock.advance(15)
        assert expire(rt, agent, second) is False
        assert alarm_of(agent) is None


class TestRacesAndCrashes:
    """D11, D19; acceptance 5: one publisher, identical bytes on every retry."""

    def test_d11_concurrent_triggers_publish_once(
        self,
        rt: Runtime,
        agent: AgentRecord,
        clock: FakeClock,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """A timer firing while a restart reconcile and a read run, and a duplicate
        ``expire_delay``: exactly one caller wins, the alarm is written once."""
        due(agent, clock)
        writes: list[str] = []
        real_stage = delay_alarm.staged_write

        def stage(root: Any, rel: str, data: bytes) -> Any:
            writes.append(rel)
            return real_stage(root, rel, data)

        monkeypatch.setattr(delay_alarm, "staged_write", stage)
        barrier = threading.Barrier(6)
        results: list[bool] = []

        def trigger(expected: str | None) -> None:
            barrier.wait()
            results.append(reconcile(rt, agent, expected))

        threads = [
            threading.Thread(target=trigger, args=(e,))
            for e in (REQUEST_ID, REQUEST_ID, None, None, REQUEST_ID, None)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(results) == [False] * 5 + [True]
        assert writes == [ALARM]
        assert state_of(agent)["status"] == "published"

    def test_d17_duplicate_expire_messages_are_no_ops(
        self,
        rt: Runtime,
        agent: AgentRecord,
        clock: FakeClock,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        synced: list[str] = []
        monkeypatch.setattr(visit, "sync_agent", lambda rt_, a, **_: synced.append(a.agent_id))
        due(agent, clock)
        assert expire(rt, agent, REQUEST_ID) is True
        published = (agent.root / ALARM).stat()
        assert expire(rt, agent, REQUEST_ID) is False
        assert expire(rt, agent, "unknown") is False
        assert (agent.root / ALARM).stat().st_ino == published.st_ino
        assert synced == [agent.agent_id], "D14 runs once, for the publishing call"

    @pytest.mark.parametrize("point", ["expire.after_expiring", "expire.after_alarm"])
    def test_d19_crash_then_retry_writes_identical_bytes(
        self,
        point: str,
        rt: Runtime,
        agent: AgentRecord,
        clock: FakeClock,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        write_channel(agent, "email", {"header": "mail"})
        request_delay(rt, agent, "email", 10)
        write_channel(agent, "email", {"header": "mail 2"})
        clock.advance(10.25)
        crash_at(monkeypatch, point)
        with pytest.raises(Crash):
            reconcile(rt, agent)
        state = state_of(agent)
        assert state["status"] == "expiring"
        before = alarm_bytes_of(agent)
        assert (before is not None) == (point == "expire.after_alarm")
        monkeypatch.setattr(faults, "reach", lambda name: None)
        clock.advance(30)  # the retry comes later; the alarm does not change
        assert reconcile(rt, agent) is True
        after = alarm_bytes_of(agent)
        assert after == alarm_bytes(state["completion"])
        if before is not None:
            assert after == before
        assert json.loads(after or b"")["data"]["delay_alarm"]["actual_seconds"] == 10.25
        assert state_of(agent)["status"] == "published"
        assert reconcile(rt, agent) is False


@pytest.mark.parametrize(
    ("initial", "current", "expected"),
    [
        ({"present": None}, {"present": None}, None),
        ("junk", None, None),
        ({"present": True, "sha256": "a"}, {"present": True, "sha256": "a"}, False),
        ({"present": True, "sha256": "a"}, {"present": True, "sha256": "b"}, True),
        ({"present": False}, {"present": False}, False),
        ({"present": False}, {"present": True, "sha256": "a"}, True),
        ({"present": True, "sha256": "a"}, {"present": False}, True),
        ({"present": None}, {"present": False}, True),
        ({"present": True, "sha256": "a"}, "junk", True),
    ],
)
def test_d12_changed(initial: Any, current: Any, expected: bool | None) -> None:
    assert changed(initial, current) is expected


class TestCompletion:
    """D12."""

    def test_d12_completion_fields(self, rt: Runtime, agent: AgentRecord, clock: FakeClock) -> None:
        write_channel(agent, "email", {"header": "a"})
        request_delay(rt, agent, "email", 10)
        state = state_of(agent)
        clock.advance(10.12345)
        reconcile(rt, agent)
        completion = state_of(agent)["completion"]
        assert set(completion) == set(delay_alarm.COMPLETION_KEYS)
        assert completion["actual_seconds"] == 10.123
        assert completion["expired_at"] == utc_stamp(clock.now())
        assert completion["initial"] == state["initial"] == completion["current"]
        assert completion["changed"] is False

    def test_d12_initial_not_an_object_is_unknown(
        self, rt: Runtime, agent: AgentRecord, clock: FakeClock
    ) -> None:
        due(agent, clock, initial="junk")
        reconcile(rt, agent)
        completion = state_of(agent)["completion"]
        assert completion["initial"] == {"present": None}
        assert completion["current"] == {"present": False}
        assert completion["changed"] is True

    def test_d12_current_only_for_the_request_seen_before_the_lock(
        self, rt: Runtime, agent: AgentRecord, clock: FakeClock
    ) -> None:
        due(agent, clock)
        seen = delay_alarm._Seen("another-request", "email", {"present": False})
        with locks.hold(agent.root, *delay_alarm.LOCK_SCOPES):
            assert delay_alarm._transact(rt, agent, None, seen) is True
        assert state_of(agent)["completion"]["current"] == {"present": None}
        assert state_of(agent)["completion"]["changed"] is True

    def test_d12_rewritten_target_is_changed(
        self, rt: Runtime, agent: AgentRecord, clock: FakeClock
    ) -> None:
        write_channel(agent, "email", {"header": "a"})
        request_delay(rt, agent, "email", 10)
        write_channel(agent, "email", {"header": "b"})
        clock.advance(11)
        reconcile(rt, agent)
        assert alarm_of(agent)["data"]["delay_alarm"]["changed"] is True


def test_d13_alarm_bytes_are_exact(rt: Runtime, agent: AgentRecord, clock: FakeClock) -> None:
    request_delay(rt, agent, "email", 10)
    clock.advance(10)
    reconcile(rt, agent)
    completion = state_of(agent)["completion"]
    expected = {
        "header": "Notification delay ended: email",
        "icon": "⏰",
        "priority": "high",
        "published_at": completion["expired_at"],
        "instructions": (
            "This is a consumer-only delay alarm. The target producer state was not changed; "
            "handle the re-exposed target, then dismiss delay-alarm when this reminder is no "
            "longer needed."
        ),
        "data": {
            "delay_alarm": {
                "request_id": completion["request_id"],
                "target": "email",
                "requested_seconds": 10,
                "actual_seconds": 10.0,
                "changed": False,
                "initial": {"present": False},
                "current": {"present": False},
                "statistics_scope": (
                    "Byte fingerprints compare the current mirror with delay start. Counts are "
                    "producer-reported or retained current entries only; they are never asserted "
                    "as an exact total for overwrite/capped payloads."
                ),
            }
        },
    }
    assert alarm_bytes_of(agent) == compact_sorted(expected).encode("utf-8")


def test_d13_next_alarm_replaces_the_last(
    rt: Runtime, agent: AgentRecord, clock: FakeClock
) -> None:
    request_delay(rt, agent, "email", 10)
    clock.advance(10)
    reconcile(rt, agent)
    request_delay(rt, agent, "system", 5)
    clock.advance(5)
    reconcile(rt, agent)
    assert alarm_of(agent)["header"] == "Notification delay ended: system"


def test_d13_delay_alarm_cannot_be_published_by_producers(rt: Runtime, agent: AgentRecord) -> None:
    assert publish(rt, agent, "delay-alarm", {"header": "x"})["reason"] == "reserved_channel"


def test_d14_expire_runs_the_sync_step_only_when_it_published(
    rt: Runtime, agent: AgentRecord, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[str] = []
    monkeypatch.setattr(visit, "sync_agent", lambda rt_, a, **_: synced.append(a.agent_id))
    put_state(agent, active_state(clock.now()))
    assert expire(rt, agent, REQUEST_ID) is False
    assert synced == []
    clock.advance(61)
    assert expire(rt, agent, REQUEST_ID) is True
    assert synced == [agent.agent_id]


def test_d19_a_crash_never_hides_a_channel(
    rt: Runtime, agent: AgentRecord, clock: FakeClock
) -> None:
    """An ``expiring`` state (crash mid-protocol) is not live: the target shows."""
    write_channel(agent, "email", {"header": "mail"})
    put_state(agent, active_state(clock.now(), status="expiring", completion={}))
    assert "email" in observe(rt, agent).payloads


@pytest.mark.parametrize("content", ["due", "corrupt", "absent"])
def test_d10_a_rehearsal_reads_changes_nothing_and_never_raises(
    rt: Runtime, agent: AgentRecord, clock: FakeClock, content: str
) -> None:
    """The precise timer's warm-up before a deadline (issue 33) is D10's look and no
    more: no lock taken, no file written, no alarm, whatever the state holds."""
    state_file = agent.root / ".notification/.delay_state.json"
    if content == "due":
        due(agent, clock)
    elif content == "corrupt":
        state_file.parent.mkdir(parents=True, exist_ok=True)
        state_file.write_bytes(b"{not json")
    before = {p.name: p.read_bytes() for p in agent.root.rglob("*") if p.is_file()}
    delay_alarm.rehearse(agent.root, REQUEST_ID, clock.now())
    after = {p.name: p.read_bytes() for p in agent.root.rglob("*") if p.is_file()}
    assert after == before  # a lock file would be a new file here
