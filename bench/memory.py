"""Memory observation cost (issue 13 benchmark).

Through the public API an orchestrator uses (``agent.observe_memory()`` of an inline
agent, on a real redis-server of its own), on generated repositories of 10k and 100k
committed files, each figure beside in-run baselines measured on the same tree,
interleaved round by round:

* ``git status --porcelain=v2 -uall`` (one process; git spreads its lstat calls over
  threads);
* one plain libgit2 status pass (the floor of an observation: M23 reads the listing
  once).

Scenarios: no change; 100 dirty files (steady state: the checkpoint already holds
them, as after the observation that reported them); and, at 10k files, every tracked
file touched with equal content: the observation that pays the re-hash, then the
following ones beside the no-change observation measured before the touch.

Figures are median wall seconds and, under ``cpu``, median CPU seconds of the same
runs (git's own included): CPU ratios stay readable when other work shares the
machine. ``threads`` says how many threads one observation uses.

Prints one JSON object. ``TIDINGS_BENCH_TMP`` picks the scratch directory's parent;
``TIDINGS_BENCH_SIZES`` the sizes.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pygit2
from _redis import redis_server

import tidings
from tidings.jobs.memory import Snapshot, decode_checkpoint, observe_worktree
from tidings.store.inbox_keys import InboxKeys
from tidings.store.settings import Settings

#: Repository sizes in files (``TIDINGS_BENCH_SIZES=10000`` for a quicker run).
SIZES = tuple(int(n) for n in os.environ.get("TIDINGS_BENCH_SIZES", "10000,100000").split(","))
#: Timed rounds per size (each round runs every contender once, interleaved).
ROUNDS = {1_000: 15, 10_000: 11, 100_000: 5}
DIRTY_FILES = 100
FILES_PER_DIR = 100
#: Distinct file bodies in a generated repository: few blobs keep ``git add`` quick;
#: status cost depends on the number of paths, not on how many bodies differ.
DISTINCT_BODIES = 50
#: Threads one observation runs on (the listing is a single libgit2 pass, M23/M24).
OBSERVE_THREADS = 1
GOALS = {
    "no_change_vs_git_status": 1.0,
    "dirty_vs_git_status": 1.2,
    "touched_second_vs_no_change": 1.2,
}
GIT_ENV = {
    **os.environ,
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
}


def git(root: Path, *args: str, stdin: bytes | None = None) -> bytes:
    done = subprocess.run(
        ["git", *args], cwd=root, env=GIT_ENV, input=stdin, capture_output=True, check=True
    )
    return done.stdout


def file_name(i: int) -> str:
    return f"d{i // 1000:03d}/e{(i // FILES_PER_DIR) % 10}/f{i:06d}.md"


def generate_repo(root: Path, files: int) -> Path:
    """A committed work tree of ``files`` small Markdown files, 100 per directory,
    with the index's stat data settled (nothing racy, nothing to refresh)."""
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    made: set[str] = set()
    for i in range(files):
        rel = file_name(i)
        folder = os.path.dirname(rel)
        if folder not in made:
            os.makedirs(root / folder, exist_ok=True)
            made.add(folder)
        fd = os.open(root / rel, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, b"note %d\n" % (i % DISTINCT_BODIES))
        finally:
            os.close(fd)
    time.sleep(1.1)  # the index written next is a whole second newer: no racily clean entry
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "generated")
    git(root, "status", "--porcelain")  # settles the index stat cache like a real host would
    return root


