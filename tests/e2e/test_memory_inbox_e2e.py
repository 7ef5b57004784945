"""The memory inbox across real processes: a durable Redis (AOF) restart, real workers
killed by injected faults, orchestrators dying mid-finish (issue 6, acceptance 4 and 5;
memory-inbox.md crash-point table)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.memory_repo import MemoryRepo
from tests.support.polling import wait_until
from tests.support.processes import ProcessGroup
from tests.support.redis_server import RedisServer
from tidings import Turn
from tidings._agent import Agent
from tidings._hub import Hub
from tidings.store.inbox_keys import InboxKeys
from tidings.store.settings import Settings

pytestmark = [pytest.mark.e2e, pytest.mark.redis_server]

ROOT = Path(__file__).resolve().parents[2]
#: A process killed while observing leaves its lock until the lease ends (M52).
LOCK_SECONDS = 2.0


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedisServer]:
    redis_server = RedisServer(tmp_path / "redis", aof=True, acl=True).start()
    yield redis_server
    redis_server.stop()


@pytest.fixture
def env(e2e_env: dict[str, str], server: RedisServer) -> dict[str, str]:
    e2e_env.update(
        TIDINGS_REDIS_URL=server.url,
        TIDINGS_BROKER_HEARTBEAT_MS="1000",
        TIDINGS_OBSERVE_LOCK_SECONDS=str(LOCK_SECONDS),
    )
    return e2e_env


@pytest.fixture
def repo(tmp_path: Path) -> MemoryRepo:
    return MemoryRepo(tmp_path / "memory", {"MEMORY.md": "remember\n", "notes/plan.md": "p\n"})


class Orchestrator:
    """The test's own orchestrator: a hub on the server, its agent not inline."""

    def __init__(
        self,
        server: RedisServer,
        env: dict[str, str],
        workdir: Path,
        repo: MemoryRepo | None = None,
    ) -> None:
        workdir.mkdir(exist_ok=True)
        self.client = server.tidings_client()
        settings = Settings(
            host=env["TIDINGS_HOST"],
            redis_url=server.url,
            turn_wait_seconds=3,
            observe_lock_seconds=LOCK_SECONDS,
        )
        self.hub = Hub(self.client, settings, url=server.url)
        self.agent: Agent = self.hub.agent(workdir, memory_repo=repo.root if repo else None)

    def memory_events(self) -> list[dict[str, Any]]:
        return [i for i in self.agent.inbox(limit=100) if i["source_kind"] == "memory-change"]

    def wakes(self) -> int:
        return int(self.client.xlen(InboxKeys(self.agent.agent_id).wake_stream))

    def close(self) -> None:
        self.hub.close()
        self.client.close()


def changed_paths(item: dict[str, Any]) -> list[str]:
    return [c["path"] for area in item["payload"]["changes"].values() for c in area]


