"""Producer calls and flushing (channels.md C10-C16)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.dispatch import InlineJobs
from tidings.jobs.channels import flush as flushing
from tidings.jobs.channels import flush_channel, publishing, settle_intent
from tidings.jobs.runtime import Runtime
from tidings.store.keys import AgentKeys
from tidings.store.models import AgentRecord


def mirror(agent: AgentRecord, channel: str) -> dict[str, Any]:
    data = json.loads((agent.root / ".notification" / f"{channel}.json").read_bytes())
    assert isinstance(data, dict)
    return data


def notification_files(agent: AgentRecord) -> list[str]:
    d = agent.root / ".notification"
    return sorted(p.name for p in d.iterdir()) if d.exists() else []


class TestPublishValidation:
    """C6, C10, C11: bad input answers with a reason and writes nothing."""

    @pytest.mark.parametrize(
        ("channel", "message"),
        [
            ("../x", "channel must not contain '..'"),
            (".hidden", "channel must match ^[A-Za-z0-9][A-Za-z0-9_.-]*$"),
            ("a..b", "channel must not contain '..'"),
            ("", "channel must be a non-empty string"),
            ("sp ace", "channel must match ^[A-Za-z0-9][A-Za-z0-9_.-]*$"),
        ],
    )
    def test_c2_bad_names(
        self, rt: Runtime, agent: AgentRecord, channel: str, message: str
    ) -> None:
        result = publishing.append_event(rt, agent, channel, {"text": "x"})
        assert result["reason"] == "invalid_channel"
        assert result["message"] == message
        assert notification_files(agent) == []

    def test_c6_unregistered_channel_is_not_allowlisted(
        self, rt: Runtime, agent: AgentRecord
    ) -> None:
        result = publishing.append_event(rt, agent, "foo", {"text": "x"})
        assert result["reason"] == "invalid_channel"
        assert "not allowlisted" in result["message"]
        assert "system" in result["message"] and "mcp." in result["message"]
        assert notification_files(agent) == []

    def test_c10_envelope_not_an_object(self, rt: Runtime, agent: AgentRecord) -> None:
        for bad in ([1, 2], "text", 3, None):
            assert publishing.publish(rt, agent, "system", bad)["reason"] == "invalid_envelope"
        assert notification_files(agent) == []

    def test_c10_bad_fields(self, rt: Runtime, agent: AgentRecord) -> None:
        for bad in ({"header": 1}, {"icon": []}, {"instructions": 5}, {"priority": "urgent"}):
            assert publishing.publish(rt, agent, "system", bad)["reason"] == "invalid_envelope"

    def test_c10_reserved_and_daemon(self, rt: Runtime, agent: AgentRecord) -> None:
        assert publishing.publish(rt, agent, "delay-alarm", {})["reason"] == "reserved_channel"
        assert publishing.publish(rt, agent, "daemon", {})["reason"] == "invalid_channel"
        assert publishing.append_event(rt, agent, "delay-alarm", {})["reason"] == "reserved_channel"

    def test_c10_too_large(self, rt: Runtime, agent: AgentRecord) -> None:
        result = publishing.publish(rt, agent, "system", {"data": {"blob": "x" * 1_048_600}})
        assert result["reason"] == "envelope_too_large"

    def test_c11_event_checks(self, rt: Runtime, agent: AgentRecord) -> None:
        assert publishing.append_event(rt, agent, "system", [1])["reason"] == "invalid_event"
        big = {"text": "x" * 262_200}
        assert publishing.append_event(rt, agent, "system", big)["reason"] == "event_too_large"
        assert publishing.append_event(rt, agent, "system", {}, priority="urgent")["reason"] == (
            "invalid_priority"
        )
        assert publishing.append_event(rt, agent, "system", {"event_id": ""})["reason"] == (
            "invalid_event_id"
        )
        assert publishing.append_event(rt, agent, "system", {"event_id": "x" * 201})["reason"] == (
            "invalid_event_id"
        )
        assert publishing.append_event(rt, agent, "system", {}, idempotency_key="k" * 201)[
            "reason"
        ] == ("invalid_idempotency_key")
        assert notification_files(agent) == []

    def test_c16_symlinked_notification_dir(
        self, rt: Runtime, agent: AgentRecord, tmp_path: Path
    ) -> None:
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        (agent.root / ".notification").symlink_to(elsewhere)
        result = publishing.append_event(rt, agent, "system", {"text": "x"})
        assert result["reason"] == "unsafe_path"
        assert list(elsewhere.iterdir()) == []
        assert rt.redis.llen(AgentKeys(agent.agent_id).buffer("system")) == 0


class TestPublishAndFlush:
    def test_c11_event_lands_with_id_and_at(self, rt: Runtime, agent: AgentRecord) -> None:
        result = publishing.append_event(rt, agent, "system", {"text": "hi"})
        assert result["status"] == "ok" and result["flushed"] is True
        assert result["event_id"].startswith("evt_")
        env = mirror(agent, "system")
        assert env["header"] == "1 system notification(s)"
        assert env["icon"] == "🔔" and env["priority"] == "normal"
        (event,) = env["data"]["events"]
        assert event["text"] == "hi" and event["event_id"] == result["event_id"]
        assert event["at"].endswith("Z")

    def test_c10_publish_replaces_whole_mirror_and_fills_defaults(
        self, rt: Runtime, agent: AgentRecord
    ) -> None:
        publishing.append_event(rt, agent, "email", {"text": "old"})
        result = publishing.publish(
            rt,
            agent,
            "email",
            {"header": "2 unread", "data": {"ids": [1, 2]}, "instructions": None},
        )
        assert result == {"status": "ok", "flushed": True}
        env = mirror(agent, "email")
        assert list(env) == ["header", "data", "icon", "priority", "published_at"]
        assert env["data"] == {"ids": [1, 2]}

    def test_c10_envelope_with_an_error_status_key_is_published(
        self, rt: Runtime, agent: AgentRecord
    ) -> None:
        # An envelope's own "status" key is the producer's data (extra keys are kept, C8),
        # never mistaken for the call's answer (issue 22: typed results).
        envelope = {"header": "build", "status": "error", "reason": "tests failed"}
        assert publishing.publish(rt, agent, "email", envelope) == {"status": "ok", "flushed": True}
        assert mirror(agent, "email")["status"] == "error"

    def test_c17_compact_non_ascii_no_newline(self, rt: Runtime, agent: AgentRecord) -> None:
        publishing.publish(rt, agent, "soul", {"header": "café ☕", "data": {}})
        raw = (agent.root / ".notification" / "soul.json").read_bytes()
        assert "café ☕".encode() in raw
        assert b", " not in raw and not raw.endswith(b"\n")

    def test_c11_dedup_by_idempotency_key(self, rt: Runtime, agent: AgentRecord) -> None:
        first = publishing.append_event(rt, agent, "system", {"text": "a"}, idempotency_key="k1")
        again = publishing.append_event(rt, agent, "system", {"text": "b"}, idempotency_key="k1")
        assert again == {"status": "ok", "event_id": first["event_id"], "duplicate": True}
        assert len(mirror(agent, "system")["data"]["events"]) == 1

    def test_c11_dedup_by_caller_event_id(self, rt: Runtime, agent: AgentRecord) -> None:
        publishing.append_event(rt, agent, "system", {"event_id": "mine-1"})
        again = publishing.append_event(rt, agent, "system", {"event_id": "mine-1", "x": 2})
        assert again["duplicate"] is True and again["event_id"] == "mine-1"

    def test_c12_retention_and_priority(self, rt: Runtime, agent: AgentRecord) -> None:
        for n in range(25):
            publishing.append_event(rt, agent, "system", {"n": n})
        env = mirror(agent, "system")
        assert [e["n"] for e in env["data"]["events"]] == list(range(5, 25))
        assert env["header"] == "20 system notification(s)"
        publishing.append_event(rt, agent, "system", {"n": 99}, priority="high")
        assert mirror(agent, "system")["priority"] == "high"
        publishing.append_event(rt, agent, "system", {"n": 100})
        assert mirror(agent, "system")["priority"] == "normal"
        publishing.append_event(rt, agent, "system", {"n": 101, "severity": "high"})
        assert mirror(agent, "system")["priority"] == "high"

    def test_c12_registration_bound(self, rt: Runtime, tmp_path: Path) -> None:
        from tests.conftest import make_agent

        a = make_agent(rt, tmp_path / "w2", agent_id="a2", max_events={"mcp.x": 3})
        for n in range(5):
            publishing.append_event(rt, a, "mcp.x", {"n": n})
        assert [e["n"] for e in mirror(a, "mcp.x")["data"]["events"]] == [2, 3, 4]

    def test_c12_malformed_mirror_starts_empty(self, rt: Runtime, agent: AgentRecord) -> None:
        d = agent.root / ".notification"
        d.mkdir()
        (d / "mcp.y.json").write_text("{not json")
        publishing.append_event(rt, agent, "mcp.y", {"n": 1})
        assert [e["n"] for e in mirror(agent, "mcp.y")["data"]["events"]] == [1]

    def test_c13_only_flag_setter_enqueues(
        self, rt: Runtime, agent: AgentRecord, jobs_dispatch: InlineJobs
    ) -> None:
        jobs_dispatch.run_flushes = False
        for n in range(10):
            assert publishing.append_event(rt, agent, "system", {"n": n})["flushed"] is False
        assert jobs_dispatch.flushes == [(agent.agent_id, "system")]
        result = flush_channel(rt, agent, "system")
        assert result["applied"] == 10 and result["requeued"] is False
        assert len(mirror(agent, "system")["data"]["events"]) == 10
        assert not rt.redis.exists(AgentKeys(agent.agent_id).flush_flag("system"))

    def test_c14_batches_of_500_and_requeue_after_50(
        self,
        rt: Runtime,
        agent: AgentRecord,
        jobs_dispatch: InlineJobs,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:

        monkeypatch.setattr(flushing, "BATCHES_PER_RUN", 2)
        monkeypatch.setattr(flushing, "BATCH_RECORDS", 3)
        jobs_dispatch.run_flushes = False
        for n in range(10):
            publishing.append_event(rt, agent, "mcp.b", {"n": n})
        result = flush_channel(rt, agent, "mcp.b")
        assert result == {"status": "ok", "channel": "mcp.b", "applied": 6, "requeued": True}
        assert rt.redis.exists(AgentKeys(agent.agent_id).flush_flag("mcp.b"))
        assert len(jobs_dispatch.flushes) == 2
        flush_channel(rt, agent, "mcp.b")
        assert [e["n"] for e in mirror(agent, "mcp.b")["data"]["events"]] == list(range(10))

    def test_c14_skip_if_ref_exists(self, rt: Runtime, agent: AgentRecord) -> None:
        for _ in range(2):
            publishing.append_event(
                rt, agent, "system", {"ref_id": "r1", "body": "x"}, skip_if_ref_exists=True
            )
        assert len(mirror(agent, "system")["data"]["events"]) == 1

    def test_c11_wait_reports_flushed(self, rt: Runtime, agent: AgentRecord) -> None:
        assert publishing.append_event(rt, agent, "system", {"n": 1}, wait=True)["flushed"] is True

    def test_c11_wait_times_out_unflushed(
        self, rt: Runtime, agent: AgentRecord, jobs_dispatch: InlineJobs
    ) -> None:
        jobs_dispatch.run_flushes = False
        result = publishing.append_event(rt, agent, "system", {"n": 1}, wait=True)
        assert result["flushed"] is False  # the fake clock ran out the 30 s
        assert rt.redis.llen(AgentKeys(agent.agent_id).buffer("system")) == 1


class TestCrashSafety:
    """C15: a crash at any point loses no record and never applies one twice."""

    def _crash_after_write(
        self, rt: Runtime, agent: AgentRecord, monkeypatch: pytest.MonkeyPatch
    ) -> None:

        def boom(*args: Any, **kwargs: Any) -> int:
            raise RuntimeError("crash before commit")

        monkeypatch.setattr(flushing, "_commit", boom)
        with pytest.raises(RuntimeError):
            flush_channel(rt, agent, "system")
        monkeypatch.undo()

    def test_crash_after_write_commits_on_settle(
        self,
        rt: Runtime,
        agent: AgentRecord,
        jobs_dispatch: InlineJobs,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        jobs_dispatch.run_flushes = False
        for n in range(3):
            publishing.append_event(rt, agent, "system", {"n": n})
        self._crash_after_write(rt, agent, monkeypatch)
        k = AgentKeys(agent.agent_id)
        assert rt.redis.exists(k.intent("system"))
        assert rt.redis.llen(k.buffer("system")) == 3
        flush_channel(rt, agent, "system")
        assert [e["n"] for e in mirror(agent, "system")["data"]["events"]] == [0, 1, 2]
        assert rt.redis.llen(k.buffer("system")) == 0

    def test_crash_before_write_discards_intent(
        self,
        rt: Runtime,
        agent: AgentRecord,
        jobs_dispatch: InlineJobs,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:

        jobs_dispatch.run_flushes = False
        publishing.append_event(rt, agent, "system", {"n": 0})

        def boom(*args: Any, **kwargs: Any) -> None:
            raise OSError("disk gone")

        monkeypatch.setattr(flushing, "atomic_write", boom)
        with pytest.raises(OSError):
            flush_channel(rt, agent, "system")
        monkeypatch.undo()
        assert settle_intent(rt, agent, "system") == "discarded"
        flush_channel(rt, agent, "system")
        assert [e["n"] for e in mirror(agent, "system")["data"]["events"]] == [0]

    def test_outside_writer_after_crash_gets_records_reapplied(
        self,
        rt: Runtime,
        agent: AgentRecord,
        jobs_dispatch: InlineJobs,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        jobs_dispatch.run_flushes = False
        publishing.append_event(rt, agent, "system", {"n": 0})
        self._crash_after_write(rt, agent, monkeypatch)
        outside = {"header": "outside", "data": {"events": [{"n": "o"}]}}
        (agent.root / ".notification" / "system.json").write_text(json.dumps(outside))
        flush_channel(rt, agent, "system")
        assert [e["n"] for e in mirror(agent, "system")["data"]["events"]] == ["o", 0]


def test_c16_flush_into_symlinked_target_keeps_records(
    rt: Runtime, agent: AgentRecord, jobs_dispatch: InlineJobs, tmp_path: Path
) -> None:
    jobs_dispatch.run_flushes = False
    publishing.append_event(rt, agent, "mcp.s", {"n": 0})
    target = tmp_path / "target.json"
    target.write_text("{}")
    (agent.root / ".notification").mkdir()
    (agent.root / ".notification" / "mcp.s.json").symlink_to(target)
    jobs_dispatch.run_flushes = True
    result = flush_channel(rt, agent, "mcp.s")
    assert result["reason"] == "unsafe_path"
    assert target.read_text() == "{}"
    assert rt.redis.llen(AgentKeys(agent.agent_id).buffer("mcp.s")) == 1
    warnings = mirror(agent, "system")["data"]["events"]
    assert [w["ref_id"] for w in warnings] == ["unsafe_channel:mcp.s"]
    (agent.root / ".notification" / "mcp.s.json").unlink()
    flush_channel(rt, agent, "mcp.s")
    assert [e["n"] for e in mirror(agent, "mcp.s")["data"]["events"]] == [0]