def dirty(root: Path, files: int, count: int = DIRTY_FILES) -> list[str]:
    """Edit ``count`` of the ``files`` tracked files, spread over the tree."""
    step = max(1, files // count)
    edited = []
    for k in range(count):
        rel = file_name(k * step)
        (root / rel).write_bytes(b"edited %d\n" % k)
        edited.append(rel)
    return edited


def _cpu() -> float:
    """CPU seconds of this process and of its finished children (git)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(action: Callable[[], object]) -> tuple[float, float]:
    """``(wall seconds, CPU seconds)``: CPU time barely moves when other work shares
    the machine, so its ratios stay readable on a busy host."""
    start, cpu = time.perf_counter(), _cpu()
    action()
    return time.perf_counter() - start, _cpu() - cpu


def git_status(root: Path) -> None:
    git(root, "status", "--porcelain=v2", "-uall")


def libgit2_status(root: Path) -> None:
    """One plain libgit2 status pass (for reference: an observation's floor)."""
    repo = pygit2.Repository(str(root))
    try:
        repo.status(untracked_files="all", ignored=False)
    finally:
        repo.free()


def observation(agent: Any) -> None:
    result = agent.observe_memory()
    if result["status"] not in ("unchanged", "changed"):
        raise RuntimeError(f"observation failed: {result}")


def snapshot(root: Path, agent: Any, threads: int) -> None:
    previous = decode_checkpoint(agent.hub.redis.hgetall(InboxKeys(agent.agent_id).checkpoint))
    assert isinstance(previous, Snapshot)
    result = observe_worktree(str(root), previous, now=time.time(), threads=threads)
    if result.status != "ok":
        raise RuntimeError(f"observation failed: {result}")


def measure(root: Path, agent: Any, rounds: int) -> dict[str, Any]:
    """Median wall seconds of each contender over ``rounds`` interleaved rounds, and
    under ``cpu`` the median CPU seconds."""
    contenders: dict[str, Callable[[], object]] = {
        "observe_s": lambda: observation(agent),
        "git_status_s": lambda: git_status(root),
        "libgit2_status_pass_s": lambda: libgit2_status(root),
        # the observation's snapshot alone (no Redis), on one thread and split over two
        # (memory_observe_threads): which partition wins on this host
        "snapshot_1_thread_s": lambda: snapshot(root, agent, 1),
        "snapshot_2_threads_s": lambda: snapshot(root, agent, 2),
    }
    for action in contenders.values():
        action()  # warm caches once
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    cpu: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, action in contenders.items():
            wall, used = timed(action)
            samples[name].append(wall)
            cpu[name].append(used)
    figures: dict[str, Any] = {
        name: round(statistics.median(values), 5) for name, values in samples.items()
    }
    figures["cpu"] = {name: round(statistics.median(values), 5) for name, values in cpu.items()}
    return figures


def ratio(
    figures: dict[str, Any],
    baseline: dict[str, Any],
    name: str,
    goal: float,
    key: str = "observe_s",
) -> dict[str, Any]:
    wall = figures["observe_s"] / baseline[key]
    return {
        "ratio": round(wall, 3),
        "goal": goal,
        "met": wall <= goal,
        "cpu_ratio": round(figures["cpu"]["observe_s"] / baseline["cpu"][key], 3),
        "baseline": name,
    }


def threads_ratio(figures: dict[str, Any]) -> dict[str, float]:
    return {
        "wall": round(figures["snapshot_2_threads_s"] / figures["snapshot_1_thread_s"], 3),
        "cpu": round(
            figures["cpu"]["snapshot_2_threads_s"] / figures["cpu"]["snapshot_1_thread_s"], 3
        ),
    }


def touch_all(root: Path) -> None:
    """Every tracked file gets a new mtime (out of the racy window), content unchanged."""
    past = time.time() - 30
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in names:
            os.utime(os.path.join(folder, name), (past, past))


def bench_size(hub: Any, scratch: Path, files: int) -> dict[str, Any]:
    root = scratch / f"repo-{files}"
    started = time.perf_counter()
    generate_repo(root, files)
    generated = time.perf_counter() - started
    (scratch / f"wd-{files}").mkdir()
    agent = hub.agent(scratch / f"wd-{files}", memory_repo=root, inline=True)
    first = agent.startup()["memory"]
    assert first["status"] == "baseline", first
    rounds = ROUNDS.get(files, 5)
    no_change = measure(root, agent, rounds)
    result: dict[str, Any] = {
        "generate_s": round(generated, 2),
        "rounds": rounds,
        "threads": OBSERVE_THREADS,
        "no_change": no_change,
        "no_change_vs_git_status": ratio(
            no_change, no_change, "git_status_s", GOALS["no_change_vs_git_status"], "git_status_s"
        ),
        "no_change_vs_libgit2_pass": ratio(
            no_change, no_change, "libgit2_status_pass_s", 1.0, "libgit2_status_pass_s"
        ),
        "snapshot_2_threads_vs_1": threads_ratio(no_change),
    }
    if files <= 10_000:
        touched = bench_touched(root, agent, rounds, no_change)
        result["touched"] = touched
    dirty(root, files)
    time.sleep(2.1)  # out of M19's racy window, as a file edited a while ago
    assert agent.observe_memory()["status"] == "changed"
    dirty_figures = measure(root, agent, rounds)
    result[f"dirty_{DIRTY_FILES}"] = dirty_figures
    result["dirty_vs_git_status"] = ratio(
        dirty_figures, dirty_figures, "git_status_s", GOALS["dirty_vs_git_status"], "git_status_s"
    )
    return result


def bench_touched(root: Path, agent: Any, rounds: int, before: dict[str, Any]) -> dict[str, Any]:
    """Every tracked file touched: the paying observation, then the following ones."""
    touch_all(root)
    wall, used = timed(lambda: observation(agent))
    after = measure(root, agent, rounds)
    return {
        "first_after_touch": {"wall_s": round(wall, 5), "cpu_s": round(used, 5)},
        "following": after,
        "second_vs_no_change_before": ratio(
            after,
            before,
            "no-change observation before the touch",
            GOALS["touched_second_vs_no_change"],
        ),
        "git_status_after_vs_before": round(after["git_status_s"] / before["git_status_s"], 3),
    }


def main() -> None:
    parent = os.environ.get("TIDINGS_BENCH_TMP") or None
    scratch = Path(tempfile.mkdtemp(prefix="tidings-bench-memory-", dir=parent))
    try:
        with redis_server() as url, tidings.connect(url, settings=Settings(redis_url=url)) as hub:
            sizes = {str(n): bench_size(hub, scratch, n) for n in SIZES}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(
        json.dumps(
            {
                "bench": "memory",
                "cpus": os.cpu_count(),
                "load_average": [round(x, 2) for x in os.getloadavg()],
                "dirty_files": DIRTY_FILES,
                "goals": GOALS,
                "sizes": sizes,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
