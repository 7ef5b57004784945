"""interfaces.md "More CLI rules" against a real store (issue 14, acceptance 3): JSON from
standard input and from a file; only ``agents add`` registers; a busy ``up`` port;
``rediss://`` against a plain server; ``notification check`` prints the bare
placeholder while ``check`` stamps it."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.groups import TIMING
from tests.support.processes import ProcessGroup, add_agent, run_cli
from tests.support.redis_server import RedisServer, free_port
from tidings import cli
from tidings.jobs.consumer import check_placeholder

pytestmark = [pytest.mark.e2e, pytest.mark.redis_server]


@pytest.fixture
def env(redis_server: RedisServer, e2e_env: dict[str, str]) -> dict[str, str]:
    with redis_server.client() as c:
        c.flushall()
    return {**e2e_env, "TIDINGS_REDIS_URL": redis_server.url}


def keys(server: RedisServer) -> dict[bytes, bytes]:
    """Every key with its DUMP: any write shows."""
    with server.client() as c:
        return {k: c.dump(k) or b"" for k in c.keys("*")}


def test_read_only_and_producer_commands_never_register(
    env: dict[str, str], redis_server: RedisServer, tmp_path: Path
) -> None:
    workdir = tmp_path / "w"
    workdir.mkdir()
    before = keys(redis_server)
    for command in (
        ["check"],
        ["publish", "system", "--event", "{}"],
        ["notification", "list"],
        ["inbox"],
        ["settings"],
        ["hooks", "list"],
    ):
        done = run_cli([*command, "--workdir", str(workdir), "--json"], env)
        assert done.returncode == 1, (command, done.stderr)
        assert json.loads(done.stdout)["reason"] == "unknown_agent"
        assert "tidings agents add" in done.stderr
    assert run_cli(["status", "--json"], env).returncode == 0
    assert keys(redis_server) == before
    assert not (workdir / ".notification").exists()


def test_event_from_stdin_and_from_a_file(env: dict[str, str], tmp_path: Path) -> None:
    workdir = tmp_path / "w"
    workdir.mkdir()
    add_agent(workdir, env)
    common = ["--workdir", str(workdir), "--inline", "--json"]
    from_stdin = subprocess.run(
        [sys.executable, "-m", "tidings", "publish", "system", "--event", "-", *common],
        input='{"text": "from stdin"}',
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert from_stdin.returncode == 0, from_stdin.stderr
    event_file = tmp_path / "event.json"
    event_file.write_text('{"text": "from a file"}', "utf-8")
    from_file = run_cli(["publish", "system", "--event", f"@{event_file}", *common], env)
    assert from_file.returncode == 0, from_file.stderr
    check = json.loads(run_cli(["check", *common], env).stdout)
    events = check["_meta"]["agent_meta"]["notifications"]["attention"]["system"]["data"]
    assert [e["text"] for e in events["events"]] == ["from stdin", "from a file"]


def test_notification_check_prints_the_bare_placeholder(
    env: dict[str, str], tmp_path: Path
) -> None:
    workdir = tmp_path / "w"
    workdir.mkdir()
    add_agent(workdir, env)
    common = ["--workdir", str(workdir), "--json"]
    bare = run_cli(["notification", "check", *common], env)
    assert bare.returncode == 0 and json.loads(bare.stdout) == check_placeholder()
    stamped = json.loads(run_cli(["check", *common], env).stdout)
    assert "agent_meta" in stamped["_meta"]


def test_a_second_up_on_a_busy_port_exits_2(
    procs: ProcessGroup, e2e_env: dict[str, str], tmp_path: Path
) -> None:
    """A second `tidings up` with a state directory of its own, on the first one's port."""
    port = free_port()
    procs.start("up", "--ephemeral", "--port", str(port)).wait_ready()
    own = {**e2e_env, "TIDINGS_STATE_DIR": str(tmp_path / "other-state")}
    done = run_cli(["up", "--port", str(port)], own, timeout=60)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    [line] = [ln for ln in done.stderr.splitlines() if ln.startswith("tidings:")]
    assert str(port) in line and "--port" in line


@TIMING
def test_rediss_to_a_plain_server_fails_within_the_connect_timeout(
    redis_server: RedisServer, e2e_env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Timed in this process (a loaded machine's interpreter start-up is not the
    command's); the subprocess shows the exit code and that no traceback is printed."""
    url = f"rediss://127.0.0.1:{redis_server.port}/0"
    started = time.monotonic()
    assert cli.main(["status", "--json", "--redis-url", url]) == 2
    elapsed = time.monotonic() - started
    answer = json.loads(capsys.readouterr().out)
    # The server takes the connection and never finishes the handshake (issue 30).
    assert answer["reason"] == "store_unresponsive" and "TLS" in answer["message"]
    assert elapsed < 6.0, elapsed
    done = run_cli(["status", "--json"], {**e2e_env, "TIDINGS_REDIS_URL": url}, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr


def test_a_busy_metrics_port_exits_2_naming_the_setting(
    redis_server: RedisServer, e2e_env: dict[str, str]
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {**e2e_env, "TIDINGS_REDIS_URL": redis_server.url, "TIDINGS_METRICS_PORT": str(port)}
        done = run_cli(["worker"], env, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    [line] = [ln for ln in done.stderr.splitlines() if ln.startswith("tidings:")]
    assert str(port) in line and "TIDINGS_METRICS_PORT" in line
