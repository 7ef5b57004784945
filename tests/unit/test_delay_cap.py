"""The delay cap is read live from the environment (delay.md D2; issue 3 acceptance 3)."""

from __future__ import annotations

import pytest

from tests.support.delay import capture, events
from tidings.jobs.consumer import request_delay
from tidings.jobs.limits import DELAY_CAP_ENV, delay_cap
from tidings.jobs.runtime import Runtime
from tidings.store.models import AgentRecord

INVALID = "notification_delay_max_seconds_invalid"


def test_d2_unset_is_600_and_not_logged(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    capture(caplog)
    monkeypatch.delenv(DELAY_CAP_ENV, raising=False)
    assert delay_cap() == 600
    assert events(caplog, INVALID) == []


@pytest.mark.parametrize("raw", ["", "   ", "abc", "1.5", "inf", "0", "-1", "+", "1e3", "0x10"])
def test_d2_invalid_values_fall_back_to_600_and_log(
    raw: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    capture(caplog)
    monkeypatch.setenv(DELAY_CAP_ENV, raw)
    assert delay_cap() == 600
    assert events(caplog, INVALID) == [
        {"env": DELAY_CAP_ENV, "raw_value": raw, "fallback_seconds": 600}
    ]


@pytest.mark.parametrize(
    ("raw", "cap"), [("30", 30), (" 45 ", 45), ("+7", 7), ("100000", 100000), ("007", 7)]
)
def test_d2_valid_values_without_upper_clamp(
    raw: str, cap: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DELAY_CAP_ENV, raw)
    assert delay_cap() == cap


def test_d2_raw_value_is_cut_to_100_chars(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    capture(caplog)
    monkeypatch.setenv(DELAY_CAP_ENV, "x" * 300)
    delay_cap()
    assert events(caplog, INVALID)[0]["raw_value"] == "x" * 100


def test_d2_show_never_logs(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    capture(caplog)
    monkeypatch.setenv(DELAY_CAP_ENV, "abc")
    assert delay_cap(log_invalid=False) == 600
    assert events(caplog, INVALID) == []


@pytest.mark.parametrize("raw", ["", "abc", "1.5", "inf", "0", "-1"])
def test_d2_delay_action_logs_once_per_call(
    raw: str,
    rt: Runtime,
    agent: AgentRecord,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Acceptance 3: an invalid cap is logged once per delay action, cap 600 applies."""
    capture(caplog)
    monkeypatch.setenv(DELAY_CAP_ENV, raw)
    assert request_delay(rt, agent, "email", 600)["status"] == "ok"
    assert len(events(caplog, INVALID)) == 1
    refused = request_delay(rt, agent, "email", 601)
    assert refused["message"] == "seconds must be between 0 and 600"
    assert len(events(caplog, INVALID)) == 2


def test_d2_env_change_between_requests_is_honoured(
    rt: Runtime, agent: AgentRecord, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Acceptance 3: no restart needed; the cap in force is recorded as max_seconds."""
    monkeypatch.setenv(DELAY_CAP_ENV, "1000")
    ok = request_delay(rt, agent, "email", 900)
    assert ok["status"] == "ok"
    monkeypatch.setenv(DELAY_CAP_ENV, "500")
    refused = request_delay(rt, agent, "email", 900)
    assert refused == {
        "status": "error",
        "reason": "invalid_delay",
        "channel": "email",
        "message": "seconds must be between 0 and 500",
    }
    assert request_delay(rt, agent, "email", 500)["status"] == "ok"
    monkeypatch.delenv(DELAY_CAP_ENV)
    assert request_delay(rt, agent, "email", 601)["reason"] == "invalid_delay"
