"""prepare_turn + finish_turn round trips on a 10,000-file memory repository
(issue 13 benchmark).

Through a warm real worker process (``python -m tidings worker``) on a real
redis-server, beside the inline path (same job functions in the caller). Each turn
observes twice (pre-turn and the finish reconcile) on an unchanged repository. The
in-run baseline is one no-change ``observe_memory()`` of the same agent, interleaved
turn by turn. Goals: ``prepare_turn`` p50 <= 1.1x one observation, a whole turn
(prepare + finish) <= 2.1x. Wall milliseconds, and CPU milliseconds of this process
plus the worker process (from /proc).

    .venv/bin/python bench/turns.py [--files N] [--turns N]

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import pygit2

import tidings
from tidings.store.settings import Settings

GOAL_PREPARE_VS_OBSERVE = 1.1
GOAL_TURN_VS_OBSERVE = 2.1
AGE_SECONDS = 60


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_redis(directory: Path) -> tuple[subprocess.Popen[bytes], str]:
    binary = shutil.which("redis-server")
    if binary is None:
        sys.exit("bench/turns.py needs redis-server on PATH")
    port = free_port()
    proc = subprocess.Popen(
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(directory),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    deadline = time.monotonic() + 10
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return proc, url
        except OSError:
            if time.monotonic() > deadline:
                sys.exit("redis-server did not start")
            time.sleep(0.02)


def make_repo(path: Path, files: int) -> None:
    """``files`` small committed files in 100 directories, their mtimes moved out of the
    racy windows (Git's index and M19) before they are indexed, so an unchanged status
    needs no hashing."""
    repo = pygit2.init_repository(str(path), initial_head="main")
    for n in range(files):
        target = path / f"d{n % 100:02d}" / f"note-{n:05d}.md"
        target.parent.mkdir(exist_ok=True)
        target.write_text(f"note {n}\n")
    (path / "MEMORY.md").write_text("remember\n")
    past = time.time() - AGE_SECONDS
    for root, dirs, names in os.walk(path):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in names:
            os.utime(os.path.join(root, name), (past, past))
    repo.index.add_all()  # after aging: the index's stat data matches the files
    repo.index.write()
    sig = pygit2.Signature("bench", "bench@example.invalid")
    repo.create_commit("HEAD", sig, sig, "notes", repo.index.write_tree(), [])


def start_worker(url: str, host: str) -> subprocess.Popen[str]:
    env = {**os.environ, "TIDINGS_REDIS_URL": url, "TIDINGS_HOST": host, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tidings", "worker", "--threads", "2"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if '"ready"' in line:
            return proc
    sys.exit("the worker did not start")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def process_cpu(pid: int | None) -> float:
    """CPU seconds of this process, plus the worker ``pid``'s own (Linux /proc)."""
    own = time.process_time()
    if pid is None:
        return own
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
    except OSError:
        return own
    return own + (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(
    agent: Any, turns: int, kind: str = "ordinary", worker_pid: int | None = None
) -> dict[str, float]:
    """Turn by turn: one no-change observation, then prepare_turn, then finish_turn."""
    observe: list[tuple[float, float]] = []
    prepare: list[tuple[float, float]] = []
    both: list[tuple[float, float]] = []
    memory = "unchanged" if kind == "ordinary" else "skipped"
    for _ in range(turns):
        wall, cpu = time.perf_counter(), process_cpu(worker_pid)
        assert agent.observe_memory()["status"] == "unchanged"
        observe.append((time.perf_counter() - wall, process_cpu(worker_pid) - cpu))
        wall, cpu = time.perf_counter(), process_cpu(worker_pid)
        turn = agent.prepare_turn(kind)
        prepare.append((time.perf_counter() - wall, process_cpu(worker_pid) - cpu))
        assert isinstance(turn, tidings.Turn), turn
        assert turn.memory["status"] == memory, turn.memory
        done = agent.finish_turn(turn)
        assert done["status"] == "ok", done
        both.append((time.perf_counter() - wall, process_cpu(worker_pid) - cpu))
    figures = {}
    for name, samples in (("observe", observe), ("prepare", prepare), ("turn", both)):
        walls = [w * 1000 for w, _ in samples]
        figures[f"{name}_p50_ms"] = round(statistics.median(walls), 2)
        figures[f"{name}_p99_ms"] = round(percentile(walls, 0.99), 2)
        figures[f"{name}_cpu_p50_ms"] = round(statistics.median(c * 1000 for _, c in samples), 2)
    for name, goal in (("prepare", GOAL_PREPARE_VS_OBSERVE), ("turn", GOAL_TURN_VS_OBSERVE)):
        ratio = figures[f"{name}_p50_ms"] / figures["observe_p50_ms"]
        figures[f"{name}_vs_observe"] = {
            "ratio": round(ratio, 3),
            "goal": goal,
            "met": ratio <= goal,
            "cpu_ratio": round(figures[f"{name}_cpu_p50_ms"] / figures["observe_cpu_p50_ms"], 3)
            if figures["observe_cpu_p50_ms"]
            else None,
        }
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--turns", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tidings-bench-") as tmp:
        root = Path(tmp)
        redis_proc, url = start_redis(root)
        host = f"bench-{uuid.uuid4().hex[:8]}"
        worker = None
        try:
            make_repo(root / "memory", args.files)
            (root / "wd").mkdir()
            worker = start_worker(url, host)
            settings = Settings(host=host, redis_url=url)
            with tidings.connect(url, settings=settings) as hub:
                queued = hub.agent(root / "wd", memory_repo=root / "memory")
                started = time.perf_counter()
                assert queued.startup()["memory"]["status"] == "baseline"
                baseline_ms = (time.perf_counter() - started) * 1000
                inline = hub.agent(root / "wd", inline=True)
                for agent in (queued, inline):  # warm up: caches, scripts, worker threads
                    measure(agent, 5)
                worker_figures = measure(queued, args.turns, worker_pid=worker.pid)
                inline_figures = measure(inline, args.turns)
        finally:
            if worker is not None:
                worker.terminate()
                worker.wait(30)
            redis_proc.terminate()
            redis_proc.wait(10)
    print(
        json.dumps(
            {
                "benchmark": "turns",
                "files": args.files,
                "turns": args.turns,
                "baseline_observation_ms": round(baseline_ms, 1),
                "load_average": [round(x, 2) for x in os.getloadavg()],
                "observation_threads": 1,
                "worker": worker_figures,
                "inline": inline_figures,
            }
        )
    )


if __name__ == "__main__":
    main()
