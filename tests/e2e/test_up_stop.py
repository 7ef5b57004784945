"""Issue 34 acceptance 3 (processes half): ``tidings stop`` (or ``down``) stops the ``tidings
up`` of a state directory cleanly, with a one-line answer, and a reason and exit 1 when
nothing runs there; on a terminal ``tidings up`` prints one line for people (store,
agents, console URL, "Ctrl-C to stop"), and JSON for pipes (interfaces.md CLI)."""

from __future__ import annotations

import contextlib
import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_default_store import engines, record, start_up, state  # noqa: F401
from tests.support.processes import ProcessGroup
from tidings import cli

pytestmark = pytest.mark.e2e

#: A loaded 2-core machine starts Python and the store slowly.
READY_SECONDS = 60.0


class Terminal:
    """A ``tidings`` command whose stdout is a pseudo-terminal (stderr: a pipe)."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.master, slave = pty.openpty()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tidings", *args],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=slave,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        os.close(slave)
        self.seen = b""

    def line(self, timeout: float = READY_SECONDS) -> str:
        """The next line the command wrote on its terminal."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.seen:
            left = deadline - time.monotonic()
            assert left > 0, f"no line on the terminal; so far {self.seen!r}"
            if select.select([self.master], [], [], min(left, 0.2))[0]:
                try:
                    self.seen += os.read(self.master, 4096)
                except OSError:  # EIO: the command exited and its terminal closed
                    assert b"\n" in self.seen, f"exited after {self.seen!r}"
        first, _, self.seen = self.seen.partition(b"\n")
        return first.decode().rstrip("\r")

    def rest(self, timeout: float = 2.0) -> str:
        """Everything else the command wrote on its terminal (once it has exited)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if select.select([self.master], [], [], 0.1)[0]:
                try:
                    self.seen += os.read(self.master, 4096)
                except OSError:  # EIO: all read
                    break
        return self.seen.decode()

    def close(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(10)
        if self.process.stderr is not None:
            self.process.stderr.close()
        os.close(self.master)


@pytest.fixture
def terminals() -> Iterator[list[Terminal]]:
    opened: list[Terminal] = []
    yield opened
    for terminal in opened:
        terminal.close()


def test_stop_stops_the_up_of_the_state_directory_cleanly(
    procs: ProcessGroup,
    e2e_env: dict[str, str],
    state: Path,  # noqa: F811
    terminals: list[Terminal],
) -> None:
    up = start_up(procs, "--port", "0")
    engine = record(state)["pid"]
    assert engines(state) == [engine]
    stop = Terminal(["stop"], e2e_env)  # on a terminal: one line
    terminals.append(stop)
    line = stop.line()
    assert line.startswith(f"tidings: stopped `tidings up` (pid {up.pid}) serving {state} in ")
    assert stop.process.wait(READY_SECONDS) == 0
    assert up.process.wait(10) == 0  # it stopped cleanly: worker, scheduler, then the engine
    assert not (state / "store.json").exists() and engines(state) == []
    assert stop.rest().strip() == ""


def test_up_on_a_terminal_prints_one_line_for_people_and_down_stops_it(
    e2e_env: dict[str, str],
    state: Path,  # noqa: F811
    tmp_path: Path,
    terminals: list[Terminal],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    workdir = tmp_path / "billing-agent"
    workdir.mkdir()
    up = Terminal(["up", "--ephemeral", "--port", "0", "--workdir", str(workdir)], e2e_env)
    terminals.append(up)
    line = up.line()
    port = record(state)["port"]
    assert line == (
        f"tidings up: ready; store in memory (NOT durable) at 127.0.0.1:{port}; "
        "1 agent: billing-agent; console: run `tidings web`, then open "
        "http://127.0.0.1:8377/; Ctrl-C to stop"
    )

    monkeypatch.setenv("TIDINGS_STATE_DIR", str(state))
    assert cli.main(["down", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["stopped"] == up.process.pid
    assert up.process.wait(READY_SECONDS) == 0
    assert up.rest().strip() == ""  # the scheduler's JSON events stay off the terminal

    # Nothing runs: a reason, exit 1, JSON on stdout (not a terminal) and one stderr line.
    assert cli.main(["stop"]) == 1
    out, err = capsys.readouterr()
    assert json.loads(out)["reason"] == "not_running"
    assert err.strip().splitlines() == [f"tidings: not_running: no `tidings up` serves {state}"]
    nowhere = tmp_path / "never-served"
    monkeypatch.setenv("TIDINGS_STATE_DIR", str(nowhere))
    assert cli.main(["stop"]) == 1 and not nowhere.exists()
