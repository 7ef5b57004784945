"""Memory observation cost (issue 6 benchmark).

In one run, on generated repositories of 1k, 10k and 100k committed files, each
figure beside two in-run baselines measured on the same tree, interleaved:

* ``git status --porcelain=v2 -uall`` (one process);
* the scan a git-subprocess host does: ``symbolic-ref``, ``rev-parse``, porcelain
  status, ``ls-files -s`` for the dirty paths in batches of 100, SHA-256 of every
  dirty file.

Scenarios: a no-change observation (with the checkpoint's snapshot as
``previous``, as in production), and 100 dirty files (edited after the
checkpoint, so all 100 are hashed every time). Goals: no-change ≤ 1.0× git
status and ≤ 0.5× the subprocess scan; 100 dirty ≤ 1.2× git status.

Two in-run references explain the figure: ``libgit2_status_pass_s`` (one plain
libgit2 status pass; an observation reads the listing twice, M23) and
``observe_tree_diff_s``, the observation with the staged side always diffed from
the HEAD tree (the path taken before the cache-tree shortcut, ``indexfile``).
Figures are median wall seconds; ``cpu`` holds the median CPU seconds of the same
runs (git's own included), and each goal's ``cpu_ratio`` the ratio in CPU time,
which stays readable when other work shares the machine.

Prints one JSON object. Each generated repository is built once and reused by
both scenarios, under one temp directory for the run (``TIDINGS_BENCH_TMP``
picks its parent; ``TIDINGS_BENCH_SIZES`` the sizes). The ``prepare_turn``
round trip is the inbox side's ``bench/turns.py``.
"""

from __future__ import annotations

import hashlib
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

from tidings.jobs.memory import Snapshot, compare, indexfile, observe

#: Repository sizes in files (``TIDINGS_BENCH_SIZES=1000,10000`` for a quicker run).
SIZES = tuple(int(n) for n in os.environ.get("TIDINGS_BENCH_SIZES", "1000,10000,100000").split(","))
#: Timed rounds per size (each round runs every contender once, interleaved).
ROUNDS = {1_000: 15, 10_000: 9, 100_000: 5}
DIRTY_FILES = 100
FILES_PER_DIR = 100
#: Distinct file bodies in a generated repository: few blobs keep ``git add`` quick;
#: status cost depends on the number of paths, not on how many bodies differ.
DISTINCT_BODIES = 50
LS_FILES_BATCH = 100
GOALS = {"no_change_vs_git_status": 1.0, "no_change_vs_subprocess_scan": 0.5,
         "dirty_vs_git_status": 1.2}
GIT_ENV = {
    **os.environ,
    "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid",
}


def git(root: Path, *args: str, stdin: bytes | None = None) -> bytes:
    done = subprocess.run(["git", *args], cwd=root, env=GIT_ENV, input=stdin,
                          capture_output=True, check=True)
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


