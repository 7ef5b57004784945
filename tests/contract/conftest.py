"""Fixtures of the contract suite: the store, the world on it, and the path under test.

``store`` is a factory of clients on one store. It is parametrised (``fake``:
fakeredis, ``real``: the session's redis-server) so that another store kind — a
Redis Cluster, say — is one more parameter here, and every scenario on every path
then runs on it too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path as FsPath
from typing import Any

import fakeredis
import pytest

from tests.contract.paths import Path, opened
from tests.contract.world import World
from tests.support.redis_server import RedisServer

StoreFactory = Callable[[], Any]


@pytest.fixture(params=["fake", "real"])
def store(request: pytest.FixtureRequest) -> StoreFactory:
    if request.param == "fake":
        server = fakeredis.FakeServer()
        return lambda: fakeredis.FakeRedis(server=server, version=(7,))
    redis_server: RedisServer = request.getfixturevalue("redis_server")
    redis_server.client().flushall()
    return redis_server.client


@pytest.fixture
def world(request: pytest.FixtureRequest, store: StoreFactory,
          tmp_path: FsPath) -> Iterator[World]:
    callspec = getattr(request.node, "callspec", None)
    needs_memory = callspec is None or callspec.params.get("scenario") == "memory"
    w = World(store, tmp_path, memory=needs_memory)
    yield w
    w.close()


@pytest.fixture
def path(request: pytest.FixtureRequest, world: World,
         monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    with opened(request.param, world, monkeypatch) as p:
        yield p
