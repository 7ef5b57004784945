"""A turn decodes no checkpoint it wrote itself (memory-inbox.md M14, M48; issue 13):
the fields a commit writes are kept with the snapshot they encode, so the reconcile
(and the next pre-turn observation) reads them back without decoding."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import make_agent
from tests.support.memory_repo import MemoryRepo
from tidings.jobs.memory import checkpoint as memory_checkpoint
from tidings.jobs.runtime import Runtime
from tidings.jobs.turns import finish_turn, prepare_turn, startup


def test_turns_decode_no_checkpoint_they_wrote(
    rt: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = MemoryRepo(tmp_path / "memory", {"MEMORY.md": "m\n"})
    agent = make_agent(rt, tmp_path / "workdir", memory_repo=repo.root)
    assert startup(rt, agent)["memory"]["status"] == "baseline"
    decoded: list[int] = []
    original = memory_checkpoint._decode

    def counting(*args: Any) -> Any:
        decoded.append(1)
        return original(*args)

    monkeypatch.setattr(memory_checkpoint, "_decode", counting)
    repo.write("notes.md", "new\n")
    turn = prepare_turn(rt, agent)
    assert turn["memory"]["status"] == "changed"
    repo.write("MEMORY.md", "the agent's own edit\n")
    done = finish_turn(rt, agent, turn["turn_id"])
    assert done["memory"]["status"] == "absorbed"
    assert decoded == []
    again = prepare_turn(rt, agent)
    assert again["memory"]["status"] in ("unchanged", "changed") and decoded == []
