"""The doorbell: an idle consumer waits on Redis for the next enqueue instead of polling.

dramatiq's Redis consumer looks at an empty queue again and again, backing off up to
its idle timeout: each look is a script run on Redis and a wake of this process. Here
every enqueue through a :class:`DoorbellBroker` also rings its queue's doorbell, a list
``tidings:<queue>.bell`` pushed and trimmed to one entry in the same round trip as the
enqueue. A consumer that finds its queue empty blocks on that list (``BLPOP``) on a
connection of its own, so the next enqueue wakes it within a round trip, and an idle
host costs next to nothing.

The wait is bounded by the broker's idle wait (``TIDINGS_WORKER_POLL_MS``, at most a
quarter of the broker heartbeat): a message that arrives without a ring (a dead
worker's message moved back by dramatiq's maintenance, an enqueue by a client without
the doorbell) is fetched by then, and a waiting worker's heartbeat, written by each
fetch, never grows old enough for it to be taken for dead. A delay queue's consumer
waits no longer than the earliest eta it holds. Whenever the consumer cannot wait on
the bell (its prefetch is full, the wait failed, its worker is stopping) it polls
like dramatiq, backing off up to :data:`UNRUNG_POLL_MS`.

A worker's shutdown (dramatiq's ``before_worker_shutdown``) ends every wait at once by
shutting down the waiting sockets: no stop waits out a ``BLPOP``, with Redis gone or not.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterable
from typing import Any

import redis
from dramatiq import Broker, Middleware, Worker
from dramatiq.broker import MessageProxy
from dramatiq.brokers.redis import RedisBroker, _RedisConsumer
from dramatiq.common import compute_backoff, current_millis
from dramatiq.errors import ConnectionClosed
from dramatiq.message import Message
from redis.connection import AbstractConnection
from redis.exceptions import NoScriptError

from tidings.jobs import log
from tidings.store.connection import blocking_connection

#: The polling back-off's ceiling (ms) while a consumer cannot wait on its doorbell: its
#: prefetch is full (its worker threads free room without a ring), the wait failed, or
#: its worker is stopping. It was ``TIDINGS_WORKER_POLL_MS``'s default before the doorbell.
UNRUNG_POLL_MS = 20
#: What a ring pushes; only its presence counts.
RING = b"1"
#: Time a waiting read is given past the ``BLPOP`` timeout before the store counts as
#: hung (seconds): the reply of a timed-out wait is on its way.
WAIT_READ_MARGIN_SECONDS = 5.0
#: Idle waits (and dramatiq maintenance) happen at least this many times per heartbeat.
WAITS_PER_HEARTBEAT = 4


def bell_key(namespace: str, queue_name: str) -> str:
    """The doorbell of ``queue_name`` (a delay queue ``<queue>.DQ`` has its own), under
    dramatiq's namespace like the queue itself, so the ACL patterns that let a user at
    the queue let it ring."""
    return f"{namespace}:{queue_name}.bell"


class DoorbellBroker(RedisBroker):
    """A dramatiq ``RedisBroker`` whose enqueues ring and whose consumers wait on the bell.

    ``poll_ms`` is the longest idle wait of a consumer (capped so that a waiting worker
    dispatches :data:`WAITS_PER_HEARTBEAT` times per heartbeat). ``doorbell=False``
    keeps dramatiq's polling (up to ``poll_ms``) and rings nothing. A fetch runs queue
    maintenance at least :data:`WAITS_PER_HEARTBEAT` times per heartbeat per queue,
    besides dramatiq's chance per command: an idle queue fetched once a second instead
    of every 20 ms would otherwise move a dead worker's messages back fifty times later.
    """

    def __init__(self, *, poll_ms: int, doorbell: bool = True, **options: Any) -> None:
        super().__init__(**options)
        self.doorbell = doorbell
        self.idle_wait_ms = max(1, min(poll_ms, self.heartbeat_timeout // WAITS_PER_HEARTBEAT))
        #: Set from a worker's shutdown until it boots again: consumers poll, not wait.
        self.stopping = threading.Event()
        self._waiting: dict[AbstractConnection, str] = {}
        self._waiting_lock = threading.Lock()
        self._maintained: dict[str, float] = {}
        self.add_middleware(_EndWaitsOnShutdown())

    @property
    def consumer_class(self) -> type[DoorbellConsumer]:
        return DoorbellConsumer

    def consume(self, queue_name: str, prefetch: int = 1, timeout: int = 5000) -> DoorbellConsumer:
        """A consumer of ``queue_name``; its idle wait is this broker's, not ``timeout``
        (a dramatiq ``Worker``'s ``worker_timeout`` paces only its worker threads)."""
        return DoorbellConsumer(self, queue_name, prefetch, self.idle_wait_ms)

    def bell(self, queue_name: str) -> str:
        return bell_key(self.namespace, queue_name)

    def _arguments(self, command: str, queue_name: str, maintain: bool, *args: Any) -> list[Any]:
        """The ARGV of dramatiq's ``dispatch.lua`` (as its ``RedisBroker._dispatch`` builds it)."""
        return [
            command,
            current_millis(),
            queue_name,
            self.broker_id,
            self.heartbeat_timeout,
            self.dead_message_ttl,
            int(maintain),
            self._max_unpack_size(),
            *args,
        ]

    def do_enqueue(self, queue_name: str, message_id: str, data: bytes) -> None:
        """dramatiq's enqueue and the ring, in one round trip (the ring after the message,
        so a woken consumer finds it)."""
        arguments = self._arguments(
            "enqueue", queue_name, bool(self._should_do_maintenance("enqueue")), message_id, data
        )
        script = self.scripts["dispatch"]
        if not self.doorbell:
            script(keys=[self.namespace], args=arguments)
            return
        bell = self.bell(queue_name)
        with self.client.pipeline(transaction=False) as pipe:
            pipe.evalsha(script.sha, 1, self.namespace, *arguments)
            pipe.lpush(bell, RING)
            pipe.ltrim(bell, 0, 0)
            enqueued, *rung = pipe.execute(raise_on_error=False)
        if isinstance(enqueued, NoScriptError):  # a restarted or failed-over store
            script(keys=[self.namespace], args=arguments)
            rung = [self.ring(bell)]
        elif isinstance(enqueued, Exception):
            raise enqueued
        failed = next((r for r in rung if isinstance(r, Exception)), None)
        if failed is not None:
            # The message is enqueued: an idle consumer fetches it within its idle wait.
            log.event("doorbell_ring_failed", queue=queue_name, error=str(failed)[:200])

    def ring(self, bell: str) -> object:
        """Ring ``bell`` on its own; the error, if the ring failed."""
        try:
            with self.client.pipeline(transaction=False) as pipe:
                pipe.lpush(bell, RING)
                pipe.ltrim(bell, 0, 0)
                pipe.execute()
        except redis.RedisError as exc:
            return exc
        return None

    def do_fetch(self, queue_name: str, count: int) -> list[bytes | None]:
        now = time.monotonic()
        maintain = now >= self._maintained.get(queue_name, 0.0) or bool(
            self._should_do_maintenance("fetch")
        )
        if maintain:
            interval = self.heartbeat_timeout / WAITS_PER_HEARTBEAT / 1000
            self._maintained[queue_name] = now + interval
        arguments = self._arguments("fetch", queue_name, maintain, count)
        fetched: list[bytes | None] = self.scripts["dispatch"](
            keys=[self.namespace], args=arguments
        )
        return fetched

    def waiting(self, connection: AbstractConnection, bell: str) -> bool:
        """Register ``connection`` as about to wait on ``bell``; ``False`` once stopping
        (then it must not)."""
        with self._waiting_lock:
            if self.stopping.is_set():
                return False
            self._waiting[connection] = bell
            return True

    def waited(self, connection: AbstractConnection) -> None:
        with self._waiting_lock:
            self._waiting.pop(connection, None)

    def end_waits(self) -> None:
        """Stop every wait of this broker's consumers now, and let none start (until a
        worker boots again): a shut-down socket wakes its blocked reader with an error.
        A connection without an OS socket (an in-process store: fakeredis) cannot be shut
        down; a ring of its bell ends its wait instead."""
        unshut: list[str] = []
        with self._waiting_lock:
            self.stopping.set()
            for connection, bell in self._waiting.items():
                sock = getattr(connection, "_sock", None)
                if isinstance(sock, socket.socket):
                    with contextlib.suppress(OSError):
                        sock.shutdown(socket.SHUT_RDWR)
                else:
                    unshut.append(bell)
        for bell in unshut:
            self.ring(bell)


class _EndWaitsOnShutdown(Middleware):
    """Ends the consumers' waits when a worker of the broker begins to shut down
    (dramatiq stops its consumers only after its worker threads, and each then leaves
    at its next return)."""

    def after_worker_boot(self, broker: Broker, worker: Worker) -> None:
        if isinstance(broker, DoorbellBroker):
            broker.stopping.clear()

    def before_worker_shutdown(self, broker: Broker, worker: Worker) -> None:
        if isinstance(broker, DoorbellBroker):
            broker.end_waits()


class DoorbellConsumer(_RedisConsumer):
    """dramatiq's Redis consumer, whose idle wait is a ``BLPOP`` on its queue's doorbell."""

    broker: DoorbellBroker

    def __init__(self, broker: DoorbellBroker, queue_name: str, prefetch: int, timeout: int):
        super().__init__(broker, queue_name, prefetch, timeout)
        self.bell = broker.bell(queue_name)
        self._connection: AbstractConnection | None = None
        #: Etas (epoch ms) of the delayed messages handed out and not yet acknowledged.
        self._etas: dict[str, float] = {}
        self._refused = False

    def __next__(self) -> MessageProxy | None:
        """A message, or ``None`` after an idle wait (dramatiq's ``__next__``, whose
        sleep is replaced by the wait)."""
        try:
            while True:
                while self.message_cache:
                    data = self.message_cache.pop(0)
                    if data is None:  # a fetched id whose body is gone (dramatiq #266)
                        continue
                    self.misses = 0
                    message = Message.decode(data)
                    self.queued_message_ids.add(message.message_id)
                    eta = message.options.get("eta")
                    if isinstance(eta, int | float):
                        self._etas[message.message_id] = eta
                    return MessageProxy(message)
                room = self.prefetch - self.outstanding_message_count
                if room > 0:
                    self.message_cache = self.broker.do_fetch(self.queue_name, room)
                    if self.message_cache:
                        continue
                    if self.broker.doorbell and self._wait_for_ring():
                        return None
                self._poll_pause(UNRUNG_POLL_MS if self.broker.doorbell else self.timeout)
                return None
        except redis.ConnectionError as e:
            raise ConnectionClosed(e) from None

    def ack(self, message: MessageProxy) -> None:
        self._etas.pop(message.message_id, None)
        super().ack(message)

    def nack(self, message: MessageProxy) -> None:
        self._etas.pop(message.message_id, None)
        super().nack(message)

    def requeue(self, messages: Iterable[MessageProxy]) -> None:
        messages = list(messages)
        for message in messages:
            self._etas.pop(message.message_id, None)
        super().requeue(messages)
        if messages and self.broker.doorbell:
            # Back in the queue at a worker's stop: another process's consumer takes them.
            self.broker.ring(self.bell)

    def close(self) -> None:
        if self._connection is not None:
            self._connection.disconnect()
            self._connection = None
        super().close()

    def _poll_pause(self, ceiling_ms: int) -> None:
        self.misses, backoff_ms = compute_backoff(self.misses, max_backoff=ceiling_ms)
        time.sleep(backoff_ms / 1000)

    def _wait_seconds(self) -> float:
        # Worker threads acknowledge (and so drop etas) concurrently: one C-level pass.
        earliest = min(self._etas.values(), default=None)
        wait_ms = float(self.timeout)
        if earliest is not None:
            wait_ms = min(wait_ms, earliest - current_millis())
        return wait_ms / 1000

    def _wait_for_ring(self) -> bool:
        """Wait on the doorbell (until a ring or the idle wait's end); ``False`` if no
        wait happened and the caller must pause by polling."""
        seconds = self._wait_seconds()
        if seconds < 0.001:
            return True  # a held delayed message is due: its consumer thread enqueues it
        if self.broker.stopping.is_set():
            return False
        connection = self._connection
        if connection is None:
            connection = blocking_connection(
                self.broker.client, self.timeout / 1000 + WAIT_READ_MARGIN_SECONDS
            )
            if connection is None:
                return False  # a client without a pool of connections: poll
            self._connection = connection
        try:
            # Connected before it is registered: a shutdown from end_waits then always
            # finds the socket it must wake.
            connection.connect()
            if not self.broker.waiting(connection, self.bell):
                return False
            try:
                connection.send_command("BLPOP", self.bell, f"{seconds:.3f}")
                connection.read_response()
            finally:
                self.broker.waited(connection)
        except (redis.ConnectionError, redis.TimeoutError):
            # A failover, a stop, or a store gone: the next fetch (which rides out a
            # failover) says which; the wait is tried afresh after it.
            connection.disconnect()
            return False
        except redis.ResponseError as exc:
            if not self._refused:  # e.g. a proxy without blocking commands
                self._refused = True
                log.event("doorbell_wait_refused", queue=self.queue_name, error=str(exc)[:200])
            return False
        return True
