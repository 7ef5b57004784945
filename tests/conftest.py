"""Fixtures shared by every tier.

``redis_client`` is parametrised over fakeredis and a real ``redis-server`` that
the session starts on a free loopback port, so the unit-tier contract tests run
against both (issue 2, acceptance 8).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fakeredis
import pytest

from tests.support.dispatch import InlineJobs
from tests.support.processes import ProcessGroup
from tests.support.redis_cluster import RedisCluster, started
from tests.support.redis_server import RedisServer
from tidings.jobs.runtime import Runtime
from tidings.store import rates
from tidings.store.clock import FakeClock
from tidings.store.models import AgentRecord
from tidings.store.registry import AgentRegistry
from tidings.store.settings import Settings

TEST_HOST = "testhost"


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisCluster]:
    """Three primaries on free loopback ports, shared by the session's cluster tests
    (issue 25); each test flushes what it reads."""
    yield from started(tmp_path_factory.mktemp("cluster"))


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A redis-server of this test's own, for tests that kill, restart or fill it."""
    server = RedisServer(tmp_path / "redis").start()
    yield server
    server.stop()


@pytest.fixture(params=["fake", "real"])
def redis_client(request: pytest.FixtureRequest) -> Iterator[Any]:
    if request.param == "fake":
        client = fakeredis.FakeRedis(server=fakeredis.FakeServer(), version=(7,))
    else:
        server: RedisServer = request.getfixturevalue("redis_server")
        client = server.client()
        client.flushall()
    yield client
    # The rate tallies this test counted go to its own store now, not into a later
    # test's (the shared server) when the flush timer next runs (store/rates.py).
    rates.flush(client)
    client.close()


@pytest.fixture
def fake_redis() -> Iterator[Any]:
    client = fakeredis.FakeRedis(server=fakeredis.FakeServer(), version=(7,))
    yield client
    client.close()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def settings() -> Settings:
    return Settings(host=TEST_HOST, redis_url=None)


@pytest.fixture
def jobs_dispatch() -> InlineJobs:
    return InlineJobs()


@pytest.fixture
def rt(
    redis_client: Any, clock: FakeClock, settings: Settings, jobs_dispatch: InlineJobs
) -> Runtime:
    runtime = Runtime(redis_client, clock, settings, jobs_dispatch)
    jobs_dispatch.runtime = runtime
    return runtime


def make_agent(rt: Runtime, workdir: Path, agent_id: str = "a1", **fields: Any) -> AgentRecord:
    workdir.mkdir(parents=True, exist_ok=True)
    record = AgentRecord(
        agent_id=agent_id, workdir=os.path.realpath(workdir), host=TEST_HOST, **fields
    )
    AgentRegistry(rt.redis).put(record)
    return record


@pytest.fixture
def agent(rt: Runtime, tmp_path: Path) -> AgentRecord:
    return make_agent(rt, tmp_path / "workdir")


@pytest.fixture
def e2e_env(tmp_path: Path) -> dict[str, str]:
    """Environment for child ``tidings`` processes: a private host name and state
    directory (never the user's default store), no ambient URL."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TIDINGS_", "LINGTAI_"))}
    env.update(
        PYTHONUNBUFFERED="1",
        TIDINGS_HOST=f"e2e-{uuid.uuid4().hex[:8]}",
        TIDINGS_LOG_JSON="true",
        TIDINGS_STATE_DIR=str(tmp_path / "state"),
    )
    return env


@pytest.fixture
def procs(e2e_env: dict[str, str]) -> Iterator[ProcessGroup]:
    group = ProcessGroup(e2e_env)
    yield group
    group.cleanup()
