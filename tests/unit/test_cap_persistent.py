"""Persistent lane: record compaction, protected tiers, stubs (block-cap.md B7, B15-B17)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from tests.support.spills import persistent_spiller
from tidings.jobs.cap import persistent as cap_persistent
from tidings.jobs.cap.ruler import measure_persistent
from tidings.jobs.cap.spill import Spill, SpillRequest

PATH = "/w/logs/notification-overflow-1.json"


def spilled(request: SpillRequest) -> Spill:
    return Spill("notification-overflow-1.json", PATH)


def failed(request: SpillRequest) -> Spill:
    return Spill()


def long_path(request: SpillRequest) -> Spill:
    return Spill("notification-overflow-1-100.json", "/" + "p" * 3000)


def email_lane(n: int, chars: int) -> dict[str, Any]:
    return {
        "emails": [
            {
                "id": f"e{i}",
                "event_id": f"ev-e{i}",
                "subject": f"subject {i}",
                "body": "b" * chars,
                "comment": "from work",
            }
            for i in range(n)
        ],
        "email_ids": [f"e{i}" for i in range(n)],
        "count": n,
        "newest_received_at": "2024-05-01T10:00:00Z",
        "context_comment": "inbox view",
    }


def im_lane(n: int, chars: int, current: int | None = None) -> dict[str, Any]:
    messages = [
        {"id": f"t{i}", "event_id": f"ev-t{i}", "from": "bob", "text": "t" * chars}
        for i in range(n)
    ]
    if current is not None:
        messages[current]["is_current"] = True
    return {
        "messages": messages,
        "previous_block": "blk-7",
        "referenced_messages": [{"id": "r1", "text": "r" * chars, "caption": "c" * chars}],
    }


def records(block: dict[str, Any], im: str = "telegram") -> list[Any]:
    return list(block["mcp"][im]["messages"])


def stubbed(record: Any) -> bool:
    return isinstance(record, dict) and set(record) <= {"id", "event_id"}


def first_fit(
    block: dict[str, Any], low: int, high: int, predicate: Any, spiller: Any = spilled
) -> tuple[int, dict[str, Any]]:
    """The smallest cap in [low, high] whose result satisfies ``predicate``."""
    for cap in range(low, high, 25):
        out = cap_persistent.cap_block(block, cap, spiller)
        if predicate(out):
            return cap, out
    raise AssertionError("no cap in range gives that result")


class TestRecordCompaction:
    """B15: per-record cuts, truncation flags, notes, lane-level marker."""

    def test_b15_email_records_at_budget_200(self) -> None:
        block = {"email": email_lane(5, 3000)}
        out = cap_persistent.cap_block(block, 10_000, spilled)
        note = f"Truncated by the notification block size cap; full content in {PATH}."
        for record in out["email"]["emails"]:
            assert record["body"] == "b" * 200 + "..."
            # B15: a cut body with no producer flag leaves the flags as they were
            assert "message_truncated" not in record and "body_truncated" not in record
            assert record["comment"] == f"from work {note}"
            assert record["subject"].startswith("subject")
        assert out["overflow"] == {
            "path": PATH,
            "full_chars": measure_persistent(block),
            "truncated": True,
        }
        assert "comment" not in out  # no lane comment

    def test_b15_note_on_every_email_record_and_set_when_absent(self) -> None:
        block = {
            "email": {
                "emails": [{"id": "short", "body": "tiny"}, {"id": "long", "body": "b" * 12_000}]
            }
        }
        out = cap_persistent.cap_block(block, 10_000, failed)
        short, long = out["email"]["emails"]
        assert short["comment"] == cap_persistent.EMAIL_NOTE_NOT_SPILLED
        assert "message_truncated" not in short  # nothing was lost
        assert "message_truncated" not in long  # its message was not cut (B15)
        assert out["overflow"]["spill_failed"] is True

    def test_b15_every_email_heavy_field(self) -> None:
        record = {
            "id": "e1",
            **{k: "h" * 3000 for k in cap_persistent.EMAIL_HEAVY},
            "snippet": "s" * 300,
        }
        out = cap_persistent.cap_block({"email": {"emails": [record]}}, 10_000, spilled)
        got = out["email"]["emails"][0]
        assert all(got[k] == "h" * 200 + "..." for k in cap_persistent.EMAIL_HEAVY)
        assert got["snippet"] == "s" * 300
        assert got["message_truncated"] is True  # message itself was cut: added
        assert {k for k in got if k.endswith("_truncated")} == {"message_truncated"}

    def test_b15_flags_truthful_per_field(self) -> None:
        """B15: a complete ``message`` is never flagged because its ``preview`` was cut;
        a producer's own ``<field>_truncated`` flag turns true when that field is cut."""
        record = {
            "id": "e1",
            "message": "whole",
            "preview": "p" * 3000,
            "preview_truncated": False,
            "body": "b" * 3000,
            "message_truncated": False,
        }
        out = cap_persistent.cap_block({"email": {"emails": [record]}}, 2_048, spilled)
        got = out["email"]["emails"][0]
        assert got["message"] == "whole" and got["message_truncated"] is False
        assert got["preview_truncated"] is True and "body_truncated" not in got

    def test_b15_no_email_note_below_budget_200(self) -> None:
        block = {"email": email_lane(30, 3000)}
        out = cap_persistent.cap_block(block, 10_000, spilled)
        bodies = {len(r["body"]) for r in out["email"]["emails"]}
        assert bodies in ({103}, {53}, {0})
        assert all(r["comment"] == "from work" for r in out["email"]["emails"])

    def test_b15_im_records(self) -> None:
        lane = im_lane(6, 3000)
        lane["messages"][0]["caption"] = "c" * 900
        lane["messages"][1]["comment"] = "seen"
        lane["messages"][2]["text_truncated"] = False
        out = cap_persistent.cap_block({"mcp": {"telegram": lane}}, 10_000, spilled)
        note = cap_persistent.IM_NOTE.format(im="telegram")
        first, second, third = out["mcp"]["telegram"]["messages"][:3]
        assert first["text"] == "t" * 200 + "..." and first["caption"] == "c" * 200 + "..."
        assert first["text_truncated"] is True and first["comment"] == note
        assert second["comment"] == f"seen {note}"
        assert third["text_truncated"] is True
        assert "call telegram.read" in note
        ref = out["mcp"]["telegram"]["referenced_messages"][0]
        assert ref["text"] == "r" * 200 + "..." and ref["text_truncated"] is True

    def test_b15_im_note_appended_once(self) -> None:
        note = cap_persistent.IM_NOTE.format(im="telegram")
        lane = im_lane(4, 4000)
        lane["messages"][0]["comment"] = f"seen {note}"
        out = cap_persistent.cap_block({"mcp": {"telegram": lane}}, 10_000, spilled)
        assert out["mcp"]["telegram"]["messages"][0]["comment"] == f"seen {note}"

    def test_b7_producer_overflow_key_replaced(self) -> None:
        block = {"overflow": {"producer": True}, "email": email_lane(5, 3000)}
        out = cap_persistent.cap_block(block, 10_000, spilled)
        assert out["overflow"] == {
            "path": PATH,
            "full_chars": measure_persistent(block),
            "truncated": True,
        }


