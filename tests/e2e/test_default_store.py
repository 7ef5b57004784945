"""Issue 20: ``tidings up`` with no URL serves a real engine with AOF (interfaces.md "The
default store"); ``--ephemeral`` serves the in-memory store on the same contract.

Every ``tidings up`` here runs in the test's own ``TIDINGS_STATE_DIR`` (``e2e_env``) on
a free port; the engines they start are stopped at teardown, found by their working directory
(the state directory's data folder).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

import tidings
from tests.support.memory_repo import MemoryRepo
from tests.support.polling import wait_until
from tests.support.processes import ProcessGroup, TidingsProcess, run_cli
from tests.support.redis_server import free_port
from tidings.engine import config, storefile
from tidings.engine.binary import find_engine
from tidings.engine.child import EngineProcess
from tidings.engine.supervisor import DefaultStore, claim
from tidings.store import keys
from tidings.store.settings import Settings

pytestmark = pytest.mark.e2e

#: The engine answers PING after loading its AOF; a loaded 2-core machine is slow.
READY_SECONDS = 60.0


def state_of(env: dict[str, str]) -> Path:
    return Path(env["TIDINGS_STATE_DIR"])


def record(state: Path) -> dict[str, Any]:
    return dict(json.loads((state / "store.json").read_text()))


def engines(state: Path) -> list[int]:
    """Pids of every engine process serving ``state``: an engine works in its data
    directory (its process title no longer names its configuration)."""
    data = os.path.realpath(state / "store" / "data")
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/{entry}/cwd") == data:
                    found.append(int(entry))
    return found


@pytest.fixture
def state(e2e_env: dict[str, str]) -> Iterator[Path]:
    path = state_of(e2e_env)
    yield path
    for pid in engines(path):  # an engine the test left (killed parents): stop it
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def start_up(procs: ProcessGroup, *args: str, env: dict[str, str] | None = None) -> TidingsProcess:
    up = procs.start("up", *args, env=env)
    up.wait_ready(timeout=READY_SECONDS)
    return up


def settings_for(env: dict[str, str]) -> Settings:
    return Settings(
        host=env["TIDINGS_HOST"], state_dir=Path(env["TIDINGS_STATE_DIR"]), turn_wait_seconds=20
    )


def anonymous_is_refused(port: int) -> None:
    with redis.Redis(port=port, protocol=2) as anonymous:
        with pytest.raises(redis.AuthenticationError, match=r"(?i)auth"):
            anonymous.set("stolen", 1)


def test_acceptance_1_and_5_a_real_engine_with_aof_a_password_and_one_owner(
    procs: ProcessGroup,
    e2e_env: dict[str, str],
    state: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No URL: AOF on, data in the state directory, store.json 0600, NOAUTH for an
    anonymous client, connect() finds it; a second `up` exits 2 with one line; SIGTERM
    shuts the engine down and removes store.json."""
    up = start_up(procs, "--port", "0")
    rec = record(state)
    assert stat.S_IMODE((state / "store.json").stat().st_mode) == 0o600
    assert rec["engine"].startswith(("valkey ", "redis ")) and engines(state) == [rec["pid"]]
    with redis.Redis.from_url(rec["url"], protocol=2) as owner:
        assert owner.info("persistence")["aof_enabled"] == 1
        data_dir = Path(owner.config_get("dir")["dir"])
        assert data_dir.is_relative_to(state)
        assert owner.config_get("appendfsync")["appendfsync"] == "everysec"
    anonymous_is_refused(rec["port"])
    monkeypatch.setenv("TIDINGS_STATE_DIR", str(state))
    monkeypatch.delenv("TIDINGS_REDIS_URL", raising=False)
    with tidings.connect() as hub:
        assert hub.url == rec["url"] and hub.redis.ping()

    second = run_cli(["up", "--port", "0"], e2e_env, timeout=60)
    assert second.returncode == 2 and "Traceback" not in second.stderr
    [line] = second.stderr.strip().splitlines()
    assert line.startswith("tidings: store_busy: another `tidings up`") and str(state) in line
    with redis.Redis.from_url(rec["url"], protocol=2) as owner:
        assert up.alive() and owner.ping()

    assert up.stop() == 0
    assert not (state / "store.json").exists() and engines(state) == []
    assert any(p.name.startswith("appendonly") for p in (data_dir / "appendonlydir").iterdir())


