"""Costs that must not grow with the hub (issue 25 acceptance 7, interfaces.md "Past one Redis"):
short-lived ``tidings publish`` runs leave no heartbeat entry each, and ``tidings status``
beside 50,000 keys of another application issues no ``SCAN`` and no ``KEYS``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.processes import add_agent, run_cli
from tests.support.redis_server import RedisServer

pytestmark = [pytest.mark.e2e, pytest.mark.redis_server]

#: dramatiq's heartbeat set in tidings' namespace.
HEARTBEATS = "tidings:__heartbeats__"


@pytest.fixture
def env(redis_server: RedisServer, e2e_env: dict[str, str]) -> dict[str, str]:
    with redis_server.client() as c:
        c.flushall()
    return {**e2e_env, "TIDINGS_REDIS_URL": redis_server.url}


def test_twenty_publish_runs_leave_at_most_one_heartbeat(
    env: dict[str, str],
    redis_server: RedisServer,
    tmp_path: Path,
) -> None:
    add_agent(tmp_path, env)
    runs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tidings",
                "publish",
                f"mcp.c{n}",
                "--event",
                '{"n": 1}',
                "--workdir",
                str(tmp_path),
                "--json",
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(20)
    ]
    for run in runs:
        out, err = run.communicate(timeout=120)
        assert run.returncode == 0, err
        assert json.loads(out)["status"] == "ok"
    with redis_server.client() as c:
        assert c.zcard(HEARTBEATS) <= 1
        assert c.llen(f"tidings:tidings.host.{env['TIDINGS_HOST']}") == 20  # they did enqueue


def commandstats(c: object) -> dict[str, int]:
    info = c.info("commandstats")  # type: ignore[attr-defined]
    return {name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in info.items()}


def test_status_beside_50000_foreign_keys_issues_no_scan_and_no_keys(
    env: dict[str, str],
    redis_server: RedisServer,
    tmp_path: Path,
) -> None:
    add_agent(tmp_path, env)
    with redis_server.client() as c:
        with c.pipeline(transaction=False) as pipe:
            for n in range(50_000):
                pipe.set(f"other-app:{n}", "x")
            pipe.execute()
        c.config_resetstat()
    done = run_cli(["status", "--json"], env)
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    assert [a["workdir"] for a in figures["agents"]] == [str(tmp_path)]
    with redis_server.client() as c:
        calls = commandstats(c)
    assert calls.get("get", 0) > 0  # the stats saw status's reads
    assert calls.get("scan", 0) == 0 and calls.get("keys", 0) == 0, calls
