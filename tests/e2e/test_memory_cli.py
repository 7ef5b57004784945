"""``tidings observe``, ``tidings inbox`` and ``tidings inbox ignore ID`` (interfaces.md CLI)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.memory_repo import MemoryRepo
from tests.support.processes import run_cli
from tests.support.redis_server import RedisServer

pytestmark = [pytest.mark.e2e, pytest.mark.redis_server]


def test_observe_inbox_and_ignore_from_the_shell(
    redis_server: RedisServer, e2e_env: dict[str, str], tmp_path: Path
) -> None:
    """M10 manual trigger, M7 projection, M6 ignore; exit code 1 on an error result."""
    with redis_server.client() as client:
        client.flushall()
    repo = MemoryRepo(tmp_path / "memory", {"MEMORY.md": "m\n"})
    workdir = tmp_path / "wd"
    workdir.mkdir()
    env = {**e2e_env, "TIDINGS_REDIS_URL": redis_server.url}
    common = ["--workdir", str(workdir), "--json"]

    def cli(*args: str, code: int = 0) -> dict[str, Any]:
        done = run_cli([*args, *common], env)
        assert done.returncode == code, (args, done.stdout, done.stderr)
        value: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
        return value

    cli("agents", "add", "--memory-repo", repo.root)
    assert cli("observe")["status"] == "baseline"
    repo.write("MEMORY.md", "edited\n")
    observed = cli("observe", "--reason", "after-sync")
    assert observed["status"] == "changed" and observed["trigger"] == "after-sync"
    [item] = cli("inbox")["items"]
    assert item["event_id"] == observed["event_id"] and item["state"] == "pending"
    ignored = cli("inbox", "ignore", item["event_id"])
    assert ignored["changed"] is True
    assert [i["state"] for i in cli("inbox", "--state", "ignored")["items"]] == ["ignored"]
    assert cli("inbox", "ignore", "0" * 32, code=1)["reason"] == "not_found"
