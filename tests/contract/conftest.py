"""Fixtures of the contract suite: the store, the world on it, and the path under test.

``store`` is a factory of clients on one store. It is parametrised (``fake``:
fakeredis, ``real``: the session's redis-server, ``cluster``: agent state on the
session's three-primary Redis Cluster with the broker on the redis-server, issue 25), so
every scenario on every path runs on each kind of store. ``real-racing`` is the
redis-server again, with a racing world (:class:`tests.contract.world.World`): prompt
visits race every scenario's reads, acts and ticks (issue 33, acceptance 2), on one path
of each way in (:data:`RACING_PATHS`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path as FsPath
from typing import Any

import fakeredis
import pytest

from tests.contract.paths import Path, opened
from tests.contract.world import World
from tests.support.redis_cluster import RedisCluster
from tests.support.redis_server import RedisServer
from tidings.store.connection import client_for
from tidings.store.settings import RedisConfig

StoreFactory = Callable[[], Any]
#: The ``store`` parameter whose world races prompt visits against the scenario.
RACING = "real-racing"
#: The paths a racing world runs every scenario on: one of each way in, with a
#: committing and a non-committing Python read, and both paths whose worker pokes prompt
#: visits of its own. The other Python variants read through the same calls (the suite's
#: time: the whole table racing took 22 s, this 11 s).
RACING_PATHS = frozenset(
    {
        "sync-inline.snapshot",
        "sync-inline.stamp",
        "sync-worker.turn",
        "aio-worker.turn",
        "cli.check",
        "mcp.attention",
        "mcp.check",
        "console.preview",
    }
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Racing runs on :data:`RACING_PATHS` only; the other stores run every path."""
    keep: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        elsewhere = "path" in params and params["path"] not in RACING_PATHS
        (dropped if params.get("store") == RACING and elsewhere else keep).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


class ClusterStore:
    """State clients on the cluster (``store()``), control clients on the redis-server
    (``control()``), as ``connect`` builds them from the two URLs."""

    def __init__(self, cluster: RedisCluster, broker: RedisServer) -> None:
        self.state_config = RedisConfig.from_url(cluster.url)
        self.broker = broker

    def __call__(self) -> Any:
        return client_for(self.state_config)

    def control(self) -> Any:
        return self.broker.client()


@pytest.fixture(params=["fake", "real", "cluster", RACING])
def store(request: pytest.FixtureRequest) -> StoreFactory:
    if request.param == "fake":
        server = fakeredis.FakeServer()
        return lambda: fakeredis.FakeRedis(server=server, version=(7,))
    redis_server: RedisServer = request.getfixturevalue("redis_server")
    with redis_server.client() as c:
        c.flushall()
    if request.param == "cluster":
        cluster: RedisCluster = request.getfixturevalue("redis_cluster")
        cluster.flush()
        return ClusterStore(cluster, redis_server)
    return redis_server.client


@pytest.fixture
def world(request: pytest.FixtureRequest, store: StoreFactory, tmp_path: FsPath) -> Iterator[World]:
    callspec = getattr(request.node, "callspec", None)
    needs_memory = callspec is None or callspec.params.get("scenario") == "memory"
    w = World(
        store,
        tmp_path,
        memory=needs_memory,
        new_control=store.control if isinstance(store, ClusterStore) else None,
        racing=callspec is not None and callspec.params.get("store") == RACING,
    )
    yield w
    w.close()


@pytest.fixture
def path(
    request: pytest.FixtureRequest, world: World, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    with opened(request.param, world, monkeypatch) as p:
        yield p
