"""Issue 2 end to end: real ``tidings`` processes on the in-memory store and on Redis."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.polling import wait_until
from tests.support.processes import ProcessGroup, add_agent, run_cli
from tests.support.redis_server import RedisServer, free_port

pytestmark = pytest.mark.e2e


def read_mirror(workdir: Path, channel: str) -> dict[str, Any] | None:
    try:
        value = json.loads((workdir / ".notification" / f"{channel}.json").read_bytes())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def events_of(workdir: Path, channel: str) -> list[dict[str, Any]]:
    mirror = read_mirror(workdir, channel)
    return list(mirror["data"]["events"]) if mirror else []


def test_demo_shows_a_burst_and_exits_zero(e2e_env: dict[str, str]) -> None:
    """Acceptance 1: `make demo` (= `tidings demo`) exits 0 after the burst."""
    done = run_cli(["demo"], e2e_env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "A burst of events lands in one channel file" in done.stdout
    assert "Tour complete" in done.stdout
    # Issue 34, acceptance 5: every chapter shows the command line or the Python call that
    # does what it narrates; nothing it prints is a URL that is dead when read (the tour's
    # console and store end with it); every channel it shows is introduced (the demo
    # checks that itself); no raw key path of a result.
    chapters = re.split(r"^─+ \d+\. .* ─+$", done.stdout, flags=re.M)[1:]
    assert len(chapters) >= 10
    for chapter in chapters:
        assert re.search(r"^  (\$|>>>) ", chapter, re.M), chapter[:300]
    assert not re.search(r"https?://", done.stdout)
    assert "_meta.agent_meta" not in done.stdout and ".data.messages[" not in done.stdout


def test_up_embedded_publish_then_check(
    procs: ProcessGroup, e2e_env: dict[str, str], tmp_path: Path
) -> None:
    """Acceptance 2: `tidings up --ephemeral` (the in-memory store, on request); another
    process publishes, finding the store through TIDINGS_STATE_DIR (issue 20)."""
    workdir = tmp_path / "w"
    workdir.mkdir()
    port = free_port()
    up = procs.start("up", "--ephemeral", "--workdir", str(workdir), "--port", str(port))
    ready = up.wait_ready()
    assert ready["embedded"] is True and ready["durable"] is False
    assert any("NOT durable" in line for line in up.stderr)
    env = e2e_env
    done = run_cli(
        ["publish", "system", "--event", '{"text":"hi"}', "--workdir", str(workdir)], env
    )
    assert done.returncode == 0, done.stderr
    event_id = json.loads(done.stdout)["event_id"]
    found = wait_until(
        lambda: events_of(workdir, "system"), timeout=1.0, what="system.json holding the event"
    )
    assert [e["event_id"] for e in found] == [event_id]
    mirror = read_mirror(workdir, "system")
    assert mirror is not None and mirror["header"] == "1 system notification(s)"
    check = run_cli(["check", "--workdir", str(workdir)], env)
    assert check.returncode == 0, check.stderr
    stamped = json.loads(check.stdout)
    attention = stamped["_meta"]["agent_meta"]["notifications"]["attention"]
    assert attention["system"]["data"]["events"][0]["text"] == "hi"


def test_cli_without_a_store_exits_2(e2e_env: dict[str, str], tmp_path: Path) -> None:
    env = {**e2e_env, "TIDINGS_REDIS_URL": f"redis://127.0.0.1:{free_port()}/0"}
    done = run_cli(["check", "--workdir", str(tmp_path)], env)
    assert done.returncode == 2
    assert "tidings up" in done.stderr and "TIDINGS_REDIS_URL" in done.stderr
    assert json.loads(done.stdout)["reason"] == "no_store"


@pytest.fixture
def redis(own_redis: RedisServer) -> RedisServer:
    return own_redis


def test_real_redis_two_workers(
    procs: ProcessGroup, e2e_env: dict[str, str], redis: RedisServer, tmp_path: Path
) -> None:
    """Acceptance 3: the same against a real redis-server with two worker processes."""
    env = {"TIDINGS_REDIS_URL": redis.url}
    for _ in range(2):
        procs.start("worker", "--threads", "2", env=env).wait_ready()
    workdir = tmp_path / "w"
    workdir.mkdir()
    run_env = {**e2e_env, **env}
    add_agent(workdir, run_env)
    done = run_cli(
        ["publish", "system", "--event", '{"text":"hi"}', "--workdir", str(workdir)], run_env
    )
    assert done.returncode == 0, done.stderr
    wait_until(lambda: events_of(workdir, "system"), timeout=1.0, what="system.json")
    check = run_cli(["check", "--workdir", str(workdir)], run_env)
    attention = json.loads(check.stdout)["_meta"]["agent_meta"]["notifications"]["attention"]
    assert attention["system"]["data"]["events"][0]["text"] == "hi"


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["publish", "../x", "--event", "{}"], "invalid_channel"),
        (["publish", ".hidden", "--event", "{}"], "invalid_channel"),
        (["publish", "a..b", "--event", "{}"], "invalid_channel"),
        (["publish", "", "--event", "{}"], "invalid_channel"),
        (["publish", "sp ace", "--event", "{}"], "invalid_channel"),
        (["publish", "foo", "--event", "{}"], "invalid_channel"),
        # Text that is not the JSON object the option needs is bad input text: exit 2,
        # whether or not it parses (issue 29; test_error_shapes holds every JSON option).
        (["publish", "system", "--envelope", "[1,2]"], "invalid_json"),
        (["publish", "system", "--event", "[1]"], "invalid_json"),
    ],
)
def test_bad_input_through_the_cli(
    redis: RedisServer, e2e_env: dict[str, str], tmp_path: Path, args: list[str], reason: str
) -> None:
    """Acceptance 4: bad input changes nothing and answers with a reason (exit 1; exit 2
    for input text that is not a JSON object)."""
    workdir = tmp_path / "w"
    workdir.mkdir()
    env = {**e2e_env, "TIDINGS_REDIS_URL": redis.url}
    add_agent(workdir, env)
    done = run_cli([*args, "--workdir", str(workdir), "--inline"], env)
    assert done.returncode == (2 if reason == "invalid_json" else 1), done.stderr
    assert json.loads(done.stdout)["reason"] == reason
    assert not (workdir / ".notification").exists() or not any(
        (workdir / ".notification").glob("*.json")
    )


def test_symlinked_notification_dir_through_the_cli(
    redis: RedisServer, e2e_env: dict[str, str], tmp_path: Path
) -> None:
    workdir, elsewhere = tmp_path / "w", tmp_path / "elsewhere"
    workdir.mkdir()
    elsewhere.mkdir()
    (workdir / ".notification").symlink_to(elsewhere)
    env = {**e2e_env, "TIDINGS_REDIS_URL": redis.url}
    add_agent(workdir, env)
    done = run_cli(
        ["publish", "system", "--event", "{}", "--workdir", str(workdir), "--inline"], env
    )
    assert done.returncode == 1
    assert json.loads(done.stdout)["reason"] == "unsafe_path"
    assert list(elsewhere.iterdir()) == []


PRODUCER = r"""
import sys, tidings
url, workdir, producer, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
hub = tidings.connect(url)
agent = hub.agent(workdir)
for n in range(count):
    result = agent.publish_event("mcp.load", {"producer": producer, "n": n})
    assert result["status"] == "ok", result
