"""``redis.asyncio`` clients for ``tidings.aio`` (interfaces.md, Plugging into agent frameworks).

Built here, beside the sync clients, with the same timeouts and protocol; the
asyncio client serves only the waits (wake stream, applied sequence, group
results), so a failover retry bounded by count is enough for it. Its pool is
bounded and blocking: past :data:`MAX_CONNECTIONS` concurrent commands, a waiter
waits for a connection instead of failing, behind Sentinel as well (a cluster client
does the same per node, :mod:`tidings.store.async_cluster`).
"""

from __future__ import annotations

from typing import TypedDict, cast

import redis
from redis.asyncio import Redis as AsyncRedis
from redis.asyncio.cluster import ClusterNode
from redis.asyncio.connection import BlockingConnectionPool, UnixDomainSocketConnection
from redis.asyncio.connection import Connection as AsyncConnection
from redis.asyncio.connection import SSLConnection as AsyncSSLConnection
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import Sentinel, SentinelConnectionPool
from redis.backoff import ExponentialBackoff
from redis.connection import SSLConnection

from tidings.store.async_cluster import AsyncStateCluster
from tidings.store.cluster import CLUSTER_RETRY_ON, StateCluster
from tidings.store.connection import (
    COMMAND_TIMEOUT,
    CONNECT_TIMEOUT,
    FAILOVER_RETRY_SECONDS,
    PROCESS_STOPPING,
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


def _backoff() -> ExponentialBackoff:
    return ExponentialBackoff(cap=RETRY_BACKOFF_CAP, base=RETRY_BACKOFF_BASE)


class _Settings(TypedDict):
    """The keyword arguments every asyncio client (but a cluster's) is built with."""

    retry: Retry
    retry_on_error: list[type[Exception]]
    socket_timeout: float
    socket_connect_timeout: float
    protocol: int
    max_connections: int


class BlockingSentinelPool(SentinelConnectionPool, BlockingConnectionPool):
    """redis-py's Sentinel pool (master discovery, re-pointing after a failover) with the
    blocking pool's ``get_connection``: past ``max_connections`` a command waits for a
    free connection (``timeout=None``) instead of raising ``MaxConnectionsError``.
    Closing it closes the clients of the Sentinels it asked, too."""

    async def aclose(self) -> None:
        await super().aclose()
        for sentinel in self.sentinel_manager.sentinels:
            await sentinel.aclose()


def _common() -> _Settings:
    return {
        "retry": Retry(_backoff(), ASYNC_RETRIES),
        "retry_on_error": list(RETRY_ON),
        "socket_timeout": COMMAND_TIMEOUT,
        "socket_connect_timeout": CONNECT_TIMEOUT,
        "protocol": 2,
        "max_connections": MAX_CONNECTIONS,
    }


def _blocking(pool: BlockingConnectionPool) -> AsyncRedis:
    """A client that owns ``pool`` (closing the client closes it)."""
    return AsyncRedis.from_pool(pool)


def async_client_for(config: RedisConfig) -> AsyncRedis:
    """An asyncio client for ``config`` (plain, TLS and unix URLs; Sentinel without TLS;
    a cluster's seed nodes, typed as the plain client it answers like)."""
    if config.is_cluster:
        return cast(
            AsyncRedis,
            AsyncStateCluster(
                startup_nodes=[ClusterNode(host, port) for host, port in config.nodes],
                username=config.username,
                password=config.password,
                ssl=config.tls,
                socket_timeout=COMMAND_TIMEOUT,
                socket_connect_timeout=CONNECT_TIMEOUT,
                protocol=2,
                max_connections=MAX_CONNECTIONS,
                retry_seconds=FAILOVER_RETRY_SECONDS,
                retry_on=RETRY_ON + CLUSTER_RETRY_ON,
                backoff=_backoff(),
                stopping=PROCESS_STOPPING,
            ),
        )
    if config.is_sentinel:
        sentinel = Sentinel(
            list(config.sentinels),
            sentinel_kwargs={
                "socket_timeout": SENTINEL_TIMEOUT,
                "socket_connect_timeout": SENTINEL_TIMEOUT,
                **({"password": config.password} if config.password else {}),
            },
        )
        master: AsyncRedis = sentinel.master_for(
            config.service_name or "mymaster",
            connection_pool_class=BlockingSentinelPool,
            timeout=None,
            db=config.db,
            username=config.username,
            password=config.password,
            **_common(),
        )
        return master
    return _blocking(BlockingConnectionPool.from_url(config.url, timeout=None, **_common()))


def async_client_like(client: redis.Redis) -> AsyncRedis:
    """An asyncio client on the same store as the sync ``client`` (fakeredis and a
    cluster included)."""
    if isinstance(client, StateCluster):
        return async_client_for(client.config)
    kwargs = client.connection_pool.connection_kwargs
    server = kwargs.get("server")
    if server is not None:
        import fakeredis.aioredis  # noqa: PLC0415 - only an embedded or test store loads it

        return fakeredis.aioredis.FakeRedis(
            server=server, version=kwargs.get("version", (7,)), max_connections=MAX_CONNECTIONS
        )
    carried = {key: kwargs[key] for key in _CARRIED if key in kwargs}
    if "path" in carried:
        return _blocking(
            BlockingConnectionPool(
                connection_class=UnixDomainSocketConnection, timeout=None, **carried, **_common()
            )
        )
    tls = issubclass(client.connection_pool.connection_class, SSLConnection)
    return _blocking(
        BlockingConnectionPool(
            connection_class=AsyncSSLConnection if tls else AsyncConnection,
            timeout=None,
            **carried,
            **_common(),
        )
    )
