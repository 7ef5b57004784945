"""The e2e tier runs as deploy/redis.conf's ACL users (issue 24, acceptance 10): every
redis-server it starts loads the shipped ``user`` lines (test passwords in place of the
placeholders), tidings' processes connect as the workers' user ``tidings``, and the
tests inspect and reset the store as ``tidings-admin``. So every e2e test also proves
that the shipped rights are enough for what it runs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.redis_server import RedisServer


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path_factory.mktemp("redis-acl"), acl=True).start()
    yield server
    server.stop()


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path / "redis", acl=True).start()
    yield server
    server.stop()