def test_ephemeral_serves_the_same_contract(
    procs: ProcessGroup,
    e2e_env: dict[str, str],
    state: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 24 acceptance 1: --ephemeral writes store.json 0600; NOAUTH without it; with
    the password, Lua has no os, io, python, package, debug, loadstring or dofile."""
    up = start_up(procs, "--ephemeral", "--port", "0")
    assert any("NOT durable" in line for line in up.stderr)
    rec = record(state)
    assert stat.S_IMODE((state / "store.json").stat().st_mode) == 0o600
    assert rec["pid"] == up.pid and engines(state) == []
    anonymous_is_refused(rec["port"])
    monkeypatch.setenv("TIDINGS_STATE_DIR", str(state))
    with tidings.connect() as hub:
        assert hub.redis.ping()
        # Acceptance 1, the Lua part: with the password, scripts see no host library.
        for name in ("os", "io", "python", "package", "debug", "loadstring", "dofile"):
            assert hub.redis.eval(f"return type({name})", 0) == b"nil", name
        with pytest.raises(redis.ResponseError):
            hub.redis.eval("return os.execute('id')", 0)
    assert up.stop() == 0 and not (state / "store.json").exists()


def test_acceptance_2_and_3_what_the_agent_should_know_survives_a_restart(
    procs: ProcessGroup,
    e2e_env: dict[str, str],
    state: Path,
    tmp_path: Path,
) -> None:
    """Seed 001's restart case on the default path, with a pending inbox item, an
    idempotency key and a delay whose deadline passes while the host is down."""
    repo = MemoryRepo(tmp_path / "memory", {"MEMORY.md": "remember\n", "notes/plan.md": "p\n"})
    workdir = tmp_path / "wd"
    workdir.mkdir()
    port = str(free_port())
    up = start_up(procs, "--port", port)
    with tidings.connect(settings=settings_for(e2e_env)) as hub:
        agent = hub.agent(workdir, memory_repo=repo.root)
        assert agent.startup()["memory"]["status"] == "baseline"
        turn = agent.prepare_turn()
        assert isinstance(turn, tidings.Turn)
        agent.finish_turn(turn)
        mail = agent.admit("mail", "a letter")["event_id"]
        first = agent.publish_event("email", {"text": "hi"}, idempotency_key="k-1", wait=True)
        assert first["status"] == "ok", first
        delay = agent.notification("delay", {"channel": "email", "seconds": 2})
        assert delay["status"] == "ok", delay
        deadline = float(
            json.loads((workdir / ".notification/.delay_state.json").read_bytes())["deadline_epoch"]
        )
    assert up.stop() == 0

    repo.write("notes/plan.md", "edited while the host was down\n")
    alarm = workdir / ".notification" / "delay-alarm.json"
    wait_until(
        lambda: time.time() > deadline + 0.5,
        timeout=30,
        what="the deadline to pass while the host is down",
    )
    assert not alarm.exists()

    start_up(procs, "--port", port)
    with tidings.connect(settings=settings_for(e2e_env)) as hub:
        agent = hub.agent(workdir, memory_repo=repo.root)
        assert [i["event_id"] for i in agent.inbox(state="pending")] == [mail]
        again = agent.publish_event("email", {"text": "hi"}, idempotency_key="k-1")
        assert again["event_id"] == first["event_id"], again
        assert agent.startup()["memory"]["status"] == "changed"
        turn = agent.prepare_turn()
        assert isinstance(turn, tidings.Turn)
        memory = [i for i in turn.inbox if i["source_kind"] == "memory-change"]
        assert len(memory) == 1 and "notes/plan.md" in turn.inbox_text
        agent.finish_turn(turn)
        wait_until(alarm.exists, timeout=20, what="the missed alarm after the restart")
        fired = alarm.stat().st_ino, alarm.stat().st_mtime_ns
        jobs = keys.scheduler_jobs(e2e_env["TIDINGS_HOST"])
        wait_until(lambda: hub.redis.hlen(jobs) == 0, timeout=10, what="every alarm job to run")
        alarmed = json.loads(alarm.read_bytes())["data"]["delay_alarm"]
        assert alarmed["request_id"] == delay["request_id"]
        assert (alarm.stat().st_ino, alarm.stat().st_mtime_ns) == fired  # fired once


def burst_until_killed(
    agent: Any, acked: list[str], started: threading.Event, stop: threading.Event
) -> None:
    n = 0
    while not stop.is_set():
        with contextlib.suppress(Exception):  # a call cut by the kill is not acknowledged
            result = agent.publish_event("mcp.burst", {"n": n})
            if result.get("status") == "ok":
                acked.append(result["event_id"])
        n += 1
        if len(acked) >= 50:
            started.set()


def test_acceptance_4_and_5_kills_lose_no_acknowledged_write(
    procs: ProcessGroup,
    e2e_env: dict[str, str],
    state: Path,
    tmp_path: Path,
) -> None:
    """SIGKILL of `tidings up` and its engine mid-burst, then SIGKILL of `tidings up`
    alone: after each restart exactly one engine serves the directory and every
    acknowledged event is in the channel file exactly once."""
    e2e_env["TIDINGS_BROKER_HEARTBEAT_MS"] = "1000"
    workdir = tmp_path / "wd"
    workdir.mkdir()
    port = str(free_port())
    up = start_up(procs, "--port", port)
    acked: list[str] = []
    with tidings.connect(settings=settings_for(e2e_env)) as hub:
        agent = hub.agent(workdir, max_events={"mcp.burst": 10_000})
        started, stop = threading.Event(), threading.Event()
        producer = threading.Thread(
            target=burst_until_killed, args=(agent, acked, started, stop), daemon=True
        )
        producer.start()
        assert started.wait(30)
        engine = record(state)["pid"]
        os.killpg(up.pid, signal.SIGKILL)
        os.killpg(engine, signal.SIGKILL)
        stop.set()
        up.process.wait(10)
        up = start_up(procs, "--port", port)
        producer.join(60)
        assert not producer.is_alive() and len(acked) >= 50
        assert engines(state) == [record(state)["pid"]]

        # SIGKILL of `tidings up` alone: the engine is spared the kill, and stops by
        # its parent-death signal (or is stopped by the next `tidings up`).
        more = agent.publish_event("mcp.burst", {"n": "last"})
        assert more["status"] == "ok", more
        acked.append(more["event_id"])
        spared = record(state)["pid"]
        up.process.send_signal(signal.SIGKILL)
        up.process.wait(10)
        # Linux: the kernel's parent-death signal (SIGTERM) stops it, AOF synced.
        wait_until(
            lambda: spared not in engines(state),
            timeout=20,
            what="the spared engine to stop with its parent",
        )
        start_up(procs, "--port", port)
        assert engines(state) == [record(state)["pid"]]

        mirror = workdir / ".notification" / "mcp.burst.json"

        def ids() -> list[str]:
            try:
                return [e["event_id"] for e in json.loads(mirror.read_bytes())["data"]["events"]]
            except (OSError, ValueError, KeyError):
                return []

        wait_until(
            lambda: set(acked) <= set(ids()),
            timeout=30,
            what="every acknowledged event in mcp.burst.json",
        )
        assert len(ids()) == len(set(ids()))


def test_an_orphaned_engine_is_shut_down_and_its_data_kept(
    procs: ProcessGroup,
    e2e_env: dict[str, str],
    state: Path,
) -> None:
    """Where no parent-death signal exists (macOS), an engine outlives its killed
    `tidings up`: the next one finds it by the busy server lock and free owner lock,
    shuts it down (AOF synced) and serves the same data from an engine of its own."""
    store = DefaultStore(settings_for(e2e_env), 0)
    engine = find_engine(None)
    owner, server = claim(store.paths)
    secret = config.password(store.paths)
    port = free_port()
    config.write(store.paths, config.render(store.paths, port, secret, "everysec"))
    orphan = EngineProcess(engine, store.paths, port, secret)
    assert server.fd is not None
    orphan.spawn(server.fd, parent_death=False)
    try:
        orphan.wait_ready()
        storefile.write(
            store.paths.store_file,
            {"url": orphan.url, "pid": orphan.pid, "port": port, "engine": engine.label},
        )
        with redis.Redis.from_url(orphan.url, protocol=2) as c:
            c.set("acknowledged", "yes")
        owner.release()
        server.release()  # only the engine holds the server lock now: an orphan

        start_up(procs, "--port", "0")
        assert orphan.process is not None and orphan.process.wait(10) == 0
        assert engines(state) == [record(state)["pid"]] != [orphan.pid]
        with redis.Redis.from_url(record(state)["url"], protocol=2) as c:
            assert c.get("acknowledged") == b"yes"
    finally:
        orphan.kill()


@pytest.mark.parametrize("version", ["missing", "Redis server v=6.2.14 sha=0 bits=64"])
def test_a_missing_or_old_engine_is_one_line_exit_2(
    e2e_env: dict[str, str],
    tmp_path: Path,
    version: str,
) -> None:
    fake = tmp_path / "fake-server"
    if version != "missing":
        fake.write_text(f"#!/bin/sh\necho '{version}'\n")
        fake.chmod(0o755)
    done = run_cli(["up", "--port", "0"], {**e2e_env, "TIDINGS_STORE_SERVER": str(fake)})
    assert done.returncode == 2 and "Traceback" not in done.stderr
    [line] = done.stderr.strip().splitlines()
    assert "TIDINGS_STORE_SERVER" in line or "7.0" in line


def test_a_client_with_no_store_running_exits_2_naming_both_fixes(
    e2e_env: dict[str, str],
    state: Path,
    tmp_path: Path,
) -> None:
    """No URL and no `tidings up`: one line naming `tidings up` and TIDINGS_REDIS_URL;
    a store.json left by a dead process is not believed."""
    state.mkdir(parents=True)
    storefile.write(state / "store.json", {"url": "redis://:x@127.0.0.1:1/0", "pid": 2**22 + 1})
    done = run_cli(["check", "--workdir", str(tmp_path), "--json"], e2e_env)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "tidings up" in done.stderr and "TIDINGS_REDIS_URL" in done.stderr
    assert json.loads(done.stdout)["reason"] == "no_store"
