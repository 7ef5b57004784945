"""The orchestrator's turn API on the generic inbox (memory-inbox.md M5, M11, M43-M47,
M51, M53)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import make_agent
from tidings.jobs.inbox import admission as inbox_admission
from tidings.jobs.inbox import projection
from tidings.jobs.runtime import Runtime
from tidings.jobs.turns import finish_turn, mark_side_effect
from tidings.jobs.turns import prepare as turn_prepare
from tidings.store.clock import FakeClock
from tidings.store.inbox_keys import InboxKeys
from tidings.store.keys import agent_record
from tidings.store.models import AgentRecord

Result = dict[str, Any]


def admit(rt: Runtime, agent: AgentRecord, summary: str = "hello", **kw: Any) -> str:
    result = inbox_admission.admit(rt, agent.agent_id, kw.pop("source_kind", "mail"), summary, **kw)
    assert result["status"] == "ok", result
    return str(result["event_id"])


def prepare(rt: Runtime, agent: AgentRecord, kind: str = "ordinary") -> Result:
    result = turn_prepare.prepare_turn(rt, agent, kind)
    assert result["status"] == "ok", result
    return result


def finish(rt: Runtime, agent: AgentRecord, turn: Result, **kw: Any) -> Result:
    return finish_turn(rt, agent, turn["turn_id"], **kw)


def states(rt: Runtime, agent: AgentRecord) -> dict[str, str]:
    return {i["event_id"]: i["state"] for i in projection(rt, agent.agent_id, limit=100)}


class TestPrepare:
    def test_m43_turn_fields_and_empty_inbox(self, rt: Runtime, agent: AgentRecord) -> None:
        """M43: a Turn's fields; nothing claimed → inbox_text "" (M45)."""
        turn = prepare(rt, agent)
        assert set(turn) == {
            "status",
            "turn_id",
            "kind",
            "inbox",
            "inbox_text",
            "attention",
            "memory",
            "lease_expires_at",
        }
        assert turn["inbox"] == [] and turn["inbox_text"] == ""
        assert turn["memory"]["status"] == "unavailable"  # no memory_repo: the turn proceeds
        assert turn["lease_expires_at"].endswith("Z")

    def test_m43_m53_one_turn_at_a_time(self, rt: Runtime, agent: AgentRecord) -> None:
        """M43 step 1 / M53: a second prepare answers turn_in_progress and writes nothing."""
        first = prepare(rt, agent)
        admit(rt, agent)
        second = turn_prepare.prepare_turn(rt, agent)
        assert second["status"] == "error" and second["reason"] == "turn_in_progress"
        assert second["turn_id"] == first["turn_id"]
        assert list(states(rt, agent).values()) == ["pending"]

    def test_m53_agents_are_independent(
        self, rt: Runtime, agent: AgentRecord, tmp_path: Path
    ) -> None:
        """M53: another agent's open turn does not block this one."""
        other = make_agent(rt, tmp_path / "other", agent_id="a2")
        prepare(rt, agent)
        prepare(rt, other)

    def test_m43_expired_turn_is_recovered_and_its_finish_refused(
        self, rt: Runtime, agent: AgentRecord, clock: FakeClock
    ) -> None:
        """M43: past the lease the next prepare recovers; the late finish gets
        turn_expired and writes nothing."""
        eid = admit(rt, agent)
        stale = prepare(rt, agent)
        clock.advance(rt.settings.turn_lease_seconds + 1)
        fresh = prepare(rt, agent)
        assert [i["event_id"] for i in fresh["inbox"]] == [eid]
        assert fresh["inbox"][0]["attempts"] == 2
        late = finish(rt, agent, stale)
        assert late["reason"] == "turn_expired"
        assert states(rt, agent) == {eid: "processing"}

    def test_m43_turn_items_carry_full_summaries(self, rt: Runtime, agent: AgentRecord) -> None:
        """M43 step 3: the Turn's items keep the whole summary (not the 240 cut)."""
        admit(rt, agent, "w" * 500)
        [item] = prepare(rt, agent)["inbox"]
        assert item["summary"] == "w" * 500 and item["state"] == "processing"

    @pytest.mark.parametrize("kind", ["", "Ordinary", "chat", None])
    def test_m11_invalid_kind(self, rt: Runtime, agent: AgentRecord, kind: Any) -> None:
        """M11: any other kind → invalid_kind, nothing written."""
        result = turn_prepare.prepare_turn(rt, agent, kind)
        assert result["reason"] == "invalid_kind"
        # Only the agent's registry record (issue 25), which the fixture wrote.
        assert rt.redis.keys("{a:a1}:*") == [agent_record("a1").encode()]


