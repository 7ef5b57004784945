"""The generic durable inbox (memory-inbox.md M1-M9): admit, ignore, projection."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tidings.jobs.consumer import wait_for_wake
from tidings.jobs.ids import is_event_id, new_uuid7
from tidings.jobs.inbox import admission as inbox_admission
from tidings.jobs.inbox import projection, read_items
from tidings.jobs.runtime import Runtime
from tidings.store.clock import FakeClock
from tidings.store.errors import TidingsError
from tidings.store.inbox_keys import InboxKeys
from tidings.store.models import AgentRecord

AGENT = "a1"


def admit(rt: Runtime, summary: str = "hello", **kw: Any) -> dict[str, Any]:
    result = inbox_admission.admit(rt, AGENT, kw.pop("source_kind", "mail"), summary, **kw)
    assert result["status"] == "ok", result
    return result


def dump(rt: Runtime) -> dict[bytes, Any]:
    """Every key and its value, to prove that nothing was written."""
    out: dict[bytes, Any] = {}
    for key in rt.redis.keys("*"):
        kind = rt.redis.type(key)
        if kind == b"hash":
            out[key] = rt.redis.hgetall(key)
        elif kind == b"zset":
            out[key] = rt.redis.zrange(key, 0, -1, withscores=True)
        elif kind == b"string":
            out[key] = rt.redis.get(key)
        elif kind == b"stream":
            out[key] = rt.redis.xrange(key)
    return out


class TestItems:
    def test_m1_item_fields_and_event_never_rewritten(self, rt: Runtime) -> None:
        """M1: event + admission fields; the stored event stays byte-identical."""
        eid = admit(rt, "x", payload={"n": 1})["event_id"]
        k = InboxKeys(AGENT)
        stored = rt.redis.hget(k.events, eid)
        event = json.loads(stored)
        assert set(event) == {"event_id", "source_kind", "created_at", "summary", "payload"}
        assert event["created_at"].endswith("Z") and len(event["created_at"]) == 24
        [item] = read_items(rt, AGENT, [eid])
        for name in (
            "state",
            "seq",
            "claimed_at",
            "turn_id",
            "attempts",
            "side_effect_started_at",
            "handled_at",
            "ignored_at",
        ):
            assert name in item
        inbox_admission.ignore(rt, AGENT, eid)
        assert rt.redis.hget(k.events, eid) == stored

    def test_m2_event_ids_are_uuid7_hex_and_increasing(self) -> None:
        """M2: 32 lowercase hex digits of a UUIDv7, strictly increasing in a process."""
        ids = [new_uuid7() for _ in range(2000)]
        assert all(is_event_id(i) for i in ids)
        assert all(i[12] == "7" and i[16] in "89ab" for i in ids)
        assert ids == sorted(ids) and len(set(ids)) == len(ids)

    def test_m2_replayed_admission_is_a_noop_with_the_original_result(self, rt: Runtime) -> None:
        """M2: a redelivered admission (same id) writes nothing and answers the same."""
        eid = new_uuid7()
        first = inbox_admission.admit(rt, AGENT, "mail", "x", event_id=eid)
        before = dump(rt)
        again = inbox_admission.admit(rt, AGENT, "mail", "x", event_id=eid)
        assert again == first and first["event_id"] == eid
        assert dump(rt) == before


class TestAdmit:
    @pytest.mark.parametrize(
        ("args", "reason"),
        [
            (("Mail", "x"), "invalid_source_kind"),
            (("9mail", "x"), "invalid_source_kind"),
            (("m" * 65, "x"), "invalid_source_kind"),
            ((None, "x"), "invalid_source_kind"),
            (("memory-change", "x"), "reserved_source_kind"),
            (("mail", ""), "invalid_summary"),
            (("mail", 3), "invalid_summary"),
            (("mail", "x", [1]), "invalid_payload"),
            (("mail", "x", {"f": float("nan")}), "invalid_payload"),
            (("mail", "x", {"b": "y" * 65_530}), "payload_too_large"),
            (("mail", "x", None, False, ""), "invalid_key"),
            (("mail", "x", None, False, "k" * 201), "invalid_key"),
        ],
    )
    def test_m3_bad_input_writes_nothing(
        self, rt: Runtime, args: tuple[Any, ...], reason: str
    ) -> None:
        """M3: each bad input answers its reason and writes nothing."""
        result = inbox_admission.admit(rt, AGENT, *args)
        assert result["status"] == "error" and result["reason"] == reason
        assert dump(rt) == {}

    def test_m3_result_and_accepted_edges(self, rt: Runtime) -> None:
        """M3: ok result shape; 64-char kind, exact payload limit and 200-char key pass."""
        result = admit(rt, source_kind="a" + "b" * 63, key="k" * 200)
        assert set(result) == {"status", "event_id", "state", "woke"}
        assert result["state"] == "pending" and result["woke"] is False
        assert is_event_id(result["event_id"])
        overhead = len(json.dumps({"b": ""}, separators=(",", ":")))
        admit(rt, payload={"b": "y" * (65_536 - overhead)})

    def test_m3_long_summary_is_cut_like_m37(self, rt: Runtime) -> None:
        """M3/M37: a summary beyond 4096 UTF-8 bytes is cut on a code point, marked."""
        result = admit(rt, "é" * 3000)
        assert result["truncated"] is True
        [item] = read_items(rt, AGENT, [result["event_id"]])
        text = item["summary"]
        assert text.endswith("\n…(truncated)") and len(text.encode()) <= 4096
        assert len(text.encode()) > 4096 - 4
        assert "truncated" not in admit(rt, "é" * 2048)

    def test_m3_idempotency_key_returns_the_retained_item(self, rt: Runtime) -> None:
        """M3: a retained item with the key → no write, its id with duplicate: true."""
        first = admit(rt, key="mail-42")
        before = dump(rt)
        again = inbox_admission.admit(rt, AGENT, "mail", "other text", key="mail-42")
        assert again == {"status": "ok", "event_id": first["event_id"], "duplicate": True}
        assert dump(rt) == before
        assert admit(rt, key="mail-43")["event_id"] != first["event_id"]

    def test_m4_only_wake_true_appends_a_wake_entry(self, rt: Runtime) -> None:
        """M4: wake=True appends {kind, agent_id, at, event_id} to the wake stream."""
        k = InboxKeys(AGENT)
        admit(rt)
        assert rt.redis.exists(k.wake_stream) == 0
        result = admit(rt, wake=True)
        assert result["woke"] is True
        [(_, fields)] = rt.redis.xrange(k.wake_stream)
        assert fields[b"kind"] == b"inbox"
        entry = json.loads(fields[b"entry"])
        assert entry == {
            "kind": "inbox",
            "agent_id": AGENT,
            "at": entry["at"],
            "event_id": result["event_id"],
        }

    def test_m4_wait_for_wake_sees_the_inbox_signal(self, rt: Runtime, agent: AgentRecord) -> None:
        """M4/C26: the orchestrator's wait_for_wake returns the inbox wake entry."""
        eid = inbox_admission.admit(rt, agent.agent_id, "mail", "urgent", wake=True)["event_id"]
        signal = wait_for_wake(rt, agent, 1)
        assert signal is not None
        assert (signal["kind"], signal["event_id"]) == ("inbox", eid)


