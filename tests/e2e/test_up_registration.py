"""interfaces.md "Never silent, never wrong" (issue 29), the rows of ``tidings up``:
``--memory-repo`` goes with exactly one ``--workdir`` and registers with it, a path that is
no work tree is refused, and the ready line names every agent this host serves (registered
earlier or now), not only the ``--workdir`` arguments."""

from __future__ import annotations

from pathlib import Path

import pytest

import tidings
from tests.support.memory_repo import MemoryRepo
from tests.support.processes import ProcessGroup, run_cli
from tests.support.redis_server import RedisServer
from tidings.store.settings import Settings

pytestmark = [pytest.mark.e2e, pytest.mark.redis_server]


def test_up_registers_with_its_memory_repo_and_names_every_agent(
    procs: ProcessGroup,
    redis_server: RedisServer,
    e2e_env: dict[str, str],
    tmp_path: Path,
) -> None:
    with redis_server.client() as c:
        c.flushall()
    env = {**e2e_env, "TIDINGS_REDIS_URL": redis_server.url}
    earlier, now = tmp_path / "earlier", tmp_path / "now"
    earlier.mkdir()
    now.mkdir()
    with tidings.connect(redis_server.url, settings=Settings(host=env["TIDINGS_HOST"])) as hub:
        hub.agent(earlier)
    repo = MemoryRepo(tmp_path / "memory", {"MEMORY.md": "m\n"})

    refused = run_cli(
        ["up", "--workdir", str(now), "--memory-repo", str(tmp_path / "nope"), "--json"], env
    )
    assert refused.returncode == 1, refused.stderr
    (line,) = refused.stderr.splitlines()
    assert line.startswith("tidings: invalid_memory_repo: ") and "does not exist" in line

    up = procs.start(
        "up",
        "--workdir",
        str(now),
        "--memory-repo",
        repo.root,
        env={"TIDINGS_REDIS_URL": redis_server.url},
    )
    ready = up.wait_ready(timeout=30)
    served = {a["workdir"]: a for a in ready["agents"]}
    assert set(served) == {str(earlier), str(now)}, ready
    assert served[str(now)]["memory_repo"] == repo.root
    assert served[str(earlier)]["memory_repo"] is None
    assert up.stop() == 0
