"""The hooks registry (channels.md C38-C41; issue 4 acceptance 2, 4, 5)."""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import make_agent
from tidings.jobs.channels import allowlisting, hooks, publishing
from tidings.jobs.consumer import observe
from tidings.jobs.runtime import Runtime
from tidings.store.keys import AgentKeys
from tidings.store.models import AgentRecord

MANIFEST: dict[str, Any] = {
    "name": "deployer",
    "channel": "deploys",
    "source": "cron",
    "description": "deploy log",
    "how_to_modify": "edit the cron file",
    "how_to_cancel": "remove the cron file",
}


def registry_file(agent: AgentRecord) -> Path:
    return agent.root / ".notification" / "hooks.json"


def registry(agent: AgentRecord) -> Any:
    return json.loads(registry_file(agent).read_bytes())


def write_registry(agent: AgentRecord, content: str | bytes) -> None:
    registry_file(agent).parent.mkdir(exist_ok=True)
    registry_file(agent).write_bytes(content.encode() if isinstance(content, str) else content)


class TestC38File:
    def test_absent_is_empty(self, rt: Runtime, agent: AgentRecord) -> None:
        assert hooks.list_hooks(rt, agent) == {"status": "ok", "hooks": []}

    def test_json_object_is_empty_and_add_replaces_it(
        self, rt: Runtime, agent: AgentRecord
    ) -> None:
        """Acceptance 5: a hooks.json that is a JSON object."""
        write_registry(agent, '{"name": "not a list"}')
        assert hooks.list_hooks(rt, agent) == {"status": "ok", "hooks": []}
        assert hooks.add(rt, agent, MANIFEST)["reason"] == "added"
        assert [m["name"] for m in registry(agent)] == ["deployer"]

    def test_non_object_items_dropped(self, rt: Runtime, agent: AgentRecord) -> None:
        write_registry(agent, json.dumps([1, "x", None, MANIFEST]))
        assert hooks.list_hooks(rt, agent)["hooks"] == [MANIFEST]
        assert allowlisting.allowlist(rt, agent).allows("deploys")

    def test_empty_result_deletes_the_file(self, rt: Runtime, agent: AgentRecord) -> None:
        hooks.add(rt, agent, MANIFEST)
        assert hooks.drop(rt, agent, "deployer")["reason"] == "dropped"
        assert not registry_file(agent).exists()

    def test_c17_compact_array_in_registry_order(self, rt: Runtime, agent: AgentRecord) -> None:
        hooks.add(rt, agent, MANIFEST)
        hooks.add(rt, agent, {**MANIFEST, "name": "second", "channel": "other"})
        raw = registry_file(agent).read_text()
        assert raw.startswith('[{"name":"deployer"') and not raw.endswith("\n")
        assert [m["name"] for m in json.loads(raw)] == ["deployer", "second"]


class TestC39Manifest:
    def test_defaults_and_optional_fields(self, rt: Runtime, agent: AgentRecord) -> None:
        for version in (None, ""):
            hooks.add(rt, agent, {**MANIFEST, "version": version, "instructions": ""})
            assert registry(agent)[0]["version"] == "1.0.0"
            assert "instructions" not in registry(agent)[0]
            assert "max_events" not in registry(agent)[0]
            hooks.drop(rt, agent, "deployer")
        hooks.add(
            rt, agent, {**MANIFEST, "version": "2.1", "instructions": "read it", "max_events": 7}
        )
        stored = registry(agent)[0]
        assert (stored["version"], stored["instructions"], stored["max_events"]) == (
            "2.1",
            "read it",
            7,
        )

    @pytest.mark.parametrize(
        ("change", "fragment"),
        [
            ({"name": ""}, "name"),
            ({"source": None}, "source"),
            ({"description": 5}, "description"),
            ({"how_to_cancel": "  "}, "how_to_cancel"),
            ({"channel": "email"}, "built-in"),
            ({"channel": "comment"}, "reserved"),
            ({"channel": "a..b"}, "channel must not contain '..'"),
            ({"channel": ".x"}, "channel must match"),
            ({"version": 2}, "version"),
            ({"max_events": 0}, "max_events"),
            ({"max_events": 10_001}, "max_events"),
            ({"max_events": True}, "max_events"),
            ({"max_events": 1.5}, "max_events"),
            ({"pid": 4}, "unknown"),
        ],
    )
    def test_invalid_manifest_writes_nothing(
        self, rt: Runtime, agent: AgentRecord, change: dict[str, Any], fragment: str
    ) -> None:
        result = hooks.add(rt, agent, {**MANIFEST, **change})
        assert result["status"] == "error" and result["reason"] == "invalid_manifest"
        assert fragment in result["message"]
        assert not registry_file(agent).exists()


