"""Concurrent renders of one workdir from separate processes (issue 5, acceptance 3;
block-cap.md B9, B10, B19)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.render_child import render_together
from tests.support.spills import spill_files
from tidings.jobs.cap.ruler import canonical_text
from tidings.store.files import atomic_write

PROCESSES = 8


def big(tag: str) -> dict[str, Any]:
    return {
        "header": tag,
        "data": {"messages": [{"id": f"{tag}{i}", "text": tag * 3000} for i in range(8)]},
    }


def test_b9_eight_processes_one_spill(tmp_path: Path) -> None:
    """The same oversized lane from 8 processes: one file, every lane names it."""
    atomic_write(tmp_path, ".notification/mcp.big1.json", json.dumps(big("x")).encode())
    lanes = [lane for _, lane in render_together(str(tmp_path), ["a"] * PROCESSES)]
    assert all(lane == lanes[0] for lane in lanes)
    name = Path(lanes[0]["overflow"]["path"]).name
    assert spill_files(tmp_path) == [name]  # one file, no temp left
    assert json.loads((tmp_path / "logs" / name).read_text()) == {"mcp.big1": big("x")}


def test_b9_two_lanes_two_files_nothing_overwritten(tmp_path: Path) -> None:
    atomic_write(tmp_path, ".notification/mcp.big1.json", json.dumps(big("x")).encode())
    atomic_write(tmp_path, ".notification/mcp.big2.json", json.dumps(big("y")).encode())
    rendered = render_together(str(tmp_path), ["a", "b"] * (PROCESSES // 2))
    by_variant = {v: {json.dumps(lane) for w, lane in rendered if w == v} for v in "ab"}
    assert len(by_variant["a"]) == len(by_variant["b"]) == 1
    paths = {json.loads(t)["overflow"]["path"] for t in by_variant["a"] | by_variant["b"]}
    assert sorted(Path(p).name for p in paths) == spill_files(tmp_path)
    assert len(paths) == 2
    for path in paths:
        content = json.loads(Path(path).read_text())
        assert set(content) == {"mcp.big1", "mcp.big2"}
        assert canonical_text(content["mcp.big2"]) == canonical_text(big("y"))
    identity = {p: (Path(p).stat().st_ino, Path(p).stat().st_mtime_ns) for p in paths}
    again = render_together(str(tmp_path), ["b", "a"])
    assert {json.dumps(lane) for _, lane in again} == by_variant["a"] | by_variant["b"]
    assert {p: (Path(p).stat().st_ino, Path(p).stat().st_mtime_ns) for p in paths} == identity
