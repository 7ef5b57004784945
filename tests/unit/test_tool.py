"""The agent-facing ``notification`` tool (channels.md C42-C45, the action table)."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import tidings
from tidings import _manual
from tidings import _tool as notification_tool
from tidings._agent import Agent
from tidings._hub import Hub
from tidings._tool import ACTIONS
from tidings.jobs import limits
from tidings.jobs.channels import settings_view as channel_settings
from tidings.jobs.consumer import check_placeholder

MANIFEST = {
    "name": "h",
    "channel": "deploys",
    "source": "s",
    "description": "d",
    "how_to_modify": "m",
    "how_to_cancel": "c",
}
INVALID = "INVALID_ARGUMENT"


@pytest.fixture
def hub(fake_redis: Any) -> Iterator[Hub]:
    with tidings.connect(client=fake_redis) as h:
        yield h


@pytest.fixture
def agent(hub: Hub, tmp_path: Path) -> Agent:
    (tmp_path / "w").mkdir()
    return hub.agent(tmp_path / "w", inline=True)


def notification_dir(agent: Agent) -> Path:
    return Path(agent.workdir) / ".notification"


class TestC44Root:
    @pytest.mark.parametrize(
        "arguments",
        [
            [],
            {"action": "check", "extra": 1},
            {"action": 5},
            {},
            {"action": "check", "summarize": "yes"},
            {"action": "check", "reasoning": 3},
            {"action": "check", "input": [1]},
            {"action": "check", "input": {"x": 1}},
            {"action": "dismiss_channel", "input": {"channel": "soul", "force": "true"}},
            {"action": "dismiss_channel", "input": {"channel": 5}},
            {"action": "dismiss_channel", "input": {"channel": "system", "event_id": "e"}},
            {"action": "add", "input": {**MANIFEST, "description": ["x"]}},
            {"action": "settings", "input": None},
            {"action": "settings", "input": {"key": "x"}},
        ],
    )
    def test_invalid_argument_before_any_io(self, agent: Agent, arguments: Any) -> None:
        result = agent.call_tool(arguments)
        assert result["status"] == "failed" and result["error_code"] == INVALID
        assert set(result) == {"status", "error_code", "reason", "message"}
        assert result["reason"] == "invalid_argument"  # C44
        assert not notification_dir(agent).exists()

    def test_unknown_action_exact(self, agent: Agent) -> None:
        assert agent.call_tool({"action": "explode", "input": {}}) == {
            "status": "error",
            "reason": "unknown_action",
            "message": "Unknown notification action: explode",
        }

    def test_accepted_root_forms(self, agent: Agent) -> None:
        placeholder = check_placeholder()
        for arguments in (
            {"action": "check"},
            {"action": "check", "input": None},
            {
                "action": "check",
                "input": {},
                "reasoning": "r",
                "summarize": True,
                "_tc_id": "call_1",
            },
        ):
            assert agent.call_tool(arguments) == placeholder
        assert agent.notification("check") == agent.notification("check", None) == placeholder
        assert agent.call_tool({"action": "list", "input": None})["hooks"] == []

    def test_null_field_is_absent(self, agent: Agent) -> None:
        agent.publish("soul", {"header": "x"})
        agent.stamp({})
        result = agent.notification(
            "dismiss_channel", {"channel": "soul", "force": None, "reason": None}
        )
        assert result == {"status": "ok", "channel": "soul", "cleared": True, "forced": False}
        assert agent.notification("dismiss_channel", {"channel": None})["reason"] == (
            "missing_channel"
        )

    def test_c44_null_event_target_on_dismiss_channel_is_absent(self, agent: Agent) -> None:
        agent.publish("soul", {"header": "x"})
        agent.stamp({})
        result = agent.notification(
            "dismiss_channel", {"channel": "soul", "event_id": None, "ref_id": None}
        )
        assert result["status"] == "ok"
        assert (
            agent.notification("dismiss_channel", {"channel": "soul", "event_id": "e"})[
                "error_code"
            ]
            == "INVALID_ARGUMENT"
        )
        assert (
            agent.call_tool({"action": "settings", "input": {"x": None}})["error_code"]
            == "INVALID_ARGUMENT"
        )


class TestActionTable:
    def test_c45_check_reads_and_writes_nothing(self, agent: Agent) -> None:
        assert agent.notification("check") == {
            "_notification_placeholder": True,
            "message": "Voluntary notification(action=check) read. The live notification "
            "payload is delivered under _meta.agent_meta.notifications.attention and "
            "_meta.agent_meta.guidance.transient on this same result. If those keys "
            "are absent, no notifications are active.",
        }
        assert not notification_dir(agent).exists()

    def test_dismiss_actions(self, agent: Agent) -> None:
        agent.publish_event("system", {"event_id": "e1", "ref_id": "r1"})
        agent.publish_event("system", {"event_id": "e2", "ref_id": "r2"})
        agent.publish("soul", {"header": "s"})
        agent.stamp({})
        assert agent.notification("dismiss_event", {"event_id": "e1"})["removed"] == 1
        assert (
            agent.notification("dismiss_ref", {"ref_id": "r2", "channel": "system"})["removed"] == 1
        )
        assert agent.notification("dismiss_channel", {"channel": "soul", "reason": "done"}) == {
            "status": "ok",
            "channel": "soul",
            "cleared": True,
            "forced": False,
            "reason": "done",
        }
        assert agent.notification("dismiss_event", {})["reason"] == "missing_event_id"
        assert agent.notification("dismiss_ref", {"ref_id": None})["reason"] == "missing_ref_id"

    def test_hook_actions(self, agent: Agent) -> None:
        assert agent.notification("add", MANIFEST)["reason"] == "added"
        assert agent.notification("list")["hooks"][0]["channel"] == "deploys"
        assert (
            agent.notification("edit", {"name": "h", "source": "x", "version": None})["reason"]
            == "edited"
        )
        assert agent.notification("edit", {"name": "h"})["reason"] == "no_change"
        assert agent.notification("drop", {"name": "h"})["reason"] == "dropped"
        assert agent.notification("drop", {})["reason"] == "invalid_manifest"

    def test_delay_routes_untouched(self, agent: Agent, monkeypatch: pytest.MonkeyPatch) -> None:
        calls: list[tuple[Any, Any]] = []

        def fake(rt: Any, record: Any, channel: Any, seconds: Any) -> dict[str, Any]:
            calls.append((channel, seconds))
            return {
                "status": "error",
                "reason": "invalid_delay",
                "channel": channel,
                "message": "seconds must be an integer",
            }

        monkeypatch.setattr(notification_tool, "request_delay", fake)
        for seconds in ("10", 1.5, True, None):
            assert (
                agent.notification("delay", {"channel": "email", "seconds": seconds})["reason"]
                == "invalid_delay"
            )
        assert calls == [("email", "10"), ("email", 1.5), ("email", True), ("email", None)]
        assert (
            agent.notification("delay", {"channel": "email", "seconds": 5, "x": 1})["error_code"]
            == INVALID
        )

    def test_every_action_is_routed(self, agent: Agent) -> None:
        for action in ACTIONS:
            payload = {"name": "nobody"} if action in ("edit", "drop") else {}
            result = agent.notification(action, payload)
            assert result.get("error_code") != INVALID, (action, result)
            assert "Unknown notification action" not in str(result.get("message"))


class TestC42Settings:
    def test_rows_exact_and_live(self, agent: Agent, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("LINGTAI_NOTIFICATION_MAX_CHARS", "4000")
        monkeypatch.setenv("LINGTAI_NOTIFICATION_DELAY_MAX_SECONDS", "90")
        assert agent.notification("settings") == {
            "settings": [
                {
                    "key": "notification.max_chars",
                    "current": 4000,
                    "default": 10000,
                    "configurable": True,
                    "comment": "notification-manual#block-size-cap-persistent-and-attention-lanes",
                },
                {
                    "key": "notification.delay_max_seconds",
                    "current": 90,
                    "default": 600,
                    "configurable": True,
                    "comment": "notification-manual#consumer-delay-and-expiry-alarm",
                },
            ]
        }
        monkeypatch.setenv("LINGTAI_NOTIFICATION_MAX_CHARS", "99999")
        assert agent.notification("settings")["settings"][0]["current"] == 10000

    def test_invalid_env_never_logs_or_writes(
        self, agent: Agent, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
    ) -> None:
        monkeypatch.setenv("LINGTAI_NOTIFICATION_MAX_CHARS", "abc-show")
        monkeypatch.setenv("LINGTAI_NOTIFICATION_DELAY_MAX_SECONDS", "1.5")
        with caplog.at_level(logging.DEBUG, logger="tidings"):
            rows = agent.notification("settings")["settings"]
        assert [r["current"] for r in rows] == [10000, 600]
        assert caplog.records == []
        assert sorted(p.name for p in Path(agent.workdir).iterdir()) == []

    def test_failure_is_one_exact_answer(
        self, agent: Agent, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        def broken(*a: Any, **k: Any) -> int:
            raise RuntimeError("x")

        monkeypatch.setattr(limits, "delay_cap", broken)
        assert (
            agent.notification("settings")
            == channel_settings.UNAVAILABLE
            == {
                "status": "failed",
                "error_code": "SETTINGS_UNAVAILABLE",
                "reason": "settings_unavailable",
                "message": "settings inventory is unavailable",
            }
        )


def _anchor(heading: str) -> str:
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


class TestC43Manual:
    def test_manual_text_and_anchors(self, agent: Agent) -> None:
        result = agent.notification("manual")
        assert result["status"] == "ok" and set(result) == {
            "status",
            "notification_manual",
            "manual_path",
        }
        path = Path(result["manual_path"])
        assert path.is_absolute() and path.read_text() == result["notification_manual"]
        anchors = {
            _anchor(line.lstrip("#"))
            for line in result["notification_manual"].splitlines()
            if line.startswith("#")
        }
        for row in agent.notification("settings")["settings"]:
            assert row["comment"].split("#", 1)[1] in anchors
        assert "An `overflow` marker alone is no reason" in result["notification_manual"]
        assert "not proof of completeness" in result["notification_manual"]  # B21

    def test_missing_manual_is_degraded(self, tmp_path: Path) -> None:
        missing = tmp_path / "nowhere.md"
        assert _manual.manual(missing) == {
            "status": "degraded",
            "notification_manual": "",
            "manual_path": str(missing),
            "error": "notification manual missing — package data not installed correctly",
        }


def test_schema_matches_the_action_table() -> None:
    schema = tidings.notification_tool_schema()
    assert schema["title"] == "notification" and schema["required"] == ["action"]
    assert schema["properties"]["action"]["enum"] == list(ACTIONS)
    seconds = schema["properties"]["input"]["properties"]["seconds"]
    assert seconds["type"] == "integer" and seconds["minimum"] == 0 and "maximum" not in seconds
    for rule in schema["allOf"]:
        action = rule["if"]["properties"]["action"]["const"]
        keys = set(rule["then"]["properties"]["input"]["properties"])
        assert keys == set(ACTIONS[action][0])


def test_acceptance2_two_agents_one_hub(hub: Hub, tmp_path: Path) -> None:
    """Acceptance 2 through the public API: the hook of one agent is not the other's."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    one = hub.agent(tmp_path / "a", inline=True)
    two = hub.agent(tmp_path / "b", inline=True)
    assert one.record.host == two.record.host
    assert one.notification("add", MANIFEST)["reason"] == "added"
    assert one.publish_event("deploys", {"n": 1})["status"] == "ok"
    assert two.publish_event("deploys", {"n": 1})["reason"] == "invalid_channel"
    assert two.notification("list")["hooks"] == []


def test_c37_hub_guard_applies_through_the_tool(hub: Hub, agent: Agent) -> None:
    hub.set_dismiss_guard("soul", "soul(action='ack')")
    agent.publish("soul", {"header": "s"})
    agent.stamp({})
    guarded = agent.notification("dismiss_channel", {"channel": "soul"})
    assert guarded["reason"] == "guarded" and guarded["suggested_verb"] == "soul(action='ack')"
    assert agent.notification("dismiss_channel", {"channel": "soul", "force": True})["cleared"]


def test_wait_for_wake_raises_on_bad_input(agent: Agent) -> None:
    with pytest.raises(tidings.TidingsError) as info:
        agent.wait_for_wake(-1)
    assert info.value.reason == "invalid_timeout"
    assert agent.wait_for_wake(0) is None
