"""A process SIGKILLed while it observes does not stall the restart (memory-inbox.md M52;
issue 13 acceptance 5): the lock's token names its holder, and a fresh process on the
same host that finds the holder gone takes the lock at once instead of waiting out the
60 s lease."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import tidings
from tests.support.groups import TIMING
from tests.support.memory_repo import MemoryRepo
from tests.support.redis_server import RedisServer
from tidings.jobs.memory import lock as observe_lock
from tidings.store.inbox_keys import InboxKeys
from tidings.store.settings import Settings

pytestmark = [pytest.mark.e2e, pytest.mark.redis_server]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def observer(
    own_redis: RedisServer, e2e_env: dict[str, str], tmp_path: Path
) -> Iterator[tuple[subprocess.Popen[bytes], MemoryRepo]]:
    """An orchestrator child stopped between listing and fingerprint, lock held."""
    repo = MemoryRepo(tmp_path / "memory", {"MEMORY.md": "remember\n"})
    (tmp_path / "wd").mkdir()
    env = {**e2e_env, "TIDINGS_REDIS_URL": own_redis.url}
    with tidings.connect(own_redis.url, settings=Settings(redis_url=own_redis.url)) as hub:
        agent = hub.agent(tmp_path / "wd", memory_repo=repo.root, inline=True)
        assert agent.startup()["memory"]["status"] == "baseline"
    repo.write("MEMORY.md", "edited before the crash\n")
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.support.orchestrator",
            "observe-and-hang",
            str(tmp_path / "wd"),
            repo.root,
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        yield child, repo
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
        child.wait(10)
        assert child.stdout is not None
        child.stdout.close()


@TIMING
def test_acceptance_5_restart_after_sigkill_mid_observation(
    own_redis: RedisServer,
    observer: tuple[subprocess.Popen[bytes], MemoryRepo],
    tmp_path: Path,
) -> None:
    child, repo = observer
    assert child.stdout is not None
    assert json.loads(child.stdout.readline()) == {"observing": True}  # blocks until then
    with tidings.connect(own_redis.url, settings=Settings(redis_url=own_redis.url)) as hub:
        agent = hub.agent(tmp_path / "wd", memory_repo=repo.root, inline=True)
        key = InboxKeys(agent.agent_id).observe_lock
        holder = hub.redis.get(key).decode()
        assert holder.split(" ")[2] == str(child.pid)  # the token names its holder
        assert hub.redis.pttl(key) > 50_000  # the 60 s lease, not a short test lease
        os.killpg(child.pid, signal.SIGKILL)
        child.wait(10)

        started = time.monotonic()
        result = agent.startup()
        assert time.monotonic() - started < 2.0
        assert result["memory"]["status"] == "changed", result
        turn = agent.prepare_turn()
        assert isinstance(turn, tidings.Turn), turn
        assert [item["source_kind"] for item in turn.inbox] == ["memory-change"]
        assert "modified MEMORY.md" in turn.inbox_text
        agent.finish_turn(turn)


def test_a_live_holder_is_still_waited_for(
    own_redis: RedisServer,
    observer: tuple[subprocess.Popen[bytes], MemoryRepo],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """M52: a holder that is alive keeps the lock; the waiter answers observation_busy."""
    child, repo = observer
    assert child.stdout is not None
    assert json.loads(child.stdout.readline()) == {"observing": True}
    monkeypatch.setattr(observe_lock, "WAIT_SECONDS", 0.5)
    with tidings.connect(own_redis.url, settings=Settings(redis_url=own_redis.url)) as hub:
        agent = hub.agent(tmp_path / "wd", memory_repo=repo.root, inline=True)
        assert agent.observe_memory()["reason"] == "observation_busy"
