"""``redis.asyncio`` clients for ``tidings.aio`` (api.md, Plugging into agent frameworks).

Built here, beside the sync clients, with the same timeouts and protocol; the
asyncio client serves only the waits (wake stream, applied sequence, group
results), so a failover retry bounded by count is enough for it.
"""

from __future__ import annotations

from typing import Any

import redis.asyncio
from redis.asyncio import Redis as AsyncRedis
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import Sentinel
from redis.backoff import ExponentialBackoff
from redis.connection import SSLConnection

from tidings.store.connection import (
    COMMAND_TIMEOUT,
    CONNECT_TIMEOUT,
    RETRY_BACKOFF_BASE,
    RETRY_BACKOFF_CAP,
    RETRY_ON,
    SENTINEL_TIMEOUT,
)
from tidings.store.settings import RedisConfig

#: Attempts after a connection error: with the capped back-off, about as long as the
#: sync clients' time-bounded retry (store.connection.FAILOVER_RETRY_SECONDS).
ASYNC_RETRIES = 35
#: Connections the asyncio client may open: a waiting agent holds one (and no thread).
MAX_CONNECTIONS = 10_000
#: Connection settings a sync client's pool carries over to its asyncio twin.
_CARRIED = ("host", "port", "db", "username", "password", "path")


def _common() -> dict[str, Any]:
    return {
        "retry": Retry(ExponentialBackoff(cap=RETRY_BACKOFF_CAP, base=RETRY_BACKOFF_BASE),
                       ASYNC_RETRIES),
        "retry_on_error": list(RETRY_ON),
        "socket_timeout": COMMAND_TIMEOUT,
        "socket_connect_timeout": CONNECT_TIMEOUT,
        "protocol": 2,
        "max_connections": MAX_CONNECTIONS,
    }


def async_client_for(config: RedisConfig) -> AsyncRedis:
    """An asyncio client for ``config`` (plain, TLS and unix URLs; Sentinel without TLS)."""
    if config.is_sentinel:
        sentinel = Sentinel(list(config.sentinels), sentinel_kwargs={
            "socket_timeout": SENTINEL_TIMEOUT, "socket_connect_timeout": SENTINEL_TIMEOUT,
            **({"password": config.password} if config.password else {}),
        })
        master: AsyncRedis = sentinel.master_for(
            config.service_name or "mymaster", db=config.db, username=config.username,
            password=config.password, **_common())
        return master
    return redis.asyncio.Redis.from_url(config.url, **_common())


def async_client_like(client: Any) -> AsyncRedis:
    """An asyncio client on the same store as the sync ``client`` (fakeredis included)."""
    kwargs = client.connection_pool.connection_kwargs
    server = kwargs.get("server")
    if server is not None:
        import fakeredis.aioredis  # noqa: PLC0415 - only an embedded or test store loads it

        return fakeredis.aioredis.FakeRedis(server=server, version=kwargs.get("version", (7,)),
                                            max_connections=MAX_CONNECTIONS)
    carried = {key: kwargs[key] for key in _CARRIED if key in kwargs}
    if "path" in carried:
        return redis.asyncio.Redis(unix_socket_path=carried.pop("path"), **carried, **_common())
    tls = issubclass(client.connection_pool.connection_class, SSLConnection)
    return redis.asyncio.Redis(**carried, ssl=tls, **_common())