class TestC40Actions:
    def test_add_duplicate_name_and_channel_in_use(self, rt: Runtime, agent: AgentRecord) -> None:
        assert hooks.add(rt, agent, MANIFEST) == {
            "status": "ok",
            "reason": "added",
            "name": "deployer",
        }
        before = registry_file(agent).read_bytes()
        dup = hooks.add(rt, agent, {**MANIFEST, "channel": "other"})
        assert dup["reason"] == "duplicate_name" and dup["name"] == "deployer"
        taken = hooks.add(rt, agent, {**MANIFEST, "name": "thief"})
        assert taken["reason"] == "channel_in_use"
        assert (taken["channel"], taken["name"]) == ("deploys", "deployer")
        assert registry_file(agent).read_bytes() == before

    def test_edit_changes_fields_ignores_nulls(self, rt: Runtime, agent: AgentRecord) -> None:
        hooks.add(rt, agent, MANIFEST)
        result = hooks.edit(
            rt, agent, "deployer", {"description": "new", "source": None, "max_events": 3}
        )
        assert result == {"status": "ok", "reason": "edited", "name": "deployer"}
        stored = registry(agent)[0]
        assert (stored["description"], stored["source"], stored["max_events"]) == ("new", "cron", 3)

    def test_edit_channel_moves_the_allowlist(self, rt: Runtime, agent: AgentRecord) -> None:
        hooks.add(rt, agent, MANIFEST)
        assert hooks.edit(rt, agent, "deployer", {"channel": "releases"})["reason"] == "edited"
        allow = allowlisting.allowlist(rt, agent)
        assert allow.allows("releases") and not allow.allows("deploys")

    def test_edit_revalidates_and_rechecks_channel(self, rt: Runtime, agent: AgentRecord) -> None:
        hooks.add(rt, agent, MANIFEST)
        hooks.add(rt, agent, {**MANIFEST, "name": "b", "channel": "other"})
        before = registry_file(agent).read_bytes()
        assert hooks.edit(rt, agent, "b", {"channel": "soul"})["reason"] == "invalid_manifest"
        clash = hooks.edit(rt, agent, "b", {"channel": "deploys"})
        assert clash["reason"] == "channel_in_use" and clash["name"] == "deployer"
        assert hooks.edit(rt, agent, "b", {"channel": "other"})["reason"] == "edited"
        assert hooks.edit(rt, agent, "zzz", {"source": "x"})["reason"] == "not_found"
        assert hooks.edit(rt, agent, "", {"source": "x"})["reason"] == "invalid_manifest"
        assert json.loads(before) == registry(agent)

    def test_edit_without_non_null_field_is_no_change(
        self, rt: Runtime, agent: AgentRecord
    ) -> None:
        hooks.add(rt, agent, MANIFEST)
        st = registry_file(agent).stat()
        result = hooks.edit(rt, agent, "deployer", {"source": None})
        assert result == {"status": "ok", "reason": "no_change", "name": "deployer"}
        after = registry_file(agent).stat()
        assert (st.st_ino, st.st_mtime_ns) == (after.st_ino, after.st_mtime_ns)
        assert hooks.edit(rt, agent, "ghost", {})["reason"] == "not_found"

    def test_drop_revokes_and_not_found(self, rt: Runtime, agent: AgentRecord) -> None:
        hooks.add(rt, agent, MANIFEST)
        hooks.add(rt, agent, {**MANIFEST, "name": "b", "channel": "other"})
        assert hooks.drop(rt, agent, "deployer") == {
            "status": "ok",
            "reason": "dropped",
            "name": "deployer",
        }
        assert not allowlisting.allowlist(rt, agent).allows("deploys")
        assert publishing.append_event(rt, agent, "deploys", {})["reason"] == "invalid_channel"
        assert hooks.drop(rt, agent, "deployer")["reason"] == "not_found"
        assert hooks.drop(rt, agent, "")["reason"] == "invalid_manifest"
        assert [m["name"] for m in registry(agent)] == ["b"]

    def test_write_failure(
        self, rt: Runtime, agent: AgentRecord, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        def failing(*args: Any) -> None:
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(hooks, "atomic_write", failing)
        result = hooks.add(rt, agent, MANIFEST)
        assert result["reason"] == "hook_registry_write_failed"
        assert not allowlisting.allowlist(rt, agent).allows("deploys")

    def test_add_clears_the_blocked_mark(self, rt: Runtime, agent: AgentRecord) -> None:
        """C28: a channel that gets registered leaves the blocked set."""
        rt.redis.sadd(AgentKeys(agent.agent_id).blocked, "deploys")
        hooks.add(rt, agent, MANIFEST)
        assert not rt.redis.sismember(AgentKeys(agent.agent_id).blocked, "deploys")

    def test_sixteen_concurrent_adds_all_land(self, rt: Runtime, agent: AgentRecord) -> None:
        """Acceptance 4: 16 concurrent add calls with distinct names all land."""
        barrier = threading.Barrier(16)
        results: list[dict[str, Any]] = []

        def add(n: int) -> None:
            barrier.wait(5)
            results.append(
                hooks.add(rt, agent, {**MANIFEST, "name": f"h{n}", "channel": f"chan{n}"})
            )

        threads = [threading.Thread(target=add, args=(n,)) for n in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert [r["reason"] for r in results] == ["added"] * 16
        assert sorted(m["name"] for m in registry(agent)) == sorted(f"h{n}" for n in range(16))
        allow = allowlisting.allowlist(rt, agent)
        assert all(allow.allows(f"chan{n}") for n in range(16))


class TestC41LoadFailureAndFreshness:
    @pytest.mark.parametrize("content", [b"[{", b"\xff\xfe", b"", b"[1,]"])
    def test_corrupt_registry_gives_exact_result(
        self, rt: Runtime, agent: AgentRecord, content: bytes
    ) -> None:
        """Acceptance 5: a corrupt hooks.json never crashes; every action answers the same."""
        write_registry(agent, content)
        for result in (
            hooks.list_hooks(rt, agent),
            hooks.add(rt, agent, MANIFEST),
            hooks.edit(rt, agent, "x", {"source": "y"}),
            hooks.drop(rt, agent, "x"),
        ):
            assert set(result) == {"status", "reason", "message"}
            assert result["reason"] == "hook_registry_load_failed"
            assert result["message"].startswith("Could not load hooks.json: ")
            assert len(result["message"]) <= len("Could not load hooks.json: ") + 300
        assert registry_file(agent).read_bytes() == content

    def test_symlinked_registry_is_a_load_failure(
        self, rt: Runtime, agent: AgentRecord, tmp_path: Path
    ) -> None:
        outside = tmp_path / "elsewhere.json"
        outside.write_text(json.dumps([MANIFEST]))
        registry_file(agent).parent.mkdir()
        os.symlink(outside, registry_file(agent))
        assert hooks.list_hooks(rt, agent)["reason"] == "hook_registry_load_failed"
        assert not allowlisting.allowlist(rt, agent).allows("deploys")

    def test_out_of_band_edit_is_picked_up(self, rt: Runtime, agent: AgentRecord) -> None:
        assert not allowlisting.allowlist(rt, agent).allows("deploys")
        write_registry(agent, json.dumps([MANIFEST]))
        assert allowlisting.allowlist(rt, agent).allows("deploys")
        write_registry(agent, json.dumps([{**MANIFEST, "channel": "other-name"}]))
        allow = allowlisting.allowlist(rt, agent)
        assert allow.allows("other-name") and not allow.allows("deploys")

    def test_load_failure_keeps_last_loaded_set_from_redis(
        self, rt: Runtime, agent: AgentRecord, caplog: pytest.LogCaptureFixture
    ) -> None:
        hooks.add(rt, agent, MANIFEST)
        write_registry(agent, "{corrupt")
        allowlisting.invalidate(agent)  # as in a fresh process: only Redis remembers
        with caplog.at_level(logging.WARNING, logger="tidings"):
            assert allowlisting.allowlist(rt, agent).allows("deploys")
        assert any(
            getattr(r, "event", "") == "notification_hook_registry_error" for r in caplog.records
        )
        reading_ok = observe(rt, agent)
        assert reading_ok.stable

    def test_never_loaded_and_corrupt_allows_no_hook(self, rt: Runtime, agent: AgentRecord) -> None:
        write_registry(agent, "{corrupt")
        assert allowlisting.hook_channels(rt, agent) == frozenset()


def test_acceptance2_hook_of_one_agent_never_allows_for_another(
    rt: Runtime, tmp_path: Path
) -> None:
    """Acceptance 2: two agents on one host; a hook registered by one is not the other's."""
    one = make_agent(rt, tmp_path / "one", "one")
    two = make_agent(rt, tmp_path / "two", "two")
    hooks.add(rt, one, MANIFEST)
    assert publishing.append_event(rt, one, "deploys", {"n": 1})["status"] == "ok"
    refused = publishing.append_event(rt, two, "deploys", {"n": 1})
    assert refused["reason"] == "invalid_channel"
    (two.root / ".notification").mkdir(exist_ok=True)
    (two.root / ".notification" / "deploys.json").write_text("{}")
    assert "deploys" not in observe(rt, two).payloads
    assert "deploys" in observe(rt, one).payloads
