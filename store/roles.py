"""The two roles Redis plays (guide.md "Placement and scale"; interfaces.md "Past one
Redis"): the **state** store holds every ``{a:<agent>}`` and ``{h:<host>}`` key and may
be a cluster; the **control** store holds dramatiq's namespace, results, presence, rates
and the host set, and is one standalone Redis, the state store's unless told otherwise.

:func:`open_stores` is where a process turns its two URLs into two clients; the
layers get the clients and never learn which kind either is.
"""

from __future__ import annotations

from dataclasses import dataclass

import redis
from redis.exceptions import RedisClusterException

from tidings.store.connection import client_for, ping, redact
from tidings.store.errors import NoStoreError, TidingsError
from tidings.store.settings import STORE_HANG_SECONDS, RedisConfig


@dataclass(frozen=True)
class Stores:
    """The clients of both roles; ``control`` is ``state`` when they share one Redis."""

    state: redis.Redis
    control: redis.Redis
    state_config: RedisConfig
    control_config: RedisConfig

    @property
    def shared(self) -> bool:
        return self.control is self.state

    def close(self) -> None:
        if not self.shared:
            self.control.close()
        self.state.close()


def parse(url: str, *, broker: bool = False) -> RedisConfig:
    """``url`` parsed; a bad one raises :class:`TidingsError` (``invalid_redis_url`` or
    ``invalid_broker_url``, or ``placeholder_password``)."""
    try:
        return RedisConfig.from_url(url)
    except TidingsError:
        raise  # placeholder_password: already its own reason
    except ValueError as exc:
        if broker:
            raise TidingsError(f"TIDINGS_BROKER_URL: {exc}", reason="invalid_broker_url") from None
        raise TidingsError(str(exc), reason="invalid_redis_url") from None


def cluster_enabled(client: redis.Redis) -> bool:
    """Whether the server answers ``cluster_enabled:1`` to ``INFO cluster`` (a store
    that knows no such section is not a cluster)."""
    try:
        return bool(client.info("cluster").get("cluster_enabled"))
    except redis.exceptions.ResponseError:
        return False


def _connected(
    config: RedisConfig, url: str, *, broker: bool = False, hang_seconds: float = STORE_HANG_SECONDS
) -> redis.Redis:
    try:
        client = client_for(config)
    except RedisClusterException as exc:  # no seed node answered the slot map
        raise NoStoreError(f"no Redis Cluster answers at {redact(url)} ({exc})") from None
    try:
        ping(client, url, broker=broker, hang_seconds=hang_seconds)
    except BaseException:
        client.close()
        raise
    return client


def _state(url: str, hang_seconds: float) -> tuple[redis.Redis, RedisConfig]:
    config = parse(url)
    client = _connected(config, url, hang_seconds=hang_seconds)
    if config.scheme in ("redis", "rediss") and cluster_enabled(client):
        # A plain URL to a cluster node: that node seeds a cluster client.
        client.close()
        config = RedisConfig.cluster_seed(url)
        client = _connected(config, url, hang_seconds=hang_seconds)
    return client, config


def open_stores(
    state_url: str, broker_url: str | None, *, hang_seconds: float = STORE_HANG_SECONDS
) -> Stores:
    """Clients for both roles, each answering; raises :class:`TidingsError` with reason
    ``broker_url_required`` (a cluster state store and no control URL) or
    ``broker_on_cluster`` (a cluster as the control store), :class:`NoStoreError` when
    either does not answer (reason ``store_unresponsive``: it took the connection and did
    not answer PING within ``hang_seconds``)."""
    control_config = parse(broker_url, broker=True) if broker_url else None
    if control_config is not None and control_config.is_cluster:
        raise _on_cluster(broker_url or "")
    state, state_config = _state(state_url, hang_seconds)
    try:
        if control_config is None or broker_url == state_url:
            if state_config.is_cluster:
                raise TidingsError(
                    f"{redact(state_url)} is a Redis Cluster: set TIDINGS_BROKER_URL (or "
                    "--broker-url, broker_url=) to a standalone Redis for the broker",
                    reason="broker_url_required",
                )
            return Stores(state, state, state_config, state_config)
        control = _connected(
            control_config, broker_url or "", broker=True, hang_seconds=hang_seconds
        )
        if control_config.scheme in ("redis", "rediss") and cluster_enabled(control):
            control.close()
            raise _on_cluster(broker_url or "")
    except BaseException:
        state.close()
        raise
    return Stores(state, control, state_config, control_config)


def _on_cluster(url: str) -> TidingsError:
    return TidingsError(
        f"TIDINGS_BROKER_URL {redact(url)} is a Redis Cluster: the broker needs one "
        "standalone Redis (dramatiq's scripts use keys they do not declare)",
        reason="broker_on_cluster",
    )
