"""Issue 30: faults of the default store's engine and state directory (interfaces.md "The
default store": Lifecycle, Faults of the state directory; delay.md D18 with M52's rule).

Each fault gives one line with its reason, never a traceback: an engine that dies or
hangs under load ends `tidings up` within 15 s (exit 1); a full or read-only state
directory is refused at start (exit 2), said while running (every write answers
``store_refuses_writes``) and at stop; ``store.json`` deleted or damaged is written
again; data that vanished is refused at the next start unless ``--fresh``; a damaged
AOF names ``tidings check-aof``; a SIGKILLed `up`'s scheduler lease is taken over at
once. Short hang budgets come from ``TIDINGS_STORE_HANG_SECONDS``.

The disk faults run on a small tmpfs (and a read-only bind mount); where mounting is
refused (not root) they skip, except under CI, where the suite runs as root.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import tidings
from tests.e2e.test_default_store import engines, record, settings_for, start_up
from tests.support.groups import TIMING
from tests.support.polling import wait_until
from tests.support.processes import ProcessGroup, run_cli

pytestmark = pytest.mark.e2e

#: interfaces.md Lifecycle: `tidings up` exits this soon after its engine's death or hang.
EXIT_SECONDS = 15.0
#: The tmpfs the disk faults run on: room for the engine's files, little more.
TMPFS_SIZE = "8m"


@pytest.fixture
def state(e2e_env: dict[str, str]) -> Iterator[Path]:
    path = Path(e2e_env["TIDINGS_STATE_DIR"])
    yield path
    for pid in engines(path):  # an engine a test stopped or left: gone at teardown
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def refused(done: subprocess.CompletedProcess[str], reason: str, code: int = 2) -> str:
    """The command exited ``code`` with ``reason`` in its JSON answer and one line on
    stderr (returned), no traceback."""
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == code, done
    assert json.loads(done.stdout)["reason"] == reason, done.stdout
    [line] = [ln for ln in done.stderr.splitlines() if ln.startswith("tidings: ")]
    return line


def printed_tracebacks(stderr: list[str]) -> list[str]:
    """Lines of a traceback printed as such (the JSON log lines may carry one inside)."""
    return [ln for ln in stderr if not ln.startswith("{") and "Traceback" in ln]


#: A producer process: 4 threads publishing into the agent of ``argv[1]`` until killed
#: (its own process: a publish cut by the engine's death waits out its failover retry).
LOAD = """
import sys, threading, tidings
agent = tidings.connect().agent(sys.argv[1], max_events={"mcp.load": 10_000})
def publish():
    n = 0
    while True:
        agent.publish_event("mcp.load", {"n": n})
        n += 1
for _ in range(4):
    threading.Thread(target=publish, daemon=True).start()
