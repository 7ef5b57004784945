"""interfaces.md "Never silent, never wrong" (issue 29, acceptance 4), the memory repository rows
through ``tidings.connect()`` and ``tidings status``: registration refuses what is not a
work tree and ``""`` clears; a registered repository that goes away is one warning per
change of state, ``unavailable`` in each turn, and ``attention`` in the status read; an
unfinished turn is named too, and its ``turn_in_progress`` says how to go on."""

from __future__ import annotations

import io
import logging
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pygit2
import pytest
from rich.console import Console

import tidings
from tests.support.memory_repo import MemoryRepo
from tests.support.redis_server import RedisServer
from tidings.cli.status_view import print_tables
from tidings.store.settings import Settings

pytestmark = pytest.mark.redis_server


@pytest.fixture
def hub(redis_server: RedisServer) -> Iterator[tidings.Hub]:
    with redis_server.client() as c:
        c.flushall()
    opened = tidings.connect(
        redis_server.url, settings=Settings(host=f"mem-{uuid.uuid4().hex[:8]}")
    )
    yield opened
    opened.close()


def test_registration_refuses_what_is_no_work_tree_and_empty_clears(
    hub: tidings.Hub,
    tmp_path: Path,
) -> None:
    workdir = tmp_path / "w"
    workdir.mkdir()
    (tmp_path / "plain").mkdir()
    pygit2.init_repository(str(tmp_path / "bare.git"), bare=True)
    for bad, says in (
        ("missing", "does not exist"),
        ("plain", "plain folder"),
        ("bare.git", "bare repository"),
    ):
        with pytest.raises(tidings.TidingsError) as raised:
            hub.agent(workdir, memory_repo=tmp_path / bad)
        assert raised.value.reason == "invalid_memory_repo"
        assert says in raised.value.message and str(tmp_path / bad) in raised.value.message
        assert hub.agents() == []  # nothing registered
    repo = MemoryRepo(tmp_path / "memory", {"MEMORY.md": "m\n"})
    assert hub.agent(workdir, memory_repo=repo.root).record.memory_repo == repo.root
    assert hub.agent(workdir).record.memory_repo == repo.root  # None keeps it
    assert hub.agent(workdir, memory_repo="").record.memory_repo is None
    assert hub.agents()[0]["memory_repo"] is None


def attention(hub: tidings.Hub, agent_id: str) -> list[str]:
    figure = next(a for a in hub.status()["agents"] if a["agent_id"] == agent_id)
    return list(figure["attention"])


def test_a_repository_that_goes_away_is_said_once_per_change_and_shown(
    hub: tidings.Hub,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    workdir = tmp_path / "w"
    workdir.mkdir()
    repo = MemoryRepo(tmp_path / "memory", {"MEMORY.md": "m\n"})
    agent = hub.agent(workdir, memory_repo=repo.root, inline=True)
    assert agent.startup()["memory"]["status"] == "baseline"
    assert attention(hub, agent.agent_id) == []

    moved = tmp_path / "moved"
    shutil.move(repo.root, moved)
    with caplog.at_level(logging.INFO, logger="tidings"):
        for _ in range(3):
            turn = agent.prepare_turn()
            assert not isinstance(turn, dict), turn
            assert turn.memory["status"] == "unavailable" and turn.memory["reason"] == "missing"
            assert agent.finish_turn(turn)["status"] == "ok"
        warned = [r for r in caplog.records if getattr(r, "event", "") == "memory_unavailable"]
        assert len(warned) == 1 and warned[0].levelno == logging.WARNING
        assert warned[0].fields["reason"] == "missing"  # type: ignore[attr-defined]
        assert attention(hub, agent.agent_id) == ["memory_unavailable"]
        out = io.StringIO()
        print_tables(Console(file=out, width=200), hub.status())
        assert "Needs attention" in out.getvalue() and "memory repository" in out.getvalue()

        shutil.move(moved, repo.root)
        assert agent.observe_memory()["status"] == "unchanged"
        back = [r for r in caplog.records if getattr(r, "event", "") == "memory_available"]
        assert len(back) == 1
    assert attention(hub, agent.agent_id) == []


def test_an_unfinished_turn_is_named_and_says_how_to_go_on(
    hub: tidings.Hub,
    tmp_path: Path,
) -> None:
    agent = hub.agent(tmp_path, inline=True)
    turn = agent.prepare_turn(kind="bridge")
    assert not isinstance(turn, dict), turn
    assert attention(hub, agent.agent_id) == ["unfinished_turn"]
    busy = agent.prepare_turn(kind="bridge")
    assert isinstance(busy, dict) and busy["reason"] == "turn_in_progress"
    assert f"finish_turn({turn.turn_id!r})" in busy["message"]
    assert "startup()" in busy["message"]
    assert agent.finish_turn(turn)["status"] == "ok"
    assert attention(hub, agent.agent_id) == []


def test_bare_mcp_prefix_is_no_channel(hub: tidings.Hub, tmp_path: Path) -> None:
    """channels.md C4: ``mcp.`` alone is refused like any invalid name."""
    agent = hub.agent(tmp_path, inline=True)
    for call in (
        lambda: agent.publish("mcp.", {"header": "h"}),
        lambda: agent.publish_event("mcp.", {"summary": "s"}),
    ):
        answer = call()
        assert answer["status"] == "error" and answer["reason"] == "invalid_channel"
        assert answer["message"] == "channel must name something after 'mcp.'"
