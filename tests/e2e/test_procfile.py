"""Issue 7, acceptance 2 (processes half): ``honcho start -f deploy/Procfile`` against a
real Redis runs the shipped worker and scheduler commands; a producer publishes, a
consumer delays a channel and gets its alarm, a memory edit reaches the next turn (whose
render, on the worker, spills an oversized lane), ``tidings status --json`` and the
worker's Prometheus endpoint report it all (acceptance 4); SIGTERM to honcho stops every
process it started."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import tidings
from tests.support.memory_repo import MemoryRepo
from tests.support.polling import wait_until
from tests.support.processes import run_cli
from tests.support.proctree import descendants, kill_leftovers, running
from tests.support.redis_server import RedisServer
from tests.support.scrape import scrape
from tidings._turn import Turn
from tidings.store.settings import Settings
from tidings.workers.routing import host_queue

pytestmark = [pytest.mark.e2e, pytest.mark.redis_server]

PROCFILE = Path(__file__).resolve().parents[2] / "deploy" / "Procfile"
BIN = Path(sys.executable).parent
#: honcho's own exit code after a SIGTERM (128 + 15), whatever its processes return.
HONCHO_SIGTERM_EXIT = 143


class Honcho:
    """``honcho start`` in its own session; its output lines are collected."""

    def __init__(self, env: dict[str, str], directory: Path) -> None:
        self.process = subprocess.Popen(
            [str(BIN / "honcho"), "start", "-f", str(PROCFILE), "-d", str(directory)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.lines: list[str] = []
        self.pids: set[int] = set()
        self._pump = threading.Thread(target=self._read, daemon=True)
        self._pump.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for raw in iter(self.process.stdout.readline, b""):
            self.lines.append(raw.decode("utf-8", "replace").rstrip("\n"))
        self.process.stdout.close()

    def said(self) -> list[dict[str, Any]]:
        """The JSON objects the processes printed (after honcho's ``name | `` prefix)."""
        found = []
        for line in list(self.lines):
            _, bar, text = line.partition("| ")
            if bar and text.startswith("{"):
                try:
                    found.append(json.loads(text))
                except json.JSONDecodeError:
                    continue
        return found

    def ready(self, role: str) -> list[dict[str, Any]]:
        return [v for v in self.said() if v.get("status") == "ready" and v.get("role") == role]

    def stop(self) -> int:
        """SIGTERM to honcho's process group, as a service manager would."""
        self.pids |= descendants(self.process.pid)
        os.killpg(self.process.pid, signal.SIGTERM)
        code = self.process.wait(60)
        self._pump.join(5)
        return code

    def cleanup(self) -> None:
        if self.process.poll() is None:
            self.pids |= descendants(self.process.pid)
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)
        kill_leftovers(self.pids)
        self._pump.join(5)


@pytest.fixture
def server(own_redis: RedisServer) -> RedisServer:
    return own_redis


@pytest.fixture
def env(e2e_env: dict[str, str], server: RedisServer) -> dict[str, str]:
    """The Procfile names bare ``tidings``: the venv's bin goes first on PATH."""
    return {
        **e2e_env,
        "TIDINGS_REDIS_URL": server.url,
        "TIDINGS_METRICS_PORT": "0",
        "PATH": f"{BIN}{os.pathsep}{e2e_env.get('PATH', '')}",
    }


@pytest.fixture
def honcho(env: dict[str, str], tmp_path: Path) -> Iterator[Honcho]:
    started = Honcho(env, tmp_path)
    yield started
    started.cleanup()


def cli(env: dict[str, str], *args: str) -> dict[str, Any]:
    done = run_cli([*args, "--json"], env)
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    value: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return value


def counter(port: int, family: str, sample: str, **labels: str) -> float:
    values = scrape(port).get(family, {})
    return values.get((sample, tuple(sorted(labels.items()))), 0.0)


