"""prepare_turn renders the attention lane while the pre-turn observation runs
(memory-inbox.md M43; issue 13): the turn waits for the longer of the two, not their
sum."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import make_agent
from tests.support.memory_repo import MemoryRepo
from tidings.jobs.runtime import Runtime
from tidings.jobs.turns import prepare as turn_prepare


def test_render_overlaps_the_pre_turn_observation(
    rt: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = MemoryRepo(tmp_path / "memory", {"MEMORY.md": "m\n"})
    agent = make_agent(rt, tmp_path / "workdir", memory_repo=repo.root)
    rendering = threading.Event()
    overlapped: list[bool] = []
    render, observe = turn_prepare.safe_attention, turn_prepare.observe_memory

    def slow_render(*args: Any) -> Any:
        rendering.set()
        return render(*args)

    def observe_waiting_for_render(*args: Any) -> Any:
        overlapped.append(rendering.wait(5))  # a render that follows would never start
        return observe(*args)

    monkeypatch.setattr(turn_prepare, "safe_attention", slow_render)
    monkeypatch.setattr(turn_prepare, "observe_memory", observe_waiting_for_render)
    turn = turn_prepare.prepare_turn(rt, agent)
    assert turn["status"] == "ok" and turn["memory"]["status"] == "baseline"
    assert overlapped == [True]
