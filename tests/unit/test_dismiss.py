"""Dismissal (channels.md C9, C35-C37; issue 4 acceptance 4)."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from tidings.jobs.channels import add, publishing
from tidings.jobs.consumer import check_placeholder, committed, dismiss, stamp, sync_agent
from tidings.jobs.runtime import Runtime
from tidings.store import keys
from tidings.store.models import AgentRecord


def deliver(rt: Runtime, agent: AgentRecord) -> None:
    """What the agent sees next: a stamped result commits the delivered version."""
    stamp(rt, agent, check_placeholder())


def path(agent: AgentRecord, channel: str) -> Path:
    return agent.root / ".notification" / f"{channel}.json"


def mirror(agent: AgentRecord, channel: str) -> dict[str, Any]:
    value = json.loads(path(agent, channel).read_bytes())
    assert isinstance(value, dict)
    return value


def system_events(rt: Runtime, agent: AgentRecord, *events: dict[str, Any]) -> list[str]:
    return [publishing.append_event(rt, agent, "system", e)["event_id"] for e in events]


class TestC35GuardOrder:
    def test_1_invalid_channel_first(self, rt: Runtime, agent: AgentRecord) -> None:
        for call in (
            dismiss.dismiss_channel(rt, agent, "a..b", force=True),
            dismiss.dismiss_event(rt, agent, "e", channel="nope"),
        ):
            assert call["reason"] == "invalid_channel"

    def test_2_post_molt_needs_a_reason(self, rt: Runtime, agent: AgentRecord) -> None:
        for reason in (None, "", "   "):
            result = dismiss.dismiss_channel(rt, agent, "post-molt", force=True, reason=reason)
            assert result["reason"] == "missing_ack_reason"
        assert dismiss.dismiss_event(rt, agent, "e", channel="post-molt")["reason"] == (
            "missing_ack_reason"
        )
        ok = dismiss.dismiss_channel(rt, agent, "post-molt", reason="read it")
        assert ok["status"] == "ok" and ok["reason"] == "read it"

    def test_3_goal_is_protected_even_with_force(self, rt: Runtime, agent: AgentRecord) -> None:
        publishing.publish(rt, agent, "goal", {"header": "ship it"})
        deliver(rt, agent)
        assert dismiss.dismiss_channel(rt, agent, "goal", force=True)["reason"] == (
            "protected_channel"
        )
        assert dismiss.dismiss_ref(rt, agent, "r", channel="goal")["reason"] == "protected_channel"
        assert path(agent, "goal").exists()

    def test_4_event_targets_need_system_or_daemon(self, rt: Runtime, agent: AgentRecord) -> None:
        for channel in ("email", "soul", "mcp.x"):
            result = dismiss.dismiss_event(rt, agent, "e", channel=channel, force=True)
            assert result["reason"] == "atomic_dismiss_requires_system_channel"

    def test_5_guard_without_force(self, rt: Runtime, agent: AgentRecord) -> None:
        publishing.publish(rt, agent, "email", {"header": "3 unread"})
        deliver(rt, agent)
        guarded = dismiss.dismiss_channel(rt, agent, "email")
        assert guarded["reason"] == "guarded"
        assert guarded["suggested_verb"] == dismiss.DEFAULT_GUARDS["email"]
        assert dismiss.dismiss_channel(rt, agent, "email", force=True)["cleared"] is True

    def test_5_before_6_guard_beats_stale(self, rt: Runtime, agent: AgentRecord) -> None:
        rt.redis.hset(keys.DISMISS_GUARDS, "soul", "soul(action='ack')")
        publishing.publish(rt, agent, "soul", {"header": "never delivered"})
        assert dismiss.dismiss_channel(rt, agent, "soul")["reason"] == "guarded"

    def test_6_stale_channel_version(self, rt: Runtime, agent: AgentRecord) -> None:
        publishing.publish(rt, agent, "soul", {"header": "v1"})
        deliver(rt, agent)
        seen = committed.read(rt, agent).delivered_entry("soul.json")
        publishing.publish(rt, agent, "soul", {"header": "v2"})
        before = path(agent, "soul").read_bytes()
        stale = dismiss.dismiss_channel(rt, agent, "soul")
        assert stale["status"] == "error" and stale["reason"] == "stale_channel_version"
        assert stale["channel"] == "soul" and stale["forced"] is False
        assert stale["delivered_version"] == seen
        assert stale["current_version"][2] != seen[2] and stale["message"]
        assert path(agent, "soul").read_bytes() == before
        forced = dismiss.dismiss_channel(rt, agent, "soul", force=True)
        assert forced == {"status": "ok", "channel": "soul", "cleared": True, "forced": True}

    def test_6_undelivered_file_expects_no_file(self, rt: Runtime, agent: AgentRecord) -> None:
        publishing.publish(rt, agent, "soul", {"header": "never shown"})
        result = dismiss.dismiss_channel(rt, agent, "soul")
        assert result["reason"] == "stale_channel_version"
        assert result["delivered_version"] is None

    def test_store_oserror_is_clear_failed(
        self, rt: Runtime, agent: AgentRecord, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        publishing.publish(rt, agent, "soul", {"header": "x"})
        deliver(rt, agent)

        def failing(*args: Any) -> bool:
            raise PermissionError(13, "denied")

        monkeypatch.setattr(dismiss, "remove_file", failing)
        assert dismiss.dismiss_channel(rt, agent, "soul")["reason"] == "clear_failed"


class TestC36Results:
    def test_whole_already_empty_and_reason(self, rt: Runtime, agent: AgentRecord) -> None:
        result = dismiss.dismiss_channel(rt, agent, "soul", reason="tidy")
        assert result == {
            "status": "ok",
            "channel": "soul",
            "cleared": False,
            "forced": False,
            "cause": "already_empty",
            "reason": "tidy",
        }

    def test_event_removes_every_match_keeps_others(self, rt: Runtime, agent: AgentRecord) -> None:
        events = [
            {"event_id": "dup", "n": 1},
            {"event_id": "keep", "n": 2},
            {"event_id": "dup", "n": 3, "severity": "high"},
        ]
        publishing.publish(
            rt, agent, "system", {"header": "3", "priority": "high", "data": {"events": events}}
        )
        deliver(rt, agent)
        result = dismiss.dismiss_event(rt, agent, "dup")
        assert result == {
            "status": "ok",
            "channel": "system",
            "cleared": True,
            "removed": 2,
            "remaining": 1,
            "forced": False,
            "event_id": "dup",
        }
        envelope = mirror(agent, "system")
        assert [e["event_id"] for e in envelope["data"]["events"]] == ["keep"]
        assert envelope["header"] == "1 system notification(s)"
        assert envelope["priority"] == "normal"  # the high event is gone

    def test_ref_no_match_and_last_removal_deletes(self, rt: Runtime, agent: AgentRecord) -> None:
        system_events(rt, agent, {"ref_id": "r1", "n": 1})
        deliver(rt, agent)
        miss = dismiss.dismiss_ref(rt, agent, "zzz")
        assert miss == {
            "status": "ok",
            "channel": "system",
            "cleared": False,
            "removed": 0,
            "remaining": 1,
            "forced": False,
            "ref_id": "zzz",
            "cause": "no_matching_event",
        }
        hit = dismiss.dismiss_ref(rt, agent, "r1")
        assert hit["removed"] == 1 and hit["remaining"] == 0
        assert not path(agent, "system").exists()

    def test_missing_targets(self, rt: Runtime, agent: AgentRecord) -> None:
        assert dismiss.dismiss_event(rt, agent, None)["reason"] == "missing_event_id"
        assert dismiss.dismiss_ref(rt, agent, "")["reason"] == "missing_ref_id"
        assert dismiss.dismiss_channel(rt, agent, None)["reason"] == "missing_channel"
        assert dismiss.dismiss_channel(rt, agent, "system", event_id="e")["reason"] == (
            "channel_dismiss_rejects_event_target"
        )

    def test_dismissal_never_wakes(self, rt: Runtime, agent: AgentRecord) -> None:
        system_events(rt, agent, {"ref_id": "a"}, {"ref_id": "b"})
        publishing.publish(rt, agent, "soul", {"header": "s"})
        deliver(rt, agent)
        assert dismiss.dismiss_ref(rt, agent, "a")["removed"] == 1
        assert dismiss.dismiss_channel(rt, agent, "soul")["cleared"] is True
        delivered = committed.read(rt, agent).delivered
        assert [e[0] for e in delivered] == ["system.json"]
        assert sync_agent(rt, agent)["woke"] is False

    def test_concurrent_change_elsewhere_still_wakes(self, rt: Runtime, agent: AgentRecord) -> None:
        publishing.publish(rt, agent, "soul", {"header": "s"})
        deliver(rt, agent)
        publishing.publish(rt, agent, "mcp.x", {"header": "news"})  # not yet seen by the agent
        dismiss.dismiss_channel(rt, agent, "soul")
        assert sync_agent(rt, agent)["woke"] is True


def test_c9_dismissal_changes_only_the_mirror_file(rt: Runtime, agent: AgentRecord) -> None:
    (agent.root / "mail").mkdir()
    (agent.root / "mail" / "read-state.json").write_text('{"unread": ["m1"]}')
    publishing.publish(rt, agent, "email", {"header": "1 unread", "data": {"email_ids": ["m1"]}})
    publishing.publish(rt, agent, "goal", {"header": "goal"})
    deliver(rt, agent)

    def files() -> dict[str, bytes]:
        return {
            str(p.relative_to(agent.root)): p.read_bytes()
            for p in agent.root.rglob("*")
            if p.is_file() and ".locks" not in p.parts
        }

    before = files()
    dismiss.dismiss_channel(rt, agent, "email", force=True)
    after = files()
    assert set(before) - set(after) == {".notification/email.json"}
    assert all(after[name] == before[name] for name in after)


def test_c37_guards_hub_wide_last_wins_and_hooks_install_none(
    rt: Runtime, agent: AgentRecord
) -> None:
    rt.redis.hset(keys.DISMISS_GUARDS, "email", "first()")
    rt.redis.hset(keys.DISMISS_GUARDS, "email", "second()")
    assert dismiss.guard_for(rt, "email") == "second()"
    add(
        rt,
        agent,
        {
            "name": "h",
            "channel": "deploys",
            "source": "s",
            "description": "d",
            "how_to_modify": "m",
            "how_to_cancel": "c",
        },
    )
    assert dismiss.guard_for(rt, "deploys") is None
    publishing.publish(rt, agent, "deploys", {"header": "x"})
    deliver(rt, agent)
    assert dismiss.dismiss_channel(rt, agent, "deploys")["cleared"] is True


@pytest.mark.parametrize("force", [False, True])
def test_acceptance4_append_while_dismissing_never_loses_the_new_event(
    rt: Runtime, agent: AgentRecord, force: bool
) -> None:
    """Acceptance 4: a producer appends while the agent dismisses older events."""
    old = system_events(rt, agent, *({"event_id": f"old{n}"} for n in range(5)))
    deliver(rt, agent)
    start = threading.Barrier(2)
    new_ids: list[str] = []

    def producer() -> None:
        start.wait(5)
        for n in range(10):
            new_ids.append(
                publishing.append_event(rt, agent, "system", {"event_id": f"new{n}"})["event_id"]
            )

    thread = threading.Thread(target=producer)
    thread.start()
    start.wait(5)
    for event_id in old:
        for _ in range(200):
            result = dismiss.dismiss_event(rt, agent, event_id, force=force)
            if result["status"] == "ok":
                break
            assert result["reason"] == "stale_channel_version"
            deliver(rt, agent)  # the agent looks again, then retries
        assert result["status"] == "ok", result
    thread.join(30)
    kept = [e["event_id"] for e in mirror(agent, "system")["data"]["events"]]
    assert kept == [f"new{n}" for n in range(10)]
    assert len(new_ids) == 10


def test_symlinked_channel_file_cannot_be_cleared(
    rt: Runtime, agent: AgentRecord, tmp_path: Path
) -> None:
    """Acceptance 5: a symlinked channel file: no crash, never followed."""
    outside = tmp_path / "outside.json"
    outside.write_text('{"header": "elsewhere"}')
    (agent.root / ".notification").mkdir()
    os.symlink(outside, path(agent, "soul"))
    stale = dismiss.dismiss_channel(rt, agent, "soul")
    assert stale["reason"] == "stale_channel_version"
    assert stale["current_version"] == "not_regular_file"
    assert dismiss.dismiss_channel(rt, agent, "soul", force=True)["reason"] == "clear_failed"
    assert outside.exists() and path(agent, "soul").is_symlink()