class TestClaim:
    def test_m44_claims_twenty_oldest_first(self, rt: Runtime, agent: AgentRecord) -> None:
        """M44: ≤ 20 selectable items in ascending seq; the rest wait."""
        ids = [admit(rt, agent, f"n{n}") for n in range(23)]
        turn = prepare(rt, agent)
        assert [i["event_id"] for i in turn["inbox"]] == ids[:20]
        item = turn["inbox"][0]
        assert item["turn_id"] == turn["turn_id"] and item["claimed_at"] and item["attempts"] == 1
        assert [s for s in states(rt, agent).values()].count("pending") == 3

    def test_m44_retryable_items_keep_their_seq(self, rt: Runtime, agent: AgentRecord) -> None:
        """M44: a deferred item is selected again before newer pending ones."""
        old = admit(rt, agent, "old")
        turn = prepare(rt, agent)
        finish(rt, agent, turn, ok=False)
        new = admit(rt, agent, "new")
        again = prepare(rt, agent)
        assert [i["event_id"] for i in again["inbox"]] == [old, new]
        assert again["inbox"][0]["attempts"] == 2

    def test_m45_inbox_text_lines(self, rt: Runtime, agent: AgentRecord) -> None:
        """M45: [Inbox] line, one line per item in claim order, line breaks as spaces,
        closing line without memory events."""
        a = admit(rt, agent, "first\nline")
        b = admit(rt, agent, "second", source_kind="cron.daily")
        text = prepare(rt, agent)["inbox_text"]
        lines = text.split("\n")
        assert lines[0].startswith("[Inbox]")
        assert lines[1] == f"- {a} mail: first line"
        assert lines[2] == f"- {b} cron.daily: second"
        assert lines[3] == "Decide what needs attention."


class TestFinish:
    def test_m46_marks_handled_and_releases_the_slot(self, rt: Runtime, agent: AgentRecord) -> None:
        """M46: ok → handled; the slot is released; result lists."""
        a, b = admit(rt, agent), admit(rt, agent)
        turn = prepare(rt, agent)
        done = finish(rt, agent, turn, ignored=[b, "0" * 32])
        assert done == {
            "status": "ok",
            "turn_id": turn["turn_id"],
            "memory": done["memory"],
            "handled": [a],
            "ignored": [b],
            "retryable": [],
            "needs_repair": [],
            "not_claimed": ["0" * 32],
        }
        assert done["memory"]["status"] == "skipped"
        assert states(rt, agent) == {a: "handled", b: "ignored"}
        prepare(rt, agent)

    def test_m46_failed_turn_defers_or_needs_repair(self, rt: Runtime, agent: AgentRecord) -> None:
        """M46 step 3: not ok → retryable (deferred) unless side effects → needs-repair;
        both lose claimed_at and turn_id."""
        a = admit(rt, agent)
        done = finish(rt, agent, prepare(rt, agent), ok=False)
        assert done["retryable"] == [a]
        [item] = projection(rt, agent.agent_id)
        assert item["state"] == "deferred" and item["claimed_at"] is None
        assert item["turn_id"] is None
        done = finish(rt, agent, prepare(rt, agent), ok=False, side_effects=True)
        assert done["needs_repair"] == [a]
        assert states(rt, agent) == {a: "needs-repair"}
        assert prepare(rt, agent)["inbox"] == []  # M5: never selected automatically

    def test_m46_ignored_wins_even_if_not_ok(self, rt: Runtime, agent: AgentRecord) -> None:
        """M46 step 3: an id in `ignored` becomes ignored even when ok is false."""
        a = admit(rt, agent)
        done = finish(rt, agent, prepare(rt, agent), ok=False, ignored=[a])
        assert done["ignored"] == [a] and states(rt, agent) == {a: "ignored"}

    def test_m6_m46_finish_leaves_an_item_ignored_during_the_turn(
        self, rt: Runtime, agent: AgentRecord
    ) -> None:
        """M6: a turn's finish must not change an item ignored meanwhile."""
        a, b = admit(rt, agent), admit(rt, agent)
        turn = prepare(rt, agent)
        assert inbox_admission.ignore(rt, agent.agent_id, a)["changed"] is True
        done = finish(rt, agent, turn)
        assert done["handled"] == [b] and done["ignored"] == []
        assert states(rt, agent) == {a: "ignored", b: "handled"}

    def test_m46_repeated_finish_returns_the_stored_result(
        self, rt: Runtime, agent: AgentRecord
    ) -> None:
        """M46 step 1: a repeated call returns the stored result, writes nothing."""
        admit(rt, agent)
        turn = prepare(rt, agent)
        first = finish(rt, agent, turn)
        assert finish(rt, agent, turn, ok=False) == first

    @pytest.mark.parametrize(
        "kwargs",
        [
            {"ok": "yes"},
            {"side_effects": 1},
            {"ignored": "abc"},
            {"ignored": [1]},
            {"owned": []},
            {"owned": {"paths": {"a.md": 3}}},
            {"owned": {"commits": "c1"}},
            {"owned": {"branch": 1}},
            {"owned": {"files": {}}},
        ],
    )
    def test_m46_invalid_input_writes_nothing(
        self, rt: Runtime, agent: AgentRecord, kwargs: dict[str, Any]
    ) -> None:
        """M46 step 1: bad input → invalid_input; the turn stays open."""
        admit(rt, agent)
        turn = prepare(rt, agent)
        result = finish(rt, agent, turn, **kwargs)
        assert result["reason"] == "invalid_input"
        assert list(states(rt, agent).values()) == ["processing"]

    def test_m46_unknown_turn(self, rt: Runtime, agent: AgentRecord) -> None:
        """M46 step 1: an unknown turn id → unknown_turn; a non-id → invalid_input."""
        assert finish_turn(rt, agent, "f" * 32)["reason"] == "unknown_turn"
        assert finish_turn(rt, agent, "nope")["reason"] == "invalid_input"


