"""Safe reads, fingerprints, snapshots and the coherent read (channels.md C8, C19-C22)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from tidings.jobs.channels import Allowlist
from tidings.jobs.consumer import _bare_read as bare
from tidings.jobs.consumer import fingerprint, observe
from tidings.jobs.runtime import Runtime
from tidings.store.keys import AgentKeys
from tidings.store.models import AgentRecord

ALLOW = Allowlist()


def write(root: Path, name: str, content: str | bytes) -> Path:
    d = root / ".notification"
    d.mkdir(exist_ok=True)
    path = d / name
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


class TestC19SafeReads:
    def test_only_allowed_stems_are_read(self, tmp_path: Path) -> None:
        write(tmp_path, "system.json", '{"a": 1}')
        write(tmp_path, "stranger.json", '{"a": 1}')
        write(tmp_path, "hooks.json", "[]")
        write(tmp_path, "large_result_acks.json", "{}")
        write(tmp_path, "daemon.json", '{"kind": "daemon_report"}')
        write(tmp_path, ".hidden.json", "{}")
        write(tmp_path, "notes.txt", "{}")
        assert list(bare.snapshot(tmp_path, ALLOW)) == ["system"]
        assert [e[0] for e in fingerprint(tmp_path, ALLOW)] == ["system.json"]

    def test_symlink_directory_and_oversized_files_are_skipped(self, tmp_path: Path) -> None:
        target = write(tmp_path, "system.json", '{"a": 1}')
        os.symlink(target, tmp_path / ".notification" / "soul.json")
        (tmp_path / ".notification" / "mcp.d.json").mkdir()
        write(tmp_path, "mcp.big.json", b'{"x": "' + b"a" * 1_048_576 + b'"}')
        write(tmp_path, "mcp.limit.json", b'"' + b"a" * 1_048_574 + b'"')  # exactly 1 MiB
        assert sorted(bare.snapshot(tmp_path, ALLOW)) == ["mcp.limit", "system"]

    @pytest.mark.skipif(os.geteuid() == 0, reason="root reads unreadable files")
    def test_unreadable_file_is_skipped(self, tmp_path: Path) -> None:
        path = write(tmp_path, "system.json", "{}")
        path.chmod(0)
        try:
            assert bare.snapshot(tmp_path, ALLOW) == {}
        finally:
            path.chmod(0o644)


class TestC20Fingerprint:
    def test_no_directory_is_empty(self, tmp_path: Path) -> None:
        assert fingerprint(tmp_path, ALLOW) == []

    def test_sorted_entries_with_size_and_sha_malformed_included(self, tmp_path: Path) -> None:
        write(tmp_path, "system.json", '{"a": 1}')
        write(tmp_path, "email.json", "not json")
        fp = fingerprint(tmp_path, ALLOW)
        assert [e[0] for e in fp] == ["email.json", "system.json"]
        assert fp[0][1] == len("not json") and len(fp[0][2]) == 64

    def test_content_matters_mtime_does_not(self, tmp_path: Path) -> None:
        path = write(tmp_path, "system.json", '{"a": 1}')
        before = fingerprint(tmp_path, ALLOW)
        os.utime(path, (1, 1))
        assert fingerprint(tmp_path, ALLOW) == before
        path.write_text('{"a": 2}')
        assert fingerprint(tmp_path, ALLOW) != before


class TestC21Snapshot:
    def test_malformed_skipped_and_fresh_objects(self, tmp_path: Path) -> None:
        write(tmp_path, "system.json", '{"data": {"events": []}}')
        write(tmp_path, "email.json", "{broken")
        first = bare.snapshot(tmp_path, ALLOW)
        assert list(first) == ["system"]
        first["system"]["data"]["events"].append("mutated")
        assert bare.snapshot(tmp_path, ALLOW)["system"]["data"]["events"] == []

    def test_c8_non_object_is_presented_as_data(self, tmp_path: Path) -> None:
        write(tmp_path, "system.json", "[1, 2]")
        write(tmp_path, "soul.json", '{"anything": true}')
        snap = bare.snapshot(tmp_path, ALLOW)
        assert snap["system"] == {"data": [1, 2]}
        assert snap["soul"] == {"anything": True}


class TestC22CoherentRead:
    def test_stable_read_carries_one_instant(self, rt: Runtime, agent: AgentRecord) -> None:
        write(agent.root, "system.json", '{"a": 1}')
        obs = observe(rt, agent)
        assert obs.stable and obs.attempts == 1
        assert obs.payloads == {"system": {"a": 1}}
        assert obs.raw_fp == fingerprint(agent.root, ALLOW) == obs.masked_fp

    def test_churning_file_gives_unstable_after_three_attempts(
        self, rt: Runtime, agent: AgentRecord, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        path = write(agent.root, "system.json", '{"n": 0}')
        real = bare._snapshot
        calls = {"n": 0}

        def churning(*args: Any) -> Any:
            out = real(*args)
            calls["n"] += 1
            path.write_text(json.dumps({"n": calls["n"]}))
            return out

        monkeypatch.setattr(bare, "_snapshot", churning)
        obs = observe(rt, agent)
        assert not obs.stable and obs.attempts == 3 and calls["n"] == 3

    def test_one_change_then_stable_on_retry(
        self, rt: Runtime, agent: AgentRecord, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        path = write(agent.root, "system.json", '{"n": 0}')
        real = bare._snapshot
        calls = {"n": 0}

        def once(*args: Any) -> Any:
            out = real(*args)
            if calls["n"] == 0:
                path.write_text('{"n": 1}')
            calls["n"] += 1
            return out

        monkeypatch.setattr(bare, "_snapshot", once)
        obs = observe(rt, agent)
        assert obs.stable and obs.attempts == 2 and obs.payloads == {"system": {"n": 1}}

    def test_store_error_is_unstable_with_empty_payloads(
        self, rt: Runtime, agent: AgentRecord, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        write(agent.root, "system.json", "{}")

        def broken(*args: Any) -> Any:
            raise RedisConnectionError("down")

        monkeypatch.setattr(bare, "allowlist", broken)
        obs = observe(rt, agent)
        assert not obs.stable and obs.payloads == {} and obs.error == "ConnectionError"

    def test_snapshot_commits_nothing(self, rt: Runtime, agent: AgentRecord) -> None:
        from tidings._agent import Agent

        write(agent.root, "system.json", "{}")

        class _Hub:
            runtime = rt

        snap = Agent(_Hub(), agent).snapshot()  # type: ignore[arg-type]
        assert snap == {"system": {}}
        k = AgentKeys(agent.agent_id)
        assert rt.redis.get(k.delivered_fp) is None and rt.redis.get(k.wake_fp) is None
