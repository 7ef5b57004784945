"""Hostile files and input, issue 11 table items 1-8, 10 and 11 (channels.md C46-C49, C51).

Each test plants today's input and asserts the §11 outcome at the job level (no
C52 last-resort wrapper in the way, so an exception fails the test). Tests that
involve a store run on fakeredis and on a real redis-server (``redis_client``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import make_agent
from tidings.cli import main as cli_main
from tidings.jobs import tick
from tidings.jobs.cap import cap_lane, spill
from tidings.jobs.cap import ruler as cap_ruler
from tidings.jobs.channels import (
    alarm_threshold,
    allowlisting,
    hooks,
    publish_daemon_event,
    publish_event,
    publishing,
    read_daemon,
)
from tidings.jobs.consumer import (
    STATE_FILE,
    check_placeholder,
    dismiss_channel,
    dismiss_event,
    observe,
    read_state,
    render,
    request_delay,
    stamp,
    sync_agent,
    wake_stream,
)
from tidings.jobs.inbox import admit
from tidings.jobs.runtime import Runtime
from tidings.store import jsonread, locks
from tidings.store.models import AgentRecord

#: Item 1: JSON nested 5,000 deep (objects and arrays), well under the 1 MiB read limit.
DEEP = '{"data":' + "[" * 2500 + "{}" + "]" * 2500 + "}"
DEEP_OBJECT = json.dumps({"a": 1})
for _ in range(2500):
    DEEP_OBJECT = '{"k":[' + DEEP_OBJECT + "]}"

MANIFEST = {
    "name": "h",
    "channel": "deploys",
    "source": "s",
    "description": "d",
    "how_to_modify": "m",
    "how_to_cancel": "c",
}


def plant(agent: AgentRecord, rel: str, content: str | bytes) -> Path:
    path = agent.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def mirror(agent: AgentRecord, channel: str) -> Any:
    return json.loads((agent.root / ".notification" / f"{channel}.json").read_bytes())


def drain(rt: Runtime, agent: AgentRecord) -> list[dict[str, Any]]:
    entries = []
    while (entry := wake_stream.try_consume(rt, agent)) is not None:
        entries.append(entry)
    return entries


class TestReader:
    """C47, C48 at the reader itself."""

    def test_c47_depth_64_reads_65_is_malformed(self) -> None:
        assert jsonread.parse(json.dumps(nested(64))) == jsonread.Parsed(nested(64))
        deep = jsonread.parse(json.dumps(nested(65)))
        assert isinstance(deep, jsonread.Malformed) and deep.reason == "too_deep"
        assert isinstance(jsonread.parse(DEEP), jsonread.Malformed)

    def test_c47_brackets_inside_strings_do_not_count(self) -> None:
        text = json.dumps({"s": "[" * 5000 + "{" * 5000, "t": '\\"[[[['})
        assert isinstance(jsonread.parse(text), jsonread.Parsed)

    def test_c48_lone_surrogates_read_as_replacement(self) -> None:
        parsed = jsonread.parse(b'{"a\\ud83d":["x\\udc00y","\\ud83d\\ude00","\\\\ud83d"]}')
        assert parsed == jsonread.Parsed({"a\ufffd": ["x\ufffdy", "\U0001f600", "\\ud83d"]})

    def test_not_json_is_malformed_never_raised(self) -> None:
        for raw in (b"\xff\xfe", b"{", b"NaN", b'{"a": Infinity}', b""):
            assert isinstance(jsonread.parse(raw), jsonread.Malformed)

    def test_c47_c48_call_input(self) -> None:
        cyclic: list[Any] = []
        cyclic.append(cyclic)
        assert jsonread.input_problem(nested(64), "x") is None
        assert jsonread.input_problem(nested(65), "x").reason == "too_deep"  # type: ignore[union-attr]
        assert jsonread.input_problem(cyclic, "x").reason == "too_deep"  # type: ignore[union-attr]
        assert jsonread.input_problem({"a": "\ud83d"}, "x").message == "not valid Unicode"  # type: ignore[union-attr]
        assert jsonread.input_problem({"a": {1, 2}}, "x").reason == "not_json"  # type: ignore[union-attr]


class TestItem1DeepFiles:
    """Item 1: a 5,000-deep file is malformed where it is read; nothing raises."""

    def test_deep_channel_file_is_skipped_and_others_still_wake(
        self, rt: Runtime, agent: AgentRecord
    ) -> None:
        plant(agent, ".notification/mcp.x.json", DEEP)
        assert observe(rt, agent).payloads == {}
        assert render(rt, agent) == {}
        assert stamp(rt, agent, check_placeholder())
        sync_agent(rt, agent)
        plant(agent, ".notification/email.json", '{"header": "new mail"}')
        assert sync_agent(rt, agent)["woke"] is True
        entry = drain(rt, agent)[-1]
        attention = entry["result"]["_meta"]["agent_meta"]["notifications"]["attention"]
        assert list(attention) == ["email"]
        ok = request_delay(rt, agent, "email", 30)
        assert ok["status"] == "ok"

    def test_flush_into_a_deep_mirror_starts_it_empty(
        self, rt: Runtime, agent: AgentRecord
    ) -> None:
        plant(agent, ".notification/mcp.x.json", DEEP_OBJECT)
        result = publish_event(rt, agent, "mcp.x", {"n": 1})
        assert result["status"] == "ok" and result["flushed"] is True
        assert [e["n"] for e in mirror(agent, "mcp.x")["data"]["events"]] == [1]

    def test_deep_hooks_json_is_a_load_failure_not_a_raise(
        self, rt: Runtime, agent: AgentRecord
    ) -> None:
        plant(agent, ".notification/hooks.json", DEEP)
        allowlisting.invalidate(agent)
        assert publish_event(rt, agent, "system", {"n": 1})["status"] == "ok"
        listed = hooks.list_hooks(rt, agent)
        assert listed["reason"] == "hook_registry_load_failed"
        assert "deeper than 64" in listed["message"]
        assert hooks.add(rt, agent, MANIFEST)["reason"] == "hook_registry_load_failed"
        assert sync_agent(rt, agent)["status"] == "ok"

    def test_deep_delay_state_is_no_delay(self, rt: Runtime, agent: AgentRecord) -> None:
        plant(agent, STATE_FILE, DEEP)
        assert read_state(agent.root).kind == "malformed"
        assert sync_agent(rt, agent)["status"] == "ok"
        assert request_delay(rt, agent, "email", 30)["status"] == "ok"

    def test_deep_daemon_mini_file_and_notification_json(
        self, rt: Runtime, agent: AgentRecord
    ) -> None:
        plant(agent, ".notification/daemon/r1.json", DEEP)
        plant(agent, "notification.json", DEEP)
        assert alarm_threshold(agent.root) is None
        assert read_daemon(agent.root).payload is None
        result = publish_daemon_event(rt, agent, "r2", {"n": 1})
        assert result["status"] == "ok"
        events = observe(rt, agent).payloads["daemon"]["data"]["events"]
        assert [e["n"] for e in events] == [1]
        assert sync_agent(rt, agent)["woke"] is True

    def test_deep_control_record_is_a_control_error(self, rt: Runtime, agent: AgentRecord) -> None:
        plant(agent, ".notification/daemon/.tombstone", DEEP)
        assert read_daemon(agent.root).error is not None
        result = publish_daemon_event(rt, agent, "r1", {"n": 1})
        assert result["reason"] == "daemon_control_error"


class TestItem2LoneSurrogate:
    """Item 2: half an emoji in a producer's file reads as U+FFFD and stays deliverable."""

    def test_wake_flush_and_dismiss(self, rt: Runtime, agent: AgentRecord) -> None:
        sync_agent(rt, agent)
        plant(agent, ".notification/email.json", b'{"header": "hi \\ud83d", "data": {}}')
        assert sync_agent(rt, agent)["woke"] is True
        entry = drain(rt, agent)[-1]
        attention = entry["result"]["_meta"]["agent_meta"]["notifications"]["attention"]
        assert attention["email"]["header"] == "hi \ufffd"
        plant(
            agent,
            ".notification/system.json",
            b'{"data": {"events": [{"event_id": "e1", "body": "\\udc00"}, {"event_id": "e2"}]}}',
        )
        assert publish_event(rt, agent, "system", {"event_id": "e3"})["flushed"]
        events = mirror(agent, "system")["data"]["events"]
        assert [e["event_id"] for e in events] == ["e1", "e2", "e3"]
        assert events[0]["body"] == "\ufffd"
        done = dismiss_event(rt, agent, "e1", force=True)
        assert done["status"] == "ok" and done["removed"] == 1
        (agent.root / ".notification" / "system.json").read_bytes().decode("utf-8")

    def test_c48_call_input_that_is_not_unicode(self, rt: Runtime, agent: AgentRecord) -> None:
        result = publish_event(rt, agent, "system", {"body": "\ud83d"})
        assert result == {
            "status": "error",
            "reason": "invalid_event",
            "message": "not valid Unicode",
        }
        env = publishing.publish(rt, agent, "soul", {"header": "\udc00"})
        assert env["reason"] == "invalid_envelope" and env["message"] == "not valid Unicode"
        key = publish_event(rt, agent, "system", {}, idempotency_key="\ud800")
        assert key["reason"] == "invalid_idempotency_key"


