"""Attention lane: sanitising, marker, budget stages and routing stub (block-cap.md B4, B6,
B7, B12-B14, B18, B20)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.spills import attention_spiller, spill_files
from tidings.jobs.cap import attention as cap_attention
from tidings.jobs.cap import cap_lane, measure, sanitise_attention
from tidings.jobs.cap.spill import Spill, SpillRequest


def failed_spill(request: SpillRequest) -> Spill:
    return Spill()


def long_path_spill(request: SpillRequest) -> Spill:
    name = f"notification-attention-overflow-{request.digest[:8]}-100.json"
    return Spill(name, "/" + "p" * 3000 + "/logs/" + name)


def telegram(n: int, chars: int) -> dict[str, Any]:
    return {
        "header": "Telegram: 25 new messages",
        "icon": "✈",
        "priority": "high",
        "data": {
            "count": n,
            "message_ids": [f"m{i}" for i in range(n)],
            "messages": [{"id": f"m{i}", "from": "ann", "text": "t" * chars} for i in range(n)],
        },
        "instructions": "Reply with telegram.send.",
    }


def texts(out: dict[str, Any]) -> set[int]:
    return {len(m["text"]) for m in out["mcp.telegram"]["data"]["messages"]}


class TestUntouched:
    """B6: within the cap the very same object comes back; no input is ever mutated."""

    def test_b6_same_object_no_spill(self, tmp_path: Path) -> None:
        lane = {"mcp.telegram": telegram(3, 100)}
        assert cap_attention.cap_lane(lane, 10_000, attention_spiller(tmp_path)) is lane
        assert spill_files(tmp_path) == []

    def test_b6_exactly_at_the_cap(self, tmp_path: Path) -> None:
        lane = {"mcp.telegram": telegram(3, 100)}
        assert cap_attention.cap_lane(lane, measure(lane), attention_spiller(tmp_path)) is lane
        assert (
            cap_attention.cap_lane(lane, measure(lane) - 1, attention_spiller(tmp_path)) is not lane
        )

    def test_b6_input_not_mutated(self, tmp_path: Path) -> None:
        lane = {
            "mcp.telegram": telegram(25, 3000),
            "system": {"data": {"text_truncated": False, "text": "s" * 9000}},
        }
        before = copy.deepcopy(lane)
        cap_attention.cap_lane(lane, 2048, attention_spiller(tmp_path))
        assert lane == before


class TestMarker:
    """B7: the top-level ``overflow`` marker and ``comment``."""

    def test_b7_marker_and_comment_with_spill(self, tmp_path: Path) -> None:
        lane = {"mcp.telegram": telegram(25, 3000)}
        out = cap_attention.cap_lane(lane, 10_000, attention_spiller(tmp_path))
        path = str(tmp_path / "logs" / spill_files(tmp_path)[0])
        assert out["overflow"] == {"path": path, "full_chars": measure(lane), "truncated": True}
        assert out["comment"] == (
            f"Full notification content exceeds the attention block size cap; read {path} for "
            "the complete payload."
        )

    def test_b7_marker_and_comment_without_spill(self) -> None:
        lane = {"mcp.telegram": telegram(25, 3000)}
        out = cap_attention.cap_lane(lane, 10_000, failed_spill)
        assert out["overflow"] == {
            "path": None,
            "full_chars": measure(lane),
            "truncated": True,
            "spill_failed": True,
        }
        assert out["comment"] == (
            "Full notification content exceeds the attention block size cap and the overflow "
            "file could not be written — use the producer tool for the full content."
        )

    def test_b7_replaces_lane_level_keys(self) -> None:
        lane = {"overflow": "producer", "comment": "producer", "mcp.telegram": telegram(25, 3000)}
        out = cap_attention.cap_lane(lane, 10_000, failed_spill)
        assert out["overflow"]["truncated"] is True
        assert out["comment"].startswith("Full notification content")


class TestBudgetStages:
    """B12: budgets 200, 100, 50, 0 on the original; the first that fits."""

    def test_b12_spec_example(self, tmp_path: Path) -> None:
        lane = {"mcp.telegram": telegram(25, 3000)}
        out = cap_attention.cap_lane(lane, 10_000, attention_spiller(tmp_path))
        assert texts(out) == {203}
        assert out["mcp.telegram"]["data"]["messages"][0]["text"] == "t" * 200 + "..."
        for key in ("header", "icon", "priority", "instructions"):
            assert out["mcp.telegram"][key] == lane["mcp.telegram"][key]
        assert (
            out["mcp.telegram"]["data"]["message_ids"]
            == lane["mcp.telegram"]["data"]["message_ids"]
        )
        assert out["mcp.telegram"]["data"]["count"] == 25

    @pytest.mark.parametrize(("n", "expected"), [(25, {203}), (60, {103}), (80, {53}), (120, {0})])
    def test_b12_first_stage_that_fits(self, n: int, expected: set[int]) -> None:
        out = cap_attention.cap_lane({"mcp.telegram": telegram(n, 3000)}, 10_000, failed_spill)
        assert texts(out) == expected
        assert measure(out) <= 10_000

    def test_b12_every_heavy_key_is_cut_and_nothing_else(self) -> None:
        heavy = {k: "h" * 500 for k in sorted(cap_attention.HEAVY_KEYS)}
        other = {k: "o" * 500 for k in ("subject", "header", "instructions", "date", "from")}
        lane = {"system": {"data": {"items": [{**heavy, **other}]}}, "pad": "x" * 4000}
        out = cap_attention.cap_lane(lane, 10_000, failed_spill)
        item = out["system"]["data"]["items"][0]
        assert all(item[k] == "h" * 200 + "..." for k in heavy)
        assert all(item[k] == v for k, v in other.items())
        assert out["pad"] == "x" * 4000  # a non-heavy key, however long

    def test_b12_only_direct_string_values(self) -> None:
        lane = {
            "system": {"text": ["a" * 600], "body": {"inner": "b" * 600}},
            "other": {"message": "m" * 9500},
        }
        out = cap_attention.cap_lane(lane, 10_000, failed_spill)
        assert out["system"] == lane["system"]
        assert out["other"] == {"message": "m" * 200 + "..."}

    def test_b12_existing_flags_become_true_never_added(self) -> None:
        lane = {
            "system": {
                "data": {
                    "text": "a" * 600,
                    "text_truncated": False,
                    "body": "b" * 600,
                    "summary": "short",
                    "summary_truncated": False,
                }
            },
            "pad": "x" * 9200,
        }
        out = cap_attention.cap_lane(lane, 10_000, failed_spill)
        data = out["system"]["data"]
        assert data["text_truncated"] is True
        assert "body_truncated" not in data and data["body"] == "b" * 200 + "..."
        assert data["summary_truncated"] is False

    def test_b12_routing_values_untouched(self) -> None:
        ref = {"text": "r" * 600}
        lane = {"system": {"data": {"message_ref": ref, "text": "t" * 5000}}, "pad": "x" * 5000}
        out = cap_attention.cap_lane(lane, 10_000, failed_spill)
        assert out["system"]["data"]["message_ref"] == ref
        assert out["system"]["data"]["text"] == "t" * 200 + "..."

    def test_b12_budget_zero_is_empty(self) -> None:
        assert cap_attention.cut("abc", 0) == ""
        assert cap_attention.cut("abcdef", 2) == "ab..."


def routing_lane() -> dict[str, Any]:
    """Every routing key present and large, and bulk no budget stage can shorten."""
    ids = [f"id-{i:04d}" for i in range(60)]
    return {
        "mcp.alpha": {
            "header": "H" * 3000,
            "ref": "r" * 400,
            "ref_id": "q" * 100,
            "event_id": "e" * 300,
            "event_ids": ids,
            "message_ref": {"chat": "c" * 300},
            "count": 12345678,
            "email_ids": ids,
            "data": {
                "ref": "R" * 400,
                "message_ids": ids,
                "subject": "S" * 3000,
                "event_ids": ids,
                "count": 98765432,
            },
        },
        "mcp.beta": "a plain string payload",
        "mcp.gamma": {"data": "not an object", "event_id": "g1"},
    }


def candidates(lane: dict[str, Any], spill: Spill) -> list[dict[str, Any]]:
    overflow = cap_attention.marker(spill, measure(lane))
    comment = (
        cap_attention.COMMENT_SPILLED.format(path=spill.path)
        if spill.ok
        else cap_attention.COMMENT_NOT_SPILLED
    )
    return list(cap_attention._compacted(lane, overflow, comment))


def routing_values(entry: Any, *keys: str) -> list[Any]:
    if not isinstance(entry, dict):
        return []
    data = entry.get("data")
    parts = [entry, data] if isinstance(data, dict) else [entry]
    return [part[k] for part in parts for k in keys if k in part]


class TestRoutingStub:
    """B13: routing-only entries, then steps 1-8, measured after each."""

    def test_b13_stub_keeps_routing_keys_only(self) -> None:
        lane = routing_lane()
        out = cap_attention.cap_lane(lane, 9_000, failed_spill)
        alpha = out["mcp.alpha"]
        assert set(alpha) == {
            "ref",
            "ref_id",
            "event_id",
            "event_ids",
            "message_ref",
            "count",
            "email_ids",
            "data",
        }
        assert set(alpha["data"]) == {"ref", "message_ids", "event_ids", "count"}
        assert out["mcp.beta"] == "a plain string payload"
        assert out["mcp.gamma"] == {"event_id": "g1"}
        assert out["comment"] == cap_attention.COMMENT_NOT_SPILLED

    @pytest.mark.parametrize("step", [1, 2, 3, 4, 5, 6])
    def test_b13_steps_in_order(self, step: int) -> None:
        lane = routing_lane()
        stages = candidates(lane, Spill())
        stub_at = len(cap_attention.BUDGETS)
        target = stages[stub_at + step]
        assert measure(target) < measure(stages[stub_at + step - 1])
        out = cap_attention.cap_lane(lane, measure(target), failed_spill)
        assert out == target
        entries = [out["mcp.alpha"], out["mcp.gamma"]]
        dropped = {
            1: ("ref", "ref_id"),
            2: ("event_id", "event_ids"),
            3: ("message_ref",),
            5: ("count",),
        }
        for n, keys in dropped.items():
            values = [v for e in entries for v in routing_values(e, *keys)]
            assert (values == []) == (n <= step), (n, keys)
        heads = {len(v) for e in entries for v in routing_values(e, "email_ids", "message_ids")}
        assert heads == ({8} if step >= 4 else {60})
        assert ("comment" in out) == (step < 6)
        assert out["overflow"]["truncated"] is True

    def test_b13_step7_marker_only(self) -> None:
        lane = routing_lane()
        overflow = cap_attention.marker(Spill(), measure(lane))
        out = cap_attention.cap_lane(lane, measure({"overflow": overflow}), failed_spill)
        assert out == {"overflow": overflow}

    def test_b13_step8_final_guard_names_the_spill_file(self) -> None:
        lane = {"mcp.telegram": telegram(25, 3000)}
        out = cap_attention.cap_lane(lane, 2048, long_path_spill)
        name = long_path_spill(SpillRequest(lane)).name
        assert out == {
            "overflow": {
                "path": None,
                "full_chars": measure(lane),
                "truncated": True,
                "path_omitted": True,
                "spill_file": name,
            },
            "comment": "Full notification content exceeds the attention block size cap; the "
            f"spill path is omitted (too long for the cap) - read logs/{name} in the "
            "agent workdir, or use the producer tool.",
        }

    def test_b13_step8_without_spill_names_the_digest(self) -> None:
        request = SpillRequest({"a": 1})
        digest8 = request.digest[:8]
        overflow = cap_attention.marker(Spill(), 99)
        guard = list(cap_attention._envelopes(Spill(), digest8, overflow))[1]
        assert guard == {
            "overflow": {
                "path": None,
                "full_chars": 99,
                "truncated": True,
                "spill_failed": True,
                "path_omitted": True,
                "digest": digest8,
            },
            "comment": "Full notification content exceeds the attention block size cap; the "
            "spill path is omitted (too long for the cap) - read logs/notification-"
            f"attention-overflow-{digest8}.json in the agent workdir, or use the "
            "producer tool.",
        }

    def test_b13_below_the_floor_degrades_to_the_smallest_lane(self) -> None:
        lane = {"mcp.telegram": telegram(25, 3000)}
        assert cap_attention.cap_lane(lane, 40, failed_spill) == {"overflow": {"truncated": True}}
        assert cap_attention.cap_lane(lane, 1, failed_spill) == {}


class TestNoProtection:
    def test_b14_is_current_is_not_protected_in_attention(self) -> None:
        lane = {"mcp.telegram": telegram(25, 3000)}
        for message in lane["mcp.telegram"]["data"]["messages"]:
            message["is_current"] = True
        out = cap_attention.cap_lane(lane, 10_000, failed_spill)
        assert texts(out) == {203}


class TestGuarantees:
    def test_b18_final_guard_fits_the_floor(self) -> None:
        """The longest name and a huge ``full_chars`` still leave room under 2,048."""
        name = "notification-attention-overflow-ffffffff-100.json"
        spill = Spill(name, "/" + "p" * 5000)
        guard = list(
            cap_attention._envelopes(spill, "ffffffff", cap_attention.marker(spill, 10**18))
        )[1]
        assert measure(guard) <= 2048
        failed = next(
            cap_attention._envelopes(Spill(), "ffffffff", cap_attention.marker(Spill(), 10**18))
        )
        assert measure(failed) <= 2048

    def test_b20_same_input_same_lane(self, tmp_path: Path) -> None:
        lane = {"mcp.telegram": telegram(25, 3000)}
        first = cap_attention.cap_lane(lane, 4000, attention_spiller(tmp_path))
        second = cap_attention.cap_lane(
            json.loads(json.dumps(lane)), 4000, attention_spiller(tmp_path)
        )
        assert first == second
        assert len(spill_files(tmp_path)) == 1


class TestSanitise:
    """B4: lanes the persistent block carries are pointed to, not repeated."""

    def test_b4_email_entry(self) -> None:
        attention = {
            "email": {
                "header": "3 new emails",
                "icon": "📧",
                "priority": "high",
                "published_at": "2024-01-01T00:00:00Z",
                "data": {"emails": [{"body": "secret"}]},
            },
            "system": {"header": "s"},
        }
        persistent = {"email": {"emails": [{"id": "e1"}, {"id": "e2"}, {"x": 1}]}}
        out = sanitise_attention(attention, persistent)
        assert out == {
            "email": {
                "header": "Email event",
                "data": {"email_ids": ["e1", "e2"]},
                "instructions": "Email content is in "
                "_meta.agent_meta.notifications.persistent.email.",
                "icon": "📧",
                "priority": "high",
                "published_at": "2024-01-01T00:00:00Z",
            },
            "system": {"header": "s"},
        }
        assert attention["email"]["data"] == {"emails": [{"body": "secret"}]}

    def test_b4_email_ids_preferred(self) -> None:
        out = sanitise_attention(
            {"email": {}}, {"email": {"email_ids": ["a", "b"], "emails": [{"id": "c"}]}}
        )
        assert out["email"]["data"] == {"email_ids": ["a", "b"]}

    @pytest.mark.parametrize(
        ("im", "name"),
        [
            ("telegram", "Telegram"),
            ("wechat", "WeChat"),
            ("feishu", "Feishu"),
            ("whatsapp", "WhatsApp"),
            ("signal", "signal"),
        ],
    )
    def test_b4_im_entries(self, im: str, name: str) -> None:
        attention = {f"mcp.{im}": {"header": "x", "priority": "low", "data": {"messages": []}}}
        persistent = {
            "mcp": {
                im: {
                    "messages": [{"id": "m1"}, {"id": "m2"}],
                    "referenced_messages": [{"id": "r1"}],
                }
            }
        }
        out = sanitise_attention(attention, persistent)
        assert out == {
            f"mcp.{im}": {
                "header": f"{name} event",
                "data": {"message_ids": ["m1", "m2"]},
                "instructions": f"Message content is in "
                f"_meta.agent_meta.notifications.persistent.mcp.{im}.",
                "priority": "low",
            }
        }

    def test_b4_nothing_to_replace_returns_the_same_map(self) -> None:
        attention = {"system": {"header": "s"}}
        assert sanitise_attention(attention, None) is attention
        assert sanitise_attention(attention, {"email": {"emails": []}}) is attention

    def test_b4_sanitised_before_measuring(self, tmp_path: Path) -> None:
        """A lane too large only because of the email copy is not capped at all."""
        attention = {"email": {"header": "h", "data": {"emails": [{"body": "b" * 20_000}]}}}
        persistent = {"email": {"emails": [{"id": "e1"}]}}
        lane = sanitise_attention(attention, persistent)
        assert cap_lane(lane, 10_000, attention_spiller(tmp_path)) is lane
        assert spill_files(tmp_path) == []
