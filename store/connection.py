"""The one place Redis clients are built: composition roots call it, layers get clients.

Every client rides out a failover: a command that meets a connection error, a
timeout or a read-only reply (the old master, demoted) disconnects, waits with
exponential back-off and tries again, re-asking the Sentinels for the master,
for up to :data:`FAILOVER_RETRY_SECONDS`. The broker, the inbox and the
scheduler's job store share the client, so they all ride it out the same way. A
``redis+cluster://`` URL gives a :class:`~tidings.store.cluster.StateCluster` that
rides out a cluster failover with the same retry (:mod:`tidings.store.roles` decides
which URL serves which role).

Once the process is stopping (:func:`stop_retrying`; the long-running commands call
it on SIGTERM or SIGINT) nothing is ridden out: a failing command raises at once, and
one pausing in back-off wakes and raises, so a stop with Redis gone is prompt.
"""

from __future__ import annotations

import copy
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterable
from typing import TypedDict, TypeVar, cast
from urllib.parse import urlsplit, urlunsplit

import redis
from redis.backoff import ExponentialBackoff, NoBackoff
from redis.cluster import ClusterNode
from redis.connection import AbstractConnection, Connection, SSLConnection
from redis.exceptions import ConnectionError, ReadOnlyError, TimeoutError
from redis.retry import Retry
from redis.sentinel import Sentinel, SentinelManagedConnection

from tidings.store import refusals
from tidings.store.cluster import CLUSTER_RETRY_ON, StateCluster
from tidings.store.errors import NoStoreError
from tidings.store.settings import STORE_HANG_SECONDS, RedisConfig

#: How long one command keeps retrying after its first connection error: longer than
#: a Sentinel failover (down-after-milliseconds + election + promotion).
FAILOVER_RETRY_SECONDS = 30.0
#: First and longest pause between two attempts (seconds).
RETRY_BACKOFF_BASE = 0.05
RETRY_BACKOFF_CAP = 1.0
#: Errors that mean "no writable master answers right now".
RETRY_ON: tuple[type[Exception], ...] = (ConnectionError, TimeoutError, ReadOnlyError)
#: Socket timeouts (seconds): commands, connecting to a master, asking a Sentinel.
COMMAND_TIMEOUT = 30.0
CONNECT_TIMEOUT = 2.0
SENTINEL_TIMEOUT = 1.0
#: Set once this process is stopping (never cleared): the default stop event of
#: every :class:`FailoverRetry`.
PROCESS_STOPPING = threading.Event()

T = TypeVar("T")


class ClientSettings(TypedDict, total=False):
    """The keyword arguments every client is built with (the cluster's drop the retry)."""

    retry: Retry
    retry_on_error: list[type[Exception]]
    socket_timeout: float
    socket_connect_timeout: float
    protocol: int
    connection_class: type[Connection]


def stop_retrying() -> None:
    """Make every failover retry of this process give up: it is stopping."""
    PROCESS_STOPPING.set()


class FailoverRetry(Retry):
    """A :class:`redis.retry.Retry` bounded by time since the first failure, not by count.

    redis-py runs its connect retry inside its command retry; two counts would
    multiply, two deadlines do not: the outer loop gives up once its budget is spent.
    Once ``stopping`` is set it retries no more, and its back-off pause ends at once.
    """

    def __init__(
        self,
        seconds: float = FAILOVER_RETRY_SECONDS,
        stopping: threading.Event = PROCESS_STOPPING,
        errors: tuple[type[Exception], ...] = RETRY_ON,
    ) -> None:
        super().__init__(
            ExponentialBackoff(cap=RETRY_BACKOFF_CAP, base=RETRY_BACKOFF_BASE), -1, errors
        )
        self.seconds = seconds
        self.stopping = stopping

    def __deepcopy__(self, memo: dict[int, object]) -> FailoverRetry:
        # redis-py copies the retry into each client and connection; an event cannot be
        # copied, and every copy must see the one stop.
        clone = copy.copy(self)
        clone._backoff = copy.deepcopy(self._backoff, memo)
        return clone

    def call_with_retry(
        self,
        do: Callable[[], T],
        fail: Callable[..., object],
        is_retryable: Callable[[Exception], bool] | None = None,
        with_failure_count: bool = False,
    ) -> T:
        self._backoff.reset()
        failures = 0
        deadline: float | None = None
        while True:
            try:
                return do()
            except self._supported_errors as error:
                if is_retryable is not None and not is_retryable(error):
                    raise
                failures += 1
                if with_failure_count:
                    fail(error, failures)
                else:
                    fail(error)
                now = time.monotonic()
                deadline = deadline if deadline is not None else now + self.seconds
                # A set event ends the pause at once: a stopping process retries no more.
                if now >= deadline or self.stopping.wait(
                    min(self._backoff.compute(failures), deadline - now)
                ):
                    raise