print("publishing", flush=True)
threading.Event().wait()
"""


@TIMING
def test_a_hung_engine_ends_up_and_clients_say_store_unresponsive(
    procs: ProcessGroup,
    e2e_env: dict[str, str],
    state: Path,
    tmp_path: Path,
) -> None:
    """Acceptance 3: SIGSTOP the engine. A CLI call fails within its PING budget with
    `store_unresponsive` (never "start `tidings up`"); `up` says it hung and exits 1."""
    up = start_up(procs, "--port", "0", env={"TIDINGS_STORE_HANG_SECONDS": "3"})
    os.kill(record(state)["pid"], signal.SIGSTOP)
    started = time.monotonic()
    done = run_cli(
        ["check", "--workdir", str(tmp_path), "--json"],
        {**e2e_env, "TIDINGS_STORE_HANG_SECONDS": "1"},
        timeout=30,
    )
    assert "Start the default store" not in refused(done, "store_unresponsive")
    failed = up.wait_json(lambda v: v.get("status") == "failed", timeout=EXIT_SECONDS)
    assert failed["reason"] == "store_unresponsive" and "hung" in failed["message"]
    assert up.process.wait(EXIT_SECONDS) == 1
    assert time.monotonic() - started < 3 + EXIT_SECONDS
    assert not printed_tracebacks(up.stderr)


@TIMING
def test_an_engine_that_dies_under_load_ends_up_within_15_s(
    procs: ProcessGroup,
    e2e_env: dict[str, str],
    state: Path,
    tmp_path: Path,
) -> None:
    """Acceptance 3: SIGKILL the engine while 4 producers publish and the worker flushes:
    `up` exits 1 within 15 s (dramatiq's Worker.stop() alone would wait 600 s, retrying
    the acknowledgement of each running message), with its failed line."""
    up = start_up(procs, "--port", "0")
    (tmp_path / "wd").mkdir()
    load = subprocess.Popen(
        [sys.executable, "-c", LOAD, str(tmp_path / "wd")],
        env=e2e_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert load.stdout is not None and load.stdout.readline() == "publishing\n"
        flushes = tmp_path / "wd" / ".notification" / "mcp.load.json"
        wait_until(flushes.exists, timeout=30, what="the worker to flush")
        os.kill(record(state)["pid"], signal.SIGKILL)
        killed = time.monotonic()
        failed = up.wait_json(lambda v: v.get("status") == "failed", timeout=EXIT_SECONDS)
        assert failed["reason"] == "store_engine_died"
        assert up.process.wait(EXIT_SECONDS) == 1
        assert time.monotonic() - killed < EXIT_SECONDS
    finally:
        load.kill()
        load.communicate(timeout=10)
    assert not (state / "store.json").exists()
    assert not printed_tracebacks(up.stderr)


def test_store_json_lost_data_lost_and_a_damaged_aof_say_what_is_true(
    procs: ProcessGroup,
    e2e_env: dict[str, str],
    state: Path,
) -> None:
    """Acceptance 5: store.json deleted, then garbage, under a running `up`: written
    again. The state directory deleted under a running `up`: one `store_data_missing`
    line, and the next start refuses to begin empty (exit 2) unless --fresh. A damaged
    AOF: the refusal names `tidings check-aof`, which runs the engine's own checker."""
    up = start_up(procs, "--port", "0")
    kept = record(state)
    for damage in ("delete", "garbage"):
        if damage == "delete":
            (state / "store.json").unlink()
        else:
            (state / "store.json").write_text("{not json")
        wait_until(
            lambda: _record_or_none(state) == kept,
            timeout=10,
            what=f"store.json written again after {damage}",
        )
    shutil.rmtree(state)
    wait_until(
        lambda: any(ln.startswith("tidings: store_data_missing: ") for ln in up.stderr),
        timeout=10,
        what="the store_data_missing line",
    )
    assert up.stop() == 0
    line = refused(run_cli(["up", "--port", "0"], e2e_env, timeout=60), "store_data_missing")
    assert "--fresh" in line and engines(state) == []
    start_up(procs, "--port", "0", "--fresh").stop()  # writes a new marker into the AOF

    [incr] = (state / "store" / "data" / "appendonlydir").glob("*.incr.aof")
    good = incr.read_bytes()
    incr.write_bytes(good[: len(good) // 2] + b"\r\n*garbage\r\n" + good[len(good) // 2 :])
    line = refused(run_cli(["up", "--port", "0"], e2e_env, timeout=60), "engine_failed")
    assert "tidings check-aof --fix" in line and "valkey-check-aof" not in line
    checked = run_cli(["check-aof"], e2e_env, timeout=60)
    assert checked.returncode == 1 and "is not valid" in checked.stdout, checked


def _record_or_none(state: Path) -> dict[str, Any] | None:
    with contextlib.suppress(OSError, ValueError):
        return record(state)
    return None


@TIMING
def test_d18_the_alarm_comes_on_time_after_a_sigkill_of_up(
    procs: ProcessGroup,
    e2e_env: dict[str, str],
    state: Path,
    tmp_path: Path,
) -> None:
    """Acceptance 6: `up` SIGKILLed 3 s before a 5 s deadline and restarted at once: the
    new scheduler takes the dead holder's lease at once (M52's rule), so the alarm
    comes within 1 s of the deadline (or of the new `up`'s ready line, when its start
    took longer) instead of after the 10 s lease."""
    env = {"TIDINGS_SYNC_INTERVAL": "60"}  # the alarm job fires it, not the sync tick
    up = start_up(procs, "--port", "0", env=env)
    workdir = tmp_path / "wd"
    workdir.mkdir()
    with tidings.connect(settings=settings_for(e2e_env)) as hub:
        agent = hub.agent(workdir)
        up.wait_json(lambda v: v.get("status") == "leader", timeout=30)
        assert agent.notification("delay", {"channel": "system", "seconds": 5})["status"] == "ok"
    deadline = float(
        json.loads((workdir / ".notification/.delay_state.json").read_bytes())["deadline_epoch"]
    )
    wait_until(lambda: time.time() >= deadline - 3, timeout=10, what="3 s before the deadline")
    up.kill()
    start_up(procs, "--port", "0", env=env)
    # On a quiet machine `up` is back well before the deadline; on a starved one its
    # start alone may pass it, and the alarm cannot precede its scheduler.
    due = max(deadline, time.time())
    alarm = workdir / ".notification" / "delay-alarm.json"
    wait_until(alarm.exists, timeout=20, what="the alarm")
    assert alarm.stat().st_mtime - due < 1.0, "waited out the dead holder's 10 s lease"


# ---- disk faults, on a tmpfs ------------------------------------------------------------


def _mount(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["mount", *args], capture_output=True, text=True, check=False)


@pytest.fixture
def small_disk(e2e_env: dict[str, str]) -> Iterator[Path]:
    """A tmpfs of TMPFS_SIZE mounted at the test's state directory."""
    state = Path(e2e_env["TIDINGS_STATE_DIR"])
    state.mkdir(parents=True)
    done = _mount("-t", "tmpfs", "-o", f"size={TMPFS_SIZE},mode=0700", "tmpfs", str(state))
    if done.returncode != 0:
        if os.environ.get("CI"):
            pytest.fail(f"CI runs as root and must mount a tmpfs: {done.stderr.strip()}")
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield state
    finally:
        for pid in engines(state):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        wait_until(lambda: not engines(state), timeout=10, what="the engine to go")
        for _ in range(2):  # the read-only bind mount, then the tmpfs
            subprocess.run(["umount", str(state)], capture_output=True, check=False)


def read_only(path: Path) -> None:
    """Bind ``path`` read-only over itself: files open for writing stay writable."""
    assert _mount("--bind", str(path), str(path)).returncode == 0
    assert _mount("-o", "remount,bind,ro", str(path)).returncode == 0


def fill(folder: Path) -> Path:
    """Fill the file system of ``folder`` to the last byte."""
    filler = folder / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for block in (65536, 1):
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * block)
    finally:
        os.close(fd)
    return filler


def test_full_or_read_only_state_dir_at_start_is_one_line_exit_2(
    e2e_env: dict[str, str],
    small_disk: Path,
) -> None:
    """Acceptance 4, at start: no traceback, exit 2, `state_dir_full` /
    `state_dir_read_only`."""
    filler = fill(small_disk)
    refused(run_cli(["up", "--port", "0"], e2e_env, timeout=60), "state_dir_full")
    filler.unlink()
    read_only(small_disk)
    refused(run_cli(["up", "--port", "0"], e2e_env, timeout=60), "state_dir_read_only")


def test_a_disk_that_fills_while_up_runs_refuses_writes_with_a_reason(
    procs: ProcessGroup,
    e2e_env: dict[str, str],
    small_disk: Path,
    tmp_path: Path,
) -> None:
    """Acceptance 4, while running and at stop: publishes answer `store_refuses_writes`
    (not internal_error) while the engine cannot append its AOF; `up` says so once, and
    again when space is back; a read-only state directory at SIGTERM is one line."""
    up = start_up(procs, "--port", "0")
    workdir = tmp_path / "wd"
    workdir.mkdir()
    with tidings.connect(settings=settings_for(e2e_env)) as hub:
        agent = hub.agent(workdir)
        filler = fill(small_disk)

        def refusing() -> bool:
            answer = agent.publish_event("mcp.disk", {"pad": "x" * 4096})
            return answer["status"] == "error" and answer["reason"] == "store_refuses_writes"

        wait_until(refusing, timeout=20, interval=0.2, what="store_refuses_writes")
        wait_until(
            lambda: any("store_refuses_writes" in ln for ln in up.stderr),
            timeout=10,
            what="up's refusing line",
        )
        filler.unlink()
        wait_until(
            lambda: agent.publish_event("mcp.disk", {"n": 1})["status"] == "ok",
            timeout=20,
            interval=0.2,
            what="writes to work again",
        )
        wait_until(
            lambda: any("accepts writes again" in ln for ln in up.stderr),
            timeout=10,
            what="up's writes-work-again line",
        )
    assert sum("store_refuses_writes" in ln for ln in up.stderr if ln.startswith("tidings: ")) == 1
    read_only(small_disk)
    assert up.stop() == 0
    lines = [ln for ln in up.stderr if ln.startswith("tidings: ")]
    assert lines[-1].startswith("tidings: state_dir_read_only: ")
    assert not printed_tracebacks(up.stderr)
