"""Real ``tidings`` processes for end-to-end tests, always cleaned up."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any


class TidingsProcess:
    """A ``python -m tidings ...`` child whose stdout lines are collected."""

    def __init__(self, args: Sequence[str], env: dict[str, str], cwd: Path | None = None) -> None:
        self.args = list(args)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tidings", *args],
            env=env,
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.stderr: list[str] = []
        self._threads = [
            threading.Thread(
                target=self._pump, args=(self.process.stdout, self.lines.put), daemon=True
            ),
            threading.Thread(
                target=self._pump, args=(self.process.stderr, self.stderr.append), daemon=True
            ),
        ]
        for t in self._threads:
            t.start()

    @staticmethod
    def _pump(stream: Any, sink: Any) -> None:
        for raw in iter(stream.readline, b""):
            sink(raw.decode("utf-8", "replace").rstrip("\n"))
        stream.close()

    def wait_json(self, predicate: Any = None, timeout: float = 20.0) -> dict[str, Any]:
        """The first JSON line on stdout matching ``predicate``."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(
                    f"{self.args}: no matching line; stderr tail: {self.stderr[-20:]}"
                )
            try:
                line = self.lines.get(timeout=min(remaining, 0.2))
            except queue.Empty:
                if self.process.poll() is not None and self.lines.empty():
                    raise AssertionError(
                        f"{self.args} exited {self.process.returncode}: {self.stderr[-20:]}"
                    ) from None
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError:
                continue
            if predicate is None or predicate(value):
                return dict(value)

    def wait_ready(self, timeout: float = 20.0) -> dict[str, Any]:
        return self.wait_json(lambda v: v.get("status") == "ready", timeout)

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL the whole process group: no cleanup runs."""
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(10)

    def stop(self, timeout: float = 15.0) -> int:
        if self.alive():
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        for t in self._threads:
            t.join(2)
        return int(self.process.returncode)


def run_cli(
    args: Sequence[str], env: dict[str, str], timeout: float = 60.0, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run one short ``tidings`` command to completion."""
    return subprocess.run(
        [sys.executable, "-m", "tidings", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


class ProcessGroup:
    """Every process a test starts; stopped (or killed) at teardown."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.processes: list[TidingsProcess] = []

    def start(
        self, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
    ) -> TidingsProcess:
        proc = TidingsProcess(args, {**self.env, **(env or {})}, cwd)
        self.processes.append(proc)
        return proc

    def cleanup(self) -> None:
        for proc in self.processes:
            if proc.alive():
                proc.kill()
            for t in proc._threads:
                t.join(2)

    def __iter__(self) -> Iterator[TidingsProcess]:
        return iter(self.processes)


def add_agent(workdir: Path, env: dict[str, str], *extra: str) -> dict[str, Any]:
    """``tidings agents add --workdir W``: it (and ``up --workdir``) registers on the command
    line (interfaces.md)."""
    done = run_cli(["agents", "add", "--workdir", str(workdir), "--json", *extra], env)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout)["agent"])