class TestTiers:
    """B16: older context is compacted and stubbed before the current message is
    shortened, and again before it is ever stubbed."""

    def test_b16_protected_tier_keeps_the_current_message_whole(self) -> None:
        block = {"mcp": {"telegram": im_lane(30, 600, current=29)}}
        out = cap_persistent.cap_block(block, 4000, spilled)
        messages = records(out)
        assert messages[29] == block["mcp"]["telegram"]["messages"][29]
        assert any(stubbed(m) for m in messages[:29])
        dropped = out["mcp"]["telegram"]["dropped_ids"]
        assert dropped == [f"t{i}" for i in range(len(dropped))]  # oldest first
        assert all(stubbed(m) for m in messages[: len(dropped)])
        assert all(m["text"] == "" for m in messages[len(dropped) : 29])  # budget 0

    def test_b16_current_shortened_before_it_is_stubbed(self) -> None:
        block = {"mcp": {"telegram": im_lane(30, 600, current=29)}}
        block["mcp"]["telegram"]["messages"][29]["text"] = "C" * 5000
        out = cap_persistent.cap_block(block, 3000, spilled)
        current = records(out)[29]
        assert current["text"] == "C" * 200 + "..."
        assert current["text_truncated"] is True and current["is_current"] is True
        assert all(stubbed(m) for m in records(out)[:29])
        assert "t29" not in out["mcp"]["telegram"]["dropped_ids"]

    def test_b16_current_stubbed_last(self) -> None:
        block = {"mcp": {"telegram": im_lane(30, 600, current=29)}}
        out = cap_persistent.cap_block(block, 2048, spilled)
        assert all(stubbed(m) for m in records(out))
        assert out["mcp"]["telegram"]["dropped_ids"] == [f"t{i}" for i in range(30)]
        assert out["mcp"]["telegram"]["referenced_messages"][0]["id"] == "r1"  # never stubbed
        assert set(out["mcp"]["telegram"]["referenced_messages"][0]) == {
            "id",
            "text",
            "caption",
            "text_truncated",
            "comment",
        }

    def test_b16_round_robin_oldest_first(self) -> None:
        block = {
            "email": email_lane(8, 900),
            "mcp": {"telegram": im_lane(8, 900), "wechat": im_lane(8, 900)},
        }
        lanes = [("email", "emails"), ("telegram", "messages"), ("wechat", "messages")]
        seen_stub = False
        for cap in range(2048, 6000, 97):
            out = cap_persistent.cap_block(block, cap, failed)
            assert measure_persistent(out) <= cap
            counts = []
            for lane, key in lanes:
                holder = out["email"] if lane == "email" else out["mcp"][lane]
                flags = [stubbed(r) for r in holder[key]]
                n = sum(flags)
                assert flags == [True] * n + [False] * (len(flags) - n)  # a prefix: oldest first
                counts.append(n)
                assert holder.get("dropped_ids", []) == [r["id"] for r in holder[key][:n]]
            assert counts[0] >= counts[1] >= counts[2] >= counts[0] - 1
            seen_stub = seen_stub or 0 < sum(counts) < 24
        assert seen_stub

    def test_b16_stub_keeps_only_the_keys_it_had(self) -> None:
        block = {
            "mcp": {
                "telegram": {
                    "messages": [
                        {"id": "t0", "text": "x" * 9000, "from": "a"},
                        {"event_id": "ev1", "text": "y" * 9000},
                        {"id": "", "text": "z" * 9000},
                        "not a record",
                        {"id": "t0", "text": "w" * 9000},
                    ]
                }
            }
        }
        out = cap_persistent.cap_block(block, 400, spilled)
        assert records(out) == [
            {"id": "t0"},
            {"event_id": "ev1"},
            {"id": ""},
            "not a record",
            {"id": "t0"},
        ]
        assert out["mcp"]["telegram"]["dropped_ids"] == ["t0"]  # non-empty strings, once

    def test_b16_marker_only_after_both_tiers(self) -> None:
        block = {"mcp": {"telegram": im_lane(200, 100)}}
        out = cap_persistent.cap_block(block, 2048, spilled)
        assert out == {
            "overflow": {"path": PATH, "full_chars": measure_persistent(block), "truncated": True}
        }

    def test_b16_path_omitted_when_the_marker_is_too_long(self) -> None:
        block = {"mcp": {"telegram": im_lane(200, 100)}}
        out = cap_persistent.cap_block(block, 2048, long_path)
        assert out == {
            "overflow": {
                "path": None,
                "full_chars": measure_persistent(block),
                "truncated": True,
                "path_omitted": True,
                "spill_file": "notification-overflow-1-100.json",
            }
        }

    def test_b16_below_the_floor(self) -> None:
        block = {"mcp": {"telegram": im_lane(200, 100)}}
        assert cap_persistent.cap_block(block, 70, long_path) == {"overflow": {"truncated": True}}
        assert cap_persistent.cap_block(block, 1, long_path) == {}


