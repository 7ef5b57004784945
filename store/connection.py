"""The one place Redis clients are built: composition roots call it, layers get clients."""

from __future__ import annotations

from typing import Any

import redis

from store.errors import NoStoreError
from store.settings import RedisConfig


def client_for(config: RedisConfig) -> Any:
    """A redis-py client (bytes responses, RESP2) for ``config``."""
    if config.is_sentinel:
        from redis.sentinel import Sentinel

        sentinel = Sentinel(
            list(config.sentinels),
            socket_timeout=5.0,
            sentinel_kwargs={"password": config.password} if config.password else None,
        )
        return sentinel.master_for(
            config.service_name or "mymaster",
            db=config.db,
            username=config.username,
            password=config.password,
            socket_timeout=10.0,
            protocol=2,
        )
    return redis.Redis.from_url(config.url, socket_timeout=30.0, protocol=2)


def ping(client: Any, url: str) -> None:
    """Raise :class:`NoStoreError` naming both fixes if nothing answers."""
    try:
        client.ping()
    except redis.exceptions.RedisError as exc:
        raise NoStoreError(
            f"no Redis answers at {url} ({type(exc).__name__}). Start one with `tidings up` "
            "(embedded store), or point TIDINGS_REDIS_URL / --redis-url at your Redis."
        ) from None