hub.close()
"""


def test_ten_producers_five_hundred_events_each(
    procs: ProcessGroup, e2e_env: dict[str, str], redis: RedisServer, tmp_path: Path
) -> None:
    """Acceptance 5: 10 processes x 500 events → each exactly once, in per-producer order."""
    import tidings

    workdir = tmp_path / "w"
    workdir.mkdir()
    settings = tidings.Settings(host=e2e_env["TIDINGS_HOST"])
    with tidings.connect(redis.url, settings=settings) as hub:
        hub.agent(workdir, max_events={"mcp.load": 10_000})
    env = {"TIDINGS_REDIS_URL": redis.url}
    for _ in range(2):
        procs.start("worker", "--threads", "4", env=env).wait_ready()
    child_env = {**e2e_env, **env}
    producers = [
        subprocess.Popen(
            [sys.executable, "-c", PRODUCER, redis.url, str(workdir), f"p{i}", "500"], env=child_env
        )
        for i in range(10)
    ]
    try:
        for p in producers:
            assert p.wait(120) == 0
    finally:
        for p in producers:
            if p.poll() is None:
                p.kill()
                p.wait()
    events = wait_until(
        lambda: (e := events_of(workdir, "mcp.load")) and len(e) == 5000 and e,
        timeout=60,
        what="5000 events in mcp.load.json",
    )
    keys = [(e["producer"], e["n"]) for e in events]
    assert len(set(keys)) == 5000
    for i in range(10):
        mine = [n for producer, n in keys if producer == f"p{i}"]
        assert mine == list(range(500))


@pytest.mark.parametrize("point", ["flush.before_write", "flush.after_write"])
def test_worker_killed_mid_flush_loses_and_duplicates_nothing(
    procs: ProcessGroup, e2e_env: dict[str, str], redis: RedisServer, tmp_path: Path, point: str
) -> None:
    """Acceptance 6: a worker dies inside a flush; a new worker finishes it exactly once."""
    import tidings

    workdir = tmp_path / "w"
    workdir.mkdir()
    env = {"TIDINGS_REDIS_URL": redis.url, "TIDINGS_BROKER_HEARTBEAT_MS": "1500"}
    doomed = procs.start(
        "worker",
        "--threads",
        "1",
        env={**env, "TIDINGS_ENABLE_FAULTS": "1", "TIDINGS_FAULTS": f"{point}@2"},
    )
    doomed.wait_ready()
    settings = tidings.Settings(host=e2e_env["TIDINGS_HOST"])
    with tidings.connect(redis.url, settings=settings) as hub:
        agent = hub.agent(workdir, max_events={"mcp.crash": 1000})
        first = agent.publish_event("mcp.crash", {"n": 0}, wait=True)
        assert first["flushed"] is True
        ids = [first["event_id"]]
        ids += [agent.publish_event("mcp.crash", {"n": n})["event_id"] for n in range(1, 5)]
        wait_until(lambda: not doomed.alive(), timeout=20, what="the worker to hit the fault")
        assert doomed.process.returncode == 75
        ids += [agent.publish_event("mcp.crash", {"n": n})["event_id"] for n in range(5, 10)]
        procs.start("worker", "--threads", "1", env=env).wait_ready()
        events = wait_until(
            lambda: (e := events_of(workdir, "mcp.crash")) and len(e) >= 10 and e,
            timeout=30,
            what="all ten events after the restart",
        )
    assert [e["event_id"] for e in events] == ids
    visible = sorted(p.name for p in (workdir / ".notification").iterdir() if p.is_file())
    assert [n for n in visible if not n.startswith(".")] == ["mcp.crash.json"]


def test_sigkill_during_a_flushing_burst(
    procs: ProcessGroup, e2e_env: dict[str, str], redis: RedisServer, tmp_path: Path
) -> None:
    """Acceptance 6 with a real SIGKILL at an arbitrary moment of a long burst."""
    import tidings

    workdir = tmp_path / "w"
    workdir.mkdir()
    env = {"TIDINGS_REDIS_URL": redis.url, "TIDINGS_BROKER_HEARTBEAT_MS": "1500"}
    victim = procs.start("worker", "--threads", "2", env=env)
    victim.wait_ready()
    settings = tidings.Settings(host=e2e_env["TIDINGS_HOST"])
    with tidings.connect(redis.url, settings=settings) as hub:
        agent = hub.agent(workdir, max_events={"mcp.burst": 5000})
        ids = [agent.publish_event("mcp.burst", {"n": n})["event_id"] for n in range(1500)]
        wait_until(lambda: events_of(workdir, "mcp.burst"), timeout=10, what="a first flush")
        victim.kill()
        procs.start("worker", "--threads", "2", env=env).wait_ready()
        events = wait_until(
            lambda: (e := events_of(workdir, "mcp.burst")) and len(e) >= 1500 and e,
            timeout=30,
            what="every event after the kill",
        )
    assert [e["event_id"] for e in events] == ids
    assert os.path.exists(workdir / ".notification" / "mcp.burst.json")
