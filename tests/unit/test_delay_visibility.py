"""What a live delay hides, what a corrupt one does not, and the target statistics
(delay.md D1, D7, D8; issue 3 acceptance 6)."""

from __future__ import annotations

import hashlib
import json
import math
import os
from typing import Any

import pytest

from tests.support.delay import (
    STATE,
    active_state,
    capture,
    events,
    put_state,
    write_channel,
)
from tidings.jobs.channels import allowlist, publish
from tidings.jobs.channels.daemon_runs import DaemonView
from tidings.jobs.consumer import _bare_read as bare
from tidings.jobs.consumer import (
    check_placeholder,
    delay_state,
    observe,
    render,
    request_delay,
    stamp,
)
from tidings.jobs.consumer import read as reading
from tidings.jobs.consumer.delay import live_target
from tidings.jobs.consumer.delay_state import stats
from tidings.jobs.runtime import Runtime
from tidings.store.clock import FakeClock
from tidings.store.files import atomic_write
from tidings.store.models import AgentRecord

INVALID = "notification_delay_state_invalid"


def live(rt: Runtime, agent: AgentRecord) -> str | None:
    return live_target(rt, agent, allowlist(rt, agent))


class TestConsumerFilter:
    """D1: an ordinary target leaves every consumer view; its file keeps changing."""

    def test_d1_target_hidden_from_reads_stamps_renders_and_fingerprints(
        self, rt: Runtime, agent: AgentRecord
    ) -> None:
        write_channel(agent, "email", {"header": "mail 1"})
        write_channel(agent, "system", {"header": "sys"})
        request_delay(rt, agent, "email", 60)
        obs = observe(rt, agent)
        assert obs.stable and obs.delayed == "email"
        assert set(obs.payloads) == {"system"}
        assert [e[0] for e in obs.raw_fp] == ["system.json"]
        assert [e[0] for e in obs.masked_fp] == ["system.json"]
        stamped = stamp(rt, agent, check_placeholder())
        assert set(stamped["_meta"]["agent_meta"]["notifications"]["attention"]) == {"system"}
        assert set(render(rt, agent)["attention"]) == {"system"}

    def test_d1_target_file_keeps_receiving_updates(self, rt: Runtime, agent: AgentRecord) -> None:
        request_delay(rt, agent, "email", 60)
        assert publish(rt, agent, "email", {"header": "mail 2"})["status"] == "ok"
        on_disk = json.loads((agent.root / ".notification/email.json").read_bytes())
        assert on_disk["header"] == "mail 2"
        assert "email" not in observe(rt, agent).payloads

    def test_d1_other_channels_and_hook_channels_keep_showing(
        self, rt: Runtime, agent: AgentRecord
    ) -> None:
        manifest = {
            "name": "w",
            "channel": "watch",
            "source": "s",
            "description": "d",
            "how_to_modify": "m",
            "how_to_cancel": "c",
        }
        atomic_write(agent.root, ".notification/hooks.json", json.dumps([manifest]).encode())
        write_channel(agent, "watch", {"header": "hook"})
        write_channel(agent, "email", {"header": "mail"})
        request_delay(rt, agent, "email", 60)
        assert set(observe(rt, agent).payloads) == {"watch"}

    def test_d1_daemon_target_stays_readable_only_wake_is_masked(
        self, rt: Runtime, agent: AgentRecord, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        payload = {"header": "1 daemon notification(s)", "data": {"events": [{"k": 1}]}}
        entry = ("daemon.json", 42, "ab" * 32)
        for reader in (bare, reading, delay_state):  # where the read looks it up
            monkeypatch.setattr(
                reader, "read_daemon", lambda root: DaemonView(payload=payload, fp_entry=entry)
            )
        write_channel(agent, "system", {"header": "sys"})
        request_delay(rt, agent, "daemon", 60)
        assert live(rt, agent) == "daemon"
        obs = observe(rt, agent)
        assert obs.payloads["daemon"] == payload
        assert ["daemon.json", 42, "ab" * 32] in obs.raw_fp
        assert obs.masked_fp == [["daemon.json", 0, "daemon:delayed=1"], obs.raw_fp[1]]

    def test_d1_a_target_no_longer_allowed_is_not_delayed(
        self, rt: Runtime, agent: AgentRecord
    ) -> None:
        manifest = {
            "name": "w",
            "channel": "watch",
            "source": "s",
            "description": "d",
            "how_to_modify": "m",
            "how_to_cancel": "c",
        }
        atomic_write(agent.root, ".notification/hooks.json", json.dumps([manifest]).encode())
        request_delay(rt, agent, "watch", 60)
        assert live(rt, agent) == "watch"
        os.unlink(agent.root / ".notification/hooks.json")
        assert live(rt, agent) is None

    def test_d1_visible_again_after_deadline(
        self, rt: Runtime, agent: AgentRecord, clock: FakeClock
    ) -> None:
        write_channel(agent, "email", {"header": "mail"})
        request_delay(rt, agent, "email", 10)
        clock.advance(9.9)
        assert "email" not in observe(rt, agent).payloads
        clock.advance(0.2)
        assert {"email", "delay-alarm"} <= set(observe(rt, agent).payloads)


def _mutations(now: float) -> list[tuple[str, Any]]:
    base = active_state(now)
    bad: list[tuple[str, Any]] = [
        ("not_object", [base]),
        ("version_2", {**base, "version": 2}),
        ("version_true", {**base, "version": True}),
        ("version_float", {**base, "version": 1.0}),
        ("status_bogus", {**base, "status": "paused"}),
        ("target_int", {**base, "target": 5}),
        ("target_alarm", {**base, "target": "delay-alarm"}),
        ("target_bad_name", {**base, "target": "../x"}),
        ("request_id_empty", {**base, "request_id": ""}),
        ("request_id_int", {**base, "request_id": 7}),
        ("requested_bool", {**base, "requested_seconds": True}),
        ("requested_zero", {**base, "requested_seconds": 0}),
        ("requested_float", {**base, "requested_seconds": 60.0}),
        ("requested_over_max", {**base, "max_seconds": 30}),
        ("max_bool", {**base, "max_seconds": True}),
        ("started_string", {**base, "started_epoch": "now"}),
        ("started_bool", {**base, "started_epoch": True}),
        ("started_far_future", active_state(now, started=now + 5)),
        ("deadline_before_start", {**base, "deadline_epoch": now - 1}),
        ("deadline_far_future", {**base, "deadline_epoch": now + 10**9}),
        (
            "duration_over_max",
            {**base, "requested_seconds": 600, "max_seconds": 600, "deadline_epoch": now + 600.5},
        ),
        ("duration_mismatch", {**base, "deadline_epoch": now + 60.01}),
        ("missing_deadline", {k: v for k, v in base.items() if k != "deadline_epoch"}),
    ]
    return bad


RAW_BAD: list[tuple[str, bytes]] = [
    ("malformed", b"{not json"),
    ("truncated", b'{"version":1,"status":"active","target":"em'),
    (
        "nan_started",
        b'{"version":1,"status":"active","request_id":"r","target":"email",'
        b'"requested_seconds":60,"max_seconds":600,"started_epoch":NaN,'
        b'"deadline_epoch":1}',
    ),
    ("not_utf8", b"\xff\xfe{}"),
    ("empty", b""),
]


class TestLiveness:
    """D8: only a wholly plausible active state is live; anything else fails open."""

    def test_d8_valid_state_is_live(
        self, rt: Runtime, agent: AgentRecord, clock: FakeClock
    ) -> None:
        put_state(agent, active_state(clock.now()))
        assert live(rt, agent) == "email"

    @pytest.mark.parametrize("index", range(23))
    def test_d8_invalid_state_fails_open_and_is_logged_once(
        self,
        index: int,
        rt: Runtime,
        agent: AgentRecord,
        clock: FakeClock,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        """Acceptance 6: target visible, no crash, one warning."""
        capture(caplog)
        name, state = _mutations(clock.now())[index]
        write_channel(agent, "email", {"header": "mail"})
        put_state(agent, state)
        for _ in range(3):
            assert "email" in observe(rt, agent).payloads, name
        assert live(rt, agent) is None
        assert len(events(caplog, INVALID)) == 1, name

    @pytest.mark.parametrize(("name", "raw"), RAW_BAD)
    def test_d8_unparseable_state_fails_open_and_is_logged_once(
        self,
        name: str,
        raw: bytes,
        rt: Runtime,
        agent: AgentRecord,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        capture(caplog)
        write_channel(agent, "email", {"header": "mail"})
        put_state(agent, raw)
        for _ in range(2):
            assert "email" in observe(rt, agent).payloads
        assert len(events(caplog, INVALID)) == 1, name

    def test_d8_oversized_and_irregular_state_fail_open(
        self,
        rt: Runtime,
        agent: AgentRecord,
        clock: FakeClock,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        capture(caplog)
        state = active_state(clock.now(), initial={"pad": "x" * 1_100_000})
        put_state(agent, state)
        assert live(rt, agent) is None
        os.unlink(agent.root / STATE)
        (agent.root / STATE).mkdir()
        assert live(rt, agent) is None
        os.rmdir(agent.root / STATE)
        os.symlink(agent.root / "elsewhere.json", agent.root / STATE)
        assert live(rt, agent) is None
        reasons = [e["reason"] for e in events(caplog, INVALID)]
        assert reasons == [
            "unreadable (too_large:too_large)",
            "unreadable (not_regular:not_regular_file)",
        ]

    def test_d8_each_distinct_content_is_logged_once(
        self,
        rt: Runtime,
        agent: AgentRecord,
        clock: FakeClock,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        capture(caplog)
        for version in (2, 3, 2):
            put_state(agent, active_state(clock.now(), version=version))
            live(rt, agent)
            live(rt, agent)
        assert len(events(caplog, INVALID)) == 2

    @pytest.mark.parametrize("status", ["expiring", "published", "cancelled"])
    def test_d8_finished_states_are_not_live_and_not_logged(
        self,
        status: str,
        rt: Runtime,
        agent: AgentRecord,
        clock: FakeClock,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        capture(caplog)
        put_state(agent, active_state(clock.now(), status=status))
        assert live(rt, agent) is None
        assert events(caplog, INVALID) == []

    def test_d8_expired_and_absent_are_not_logged(
        self,
        rt: Runtime,
        agent: AgentRecord,
        clock: FakeClock,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        capture(caplog)
        assert live(rt, agent) is None
        put_state(agent, active_state(clock.now() - 100))
        assert live(rt, agent) is None
        assert events(caplog, INVALID) == []

    def test_d8_tolerances(self, rt: Runtime, agent: AgentRecord, clock: FakeClock) -> None:
        now = clock.now()
        put_state(agent, active_state(now, started=now + 0.9))
        assert live(rt, agent) == "email", "started_epoch up to now + 1 s is clock skew"
        put_state(agent, active_state(now, deadline_epoch=now + 60.0009))
        assert live(rt, agent) == "email", "duration within 0.001 s"
        put_state(agent, active_state(now, deadline_epoch=now + 60.002))
        assert live(rt, agent) is None

    def test_d8_infinite_numbers_are_not_finite(
        self, rt: Runtime, agent: AgentRecord, clock: FakeClock
    ) -> None:
        text = json.dumps(active_state(clock.now(), deadline_epoch=math.inf))
        assert "Infinity" in text
        put_state(agent, text.encode())
        assert live(rt, agent) is None


class TestStats:
    """D7: target statistics."""

    def test_d7_present_with_counts(self, agent: AgentRecord) -> None:
        data = write_channel(agent, "email", {"data": {"count": 7, "events": [1, 2, 3]}})
        assert stats(agent.root, "email") == {
            "present": True,
            "byte_size": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
            "producer_reported_count": 7,
            "retained_event_count": 3,
            "retained_event_count_scope": "current mirror entries; not asserted total",
        }

    @pytest.mark.parametrize("count", [-1, True, "7", 1.0, None])
    def test_d7_bad_counts_are_left_out(self, agent: AgentRecord, count: Any) -> None:
        write_channel(agent, "email", {"data": {"count": count, "events": "x"}})
        assert set(stats(agent.root, "email")) == {"present", "byte_size", "sha256"}

    def test_d7_malformed_file_is_present_without_counts(self, agent: AgentRecord) -> None:
        atomic_write(agent.root, ".notification/email.json", b"{oops")
        assert set(stats(agent.root, "email")) == {"present", "byte_size", "sha256"}

    def test_d7_absent(self, agent: AgentRecord) -> None:
        assert stats(agent.root, "email") == {"present": False}
        assert stats(agent.root, "daemon") == {"present": False}

    def test_d7_read_errors(self, agent: AgentRecord) -> None:
        atomic_write(agent.root, ".notification/email.json", b"x" * 1_048_577)
        assert stats(agent.root, "email") == {"present": None, "read_error": "too_large"}
        (agent.root / ".notification/system.json").mkdir()
        assert stats(agent.root, "system") == {"present": None, "read_error": "not_regular_file"}

    def test_d7_daemon_uses_the_aggregate(
        self, agent: AgentRecord, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        payload = {"data": {"events": [{"a": 1}, {"b": 2}], "daemon": {"count": 2}}}
        monkeypatch.setattr(
            delay_state,
            "read_daemon",
            lambda root: DaemonView(payload=payload, fp_entry=("daemon.json", 9, "cd" * 32)),
        )
        result = stats(agent.root, "daemon")
        assert result["byte_size"] == 9 and result["sha256"] == "cd" * 32
        assert result["retained_event_count"] == 2
        monkeypatch.setattr(delay_state, "read_daemon", lambda root: DaemonView(payload=payload))
        assert stats(agent.root, "daemon") == {"present": None, "read_error": "missing_fingerprint"}