class HandshakeBoundSSLConnection(SSLConnection):
    """TLS whose handshake is bounded by the connect timeout, not the command timeout.

    A ``rediss://`` URL pointed at a plain server connects, then waits for a TLS
    reply that never comes; under redis-py's default the handshake waits for the
    30 s command timeout (interfaces.md: fail within the connect timeout).
    """

    def _wrap_socket_with_ssl(self, sock: socket.socket) -> ssl.SSLSocket:
        sock.settimeout(self.socket_connect_timeout)
        wrapped: ssl.SSLSocket = super()._wrap_socket_with_ssl(sock)
        wrapped.settimeout(self.socket_timeout)
        return wrapped


class SentinelFailoverConnection(SentinelManagedConnection):
    """Reconnects through the Sentinels every time.

    redis-py's command retry reconnects a dropped connection to the address it last
    had; after a switchover that is the old master, still answering until Sentinel
    demotes it, and what is written there is lost. Asking the Sentinels first sends
    the retried command to the new master.
    """

    def send_packed_command(
        self, command: bytes | str | Iterable[bytes], check_health: bool = True
    ) -> None:
        if not self._sock:
            self.connect()
        super().send_packed_command(command, check_health)


class SentinelFailoverSSLConnection(SentinelFailoverConnection, HandshakeBoundSSLConnection):
    pass


def client_for(config: RedisConfig, retry_seconds: float = FAILOVER_RETRY_SECONDS) -> redis.Redis:
    """A redis-py client (bytes responses, RESP2) for ``config`` that rides out failovers."""
    retrying: ClientSettings = {
        "retry": FailoverRetry(retry_seconds),
        "retry_on_error": list(RETRY_ON),
        "socket_timeout": COMMAND_TIMEOUT,
        "socket_connect_timeout": CONNECT_TIMEOUT,
        "protocol": 2,
    }
    if config.is_sentinel:
        # One quick try per Sentinel: the master connection's retry loops over them.
        sentinel_kwargs: dict[str, float | str | Retry] = {
            "socket_timeout": SENTINEL_TIMEOUT,
            "socket_connect_timeout": SENTINEL_TIMEOUT,
            "retry": Retry(NoBackoff(), 0),
        }
        if config.password:
            sentinel_kwargs["password"] = config.password
        sentinel = Sentinel(list(config.sentinels), sentinel_kwargs=sentinel_kwargs)
        tls = config.scheme.startswith("rediss")
        # master_for builds a plain redis.Redis over a Sentinel-managed pool.
        master: redis.Redis = sentinel.master_for(
            config.service_name or "mymaster",
            db=config.db,
            username=config.username,
            password=config.password,
            connection_class=SentinelFailoverSSLConnection if tls else SentinelFailoverConnection,
            **retrying,
        )
        return master
    if config.is_cluster:
        del retrying["retry"], retrying["retry_on_error"]  # the failover retry wraps it
        return _cluster_client(config, retry_seconds, retrying)
    if config.scheme == "rediss":
        retrying["connection_class"] = HandshakeBoundSSLConnection
    return redis.Redis.from_url(config.url, **retrying)


def _cluster_client(
    config: RedisConfig, retry_seconds: float, settings: ClientSettings
) -> redis.Redis:
    """A :class:`~tidings.store.cluster.StateCluster` over the seed nodes; the layers
    type it as a plain client, which it answers like for every command they send."""
    client = StateCluster(
        config=config,
        startup_nodes=[ClusterNode(host, port) for host, port in config.nodes],
        failover_retry=FailoverRetry(retry_seconds, errors=RETRY_ON + CLUSTER_RETRY_ON),
        username=config.username,
        password=config.password,
        ssl=config.tls,
        **settings,
    )
    return cast(redis.Redis, client)