class TestSideEffects:
    def test_m47_marked_side_effect_makes_failure_need_repair(
        self, rt: Runtime, agent: AgentRecord
    ) -> None:
        """M47: mark_side_effect stamps the running items; a failed turn → needs-repair."""
        a = admit(rt, agent)
        turn = prepare(rt, agent)
        marked = mark_side_effect(rt, agent, turn["turn_id"])
        assert marked == {"status": "ok", "turn_id": turn["turn_id"], "marked": [a]}
        assert finish(rt, agent, turn, ok=False)["needs_repair"] == [a]

    def test_m47_errors(self, rt: Runtime, agent: AgentRecord, clock: FakeClock) -> None:
        """M47: unknown, finished and expired turns are refused."""
        assert mark_side_effect(rt, agent, "e" * 32)["reason"] == "unknown_turn"
        turn = prepare(rt, agent)
        finish(rt, agent, turn)
        assert mark_side_effect(rt, agent, turn["turn_id"])["reason"] == ("turn_finished")
        turn = prepare(rt, agent)
        clock.advance(rt.settings.turn_lease_seconds + 1)
        assert mark_side_effect(rt, agent, turn["turn_id"])["reason"] == ("turn_expired")


class TestRecovery:
    def test_m51_startup_recovers_running_items_idempotently(
        self, rt: Runtime, agent: AgentRecord
    ) -> None:
        """M51: running → retryable, or needs-repair after a marked side effect; the open
        turn is closed (its finish gets turn_expired); rerunning changes nothing."""
        a, b = admit(rt, agent), admit(rt, agent)
        turn = prepare(rt, agent)
        k = InboxKeys(agent.agent_id)
        rt.redis.hset(k.admissions, f"{b}:side_effect_started_at", "2030-01-01T00:00:00.000Z")
        started = turn_prepare.startup(rt, agent)
        assert started["status"] == "ok"
        assert started["recovered"] == {"retryable": [a], "needs_repair": [b]}
        assert started["memory"]["status"] == "unavailable"
        assert states(rt, agent) == {a: "deferred", b: "needs-repair"}
        [item] = projection(rt, agent.agent_id, state="deferred")
        assert item["claimed_at"] is None and item["turn_id"] is None
        assert turn_prepare.startup(rt, agent)["recovered"] == {"retryable": [], "needs_repair": []}
        assert finish(rt, agent, turn)["reason"] == "turn_expired"
        assert [i["event_id"] for i in prepare(rt, agent)["inbox"]] == [a]

    def test_m51_a_failing_agent_does_not_stop_the_others(
        self, rt: Runtime, agent: AgentRecord, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """M51: start-up for several agents logs a failing one and goes on."""
        other = make_agent(rt, tmp_path / "other", agent_id="a2")
        real = inbox_admission.recover

        def flaky(rt: Runtime, agent_id: str, **kw: Any) -> Result:
            if agent_id == "a1":
                raise ConnectionError("boom")
            return real(rt, agent_id, **kw)

        monkeypatch.setattr(turn_prepare, "recover", flaky)  # where prepare looks it up
        results = turn_prepare.startup_all(rt, [agent, other])
        assert results["a1"]["reason"] == "startup_failed"
        assert results["a2"]["status"] == "ok"

    def test_m5_transitions_only_by_claim_finish_recovery_ignore(
        self, rt: Runtime, agent: AgentRecord
    ) -> None:
        """M5: pending → processing → deferred → processing → handled (terminal)."""
        a = admit(rt, agent)
        seen = [states(rt, agent)[a]]
        turn = prepare(rt, agent)
        seen.append(states(rt, agent)[a])
        finish(rt, agent, turn, ok=False)
        seen.append(states(rt, agent)[a])
        turn = prepare(rt, agent)
        finish(rt, agent, turn)
        seen.append(states(rt, agent)[a])
        turn_prepare.startup(rt, agent)
        seen.append(states(rt, agent)[a])
        assert seen == ["pending", "processing", "deferred", "handled", "handled"]
        assert inbox_admission.ignore(rt, agent.agent_id, a)["reason"] == "not_ignorable"


@pytest.mark.parametrize("kind", ["bridge", "peer"])
def test_memory_of_a_non_observing_turn_is_exactly_skipped(
    rt: Runtime, agent: AgentRecord, kind: str
) -> None:
    """memory-inbox.md §9: ``Turn.memory`` is exactly ``{"status": "skipped"}``."""
    assert prepare(rt, agent, kind)["memory"] == {"status": "skipped"}