class TestIgnore:
    def test_m6_ignore_outcomes(self, rt: Runtime) -> None:
        """M6: pending → ignored; again → changed false; unknown → not_found."""
        eid = admit(rt)["event_id"]
        result = inbox_admission.ignore(rt, AGENT, eid)
        assert result == {"status": "ok", "event_id": eid, "state": "ignored", "changed": True}
        assert inbox_admission.ignore(rt, AGENT, eid)["changed"] is False
        [item] = projection(rt, AGENT)
        assert item["state"] == "ignored" and item["ignored_at"]
        assert inbox_admission.ignore(rt, AGENT, new_uuid7())["reason"] == "not_found"
        assert inbox_admission.ignore(rt, AGENT, "nope")["reason"] == "not_found"

    def test_m6_handled_and_needs_repair_are_not_ignorable(self, rt: Runtime) -> None:
        """M6: handled or needs-repair → not_ignorable, unchanged."""
        k = InboxKeys(AGENT)
        handled, repair = admit(rt)["event_id"], admit(rt)["event_id"]
        rt.redis.hset(k.admissions, f"{handled}:state", "handled")
        rt.redis.hset(k.admissions, f"{repair}:state", "needs-repair")
        for eid in (handled, repair):
            before = dump(rt)
            assert inbox_admission.ignore(rt, AGENT, eid)["reason"] == "not_ignorable"
            assert dump(rt) == before

    def test_m6_ignored_item_leaves_selection(self, rt: Runtime) -> None:
        """M6: an ignored item is no longer selectable nor open."""
        k = InboxKeys(AGENT)
        eid = admit(rt)["event_id"]
        inbox_admission.ignore(rt, AGENT, eid)
        assert rt.redis.zscore(k.selectable, eid) is None
        assert rt.redis.zscore(k.open, eid) is None


