"""Can a file in a memory repository still hold an observation after M55's lstat checks?
(issue 24 finding 4)

Part 1, placements: for each file libgit2 may open that the checks do not cover (files
that ``config`` names, ignore and attribute files, object files) it puts a FIFO there and
runs one observation in a child process with a timeout; a child still running at the
timeout is a hang. Part 2, the race: a thread swaps ``.git/config`` (or ``.git/HEAD``)
between a regular file and a FIFO as fast as it can while a child observes in a loop;
a child that does not finish within the timeout was caught between the check and
libgit2's ``open()``. Both parts run twice, with the thread alarm (``alarm``: the child
installs its handler, as a tidings process does) and without it (``no-alarm``, the
baseline). Prints one JSON object.

    .venv/bin/python bench/memory_fifo.py
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pygit2

#: ``alarm``: the child installs the thread alarm's handler as a tidings process does when
#: it builds its Runtime (jobs/thread_alarm.py); ``no-alarm``: the baseline without it.
VARIANTS = ("alarm", "no-alarm")
#: Seconds before a child counts as hung.
TIMEOUT = 3.0
#: Seconds before a racing child (many observations, each maybe interrupted) counts as hung.
RACE_TIMEOUT = 30.0
#: Race trials per swapped file, and observations per trial.
TRIALS = 5
OBSERVATIONS = 20

CHILD = """
import sys, time
from tidings.jobs.memory.observation import observe_worktree
if sys.argv[3] == "alarm":  # as every tidings process does when it builds its Runtime
    from tidings.jobs import thread_alarm
    thread_alarm.install()
for _ in range(int(sys.argv[2])):
    out = observe_worktree(sys.argv[1], None, now=0.0)
    print(out.status, out.reason, flush=True)
"""


def make_repo(path: Path) -> pygit2.Repository:
    repo = pygit2.init_repository(str(path), initial_head="main")
    (path / "SOUL.md").write_text("soul\n")
    (path / "sub").mkdir()
    (path / "sub" / "a.md").write_text("a\n")
    repo.index.add_all()
    repo.index.write()
    sig = pygit2.Signature("b", "b@example.invalid", 1_700_000_000, 0)
    repo.create_commit("HEAD", sig, sig, "init", repo.index.write_tree(), [])
    (path / "untracked.md").write_text("u\n")
    return repo


def run_child(repo: Path, count: int, timeout: float, variant: str) -> tuple[str, float, int]:
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(repo), str(count), variant],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        return "hung", round(time.monotonic() - started, 2), len(out.splitlines())
    lines = out.splitlines()
    return (lines[-1] if lines else "no output"), round(time.monotonic() - started, 2), len(lines)


def fifo_at(rel: str) -> Callable[[Path, pygit2.Repository], None]:
    def make(path: Path, repo: pygit2.Repository) -> None:
        target = path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.unlink(missing_ok=True)
        os.mkfifo(target)

    return make


def config_names_fifo(key: str) -> Callable[[Path, pygit2.Repository], None]:
    """``config`` names a FIFO (written as text: pygit2 would read an include itself)."""

    def make(path: Path, repo: pygit2.Repository) -> None:
        fifo = path.parent / f"named-{key}"
        os.mkfifo(fifo)
        section, name = key.split(".")
        with open(path / ".git" / "config", "a") as config:
            config.write(f"[{section}]\n\t{name} = {fifo}\n")

    return make


def loose_head_object(path: Path, repo: pygit2.Repository) -> None:
    hexid = str(repo.head.target)
    target = path / ".git" / "objects" / hexid[:2] / hexid[2:]
    target.chmod(0o644)
    target.unlink()
    os.mkfifo(target)


PLACEMENTS: dict[str, Callable[[Path, pygit2.Repository], None]] = {
    "none (baseline: a plain repository)": lambda path, repo: None,
    "info/exclude": fifo_at(".git/info/exclude"),
    "worktree .gitignore": fifo_at(".gitignore"),
    "worktree sub/.gitignore": fifo_at("sub/.gitignore"),
    "worktree .gitattributes": fifo_at(".gitattributes"),
    "objects/info/alternates": fifo_at(".git/objects/info/alternates"),
    "shallow": fifo_at(".git/shallow"),
    "loose HEAD commit object": loose_head_object,
    "config core.excludesFile": config_names_fifo("core.excludesFile"),
    "config core.attributesFile": config_names_fifo("core.attributesFile"),
    "config include.path": config_names_fifo("include.path"),
    "untracked FIFO in the work tree": fifo_at("pipe.md"),
    "tracked file replaced by a FIFO": fifo_at("sub/a.md"),
}


def race(base: Path, name: str, variant: str) -> dict[str, object]:
    hung = swaps = 0
    observed: list[int] = []
    elapsed: list[float] = []
    for trial in range(TRIALS):
        path = base / f"race-{variant}-{name}-{trial}"
        make_repo(path)
        target = path / ".git" / name
        regular = target.read_bytes()
        stop = threading.Event()

        def swap(
            target: Path = target, regular: bytes = regular, stop: threading.Event = stop
        ) -> None:
            nonlocal swaps
            temp_fifo, temp_file = target.with_name("swap-fifo"), target.with_name("swap-reg")
            while not stop.is_set():
                os.mkfifo(temp_fifo)
                os.replace(temp_fifo, target)
                temp_file.write_bytes(regular)
                os.replace(temp_file, target)
                swaps += 1

        swapper = threading.Thread(target=swap)
        swapper.start()
        outcome, seconds, count = run_child(path, OBSERVATIONS, RACE_TIMEOUT, variant)
        print(
            f"race {variant} {name} trial {trial}: {outcome} after {count} in {seconds}s",
            file=sys.stderr,
        )
        stop.set()
        swapper.join()
        hung += outcome == "hung"
        observed.append(count)
        elapsed.append(seconds)
    return {
        "trials": TRIALS,
        "hung": hung,
        "swaps": swaps,
        "observations_before_end": observed,
        "seconds": elapsed,
    }


def main() -> None:
    out: dict[str, object] = {"benchmark": "memory_fifo", "timeout_seconds": TIMEOUT}
    base = Path(tempfile.mkdtemp(prefix="tidings-fifo-"))
    try:
        for variant in VARIANTS:
            placements = {}
            for label, make in PLACEMENTS.items():
                path = base / variant / label.replace(" ", "_").replace("/", "_")
                repo = make_repo(path)
                make(path, repo)
                outcome, seconds, _ = run_child(path, 1, TIMEOUT + 2, variant)
                placements[label] = {"outcome": outcome, "seconds": seconds}
                print(f"{variant} {label}: {outcome} {seconds}s", file=sys.stderr)
            races = {name: race(base, name, variant) for name in ("config", "HEAD")}
            out[variant] = {"placements": placements, "races": races}
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
