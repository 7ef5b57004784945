"""The effective block cap (block-cap.md B1, B2)."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

import pytest

from tidings.jobs import limits
from tidings.jobs.channels import show
from tidings.jobs.limits import MAX_CHARS_ENV, max_chars, system_v2_max_chars
from tidings.store.models import AgentRecord

VALID_V2: dict[str, Any] = {
    "schema_version": 2,
    "context_limit": None,
    "max_rpm": 0,
    "streaming": True,
    "aed_timeout": 1.5,
    "max_aed_attempts": 1,
    "snapshot_interval": None,
    "activeness": "high",
    "cache_miss_budget": 3,
    "notification_max_chars": 4000,
}


def write_v2(root: Path, doc: Any) -> None:
    (root / "settings").mkdir(exist_ok=True)
    text = doc if isinstance(doc, str) else json.dumps(doc)
    (root / "settings" / "system.json").write_text(text, "utf-8")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MAX_CHARS_ENV, raising=False)
    monkeypatch.setattr(limits, "_logged_max_chars", set())


def invalid_logs(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [
        r for r in caplog.records if getattr(r, "event", "") == "notification_max_chars_invalid"
    ]


class TestEnvironment:
    """B1: the variable first, trimmed, ``^\\+?[0-9]+$`` and > 0, clamped."""

    @pytest.mark.parametrize(
        ("raw", "expected"),
        [
            ("4000", 4000),
            ("  +4000\n", 4000),
            ("0004096", 4096),
            ("1", 2048),
            ("2047", 2048),
            ("10001", 10_000),
            ("99999999999999999999", 10_000),
            ("9" * 5000, 10_000),
        ],
    )
    def test_b1_env_value_is_clamped(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, raw: str, expected: int
    ) -> None:
        monkeypatch.setenv(MAX_CHARS_ENV, raw)
        assert max_chars(tmp_path) == expected

    @pytest.mark.parametrize("raw", ["", "   ", "abc", "12.5", "0", "-5", "+", "1_000", "４０００"])
    def test_b1_invalid_env_falls_through_to_system_v2(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, raw: str
    ) -> None:
        monkeypatch.setenv(MAX_CHARS_ENV, raw)
        write_v2(tmp_path, VALID_V2)
        assert max_chars(tmp_path) == 4000

    def test_b1_env_wins_over_system_v2(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        write_v2(tmp_path, VALID_V2)
        monkeypatch.setenv(MAX_CHARS_ENV, "3000")
        assert max_chars(tmp_path) == 3000

    def test_b1_default_without_either(self, tmp_path: Path) -> None:
        assert max_chars(tmp_path) == 10_000
        assert max_chars(None) == 10_000

    def test_b1_read_on_every_call(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv(MAX_CHARS_ENV, "3000")
        assert max_chars(tmp_path) == 3000
        monkeypatch.setenv(MAX_CHARS_ENV, "5000")
        assert max_chars(tmp_path) == 5000
        monkeypatch.delenv(MAX_CHARS_ENV)
        write_v2(tmp_path, {**VALID_V2, "notification_max_chars": 6000})
        assert max_chars(tmp_path) == 6000

    def test_b1_invalid_value_logged_once_per_raw_value(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
    ) -> None:
        caplog.set_level(logging.WARNING, logger="tidings")
        monkeypatch.setenv(MAX_CHARS_ENV, "abc")
        max_chars(tmp_path)
        max_chars(tmp_path)
        assert len(invalid_logs(caplog)) == 1
        monkeypatch.setenv(MAX_CHARS_ENV, "-1")
        max_chars(tmp_path)
        max_chars(tmp_path)
        assert [r.fields["raw_value"] for r in invalid_logs(caplog)] == ["abc", "-1"]  # type: ignore[attr-defined]

    def test_b1_show_never_logs(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
    ) -> None:
        caplog.set_level(logging.WARNING, logger="tidings")
        monkeypatch.setenv(MAX_CHARS_ENV, "nope")
        write_v2(tmp_path, VALID_V2)
        assert max_chars(tmp_path, log_invalid=False) == 4000
        assert invalid_logs(caplog) == []
        max_chars(tmp_path)  # a build still logs it the first time
        assert len(invalid_logs(caplog)) == 1


class TestSystemV2:
    """B2: only a wholly valid System-v2 document supplies the value."""

    def test_b2_valid_document(self, tmp_path: Path) -> None:
        write_v2(tmp_path, VALID_V2)
        assert system_v2_max_chars(tmp_path) == 4000
        write_v2(tmp_path, {"schema_version": 2, "notification_max_chars": 1})
        assert system_v2_max_chars(tmp_path) == 1
        assert max_chars(tmp_path) == 2048  # clamped

    def test_b2_valid_without_the_field(self, tmp_path: Path) -> None:
        write_v2(tmp_path, {"schema_version": 2, "max_rpm": 3})
        assert system_v2_max_chars(tmp_path) is None

    @pytest.mark.parametrize(
        "change",
        [
            {"notification_max_chars": "4000"},
            {"notification_max_chars": 0},
            {"notification_max_chars": 4000.0},
            {"notification_max_chars": True},
            {"schema_version": 1},
            {"schema_version": 2.0},
            {"schema_version": True},
            {"unknown_key": 1},
            {"context_limit": 0},
            {"context_limit": True},
            {"max_rpm": -1},
            {"streaming": 1},
            {"aed_timeout": 0},
            {"aed_timeout": "1"},
            {"max_aed_attempts": 0},
            {"snapshot_interval": -1.0},
            {"activeness": "  "},
            {"activeness": 3},
            {"cache_miss_budget": 0},
        ],
    )
    def test_b2_one_bad_field_voids_the_document(
        self, tmp_path: Path, change: dict[str, Any]
    ) -> None:
        write_v2(tmp_path, {**VALID_V2, **change})
        assert system_v2_max_chars(tmp_path) is None
        assert max_chars(tmp_path) == 10_000

    def test_b2_missing_schema_version(self, tmp_path: Path) -> None:
        write_v2(tmp_path, {k: v for k, v in VALID_V2.items() if k != "schema_version"})
        assert system_v2_max_chars(tmp_path) is None

    @pytest.mark.parametrize(
        "text",
        [
            '{"schema_version": 2, "notification_max_chars": 4000, "notification_max_chars": 5000}',
            '{"schema_version": 2, "notification_max_chars": 4000, "aed_timeout": NaN}',
            '{"schema_version": 2, "notification_max_chars": 4000, "aed_timeout": Infinity}',
            '{"schema_version": 2, "notification_max_chars": 4000, "aed_timeout": 1e400}',
            '[{"schema_version": 2}]',
            "not json",
            '{"schema_version": 2, "notification_max_chars": 4000',
            "[" * 100_000 + "]" * 100_000,
            '{"schema_version": 2, "notification_max_chars": ' + "9" * 5000 + "}",
        ],
    )
    def test_b2_invalid_json_text(self, tmp_path: Path, text: str) -> None:
        write_v2(tmp_path, text)
        assert system_v2_max_chars(tmp_path) is None

    def test_b2_duplicate_key_at_a_nested_level(self, tmp_path: Path) -> None:
        """Nested objects are invalid values anyway; the duplicate is refused while parsing."""
        write_v2(tmp_path, '{"schema_version": 2, "activeness": {"a": 1, "a": 2}}')
        assert system_v2_max_chars(tmp_path) is None

    def test_b2_not_utf8(self, tmp_path: Path) -> None:
        (tmp_path / "settings").mkdir()
        (tmp_path / "settings" / "system.json").write_bytes(
            b'{"schema_version": 2, "activeness": "\xff", "notification_max_chars": 4000}'
        )
        assert system_v2_max_chars(tmp_path) is None

    def test_b2_over_one_mib(self, tmp_path: Path) -> None:
        doc = json.dumps({**VALID_V2, "activeness": "x" * (1 << 20)})
        write_v2(tmp_path, doc)
        assert system_v2_max_chars(tmp_path) is None

    def test_b2_not_a_regular_file(self, tmp_path: Path) -> None:
        (tmp_path / "settings").mkdir()
        real = tmp_path / "real.json"
        real.write_text(json.dumps(VALID_V2))
        os.symlink(real, tmp_path / "settings" / "system.json")
        assert system_v2_max_chars(tmp_path) is None
        (tmp_path / "settings" / "system.json").unlink()
        (tmp_path / "settings" / "system.json").mkdir()
        assert system_v2_max_chars(tmp_path) is None

    def test_b2_missing_file(self, tmp_path: Path) -> None:
        assert system_v2_max_chars(tmp_path) is None


class TestSettingsShow:
    """B1: the settings SHOW row reports the value a build uses, and never logs."""

    @pytest.mark.parametrize("raw", [None, "3000", "1", "abc", "999999"])
    def test_b1_show_reports_the_build_value(
        self,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture,
        raw: str | None,
    ) -> None:
        caplog.set_level(logging.WARNING, logger="tidings")
        if raw is not None:
            monkeypatch.setenv(MAX_CHARS_ENV, raw)
        write_v2(tmp_path, VALID_V2)
        agent = AgentRecord(agent_id="a1", workdir=str(tmp_path), host="h")
        row = show(agent)["settings"][0]
        assert row["key"] == "notification.max_chars"
        assert invalid_logs(caplog) == []
        assert row["current"] == max_chars(tmp_path)
