"""prepare_turn + finish_turn round trips on a 10,000-file memory repository.

Through a warm real worker process (``python -m tidings worker``) on a real
redis-server, beside the inline path (same job functions in the caller) in the same
run as the baseline. Each turn observes twice (pre-turn and the finish reconcile) on an
unchanged repository, so the stat cache (M19) is what keeps it cheap.

    .venv/bin/python bench/turns.py [--files N] [--turns N]

Prints one JSON object; goal: worker prepare_turn p50 <= 50 ms.
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

GOAL_P50_MS = 50.0
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
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly",
         "no", "--dir", str(directory)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
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
    env = {**os.environ, "TIDINGS_REDIS_URL": url, "TIDINGS_HOST": host,
           "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "tidings", "worker", "--threads", "2"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        if '"ready"' in line:
            return proc
    sys.exit("the worker did not start")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def measure(agent: Any, turns: int, kind: str = "ordinary") -> dict[str, float]:
    prepare: list[float] = []
    both: list[float] = []
    memory = "unchanged" if kind == "ordinary" else "skipped"
    for _ in range(turns):
        started = time.perf_counter()
        turn = agent.prepare_turn(kind)
        prepared = time.perf_counter()
        assert isinstance(turn, tidings.Turn), turn
        assert turn.memory["status"] == memory, turn.memory
        done = agent.finish_turn(turn)
        assert done["status"] == "ok", done
        finished = time.perf_counter()
        prepare.append((prepared - started) * 1000)
        both.append((finished - started) * 1000)
    return {
        "prepare_p50_ms": round(statistics.median(prepare), 2),
        "prepare_p99_ms": round(percentile(prepare, 0.99), 2),
        "turn_p50_ms": round(statistics.median(both), 2),
        "turn_p99_ms": round(percentile(both, 0.99), 2),
    }


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
                worker_figures = measure(queued, args.turns)
                inline_figures = measure(inline, args.turns)
                # kind "bridge" does not observe: the group's own cost (render only)
                worker_bridge = measure(queued, args.turns, "bridge")
                inline_bridge = measure(inline, args.turns, "bridge")
                observe_ms = []
                for _ in range(args.turns):
                    started = time.perf_counter()
                    inline.observe_memory()
                    observe_ms.append((time.perf_counter() - started) * 1000)
        finally:
            if worker is not None:
                worker.terminate()
                worker.wait(30)
            redis_proc.terminate()
            redis_proc.wait(10)
    print(json.dumps({
        "benchmark": "turns",
        "files": args.files,
        "turns": args.turns,
        "baseline_observation_ms": round(baseline_ms, 1),
        "worker": worker_figures,
        "inline": inline_figures,
        "non_observing_turns": {"worker": worker_bridge, "inline": inline_bridge},
        "observation_alone_p50_ms": round(statistics.median(observe_ms), 2),
        "worker_over_inline_prepare_p50": round(
            worker_figures["prepare_p50_ms"] / inline_figures["prepare_p50_ms"], 2),
        "goal_prepare_p50_ms": GOAL_P50_MS,
        "goal_met": worker_figures["prepare_p50_ms"] <= GOAL_P50_MS,
    }))


if __name__ == "__main__":
    main()