class TestProjection:
    def test_m7_newest_first_with_paging(self, rt: Runtime, clock: FakeClock) -> None:
        """M7: created_at then event_id descending; `before` starts after that id."""
        ids = []
        for n in range(5):
            ids.append(admit(rt, f"n{n}")["event_id"])
            if n % 2:
                clock.advance(1)
        page = projection(rt, AGENT, limit=2)
        assert [i["event_id"] for i in page] == ids[::-1][:2]
        rest = projection(rt, AGENT, before=page[-1]["event_id"])
        assert [i["event_id"] for i in rest] == ids[::-1][2:]

    def test_m7_item_fields_and_240_char_summary(self, rt: Runtime) -> None:
        """M7: interfaces.md fields + claimed_at/handled_at/ignored_at/turn_id; summary ≤ 240."""
        admit(rt, "z" * 300, payload={"a": 1})
        [item] = projection(rt, AGENT)
        for name in (
            "event_id",
            "source_kind",
            "state",
            "created_at",
            "summary",
            "payload",
            "claimed_at",
            "handled_at",
            "ignored_at",
            "turn_id",
        ):
            assert name in item
        assert item["summary"] == "z" * 239 + "…" and item["payload"] == {"a": 1}
        assert item["state"] == "pending"

    def test_m7_state_filter(self, rt: Runtime) -> None:
        """M7: `state` selects one projection state."""
        keep = admit(rt)["event_id"]
        gone = admit(rt)["event_id"]
        inbox_admission.ignore(rt, AGENT, gone)
        assert [i["event_id"] for i in projection(rt, AGENT, state="pending")] == [keep]
        assert [i["event_id"] for i in projection(rt, AGENT, state="ignored")] == [gone]
        assert projection(rt, AGENT, state="deferred") == []

    @pytest.mark.parametrize(
        ("kwargs", "reason"),
        [
            ({"limit": 0}, "invalid_limit"),
            ({"limit": 101}, "invalid_limit"),
            ({"limit": True}, "invalid_limit"),
            ({"state": "running"}, "invalid_state"),
            ({"before": "x"}, "invalid_before"),
            ({"before": "0" * 32}, "invalid_before"),
        ],
    )
    def test_m7_bad_queries_raise_with_reason(
        self, rt: Runtime, kwargs: dict[str, Any], reason: str
    ) -> None:
        """M7 + interfaces.md Errors: bad input raises TidingsError(.reason)."""
        admit(rt)
        with pytest.raises(TidingsError) as info:
            projection(rt, AGENT, **kwargs)
        assert info.value.reason == reason

    def test_m7_projection_is_read_only(self, rt: Runtime) -> None:
        """M7: listing writes nothing and never wakes."""
        admit(rt)
        before = dump(rt)
        projection(rt, AGENT, limit=100)
        assert dump(rt) == before


class TestBounds:
    def test_m8_open_items_are_bounded(self, rt: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
        """M8: one item beyond the open bound is refused with inbox_full."""
        monkeypatch.setattr(inbox_admission, "MAX_OPEN", 3)
        first = [admit(rt)["event_id"] for _ in range(3)]
        before = dump(rt)
        assert inbox_admission.admit(rt, AGENT, "mail", "x")["reason"] == "inbox_full"
        assert dump(rt) == before
        inbox_admission.ignore(rt, AGENT, first[0])
        admit(rt)

    def test_m8_terminal_items_beyond_the_bound_are_forgotten(
        self, rt: Runtime, monkeypatch: pytest.MonkeyPatch, clock: FakeClock
    ) -> None:
        """M8: the script making an item terminal deletes older terminal ones (event,
        admission, key)."""
        monkeypatch.setattr(inbox_admission, "MAX_TERMINAL", 2)
        k = InboxKeys(AGENT)
        ids = [admit(rt, key=f"k{n}")["event_id"] for n in range(3)]
        for eid in ids:
            clock.advance(1)
            inbox_admission.ignore(rt, AGENT, eid)
        assert [i["event_id"] for i in projection(rt, AGENT)] == ids[:0:-1]
        assert rt.redis.hget(k.events, ids[0]) is None
        assert not [f for f in rt.redis.hkeys(k.admissions) if f.startswith(ids[0].encode())]
        assert rt.redis.hget(k.key_index, inbox_admission.key_digest("k0")) is None
        assert admit(rt, key="k0")["event_id"] != ids[0]

    def test_m9_every_inbox_key_carries_the_hash_tag(self, rt: Runtime) -> None:
        """M9: every Redis key of the agent carries {a:<agent_id>}."""
        eid = admit(rt, wake=True, key="k")["event_id"]
        inbox_admission.ignore(rt, AGENT, eid)
        inbox_admission.recover(rt, AGENT)
        # The hub-wide wake-rate buckets (store/rates.py) belong to no agent.
        keys = [k for k in rt.redis.keys("*") if not k.startswith(b"{tidings:rates}")]
        assert keys and all(key.startswith(b"{a:a1}:") for key in keys)
