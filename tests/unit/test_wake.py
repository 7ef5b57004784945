"""Delivery, wake fingerprint, wake stream, sync tick and warnings (channels.md C23-C29;
issue 4 acceptance 3 at the job level and 5)."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import make_agent
from tests.support.groups import TIMING
from tidings.jobs import tick
from tidings.jobs.channels import (
    add,
    allowlisting,
    drop,
    publish_daemon_event,
    publishing,
    system_events,
)
from tidings.jobs.channels import blocked as blocked_warnings
from tidings.jobs.consumer import _bare_read as bare
from tidings.jobs.consumer import (
    committed,
    delay_alarm,
    delay_state,
    delivery,
    dismiss_ref,
    observe,
    visit,
    wake_mask,
    wake_stream,
)
from tidings.jobs.consumer import read as reading
from tidings.jobs.consumer.read import Observation
from tidings.jobs.runtime import Runtime
from tidings.store import keys
from tidings.store.errors import TidingsError
from tidings.store.keys import AgentKeys
from tidings.store.models import AgentRecord

MANIFEST = {
    "name": "h",
    "channel": "deploys",
    "source": "s",
    "description": "d",
    "how_to_modify": "m",
    "how_to_cancel": "c",
}


def write_direct(agent: AgentRecord, name: str, content: str | bytes) -> None:
    """An outside producer: temp file + rename, no tidings call."""
    d = agent.root / ".notification"
    d.mkdir(exist_ok=True)
    temp = d / f".{name}.outside.tmp"
    temp.write_bytes(content.encode() if isinstance(content, str) else content)
    os.replace(temp, d / name)


def stream_len(rt: Runtime, agent: AgentRecord) -> int:
    return int(rt.redis.xlen(AgentKeys(agent.agent_id).wake_stream))


def system_refs(agent: AgentRecord) -> list[Any]:
    path = agent.root / ".notification" / "system.json"
    if not path.exists():
        return []
    return [e.get("ref_id") for e in json.loads(path.read_bytes())["data"]["events"]]


def settle(rt: Runtime, agent: AgentRecord) -> None:
    """Deliver everything and drain the wake stream: a quiet starting point."""
    visit.sync_agent(rt, agent)
    while wake_stream.try_consume(rt, agent) is not None:
        pass


class TestC23C24Delivery:
    def test_stamp_commits_both_fingerprints(self, rt: Runtime, agent: AgentRecord) -> None:
        publishing.publish(rt, agent, "soul", {"header": "s", "notification_guidance": "x"})
        stamped = delivery.stamp(rt, agent, {"status": "ok"})
        meta = stamped["_meta"]["agent_meta"]
        assert meta["notifications"]["attention"]["soul"]["header"] == "s"
        assert "notification_guidance" not in meta["notifications"]["attention"]["soul"]
        assert meta["guidance"] == {
            "transient": {"ref": "meta_guidance.notification_handling", "sources": ["soul"]}
        }
        assert meta["instruction"] == delivery.STAMP_INSTRUCTION
        seen = committed.read(rt, agent)
        obs = observe(rt, agent)
        assert seen.delivered == obs.raw_fp and seen.wake(agent.root, None) == obs.masked_fp

    def test_empty_view_stamps_placeholder_only(self, rt: Runtime, agent: AgentRecord) -> None:
        stamped = delivery.stamp(rt, agent, delivery.check_placeholder())
        assert stamped["_meta"]["agent_meta"]["notifications"] == {}
        assert stamped["_meta"]["agent_meta"]["guidance"] == {"transient": {}}
        assert delivery.stamp(rt, agent, {"status": "ok"}) == {"status": "ok"}
        assert delivery.render(rt, agent) == {}

    def test_unstable_read_commits_nothing(
        self, rt: Runtime, agent: AgentRecord, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        publishing.publish(rt, agent, "soul", {"header": "s"})
        monkeypatch.setattr(
            delivery, "observe", lambda *a: Observation(False, [], [], {"soul": {}})
        )
        stamped = delivery.stamp(rt, agent, delivery.check_placeholder())
        # C24: never "nothing is active" on an unstable read
        assert stamped["_meta"] == {
            "agent_meta": {
                "notifications_unavailable": {
                    "reason": "unstable",
                    "message": delivery.UNAVAILABLE_MESSAGE.format(
                        why=delivery.UNAVAILABLE_WHY["unstable"]
                    ),
                }
            }
        }
        assert delivery.stamp(rt, agent, {"status": "ok"}) == {"status": "ok"}
        assert committed.read(rt, agent).delivered_text == ""


class TestC25Mask:
    def test_ordinary_delayed_target_omitted(self, agent: AgentRecord) -> None:
        raw = [["email.json", 1, "a"], ["soul.json", 2, "b"]]
        assert wake_mask.masked_fingerprint(agent.root, raw, "email") == [["soul.json", 2, "b"]]

    def test_daemon_tokens(self, rt: Runtime, agent: AgentRecord) -> None:
        root = agent.root
        raw = [["daemon.json", 10, "x"], ["soul.json", 2, "b"]]
        assert wake_mask.masked_fingerprint(root, raw, None) == raw  # no threshold, no token
        assert wake_mask.masked_fingerprint(root, raw, "daemon") == [
            ["daemon.json", 0, "daemon:delayed=1"],
            ["soul.json", 2, "b"],
        ]
        (root / "notification.json").write_text('{"channels":{"daemon":{"alarm_threshold":1}}}')
        assert wake_mask.masked_fingerprint(root, [["soul.json", 2, "b"]], None) == [
            ["daemon.json", 0, "daemon:alarm=0"],
            ["soul.json", 2, "b"],
        ]  # inserted if absent
        publish_daemon_event(rt, agent, "r", {"n": 1})
        publish_daemon_event(rt, agent, "r", {"n": 2})
        assert wake_mask.masked_fingerprint(root, raw, None)[0] == [
            "daemon.json",
            0,
            "daemon:alarm=1",
        ]
        assert wake_mask.masked_fingerprint(root, raw, "daemon")[0][2] == "daemon:delayed=1"
        assert wake_mask.baseline(root, None) == [["daemon.json", 0, "daemon:alarm=0"]]


class TestC26WakeStream:
    def test_wait_returns_oldest_skipping_superseded_notifications(
        self, rt: Runtime, agent: AgentRecord
    ) -> None:
        wake_stream.append(rt, agent, {"kind": "notification", "n": 1})
        wake_stream.append(rt, agent, {"kind": "inbox", "event_id": "i1"})
        wake_stream.append(rt, agent, {"kind": "notification", "n": 2})
        wake_stream.append(rt, agent, {"kind": "notification", "n": 3})
        first = wake_stream.wait_for_wake(rt, agent, 0)
        assert first is not None and first["kind"] == "inbox" and "wake_id" in first
        second = wake_stream.wait_for_wake(rt, agent, 0)
        assert second is not None and second["n"] == 3
        assert wake_stream.wait_for_wake(rt, agent, 0) is None
        cursor = rt.redis.get(AgentKeys(agent.agent_id).wake_cursor).decode()
        assert cursor == second["wake_id"]

    @TIMING
    def test_blocks_until_a_signal_arrives(self, rt: Runtime, agent: AgentRecord) -> None:
        timer = threading.Timer(0.2, lambda: wake_stream.append(rt, agent, {"kind": "inbox"}))
        timer.start()
        started = time.monotonic()
        got = wake_stream.wait_for_wake(rt, agent, 5)
        timer.join()
        assert got is not None and got["kind"] == "inbox"
        assert time.monotonic() - started < 3

    @TIMING
    def test_timeout_returns_none(self, rt: Runtime, agent: AgentRecord) -> None:
        started = time.monotonic()
        assert wake_stream.wait_for_wake(rt, agent, 0.2) is None
        assert 0.15 < time.monotonic() - started < 2

    @pytest.mark.parametrize("bad", [-1, float("nan"), float("inf"), True, "1", None])
    def test_bad_timeout_raises(self, rt: Runtime, agent: AgentRecord, bad: Any) -> None:
        with pytest.raises(TidingsError) as info:
            wake_stream.wait_for_wake(rt, agent, bad)
        assert info.value.reason == "invalid_timeout"

    def test_stream_keeps_about_a_thousand(self, rt: Runtime, agent: AgentRecord) -> None:
        for n in range(1300):
            wake_stream.append(rt, agent, {"kind": "inbox", "n": n})
        assert 1000 <= stream_len(rt, agent) < 1300

    def test_signal_format(self, rt: Runtime, agent: AgentRecord) -> None:
        publishing.publish(rt, agent, "soul", {"header": "s"})
        assert visit.sync_agent(rt, agent)["woke"] is True
        signal = wake_stream.wait_for_wake(rt, agent, 0)
        assert signal is not None
        assert set(signal) == {"kind", "agent_id", "at", "call", "result", "wake_id"}
        assert signal["kind"] == "notification" and signal["agent_id"] == agent.agent_id
        assert signal["call"] == {
            "name": "notification",
            "arguments": {"action": "check", "input": {}, "reasoning": "notification sync"},
        }
        assert signal["result"]["_notification_placeholder"] is True
        assert "soul" in signal["result"]["_meta"]["agent_meta"]["notifications"]["attention"]


class TestC27SyncTick:
    def test_direct_write_wakes_once(self, rt: Runtime, agent: AgentRecord) -> None:
        settle(rt, agent)
        write_direct(agent, "mcp.x.json", '{"header": "new"}')
        first = visit.sync_agent(rt, agent)
        assert first["woke"] is True
        assert visit.sync_agent(rt, agent)["woke"] is False
        seen = committed.read(rt, agent)
        obs = observe(rt, agent)
        assert seen.delivered == obs.raw_fp and seen.wake(agent.root, None) == obs.masked_fp

    def test_nothing_visible_commits_wake_only(self, rt: Runtime, agent: AgentRecord) -> None:
        write_direct(agent, "mcp.x.json", "{}")
        visit.sync_agent(rt, agent)
        delivered = committed.read(rt, agent).delivered_text
        before = stream_len(rt, agent)
        (agent.root / ".notification" / "mcp.x.json").unlink()
        assert visit.sync_agent(rt, agent)["woke"] is False
        assert stream_len(rt, agent) == before
        seen = committed.read(rt, agent)
        assert seen.wake_text == "[]" and seen.delivered_text == delivered

    def test_signal_script_checks_committed_wake(self, rt: Runtime, agent: AgentRecord) -> None:
        write_direct(agent, "mcp.x.json", "{}")
        obs = observe(rt, agent)
        seen = committed.read(rt, agent)
        delivery.stamp(rt, agent, {"status": "ok"})  # a concurrent delivery commits first
        assert visit._signal(rt, agent, seen, obs, "") is None
        assert stream_len(rt, agent) == 0

    def test_unstable_read_signals_nothing(
        self, rt: Runtime, agent: AgentRecord, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        write_direct(agent, "mcp.x.json", "{}")
        monkeypatch.setattr(visit, "bare_read", lambda *a: Observation(False, [], [], {}))
        assert visit.sync_agent(rt, agent)["stable"] is False
        assert stream_len(rt, agent) == 0

    def test_the_change_check_opens_the_coherent_read(
        self, rt: Runtime, agent: AgentRecord, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """C22, C27: the fingerprint pass that found a change is the read's opening
        bookend (two passes per woken visit, not three); a write between that pass and
        the snapshot makes the attempt unstable, and the next attempt reads it."""
        write_direct(agent, "mcp.x.json", '{"header": "one"}')
        passes: list[str] = []
        real_fp, real_snapshot = reading.fingerprint, bare._snapshot

        def counted(*args: Any) -> Any:
            passes.append("fp")
            return real_fp(*args)

        monkeypatch.setattr(visit, "fingerprint", counted)
        monkeypatch.setattr(bare, "fingerprint", counted)
        assert visit.sync_agent(rt, agent)["woke"] is True
        assert passes == ["fp", "fp"]

        write_direct(agent, "mcp.x.json", '{"header": "two"}')
        snapshots: list[int] = []

        def written_meanwhile(*args: Any) -> Any:
            if not snapshots:  # after the opening pass, before the first snapshot
                write_direct(agent, "mcp.x.json", '{"header": "three"}')
            snapshots.append(1)
            return real_snapshot(*args)

        monkeypatch.setattr(bare, "_snapshot", written_meanwhile)
        passes.clear()
        assert visit.sync_agent(rt, agent)["woke"] is True
        assert len(snapshots) == 2 and passes == ["fp", "fp", "fp", "fp"]
        newest = rt.redis.xrevrange(AgentKeys(agent.agent_id).wake_stream, count=1)
        assert "three" in json.dumps(json.loads(newest[0][1][b"entry"]))

    def test_stranded_flush_and_delay_backstop(
        self, rt: Runtime, agent: AgentRecord, jobs_dispatch: Any, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """C15 via C27: a buffer whose flag lapsed gets a new flush; D9 backstop runs."""
        jobs_dispatch.run_flushes = False
        publishing.append_event(rt, agent, "mcp.x", {"n": 1})
        rt.redis.delete(AgentKeys(agent.agent_id).flush_flag("mcp.x"))  # the flag expired
        jobs_dispatch.run_flushes = True
        reconciled: list[str] = []
        monkeypatch.setattr(
            delay_alarm,
            "reconcile",
            lambda rt_, a, expected=None: reconciled.append(a.agent_id) or False,
        )
        result = visit.sync_agent(rt, agent)
        assert result["flushes"] == ["mcp.x"] and reconciled
        assert (agent.root / ".notification" / "mcp.x.json").exists()

    def test_d9_the_reconcile_runs_once_per_visit(
        self, rt: Runtime, agent: AgentRecord, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Issue 31: a visit that reads the files reconciles the delay (D9) once, not
        once itself and again inside the coherent read."""
        write_direct(agent, "mcp.x.json", '{"header": "new"}')  # changed: a full read
        reconciled: list[str] = []
        real = delay_alarm.reconcile
        monkeypatch.setattr(
            delay_alarm,
            "reconcile",
            lambda rt_, a, expected=None: reconciled.append(a.agent_id) or real(rt_, a, expected),
        )
        assert visit.sync_agent(rt, agent)["woke"] is True
        assert reconciled == [agent.agent_id]

    def test_daemon_below_threshold_or_delayed_does_not_wake(
        self, rt: Runtime, agent: AgentRecord, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        (agent.root / "notification.json").write_text(
            '{"channels":{"daemon":{"alarm_threshold":2}}}'
        )
        settle(rt, agent)
        for n in range(2):
            publish_daemon_event(rt, agent, "r", {"n": n})
            assert visit.sync_agent(rt, agent)["woke"] is False
        publish_daemon_event(rt, agent, "r", {"n": 3})
        assert visit.sync_agent(rt, agent)["woke"] is True  # count 3 > threshold 2
        publish_daemon_event(rt, agent, "r", {"n": 4})
        assert visit.sync_agent(rt, agent)["woke"] is False  # alarm already delivered
        monkeypatch.setattr(delay_state, "live_target", lambda *a: "daemon")
        visit.sync_agent(rt, agent)
        publish_daemon_event(rt, agent, "r", {"n": 5})
        assert visit.sync_agent(rt, agent)["woke"] is False

    def test_sync_host_survives_a_failing_agent(
        self, rt: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        good = make_agent(rt, tmp_path / "good", "good")
        make_agent(rt, tmp_path / "bad", "bad")
        write_direct(good, "mcp.x.json", "{}")
        real = visit.enqueue_stranded

        def flaky(rt_: Runtime, a: AgentRecord, known: visit.Known | None = None) -> list[str]:
            if a.agent_id == "bad":
                raise RuntimeError("boom")
            return real(rt_, a, known)

        monkeypatch.setattr(visit, "enqueue_stranded", flaky)
        rt.redis.set(keys.sync_running(rt.settings.host), "1")
        result = tick.sync_host(rt, rt.settings.host)
        assert result == {
            "status": "ok",
            "host": rt.settings.host,
            "agents": 2,
            "woke": 1,
            "failed": ["bad"],
        }
        assert rt.redis.get(keys.sync_running(rt.settings.host)) is None


class TestC28C29Warnings:
    def test_blocked_file_warned_once_never_delivered(
        self, rt: Runtime, agent: AgentRecord
    ) -> None:
        settle(rt, agent)
        fp_before = observe(rt, agent).raw_fp
        write_direct(agent, "deploys.json", '{"header": "sneaky"}')
        assert observe(rt, agent).raw_fp == fp_before
        first = visit.sync_agent(rt, agent)
        assert first["blocked"] == ["deploys"] and first["woke"] is False
        events = json.loads((agent.root / ".notification" / "system.json").read_bytes())
        event = events["data"]["events"][0]
        assert event["source"] == "notification_hook"
        assert event["ref_id"] == "blocked_channel:deploys"
        assert (
            event["body"]
            == blocked_warnings.blocked_body("deploys")
            == (
                "Channel 'deploys' is not registered; its notifications do not pass through. "
                "See notification(action='list') and notification(action='add', ...)."
            )
        )
        assert {"event_id", "at"} <= set(event)  # C29
        assert visit.sync_agent(rt, agent)["woke"] is True  # the warning itself is news
        for _ in range(3):
            again = visit.sync_agent(rt, agent)
            assert again["woke"] is False and again["blocked"] == []
        assert system_refs(agent) == ["blocked_channel:deploys"]
        assert "deploys" not in observe(rt, agent).payloads

    def test_registration_clears_and_drop_warns_again(
        self, rt: Runtime, agent: AgentRecord
    ) -> None:
        write_direct(agent, "deploys.json", "{}")
        visit.sync_agent(rt, agent)
        blocked = AgentKeys(agent.agent_id).blocked
        assert rt.redis.sismember(blocked, "deploys")
        add(rt, agent, MANIFEST)
        assert not rt.redis.sismember(blocked, "deploys")
        assert "deploys" in observe(rt, agent).payloads

        delivery.stamp(rt, agent, {"status": "ok"})
        dismiss_ref(rt, agent, "blocked_channel:deploys")
        drop(rt, agent, "h")
        assert visit.sync_agent(rt, agent)["blocked"] == ["deploys"]
        assert system_refs(agent) == ["blocked_channel:deploys"]

    def test_out_of_band_registration_leaves_the_set_on_scan(
        self, rt: Runtime, agent: AgentRecord
    ) -> None:
        write_direct(agent, "deploys.json", "{}")
        visit.sync_agent(rt, agent)
        write_direct(agent, "hooks.json", json.dumps([MANIFEST]))
        visit.sync_agent(rt, agent)
        assert not rt.redis.sismember(AgentKeys(agent.agent_id).blocked, "deploys")

    def test_dedup_survives_a_new_process(self, rt: Runtime, agent: AgentRecord) -> None:
        """The blocked set lives in Redis: fresh in-process state does not warn again."""
        write_direct(agent, "deploys.json", "{}")
        visit.sync_agent(rt, agent)
        delivery.stamp(rt, agent, {"status": "ok"})

        dismiss_ref(rt, agent, "blocked_channel:deploys")
        allowlisting.invalidate(agent)
        reading._hashes = reading._HashCache(reading.HASH_CACHE_SIZE)
        assert visit.sync_agent(rt, agent)["blocked"] == []
        assert system_refs(agent) == []

    def test_no_blocked_scan_while_registry_cannot_load(
        self, rt: Runtime, agent: AgentRecord
    ) -> None:
        """Acceptance 5: corrupt hooks.json: no crash, no blocked warnings."""
        write_direct(agent, "hooks.json", "[{broken")
        write_direct(agent, "deploys.json", "{}")
        result = visit.sync_agent(rt, agent)
        assert result["status"] == "ok" and result["blocked"] == []
        write_direct(agent, "hooks.json", '{"an": "object"}')  # loads as []
        assert visit.sync_agent(rt, agent)["blocked"] == ["deploys"]

    def test_oversized_allowed_file(self, rt: Runtime, agent: AgentRecord) -> None:
        """Acceptance 5: a 2 MiB channel file."""
        settle(rt, agent)
        fp_before = observe(rt, agent).raw_fp
        write_direct(agent, "mcp.big.json", b'{"x":"' + b"a" * (2 * 1_048_576) + b'"}')
        result = visit.sync_agent(rt, agent)
        assert result["oversized"] == ["mcp.big"] and result["blocked"] == []
        assert system_refs(agent) == ["oversized_channel:mcp.big"]
        events = json.loads((agent.root / ".notification" / "system.json").read_bytes())
        assert events["data"]["events"][0]["source"] == "notification_store"
        assert visit.sync_agent(rt, agent)["oversized"] == []
        obs = observe(rt, agent)
        assert "mcp.big" not in obs.payloads
        assert [e for e in obs.raw_fp if e[0] != "system.json"] == fp_before
        write_direct(agent, "mcp.big.json", "{}")
        visit.sync_agent(rt, agent)
        assert not rt.redis.sismember(AgentKeys(agent.agent_id).oversized, "mcp.big")

    def test_non_regular_and_unflaggable_names_are_ignored(
        self, rt: Runtime, agent: AgentRecord, tmp_path: Path
    ) -> None:
        """Acceptance 5: a symlinked channel file and a directory named x.json."""
        outside = tmp_path / "outside.json"
        outside.write_text('{"header": "elsewhere"}')
        d = agent.root / ".notification"
        d.mkdir()
        os.symlink(outside, d / "mcp.link.json")
        os.symlink(outside, d / "stranger.json")
        (d / "x.json").mkdir()
        (d / "mcp.dir.json").mkdir()
        for name in (
            "large_result_acks.json",
            "daemon.json",
            ".dot.json",
            "a..b.json",
            "notes.txt",
        ):
            (d / name).write_text("{}")
        result = visit.sync_agent(rt, agent)
        assert result["status"] == "ok" and result["blocked"] == [] and result["oversized"] == []
        assert observe(rt, agent).payloads == {}
        assert outside.read_text() == '{"header": "elsewhere"}'

    def test_c29_skip_if_ref_exists(self, rt: Runtime, agent: AgentRecord) -> None:
        for _ in range(2):
            system_events.notify(rt, agent, source="s", ref_id="r", body="b")
        assert system_refs(agent) == ["r"]
