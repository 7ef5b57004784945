"""The daemon aggregate (channels.md C30-C34)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from tidings.jobs.channels import (
    daemon_dismissal,
    daemon_runs,
    publish_event,
    publishing,
    read_control,
)
from tidings.jobs.channels.daemon_control import (
    CONTROL_FILE,
    BatchState,
    Cleared,
    Control,
    Pending,
    event_key,
    write_control,
)
from tidings.jobs.consumer import check_placeholder, dismiss_channel, dismiss_ref, observe, stamp
from tidings.jobs.runtime import Runtime
from tidings.store.jsonfmt import sha256_hex
from tidings.store.models import AgentRecord


def mini(agent: AgentRecord, daemon_id: str) -> dict[str, Any]:
    value = json.loads((agent.root / ".notification" / "daemon" / f"{daemon_id}.json").read_bytes())
    assert isinstance(value, dict)
    return value


def publish(rt: Runtime, agent: AgentRecord, daemon_id: str, **event: Any) -> dict[str, Any]:
    return daemon_runs.publish_daemon_event(rt, agent, daemon_id, event)


def view(agent: AgentRecord) -> daemon_runs.DaemonView:
    return daemon_runs.read_daemon(agent.root)


def set_threshold(agent: AgentRecord, value: Any) -> None:
    (agent.root / "notification.json").write_text(
        json.dumps({"channels": {"daemon": {"alarm_threshold": value}}})
    )


def deliver(rt: Runtime, agent: AgentRecord) -> None:
    stamp(rt, agent, check_placeholder())


class TestC30MiniFiles:
    def test_append_writes_the_run_mini_file(self, rt: Runtime, agent: AgentRecord) -> None:
        result = publish(rt, agent, "run-1", text="started")
        assert result["status"] == "ok" and result["flushed"] is True
        publish(rt, agent, "run-1", text="halfway")
        envelope = mini(agent, "run-1")
        assert envelope["header"] == "2 daemon notification(s)"
        assert envelope["daemon_id"] == "run-1" and envelope["data"]["daemon_id"] == "run-1"
        assert [e["text"] for e in envelope["data"]["events"]] == ["started", "halfway"]
        assert envelope["data"]["events"][0]["event_id"] == result["event_id"]
        assert envelope["data"]["daemon"] == {"count": 2, "alarm_fired": False}
        raw = (agent.root / ".notification" / "daemon" / "run-1.json").read_text()
        assert not raw.endswith("\n") and ", " not in raw  # C17 compact

    def test_validation(self, rt: Runtime, agent: AgentRecord) -> None:
        bad = daemon_runs.publish_daemon_event(rt, agent, "../x", {})
        assert bad["reason"] == "invalid_daemon_id"
        assert bad["message"] == "daemon_id must not contain '..'"
        assert daemon_runs.publish_daemon_event(rt, agent, "r", [1])["reason"] == "invalid_event"
        assert daemon_runs.publish_daemon_event(rt, agent, "r", {}, priority="x")["reason"] == (
            "invalid_priority"
        )
        assert publish(rt, agent, "r", text="x" * 262_200)["reason"] == "event_too_large"
        assert publish(rt, agent, "r", event_id="")["reason"] == "invalid_event_id"
        assert not (agent.root / ".notification" / "daemon").exists()

    def test_duplicate_event_key(self, rt: Runtime, agent: AgentRecord) -> None:
        first = publish(rt, agent, "r", event_id="e1", text="a")
        again = publish(rt, agent, "r", event_id="e1", text="b")
        assert again == {"status": "ok", "event_id": first["event_id"], "duplicate": True}
        publish(rt, agent, "r", idempotency_key="k1")
        assert publish(rt, agent, "r", idempotency_key="k1")["duplicate"] is True
        assert len(mini(agent, "r")["data"]["events"]) == 2
        assert view(agent).batch_state["count"] == 2

    def test_run_full(self, rt: Runtime, agent: AgentRecord) -> None:
        for _ in range(4):
            assert publish(rt, agent, "r", text="x" * 250_000)["status"] == "ok"
        before = (agent.root / ".notification" / "daemon" / "r.json").read_bytes()
        control = read_control(agent.root)
        assert publish(rt, agent, "r", text="x" * 250_000)["reason"] == "daemon_run_full"
        assert (agent.root / ".notification" / "daemon" / "r.json").read_bytes() == before
        assert read_control(agent.root) == control

    def test_publish_event_on_daemon_routes_here(self, rt: Runtime, agent: AgentRecord) -> None:
        assert publish_event(rt, agent, "daemon", {"text": "x"})["reason"] == ("missing_daemon_id")
        routed = publish_event(rt, agent, "daemon", {"daemon_id": "r", "text": "x"})
        assert routed["status"] == "ok" and mini(agent, "r")["data"]["events"][0]["text"] == "x"

    def test_alarm_latches_once_count_passes_threshold(
        self, rt: Runtime, agent: AgentRecord
    ) -> None:
        set_threshold(agent, 2)
        states = []
        for n in range(4):
            publish(rt, agent, f"run{n % 2}", n=n)
            states.append(view(agent).batch_state["alarm_fired"])
        assert states == [False, False, True, True]

    def test_pending_receipt_settles_by_presence(self, rt: Runtime, agent: AgentRecord) -> None:
        publish(rt, agent, "r", event_id="e1")
        control = read_control(agent.root)
        assert control.batch_state == BatchState(count=1) and control.pending is None
        # a crash after the receipt and the mini-file write, before the final record:
        crashed = control.with_changes(
            batch_state=BatchState(count=0),
            pending=Pending(
                daemon_id="r",
                event_id="e1",
                prior_batch_state=BatchState(count=0),
                batch_state=BatchState(count=1),
            ),
        )
        write_control(agent.root, crashed)
        assert view(agent).batch_state == {"count": 1, "alarm_fired": False}
        # a crash before the mini-file write: the event is not there, the prior state stands
        lost = crashed.with_changes(
            pending=Pending(
                daemon_id="r",
                event_id="never-written",
                prior_batch_state=BatchState(count=0),
                batch_state=BatchState(count=1),
            )
        )
        write_control(agent.root, lost)
        assert view(agent).batch_state == {"count": 0, "alarm_fired": False}
        publish(rt, agent, "r", event_id="e2")
        assert read_control(agent.root).batch_state.count == 1
        assert read_control(agent.root).pending is None


class TestC31Control:
    def test_absent_means_defaults_and_format(self, rt: Runtime, agent: AgentRecord) -> None:
        assert read_control(agent.root) == Control()
        publish(rt, agent, "r", text="x")
        raw = (agent.root / CONTROL_FILE).read_text()
        assert raw == json.dumps(json.loads(raw), sort_keys=True, separators=(",", ":"))
        assert json.loads(raw) == {
            "version": 1,
            "epoch": 0,
            "cleared": {},
            "batch_state": {"count": 1, "alarm_fired": False},
            "pending": None,
        }

    def test_event_keys(self) -> None:
        assert event_key({"event_id": "e", "idempotency_key": "k"}) == "event:e"
        assert event_key({"idempotency_key": "k"}) == "idempotency:k"
        body = {"b": 1, "a": "é"}
        expected = hashlib.sha256('{"a":"é","b":1}'.encode()).hexdigest()
        assert event_key(body) == f"sha256:{expected}"

    def test_entry_applies_only_to_its_bytes_and_as_multiset(
        self, rt: Runtime, agent: AgentRecord
    ) -> None:
        d = agent.root / ".notification" / "daemon"
        d.mkdir(parents=True)
        raw = json.dumps(
            {"data": {"events": [{"event_id": "x"}, {"event_id": "x"}, {"event_id": "y"}]}}
        ).encode()
        (d / "r.json").write_bytes(raw)
        write_control(
            agent.root,
            Control(
                cleared={"r.json": Cleared(raw_sha256=sha256_hex(raw), event_keys=["event:x"])}
            ),
        )
        assert [e["event_id"] for e in view(agent).payload["data"]["events"]] == ["x", "y"]
        (d / "r.json").write_bytes(raw + b" ")  # an outside writer changed the bytes
        assert len(view(agent).payload["data"]["events"]) == 3

    def test_whole_clear_is_cut_first_then_best_effort(
        self, rt: Runtime, agent: AgentRecord, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        set_threshold(agent, 0)
        publish(rt, agent, "a", text="1")
        publish(rt, agent, "b", text="2")
        deliver(rt, agent)

        def failing(*args: Any) -> bool:
            raise OSError(5, "I/O error")

        monkeypatch.setattr(daemon_dismissal, "remove_file", failing)
        result = dismiss_channel(rt, agent, "daemon")
        assert result == {"status": "ok", "channel": "daemon", "cleared": True, "forced": False}
        control = read_control(agent.root)
        assert control.epoch == 1 and control.batch_state == BatchState()
        assert sorted(control.cleared) == ["a.json", "b.json"]  # files stayed, entries apply
        assert view(agent).payload is None
        assert "daemon" not in observe(rt, agent).payloads
        monkeypatch.undo()
        publish(rt, agent, "a", text="3")  # the next append finishes its own file
        assert [e["text"] for e in mini(agent, "a")["data"]["events"]] == ["3"]
        assert list(read_control(agent.root).cleared) == ["b.json"]

    def test_event_dismissal_rewrites_and_deletes(self, rt: Runtime, agent: AgentRecord) -> None:
        publish(rt, agent, "a", event_id="a1", ref_id="r")
        publish(rt, agent, "a", event_id="a2")
        publish(rt, agent, "b", event_id="b1", ref_id="r")
        deliver(rt, agent)
        result = dismiss_ref(rt, agent, "r", channel="daemon")
        assert result == {
            "status": "ok",
            "channel": "daemon",
            "cleared": True,
            "removed": 2,
            "remaining": 1,
            "forced": False,
            "ref_id": "r",
        }
        assert [e["event_id"] for e in mini(agent, "a")["data"]["events"]] == ["a2"]
        assert mini(agent, "a")["header"] == "1 daemon notification(s)"
        assert not (agent.root / ".notification" / "daemon" / "b.json").exists()
        control = read_control(agent.root)
        assert control.epoch == 1 and control.cleared == {}
        assert control.batch_state.count == 3  # only a whole clear resets the batch


class TestC32Aggregate:
    def test_payload_template_order_and_fingerprint(self, rt: Runtime, agent: AgentRecord) -> None:
        publish(rt, agent, "b", text="from b")
        publish(rt, agent, "a", text="from a")
        d = agent.root / ".notification" / "daemon"
        (d / "c.json").write_text('{"data": {"events": []}}')  # logically empty
        (d / "d.json").write_text("not json")
        (d / ".hidden.json").write_text('{"data": {"events": [1]}}')
        v = view(agent)
        payload = v.payload
        assert payload is not None
        assert payload["header"] == "2 daemon notification(s)"
        assert payload["daemon_id"] == "a"  # the template is the first valid mini-file
        assert [e["text"] for e in payload["data"]["events"]] == ["from a", "from b"]
        assert payload["data"]["daemon"] == {"count": 2, "alarm_fired": False}
        u = b""
        for name in ("a.json", "b.json"):
            body = (d / name).read_bytes()
            u += f"mini/{name}".encode() + b"\0" + str(len(body)).encode() + b"\0" + body
        assert v.fp_entry == ("daemon.json", len(u), hashlib.sha256(u).hexdigest())
        assert ["daemon.json", len(u), hashlib.sha256(u).hexdigest()] in (observe(rt, agent).raw_fp)

    def test_no_mini_files_no_channel(self, rt: Runtime, agent: AgentRecord) -> None:
        assert view(agent).payload is None and view(agent).fp_entry is None

    def test_bad_control_record(self, rt: Runtime, agent: AgentRecord) -> None:
        publish(rt, agent, "r", text="x")
        publishing.publish(rt, agent, "soul", {"header": "still here"})
        (agent.root / CONTROL_FILE).write_text('{"version": 1, "epoch": -3}')
        assert publish(rt, agent, "r", text="y")["reason"] == "daemon_control_error"
        deliver(rt, agent)
        assert dismiss_channel(rt, agent, "daemon", force=True)["reason"] == (
            "daemon_control_error"
        )
        payloads = observe(rt, agent).payloads
        assert payloads["daemon"] == daemon_runs.CONTROL_ERROR_PAYLOAD
        assert payloads["soul"]["header"] == "still here"


@pytest.mark.parametrize(
    ("value", "expected"),
    [(0, 0), (5, 5), (-1, None), (True, None), (1.5, None), ("3", None), (None, None)],
)
def test_c33_threshold_validity(agent: AgentRecord, value: Any, expected: int | None) -> None:
    set_threshold(agent, value)
    assert daemon_runs.alarm_threshold(agent.root) == expected


def test_c33_no_threshold_never_latches(rt: Runtime, agent: AgentRecord) -> None:
    (agent.root / "notification.json").write_text("{not json")
    for n in range(5):
        publish(rt, agent, "r", n=n)
    assert view(agent).batch_state == {"count": 5, "alarm_fired": False}


class TestC34Report:
    def test_report_runs_and_states(self, rt: Runtime, agent: AgentRecord) -> None:
        publish(rt, agent, "done-run", kind="daemon_terminal", status="done")
        publish(rt, agent, "done-run", kind="daemon_followup", status="follow-up sent")
        publish(rt, agent, "failing", idempotency_key="daemon-terminal:1", status="failed")
        publish(rt, agent, "failing", kind="daemon_terminal", status="follow-up later")
        publish(rt, agent, "active", text="working")
        report = json.loads((agent.root / ".notification" / "daemon.json").read_bytes())
        assert report == {
            "kind": "daemon_report",
            "version": 1,
            "derived": True,
            "stats": {
                "run_count": 3,
                "event_count": 5,
                "active_run_count": 1,
                "terminal_run_count": 2,
            },
            "runs": [
                {"daemon_id": "active", "event_count": 1},
                {"daemon_id": "done-run", "event_count": 2, "state": "done"},
                {"daemon_id": "failing", "event_count": 2, "state": "failed"},
            ],
        }

    def test_report_after_dismissal_and_foreign_file_left_alone(
        self, rt: Runtime, agent: AgentRecord, tmp_path: Path
    ) -> None:
        publish(rt, agent, "r", text="x")
        dismiss_channel(rt, agent, "daemon", force=True)
        report = json.loads((agent.root / ".notification" / "daemon.json").read_bytes())
        assert report["stats"]["run_count"] == 0 and report["runs"] == []
        foreign = b'{"mine": true}'
        (agent.root / ".notification" / "daemon.json").write_bytes(foreign)
        publish(rt, agent, "r", text="y")
        assert (agent.root / ".notification" / "daemon.json").read_bytes() == foreign
