"""The ``render_attention`` job and the delivering calls that cap both lanes (block-cap.md
B1, B3, B4, B6; channels.md C22-C24)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.spills import spill_files
from tidings.jobs.cap import lanes as cap_lanes
from tidings.jobs.cap import measure
from tidings.jobs.cap.ruler import measure_persistent
from tidings.jobs.channels import publish
from tidings.jobs.consumer import delay_state, delivery, observe, render_attention
from tidings.jobs.consumer.read import Observation
from tidings.jobs.limits import MAX_CHARS_ENV
from tidings.jobs.runtime import Runtime
from tidings.store.keys import AgentKeys
from tidings.store.models import AgentRecord


@pytest.fixture(autouse=True)
def no_cap_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MAX_CHARS_ENV, raising=False)


def telegram(n: int = 25, chars: int = 3000) -> dict[str, Any]:
    return {
        "header": "Telegram",
        "data": {
            "message_ids": [f"m{i}" for i in range(n)],
            "messages": [{"id": f"m{i}", "text": "t" * chars} for i in range(n)],
        },
    }


def committed(rt: Runtime, agent: AgentRecord) -> Any:
    raw = rt.redis.get(AgentKeys(agent.agent_id).delivered_fp)
    return json.loads(raw) if raw is not None else None


class TestRenderAttention:
    def test_b3_oversized_lane_capped_spilled_and_committed(
        self, rt: Runtime, agent: AgentRecord
    ) -> None:
        assert publish(rt, agent, "mcp.telegram", telegram())["status"] == "ok"
        assert publish(rt, agent, "soul", {"header": "Be kind"})["status"] == "ok"
        lane = render_attention(rt, agent)
        assert measure(lane) <= 10_000
        assert lane["soul"]["header"] == "Be kind"
        assert lane["mcp.telegram"]["data"]["messages"][0]["text"] == "t" * 200 + "..."
        path = Path(lane["overflow"]["path"])
        assert path.parent == agent.root / "logs"
        full = json.loads(path.read_text())
        assert full["mcp.telegram"]["data"]["messages"][0]["text"] == "t" * 3000
        assert committed(rt, agent) == observe(rt, agent).raw_fp
        json.dumps(lane)  # a JSON-able actor result

    def test_b6_small_lane_untouched_no_spill(self, rt: Runtime, agent: AgentRecord) -> None:
        publish(rt, agent, "mcp.telegram", telegram(2, 10))
        lane = render_attention(rt, agent)
        assert "overflow" not in lane and lane["mcp.telegram"]["data"]["messages"][1]["id"] == "m1"
        assert spill_files(agent.root) == []

    def test_b3_delayed_target_is_left_out(
        self, rt: Runtime, agent: AgentRecord, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        publish(rt, agent, "mcp.telegram", telegram())
        publish(rt, agent, "soul", {"header": "Be kind"})
        monkeypatch.setattr(delay_state, "live_target", lambda rt, agent, allow: "mcp.telegram")
        assert render_attention(rt, agent) == {"soul": {**observe(rt, agent).payloads["soul"]}}
        assert spill_files(agent.root) == []

    def test_unstable_read_delivers_and_commits_nothing(
        self, rt: Runtime, agent: AgentRecord, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        publish(rt, agent, "mcp.telegram", telegram())
        unstable = Observation(False, [], [], {"mcp.telegram": telegram()})
        monkeypatch.setattr(delivery, "observe", lambda rt, agent: unstable)
        assert render_attention(rt, agent) == {}
        assert committed(rt, agent) is None
        assert spill_files(agent.root) == []

    def test_b1_cap_read_on_every_build(
        self, rt: Runtime, agent: AgentRecord, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        publish(rt, agent, "mcp.telegram", telegram(12, 600))
        assert "overflow" not in render_attention(rt, agent)
        monkeypatch.setenv(MAX_CHARS_ENV, "3000")
        lane = render_attention(rt, agent)
        assert 0 < measure(lane) <= 3000 and lane["overflow"]["truncated"] is True
        monkeypatch.delenv(MAX_CHARS_ENV)
        (agent.root / "settings").mkdir()
        (agent.root / "settings" / "system.json").write_text(
            '{"schema_version": 2, "notification_max_chars": 2500}'
        )
        assert measure(render_attention(rt, agent)) <= 2500


def email_block(n: int = 5, chars: int = 3000) -> dict[str, Any]:
    return {
        "email": {
            "emails": [{"id": f"e{i}", "body": "b" * chars} for i in range(n)],
            "email_ids": [f"e{i}" for i in range(n)],
            "count": n,
        }
    }


class TestDelivery:
    """B3/B4 through ``delivery``: both lanes capped, attention sanitised first."""

    def test_b3_render_caps_both_lanes(self, rt: Runtime, agent: AgentRecord) -> None:
        publish(
            rt,
            agent,
            "email",
            {"header": "5 new emails", "data": {"emails": email_block()["email"]["emails"]}},
        )
        block = email_block()
        notes = delivery.render(rt, agent, block)
        assert notes["attention"] == {
            "email": {
                "header": "Email event",
                "data": {"email_ids": block["email"]["email_ids"]},
                "instructions": "Email content is in "
                "_meta.agent_meta.notifications.persistent.email.",
                "icon": "🔔",
                "priority": "normal",
                "published_at": notes["attention"]["email"]["published_at"],
            }
        }
        persistent = notes["persistent"]
        assert measure_persistent(persistent) <= 10_000
        first = persistent["email"]["emails"][0]
        assert first["body"].endswith("...") and "message_truncated" not in first  # B15
        assert Path(persistent["overflow"]["path"]).name.startswith("notification-overflow-")

    def test_b6_persistent_within_the_cap_is_the_same_object(
        self, rt: Runtime, agent: AgentRecord
    ) -> None:
        block = email_block(2, 10)
        assert delivery.render(rt, agent, block)["persistent"] is block
        stamped = delivery.stamp(rt, agent, delivery.check_placeholder(), block)
        assert stamped["_meta"]["agent_meta"]["notifications"]["persistent"] is block

    def test_b3_stamp_caps_both_lanes(self, rt: Runtime, agent: AgentRecord) -> None:
        publish(rt, agent, "mcp.telegram", telegram())
        stamped = delivery.stamp(rt, agent, delivery.check_placeholder(), email_block())
        notes = stamped["_meta"]["agent_meta"]["notifications"]
        assert measure(notes["attention"]) <= 10_000
        assert "overflow" in notes["attention"] and "overflow" in notes["persistent"]
        assert stamped["_meta"]["agent_meta"]["guidance"]["transient"]["sources"] == [
            "mcp.telegram"
        ]


class TestRemembered:
    """B20 (memo): an unchanged oversized lane is not capped again, and a lane naming a
    spill is only returned while that spill is on disk (B19)."""

    def test_b20_unchanged_lane_served_again(
        self, rt: Runtime, agent: AgentRecord, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        publish(rt, agent, "mcp.telegram", telegram())
        first = render_attention(rt, agent)

        def no_capping(*args: Any) -> Any:
            raise AssertionError("capped again")

        monkeypatch.setattr(cap_lanes, "cap_lane", no_capping)
        second = render_attention(rt, agent)
        assert second == first and second is not first
        second["mcp.telegram"]["header"] = "changed by the caller"
        assert render_attention(rt, agent) == first

    def test_b19_deleted_spill_is_written_again(self, rt: Runtime, agent: AgentRecord) -> None:
        publish(rt, agent, "mcp.telegram", telegram())
        path = Path(render_attention(rt, agent)["overflow"]["path"])
        path.unlink()
        again = render_attention(rt, agent)
        assert Path(again["overflow"]["path"]) == path and path.exists()
        assert json.loads(path.read_text())["mcp.telegram"]["data"] == telegram()["data"]

    def test_b19_edited_spill_is_not_trusted(self, rt: Runtime, agent: AgentRecord) -> None:
        publish(rt, agent, "mcp.telegram", telegram())
        path = Path(render_attention(rt, agent)["overflow"]["path"])
        path.write_text("{}")
        again = Path(render_attention(rt, agent)["overflow"]["path"])
        assert again.name == path.name.replace(".json", "-1.json")

    def test_b20_changed_content_cap_or_pointers_capped_afresh(
        self, rt: Runtime, agent: AgentRecord, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        publish(rt, agent, "mcp.telegram", telegram())
        publish(rt, agent, "email", {"header": "mail", "data": {"text": "x" * 5000}})
        base = render_attention(rt, agent)
        monkeypatch.setenv(MAX_CHARS_ENV, "4000")
        assert measure(render_attention(rt, agent)) <= 4000
        monkeypatch.delenv(MAX_CHARS_ENV)
        a = delivery.render(rt, agent, {"email": {"email_ids": ["a"]}})["attention"]
        b = delivery.render(rt, agent, {"email": {"email_ids": ["b"]}})["attention"]
        assert a["email"]["data"] == {"email_ids": ["a"]}
        assert b["email"]["data"] == {"email_ids": ["b"]}
        publish(rt, agent, "mcp.telegram", telegram(24))
        assert render_attention(rt, agent)["overflow"]["path"] != base["overflow"]["path"]