class TestItem3NameLength:
    """Item 3, C46: names over 200 characters are refused; 200 flushes; long stems ignored."""

    def test_over_long_channel_is_invalid(self, rt: Runtime, agent: AgentRecord) -> None:
        for length in (210, 251, 5000):
            result = publish_event(rt, agent, "mcp." + "a" * length, {"n": 1})
            assert result["reason"] == "invalid_channel"
            assert result["message"] == "channel must be at most 200 characters"

    def test_200_characters_flush_and_every_name_fits(
        self, rt: Runtime, agent: AgentRecord, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        created: list[str] = []
        real_open = os.open

        def spy(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
            created.append(os.fsdecode(path))
            return real_open(path, flags, *args, **kwargs)

        monkeypatch.setattr(os, "open", spy)
        channel = "mcp." + "a" * 196
        result = publish_event(rt, agent, channel, {"n": 1})
        assert result["status"] == "ok" and result["flushed"] is True
        monkeypatch.undo()
        assert mirror(agent, channel)["data"]["events"][0]["n"] == 1
        assert max(len(os.path.basename(p).encode()) for p in created) <= 255
        assert any(p.endswith(".tmp") for p in created)

    def test_over_long_stem_on_disk_is_ignored_without_warning(
        self, rt: Runtime, agent: AgentRecord
    ) -> None:
        plant(agent, ".notification/" + "b" * 201 + ".json", "{}")
        plant(agent, ".notification/mcp." + "c" * 197 + ".json", "{}")
        result = sync_agent(rt, agent)
        assert result["status"] == "ok" and not result.get("blocked")
        assert observe(rt, agent).payloads == {}
        assert not (agent.root / ".notification" / "system.json").exists()

    def test_daemon_id_and_hook_name_length(self, rt: Runtime, agent: AgentRecord) -> None:
        run = publish_daemon_event(rt, agent, "r" * 201, {"n": 1})
        assert run["message"] == "daemon_id must be at most 200 characters"
        added = hooks.add(rt, agent, {**MANIFEST, "name": "n" * 201})
        assert added["reason"] == "invalid_manifest"
        assert hooks.drop(rt, agent, "n" * 201)["reason"] == "invalid_manifest"


class TestItem4Registry:
    """Item 4, C49: a manifest is at most 16 KiB; the registry stays under 1 MiB."""

    def test_two_megabyte_description_is_refused(self, rt: Runtime, agent: AgentRecord) -> None:
        result = hooks.add(rt, agent, {**MANIFEST, "description": "d" * 2_000_000})
        assert result["reason"] == "invalid_manifest" and "16384" in result["message"]
        assert hooks.list_hooks(rt, agent) == {"status": "ok", "hooks": []}

    def test_registry_full_before_one_mebibyte_and_still_repairable(
        self, rt: Runtime, agent: AgentRecord
    ) -> None:
        text = "d" * 15_000
        reasons = [
            hooks.add(
                rt, agent, {**MANIFEST, "name": f"h{i}", "channel": f"c{i}", "description": text}
            )["reason"]
            for i in range(72)
        ]
        assert reasons[0] == "added" and reasons[-1] == "hook_registry_full"
        assert (agent.root / ".notification" / "hooks.json").stat().st_size <= 1_048_576
        listed = hooks.list_hooks(rt, agent)
        assert listed["status"] == "ok" and len(listed["hooks"]) == reasons.count("added")
        assert hooks.edit(rt, agent, "h0", {"description": "short"})["reason"] == "edited"
        assert hooks.drop(rt, agent, "h1")["reason"] == "dropped"


class TestItem5NullEventId:
    """Item 5, C11: a null ``event_id`` counts as absent."""

    def test_null_event_id_gets_one(self, rt: Runtime, agent: AgentRecord) -> None:
        result = publish_event(rt, agent, "system", {"event_id": None})
        assert result["status"] == "ok" and result["event_id"].startswith("evt_")
        assert mirror(agent, "system")["data"]["events"][0]["event_id"] == result["event_id"]


class TestItem6DeepCallInput:
    """Item 6, C47: deep call input gets the call's invalid-input reason naming the limit."""

    def test_deep_event_and_envelope(self, rt: Runtime, agent: AgentRecord) -> None:
        deep = {"x": nested(3000)}
        event = publish_event(rt, agent, "system", deep)
        assert event["reason"] == "invalid_event" and "levels" in event["message"]
        envelope = publishing.publish(rt, agent, "soul", {"data": nested(3000)})
        assert envelope["reason"] == "invalid_envelope" and "64 levels" in envelope["message"]
        run = publish_daemon_event(rt, agent, "r1", deep)
        assert run["reason"] == "invalid_event"
        admitted = admit(rt, agent.agent_id, "mail", "s", {"p": nested(3000)})
        assert admitted["reason"] == "invalid_payload"
        assert not (agent.root / ".notification").exists()

    def test_event_as_deep_as_its_mirror_allows(self, rt: Runtime, agent: AgentRecord) -> None:
        """Departure, noted: an event is stored three levels down, so 61 is its limit."""
        ok = publish_event(rt, agent, "mcp.d", {"x": nested(60)})
        assert ok["status"] == "ok"
        assert observe(rt, agent).payloads["mcp.d"]["data"]["events"][0]["x"]
        refused = publish_event(rt, agent, "mcp.d", {"x": nested(61)})
        assert refused["reason"] == "invalid_event" and "61 levels" in refused["message"]

    def test_deep_cli_event_is_a_usage_error_not_a_traceback(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        deep = '{"x":' + "[" * 3000 + "]" * 3000 + "}"
        code = cli_main(["publish", "system", "--event", deep, "--json"])
        out = json.loads(capsys.readouterr().out)
        assert code == 2 and out["reason"] == "invalid_event" and "64 levels" in out["message"]


class TestItem7Locks:
    """Item 7, C51: a lock directory or lock file that is not what it should be answers the
    action's write-failed reason."""

    def _lock(self, agent: AgentRecord, scope: str) -> Path:
        return agent.root / locks.LOCK_DIR / locks.lock_file_name(scope)

    def test_locks_dir_symlink(self, rt: Runtime, agent: AgentRecord, tmp_path: Path) -> None:
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        (agent.root / ".notification").mkdir()
        (agent.root / locks.LOCK_DIR).symlink_to(elsewhere)
        assert hooks.add(rt, agent, MANIFEST)["reason"] == "hook_registry_write_failed"
        assert publish_event(rt, agent, "system", {})["status"] == "ok"
        assert request_delay(rt, agent, "email", 5)["reason"] == ("delay_state_write_failed")
        assert dismiss_channel(rt, agent, "soul", force=True)["reason"] == "clear_failed"
        assert list(elsewhere.iterdir()) == []

    def test_lock_file_is_a_directory(self, rt: Runtime, agent: AgentRecord) -> None:
        self._lock(agent, hooks.SCOPE).mkdir(parents=True)
        result = hooks.add(rt, agent, MANIFEST)
        assert result["reason"] == "hook_registry_write_failed"
        assert "is a directory" in result["message"]
        self._lock(agent, "channel:system").mkdir()
        flushed = publishing.append_event(rt, agent, "system", {"n": 1})
        assert flushed["status"] == "ok" and flushed["flushed"] is False
        os.mkfifo(self._lock(agent, "channel:soul"))
        assert publishing.publish(rt, agent, "soul", {"header": "h"})["status"] == "ok"


class TestItem8SourceKind:
    """Item 8, M3: ``source_kind`` fully matches; a trailing newline is refused."""

    def test_trailing_newline(self, rt: Runtime, agent: AgentRecord) -> None:
        for kind in ("memory-change\n", "mail\n", "mail\nx"):
            result = admit(rt, agent.agent_id, kind, "spoof")
            assert result["reason"] == "invalid_source_kind"


class TestItem10SpillDecoy:
    """Item 10, C51: a file at the spill name is read at most up to the spill's size."""

    def test_250_mb_decoy_is_not_read(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        lane = {f"mcp.c{i}": {"header": f"h{i}", "data": {"text": "x" * 3000}} for i in range(5)}
        digest8 = cap_ruler.digest(cap_ruler.canonical_text(lane))[:8]
        name = f"{spill.ATTENTION_STEM}{digest8}.json"
        (tmp_path / "logs").mkdir()
        with open(tmp_path / "logs" / name, "wb") as decoy:
            decoy.truncate(250 * 1024 * 1024)  # sparse: no disk used
        limits: list[int] = []
        real = spill.safe_read

        def spy(root: Path, rel: str, limit: int = 0) -> Any:
            limits.append(limit)
            return real(root, rel, limit)

        monkeypatch.setattr(spill, "safe_read", spy)
        out = cap_lane(lane, 2048, lambda request: spill.spill_attention(tmp_path, request))
        assert out["overflow"]["path"].endswith(f"{digest8}-1.json")
        assert all(limit <= 64 * 1024 for limit in limits)


class TestItem11SpecialFiles:
    """Item 11, C51: the warning names what is in the way."""

    @pytest.mark.parametrize(
        ("make", "what"), [(os.mkfifo, "is a FIFO"), (os.mkdir, "is a directory")]
    )
    def test_fifo_or_directory_named_email(
        self, rt: Runtime, agent: AgentRecord, make: Any, what: str
    ) -> None:
        (agent.root / ".notification").mkdir()
        make(agent.root / ".notification" / "email.json")
        result = publishing.append_event(rt, agent, "email", {"n": 1})
        assert result["status"] == "ok" and result["flushed"] is False
        body = next(
            e["body"]
            for e in mirror(agent, "system")["data"]["events"]
            if e["ref_id"] == "unsafe_channel:email"
        )
        assert what in body and "symlink" not in body
        assert observe(rt, agent).payloads.keys() == {"system"}


class TestSmallHoles:
    def test_huge_delay_cap_answers_invalid_delay(
        self, rt: Runtime, agent: AgentRecord, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("LINGTAI_NOTIFICATION_DELAY_MAX_SECONDS", str(10**18))
        result = request_delay(rt, agent, "email", 10**17)
        assert result["reason"] == "invalid_delay" and "9999" in result["message"]
        assert request_delay(rt, agent, "email", 10**9)["status"] == "ok"

    def test_other_agent_is_unaffected(self, rt: Runtime, tmp_path: Path) -> None:
        poisoned = make_agent(rt, tmp_path / "p", "p1")
        healthy = make_agent(rt, tmp_path / "h", "h1")
        for name in ("mcp.a.json", "hooks.json", ".delay_state.json"):
            plant(poisoned, f".notification/{name}", DEEP)
        plant(healthy, ".notification/email.json", "{}")
        result = tick.sync_host(rt, healthy.host)
        assert result["failed"] == [] and result["woke"] == 1