def blocking_connection(client: redis.Redis, read_seconds: float) -> AbstractConnection | None:
    """A connection of its own, out of ``client``'s pool, for one blocking command at a
    time (the workers' doorbell waits): its reads wait up to ``read_seconds``, and it
    tries once, with no failover retry: the waiter falls back to polling through
    ``client``, which rides the failover out. ``None`` for a client without a pool (a
    cluster client). The caller disconnects it."""
    pool = getattr(client, "connection_pool", None)
    if pool is None:
        return None
    connection: AbstractConnection = pool.make_connection()
    connection.socket_timeout = read_seconds
    connection.retry = Retry(NoBackoff(), 0)
    return connection


def redact(url: str) -> str:
    """``url`` with its password replaced by ``***`` (for messages and logs)."""
    parts = urlsplit(url)
    if not parts.password:
        return url
    user = f"{parts.username}:" if parts.username else ":"
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{user}***@{host}"))


def _ping_within(client: redis.Redis, seconds: float) -> None:
    """PING on a connection of its own whose connect, handshake and reply are each bounded
    by ``seconds``: a store that accepts connections and then goes quiet (a hung or
    stopped engine) is told apart from one that is not there. A cluster client pings
    its own way."""
    pool = getattr(client, "connection_pool", None)
    if pool is None:
        client.ping()
        return
    connection = pool.make_connection()
    connection.socket_timeout = seconds
    connection.socket_connect_timeout = min(seconds, connection.socket_connect_timeout or seconds)
    connection.retry = Retry(NoBackoff(), 0)
    try:
        connection.send_command("PING")
        connection.read_response()
    finally:
        connection.disconnect()


def ping(
    client: redis.Redis, url: str, *, broker: bool = False, hang_seconds: float = STORE_HANG_SECONDS
) -> None:
    """Raise :class:`NoStoreError` naming both fixes if nothing answers (``broker``: the
    control store, named by its own variable), or with reason ``store_unresponsive``
    when the store takes the connection and does not answer within ``hang_seconds``; a
    store that answers but refuses the credentials raises ``auth_failed``
    (:mod:`tidings.store.refusals`).

    Answers at once: the failover retry is for a store that answered before, not
    for one that was never started.
    """
    try:
        if getattr(client, "connection_pool", None) is None:
            saved = client.get_retry()
            client.set_retry(Retry(NoBackoff(), 0))
            try:
                client.ping()
            finally:
                if saved is not None:
                    client.set_retry(saved)
        else:
            _ping_within(client, hang_seconds)
    except redis.exceptions.TimeoutError as exc:
        # A plain server under a rediss:// URL takes the connection and never finishes
        # the TLS handshake: the same silence as a hung engine, so both are named.
        tls = (
            " or it does not speak TLS (the URL says rediss://: a plain server wants redis://)"
            if url.startswith("rediss://")
            else ""
        )
        raise NoStoreError(
            f"the store at {redact(url)} took the connection but did not answer PING within "
            f"{hang_seconds:g}s ({exc}): its engine is hung or stopped{tls}. Nothing was "
            "done; `tidings up` exits when its engine hangs (its service manager restarts "
            "it), or see to the Redis behind the URL.",
            reason="store_unresponsive",
        ) from None
    except redis.exceptions.RedisError as exc:
        refused = refusals.refusal(exc, client, redact(url))
        if refused is not None:  # it answered: a credential or right problem, not no store
            raise refused from None
        if broker:
            raise NoStoreError(
                f"no Redis answers at {redact(url)} ({type(exc).__name__}), the control store: "
                "point TIDINGS_BROKER_URL / --broker-url at a running standalone Redis."
            ) from None
        raise NoStoreError(
            f"no Redis answers at {redact(url)} ({type(exc).__name__}). Start the default "
            "store with `tidings up`, or point TIDINGS_REDIS_URL / --redis-url at your Redis."
        ) from None