def subprocess_scan(root: Path) -> dict[str, Any]:
    """What a git-subprocess host does to observe the same repository."""
    branch = subprocess.run(["git", "symbolic-ref", "-q", "HEAD"], cwd=root, env=GIT_ENV,
                            capture_output=True, check=False).stdout.strip()
    head = git(root, "rev-parse", "-q", "--verify", "HEAD").strip()
    paths = _porcelain_paths(git(root, "status", "--porcelain=v2", "-z", "-uall"))
    entries = []
    for start in range(0, len(paths), LS_FILES_BATCH):
        batch = paths[start:start + LS_FILES_BATCH]
        entries.append(git(root, "--literal-pathspecs", "ls-files", "-s", "-z", "--", *batch))
    digests = {}
    for rel in paths:
        path = root / rel
        if path.is_file() and not path.is_symlink():
            digests[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return {"branch": branch, "head": head, "entries": entries, "digests": digests}


def _porcelain_paths(out: bytes) -> list[str]:
    fields = out.split(b"\0")
    paths: list[str] = []
    i = 0
    while i < len(fields):
        entry = fields[i]
        i += 1
        if not entry:
            continue
        kind = entry[:1]
        if kind == b"1":
            paths.append(os.fsdecode(entry.split(b" ", 8)[8]))
        elif kind == b"2":
            paths.append(os.fsdecode(entry.split(b" ", 9)[9]))
            i += 1  # the original path follows
        elif kind == b"u":
            paths.append(os.fsdecode(entry.split(b" ", 10)[10]))
        elif kind == b"?":
            paths.append(os.fsdecode(entry[2:]))
    return paths


def observation(root: Path, previous: Snapshot) -> None:
    result = observe(str(root), previous, now=time.time())
    if result.status != "ok" or result.snapshot is None:
        raise RuntimeError(f"observation failed: {result}")
    compare(previous, result.snapshot, str(root))


def observation_tree_diff(root: Path, previous: Snapshot) -> None:
    """The observation with the cache-tree shortcut answering "unknown" every time."""
    shortcut = indexfile.staged_is_empty
    indexfile.staged_is_empty = lambda *args: False
    try:
        observation(root, previous)
    finally:
        indexfile.staged_is_empty = shortcut


def libgit2_status(root: Path) -> None:
    """One plain libgit2 status pass (for reference: an observation reads the listing
    twice, M23)."""
    repo = pygit2.Repository(str(root))
    try:
        repo.status(untracked_files="all", ignored=False)
    finally:
        repo.free()


def measure(root: Path, previous: Snapshot, rounds: int) -> dict[str, Any]:
    """Median wall seconds of each contender over ``rounds`` interleaved rounds, and
    under ``cpu`` the median CPU seconds."""
    contenders: dict[str, Callable[[], object]] = {
        "observe_s": lambda: observation(root, previous),
        "git_status_s": lambda: git_status(root),
        "subprocess_scan_s": lambda: subprocess_scan(root),
        "libgit2_status_pass_s": lambda: libgit2_status(root),
        "observe_tree_diff_s": lambda: observation_tree_diff(root, previous),
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
        name: round(statistics.median(values), 5) for name, values in samples.items()}
    figures["cpu"] = {name: round(statistics.median(values), 5) for name, values in cpu.items()}
    return figures


def scenario(figures: dict[str, Any], goals: dict[str, tuple[str, float]]) -> dict[str, Any]:
    result: dict[str, Any] = dict(figures)
    cpu = figures["cpu"]
    result["observe_vs_tree_diff"] = round(figures["observe_s"] / figures["observe_tree_diff_s"], 3)
    for label, (baseline, goal) in goals.items():
        ratio = figures["observe_s"] / figures[baseline]
        result[label] = {"ratio": round(ratio, 3), "goal": goal, "met": ratio <= goal,
                         "cpu_ratio": round(cpu["observe_s"] / cpu[baseline], 3)}
    return result


def bench_size(root: Path, files: int) -> dict[str, Any]:
    started = time.perf_counter()
    generate_repo(root, files)
    generated = time.perf_counter() - started
    baseline = observe(str(root), None, now=time.time())
    assert baseline.snapshot is not None, baseline
    rounds = ROUNDS.get(files, 5)
    no_change = measure(root, baseline.snapshot, rounds)
    dirty(root, files)
    dirty_figures = measure(root, baseline.snapshot, rounds)
    return {
        "generate_s": round(generated, 2),
        "rounds": rounds,
        "no_change": scenario(no_change, {
            "vs_git_status": ("git_status_s", GOALS["no_change_vs_git_status"]),
            "vs_subprocess_scan": ("subprocess_scan_s", GOALS["no_change_vs_subprocess_scan"]),
        }),
        f"dirty_{DIRTY_FILES}": scenario(dirty_figures, {
            "vs_git_status": ("git_status_s", GOALS["dirty_vs_git_status"]),
        }),
    }


def main() -> None:
    parent = os.environ.get("TIDINGS_BENCH_TMP") or None
    scratch = Path(tempfile.mkdtemp(prefix="tidings-bench-memory-", dir=parent))
    try:
        sizes = {str(n): bench_size(scratch / f"repo-{n}", n) for n in SIZES}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(json.dumps({
        "bench": "memory",
        "cpus": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "scratch": str(scratch.parent),
        "distinct_bodies": DISTINCT_BODIES,
        "dirty_files": DIRTY_FILES,
        "goals": GOALS,
        "sizes": sizes,
    }, indent=2))


if __name__ == "__main__":
    main()
