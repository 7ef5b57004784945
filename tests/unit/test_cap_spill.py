"""Spill files (block-cap.md B8-B11, B19)."""

from __future__ import annotations

import errno
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from tests.support.spills import (
    MemorySpillIndex,
    attention_spiller,
    persistent_spiller,
    spill_files,
)
from tidings.jobs.cap import cap_lane, cap_persistent, spill, spill_persistent
from tidings.jobs.cap import ruler as cap_ruler
from tidings.jobs.cap.persistent import cap_block
from tidings.jobs.runtime import Runtime
from tidings.store import files
from tidings.store.clock import FakeClock
from tidings.store.keys import AgentKeys
from tidings.store.models import AgentRecord

CAP = 2048


def big_lane(tag: str = "x", n: int = 5) -> dict[str, Any]:
    return {f"mcp.c{i}": {"header": f"h{i}", "data": {"text": tag * 3000}} for i in range(n)}


def big_block(tag: str = "x") -> dict[str, Any]:
    return {
        "email": {
            "emails": [{"id": f"e{i}", "body": tag * 3000} for i in range(5)],
            "email_ids": [f"e{i}" for i in range(5)],
        }
    }


def attention_name(lane: dict[str, Any], suffix: str = "") -> str:
    digest8 = cap_ruler.digest(cap_ruler.canonical_text(lane))[:8]
    return f"notification-attention-overflow-{digest8}{suffix}.json"