def run_orchestrator(
    env: dict[str, str], *args: str, faults: str = ""
) -> subprocess.CompletedProcess[str]:
    extra = {"TIDINGS_ENABLE_FAULTS": "1", "TIDINGS_FAULTS": faults} if faults else {}
    return subprocess.run(
        [sys.executable, "-m", "tests.support.orchestrator", *args],
        cwd=ROOT,
        env={**env, **extra},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_acceptance_4_edit_then_full_restart_gives_one_event(
    server: RedisServer,
    env: dict[str, str],
    procs: ProcessGroup,
    repo: MemoryRepo,
    tmp_path: Path,
) -> None:
    """Edit, stop every process (SIGKILL, Redis too), restart Redis from its AOF and real
    workers, startup() then prepare_turn() → exactly one event naming the file, which
    the orchestrator then reads from disk (crash point: after admission, before any
    turn — one pending event, no wake)."""
    worker = procs.start("worker", "--threads", "2")
    worker.wait_ready()
    first = Orchestrator(server, env, tmp_path / "wd", repo)
    assert first.agent.startup()["memory"]["status"] == "baseline"
    repo.write("notes/plan.md", "edited while nobody was looking\n")
    worker.kill()
    first.close()
    server.kill()

    server.start()
    procs.start("worker", "--threads", "2").wait_ready()
    second = Orchestrator(server, env, tmp_path / "wd")
    try:
        started = second.agent.startup()
        assert started["memory"]["status"] == "changed"
        [pending] = second.agent.inbox(state="pending")
        assert changed_paths(pending) == ["notes/plan.md"]
        assert second.agent.observe_memory()["status"] == "unchanged"
        turn = second.agent.prepare_turn()
        assert isinstance(turn, Turn), turn
        [item] = turn.inbox
        assert item["event_id"] == pending["event_id"] and "notes/plan.md" in turn.inbox_text
        path = Path(repo.root) / changed_paths(item)[0]
        assert path.read_text() == "edited while nobody was looking\n"
        assert second.agent.finish_turn(turn)["handled"] == [item["event_id"]]
        assert len(second.memory_events()) == 1 and second.wakes() == 0
    finally:
        second.close()


def test_acceptance_5_worker_killed_before_the_admission_script(
    server: RedisServer,
    env: dict[str, str],
    procs: ProcessGroup,
    repo: MemoryRepo,
    tmp_path: Path,
) -> None:
    """The worker running the pre-turn observation dies at admit.before_script: the turn
    proceeds without it, nothing is committed, the redelivered job (new worker) admits
    exactly one event and the next turn claims it (M41)."""
    orch = Orchestrator(server, env, tmp_path / "wd", repo)
    try:
        orch.agent.startup()
        repo.write("MEMORY.md", "changed\n")
        faulty = procs.start(
            "worker",
            "--threads",
            "1",
            env={"TIDINGS_ENABLE_FAULTS": "1", "TIDINGS_FAULTS": "admit.before_script"},
        )
        faulty.wait_ready()
        turn = orch.agent.prepare_turn()
        assert isinstance(turn, Turn)
        assert turn.memory["status"] == "error" and turn.inbox == []
        wait_until(lambda: not faulty.alive(), timeout=10, what="the fault to stop the worker")
        assert faulty.process.returncode == 75
        assert orch.memory_events() == []
        assert orch.agent.finish_turn(turn)["memory"]["status"] == "skipped"
        procs.start("worker", "--threads", "2").wait_ready()
        wait_until(
            lambda: len(orch.memory_events()) == 1,
            timeout=20,
            what="the redelivered observation to admit the event",
        )
        turn = orch.agent.prepare_turn()
        assert isinstance(turn, Turn) and turn.memory["status"] == "unchanged"
        assert [i["source_kind"] for i in turn.inbox] == ["memory-change"]
        orch.agent.finish_turn(turn)
        assert len(orch.memory_events()) == 1 and orch.wakes() == 0
    finally:
        orch.close()


def test_acceptance_5_orchestrator_killed_before_the_admission_script(
    server: RedisServer, env: dict[str, str], repo: MemoryRepo, tmp_path: Path
) -> None:
    """An inline start-up dies at admit.before_script: the old checkpoint stays; the
    rerun admits exactly one event (crash point: during an observation)."""
    orch = Orchestrator(server, env, tmp_path / "wd", repo)
    try:
        orch.agent.startup()
        repo.write("MEMORY.md", "changed\n")
        died = run_orchestrator(
            env, "startup", orch.agent.workdir, repo.root, faults="admit.before_script"
        )
        assert died.returncode == 75, died.stderr
        assert orch.memory_events() == []
        assert orch.agent.startup()["memory"]["status"] == "changed"
        assert orch.agent.startup()["memory"]["status"] == "unchanged"
        assert len(orch.memory_events()) == 1
    finally:
        orch.close()


@pytest.mark.parametrize("marked", [False, True], ids=["deferred", "needs-repair"])
def test_acceptance_5_orchestrator_killed_after_the_reconcile(
    server: RedisServer,
    env: dict[str, str],
    repo: MemoryRepo,
    tmp_path: Path,
    marked: bool,
) -> None:
    """finish_turn dies at finish.after_reconcile: the items stay running and the next
    startup() makes them retryable (needs-repair after a marked side effect); the own
    edit stays absorbed and never becomes an event."""
    orch = Orchestrator(server, env, tmp_path / "wd", repo)
    try:
        orch.agent.startup()
        mail = orch.agent.admit("mail", "a letter")["event_id"]
        args = ["crash-finish", orch.agent.workdir, repo.root, "notes/plan.md", "own edit\n"]
        died = run_orchestrator(
            env, *args, *(["--mark"] if marked else []), faults="finish.after_reconcile"
        )
        assert died.returncode == 75, died.stderr
        assert [i["state"] for i in orch.agent.inbox()] == ["processing"]
        started = orch.agent.startup()
        expected = (
            {"retryable": [], "needs_repair": [mail]}
            if marked
            else {"retryable": [mail], "needs_repair": []}
        )
        assert started["recovered"] == expected
        assert started["memory"]["status"] == "unchanged"
        assert orch.memory_events() == []
        turn = orch.agent.prepare_turn()
        assert isinstance(turn, Turn)
        assert [i["event_id"] for i in turn.inbox] == ([] if marked else [mail])
        orch.agent.finish_turn(turn)
    finally:
        orch.close()
