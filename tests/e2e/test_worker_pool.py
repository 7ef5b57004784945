"""Issue 14, acceptance 2: ``tidings worker --processes 2`` does not limp on when a
child dies. The chosen design (tidings/cli/pool.py): the parent stops the other
child and exits non-zero, so the service manager restarts the whole pool."""

from __future__ import annotations

import os
import signal
import time

import pytest

from tests.support.groups import TIMING
from tests.support.polling import wait_until
from tests.support.processes import ProcessGroup
from tests.support.redis_server import RedisServer

pytestmark = [pytest.mark.e2e, pytest.mark.redis_server]


def gone(pid: int) -> bool:
    """``pid`` no longer runs (reaped, or a zombie of an exited parent)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


@TIMING
def test_sigkill_of_one_child_stops_the_pool_with_a_non_zero_exit(
    procs: ProcessGroup, e2e_env: dict[str, str], redis_server: RedisServer
) -> None:
    env = {"TIDINGS_REDIS_URL": redis_server.url, "TIDINGS_METRICS_PORT": "0"}
    pool = procs.start("worker", "--processes", "2", "--threads", "1", env=env)
    ready = pool.wait_json(lambda v: v.get("role") == "workers")
    victim, survivor = ready["pids"]
    os.kill(victim, signal.SIGKILL)
    killed_at = time.monotonic()
    wait_until(lambda: not pool.alive(), timeout=10, what="the parent's exit")
    assert time.monotonic() - killed_at < 10
    assert pool.process.returncode == 1
    failed = pool.wait_json(lambda v: v.get("status") == "failed", timeout=1)
    assert failed["reason"] == "worker_process_died" and str(victim) in failed["message"]
    wait_until(lambda: gone(survivor), timeout=10, what="the other child's exit")


def test_sigterm_still_drains_the_pool_and_exits_0(
    procs: ProcessGroup, e2e_env: dict[str, str], redis_server: RedisServer
) -> None:
    pool = procs.start(
        "worker", "--processes", "2", "--threads", "1", env={"TIDINGS_REDIS_URL": redis_server.url}
    )
    pids = pool.wait_json(lambda v: v.get("role") == "workers")["pids"]
    assert pool.stop(timeout=60) == 0
    assert all(gone(pid) for pid in pids)