class TestSpillDirectory:
    """B8: ``logs/`` is created; a link or non-directory there fails the spill."""

    def test_b8_logs_created(self, tmp_path: Path) -> None:
        lane = big_lane()
        out = cap_lane(lane, CAP, attention_spiller(tmp_path))
        assert (tmp_path / "logs").is_dir()
        assert out["overflow"]["path"] == str(tmp_path / "logs" / attention_name(lane))

    def test_b8_logs_symlink_fails_and_is_left_alone(self, tmp_path: Path) -> None:
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        root = tmp_path / "w"
        root.mkdir()
        os.symlink(elsewhere, root / "logs")
        out = cap_lane(big_lane(), CAP, attention_spiller(root))
        assert out["overflow"]["spill_failed"] is True
        assert out["overflow"]["path"] is None
        assert list(elsewhere.iterdir()) == []
        assert os.path.islink(root / "logs")

    def test_b8_logs_not_a_directory_fails(self, tmp_path: Path) -> None:
        (tmp_path / "logs").write_text("not a dir")
        out = cap_block(big_block(), CAP, persistent_spiller(tmp_path))
        assert out["overflow"] == {
            "path": None,
            "full_chars": cap_ruler.measure_persistent(big_block()),
            "truncated": True,
            "spill_failed": True,
        }
        assert (tmp_path / "logs").read_text() == "not a dir"

    def test_b8_write_failure_fails_the_spill_and_compaction_proceeds(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        def full_disk(fd: int, data: bytes) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(files, "_write_all", full_disk)
        out = cap_lane(big_lane(), CAP, attention_spiller(tmp_path))
        assert out["overflow"]["spill_failed"] is True
        assert out["comment"].endswith("use the producer tool for the full content.")
        assert cap_ruler.measure(out) <= CAP
        assert spill_files(tmp_path) == []  # the temp was removed too

    def test_b8_never_overwrites(self, tmp_path: Path) -> None:
        lane = big_lane()
        logs = tmp_path / "logs"
        logs.mkdir()
        (logs / attention_name(lane)).write_text('{"someone": "else"}')
        out = cap_lane(lane, CAP, attention_spiller(tmp_path))
        assert (logs / attention_name(lane)).read_text() == '{"someone": "else"}'
        assert out["overflow"]["path"] == str(logs / attention_name(lane, "-1"))


class TestExclusiveCreation:
    """B9: temp ``.<name>.<16 hex>.tmp`` (fsynced), hard link, temp always removed."""

    def test_b9_temp_name_link_and_cleanup(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        events: list[tuple[str, Any]] = []
        real_link, real_fsync = os.link, os.fsync

        def link(src: str, dst: str, **kw: Any) -> None:
            events.append(("link", (src, dst)))
            real_link(src, dst, **kw)

        def fsync(fd: int) -> None:
            events.append(("fsync", fd))
            real_fsync(fd)

        monkeypatch.setattr(os, "link", link)
        monkeypatch.setattr(os, "fsync", fsync)
        lane = big_lane()
        out = cap_lane(lane, CAP, attention_spiller(tmp_path))
        links = [e[1] for e in events if e[0] == "link"]
        name = attention_name(lane)
        assert len(links) == 1 and links[0][1] == name
        assert re.fullmatch(re.escape(f".{name}.") + r"[0-9a-f]{16}\.tmp", links[0][0])
        kinds = [e[0] for e in events]
        assert kinds == ["fsync", "link", "fsync"]  # temp fsynced, linked, directory fsynced
        assert spill_files(tmp_path) == [name]  # no temp left
        assert out["overflow"]["path"].endswith(name)

    def test_b9_temp_removed_when_the_name_exists(self, tmp_path: Path) -> None:
        (tmp_path / "logs").mkdir()
        (tmp_path / "logs" / "taken.json").write_text("{}")
        assert files.exclusive_create(tmp_path, "logs/taken.json", b'{"a": 1}') is False
        assert spill_files(tmp_path) == ["taken.json"]
        assert (tmp_path / "logs" / "taken.json").read_text() == "{}"

    def test_b9_temp_removed_when_linking_fails(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        def broken(*args: Any, **kw: Any) -> None:
            raise OSError(errno.EIO, "I/O error")

        monkeypatch.setattr(os, "link", broken)
        out = cap_lane(big_lane(), CAP, attention_spiller(tmp_path))
        assert out["overflow"]["spill_failed"] is True
        assert spill_files(tmp_path) == []

    def test_b9_equal_canonical_text_is_reused(self, tmp_path: Path) -> None:
        """Another writer's formatting does not matter: the canonical text does."""
        lane = big_lane()
        (tmp_path / "logs").mkdir()
        name = attention_name(lane)
        (tmp_path / "logs" / name).write_text(json.dumps(lane, separators=(",", ":")))
        out = cap_lane(lane, CAP, attention_spiller(tmp_path))
        assert out["overflow"]["path"].endswith(name)
        assert spill_files(tmp_path) == [name]

    def test_b9_a_link_at_the_name_is_not_reused(self, tmp_path: Path) -> None:
        lane = big_lane()
        (tmp_path / "logs").mkdir()
        target = tmp_path / "t.json"
        target.write_bytes(cap_ruler.content_bytes(lane))
        os.symlink(target, tmp_path / "logs" / attention_name(lane))
        out = cap_lane(lane, CAP, attention_spiller(tmp_path))
        assert out["overflow"]["path"].endswith(attention_name(lane, "-1"))


class TestAttentionSpill:
    """B10: content-addressed names, reuse of identical content, ``-1`` … ``-100``."""

    def test_b10_name_and_content(self, tmp_path: Path) -> None:
        lane = {**big_lane(), "mcp.ü": {"data": {"text": "日本" * 2000}}}
        out = cap_lane(lane, CAP, attention_spiller(tmp_path))
        name = attention_name(lane)
        assert re.fullmatch(r"notification-attention-overflow-[0-9a-f]{8}\.json", name)
        data = (tmp_path / "logs" / name).read_bytes()
        assert data == json.dumps(lane, indent=2, ensure_ascii=False).encode()
        assert out["overflow"]["path"] == str(tmp_path / "logs" / name)

    def test_b10_identical_content_reuses_the_file(self, tmp_path: Path) -> None:
        lane = big_lane()
        first = cap_lane(lane, CAP, attention_spiller(tmp_path))
        st = (tmp_path / "logs" / attention_name(lane)).stat()
        second = cap_lane(json.loads(json.dumps(lane)), CAP, attention_spiller(tmp_path))
        assert first == second
        assert spill_files(tmp_path) == [attention_name(lane)]
        assert (tmp_path / "logs" / attention_name(lane)).stat().st_mtime_ns == st.st_mtime_ns

    def test_b10_different_content_different_file(self, tmp_path: Path) -> None:
        cap_lane(big_lane("x"), CAP, attention_spiller(tmp_path))
        cap_lane(big_lane("y"), CAP, attention_spiller(tmp_path))
        assert spill_files(tmp_path) == sorted(
            [attention_name(big_lane("x")), attention_name(big_lane("y"))]
        )

    def test_b10_changed_file_is_not_reused(self, tmp_path: Path) -> None:
        """A spill edited after it was verified is checked again (stat identity changed)."""
        lane = big_lane()
        cap_lane(lane, CAP, attention_spiller(tmp_path))
        path = tmp_path / "logs" / attention_name(lane)
        path.write_text('{"edited": true}')
        out = cap_lane(lane, CAP, attention_spiller(tmp_path))
        assert out["overflow"]["path"].endswith(attention_name(lane, "-1"))

    def test_b10_suffixes_run_out_at_100(self, tmp_path: Path) -> None:
        lane = big_lane()
        logs = tmp_path / "logs"
        logs.mkdir()
        for suffix in ["", *(f"-{n}" for n in range(1, 100))]:
            (logs / attention_name(lane, suffix)).write_text("{}")
        out = cap_lane(lane, CAP, attention_spiller(tmp_path))
        assert out["overflow"]["path"].endswith(attention_name(lane, "-100"))
        (logs / attention_name(lane, "-100")).write_text("{}")
        out = cap_lane(lane, CAP, attention_spiller(tmp_path))
        assert out["overflow"]["spill_failed"] is True
        assert len(spill_files(tmp_path)) == 101


class TestPersistentSpill:
    """B11: ``notification-overflow-<ts>[-N].json``, deduplicated by content."""

    def test_b11_content_and_name(self, tmp_path: Path) -> None:
        block = big_block()
        out = cap_block(block, CAP, persistent_spiller(tmp_path, now=1_700_000_123.9))
        name = "notification-overflow-1700000123.json"
        assert out["overflow"]["path"] == str(tmp_path / "logs" / name)
        data = (tmp_path / "logs" / name).read_bytes()
        assert (
            data
            == json.dumps({"notification_persistent": block}, indent=2, ensure_ascii=False).encode()
        )

    def test_b11_unchanged_block_reuses_its_file_later(self, tmp_path: Path) -> None:
        index = MemorySpillIndex()
        first = cap_block(big_block(), CAP, persistent_spiller(tmp_path, index, now=1000.0))
        again = cap_block(big_block(), CAP, persistent_spiller(tmp_path, index, now=2000.0))
        assert first == again
        assert spill_files(tmp_path) == ["notification-overflow-1000.json"]

    def test_b11_two_blocks_in_one_second_get_two_files(self, tmp_path: Path) -> None:
        index = MemorySpillIndex()
        a = cap_block(big_block("a"), CAP, persistent_spiller(tmp_path, index, now=1000.0))
        b = cap_block(big_block("b"), CAP, persistent_spiller(tmp_path, index, now=1000.5))
        assert a["overflow"]["path"].endswith("notification-overflow-1000.json")
        assert b["overflow"]["path"].endswith("notification-overflow-1000-1.json")
        assert json.loads(
            (tmp_path / "logs" / "notification-overflow-1000-1.json").read_text()
        ) == {"notification_persistent": big_block("b")}

    def test_b11_same_second_same_content_without_index(self, tmp_path: Path) -> None:
        """Without an index entry an equal file under the ``<ts>`` name is still reused."""
        cap_block(big_block(), CAP, persistent_spiller(tmp_path, now=1000.0))
        cap_block(big_block(), CAP, persistent_spiller(tmp_path, now=1000.0))
        assert spill_files(tmp_path) == ["notification-overflow-1000.json"]

    def test_b11_indexed_file_gone_or_changed(self, tmp_path: Path) -> None:
        index = MemorySpillIndex()
        cap_block(big_block(), CAP, persistent_spiller(tmp_path, index, now=1000.0))
        (tmp_path / "logs" / "notification-overflow-1000.json").write_text("{}")
        out = cap_block(big_block(), CAP, persistent_spiller(tmp_path, index, now=2000.0))
        assert out["overflow"]["path"].endswith("notification-overflow-2000.json")
        assert list(index.names.values()) == ["notification-overflow-2000.json"]

    def test_b11_index_with_a_foreign_name_is_ignored(self, tmp_path: Path) -> None:
        index = MemorySpillIndex()
        request = spill.SpillRequest(cap_ruler.persistent_view(big_block()))
        index.names[request.digest] = "../../etc/passwd"
        out = cap_block(big_block(), CAP, persistent_spiller(tmp_path, index, now=1000.0))
        assert out["overflow"]["path"].endswith("notification-overflow-1000.json")

    def test_b11_redis_failure_still_spills(self, tmp_path: Path) -> None:
        class Down:
            def known(self, digest: str) -> str | None:
                raise RedisConnectionError("down")

            def remember(self, digest: str, name: str) -> None:
                raise RedisConnectionError("down")

        out = cap_block(big_block(), CAP, persistent_spiller(tmp_path, Down(), now=1000.0))
        assert out["overflow"]["path"].endswith("notification-overflow-1000.json")

    def test_b11_redis_index_keeps_the_most_recent_256(
        self, rt: Runtime, agent: AgentRecord
    ) -> None:
        index = spill_persistent.RedisSpillIndex(rt, agent)
        assert isinstance(rt.clock, FakeClock)
        for n in range(300):
            rt.clock.advance(1)
            index.remember(f"{n:064x}", f"notification-overflow-{n}.json")
        keys = AgentKeys(agent.agent_id)
        assert rt.redis.hlen(keys.persistent_spills) == 256
        assert rt.redis.zcard(keys.persistent_spill_order) == 256
        assert index.known(f"{43:064x}") is None
        assert index.known(f"{44:064x}") == "notification-overflow-44.json"
        assert index.known(f"{299:064x}") == "notification-overflow-299.json"

    def test_b11_cap_persistent_uses_the_agent_index(self, rt: Runtime, agent: AgentRecord) -> None:
        assert isinstance(rt.clock, FakeClock)
        first = cap_persistent(rt, agent, big_block())
        rt.clock.advance(5)
        again = cap_persistent(rt, agent, big_block())
        assert first == again
        assert spill_files(agent.root) == [Path(first["overflow"]["path"]).name]
        rt.clock.advance(5)
        other = cap_persistent(rt, agent, big_block("z"))
        assert other["overflow"]["path"] != first["overflow"]["path"]


class TestFullCopy:
    """B19: a changed lane's spill holds the full original, durable before the return."""

    def test_b19_spill_holds_the_full_original_before_return(self, tmp_path: Path) -> None:
        seen: list[bool] = []
        real = spill.spill_attention

        def observed(root: Path, request: spill.SpillRequest) -> spill.Spill:
            outcome = real(root, request)
            assert outcome.path is not None
            seen.append(Path(outcome.path).exists())
            return outcome

        lane = big_lane()
        out = cap_lane(lane, CAP, lambda r: observed(tmp_path, r))
        assert seen == [True]
        assert json.loads(Path(out["overflow"]["path"]).read_text()) == lane