def test_procfile_processes_publish_delay_and_observe_memory(
    honcho: Honcho, env: dict[str, str], tmp_path: Path
) -> None:
    host = env["TIDINGS_HOST"]
    wait_until(
        lambda: len(honcho.ready("worker")) == 2 and honcho.ready("scheduler"),
        timeout=60,
        what="both Procfile processes ready (two worker children)",
    )
    [workers] = honcho.ready("workers")
    port = int(workers["metrics_port"])
    [scheduler] = honcho.ready("scheduler")
    timer_port = int(scheduler["metrics_port"])
    workdir = tmp_path / "agent"
    workdir.mkdir()
    repo = MemoryRepo(tmp_path / "memory", {"MEMORY.md": "likes tea\n"})
    at = ["--workdir", str(workdir)]
    cli(env, "agents", "add", "--memory-repo", repo.root, *at)
    assert cli(env, "observe", *at)["status"] == "baseline"

    published = cli(env, "publish", "mcp.build", "--event", '{"text": "green"}', "--wait", *at)
    assert published["flushed"] is True
    mirror = json.loads((workdir / ".notification" / "mcp.build.json").read_text("utf-8"))
    assert [e["text"] for e in mirror["data"]["events"]] == ["green"]

    assert cli(env, "delay", "mcp.build", "1", *at)["status"] == "ok"
    alarm_file = workdir / ".notification" / "delay-alarm.json"
    wait_until(alarm_file.exists, timeout=20, what="the delay alarm")
    alarm = json.loads(alarm_file.read_text("utf-8"))["data"]["delay_alarm"]
    assert alarm["target"] == "mcp.build" and alarm["requested_seconds"] == 1
    # The scheduler runs the expiry (D15); the worker would only on the fallback path.
    wait_until(
        lambda: (
            sum(
                counter(p, "tidings_alarms_published", "tidings_alarms_published_total")
                for p in (port, timer_port)
            )
            == 1
        ),
        timeout=10,
        what="the host counting the alarm it wrote",
    )

    big = json.dumps({"text": "x" * 12_000})  # over the default 10,000-character cap
    assert cli(env, "publish", "mcp.log", "--event", big, "--wait", *at)["flushed"] is True
    repo.write("MEMORY.md", "likes coffee\n")
    repo.commit("outside edit")
    hub = tidings.connect(env["TIDINGS_REDIS_URL"], settings=Settings(host=host))
    try:
        agent = hub.agent(workdir)
        turn = agent.prepare_turn()  # observation and render run on the Procfile's worker
        assert isinstance(turn, Turn), turn
        assert turn.memory["status"] == "changed"
        [item] = turn.inbox
        assert item["source_kind"] == "memory-change" and item["state"] == "processing"
        assert agent.finish_turn(turn)["handled"] == [item["event_id"]]
    finally:
        hub.close()
    assert (
        counter(
            port,
            "tidings_observations",
            "tidings_observations_total",
            reason="pre_turn",
            outcome="changed",
        )
        == 1
    )
    assert len(list((workdir / "logs").iterdir())) == 1, "the render spilled the big lane"
    # The spill is written once, by whichever came first: the render on the worker or the
    # prompt visit the watcher started in the scheduler (C27) for the big event.
    assert (
        sum(
            counter(p, "tidings_spills", "tidings_spills_total", lane="attention")
            for p in (port, timer_port)
        )
        == 1
    )
    assert (
        counter(
            timer_port, "tidings_alarm_lateness_seconds", "tidings_alarm_lateness_seconds_count"
        )
        == 1
    )

    figures = cli(env, "status")
    assert {q["name"]: q["depth"] for q in figures["queues"]}[host_queue(host)] == 0
    assert all(q["dead"] == 0 for q in figures["queues"])
    assert figures["schedulers"][host]["leader"] == honcho.ready("scheduler")[0]["holder"]
    [me] = figures["agents"]
    assert me["agent_id"] == agent.agent_id and me["pending"] == 0
    assert me["live_delay"] is None and me["alarm_overdue"] is False

    pids = descendants(honcho.process.pid)
    assert len(pids) >= 4, "honcho's shells or processes, two worker children"
    assert honcho.stop() == HONCHO_SIGTERM_EXIT
    # honcho's SIGTERM reaches each process group: the `sh -c` it runs the command
    # with (rc=-15) and the tidings processes under it, which stop on it.
    said = "\n".join(honcho.lines)
    assert "worker.1 stopped" in said and "scheduler.1 stopped" in said
    wait_until(
        lambda: not any(running(pid) for pid in pids),
        timeout=30,
        what="every process honcho started gone",
    )