class TestIdsKept:
    """B17: until the marker-only envelope no record is removed and structure stays."""

    def test_b17_ids_and_structure(self, tmp_path: Path) -> None:
        block = {
            "email": email_lane(12, 900),
            "mcp": {"telegram": im_lane(12, 900, current=11)},
            "extra": {"anything": [1, 2, 3]},
        }
        block["email"]["dropped_ids"] = ["old-1"]
        before = copy.deepcopy(block)
        for cap in (9000, 6000, 4000, 3000, 2048):
            out = cap_persistent.cap_block(block, cap, persistent_spiller(tmp_path))
            assert block == before  # never mutated
            email, tg = out["email"], out["mcp"]["telegram"]
            assert [r["id"] for r in email["emails"]] == [f"e{i}" for i in range(12)]
            assert [r["event_id"] for r in tg["messages"]] == [f"ev-t{i}" for i in range(12)]
            for key in ("email_ids", "count", "newest_received_at", "context_comment"):
                assert email[key] == before["email"][key]
            assert tg["previous_block"] == "blk-7"
            assert out["extra"] == before["extra"]
            assert email["dropped_ids"][:1] == ["old-1"]

    @pytest.mark.parametrize("cap", [2048, 5000])
    def test_b17_dropped_ids_only_grow(self, cap: int) -> None:
        block = {"mcp": {"telegram": {**im_lane(20, 900), "dropped_ids": ["t3", "gone"]}}}
        out = cap_persistent.cap_block(block, cap, spilled)
        dropped = out["mcp"]["telegram"]["dropped_ids"]
        assert dropped[:2] == ["t3", "gone"]
        assert len(dropped) == len(set(dropped))
